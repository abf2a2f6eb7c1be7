//! Symbolic names of the case language: flag and constant names (x86-64 Linux values) and
//! errno names. Kept here, independent of uvfs's own ABI module, so that a wrong constant in
//! uvfs shows up as a divergence instead of being shared by both sides.

/// Every symbolic constant a case may use in a numeric argument (CASES.md, "Flags").
const CONSTANTS: &[(&str, i64)] = &[
    // open(2)
    ("O_RDONLY", 0),
    ("O_WRONLY", 0o1),
    ("O_RDWR", 0o2),
    ("O_ACCMODE", 0o3),
    ("O_CREAT", 0o100),
    ("O_EXCL", 0o200),
    ("O_NOCTTY", 0o400),
    ("O_TRUNC", 0o1000),
    ("O_APPEND", 0o2000),
    ("O_NONBLOCK", 0o4000),
    ("O_NDELAY", 0o4000),
    ("O_DSYNC", 0o10000),
    ("O_ASYNC", 0o20000),
    ("O_DIRECT", 0o40000),
    ("O_LARGEFILE", 0o100000),
    ("O_DIRECTORY", 0o200000),
    ("O_NOFOLLOW", 0o400000),
    ("O_NOATIME", 0o1000000),
    ("O_CLOEXEC", 0o2000000),
    ("O_SYNC", 0o4010000),
    ("O_RSYNC", 0o4010000),
    ("O_PATH", 0o10000000),
    ("O_TMPFILE", 0o20200000),
    // *at(2)
    ("AT_FDCWD", -100),
    ("AT_SYMLINK_NOFOLLOW", 0x100),
    ("AT_REMOVEDIR", 0x200),
    ("AT_EACCESS", 0x200),
    ("AT_SYMLINK_FOLLOW", 0x400),
    ("AT_NO_AUTOMOUNT", 0x800),
    ("AT_EMPTY_PATH", 0x1000),
    ("AT_STATX_SYNC_AS_STAT", 0),
    ("AT_STATX_FORCE_SYNC", 0x2000),
    ("AT_STATX_DONT_SYNC", 0x4000),
    ("AT_RECURSIVE", 0x8000),
    // renameat2(2)
    ("RENAME_NOREPLACE", 1),
    ("RENAME_EXCHANGE", 2),
    ("RENAME_WHITEOUT", 4),
    // openat2(2)
    ("RESOLVE_NO_XDEV", 0x01),
    ("RESOLVE_NO_MAGICLINKS", 0x02),
    ("RESOLVE_NO_SYMLINKS", 0x04),
    ("RESOLVE_BENEATH", 0x08),
    ("RESOLVE_IN_ROOT", 0x10),
    ("RESOLVE_CACHED", 0x20),
    // fallocate(2)
    ("FALLOC_FL_KEEP_SIZE", 0x01),
    ("FALLOC_FL_PUNCH_HOLE", 0x02),
    ("FALLOC_FL_NO_HIDE_STALE", 0x04),
    ("FALLOC_FL_COLLAPSE_RANGE", 0x08),
    ("FALLOC_FL_ZERO_RANGE", 0x10),
    ("FALLOC_FL_INSERT_RANGE", 0x20),
    ("FALLOC_FL_UNSHARE_RANGE", 0x40),
    // mount(2), umount2(2)
    ("MS_RDONLY", 1),
    ("MS_NOSUID", 2),
    ("MS_NODEV", 4),
    ("MS_NOEXEC", 8),
    ("MS_SYNCHRONOUS", 16),
    ("MS_REMOUNT", 32),
    ("MS_MANDLOCK", 64),
    ("MS_DIRSYNC", 128),
    ("MS_NOSYMFOLLOW", 256),
    ("MS_NOATIME", 1024),
    ("MS_NODIRATIME", 2048),
    ("MS_BIND", 4096),
    ("MS_MOVE", 8192),
    ("MS_REC", 16384),
    ("MS_SILENT", 32768),
    ("MS_POSIXACL", 1 << 16),
    ("MS_UNBINDABLE", 1 << 17),
    ("MS_PRIVATE", 1 << 18),
    ("MS_SLAVE", 1 << 19),
    ("MS_SHARED", 1 << 20),
    ("MS_RELATIME", 1 << 21),
    ("MS_STRICTATIME", 1 << 24),
    ("MS_LAZYTIME", 1 << 25),
    ("MNT_FORCE", 1),
    ("MNT_DETACH", 2),
    ("MNT_EXPIRE", 4),
    ("UMOUNT_NOFOLLOW", 8),
    // xattr(7)
    ("XATTR_CREATE", 1),
    ("XATTR_REPLACE", 2),
    // inode(7)
    ("S_IFMT", 0o170000),
    ("S_IFSOCK", 0o140000),
    ("S_IFLNK", 0o120000),
    ("S_IFREG", 0o100000),
    ("S_IFBLK", 0o060000),
    ("S_IFDIR", 0o040000),
    ("S_IFCHR", 0o020000),
    ("S_IFIFO", 0o010000),
    ("S_ISUID", 0o4000),
    ("S_ISGID", 0o2000),
    ("S_ISVTX", 0o1000),
    // access(2)
    ("F_OK", 0),
    ("X_OK", 1),
    ("W_OK", 2),
    ("R_OK", 4),
    // statx(2)
    ("STATX_TYPE", 0x1),
    ("STATX_MODE", 0x2),
    ("STATX_NLINK", 0x4),
    ("STATX_UID", 0x8),
    ("STATX_GID", 0x10),
    ("STATX_ATIME", 0x20),
    ("STATX_MTIME", 0x40),
    ("STATX_CTIME", 0x80),
    ("STATX_INO", 0x100),
    ("STATX_SIZE", 0x200),
    ("STATX_BLOCKS", 0x400),
    ("STATX_BASIC_STATS", 0x7ff),
    ("STATX_BTIME", 0x800),
    ("STATX_ALL", 0xfff),
    ("STATX_MNT_ID", 0x1000),
    ("STATX_DIOALIGN", 0x2000),
    ("STATX_MNT_ID_UNIQUE", 0x4000),
    ("STATX__RESERVED", 0x8000_0000),
    // lseek(2)
    ("SEEK_SET", 0),
    ("SEEK_CUR", 1),
    ("SEEK_END", 2),
    ("SEEK_DATA", 3),
    ("SEEK_HOLE", 4),
    // fcntl(2)
    ("FD_CLOEXEC", 1),
    ("F_RDLCK", 0),
    ("F_WRLCK", 1),
    ("F_UNLCK", 2),
    // flock(2)
    ("LOCK_SH", 1),
    ("LOCK_EX", 2),
    ("LOCK_NB", 4),
    ("LOCK_UN", 8),
    ("LOCK_MAND", 32),
    // poll(2)
    ("POLLIN", 0x001),
    ("POLLPRI", 0x002),
    ("POLLOUT", 0x004),
    ("POLLERR", 0x008),
    ("POLLHUP", 0x010),
    ("POLLNVAL", 0x020),
    ("POLLRDNORM", 0x040),
    ("POLLRDBAND", 0x080),
    ("POLLWRNORM", 0x100),
    ("POLLWRBAND", 0x200),
    ("POLLMSG", 0x400),
    ("POLLRDHUP", 0x2000),
    // epoll(7)
    ("EPOLLIN", 0x001),
    ("EPOLLPRI", 0x002),
    ("EPOLLOUT", 0x004),
    ("EPOLLERR", 0x008),
    ("EPOLLHUP", 0x010),
    ("EPOLLNVAL", 0x020),
    ("EPOLLRDNORM", 0x040),
    ("EPOLLRDBAND", 0x080),
    ("EPOLLWRNORM", 0x100),
    ("EPOLLWRBAND", 0x200),
    ("EPOLLMSG", 0x400),
    ("EPOLLRDHUP", 0x2000),
    ("EPOLLEXCLUSIVE", 1 << 28),
    ("EPOLLWAKEUP", 1 << 29),
    ("EPOLLONESHOT", 1 << 30),
    ("EPOLLET", 1 << 31),
    ("EPOLL_CTL_ADD", 1),
    ("EPOLL_CTL_DEL", 2),
    ("EPOLL_CTL_MOD", 3),
    ("EPOLL_CLOEXEC", 0o2000000),
    // eventfd(2)
    ("EFD_SEMAPHORE", 1),
    ("EFD_NONBLOCK", 0o4000),
    ("EFD_CLOEXEC", 0o2000000),
    // splice(2)
    ("SPLICE_F_MOVE", 1),
    ("SPLICE_F_NONBLOCK", 2),
    ("SPLICE_F_MORE", 4),
    ("SPLICE_F_GIFT", 8),
    // inotify(7): event bits, inotify_add_watch(2)'s flags, inotify_init1(2)'s flags
    ("IN_ACCESS", 0x1),
    ("IN_MODIFY", 0x2),
    ("IN_ATTRIB", 0x4),
    ("IN_CLOSE_WRITE", 0x8),
    ("IN_CLOSE_NOWRITE", 0x10),
    ("IN_CLOSE", 0x18),
    ("IN_OPEN", 0x20),
    ("IN_MOVED_FROM", 0x40),
    ("IN_MOVED_TO", 0x80),
    ("IN_MOVE", 0xc0),
    ("IN_CREATE", 0x100),
    ("IN_DELETE", 0x200),
    ("IN_DELETE_SELF", 0x400),
    ("IN_MOVE_SELF", 0x800),
    ("IN_ALL_EVENTS", 0xfff),
    ("IN_UNMOUNT", 0x2000),
    ("IN_Q_OVERFLOW", 0x4000),
    ("IN_IGNORED", 0x8000),
    ("IN_ONLYDIR", 0x0100_0000),
    ("IN_DONT_FOLLOW", 0x0200_0000),
    ("IN_EXCL_UNLINK", 0x0400_0000),
    ("IN_MASK_CREATE", 0x1000_0000),
    ("IN_MASK_ADD", 0x2000_0000),
    ("IN_ISDIR", 0x4000_0000),
    ("IN_ONESHOT", 0x8000_0000),
    ("IN_NONBLOCK", 0o4000),
    ("IN_CLOEXEC", 0o2000000),
    // fanotify(7): event bits, fanotify_mark(2)'s flags, fanotify_init(2)'s flags
    ("FAN_ACCESS", 0x1),
    ("FAN_MODIFY", 0x2),
    ("FAN_ATTRIB", 0x4),
    ("FAN_CLOSE_WRITE", 0x8),
    ("FAN_CLOSE_NOWRITE", 0x10),
    ("FAN_CLOSE", 0x18),
    ("FAN_OPEN", 0x20),
    ("FAN_MOVED_FROM", 0x40),
    ("FAN_MOVED_TO", 0x80),
    ("FAN_CREATE", 0x100),
    ("FAN_DELETE", 0x200),
    ("FAN_DELETE_SELF", 0x400),
    ("FAN_MOVE_SELF", 0x800),
    ("FAN_OPEN_EXEC", 0x1000),
    ("FAN_Q_OVERFLOW", 0x4000),
    ("FAN_FS_ERROR", 0x8000),
    ("FAN_OPEN_PERM", 0x1_0000),
    ("FAN_ACCESS_PERM", 0x2_0000),
    ("FAN_OPEN_EXEC_PERM", 0x4_0000),
    ("FAN_PRE_ACCESS", 0x10_0000),
    ("FAN_EVENT_ON_CHILD", 0x0800_0000),
    ("FAN_RENAME", 0x1000_0000),
    ("FAN_ONDIR", 0x4000_0000),
    ("FAN_MARK_INODE", 0),
    ("FAN_MARK_ADD", 0x1),
    ("FAN_MARK_REMOVE", 0x2),
    ("FAN_MARK_DONT_FOLLOW", 0x4),
    ("FAN_MARK_ONLYDIR", 0x8),
    ("FAN_MARK_MOUNT", 0x10),
    ("FAN_MARK_IGNORED_MASK", 0x20),
    ("FAN_MARK_IGNORED_SURV_MODIFY", 0x40),
    ("FAN_MARK_FLUSH", 0x80),
    ("FAN_MARK_FILESYSTEM", 0x100),
    ("FAN_MARK_EVICTABLE", 0x200),
    ("FAN_MARK_IGNORE", 0x400),
    ("FAN_CLASS_NOTIF", 0),
    ("FAN_CLOEXEC", 0x1),
    ("FAN_NONBLOCK", 0x2),
    ("FAN_CLASS_CONTENT", 0x4),
    ("FAN_CLASS_PRE_CONTENT", 0x8),
    ("FAN_UNLIMITED_QUEUE", 0x10),
    ("FAN_UNLIMITED_MARKS", 0x20),
    ("FAN_ENABLE_AUDIT", 0x40),
    ("FAN_REPORT_PIDFD", 0x80),
    ("FAN_REPORT_TID", 0x100),
    ("FAN_REPORT_FID", 0x200),
    ("FAN_REPORT_DIR_FID", 0x400),
    ("FAN_REPORT_NAME", 0x800),
];

