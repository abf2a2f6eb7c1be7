//! `openat`, `openat2`, `close`. Linux: fs/open.c (`build_open_flags()`, `do_sys_openat2()`),
//! fs/namei.c (`path_openat()`, `open_last_lookups()`, `do_open()`, `may_open()`).

use std::sync::Arc;

use super::{lookup_locked_for_create, new_inode, prepare_mode, EmptyPath};
use crate::abi::{
    Access, AccessMode, Errno, FileType, OpenFlags, OpenHow, ResolveFlags, Result, S_IALLUGO,
    S_IFMT,
};
use crate::vfs::file::FileDescription;
use crate::vfs::inode::{Inode, SetAttr, TimeSet};
use crate::vfs::mount::MntFlags;
use crate::vfs::namei::{Last, LastKind, Pos, Walker};
use crate::vfs::notify;
use crate::vfs::permission::{
    inode_permission, may_create, may_create_in_sticky, owner_or_capable, DirAttrs,
};
use crate::vfs::pin::FileHold;
use crate::vfs::{Name, Task, VfsPath};

/// Every flag `openat2` accepts (Linux: `VALID_OPEN_FLAGS`).
const VALID_OPEN_FLAGS: u64 = (OpenFlags::RDONLY.bits()
    | OpenFlags::WRONLY.bits()
    | OpenFlags::RDWR.bits()
    | OpenFlags::CREAT.bits()
    | OpenFlags::EXCL.bits()
    | OpenFlags::NOCTTY.bits()
    | OpenFlags::TRUNC.bits()
    | OpenFlags::APPEND.bits()
    | OpenFlags::NONBLOCK.bits()
    | OpenFlags::DSYNC.bits()
    | OpenFlags::ASYNC.bits()
    | OpenFlags::DIRECT.bits()
    | OpenFlags::LARGEFILE.bits()
    | OpenFlags::DIRECTORY.bits()
    | OpenFlags::NOFOLLOW.bits()
    | OpenFlags::NOATIME.bits()
    | OpenFlags::CLOEXEC.bits()
    | OpenFlags::SYNC.bits()
    | OpenFlags::PATH.bits()
    | OpenFlags::TMPFILE.bits()) as u64;

/// Flags that survive `O_PATH` (Linux: `O_PATH_FLAGS`).
const O_PATH_FLAGS: u32 = OpenFlags::DIRECTORY.bits()
    | OpenFlags::NOFOLLOW.bits()
    | OpenFlags::PATH.bits()
    | OpenFlags::CLOEXEC.bits();

/// The `__O_TMPFILE` bit alone.
const O_TMPFILE_BIT: u32 = OpenFlags::TMPFILE.bits() & !OpenFlags::DIRECTORY.bits();

/// A checked open request (Linux: `struct open_flags`).
#[derive(Clone, Copy, Debug)]
struct OpenReq {
    flags: OpenFlags,
    /// Creation mode, type bits included.
    mode: u32,
    acc: Access,
    resolve: ResolveFlags,
    /// The flags the file keeps (`F_GETFL`): without the `O_NOFOLLOW` that `O_CREAT|O_EXCL`
    /// implies for the walk only (Linux: `build_open_flags()` sets `open_flag` first).
    file_flags: OpenFlags,
}

/// What `openat` makes of its arguments before checking them (Linux: `build_open_how()`):
/// unknown bits dropped and, with `O_PATH`, every flag `O_PATH` ignores dropped too, so that
/// `O_PATH|O_CREAT|O_DIRECTORY` or `O_PATH|O_TMPFILE` open a path instead of failing.
fn build_open_how(flags: OpenFlags, mode: u32) -> (OpenFlags, u32) {
    let mut bits = flags.bits() & VALID_OPEN_FLAGS as u32;
    if bits & OpenFlags::PATH.bits() != 0 {
        bits &= O_PATH_FLAGS;
    }
    let flags = OpenFlags::from_bits_retain(bits);
    (flags, if will_create(flags) { mode } else { 0 })
}

