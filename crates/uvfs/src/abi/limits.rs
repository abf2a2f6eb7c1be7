//! Linux limits that the VFS enforces.

/// Longest name of one path component, in bytes (`NAME_MAX`).
pub const NAME_MAX: usize = 255;
/// Size of a path buffer including its terminating NUL (`PATH_MAX`); a path of
/// `PATH_MAX` bytes or more is `ENAMETOOLONG`.
pub const PATH_MAX: usize = 4096;
/// Symbolic links followed in one resolution before `ELOOP` (`MAXSYMLINKS`).
pub const MAXSYMLINKS: u32 = 40;
/// Most iovecs accepted by `readv`/`writev` (`UIO_MAXIOV`).
pub const IOV_MAX: usize = 1024;
/// Largest value of an extended attribute (`XATTR_SIZE_MAX`).
pub const XATTR_SIZE_MAX: usize = 65536;
/// Longest extended attribute name (`XATTR_NAME_MAX`).
pub const XATTR_NAME_MAX: usize = 255;
/// Largest size of an extended attribute name list (`XATTR_LIST_MAX`).
pub const XATTR_LIST_MAX: usize = 65536;
/// The page size tmpfs allocates file data in.
pub const PAGE_SIZE: u64 = 4096;
/// Largest file offset (`MAX_LFS_FILESIZE` on 64-bit).
pub const MAX_LFS_FILESIZE: i64 = i64::MAX;
/// Largest hard-link count of a tmpfs inode (Linux uses `~0U` for shmem).
pub const LINK_MAX: u32 = u32::MAX;
/// Default per-task open file limit (`RLIMIT_NOFILE` soft default).
pub const DEFAULT_NOFILE: u32 = 1024;
/// Unit of `st_blocks`.
pub const BLOCK_UNIT: u64 = 512;
/// Most supplementary groups a task may have (`NGROUPS_MAX`).
pub const NGROUPS_MAX: usize = 65536;
