//! Flag sets of the Linux system call ABI (x86-64 values).

use bitflags::bitflags;

bitflags! {
    /// `open(2)` flags (`O_*`).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
    pub struct OpenFlags: u32 {
        /// `O_RDONLY` (zero: test with [`OpenFlags::access`]).
        #[doc(alias = "O_RDONLY")] const RDONLY = 0;
        /// `O_WRONLY`.
        #[doc(alias = "O_WRONLY")] const WRONLY = 0o1;
        /// `O_RDWR`.
        #[doc(alias = "O_RDWR")] const RDWR = 0o2;
        /// `O_CREAT`.
        #[doc(alias = "O_CREAT")] const CREAT = 0o100;
        /// `O_EXCL`.
        #[doc(alias = "O_EXCL")] const EXCL = 0o200;
        /// `O_NOCTTY`.
        #[doc(alias = "O_NOCTTY")] const NOCTTY = 0o400;
        /// `O_TRUNC`.
        #[doc(alias = "O_TRUNC")] const TRUNC = 0o1000;
        /// `O_APPEND`.
        #[doc(alias = "O_APPEND")] const APPEND = 0o2000;
        /// `O_NONBLOCK`.
        #[doc(alias = "O_NONBLOCK")] const NONBLOCK = 0o4000;
        /// `O_DSYNC`.
        #[doc(alias = "O_DSYNC")] const DSYNC = 0o10000;
        /// `O_ASYNC` (`FASYNC`).
        #[doc(alias = "O_ASYNC")] const ASYNC = 0o20000;
        /// `O_DIRECT`.
        #[doc(alias = "O_DIRECT")] const DIRECT = 0o40000;
        /// `O_LARGEFILE`.
        #[doc(alias = "O_LARGEFILE")] const LARGEFILE = 0o100000;
        /// `O_DIRECTORY`.
        #[doc(alias = "O_DIRECTORY")] const DIRECTORY = 0o200000;
        /// `O_NOFOLLOW`.
        #[doc(alias = "O_NOFOLLOW")] const NOFOLLOW = 0o400000;
        /// `O_NOATIME`.
        #[doc(alias = "O_NOATIME")] const NOATIME = 0o1000000;
        /// `O_CLOEXEC`.
        #[doc(alias = "O_CLOEXEC")] const CLOEXEC = 0o2000000;
        /// `O_SYNC` (includes `O_DSYNC`).
        #[doc(alias = "O_SYNC")] const SYNC = 0o4010000;
        /// `O_PATH`.
        #[doc(alias = "O_PATH")] const PATH = 0o10000000;
        /// `O_TMPFILE` (includes `O_DIRECTORY`).
        #[doc(alias = "O_TMPFILE")] const TMPFILE = 0o20200000;
    }
}

/// The access mode of an open file (`O_ACCMODE` bits).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AccessMode {
    /// `O_RDONLY`.
    ReadOnly,
    /// `O_WRONLY`.
    WriteOnly,
    /// `O_RDWR`.
    ReadWrite,
    /// The value 3, which Linux accepts and treats as "no read, no write" for ioctl-only opens.
    Neither,
}

impl OpenFlags {
    /// `O_ACCMODE`.
    pub const ACCMODE: u32 = 0o3;
    /// Every flag `open(2)` recognises; others are ignored by `openat` and rejected by `openat2`.
    pub const VALID: u32 = 0o37777777 & !0o3;

    /// The access mode bits.
    pub fn access(self) -> AccessMode {
        match self.bits() & Self::ACCMODE {
            0 => AccessMode::ReadOnly,
            1 => AccessMode::WriteOnly,
            2 => AccessMode::ReadWrite,
            _ => AccessMode::Neither,
        }
    }
}

bitflags! {
    /// `*at()` flags (`AT_*`).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
    pub struct AtFlags: u32 {
        /// `AT_SYMLINK_NOFOLLOW`.
        #[doc(alias = "AT_SYMLINK_NOFOLLOW")] const SYMLINK_NOFOLLOW = 0x100;
        /// `AT_REMOVEDIR` (unlinkat).
        #[doc(alias = "AT_REMOVEDIR")] const REMOVEDIR = 0x200;
        /// `AT_EACCESS` (faccessat2; same bit as `AT_REMOVEDIR`).
        #[doc(alias = "AT_EACCESS")] const EACCESS = 0x200;
        /// `AT_SYMLINK_FOLLOW` (linkat).
        #[doc(alias = "AT_SYMLINK_FOLLOW")] const SYMLINK_FOLLOW = 0x400;
        /// `AT_NO_AUTOMOUNT`.
        #[doc(alias = "AT_NO_AUTOMOUNT")] const NO_AUTOMOUNT = 0x800;
        /// `AT_EMPTY_PATH`.
        #[doc(alias = "AT_EMPTY_PATH")] const EMPTY_PATH = 0x1000;
        /// `AT_STATX_FORCE_SYNC`.
        #[doc(alias = "AT_STATX_FORCE_SYNC")] const STATX_FORCE_SYNC = 0x2000;
        /// `AT_STATX_DONT_SYNC`.
        #[doc(alias = "AT_STATX_DONT_SYNC")] const STATX_DONT_SYNC = 0x4000;
    }
}

