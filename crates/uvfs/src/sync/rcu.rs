//! Epoch-based reclamation for the lock-free dcache (the RCU analogue): a [`Guard`] covers a
//! whole path walk; memory [`retire`]d while a guard that could see it is active is freed only
//! after that guard ends.
//!
//! Plain build: `seize`. [`read`] enters the one process-wide collector; [`protect`] is
//! `seize::Guard::protect` (a load, strengthened to `SeqCst` as seize requires); [`retire`]
//! hands the pointer to the collector.
//!
//! Under loom or shuttle (`seize` cannot run inside a model): a guard is a token, [`protect`]
//! is the same `SeqCst` load, and [`retire`] queues the pointer on the current OS thread. The
//! scenario runner calls `barrier` once every scenario thread has been joined and every
//! object of the scenario dropped, when no reader can hold anything, and that frees the queue.
//! Memory is therefore never freed while a model runs: the models check the publication and
//! lookup protocol, not reclamation.
#![allow(unsafe_code)] // Reason: retirement hands raw pointers to their reclaimers.

use super::atomic::{AtomicPtr, Ordering};

#[cfg(not(any(loom, feature = "shuttle")))]
mod imp {
    use std::sync::LazyLock;

    pub(crate) use seize::Collector;
    use seize::Guard as _;

    use super::{AtomicPtr, Ordering};

    /// How many retired objects a thread gathers before it tries to free them. Each try
    /// starts with seize's heavy barrier, a `membarrier(2)` that interrupts every CPU running
    /// the process: with seize's default of 32 a create and unlink (four or five retired
    /// objects: a negative dentry, chain nodes, names) paid one every few operations, about a
    /// fifth of the time of two threads creating files (issue 7). A batch of 1024 objects of
    /// at most a few hundred bytes keeps well under a megabyte per thread waiting. 4096 was
    /// measured too (2026-11-25, `uvfs bench scale unlink2 unlink1 --copies 1,2 --iterations
    /// 8`, alternated twice, fast cross-CPU state): unlink2 on 2 copies 2-16% faster (leaving
    /// out one threads-mode run of 1024 that halved), unlink1 no different, for four times the
    /// memory a thread can leave waiting in a batch it does not fill (an idle thread's partial
    /// batch waits until it retires more); not taken.
    const RETIRE_BATCH: usize = 1024;

    /// The epoch domain of every lock-free structure of the VFS.
    static COLLECTOR: LazyLock<Collector> =
        LazyLock::new(|| Collector::new().batch_size(RETIRE_BATCH));

    /// A read-side critical section.
    pub(crate) type Guard = seize::LocalGuard<'static>;

    #[inline]
    pub(crate) fn read() -> Guard {
        COLLECTOR.enter()
    }

    #[inline(always)]
    pub(crate) fn protect<T>(guard: &Guard, ptr: &AtomicPtr<T>, order: Ordering) -> *mut T {
        guard.protect(ptr, order)
    }

    /// # Safety
    /// As [`super::retire`].
    #[inline]
    pub(crate) unsafe fn retire<T>(ptr: *mut T, reclaim: unsafe fn(*mut T, &Collector)) {
        // SAFETY: guaranteed by the caller.
        unsafe { COLLECTOR.retire(ptr, reclaim) }
    }

    /// Starts freeing what this thread retired so far, without waiting for a full batch.
    pub(crate) fn flush() {
        COLLECTOR.enter().flush();
    }

    /// # Safety
    /// As `seize::reclaim::boxed`: `ptr` came from `Box::into_raw` and is unreachable.
    pub(crate) unsafe fn reclaim_boxed<T>(ptr: *mut T, collector: &Collector) {
        // SAFETY: guaranteed by the caller.
        unsafe { seize::reclaim::boxed(ptr, collector) }
    }
}

#[cfg(any(loom, feature = "shuttle"))]
mod imp {
    use std::cell::RefCell;

    use super::{AtomicPtr, Ordering};

