//! A reader-writer lock whose readers on different threads write different cache lines while
//! no writer comes: the read-biased lock of Dice and Kogan ("BRAVO: Biased Locking for
//! Reader-Writer Locks", USENIX ATC 2019) over `parking_lot`'s lock. Linux's page cache
//! reads take no lock at all (`filemap_read()` looks pages up under RCU); a tmpfs file's page
//! map here is a `BTreeMap` that writers change in place, so readers must exclude writers,
//! and an ordinary reader-writer lock makes every reader write the lock word: two threads
//! reading their own pages of one file (will-it-scale's pread3) bounce that line, and two
//! copies did less than one.
//!
//! # Protocol
//! - The lock is *biased* or not (`bias`). A reader of a biased lock publishes itself in the
//!   global table of visible readers: its own row (one cache-line pair per thread, as the
//!   spread counters' slots), the column of the lock's address, written from 0 to the lock's
//!   address with a compare-and-swap. It then loads `bias` again; still set, it holds the
//!   lock without touching it. Its release writes 0 back to its slot.
//! - Any other reader (lock not biased, slot taken by another lock, `bias` cleared meanwhile)
//!   takes the inner lock shared. If the inner lock was held by someone else as it came
//!   (readers overlap), then holding it, it sets `bias` once the inhibit time has passed.
//!   Only overlapping readers gain from the bias: a thread alone reading and writing one
//!   file would pay a revocation every few writes (measured: an alternating 64-byte pread
//!   and pwrite took twice as long with the bias set by every read).
//! - A writer takes the inner lock exclusively. If `bias` is set, it clears it and waits until
//!   no slot of the lock's column holds this lock (the revocation), then inhibits the bias
//!   for [`INHIBIT_FACTOR`] times as long as the revocation took, so that writers spend at
//!   most about a tenth of their time revoking (the paper's policy).
//! - Between the reader's write of its slot and its second load of `bias`, and between the
//!   writer's store to `bias` and its loads of the slots, stands a `SeqCst` fence: of a
//!   reader and a writer that race, at least one sees the other (the reader falls back, or
//!   the writer waits for it). A reader's release of its slot is a release store, which the
//!   writer's acquire load that finds the slot free synchronises with.
//! - The last writer's changes reach a visible reader through `bias`: the reader that set it
//!   held the inner lock after that writer (so saw its changes) and set it with a release
//!   store, which the visible reader's acquire load of `bias` synchronises with. `bias` is set
//!   only under the inner lock held shared, so no writer is inside then, and a writer sees
//!   it through the inner lock's release and acquire.
//!
//! # Fast path
//! `read` of a biased lock: one load of `bias`, a thread-local read (the row), a
//! compare-and-swap and a load on the thread's own row, and a store there to release.
//! Falls back when: the lock is not biased (a writer revoked it less than the inhibit time
//! ago, or no reader found it held by another since it was made or revoked), or the
//! thread's slot for the lock's column holds another lock (two biased read locks of one
//! column held at once).
//! `write` of a lock that is not biased: `parking_lot`'s write lock and one load.
//! Checked by: `biased_check` (loom and shuttle: the data is a tracked cell, so a reader and
//! a writer inside together fail the model) and the unit tests in this file.
//!
//! Like `parking_lot`'s lock, a read must not be taken recursively: a writer waiting for the
//! first read (as a visible reader or on the inner lock) blocks the second.
#![allow(unsafe_code)] // Reason: the data is reached through an `UnsafeCell` by the protocol's holders.

use std::ops::{Deref, DerefMut};

