//! A sequence lock in one 32-bit word, with eight flag bits beside the count: lock-free
//! readers validate that a group of fields did not change while they read it, and writers
//! exclude each other by making the count odd. Linux: `seqlock_t` in include/linux/seqlock.h
//! (a `seqcount_t` and the spinlock its writers take), here in the word of one count, so that
//! an inode spends four bytes where a count, a lock and a flag word took nine.
//!
//! Bits 8 to 31 are the count (even: stable; odd: a writer is inside its section, which is
//! also the writers' lock); bits 0 to 7 are flags that the owner sets and clears with atomic
//! read-modify-writes at any time, inside a section or not. A flag change never moves the
//! count, so it never makes a reader retry.
//!
//! Reader protocol: `let s = c.read_begin()?; ...read fields with Relaxed loads...;
//! if c.read_retry(s) { fall back }`. Writer protocol: `c.write_lock(); ...store fields...;
//! c.write_unlock();`. The fences make a reader that observed any store of a write section
//! also observe the odd (or a later) count in `read_retry`.
//!
//! The count has 24 bits: a reader that sleeps through exactly 2^23 write sections of one
//! object takes a mixed snapshot for a consistent one (Linux's count has 32 bits and the
//! same limit at 2^31).
//!
//! Used by `Inode::attr` (the attribute snapshot of `stat`). Checked, on that production
//! code, by `vfs::dcache_check` (`stat_of_a_cached_path_is_one_snapshot`) under loom, which
//! fails if either fence or the `Acquire`/`Release` of the count is weakened, and
//! (`attribute_writers_exclude_each_other`) if the lock lets two writers in.

use super::atomic::{fence, AtomicU32, Ordering};

/// One step of the count.
const ONE: u32 = 1 << 8;
/// The flag bits.
pub const FLAG_BITS: u32 = ONE - 1;

/// A sequence lock with flags (see the module docs).
#[derive(Debug, Default)]
pub struct SeqLock(AtomicU32);

impl SeqLock {
    /// An unlocked count of 0 with no flags.
    pub fn new() -> Self {
        SeqLock(AtomicU32::new(0))
    }

    /// Starts a read section: the current count, or `None` while a writer is inside.
    #[inline]
    pub fn read_begin(&self) -> Option<u32> {
        let s = self.0.load(Ordering::Acquire);
        if s & ONE == 0 {
            Some(s & !FLAG_BITS)
        } else {
            None
        }
    }

    /// Ends a read section: true if a writer ran since `start` and what was read must be
    /// discarded.
    #[inline]
    pub fn read_retry(&self, start: u32) -> bool {
        fence(Ordering::Acquire);
        self.0.load(Ordering::Relaxed) & !FLAG_BITS != start
    }

    /// Enters a write section, waiting while another writer is inside (it spins, then yields:
    /// sections are a few stores long).
    #[inline]
    pub fn write_lock(&self) {
        let s = self.0.load(Ordering::Relaxed);
        if s & ONE != 0
            || self
                .0
                .compare_exchange_weak(s, s.wrapping_add(ONE), Ordering::Acquire, Ordering::Relaxed)
                .is_err()
        {
            self.write_lock_slow();
        }
        fence(Ordering::Release);
    }

    #[cold]
    #[inline(never)]
    fn write_lock_slow(&self) {
        let mut spins = 0u32;
        loop {
            let s = self.0.load(Ordering::Relaxed);
            if s & ONE == 0
                && self
                    .0
                    .compare_exchange_weak(
                        s,
                        s.wrapping_add(ONE),
                        Ordering::Acquire,
                        Ordering::Relaxed,
                    )
                    .is_ok()
            {
                return;
            }
            if spins < 64 && super::thread::SPIN {
                spins += 1;
                super::hint::spin_loop();
            } else {
                // The writer inside may have been preempted (more threads than CPUs).
                super::thread::yield_now();
            }
        }
    }

    /// Leaves a write section (the count becomes even again).
    #[inline]
    pub fn write_unlock(&self) {
        let old = self.0.fetch_add(ONE, Ordering::Release);
        debug_assert!(old & ONE != 0, "unlock outside a write section");
    }