/// `O_CREAT` or `__O_TMPFILE` (Linux: `WILL_CREATE()`).
fn will_create(flags: OpenFlags) -> bool {
    flags.contains(OpenFlags::CREAT) || flags.bits() & O_TMPFILE_BIT != 0
}

/// Checks the flags in Linux's order, all `EINVAL` (Linux: `build_open_flags()`).
fn build_open_flags(mut flags: OpenFlags, mode: u32, resolve: ResolveFlags) -> Result<OpenReq> {
    let mode = if will_create(flags) {
        (mode & S_IALLUGO) | FileType::Regular.mode_bits()
    } else {
        0
    };
    if flags.contains(OpenFlags::CREAT) && flags.contains(OpenFlags::DIRECTORY) {
        return Err(Errno::EINVAL);
    }
    if flags.bits() & O_TMPFILE_BIT != 0
        && (!flags.contains(OpenFlags::DIRECTORY) || flags.access() == AccessMode::ReadOnly)
    {
        return Err(Errno::EINVAL);
    }
    if flags.contains(OpenFlags::PATH) {
        if flags.bits() & !O_PATH_FLAGS != 0 {
            return Err(Errno::EINVAL);
        }
        return Ok(OpenReq {
            flags,
            mode: 0,
            acc: Access::empty(),
            resolve,
            file_flags: flags,
        });
    }
    let mut acc = match flags.access() {
        AccessMode::ReadOnly => Access::READ,
        AccessMode::WriteOnly => Access::WRITE,
        AccessMode::ReadWrite | AccessMode::Neither => Access::READ | Access::WRITE,
    };
    if flags.contains(OpenFlags::TRUNC) {
        acc |= Access::WRITE;
    }
    if flags.contains(OpenFlags::SYNC) {
        flags |= OpenFlags::DSYNC;
    }
    // 64-bit Linux forces O_LARGEFILE (`force_o_largefile()`).
    flags |= OpenFlags::LARGEFILE;
    let file_flags = flags;
    if flags.contains(OpenFlags::CREAT) && flags.contains(OpenFlags::EXCL) {
        flags |= OpenFlags::NOFOLLOW;
    }
    Ok(OpenReq {
        flags,
        mode,
        acc,
        resolve,
        file_flags,
    })
}

/// What the last step of an open produced.
/// Locked walks an open repeats after finding a released inode before it says `ENOENT` (it
/// takes that many removals of the name, each completed between a lookup and its open, in a
/// row).
const STALE_RETRIES: u32 = 64;

struct Opened {
    /// The file's path and inode: counted, or through the dentry's pin (`vfs::pin`).
    hold: FileHold,
    /// A file this open created is held from its creation, under its directory's lock, to
    /// the end of the open: an unlink by another thread in between cannot release it before
    /// the open's own hold (Linux: the creating open's dentry reference).
    _created_hold: Option<crate::vfs::inode::InodeHold>,
    created: bool,
    /// With `O_CREAT`, for a name that existed: the mode and owner of the directory it was
    /// found in, read when it was looked up (Linux: `nameidata::dir_mode`, `dir_vfsuid`).
    found_in: Option<DirAttrs>,
}

/// # Files: open and close
///
/// `openat`, `openat2` (resolve flags), `close`.
impl Opened {
    /// A name found (not created) at `pos`, held for the open (through its dentry's pin when
    /// it has one: `vfs::pin`).
    fn found(pos: &Pos<'_>, found_in: Option<DirAttrs>) -> Result<Opened> {
        let inode = pos.inode().ok_or(Errno::ENOENT)?;
        Ok(Opened {
            _created_hold: None,
            hold: FileHold::open(pos.mnt.arc().clone(), pos.dentry.arc(), inode),
            created: false,
            found_in,
        })
    }
}

