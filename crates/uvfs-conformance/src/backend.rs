//! The [`Backend`] trait (one implementation per side) and the loop that runs a case's ops on
//! a backend, binding fds as it goes.

use std::collections::HashMap;
use std::time::Duration;

use rustix::time::{clock_gettime, ClockId};

use crate::op::Fd;
use crate::outcome::{Outcome, Value};
use crate::parse::{Case, Timing};
use crate::Op;

/// The fd an unbound or failed `=> NAME` leaves in its variable: later uses get `EBADF` on
/// both sides.
const FAILED_FD: i32 = -1;

/// The fd variables of one side of a running case.
#[derive(Debug, Default)]
pub struct Fds {
    vars: HashMap<String, i32>,
}

impl Fds {
    /// The number an fd argument stands for on this side.
    pub fn get(&self, fd: &Fd) -> i32 {
        match fd {
            Fd::Raw(n) => *n,
            Fd::Var(name) => self.vars.get(name).copied().unwrap_or(FAILED_FD),
        }
    }

    /// Binds `name` to the fd `outcome` returned, or to an invalid fd if it failed.
    pub fn bind(&mut self, name: &str, outcome: &Outcome) {
        let fd = match outcome {
            Outcome::Ok(Value::Int(n)) => i32::try_from(*n).unwrap_or(FAILED_FD),
            _ => FAILED_FD,
        };
        self.vars.insert(name.to_string(), fd);
    }
}

/// One side of the comparison: something that performs ops with Linux semantics.
///
/// A backend is made for one case, with the case's root tmpfs already mounted and the task at
/// its root as uid 0 with umask 022; it keeps its own credentials, cwd, root and fd table.
pub trait Backend {
    /// Performs `op`, reading fd variables from `fds`, and reports the errno or the value.
    fn run(&mut self, op: &Op, fds: &Fds) -> Outcome;
}

/// How often [`wait_for_tick`] looks at the clock; a tick is 1 to 10 ms.
const TICK_POLL: Duration = Duration::from_micros(100);

/// Sleeps until the coarse realtime clock (the one Linux and uvfs stamp inodes with) ticks.
/// Every stamp taken before the call, fine-grained ones included, is then earlier than every
/// stamp taken after it, which makes `same`/`later` answers independent of where the ticks
/// fall.
pub fn wait_for_tick() {
    let start = clock_gettime(ClockId::RealtimeCoarse);
    while clock_gettime(ClockId::RealtimeCoarse) == start {
        std::thread::sleep(TICK_POLL);
    }
}

/// Runs every op of `case` on `backend` in order, calling `emit(step, outcome)` with the
/// 1-based step number after each (step 0 is the root mount, which the caller reports).
/// With [`Timing::Ticked`] each op starts on a fresh clock tick.
pub fn run_case(backend: &mut dyn Backend, case: &Case, mut emit: impl FnMut(usize, &Outcome)) {
    let mut fds = Fds::default();
    for (i, step) in case.steps.iter().enumerate() {
        if case.timing == Timing::Ticked {
            wait_for_tick();
        }
        let outcome = backend.run(&step.op, &fds);
        if let Some(name) = &step.bind {
            fds.bind(name, &outcome);
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
        fds.bind("f", &Outcome::Ok(Value::Int(3)));
        fds.bind("g", &Outcome::Errno(2));
        assert_eq!(fds.get(&Fd::Var("f".into())), 3);
        assert_eq!(fds.get(&Fd::Var("g".into())), FAILED_FD);
        assert_eq!(fds.get(&Fd::Raw(-100)), -100);
    }
}
