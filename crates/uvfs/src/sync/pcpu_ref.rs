//! A shared reference whose clones and drops from different threads write different cache
//! lines while its owner keeps it alive (Linux: `percpu_ref`, and the per-CPU `mnt_count`
//! of a mount).
//!
//! An [`PcpuRef`] counts like an `Arc`, but in one slot per thread: a clone adds one to the
//! calling thread's slot, a drop takes one from it. While counting is spread, nobody can
//! tell when the count reaches zero, so the object is never freed then. [`PcpuRef::kill`]
//! (called once its owner, say the mount tree, lets go) ends that: it moves the slots' counts
//! into one central count and marks each slot "killed"; from then on every clone and drop
//! goes to the central count, and the drop that takes it to zero frees the object. A
//! reference that is never killed is never freed: the owner must kill it.
//!
//! # Protocol
//! Slots hold small signed counts (a clone on one thread and its drop on another leave +1
//! and -1 in two slots). `kill` first adds a large bias to the central count, then swaps
//! every slot to [`KILLED`] and adds the swapped values, less the bias, to the central count.
//! A clone or drop that finds its slot killed (its read-modify-write returns a value near
//! `KILLED`; what it added to the killed slot is ignored) applies itself to the central count
//! instead. Because its read-modify-write of the slot is ordered after the swap, which is
//! ordered after the bias, the central count is biased when it gets there, so it cannot reach
//! zero before `kill` has moved every slot's count: the object is freed exactly once, by the
//! drop of the last reference. Every slot operation is `AcqRel` (on x86 the same instruction
//! as a relaxed one), which is what makes "found the slot killed" carry "the bias is in".
//!
//! # Fast path
//! `clone`, `drop`: one thread-local read (the slot index) and one atomic add on a line only
//! this thread (and threads sharing its slot) writes.
//! Falls back when: the reference was killed (an atomic add on the central count).
//! Checked by: `pcpu_ref_check` (loom and shuttle) and the unit tests in this file.
#![allow(unsafe_code)] // Reason: a hand-counted shared allocation, freed by its last reference.

use std::marker::PhantomData;
use std::ops::Deref;
use std::ptr::NonNull;

use super::atomic::{AtomicI64, AtomicU32, Ordering};
use super::dist_counter::{own_slot, Slot, SLOTS};

/// What `kill` leaves in a slot. Live slots stay within a few million of zero.
const KILLED: i64 = i64::MIN / 2;

/// Added to the central count while `kill` moves the slots' counts into it.
const BIAS: i64 = 1 << 60;

fn is_killed(v: i64) -> bool {
    v < KILLED / 2
}

struct Inner<T> {
    slots: [Slot<AtomicI64>; SLOTS],
    central: AtomicI64,
    /// 1 once `kill` started.
    killed: AtomicU32,
    value: T,
}

/// A counted reference to a `T` shared between threads; see the module docs.
pub struct PcpuRef<T> {
    ptr: NonNull<Inner<T>>,
    _owns: PhantomData<Inner<T>>,
}

// SAFETY: like `Arc<T>`: the value is shared (needs `Sync`) and may be dropped on any thread
// (needs `Send`).
unsafe impl<T: Send + Sync> Send for PcpuRef<T> {}
// SAFETY: as above.
unsafe impl<T: Send + Sync> Sync for PcpuRef<T> {}

impl<T> PcpuRef<T> {
    /// The first reference to `value` (count 1, spread).
    pub fn new(value: T) -> PcpuRef<T> {
        let inner = Box::new(Inner {
            slots: std::array::from_fn(|_| Slot(AtomicI64::new(0))),
            central: AtomicI64::new(0),
            killed: AtomicU32::new(0),
            value,
        });
        let r = PcpuRef {
            ptr: NonNull::from(Box::leak(inner)),
            _owns: PhantomData,
        };
        r.slot().fetch_add(1, Ordering::AcqRel);
        r
    }

    fn inner(&self) -> &Inner<T> {
        // SAFETY: this reference is counted, so the allocation is live (module docs).
        unsafe { self.ptr.as_ref() }
    }

