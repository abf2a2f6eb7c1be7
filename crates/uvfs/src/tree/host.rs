//! The host side of a copy: the host kernel's calls through rustix, relative to directory fds.
//!
//! Attribute calls on a symlink or special file go through `/proc/self/fd/<dir>/<name>` with
//! the `l*xattr` calls: Linux has no `*xattrat` call before 6.13, and the magic link names the
//! open directory without a path walk from the root, so the path stays short at any depth.

use std::ffi::OsStr;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use rustix::fs::{self as rfs, AtFlags, Mode, OFlags, SeekFrom, Timestamps, CWD};
use rustix::process::{Gid, Uid};

use super::fsops::{split_names, At, Fs, Meta, Root, Seek};
use crate::abi::{FileType, Timespec};

/// The host tree rooted at `root`.
pub(super) struct Host {
    root: PathBuf,
}

impl Host {
    pub(super) fn new(root: PathBuf) -> Host {
        Host { root }
    }
}

fn io_err(e: rustix::io::Errno) -> io::Error {
    io::Error::from_raw_os_error(e.raw_os_error())
}

fn ts(t: Timespec) -> rfs::Timespec {
    rfs::Timespec {
        tv_sec: t.sec,
        tv_nsec: t.nsec as _,
    }
}

// The field types of `struct stat` differ between architectures: the casts are no-ops here.
#[allow(clippy::unnecessary_cast)]
fn meta_of(s: &rfs::Stat) -> io::Result<Meta> {
    let mode = s.st_mode as u32;
    Ok(Meta {
        kind: FileType::from_mode(mode).ok_or_else(|| io_err(rustix::io::Errno::INVAL))?,
        perm: mode & 0o7777,
        uid: s.st_uid as u32,
        gid: s.st_gid as u32,
        size: s.st_size as u64,
        atime: Timespec::new(s.st_atime as i64, s.st_atime_nsec as i64),
        mtime: Timespec::new(s.st_mtime as i64, s.st_mtime_nsec as i64),
        dev: s.st_dev as u64,
        ino: s.st_ino as u64,
        nlink: s.st_nlink as u64,
        rdev: s.st_rdev as u64,
    })
}

/// `/proc/self/fd/<dir>/<name>`: a path naming `name` in the open directory `dir`.
fn proc_path(dir: &OwnedFd, name: &[u8]) -> Vec<u8> {
    use std::os::fd::AsRawFd;
    let mut p = format!("/proc/self/fd/{}/", dir.as_raw_fd()).into_bytes();
    p.extend_from_slice(name);
    p
}

/// Opens with `O_NOATIME`, and again without it where the kernel refuses it (`EPERM`: not
/// the owner and no `CAP_FOWNER`).
fn open_noatime(dir: impl AsFd, name: &[u8], flags: OFlags) -> io::Result<OwnedFd> {
    let base = flags | OFlags::CLOEXEC | OFlags::NOFOLLOW;
    match rfs::openat(&dir, name, base | OFlags::NOATIME, Mode::empty()) {
        Err(rustix::io::Errno::PERM) => rfs::openat(&dir, name, base, Mode::empty()),
        r => r,
    }
    .map_err(io_err)
}

/// Reads a list or value of unknown size: `query()` gives the size (rustix answers a fill of
/// an empty buffer with 0, so the size has its own call), `fill(buf)` the bytes.
fn sized(
    query: impl Fn() -> rustix::io::Result<usize>,
    mut fill: impl FnMut(&mut [u8]) -> rustix::io::Result<usize>,
) -> io::Result<Vec<u8>> {
    loop {
        let n = query().map_err(io_err)?;
        if n == 0 {
            return Ok(Vec::new());
        }
        let mut buf = vec![0u8; n];
        match fill(&mut buf) {
            Ok(m) => {
                buf.truncate(m);
                return Ok(buf);
            }
            // It grew between the two calls.
            Err(rustix::io::Errno::RANGE) => continue,
            Err(e) => return Err(io_err(e)),
        }
    }
}

