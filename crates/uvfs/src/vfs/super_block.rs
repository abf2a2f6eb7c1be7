//! One mounted filesystem instance. Linux: `struct super_block`.

use std::cell::Cell;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use parking_lot::Mutex;

use super::ops::SuperOps;
use crate::sync::dist_counter::DistCounter;
use crate::sync::pcpu_ref::PcpuRef;

/// Superblock flag: the filesystem is read-only (`SB_RDONLY`).
pub const SB_RDONLY: u32 = 1;
/// Superblock flag: writes are synchronous (`SB_SYNCHRONOUS`; reported by `statfs`).
pub const SB_SYNCHRONOUS: u32 = 16;
/// Superblock flag: timestamp updates need not reach stable storage at once
/// (`SB_LAZYTIME`; mount option `lazytime`, reported by `statmount`, not by `statfs`).
pub const SB_LAZYTIME: u32 = 1 << 25;

static NEXT_DEV: AtomicU64 = AtomicU64::new(1);

/// Inode numbers a thread takes from a superblock's counter at a time (Linux:
/// `SHMEM_INO_BATCH`).
const INO_BATCH: u64 = 1024;

thread_local! {
    /// The calling thread's unused inode numbers: the superblock's device number (unique
    /// for the life of the process), then the next number and the end of the batch.
    static INO_CACHE: Cell<(u64, u64, u64)> = const { Cell::new((0, 0, 0)) };
}

/// A counted reference to a superblock: every inode holds one, so it is spread over
/// per-thread slots while the filesystem is mounted (creates and frees of inodes on different
/// threads write different lines), and counted centrally once its last mount is gone (Linux:
/// an inode's `i_sb` is a plain pointer, the superblock kept by `s_active`).
pub type SbRef = PcpuRef<SuperBlock>;

/// A filesystem instance. Aligned to a cache-line pair, which puts the fields every open and
/// create reads (flags, device) on other lines than the `Arc`'s counts in front of them,
/// which every inode made or freed writes.
#[repr(align(128))]
pub struct SuperBlock {
    dev: u64,
    next_ino: AtomicU64,
    flags: AtomicU32,
    /// Open files that may write (Linux: the mounts' writer counts, summed for
    /// `sb_prepare_remount_readonly()`), spread over cache lines as the mount's.
    writers: DistCounter,
    /// Mounts of this filesystem (Linux: `s_active`): the last one's end kills the
    /// superblock's spread count.
    mounts: AtomicU64,
    /// Set while a remount read-only decides (Linux: `sb_prepare_remount_readonly()` sets
    /// `MNT_WRITE_HOLD` on every mount): new writers wait.
    write_hold: std::sync::atomic::AtomicBool,
    /// Serialises cross-directory renames so that the ancestor check stays true while the
    /// rename runs (Linux: `s_vfs_rename_mutex`).
    /// Order: first of every namespace lock; before any inode lock.
    pub(crate) rename_lock: Mutex<()>,
    ops: Box<dyn SuperOps>,
    /// Objects of this filesystem with fsnotify marks (Linux: `fsnotify_sb_info`'s
    /// `watched_objects`), alone in its cache line: every notification hook reads it, and only
    /// adding an object's first mark or removing its last writes it.
    notify_watched: NotifyWatched,
}

/// The superblock's notification state, alone in its cache line: the count of marked
/// objects (inodes, mounts, the superblock itself), which every hook reads first, and the
/// superblock's own marks' mask (Linux: `s_fsnotify_mask`).
#[repr(align(64))]
struct NotifyWatched(std::sync::atomic::AtomicIsize, AtomicU32);

