//! Attribute changes and checks: `fchmodat`, `fchownat`, `utimensat`, `faccessat2`,
//! `truncate`, `ftruncate`. Linux: fs/open.c (`chmod_common()`, `chown_common()`,
//! `do_faccessat()`, `vfs_truncate()`, `do_sys_ftruncate()`), fs/utimes.c, fs/attr.c
//! (`setattr_prepare()`, `notify_change()`).

use std::sync::Arc;

use super::EmptyPath;
use crate::abi::{
    Access, AtFlags, Errno, FileType, ResolveFlags, Result, Timespec, S_IALLUGO, S_ISGID, S_ISUID,
    UTIME_NOW, UTIME_OMIT,
};
use crate::vfs::cred::{Capabilities, Cred};
use crate::vfs::inode::{Inode, SetAttr, TimeSet};
use crate::vfs::mount::MntFlags;
use crate::vfs::namei::FollowLast;
use crate::vfs::notify;
use crate::vfs::permission::{
    inode_permission, owner_or_capable, should_drop_sgid, should_remove_suid,
};
use crate::vfs::{Dentry, FileDescription, Task, VfsPath};

fn follow_of(flags: AtFlags) -> FollowLast {
    if flags.contains(AtFlags::SYMLINK_NOFOLLOW) {
        FollowLast::No
    } else {
        FollowLast::Yes
    }
}

/// Adds set-id clearing to a truncate by a caller without `CAP_FSETID` (Linux:
/// `dentry_needs_remove_privs()` in `do_truncate()`).
///
/// The clearing asks for no ctime stamp of its own: `notify_change()` turns
/// `ATTR_KILL_SUID`/`ATTR_KILL_SGID` into `ATTR_MODE` only, and tmpfs stamps a size change
/// (`shmem_setattr()` skips the stamp when the size stays). So `truncate(2)` to the same size
/// clears the bits and leaves ctime alone; `ftruncate(2)` and `O_TRUNC` ask for the stamp
/// themselves.
pub(crate) fn kill_privs_on_truncate(cred: &Cred, inode: &Inode, attr: &mut SetAttr) {
    let kill = should_remove_suid(cred, inode);
    if kill != 0 {
        attr.perm = Some(inode.mode() & S_IALLUGO & !kill);
    }
}

fn nsec_valid(t: &Timespec) -> bool {
    (0..1_000_000_000).contains(&t.nsec) || t.nsec == UTIME_NOW || t.nsec == UTIME_OMIT
}

/// # Attributes: change and check
///
/// `fchmodat`, `fchownat`, `utimensat`, `faccessat2`, `truncate` and their fd forms.
impl Task {
    fn resolve(&self, dirfd: i32, path: &[u8], flags: AtFlags) -> Result<VfsPath> {
        let empty = if flags.contains(AtFlags::EMPTY_PATH) {
            EmptyPath::Allow
        } else {
            EmptyPath::Reject
        };
        self.with_path(dirfd, path, empty, ResolveFlags::empty(), |w, s| {
            Ok(w.lookup(s, path, follow_of(flags))?.to_path())
        })
    }

    /// `fchmodat2(2)` (`fchmodat` with flags): sets the permission bits.
    ///
    /// # Errors
    /// `EINVAL` for unknown flags; path errors; `EROFS`; `EOPNOTSUPP` for a symlink with
    /// `AT_SYMLINK_NOFOLLOW`; `EPERM` for a non-owner without `CAP_FOWNER`.
    pub fn fchmodat(
        &self,
        dirfd: i32,
        path: impl AsRef<[u8]>,
        mode: u32,
        flags: AtFlags,
    ) -> Result<()> {
        if !(flags - (AtFlags::SYMLINK_NOFOLLOW | AtFlags::EMPTY_PATH)).is_empty() {
            return Err(Errno::EINVAL);
        }
        let p = self.resolve(dirfd, path.as_ref(), flags)?;
        self.chmod_common(&p, mode)
    }

    /// `fchmod(2)`.
    ///
    /// # Errors
    /// `EBADF` (also for `O_PATH`); as [`Task::fchmodat`].
    pub fn fchmod(&self, fd: i32, mode: u32) -> Result<()> {
        let file = self.files.get(fd)?;
        self.fchmod_file(&file, mode)
    }

    /// [`Task::fchmod`] of an open file held without an fd.
    pub(crate) fn fchmod_file(&self, file: &FileDescription, mode: u32) -> Result<()> {
        if file.fmode().path_only {
            return Err(Errno::EBADF);
        }
        self.chmod_common(file.path(), mode)
    }

