//! `mount` and `umount2`. Linux: fs/namespace.c (`path_mount()`, `do_new_mount()`,
//! `do_loopback()`, `do_remount()`, `do_reconfigure_mnt()`, `do_move_mount_old()`,
//! `do_umount()`).

use std::sync::Arc;

use super::{EmptyPath, Vfs};
use crate::abi::{Errno, MountFlags, ResolveFlags, Result, UmountFlags};
use crate::fs::tmpfs::{Tmpfs, TmpfsOptions};
use crate::vfs::cred::Capabilities;
use crate::vfs::mount::{Detach, MntFlags, Mount, MountRef};
use crate::vfs::namei::FollowLast;
use crate::vfs::ops::{FileSystemType, FsContext};
use crate::vfs::{Dentry, Task, VfsPath};

/// tmpfs as a [`FileSystemType`] (Linux: `shmem_fs_type`): the type [`Vfs::new`] registers,
/// for a namespace made with [`MountNamespace::new`](crate::vfs::MountNamespace::new) to
/// register too. Options: `size=`, `nr_inodes=`, `mode=`, `uid=`, `gid=`; the root belongs to
/// the mounting task's `fsuid` and `fsgid` unless `uid=`/`gid=` say otherwise.
#[derive(Clone, Copy, Debug, Default)]
pub struct TmpfsType;

impl FileSystemType for TmpfsType {
    fn name(&self) -> &str {
        "tmpfs"
    }

    fn get_tree(&self, fc: &FsContext<'_>) -> Result<Arc<Dentry>> {
        let opts = TmpfsOptions::parse(fc.data)?;
        let (_sb, root) = Tmpfs::new_instance(&opts, fc.cred.fsuid, fc.cred.fsgid)?;
        Ok(root)
    }
}

impl Vfs {
    /// Makes the filesystem type `fs` mountable in this namespace by its name:
    /// [`Task::mount`] with that `fstype` calls [`FileSystemType::get_tree`] and mounts
    /// what it returns, with every check and error of a tmpfs mount (Linux:
    /// `register_filesystem()`). See [`crate::vfs::ops`] for writing one, and
    /// `examples/own_fs.rs`.
    ///
    /// # Errors
    /// `EBUSY` if a type of that name is registered (`"tmpfs"` is); `EINVAL` for an empty
    /// name or one with a `/` or a NUL.
    pub fn register_filesystem(&self, fs: Arc<dyn FileSystemType>) -> Result<()> {
        self.ns.register_filesystem(fs)
    }

    /// Makes the type `name` unmountable again; its mounts stay until unmounted (Linux:
    /// `unregister_filesystem()`).
    ///
    /// # Errors
    /// `EINVAL` if no type of that name is registered.
    pub fn unregister_filesystem(&self, name: &str) -> Result<()> {
        self.ns.unregister_filesystem(name)
    }
}

/// Per-mount flags from `mount(2)` flags (Linux: the `mnt_flags` computation in `path_mount()`).
fn mnt_flags_of(flags: MountFlags) -> MntFlags {
    let mut m = MntFlags::empty();
    if !flags.contains(MountFlags::NOATIME) {
        m |= MntFlags::RELATIME;
    }
    for (f, mf) in [
        (MountFlags::NOSUID, MntFlags::NOSUID),
        (MountFlags::NODEV, MntFlags::NODEV),
        (MountFlags::NOEXEC, MntFlags::NOEXEC),
        (MountFlags::NOATIME, MntFlags::NOATIME),
        (MountFlags::NODIRATIME, MntFlags::NODIRATIME),
        (MountFlags::RDONLY, MntFlags::RDONLY),
        (MountFlags::NOSYMFOLLOW, MntFlags::NOSYMFOLLOW),
    ] {
        if flags.contains(f) {
            m |= mf;
        }
    }
    if flags.contains(MountFlags::STRICTATIME) {
        m -= MntFlags::RELATIME | MntFlags::NOATIME;
    }
    m
}

