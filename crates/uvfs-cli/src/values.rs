//! What each flag and argument of `uvfs bench` accepts: the named values as clap `ValueEnum`s
//! (listed in `--help`, with clap's suggestion for a typo) and the counts with their bounds,
//! checked while the command line is parsed, so that bad input is refused before anything runs.

use clap::builder::PossibleValue;
use clap::ValueEnum;

use uvfs_bench::memory::MemoryColumn;
use uvfs_bench::params::Workload;
use uvfs_bench::scale::board::MAX_COPIES;
use uvfs_bench::scale::testcase::{NotYet, Testcase, NOT_YET};
use uvfs_bench::scale::Mode;
use uvfs_bench::watch::Watch;

/// The fewest samples per configuration: one sample has no variance, so no confidence
/// interval and no significance mark.
pub const MIN_ITERATIONS: usize = 2;

/// The most samples per configuration: 1000 samples of the seed workloads' 80 ms are 80 s per
/// configuration and column, hours for the suite; more is a typo.
pub const MAX_ITERATIONS: usize = 1000;

/// The most threads of a multi-thread workload. Each is an OS thread with std's default 2 MiB
/// stack reserved (plus a guard page and a signal stack), one file or directory on every
/// column and, on uvfs, a task: 1024 reserve 2 GiB of address space. 100,000 ran the process
/// out of memory mappings (`vm.max_map_count`) and aborted.
pub const MAX_THREADS: usize = 1024;

/// The most files `uvfs bench memory` creates: the host and uvfs hold about 1 KB per empty
/// file, so 10 M files are about 10 GB of memory in one column.
pub const MAX_FILES: u64 = 10_000_000;

/// Parses a decimal count in `min..=max`; `what` says what it counts in the message.
fn count<T>(s: &str, min: T, max: T, what: &str) -> Result<T, String>
where
    T: std::str::FromStr + PartialOrd + std::fmt::Display + Copy,
{
    let refusal = || format!("takes {what} from {min} to {max}");
    let n: T = s.trim().parse().map_err(|_| refusal())?;
    if n < min || n > max {
        return Err(refusal());
    }
    Ok(n)
}

/// `--iterations`: samples per configuration and column.
pub fn iterations(s: &str) -> Result<usize, String> {
    count(s, MIN_ITERATIONS, MAX_ITERATIONS, "a sample count")
        .map_err(|e| format!("{e} (one sample has no variance, so no confidence interval)"))
}

/// One count of `--threads`.
pub fn threads(s: &str) -> Result<usize, String> {
    count(s, 1, MAX_THREADS, "thread counts")
}

/// The most `messaging` groups: 40 threads each, within [`MAX_THREADS`].
pub const MAX_GROUPS: usize = MAX_THREADS / 40;

/// The most `messaging` loops: perf's long run.
pub const MAX_LOOPS: u64 = 10_000;

/// One count of `--groups`.
pub fn groups(s: &str) -> Result<usize, String> {
    count(s, 1, MAX_GROUPS, "group counts")
}

/// `--loops`.
pub fn loops(s: &str) -> Result<u64, String> {
    count(s, 1, MAX_LOOPS, "a loop count")
}

/// One count of `--copies`.
pub fn copies(s: &str) -> Result<usize, String> {
    count(s, 1, MAX_COPIES, "copy counts")
}

/// `--files` of `uvfs bench memory` and of its probe.
pub fn files(s: &str) -> Result<u64, String> {
    count(s, 1, MAX_FILES, "a file count")
}

/// `--dirs` of the memory probe (at most one per file: checked against `--files` later).
pub fn dirs(s: &str) -> Result<u64, String> {
    count(s, 1, MAX_FILES, "a directory count")
}

/// Copies `N` values of `ALL` into an array of `T` by `wrap`, in a const context (the
/// `ValueEnum` variants must be `'static`).
macro_rules! wrapped {
    ($all:expr, $wrap:path, $len:expr) => {{
        let all = $all;
        let mut out = [$wrap(all[0]); $len];
        let mut i = 0;
        while i < $len {
            out[i] = $wrap(all[i]);
            i += 1;
        }
        out
    }};
}