bitflags! {
    /// `renameat2(2)` flags (`RENAME_*`).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
    pub struct RenameFlags: u32 {
        /// `RENAME_NOREPLACE`.
        #[doc(alias = "RENAME_NOREPLACE")] const NOREPLACE = 1;
        /// `RENAME_EXCHANGE`.
        #[doc(alias = "RENAME_EXCHANGE")] const EXCHANGE = 2;
        /// `RENAME_WHITEOUT`.
        #[doc(alias = "RENAME_WHITEOUT")] const WHITEOUT = 4;
    }
}

bitflags! {
    /// `openat2(2)` resolve flags (`RESOLVE_*`).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
    pub struct ResolveFlags: u64 {
        /// `RESOLVE_NO_XDEV`.
        #[doc(alias = "RESOLVE_NO_XDEV")] const NO_XDEV = 0x01;
        /// `RESOLVE_NO_MAGICLINKS`.
        #[doc(alias = "RESOLVE_NO_MAGICLINKS")] const NO_MAGICLINKS = 0x02;
        /// `RESOLVE_NO_SYMLINKS`.
        #[doc(alias = "RESOLVE_NO_SYMLINKS")] const NO_SYMLINKS = 0x04;
        /// `RESOLVE_BENEATH`.
        #[doc(alias = "RESOLVE_BENEATH")] const BENEATH = 0x08;
        /// `RESOLVE_IN_ROOT`.
        #[doc(alias = "RESOLVE_IN_ROOT")] const IN_ROOT = 0x10;
        /// `RESOLVE_CACHED`.
        #[doc(alias = "RESOLVE_CACHED")] const CACHED = 0x20;
    }
}

/// The argument of `openat2(2)` (`struct open_how`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OpenHow {
    /// Open flags; unknown bits are `EINVAL`.
    pub flags: u64,
    /// Creation mode; must be zero unless `O_CREAT` or `O_TMPFILE`.
    pub mode: u64,
    /// Resolve flags; unknown bits are `EINVAL`.
    pub resolve: u64,
}

bitflags! {
    /// `fallocate(2)` modes (`FALLOC_FL_*`).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
    pub struct FallocFlags: u32 {
        /// `FALLOC_FL_KEEP_SIZE`.
        #[doc(alias = "FALLOC_FL_KEEP_SIZE")] const KEEP_SIZE = 0x01;
        /// `FALLOC_FL_PUNCH_HOLE`.
        #[doc(alias = "FALLOC_FL_PUNCH_HOLE")] const PUNCH_HOLE = 0x02;
        /// `FALLOC_FL_NO_HIDE_STALE`.
        #[doc(alias = "FALLOC_FL_NO_HIDE_STALE")] const NO_HIDE_STALE = 0x04;
        /// `FALLOC_FL_COLLAPSE_RANGE`.
        #[doc(alias = "FALLOC_FL_COLLAPSE_RANGE")] const COLLAPSE_RANGE = 0x08;
        /// `FALLOC_FL_ZERO_RANGE`.
        #[doc(alias = "FALLOC_FL_ZERO_RANGE")] const ZERO_RANGE = 0x10;
        /// `FALLOC_FL_INSERT_RANGE`.
        #[doc(alias = "FALLOC_FL_INSERT_RANGE")] const INSERT_RANGE = 0x20;
        /// `FALLOC_FL_UNSHARE_RANGE`.
        #[doc(alias = "FALLOC_FL_UNSHARE_RANGE")] const UNSHARE_RANGE = 0x40;
        /// `FALLOC_FL_WRITE_ZEROES` (Linux 6.17).
        #[doc(alias = "FALLOC_FL_WRITE_ZEROES")] const WRITE_ZEROES = 0x80;
    }
}