impl SuperBlock {
    /// Creates a superblock with a fresh anonymous device number (major 0, as Linux's
    /// `get_anon_bdev()` hands to tmpfs): one per filesystem instance, made by its
    /// [`FileSystemType::get_tree`](super::ops::FileSystemType::get_tree). It lives while a
    /// mount or an inode of it does, and drops `ops` then; a superblock that is never
    /// mounted is never freed (its count is spread until its last mount ends).
    pub fn new(ops: Box<dyn SuperOps>) -> SbRef {
        PcpuRef::new(SuperBlock {
            dev: NEXT_DEV.fetch_add(1, Ordering::Relaxed) + 0x40,
            next_ino: AtomicU64::new(1),
            flags: AtomicU32::new(0),
            writers: DistCounter::new(),
            mounts: AtomicU64::new(0),
            write_hold: std::sync::atomic::AtomicBool::new(false),
            rename_lock: Mutex::new(()),
            ops,
            notify_watched: NotifyWatched(
                std::sync::atomic::AtomicIsize::new(0),
                AtomicU32::new(0),
            ),
        })
    }

    /// Device number reported in `st_dev`.
    #[inline]
    pub fn dev(&self) -> u64 {
        self.dev
    }

    /// Allocates an inode number: unique in this filesystem, never 0, not in creation order
    /// (the first is 1). Each thread takes `INO_BATCH` (1024) numbers at a time and hands them out itself, so threads
    /// creating files side by side do not write one shared counter per file (Linux:
    /// `shmem_reserve_inode()`'s per-CPU `ino_batch`).
    pub fn alloc_ino(&self) -> u64 {
        INO_CACHE.with(|c| {
            let (dev, next, end) = c.get();
            if dev == self.dev && next < end {
                c.set((dev, next + 1, end));
                return next;
            }
            let start = self.next_ino.fetch_add(INO_BATCH, Ordering::Relaxed);
            c.set((self.dev, start + 1, start + INO_BATCH));
            start
        })
    }

    /// Makes this thread's next inode numbers start at `next` (tests of numbers that a
    /// filesystem reaches only after hundreds of millions of inodes).
    #[cfg(test)]
    pub(crate) fn skip_inos_to(&self, next: u64) {
        self.next_ino.store(next, Ordering::Relaxed);
        INO_CACHE.with(|c| c.set((0, 0, 0)));
    }

    /// True if an inode of this filesystem has fsnotify marks: the notification hooks' first
    /// test, one relaxed load.
    #[inline(always)]
    pub(crate) fn notify_watched(&self) -> bool {
        self.notify_watched.0.load(Ordering::Relaxed) != 0
    }

    /// The events the superblock's own marks ask for (fanotify filesystem marks).
    #[inline(always)]
    pub(crate) fn notify_mask(&self) -> u32 {
        self.notify_watched.1.load(Ordering::Relaxed)
    }

    /// Sets the superblock's marks' mask (under `notify::mark::MARK_LOCK`).
    pub(crate) fn set_notify_mask(&self, mask: u32) {
        self.notify_watched.1.store(mask, Ordering::Relaxed);
    }

