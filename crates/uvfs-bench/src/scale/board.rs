//! The board the copies of one run meet on: a start gate and one result slot per copy.
//!
//! It holds only atomics, all valid when zeroed, so that the host's processes mode can place
//! it in a shared anonymous mapping (`fork.rs`) and the forked copies report through it with
//! plain stores: no allocation, no lock, nothing a child of a multi-threaded process may not do.

use std::sync::atomic::{AtomicI32, AtomicI64, AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Most copies of one run (the CLI refuses more).
pub const MAX_COPIES: usize = 256;
/// Most copies of a [`probe`](super::probe) (its masks are 64 bits wide).
pub const MAX_PROBE_COPIES: usize = 64;
/// How long a gate waits for the other copies before it gives up: a hang guard for copies that
/// never started (a broken spawn), not a measurement.
pub const GATE_PATIENCE: Duration = Duration::from_secs(60);

const GO_WAIT: u32 = 0;
const GO_RUN: u32 = 1;
const GO_ABORT: u32 = 2;

/// What ended one copy's loop, encoded in [`Slot::status`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fail {
    /// A call failed with this errno.
    Errno(i32),
    /// A read or write moved this many bytes instead of all it was given (a page, or a
    /// pipe testcase's byte); or a `context_switch1` partner echoed this many bytes, not one
    /// per iteration of its copy.
    Short(usize),
    /// The copy never got the signal to start (another copy or the parent failed).
    Aborted,
    /// The copy never reported (it died, or never ran).
    Silent,
}

impl std::fmt::Display for Fail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Fail::Errno(e) => write!(f, "errno {e} ({})", std::io::Error::from_raw_os_error(e)),
            Fail::Short(n) => write!(
                f,
                "a call moved or counted {n}, not what it should (a short transfer, a partner's echo count, a poll's ready fds)"
            ),
            Fail::Aborted => write!(f, "aborted before the start"),
            Fail::Silent => write!(f, "the copy never reported"),
        }
    }
}

const STATUS_UNSET: i64 = 0;
const STATUS_OK: i64 = 1;
const STATUS_ABORTED: i64 = 2;
/// Errnos are stored as `STATUS_ERRNO_BASE + errno`, short transfers as `-1 - bytes`.
const STATUS_ERRNO_BASE: i64 = 1 << 32;

/// One copy's report.
#[derive(Debug, Default)]
#[repr(C)]
pub struct Slot {
    status: AtomicI64,
    /// File position of its fd after the loop (`-1`: it held none).
    position: AtomicI64,
    /// First byte of its buffer after the loop (`-1`: none).
    last_byte: AtomicI32,
    /// Probe: the fd number it opened.
    fd: AtomicI32,
    /// Probe: the inode number of its file.
    ino: AtomicU64,
    /// Probe: bit `j` set if fd `fd` of copy `j` names copy `j`'s file in this copy's table.
    seen: AtomicU64,
    /// Process id it ran in.
    pid: AtomicU32,
    /// [`now_ns`] when its loop ended (0: it did not).
    end_ns: AtomicU64,
    /// Iterations its loop completed.
    done: AtomicU64,
}

/// CLOCK_MONOTONIC in nanoseconds: the same clock in every thread and forked process, read
/// without allocating (a vDSO call).
pub fn now_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    u64::try_from(t.tv_sec).unwrap_or(0) * 1_000_000_000 + u64::try_from(t.tv_nsec).unwrap_or(0)
}

impl Slot {
    /// Records that the copy's loop has ended (before it closes what it holds, so that the
    /// sample is the loops' time only, without a thread's join or a process's exit).
    pub fn loop_ended(&self) {
        self.end_ns.store(now_ns(), Ordering::Release);
    }

    /// Records the end of a loop that completed `done` iterations.
    pub fn finish(
        &self,
        r: Result<(), Fail>,
        done: u64,
        position: Option<u64>,
        last_byte: Option<u8>,
    ) {
        self.done.store(done, Ordering::Relaxed);
        self.position.store(
            position.map_or(-1, |p| i64::try_from(p).unwrap_or(i64::MAX)),
            Ordering::Relaxed,
        );
        self.last_byte
            .store(last_byte.map_or(-1, i32::from), Ordering::Relaxed);
        self.set_status(r);
    }

    /// Records a failure (or success) only.
    pub fn set_status(&self, r: Result<(), Fail>) {
        let s = match r {
            Ok(()) => STATUS_OK,
            Err(Fail::Errno(e)) => STATUS_ERRNO_BASE + i64::from(e),
            Err(Fail::Short(n)) => -1 - i64::try_from(n).unwrap_or(i64::MAX - 1),
            Err(Fail::Aborted) => STATUS_ABORTED,
            Err(Fail::Silent) => STATUS_UNSET,
        };
        self.status.store(s, Ordering::Release);
    }

