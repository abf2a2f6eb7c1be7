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
];

/// The value of a symbolic constant, such as `O_CREAT`.
pub fn constant(name: &str) -> Option<i64> {
    CONSTANTS.iter().find(|(n, _)| *n == name).map(|&(_, v)| v)
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
    fn errno_numbers_have_linux_names() {
        assert_eq!(errno_display(2), "ENOENT");
        assert_eq!(errno_display(95), "EOPNOTSUPP");
        assert_eq!(errno_display(4000), "errno 4000");
    }
}
