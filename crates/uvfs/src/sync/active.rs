//! Active references without a shared count: which objects' callbacks are running, kept in
//! slots of the threads running them, so that a remover can wait for exactly those (Linux:
//! kernfs's `kernfs_get_active()`/`kernfs_put_active()` and `kernfs_drain()`, which count
//! in one atomic per node that every reader writes).
//!
//! A thread that is about to run an object's callback publishes the object's key (its
//! address) in a slot of its own ([`Registration::enter`]), then checks the object's
//! deactivated flag; if it is set, it withdraws and reports the object gone. A remover sets
//! the flag, then looks at every registered thread's slots and waits until none holds the
//! key of an object it removes ([`Domain::drain`]).
//!
//! # Protocol
//! The reader's store of its key and load of the flag are `SeqCst`, and so are the remover's
//! store of the flag and loads of the slots. In the single order of `SeqCst` operations
//! either the reader's store comes first, and then the remover's later load of that slot
//! sees the key and waits for it to go, or the remover's flag store comes first, and then the
//! reader's later load sees the flag and the callback does not run: the two cannot both miss
//! the other (Dekker's handshake; Linux's `mnt_get_write_access()` uses the same). A slot
//! holds its key from before the flag check until after the callback returns, so every
//! callback that passed the check is seen while it runs, whatever the order in which the
//! remover reads the slots.
//!
//! A remover does not wait for its own thread's slots: a callback that removes its own node
//! is running the call that removes it (Linux: `kernfs_remove_self()`), and waiting for it
//! would never end. It also empties its own slots that hold removed keys before it waits, so
//! that no other remover waits for its callback either: two callbacks removing each other's
//! node (or the same one) on two threads would otherwise wait for each other. Callbacks of
//! other objects are never waited for, so a callback of one node may remove another.
//!
//! # Fast path
//! `enter` and the guard's drop: a `SeqCst` store and a relaxed store to a cache-line pair
//! only this thread writes, and one `SeqCst` load of the object's flag word, which only a
//! removal writes. Nothing is written that another thread reading the same object writes.
//! Checked by: `active_check` (loom and shuttle) and the unit tests in this file.

use std::sync::Arc;

use super::atomic::{AtomicU32, AtomicUsize, Ordering};
use super::dist_counter::Slot;

/// Callbacks one thread may have running at once, nested (a callback that runs another
/// object's callback on the same thread). The VFS never nests them (a filesystem method does
/// not call back into the VFS); the room is for code that calls one object's callbacks
/// from another's directly.
pub(crate) const DEPTH: usize = 4;

/// The flag bit an object's flag word carries once it is deactivated.
pub(crate) const DEACTIVATED: u32 = 1 << 31;

/// One thread's slots, alone in their cache-line pair.
struct Cell {
    held: Slot<[AtomicUsize; DEPTH]>,
    /// Whether a thread owns the cell (it is reused after the thread ends).
    taken: std::sync::atomic::AtomicBool,
}

/// The threads that may run callbacks, each with its cell (one per process in the plain
/// build; model-checking scenarios make their own).
pub(crate) struct Domain {
    /// Protects: the list. Order: a leaf; never held while waiting.
    cells: std::sync::Mutex<Vec<Arc<Cell>>>,
}

