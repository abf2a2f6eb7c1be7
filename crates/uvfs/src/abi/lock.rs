//! Advisory locks: `struct flock`, the `fcntl(2)` lock commands and `flock(2)`'s operations.

use bitflags::bitflags;

/// `F_RDLCK`: a shared (read) lock.
pub const F_RDLCK: i16 = 0;
/// `F_WRLCK`: an exclusive (write) lock.
pub const F_WRLCK: i16 = 1;
/// `F_UNLCK`: no lock (unlock; "no conflict" in an `F_GETLK` answer).
pub const F_UNLCK: i16 = 2;

/// `struct flock` as 64-bit Linux lays it out (the same as `struct flock64`): a byte range
/// and a lock type. `l_len` 0 means "to the end of the file, however it grows"; a negative
/// `l_len` is the range of that many bytes before `l_start`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Flock {
    /// [`F_RDLCK`], [`F_WRLCK`] or [`F_UNLCK`].
    pub l_type: i16,
    /// What `l_start` counts from: `SEEK_SET` (0), `SEEK_CUR` (1) or `SEEK_END` (2).
    pub l_whence: i16,
    /// The first byte, from `l_whence`.
    pub l_start: i64,
    /// The length in bytes (see above).
    pub l_len: i64,
    /// In an `F_GETLK` answer, the holder of the conflicting lock: the owner's
    /// [`Task::lock_pid`](crate::vfs::Task::lock_pid), or `-1` for an OFD lock. Ignored by
    /// `F_SETLK`; must be 0 for the `F_OFD_*` commands.
    pub l_pid: i32,
}

impl Flock {
    /// A lock request of `l_type` over `l_len` bytes from `l_start` (`SEEK_SET`), `l_pid` 0.
    pub fn new(l_type: i16, l_start: i64, l_len: i64) -> Flock {
        Flock {
            l_type,
            l_whence: 0,
            l_start,
            l_len,
            l_pid: 0,
        }
    }
}

/// The record-lock commands of `fcntl(2)` (see [`Task::fcntl_lock`](crate::vfs::Task::fcntl_lock)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockCmd {
    /// `F_GETLK`: the first lock of another process that would conflict, or `F_UNLCK`.
    #[doc(alias = "F_GETLK")]
    GetLk,
    /// `F_SETLK`: take or release a process-owned lock; `EAGAIN` on a conflict.
    #[doc(alias = "F_SETLK")]
    SetLk,
    /// `F_SETLKW`: as `SetLk`, waiting while the lock conflicts.
    #[doc(alias = "F_SETLKW")]
    SetLkW,
    /// `F_OFD_GETLK`: as `GetLk` for a lock owned by the open file description.
    #[doc(alias = "F_OFD_GETLK")]
    OfdGetLk,
    /// `F_OFD_SETLK`: take or release a lock owned by the open file description.
    #[doc(alias = "F_OFD_SETLK")]
    OfdSetLk,
    /// `F_OFD_SETLKW`: as `OfdSetLk`, waiting while the lock conflicts.
    #[doc(alias = "F_OFD_SETLKW")]
    OfdSetLkW,
}

bitflags! {
    /// `flock(2)` operations (`LOCK_*`).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
    pub struct FlockOp: u32 {
        /// `LOCK_SH`: a shared lock.
        #[doc(alias = "LOCK_SH")] const SH = 1;
        /// `LOCK_EX`: an exclusive lock.
        #[doc(alias = "LOCK_EX")] const EX = 2;
        /// `LOCK_NB`: fail with `EWOULDBLOCK` instead of waiting.
        #[doc(alias = "LOCK_NB")] const NB = 4;
        /// `LOCK_UN`: release.
        #[doc(alias = "LOCK_UN")] const UN = 8;
        /// `LOCK_MAND`: the removed mandatory-lock flag; a request carrying it does nothing
        /// and succeeds, as on Linux since 5.15.
        #[doc(alias = "LOCK_MAND")] const MAND = 32;
    }
}
