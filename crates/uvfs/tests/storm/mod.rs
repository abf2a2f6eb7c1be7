//! The bad-input storm: a seeded generator of mostly well-formed calls over a small existing
//! tree, each with at most one hostile field, and the errno Linux returns for that field.
//!
//! Shared by `crates/uvfs/tests/bad_input.rs` (run on uvfs) and
//! `crates/uvfs-conformance/tests/bad_input_host.rs` (the same calls on the host kernel, which
//! checks the table below). Both build the tree of [`SETUP`] and open the [`Obj`] files, then
//! feed [`generate`]'s calls to an [`Exec`] through [`run`].
//!
//! The tree (the storm task is uid 1000, gid 1000, working in `/d`):
//! ```text
//! /vault          0700 root      /vault/keep 0600 root "precious"   (the protected file)
//! /d              0755 1000      the cwd
//! /d/f            0644 1000      "0123456789", xattr user.k = "vvvv"
//! /d/sub          0755 1000      /d/sub/g 0644 1000
//! /d/l -> f       /d/loop -> loop
//! /d/full         a tmpfs (size=8k,nr_inodes=4,mode=0777) filled to the brim by root:
//!                 /d/full/big 0666 root, and directories until no inode is left
//! ```
//! Scratch names the well-formed calls create and remove: `s0`, `s1`, `s2`, `sub/s3` (files,
//! directories, symlinks, hard links of `f`) and `n0`, `n1` (FIFOs, sockets, whiteouts: never
//! opened, since a FIFO would block the host). Hostile calls touch only the stable objects and
//! names nobody creates (`hx`), so their errno does not depend on what the well-formed calls
//! did.
//!
//! Oracle of the table: the man pages of each call and the order in which Linux checks its
//! arguments (functions cited per family), verified against the host kernel by
//! `bad_input_host.rs`.

#![allow(dead_code)] // Reason: each of the two test crates that include this uses a part.

use std::fmt;

use uvfs::abi::{AtFlags, FallocFlags, OpenFlags, RenameFlags, StatxMask, IOV_MAX, PATH_MAX};
use uvfs::abi::{UTIME_NOW, UTIME_OMIT};
use uvfs::Errno;

/// xorshift64: deterministic, no dependency.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed | 1)
    }

    pub fn next(&mut self) -> u64 {
        let mut s = self.0;
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        self.0 = s;
        s
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    pub fn pick<T: Clone>(&mut self, v: &[T]) -> T {
        v[self.below(v.len() as u64) as usize].clone()
    }

    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// A file the storm task keeps open for the whole storm.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Obj {
    FileRw,
    FileRo,
    FileWo,
    FilePath,
    Dir,
    DirPath,
    LinkPath,
    Full,
}

impl Obj {
    pub const ALL: [Obj; 8] = [
        Obj::FileRw,
        Obj::FileRo,
        Obj::FileWo,
        Obj::FilePath,
        Obj::Dir,
        Obj::DirPath,
        Obj::LinkPath,
        Obj::Full,
    ];

    /// Path (relative to `/d`) and open flags.
    pub fn open(self) -> (&'static [u8], OpenFlags) {
        match self {
            Obj::FileRw => (b"f", OpenFlags::RDWR),
            Obj::FileRo => (b"f", OpenFlags::RDONLY),
            Obj::FileWo => (b"f", OpenFlags::WRONLY),
            Obj::FilePath => (b"f", OpenFlags::PATH),
            Obj::Dir => (b".", OpenFlags::RDONLY | OpenFlags::DIRECTORY),
            Obj::DirPath => (b".", OpenFlags::PATH | OpenFlags::DIRECTORY),
            Obj::LinkPath => (b"l", OpenFlags::PATH | OpenFlags::NOFOLLOW),
            Obj::Full => (b"full/big", OpenFlags::RDWR),
        }
    }
}

/// An fd argument.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FdArg {
    Obj(Obj),
    /// A number that is not open (or negative).
    Bad(i32),
    /// A fresh `dup` of [`Obj::FileRo`], made for the call (`close` closes it).
    Fresh,
}

/// A directory fd argument.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DirArg {
    Cwd,
    Fd(FdArg),
}

/// The target fd of `dup2`/`dup3`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NewFd {
    /// A free number, closed again after the call.
    Scratch,
    Bad(i32),
}