    #[inline]
    fn slot(&self) -> &AtomicI64 {
        own_slot(&self.inner().slots)
    }

    /// Ends spread counting: from now on the reference is freed when its count reaches zero.
    /// Only the first call does anything.
    pub fn kill(&self) {
        let inner = self.inner();
        if inner.killed.swap(1, Ordering::AcqRel) != 0 {
            return;
        }
        inner.central.fetch_add(BIAS, Ordering::AcqRel);
        let mut sum = 0i64;
        for s in &inner.slots {
            sum += s.0.swap(KILLED, Ordering::AcqRel);
        }
        let after = inner.central.fetch_add(sum - BIAS, Ordering::AcqRel) + (sum - BIAS);
        // This reference is live and counted, so the count cannot be zero here.
        debug_assert!(after >= 1, "killed with a count of {after}");
    }

    /// True once [`PcpuRef::kill`] ran.
    pub fn is_killed(&self) -> bool {
        self.inner().killed.load(Ordering::Acquire) != 0
    }

    /// The number of references: exact when nothing clones or drops one meanwhile.
    pub fn count(&self) -> i64 {
        let inner = self.inner();
        let central = inner.central.load(Ordering::Acquire);
        if self.is_killed() {
            return central;
        }
        central
            + inner
                .slots
                .iter()
                .map(|s| s.0.load(Ordering::Acquire))
                .filter(|&v| !is_killed(v))
                .sum::<i64>()
    }

    /// True if both refer to the same object.
    pub fn ptr_eq(a: &PcpuRef<T>, b: &PcpuRef<T>) -> bool {
        a.ptr == b.ptr
    }

    /// The object's address (for identity keys).
    pub fn as_ptr(this: &PcpuRef<T>) -> *const T {
        &this.inner().value
    }
}

impl<T> Clone for PcpuRef<T> {
    #[inline]
    fn clone(&self) -> PcpuRef<T> {
        if is_killed(self.slot().fetch_add(1, Ordering::AcqRel)) {
            self.inner().central.fetch_add(1, Ordering::AcqRel);
        }
        PcpuRef {
            ptr: self.ptr,
            _owns: PhantomData,
        }
    }
}

impl<T> Drop for PcpuRef<T> {
    #[inline]
    fn drop(&mut self) {
        if !is_killed(self.slot().fetch_sub(1, Ordering::AcqRel)) {
            return;
        }
        if self.inner().central.fetch_sub(1, Ordering::AcqRel) != 1 {
            return;
        }
        // SAFETY: this was the last reference (module docs): nothing else can reach the
        // allocation, which `new` made with `Box`.
        drop(unsafe { Box::from_raw(self.ptr.as_ptr()) });
    }
}