/// Whether a superblock cannot become read-only now (Linux: `sb_prepare_remount_readonly()`).
fn readonly_busy(sb: &crate::vfs::SuperBlock) -> bool {
    sb.writers() > 0 || sb.ops().has_orphans()
}

const ATIME_FLAGS: MntFlags = MntFlags::RELATIME
    .union(MntFlags::NOATIME)
    .union(MntFlags::NODIRATIME);

/// Whether the root of a mount being bound or moved can become a mountpoint: not a name that
/// was unlinked or removed, `ENOENT` (Linux: `attach_recursive_mnt()` takes a mountpoint on the
/// source's root first, and `get_mountpoint()` refuses an unlinked dentry).
fn source_root_mountable(root: &crate::vfs::Dentry) -> Result<()> {
    if root.is_dead() {
        return Err(Errno::ENOENT);
    }
    Ok(())
}

/// The source of a bind or a move: a missing or empty name is `EINVAL` before any lookup
/// (Linux: `do_loopback()`, `do_move_mount_old()`).
fn source_name(source: Option<&[u8]>) -> Result<&[u8]> {
    source.filter(|s| !s.is_empty()).ok_or(Errno::EINVAL)
}

/// # Mounts
///
/// `mount` (new, bind, move, remount, propagation) and `umount2`.
impl Task {
    fn mount_point(&self, path: &[u8], follow: FollowLast) -> Result<VfsPath> {
        self.with_path(
            crate::abi::AT_FDCWD,
            path,
            EmptyPath::Reject,
            ResolveFlags::empty(),
            |w, s| Ok(w.lookup(s, path, follow)?.to_path()),
        )
    }

