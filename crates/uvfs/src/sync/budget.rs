//! A limited count spread over cache lines: a filesystem's space or inode budget, charged and
//! refunded by every create, unlink and page allocation (Linux: tmpfs's `used_blocks`
//! `percpu_counter` checked with `percpu_counter_compare()`).
//!
//! Each thread's slot keeps a small reserve taken from the shared count in chunks; charges
//! and refunds move units between the slot and the caller, so threads creating and removing
//! files side by side write the shared count about once per chunk, not once per file. Near
//! the limit, a charge the slot and a new chunk cannot cover takes the `exact` lock, moves
//! every slot's reserve back to the shared count and charges exactly: a charge fails with
//! ENOSPC only if, at that moment, the units in use plus those held in other threads'
//! refills would pass the limit (with one thread, only if the units in use would).
//!
//! # Fast path
//! `charge`, `refund`: one load of the limit, one compare-and-swap (`refund`: an add) on the
//! calling thread's slot.
//! Falls back when: the slot holds fewer units than a charge (a new chunk from the shared
//! count: one compare-and-swap on it; if the limit leaves no room for a chunk, the `exact`
//! lock); a refund leaves the slot more than two chunks (the excess goes back: one add on
//! the shared count).
//! Checked by: `budget_check` (loom and shuttle) in this file, the unit tests below, and
//! every differential case that fills a small tmpfs (`statfs` counts are exact when nothing
//! else runs).

use super::atomic::{AtomicU64, Ordering};
use super::dist_counter::{own_slot, Slot, SLOTS};
use super::lock::Mutex;

/// The most units a slot takes at a time.
const MAX_CHUNK: u64 = 64;

/// A count of units in use under a limit (0: no limit, and nothing is counted).
pub(crate) struct Budget {
    max: AtomicU64,
    /// Units taken from the limit: those in use plus the slots' reserves.
    taken: AtomicU64,
    /// Each thread's reserve, alone in its cache-line pair.
    slots: Box<[Slot<AtomicU64>]>,
    /// The size of a charge's unit, to size chunks in units of what callers charge (a tmpfs
    /// inode is 1024 bytes of inode space): a chunk is at most [`MAX_CHUNK`] of these.
    unit: u64,
    /// Serialises the exact charges near the limit and [`Budget::exact_used`].
    /// Order: innermost.
    exact: Mutex<()>,
}

impl Budget {
    /// A budget of `max` (0: unlimited) charged in multiples of about `unit`.
    pub(crate) fn new(max: u64, unit: u64) -> Budget {
        Budget {
            max: AtomicU64::new(max),
            taken: AtomicU64::new(0),
            slots: (0..SLOTS).map(|_| Slot(AtomicU64::new(0))).collect(),
            unit: unit.max(1),
            exact: Mutex::new(()),
        }
    }

    /// The limit (0: none).
    pub(crate) fn max(&self) -> u64 {
        self.max.load(Ordering::Relaxed)
    }

    /// How many units a refill takes beyond the charge: small against the limit, so that
    /// the slots together never hold more than half of it.
    fn chunk(&self, max: u64) -> u64 {
        (MAX_CHUNK * self.unit).min(max / (2 * SLOTS as u64))
    }

    fn slot(&self) -> &AtomicU64 {
        own_slot(&self.slots)
    }

    /// Charges `n` units; `false` (nothing charged) if the limit does not leave them.
    #[inline]
    pub(crate) fn charge(&self, n: u64) -> bool {
        let max = self.max.load(Ordering::Relaxed);
        if max == 0 {
            return true;
        }
        let slot = self.slot();
        let mut r = slot.load(Ordering::Relaxed);
        while r >= n {
            match slot.compare_exchange_weak(r, r - n, Ordering::AcqRel, Ordering::Relaxed) {
                Ok(_) => return true,
                Err(now) => r = now,
            }
        }
        let chunk = self.chunk(max);
        if chunk > 0 && Self::take(&self.taken, n + chunk, max) {
            slot.fetch_add(chunk, Ordering::AcqRel);
            return true;
        }
        let _exact = self.exact.lock();
        self.drain();
        Self::take(&self.taken, n, max)
    }

    /// Gives back `n` units charged earlier (on any thread).
    #[inline]
    pub(crate) fn refund(&self, n: u64) {
        let max = self.max.load(Ordering::Relaxed);
        if max == 0 {
            return;
        }
        let chunk = self.chunk(max);
        let slot = self.slot();
        let r = slot.fetch_add(n, Ordering::AcqRel) + n;
        if r > 2 * chunk {
            if let Ok(had) = slot.fetch_update(Ordering::AcqRel, Ordering::Relaxed, |r| {
                (r > chunk).then_some(chunk)
            }) {
                self.taken.fetch_sub(had - chunk, Ordering::AcqRel);
            }
        }
    }

    /// Units in use: exact when nothing charges or refunds meanwhile.
    pub(crate) fn used(&self) -> u64 {
        let held: u64 = self.slots.iter().map(|s| s.0.load(Ordering::Acquire)).sum();
        self.taken.load(Ordering::Acquire).saturating_sub(held)
    }