/// The value of a symbolic constant, such as `O_CREAT`.
pub fn constant(name: &str) -> Option<i64> {
    CONSTANTS.iter().find(|(n, _)| *n == name).map(|&(_, v)| v)
}

/// What a numeric argument is, for printing it back with symbolic names ([`flags_text`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flags {
    /// `open`'s flags: the access mode by name (`O_RDONLY` for 0), then `O_*` bits.
    Open,
    /// `O_*` bits without an access mode (`dup3`, `F_SETFL`); `0` for none.
    OpenBits,
    /// Permission bits, in octal.
    Mode,
    /// A file type (`S_IF*`) and permission bits in octal (`mknod`).
    FileMode,
    /// `RESOLVE_*`.
    Resolve,
    /// `FALLOC_FL_*`.
    Falloc,
    /// `AT_*` (0x200 as `AT_REMOVEDIR`).
    At,
    /// `AT_*` of `faccessat2` (0x200 as `AT_EACCESS`).
    AtAccess,
    /// `RENAME_*`.
    Rename,
    /// `STATX_*`.
    StatxMask,
    /// `R_OK`, `W_OK`, `X_OK`; `F_OK` for 0.
    Access,
    /// `XATTR_*`.
    Xattr,
    /// `MS_*`.
    Mount,
    /// `MNT_*`, `UMOUNT_NOFOLLOW`.
    Umount,
    /// One `SEEK_*` value.
    Whence,
    /// `FD_CLOEXEC`.
    FdFlags,
    /// One `F_RDLCK`/`F_WRLCK`/`F_UNLCK` value.
    LockType,
    /// `LOCK_*` of `flock(2)`.
    Flock,
    /// `POLL*` events.
    Poll,
    /// `EPOLL*` events and input flags.
    Epoll,
    /// One `EPOLL_CTL_*` value.
    EpollOp,
    /// `EPOLL_CLOEXEC`.
    EpollCreate,
    /// `EFD_*`.
    Efd,
    /// `SPLICE_F_*`.
    Splice,
    /// `IN_*` event bits and `inotify_add_watch` flags, one name per bit.
    Inotify,
    /// `IN_NONBLOCK`, `IN_CLOEXEC` of `inotify_init1`.
    InotifyInit,
    /// `FAN_*` event bits, one name per bit.
    Fanotify,
    /// `FAN_MARK_*` of `fanotify_mark`.
    FanotifyMark,
    /// `FAN_*` flags of `fanotify_init`.
    FanotifyInit,
}