impl Task {
    /// `openat(2)`: opens (and with `O_CREAT` creates) `path` relative to `dirfd`; returns the
    /// lowest free fd. Unknown flag bits are ignored, as Linux does for `openat`.
    ///
    /// # Errors
    /// `EMFILE`, then path errors (`ENOENT`, `ENOTDIR`, `EACCES`, `ELOOP`, `ENAMETOOLONG`),
    /// `EEXIST` (`O_CREAT|O_EXCL`), `EISDIR`, `EROFS`, `ENOSPC`, `EINVAL` for bad flag
    /// combinations, `EPERM` (`O_NOATIME` by a non-owner), `ENXIO` (special files).
    ///
    /// # Examples
    /// ```
    /// use uvfs::abi::{OpenFlags, AT_FDCWD};
    /// use uvfs::{Cred, Errno, Vfs};
    ///
    /// let task = Vfs::new().task(Cred::root());
    /// let fd = task.openat(AT_FDCWD, "/f", OpenFlags::CREAT | OpenFlags::EXCL | OpenFlags::WRONLY, 0o600)?;
    /// assert_eq!(fd, 0); // the lowest free fd
    /// let again = task.openat(AT_FDCWD, "/f", OpenFlags::CREAT | OpenFlags::EXCL | OpenFlags::WRONLY, 0o600);
    /// assert_eq!(again, Err(Errno::EEXIST));
    /// task.close(fd)?;
    /// # Ok::<(), Errno>(())
    /// ```
    pub fn openat(
        &self,
        dirfd: i32,
        path: impl AsRef<[u8]>,
        flags: OpenFlags,
        mode: u32,
    ) -> Result<i32> {
        let (flags, mode) = build_open_how(flags, mode);
        let req = build_open_flags(flags, mode, ResolveFlags::empty())?;
        self.do_open(dirfd, path.as_ref(), req)
    }

    /// `openat2(2)`: as [`Task::openat`] with strict flag checks and resolve restrictions.
    ///
    /// # Errors
    /// `EINVAL` for unknown flags or resolve bits, a mode without `O_CREAT`/`O_TMPFILE`, or
    /// `RESOLVE_BENEATH` with `RESOLVE_IN_ROOT`; `EXDEV` when resolution would leave the scope or
    /// cross a mount it may not; `ELOOP` for a link with `RESOLVE_NO_SYMLINKS`; `EAGAIN` for
    /// `RESOLVE_CACHED` when a lookup misses the cache; otherwise as [`Task::openat`].
    pub fn openat2(&self, dirfd: i32, path: impl AsRef<[u8]>, how: &OpenHow) -> Result<i32> {
        if how.flags & !VALID_OPEN_FLAGS != 0 {
            return Err(Errno::EINVAL);
        }
        let resolve = ResolveFlags::from_bits(how.resolve).ok_or(Errno::EINVAL)?;
        if resolve.contains(ResolveFlags::BENEATH | ResolveFlags::IN_ROOT) {
            return Err(Errno::EINVAL);
        }
        let flags = OpenFlags::from_bits_retain(how.flags as u32);
        if how.mode & !(S_IALLUGO as u64) != 0 || (!will_create(flags) && how.mode != 0) {
            return Err(Errno::EINVAL);
        }
        let req = build_open_flags(flags, how.mode as u32, resolve)?;
        // Linux refuses to try a cached walk for a creation or truncation only after every
        // check above (`build_open_flags()`).
        if resolve.contains(ResolveFlags::CACHED)
            && (will_create(flags) || flags.contains(OpenFlags::TRUNC))
        {
            return Err(Errno::EAGAIN);
        }
        self.do_open(dirfd, path.as_ref(), req)
    }

    fn do_open(&self, dirfd: i32, path: &[u8], req: OpenReq) -> Result<i32> {
        // Linux takes the fd after it copies the name in (`getname()`: an empty or over-long
        // name fails first) and before it walks, so a full table is EMFILE whatever the
        // walk would find.
        if !self.files.has_free() {
            super::check_path(path, EmptyPath::Reject)?;
            return Err(Errno::EMFILE);
        }
        let cloexec = req.flags.contains(OpenFlags::CLOEXEC);
        let file = self.open_description(dirfd, path, req)?;
        self.install_cached(file, cloexec)
    }

