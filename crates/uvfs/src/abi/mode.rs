//! File types and permission bits (`S_IF*`, `S_I*`).

/// Mask of the file type bits of a mode (`S_IFMT`).
pub const S_IFMT: u32 = 0o170000;
/// Set-user-ID bit.
pub const S_ISUID: u32 = 0o4000;
/// Set-group-ID bit.
pub const S_ISGID: u32 = 0o2000;
/// Sticky bit.
pub const S_ISVTX: u32 = 0o1000;
/// Group execute bit.
pub const S_IXGRP: u32 = 0o010;
/// Every permission bit, including set-id and sticky (`S_IALLUGO`).
pub const S_IALLUGO: u32 = 0o7777;
/// The three execute bits.
pub const S_IXUGO: u32 = 0o111;
/// The three read bits.
pub const S_IRUGO: u32 = 0o444;
/// The three write bits.
pub const S_IWUGO: u32 = 0o222;

/// The type of a file, from the `S_IFMT` bits of its mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FileType {
    /// `S_IFREG`.
    Regular,
    /// `S_IFDIR`.
    Directory,
    /// `S_IFLNK`.
    Symlink,
    /// `S_IFCHR`.
    CharDevice,
    /// `S_IFBLK`.
    BlockDevice,
    /// `S_IFIFO`.
    Fifo,
    /// `S_IFSOCK`.
    Socket,
    /// No `S_IFMT` bits: the inode of an eventfd or epoll file, which Linux makes on its
    /// anonymous-inode filesystem with mode 0600 and no type (`anon_inode_getfile()`).
    /// [`FileType::from_mode`] never returns it: a mode with no type bits names a regular
    /// file to `mknod`.
    Anon,
}

impl FileType {
    /// The `S_IFMT` bits.
    pub const fn mode_bits(self) -> u32 {
        match self {
            FileType::Regular => 0o100000,
            FileType::Directory => 0o040000,
            FileType::Symlink => 0o120000,
            FileType::CharDevice => 0o020000,
            FileType::BlockDevice => 0o060000,
            FileType::Fifo => 0o010000,
            FileType::Socket => 0o140000,
            FileType::Anon => 0,
        }
    }

    /// The type named by the `S_IFMT` bits of `mode`, or `None` for an invalid type.
    pub const fn from_mode(mode: u32) -> Option<FileType> {
        match mode & S_IFMT {
            0o100000 => Some(FileType::Regular),
            0o040000 => Some(FileType::Directory),
            0o120000 => Some(FileType::Symlink),
            0o020000 => Some(FileType::CharDevice),
            0o060000 => Some(FileType::BlockDevice),
            0o010000 => Some(FileType::Fifo),
            0o140000 => Some(FileType::Socket),
            _ => None,
        }
    }

    /// The `d_type` value of a directory entry (`DT_*`).
    pub const fn dirent_type(self) -> u8 {
        match self {
            FileType::Fifo => 1,
            FileType::CharDevice => 2,
            FileType::Directory => 4,
            FileType::BlockDevice => 6,
            FileType::Regular => 8,
            FileType::Symlink => 10,
            FileType::Socket => 12,
            FileType::Anon => 0,
        }
    }
}

/// Splits a device number into major and minor as glibc's `gnu_dev_major`/`minor` do.
pub const fn dev_split(dev: u64) -> (u32, u32) {
    let major = ((dev >> 32) & 0xffff_f000) | ((dev >> 8) & 0x0000_0fff);
    let minor = ((dev >> 12) & 0xffff_ff00) | (dev & 0x0000_00ff);
    (major as u32, minor as u32)
}

/// Builds a device number from major and minor as glibc's `gnu_dev_makedev` does.
pub const fn dev_make(major: u32, minor: u32) -> u64 {
    let (ma, mi) = (major as u64, minor as u64);
    ((ma & 0x0000_0fff) << 8)
        | ((ma & 0xffff_f000) << 32)
        | (mi & 0x0000_00ff)
        | ((mi & 0xffff_ff00) << 12)
}
