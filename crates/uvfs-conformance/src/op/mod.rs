//! The operations a case runs (CASES.md, "Operations"); [`Op::parse`] reads them.
//!
//! Numeric arguments are kept as `i64` and converted to the C type of the call's argument
//! with `as`, the same truncation a C caller's implicit conversion does, so `-1` reaches a
//! `u32` parameter as `0xffffffff` on both sides.

mod args;
pub mod cred;

pub use args::value;
pub use cred::CredOp;

/// A file descriptor argument: a bound name (`$f`) or a raw number (`AT_FDCWD`, `99`, `-1`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fd {
    /// `$NAME`: the fd an earlier op bound with `=> NAME`.
    Var(String),
    /// A number passed as is.
    Raw(i32),
}

/// A `utimensat` timestamp argument: `NOW`, `OMIT` or `SEC.NSEC` (NSEC a nanosecond count).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Time {
    /// Seconds since the epoch.
    pub sec: i64,
    /// Nanoseconds, or [`Time::UTIME_NOW`] / [`Time::UTIME_OMIT`].
    pub nsec: i64,
}

impl Time {
    /// `UTIME_NOW`.
    pub const UTIME_NOW: i64 = (1 << 30) - 1;
    /// `UTIME_OMIT`.
    pub const UTIME_OMIT: i64 = (1 << 30) - 2;
}

/// What an xattr call names: a path (following a final symlink), a path without following
/// (`l*xattr`), or an open file (`f*xattr`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum XattrTarget {
    /// `setxattr`, `getxattr`, ...
    Path(Vec<u8>),
    /// `lsetxattr`, `lgetxattr`, ...
    Link(Vec<u8>),
    /// `fsetxattr`, `fgetxattr`, ...
    File(Fd),
}

/// An `fcntl` command with its argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fcntl {
    /// `F_DUPFD` with the lowest acceptable fd.
    DupFd(i32),
    /// `F_DUPFD_CLOEXEC` with the lowest acceptable fd.
    DupFdCloexec(i32),
    /// `F_GETFD`.
    GetFd,
    /// `F_SETFD` with the fd flags.
    SetFd(i32),
    /// `F_GETFL`.
    GetFl,
    /// `F_SETFL` with the status flags.
    SetFl(i32),
}

/// One operation of a case; each variant is one row of the table in CASES.md.
#[allow(missing_docs)] // The fields are the arguments of the call the variant names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    Open {
        path: Vec<u8>,
        flags: i64,
        mode: i64,
    },
    Openat {
        dirfd: Fd,
        path: Vec<u8>,
        flags: i64,
        mode: i64,
    },
    Openat2 {
        dirfd: Fd,
        path: Vec<u8>,
        flags: u64,
        mode: u64,
        resolve: u64,
    },
    Close {
        fd: Fd,
    },
    Read {
        fd: Fd,
        count: usize,
    },
    Pread {
        fd: Fd,
        count: usize,
        off: i64,
    },
    Write {
        fd: Fd,
        data: Vec<u8>,
    },
    Pwrite {
        fd: Fd,
        data: Vec<u8>,
        off: i64,
    },
    Readv {
        fd: Fd,
        counts: Vec<usize>,
    },
    Writev {
        fd: Fd,
        bufs: Vec<Vec<u8>>,
    },
    Lseek {
        fd: Fd,
        off: i64,
        whence: i64,
    },
    Truncate {
        path: Vec<u8>,
        len: i64,
    },
    Ftruncate {
        fd: Fd,
        len: i64,
    },
    Fallocate {
        fd: Fd,
        mode: i64,
        off: i64,
        len: i64,
    },
    Fsync {
        fd: Fd,
    },
    Fdatasync {
        fd: Fd,
    },
    Dup {
        fd: Fd,
    },
    Dup2 {
        fd: Fd,
        newfd: Fd,
    },
    Dup3 {
        fd: Fd,
        newfd: Fd,
        flags: i64,
    },
    Fcntl {
        fd: Fd,
        cmd: Fcntl,
    },
    Mkdirat {
        dirfd: Fd,
        path: Vec<u8>,
        mode: i64,
    },
    Mknod {
        path: Vec<u8>,
        mode: i64,
        dev: u64,
    },
    Unlinkat {
        dirfd: Fd,
        path: Vec<u8>,
        flags: i64,
    },
    Renameat2 {
        olddirfd: Fd,
        old: Vec<u8>,
        newdirfd: Fd,
        new: Vec<u8>,
        flags: i64,
    },
    Linkat {
        olddirfd: Fd,
        old: Vec<u8>,
        newdirfd: Fd,
        new: Vec<u8>,
        flags: i64,
    },
    Symlink {
        target: Vec<u8>,
        path: Vec<u8>,
    },
    Readlinkat {
        dirfd: Fd,
        path: Vec<u8>,
        count: usize,
    },
    Fstatat {
        dirfd: Fd,
        path: Vec<u8>,
        flags: i64,
    },
    Fstat {
        fd: Fd,
    },
    Statx {
        dirfd: Fd,
        path: Vec<u8>,
        flags: i64,
        mask: i64,
    },
    Fchmodat {
        dirfd: Fd,
        path: Vec<u8>,
        mode: i64,
        flags: i64,
    },
    Fchmod {
        fd: Fd,
        mode: i64,
    },
    Fchownat {
        dirfd: Fd,
        path: Vec<u8>,
        uid: i64,
        gid: i64,
        flags: i64,
    },
    Fchown {
        fd: Fd,
        uid: i64,
        gid: i64,
    },
    /// `path == None` is `futimens` (utimensat on the fd itself); `times == None` sets now.
    Utimensat {
        dirfd: Fd,
        path: Option<Vec<u8>>,
        times: Option<[Time; 2]>,
        flags: i64,
    },
    Faccessat2 {
        dirfd: Fd,
        path: Vec<u8>,
        mode: i64,
        flags: i64,
    },
    Getdents {
        fd: Fd,
        bufsize: usize,
    },
    Listdir {
        path: Vec<u8>,
    },
    Chdir {
        path: Vec<u8>,
    },
    Fchdir {
        fd: Fd,
    },
    Getcwd {
        size: usize,
    },
    Chroot {
        path: Vec<u8>,
    },
    Umask {
        mask: i64,
    },
    Setxattr {
        target: XattrTarget,
        name: Vec<u8>,
        value: Vec<u8>,
        flags: i64,
    },
    Getxattr {
        target: XattrTarget,
        name: Vec<u8>,
        size: usize,
    },
    Listxattr {
        target: XattrTarget,
        size: usize,
    },
    Removexattr {
        target: XattrTarget,
        name: Vec<u8>,
    },
    Statfs {
        path: Vec<u8>,
    },
    Fstatfs {
        fd: Fd,
    },
    Mount {
        src: Option<Vec<u8>>,
        target: Vec<u8>,
        fstype: Option<String>,
        flags: u64,
        data: Option<String>,
    },
    Umount2 {
        target: Vec<u8>,
        flags: i64,
    },
    SetrlimitNofile {
        limit: u64,
    },
    /// Switch to these credentials for the rest of the case.
    As {
        uid: u32,
        gid: u32,
        groups: Vec<u32>,
    },
    /// A credential call (`setresuid`, `capset`, ...): [`cred`].
    Cred(CredOp),
}
