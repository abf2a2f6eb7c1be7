//! The [`Backend`] trait (one implementation per side) and the loop that runs a case's ops on
//! a backend, binding fds as it goes.

use std::time::Duration;

use rustix::time::{clock_gettime, ClockId};
use serde::{Deserialize, Serialize};

use crate::op::{Fd, Offset};
use crate::outcome::{Bytes, DirentRec, Outcome, Value};
use crate::parse::{Case, Timing};
use crate::Op;

/// The fd an unbound or failed `=> NAME` leaves in its variable: later uses get `EBADF` on
/// both sides.
const FAILED_FD: i32 = -1;

/// Where `lseek $d @NAME` goes when no listing of this side has named NAME: `EINVAL` on both.
const NO_SUCH_ENTRY_OFFSET: i64 = -1;

/// One `=> NAME` binding.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Binding {
    /// The variable's name, without `$`.
    pub name: String,
    /// The fd it holds on this side (-1 if the binding op failed).
    pub fd: i32,
    /// The task whose fd table the fd is in (the task that ran the binding op).
    pub task: u32,
}

/// The variables of one side of a running case: fd bindings (one name space for all tasks:
/// `$f` is the number the binding op returned, whichever task uses it) and the `d_off` of
/// every entry the last listing that named it returned (for `lseek $d @NAME`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fds {
    /// In order of first binding.
    vars: Vec<Binding>,
    /// Entry name and its `d_off`.
    offsets: Vec<(Bytes, i64)>,
}

impl Fds {
    /// The number an fd argument stands for on this side.
    pub fn get(&self, fd: &Fd) -> i32 {
        match fd {
            Fd::Raw(n) => *n,
            Fd::Var(name) => self
                .vars
                .iter()
                .find(|b| b.name == *name)
                .map_or(FAILED_FD, |b| b.fd),
        }
    }

    /// Binds `name` to the fd `outcome` returned in `task`, or to an invalid fd if it failed.
    pub fn bind(&mut self, name: &str, outcome: &Outcome, task: u32) {
        // `pipe2 ... => r w`: the read end and the write end.
        if let Some((r, w)) = name.split_once(' ') {
            let (rfd, wfd) = match outcome {
                Outcome::Ok(Value::FdPair(a, b)) => (*a, *b),
                _ => (FAILED_FD, FAILED_FD),
            };
            self.bind_fd(r, rfd, task);
            self.bind_fd(w, wfd, task);
            return;
        }
        let fd = match outcome {
            Outcome::Ok(Value::Int(n)) => i32::try_from(*n).unwrap_or(FAILED_FD),
            _ => FAILED_FD,
        };
        self.bind_fd(name, fd, task);
    }

    fn bind_fd(&mut self, name: &str, fd: i32, task: u32) {
        let b = Binding {
            name: name.to_string(),
            fd,
            task,
        };
        match self.vars.iter_mut().find(|v| v.name == name) {
            Some(v) => *v = b,
            None => self.vars.push(b),
        }
    }

    /// Every binding that holds an fd, in order of first binding.
    pub fn bound(&self) -> impl Iterator<Item = &Binding> {
        self.vars.iter().filter(|b| b.fd >= 0)
    }

    /// Remembers the `d_off` of every entry of a listing.
    pub fn record_listing(&mut self, entries: &[DirentRec]) {
        for e in entries {
            match self.offsets.iter_mut().find(|(n, _)| *n == e.name) {
                Some(slot) => slot.1 = e.off,
                None => self.offsets.push((e.name.clone(), e.off)),
            }
        }
    }

    /// The offset an `lseek` argument stands for on this side.
    pub fn offset(&self, off: &Offset) -> i64 {
        match off {
            Offset::Raw(v) => *v,
            Offset::AfterEntry(name) => self
                .offsets
                .iter()
                .find(|(n, _)| n.0 == *name)
                .map_or(NO_SUCH_ENTRY_OFFSET, |&(_, o)| o),
        }
    }
}

/// One side of the comparison: something that performs ops with Linux semantics.
///
/// A backend is made for one case, with the case's root tmpfs already mounted and task 1 at
/// its root as uid 0 with umask 022; it keeps each task's credentials, cwd, root and fd table.
pub trait Backend {
    /// Performs `op`, step `step` (1-based) of the case, reading fd variables from `fds`, and
    /// reports the errno or the value.
    fn run(&mut self, step: usize, op: &Op, fds: &Fds) -> Outcome;

    /// Why the backend cannot go on (an op that did not return, a dead helper); the run stops
    /// before the step that found it.
    fn aborted(&self) -> Option<String> {
        None
    }
}