    fn chmod_common(&self, path: &VfsPath, mode: u32) -> Result<()> {
        let inode = path.dentry.inode().ok_or(Errno::ENOENT)?;
        if path.mnt.is_rdonly() {
            return Err(Errno::EROFS);
        }
        let _g = inode.lock.write();
        // Linux checks ownership in the filesystem's `setattr` (`setattr_prepare()`), which
        // the anonymous inode's refuses first (`anon_inode_setattr()`).
        if matches!(inode.file_type(), FileType::Symlink | FileType::Anon) {
            return Err(Errno::EOPNOTSUPP);
        }
        let cred = self.cred.borrow();
        if !owner_or_capable(&cred, inode) {
            return Err(Errno::EPERM);
        }
        let mut perm = mode & S_IALLUGO;
        if perm & S_ISGID != 0 && !cred.in_group(inode.gid()) && !cred.capable(Capabilities::FSETID)
        {
            perm &= !S_ISGID;
        }
        let attr = SetAttr {
            perm: Some(perm),
            ctime: true,
            ..SetAttr::default()
        };
        inode.ops().setattr(inode, &attr)?;
        notify::change(&path.dentry, inode, &attr);
        Ok(())
    }

    /// `fchownat(2)`: `None` leaves that id unchanged (`-1`).
    ///
    /// # Errors
    /// `EINVAL` for unknown flags; path errors; `EROFS`; `EPERM` unless the caller has
    /// `CAP_CHOWN`, or owns the file, keeps the owner and picks one of its groups.
    pub fn fchownat(
        &self,
        dirfd: i32,
        path: impl AsRef<[u8]>,
        uid: Option<u32>,
        gid: Option<u32>,
        flags: AtFlags,
    ) -> Result<()> {
        if !(flags - (AtFlags::SYMLINK_NOFOLLOW | AtFlags::EMPTY_PATH)).is_empty() {
            return Err(Errno::EINVAL);
        }
        let p = self.resolve(dirfd, path.as_ref(), flags)?;
        self.chown_common(&p, uid, gid)
    }

    /// `fchown(2)`.
    ///
    /// # Errors
    /// `EBADF` (also for `O_PATH`); as [`Task::fchownat`].
    pub fn fchown(&self, fd: i32, uid: Option<u32>, gid: Option<u32>) -> Result<()> {
        let file = self.files.get(fd)?;
        if file.fmode().path_only {
            return Err(Errno::EBADF);
        }
        self.chown_common(file.path(), uid, gid)
    }

    fn chown_common(&self, path: &VfsPath, uid: Option<u32>, gid: Option<u32>) -> Result<()> {
        let inode = path.dentry.inode().ok_or(Errno::ENOENT)?;
        if path.mnt.is_rdonly() {
            return Err(Errno::EROFS);
        }
        let _g = inode.lock.write();
        if inode.file_type() == FileType::Anon {
            // As in `chmod_common`: refused before any ownership check.
            return Err(Errno::EOPNOTSUPP);
        }
        let cred = self.cred.borrow();
        let owner = cred.fsuid == inode.uid();
        if let Some(u) = uid {
            let ok = (owner && u == inode.uid()) || cred.capable(Capabilities::CHOWN);
            if !ok {
                return Err(Errno::EPERM);
            }
        }
        if let Some(g) = gid {
            let ok = (owner && (g == inode.gid() || cred.in_group(g)))
                || cred.capable(Capabilities::CHOWN);
            if !ok {
                return Err(Errno::EPERM);
            }
        }
        let mut attr = SetAttr {
            uid,
            gid,
            ctime: true,
            ..SetAttr::default()
        };
        if !inode.is_dir() {
            // Linux `chown_common()` asks to clear set-user-ID on every non-directory and
            // set-group-ID when `setattr_should_drop_sgid()` says so; `notify_change()` turns
            // that into a mode change, which `setattr_prepare()` allows only to the owner or
            // CAP_FOWNER, so a stranger's chown(-1, -1) of a set-id file is EPERM.
            let mode = inode.mode();
            let mut kill = should_drop_sgid(&cred, inode);
            if mode & S_ISUID != 0 {
                kill |= S_ISUID;
            }
            if kill != 0 {
                if !owner_or_capable(&cred, inode) {
                    return Err(Errno::EPERM);
                }
                let mut perm = mode & S_IALLUGO & !kill;
                // A set-group-ID bit that survives needs the (new) group or CAP_FSETID.
                let group = gid.unwrap_or(inode.gid());
                if perm & S_ISGID != 0
                    && !cred.in_group(group)
                    && !cred.capable(Capabilities::FSETID)
                {
                    perm &= !S_ISGID;
                }
                attr.perm = Some(perm);
            }
        }
        inode.ops().setattr(inode, &attr)?;
        notify::change(&path.dentry, inode, &attr);
        Ok(())
    }

