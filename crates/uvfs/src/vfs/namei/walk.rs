//! The walk itself: components, `..`, mount crossings and symbolic links.

use std::borrow::Cow;
use std::sync::Arc;

use super::fast::{step_cached, walk_cached};
use super::lookup::lookup_slow;
use super::{Pos, Ref, WalkMode};
use crate::abi::{Errno, FileType, ResolveFlags, Result, MAXSYMLINKS};
use crate::sync::rcu::Guard;
use crate::vfs::atime::atime_update;
use crate::vfs::cred::Cred;
use crate::vfs::dcache::{hash_component_checked, hash_len, hash_seed};
use crate::vfs::dentry::{Cached, Dentry};
use crate::vfs::mount::MountRef;
use crate::vfs::mount::{Crossed, MntFlags, MountNamespace, MountSnapshot};
use crate::vfs::permission::may_lookup;

/// What the last component of a path is (Linux: `LAST_NORM`, `LAST_DOT`, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LastKind {
    /// An ordinary name.
    Normal,
    /// `.`
    Dot,
    /// `..`
    DotDot,
    /// The path was only slashes.
    Root,
}

/// The last component of a path, left for the caller to resolve or create.
#[derive(Clone, Debug)]
pub(crate) struct Last<'p> {
    pub(crate) name: Cow<'p, [u8]>,
    pub(crate) kind: LastKind,
    /// The path ended in `/`: the result must be a directory.
    pub(crate) trailing_slash: bool,
    /// `hash_len` of `name` (for `Normal`).
    pub(crate) hash_len: u64,
}

impl Last<'_> {
    pub(crate) fn into_owned(self) -> Last<'static> {
        Last {
            name: Cow::Owned(self.name.into_owned()),
            kind: self.kind,
            trailing_slash: self.trailing_slash,
            hash_len: self.hash_len,
        }
    }
}

/// Whether the last component, if a symbolic link, is followed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FollowLast {
    /// Follow it (`stat`, `open` without `O_NOFOLLOW`).
    Yes,
    /// Return the link itself (`lstat`, `O_NOFOLLOW`, `AT_SYMLINK_NOFOLLOW`).
    No,
}

/// The state of one path resolution (Linux: `struct nameidata`).
pub(crate) struct Walker<'a> {
    pub(crate) guard: &'a Guard,
    pub(crate) cred: &'a Cred,
    pub(crate) ns: &'a MountNamespace,
    /// The mount table as the walk's first crossing saw it (see `cross_mounts`).
    mounts: &'a MountSnapshot,
    /// Where `/` leads and `..` stops.
    pub(crate) root: Pos<'a>,
    pub(crate) resolve: ResolveFlags,
    mode: WalkMode,
    /// Symbolic links followed so far.
    links: u32,
    seed: u64,
    /// Whether the walk has fetched its root yet (Linux: `nameidata::root` set): at the start
    /// for a scoped or absolute path, else at the first `..` or absolute link.
    pub(crate) root_set: bool,
    /// Whether the mounts where the walk ends count as used, clearing their `MNT_EXPIRE`
    /// mark (Linux: the `mntput()` of the `path_put()` that ends a path call). `umount2`
    /// turns it off for its target, as Linux's `path_umount()` puts it with
    /// `mntput_no_expire()`.
    pub(crate) touch_mounts: bool,
}

impl<'a> Walker<'a> {
    pub(crate) fn new(
        guard: &'a Guard,
        cred: &'a Cred,
        ns: &'a MountNamespace,
        mounts: &'a MountSnapshot,
        root: Pos<'a>,
        resolve: ResolveFlags,
        mode: WalkMode,
    ) -> Self {
        Walker {
            guard,
            cred,
            ns,
            mounts,
            root,
            resolve,
            mode,
            links: 0,
            seed: hash_seed(),
            root_set: resolve.intersects(ResolveFlags::BENEATH | ResolveFlags::IN_ROOT),
            touch_mounts: true,
        }
    }