impl Fs for Host {
    type Fd = OwnedFd;

    fn display(&self, rel: &[u8]) -> PathBuf {
        if rel.is_empty() {
            self.root.clone()
        } else {
            self.root.join(OsStr::from_bytes(rel))
        }
    }

    fn open_root(&self, how: Root) -> io::Result<OwnedFd> {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let open = || match rfs::openat(CWD, &self.root, flags | OFlags::NOATIME, Mode::empty()) {
            Err(rustix::io::Errno::PERM) => rfs::openat(CWD, &self.root, flags, Mode::empty()),
            r => r,
        };
        match (open(), how) {
            (Err(rustix::io::Errno::NOENT), Root::CreateMissing) => {
                match rfs::mkdirat(CWD, &self.root, Mode::from_raw_mode(0o700)) {
                    Ok(()) | Err(rustix::io::Errno::EXIST) => {}
                    Err(e) => return Err(io_err(e)),
                }
                open().map_err(io_err)
            }
            (r, _) => r.map_err(io_err),
        }
    }

    fn open_read(&self, dir: &OwnedFd, name: &[u8], kind: FileType) -> io::Result<OwnedFd> {
        let flags = if kind == FileType::Directory {
            OFlags::RDONLY | OFlags::DIRECTORY
        } else {
            OFlags::RDONLY
        };
        open_noatime(dir, name, flags)
    }

    fn create_file(&self, dir: &OwnedFd, name: &[u8]) -> io::Result<OwnedFd> {
        let flags =
            OFlags::CREATE | OFlags::EXCL | OFlags::WRONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        rfs::openat(dir, name, flags, Mode::from_raw_mode(0o600)).map_err(io_err)
    }

    fn stat(&self, at: At<'_, OwnedFd>) -> io::Result<Meta> {
        let s = match at {
            At::Fd(f) => rfs::fstat(f),
            At::Name(d, n) => rfs::statat(d, n, AtFlags::SYMLINK_NOFOLLOW),
        }
        .map_err(io_err)?;
        meta_of(&s)
    }

    fn read_dir(&self, dir: &OwnedFd) -> io::Result<Vec<Vec<u8>>> {
        let mut d = rfs::Dir::read_from(dir).map_err(io_err)?;
        let mut out = Vec::new();
        while let Some(e) = d.read() {
            let e = e.map_err(io_err)?;
            let n = e.file_name().to_bytes();
            if n != b"." && n != b".." {
                out.push(n.to_vec());
            }
        }
        Ok(out)
    }

    fn seek(&self, fd: &OwnedFd, off: u64, what: Seek) -> io::Result<Option<u64>> {
        let pos = match what {
            Seek::Data => SeekFrom::Data(off),
            Seek::Hole => SeekFrom::Hole(off),
        };
        match rfs::seek(fd, pos) {
            Ok(p) => Ok(Some(p)),
            Err(rustix::io::Errno::NXIO) => Ok(None),
            Err(e) => Err(io_err(e)),
        }
    }

    fn pread(&self, fd: &OwnedFd, buf: &mut [u8], off: u64) -> io::Result<usize> {
        rustix::io::pread(fd, buf, off).map_err(io_err)
    }

    fn pwrite(&self, fd: &OwnedFd, buf: &[u8], off: u64) -> io::Result<usize> {
        rustix::io::pwrite(fd, buf, off).map_err(io_err)
    }

    fn ftruncate(&self, fd: &OwnedFd, len: u64) -> io::Result<()> {
        rfs::ftruncate(fd, len).map_err(io_err)
    }

    fn readlink(&self, dir: &OwnedFd, name: &[u8]) -> io::Result<Vec<u8>> {
        Ok(rfs::readlinkat(dir, name, Vec::new())
            .map_err(io_err)?
            .into_bytes())
    }