/// What an xattr call names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum XAt {
    Path(Vec<u8>),
    Link(Vec<u8>),
    Fd(FdArg),
}

/// One call of the `Task` API, with its arguments.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    Openat {
        dir: DirArg,
        path: Vec<u8>,
        flags: u32,
        mode: u32,
    },
    Openat2 {
        dir: DirArg,
        path: Vec<u8>,
        flags: u64,
        mode: u64,
        resolve: u64,
    },
    Close {
        fd: FdArg,
    },
    Read {
        fd: FdArg,
        len: usize,
    },
    Pread {
        fd: FdArg,
        len: usize,
        off: i64,
    },
    /// `readv`, or `preadv` with an offset.
    Readv {
        fd: FdArg,
        iovs: usize,
        off: Option<i64>,
    },
    Write {
        fd: FdArg,
        len: usize,
    },
    Pwrite {
        fd: FdArg,
        len: usize,
        off: i64,
    },
    /// `writev`, or `pwritev` with an offset.
    Writev {
        fd: FdArg,
        iovs: usize,
        off: Option<i64>,
    },
    Lseek {
        fd: FdArg,
        off: i64,
        whence: u32,
    },
    Fsync {
        fd: FdArg,
    },
    Fdatasync {
        fd: FdArg,
    },
    Fallocate {
        fd: FdArg,
        mode: u32,
        off: i64,
        len: i64,
    },
    Ftruncate {
        fd: FdArg,
        len: i64,
    },
    Truncate {
        path: Vec<u8>,
        len: i64,
    },
    Dup {
        fd: FdArg,
    },
    Dup2 {
        fd: FdArg,
        new: NewFd,
    },
    /// `dup3`; `same` passes the old fd as the new one.
    Dup3 {
        fd: FdArg,
        new: NewFd,
        flags: u32,
        same: bool,
    },
    /// `fcntl(F_DUPFD_CLOEXEC)`.
    DupFd {
        fd: FdArg,
        min: i32,
    },
    GetFl {
        fd: FdArg,
    },
    SetFl {
        fd: FdArg,
        flags: u32,
    },
    Mkdirat {
        dir: DirArg,
        path: Vec<u8>,
        mode: u32,
    },
    Mknodat {
        dir: DirArg,
        path: Vec<u8>,
        mode: u32,
        dev: u64,
    },
    Symlinkat {
        target: Vec<u8>,
        dir: DirArg,
        path: Vec<u8>,
    },
    Linkat {
        odir: DirArg,
        old: Vec<u8>,
        ndir: DirArg,
        new: Vec<u8>,
        flags: u32,
    },
    Unlinkat {
        dir: DirArg,
        path: Vec<u8>,
        flags: u32,
    },
    Renameat2 {
        odir: DirArg,
        old: Vec<u8>,
        ndir: DirArg,
        new: Vec<u8>,
        flags: u32,
    },
    Readlinkat {
        dir: DirArg,
        path: Vec<u8>,
        size: usize,
    },
    Fstatat {
        dir: DirArg,
        path: Vec<u8>,
        flags: u32,
    },
    Fstat {
        fd: FdArg,
    },
    Statx {
        dir: DirArg,
        path: Vec<u8>,
        flags: u32,
        mask: u32,
    },
    Statfs {
        path: Vec<u8>,
    },
    Fstatfs {
        fd: FdArg,
    },
    Fchmodat {
        dir: DirArg,
        path: Vec<u8>,
        mode: u32,
        flags: u32,
    },
    Fchmod {
        fd: FdArg,
        mode: u32,
    },
    Fchownat {
        dir: DirArg,
        path: Vec<u8>,
        uid: Option<u32>,
        gid: Option<u32>,
        flags: u32,
    },
    Fchown {
        fd: FdArg,
        uid: Option<u32>,
        gid: Option<u32>,
    },
    /// `utimensat`; `path == None` is `futimens` on the directory fd.
    Utimensat {
        dir: DirArg,
        path: Option<Vec<u8>>,
        times: [(i64, i64); 2],
        flags: u32,
    },
    Faccessat2 {
        dir: DirArg,
        path: Vec<u8>,
        mode: u32,
        flags: u32,
    },
    /// `lseek(fd, 0, SEEK_SET)` then one `getdents64` of `size` bytes.
    Getdents {
        fd: FdArg,
        size: usize,
    },
    Chdir {
        path: Vec<u8>,
    },
    Fchdir {
        fd: FdArg,
    },
    Chroot {
        path: Vec<u8>,
    },
    Umask {
        mask: u32,
    },
    Getcwd {
        size: usize,
    },
    Setxattr {
        at: XAt,
        name: Vec<u8>,
        len: usize,
        flags: u32,
    },
    Getxattr {
        at: XAt,
        name: Vec<u8>,
        size: usize,
    },
    Listxattr {
        at: XAt,
        size: usize,
    },
    Removexattr {
        at: XAt,
        name: Vec<u8>,
    },
    /// `mount("none", target, "tmpfs", flags, NULL)`.
    Mount {
        target: Vec<u8>,
        flags: u64,
    },
    Umount2 {
        target: Vec<u8>,
        flags: u32,
    },
}