impl<T> Deref for PcpuRef<T> {
    type Target = T;
    #[inline]
    fn deref(&self) -> &T {
        &self.inner().value
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for PcpuRef<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        (**self).fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Counts the drops of the values it is attached to.
    #[cfg(not(any(loom, feature = "shuttle")))]
    struct Tracked(std::sync::Arc<std::sync::atomic::AtomicUsize>);

    #[cfg(not(any(loom, feature = "shuttle")))]
    impl Drop for Tracked {
        fn drop(&mut self) {
            self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    }

    #[cfg(not(any(loom, feature = "shuttle")))]
    fn tracked() -> (Tracked, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
        let n = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        (Tracked(n.clone()), n)
    }

    #[cfg(not(any(loom, feature = "shuttle")))]
    #[test]
    fn freed_once_after_kill_and_the_last_drop_never_before() {
        let (t, drops) = tracked();
        let a = PcpuRef::new(t);
        let b = a.clone();
        assert_eq!(a.count(), 2);
        drop(b);
        drop(a.clone());
        assert_eq!(a.count(), 1);
        // Never killed: dropping every reference would leak; kill first.
        let c = a.clone();
        a.kill();
        a.kill();
        assert!(c.is_killed());
        assert_eq!(c.count(), 2);
        drop(a);
        assert_eq!(drops.load(std::sync::atomic::Ordering::SeqCst), 0);
        let d = c.clone();
        drop(c);
        assert_eq!(drops.load(std::sync::atomic::Ordering::SeqCst), 0);
        drop(d);
        assert_eq!(drops.load(std::sync::atomic::Ordering::SeqCst), 1);
    }

    #[cfg(not(any(loom, feature = "shuttle")))]
    #[test]
    fn references_moved_between_threads_during_a_kill_free_once() {
        const ROUNDS: usize = 200;
        const THREADS: usize = 4;
        let mut frees = 0;
        for _ in 0..ROUNDS {
            let (t, drops) = tracked();
            let owner = PcpuRef::new(t);
            let (tx, rx) = std::sync::mpsc::channel::<PcpuRef<Tracked>>();
            let rx = std::sync::Arc::new(std::sync::Mutex::new(rx));
            let handles: Vec<_> = (0..THREADS)
                .map(|i| {
                    let (r, tx, rx) = (owner.clone(), tx.clone(), rx.clone());
                    std::thread::spawn(move || {
                        for _ in 0..50 {
                            let c = r.clone();
                            if i % 2 == 0 {
                                tx.send(c).expect("the channel is open");
                            } else if let Ok(got) = rx.lock().expect("no panic").try_recv() {
                                drop(got);
                            }
                        }
                        drop(r);
                    })
                })
                .collect();
            owner.kill();
            for h in handles {
                h.join().expect("a reference thread panicked");
            }
            drop(tx);
            assert_eq!(drops.load(std::sync::atomic::Ordering::SeqCst), 0);
            let left: Vec<_> = rx.lock().expect("no panic").try_iter().collect();
            drop(left);
            assert_eq!(owner.count(), 1);
            drop(owner);
            assert_eq!(drops.load(std::sync::atomic::Ordering::SeqCst), 1);
            frees += 1;
        }
        assert_eq!(frees, ROUNDS);
    }

    /// Fails the model if dropped twice.
    #[cfg(any(loom, feature = "shuttle"))]
    struct Flagged(std::sync::Arc<crate::sync::model::AtomicBool>);

    #[cfg(any(loom, feature = "shuttle"))]
    impl Drop for Flagged {
        fn drop(&mut self) {
            assert!(!self.0.swap(true, Ordering::SeqCst), "freed twice");
        }
    }

    /// A clone and a drop on another thread race with `kill`: the value is freed exactly
    /// once, by the last drop, in every execution.
    #[cfg(any(loom, feature = "shuttle"))]
    #[test]
    fn pcpu_ref_check_kill_against_clone_and_drop() {
        use crate::sync::model::{check, thread, AtomicBool};
        use std::sync::Arc;
        check(|| {
            let freed = Arc::new(AtomicBool::new(false));
            let owner = PcpuRef::new(Flagged(freed.clone()));
            let other = owner.clone();
            let t = thread::spawn(move || {
                let c = other.clone();
                drop(other);
                c
            });
            owner.kill();
            let c = t.join().expect("the reference thread panicked");
            assert!(!freed.load(Ordering::SeqCst), "freed while referenced");
            drop(owner);
            assert!(!freed.load(Ordering::SeqCst), "freed while referenced");
            drop(c);
            assert!(
                freed.load(Ordering::SeqCst),
                "not freed after the last reference"
            );
        });
    }

    /// The last two references dropped on two threads while a third kills: freed once.
    #[cfg(any(loom, feature = "shuttle"))]
    #[test]
    fn pcpu_ref_check_last_drops_race_kill() {
        use crate::sync::model::{check, thread, AtomicBool};
        use std::sync::Arc;
        check(|| {
            let freed = Arc::new(AtomicBool::new(false));
            let a = PcpuRef::new(Flagged(freed.clone()));
            let b = a.clone();
            let k = a.clone();
            let ta = thread::spawn(move || drop(a));
            let tb = thread::spawn(move || drop(b));
            k.kill();
            drop(k);
            ta.join().expect("a dropping thread panicked");
            tb.join().expect("a dropping thread panicked");
            assert!(
                freed.load(Ordering::SeqCst),
                "not freed after the last reference"
            );
        });
    }
}
