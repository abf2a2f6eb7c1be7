//! The system calls a tree copy makes on either side, the host kernel's or a uvfs task's: one
//! trait, so that the walk and the attribute order are written once for import, export and
//! snapshot.

use std::io;
use std::path::PathBuf;

use crate::abi::{FileType, Timespec};

/// What a copy reads of an entry (`lstat`).
#[derive(Clone, Copy, Debug)]
pub(super) struct Meta {
    pub kind: FileType,
    /// Permission bits with set-user-ID, set-group-ID and sticky (`mode & 0o7777`).
    pub perm: u32,
    pub uid: u32,
    pub gid: u32,
    pub size: u64,
    pub atime: Timespec,
    pub mtime: Timespec,
    pub dev: u64,
    pub ino: u64,
    pub nlink: u64,
    /// Device number of a device node, in the encoding `stat` gives and `mknod` takes.
    pub rdev: u64,
}

/// One extended attribute.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Xattr {
    pub name: Vec<u8>,
    pub value: Vec<u8>,
}

/// What a call acts on: an open fd, or a name in an open directory (not followed if it is a
/// symlink). Symlinks and special files are only ever named: opening a FIFO would block, and
/// a symlink cannot be opened for attribute calls.
pub(super) enum At<'a, F> {
    Fd(&'a F),
    Name(&'a F, &'a [u8]),
}

// Not derived: a derive would ask `F: Copy`, and only references are copied.
impl<F> Clone for At<'_, F> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<F> Copy for At<'_, F> {}

/// Which data boundary `seek` looks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Seek {
    Data,
    Hole,
}

/// Whether the root of a side may be created.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Root {
    /// The source: it must exist and be a directory.
    Existing,
    /// The destination: created (mode 0700) if missing.
    CreateMissing,
}

/// The system calls of one side. Every name is one component; every fd is owned and closed
/// on drop.
pub(super) trait Fs {
    /// An open file or directory.
    type Fd;

    /// The side's root joined with `rel` (a path in the tree), for error messages.
    fn display(&self, rel: &[u8]) -> PathBuf;
    /// Opens the side's root directory for reading, following a symlink (`ENOTDIR` if it is
    /// not a directory).
    fn open_root(&self, how: Root) -> io::Result<Self::Fd>;
    /// Opens `name` read-only without following it: a directory (`O_DIRECTORY`) or a file;
    /// with `O_NOATIME` where allowed.
    fn open_read(&self, dir: &Self::Fd, name: &[u8], kind: FileType) -> io::Result<Self::Fd>;
    /// Creates a regular file, which must not exist, open for writing, mode 0600.
    fn create_file(&self, dir: &Self::Fd, name: &[u8]) -> io::Result<Self::Fd>;
    /// `fstat` or `fstatat(AT_SYMLINK_NOFOLLOW)`.
    fn stat(&self, at: At<'_, Self::Fd>) -> io::Result<Meta>;
    /// The names of a directory, `.` and `..` left out.
    fn read_dir(&self, dir: &Self::Fd) -> io::Result<Vec<Vec<u8>>>;
    /// `lseek(SEEK_DATA/SEEK_HOLE)`; `None` for `ENXIO` (no more data).
    fn seek(&self, fd: &Self::Fd, off: u64, what: Seek) -> io::Result<Option<u64>>;
    /// `pread`.
    fn pread(&self, fd: &Self::Fd, buf: &mut [u8], off: u64) -> io::Result<usize>;
    /// `pwrite`.
    fn pwrite(&self, fd: &Self::Fd, buf: &[u8], off: u64) -> io::Result<usize>;
    /// `ftruncate`.
    fn ftruncate(&self, fd: &Self::Fd, len: u64) -> io::Result<()>;
    /// `readlinkat`.
    fn readlink(&self, dir: &Self::Fd, name: &[u8]) -> io::Result<Vec<u8>>;
    /// `mkdirat`.
    fn mkdir(&self, dir: &Self::Fd, name: &[u8], mode: u32) -> io::Result<()>;
    /// `symlinkat`.
    fn symlink(&self, target: &[u8], dir: &Self::Fd, name: &[u8]) -> io::Result<()>;
    /// `linkat(olddir, oldpath, newdir, newname, 0)`.
    fn link(
        &self,
        olddir: &Self::Fd,
        oldpath: &[u8],
        newdir: &Self::Fd,
        newname: &[u8],
    ) -> io::Result<()>;
    /// `mknodat`: `mode` carries the type bits.
    fn mknod(&self, dir: &Self::Fd, name: &[u8], mode: u32, rdev: u64) -> io::Result<()>;
    /// `fchown` or `fchownat(AT_SYMLINK_NOFOLLOW)`.
    fn chown(&self, at: At<'_, Self::Fd>, uid: u32, gid: u32) -> io::Result<()>;
    /// `fchmod` or `fchmodat`.
    fn chmod(&self, at: At<'_, Self::Fd>, perm: u32) -> io::Result<()>;
    /// `futimens` or `utimensat(AT_SYMLINK_NOFOLLOW)`.
    fn utimens(&self, at: At<'_, Self::Fd>, atime: Timespec, mtime: Timespec) -> io::Result<()>;
    /// The names of the extended attributes (`flistxattr`/`llistxattr`).
    fn list_xattrs(&self, at: At<'_, Self::Fd>) -> io::Result<Vec<Vec<u8>>>;
    /// One attribute's value (`fgetxattr`/`lgetxattr`).
    fn get_xattr(&self, at: At<'_, Self::Fd>, name: &[u8]) -> io::Result<Vec<u8>>;
    /// `fsetxattr`/`lsetxattr`, flags 0.
    fn set_xattr(&self, at: At<'_, Self::Fd>, name: &[u8], value: &[u8]) -> io::Result<()>;
    /// Whether [`Owners::Auto`](super::Owners::Auto) preserves owners on this side.
    fn may_chown(&self) -> bool;
}

/// Splits a list of NUL-terminated names (`listxattr`'s result).
pub(super) fn split_names(list: &[u8]) -> Vec<Vec<u8>> {
    list.split(|&b| b == 0)
        .filter(|n| !n.is_empty())
        .map(<[u8]>::to_vec)
        .collect()
}