    /// Records the probe's findings.
    pub fn set_probe(&self, fd: i32, ino: u64) {
        self.fd.store(fd, Ordering::Relaxed);
        self.ino.store(ino, Ordering::Release);
    }

    /// Records which other copies' fds this copy saw.
    pub fn set_seen(&self, mask: u64) {
        self.seen.store(mask, Ordering::Release);
    }

    /// Records the process id the copy ran in.
    pub fn set_pid(&self, pid: u32) {
        self.pid.store(pid, Ordering::Relaxed);
    }

    /// The report, once the copy has finished.
    pub fn read(&self) -> CopyEnd {
        let s = self.status.load(Ordering::Acquire);
        let status = match s {
            STATUS_OK => Ok(()),
            STATUS_UNSET => Err(Fail::Silent),
            STATUS_ABORTED => Err(Fail::Aborted),
            s if s < 0 => Err(Fail::Short(usize::try_from(-1 - s).unwrap_or(usize::MAX))),
            s => Err(Fail::Errno(
                i32::try_from(s - STATUS_ERRNO_BASE).unwrap_or(i32::MAX),
            )),
        };
        let position = self.position.load(Ordering::Relaxed);
        let last_byte = self.last_byte.load(Ordering::Relaxed);
        CopyEnd {
            status,
            position: u64::try_from(position).ok(),
            last_byte: u8::try_from(last_byte).ok(),
            done: self.done.load(Ordering::Relaxed),
            fd: self.fd.load(Ordering::Relaxed),
            ino: self.ino.load(Ordering::Acquire),
            seen: self.seen.load(Ordering::Acquire),
            pid: self.pid.load(Ordering::Relaxed),
        }
    }
}

/// What one copy reported, read after the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CopyEnd {
    /// How its loop ended.
    pub status: Result<(), Fail>,
    /// Position of its fd after the loop, if it held one.
    pub position: Option<u64>,
    /// First byte of its buffer after the loop (which file or page its reads saw).
    pub last_byte: Option<u8>,
    /// Iterations its loop completed: its quota if it was the first to finish, fewer if it
    /// stopped when another copy finished first.
    pub done: u64,
    /// Probe: its fd number.
    pub fd: i32,
    /// Probe: its file's inode number.
    pub ino: u64,
    /// Probe: bit `j` set if it saw copy `j`'s file under copy `j`'s fd number.
    pub seen: u64,
    /// Process id it ran in.
    pub pid: u32,
}

/// The meeting point of one run's copies.
#[derive(Debug)]
#[repr(C)]
pub struct Board {
    /// Copies past their set-up, waiting for `go`.
    ready: AtomicU32,
    go: AtomicU32,
    /// Probe: copies that have recorded their fd.
    recorded: AtomicU32,
    /// Probe: copies done looking at the others' fds.
    checked: AtomicU32,
    /// [`now_ns`] when the parent started the copies.
    start_ns: AtomicU64,
    /// Set by the first copy to complete its quota of iterations: the others stop at their
    /// next iteration. Read by every copy on every iteration and written once, so its line
    /// stays shared and clean in every CPU's cache.
    stop: AtomicU32,
    /// [`now_ns`] when `stop` was set (0: not yet).
    stop_ns: AtomicU64,
    slots: [Slot; MAX_COPIES],
}

impl Default for Board {
    fn default() -> Self {
        Board {
            ready: AtomicU32::new(0),
            go: AtomicU32::new(GO_WAIT),
            recorded: AtomicU32::new(0),
            checked: AtomicU32::new(0),
            start_ns: AtomicU64::new(0),
            stop: AtomicU32::new(0),
            stop_ns: AtomicU64::new(0),
            slots: std::array::from_fn(|_| Slot::default()),
        }
    }
}

/// Waits, yielding the CPU, until `done()` or [`GATE_PATIENCE`] has passed; false on timeout.
fn wait_until(done: impl Fn() -> bool) -> bool {
    let start = Instant::now();
    let mut spins = 0u32;
    while !done() {
        rustix::thread::sched_yield();
        spins = spins.wrapping_add(1);
        if spins & 1023 == 0 && start.elapsed() > GATE_PATIENCE {
            return false;
        }
    }
    true
}

impl Board {
    /// Copy `copy`'s slot (`None` past [`MAX_COPIES`], which the callers never reach).
    pub fn slot(&self, copy: usize) -> Option<&Slot> {
        self.slots.get(copy)
    }

    /// A copy: announces it is set up and waits for the start; false if the run was aborted.
    pub fn arrive_and_wait(&self) -> bool {
        self.ready.fetch_add(1, Ordering::AcqRel);
        wait_until(|| self.go.load(Ordering::Acquire) != GO_WAIT)
            && self.go.load(Ordering::Acquire) == GO_RUN
    }

    /// The parent: waits until `copies` copies are set up; false if they did not come.
    pub fn wait_ready(&self, copies: usize) -> bool {
        wait_until(|| self.ready.load(Ordering::Acquire) as usize >= copies)
    }