    /// [`Task::openat`] without an fd: the open file description, for `uvfs::fs::File`
    /// (which closes it when dropped). No `EMFILE`: no fd is taken.
    ///
    /// # Errors
    /// As [`Task::openat`] but `EMFILE`.
    pub(crate) fn openat_file(
        &self,
        dirfd: i32,
        path: &[u8],
        flags: OpenFlags,
        mode: u32,
    ) -> Result<Arc<FileDescription>> {
        let (flags, mode) = build_open_how(flags, mode);
        let req = build_open_flags(flags, mode, ResolveFlags::empty())?;
        self.open_description(dirfd, path, req)
    }

    fn open_description(
        &self,
        dirfd: i32,
        path: &[u8],
        req: OpenReq,
    ) -> Result<Arc<FileDescription>> {
        // `ESTALE`: the walk found a name whose inode an unlink (or a rename over it) released
        // before the open took its hold (tmpfs's `take_open_hold`): the lock-free walk can
        // see the name between the filesystem's removal and the dcache's. The open happens
        // after that removal, so the name is looked up again with the locked walk, which waits
        // for the removal to finish (Linux retries a stale walk once, with `LOOKUP_REVAL`, in
        // ref-walk).
        match self.open_description_once(dirfd, path, req) {
            Err(Errno::ESTALE) => {}
            r => return r,
        }
        let mode = self.walk_mode.replace(crate::vfs::WalkMode::Ref);
        let mut r = Err(Errno::ESTALE);
        // Each further try follows another removal of the name, completed between its locked
        // lookup and its open.
        for _ in 0..STALE_RETRIES {
            r = self.open_description_once(dirfd, path, req);
            if !matches!(r, Err(Errno::ESTALE)) {
                break;
            }
        }
        self.walk_mode.set(mode);
        r.map_err(|e| if e == Errno::ESTALE { Errno::ENOENT } else { e })
    }

    fn open_description_once(
        &self,
        dirfd: i32,
        path: &[u8],
        req: OpenReq,
    ) -> Result<Arc<FileDescription>> {
        let umask = self.umask.get();
        let cred_id = self.cred_id.get();
        self.with_path(dirfd, path, EmptyPath::Reject, req.resolve, |w, start| {
            let opened = if req.flags.bits() & O_TMPFILE_BIT != 0 {
                let (opened, dir) = open_tmpfile(w, start, path, req, umask)?;
                return finish_open(w.cred, opened, req, cred_id, Some(&dir));
            } else if req.flags.contains(OpenFlags::PATH) {
                let follow = follow_of(req.flags);
                let pos = w.lookup(start, path, follow)?;
                Opened::found(&pos, None)?
            } else {
                open_last(w, start, path, req, umask)?
            };
            finish_open(w.cred, opened, req, cred_id, None)
        })
        .and_then(|file| {
            // A FIFO's open waits for the other side here, out of the walk's read-side
            // section and borrows (Linux: `fifo_open()`).
            if file.inode().file_type() == crate::abi::FileType::Fifo && !file.fmode().path_only {
                crate::fs::pipefs::fifo_rendezvous(self, &file)?;
                // `O_DIRECT` is refused after the file's open (`do_dentry_open()`), so after
                // the rendezvous and its `ENXIO`.
                if req.flags.contains(OpenFlags::DIRECT) {
                    return Err(Errno::EINVAL);
                }
                file.open_done();
            }
            Ok(file)
        })
    }

    /// `close(2)`.
    ///
    /// # Errors
    /// `EBADF` if `fd` is not open.
    pub fn close(&self, fd: i32) -> Result<()> {
        self.fd_cache_evict(fd);
        let file = self.files.remove(fd)?;
        // Any close releases the table's POSIX locks on the file (Linux: `filp_flush()`).
        crate::vfs::locks::remove_posix(&file, self.files.id());
        drop(file);
        Ok(())
    }
}

fn follow_of(flags: OpenFlags) -> crate::vfs::namei::FollowLast {
    if flags.contains(OpenFlags::NOFOLLOW) {
        crate::vfs::namei::FollowLast::No
    } else {
        crate::vfs::namei::FollowLast::Yes
    }
}