const OPEN_BITS: &[&str] = &[
    "O_TMPFILE",
    "O_SYNC",
    "O_CREAT",
    "O_EXCL",
    "O_NOCTTY",
    "O_TRUNC",
    "O_APPEND",
    "O_NONBLOCK",
    "O_DSYNC",
    "O_ASYNC",
    "O_DIRECT",
    "O_LARGEFILE",
    "O_DIRECTORY",
    "O_NOFOLLOW",
    "O_NOATIME",
    "O_CLOEXEC",
    "O_PATH",
];
const AT_BITS: &[&str] = &[
    "AT_SYMLINK_NOFOLLOW",
    "AT_REMOVEDIR",
    "AT_SYMLINK_FOLLOW",
    "AT_NO_AUTOMOUNT",
    "AT_EMPTY_PATH",
    "AT_STATX_FORCE_SYNC",
    "AT_STATX_DONT_SYNC",
    "AT_RECURSIVE",
];
const AT_ACCESS_BITS: &[&str] = &[
    "AT_SYMLINK_NOFOLLOW",
    "AT_EACCESS",
    "AT_SYMLINK_FOLLOW",
    "AT_NO_AUTOMOUNT",
    "AT_EMPTY_PATH",
];
const RESOLVE_BITS: &[&str] = &[
    "RESOLVE_NO_XDEV",
    "RESOLVE_NO_MAGICLINKS",
    "RESOLVE_NO_SYMLINKS",
    "RESOLVE_BENEATH",
    "RESOLVE_IN_ROOT",
    "RESOLVE_CACHED",
];
const FALLOC_BITS: &[&str] = &[
    "FALLOC_FL_KEEP_SIZE",
    "FALLOC_FL_PUNCH_HOLE",
    "FALLOC_FL_NO_HIDE_STALE",
    "FALLOC_FL_COLLAPSE_RANGE",
    "FALLOC_FL_ZERO_RANGE",
    "FALLOC_FL_INSERT_RANGE",
    "FALLOC_FL_UNSHARE_RANGE",
];
const RENAME_BITS: &[&str] = &["RENAME_NOREPLACE", "RENAME_EXCHANGE", "RENAME_WHITEOUT"];
const STATX_BITS: &[&str] = &[
    "STATX_BASIC_STATS",
    "STATX_TYPE",
    "STATX_MODE",
    "STATX_NLINK",
    "STATX_UID",
    "STATX_GID",
    "STATX_ATIME",
    "STATX_MTIME",
    "STATX_CTIME",
    "STATX_INO",
    "STATX_SIZE",
    "STATX_BLOCKS",
    "STATX_BTIME",
    "STATX_MNT_ID",
    "STATX_DIOALIGN",
    "STATX_MNT_ID_UNIQUE",
    "STATX__RESERVED",
];
const ACCESS_BITS: &[&str] = &["R_OK", "W_OK", "X_OK"];
const XATTR_BITS: &[&str] = &["XATTR_CREATE", "XATTR_REPLACE"];
const MOUNT_BITS: &[&str] = &[
    "MS_RDONLY",
    "MS_NOSUID",
    "MS_NODEV",
    "MS_NOEXEC",
    "MS_SYNCHRONOUS",
    "MS_REMOUNT",
    "MS_MANDLOCK",
    "MS_DIRSYNC",
    "MS_NOSYMFOLLOW",
    "MS_NOATIME",
    "MS_NODIRATIME",
    "MS_BIND",
    "MS_MOVE",
    "MS_REC",
    "MS_SILENT",
    "MS_POSIXACL",
    "MS_UNBINDABLE",
    "MS_PRIVATE",
    "MS_SLAVE",
    "MS_SHARED",
    "MS_RELATIME",
    "MS_STRICTATIME",
    "MS_LAZYTIME",
];
const UMOUNT_BITS: &[&str] = &["MNT_FORCE", "MNT_DETACH", "MNT_EXPIRE", "UMOUNT_NOFOLLOW"];
const FILE_TYPES: &[&str] = &[
    "S_IFSOCK", "S_IFLNK", "S_IFREG", "S_IFBLK", "S_IFDIR", "S_IFCHR", "S_IFIFO",
];
const WHENCES: &[&str] = &["SEEK_SET", "SEEK_CUR", "SEEK_END", "SEEK_DATA", "SEEK_HOLE"];
const LOCK_TYPES: &[&str] = &["F_RDLCK", "F_WRLCK", "F_UNLCK"];
const FLOCK_BITS: &[&str] = &["LOCK_SH", "LOCK_EX", "LOCK_NB", "LOCK_UN", "LOCK_MAND"];
const POLL_BITS: &[&str] = &[
    "POLLIN",
    "POLLPRI",
    "POLLOUT",
    "POLLERR",
    "POLLHUP",
    "POLLNVAL",
    "POLLRDNORM",
    "POLLRDBAND",
    "POLLWRNORM",
    "POLLWRBAND",
    "POLLMSG",
    "POLLRDHUP",
];
const EPOLL_BITS: &[&str] = &[
    "EPOLLIN",
    "EPOLLPRI",
    "EPOLLOUT",
    "EPOLLERR",
    "EPOLLHUP",
    "EPOLLNVAL",
    "EPOLLRDNORM",
    "EPOLLRDBAND",
    "EPOLLWRNORM",
    "EPOLLWRBAND",
    "EPOLLMSG",
    "EPOLLRDHUP",
    "EPOLLEXCLUSIVE",
    "EPOLLWAKEUP",
    "EPOLLONESHOT",
    "EPOLLET",
];
const EPOLL_OPS: &[&str] = &["EPOLL_CTL_ADD", "EPOLL_CTL_DEL", "EPOLL_CTL_MOD"];
const EFD_BITS: &[&str] = &["EFD_SEMAPHORE", "EFD_NONBLOCK", "EFD_CLOEXEC"];
const SPLICE_BITS: &[&str] = &[
    "SPLICE_F_MOVE",
    "SPLICE_F_NONBLOCK",
    "SPLICE_F_MORE",
    "SPLICE_F_GIFT",
];
/// One name per bit, in bit order (`IN_CLOSE`, `IN_MOVE` and `IN_ALL_EVENTS` are read but
/// never printed, so an event shows exactly the bits it has).
const INOTIFY_BITS: &[&str] = &[
    "IN_ACCESS",
    "IN_MODIFY",
    "IN_ATTRIB",
    "IN_CLOSE_WRITE",
    "IN_CLOSE_NOWRITE",
    "IN_OPEN",
    "IN_MOVED_FROM",
    "IN_MOVED_TO",
    "IN_CREATE",
    "IN_DELETE",
    "IN_DELETE_SELF",
    "IN_MOVE_SELF",
    "IN_UNMOUNT",
    "IN_Q_OVERFLOW",
    "IN_IGNORED",
    "IN_ONLYDIR",
    "IN_DONT_FOLLOW",
    "IN_EXCL_UNLINK",
    "IN_MASK_CREATE",
    "IN_MASK_ADD",
    "IN_ISDIR",
    "IN_ONESHOT",
];
const INOTIFY_INIT_BITS: &[&str] = &["IN_NONBLOCK", "IN_CLOEXEC"];
/// One name per bit, in bit order (`FAN_CLOSE` is read but never printed).
const FANOTIFY_BITS: &[&str] = &[
    "FAN_ACCESS",
    "FAN_MODIFY",
    "FAN_ATTRIB",
    "FAN_CLOSE_WRITE",
    "FAN_CLOSE_NOWRITE",
    "FAN_OPEN",
    "FAN_MOVED_FROM",
    "FAN_MOVED_TO",
    "FAN_CREATE",
    "FAN_DELETE",
    "FAN_DELETE_SELF",
    "FAN_MOVE_SELF",
    "FAN_OPEN_EXEC",
    "FAN_Q_OVERFLOW",
    "FAN_FS_ERROR",
    "FAN_OPEN_PERM",
    "FAN_ACCESS_PERM",
    "FAN_OPEN_EXEC_PERM",
    "FAN_PRE_ACCESS",
    "FAN_EVENT_ON_CHILD",
    "FAN_RENAME",
    "FAN_ONDIR",
];
const FANOTIFY_MARK_BITS: &[&str] = &[
    "FAN_MARK_ADD",
    "FAN_MARK_REMOVE",
    "FAN_MARK_DONT_FOLLOW",
    "FAN_MARK_ONLYDIR",
    "FAN_MARK_MOUNT",
    "FAN_MARK_IGNORED_MASK",
    "FAN_MARK_IGNORED_SURV_MODIFY",
    "FAN_MARK_FLUSH",
    "FAN_MARK_FILESYSTEM",
    "FAN_MARK_EVICTABLE",
    "FAN_MARK_IGNORE",
];
const FANOTIFY_INIT_BITS: &[&str] = &[
    "FAN_CLOEXEC",
    "FAN_NONBLOCK",
    "FAN_CLASS_CONTENT",
    "FAN_CLASS_PRE_CONTENT",
    "FAN_UNLIMITED_QUEUE",
    "FAN_UNLIMITED_MARKS",
    "FAN_ENABLE_AUDIT",
    "FAN_REPORT_PIDFD",
    "FAN_REPORT_TID",
    "FAN_REPORT_FID",
    "FAN_REPORT_DIR_FID",
    "FAN_REPORT_NAME",
];
const S_IFMT: i64 = 0o170000;
const O_ACCMODE: i64 = 0o3;

