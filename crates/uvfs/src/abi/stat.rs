//! `struct stat`, `struct statx`, `struct statfs` and timestamps.

use super::mode::FileType;

/// A point in time as seconds and nanoseconds since the epoch (`struct timespec`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timespec {
    /// Seconds since the epoch; negative before 1970.
    pub sec: i64,
    /// Nanoseconds, `0..1_000_000_000` (or `UTIME_NOW`/`UTIME_OMIT` in `utimensat`).
    pub nsec: i64,
}

impl Timespec {
    /// Builds a timespec.
    pub const fn new(sec: i64, nsec: i64) -> Self {
        Timespec { sec, nsec }
    }
}

/// The result of `stat(2)` (`struct stat`, x86-64 field set).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stat {
    /// Device of the filesystem.
    pub dev: u64,
    /// Inode number.
    pub ino: u64,
    /// Hard-link count.
    pub nlink: u64,
    /// Type and permission bits.
    pub mode: u32,
    /// Owner.
    pub uid: u32,
    /// Group.
    pub gid: u32,
    /// Device number of a device file.
    pub rdev: u64,
    /// Size in bytes.
    pub size: i64,
    /// Preferred I/O size.
    pub blksize: i64,
    /// Allocated 512-byte units.
    pub blocks: i64,
    /// Last access.
    pub atime: Timespec,
    /// Last data modification.
    pub mtime: Timespec,
    /// Last status change.
    pub ctime: Timespec,
}

impl Stat {
    /// The file type from `mode`.
    pub fn file_type(&self) -> Option<FileType> {
        FileType::from_mode(self.mode)
    }
}

/// The result of `statx(2)`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Statx {
    /// Which fields are filled (`STATX_*`).
    pub mask: u32,
    /// Preferred I/O size.
    pub blksize: u32,
    /// `STATX_ATTR_*` flags.
    pub attributes: u64,
    /// Hard-link count.
    pub nlink: u32,
    /// Owner.
    pub uid: u32,
    /// Group.
    pub gid: u32,
    /// Type and permission bits.
    pub mode: u16,
    /// Inode number.
    pub ino: u64,
    /// Size in bytes.
    pub size: u64,
    /// Allocated 512-byte units.
    pub blocks: u64,
    /// Which `attributes` bits the filesystem supports.
    pub attributes_mask: u64,
    /// Last access.
    pub atime: Timespec,
    /// Creation.
    pub btime: Timespec,
    /// Last status change.
    pub ctime: Timespec,
    /// Last data modification.
    pub mtime: Timespec,
    /// Major of a device file.
    pub rdev_major: u32,
    /// Minor of a device file.
    pub rdev_minor: u32,
    /// Major of the filesystem's device.
    pub dev_major: u32,
    /// Minor of the filesystem's device.
    pub dev_minor: u32,
    /// Mount id.
    pub mnt_id: u64,
}

/// The result of `statfs(2)`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StatFs {
    /// Filesystem magic (`TMPFS_MAGIC`, ...).
    pub f_type: i64,
    /// Block size.
    pub bsize: i64,
    /// Total blocks.
    pub blocks: u64,
    /// Free blocks.
    pub bfree: u64,
    /// Free blocks for unprivileged users.
    pub bavail: u64,
    /// Total inodes.
    pub files: u64,
    /// Free inodes.
    pub ffree: u64,
    /// Filesystem id.
    pub fsid: [i32; 2],
    /// Longest name.
    pub namelen: i64,
    /// Fragment size.
    pub frsize: i64,
    /// Mount flags (`ST_*`).
    pub flags: i64,
}

/// `statfs` mount flag bits (`ST_*`).
pub mod st_flags {
    /// `ST_RDONLY`.
    pub const RDONLY: i64 = 1;
    /// `ST_NOSUID`.
    pub const NOSUID: i64 = 2;
    /// `ST_NODEV`.
    pub const NODEV: i64 = 4;
    /// `ST_NOEXEC`.
    pub const NOEXEC: i64 = 8;
    /// `ST_SYNCHRONOUS`.
    pub const SYNCHRONOUS: i64 = 16;
    /// `ST_VALID`: the flags field is meaningful.
    pub const VALID: i64 = 32;
    /// `ST_NOATIME`.
    pub const NOATIME: i64 = 1024;
    /// `ST_NODIRATIME`.
    pub const NODIRATIME: i64 = 2048;
    /// `ST_RELATIME`.
    pub const RELATIME: i64 = 4096;
    /// `ST_NOSYMFOLLOW`.
    pub const NOSYMFOLLOW: i64 = 0x2000;
}

/// `TMPFS_MAGIC`.
pub const TMPFS_MAGIC: i64 = 0x0102_1994;