use super::atomic::{fence, AtomicBool, AtomicU64, AtomicUsize, Ordering};
use super::dist_counter::{slot_index, Slot};
use super::lock::{RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Rows of the table of visible readers: threads share a row round-robin past this many.
const ROWS: usize = 32;
/// Slots in a row (one cache-line pair of `usize`s): locks share a column by address hash.
const COLUMNS: usize = 16;
/// A revocation inhibits the bias for this many times as long as it took.
const INHIBIT_FACTOR: u64 = 9;

/// The table of visible readers: row per thread, column per lock (by address).
struct Table {
    rows: [Slot<[AtomicUsize; COLUMNS]>; ROWS],
}

impl Table {
    #[cfg(any(loom, feature = "shuttle"))]
    fn new() -> Table {
        Table {
            rows: std::array::from_fn(|_| Slot(std::array::from_fn(|_| AtomicUsize::new(0)))),
        }
    }
}

#[cfg(not(any(loom, feature = "shuttle")))]
#[inline(always)]
fn table() -> &'static Table {
    static TABLE: Table = Table {
        rows: [const { Slot([const { AtomicUsize::new(0) }; COLUMNS]) }; ROWS],
    };
    &TABLE
}

/// Under a model checker the table's atomics are the model's, made once per execution.
#[cfg(loom)]
fn table() -> &'static Table {
    loom::lazy_static! {
        static ref TABLE: Table = Table::new();
    }
    &TABLE
}

#[cfg(all(not(loom), feature = "shuttle"))]
fn table() -> &'static Table {
    shuttle::lazy_static! {
        static ref TABLE: Table = Table::new();
    }
    &TABLE
}

/// Nanoseconds on a monotonic clock, for the inhibit time; always 0 under a model checker,
/// where a revocation never inhibits (time is not the model's).
#[cfg(not(any(loom, feature = "shuttle")))]
fn now_ns() -> u64 {
    static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    let start = *START.get_or_init(std::time::Instant::now);
    u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(any(loom, feature = "shuttle"))]
fn now_ns() -> u64 {
    0
}

/// The data cell: std's, or loom's tracked cell (a reader and a writer inside at once fail
/// the model).
#[cfg(not(loom))]
mod cell {
    pub(super) struct Cell<T>(std::cell::UnsafeCell<T>);
    pub(super) struct Shared<T>(*const T);
    pub(super) struct Exclusive<T>(*mut T);

    impl<T> Cell<T> {
        pub(super) const fn new(value: T) -> Self {
            Cell(std::cell::UnsafeCell::new(value))
        }
        pub(super) fn shared(&self) -> Shared<T> {
            Shared(self.0.get())
        }
        pub(super) fn exclusive(&self) -> Exclusive<T> {
            Exclusive(self.0.get())
        }
    }

    impl<T> Shared<T> {
        /// # Safety
        /// No `Exclusive` of the cell is dereferenced while the result lives.
        pub(super) unsafe fn get(&self) -> &T {
            // SAFETY: the caller's.
            unsafe { &*self.0 }
        }
    }

    impl<T> Exclusive<T> {
        /// # Safety
        /// Nothing else of the cell is dereferenced while the result lives.
        pub(super) unsafe fn get(&self) -> &T {
            // SAFETY: the caller's.
            unsafe { &*self.0 }
        }
        /// # Safety
        /// As `get`.
        pub(super) unsafe fn get_mut(&mut self) -> &mut T {
            // SAFETY: the caller's.
            unsafe { &mut *self.0 }
        }
    }
}

#[cfg(loom)]
mod cell {
    pub(super) struct Cell<T>(loom::cell::UnsafeCell<T>);
    pub(super) struct Shared<T>(loom::cell::ConstPtr<T>);
    pub(super) struct Exclusive<T>(loom::cell::MutPtr<T>);

    impl<T> Cell<T> {
        pub(super) fn new(value: T) -> Self {
            Cell(loom::cell::UnsafeCell::new(value))
        }
        pub(super) fn shared(&self) -> Shared<T> {
            Shared(self.0.get())
        }
        pub(super) fn exclusive(&self) -> Exclusive<T> {
            Exclusive(self.0.get_mut())
        }
    }

    impl<T> Shared<T> {
        /// # Safety
        /// No `Exclusive` of the cell is dereferenced while the result lives.
        pub(super) unsafe fn get(&self) -> &T {
            // SAFETY: the caller's; loom checks it.
            unsafe { self.0.deref() }
        }
    }