    fn mkdir(&self, dir: &OwnedFd, name: &[u8], mode: u32) -> io::Result<()> {
        rfs::mkdirat(dir, name, Mode::from_raw_mode(mode)).map_err(io_err)
    }

    fn symlink(&self, target: &[u8], dir: &OwnedFd, name: &[u8]) -> io::Result<()> {
        rfs::symlinkat(target, dir, name).map_err(io_err)
    }

    fn link(&self, od: &OwnedFd, op: &[u8], nd: &OwnedFd, nn: &[u8]) -> io::Result<()> {
        rfs::linkat(od, op, nd, nn, AtFlags::empty()).map_err(io_err)
    }

    fn mknod(&self, dir: &OwnedFd, name: &[u8], mode: u32, rdev: u64) -> io::Result<()> {
        let ft = rfs::FileType::from_raw_mode(mode);
        rfs::mknodat(dir, name, ft, Mode::from_raw_mode(mode & 0o7777), rdev).map_err(io_err)
    }

    fn chown(&self, at: At<'_, OwnedFd>, uid: u32, gid: u32) -> io::Result<()> {
        let (u, g) = (
            Some(Uid::from_raw_unchecked(uid)),
            Some(Gid::from_raw_unchecked(gid)),
        );
        match at {
            At::Fd(f) => rfs::fchown(f, u, g),
            At::Name(d, n) => rfs::chownat(d, n, u, g, AtFlags::SYMLINK_NOFOLLOW),
        }
        .map_err(io_err)
    }

    fn chmod(&self, at: At<'_, OwnedFd>, perm: u32) -> io::Result<()> {
        let m = Mode::from_raw_mode(perm);
        match at {
            At::Fd(f) => rfs::fchmod(f, m),
            At::Name(d, n) => rfs::chmodat(d, n, m, AtFlags::empty()),
        }
        .map_err(io_err)
    }

    fn utimens(&self, at: At<'_, OwnedFd>, atime: Timespec, mtime: Timespec) -> io::Result<()> {
        let t = Timestamps {
            last_access: ts(atime),
            last_modification: ts(mtime),
        };
        match at {
            At::Fd(f) => rfs::futimens(f, &t),
            At::Name(d, n) => rfs::utimensat(d, n, &t, AtFlags::SYMLINK_NOFOLLOW),
        }
        .map_err(io_err)
    }

    fn list_xattrs(&self, at: At<'_, OwnedFd>) -> io::Result<Vec<Vec<u8>>> {
        let list = match at {
            At::Fd(f) => sized(|| rfs::flistxattr_query(f), |b| rfs::flistxattr(f, b)),
            At::Name(d, n) => {
                let p = proc_path(d, n);
                sized(|| rfs::llistxattr_query(&p), |b| rfs::llistxattr(&p, b))
            }
        }?;
        Ok(split_names(&list))
    }

    fn get_xattr(&self, at: At<'_, OwnedFd>, name: &[u8]) -> io::Result<Vec<u8>> {
        match at {
            At::Fd(f) => sized(
                || rfs::fgetxattr_query(f, name),
                |b| rfs::fgetxattr(f, name, b),
            ),
            At::Name(d, n) => {
                let p = proc_path(d, n);
                sized(
                    || rfs::lgetxattr_query(&p, name),
                    |b| rfs::lgetxattr(&p, name, b),
                )
            }
        }
    }

    fn set_xattr(&self, at: At<'_, OwnedFd>, name: &[u8], value: &[u8]) -> io::Result<()> {
        let flags = rfs::XattrFlags::empty();
        match at {
            At::Fd(f) => rfs::fsetxattr(f, name, value, flags),
            At::Name(d, n) => rfs::lsetxattr(proc_path(d, n), name, value, flags),
        }
        .map_err(io_err)
    }

    fn may_chown(&self) -> bool {
        rustix::process::geteuid().is_root()
    }
}