/// A workload of `uvfs bench`, by its name in the output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WorkloadArg(pub Workload);

const WORKLOAD_ARGS: [WorkloadArg; Workload::ALL.len()] =
    wrapped!(Workload::ALL, WorkloadArg, Workload::ALL.len());

impl ValueEnum for WorkloadArg {
    fn value_variants<'a>() -> &'a [Self] {
        &WORKLOAD_ARGS
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(PossibleValue::new(self.0.name()))
    }
}

/// A watch scenario of `write1-watch` (`--watch`), by its name in the tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WatchArg(pub Watch);

const WATCH_ARGS: [WatchArg; Watch::ALL.len()] = wrapped!(Watch::ALL, WatchArg, Watch::ALL.len());

impl ValueEnum for WatchArg {
    fn value_variants<'a>() -> &'a [Self] {
        &WATCH_ARGS
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(PossibleValue::new(self.0.name()))
    }
}

/// A testcase of `uvfs bench scale`: one it runs, or one of will-it-scale's that waits for
/// calls uvfs lacks (hidden from the list; refused with what it needs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TestcaseArg {
    /// A testcase `uvfs bench scale` runs.
    Run(Testcase),
    /// A testcase it cannot run yet.
    NotYet(NotYet),
}

const TESTCASE_ARGS: [TestcaseArg; Testcase::ALL.len() + NOT_YET.len()] = {
    let mut out = [TestcaseArg::Run(Testcase::ALL[0]); Testcase::ALL.len() + NOT_YET.len()];
    let mut i = 0;
    while i < Testcase::ALL.len() {
        out[i] = TestcaseArg::Run(Testcase::ALL[i]);
        i += 1;
    }
    let mut j = 0;
    while j < NOT_YET.len() {
        out[i + j] = TestcaseArg::NotYet(NOT_YET[j]);
        j += 1;
    }
    out
};

impl ValueEnum for TestcaseArg {
    fn value_variants<'a>() -> &'a [Self] {
        &TESTCASE_ARGS
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(match self {
            TestcaseArg::Run(t) => PossibleValue::new(t.name()),
            TestcaseArg::NotYet(n) => PossibleValue::new(n.name).hide(true),
        })
    }
}

/// `--mode` of `uvfs bench scale`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ModeArg {
    /// One shared fd table: the copies are threads.
    Threads,
    /// One fd table per copy: the copies are processes.
    Processes,
    /// Threads, then processes.
    Both,
}

impl ModeArg {
    /// The modes to run, in report order.
    pub fn modes(self) -> Vec<Mode> {
        match self {
            ModeArg::Threads => vec![Mode::Threads],
            ModeArg::Processes => vec![Mode::Processes],
            ModeArg::Both => Mode::ALL.to_vec(),
        }
    }
}

/// A column of `uvfs bench`'s tables (`--columns`), named as in the tables and the JSON.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, ValueEnum)]
pub enum ColumnArg {
    /// The host kernel's system calls on a private tmpfs.
    Host,
    /// uvfs.
    Uvfs,
    /// uvfs built without notification (scripts/build-nonotify.sh), in a child process.
    UvfsNonotify,
    /// uvfs with the design its optimisations replaced.
    UvfsVanilla,
    /// uvfs with the notification hooks of before 2015 (write1, messaging).
    UvfsVanillaNotify,
    /// uvfs with sysfs-open-read's files on a tmpfs: that workload's reference.
    UvfsTmpfs,
    /// The `vfs` crate's MemoryFS.
    VfsCrate,
    /// gVisor's Sentry VFS (needs `go`).
    Gvisor,
}

impl ColumnArg {
    /// Every column, in table order.
    pub const ALL: [ColumnArg; 8] = [
        ColumnArg::Host,
        ColumnArg::Uvfs,
        ColumnArg::UvfsNonotify,
        ColumnArg::UvfsVanilla,
        ColumnArg::UvfsVanillaNotify,
        ColumnArg::UvfsTmpfs,
        ColumnArg::VfsCrate,
        ColumnArg::Gvisor,
    ];

