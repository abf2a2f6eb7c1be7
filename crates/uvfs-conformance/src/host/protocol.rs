//! What the helper binary writes to its result fd, and how the test reads it back.

use serde::{Deserialize, Serialize};

use crate::backend::{CaseRun, Fds};
use crate::outcome::{Outcome, StatRec, Value};

use super::fence::FenceMode;

/// Exit status of the helper when the environment refuses the sandbox (not root, no mount
/// namespace): the test reports the host side as skipped, never as passed.
pub const EXIT_ENV_REFUSED: i32 = 77;
/// Exit status of the helper for a bad command line or case file.
pub const EXIT_USAGE: i32 = 2;

/// One JSON line of helper output.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HostLine {
    /// The outcome of step `step` (0: the root mount).
    Step {
        /// Step number.
        step: usize,
        /// What the kernel returned.
        outcome: Outcome,
    },
    /// Step `step` is a snapshot equal to the last one sent: sent instead of its outcome, since
    /// most ops fail and change nothing (the reader repeats the earlier snapshot).
    SameSnapshot {
        /// Step number.
        step: usize,
    },
    /// The case ran to its end (or stopped where both sides stop: a failed root mount).
    Done,
    /// The case stopped early: an op did not return, an actor died, the helper failed.
    Aborted(String),
}

/// What the observer asks an actor (one task) to do.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Command {
    /// Run step `step` (1-based) of the case with these variables, holding the fence so.
    Run {
        /// Step number.
        step: usize,
        /// The variables of this side.
        fds: Fds,
        /// How to hold the mount fence around the op.
        fence: FenceMode,
        /// Also `fstat` every fd bound to this task once the op is done (the next step is a
        /// snapshot): saves the snapshot a round trip.
        then_fstat: bool,
    },
    /// `fstat` each of these fds (for a snapshot).
    Fstat(Vec<i32>),
}

/// An actor's answer to a [`Command`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reply {
    /// What the op returned.
    Outcome(Outcome),
    /// What the op returned, and the `fstat` of every fd bound to the task after it (name,
    /// fd, result), in binding order: the answer to a `Run` with `then_fstat`.
    OutcomeAndFstats(Outcome, Vec<(String, i32, Result<StatRec, i32>)>),
    /// The `fstat`s, in the order asked.
    Fstats(Vec<Result<StatRec, i32>>),
}

impl HostLine {
    /// The line as JSON with its newline.
    pub fn to_line(&self) -> String {
        let mut s = serde_json::to_string(self).expect("a HostLine always serialises");
        s.push('\n');
        s
    }
}

/// Rebuilds a [`CaseRun`] from the helper's stdout; a missing `done` line or a malformed line
/// becomes the run's `aborted` reason.
pub fn read_host_output(stdout: &[u8]) -> CaseRun {
    let mut run = CaseRun::default();
    let mut last_snapshot = None;
    for line in String::from_utf8_lossy(stdout).lines() {
        match serde_json::from_str::<HostLine>(line) {
            Ok(HostLine::Step { step, outcome }) if step == run.outcomes.len() => {
                if matches!(outcome, Outcome::Ok(Value::Snapshot(_))) {
                    last_snapshot = Some(run.outcomes.len());
                }
                run.outcomes.push(outcome)
            }
            Ok(HostLine::SameSnapshot { step }) if step == run.outcomes.len() => {
                let Some(last) = last_snapshot else {
                    run.aborted = Some(format!("helper sent step {step} as an unseen snapshot"));
                    return run;
                };
                run.outcomes.push(run.outcomes[last].clone());
            }
            Ok(HostLine::Step { step, .. } | HostLine::SameSnapshot { step }) => {
                run.aborted = Some(format!("helper sent step {step} out of order"));
                return run;
            }
            Ok(HostLine::Done) => return run,
            Ok(HostLine::Aborted(why)) => {
                run.aborted = Some(why);
                return run;
            }
            Err(e) => {
                run.aborted = Some(format!("unreadable helper line {line:?}: {e}"));
                return run;
            }
        }
    }
    run.aborted = Some("helper stopped before its last op".into());
    run
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn complete_and_truncated_outputs() {
        let mut out = String::new();
        out += &HostLine::Step {
            step: 0,
            outcome: Outcome::Ok(Value::Unit),
        }
        .to_line();
        out += &HostLine::Step {
            step: 1,
            outcome: Outcome::Errno(2),
        }
        .to_line();
        let cut = read_host_output(out.as_bytes());
        assert_eq!(cut.outcomes.len(), 2);
        assert!(cut.aborted.is_some());
        out += &HostLine::Done.to_line();
        let full = read_host_output(out.as_bytes());
        assert_eq!(full.aborted, None);
        assert_eq!(full.outcomes[1], Outcome::Errno(2));
    }

    #[test]
    fn a_same_snapshot_line_repeats_the_last_snapshot() {
        let snap = |n: usize| {
            Outcome::Ok(Value::Snapshot(crate::outcome::SnapshotRec {
                entries: Vec::new(),
                fds: (0..n)
                    .map(|i| crate::outcome::FdRec {
                        name: format!("f{i}"),
                        fd: i as i32,
                        task: 1,
                        stat: Err(9),
                    })
                    .collect(),
            }))
        };
        let step = |step, outcome| HostLine::Step { step, outcome }.to_line();
        let same = |step| HostLine::SameSnapshot { step }.to_line();
        let out = [
            step(0, Outcome::Ok(Value::Unit)),
            step(1, snap(1)),
            step(2, Outcome::Errno(2)),
            same(3),
            step(4, snap(2)),
            same(5),
            HostLine::Done.to_line(),
        ]
        .concat();
        let run = read_host_output(out.as_bytes());
        assert_eq!(run.aborted, None);
        assert_eq!(run.outcomes[3], snap(1));
        assert_eq!(run.outcomes[5], snap(2));
        assert_eq!(run.outcomes.len(), 6);
        // Before any snapshot, or out of order, the line is an error.
        let early = [step(0, Outcome::Ok(Value::Unit)), same(1)].concat();
        assert!(read_host_output(early.as_bytes()).aborted.is_some());
        let skipped = [step(0, Outcome::Ok(Value::Unit)), step(1, snap(1)), same(3)].concat();
        assert!(read_host_output(skipped.as_bytes()).aborted.is_some());
    }
}
