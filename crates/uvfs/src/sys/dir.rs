//! `getdents64`, `chdir`, `fchdir`, `getcwd`, `chroot`, `umask`. Linux: fs/readdir.c,
//! fs/open.c (`ksys_chdir()`, `ksys_chroot()`), fs/d_path.c (`getcwd`).

use std::sync::Arc;

use super::EmptyPath;
use crate::abi::{Access, Dirent, Errno, ResolveFlags, Result};
use crate::vfs::atime::touch_atime;
use crate::vfs::cred::Capabilities;
use crate::vfs::mount::MountRef;
use crate::vfs::namei::FollowLast;
use crate::vfs::ops::DirEntry;
use crate::vfs::permission::inode_permission;
use crate::vfs::{FileDescription, Task, VfsPath};

/// # Directories: listing, working directory and root
///
/// `getdents64`, `chdir`, `fchdir`, `chroot`, `getcwd`, `umask`.
impl Task {
    /// `getdents64(2)`: fills `buf` with `struct linux_dirent64` records from the file
    /// position; returns the bytes written, 0 at the end. Decode with [`Dirent::parse`].
    ///
    /// # Locking
    /// The file position, then the directory's inode lock shared for the whole listing, so
    /// that it sees each namespace change whole, never half a rename (Linux: `iterate_dir()`
    /// in fs/readdir.c, for `iterate_shared`).
    ///
    /// # Errors
    /// `EBADF`; `ENOTDIR`; `EINVAL` if `buf` cannot hold the next entry; `ENOENT` if the
    /// directory was removed.
    pub fn getdents64(&self, fd: i32, buf: &mut [u8]) -> Result<usize> {
        let file = self.fget(fd)?;
        let mut used = 0usize;
        let mut too_small = false;
        self.iterate_dir(&file, &mut |e: DirEntry<'_>| -> bool {
            match Dirent::encode(&mut buf[used..], e.ino, e.next_pos as i64, e.d_type, e.name) {
                Some(n) => {
                    used += n;
                    true
                }
                None => {
                    too_small = used == 0;
                    false
                }
            }
        })?;
        if too_small {
            return Err(Errno::EINVAL);
        }
        Ok(used)
    }

    /// Hands the entries of the open directory `file` from its position to `sink` until it
    /// returns `false` (that entry is not consumed) or the listing ends, and moves the
    /// position past those taken: [`Task::getdents64`] without the record encoding, for
    /// `uvfs::fs::ReadDir` (Linux: `iterate_dir()`).
    ///
    /// # Locking
    /// As [`Task::getdents64`]; `sink` runs with the directory's inode lock held shared and
    /// must not call back into the filesystem.
    ///
    /// # Errors
    /// `EBADF` for an `O_PATH` file; `ENOTDIR`; `ENOENT` if the directory was removed.
    pub(crate) fn iterate_dir(
        &self,
        file: &FileDescription,
        sink: &mut dyn FnMut(DirEntry<'_>) -> bool,
    ) -> Result<()> {
        if file.fmode().path_only {
            return Err(Errno::EBADF);
        }
        if !file.inode().is_dir() {
            return Err(Errno::ENOTDIR);
        }
        let mut pos = file.pos.lock();
        let dir_lock = file.inode().lock.read();
        // Checked under the lock, which rmdir holds exclusive when it kills the directory. A
        // directory its filesystem removed behind the VFS (kernfs) is listed by it (Linux:
        // kernfs marks no removed directory `S_DEAD`; its listing has `.` and `..`).
        if file.path().dentry.is_dead() && !file.inode().is_stale() {
            return Err(Errno::ENOENT);
        }
        let mut p = *pos;
        file.ops().readdir(file, &mut p, sink)?;
        *pos = p;
        drop(dir_lock);
        drop(pos);
        // The directory was read even if the buffer could not take an entry (Linux:
        // `iterate_dir()` calls `fsnotify_access()` and `file_accessed()` whatever the filldir
        // callback said).
        crate::vfs::notify::access(file);
        touch_atime(file);
        Ok(())
    }

    /// The path of the open file `file` from this task's root, as `readlink` of
    /// `/proc/self/fd/N` gives it (Linux: `d_path()`); for `uvfs::fs::Fs::canonicalize`.
    ///
    /// # Errors
    /// `ENOENT` if the file was removed or lies outside the root.
    pub(crate) fn path_of_file(&self, file: &FileDescription) -> Result<Vec<u8>> {
        if file.path().dentry.is_dead() {
            return Err(Errno::ENOENT);
        }
        let fs = self.fs.borrow();
        let (path, reachable) = path_of(file.path(), &fs.root);
        if !reachable {
            return Err(Errno::ENOENT);
        }
        Ok(path)
    }

    /// `chdir(2)`.
    ///
    /// # Errors
    /// Path errors; `ENOTDIR`; `EACCES` without search permission.
    pub fn chdir(&self, path: impl AsRef<[u8]>) -> Result<()> {
        let p = self.lookup_dir(path.as_ref())?;
        self.fs.set_cwd(p);
        Ok(())
    }

    /// `fchdir(2)` (works on `O_PATH` fds).
    ///
    /// # Errors
    /// `EBADF`; `ENOTDIR`; `EACCES`.
    pub fn fchdir(&self, fd: i32) -> Result<()> {
        let file = self.files.get(fd)?;
        let inode = file.inode();
        if !inode.is_dir() {
            return Err(Errno::ENOTDIR);
        }
        inode_permission(&self.cred.borrow(), inode, Access::EXEC)?;
        self.fs.set_cwd(file.path().clone());
        Ok(())
    }

    fn lookup_dir(&self, path: &[u8]) -> Result<VfsPath> {
        self.with_path(
            crate::abi::AT_FDCWD,
            path,
            EmptyPath::Reject,
            ResolveFlags::empty(),
            |w, s| {
                let pos = w.lookup(s, path, FollowLast::Yes)?;
                let inode = pos.inode().ok_or(Errno::ENOENT)?;
                if !inode.is_dir() {
                    return Err(Errno::ENOTDIR);
                }
                inode_permission(w.cred, inode, Access::EXEC)?;
                Ok(pos.to_path())
            },
        )
    }

    /// `chroot(2)`: changes the root (not the cwd).
    ///
    /// # Errors
    /// Path errors; `ENOTDIR`; `EACCES`; `EPERM` without `CAP_SYS_CHROOT`.
    pub fn chroot(&self, path: impl AsRef<[u8]>) -> Result<()> {
        let p = self.lookup_dir(path.as_ref())?;
        if !self.cred.borrow().capable(Capabilities::SYS_CHROOT) {
            return Err(Errno::EPERM);
        }
        self.fs.set_root(p);
        Ok(())
    }

    /// `umask(2)`: sets the creation mask, returning the previous one.
    pub fn umask(&self, mask: u32) -> u32 {
        self.umask.replace(mask & 0o777)
    }

    /// `getcwd(2)`: writes the NUL-terminated cwd into `buf`; returns its length with the NUL.
    /// A cwd outside the root is prefixed with `(unreachable)`, as Linux does.
    ///
    /// # Errors
    /// `ENOENT` if the cwd was removed; `ENAMETOOLONG` past `PATH_MAX`; `ERANGE` if `buf` is too
    /// small.
    pub fn getcwd(&self, buf: &mut [u8]) -> Result<usize> {
        let fs = self.fs.borrow();
        if fs.cwd.dentry.is_dead() {
            return Err(Errno::ENOENT);
        }
        let (path, reachable) = path_of(&fs.cwd, &fs.root);
        let mut out = Vec::with_capacity(path.len() + 16);
        if !reachable {
            out.extend_from_slice(b"(unreachable)");
        }
        out.extend_from_slice(&path);
        out.push(0);
        // Linux builds the path in one page (`d_path` into a `PATH_MAX` buffer).
        if out.len() > crate::abi::PATH_MAX {
            return Err(Errno::ENAMETOOLONG);
        }
        if out.len() > buf.len() {
            return Err(Errno::ERANGE);
        }
        buf[..out.len()].copy_from_slice(&out);
        Ok(out.len())
    }
}

/// The path of `p` as seen from `root`, and whether `root` was reached (Linux: `prepend_path()`).
pub(crate) fn path_of(p: &VfsPath, root: &VfsPath) -> (Vec<u8>, bool) {
    let mut parts: Vec<crate::vfs::ops::Name> = Vec::new();
    let mut mnt = p.mnt.clone();
    let mut d = p.dentry.clone();
    let mut reachable = false;
    loop {
        if MountRef::ptr_eq(&mnt, &root.mnt) && Arc::ptr_eq(&d, &root.dentry) {
            reachable = true;
            break;
        }
        if Arc::ptr_eq(&d, mnt.root()) {
            match mnt.parent() {
                Some((pm, pd)) => {
                    mnt = pm;
                    d = pd;
                    continue;
                }
                None => break,
            }
        }
        match d.parent() {
            Some(parent) => {
                parts.push(d.name());
                d = parent;
            }
            None => break,
        }
    }
    let mut out = Vec::new();
    for part in parts.iter().rev() {
        out.push(b'/');
        out.extend_from_slice(part);
    }
    if out.is_empty() {
        out.push(b'/');
    }
    (out, reachable)
}
