//! Synchronisation primitives: the sequence count and the facade that lets loom or shuttle
//! replace std's atomics in the protocol tests.

pub mod seqcount;

pub use seqcount::SeqCount;

/// Atomics as seen by the protocols in this module: std's, or loom's / shuttle's under test.
pub(crate) mod atomic {
    #[cfg(loom)]
    pub use loom::sync::atomic::{fence, AtomicU32, Ordering};
    #[cfg(all(not(loom), feature = "shuttle"))]
    pub use shuttle::sync::atomic::{fence, AtomicU32, Ordering};
    #[cfg(all(not(loom), not(feature = "shuttle")))]
    pub use std::sync::atomic::{fence, AtomicU32, Ordering};
}
