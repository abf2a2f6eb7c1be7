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

/// Where `lseek` goes: a number, or `@NAME`, the `d_off` that the last `getdents` or `listdir`
/// of this side returned for the entry NAME (CASES.md, "Directory offsets").
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Offset {
    /// A number passed as is.
    Raw(i64),
    /// `@NAME`: resume a listing after the entry NAME.
    AfterEntry(Vec<u8>),
}

/// How `task N fork|thread` makes task N from the current task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskStart {
    /// A new process: a copy of the fd table, credentials, cwd, root and umask (`fork()`;
    /// uvfs `Task::fork`).
    Fork,
    /// A new thread of the current task's process: the same fd table and (`CLONE_FS`) cwd,
    /// root and umask; its own copy of the credentials (uvfs `Task::clone_thread`).
    Thread,
}

/// The highest task number a case may use (`task 1` is the task every case starts in).
pub const MAX_TASKS: u32 = 8;

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
    /// `F_SETPIPE_SZ` with the size (the kernel takes it as an `unsigned int`).
    SetPipeSz(i64),
    /// `F_GETPIPE_SZ`.
    GetPipeSz,
    /// A record-lock command with its `struct flock`.
    Lock(LockCmd, FlockArg),
}

/// The record-lock commands of `fcntl`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockCmd {
    /// `F_GETLK`.
    GetLk,
    /// `F_SETLK`.
    SetLk,
    /// `F_SETLKW` (a case must not let it wait: the host would time out).
    SetLkW,
    /// `F_OFD_GETLK`.
    OfdGetLk,
    /// `F_OFD_SETLK`.
    OfdSetLk,
    /// `F_OFD_SETLKW` (as `SetLkW`).
    OfdSetLkW,
}

impl LockCmd {
    /// Every command with its name in the case language.
    pub const ALL: [(LockCmd, &'static str); 6] = [
        (LockCmd::GetLk, "F_GETLK"),
        (LockCmd::SetLk, "F_SETLK"),
        (LockCmd::SetLkW, "F_SETLKW"),
        (LockCmd::OfdGetLk, "F_OFD_GETLK"),
        (LockCmd::OfdSetLk, "F_OFD_SETLK"),
        (LockCmd::OfdSetLkW, "F_OFD_SETLKW"),
    ];

    /// The command's name.
    pub fn name(self) -> &'static str {
        LockCmd::ALL
            .iter()
            .find(|(c, _)| *c == self)
            .map(|(_, n)| *n)
            .expect("every command is listed")
    }

    /// True for `F_GETLK` and `F_OFD_GETLK`, which answer with a `struct flock`.
    pub fn is_get(self) -> bool {
        matches!(self, LockCmd::GetLk | LockCmd::OfdGetLk)
    }
}

/// A `struct flock` as a case writes it; each value reaches the call cast to its C type
/// (`l_type` and `l_whence` are `short`, `l_pid` an `int`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlockArg {
    /// `l_type`.
    pub l_type: i64,
    /// `l_whence`.
    pub whence: i64,
    /// `l_start`.
    pub start: i64,
    /// `l_len`.
    pub len: i64,
    /// `l_pid`.
    pub pid: i64,
}