    /// The column of the scale tables that is this one, if any.
    pub fn scale(self) -> Option<ScaleColumnArg> {
        match self {
            ColumnArg::Host => Some(ScaleColumnArg::Host),
            ColumnArg::Uvfs => Some(ScaleColumnArg::Uvfs),
            _ => None,
        }
    }
}

/// A column of `uvfs bench scale`'s tables (`--columns`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, ValueEnum)]
pub enum ScaleColumnArg {
    /// The host kernel's system calls on a private tmpfs.
    Host,
    /// uvfs.
    Uvfs,
}

impl ScaleColumnArg {
    /// Both, in table order.
    pub const ALL: [ScaleColumnArg; 2] = [ScaleColumnArg::Host, ScaleColumnArg::Uvfs];
}

/// The column the hidden memory probe measures in its own process (gVisor's probe is its Go
/// driver, not this binary).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProbeColumnArg(pub MemoryColumn);

const PROBE_COLUMN_ARGS: [ProbeColumnArg; 3] = [
    ProbeColumnArg(MemoryColumn::Host),
    ProbeColumnArg(MemoryColumn::Uvfs),
    ProbeColumnArg(MemoryColumn::VfsCrate),
];

impl ValueEnum for ProbeColumnArg {
    fn value_variants<'a>() -> &'a [Self] {
        &PROBE_COLUMN_ARGS
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(PossibleValue::new(self.0.name()))
    }
}

/// The selection of `--columns` in table order without repeats; every one of `all` if none.
pub fn selected<T: Copy + Ord>(chosen: Option<&[T]>, all: &[T]) -> Vec<T> {
    let mut v = chosen.map_or_else(|| all.to_vec(), <[T]>::to_vec);
    v.sort_unstable();
    v.dedup();
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_refused_outside_their_bounds() {
        assert_eq!(iterations("2"), Ok(2));
        assert_eq!(iterations("1000"), Ok(1000));
        for bad in ["0", "1", "1001", "-1", "x", "", "99999999999999999999999"] {
            assert!(iterations(bad).is_err(), "{bad:?}");
        }
        assert_eq!(threads("1024"), Ok(1024));
        assert!(threads("1025").is_err() && threads("0").is_err());
        assert_eq!(copies("256"), Ok(256));
        assert!(copies("257").is_err() && copies("0").is_err());
        assert!(files("0").is_err() && files("10000001").is_err());
        assert_eq!((groups("25"), loops("10000")), (Ok(25), Ok(10_000)));
        assert!(groups("0").is_err() && groups("26").is_err());
        assert!(loops("0").is_err() && loops("10001").is_err());
    }

    #[test]
    fn value_enums_keep_the_output_names() {
        let names = |v: &[PossibleValue]| -> Vec<String> {
            v.iter().map(|p| p.get_name().to_string()).collect()
        };
        let w: Vec<_> = WORKLOAD_ARGS
            .iter()
            .filter_map(ValueEnum::to_possible_value)
            .collect();
        assert_eq!(
            names(&w),
            [
                "write1",
                "write1-watch",
                "read1",
                "open-read-close",
                "stat-walk",
                "create-unlink",
                "find",
                "messaging",
                "pipe-pingpong",
                "pipe-bulk",
                "sysfs-open-read"
            ]
        );
        let c: Vec<_> = ColumnArg::ALL
            .iter()
            .filter_map(ValueEnum::to_possible_value)
            .collect();
        assert_eq!(
            names(&c),
            [
                "host",
                "uvfs",
                "uvfs-nonotify",
                "uvfs-vanilla",
                "uvfs-vanilla-notify",
                "uvfs-tmpfs",
                "vfs-crate",
                "gvisor"
            ]
        );
        let w: Vec<_> = WATCH_ARGS
            .iter()
            .filter_map(ValueEnum::to_possible_value)
            .collect();
        assert_eq!(
            names(&w),
            [
                "none",
                "unrelated",
                "parent-other",
                "parent",
                "self",
                "self-undrained",
                "mount"
            ]
        );
        let hidden = TESTCASE_ARGS
            .iter()
            .filter_map(ValueEnum::to_possible_value)
            .filter(PossibleValue::is_hide_set)
            .count();
        assert_eq!(hidden, NOT_YET.len());
    }
}