/// How often [`wait_for_tick`] looks at the clock; a tick is 1 to 10 ms.
const TICK_POLL: Duration = Duration::from_micros(100);

/// Sleeps until the coarse realtime clock (the one Linux and uvfs stamp inodes with) is past
/// the fine-grained time of the call. Every stamp taken before the call, fine-grained ones
/// included, is then earlier than every stamp taken after it, which makes `same`/`later`
/// answers independent of where the ticks fall.
///
/// Waiting for the coarse clock to change is not enough on Linux: its stamps are the coarse
/// time or, if later, the multigrain floor, the latest fine-grained stamp any process got
/// (`ktime_get_coarse_real_ts64_mg()` in kernel/time/timekeeping.c), and the coarse time of a
/// new tick can lag the fine-grained time of the previous one. A fine-grained stamp another
/// program takes late in one tick then gives an op on the next tick the same stamp as an op
/// before it (seen: a write on a fresh tick leaving mtime equal to the creation stamp).
pub fn wait_for_tick() {
    let ns =
        |t: rustix::time::Timespec| i128::from(t.tv_sec) * 1_000_000_000 + i128::from(t.tv_nsec);
    let now = ns(clock_gettime(ClockId::Realtime));
    while ns(clock_gettime(ClockId::RealtimeCoarse)) <= now {
        std::thread::sleep(TICK_POLL);
    }
}

/// Runs every op of `case` on `backend` in order, calling `emit(step, outcome)` with the
/// 1-based step number after each (step 0 is the root mount, which the caller reports).
/// With [`Timing::Ticked`] each op starts on a fresh clock tick.
pub fn run_case(backend: &mut dyn Backend, case: &Case, mut emit: impl FnMut(usize, &Outcome)) {
    let mut fds = Fds::default();
    let mut task = 1;
    for (i, step) in case.steps.iter().enumerate() {
        if case.timing == Timing::Ticked {
            wait_for_tick();
        }
        let mut outcome = backend.run(i + 1, &step.op, &fds);
        if backend.aborted().is_some() {
            return;
        }
        if let Op::Lseek {
            off: off @ Offset::AfterEntry(name),
            ..
        } = &step.op
        {
            // The raw d_off is the side's own; that the seek landed on it is what compares.
            if outcome == Outcome::Ok(Value::Int(fds.offset(off))) {
                outcome = Outcome::Ok(Value::AtEntry(Bytes(name.clone())));
            }
        }
        if let Some(name) = &step.bind {
            fds.bind(name, &outcome, task);
        }
        match (&step.op, &outcome) {
            (Op::Task { id, .. }, Outcome::Ok(_)) => task = *id,
            (_, Outcome::Ok(Value::Dirents(d))) => fds.record_listing(&d.entries),
            _ => {}
        }
        emit(i + 1, &outcome);
    }
}

/// The outcomes one side produced for a case: step 0 (the root mount) first, then one per op.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CaseRun {
    /// Outcomes in step order; shorter than the case if the run stopped early.
    pub outcomes: Vec<Outcome>,
    /// Why the run stopped before its last op (a panic, a crash, a timeout), if it did.
    pub aborted: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failed_bindings_become_bad_fds() {
        let mut fds = Fds::default();
        fds.bind("f", &Outcome::Ok(Value::Int(3)), 1);
        fds.bind("g", &Outcome::Errno(2), 2);
        assert_eq!(fds.get(&Fd::Var("f".into())), 3);
        assert_eq!(fds.get(&Fd::Var("g".into())), FAILED_FD);
        assert_eq!(fds.get(&Fd::Raw(-100)), -100);
        let bound: Vec<_> = fds
            .bound()
            .map(|b| (b.name.as_str(), b.fd, b.task))
            .collect();
        assert_eq!(bound, [("f", 3, 1)]);
        fds.bind("f", &Outcome::Ok(Value::Int(4)), 2);
        assert_eq!(fds.get(&Fd::Var("f".into())), 4);
    }

    #[test]
    fn entry_offsets_come_from_the_last_listing_that_named_them() {
        let mut fds = Fds::default();
        let e = |name: &[u8], off| DirentRec {
            name: Bytes(name.to_vec()),
            d_type: 8,
            ino: 1,
            off,
        };
        fds.record_listing(&[e(b"a", 5), e(b"b", 9)]);
        fds.record_listing(&[e(b"a", 7)]);
        let at = |n: &[u8]| fds.offset(&Offset::AfterEntry(n.to_vec()));
        assert_eq!((at(b"a"), at(b"b"), at(b"c")), (7, 9, NO_SUCH_ENTRY_OFFSET));
        assert_eq!(fds.offset(&Offset::Raw(-3)), -3);
    }
}