/// `O_TMPFILE`: an unnamed file in the directory `path` (Linux: `do_tmpfile()`), and that
/// directory, which the open file keeps.
fn open_tmpfile<'w>(
    w: &mut Walker<'w>,
    start: Pos<'w>,
    path: &[u8],
    req: OpenReq,
    umask: u32,
) -> Result<(Opened, Arc<Inode>)> {
    // `O_NOFOLLOW` holds for the directory too: a symlink there is not one (ENOTDIR).
    let dir = w.lookup(start, path, follow_of(req.flags))?;
    let dinode = dir.inode().ok_or(Errno::ENOENT)?.clone();
    if !dinode.is_dir() {
        return Err(Errno::ENOTDIR);
    }
    if dir.mnt.is_rdonly() {
        return Err(Errno::EROFS);
    }
    // Only the permission check of `may_create`: an unnamed file may be made in a removed
    // directory (Linux: `vfs_tmpfile()` has no `IS_DEADDIR()` test).
    may_create(w.cred, &dinode, false)?;
    let mode = (req.mode & S_IALLUGO) | FileType::Regular.mode_bits();
    let mode = prepare_mode(w.cred, &dinode, mode, umask);
    let inode = dinode
        .ops()
        .tmpfile(&dinode, &new_inode(w.cred, &dinode, mode, 0))?;
    // Named after its inode number, as Linux's `d_tmpfile()` names it: the name its
    // directory's watchers see in its events.
    let name = format!("#{}", inode.ino());
    let dentry = crate::vfs::Dentry::new_unhashed(
        dir.dentry.arc(),
        name.as_bytes(),
        inode,
        !req.flags.contains(OpenFlags::EXCL),
    );
    let inode = dentry.inode().ok_or(Errno::ENOENT)?.clone();
    Ok((
        Opened {
            _created_hold: None,
            hold: FileHold::owned(
                VfsPath {
                    mnt: dir.mnt.arc().clone(),
                    dentry,
                },
                inode,
            ),
            created: true,
            found_in: None,
        },
        dinode,
    ))
}

