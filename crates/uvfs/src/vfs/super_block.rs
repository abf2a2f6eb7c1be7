//! One mounted filesystem instance. Linux: `struct super_block`.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use super::ops::SuperOps;

/// Superblock flag: the filesystem is read-only (`SB_RDONLY`).
pub const SB_RDONLY: u32 = 1;
/// Superblock flag: writes are synchronous (`SB_SYNCHRONOUS`; reported by `statfs`).
pub const SB_SYNCHRONOUS: u32 = 16;

static NEXT_DEV: AtomicU64 = AtomicU64::new(1);

/// A filesystem instance.
pub struct SuperBlock {
    dev: u64,
    next_ino: AtomicU64,
    flags: AtomicU32,
    /// Open files that may write (Linux: the mounts' writer counts, summed for
    /// `sb_prepare_remount_readonly()`).
    writers: AtomicU64,
    /// Serialises cross-directory renames so that the ancestor check stays true while the
    /// rename runs (Linux: `s_vfs_rename_mutex`).
    /// Order: first of every namespace lock; before any inode lock.
    pub(crate) rename_lock: Mutex<()>,
    ops: Box<dyn SuperOps>,
}

impl SuperBlock {
    /// Creates a superblock with a fresh anonymous device number (major 0, as Linux's
    /// `get_anon_bdev()` hands to tmpfs).
    pub fn new(ops: Box<dyn SuperOps>) -> Arc<SuperBlock> {
        Arc::new(SuperBlock {
            dev: NEXT_DEV.fetch_add(1, Ordering::Relaxed) + 0x40,
            next_ino: AtomicU64::new(1),
            flags: AtomicU32::new(0),
            writers: AtomicU64::new(0),
            rename_lock: Mutex::new(()),
            ops,
        })
    }

    /// Device number reported in `st_dev`.
    #[inline]
    pub fn dev(&self) -> u64 {
        self.dev
    }

    /// Allocates an inode number.
    pub fn alloc_ino(&self) -> u64 {
        self.next_ino.fetch_add(1, Ordering::Relaxed)
    }

    /// The filesystem's operations.
    pub fn ops(&self) -> &dyn SuperOps {
        &*self.ops
    }

    /// True if the filesystem is read-only.
    #[inline]
    pub fn is_rdonly(&self) -> bool {
        self.flags.load(Ordering::Relaxed) & SB_RDONLY != 0
    }

    /// Counts an open file that may write.
    pub(crate) fn get_write(&self) {
        self.writers.fetch_add(1, Ordering::Relaxed);
    }

    /// Uncounts an open file that may write.
    pub(crate) fn put_write(&self) {
        self.writers.fetch_sub(1, Ordering::Relaxed);
    }

    /// Files open for writing on this filesystem.
    pub fn writers(&self) -> u64 {
        self.writers.load(Ordering::Relaxed)
    }

    /// True if mounted `MS_SYNCHRONOUS`.
    pub fn is_synchronous(&self) -> bool {
        self.flags.load(Ordering::Relaxed) & SB_SYNCHRONOUS != 0
    }

    /// Sets or clears `SB_SYNCHRONOUS`.
    pub fn set_synchronous(&self, on: bool) {
        if on {
            self.flags.fetch_or(SB_SYNCHRONOUS, Ordering::Relaxed);
        } else {
            self.flags.fetch_and(!SB_SYNCHRONOUS, Ordering::Relaxed);
        }
    }

    /// Sets or clears `SB_RDONLY`.
    pub fn set_rdonly(&self, rdonly: bool) {
        if rdonly {
            self.flags.fetch_or(SB_RDONLY, Ordering::Relaxed);
        } else {
            self.flags.fetch_and(!SB_RDONLY, Ordering::Relaxed);
        }
    }
}

impl std::fmt::Debug for SuperBlock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SuperBlock")
            .field("dev", &self.dev)
            .field("fs", &self.ops.fs_name())
            .finish()
    }
}
