//! `uvfs bench scale`: the file-system testcases of will-it-scale, the suite the kernel's own
//! scalability work is measured with, on the host kernel and on uvfs side by side.
//!
//! Each testcase is a tiny loop (`calls.rs`, written once for both columns) run by 1, 2, 4 and
//! 16 copies at once (16 is more than the CPUs on purpose: a lock whose holder is preempted
//! shows there), in two modes:
//! - **threads**: one shared fd table. Host: threads of this process. uvfs: tasks made with
//!   `Task::clone_thread`.
//! - **processes**: one fd table per copy. Host: forked processes (`host_sys.rs` says why that
//!   is safe here). uvfs: tasks made with `Task::fork`, on threads (uvfs runs in process).
//!
//! Every copy sets up (opens the fd it holds), waits at a common gate, and runs its loop until
//! it has done a quota of iterations (calibrated per column, as the seed workloads are) or
//! another copy has done its quota first. A sample is the iterations of all copies over the
//! time from the start until the first copy completed its quota, so that it covers only time in
//! which every copy was running, as will-it-scale's samples do (its copies loop until they are
//! killed; the parent reads their counters). Timing a fixed amount of work per copy until the
//! last one ended, as this suite did before, also timed the tail of the run, in which fewer
//! copies than CPUs were left: 16 copies of uvfs's unlink2 on 2 CPUs, 5000 iterations each,
//! ended between 4 and 27-39 ms after the start, and the host's own 16-copy aggregate of
//! unlink2 (processes) came out at 0.88-0.90x its 2-copy aggregate that way, 0.99-1.02x in the
//! window.
//! The two columns alternate sample by sample, as the suite's other workloads do, and so do
//! the copy counts of one testcase and mode (one setup for the most copies serves them all:
//! each copy uses only its own files). Run one count after the other, the speed-ups moved with
//! the machine between them: unlink2 on 2 processes came out at 1.25x and 2.08x of one copy in
//! two runs of one binary minutes apart (2026-11-29).

pub mod board;
pub mod calls;
pub mod host;
#[allow(unsafe_code)] // Reason: fork, the shared mapping and fstat of a foreign fd number.
pub mod host_sys;
pub mod report;
pub mod runner;
mod spawn;
pub mod testcase;
pub mod threads;
pub mod uvfs;

use std::time::Duration;

use serde::Serialize;

use crate::column::Support;
use board::{CopyEnd, MAX_COPIES};
use testcase::{Testcase, NOT_YET};

/// How the copies of a run share state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, PartialOrd, Ord)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// One fd table for all copies.
    Threads,
    /// One fd table per copy.
    Processes,
}

impl Mode {
    /// Both, in report order.
    pub const ALL: [Mode; 2] = [Mode::Threads, Mode::Processes];

    /// The name on the command line and in output.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Threads => "threads",
            Mode::Processes => "processes",
        }
    }

    /// What it shares, for the table heading.
    pub fn describe(self) -> &'static str {
        match self {
            Mode::Threads => "threads: one shared fd table",
            Mode::Processes => "processes: one fd table per copy",
        }
    }
}

/// One measured configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Config {
    /// The testcase.
    pub testcase: Testcase,
    /// The mode.
    pub mode: Mode,
    /// Copies running at once.
    pub copies: usize,
}

/// What one run of a configuration produced.
#[derive(Clone, Debug)]
pub struct Run {
    /// From the common start until the first copy completed its quota.
    pub elapsed: Duration,
    /// Iterations completed by all copies together (those that stopped when the first copy
    /// completed its quota included; at most one each ended after `elapsed`).
    pub ops: u64,
    /// Each copy's report.
    pub ends: Vec<CopyEnd>,
}

/// A column of the scale tables: the host kernel or uvfs.
///
/// The runner calls `setup` once per configuration (untimed: it builds the testcase's files
/// on a fresh filesystem), then `run` once per sample, then `teardown`.
pub trait ScaleColumn: Send {
    /// `host` or `uvfs`.
    fn name(&self) -> &'static str;

    /// Whether this column runs `cfg`, or why not.
    fn supports(&self, cfg: &Config) -> Support;

    /// Builds the files of `cfg` on an empty filesystem.
    ///
    /// # Errors
    /// Any failure of the implementation under test.
    fn setup(&mut self, cfg: &Config) -> anyhow::Result<()>;

    /// Runs `cfg.copies` copies started together until one of them has run `ops` iterations.
    ///
    /// # Errors
    /// A copy failed (which one and why), or the copies could not be started.
    fn run(&mut self, cfg: &Config, ops: u64) -> anyhow::Result<Run>;

    /// The fd-table probe with `copies` copies in `mode` (`calls::probe_copy`), through the
    /// same machinery as `run`; each copy's report.
    ///
    /// # Errors
    /// The copies could not be started.
    fn probe(&mut self, mode: Mode, copies: usize) -> anyhow::Result<Vec<CopyEnd>>;

