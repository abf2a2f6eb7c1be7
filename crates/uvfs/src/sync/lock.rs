//! The mutex of the dcache writers: `parking_lot`'s in the plain build (re-exported, no
//! wrapper), the model checker's under test, where a `lock()` that cannot fail is provided on
//! top of std's poisoning signature.

#[cfg(not(any(loom, feature = "shuttle")))]
pub(crate) use parking_lot::{Mutex, MutexGuard};

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