    /// `pos`, its mount marked used (see `touch_mounts`): the end of a walk, where Linux's
    /// path call ends with a reference to the final path that it then puts. The parent a
    /// namespace call holds is marked by the call (`Task::parent_of`); a parent the walk only
    /// passes through is not, as Linux's RCU walk takes no reference on it.
    #[inline]
    fn touched(&self, pos: Pos<'a>) -> Pos<'a> {
        if self.touch_mounts {
            pos.mnt.touch();
        }
        pos
    }

    /// Resolves every component but the last (Linux: `link_path_walk()`), checking search
    /// permission on the directory that holds the last one.
    ///
    /// # Errors
    /// `ENOENT`, `ENOTDIR`, `EACCES`, `ENAMETOOLONG`, `ELOOP`, `EXDEV` (scoped resolution).
    pub(crate) fn walk_parent<'p>(
        &mut self,
        start: Pos<'a>,
        path: &'p [u8],
    ) -> Result<(Pos<'a>, Last<'p>)> {
        let mut pos = start;
        let mut i = 0;
        if path.first() == Some(&b'/') {
            pos = self.jump_root(&pos)?;
            while i < path.len() && path[i] == b'/' {
                i += 1;
            }
        }
        if i == path.len() {
            let kind = if path.is_empty() {
                LastKind::Dot
            } else {
                LastKind::Root
            };
            return Ok((
                pos,
                Last {
                    name: Cow::Borrowed(&b""[..]),
                    kind,
                    trailing_slash: false,
                    hash_len: 0,
                },
            ));
        }
        loop {
            let dir = pos.inode().ok_or(Errno::ENOENT)?;
            may_lookup(self.cred, dir).map_err(|e| self.cached_err(e))?;
            let (len, hl) = hash_component_checked(self.seed, &path[i..]).ok_or(Errno::EINVAL)?;
            let name = &path[i..i + len];
            let mut j = i + len;
            while j < path.len() && path[j] == b'/' {
                j += 1;
            }
            if j == path.len() {
                let kind = match name {
                    b"." => LastKind::Dot,
                    b".." => LastKind::DotDot,
                    _ => LastKind::Normal,
                };
                return Ok((
                    pos,
                    Last {
                        name: Cow::Borrowed(name),
                        kind,
                        trailing_slash: i + len < path.len(),
                        hash_len: hl,
                    },
                ));
            }
            if let Some(d) = Self::noted(self.step_fast(&pos, name, hl, FollowLast::Yes)) {
                if d.inode().is_some_and(|i| i.is_dir()) {
                    pos.dentry = Ref::B(d);
                    i = j;
                    continue;
                }
            }
            pos = self.step(pos, name, FollowLast::Yes)?;
            if !pos.is_dir() {
                return Err(self.cached_err(Errno::ENOTDIR));
            }
            i = j;
        }
    }

    /// With `RESOLVE_CACHED`, an error that Linux finds only after leaving RCU-walk becomes
    /// `EAGAIN` (Linux: `try_to_unlazy()` fails under `LOOKUP_CACHED`).
    fn cached_err(&self, e: Errno) -> Errno {
        if self.resolve.contains(ResolveFlags::CACHED) {
            Errno::EAGAIN
        } else {
            e
        }
    }

