//! Namespace changes: `mkdirat`, `mknodat`, `unlinkat`, `renameat2`, `linkat`, `symlinkat`,
//! `readlinkat`. Linux: fs/namei.c (`filename_create()`, `do_mkdirat()`, `do_mknodat()`,
//! `do_unlinkat()`, `do_rmdir()`, `do_renameat2()`, `do_linkat()`, `do_symlinkat()`,
//! `vfs_rename()`, `lock_rename()`), fs/stat.c (`do_readlinkat()`).

use std::borrow::Cow;
use std::sync::Arc;

use super::{
    check_path, lookup_locked, lookup_locked_for_create, new_inode, prepare_mode, EmptyPath,
};
use crate::abi::{
    Access, AtFlags, Errno, FileType, RenameFlags, ResolveFlags, Result, AT_FDCWD, S_IALLUGO,
    S_IFMT, S_ISGID, S_ISUID, S_ISVTX, S_IXGRP,
};
use crate::vfs::atime::touch_atime_at;
use crate::vfs::cred::{Capabilities, Cred};
use crate::vfs::inode::Inode;
use crate::vfs::mount::MountRef;
use crate::vfs::namei::{FollowLast, Last, LastKind, Pos};
use crate::vfs::notify;
use crate::vfs::permission::{
    inode_permission, may_create, may_delete, owner_or_capable, VictimKind,
};
use crate::vfs::{Dentry, Name, Task, VfsPath};

/// Whether the new name of a create may end in `/`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum WantDir {
    Yes,
    No,
}

/// The parent and last name of a path, resolved and owned.
struct Parent<'p> {
    path: VfsPath,
    /// The last component, borrowed from the caller's path (no copy per call).
    name: Cow<'p, [u8]>,
    kind: LastKind,
    trailing_slash: bool,
}