    impl<T> Exclusive<T> {
        /// # Safety
        /// Nothing else of the cell is dereferenced while the result lives.
        pub(super) unsafe fn get(&self) -> &T {
            // SAFETY: the caller's; loom checks it.
            unsafe { &*self.0.deref() }
        }
        /// # Safety
        /// As `get`.
        pub(super) unsafe fn get_mut(&mut self) -> &mut T {
            // SAFETY: the caller's; loom checks it.
            unsafe { self.0.deref() }
        }
    }
}

/// A reader-writer lock biased towards readers; see the module docs.
pub(crate) struct BiasedRwLock<T> {
    /// Readers may publish themselves in the table instead of taking `lock`.
    bias: AtomicBool,
    /// `now_ns()` before which a reader does not set `bias` again.
    inhibit_until: AtomicU64,
    /// Protects: `data` (with the visible readers while `bias` is set). Order: as the lock
    /// this one replaces (the caller's).
    lock: RwLock<()>,
    data: cell::Cell<T>,
}

// SAFETY: as `RwLock<T>`: the data is handed out shared to several threads (needs `Sync`)
// and exclusively to one at a time (needs `Send`).
unsafe impl<T: Send + Sync> Sync for BiasedRwLock<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Send for BiasedRwLock<T> {}

impl<T: Default> Default for BiasedRwLock<T> {
    fn default() -> Self {
        BiasedRwLock::new(T::default())
    }
}

impl<T> BiasedRwLock<T> {
    /// A lock around `value`, not biased (the first read sets the bias).
    pub(crate) fn new(value: T) -> BiasedRwLock<T> {
        BiasedRwLock {
            bias: AtomicBool::new(false),
            inhibit_until: AtomicU64::new(0),
            lock: RwLock::new(()),
            data: cell::Cell::new(value),
        }
    }

    #[inline(always)]
    fn column(&self) -> usize {
        // Locks are 8-byte aligned at least; fold the bits above that.
        let a = std::ptr::from_ref(self) as usize;
        ((a >> 3) ^ (a >> 10)) % COLUMNS
    }

    /// Shared access.
    #[inline]
    pub(crate) fn read(&self) -> ReadGuard<'_, T> {
        if self.bias.load(Ordering::Relaxed) {
            let slot = &table().rows[slot_index() % ROWS].0[self.column()];
            let me = std::ptr::from_ref(self) as usize;
            if slot
                .compare_exchange(0, me, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
            {
                fence(Ordering::SeqCst);
                if self.bias.load(Ordering::Acquire) {
                    return ReadGuard {
                        data: self.data.shared(),
                        hold: ReadHold::Visible(slot),
                    };
                }
                slot.store(0, Ordering::Release);
            }
        }
        self.read_slow()
    }

    #[cold]
    fn read_slow(&self) -> ReadGuard<'_, T> {
        // Another holder now: readers may overlap, and only then does the bias pay. A thread
        // that alone reads and writes the file never sets it, so its writes never revoke.
        let busy = self.lock.is_locked();
        let guard = self.lock.read();
        if busy {
            self.bias_if_due();
        }
        ReadGuard {
            data: self.data.shared(),
            hold: ReadHold::Inner(guard),
        }
    }

    /// Sets the bias unless a revocation inhibits it. The caller holds the inner lock shared:
    /// no writer is inside, and the release store carries what the last writer changed to
    /// the visible readers that load the bias.
    fn bias_if_due(&self) {
        if !self.bias.load(Ordering::Relaxed)
            && now_ns() >= self.inhibit_until.load(Ordering::Relaxed)
        {
            self.bias.store(true, Ordering::Release);
        }
    }

    /// Exclusive access.
    #[inline]
    pub(crate) fn write(&self) -> WriteGuard<'_, T> {
        let guard = self.lock.write();
        if self.bias.load(Ordering::Relaxed) {
            self.revoke();
        }
        WriteGuard {
            data: self.data.exclusive(),
            _guard: guard,
        }
    }

    /// Clears the bias and waits for the visible readers of this lock to leave (the inner
    /// lock is held exclusively).
    #[cold]
    fn revoke(&self) {
        let start = now_ns();
        self.bias.store(false, Ordering::Relaxed);
        fence(Ordering::SeqCst);
        let me = std::ptr::from_ref(self) as usize;
        let column = self.column();
        for row in &table().rows {
            let mut spins = 0u32;
            while row.0[column].load(Ordering::Acquire) == me {
                spins += 1;
                if spins < 64 {
                    super::hint::spin_loop();
                } else {
                    super::thread::yield_now();
                }
            }
        }
        let end = now_ns();
        let took = end.saturating_sub(start);
        self.inhibit_until.store(
            end.saturating_add(took.saturating_mul(INHIBIT_FACTOR)),
            Ordering::Relaxed,
        );
    }

    /// Whether readers may currently skip the inner lock (for tests).
    #[cfg(all(test, not(any(loom, feature = "shuttle"))))]
    pub(crate) fn is_biased(&self) -> bool {
        self.bias.load(Ordering::SeqCst)
    }
}