/// A `struct epoll_event` as a case writes it: the events (cast to `u32`) and the data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EpollArg {
    /// `events`.
    pub events: i64,
    /// `data.u64`.
    pub data: u64,
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
    Preadv {
        fd: Fd,
        counts: Vec<usize>,
        off: i64,
    },
    Pwritev {
        fd: Fd,
        bufs: Vec<Vec<u8>>,
        off: i64,
    },
    Lseek {
        fd: Fd,
        off: Offset,
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
    Flock {
        fd: Fd,
        op: i64,
    },
    /// The calling task's process id (uvfs: `Task::lock_pid`), to name the holders in
    /// `F_GETLK` answers.
    Getpid,
    /// `pipe2(FLAGS)`: binds two names, the read end and the write end.
    Pipe2 {
        flags: i64,
    },
    /// `ioctl(FD, FIONREAD)`: the bytes a read could take.
    Fionread {
        fd: Fd,
    },
    /// `poll(FDS, N, TIMEOUT_MS)`: `fds[i]` asks for `events[i]` (the two have one length).
    Poll {
        fds: Vec<Fd>,
        events: Vec<i64>,
        timeout_ms: i64,
    },
    /// `epoll_create1(FLAGS)`.
    EpollCreate1 {
        flags: i64,
    },
    /// `epoll_ctl(EPFD, OP, FD, EVENT)`; `event == None` passes a null pointer. OP 1, 2, 3
    /// are `EPOLL_CTL_ADD`, `EPOLL_CTL_DEL`, `EPOLL_CTL_MOD`; other values reach the call as
    /// they are.
    EpollCtl {
        epfd: Fd,
        op: i64,
        fd: Fd,
        event: Option<EpollArg>,
    },
    /// `epoll_wait(EPFD, EVENTS, MAXEVENTS, TIMEOUT_MS)`.
    EpollWait {
        epfd: Fd,
        maxevents: i64,
        timeout_ms: i64,
    },
    /// `eventfd2(INITVAL, FLAGS)`.
    Eventfd2 {
        initval: i64,
        flags: i64,
    },
    /// `splice(FD_IN, OFF_IN, FD_OUT, OFF_OUT, LEN, FLAGS)`; an offset `None` is a null
    /// pointer. Result: the count and the offsets given, as the call left them.
    Splice {
        fd_in: Fd,
        off_in: Option<i64>,
        fd_out: Fd,
        off_out: Option<i64>,
        len: u64,
        flags: i64,
    },
    /// `tee(FD_IN, FD_OUT, LEN, FLAGS)`.
    Tee {
        fd_in: Fd,
        fd_out: Fd,
        len: u64,
        flags: i64,
    },
    /// `sendfile(OUT, IN, OFF, COUNT)`; `off` `None` is a null pointer. Result as `Splice`'s
    /// (the offset shown as `off_in`).
    Sendfile {
        out_fd: Fd,
        in_fd: Fd,
        off: Option<i64>,
        count: u64,
    },
    /// `inotify_init1(FLAGS)`: binds the instance's fd.
    InotifyInit1 {
        flags: i64,
    },
    /// `inotify_add_watch(FD, PATH, MASK)` (MASK cast to `u32`): the watch descriptor.
    InotifyAddWatch {
        fd: Fd,
        path: Vec<u8>,
        mask: i64,
    },
    /// `inotify_rm_watch(FD, WD)` (WD cast to `int`).
    InotifyRmWatch {
        fd: Fd,
        wd: i64,
    },
    /// One `read(FD, BUF, BUFSIZE)` of an inotify fd, its bytes decoded as
    /// `struct inotify_event`s (CASES.md, "inotify").
    InotifyRead {
        fd: Fd,
        bufsize: usize,
    },
    /// `fanotify_init(FLAGS, EVENT_F_FLAGS)` (both cast to `unsigned int`): binds the group's fd.
    FanotifyInit {
        flags: i64,
        event_f_flags: i64,
    },
    /// `fanotify_mark(FD, FLAGS, MASK, DIRFD, PATH)` (FLAGS cast to `unsigned int`, MASK to
    /// `u64`); PATH `None` is a null pointer.
    FanotifyMark {
        fd: Fd,
        flags: i64,
        mask: i64,
        dirfd: Fd,
        path: Option<Vec<u8>>,
    },
    /// One `read(FD, BUF, BUFSIZE)` of a fanotify fd, its bytes decoded as
    /// `struct fanotify_event_metadata`s; each event's fd is `fstat`ed, its `F_GETFL` taken and
    /// closed by the backend before the outcome is recorded, unless `keep` (CASES.md,
    /// "fanotify").
    FanotifyRead {
        fd: Fd,
        bufsize: usize,
        keep: bool,
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
    /// `statx(PATH, STATX_MNT_ID_UNIQUE)`, then `statmount` of that mount for
    /// `STATMOUNT_SB_BASIC | STATMOUNT_MNT_BASIC`: the superblock flags, the mount
    /// attributes and the propagation.
    Statmount {
        path: Vec<u8>,
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
    /// `task N`: act as task N from now on; `task N fork|thread`: make task N from the current
    /// task first.
    Task {
        id: u32,
        start: Option<TaskStart>,
    },
    /// The whole tree and every bound fd, observed as root (CASES.md, "Snapshots").
    Snapshot,
}

/// The fd arguments of `$op` (an `&Op` or an `&mut Op`: match ergonomics give references of
/// the same kind), in argument order.
macro_rules! fd_args_of {
    ($op:expr) => {
        match $op {
            Op::Openat { dirfd, .. }
            | Op::Openat2 { dirfd, .. }
            | Op::Mkdirat { dirfd, .. }
            | Op::Unlinkat { dirfd, .. }
            | Op::Readlinkat { dirfd, .. }
            | Op::Fstatat { dirfd, .. }
            | Op::Statx { dirfd, .. }
            | Op::Fchmodat { dirfd, .. }
            | Op::Fchownat { dirfd, .. }
            | Op::Utimensat { dirfd, .. }
            | Op::Faccessat2 { dirfd, .. } => vec![dirfd],
            Op::Close { fd }
            | Op::Read { fd, .. }
            | Op::Pread { fd, .. }
            | Op::Write { fd, .. }
            | Op::Pwrite { fd, .. }
            | Op::Readv { fd, .. }
            | Op::Writev { fd, .. }
            | Op::Preadv { fd, .. }
            | Op::Pwritev { fd, .. }
            | Op::Lseek { fd, .. }
            | Op::Ftruncate { fd, .. }
            | Op::Fallocate { fd, .. }
            | Op::Fsync { fd }
            | Op::Fdatasync { fd }
            | Op::Dup { fd }
            | Op::Fcntl { fd, .. }
            | Op::Flock { fd, .. }
            | Op::Fstat { fd }
            | Op::Fionread { fd }
            | Op::InotifyAddWatch { fd, .. }
            | Op::InotifyRmWatch { fd, .. }
            | Op::InotifyRead { fd, .. }
            | Op::FanotifyRead { fd, .. }
            | Op::Fchmod { fd, .. }
            | Op::Fchown { fd, .. }
            | Op::Getdents { fd, .. }
            | Op::Fchdir { fd }
            | Op::Fstatfs { fd } => vec![fd],
            Op::Dup2 { fd, newfd } | Op::Dup3 { fd, newfd, .. } => vec![fd, newfd],
            Op::EpollCtl { epfd, fd, .. } => vec![epfd, fd],
            Op::EpollWait { epfd, .. } => vec![epfd],
            Op::FanotifyMark { fd, dirfd, .. } => vec![fd, dirfd],
            Op::Poll { fds, .. } => fds.into_iter().collect(),
            Op::Splice { fd_in, fd_out, .. } | Op::Tee { fd_in, fd_out, .. } => {
                vec![fd_in, fd_out]
            }
            Op::Sendfile { out_fd, in_fd, .. } => vec![out_fd, in_fd],
            Op::Renameat2 {
                olddirfd, newdirfd, ..
            }
            | Op::Linkat {
                olddirfd, newdirfd, ..
            } => vec![olddirfd, newdirfd],
            Op::Setxattr { target: t, .. }
            | Op::Getxattr { target: t, .. }
            | Op::Listxattr { target: t, .. }
            | Op::Removexattr { target: t, .. } => match t {
                XattrTarget::File(fd) => vec![fd],
                _ => Vec::new(),
            },
            Op::Open { .. }
            | Op::Truncate { .. }
            | Op::Mknod { .. }
            | Op::Symlink { .. }
            | Op::Listdir { .. }
            | Op::Chdir { .. }
            | Op::Getcwd { .. }
            | Op::Chroot { .. }
            | Op::Umask { .. }
            | Op::Statfs { .. }
            | Op::Statmount { .. }
            | Op::Mount { .. }
            | Op::Umount2 { .. }
            | Op::SetrlimitNofile { .. }
            | Op::As { .. }
            | Op::Cred(_)
            | Op::Task { .. }
            | Op::Getpid
            | Op::Pipe2 { .. }
            | Op::EpollCreate1 { .. }
            | Op::Eventfd2 { .. }
            | Op::InotifyInit1 { .. }
            | Op::FanotifyInit { .. }
            | Op::Snapshot => Vec::new(),
        }
    };
}

impl Op {
    /// Every fd argument of the op, in argument order.
    pub fn fd_args(&self) -> Vec<&Fd> {
        fd_args_of!(self)
    }

    /// Every fd argument of the op, in argument order, to change.
    pub fn fd_args_mut(&mut self) -> Vec<&mut Fd> {
        fd_args_of!(self)
    }

    /// The target of a mount that makes a new filesystem instance: not a bind, move, remount
    /// or propagation change (the order `path_mount()` tests the flags in).
    pub fn new_fs_target(&self) -> Option<&[u8]> {
        const MS_REMOUNT: u64 = 32;
        const MS_BIND: u64 = 4096;
        const MS_MOVE: u64 = 8192;
        /// `MS_UNBINDABLE | MS_PRIVATE | MS_SLAVE | MS_SHARED`.
        const MS_PROPAGATION: u64 = (1 << 17) | (1 << 18) | (1 << 19) | (1 << 20);
        const NOT_NEW: u64 = MS_REMOUNT | MS_BIND | MS_MOVE | MS_PROPAGATION;
        match self {
            Op::Mount {
                target,
                fstype: Some(_),
                flags,
                ..
            } if flags & NOT_NEW == 0 => Some(target),
            _ => None,
        }
    }

    /// The `$NAME` variables the op reads.
    pub fn fd_vars(&self) -> Vec<&str> {
        self.fd_args()
            .into_iter()
            .filter_map(|f| match f {
                Fd::Var(name) => Some(name.as_str()),
                Fd::Raw(_) => None,
            })
            .collect()
    }
}
