//! A counter spread over cache lines, for counts that many threads change and few read
//! (Linux: `percpu_counter`, the per-CPU `mnt_writers` of `struct mnt_pcp`).
//!
//! Each thread adds to its own slot, so threads changing the count of one object (files
//! opened for writing on one mount, say) never write the same cache line; reading the count
//! sums every slot. A thread keeps one slot for its life; with more threads than slots,
//! threads share slots round-robin.
//!
//! # What a sum means
//! A value added on one thread and taken back on another (a file opened on one thread and
//! closed on a second) lands in two slots, so a sum taken while that happens may see the
//! taking back without the adding: a sum is exact only when nothing changes the count
//! meanwhile, and may be below the true count while it changes, even negative (Linux's
//! `mnt_get_writers()` has the same property). A caller can build a handshake on it: a thread
//! that adds, then issues a `SeqCst` fence and loads a flag, and a thread that stores the flag,
//! then issues a `SeqCst` fence and sums, cannot both miss the other (Linux: the `smp_mb()`s
//! of `mnt_get_write_access()` and `mnt_make_readonly()`).
//!
//! # Fast path
//! `add`: one thread-local read (the slot index) and one atomic add on a line only this
//! thread (and the threads sharing its slot) writes.
//! Falls back when: never; `sum` reads every slot.
//! Checked by: the loom and shuttle scenarios in this file (`dist_counter_check`).

use super::atomic::{AtomicI64, Ordering};

/// Slots per spread structure (this counter, `Budget`, `PcpuRef`): a power of two, more than
/// the CPUs of the machines uvfs is measured on.
pub(crate) const SLOTS: usize = 16;

/// One slot, alone in its cache-line pair (x86's adjacent-line prefetch pairs lines).
#[repr(align(128))]
pub(crate) struct Slot<T>(pub(crate) T);

/// The calling thread's slot of `slots`.
#[inline]
pub(crate) fn own_slot<T>(slots: &[Slot<T>]) -> &T {
    &slots[slot_index() % slots.len()].0
}

/// A signed count spread over [`SLOTS`] cache lines.
pub(crate) struct DistCounter {
    slots: Box<[Slot<AtomicI64>]>,
}

impl DistCounter {
    /// A counter at zero.
    pub(crate) fn new() -> DistCounter {
        DistCounter {
            slots: (0..SLOTS).map(|_| Slot(AtomicI64::new(0))).collect(),
        }
    }

    /// Adds `n` (negative to take away) in the calling thread's slot.
    #[inline]
    pub(crate) fn add(&self, n: i64) {
        own_slot(&self.slots).fetch_add(n, Ordering::SeqCst);
    }

    /// The sum of every slot (see the module docs for what it means while the count
    /// changes).
    pub(crate) fn sum(&self) -> i64 {
        self.slots.iter().map(|s| s.0.load(Ordering::SeqCst)).sum()
    }
}

impl std::fmt::Debug for DistCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("DistCounter").field(&self.sum()).finish()
    }
}

/// The calling thread's number, for picking its slot (also `Budget`'s): threads are
/// numbered in the order they first ask.
#[inline]
pub(crate) fn slot_index() -> usize {
    slot::index()
}

#[cfg(not(any(loom, feature = "shuttle")))]
mod slot {
    use std::sync::atomic::{AtomicUsize, Ordering};

    static NEXT: AtomicUsize = AtomicUsize::new(0);

    thread_local! {
        static INDEX: usize = NEXT.fetch_add(1, Ordering::Relaxed);
    }

    #[inline]
    pub(super) fn index() -> usize {
        INDEX.with(|i| *i)
    }
}

/// Under a model checker the numbering is the model's, so it is the same in every execution.
#[cfg(any(loom, feature = "shuttle"))]
mod slot {
    #[cfg(loom)]
    use loom::{lazy_static, sync::atomic::AtomicUsize, thread_local};
    #[cfg(all(not(loom), feature = "shuttle"))]
    use shuttle::{lazy_static, sync::atomic::AtomicUsize, thread_local};
    use std::sync::atomic::Ordering;

    lazy_static! {
        static ref NEXT: AtomicUsize = AtomicUsize::new(0);
    }

    thread_local! {
        static INDEX: usize = NEXT.fetch_add(1, Ordering::Relaxed);
    }

    pub(super) fn index() -> usize {
        INDEX.with(|i| *i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(not(any(loom, feature = "shuttle")))]
    #[test]
    fn threads_use_their_own_slots_and_the_sum_adds_them_all() {
        let c = std::sync::Arc::new(DistCounter::new());
        c.add(5);
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let c = c.clone();
                std::thread::spawn(move || {
                    for _ in 0..1000 {
                        c.add(2);
                        c.add(-1);
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().expect("a counting thread panicked");
        }
        assert_eq!(c.sum(), 5 + 4 * 1000);
        // The five threads wrote at least two different slots (numbering is round-robin).
        let used = c
            .slots
            .iter()
            .filter(|s| s.0.load(Ordering::SeqCst) != 0)
            .count();
        assert!(used >= 2, "{used} slots used by five threads");
    }

    /// The handshake the module docs promise: one thread adds then loads a flag, the other
    /// stores the flag then sums, each with a `SeqCst` fence between; in no execution do
    /// both miss the other. (Without the fences loom finds the execution where both miss:
    /// it models `SeqCst` accesses as acquire/release, only fences as sequentially
    /// consistent.)
    #[cfg(any(loom, feature = "shuttle"))]
    #[test]
    fn dist_counter_check_add_then_flag_against_flag_then_sum() {
        use crate::sync::atomic::fence;
        use crate::sync::model::{check, thread, AtomicBool};
        use std::sync::Arc;
        check(|| {
            let c = Arc::new(DistCounter::new());
            let flag = Arc::new(AtomicBool::new(false));
            let (c2, flag2) = (c.clone(), flag.clone());
            let adder = thread::spawn(move || {
                c2.add(1);
                fence(Ordering::SeqCst);
                flag2.load(Ordering::Relaxed)
            });
            flag.store(true, Ordering::Relaxed);
            fence(Ordering::SeqCst);
            let summed = c.sum();
            let adder_saw_flag = adder.join().expect("the adder panicked");
            assert!(
                adder_saw_flag || summed == 1,
                "the adder missed the flag and the sum ({summed}) missed the add"
            );
            assert_eq!(c.sum(), 1);
        });
    }

    /// A count moved between threads (added on one, taken back on another) sums to the
    /// true count once both are done, and a sum in between is within what the module docs
    /// allow: at most the true count at some moment, never more than was ever added.
    #[cfg(any(loom, feature = "shuttle"))]
    #[test]
    fn dist_counter_check_a_count_moved_between_threads() {
        use crate::sync::model::{check, thread};
        use std::sync::Arc;
        check(|| {
            let c = Arc::new(DistCounter::new());
            let (a, b, r) = (c.clone(), c.clone(), c.clone());
            let reader = thread::spawn(move || r.sum());
            let added = thread::spawn(move || {
                a.add(1);
            });
            added.join().expect("the adding thread panicked");
            let taker = thread::spawn(move || b.add(-1));
            taker.join().expect("the taking thread panicked");
            let seen = reader.join().expect("the reader panicked");
            assert!((-1..=1).contains(&seen), "a sum of {seen}");
            assert_eq!(c.sum(), 0);
        });
    }
}
