//! [`Frozen`]: a value written once, when the object holding it is built, and then only read,
//! also by lock-free readers that reached the object through a published pointer.
//!
//! In the plain build it is the value itself (`get` is a field access). Under loom it is a
//! tracked cell: its construction counts as a write, and every `get` as a read that must
//! happen after it, so a publication whose ordering is too weak for a reader to see the
//! object's contents fails the model ("causality violation") instead of passing silently.
#![cfg_attr(loom, allow(unsafe_code))] // Reason: loom's tracked cell hands out raw pointers.

/// A write-once value; see the module documentation.
#[cfg(not(loom))]
#[derive(Debug, Default)]
pub(crate) struct Frozen<T>(T);

#[cfg(not(loom))]
impl<T> Frozen<T> {
    #[inline(always)]
    pub(crate) fn new(value: T) -> Self {
        Frozen(value)
    }

    #[inline(always)]
    pub(crate) fn get(&self) -> &T {
        &self.0
    }
}

/// A write-once value; see the module documentation.
#[cfg(loom)]
#[derive(Debug)]
pub(crate) struct Frozen<T>(loom::cell::UnsafeCell<T>);

// SAFETY: the value is never written after `new` (there is no `&self` method that writes),
// so shared references to it from several threads are as safe as for `T` itself.
#[cfg(loom)]
unsafe impl<T: Sync> Sync for Frozen<T> {}

#[cfg(loom)]
impl<T> Frozen<T> {
    pub(crate) fn new(value: T) -> Self {
        Frozen(loom::cell::UnsafeCell::new(value))
    }

    /// Records a read (checked against the write of `new`) and returns the value.
    pub(crate) fn get(&self) -> &T {
        // SAFETY: nothing writes the value after `new`, so the reference stays valid and
        // unaliased by any `&mut` for as long as `self` is borrowed.
        self.0.with(|p| unsafe { &*p })
    }
}
