//! Extended attributes: `getxattr`, `setxattr`, `listxattr`, `removexattr` and their `l`/`f`
//! forms. Linux: fs/xattr.c (`xattr_permission()`, `setxattr()`, `getxattr()`, `listxattr()`).

use std::sync::Arc;

use super::EmptyPath;
use crate::abi::{
    Access, Errno, FileType, ResolveFlags, Result, XattrFlags, S_ISVTX, XATTR_LIST_MAX,
    XATTR_NAME_MAX, XATTR_SIZE_MAX,
};
use crate::vfs::cred::{Capabilities, Cred};
use crate::vfs::inode::Inode;
use crate::vfs::mount::MountRef;
use crate::vfs::namei::FollowLast;
use crate::vfs::notify;
use crate::vfs::permission::{inode_permission, owner_or_capable};
use crate::vfs::Task;

const PREFIXES: [&[u8]; 3] = [b"user.", b"trusted.", b"security."];

/// Whether an xattr call follows a final symlink.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Follow {
    Yes,
    No,
}

fn check_name(name: &[u8]) -> Result<()> {
    if name.is_empty() || name.len() > XATTR_NAME_MAX {
        return Err(Errno::ERANGE);
    }
    if name.contains(&0) {
        return Err(Errno::EINVAL);
    }
    Ok(())
}

/// Linux: `xattr_permission()`.
fn xattr_permission(cred: &Cred, inode: &Inode, name: &[u8], mask: Access) -> Result<()> {
    let write = mask.contains(Access::WRITE);
    if name.starts_with(b"security.") || name.starts_with(b"system.") {
        return Ok(());
    }
    if name.starts_with(b"trusted.") {
        if !cred.capable(Capabilities::SYS_ADMIN) {
            return Err(if write { Errno::EPERM } else { Errno::ENODATA });
        }
        return Ok(());
    }
    if name.starts_with(b"user.") {
        let ft = inode.file_type();
        if ft != FileType::Regular && ft != FileType::Directory {
            return Err(if write { Errno::EPERM } else { Errno::ENODATA });
        }
        if ft == FileType::Directory
            && inode.mode() & S_ISVTX != 0
            && write
            && !owner_or_capable(cred, inode)
        {
            return Err(Errno::EPERM);
        }
    }
    inode_permission(cred, inode, mask)
}

/// Finds the namespace of a name (Linux: `xattr_resolve_name()`): a bare prefix is `EINVAL`,
/// an unknown namespace `EOPNOTSUPP`.
fn known_prefix(name: &[u8]) -> Result<()> {
    match PREFIXES.iter().find(|p| name.starts_with(p)) {
        Some(p) if name.len() == p.len() => Err(Errno::EINVAL),
        Some(_) => Ok(()),
        None => Err(Errno::EOPNOTSUPP),
    }
}

/// The capability hook for writes (Linux: `cap_inode_setxattr()`/`cap_inode_removexattr()`):
/// `security.*` needs `CAP_SYS_ADMIN`. Security hooks skip private inodes (`IS_PRIVATE`: the
/// anonymous inode of eventfd and epoll files), which then answer `EOPNOTSUPP` themselves.
fn cap_xattr_write(cred: &Cred, inode: &Inode, name: &[u8]) -> Result<()> {
    if inode.file_type() == crate::abi::FileType::Anon {
        return Ok(());
    }
    if name.starts_with(b"security.") && !cred.capable(Capabilities::SYS_ADMIN) {
        return Err(Errno::EPERM);
    }
    Ok(())
}

/// What an xattr call acts on: the mount, the dentry and its inode.
type Target = (MountRef, Arc<crate::vfs::Dentry>, Arc<Inode>);

/// # Extended attributes
///
/// `setxattr`, `getxattr`, `listxattr`, `removexattr`, each with its `l` (no follow) and
/// `f` (fd) form.
impl Task {
    fn xattr_target(&self, path: &[u8], follow: Follow) -> Result<Target> {
        let f = if follow == Follow::Yes {
            FollowLast::Yes
        } else {
            FollowLast::No
        };
        self.with_path(
            crate::abi::AT_FDCWD,
            path,
            EmptyPath::Reject,
            ResolveFlags::empty(),
            |w, s| {
                let pos = w.lookup(s, path, f)?;
                let inode = pos.inode().ok_or(Errno::ENOENT)?.clone();
                Ok((pos.mnt.arc().clone(), pos.dentry.arc().clone(), inode))
            },
        )
    }