    /// `utimensat(2)`: `path == None` acts on `dirfd` itself (`futimens`); `times == None`
    /// sets both to now. `UTIME_NOW` and `UTIME_OMIT` are honoured per timestamp.
    ///
    /// # Errors
    /// `EINVAL` for unknown flags; path errors (`EFAULT` for no path at `AT_FDCWD`); `EINVAL`
    /// for a bad nanosecond value; `EROFS`; `EACCES`
    /// (setting now without owning or write access); `EPERM` (explicit times without owning).
    pub fn utimensat(
        &self,
        dirfd: i32,
        path: Option<&[u8]>,
        times: Option<[Timespec; 2]>,
        flags: AtFlags,
    ) -> Result<()> {
        // Linux's order: both OMIT returns before anything is looked at (`sys_utimensat`),
        // then flags, then the file, then the nanosecond values (`vfs_utimes()`).
        if let Some(t) = &times {
            if t[0].nsec == UTIME_OMIT && t[1].nsec == UTIME_OMIT {
                return Ok(());
            }
        }
        let vp = match path {
            Some(p) => {
                if !(flags - (AtFlags::SYMLINK_NOFOLLOW | AtFlags::EMPTY_PATH)).is_empty() {
                    return Err(Errno::EINVAL);
                }
                self.resolve(dirfd, p, flags)?
            }
            None if dirfd == crate::abi::AT_FDCWD => return Err(Errno::EFAULT),
            None => {
                if !flags.is_empty() {
                    return Err(Errno::EINVAL);
                }
                let file = self.files.get(dirfd)?;
                if file.fmode().path_only {
                    return Err(Errno::EBADF);
                }
                file.path().clone()
            }
        };
        let inode = vp.dentry.inode().ok_or(Errno::ENOENT)?.clone();
        if let Some(t) = &times {
            if !nsec_valid(&t[0]) || !nsec_valid(&t[1]) {
                return Err(Errno::EINVAL);
            }
        }
        if vp.mnt.is_rdonly() {
            return Err(Errno::EROFS);
        }
        let times = times.filter(|t| !(t[0].nsec == UTIME_NOW && t[1].nsec == UTIME_NOW));
        let _g = inode.lock.write();
        let cred = self.cred.borrow();
        let to_set = |t: &Timespec| match t.nsec {
            UTIME_OMIT => None,
            UTIME_NOW => Some(TimeSet::Now),
            // Linux: `notify_change()`'s `timestamp_truncate()`: a time at the superblock's
            // first or last second (tmpfs and kernfs: the ends of 64 bits) loses its
            // nanoseconds.
            _ if t.sec == i64::MAX || t.sec == i64::MIN => {
                Some(TimeSet::At(Timespec::new(t.sec, 0)))
            }
            _ => Some(TimeSet::At(*t)),
        };
        let attr = match &times {
            None => {
                if !owner_or_capable(&cred, &inode) {
                    inode_permission(&cred, &inode, Access::WRITE)?;
                }
                SetAttr {
                    atime: Some(TimeSet::Now),
                    mtime: Some(TimeSet::Now),
                    ctime: true,
                    ..SetAttr::default()
                }
            }
            Some(t) => {
                // Explicit times: the owner check is the filesystem's `setattr_prepare()`,
                // which the anonymous inode's `setattr` refuses first.
                if inode.file_type() == FileType::Anon {
                    return Err(Errno::EOPNOTSUPP);
                }
                if !owner_or_capable(&cred, &inode) {
                    return Err(Errno::EPERM);
                }
                SetAttr {
                    atime: to_set(&t[0]),
                    mtime: to_set(&t[1]),
                    ctime: true,
                    ..SetAttr::default()
                }
            }
        };
        inode.ops().setattr(&inode, &attr)?;
        notify::change(&vp.dentry, &inode, &attr);
        Ok(())
    }

    /// `faccessat2(2)`: checks `mode` (`R_OK|W_OK|X_OK`, or empty for existence) with the real
    /// ids, or with the effective ids under `AT_EACCESS`. Bits outside `Access`
    /// (`Access::from_bits_retain`) are refused as Linux refuses them.
    ///
    /// # Errors
    /// `EINVAL` for a bad mode or flags; path errors; `EACCES`; `EROFS` for `W_OK` on a
    /// read-only mount.
    pub fn faccessat2(
        &self,
        dirfd: i32,
        path: impl AsRef<[u8]>,
        mode: Access,
        flags: AtFlags,
    ) -> Result<()> {
        let mode = mode.bits();
        if mode & !7 != 0 {
            return Err(Errno::EINVAL);
        }
        if !(flags - (AtFlags::EACCESS | AtFlags::SYMLINK_NOFOLLOW | AtFlags::EMPTY_PATH))
            .is_empty()
        {
            return Err(Errno::EINVAL);
        }
        let real = {
            let c = self.cred.borrow();
            if flags.contains(AtFlags::EACCESS) {
                c.clone()
            } else {
                // Linux: `access_override_creds()` in fs/open.c.
                c.access_override()
            }
        };
        let old = self.cred.replace(real);
        let r = self.access_check(dirfd, path.as_ref(), mode, flags);
        *self.cred.borrow_mut() = old;
        r
    }