    /// The parent: starts every waiting copy at once.
    pub fn start(&self) {
        self.start_ns.store(now_ns(), Ordering::Relaxed);
        self.go.store(GO_RUN, Ordering::Release);
    }

    /// A copy: whether another copy has completed its quota (see [`Board::stop_all`]).
    #[inline]
    pub fn should_stop(&self) -> bool {
        self.stop.load(Ordering::Relaxed) != 0
    }

    /// A copy that completed its quota: stops the others (the first call only counts).
    pub fn stop_all(&self) {
        let now = now_ns();
        if self
            .stop
            .compare_exchange(0, 1, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
        {
            self.stop_ns.store(now, Ordering::Release);
        }
    }

    /// The measured window and the iterations the first `copies` copies completed in it, once
    /// every copy's loop has ended (`None` if one did not record its end, or none stopped
    /// the run): from the start until the first copy completed its quota, when every copy was
    /// still running (will-it-scale counts the iterations of copies that all run for the
    /// whole sample; a fixed amount of work per copy, timed until the last one ended, would
    /// also time the end of the run, where fewer copies than CPUs are left).
    pub fn window(&self, copies: usize) -> Option<(Duration, u64)> {
        let start = self.start_ns.load(Ordering::Relaxed);
        let mut done = 0;
        for s in self.slots.get(..copies)? {
            if s.end_ns.load(Ordering::Acquire) == 0 {
                return None;
            }
            done += s.done.load(Ordering::Relaxed);
        }
        let stop = self.stop_ns.load(Ordering::Acquire);
        (stop != 0).then(|| (Duration::from_nanos(stop.saturating_sub(start)), done))
    }

    /// The parent: releases the waiting copies without running them.
    pub fn abort(&self) {
        self.go.store(GO_ABORT, Ordering::Release);
    }

    /// Probe: a copy has recorded its fd; waits for all `copies`. False on timeout.
    pub fn recorded_and_wait(&self, copies: usize) -> bool {
        self.recorded.fetch_add(1, Ordering::AcqRel);
        wait_until(|| self.recorded.load(Ordering::Acquire) as usize >= copies)
    }

    /// Probe: a copy is done looking; waits for all `copies` before it closes its fd.
    pub fn checked_and_wait(&self, copies: usize) -> bool {
        self.checked.fetch_add(1, Ordering::AcqRel);
        wait_until(|| self.checked.load(Ordering::Acquire) as usize >= copies)
    }

    /// The reports of the first `copies` copies.
    pub fn ends(&self, copies: usize) -> Vec<CopyEnd> {
        self.slots[..copies.min(MAX_COPIES)]
            .iter()
            .map(Slot::read)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slot_round_trips_every_status() {
        let s = Slot::default();
        assert_eq!(s.read().status, Err(Fail::Silent));
        for r in [
            Ok(()),
            Err(Fail::Errno(2)),
            Err(Fail::Errno(9)),
            Err(Fail::Short(0)),
            Err(Fail::Short(4095)),
            Err(Fail::Aborted),
        ] {
            s.finish(r, 7, Some(4096), Some(0x41));
            let e = s.read();
            assert_eq!(e.status, r);
            assert_eq!(
                (e.done, e.position, e.last_byte),
                (7, Some(4096), Some(0x41))
            );
        }
        s.finish(Ok(()), 0, None, None);
        assert_eq!((s.read().position, s.read().last_byte), (None, None));
    }

    #[test]
    fn the_window_ends_when_the_first_copy_completes_its_quota() {
        let b = Board::default();
        b.start();
        assert!(!b.should_stop());
        assert_eq!(b.window(2), None, "no copy has ended");
        b.stop_all();
        assert!(b.should_stop());
        let s0 = b.slot(0).expect("slot");
        s0.loop_ended();
        s0.finish(Ok(()), 100, None, None);
        assert_eq!(b.window(2), None, "copy 1 has not ended");
        let stopped = b.stop_ns.load(Ordering::Relaxed);
        std::thread::sleep(Duration::from_millis(2));
        // A later finisher does not move the end of the window.
        b.stop_all();
        assert_eq!(b.stop_ns.load(Ordering::Relaxed), stopped);
        let s1 = b.slot(1).expect("slot");
        s1.loop_ended();
        s1.finish(Ok(()), 40, None, None);
        let (window, done) = b.window(2).expect("both ended");
        assert_eq!(done, 140);
        assert_eq!(
            window,
            Duration::from_nanos(stopped - b.start_ns.load(Ordering::Relaxed))
        );
        assert_eq!(b.window(MAX_COPIES + 1), None);
        let unstopped = Board::default();
        unstopped.start();
        unstopped.slot(0).expect("slot").loop_ended();
        assert_eq!(unstopped.window(1), None, "nobody completed a quota");
    }
}