enum ReadHold<'a> {
    /// Published in the table: the slot to clear.
    Visible(&'a AtomicUsize),
    /// The inner lock, shared.
    Inner(#[allow(dead_code)] RwLockReadGuard<'a, ()>),
}

/// Shared access to a [`BiasedRwLock`]'s data.
pub(crate) struct ReadGuard<'a, T> {
    data: cell::Shared<T>,
    hold: ReadHold<'a>,
}

impl<T> Deref for ReadGuard<'_, T> {
    type Target = T;

    #[inline]
    fn deref(&self) -> &T {
        // SAFETY: a visible reader or a holder of the inner lock shared: no writer is inside
        // (module docs), and none comes until this guard is dropped.
        unsafe { self.data.get() }
    }
}

impl<T> Drop for ReadGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        if let ReadHold::Visible(slot) = self.hold {
            slot.store(0, Ordering::Release);
        }
    }
}

/// Exclusive access to a [`BiasedRwLock`]'s data.
pub(crate) struct WriteGuard<'a, T> {
    data: cell::Exclusive<T>,
    _guard: RwLockWriteGuard<'a, ()>,
}

impl<T> Deref for WriteGuard<'_, T> {
    type Target = T;

    #[inline]
    fn deref(&self) -> &T {
        // SAFETY: the inner lock is held exclusively and no visible reader is left.
        unsafe { self.data.get() }
    }
}