    /// `mount(2)`: a new filesystem of a registered type (tmpfs with `size=`, `nr_inodes=`,
    /// `mode=`, `uid=`, `gid=`, or one of [`Vfs::register_filesystem`]), a bind mount
    /// (`MS_BIND`, recursive with `MS_REC`), a remount (`MS_REMOUNT`, of the mount only with
    /// `MS_BIND`), or a move (`MS_MOVE`). Propagation changes are checked as Linux checks them
    /// and have no effect: every mount is private (docs/divergences.md).
    ///
    /// # Errors
    /// `EPERM` without `CAP_SYS_ADMIN`; path errors; `ENOENT` (a target unlinked or in a
    /// detached mount, or a bound or moved source whose root was unlinked); `ENODEV` (unknown
    /// type); then the filesystem type's own errors ([`FileSystemType::get_tree`]); `ENOTDIR`
    /// (a new filesystem over a non-directory); `EINVAL` (no type, bad options, remount, move or
    /// propagation change of a non-mount or of a mount outside the namespace, more than one
    /// propagation type, move between a directory and a non-directory); `ELOOP` (move into
    /// itself).
    pub fn mount(
        &self,
        source: Option<&[u8]>,
        target: impl AsRef<[u8]>,
        fstype: Option<&str>,
        flags: MountFlags,
        data: Option<&str>,
    ) -> Result<()> {
        // Linux: the target path first (`do_mount()`), then `may_mount()`.
        let target = self.mount_point(target.as_ref(), FollowLast::Yes)?;
        if !self.cred.borrow().capable(Capabilities::SYS_ADMIN) {
            return Err(Errno::EPERM);
        }
        let prop = MountFlags::SHARED
            | MountFlags::PRIVATE
            | MountFlags::SLAVE
            | MountFlags::from_bits_retain(1 << 17);
        if flags.contains(MountFlags::REMOUNT) {
            // Linux (`do_reconfigure_mnt()`, `do_remount()`): a mount outside the namespace
            // (`check_mnt()`), then a target that is not a mount's root, are EINVAL.
            if !self.in_namespace(&target.mnt) || !Arc::ptr_eq(&target.dentry, target.mnt.root()) {
                return Err(Errno::EINVAL);
            }
            let mut mf = mnt_flags_of(flags);
            if !flags.intersects(
                MountFlags::NOATIME
                    | MountFlags::NODIRATIME
                    | MountFlags::RELATIME
                    | MountFlags::STRICTATIME,
            ) {
                mf = (mf - ATIME_FLAGS) | (target.mnt.flags() & ATIME_FLAGS);
            }
            let sb = target.mnt.sb();
            if flags.contains(MountFlags::BIND) {
                // Linux: `mnt_make_readonly()` refuses while files write through the mount,
                // holding new writers off while it decides.
                if mf.contains(MntFlags::RDONLY) && !target.mnt.flags().contains(MntFlags::RDONLY) {
                    return if target.mnt.make_readonly(mf) {
                        Ok(())
                    } else {
                        Err(Errno::EBUSY)
                    };
                }
            } else {
                // Linux: `sb_prepare_remount_readonly()` refuses while files are open for
                // writing or unlinked files are still open, holding new writers off.
                let to_rdonly = flags.contains(MountFlags::RDONLY) && !sb.is_rdonly();
                sb.with_writes_held(|| {
                    if to_rdonly && readonly_busy(sb) {
                        return Err(Errno::EBUSY);
                    }
                    sb.ops().remount(sb, data)?;
                    sb.set_rdonly(flags.contains(MountFlags::RDONLY) || sb.ops().always_rdonly());
                    // Linux: `do_remount()` reconfigures with `MS_RMT_MASK`, so a remount
                    // without `MS_SYNCHRONOUS` or `MS_LAZYTIME` clears it; a bind remount
                    // (`do_reconfigure_mnt()`) changes the mount's flags only.
                    sb.set_synchronous(flags.contains(MountFlags::SYNCHRONOUS));
                    sb.set_lazytime(flags.contains(MountFlags::LAZYTIME));
                    Ok(())
                })?;
            }
            target.mnt.set_flags(mf);
            return Ok(());
        }
        if flags.contains(MountFlags::BIND) {
            let src = source_name(source)?;
            let src = self.mount_point(src, FollowLast::Yes)?;
            return self.with_mountpoint(target, |target| {
                // Linux: `__do_loopback()` refuses a source outside the namespace
                // (`check_mnt()`).
                if !self.in_namespace(&src.mnt) {
                    return Err(Errno::EINVAL);
                }
                if src.dentry.inode().is_some_and(|i| i.is_dir())
                    != target.dentry.inode().is_some_and(|i| i.is_dir())
                {
                    // Linux: `graft_tree()` says ENOTDIR for either mismatch.
                    return Err(Errno::ENOTDIR);
                }
                source_root_mountable(&src.dentry)?;
                let m = Mount::new(src.mnt.sb().clone(), src.dentry.clone(), src.mnt.flags());
                // Copy the tree before grafting it (Linux: `copy_tree()` then `graft_tree()`):
                // a target inside the source would otherwise see its own copy among the
                // source's submounts and copy it again, without end.
                if flags.contains(MountFlags::REC) {
                    self.copy_submounts(&src.mnt, &src.dentry, &m);
                }
                // The source may have left the tree since the check above.
                self.ns.graft(&m, &target, false, || {
                    if self.in_namespace(&src.mnt) {
                        Ok(())
                    } else {
                        Err(Errno::EINVAL)
                    }
                })
            });
        }
        // A propagation change comes before a move (Linux: `path_mount()`); its target must be
        // a mount's root and it takes one propagation type, with only `MS_REC`/`MS_SILENT`
        // beside it (Linux: `do_change_type()`, `flags_to_propagation_type()`).
        if flags.intersects(prop) {
            // A mount outside the namespace is refused too (`check_mnt()`); every refusal here
            // is EINVAL, so their order does not show.
            if !Arc::ptr_eq(&target.dentry, target.mnt.root()) || !self.in_namespace(&target.mnt) {
                return Err(Errno::EINVAL);
            }
            let kind = flags - MountFlags::REC - MountFlags::SILENT;
            if !kind.bits().is_power_of_two() {
                return Err(Errno::EINVAL);
            }
            return Ok(());
        }
        if flags.contains(MountFlags::MOVE) {
            let src = self.mount_point(source_name(source)?, FollowLast::Yes)?;
            // Linux (`do_move_mount()`): the source must be a mount's root and of the target's
            // kind, directory or not (EINVAL), before the target must take a mount
            // (`lock_mount()`, ENOENT); then the source must be in the namespace (EINVAL),
            // the target not below it (ELOOP), and last the source's root still linked
            // (`attach_recursive_mnt()`, ENOENT).
            if !Arc::ptr_eq(&src.dentry, src.mnt.root())
                || src.dentry.inode().is_some_and(|i| i.is_dir())
                    != target.dentry.inode().is_some_and(|i| i.is_dir())
            {
                return Err(Errno::EINVAL);
            }
            return self.with_mountpoint(target, |target| {
                // Checked under the namespace's lock (`graft`), so that two moves cannot
                // cross into a cycle (Linux: `do_move_mount()` under `namespace_sem`).
                self.ns.graft(&src.mnt, &target, true, || {
                    // The namespace's root mount counts as attached (on Linux it sits on the
                    // hidden rootfs), so moving it fails below with ELOOP.
                    let attached =
                        src.mnt.parent().is_some() || MountRef::ptr_eq(&src.mnt, self.ns.root());
                    if !attached || !self.in_namespace(&src.mnt) {
                        return Err(Errno::EINVAL);
                    }
                    if self.is_under(&target, &src.mnt) {
                        return Err(Errno::ELOOP);
                    }
                    source_root_mountable(&src.dentry)
                })
            });
        }
        // Linux (`do_new_mount()`): the type, the options and the new superblock, then the
        // mountpoint (`lock_mount()`), then `graft_tree()`'s ENOTDIR.
        let fs = self
            .ns
            .filesystem(fstype.ok_or(Errno::EINVAL)?)
            .ok_or(Errno::ENODEV)?;
        let root = {
            let cred = self.cred.borrow();
            fs.get_tree(&FsContext {
                source,
                data,
                flags,
                cred: &cred,
            })?
        };
        let sb = root.inode().ok_or(Errno::EINVAL)?.sb().clone();
        // An instance mounted before (a `get_tree` that returned an existing root: kernfs's
        // trees) keeps its superblock's flags: `MS_RDONLY` makes only the new mount read-only
        // (Linux: `kernfs_get_tree()` reuses the superblock as it is; `path_mount()` turns
        // `MS_RDONLY` into the mount's `MNT_READONLY`).
        let existing = sb.mount_count() > 0;
        // The mount exists from here on, so that a failure below frees the new superblock
        // with it: a superblock is counted spread until its last mount ends.
        let m = Mount::new(sb, root, mnt_flags_of(flags));
        let grafted = self.with_mountpoint(target, |target| {
            if !target.dentry.inode().is_some_and(|i| i.is_dir())
                || !m.root().inode().is_some_and(|i| i.is_dir())
            {
                return Err(Errno::ENOTDIR);
            }
            let sb = m.sb();
            if (flags.contains(MountFlags::RDONLY) && !existing) || sb.ops().always_rdonly() {
                sb.set_rdonly(true);
            }
            if !existing {
                sb.set_synchronous(flags.contains(MountFlags::SYNCHRONOUS));
                sb.set_lazytime(flags.contains(MountFlags::LAZYTIME));
            }
            self.ns.graft(&m, &target, false, || Ok(()))
        });
        if grafted.is_err() {
            // Never attached: nothing else lets it go (`graft` already did if it refused).
            m.kill();
        }
        grafted
    }