impl Op {
    /// The call's name (its family).
    pub fn name(&self) -> &'static str {
        match self {
            Op::Openat { .. } => "openat",
            Op::Openat2 { .. } => "openat2",
            Op::Close { .. } => "close",
            Op::Read { .. } => "read",
            Op::Pread { .. } => "pread",
            Op::Readv { off: None, .. } => "readv",
            Op::Readv { .. } => "preadv",
            Op::Write { .. } => "write",
            Op::Pwrite { .. } => "pwrite",
            Op::Writev { off: None, .. } => "writev",
            Op::Writev { .. } => "pwritev",
            Op::Lseek { .. } => "lseek",
            Op::Fsync { .. } => "fsync",
            Op::Fdatasync { .. } => "fdatasync",
            Op::Fallocate { .. } => "fallocate",
            Op::Ftruncate { .. } => "ftruncate",
            Op::Truncate { .. } => "truncate",
            Op::Dup { .. } => "dup",
            Op::Dup2 { .. } => "dup2",
            Op::Dup3 { .. } => "dup3",
            Op::DupFd { .. } => "fcntl(F_DUPFD_CLOEXEC)",
            Op::GetFl { .. } => "fcntl(F_GETFL)",
            Op::SetFl { .. } => "fcntl(F_SETFL)",
            Op::Mkdirat { .. } => "mkdirat",
            Op::Mknodat { .. } => "mknodat",
            Op::Symlinkat { .. } => "symlinkat",
            Op::Linkat { .. } => "linkat",
            Op::Unlinkat { .. } => "unlinkat",
            Op::Renameat2 { .. } => "renameat2",
            Op::Readlinkat { .. } => "readlinkat",
            Op::Fstatat { .. } => "fstatat",
            Op::Fstat { .. } => "fstat",
            Op::Statx { .. } => "statx",
            Op::Statfs { .. } => "statfs",
            Op::Fstatfs { .. } => "fstatfs",
            Op::Fchmodat { .. } => "fchmodat",
            Op::Fchmod { .. } => "fchmod",
            Op::Fchownat { .. } => "fchownat",
            Op::Fchown { .. } => "fchown",
            Op::Utimensat { .. } => "utimensat",
            Op::Faccessat2 { .. } => "faccessat2",
            Op::Getdents { .. } => "getdents64",
            Op::Chdir { .. } => "chdir",
            Op::Fchdir { .. } => "fchdir",
            Op::Chroot { .. } => "chroot",
            Op::Umask { .. } => "umask",
            Op::Getcwd { .. } => "getcwd",
            Op::Setxattr { .. } => "setxattr",
            Op::Getxattr { .. } => "getxattr",
            Op::Listxattr { .. } => "listxattr",
            Op::Removexattr { .. } => "removexattr",
            Op::Mount { .. } => "mount",
            Op::Umount2 { .. } => "umount2",
        }
    }
}

/// Every call family [`generate`] makes (the `Task` API's calls).
pub const FAMILIES: usize = 53;