fn value_of(name: &str) -> i64 {
    constant(name).expect("every printed name is in CONSTANTS")
}

/// `v` as `NAME|NAME|0xREST`, taking each name of `names` in order whose bits are all still
/// set; `None` if nothing is left to print.
fn bits(names: &[&str], v: i64, out: &mut Vec<String>) {
    let mut rest = v;
    for &n in names {
        let b = value_of(n);
        if b != 0 && rest & b == b {
            out.push(n.to_string());
            rest &= !b;
        }
    }
    if rest != 0 {
        out.push(format!("{rest:#x}"));
    }
}

/// `v` printed for an argument of kind `kind`: symbolic names where they cover the value, the
/// rest as a number; the case parser reads the text back as `v` (negative values print as
/// plain decimal numbers).
pub fn flags_text(kind: Flags, v: i64) -> String {
    if v < 0 {
        return v.to_string();
    }
    let octal = |m: i64| {
        if m == 0 {
            "0".to_string()
        } else {
            format!("0{m:o}")
        }
    };
    let mut out = Vec::new();
    let list: &[&str] = match kind {
        Flags::Mode => return octal(v),
        Flags::FileMode => {
            let t = v & S_IFMT;
            match FILE_TYPES.iter().find(|&&n| value_of(n) == t) {
                Some(n) if v & !S_IFMT == 0 => return n.to_string(),
                Some(n) => return format!("{n}|{}", octal(v & !S_IFMT)),
                None => return octal(v),
            }
        }
        Flags::LockType => {
            return LOCK_TYPES
                .iter()
                .find(|&&n| value_of(n) == v)
                .map_or_else(|| v.to_string(), |n| n.to_string())
        }
        Flags::EpollOp => {
            return EPOLL_OPS
                .iter()
                .find(|&&n| value_of(n) == v)
                .map_or_else(|| v.to_string(), |n| n.to_string())
        }
        Flags::Whence => {
            return WHENCES
                .iter()
                .find(|&&n| value_of(n) == v)
                .map_or_else(|| v.to_string(), |n| n.to_string())
        }
        Flags::Open => {
            out.push(
                ["O_RDONLY", "O_WRONLY", "O_RDWR", "O_ACCMODE"][(v & O_ACCMODE) as usize]
                    .to_string(),
            );
            bits(OPEN_BITS, v & !O_ACCMODE, &mut out);
            if out.len() > 1 && v & O_ACCMODE == 0 {
                out.remove(0);
            }
            return out.join("|");
        }
        Flags::Access if v == 0 => return "F_OK".to_string(),
        Flags::OpenBits => OPEN_BITS,
        Flags::Resolve => RESOLVE_BITS,
        Flags::Falloc => FALLOC_BITS,
        Flags::At => AT_BITS,
        Flags::AtAccess => AT_ACCESS_BITS,
        Flags::Rename => RENAME_BITS,
        Flags::StatxMask => STATX_BITS,
        Flags::Access => ACCESS_BITS,
        Flags::Xattr => XATTR_BITS,
        Flags::Mount => MOUNT_BITS,
        Flags::Umount => UMOUNT_BITS,
        Flags::FdFlags => &["FD_CLOEXEC"],
        Flags::Flock => FLOCK_BITS,
        Flags::Poll => POLL_BITS,
        Flags::Epoll => EPOLL_BITS,
        Flags::EpollCreate => &["EPOLL_CLOEXEC"],
        Flags::Efd => EFD_BITS,
        Flags::Splice => SPLICE_BITS,
        Flags::Inotify => INOTIFY_BITS,
        Flags::InotifyInit => INOTIFY_INIT_BITS,
        Flags::Fanotify => FANOTIFY_BITS,
        Flags::FanotifyMark => FANOTIFY_MARK_BITS,
        Flags::FanotifyInit => FANOTIFY_INIT_BITS,
    };
    bits(list, v, &mut out);
    if out.is_empty() {
        "0".to_string()
    } else {
        out.join("|")
    }
}