    /// Units in use, with every slot's reserve given back first, and the limit, under the
    /// `exact` lock held while `f` decides on a new limit (remount).
    pub(crate) fn with_exact<R>(&self, f: impl FnOnce(u64, u64) -> (Option<u64>, R)) -> R {
        let _exact = self.exact.lock();
        self.drain();
        let (new_max, r) = f(
            self.max.load(Ordering::Relaxed),
            self.taken.load(Ordering::Acquire),
        );
        if let Some(m) = new_max {
            self.max.store(m, Ordering::Relaxed);
        }
        r
    }

    /// Moves every slot's reserve back to the shared count. The caller holds `exact`.
    fn drain(&self) {
        for s in self.slots.iter() {
            let r = s.0.swap(0, Ordering::AcqRel);
            if r != 0 {
                self.taken.fetch_sub(r, Ordering::AcqRel);
            }
        }
    }

    fn take(taken: &AtomicU64, n: u64, max: u64) -> bool {
        taken
            .fetch_update(Ordering::AcqRel, Ordering::Relaxed, |t| {
                t.checked_add(n).filter(|&v| v <= max)
            })
            .is_ok()
    }
}

impl std::fmt::Debug for Budget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Budget")
            .field("max", &self.max())
            .field("used", &self.used())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(not(any(loom, feature = "shuttle")))]
    #[test]
    fn one_thread_gets_exactly_the_limit() {
        for max in [1u64, 5, 32, 100, 1000, 100_000] {
            let b = Budget::new(max, 1);
            let mut got = 0;
            while b.charge(1) {
                got += 1;
                assert!(got <= max, "more than {max} charged");
            }
            assert_eq!(got, max);
            assert_eq!(b.used(), max);
            b.refund(1);
            assert_eq!(b.used(), max - 1);
            assert!(b.charge(1), "a refunded unit can be charged again");
            assert!(!b.charge(1));
            for _ in 0..max {
                b.refund(1);
            }
            assert_eq!(b.used(), 0);
            assert_eq!(b.with_exact(|_, used| (None, used)), 0);
        }
    }

    #[cfg(not(any(loom, feature = "shuttle")))]
    #[test]
    fn threads_never_pass_the_limit_and_all_comes_back() {
        use std::sync::Arc;
        const MAX: u64 = 2000;
        const THREADS: usize = 4;
        const ROUNDS: usize = 20_000;
        let b = Arc::new(Budget::new(MAX, 1));
        let live = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let handles: Vec<_> = (0..THREADS)
            .map(|t| {
                let (b, live) = (b.clone(), live.clone());
                std::thread::spawn(move || {
                    let mut mine = 0u64;
                    let mut checks = 0;
                    for i in 0..ROUNDS {
                        // Grow to a few hundred each, then shrink, so the limit is met.
                        if (i / 300 + t) % 2 == 0 {
                            if b.charge(1) {
                                mine += 1;
                                let now =
                                    live.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
                                assert!(now <= MAX, "{now} units in use under a limit of {MAX}");
                                checks += 1;
                            }
                        } else if mine > 0 {
                            mine -= 1;
                            live.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
                            b.refund(1);
                        }
                    }
                    // Hand what is left to the main thread to refund (across threads).
                    (mine, checks)
                })
            })
            .collect();
        let mut left = 0;
        let mut checks = 0;
        for h in handles {
            let (m, c) = h.join().expect("a charging thread panicked");
            left += m;
            checks += c;
        }
        assert!(checks > 1000, "only {checks} charges checked");
        assert_eq!(b.used(), left);
        for _ in 0..left {
            b.refund(1);
        }
        assert_eq!(b.used(), 0);
        // Everything is there to charge again, exactly.
        let mut got = 0;
        while b.charge(1) {
            got += 1;
        }
        assert_eq!(got, MAX);
    }

    /// Two threads charge against a limit of 2 (a unit each) while a third refunds nothing:
    /// both succeed in every execution (no spurious ENOSPC when nothing else holds units),
    /// and a third charge fails.
    #[cfg(any(loom, feature = "shuttle"))]
    #[test]
    fn budget_check_two_charges_fit_a_limit_of_two() {
        use crate::sync::model::{check, thread};
        use std::sync::Arc;
        check(|| {
            let b = Arc::new(Budget::new(2, 1));
            let b2 = b.clone();
            let t = thread::spawn(move || b2.charge(1));
            let here = b.charge(1);
            let there = t.join().expect("the charging thread panicked");
            assert!(here && there, "a charge failed under a limit of 2");
            assert_eq!(b.used(), 2);
            assert!(!b.charge(1), "a third unit was charged under a limit of 2");
        });
    }

    /// A unit charged on one thread and refunded on another while a third charges: the
    /// limit holds in every execution, and all units are back at the end.
    #[cfg(any(loom, feature = "shuttle"))]
    #[test]
    fn budget_check_refund_on_another_thread() {
        use crate::sync::model::{check, thread};
        use std::sync::Arc;
        check(|| {
            let b = Arc::new(Budget::new(1, 1));
            assert!(b.charge(1));
            let (b2, b3) = (b.clone(), b.clone());
            let refunder = thread::spawn(move || b2.refund(1));
            let charger = thread::spawn(move || b3.charge(1));
            refunder.join().expect("the refunding thread panicked");
            let charged = charger.join().expect("the charging thread panicked");
            assert_eq!(b.used(), u64::from(charged));
            if charged {
                b.refund(1);
            }
            assert_eq!(b.used(), 0);
            assert!(b.charge(1), "the unit did not come back");
        });
    }
}