/// The one hostile field of a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Hostile {
    /// An fd that is not open, or negative.
    BadFd,
    /// An open fd of the wrong kind for the call (directory, `O_PATH`, wrong access mode).
    WrongFd,
    /// A NUL byte inside a path or name.
    Nul,
    /// A `/` inside a name, making a regular file a directory component (`f/x`).
    SlashInName,
    /// A component longer than `NAME_MAX`.
    LongName,
    /// A path of `PATH_MAX` bytes or more.
    LongPath,
    /// A path through the directory the task may not search (`/vault`).
    Forbidden,
    /// A path through a symlink loop.
    Loop,
    /// Unknown or contradictory flags, or an unknown mode or type.
    BadFlags,
    /// An out-of-range value: a nanosecond count, an access mode, an xattr namespace, a null
    /// path.
    BadValue,
    /// A negative offset, or one whose sum with the length overflows.
    BadOffset,
    /// A length or size that is negative, zero where refused, too small or too large.
    BadLength,
    /// An object of the wrong kind at a well-formed path (a directory where a file is needed).
    WrongObject,
    /// Something only a privileged task may do.
    Privilege,
    /// The open file limit reached (`EMFILE`).
    NoFreeFd,
    /// The filesystem out of blocks or inodes (`ENOSPC`).
    NoSpace,
}

impl Hostile {
    pub const ALL: [Hostile; 16] = [
        Hostile::BadFd,
        Hostile::WrongFd,
        Hostile::Nul,
        Hostile::SlashInName,
        Hostile::LongName,
        Hostile::LongPath,
        Hostile::Forbidden,
        Hostile::Loop,
        Hostile::BadFlags,
        Hostile::BadValue,
        Hostile::BadOffset,
        Hostile::BadLength,
        Hostile::WrongObject,
        Hostile::Privilege,
        Hostile::NoFreeFd,
        Hostile::NoSpace,
    ];
}

/// Where a call stops: the check its hostile field meets, or the end.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Stage {
    /// An argument check before any fd or path is looked at.
    Args,
    /// The fd lookup.
    Fd,
    /// Path resolution.
    Walk,
    /// A check on the object found: its type, access mode, permission or privilege.
    Object,
    /// An allocation: an fd, an inode, a block.
    Resource,
    /// A well-formed call that ran to the end.
    End,
}

impl Stage {
    /// Whether a call that stopped here got past its argument checks and its fd and path
    /// lookups.
    pub fn past_lookup(self) -> bool {
        matches!(self, Stage::Object | Stage::Resource | Stage::End)
    }
}

/// The outcome a call must have.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Expect {
    /// This errno, met at this stage.
    Fails(Errno, Stage),
    /// Success, or one of these errnos that depend on what earlier scratch calls did.
    Succeeds(&'static [Errno]),
}

/// A generated call.
#[derive(Clone, Debug)]
pub struct Call {
    pub op: Op,
    pub hostile: Option<Hostile>,
    pub expect: Expect,
    /// Run with the open file limit lowered to the number of open fds.
    pub exhaust_fds: bool,
}

impl Call {
    pub fn stage(&self) -> Stage {
        match self.expect {
            Expect::Fails(_, s) => s,
            Expect::Succeeds(_) => Stage::End,
        }
    }
}

/// `Debug` output with every list of byte values (a path, a name) shown as a string.
fn with_byte_strings(debug: &str) -> String {
    let mut out = String::new();
    let mut rest = debug;
    while let Some(i) = rest.find('[') {
        out += &rest[..i];
        let tail = &rest[i + 1..];
        let end = tail.find(']');
        let bytes: Option<Vec<u8>> = end.and_then(|e| {
            let inner = &tail[..e];
            if inner.is_empty()
                || !inner
                    .chars()
                    .all(|c| c.is_ascii_digit() || c == ',' || c == ' ')
            {
                return None;
            }
            inner.split(", ").map(|n| n.parse().ok()).collect()
        });
        match (bytes, end) {
            (Some(b), Some(e)) => {
                out += &format!("\"{}\"", b.escape_ascii());
                rest = &tail[e + 1..];
            }
            _ => {
                out.push('[');
                rest = tail;
            }
        }
    }
    out + rest
}

impl fmt::Display for Call {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let op = with_byte_strings(&format!("{:?}", self.op));
        let op: String = if op.len() > 300 {
            format!("{}...({} chars)", &op[..300], op.len())
        } else {
            op
        };
        write!(
            f,
            "{op} hostile={:?} expect={:?}",
            self.hostile, self.expect
        )?;
        if self.exhaust_fds {
            f.write_str(" (fd limit reached)")?;
        }
        Ok(())
    }
}