macro_rules! errno_names {
    ($($name:ident),* $(,)?) => {
        /// The symbolic name of a Linux errno number, such as `"ENOENT"`.
        pub fn errno_name(errno: i32) -> Option<&'static str> {
            match errno {
                $(libc::$name => Some(stringify!($name)),)*
                _ => None,
            }
        }
    };
}

errno_names!(
    EPERM,
    ENOENT,
    ESRCH,
    EINTR,
    EIO,
    ENXIO,
    E2BIG,
    ENOEXEC,
    EBADF,
    ECHILD,
    EAGAIN,
    ENOMEM,
    EACCES,
    EFAULT,
    ENOTBLK,
    EBUSY,
    EEXIST,
    EXDEV,
    ENODEV,
    ENOTDIR,
    EISDIR,
    EINVAL,
    ENFILE,
    EMFILE,
    ENOTTY,
    ETXTBSY,
    EFBIG,
    ENOSPC,
    ESPIPE,
    EROFS,
    EMLINK,
    EPIPE,
    EDOM,
    ERANGE,
    EDEADLK,
    ENAMETOOLONG,
    ENOLCK,
    ENOSYS,
    ENOTEMPTY,
    ELOOP,
    ENOMSG,
    EIDRM,
    ENODATA,
    ENOLINK,
    EPROTO,
    EBADMSG,
    EOVERFLOW,
    EILSEQ,
    EUSERS,
    ENOTSOCK,
    EOPNOTSUPP,
    EPROTONOSUPPORT,
    EADDRINUSE,
    ENOBUFS,
    ETIMEDOUT,
    ESTALE,
    EDQUOT,
    ECANCELED,
    EOWNERDEAD,
    ENOTRECOVERABLE,
);

