//! A sequence count: lock-free readers validate that a group of fields did not change while
//! they read it. Linux: `seqcount_t` in include/linux/seqlock.h.
//!
//! Writers must already be serialised by a lock of their own (the count has no writer lock);
//! the lock guarding each count is named where the count is declared.
//!
//! Reader protocol: `let s = c.read_begin()?; ...read fields with Relaxed loads...;
//! if c.read_retry(s) { fall back }`. Writer protocol: `c.write_begin(); ...store fields...;
//! c.write_end();`. The fences make a reader that observed any store of a write section also
//! observe the odd (or a later) count in `read_retry`.
//!
//! Used by `Inode::attr_seq` (the attribute snapshot of `stat`). Checked, on that production
//! code, by `vfs::dcache_check` (`stat_of_a_cached_path_is_one_snapshot`) under loom, which
//! fails if either fence or the `Acquire`/`Release` of the count is weakened.

use super::atomic::{fence, AtomicU32, Ordering};

/// A sequence count. Even: stable; odd: a writer is inside its section.
#[derive(Debug, Default)]
pub struct SeqCount(AtomicU32);

impl SeqCount {
    /// A count starting at `value` (must be even).
    pub fn new(value: u32) -> Self {
        debug_assert!(value & 1 == 0, "a sequence count starts even");
        SeqCount(AtomicU32::new(value))
    }

    /// Starts a read section: the current count, or `None` while a writer is inside.
    #[inline]
    pub fn read_begin(&self) -> Option<u32> {
        let s = self.0.load(Ordering::Acquire);
        if s & 1 == 0 {
            Some(s)
        } else {
            None
        }
    }

    /// Ends a read section: true if a writer ran since `start` and what was read must be discarded.
    #[inline]
    pub fn read_retry(&self, start: u32) -> bool {
        fence(Ordering::Acquire);
        self.0.load(Ordering::Relaxed) != start
    }

    /// Enters a write section. The caller holds the lock that serialises writers of this count.
    #[inline]
    pub fn write_begin(&self) {
        let s = self.0.load(Ordering::Relaxed);
        debug_assert!(s & 1 == 0, "nested write section");
        self.0.store(s.wrapping_add(1), Ordering::Relaxed);
        fence(Ordering::Release);
    }

    /// Leaves a write section; returns the new (even) count.
    #[inline]
    pub fn write_end(&self) -> u32 {
        let s = self.0.load(Ordering::Relaxed).wrapping_add(1);
        self.0.store(s, Ordering::Release);
        s
    }
}