    fn xattr_fd(&self, fd: i32) -> Result<Target> {
        let file = self.files.get(fd)?;
        if file.fmode().path_only {
            return Err(Errno::EBADF);
        }
        Ok((
            file.path().mnt.clone(),
            file.path().dentry.clone(),
            file.inode().clone(),
        ))
    }

    /// The shared body of `setxattr`, `lsetxattr` and `fsetxattr`. `t` finds the target and is
    /// called only after the flags, the name and the value's size are checked, as Linux copies
    /// and checks them before its lookup (`setxattr_copy()`): a call refused for them walks no
    /// path, so it stamps no symbolic link's atime. The get and remove bodies do the same with
    /// the name (`import_xattr_name()`).
    fn do_setxattr(
        &self,
        t: impl FnOnce() -> Result<Target>,
        name: &[u8],
        value: &[u8],
        flags: XattrFlags,
    ) -> Result<()> {
        if !XattrFlags::all().contains(flags) {
            return Err(Errno::EINVAL);
        }
        check_name(name)?;
        if value.len() > XATTR_SIZE_MAX {
            return Err(Errno::E2BIG);
        }
        let (mnt, dentry, inode) = t()?;
        if mnt.is_rdonly() {
            return Err(Errno::EROFS);
        }
        let _g = inode.lock.write();
        let cred = self.cred.borrow();
        xattr_permission(&cred, &inode, name, Access::WRITE)?;
        cap_xattr_write(&cred, &inode, name)?;
        known_prefix(name)?;
        inode.ops().setxattr(&inode, name, value, flags)?;
        notify::xattr(&dentry, &inode);
        Ok(())
    }

    fn do_getxattr(
        &self,
        t: impl FnOnce() -> Result<Target>,
        name: &[u8],
        buf: &mut [u8],
    ) -> Result<usize> {
        check_name(name)?;
        let (_, _, inode) = t()?;
        xattr_permission(&self.cred.borrow(), &inode, name, Access::READ)?;
        known_prefix(name)?;
        let v = inode.ops().getxattr(&inode, name)?;
        if buf.is_empty() {
            return Ok(v.len());
        }
        if v.len() > buf.len() {
            return Err(Errno::ERANGE);
        }
        buf[..v.len()].copy_from_slice(&v);
        Ok(v.len())
    }

    fn do_listxattr(&self, t: impl FnOnce() -> Result<Target>, buf: &mut [u8]) -> Result<usize> {
        let (_, _, inode) = t()?;
        let trusted = self.cred.borrow().capable(Capabilities::SYS_ADMIN);
        let mut out = Vec::new();
        for n in inode.ops().listxattr(&inode)? {
            if !trusted && n.starts_with(b"trusted.") {
                continue;
            }
            out.extend_from_slice(&n);
            out.push(0);
        }
        if buf.is_empty() {
            return Ok(out.len());
        }
        if out.len() > buf.len() {
            return Err(if out.len() > XATTR_LIST_MAX {
                Errno::E2BIG
            } else {
                Errno::ERANGE
            });
        }
        buf[..out.len()].copy_from_slice(&out);
        Ok(out.len())
    }

    fn do_removexattr(&self, t: impl FnOnce() -> Result<Target>, name: &[u8]) -> Result<()> {
        check_name(name)?;
        let (mnt, dentry, inode) = t()?;
        if mnt.is_rdonly() {
            return Err(Errno::EROFS);
        }
        let _g = inode.lock.write();
        let cred = self.cred.borrow();
        xattr_permission(&cred, &inode, name, Access::WRITE)?;
        cap_xattr_write(&cred, &inode, name)?;
        known_prefix(name)?;
        inode.ops().removexattr(&inode, name)?;
        notify::xattr(&dentry, &inode);
        Ok(())
    }