bitflags! {
    /// `mount(2)` flags (`MS_*`).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
    pub struct MountFlags: u64 {
        /// `MS_RDONLY`.
        #[doc(alias = "MS_RDONLY")] const RDONLY = 1;
        /// `MS_NOSUID`.
        #[doc(alias = "MS_NOSUID")] const NOSUID = 2;
        /// `MS_NODEV`.
        #[doc(alias = "MS_NODEV")] const NODEV = 4;
        /// `MS_NOEXEC`.
        #[doc(alias = "MS_NOEXEC")] const NOEXEC = 8;
        /// `MS_SYNCHRONOUS`.
        #[doc(alias = "MS_SYNCHRONOUS")] const SYNCHRONOUS = 16;
        /// `MS_REMOUNT`.
        #[doc(alias = "MS_REMOUNT")] const REMOUNT = 32;
        /// `MS_MANDLOCK`.
        #[doc(alias = "MS_MANDLOCK")] const MANDLOCK = 64;
        /// `MS_DIRSYNC`.
        #[doc(alias = "MS_DIRSYNC")] const DIRSYNC = 128;
        /// `MS_NOSYMFOLLOW`.
        #[doc(alias = "MS_NOSYMFOLLOW")] const NOSYMFOLLOW = 256;
        /// `MS_NOATIME`.
        #[doc(alias = "MS_NOATIME")] const NOATIME = 1024;
        /// `MS_NODIRATIME`.
        #[doc(alias = "MS_NODIRATIME")] const NODIRATIME = 2048;
        /// `MS_BIND`.
        #[doc(alias = "MS_BIND")] const BIND = 4096;
        /// `MS_MOVE`.
        #[doc(alias = "MS_MOVE")] const MOVE = 8192;
        /// `MS_REC`.
        #[doc(alias = "MS_REC")] const REC = 16384;
        /// `MS_SILENT`.
        #[doc(alias = "MS_SILENT")] const SILENT = 32768;
        /// `MS_PRIVATE`.
        #[doc(alias = "MS_PRIVATE")] const PRIVATE = 1 << 18;
        /// `MS_SLAVE`.
        #[doc(alias = "MS_SLAVE")] const SLAVE = 1 << 19;
        /// `MS_SHARED`.
        #[doc(alias = "MS_SHARED")] const SHARED = 1 << 20;
        /// `MS_RELATIME`.
        #[doc(alias = "MS_RELATIME")] const RELATIME = 1 << 21;
        /// `MS_STRICTATIME`.
        #[doc(alias = "MS_STRICTATIME")] const STRICTATIME = 1 << 24;
        /// `MS_LAZYTIME`.
        #[doc(alias = "MS_LAZYTIME")] const LAZYTIME = 1 << 25;
    }
}

bitflags! {
    /// `umount2(2)` flags.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
    pub struct UmountFlags: u32 {
        /// `MNT_FORCE`.
        #[doc(alias = "MNT_FORCE")] const FORCE = 1;
        /// `MNT_DETACH`.
        #[doc(alias = "MNT_DETACH")] const DETACH = 2;
        /// `MNT_EXPIRE`.
        #[doc(alias = "MNT_EXPIRE")] const EXPIRE = 4;
        /// `UMOUNT_NOFOLLOW`.
        #[doc(alias = "UMOUNT_NOFOLLOW")] const NOFOLLOW = 8;
    }
}

bitflags! {
    /// `access(2)` modes (`R_OK`, `W_OK`, `X_OK`; `F_OK` is empty).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
    pub struct Access: u32 {
        /// `X_OK`.
        #[doc(alias = "X_OK")] const EXEC = 1;
        /// `W_OK`.
        #[doc(alias = "W_OK")] const WRITE = 2;
        /// `R_OK`.
        #[doc(alias = "R_OK")] const READ = 4;
    }
}