    /// Runs `graft` (which attaches a mount at the path it is given) with the mountpoint found
    /// by [`Task::lock_mount`] locked: its inode lock exclusive, taken and then checked again
    /// ([`Task::still_mountable`]), and held until `graft` returns. If another mount landed
    /// there before the lock was taken, it starts again from that mount's root, so two mounts
    /// on one name at once stack, the later on top (Linux: `do_lock_mount()` looks again with
    /// `lookup_mnt()` under the locks and goes up).
    fn with_mountpoint<R>(
        &self,
        mut target: VfsPath,
        graft: impl FnOnce(VfsPath) -> Result<R>,
    ) -> Result<R> {
        loop {
            let (point, inode) = self.lock_mount(target)?;
            let _lock = inode.lock.write();
            self.still_mountable(&point)?;
            if self.mounted_on(&point).is_some() {
                target = point;
                continue;
            }
            return graft(point);
        }
    }

    /// Where something mounted at `target` goes (Linux: `do_lock_mount()`): on top of every
    /// mount already stacked there (a target reached through `.` or a cwd can be covered),
    /// and never on a name that was unlinked or removed (`cant_mount()`) or in a mount taken
    /// out of the tree (`is_mounted()`, false for every mount of a tree `umount2(MNT_DETACH)`
    /// took out), both ENOENT, checked at each level.
    ///
    /// Returns the mountpoint and its inode, whose lock [`Task::with_mountpoint`] takes
    /// (exclusive) and then checks [`Task::still_mountable`] under it, holding it until the
    /// mount is attached: an
    /// unlink or rmdir of the name checks for a mountpoint under the same lock, so a mount
    /// never lands on a name being removed (Linux: `do_lock_mount()` takes the mountpoint's
    /// `inode_lock()` and checks `cant_mount()` under it).
    fn lock_mount(&self, mut target: VfsPath) -> Result<(VfsPath, Arc<crate::vfs::Inode>)> {
        loop {
            if target.dentry.is_dead() || !self.in_namespace(&target.mnt) {
                return Err(Errno::ENOENT);
            }
            match self.mounted_on(&target) {
                Some(top) => target = top,
                None => {
                    let inode = target.dentry.inode().ok_or(Errno::ENOENT)?.clone();
                    return Ok((target, inode));
                }
            }
        }
    }