/// # Names: directories and links
///
/// `mkdirat`, `mknodat`, `symlinkat`, `linkat`, `unlinkat`, `renameat2`, `readlinkat`.
impl Task {
    /// Walks to the parent of `path`'s last component and runs `f` on it inside the walk,
    /// where the parent is borrowed (no count of it written).
    fn with_parent<'p, R>(
        &self,
        dirfd: i32,
        path: &'p [u8],
        f: impl for<'w> FnOnce(&Pos<'w>, Last<'p>) -> Result<R>,
    ) -> Result<R> {
        self.with_path(
            dirfd,
            path,
            EmptyPath::Reject,
            ResolveFlags::empty(),
            |w, start| {
                let (p, last) = w.walk_parent(start, path)?;
                // The call holds the parent and puts it at its end (Linux: `path_put()` of
                // `filename_parentat()`'s path): a use of its mount.
                p.mnt.touch();
                f(&p, last)
            },
        )
    }

    /// The parent of `path`'s last component, counted, for calls that keep it past the walk.
    fn parent_of<'p>(&self, dirfd: i32, path: &'p [u8]) -> Result<Parent<'p>> {
        self.with_parent(dirfd, path, |p, last| {
            Ok(Parent {
                path: p.to_path(),
                name: last.name,
                kind: last.kind,
                trailing_slash: last.trailing_slash,
            })
        })
    }

    /// Resolves the parent of a new name, locks it and checks the name is free, then runs `f`
    /// under the lock (Linux: `filename_create()`).
    fn create_at<R>(
        &self,
        dirfd: i32,
        path: &[u8],
        want: WantDir,
        f: impl FnOnce(&Cred, &VfsPath, &Arc<Inode>, &Name) -> Result<R>,
    ) -> Result<R> {
        let p = self.parent_of(dirfd, path)?;
        if p.kind != LastKind::Normal {
            return Err(Errno::EEXIST);
        }
        let rofs = p.path.mnt.is_rdonly();
        let dir = p.path.dentry.inode().ok_or(Errno::ENOENT)?;
        let _lock = dir.lock.write();
        // A missing name is not cached as a negative dentry: the create caches the new one.
        let child = lookup_locked_for_create(&p.path.dentry, &p.name)?;
        if child.is_some_and(|c| c.inode().is_some()) {
            return Err(Errno::EEXIST);
        }
        if p.trailing_slash && want == WantDir::No {
            return Err(Errno::ENOENT);
        }
        if rofs {
            return Err(Errno::EROFS);
        }
        let cred = self.cred.borrow();
        f(&cred, &p.path, dir, &Name::from(&*p.name))
    }

    /// `mkdirat(2)`.
    ///
    /// # Errors
    /// Path errors; `EEXIST` (also for `.`, `..`, `/`), `EROFS`, `EACCES`, `EMLINK`, `ENOSPC`.
    pub fn mkdirat(&self, dirfd: i32, path: impl AsRef<[u8]>, mode: u32) -> Result<()> {
        let umask = self.umask.get();
        self.create_at(
            dirfd,
            path.as_ref(),
            WantDir::Yes,
            |cred, parent, dir, name| {
                may_create(cred, dir, parent.dentry.is_dead())?;
                let mode = (mode & (0o777 | S_ISVTX) & !umask) | FileType::Directory.mode_bits();
                let inode = dir.ops().mkdir(dir, name, &new_inode(cred, dir, mode, 0))?;
                notify::create(dir, name, &inode);
                parent.dentry.d_instantiate_shared(name, inode);
                Ok(())
            },
        )
    }

    /// `mknodat(2)`: regular files, FIFOs, sockets and (with `CAP_MKNOD`) device nodes.
    ///
    /// `dev` is read as the system call reads it, as 32 bits (the encoding of
    /// [`dev_make`](crate::abi::dev_make) for majors below 4096 and minors below 2^20): the
    /// high half of the value is ignored (glibc's wrapper refuses such a value with `EINVAL`
    /// before the call).
    ///
    /// # Errors
    /// `EPERM` for `S_IFDIR` or a device without `CAP_MKNOD`; `EINVAL` for an unknown type;
    /// then as [`Task::mkdirat`].
    pub fn mknodat(&self, dirfd: i32, path: impl AsRef<[u8]>, mode: u32, dev: u64) -> Result<()> {
        let ft = match mode & S_IFMT {
            0 => FileType::Regular,
            t => match FileType::from_mode(t) {
                Some(FileType::Directory) => return Err(Errno::EPERM),
                Some(FileType::Symlink) | None => return Err(Errno::EINVAL),
                Some(ft) => ft,
            },
        };
        let umask = self.umask.get();
        self.create_at(
            dirfd,
            path.as_ref(),
            WantDir::No,
            |cred, parent, dir, name| {
                may_create(cred, dir, parent.dentry.is_dead())?;
                let is_dev = matches!(ft, FileType::CharDevice | FileType::BlockDevice);
                // The system call's `dev` is an `unsigned int`: the high half of a 64-bit
                // value never reaches the kernel.
                let dev = dev as u32;
                // A 0:0 character device is a whiteout, which needs no privilege (Linux 5.8+).
                let whiteout = ft == FileType::CharDevice && dev == 0;
                if is_dev && !whiteout && !cred.capable(Capabilities::MKNOD) {
                    return Err(Errno::EPERM);
                }
                let rdev = if is_dev { dev } else { 0 };
                let mode = prepare_mode(cred, dir, (mode & S_IALLUGO) | ft.mode_bits(), umask);
                let new = new_inode(cred, dir, mode, rdev);
                let inode = if ft == FileType::Regular {
                    dir.ops().create(dir, name, &new)?
                } else {
                    dir.ops().mknod(dir, name, &new)?
                };
                notify::create(dir, name, &inode);
                parent.dentry.d_instantiate_shared(name, inode);
                Ok(())
            },
        )
    }

    /// `symlinkat(2)`: a link at `linkpath` holding `target`.
    ///
    /// # Errors
    /// `ENOENT` for an empty target, `ENAMETOOLONG`, then as [`Task::mkdirat`].
    pub fn symlinkat(
        &self,
        target: impl AsRef<[u8]>,
        newdirfd: i32,
        linkpath: impl AsRef<[u8]>,
    ) -> Result<()> {
        let target = target.as_ref();
        check_path(target, EmptyPath::Reject)?;
        self.create_at(
            newdirfd,
            linkpath.as_ref(),
            WantDir::No,
            |cred, parent, dir, name| {
                may_create(cred, dir, parent.dentry.is_dead())?;
                let inode = dir.ops().symlink(
                    dir,
                    name,
                    target,
                    &new_inode(cred, dir, 0o777 | FileType::Symlink.mode_bits(), 0),
                )?;
                notify::create(dir, name, &inode);
                parent.dentry.d_instantiate_shared(name, inode);
                Ok(())
            },
        )
    }

    /// `linkat(2)`: a new name for an existing non-directory.
    ///
    /// # Errors
    /// `EINVAL` for unknown flags; `ENOENT` for `AT_EMPTY_PATH` without
    /// `CAP_DAC_READ_SEARCH`; path errors of both names; `EEXIST`; `EXDEV` across mounts;
    /// `EPERM` for a directory or (protected hard links) a file the caller may not read and
    /// write; `EACCES`; `EMLINK`; `ENOENT` for an unlinked file.
    pub fn linkat(
        &self,
        olddirfd: i32,
        oldpath: impl AsRef<[u8]>,
        newdirfd: i32,
        newpath: impl AsRef<[u8]>,
        flags: AtFlags,
    ) -> Result<()> {
        if !(flags - (AtFlags::SYMLINK_FOLLOW | AtFlags::EMPTY_PATH)).is_empty() {
            return Err(Errno::EINVAL);
        }
        let oldpath = oldpath.as_ref();
        let empty = if flags.contains(AtFlags::EMPTY_PATH) {
            // Linux 6.10+: naming an open file needs `CAP_DAC_READ_SEARCH` or the credentials
            // that opened it (`LOOKUP_LINKAT_EMPTY` in `path_init()`).
            if oldpath.is_empty() && olddirfd != AT_FDCWD {
                let file = self.files.get(olddirfd)?;
                if file.opener_cred() != self.cred_id.get()
                    && !self.cred.borrow().capable(Capabilities::DAC_READ_SEARCH)
                {
                    return Err(Errno::ENOENT);
                }
            }
            EmptyPath::Allow
        } else {
            EmptyPath::Reject
        };
        let follow = if flags.contains(AtFlags::SYMLINK_FOLLOW) {
            FollowLast::Yes
        } else {
            FollowLast::No
        };
        let old = self.with_path(olddirfd, oldpath, empty, ResolveFlags::empty(), |w, s| {
            Ok(w.lookup(s, oldpath, follow)?.to_path())
        })?;
        let inode = old.dentry.inode().ok_or(Errno::ENOENT)?.clone();
        self.create_at(
            newdirfd,
            newpath.as_ref(),
            WantDir::No,
            |cred, parent, dir, name| {
                if !MountRef::ptr_eq(&parent.mnt, &old.mnt) {
                    return Err(Errno::EXDEV);
                }
                may_linkat(cred, &inode)?;
                may_create(cred, dir, parent.dentry.is_dead())?;
                if !crate::vfs::super_block::SbRef::ptr_eq(dir.sb(), inode.sb()) {
                    return Err(Errno::EXDEV);
                }
                if inode.is_dir() {
                    return Err(Errno::EPERM);
                }
                // The source's inode lock, which an unlink holds while it drops a link: the
                // count checked here cannot reach 0 before the new link is made, so a link
                // never revives an inode its last unlink released (Linux: `vfs_link()` takes
                // `inode_lock()` of the source, `vfs_unlink()` of the victim).
                let _src = inode.lock.write();
                if inode.nlink() == 0 && !inode.is_linkable() {
                    return Err(Errno::ENOENT);
                }
                dir.ops().link(dir, name, &inode)?;
                inode.set_linkable(false);
                notify::link(dir, name, &inode);
                parent.dentry.d_instantiate_shared(name, inode.clone());
                Ok(())
            },
        )
    }

    /// `unlinkat(2)`: removes a name; with `AT_REMOVEDIR`, an empty directory.
    ///
    /// # Errors
    /// `EINVAL` for unknown flags. unlink: `EISDIR` for `.`/`..`/`/` or a directory, `EROFS`,
    /// `ENOENT`, `ENOTDIR` for a trailing slash on a non-directory, `EACCES`, `EPERM`
    /// (sticky), `EBUSY` (mountpoint). rmdir: `ENOTEMPTY` for `..`, `EINVAL` for `.`, `EBUSY`
    /// for `/` or a mountpoint, `ENOTDIR`, `ENOTEMPTY`.
    pub fn unlinkat(&self, dirfd: i32, path: impl AsRef<[u8]>, flags: AtFlags) -> Result<()> {
        if !(flags - AtFlags::REMOVEDIR).is_empty() {
            return Err(Errno::EINVAL);
        }
        let path = path.as_ref();
        let rmdir = flags.contains(AtFlags::REMOVEDIR);
        // The removal runs inside the walk, on the parent as the walk holds it: borrowed, so
        // no count of the directory's dentry is written (Linux's `filename_parentat()` takes
        // one and `path_put()` drops it), a line every thread removing names in that
        // directory would write.
        self.with_parent(dirfd, path, |p, last| {
            self.unlink_in(p.mnt.arc(), p.dentry.arc(), &last, rmdir)
        })
    }

    /// [`Task::unlinkat`] of `last` in the directory `parent` (a dentry of `mnt`).
    fn unlink_in(
        &self,
        mnt: &MountRef,
        parent: &Arc<Dentry>,
        last: &Last<'_>,
        rmdir: bool,
    ) -> Result<()> {
        if rmdir {
            match last.kind {
                LastKind::DotDot => return Err(Errno::ENOTEMPTY),
                LastKind::Dot => return Err(Errno::EINVAL),
                LastKind::Root => return Err(Errno::EBUSY),
                LastKind::Normal => {}
            }
        } else if last.kind != LastKind::Normal {
            return Err(Errno::EISDIR);
        }
        if mnt.is_rdonly() {
            return Err(Errno::EROFS);
        }
        let name = &last.name;
        let dir = parent.inode().ok_or(Errno::ENOENT)?;
        let _lock = dir.lock.write();
        let child = lookup_locked(parent, name)?;
        let victim = child.inode().ok_or(Errno::ENOENT)?.clone();
        if !rmdir && last.trailing_slash {
            return Err(if victim.is_dir() {
                Errno::EISDIR
            } else {
                Errno::ENOTDIR
            });
        }
        let cred = self.cred.borrow();
        let kind = if rmdir {
            VictimKind::Directory
        } else {
            VictimKind::NonDirectory
        };
        may_delete(&cred, dir, &victim, kind, parent.is_dead())?;
        if !rmdir && !dir.ops().has_unlink() {
            return Err(Errno::EPERM);
        }
        // The victim's inode lock excludes a link of it (see `linkat`) and a mount on it (see
        // `Task::mount`), so that nothing is mounted between this check and the removal
        // (Linux: `vfs_unlink()` and `vfs_rmdir()` test `is_local_mountpoint()` under it).
        let _vlock = victim.lock.write();
        if child.is_mountpoint() {
            return Err(Errno::EBUSY);
        }
        if rmdir {
            child.prune_negatives();
            dir.ops().rmdir(dir, name, &victim)?;
        } else {
            dir.ops().unlink(dir, name, &victim)?;
        }
        parent.d_delete(name, &child);
        victim.ops().keep_parent(&victim, dir);
        notify::delete(dir, name, &victim);
        Ok(())
    }

    /// `renameat2(2)` with `RENAME_NOREPLACE`, `RENAME_EXCHANGE` and `RENAME_WHITEOUT`.
    ///
    /// # Errors
    /// In Linux's order: `EINVAL` (flags), path errors
    /// of both names, `EXDEV` (different mounts), `EBUSY` (`.`/`..`/`/` as source), `EEXIST`
    /// or `EBUSY` (as target), `EROFS`, `ENOENT` (source; target with `EXCHANGE`), `EEXIST`
    /// (`NOREPLACE`), `ENOTDIR` (trailing slashes), `EINVAL` (into itself), `ENOTEMPTY` (over an
    /// ancestor or a non-empty directory), `EACCES`/`EPERM` (`may_delete`), `EISDIR`/`ENOTDIR`
    /// (type mismatch), `EBUSY` (mountpoints).
    pub fn renameat2(
        &self,
        olddirfd: i32,
        oldpath: impl AsRef<[u8]>,
        newdirfd: i32,
        newpath: impl AsRef<[u8]>,
        flags: RenameFlags,
    ) -> Result<()> {
        if !RenameFlags::all().contains(flags) {
            return Err(Errno::EINVAL);
        }
        if flags.intersects(RenameFlags::NOREPLACE | RenameFlags::WHITEOUT)
            && flags.contains(RenameFlags::EXCHANGE)
        {
            return Err(Errno::EINVAL);
        }
        let op = self.parent_of(olddirfd, oldpath.as_ref())?;
        let np = self.parent_of(newdirfd, newpath.as_ref())?;
        if !MountRef::ptr_eq(&op.path.mnt, &np.path.mnt) {
            return Err(Errno::EXDEV);
        }
        if op.kind != LastKind::Normal {
            return Err(Errno::EBUSY);
        }
        if np.kind != LastKind::Normal {
            return Err(if flags.contains(RenameFlags::NOREPLACE) {
                Errno::EEXIST
            } else {
                Errno::EBUSY
            });
        }
        if op.path.mnt.is_rdonly() {
            return Err(Errno::EROFS);
        }
        let od = op.path.dentry.clone();
        let nd = np.path.dentry.clone();
        let odir = od.inode().ok_or(Errno::ENOENT)?.clone();
        let ndir = nd.inode().ok_or(Errno::ENOENT)?.clone();
        let same_dir = Arc::ptr_eq(&od, &nd);
        // lock_rename(): the superblock's rename lock for two directories, then ancestor first
        // (or by address when unrelated).
        let _sb_lock = if same_dir {
            None
        } else {
            Some(odir.sb().rename_lock.lock())
        };
        let (_l1, _l2) = if same_dir {
            (odir.lock.write(), None)
        } else {
            let old_first = if od.is_ancestor_of(&nd) {
                true
            } else if nd.is_ancestor_of(&od) {
                false
            } else {
                Arc::as_ptr(&odir) < Arc::as_ptr(&ndir)
            };
            if old_first {
                let a = odir.lock.write();
                (a, Some(ndir.lock.write()))
            } else {
                let b = ndir.lock.write();
                (odir.lock.write(), Some(b))
            }
        };
        let old_child = lookup_locked(&od, &op.name)?;
        let src = old_child.inode().ok_or(Errno::ENOENT)?.clone();
        let new_child = lookup_locked(&nd, &np.name)?;
        let tgt = new_child.inode().cloned();
        let exchange = flags.contains(RenameFlags::EXCHANGE);
        if flags.contains(RenameFlags::NOREPLACE) && tgt.is_some() {
            return Err(Errno::EEXIST);
        }
        if exchange {
            let t = tgt.as_ref().ok_or(Errno::ENOENT)?;
            if !t.is_dir() && np.trailing_slash {
                return Err(Errno::ENOTDIR);
            }
        }
        if !src.is_dir() && (op.trailing_slash || (!exchange && np.trailing_slash)) {
            return Err(Errno::ENOTDIR);
        }
        if !same_dir {
            if old_child.is_ancestor_of(&nd) {
                return Err(Errno::EINVAL);
            }
            if new_child.inode().is_some() && new_child.is_ancestor_of(&od) {
                return Err(if exchange {
                    Errno::EINVAL
                } else {
                    Errno::ENOTEMPTY
                });
            }
        }
        if tgt.as_ref().is_some_and(|t| Arc::ptr_eq(t, &src)) {
            return Ok(());
        }
        let cred = self.cred.borrow();
        let is_dir = src.is_dir();
        let kind_of = |d: bool| {
            if d {
                VictimKind::Directory
            } else {
                VictimKind::NonDirectory
            }
        };
        may_delete(&cred, &odir, &src, kind_of(is_dir), od.is_dead())?;
        match &tgt {
            None => may_create(&cred, &ndir, nd.is_dead())?,
            Some(t) if !exchange => may_delete(&cred, &ndir, t, kind_of(is_dir), nd.is_dead())?,
            Some(t) => may_delete(&cred, &ndir, t, kind_of(t.is_dir()), nd.is_dead())?,
        }
        if !same_dir {
            if is_dir {
                inode_permission(&cred, &src, Access::WRITE)?;
            }
            if let Some(t) = &tgt {
                if exchange && t.is_dir() {
                    inode_permission(&cred, t, Access::WRITE)?;
                }
            }
        }
        // The inode locks of the two ends (Linux: `vfs_rename()` locks the source and the
        // target when they are non-directories, by address, `lock_two_nondirectories()`, and
        // a replaced directory target alone): a replaced directory's, so that nothing is
        // created in it; a replaced non-directory's, so that a link of it cannot revive it
        // once its last name is gone (see `linkat`); and a non-directory's on either end, so
        // that nothing is mounted on it between the mountpoint test below and the move (see
        // `Task::mount`, which mounts under the mountpoint's lock).
        let tgt_dir_replaced = tgt.as_ref().is_some_and(|t| t.is_dir()) && !exchange;
        if tgt_dir_replaced {
            new_child.prune_negatives();
        }
        fn nondir(i: &Arc<Inode>) -> Option<&Arc<Inode>> {
            (!i.is_dir()).then_some(i)
        }
        let (first, second) = match (nondir(&src), tgt.as_ref().and_then(nondir)) {
            (Some(a), Some(b)) if Arc::as_ptr(b) < Arc::as_ptr(a) => (Some(b), Some(a)),
            (a, b) => (a, b),
        };
        let _lock1 = first.map(|i| i.lock.write());
        let _lock2 = second.map(|i| i.lock.write());
        let _tdir_lock = tgt
            .as_ref()
            .filter(|_| tgt_dir_replaced)
            .map(|t| t.lock.write());
        if old_child.is_mountpoint() || new_child.is_mountpoint() {
            return Err(Errno::EBUSY);
        }
        // The filesystem makes the whiteout before it moves the source, so a failure to make
        // it (ENOSPC) changes nothing (Linux: `shmem_whiteout()` in `shmem_rename2()`).
        let whiteout = flags
            .contains(RenameFlags::WHITEOUT)
            .then(|| new_inode(&cred, &odir, FileType::CharDevice.mode_bits(), 0));
        let made = odir.ops().rename(
            &odir,
            &op.name,
            &src,
            &ndir,
            &np.name,
            tgt.as_ref(),
            flags,
            whiteout.as_ref(),
        )?;
        if exchange {
            od.d_exchange(&op.name, &old_child, &nd, &np.name, &new_child);
            // Two moves, each with its cookie (Linux: `vfs_rename()`'s two `fsnotify_move()`s).
            notify::rename(&odir, &op.name, &ndir, &np.name, &src, None);
            if let Some(t) = &tgt {
                notify::rename(&ndir, &np.name, &odir, &op.name, t, None);
            }
        } else {
            od.d_move(&op.name, &old_child, &nd, &np.name);
            if let Some(w) = made {
                od.d_instantiate(&op.name, w);
            }
            if let Some(t) = &tgt {
                t.ops().keep_parent(t, &ndir);
            }
            notify::rename(&odir, &op.name, &ndir, &np.name, &src, tgt.as_deref());
            // The replaced inode goes at the rename's end (Linux: the final `dput()` of the
            // target's dentry in `do_renameat2()`).
            if let Some(t) = &tgt {
                notify::name_gone(t);
            }
        }
        Ok(())
    }

    /// `readlinkat(2)`: copies the target of a symbolic link into `buf` (not NUL-terminated,
    /// truncated to `buf`); returns the bytes copied.
    ///
    /// # Errors
    /// `EINVAL` for an empty `buf` or a non-link (`ENOENT` when the path was empty); path
    /// errors.
    pub fn readlinkat(&self, dirfd: i32, path: impl AsRef<[u8]>, buf: &mut [u8]) -> Result<usize> {
        if buf.is_empty() {
            return Err(Errno::EINVAL);
        }
        let path = path.as_ref();
        self.with_path(
            dirfd,
            path,
            EmptyPath::Allow,
            ResolveFlags::empty(),
            |w, start| {
                let pos = w.lookup(start, path, FollowLast::No)?;
                let inode = pos.inode().ok_or(Errno::ENOENT)?;
                if inode.file_type() != FileType::Symlink {
                    return Err(if path.is_empty() {
                        Errno::ENOENT
                    } else {
                        Errno::EINVAL
                    });
                }
                let body = inode.ops().get_link(inode)?;
                touch_atime_at(&pos.mnt, inode);
                let n = body.len().min(buf.len());
                buf[..n].copy_from_slice(&body[..n]);
                Ok(n)
            },
        )
    }
}

/// Protected hard links (Linux: `may_linkat()` with `fs.protected_hardlinks = 1`).
fn may_linkat(cred: &Cred, inode: &Inode) -> Result<()> {
    if owner_or_capable(cred, inode) {
        return Ok(());
    }
    let mode = inode.mode();
    let safe = inode.file_type() == FileType::Regular
        && mode & S_ISUID == 0
        && mode & (S_ISGID | S_IXGRP) != (S_ISGID | S_IXGRP)
        && inode_permission(cred, inode, Access::READ | Access::WRITE).is_ok();
    if safe {
        Ok(())
    } else {
        Err(Errno::EPERM)
    }
}