/// One step of building the tree.
#[derive(Clone, Copy, Debug)]
pub enum Setup {
    Mkdir(&'static [u8], u32),
    /// Create (exclusive) with mode and contents.
    Create(&'static [u8], u32, &'static [u8]),
    Chown(&'static [u8], u32, u32),
    Symlink(&'static [u8], &'static [u8]),
    /// A tmpfs with these options.
    Mount(&'static [u8], &'static [u8]),
    /// `setxattr(path, name, value, 0)`.
    Xattr(&'static [u8], &'static [u8], &'static [u8]),
    /// Append pages to the file until `ENOSPC`, then create files in its directory until
    /// `ENOSPC` (names `x0`, `x1`, ...).
    Fill(&'static [u8]),
    /// Become uid 1000, gid 1000 (no groups, no capabilities) working in `/d`.
    BecomeUser,
}

/// The tree, as root from `/` (umask 0) until [`Setup::BecomeUser`].
pub const SETUP: &[Setup] = &[
    Setup::Mkdir(b"/vault", 0o700),
    Setup::Create(b"/vault/keep", 0o600, b"precious"),
    Setup::Mkdir(b"/d", 0o755),
    Setup::Mkdir(b"/d/full", 0o755),
    Setup::Mount(b"/d/full", b"size=8k,nr_inodes=4,mode=0777"),
    Setup::Create(b"/d/full/big", 0o666, b""),
    Setup::Fill(b"/d/full/big"),
    Setup::Chown(b"/d", 1000, 1000),
    Setup::BecomeUser,
    Setup::Create(b"f", 0o644, b"0123456789"),
    Setup::Xattr(b"f", b"user.k", b"vvvv"),
    Setup::Mkdir(b"sub", 0o755),
    Setup::Create(b"sub/g", 0o644, b"g"),
    Setup::Symlink(b"f", b"l"),
    Setup::Symlink(b"loop", b"loop"),
];

/// The protected file and what it must still hold after the storm.
pub const KEEP: &[u8] = b"/vault/keep";
pub const KEEP_DATA: &[u8] = b"precious";
pub const KEEP_MODE: u32 = 0o100600;

/// Bad fd numbers: negative, never opened, past any limit.
const BAD_FDS: [i32; 4] = [-1, 700, 999, i32::MAX];
/// Paths that resolve to `/d/f` (following the link).
const FILE_PATHS: [&[u8]; 7] = [
    b"f",
    b"./f",
    b"sub/../f",
    b"/d/f",
    b"/d//./f",
    b"l",
    b"sub/./../l",
];
/// Paths that name `/d/f` without a symlink anywhere (for `O_NOFOLLOW`, `RESOLVE_*`).
const PLAIN_FILE_PATHS: [&[u8]; 3] = [b"f", b"./f", b"sub/../f"];
/// Paths that resolve to `/d/sub`.
const DIR_PATHS: [&[u8]; 5] = [b"sub", b"./sub", b"sub/", b"/d/sub", b"sub/../sub"];
/// Names that well-formed calls create, rename and remove.
const SCRATCH: [&[u8]; 4] = [b"s0", b"s1", b"s2", b"sub/s3"];
/// Special files (never opened: a FIFO would block the host).
const NODES: [&[u8]; 2] = [b"n0", b"n1"];
/// Symlink targets: never a directory, a FIFO or `/vault`.
const TARGETS: [&[u8]; 5] = [b"f", b"missing", b"s1", b"/d/f", b"sub/g"];
const FILE_MODES: [u32; 4] = [0o644, 0o600, 0o666, 0o640];
const DIR_MODES: [u32; 4] = [0o755, 0o700, 0o775, 0o777];
const NO_FD_SPACE: i64 = 1 << 20;
/// `makedev(1, 3)` in the kernel's `unsigned int` encoding (`/dev/null`).
const DEV_NULL: u64 = 0x0103;
const S_IFMT: u32 = 0o170000;
const S_IFREG: u32 = 0o100000;
const S_IFDIR: u32 = 0o040000;
const S_IFCHR: u32 = 0o020000;
const S_IFIFO: u32 = 0o010000;
const S_IFSOCK: u32 = 0o140000;
const F_OK: u32 = 0;
const R_OK: u32 = 4;
const W_OK: u32 = 2;
const X_OK: u32 = 1;
const SEEK_SET: u32 = 0;
const SEEK_CUR: u32 = 1;
const SEEK_END: u32 = 2;

use Errno as E;

/// Errnos a scratch call may meet depending on what earlier calls left there.
const STATE: &[Errno] = &[
    E::ENOENT,
    E::EEXIST,
    E::EISDIR,
    E::ENOTDIR,
    E::ENOTEMPTY,
    E::ELOOP,
    E::ENODATA,
];

fn long_name() -> Vec<u8> {
    let mut p = b"sub/".to_vec();
    p.extend(std::iter::repeat_n(b'a', uvfs::abi::NAME_MAX + 1));
    p
}

fn long_path() -> Vec<u8> {
    b"./".repeat(PATH_MAX / 2)
}

/// How a path argument is used: to name an existing object, a new one, or one to remove.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Use {
    Existing,
    Create,
    Remove,
}

/// A hostile field with its expected errno and stage.
struct Bad<T> {
    value: T,
    kind: Hostile,
    errno: Errno,
    stage: Stage,
}

fn bad<T>(value: T, kind: Hostile, errno: Errno, stage: Stage) -> Bad<T> {
    Bad {
        value,
        kind,
        errno,
        stage,
    }
}

/// The call generator.
pub struct Gen {
    r: Rng,
}

/// The seed both sides run.
pub const SEED: u64 = 0x5eed_ba0d_1b7e_0006;
/// Calls per storm.
pub const CALLS: usize = 30_000;

/// Percent of calls with a hostile field.
const HOSTILE_PERCENT: u64 = 60;

impl Gen {
    pub fn new(seed: u64) -> Gen {
        Gen { r: Rng::new(seed) }
    }

    fn bad_fd(&mut self) -> Bad<FdArg> {
        let n = self.r.pick(&BAD_FDS);
        bad(FdArg::Bad(n), Hostile::BadFd, E::EBADF, Stage::Fd)
    }

    /// A hostile path. Linux: `getname()` (NUL ends the string, `PATH_MAX`), then the walk
    /// (`link_path_walk()`: `may_lookup()` on `/vault`, `ENOTDIR` for `f/x`, `ELOOP` past
    /// `MAXSYMLINKS`, `ENAMETOOLONG` from the filesystem's `lookup` for a long component).
    fn bad_path(&mut self, u: Use) -> Bad<Vec<u8>> {
        match self.r.below(6) {
            0 => bad(b"f\0x".to_vec(), Hostile::Nul, E::EINVAL, Stage::Args),
            1 => bad(long_name(), Hostile::LongName, E::ENAMETOOLONG, Stage::Walk),
            2 => bad(long_path(), Hostile::LongPath, E::ENAMETOOLONG, Stage::Args),
            3 => bad(
                b"f/x".to_vec(),
                Hostile::SlashInName,
                E::ENOTDIR,
                Stage::Walk,
            ),
            4 => bad(b"loop/x".to_vec(), Hostile::Loop, E::ELOOP, Stage::Walk),
            _ => match u {
                // The walk needs search permission on /vault.
                Use::Existing => bad(KEEP.to_vec(), Hostile::Forbidden, E::EACCES, Stage::Walk),
                // The parent walk stops at /vault; `may_create()` refuses.
                Use::Create => bad(
                    b"/vault/hx".to_vec(),
                    Hostile::Forbidden,
                    E::EACCES,
                    Stage::Object,
                ),
                // `may_delete()` refuses.
                Use::Remove => bad(KEEP.to_vec(), Hostile::Forbidden, E::EACCES, Stage::Object),
            },
        }
    }

    /// A hostile directory fd for a relative path. Linux: `path_init()`.
    fn bad_dirfd(&mut self) -> Bad<DirArg> {
        if self.r.chance(60) {
            let b = self.bad_fd();
            bad(DirArg::Fd(b.value), b.kind, b.errno, b.stage)
        } else {
            let o = self.r.pick(&[Obj::FileRw, Obj::FilePath]);
            bad(
                DirArg::Fd(FdArg::Obj(o)),
                Hostile::WrongFd,
                E::ENOTDIR,
                Stage::Walk,
            )
        }
    }

    fn dir(&mut self) -> DirArg {
        match self.r.below(3) {
            0 => DirArg::Cwd,
            1 => DirArg::Fd(FdArg::Obj(Obj::Dir)),
            _ => DirArg::Fd(FdArg::Obj(Obj::DirPath)),
        }
    }

    fn file_path(&mut self) -> Vec<u8> {
        self.r.pick(&FILE_PATHS).to_vec()
    }

    fn plain_file_path(&mut self) -> Vec<u8> {
        self.r.pick(&PLAIN_FILE_PATHS).to_vec()
    }

    fn dir_path(&mut self) -> Vec<u8> {
        self.r.pick(&DIR_PATHS).to_vec()
    }

    fn scratch(&mut self) -> Vec<u8> {
        self.r.pick(&SCRATCH).to_vec()
    }

    /// An existing object's path: mostly `f`, sometimes `sub`.
    fn existing(&mut self) -> Vec<u8> {
        if self.r.chance(75) {
            self.file_path()
        } else {
            self.dir_path()
        }
    }

    /// `(dir, path)` for an existing object, with one hostile field if `h`: the path, or the
    /// directory fd of a relative path. Returns the hostile field's expectation.
    fn at_existing(&mut self, h: bool) -> (DirArg, Vec<u8>, Option<Bad<()>>) {
        self.at(h, Use::Existing, |g| g.existing())
    }

    fn at(
        &mut self,
        h: bool,
        u: Use,
        good: impl FnOnce(&mut Gen) -> Vec<u8>,
    ) -> (DirArg, Vec<u8>, Option<Bad<()>>) {
        if !h {
            let d = self.dir();
            return (d, good(self), None);
        }
        if self.r.chance(25) {
            let b = self.bad_dirfd();
            let path = match u {
                Use::Existing => b"f".to_vec(),
                Use::Create | Use::Remove => b"hx".to_vec(),
            };
            return (b.value, path, Some(bad((), b.kind, b.errno, b.stage)));
        }
        let d = self.dir();
        let b = self.bad_path(u);
        (d, b.value, Some(bad((), b.kind, b.errno, b.stage)))
    }

    fn fd_of(&mut self, good: &[Obj]) -> FdArg {
        FdArg::Obj(self.r.pick(good))
    }

    /// The next call: a well-formed one, or (60 %) one with a single hostile field.
    pub fn call(&mut self) -> Call {
        let h = self.r.chance(HOSTILE_PERCENT);
        let family = self.r.below(FAMILIES as u64);
        let c = self.family(family, h);
        // `chroot`, `mount` and `umount2` need a privilege the task lacks: well-formed, they
        // fail on that, counted as a `Privilege` hostile field.
        assert!(
            h || c.hostile.is_none() || c.hostile == Some(Hostile::Privilege),
            "a well-formed call has no hostile field: {c}"
        );
        assert_eq!(
            c.hostile.is_some(),
            matches!(c.expect, Expect::Fails(..)),
            "a call fails exactly when it has a hostile field: {c}"
        );
        c
    }
}

/// The calls of one generator, for `n` steps.
pub fn generate(seed: u64, n: usize) -> impl Iterator<Item = Call> {
    let mut g = Gen::new(seed);
    (0..n).map(move |_| g.call())
}

fn ok(op: Op) -> Call {
    Call {
        op,
        hostile: None,
        expect: Expect::Succeeds(&[]),
        exhaust_fds: false,
    }
}

fn ok_or_state(op: Op) -> Call {
    Call {
        op,
        hostile: None,
        expect: Expect::Succeeds(STATE),
        exhaust_fds: false,
    }
}

fn fails(op: Op, kind: Hostile, errno: Errno, stage: Stage) -> Call {
    Call {
        op,
        hostile: Some(kind),
        expect: Expect::Fails(errno, stage),
        exhaust_fds: kind == Hostile::NoFreeFd,
    }
}

fn from<T>(op: Op, b: Bad<T>) -> Call {
    fails(op, b.kind, b.errno, b.stage)
}

fn with(op: Op, b: Option<Bad<()>>) -> Call {
    match b {
        Some(b) => from(op, b),
        None => ok(op),
    }
}

mod driver;
mod families;
#[allow(unused_imports)] // Reason: only bad_input_host.rs names `Tally`.
pub use driver::{prepare, run, Exec, Tally};

pub mod on_uvfs;