/// Errno shown as its name, or `errno N` for a number without one.
pub fn errno_display(errno: i32) -> String {
    match errno_name(errno) {
        Some(n) => n.to_string(),
        None => format!("errno {errno}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constants_resolve_by_name() {
        assert_eq!(constant("O_CREAT"), Some(0o100));
        assert_eq!(constant("RESOLVE_IN_ROOT"), Some(0x10));
        assert_eq!(constant("O_NOPE"), None);
    }

    #[test]
    fn flag_text_reads_back_as_the_value() {
        use crate::op::value;
        let kinds = [
            Flags::Open,
            Flags::OpenBits,
            Flags::Mode,
            Flags::FileMode,
            Flags::Resolve,
            Flags::Falloc,
            Flags::At,
            Flags::AtAccess,
            Flags::Rename,
            Flags::StatxMask,
            Flags::Access,
            Flags::Xattr,
            Flags::Mount,
            Flags::Umount,
            Flags::Whence,
            Flags::FdFlags,
            Flags::Poll,
            Flags::Epoll,
            Flags::EpollOp,
            Flags::EpollCreate,
            Flags::Efd,
            Flags::Inotify,
            Flags::InotifyInit,
            Flags::Fanotify,
            Flags::FanotifyMark,
            Flags::FanotifyInit,
        ];
        let mut vals = vec![
            0,
            1,
            2,
            3,
            7,
            0o644,
            0o20200002,
            0x7fff_ffff,
            i64::MAX,
            -1,
            i64::MIN,
        ];
        vals.extend((0..63).map(|b| 1i64 << b));
        for k in kinds {
            for &v in &vals {
                let t = flags_text(k, v);
                assert_eq!(value(&t), Ok(v), "{k:?} {v:#x} printed as {t}");
            }
        }
        assert_eq!(flags_text(Flags::Open, 0o20200002), "O_RDWR|O_TMPFILE");
        assert_eq!(flags_text(Flags::Open, 0o100), "O_CREAT");
        assert_eq!(flags_text(Flags::Open, 0), "O_RDONLY");
        assert_eq!(
            flags_text(Flags::StatxMask, 0xfff),
            "STATX_BASIC_STATS|STATX_BTIME"
        );
        assert_eq!(flags_text(Flags::FileMode, 0o20644), "S_IFCHR|0644");
        assert_eq!(
            flags_text(Flags::Inotify, 0x4000_0100 | 0x18),
            "IN_CLOSE_WRITE|IN_CLOSE_NOWRITE|IN_CREATE|IN_ISDIR"
        );
        assert_eq!(value("IN_CLOSE|IN_MOVE|0x1000"), Ok(0x10d8));
        assert_eq!(
            flags_text(Flags::Fanotify, 0x4000_0000 | 0x20 | 0x8 | (1 << 40)),
            "FAN_CLOSE_WRITE|FAN_OPEN|FAN_ONDIR|0x10000000000"
        );
        assert_eq!(
            value("FAN_MARK_ADD|FAN_MARK_FILESYSTEM|FAN_MARK_INODE"),
            Ok(0x101)
        );
    }

    #[test]
    fn errno_numbers_have_linux_names() {
        assert_eq!(errno_display(2), "ENOENT");
        assert_eq!(errno_display(95), "EOPNOTSUPP");
        assert_eq!(errno_display(4000), "errno 4000");
    }
}