    /// [`Task::lock_mount`]'s check again, under the mountpoint's inode lock: the name was
    /// not removed meanwhile (ENOENT).
    fn still_mountable(&self, target: &VfsPath) -> Result<()> {
        if target.dentry.is_dead() {
            return Err(Errno::ENOENT);
        }
        Ok(())
    }

    /// The root of the mount stacked directly on `p`, if any (Linux: `lookup_mnt()`).
    fn mounted_on(&self, p: &VfsPath) -> Option<VfsPath> {
        if !p.dentry.is_mountpoint() {
            return None;
        }
        let m = self.ns.lookup_mount(&p.mnt, &p.dentry)?;
        Some(VfsPath {
            dentry: m.root().clone(),
            mnt: m,
        })
    }

    /// The mount `umount2` names: the walk's end, then down through every mount stacked
    /// there, so that `umount2(".")` in a covered cwd unmounts the covering mount (Linux:
    /// `LOOKUP_MOUNTPOINT`, which `path_lookupat()` ends with `handle_lookup_down()`).
    fn umount_point(&self, path: &[u8], follow: FollowLast) -> Result<VfsPath> {
        let mut p = self.with_path(
            crate::abi::AT_FDCWD,
            path,
            EmptyPath::Reject,
            ResolveFlags::empty(),
            |w, s| {
                w.touch_mounts = false;
                Ok(w.lookup(s, path, follow)?.to_path())
            },
        )?;
        while let Some(top) = self.mounted_on(&p) {
            p = top;
        }
        Ok(p)
    }

    /// Whether `m` and every mount above it are in the namespace's tree (Linux: a mount's
    /// `mnt_ns`, which a lazy unmount clears for the whole tree it takes out).
    fn in_namespace(&self, m: &MountRef) -> bool {
        self.ns.in_tree(m)
    }