/// Resolves the last component of an open, creating it for `O_CREAT` (Linux:
/// `open_last_lookups()` and `lookup_open()`).
fn open_last<'w>(
    w: &mut Walker<'w>,
    start: Pos<'w>,
    path: &[u8],
    req: OpenReq,
    umask: u32,
) -> Result<Opened> {
    let (mut parent, last) = w.walk_parent(start, path)?;
    if !req.flags.contains(OpenFlags::CREAT) {
        let pos = w.resolve_last(parent, &last, follow_of(req.flags))?;
        return Opened::found(&pos, None);
    }
    // Borrowed from `path` until a symbolic link followed below replaces it with an owned
    // name from its body.
    let mut last: Last<'_> = last;
    loop {
        if last.kind != LastKind::Normal {
            // `.`, `..` or `/`: resolved as usual; `do_open()` then says EEXIST or EISDIR.
            let pos = w.resolve_last(parent, &last, crate::vfs::namei::FollowLast::Yes)?;
            return Opened::found(&pos, None);
        }
        if last.trailing_slash {
            return Err(Errno::EISDIR);
        }
        // Borrowed, not counted: the walk's guard keeps the parent's dentry, and so its inode,
        // until the walk ends (two reference count updates less on the directory every
        // thread creating in it writes).
        let dir = parent.dentry.arc();
        let dinode = dir.inode().ok_or(Errno::ENOENT)?;
        let _lock = dinode.lock.write();
        // A missing name is not cached as a negative dentry: the create caches the new one.
        let found = lookup_locked_for_create(dir, &last.name)?.filter(|c| c.inode().is_some());
        match found {
            None => {
                // Linux computes the creation error (EROFS, EACCES) before it knows whether the
                // name exists, and reports it only for a missing name.
                if parent.mnt.is_rdonly() {
                    return Err(Errno::EROFS);
                }
                may_create(w.cred, dinode, dir.is_dead())?;
                let mode = (req.mode & S_IALLUGO) | (req.mode & S_IFMT);
                let mode = prepare_mode(w.cred, dinode, mode, umask);
                let name = Name::new(&last.name);
                let inode =
                    dinode
                        .ops()
                        .create(dinode, &name, &new_inode(w.cred, dinode, mode, 0))?;
                notify::create(dinode, &last.name, &inode);
                let held = crate::vfs::inode::InodeHold::inode(&inode);
                let d = dir.d_instantiate_shared(&name, inode.clone());
                return Ok(Opened {
                    _created_hold: Some(held),
                    hold: FileHold::owned(
                        VfsPath {
                            mnt: parent.mnt.arc().clone(),
                            dentry: d,
                        },
                        inode,
                    ),
                    created: true,
                    found_in: None,
                });
            }
            Some(child) => {
                let found_in = DirAttrs {
                    mode: dinode.mode(),
                    uid: dinode.uid(),
                };
                drop(_lock);
                // The dentry found under the lock, not a second lookup: the name may be
                // unlinked or replaced by now, and open(O_CREAT) never says ENOENT for a name
                // it found (Linux: `open_last_lookups()` steps into the dentry
                // `lookup_open()` returned). Stepping in crosses mounts, so RESOLVE_NO_XDEV's
                // EXDEV comes before O_EXCL's EEXIST (`do_open()`), and what is found is what
                // is mounted there.
                let pos = w.step_into_found(&parent, child.clone())?;
                if req.flags.contains(OpenFlags::EXCL) {
                    return Err(Errno::EEXIST);
                }
                let is_link = pos
                    .dentry
                    .inode()
                    .is_some_and(|i| i.file_type() == FileType::Symlink);
                if !is_link || req.flags.contains(OpenFlags::NOFOLLOW) {
                    return Opened::found(&pos, Some(found_in));
                }
                // O_CREAT through a symlink: create (or open) its target.
                let body = w.read_link_body(&pos)?;
                let start = w.link_start(parent, &body)?;
                let (p, l) = w.walk_parent(start, &body)?;
                parent = p;
                last = l.into_owned();
            }
        }
    }
}

