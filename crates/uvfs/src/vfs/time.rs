//! The clocks that stamp inodes.
//!
//! Timestamps come from the coarse realtime clock (one tick, a few ms), as Linux's
//! `current_time()` does; an inode whose ctime was read by `stat` since its last change gets a
//! fine-grained stamp instead, so a change that follows an observation is always visible
//! (Linux: multigrain timestamps, `inode_set_ctime_current()` in fs/inode.c).

use crate::abi::Timespec;
use rustix::time::{clock_gettime, ClockId};

/// Coarse realtime (vDSO, no syscall on Linux).
#[inline]
pub fn coarse_now() -> Timespec {
    let t = clock_gettime(ClockId::RealtimeCoarse);
    Timespec::new(t.tv_sec, t.tv_nsec)
}

/// Fine-grained realtime.
#[inline]
pub fn fine_now() -> Timespec {
    let t = clock_gettime(ClockId::Realtime);
    Timespec::new(t.tv_sec, t.tv_nsec)
}