impl<T> DerefMut for WriteGuard<'_, T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as `deref`.
        unsafe { self.data.get_mut() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(not(any(loom, feature = "shuttle")))]
    #[test]
    fn a_read_biases_the_lock_and_a_write_revokes_it() {
        let l = BiasedRwLock::new(5u32);
        assert!(!l.is_biased(), "not before the first read");
        assert_eq!(*l.read(), 5);
        assert!(!l.is_biased(), "not by a reader alone");
        {
            let _first = l.read();
            assert_eq!(*l.read(), 5, "a second reader meanwhile");
        }
        assert!(l.is_biased(), "by a reader that found another");
        {
            let r = l.read();
            assert!(matches!(r.hold, ReadHold::Visible(_)), "a visible reader");
            assert_eq!(*r, 5);
        }
        *l.write() = 6;
        assert!(!l.is_biased(), "revoked");
        assert_eq!(*l.read(), 6);
    }

    /// Readers on several threads and a writer: each reader checks that the two halves of
    /// the value, which the writer changes together, agree.
    #[cfg(not(any(loom, feature = "shuttle")))]
    #[test]
    fn readers_never_see_a_write_half_done() {
        use std::sync::atomic::AtomicBool as StdBool;
        const WRITES: u64 = 20_000;
        let l = std::sync::Arc::new(BiasedRwLock::new((0u64, 0u64)));
        let done = std::sync::Arc::new(StdBool::new(false));
        let readers: Vec<_> = (0..3)
            .map(|_| {
                let (l, done) = (l.clone(), done.clone());
                std::thread::spawn(move || {
                    let mut checks = 0u64;
                    while !done.load(std::sync::atomic::Ordering::Relaxed) || checks == 0 {
                        let r = l.read();
                        let a = r.0;
                        for _ in 0..20 {
                            std::hint::spin_loop();
                        }
                        let b = std::hint::black_box(&*r).1;
                        // A torn read shows through the data the writer changes in two
                        // steps.
                        assert_eq!(a, b, "a reader saw a write half done");
                        checks += 1;
                    }
                    checks
                })
            })
            .collect();
        for i in 1..=WRITES {
            let mut w = l.write();
            w.0 = i;
            std::hint::black_box(&mut *w);
            for _ in 0..20 {
                std::hint::spin_loop();
            }
            w.1 = i;
            drop(w);
            if i % 64 == 0 {
                std::thread::yield_now();
            }
        }
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        let checks: u64 = readers
            .into_iter()
            .map(|r| r.join().expect("a reader panicked"))
            .sum();
        assert!(checks >= 3, "each reader checked");
        assert_eq!(*l.read(), (WRITES, WRITES));
    }

    /// A visible reader and a writer: the writer never changes the data while the reader is
    /// inside (the cell is tracked under loom; a torn pair fails under shuttle).
    #[cfg(any(loom, feature = "shuttle"))]
    #[test]
    fn biased_check_a_writer_waits_for_a_visible_reader() {
        use crate::sync::model::{check, thread};
        use std::sync::Arc;
        check(|| {
            let l = Arc::new(BiasedRwLock::new((0u32, 0u32)));
            // Bias it, as a reader through the inner lock that found another there does (the
            // model's lock takes no second read on one thread).
            {
                let _shared = l.lock.read();
                l.bias_if_due();
            }
            let r = l.clone();
            let t = thread::spawn(move || {
                let g = r.read();
                let a = g.0;
                // A point where the model may run the writer.
                thread::yield_now();
                assert_eq!(a, g.1, "a reader saw a write half done");
                a
            });
            {
                let mut w = l.write();
                w.0 = 1;
                thread::yield_now();
                w.1 = 1;
            }
            let seen = t.join().expect("the reader panicked");
            assert!(seen <= 1);
            assert_eq!(*l.read(), (1, 1));
        });
    }

    /// A reader that may come after the bias is set sees the last write before it: the bias
    /// is set with a release store (loom flags a relaxed one: the visible reader's read of
    /// the data would not be ordered after the writer's write).
    #[cfg(any(loom, feature = "shuttle"))]
    #[test]
    fn biased_check_a_visible_reader_sees_the_last_write() {
        use crate::sync::model::{check, thread};
        use std::sync::Arc;
        check(|| {
            let l = Arc::new(BiasedRwLock::new(0u32));
            let r = l.clone();
            let t = thread::spawn(move || *r.read());
            *l.write() = 1;
            // A reader through the inner lock that found another there sets the bias.
            {
                let _shared = l.lock.read();
                l.bias_if_due();
            }
            let seen = t.join().expect("the reader panicked");
            assert!(seen <= 1);
        });
    }

    /// Two readers, one of which sets the bias again, and a writer.
    #[cfg(any(loom, feature = "shuttle"))]
    #[test]
    fn biased_check_readers_and_a_writer_with_the_bias_set_again() {
        use crate::sync::model::{check, thread};
        use std::sync::Arc;
        check(|| {
            let l = Arc::new(BiasedRwLock::new(0u32));
            let r = l.clone();
            let t = thread::spawn(move || {
                let a = *r.read();
                let b = *r.read();
                assert!(a <= b, "a read went back in time");
            });
            *l.write() = 1;
            let _ = *l.read();
            *l.write() = 2;
            t.join().expect("the reader panicked");
            assert_eq!(*l.read(), 2);
        });
    }
}