    /// Stands for seize's collector in reclaimer signatures.
    pub(crate) struct Collector(());

    /// A read-side critical section: nothing to do, nothing is freed while a model runs.
    pub(crate) struct Guard(());

    type Reclaim = Box<dyn FnOnce()>;

    thread_local! {
        /// Pointers retired on this OS thread, freed by `barrier`.
        static RETIRED: RefCell<Vec<Reclaim>> = const { RefCell::new(Vec::new()) };
    }

    pub(crate) fn read() -> Guard {
        Guard(())
    }

    pub(crate) fn protect<T>(_guard: &Guard, ptr: &AtomicPtr<T>, _order: Ordering) -> *mut T {
        // What seize does: every protected load is SeqCst.
        ptr.load(Ordering::SeqCst)
    }

    /// # Safety
    /// As [`super::retire`].
    pub(crate) unsafe fn retire<T: 'static>(ptr: *mut T, reclaim: unsafe fn(*mut T, &Collector)) {
        let free: Reclaim = Box::new(move || {
            // SAFETY: `barrier` runs this only when no reader is left, and the caller
            // promised `ptr` is unreachable and retired once.
            unsafe { reclaim(ptr, &Collector(())) }
        });
        RETIRED.with(|r| r.borrow_mut().push(free));
    }

    /// # Safety
    /// `ptr` came from `Box::into_raw` and is unreachable.
    pub(crate) unsafe fn reclaim_boxed<T>(ptr: *mut T, _collector: &Collector) {
        // SAFETY: guaranteed by the caller.
        drop(unsafe { Box::from_raw(ptr) });
    }

    /// Nothing to start: `barrier` frees.
    pub(crate) fn flush() {}

    /// Frees everything retired on this OS thread, including what freeing it retires.
    #[cfg(test)]
    pub(crate) fn barrier() {
        loop {
            let batch = RETIRED.with(|r| std::mem::take(&mut *r.borrow_mut()));
            if batch.is_empty() {
                return;
            }
            for free in batch {
                free();
            }
        }
    }
}

pub(crate) use imp::{Collector, Guard};

/// Enters a read-side critical section covering a whole path walk.
#[inline]
pub(crate) fn read() -> Guard {
    imp::read()
}

/// Loads a pointer that stays valid while `guard` lives, if what it points to is retired
/// only after being unpublished.
#[inline(always)]
pub(crate) fn protect<T>(guard: &Guard, ptr: &AtomicPtr<T>, order: Ordering) -> *mut T {
    imp::protect(guard, ptr, order)
}

/// Hands `ptr` to `reclaim` once no guard that could have seen it is active.
///
/// # Safety
/// `ptr` is no longer reachable by a reader that starts now, nothing else retires or frees
/// it, and `reclaim` may free it.
#[inline]
pub(crate) unsafe fn retire<T: 'static>(ptr: *mut T, reclaim: unsafe fn(*mut T, &Collector)) {
    // SAFETY: guaranteed by the caller.
    unsafe { imp::retire(ptr, reclaim) }
}

/// Starts freeing what this thread retired, without waiting for a full batch: after a
/// retirement that holds much memory (a grown table's old array and chains), which would
/// otherwise wait for the batch's other 1023 retirements.
pub(crate) fn flush() {
    imp::flush()
}

/// A reclaimer that drops a `Box<T>` (for [`retire`]).
///
/// # Safety
/// `ptr` came from `Box::into_raw` and is unreachable.
pub(crate) unsafe fn reclaim_boxed<T>(ptr: *mut T, collector: &Collector) {
    // SAFETY: guaranteed by the caller.
    unsafe { imp::reclaim_boxed(ptr, collector) }
}

/// Frees everything retired so far on this OS thread. Only the model runner calls it, after
/// the scenario's threads are joined and its objects dropped.
#[cfg(all(test, any(loom, feature = "shuttle")))]
pub(crate) fn barrier() {
    imp::barrier();
}