    /// `setxattr(2)`.
    ///
    /// # Errors
    /// `EINVAL` (flags), `ERANGE` (empty or long name), `E2BIG` (value), path errors, `EROFS`,
    /// `EPERM` (`trusted.*` without `CAP_SYS_ADMIN`; `user.*` on special files or others'
    /// sticky directories), `EACCES`, `EOPNOTSUPP` (unknown namespace), `EEXIST`/`ENODATA`
    /// (`XATTR_CREATE`/`XATTR_REPLACE`).
    pub fn setxattr(
        &self,
        path: impl AsRef<[u8]>,
        name: impl AsRef<[u8]>,
        value: &[u8],
        flags: XattrFlags,
    ) -> Result<()> {
        let t = || self.xattr_target(path.as_ref(), Follow::Yes);
        self.do_setxattr(t, name.as_ref(), value, flags)
    }
    /// `lsetxattr(2)`.
    ///
    /// # Errors
    /// As [`Task::setxattr`].
    pub fn lsetxattr(
        &self,
        path: impl AsRef<[u8]>,
        name: impl AsRef<[u8]>,
        value: &[u8],
        flags: XattrFlags,
    ) -> Result<()> {
        let t = || self.xattr_target(path.as_ref(), Follow::No);
        self.do_setxattr(t, name.as_ref(), value, flags)
    }
    /// `fsetxattr(2)`.
    ///
    /// # Errors
    /// As [`Task::setxattr`]; `EBADF`.
    pub fn fsetxattr(
        &self,
        fd: i32,
        name: impl AsRef<[u8]>,
        value: &[u8],
        flags: XattrFlags,
    ) -> Result<()> {
        let t = || self.xattr_fd(fd);
        self.do_setxattr(t, name.as_ref(), value, flags)
    }
    /// `getxattr(2)`: with an empty `buf`, returns the value's size.
    ///
    /// # Errors
    /// `ERANGE` (name, or `buf` too small), path errors, `ENODATA`, `EACCES`, `EOPNOTSUPP`.
    pub fn getxattr(
        &self,
        path: impl AsRef<[u8]>,
        name: impl AsRef<[u8]>,
        buf: &mut [u8],
    ) -> Result<usize> {
        let t = || self.xattr_target(path.as_ref(), Follow::Yes);
        self.do_getxattr(t, name.as_ref(), buf)
    }
    /// `lgetxattr(2)`.
    ///
    /// # Errors
    /// As [`Task::getxattr`].
    pub fn lgetxattr(
        &self,
        path: impl AsRef<[u8]>,
        name: impl AsRef<[u8]>,
        buf: &mut [u8],
    ) -> Result<usize> {
        let t = || self.xattr_target(path.as_ref(), Follow::No);
        self.do_getxattr(t, name.as_ref(), buf)
    }
    /// `fgetxattr(2)`.
    ///
    /// # Errors
    /// As [`Task::getxattr`]; `EBADF`.
    pub fn fgetxattr(&self, fd: i32, name: impl AsRef<[u8]>, buf: &mut [u8]) -> Result<usize> {
        let t = || self.xattr_fd(fd);
        self.do_getxattr(t, name.as_ref(), buf)
    }
    /// `listxattr(2)`: NUL-separated names the caller may see; with an empty `buf`, the size.
    ///
    /// # Errors
    /// `ERANGE` if `buf` is too small; path errors.
    pub fn listxattr(&self, path: impl AsRef<[u8]>, buf: &mut [u8]) -> Result<usize> {
        let t = || self.xattr_target(path.as_ref(), Follow::Yes);
        self.do_listxattr(t, buf)
    }
    /// `llistxattr(2)`.
    ///
    /// # Errors
    /// As [`Task::listxattr`].
    pub fn llistxattr(&self, path: impl AsRef<[u8]>, buf: &mut [u8]) -> Result<usize> {
        let t = || self.xattr_target(path.as_ref(), Follow::No);
        self.do_listxattr(t, buf)
    }
    /// `flistxattr(2)`.
    ///
    /// # Errors
    /// As [`Task::listxattr`]; `EBADF`.
    pub fn flistxattr(&self, fd: i32, buf: &mut [u8]) -> Result<usize> {
        let t = || self.xattr_fd(fd);
        self.do_listxattr(t, buf)
    }
    /// `removexattr(2)`.
    ///
    /// # Errors
    /// `ERANGE` (name), path errors, `EROFS`, `EPERM`, `EACCES`, `EOPNOTSUPP`, `ENODATA`.
    pub fn removexattr(&self, path: impl AsRef<[u8]>, name: impl AsRef<[u8]>) -> Result<()> {
        let t = || self.xattr_target(path.as_ref(), Follow::Yes);
        self.do_removexattr(t, name.as_ref())
    }
    /// `lremovexattr(2)`.
    ///
    /// # Errors
    /// As [`Task::removexattr`].
    pub fn lremovexattr(&self, path: impl AsRef<[u8]>, name: impl AsRef<[u8]>) -> Result<()> {
        let t = || self.xattr_target(path.as_ref(), Follow::No);
        self.do_removexattr(t, name.as_ref())
    }
    /// `fremovexattr(2)`.
    ///
    /// # Errors
    /// As [`Task::removexattr`]; `EBADF`.
    pub fn fremovexattr(&self, fd: i32, name: impl AsRef<[u8]>) -> Result<()> {
        let t = || self.xattr_fd(fd);
        self.do_removexattr(t, name.as_ref())
    }
}