    /// The common step, inline: a cached, positive child that is neither a mountpoint
    /// nor a symbolic link to follow. Everything else returns `None` and takes
    /// [`Walker::step`].
    ///
    /// # Fast path
    /// No lock, no reference count, no store: the table lookup of [`Dentry::lookup_fast`] and
    /// flag loads. Falls back on `.`/`..`, misses, negative entries,
    /// mountpoints and links to follow.
    #[inline(always)]
    fn step_fast(
        &self,
        pos: &Pos<'a>,
        name: &[u8],
        hl: u64,
        follow: FollowLast,
    ) -> Option<&'a Arc<Dentry>> {
        if self.mode == WalkMode::Ref {
            return None;
        }
        step_cached(&pos.dentry, name, hl, follow, self.guard)
    }

    /// Counts a fallback of [`Walker::step_fast`] for the tests (its callers count, so that
    /// a `step_fast` that always gave up would be counted too).
    #[inline(always)]
    fn noted(d: Option<&'a Arc<Dentry>>) -> Option<&'a Arc<Dentry>> {
        #[cfg(test)]
        if d.is_none() {
            super::fallbacks::note();
        }
        d
    }

    /// Resolves a whole path through cached entries only ([`super::fast`]). `None`
    /// means "not resolvable this way"; the caller restarts with [`Walker::lookup`], which
    /// reports errors. Scoped absolute paths and owned positions always take the general walk.
    #[inline]
    pub(crate) fn lookup_fast_path(
        &self,
        start: &Pos<'a>,
        path: &[u8],
        follow: FollowLast,
    ) -> Option<&'a Arc<Dentry>> {
        if self.mode == WalkMode::Ref {
            return None;
        }
        if path.first() == Some(&b'/')
            && self
                .resolve
                .intersects(ResolveFlags::BENEATH | ResolveFlags::NO_XDEV)
        {
            return None;
        }
        let (Ref::B(root), Ref::B(s)) = (&self.root.dentry, &start.dentry) else {
            return None;
        };
        let d = walk_cached(self.guard, self.cred, self.seed, root, s, path, follow);
        #[cfg(test)]
        if d.is_none() {
            super::fallbacks::note();
        }
        d
    }

    /// Resolves a whole path (Linux: `path_lookupat()`). An empty path resolves to `start`.
    ///
    /// # Errors
    /// As [`Walker::walk_parent`]; `ENOTDIR` if a trailing slash names a non-directory.
    pub(crate) fn lookup(
        &mut self,
        start: Pos<'a>,
        path: &[u8],
        follow: FollowLast,
    ) -> Result<Pos<'a>> {
        if path.is_empty() {
            return Ok(start);
        }
        if let Some(d) = self.lookup_fast_path(&start, path, follow) {
            return Ok(self.touched(Pos {
                mnt: start.mnt,
                dentry: Ref::B(d),
            }));
        }
        let (parent, last) = self.walk_parent(start, path)?;
        self.resolve_last(parent, &last, follow)
    }

    /// Resolves the last component returned by [`Walker::walk_parent`].
    ///
    /// # Errors
    /// As [`Walker::lookup`].
    pub(crate) fn resolve_last(
        &mut self,
        parent: Pos<'a>,
        last: &Last<'_>,
        follow: FollowLast,
    ) -> Result<Pos<'a>> {
        let follow = if last.trailing_slash {
            FollowLast::Yes
        } else {
            follow
        };
        let pos = match last.kind {
            LastKind::Root | LastKind::Dot => parent,
            LastKind::DotDot => self.follow_dotdot(parent)?,
            LastKind::Normal => {
                match Self::noted(self.step_fast(&parent, &last.name, last.hash_len, follow)) {
                    Some(d) => Pos {
                        mnt: parent.mnt,
                        dentry: Ref::B(d),
                    },
                    None => self.step(parent, &last.name, follow)?,
                }
            }
        };
        if last.trailing_slash && !pos.is_dir() {
            return Err(Errno::ENOTDIR);
        }
        Ok(self.touched(pos))
    }

    /// Steps from directory `parent` into its child `child`, found by the caller under the
    /// directory lock, without looking the name up again: the child may have been unlinked or
    /// replaced since, and the walk goes on with the dentry it found (Linux: `step_into()`
    /// after `lookup_open()` in `open_last_lookups()`). Crosses mounts; does not follow a
    /// symlink.
    pub(crate) fn step_into_found(&self, parent: &Pos<'a>, child: Arc<Dentry>) -> Result<Pos<'a>> {
        self.cross_mounts(Pos {
            mnt: parent.mnt.clone(),
            dentry: Ref::O(child),
        })
    }

    /// Steps from directory `pos` into `name` (Linux: `walk_component()` + `step_into()`).
    fn step(&mut self, pos: Pos<'a>, name: &[u8], follow: FollowLast) -> Result<Pos<'a>> {
        match name {
            b"." => return Ok(pos),
            b".." => return self.follow_dotdot(pos),
            _ => {}
        }
        let child = self.lookup_one(&pos, name)?;
        let inode = child.inode().ok_or(Errno::ENOENT)?;
        let is_link = inode.file_type() == FileType::Symlink;
        let next = self.cross_mounts(Pos {
            mnt: pos.mnt.clone(),
            dentry: child,
        })?;
        if is_link && follow == FollowLast::Yes {
            return self.follow_link(pos, next);
        }
        Ok(next)
    }

    /// Finds a child: cached and lock-free when possible, else locked.
    #[inline]
    pub(crate) fn lookup_one(&self, dir: &Pos<'a>, name: &[u8]) -> Result<Ref<'a, Arc<Dentry>>> {
        if super::lookup::name_too_long(&dir.dentry, name) {
            // Never cached: Linux finds the name too long only in the filesystem's lookup,
            // after `__lookup_slow()` refused a removed directory, and a `RESOLVE_CACHED`
            // walk gives up before either.
            if self.mode != WalkMode::Ref && self.resolve.contains(ResolveFlags::CACHED) {
                return Err(Errno::EAGAIN);
            }
            if dir.dentry.is_dead() {
                return Err(Errno::ENOENT);
            }
            return Err(Errno::ENAMETOOLONG);
        }
        if self.mode == WalkMode::Ref {
            return lookup_slow(dir.dentry.arc(), name).map(Ref::O);
        }
        let hl = hash_len(self.seed, name);
        match dir.dentry.lookup_fast(hl, name, self.guard) {
            // A negative entry is uvfs's own cache of a miss: Linux's tmpfs keeps none (its
            // dentries are deleted on their last `dput()`, `always_delete_dentry()` in
            // fs/libfs.c), so there the name is not cached at all and `RESOLVE_CACHED` gives
            // up.
            Cached::Hit(d)
                if d.inode().is_none() && self.resolve.contains(ResolveFlags::CACHED) =>
            {
                Err(Errno::EAGAIN)
            }
            Cached::Hit(d)
                if !d
                    .inode()
                    .is_some_and(|i| i.needs_revalidate() && !super::fast::revalidate(i)) =>
            {
                Ok(Ref::B(d))
            }
            Cached::Hit(_) | Cached::Miss => {
                if self.resolve.contains(ResolveFlags::CACHED) {
                    return Err(Errno::EAGAIN);
                }
                lookup_slow(dir.dentry.arc(), name).map(Ref::O)
            }
        }
    }

    /// Goes down through every mount stacked on `pos` (Linux: `handle_mounts()`). The
    /// mount and its root are borrowed from the mount table the walk loaded at its first
    /// crossing (no count written: threads crossing the same mount write nothing in common),
    /// unless a mount change since makes the walk count them.
    #[inline]
    fn cross_mounts(&self, mut pos: Pos<'a>) -> Result<Pos<'a>> {
        while pos.dentry.is_mountpoint() {
            let Some(m) = self.ns.lookup_mount_in(self.mounts, &pos.mnt, &pos.dentry) else {
                break;
            };
            if self.resolve.contains(ResolveFlags::NO_XDEV) {
                // Linux finds the crossing only after leaving RCU-walk (`handle_mounts()`).
                return Err(self.cached_err(Errno::EXDEV));
            }
            pos = match m {
                Crossed::Borrowed(m) => Pos {
                    dentry: Ref::B(m.root()),
                    mnt: Ref::B(m),
                },
                Crossed::Owned(m) => Pos {
                    dentry: Ref::O(m.root().clone()),
                    mnt: Ref::O(m),
                },
            };
        }
        Ok(pos)
    }

    /// `..`: never above the walk's root; up through mount roots (Linux: `follow_dotdot()`).
    /// Where it stays put (at the root), it still goes down through mounts stacked there, as
    /// every step does (Linux: `step_into()` after `follow_dotdot()`).
    ///
    /// From a mount's root it climbs to the first mountpoint up the chain that is not itself
    /// a mount's root (Linux: `choose_mountpoint()`). If the chain reaches the walk's root
    /// first, or a mount with no parent, `..` stays where it is: no mount is crossed, so
    /// `RESOLVE_NO_XDEV` has nothing to refuse (a mount stacked on the root, reached as the
    /// cwd, is its own `..`).
    fn follow_dotdot(&mut self, pos: Pos<'a>) -> Result<Pos<'a>> {
        self.root_set = true;
        if pos.same(&self.root) {
            return self.dotdot_in_root(pos);
        }
        let mut pos = pos;
        if Arc::ptr_eq(pos.dentry.arc(), pos.mnt.root()) {
            let mut above = pos.mnt.parent();
            let up = loop {
                let Some((pm, pd)) = above else {
                    return self.dotdot_in_root(pos);
                };
                let up = Pos {
                    mnt: Ref::O(pm),
                    dentry: Ref::O(pd),
                };
                if up.same(&self.root) {
                    return self.dotdot_in_root(pos);
                }
                if !Arc::ptr_eq(up.dentry.arc(), up.mnt.root()) {
                    break up;
                }
                above = up.mnt.parent();
            };
            // Linux's RCU-walk gives the EXDEV cases up to ref-walk (`follow_dotdot_rcu()`),
            // hence `cached_err`.
            if self.resolve.contains(ResolveFlags::NO_XDEV) {
                return Err(self.cached_err(Errno::EXDEV));
            }
            pos = up;
        }
        let parent = match pos.dentry.parent() {
            Some(p) => p,
            None => return self.cross_mounts(pos),
        };
        self.cross_mounts(Pos {
            mnt: pos.mnt,
            dentry: Ref::O(parent),
        })
    }

    /// `..` that stays where it is (Linux: `follow_dotdot()`'s `in_root`): `EXDEV` under
    /// `RESOLVE_BENEATH`, else down through the mounts stacked here.
    fn dotdot_in_root(&self, pos: Pos<'a>) -> Result<Pos<'a>> {
        if self.resolve.contains(ResolveFlags::BENEATH) {
            return Err(self.cached_err(Errno::EXDEV));
        }
        self.cross_mounts(pos)
    }

    /// Jumps to the walk's root for an absolute path or link (Linux: `nd_jump_root()`).
    /// With `RESOLVE_NO_XDEV`, a walk that has not fetched its root yet compares against no
    /// root at all, so an absolute link there is `EXDEV` even on the root's own mount.
    fn jump_root(&mut self, from: &Pos<'a>) -> Result<Pos<'a>> {
        if self.resolve.contains(ResolveFlags::BENEATH) {
            return Err(Errno::EXDEV);
        }
        if self.resolve.contains(ResolveFlags::NO_XDEV)
            && (!self.root_set || !MountRef::ptr_eq(from.mnt.arc(), self.root.mnt.arc()))
        {
            return Err(Errno::EXDEV);
        }
        self.root_set = true;
        Ok(self.root.clone())
    }

    /// Follows the symbolic link at `link`, found in directory `parent` (Linux: `pick_link()`).
    ///
    /// # Errors
    /// `ELOOP` past [`MAXSYMLINKS`], with `RESOLVE_NO_SYMLINKS` or on a `nosymfollow` mount;
    /// `ENOENT` for an empty target; what resolving the target returns.
    pub(crate) fn follow_link(&mut self, parent: Pos<'a>, link: Pos<'a>) -> Result<Pos<'a>> {
        let body = self.read_link_body(&link)?;
        let start = if body.first() == Some(&b'/') {
            self.jump_root(&parent)?
        } else {
            parent
        };
        let (p, last) = self.walk_parent(start, &body)?;
        self.resolve_last(p, &last, FollowLast::Yes)
    }

    /// Counts one link and reads its target.
    pub(crate) fn read_link_body(&mut self, link: &Pos<'a>) -> Result<Arc<[u8]>> {
        if self.resolve.contains(ResolveFlags::NO_SYMLINKS)
            || link.mnt.flags().contains(MntFlags::NOSYMFOLLOW)
        {
            return Err(Errno::ELOOP);
        }
        self.links += 1;
        if self.links > MAXSYMLINKS {
            return Err(Errno::ELOOP);
        }
        let inode = link.inode().ok_or(Errno::ENOENT)?;
        // Following a link reads it (Linux: `touch_atime()` in `pick_link()`). Linux's
        // RCU-walk cannot write the atime: it leaves RCU-walk first, which a
        // `RESOLVE_CACHED` walk may not do, so there a stale link atime means `EAGAIN`.
        // A read-only mount skips the write, not the need (`touch_atime()`).
        if let Some(now) = atime_update(&link.mnt, inode) {
            if self.resolve.contains(ResolveFlags::CACHED) {
                return Err(Errno::EAGAIN);
            }
            if !link.mnt.is_rdonly() {
                inode.write_attrs(|w| w.set_atime(now));
            }
        }
        let body = inode.ops().get_link(inode)?;
        if body.is_empty() {
            return Err(Errno::ENOENT);
        }
        Ok(body)
    }

    /// Where an absolute link target starts, for callers that resolve a last-component link
    /// themselves (`open(O_CREAT)`).
    pub(crate) fn link_start(&mut self, parent: Pos<'a>, body: &[u8]) -> Result<Pos<'a>> {
        if body.first() == Some(&b'/') {
            self.jump_root(&parent)
        } else {
            Ok(parent)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::fallbacks;
    use crate::abi::{AtFlags, OpenFlags, AT_FDCWD};
    use crate::sys::Vfs;
    use crate::vfs::Cred;

    /// A warm walk resolves on the lock-free path, and to the right inode: the fallback count
    /// is the oracle for "stayed on it", `fstat` of the file opened by the general walk the
    /// oracle for "right". Paths that must leave it (`.`, a mountpoint-free miss, a symlink
    /// to follow, no search permission) count a fallback and still resolve as Linux does.
    #[test]
    fn warm_walks_stay_on_the_lock_free_path_and_find_the_right_inode() {
        let vfs = Vfs::new();
        let t = vfs.task(Cred::root());
        for d in ["/a", "/a/bb", "/a/bb/ccc", "/x"] {
            t.mkdirat(AT_FDCWD, d, 0o755).expect("mkdir");
        }
        let mut ino = std::collections::HashMap::new();
        for f in ["/a/bb/ccc/file", "/a/bb/f2", "/x/y"] {
            let fd = t
                .openat(AT_FDCWD, f, OpenFlags::CREAT | OpenFlags::RDWR, 0o644)
                .expect("create");
            ino.insert(f, t.fstat(fd).expect("fstat").ino);
            t.close(fd).expect("close");
        }
        t.symlinkat("bb", AT_FDCWD, "/a/l").expect("symlink");
        t.mkdirat(AT_FDCWD, "/p", 0o700).expect("mkdir");
        t.mkdirat(AT_FDCWD, "/p/q", 0o755).expect("mkdir");
        let stat =
            |t: &crate::Task, p: &str| t.fstatat(AT_FDCWD, p, AtFlags::empty()).map(|s| s.ino);
        // Warm every entry once.
        for p in ["/a/bb/ccc/file", "/a/bb/f2", "/x/y", "/p/q", "/a/l/f2"] {
            stat(&t, p).expect("warm");
        }
        fallbacks::take();
        let warm: [(&str, &str); 6] = [
            ("/a/bb/ccc/file", "/a/bb/ccc/file"),
            ("a/bb/ccc/file", "/a/bb/ccc/file"),
            ("//a/bb/f2", "/a/bb/f2"),
            ("/a/bb/f2", "/a/bb/f2"),
            ("/x/y", "/x/y"),
            ("x/y", "/x/y"),
        ];
        for (p, f) in warm {
            assert_eq!(stat(&t, p), Ok(ino[f]), "{p}");
        }
        assert_eq!(fallbacks::take(), 0, "warm walks left the lock-free path");
        // The general walk of open (each step, then the last) stays on it too.
        for (p, f) in [("/a/bb/ccc/file", "/a/bb/ccc/file"), ("x/y", "/x/y")] {
            let fd = t.openat(AT_FDCWD, p, OpenFlags::RDONLY, 0).expect("open");
            assert_eq!(t.fstat(fd).map(|s| s.ino), Ok(ino[f]), "{p}");
            t.close(fd).expect("close");
        }
        assert_eq!(fallbacks::take(), 0, "warm opens left the lock-free path");
        // Each of these must leave it at least once, and still answer right.
        let cold: [(&str, Result<u64, crate::Errno>); 5] = [
            ("/a/./bb/f2", Ok(ino["/a/bb/f2"])),
            ("/a/bb/../bb/f2", Ok(ino["/a/bb/f2"])),
            ("/a/l/f2", Ok(ino["/a/bb/f2"])),
            ("/a/bb/nothing", Err(crate::Errno::ENOENT)),
            ("/a/bb/f2/", Err(crate::Errno::ENOTDIR)),
        ];
        for (p, want) in cold {
            assert_eq!(stat(&t, p), want, "{p}");
            assert!(fallbacks::take() > 0, "{p} stayed on the lock-free path");
        }
        let user = vfs.task(Cred::user(1000, 1000, &[]));
        assert_eq!(stat(&user, "/p/q"), Err(crate::Errno::EACCES));
        assert!(
            fallbacks::take() > 0,
            "no search permission stayed on the lock-free path"
        );
        assert_eq!(stat(&user, "/a/bb/f2"), Ok(ino["/a/bb/f2"]));
        assert_eq!(
            fallbacks::take(),
            0,
            "another task's warm walk left the lock-free path"
        );
    }
}
