//! `Metadata`, `FileType` and `Permissions`: `std::fs`'s shapes over a `Stat`.

use std::fmt;
use std::io;
use std::time::{Duration, SystemTime};

use crate::abi::{self, Stat, Timespec};

/// What `stat` says of a file, with the methods of `std::fs::Metadata` and of
/// `std::os::unix::fs::MetadataExt`.
#[derive(Clone)]
pub struct Metadata {
    pub(crate) st: Stat,
    pub(crate) btime: Timespec,
}

impl Metadata {
    /// The inode's attributes: `stat` of it, and the birth time.
    #[inline]
    pub(crate) fn of(inode: &crate::vfs::Inode) -> Metadata {
        Metadata {
            st: inode.stat(),
            btime: inode.btime(),
        }
    }

    /// The type of the file.
    pub fn file_type(&self) -> FileType {
        FileType::from_mode(self.st.mode)
    }
    /// A directory.
    pub fn is_dir(&self) -> bool {
        self.file_type().is_dir()
    }
    /// A regular file.
    pub fn is_file(&self) -> bool {
        self.file_type().is_file()
    }
    /// A symbolic link (only from `symlink_metadata` or a `DirEntry`: `metadata` follows links).
    pub fn is_symlink(&self) -> bool {
        self.file_type().is_symlink()
    }
    /// The size in bytes (`st_size`).
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> u64 {
        self.st.size as u64
    }
    /// The permission bits (with the type bits above them, as `std` keeps `st_mode` whole).
    pub fn permissions(&self) -> Permissions {
        Permissions::from_mode(self.st.mode)
    }
    /// Last data modification (`st_mtime`).
    ///
    /// # Errors
    /// None on uvfs; `io::Result` as in `std::fs`.
    pub fn modified(&self) -> io::Result<SystemTime> {
        Ok(system_time(self.st.mtime))
    }
    /// Last access (`st_atime`).
    ///
    /// # Errors
    /// None on uvfs; `io::Result` as in `std::fs`.
    pub fn accessed(&self) -> io::Result<SystemTime> {
        Ok(system_time(self.st.atime))
    }
    /// Creation (`statx`'s `stx_btime`; tmpfs keeps it).
    ///
    /// # Errors
    /// None on uvfs; `io::Result` as in `std::fs`.
    pub fn created(&self) -> io::Result<SystemTime> {
        Ok(system_time(self.btime))
    }
    /// Type and permission bits (`st_mode`).
    pub fn mode(&self) -> u32 {
        self.st.mode
    }
    /// Owner.
    pub fn uid(&self) -> u32 {
        self.st.uid
    }
    /// Group.
    pub fn gid(&self) -> u32 {
        self.st.gid
    }
    /// Inode number.
    pub fn ino(&self) -> u64 {
        self.st.ino
    }
    /// Hard-link count.
    pub fn nlink(&self) -> u64 {
        self.st.nlink
    }
    /// Device of the filesystem.
    pub fn dev(&self) -> u64 {
        self.st.dev
    }
    /// Device number of a device file.
    pub fn rdev(&self) -> u64 {
        self.st.rdev
    }
    /// Allocated 512-byte units.
    pub fn blocks(&self) -> u64 {
        self.st.blocks as u64
    }
    /// Preferred I/O size.
    pub fn blksize(&self) -> u64 {
        self.st.blksize as u64
    }
    /// Last access, as `st_atim`.
    pub fn atime(&self) -> Timespec {
        self.st.atime
    }
    /// Last data modification, as `st_mtim`.
    pub fn mtime(&self) -> Timespec {
        self.st.mtime
    }
    /// Last status change, as `st_ctim`.
    pub fn ctime(&self) -> Timespec {
        self.st.ctime
    }
    /// Creation, as `stx_btime`.
    pub fn btime(&self) -> Timespec {
        self.btime
    }
    /// The whole `stat`.
    pub fn stat(&self) -> &Stat {
        &self.st
    }
}

impl fmt::Debug for Metadata {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Metadata")
            .field("file_type", &self.file_type())
            .field("permissions", &self.permissions())
            .field("len", &self.len())
            .field("ino", &self.ino())
            .field("nlink", &self.nlink())
            .field("uid", &self.uid())
            .field("gid", &self.gid())
            .field("modified", &self.st.mtime)
            .finish_non_exhaustive()
    }
}

/// A `Timespec` as a `SystemTime`, before the epoch too.
pub(crate) fn system_time(t: Timespec) -> SystemTime {
    let nsec = t.nsec.clamp(0, 999_999_999) as u32;
    if t.sec >= 0 {
        SystemTime::UNIX_EPOCH + Duration::new(t.sec as u64, nsec)
    } else {
        // -1.25 s is sec = -2, nsec = 750_000_000.
        SystemTime::UNIX_EPOCH - Duration::new(t.sec.unsigned_abs(), 0) + Duration::new(0, nsec)
    }
}

/// A `SystemTime` as a `Timespec`, before the epoch too.
pub(crate) fn timespec(t: SystemTime) -> Timespec {
    match t.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(d) => Timespec {
            sec: d.as_secs() as i64,
            nsec: d.subsec_nanos() as i64,
        },
        Err(e) => {
            let d = e.duration();
            let (mut sec, mut nsec) = (-(d.as_secs() as i64), -(d.subsec_nanos() as i64));
            if nsec < 0 {
                sec -= 1;
                nsec += 1_000_000_000;
            }
            Timespec { sec, nsec }
        }
    }
}