    /// Counts inodes that got their first mark or lost their last (under
    /// `notify::mark::MARK_LOCK`).
    pub(crate) fn notify_watched_add(&self, n: isize) {
        self.notify_watched.0.fetch_add(n, Ordering::Relaxed);
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

    /// True while a remount read-only decides.
    #[inline]
    pub(crate) fn write_held(&self) -> bool {
        self.write_hold.load(Ordering::Acquire)
    }

    /// Runs `decide` (a remount) with new writers held off, after a full fence, so that it
    /// sees every writer counted before and no writer counts itself without then seeing what
    /// it decided (Linux: `sb_prepare_remount_readonly()`; the other side is
    /// `Mount::get_write`).
    pub(crate) fn with_writes_held<R>(&self, decide: impl FnOnce() -> R) -> R {
        self.write_hold.store(true, Ordering::Relaxed);
        std::sync::atomic::fence(Ordering::SeqCst);
        let r = decide();
        self.write_hold.store(false, Ordering::Release);
        r
    }

    /// Counts a new mount of this filesystem.
    pub(crate) fn mount_added(&self) {
        self.mounts.fetch_add(1, Ordering::Relaxed);
    }

    /// How many mounts the filesystem has.
    pub(crate) fn mount_count(&self) -> u64 {
        self.mounts.load(Ordering::Acquire)
    }

    /// Uncounts a mount that went; true if it was the last.
    pub(crate) fn mount_gone(&self) -> bool {
        self.mounts.fetch_sub(1, Ordering::AcqRel) == 1
    }

    /// Counts an open file that may write.
    pub(crate) fn get_write(&self) {
        self.writers.add(1);
    }

    /// Uncounts an open file that may write.
    pub(crate) fn put_write(&self) {
        self.writers.add(-1);
    }

    /// Files open for writing on this filesystem.
    pub fn writers(&self) -> u64 {
        self.writers.sum().max(0) as u64
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

    /// True if mounted `MS_LAZYTIME` (Linux: `SB_LAZYTIME`). Linux then lets a timestamp
    /// update leave the inode clean for writeback (`I_DIRTY_TIME`); uvfs keeps no dirty
    /// state (its filesystems write nothing back), so the flag is recorded and reported
    /// ([`Task::statmount`](crate::vfs::Task::statmount)) and changes no behaviour, as on
    /// Linux's tmpfs.
    pub fn is_lazytime(&self) -> bool {
        self.flags.load(Ordering::Relaxed) & SB_LAZYTIME != 0
    }

    /// Sets or clears `SB_LAZYTIME`.
    pub fn set_lazytime(&self, on: bool) {
        if on {
            self.flags.fetch_or(SB_LAZYTIME, Ordering::Relaxed);
        } else {
            self.flags.fetch_and(!SB_LAZYTIME, Ordering::Relaxed);
        }
    }

    /// The superblock flags `statmount` reports (Linux: `SB_RDONLY`, `SB_SYNCHRONOUS`,
    /// `SB_DIRSYNC`, `SB_LAZYTIME` of `s_flags`; uvfs has no `SB_DIRSYNC`).
    pub fn flags(&self) -> u32 {
        self.flags.load(Ordering::Relaxed) & (SB_RDONLY | SB_SYNCHRONOUS | SB_LAZYTIME)
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

#[cfg(all(test, not(any(loom, feature = "shuttle"))))]
mod tests {
    use std::collections::HashSet;

    use crate::fs::tmpfs::{Tmpfs, TmpfsOptions};

    /// Inode numbers stay unique in each filesystem when threads take them in batches from
    /// two filesystems in turn.
    #[test]
    fn inode_numbers_are_unique_per_filesystem_across_threads_and_filesystems() {
        let opts = TmpfsOptions::default();
        let (a, _ra) = Tmpfs::new_instance(&opts, 0, 0).expect("tmpfs a");
        let (b, _rb) = Tmpfs::new_instance(&opts, 0, 0).expect("tmpfs b");
        const PER_THREAD: usize = 3000;
        let handles: Vec<_> = (0..3)
            .map(|_| {
                let (a, b) = (a.clone(), b.clone());
                std::thread::spawn(move || {
                    let mut got = (Vec::new(), Vec::new());
                    // One from a, two from b: batches run out on calls to either.
                    for _ in 0..PER_THREAD {
                        got.0.push(a.alloc_ino());
                        got.1.push(b.alloc_ino());
                        got.1.push(b.alloc_ino());
                    }
                    got
                })
            })
            .collect();
        let (mut in_a, mut in_b) = (HashSet::new(), HashSet::new());
        let mut checked = 0;
        for h in handles {
            let (xa, xb) = h.join().expect("an allocating thread panicked");
            for i in xa {
                assert!(in_a.insert(i), "inode number {i} handed out twice in a");
                checked += 1;
            }
            for i in xb {
                assert!(in_b.insert(i), "inode number {i} handed out twice in b");
                checked += 1;
            }
        }
        assert_eq!(checked, 3 * 3 * PER_THREAD);
        // The roots took number 1 of each (Linux's tmpfs root is inode 1).
        assert!(!in_a.contains(&1) && !in_b.contains(&1));
    }
}
