//! Synchronisation primitives: the sequence count, and the facade through which the dcache
//! (`vfs::dcache`, `vfs::dentry`) reaches its atomics, locks, published cells and epoch
//! reclamation. In the plain build the facade is std, `parking_lot` and `seize`, re-exported
//! or wrapped in `#[inline(always)]` functions that compile to the same code. Under
//! `--cfg loom` or the `shuttle` feature it is the model checker's, so that the model-checking
//! tests (`vfs::dcache_check`) run the production lookup and update code itself.
//!
//! `seize` cannot be modelled: under a model checker, retired memory is kept until the model
//! thread that owns the scenario calls `rcu::barrier` after joining every other thread (see
//! `rcu.rs`). The reclamation protocol (retire only what is unreachable, guard every walk) is
//! therefore argued in `dcache.rs`, not checked.

pub(crate) mod active;
#[cfg(all(test, any(loom, feature = "shuttle")))]
mod active_check;
pub(crate) mod addr_hash;
pub(crate) mod biased;
pub(crate) mod budget;
pub(crate) mod cell;
pub(crate) mod dist_counter;
pub(crate) mod lock;
pub mod pcpu_ref;
pub(crate) mod rcu;
pub mod seqlock;

pub use seqlock::SeqLock;

/// Atomics as seen by the protocols behind the facade: std's, or loom's / shuttle's under test.
pub(crate) mod atomic {
    #[cfg(loom)]
    pub use loom::sync::atomic::{
        fence, AtomicBool, AtomicI64, AtomicPtr, AtomicU16, AtomicU32, AtomicU64, AtomicUsize,
        Ordering,
    };
    #[cfg(all(not(loom), feature = "shuttle"))]
    pub use shuttle::sync::atomic::{
        fence, AtomicBool, AtomicI64, AtomicPtr, AtomicU16, AtomicU32, AtomicU64, AtomicUsize,
        Ordering,
    };
    #[cfg(all(not(loom), not(feature = "shuttle")))]
    pub use std::sync::atomic::{
        fence, AtomicBool, AtomicI64, AtomicPtr, AtomicU16, AtomicU32, AtomicU64, AtomicUsize,
        Ordering,
    };
}

/// The spin-wait hint of retry loops: under a model checker it also lets the thread that the
/// spinner waits for run.
pub(crate) mod hint {
    #[cfg(loom)]
    pub use loom::hint::spin_loop;
    #[cfg(all(not(loom), feature = "shuttle"))]
    pub use shuttle::hint::spin_loop;
    #[cfg(all(not(loom), not(feature = "shuttle")))]
    pub use std::hint::spin_loop;
}

/// Parking of blocked calls' threads (`vfs::poll::Parker`): std's, or the model checker's,
/// where a wait never times out (the model scenarios have no deadlines) and spinning is one
/// yield.
pub(crate) mod thread {
    #[cfg(loom)]
    pub use loom::thread::{current, park, yield_now, Thread};
    #[cfg(all(not(loom), feature = "shuttle"))]
    pub use shuttle::thread::{current, park, yield_now, Thread};
    #[cfg(all(not(loom), not(feature = "shuttle")))]
    pub use std::thread::{current, park, park_timeout, yield_now, Thread};

    /// Under a model checker a timed park is a park: its scenarios set no deadlines.
    #[cfg(any(loom, feature = "shuttle"))]
    pub fn park_timeout(_d: std::time::Duration) {
        park();
    }

    /// Whether blocked calls spin before they park: not under a model checker, where the
    /// time a spin watches is not the model's.
    pub const SPIN: bool = cfg!(not(any(loom, feature = "shuttle")));
}

/// Threads of a model-checking scenario, and the runner that explores its schedules.
#[cfg(all(test, any(loom, feature = "shuttle")))]
pub(crate) mod model {
    #[cfg(loom)]
    pub(crate) use loom::{sync::atomic::AtomicBool, thread};
    #[cfg(all(not(loom), feature = "shuttle"))]
    pub(crate) use shuttle::{sync::atomic::AtomicBool, thread};

    /// Random schedules per shuttle test.
    #[cfg(all(not(loom), feature = "shuttle"))]
    const SCHEDULES: usize = 3000;
    /// PCT bug depth: how many scheduling decisions a failure may need.
    #[cfg(all(not(loom), feature = "shuttle"))]
    const PCT_DEPTH: usize = 3;
    #[cfg(all(not(loom), feature = "shuttle"))]
    const SEED: u64 = 0x5eed_c0de;

    /// Runs `scenario` under every schedule loom explores (every interleaving within
    /// `LOOM_MAX_PREEMPTIONS`, and every outcome the C11 memory model allows for its atomics),
    /// or under shuttle's seeded random and PCT schedules; then frees what it retired.
    pub(crate) fn check(scenario: fn()) {
        let run = move || {
            scenario();
            super::rcu::barrier();
        };
        #[cfg(loom)]
        loom::model(run);
        #[cfg(all(not(loom), feature = "shuttle"))]
        {
            shuttle::check_random_with_seed(run, SEED, SCHEDULES);
            shuttle::check_pct(run, SCHEDULES, PCT_DEPTH);
        }
    }
}