    /// Removes what `setup` built.
    fn teardown(&mut self);

    /// What this column leaves out or adds compared with the host syscall path.
    fn note(&self) -> &'static str;
}

/// Turns the copies' reports into an error naming the first copy that failed.
///
/// # Errors
/// A copy's status is a failure.
pub fn check_ends(column: &str, cfg: &Config, ends: &[CopyEnd]) -> anyhow::Result<()> {
    for (copy, e) in ends.iter().enumerate() {
        if let Err(f) = e.status {
            anyhow::bail!(
                "{column}: {} {} copies={}: copy {copy}: {f}",
                cfg.testcase.name(),
                cfg.mode.name(),
                cfg.copies
            );
        }
    }
    Ok(())
}

/// Default copy counts.
pub const DEFAULT_COPIES: [usize; 4] = [1, 2, 4, 16];

/// The testcases named in `names` (every one if empty).
///
/// # Errors
/// A name that is not a testcase: the message lists the valid ones, and says what a
/// will-it-scale testcase uvfs cannot run yet is waiting for.
pub fn parse_testcases(names: &[String]) -> Result<Vec<Testcase>, String> {
    if names.is_empty() {
        return Ok(Testcase::ALL.to_vec());
    }
    let mut out = Vec::new();
    for n in names {
        match Testcase::from_name(n) {
            Some(t) if !out.contains(&t) => out.push(t),
            Some(_) => {}
            None => {
                if let Some(ny) = NOT_YET.iter().find(|ny| ny.name == n) {
                    return Err(format!(
                        "testcase {n:?} is not yet runnable: it needs {}, which uvfs does not have",
                        ny.needs
                    ));
                }
                let valid: Vec<&str> = Testcase::ALL.iter().map(|t| t.name()).collect();
                return Err(format!(
                    "unknown testcase {n:?}; valid testcases: {}",
                    valid.join(", ")
                ));
            }
        }
    }
    Ok(out)
}

/// The copy counts to run: sorted, deduplicated, with 1 added (the speed-ups divide by it).
///
/// # Errors
/// A count of 0 or above [`MAX_COPIES`].
pub fn parse_copies(copies: Option<&[usize]>) -> Result<Vec<usize>, String> {
    let mut v = copies.map_or_else(|| DEFAULT_COPIES.to_vec(), <[usize]>::to_vec);
    if let Some(&bad) = v.iter().find(|&&c| c == 0 || c > MAX_COPIES) {
        return Err(format!(
            "--copies takes counts from 1 to {MAX_COPIES}, not {bad}"
        ));
    }
    v.push(1);
    v.sort_unstable();
    v.dedup();
    Ok(v)
}

/// The modes named by `--mode`: `threads`, `processes` or `both`.
///
/// # Errors
/// Any other word.
pub fn parse_mode(mode: Option<&str>) -> Result<Vec<Mode>, String> {
    match mode.unwrap_or("both") {
        "threads" => Ok(vec![Mode::Threads]),
        "processes" => Ok(vec![Mode::Processes]),
        "both" => Ok(Mode::ALL.to_vec()),
        other => Err(format!(
            "--mode takes threads, processes or both, not {other:?}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_testcase_lists_the_valid_ones() {
        let e = parse_testcases(&["open9".into()]).unwrap_err();
        assert!(
            e.contains("open9") && e.contains("open1") && e.contains("fallocate1"),
            "{e}"
        );
        assert_eq!(
            parse_testcases(&["dup1".into(), "open1".into(), "dup1".into()]),
            Ok(vec![Testcase::Dup1, Testcase::Open1])
        );
        assert_eq!(parse_testcases(&[]).map(|v| v.len()), Ok(27));
    }

    #[test]
    fn copies_zero_or_absurd_are_refused_and_one_is_always_run() {
        assert!(parse_copies(Some(&[0])).unwrap_err().contains("not 0"));
        assert!(parse_copies(Some(&[2, 100_000]))
            .unwrap_err()
            .contains("100000"));
        assert_eq!(parse_copies(Some(&[4, 2, 4])), Ok(vec![1, 2, 4]));
        assert_eq!(parse_copies(None), Ok(vec![1, 2, 4, 16]));
        assert_eq!(parse_copies(Some(&[MAX_COPIES])), Ok(vec![1, MAX_COPIES]));
    }

    #[test]
    fn modes_parse() {
        assert_eq!(parse_mode(None), Ok(vec![Mode::Threads, Mode::Processes]));
        assert_eq!(parse_mode(Some("threads")), Ok(vec![Mode::Threads]));
        assert!(parse_mode(Some("fibers")).unwrap_err().contains("fibers"));
    }
}
