//! The uvfs side of a copy: a task's calls, relative to directory fds.
//!
//! The copy runs on a fork of the caller's task (same credentials, namespace, root and cwd),
//! so its fds never show in the caller's table and it may change its own cwd: attribute calls
//! on a symlink or special file are `fchdir` to the directory, then the `l*xattr` call on the
//! bare name (uvfs, like Linux before 6.13, has no `*xattrat` call), which keeps the path
//! short at any depth.

use std::cell::RefCell;
use std::ffi::OsStr;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::rc::Rc;

use super::fsops::{split_names, At, Fs, Meta, Root, Seek};
use crate::abi::{
    AtFlags, Dirent, Errno, FileType, OpenFlags, Timespec, Whence, XattrFlags, AT_FDCWD, PATH_MAX,
};
use crate::vfs::{Capabilities, Task};

/// The tree at `root` (a path of the task).
pub(super) struct Uv {
    task: Rc<Task>,
    root: Vec<u8>,
    /// The `getdents64` and `readlinkat` buffer, reused.
    buf: RefCell<Vec<u8>>,
}

/// The size of the `getdents64` buffer; at least `PATH_MAX` for `readlinkat`.
const DIR_BUF_BYTES: usize = 32 * 1024;

/// An fd of the copy's task, closed on drop.
pub(super) struct UvFd {
    task: Rc<Task>,
    fd: i32,
}

impl Drop for UvFd {
    fn drop(&mut self) {
        // A close of an fd this copy opened and nothing else knows cannot fail.
        let _ = self.task.close(self.fd);
    }
}

impl Uv {
    /// The tree at `root` seen by a fork of `task`.
    pub(super) fn new(task: &Task, root: &[u8]) -> Uv {
        Uv::with_task(task.fork(), root)
    }

    /// The tree at `root` seen by `task`, which the copy may use as its own.
    pub(super) fn with_task(task: Task, root: &[u8]) -> Uv {
        Uv {
            task: Rc::new(task),
            root: root.to_vec(),
            buf: RefCell::new(vec![0u8; DIR_BUF_BYTES.max(PATH_MAX)]),
        }
    }

    fn fd(&self, fd: i32) -> UvFd {
        UvFd {
            task: self.task.clone(),
            fd,
        }
    }

    /// `fchdir` to `dir`, so that `name` can be given to a path call.
    fn at_name(&self, dir: &UvFd, name: &[u8]) -> io::Result<Vec<u8>> {
        self.task.fchdir(dir.fd)?;
        Ok(name.to_vec())
    }
}

fn meta_of(s: &crate::abi::Stat) -> io::Result<Meta> {
    Ok(Meta {
        kind: s.file_type().ok_or(Errno::EINVAL)?,
        perm: s.mode & 0o7777,
        uid: s.uid,
        gid: s.gid,
        size: s.size as u64,
        atime: s.atime,
        mtime: s.mtime,
        dev: s.dev,
        ino: s.ino,
        nlink: s.nlink,
        rdev: s.rdev,
    })
}