impl Domain {
    /// A domain with no thread registered.
    pub(crate) const fn new() -> Domain {
        Domain {
            cells: std::sync::Mutex::new(Vec::new()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Arc<Cell>>> {
        // Nothing panics while holding it; a poisoned list is still whole.
        self.cells
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Registers the calling thread: a free cell, or a new one.
    pub(crate) fn register(&self) -> Registration {
        let mut cells = self.lock();
        let cell = match cells
            .iter()
            .find(|c| !c.taken.swap(true, std::sync::atomic::Ordering::Relaxed))
        {
            Some(c) => c.clone(),
            None => {
                let c = Arc::new(Cell {
                    held: Slot(std::array::from_fn(|_| AtomicUsize::new(0))),
                    taken: std::sync::atomic::AtomicBool::new(true),
                });
                cells.push(c.clone());
                c
            }
        };
        Registration {
            cell,
            depth: std::cell::Cell::new(0),
        }
    }

    /// Waits until no thread but `own` (the caller's registration, if it has one) runs a
    /// callback of an object whose key `gone` accepts. Call it after setting [`DEACTIVATED`]
    /// in the flag word of every such object with [`deactivate`]. Returns how many times it
    /// found a callback running (0 if none was).
    pub(crate) fn drain(&self, own: Option<&Registration>, gone: &dyn Fn(usize) -> bool) -> usize {
        // The caller's own callbacks of removed objects give up their slots now (Linux:
        // `kernfs_break_active_protection()` in `kernfs_remove_self()`): they go on after the
        // removal, and another thread's drain must not wait for them, or two callbacks that
        // remove each other's objects would wait for each other for ever. Only this thread
        // writes these slots; the guards' drop stores 0 again.
        if let Some(r) = own {
            for slot in &r.cell.held.0 {
                let k = slot.load(Ordering::Relaxed);
                if k != 0 && gone(k) {
                    slot.store(0, Ordering::Release);
                }
            }
        }
        // A thread registered after this snapshot registered after the flags were set, so it
        // sees them (the list's lock orders the two).
        let cells: Vec<Arc<Cell>> = self.lock().clone();
        let mut waits = 0;
        for cell in &cells {
            if own.is_some_and(|r| Arc::ptr_eq(&r.cell, cell)) {
                continue;
            }
            for slot in &cell.held.0 {
                let mut spins = 0u32;
                loop {
                    let k = slot.load(Ordering::SeqCst);
                    if k == 0 || !gone(k) {
                        break;
                    }
                    waits += 1;
                    spins += 1;
                    if spins < 64 {
                        super::hint::spin_loop();
                    } else {
                        super::thread::yield_now();
                    }
                }
            }
        }
        waits
    }
}

/// Sets [`DEACTIVATED`] in an object's flag word: from the next [`Registration::enter`] on,
/// its callbacks are refused. Returns false if it was already set.
pub(crate) fn deactivate(flags: &AtomicU32) -> bool {
    flags.fetch_or(DEACTIVATED, Ordering::SeqCst) & DEACTIVATED == 0
}

/// True once [`deactivate`] ran on the flag word.
#[inline]
pub(crate) fn is_deactivated(flags: &AtomicU32) -> bool {
    flags.load(Ordering::Acquire) & DEACTIVATED != 0
}

/// A thread's membership of a [`Domain`]; its cell is free again when it is dropped.
pub(crate) struct Registration {
    cell: Arc<Cell>,
    /// Callbacks running on this thread (used slots, from the first).
    depth: std::cell::Cell<usize>,
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.cell
            .taken
            .store(false, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Why [`Registration::enter`] refused.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Refused {
    /// The object was deactivated.
    Gone,
    /// This thread already runs [`DEPTH`] callbacks.
    TooDeep,
}

impl Registration {
    /// Takes an active reference on the object whose key is `key` (non-zero; its address)
    /// and whose flag word is `flags`; the callback may run while the guard lives.
    ///
    /// # Errors
    /// [`Refused::Gone`] once the object is deactivated; [`Refused::TooDeep`] when this
    /// thread already runs [`DEPTH`] callbacks.
    #[inline]
    pub(crate) fn enter(&self, key: usize, flags: &AtomicU32) -> Result<Active<'_>, Refused> {
        debug_assert_ne!(key, 0);
        let d = self.depth.get();
        let slot = self.cell.held.0.get(d).ok_or(Refused::TooDeep)?;
        slot.store(key, Ordering::SeqCst);
        if flags.load(Ordering::SeqCst) & DEACTIVATED != 0 {
            slot.store(0, Ordering::Release);
            return Err(Refused::Gone);
        }
        self.depth.set(d + 1);
        Ok(Active { reg: self, slot })
    }
}

#[cfg(all(test, any(loom, feature = "shuttle")))]
impl Registration {
    /// The thread's slots, which the model checks' setup stores to (`active_check`).
    pub(crate) fn slots(&self) -> &[AtomicUsize; DEPTH] {
        &self.cell.held.0
    }
}

/// A running callback's active reference (Linux: between `kernfs_get_active()` and
/// `kernfs_put_active()`).
pub(crate) struct Active<'r> {
    reg: &'r Registration,
    slot: &'r AtomicUsize,
}

impl Drop for Active<'_> {
    #[inline]
    fn drop(&mut self) {
        self.slot.store(0, Ordering::Release);
        self.reg.depth.set(self.reg.depth.get() - 1);
    }
}

/// The process's domain, which kernfs uses.
#[cfg(not(any(loom, feature = "shuttle")))]
pub(crate) static DOMAIN: Domain = Domain::new();

#[cfg(not(any(loom, feature = "shuttle")))]
thread_local! {
    static OWN: Registration = DOMAIN.register();
}

// Under a model checker the domain and the threads' registrations are the model's lazy
// static and thread locals, made afresh in each explored execution (a plain static would keep
// the model atomics of an execution that has ended). kernfs reaches them through `with_own`
// and `DOMAIN` in these builds too, so that they compile; the model checks themselves
// (`active_check`) make their own domains.
#[cfg(loom)]
loom::lazy_static! {
    pub(crate) static ref DOMAIN: Domain = Domain::new();
}

#[cfg(loom)]
loom::thread_local! {
    static OWN: Registration = DOMAIN.register();
}

#[cfg(all(not(loom), feature = "shuttle"))]
shuttle::lazy_static! {
    pub(crate) static ref DOMAIN: Domain = Domain::new();
}

#[cfg(all(not(loom), feature = "shuttle"))]
shuttle::thread_local! {
    static OWN: Registration = DOMAIN.register();
}

/// Runs `f` with the calling thread's registration in [`DOMAIN`] (made at its first call).
#[inline]
pub(crate) fn with_own<R>(f: impl FnOnce(&Registration) -> R) -> R {
    OWN.with(f)
}

#[cfg(all(test, not(any(loom, feature = "shuttle"))))]
mod tests {
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    use super::*;

    /// A deactivated object refuses entry; a live one admits it and the slot is empty again
    /// after the guard.
    #[test]
    fn enter_is_refused_once_deactivated_and_leaves_no_key_behind() {
        let d = Domain::new();
        let r = d.register();
        let flags = AtomicU32::new(0);
        {
            let _a = r.enter(8, &flags).expect("live");
            assert_eq!(r.cell.held.0[0].load(Ordering::SeqCst), 8);
        }
        assert_eq!(r.cell.held.0[0].load(Ordering::SeqCst), 0);
        assert!(deactivate(&flags));
        assert!(!deactivate(&flags));
        assert_eq!(r.enter(8, &flags).err(), Some(Refused::Gone));
        assert_eq!(r.cell.held.0[0].load(Ordering::SeqCst), 0);
    }

    /// Nesting takes the next slot; past `DEPTH` entry is refused.
    #[test]
    fn nesting_uses_the_next_slot_up_to_the_depth() {
        let d = Domain::new();
        let r = d.register();
        let flags = AtomicU32::new(0);
        let mut guards = Vec::new();
        for k in 1..=DEPTH {
            guards.push(r.enter(k * 8, &flags).expect("room"));
        }
        assert_eq!(r.enter(999, &flags).err(), Some(Refused::TooDeep));
        drop(guards);
        assert!(r.enter(999, &flags).is_ok());
    }

    /// A drain waits for a running callback of the removed object, not for one of another
    /// object, and not for the caller's own; a freed cell is reused.
    #[test]
    fn drain_waits_for_the_removed_objects_callbacks_only() {
        let d = Arc::new(Domain::new());
        let flags = Arc::new(AtomicU32::new(0));
        let running = Arc::new(AtomicBool::new(false));
        let release = Arc::new(AtomicBool::new(false));
        let finished = Arc::new(AtomicBool::new(false));
        let t = {
            let (d, flags, running, release, finished) = (
                d.clone(),
                flags.clone(),
                running.clone(),
                release.clone(),
                finished.clone(),
            );
            std::thread::spawn(move || {
                let r = d.register();
                let _a = r.enter(16, &flags).expect("live");
                running.store(true, std::sync::atomic::Ordering::SeqCst);
                while !release.load(std::sync::atomic::Ordering::SeqCst) {
                    std::thread::yield_now();
                }
                finished.store(true, std::sync::atomic::Ordering::SeqCst);
            })
        };
        while !running.load(std::sync::atomic::Ordering::SeqCst) {
            std::thread::yield_now();
        }
        let own = d.register();
        let _mine = own.enter(16, &flags).expect("live");
        // Another object's key: no wait, even while key 16 runs.
        assert_eq!(d.drain(Some(&own), &|k| k == 24), 0);
        deactivate(&flags);
        let releaser = {
            let release = release.clone();
            std::thread::spawn(move || {
                std::thread::sleep(std::time::Duration::from_millis(20));
                release.store(true, std::sync::atomic::Ordering::SeqCst);
            })
        };
        let waits = d.drain(Some(&own), &|k| k == 16);
        assert!(finished.load(std::sync::atomic::Ordering::SeqCst));
        assert!(waits > 0, "the drain found the callback running");
        t.join().expect("reader");
        releaser.join().expect("releaser");
        // The reader's cell is free and taken by the next registration.
        let before = d.lock().len();
        let _again = d.register();
        assert_eq!(d.lock().len(), before);
    }
}