/// The checks and actions after the name is resolved (Linux: `do_open()`, `may_open()`,
/// `vfs_open()`, `handle_truncate()`). `kept_dir`: an `O_TMPFILE` file's directory, which the
/// file keeps, even removed, from its open on (its open event's too) to its release
/// ([`FileDescription::keep_dir`]); the file, not its inode, keeps it, so a name `linkat`
/// gives the inode later, opened by other files, does not (Linux: the unnamed dentry).
fn finish_open(
    cred: &crate::vfs::Cred,
    opened: Opened,
    req: OpenReq,
    cred_id: u64,
    kept_dir: Option<&Arc<Inode>>,
) -> Result<Arc<FileDescription>> {
    let Opened {
        hold,
        created,
        found_in,
        _created_hold,
    } = opened;
    let path = hold.path();
    let inode = hold.inode();
    let ft = inode.file_type();
    if req.flags.contains(OpenFlags::PATH) {
        if req.flags.contains(OpenFlags::DIRECTORY) && ft != FileType::Directory {
            return Err(Errno::ENOTDIR);
        }
        let ops = inode.ops().open_path(inode);
        return FileDescription::new_held(hold, req.file_flags, ops, cred_id);
    }
    if req.flags.contains(OpenFlags::CREAT) {
        if req.flags.contains(OpenFlags::EXCL) && !created {
            return Err(Errno::EEXIST);
        }
        if ft == FileType::Directory {
            return Err(Errno::EISDIR);
        }
        if let Some(dir) = found_in {
            may_create_in_sticky(cred, dir, inode)?;
        }
    }
    // `O_TMPFILE` carries the `O_DIRECTORY` bit; it named the directory, not the new file.
    if req.flags.contains(OpenFlags::DIRECTORY) && ft != FileType::Directory && !created {
        return Err(Errno::ENOTDIR);
    }
    let mut truncate = req.flags.contains(OpenFlags::TRUNC) && !created;
    // Truncating a regular file takes write access to the mount before any permission
    // check, so a read-only mount says EROFS even to a caller who may not write the file
    // (Linux: `do_open()`'s `mnt_want_write()` before `may_open()`).
    if truncate && ft == FileType::Regular && path.mnt.is_rdonly() {
        return Err(Errno::EROFS);
    }
    if !created {
        match ft {
            FileType::Symlink => return Err(Errno::ELOOP),
            FileType::Directory => {
                if req.acc.contains(Access::WRITE) {
                    return Err(Errno::EISDIR);
                }
            }
            FileType::CharDevice | FileType::BlockDevice => {
                if path.mnt.flags().contains(MntFlags::NODEV) {
                    return Err(Errno::EACCES);
                }
                truncate = false;
            }
            FileType::Fifo | FileType::Socket | FileType::Anon => truncate = false,
            FileType::Regular => {}
        }
        inode_permission(cred, inode, req.acc)?;
        if req.flags.contains(OpenFlags::NOATIME) && !owner_or_capable(cred, inode) {
            return Err(Errno::EPERM);
        }
    }
    // Write access to the mount goes with `FMODE_WRITE` (`do_dentry_open()`), which
    // `O_ACCMODE` (3) does not give, although it asks for write permission above.
    let writes = matches!(
        req.flags.access(),
        AccessMode::WriteOnly | AccessMode::ReadWrite
    ) && !matches!(
        ft,
        FileType::Fifo | FileType::Socket | FileType::CharDevice | FileType::BlockDevice
    );
    if (writes || truncate) && path.mnt.is_rdonly() {
        return Err(Errno::EROFS);
    }
    if ft == FileType::Socket {
        return Err(Errno::ENXIO);
    }
    // Every filesystem's FIFOs open through pipefs (Linux: `init_special_inode()` gives them
    // `pipefifo_fops`); the wait for the other side comes after the walk, which must not
    // block ([`Task::open_description`]). `O_DIRECT` is refused below, after the open, as
    // Linux's `do_dentry_open()` does.
    let ops = if ft == FileType::Fifo {
        crate::fs::pipefs::fifo_prepare(inode, req.file_flags)?
    } else {
        inode.ops().open(inode, req.file_flags)?
    };
    let mut file = FileDescription::new_held(hold, req.file_flags, ops, cred_id)?;
    if let Some(dir) = kept_dir {
        file.keep_dir(dir);
    }
    let inode = file.inode();
    // Only files that can do direct I/O open with `O_DIRECT`: on tmpfs, regular files
    // (Linux: `do_dentry_open()`, `FMODE_CAN_ODIRECT`, checked after the file's open). The
    // file is released as it drops, giving back what its open took (an inode hold).
    if req.flags.contains(OpenFlags::DIRECT)
        && (!matches!(ft, FileType::Regular | FileType::Fifo) || !file.ops().can_odirect())
    {
        return Err(Errno::EINVAL);
    }
    // A FIFO's open finishes after its rendezvous ([`Task::open_description`]); the truncate
    // comes after the open (Linux: `handle_truncate()` after `vfs_open()`).
    if ft != FileType::Fifo {
        file.open_done();
    }
    if truncate && ft == FileType::Regular {
        let _g = inode.lock.write();
        let mut attr = open_truncate_attr();
        super::attr::kill_privs_on_truncate(cred, inode, &mut attr);
        inode.ops().setattr(inode, &attr)?;
        notify::change(&file.path().dentry, inode, &attr);
    }
    Ok(file)
}

/// What `O_TRUNC` changes (Linux: `do_truncate()`'s `ATTR_SIZE | ATTR_MTIME | ATTR_CTIME`).
fn open_truncate_attr() -> SetAttr {
    SetAttr {
        size: Some(0),
        mtime: Some(TimeSet::Now),
        ctime: true,
        ..SetAttr::default()
    }
}