/// Reads a list or value of unknown size: `call(buf)` with an empty buffer gives the size.
fn sized(mut call: impl FnMut(&mut [u8]) -> crate::abi::Result<usize>) -> io::Result<Vec<u8>> {
    loop {
        let n = call(&mut [])?;
        let mut buf = vec![0u8; n];
        match call(&mut buf) {
            Ok(m) => {
                buf.truncate(m);
                return Ok(buf);
            }
            Err(Errno::ERANGE) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

fn off(o: u64) -> io::Result<i64> {
    i64::try_from(o).map_err(|_| Errno::EFBIG.into())
}

impl Fs for Uv {
    type Fd = UvFd;

    fn display(&self, rel: &[u8]) -> PathBuf {
        let mut p = self.root.clone();
        if !rel.is_empty() {
            if p.last() != Some(&b'/') {
                p.push(b'/');
            }
            p.extend_from_slice(rel);
        }
        PathBuf::from(OsStr::from_bytes(&p))
    }

    fn open_root(&self, how: Root) -> io::Result<UvFd> {
        let flags = OpenFlags::RDONLY | OpenFlags::DIRECTORY | OpenFlags::CLOEXEC;
        let open = || match self
            .task
            .openat(AT_FDCWD, &self.root, flags | OpenFlags::NOATIME, 0)
        {
            Err(Errno::EPERM) => self.task.openat(AT_FDCWD, &self.root, flags, 0),
            r => r,
        };
        let fd = match (open(), how) {
            (Err(Errno::ENOENT), Root::CreateMissing) => {
                match self.task.mkdirat(AT_FDCWD, &self.root, 0o700) {
                    Ok(()) | Err(Errno::EEXIST) => {}
                    Err(e) => return Err(e.into()),
                }
                open()?
            }
            (r, _) => r?,
        };
        Ok(self.fd(fd))
    }

    fn open_read(&self, dir: &UvFd, name: &[u8], kind: FileType) -> io::Result<UvFd> {
        let mut flags = OpenFlags::RDONLY | OpenFlags::NOFOLLOW | OpenFlags::CLOEXEC;
        if kind == FileType::Directory {
            flags |= OpenFlags::DIRECTORY;
        }
        let fd = match self
            .task
            .openat(dir.fd, name, flags | OpenFlags::NOATIME, 0)
        {
            Err(Errno::EPERM) => self.task.openat(dir.fd, name, flags, 0)?,
            r => r?,
        };
        Ok(self.fd(fd))
    }

    fn create_file(&self, dir: &UvFd, name: &[u8]) -> io::Result<UvFd> {
        let flags = OpenFlags::CREAT
            | OpenFlags::EXCL
            | OpenFlags::WRONLY
            | OpenFlags::NOFOLLOW
            | OpenFlags::CLOEXEC;
        Ok(self.fd(self.task.openat(dir.fd, name, flags, 0o600)?))
    }

    fn stat(&self, at: At<'_, UvFd>) -> io::Result<Meta> {
        let s = match at {
            At::Fd(f) => self.task.fstat(f.fd)?,
            At::Name(d, n) => self.task.fstatat(d.fd, n, AtFlags::SYMLINK_NOFOLLOW)?,
        };
        meta_of(&s)
    }

    fn read_dir(&self, dir: &UvFd) -> io::Result<Vec<Vec<u8>>> {
        let mut buf = self.buf.borrow_mut();
        let mut out = Vec::new();
        loop {
            let n = self.task.getdents64(dir.fd, &mut buf)?;
            if n == 0 {
                return Ok(out);
            }
            for d in Dirent::parse(&buf[..n]) {
                if d.name != b"." && d.name != b".." {
                    out.push(d.name);
                }
            }
        }
    }

    fn seek(&self, fd: &UvFd, o: u64, what: Seek) -> io::Result<Option<u64>> {
        let w = match what {
            Seek::Data => Whence::DATA,
            Seek::Hole => Whence::HOLE,
        };
        match self.task.lseek(fd.fd, off(o)?, w) {
            Ok(p) => Ok(Some(p as u64)),
            Err(Errno::ENXIO) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    fn pread(&self, fd: &UvFd, buf: &mut [u8], o: u64) -> io::Result<usize> {
        Ok(self.task.pread(fd.fd, buf, off(o)?)?)
    }

    fn pwrite(&self, fd: &UvFd, buf: &[u8], o: u64) -> io::Result<usize> {
        Ok(self.task.pwrite(fd.fd, buf, off(o)?)?)
    }

    fn ftruncate(&self, fd: &UvFd, len: u64) -> io::Result<()> {
        Ok(self.task.ftruncate(fd.fd, off(len)?)?)
    }

    fn readlink(&self, dir: &UvFd, name: &[u8]) -> io::Result<Vec<u8>> {
        let mut buf = self.buf.borrow_mut();
        let n = self.task.readlinkat(dir.fd, name, &mut buf)?;
        Ok(buf[..n].to_vec())
    }

    fn mkdir(&self, dir: &UvFd, name: &[u8], mode: u32) -> io::Result<()> {
        Ok(self.task.mkdirat(dir.fd, name, mode)?)
    }

    fn symlink(&self, target: &[u8], dir: &UvFd, name: &[u8]) -> io::Result<()> {
        Ok(self.task.symlinkat(target, dir.fd, name)?)
    }

    fn link(&self, od: &UvFd, op: &[u8], nd: &UvFd, nn: &[u8]) -> io::Result<()> {
        Ok(self.task.linkat(od.fd, op, nd.fd, nn, AtFlags::empty())?)
    }

    fn mknod(&self, dir: &UvFd, name: &[u8], mode: u32, rdev: u64) -> io::Result<()> {
        Ok(self.task.mknodat(dir.fd, name, mode, rdev)?)
    }

    fn chown(&self, at: At<'_, UvFd>, uid: u32, gid: u32) -> io::Result<()> {
        let (u, g) = (Some(uid), Some(gid));
        Ok(match at {
            At::Fd(f) => self.task.fchown(f.fd, u, g),
            At::Name(d, n) => self.task.fchownat(d.fd, n, u, g, AtFlags::SYMLINK_NOFOLLOW),
        }?)
    }

    fn chmod(&self, at: At<'_, UvFd>, perm: u32) -> io::Result<()> {
        Ok(match at {
            At::Fd(f) => self.task.fchmod(f.fd, perm),
            At::Name(d, n) => self.task.fchmodat(d.fd, n, perm, AtFlags::empty()),
        }?)
    }

    fn utimens(&self, at: At<'_, UvFd>, atime: Timespec, mtime: Timespec) -> io::Result<()> {
        let t = Some([atime, mtime]);
        Ok(match at {
            At::Fd(f) => self.task.utimensat(f.fd, None, t, AtFlags::empty()),
            At::Name(d, n) => self
                .task
                .utimensat(d.fd, Some(n), t, AtFlags::SYMLINK_NOFOLLOW),
        }?)
    }

    fn list_xattrs(&self, at: At<'_, UvFd>) -> io::Result<Vec<Vec<u8>>> {
        let list = match at {
            At::Fd(f) => sized(|b| self.task.flistxattr(f.fd, b))?,
            At::Name(d, n) => {
                let p = self.at_name(d, n)?;
                sized(|b| self.task.llistxattr(&p, b))?
            }
        };
        Ok(split_names(&list))
    }

    fn get_xattr(&self, at: At<'_, UvFd>, name: &[u8]) -> io::Result<Vec<u8>> {
        match at {
            At::Fd(f) => sized(|b| self.task.fgetxattr(f.fd, name, b)),
            At::Name(d, n) => {
                let p = self.at_name(d, n)?;
                sized(|b| self.task.lgetxattr(&p, name, b))
            }
        }
    }

    fn set_xattr(&self, at: At<'_, UvFd>, name: &[u8], value: &[u8]) -> io::Result<()> {
        let flags = XattrFlags::empty();
        Ok(match at {
            At::Fd(f) => self.task.fsetxattr(f.fd, name, value, flags),
            At::Name(d, n) => {
                let p = self.at_name(d, n)?;
                self.task.lsetxattr(&p, name, value, flags)
            }
        }?)
    }

    fn may_chown(&self) -> bool {
        self.task.cred().capable(Capabilities::CHOWN)
    }
}