bitflags! {
    /// `statx(2)` request and result mask (`STATX_*`).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
    pub struct StatxMask: u32 {
        /// `STATX_TYPE`.
        const TYPE = 0x1;
        /// `STATX_MODE`.
        const MODE = 0x2;
        /// `STATX_NLINK`.
        const NLINK = 0x4;
        /// `STATX_UID`.
        const UID = 0x8;
        /// `STATX_GID`.
        const GID = 0x10;
        /// `STATX_ATIME`.
        const ATIME = 0x20;
        /// `STATX_MTIME`.
        const MTIME = 0x40;
        /// `STATX_CTIME`.
        const CTIME = 0x80;
        /// `STATX_INO`.
        const INO = 0x100;
        /// `STATX_SIZE`.
        const SIZE = 0x200;
        /// `STATX_BLOCKS`.
        const BLOCKS = 0x400;
        /// `STATX_BASIC_STATS`.
        const BASIC_STATS = 0x7ff;
        /// `STATX_BTIME`.
        const BTIME = 0x800;
        /// `STATX_MNT_ID`.
        const MNT_ID = 0x1000;
        /// `STATX_MNT_ID_UNIQUE`: the mount ID that is never reused (Linux 6.8).
        const MNT_ID_UNIQUE = 0x4000;
        /// `STATX__RESERVED` (asking for it is `EINVAL`).
        const RESERVED = 0x8000_0000;
    }
}

bitflags! {
    /// `setxattr(2)` flags.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
    pub struct XattrFlags: u32 {
        /// `XATTR_CREATE`: fail with `EEXIST` if present.
        #[doc(alias = "XATTR_CREATE")] const CREATE = 1;
        /// `XATTR_REPLACE`: fail with `ENODATA` if absent.
        #[doc(alias = "XATTR_REPLACE")] const REPLACE = 2;
    }
}

bitflags! {
    /// File descriptor flags (`FD_CLOEXEC`).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
    pub struct FdFlags: u32 {
        /// `FD_CLOEXEC`.
        #[doc(alias = "FD_CLOEXEC")] const CLOEXEC = 1;
    }
}

/// `lseek(2)` origin (`SEEK_*`); a raw value so that invalid ones reach the call and get `EINVAL`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Whence(pub u32);

impl Whence {
    /// `SEEK_SET`.
    pub const SET: Whence = Whence(0);
    /// `SEEK_CUR`.
    pub const CUR: Whence = Whence(1);
    /// `SEEK_END`.
    pub const END: Whence = Whence(2);
    /// `SEEK_DATA`.
    pub const DATA: Whence = Whence(3);
    /// `SEEK_HOLE`.
    pub const HOLE: Whence = Whence(4);
}

/// `fcntl(2)` commands that uvfs implements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FcntlCmd {
    /// `F_DUPFD`: duplicate to the lowest free fd `>=` the argument.
    DupFd(i32),
    /// `F_DUPFD_CLOEXEC`.
    DupFdCloexec(i32),
    /// `F_GETFD`.
    GetFd,
    /// `F_SETFD`.
    SetFd(FdFlags),
    /// `F_GETFL`.
    GetFl,
    /// `F_SETFL`: only `O_APPEND`, `O_NONBLOCK`, `O_NOATIME`, `O_ASYNC`, `O_DIRECT` change.
    SetFl(OpenFlags),
    /// `F_SETPIPE_SZ`: a pipe's capacity in bytes (the kernel takes the argument as an
    /// `unsigned int`); returns the capacity set.
    #[doc(alias = "F_SETPIPE_SZ")]
    SetPipeSz(u32),
    /// `F_GETPIPE_SZ`: a pipe's capacity in bytes.
    #[doc(alias = "F_GETPIPE_SZ")]
    GetPipeSz,
}

/// The fd that names the current working directory in `*at()` calls.
pub const AT_FDCWD: i32 = -100;

/// `UTIME_NOW` in a `Timespec::nsec` of `utimensat`.
pub const UTIME_NOW: i64 = (1 << 30) - 1;
/// `UTIME_OMIT` in a `Timespec::nsec` of `utimensat`.
pub const UTIME_OMIT: i64 = (1 << 30) - 2;

bitflags! {
    /// `splice(2)`, `tee(2)` and `vmsplice(2)` flags (`SPLICE_F_*`).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
    pub struct SpliceFlags: u32 {
        /// `SPLICE_F_MOVE`: a hint to move pages; a no-op since Linux 2.6.21.
        #[doc(alias = "SPLICE_F_MOVE")] const MOVE = 1;
        /// `SPLICE_F_NONBLOCK`: the pipe side does not wait (`EAGAIN`), whatever the
        /// files' `O_NONBLOCK`.
        #[doc(alias = "SPLICE_F_NONBLOCK")] const NONBLOCK = 2;
        /// `SPLICE_F_MORE`: more data follows (a hint for sockets).
        #[doc(alias = "SPLICE_F_MORE")] const MORE = 4;
        /// `SPLICE_F_GIFT`: for `vmsplice` only.
        #[doc(alias = "SPLICE_F_GIFT")] const GIFT = 8;
    }
}