    fn access_check(&self, dirfd: i32, path: &[u8], mode: u32, flags: AtFlags) -> Result<()> {
        let p = self.resolve(dirfd, path, flags)?;
        let inode = p.dentry.inode().ok_or(Errno::ENOENT)?;
        let acc = Access::from_bits_truncate(mode);
        let cred = self.cred.borrow();
        if acc.contains(Access::EXEC)
            && inode.file_type() == FileType::Regular
            && p.mnt.flags().contains(MntFlags::NOEXEC)
        {
            return Err(Errno::EACCES);
        }
        inode_permission(&cred, inode, acc)?;
        if acc.contains(Access::WRITE)
            && matches!(
                inode.file_type(),
                FileType::Regular | FileType::Directory | FileType::Symlink
            )
            && p.mnt.is_rdonly()
        {
            return Err(Errno::EROFS);
        }
        Ok(())
    }

    /// `truncate(2)`.
    ///
    /// # Errors
    /// `EINVAL` for a negative length or a non-regular file, `EISDIR`, path errors, `EROFS`,
    /// `EACCES`, `EFBIG`.
    pub fn truncate(&self, path: impl AsRef<[u8]>, length: i64) -> Result<()> {
        if length < 0 {
            return Err(Errno::EINVAL);
        }
        let p = self.resolve(crate::abi::AT_FDCWD, path.as_ref(), AtFlags::empty())?;
        let inode = p.dentry.inode().ok_or(Errno::ENOENT)?;
        match inode.file_type() {
            FileType::Directory => return Err(Errno::EISDIR),
            FileType::Regular => {}
            _ => return Err(Errno::EINVAL),
        }
        // Permission before write access to the mount, unlike `open(O_TRUNC)` (Linux since
        // 6.13: `vfs_truncate()` calls `inode_permission()` before `mnt_want_write()`).
        let cred = self.cred.borrow();
        inode_permission(&cred, inode, Access::WRITE)?;
        if p.mnt.is_rdonly() {
            return Err(Errno::EROFS);
        }
        do_truncate(&cred, &p.dentry, inode, length, false)
    }

    /// `ftruncate(2)`.
    ///
    /// # Errors
    /// `EINVAL` for a negative length, a non-regular file or a file not open for writing;
    /// `EBADF`; `EFBIG`.
    pub fn ftruncate(&self, fd: i32, length: i64) -> Result<()> {
        if length < 0 {
            return Err(Errno::EINVAL);
        }
        let file = self.fget(fd)?;
        self.ftruncate_file(&file, length)
    }

    /// [`Task::ftruncate`] of an open file held without an fd.
    pub(crate) fn ftruncate_file(&self, file: &FileDescription, length: i64) -> Result<()> {
        if length < 0 {
            return Err(Errno::EINVAL);
        }
        if file.fmode().path_only {
            return Err(Errno::EBADF);
        }
        if file.inode().file_type() != FileType::Regular || !file.fmode().write {
            return Err(Errno::EINVAL);
        }
        let cred = self.cred.borrow();
        do_truncate(&cred, &file.path().dentry, file.inode(), length, true)
    }
}

/// Sets the size (Linux: `do_truncate()`). Any non-negative `i64` is within tmpfs's
/// `MAX_LFS_FILESIZE`, so `EFBIG` cannot arise here.
///
/// `ftruncate(2)` stamps mtime and ctime even at the same size; `truncate(2)` asks for no
/// stamp, and the filesystem decides (Linux: `vfs_truncate()` passes no
/// `ATTR_MTIME|ATTR_CTIME`; tmpfs stamps when the size changes or pages are truncated).
fn do_truncate(
    cred: &Cred,
    dentry: &Dentry,
    inode: &Arc<Inode>,
    length: i64,
    by_fd: bool,
) -> Result<()> {
    let _g = inode.lock.write();
    let mut attr = SetAttr {
        size: Some(length as u64),
        mtime: by_fd.then_some(TimeSet::Now),
        ctime: by_fd,
        ..SetAttr::default()
    };
    kill_privs_on_truncate(cred, inode, &mut attr);
    inode.ops().setattr(inode, &attr)?;
    notify::change(dentry, inode, &attr);
    Ok(())
}