/// The type of a file, as `std::fs::FileType` (with `std::os::unix::fs::FileTypeExt`).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct FileType(Option<abi::FileType>);

impl FileType {
    pub(crate) fn from_mode(mode: u32) -> FileType {
        FileType(abi::FileType::from_mode(mode))
    }
    /// From a directory entry's `d_type` (`DT_UNKNOWN` gives none of the kinds).
    pub(crate) fn from_dtype(d_type: u8) -> FileType {
        use abi::FileType as T;
        FileType(match d_type {
            1 => Some(T::Fifo),
            2 => Some(T::CharDevice),
            4 => Some(T::Directory),
            6 => Some(T::BlockDevice),
            8 => Some(T::Regular),
            10 => Some(T::Symlink),
            12 => Some(T::Socket),
            _ => None,
        })
    }
    /// The kind, `None` when the listing did not say (`DT_UNKNOWN`).
    pub fn kind(&self) -> Option<abi::FileType> {
        self.0
    }
    /// A directory.
    pub fn is_dir(&self) -> bool {
        self.0 == Some(abi::FileType::Directory)
    }
    /// A regular file.
    pub fn is_file(&self) -> bool {
        self.0 == Some(abi::FileType::Regular)
    }
    /// A symbolic link.
    pub fn is_symlink(&self) -> bool {
        self.0 == Some(abi::FileType::Symlink)
    }
    /// A block device.
    pub fn is_block_device(&self) -> bool {
        self.0 == Some(abi::FileType::BlockDevice)
    }
    /// A character device.
    pub fn is_char_device(&self) -> bool {
        self.0 == Some(abi::FileType::CharDevice)
    }
    /// A FIFO.
    pub fn is_fifo(&self) -> bool {
        self.0 == Some(abi::FileType::Fifo)
    }
    /// A socket.
    pub fn is_socket(&self) -> bool {
        self.0 == Some(abi::FileType::Socket)
    }
}

impl fmt::Debug for FileType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(k) => write!(f, "FileType({k:?})"),
            None => f.write_str("FileType(Unknown)"),
        }
    }
}

/// Permission bits, as `std::fs::Permissions` with `std::os::unix::fs::PermissionsExt`: the
/// mode as given (from [`Metadata::permissions`], `st_mode` whole, type bits included, as in
/// `std`); `set_permissions` applies only the permission, set-id and sticky bits.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Permissions(u32);

impl Permissions {
    /// From mode bits.
    pub fn from_mode(mode: u32) -> Permissions {
        Permissions(mode)
    }
    /// The mode bits.
    pub fn mode(&self) -> u32 {
        self.0
    }
    /// Replaces the bits.
    pub fn set_mode(&mut self, mode: u32) {
        self.0 = mode;
    }
    /// No write bit for anyone (what `std` calls read-only on Unix; root may still write).
    pub fn readonly(&self) -> bool {
        self.0 & 0o222 == 0
    }
    /// Clears every write bit, or sets them all (as `std` does on Unix).
    pub fn set_readonly(&mut self, readonly: bool) {
        if readonly {
            self.0 &= !0o222;
        } else {
            self.0 |= 0o222;
        }
    }
}

impl fmt::Debug for Permissions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Permissions({:#o})", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_before_and_after_the_epoch_round_trip() {
        for (sec, nsec) in [
            (0, 0),
            (1, 5),
            (-1, 0),
            (-2, 750_000_000),
            (1 << 40, 999_999_999),
        ] {
            let t = Timespec { sec, nsec };
            assert_eq!(timespec(system_time(t)), t, "{sec}.{nsec}");
        }
        let before = system_time(Timespec {
            sec: -2,
            nsec: 750_000_000,
        });
        let gap = SystemTime::UNIX_EPOCH.duration_since(before).unwrap();
        assert_eq!(gap, Duration::from_millis(1250));
    }

    #[test]
    fn dtype_and_mode_agree_on_every_kind() {
        use abi::FileType as T;
        let kinds = [
            T::Regular,
            T::Directory,
            T::Symlink,
            T::CharDevice,
            T::BlockDevice,
            T::Fifo,
            T::Socket,
        ];
        for k in kinds {
            assert_eq!(FileType::from_dtype(k.dirent_type()).kind(), Some(k));
            assert_eq!(FileType::from_mode(k.mode_bits() | 0o644).kind(), Some(k));
        }
        assert_eq!(FileType::from_dtype(0).kind(), None);
    }

    #[test]
    fn readonly_means_no_write_bit_at_all() {
        let mut p = Permissions::from_mode(0o100644);
        assert_eq!(p.mode(), 0o100644);
        assert!(!p.readonly());
        p.set_readonly(true);
        assert_eq!(p.mode(), 0o100444);
        assert!(p.readonly());
        assert!(!Permissions::from_mode(0o400 | 0o020).readonly());
        p.set_readonly(false);
        assert_eq!(p.mode(), 0o100666);
    }
}
