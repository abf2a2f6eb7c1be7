//! The mutex of the dcache writers and of the objects blocked calls wait on (pipes,
//! eventfds, epolls): `parking_lot`'s in the plain build (re-exported, no wrapper), the model
//! checker's under test, where a `lock()` that cannot fail is provided on top of std's
//! poisoning signature, and [`unlocked`] stands in for `parking_lot`'s
//! `MutexGuard::unlocked`.

#[cfg(not(any(loom, feature = "shuttle")))]
pub(crate) use parking_lot::{Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};

#[cfg(loom)]
use loom::sync as imp;
#[cfg(all(not(loom), feature = "shuttle"))]
use shuttle::sync as imp;

/// The model checker's mutex with `parking_lot`'s `lock()` signature.
#[cfg(any(loom, feature = "shuttle"))]
#[derive(Debug, Default)]
pub(crate) struct Mutex<T>(imp::Mutex<T>);

#[cfg(any(loom, feature = "shuttle"))]
pub(crate) type MutexGuard<'a, T> = imp::MutexGuard<'a, T>;

#[cfg(any(loom, feature = "shuttle"))]
impl<T> Mutex<T> {
    pub(crate) fn new(value: T) -> Self {
        Mutex(imp::Mutex::new(value))
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
        // A poisoned lock means a scenario thread already panicked: that failure is reported.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The model checker's reader-writer lock with `parking_lot`'s signatures.
#[cfg(any(loom, feature = "shuttle"))]
#[derive(Debug, Default)]
pub(crate) struct RwLock<T>(imp::RwLock<T>);

#[cfg(any(loom, feature = "shuttle"))]
pub(crate) type RwLockReadGuard<'a, T> = imp::RwLockReadGuard<'a, T>;
#[cfg(any(loom, feature = "shuttle"))]
pub(crate) type RwLockWriteGuard<'a, T> = imp::RwLockWriteGuard<'a, T>;

#[cfg(any(loom, feature = "shuttle"))]
impl<T> RwLock<T> {
    pub(crate) fn new(value: T) -> Self {
        RwLock(imp::RwLock::new(value))
    }

    pub(crate) fn read(&self) -> RwLockReadGuard<'_, T> {
        self.0.read().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn write(&self) -> RwLockWriteGuard<'_, T> {
        self.0.write().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether anyone holds the lock, shared or exclusive (`parking_lot`'s `is_locked`): the
    /// model checker's lock has no such query, so a write lock is tried and let go.
    pub(crate) fn is_locked(&self) -> bool {
        self.0.try_write().is_err()
    }
}

/// Runs `f` with `guard`'s lock released, and takes it again (`parking_lot`'s
/// `MutexGuard::unlocked`); `mutex` is the lock `guard` holds, which the model checker's guard
/// cannot give back.
#[cfg(not(any(loom, feature = "shuttle")))]
#[inline]
pub(crate) fn unlocked<'a, T, R>(
    guard: &mut MutexGuard<'a, T>,
    _mutex: &'a Mutex<T>,
    f: impl FnOnce() -> R,
) -> R {
    MutexGuard::unlocked(guard, f)
}

/// As the plain build's `unlocked`, for the model checker's guard: the guard is dropped in
/// place and a new one written back, also if `f` panics (so the caller's guard is never
/// dropped twice).
#[cfg(any(loom, feature = "shuttle"))]
pub(crate) fn unlocked<'a, T, R>(
    guard: &mut MutexGuard<'a, T>,
    mutex: &'a Mutex<T>,
    f: impl FnOnce() -> R,
) -> R {
    struct Relock<'g, 'a, T> {
        guard: &'g mut MutexGuard<'a, T>,
        mutex: &'a Mutex<T>,
    }
    impl<T> Drop for Relock<'_, '_, T> {
        fn drop(&mut self) {
            let g = self.mutex.lock();
            #[allow(unsafe_code)] // Reason: re-fills the slot the caller's guard was read out of.
            // SAFETY: the slot's guard was moved out (and dropped) by `unlocked` below, so
            // writing over it leaks nothing and the caller drops this new guard once.
            unsafe {
                std::ptr::write(&raw mut *self.guard, g);
            }
        }
    }
    #[allow(unsafe_code)] // Reason: moves the guard out to release it; `Relock` writes one back.
    // SAFETY: the guard read out is dropped at once and the slot refilled by `Relock`'s drop
    // before anyone reads it again, on return and on unwind alike.
    let old = unsafe { std::ptr::read(&raw const *guard) };
    let relock = Relock { guard, mutex };
    drop(old);
    let r = f();
    drop(relock);
    r
}