    /// The flag bits (one load).
    #[inline]
    pub fn flags(&self, order: Ordering) -> u32 {
        self.0.load(order) & FLAG_BITS
    }

    /// Sets flag bits `f` (within [`FLAG_BITS`]); returns the flags before.
    #[inline]
    pub fn set_flags(&self, f: u32, order: Ordering) -> u32 {
        debug_assert!(f & !FLAG_BITS == 0);
        self.0.fetch_or(f, order) & FLAG_BITS
    }

    /// Clears flag bits `f` (within [`FLAG_BITS`]).
    #[inline]
    pub fn clear_flags(&self, f: u32, order: Ordering) {
        debug_assert!(f & !FLAG_BITS == 0);
        self.0.fetch_and(!f, order);
    }
}

#[cfg(all(test, not(any(loom, feature = "shuttle"))))]
mod tests {
    use super::*;

    /// Flags never move the count, and the count never touches the flags, across its wrap.
    #[test]
    fn flags_and_count_stay_apart() {
        let c = SeqLock::new();
        c.write_lock();
        c.write_unlock();
        c.set_flags(0x81, Ordering::Relaxed);
        let s = c.read_begin().expect("stable");
        assert_ne!(s, 0, "a section left the count at 0");
        c.set_flags(0x02, Ordering::Relaxed);
        // Setting flags already set changes nothing (no carry into the count).
        assert_eq!(c.set_flags(0x83, Ordering::Relaxed), 0x83);
        c.clear_flags(0x01, Ordering::Relaxed);
        assert!(!c.read_retry(s), "a flag change made a reader retry");
        c.write_lock();
        assert!(
            c.read_begin().is_none(),
            "a section in progress reads as stable"
        );
        c.write_unlock();
        assert!(c.read_retry(s), "a write section went unseen");
        assert_eq!(c.flags(Ordering::Relaxed), 0x82);
        // Near the top of the count, a section wraps it to 0 and keeps the flags.
        c.0.store((!FLAG_BITS - ONE) | 0x82, Ordering::Relaxed);
        c.write_lock();
        c.write_unlock();
        assert_eq!(c.0.load(Ordering::Relaxed), 0x82);
        assert_eq!(c.read_begin(), Some(0));
    }

    /// Two threads' sections never overlap: each checks that it is alone and adds to a count
    /// with a load and a store, many times, both starting together. Nothing panics inside a
    /// section (a writer that did would hold the lock, and the other would wait for ever).
    #[test]
    fn writers_exclude_each_other() {
        use std::sync::atomic::{AtomicBool, AtomicU64};
        use std::sync::Barrier;
        let c = SeqLock::new();
        let inside = AtomicBool::new(false);
        let overlaps = AtomicU64::new(0);
        let sum = AtomicU64::new(0);
        let start = Barrier::new(2);
        const N: u32 = 200_000;
        let checks = std::thread::scope(|s| {
            let run = || {
                start.wait();
                let mut n = 0u32;
                for _ in 0..N {
                    c.write_lock();
                    if inside.swap(true, Ordering::Relaxed) {
                        overlaps.fetch_add(1, Ordering::Relaxed);
                    }
                    let v = sum.load(Ordering::Relaxed);
                    sum.store(v + 1, Ordering::Relaxed);
                    n += 1;
                    inside.store(false, Ordering::Relaxed);
                    c.write_unlock();
                }
                n
            };
            let a = s.spawn(run);
            let b = s.spawn(run);
            a.join().expect("writer a") + b.join().expect("writer b")
        });
        assert_eq!(checks, 2 * N);
        assert_eq!(overlaps.load(Ordering::Relaxed), 0, "two writers inside");
        assert_eq!(
            sum.load(Ordering::Relaxed),
            u64::from(2 * N),
            "a section's update was lost"
        );
        assert_eq!(c.read_begin(), Some((4 * N).wrapping_mul(ONE) & !FLAG_BITS));
    }
}