    fn copy_submounts(
        &self,
        src_mnt: &MountRef,
        src_root: &Arc<crate::vfs::Dentry>,
        dst: &MountRef,
    ) {
        for child in self.ns.children(src_mnt) {
            let Some((_, point)) = child.parent() else {
                continue;
            };
            if !src_root.is_ancestor_of(&point) {
                continue;
            }
            let copy = Mount::new(child.sb().clone(), child.root().clone(), child.flags());
            self.ns.attach(
                &copy,
                &VfsPath {
                    mnt: dst.clone(),
                    dentry: point,
                },
            );
            self.copy_submounts(&child, child.root(), &copy);
        }
    }

    fn is_under(&self, p: &VfsPath, m: &MountRef) -> bool {
        let mut cur = Some(p.mnt.clone());
        while let Some(c) = cur {
            if MountRef::ptr_eq(&c, m) {
                return true;
            }
            cur = c.parent().map(|(pm, _)| pm);
        }
        false
    }

    /// `umount2(2)`: of the topmost mount at the path, even where the walk ends on a covered
    /// directory (a cwd or `.`).
    ///
    /// # Errors
    /// `EINVAL` (flags; `MNT_EXPIRE` with `FORCE`/`DETACH`; not a mount root); `EPERM` without
    /// `CAP_SYS_ADMIN`; path errors; `EBUSY` (open files, cwd or root inside, or mounts below;
    /// not with `MNT_DETACH`). Unmounting the task's root mount remounts it read-only
    /// (`EBUSY` while files are open for writing), as Linux does.
    pub fn umount2(&self, target: impl AsRef<[u8]>, flags: UmountFlags) -> Result<()> {
        if !UmountFlags::all().contains(flags) {
            return Err(Errno::EINVAL);
        }
        let follow = if flags.contains(UmountFlags::NOFOLLOW) {
            FollowLast::No
        } else {
            FollowLast::Yes
        };
        // Linux: the path first (`ksys_umount()`), then `can_umount()`, then `do_umount()`.
        let p = self.umount_point(target.as_ref(), follow)?;
        if !self.cred.borrow().capable(Capabilities::SYS_ADMIN) {
            return Err(Errno::EPERM);
        }
        if !Arc::ptr_eq(&p.dentry, p.mnt.root()) || !p.mnt.is_attached() {
            return Err(Errno::EINVAL);
        }
        let is_task_root = MountRef::ptr_eq(&p.mnt, &self.fs.borrow().root.mnt);
        if flags.contains(UmountFlags::EXPIRE) {
            // Marks the mount on the first call (EAGAIN), unmounts on the next if still unused.
            if is_task_root || flags.intersects(UmountFlags::FORCE | UmountFlags::DETACH) {
                return Err(Errno::EINVAL);
            }
            if !self.ns.children(&p.mnt).is_empty() || p.mnt.count() > 3 {
                return Err(Errno::EBUSY);
            }
            if !p.mnt.set_expiry_mark() {
                return Err(Errno::EAGAIN);
            }
        }
        if is_task_root && !flags.contains(UmountFlags::DETACH) {
            // Linux: `do_umount_root()` — "unmounting" the root remounts it read-only.
            let sb = p.mnt.sb();
            if !sb.is_rdonly() {
                if readonly_busy(sb) {
                    return Err(Errno::EBUSY);
                }
                sb.set_rdonly(true);
            }
            return Ok(());
        }
        if p.mnt.parent().is_none() {
            // The namespace root: a lazy detach takes it out of the tree and disconnects its
            // mounts (the tasks rooted in it keep using it); a plain umount finds it busy.
            if flags.contains(UmountFlags::DETACH) {
                let m = p.mnt.clone();
                drop(p);
                return self.ns.detach(&m, Detach::Lazy, 1);
            }
            return Err(Errno::EBUSY);
        }
        let m = p.mnt.clone();
        drop(p);
        let busy = if flags.contains(UmountFlags::DETACH) {
            Detach::Lazy
        } else {
            Detach::Busy
        };
        self.ns.detach(&m, busy, 1)
    }
}
