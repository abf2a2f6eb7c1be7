//! The clocks that stamp inodes.
//!
//! Timestamps come from the coarse realtime clock (one tick, a few ms), as Linux's
//! `current_time()` does; an inode whose ctime was read by `stat` since its last change gets a
//! fine-grained stamp instead, so a change that follows an observation is always visible
//! (Linux: multigrain timestamps, `inode_set_ctime_current()` in fs/inode.c).
//!
//! A fine-grained stamp raises a process-wide floor, and coarse stamps never go below it, so
//! no timestamp is ever older than one handed out before it (Linux: `ctime_floor` in
//! kernel/time/timekeeping.c, `ktime_get_coarse_real_ts64_mg()`). The floor is written only
//! when a fine-grained stamp is taken (after an observation), read on every coarse stamp.

use std::sync::atomic::{AtomicI64, Ordering};

use crate::abi::Timespec;
use rustix::time::{clock_gettime, ClockId};

const NSEC_PER_SEC: i64 = 1_000_000_000;

/// The latest fine-grained stamp handed out, in ns since the epoch.
static FLOOR_NS: AtomicI64 = AtomicI64::new(0);

fn to_ns(t: Timespec) -> i64 {
    t.sec.saturating_mul(NSEC_PER_SEC).saturating_add(t.nsec)
}

fn from_ns(ns: i64) -> Timespec {
    Timespec::new(ns.div_euclid(NSEC_PER_SEC), ns.rem_euclid(NSEC_PER_SEC))
}

/// Coarse realtime (vDSO, no syscall on Linux), never below the floor.
#[inline]
pub fn coarse_now() -> Timespec {
    let t = clock_gettime(ClockId::RealtimeCoarse);
    let c = Timespec::new(t.tv_sec, t.tv_nsec);
    let floor = FLOOR_NS.load(Ordering::Relaxed);
    if floor > to_ns(c) {
        from_ns(floor)
    } else {
        c
    }
}

/// Fine-grained realtime; raises the floor.
#[inline]
pub fn fine_now() -> Timespec {
    let t = clock_gettime(ClockId::Realtime);
    let f = Timespec::new(t.tv_sec, t.tv_nsec);
    FLOOR_NS.fetch_max(to_ns(f), Ordering::Relaxed);
    f
}
