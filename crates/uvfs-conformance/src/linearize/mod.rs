//! Linearizability of uvfs's namespace operations under concurrency.
//!
//! A seeded generator ([`plan`]) writes a random initial tree and, for two (sometimes three)
//! threads, a short list of operations each: `rename` with the `renameat2` flags
//! (`RENAME_NOREPLACE`, `RENAME_EXCHANGE`, `RENAME_WHITEOUT`), `link`, `unlink`, `mkdir`,
//! `rmdir`, `symlink`, `open` with `O_CREAT|O_EXCL` and with `O_CREAT`, `lstat` and (on
//! request) a `getdents64` listing, over a handful of names in one or two directories.
//! The lists run at the same time on one uvfs [`Vfs`], one [`uvfs::Task`] per thread
//! (`concurrent`), many times per seed with varied start offsets and yields. Each run's
//! history (every operation's result and the final tree: listings, and per name the inode
//! `(st_dev, st_ino)`, type and `st_nlink`) must be one that some serial order of the
//! operations, keeping each thread's order, produces on a fresh `Vfs` ([`serial`]); inode
//! identities are compared up to renaming ([`history`]). If none does, the run is not
//! linearizable and [`check`] returns a report with the seed, the lists, the observed history,
//! the closest serial history and a command that replays the seed.
//!
//! The serial behaviour is uvfs's own, which the differential suite checks against the host
//! kernel call by call; this checker adds only "concurrent = some serial order". It cannot
//! see a window that no run hits: the plants in the module's test show how many seeds a
//! bug takes to find.
//!
//! What it does not check: path walks through directories that move (Linux does not make a
//! walk atomic either; see [`plan`]), following symbolic links, timestamps, and `st_nlink`
//! as seen by a concurrent `lstat` (Linux drops a link count before it removes the name, so a
//! concurrent `lstat` can see a count no serial order gives).

mod concurrent;
mod exec;
pub mod history;
pub mod plan;
mod rng;
pub mod serial;

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::{Duration, Instant};

use uvfs::Vfs;

use concurrent::{Pool, RunError, Schedule};
use exec::{build, snapshot};
use history::{History, Render};
use plan::{generate, Plan, Reads};
use rng::Rng;
use serial::SerialOutcomes;

/// How many seeds to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Budget {
    /// Exactly this many seeds.
    Seeds(u64),
    /// Seeds until this much time has passed (checked between seeds; at least one).
    Time(Duration),
}

/// What to run.
#[derive(Clone, Debug)]
pub struct Config {
    /// The first seed; the others follow it.
    pub first_seed: u64,
    /// How many seeds.
    pub budget: Budget,
    /// Concurrent runs per seed.
    pub runs_per_seed: u32,
    /// Whether plans include `getdents64`.
    pub reads: Reads,
    /// How long one concurrent run may take before it is reported as stuck.
    pub stuck_after: Duration,
}

impl Config {
    /// The configuration from the environment, with `default` for what it does not set:
    /// `UVFS_LIN_SEED` (one seed: replay), `UVFS_LIN_FIRST_SEED`, `UVFS_LIN_SEEDS`,
    /// `UVFS_LIN_TIME_SECS` (a time budget instead of a seed count), `UVFS_LIN_RUNS` (runs per
    /// seed), `UVFS_LIN_LIST` (`1`: include `getdents64`; `0`: not), `UVFS_LIN_STUCK_SECS`.
    ///
    /// # Panics
    /// On a variable that does not parse.
    pub fn from_env(default: Config) -> Config {
        fn var<T: std::str::FromStr>(name: &str) -> Option<T> {
            let v = std::env::var(name).ok()?;
            Some(
                v.trim()
                    .parse()
                    .unwrap_or_else(|_| panic!("{name}={v:?} does not parse")),
            )
        }
        let mut c = default;
        if let Some(s) = var("UVFS_LIN_FIRST_SEED") {
            c.first_seed = s;
        }
        if let Some(n) = var("UVFS_LIN_SEEDS") {
            c.budget = Budget::Seeds(n);
        }
        if let Some(t) = var::<u64>("UVFS_LIN_TIME_SECS") {
            c.budget = Budget::Time(Duration::from_secs(t));
        }
        if let Some(s) = var("UVFS_LIN_SEED") {
            c.first_seed = s;
            c.budget = Budget::Seeds(1);
        }
        if let Some(r) = var("UVFS_LIN_RUNS") {
            c.runs_per_seed = r;
        }
        if let Some(l) = var::<u8>("UVFS_LIN_LIST") {
            c.reads = if l == 0 {
                Reads::LstatOnly
            } else {
                Reads::LstatAndList
            };
        }
        if let Some(s) = var("UVFS_LIN_STUCK_SECS") {
            c.stuck_after = Duration::from_secs(s);
        }
        c
    }

    /// The environment that replays `seed` with this configuration's other settings.
    pub fn replay_env(&self, seed: u64) -> String {
        let list = match self.reads {
            Reads::LstatOnly => 0,
            Reads::LstatAndList => 1,
        };
        format!(
            "UVFS_LIN_SEED={seed} UVFS_LIN_RUNS={} UVFS_LIN_LIST={list}",
            self.runs_per_seed.max(2000)
        )
    }
}

/// What a check did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// Seeds checked.
    pub seeds: u64,
    /// Of which with three threads.
    pub three_thread_seeds: u64,
    /// Concurrent runs.
    pub runs: u64,
    /// Operations run concurrently (each thread's results counted).
    pub concurrent_ops: u64,
    /// Operations the runs were asked to run (plan size times runs).
    pub planned_ops: u64,
    /// Distinct histories seen, summed over seeds.
    pub distinct_histories: u64,
    /// Runs whose history no order of whole threads gives (the threads really interleaved).
    pub interleaved_runs: u64,
    /// Runs in which the threads' lists overlapped in time (the last thread started before
    /// the first finished).
    pub overlapping_runs: u64,
    /// Serial orders run by the oracle.
    pub serial_orders: u64,
    /// Serial orders the plans have (the sum of their multinomial coefficients).
    pub expected_serial_orders: u64,
    /// Distinct serial histories, summed over seeds.
    pub serial_histories: u64,
}

impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} seeds ({} with 3 threads), {} concurrent runs ({} ops; {} runs overlapped in \
             time), {} distinct histories ({} runs interleaved), {} serial orders evaluated ({} \
             distinct serial histories)",
            self.seeds,
            self.three_thread_seeds,
            self.runs,
            self.concurrent_ops,
            self.overlapping_runs,
            self.distinct_histories,
            self.interleaved_runs,
            self.serial_orders,
            self.serial_histories
        )
    }
}

/// A history no serial order explains, a panic, or a stuck run.
#[derive(Debug)]
pub struct Violation {
    /// The seed.
    pub seed: u64,
    /// The concurrent runs of the seed before this one.
    pub runs_before: u32,
    /// What summed up so far (this seed excluded).
    pub summary: Summary,
    /// The full report, ready to print.
    pub report: String,
}

/// Runs `config`, calling `progress` after each seed.
///
/// # Errors
/// The first [`Violation`].
pub fn check(
    config: &Config,
    mut progress: impl FnMut(&Summary),
) -> Result<Summary, Box<Violation>> {
    let start = Instant::now();
    let mut pools: HashMap<usize, Pool> = HashMap::new();
    let mut sum = Summary::default();
    let mut seed = config.first_seed;
    loop {
        let more = match config.budget {
            Budget::Seeds(n) => sum.seeds < n,
            Budget::Time(t) => sum.seeds == 0 || start.elapsed() < t,
        };
        if !more {
            return Ok(sum);
        }
        let plan = Arc::new(generate(seed, config.reads));
        let pool = pools
            .entry(plan.threads.len())
            .or_insert_with(|| Pool::new(plan.threads.len(), config.stuck_after));
        let s = check_seed(config, &plan, pool, &sum)?;
        sum.seeds += 1;
        sum.three_thread_seeds += u64::from(plan.threads.len() == 3);
        sum.runs += s.runs;
        sum.concurrent_ops += s.concurrent_ops;
        sum.planned_ops += s.planned_ops;
        sum.distinct_histories += s.distinct_histories;
        sum.interleaved_runs += s.interleaved_runs;
        sum.overlapping_runs += s.overlapping_runs;
        sum.serial_orders += s.serial_orders;
        sum.expected_serial_orders += plan.interleavings();
        sum.serial_histories += s.serial_histories;
        progress(&sum);
        seed = seed.wrapping_add(1);
    }
}

fn check_seed(
    config: &Config,
    plan: &Arc<Plan>,
    pool: &mut Pool,
    before: &Summary,
) -> Result<Summary, Box<Violation>> {
    let serial = serial_outcomes(config, plan, before)?;
    let mut s = Summary {
        serial_orders: serial.orders,
        serial_histories: serial.histories.len() as u64,
        ..Summary::default()
    };
    let mut rng = Rng::new(plan.seed, 2);
    let mut seen: HashSet<History> = HashSet::new();
    // The shortest time each thread's list has taken so far (longer runs were interrupted).
    let mut durations = vec![Duration::ZERO; plan.threads.len()];
    for run in 0..config.runs_per_seed {
        let violation = |report: String| {
            Box::new(Violation {
                seed: plan.seed,
                runs_before: run,
                summary: before.clone(),
                report,
            })
        };
        let vfs = Vfs::new();
        let initial = build(&vfs, plan);
        let schedules = schedules(&mut rng, &durations);
        let runs = pool.run(vfs.clone(), plan, schedules).map_err(|e| {
            let what = match e {
                RunError::Panicked(m) => m,
                RunError::Stuck(d) => format!(
                    "a concurrent run did not finish within {} s: a thread is stuck in uvfs \
                     (deadlock?); its thread is left behind",
                    d.as_secs()
                ),
            };
            violation(format!(
                "{what}\n{plan}replay: {} cargo test -p uvfs-conformance --test \
                 linearizability -- --nocapture\n",
                config.replay_env(plan.seed)
            ))
        })?;
        let overlapped =
            runs.iter().map(|r| r.started).max() < runs.iter().map(|r| r.finished).min();
        s.overlapping_runs += u64::from(overlapped);
        for (d, r) in durations.iter_mut().zip(&runs) {
            let took = r.finished - r.started;
            *d = if d.is_zero() { took } else { (*d).min(took) };
        }
        let results: Vec<_> = runs.into_iter().map(|r| r.results).collect();
        s.runs += 1;
        s.planned_ops += plan.ops() as u64;
        s.concurrent_ops += results.iter().map(|r| r.len() as u64).sum::<u64>();
        let h = History::new(&initial, results, snapshot(&vfs));
        match serial.histories.get(&h) {
            Some(e) => {
                s.interleaved_runs += u64::from(!e.whole_threads);
                seen.insert(h);
            }
            None => {
                return Err(violation(report(config, plan, &serial, &h, run)));
            }
        }
    }
    s.distinct_histories = seen.len() as u64;
    Ok(s)
}

/// The serial outcomes of `plan`, computed on a thread of their own so that a deadlock in a
/// serial run fails the check after `config.stuck_after` instead of hanging it (the stuck
/// thread is left behind).
fn serial_outcomes(
    config: &Config,
    plan: &Arc<Plan>,
    before: &Summary,
) -> Result<SerialOutcomes, Box<Violation>> {
    let (tx, rx) = std::sync::mpsc::channel();
    let p = plan.clone();
    std::thread::Builder::new()
        .name("linearize-serial".to_string())
        .spawn(move || {
            let out = std::panic::catch_unwind(|| SerialOutcomes::of(&p));
            // The receiver is gone only if it gave up on this thread.
            let _ = tx.send(out.map_err(|e| concurrent::panic_message(&*e)));
        })
        .expect("spawning the serial oracle's thread");
    let what = match rx.recv_timeout(config.stuck_after) {
        Ok(Ok(s)) => return Ok(s),
        Ok(Err(msg)) => format!("a serial run panicked: {msg}"),
        Err(_) => format!(
            "the serial runs did not finish within {} s: a call is stuck in uvfs (deadlock?) \
             without any concurrency; the thread is left behind",
            config.stuck_after.as_secs()
        ),
    };
    Err(Box::new(Violation {
        seed: plan.seed,
        runs_before: 0,
        summary: before.clone(),
        report: format!(
            "{what}\n{plan}replay: {} cargo test -p uvfs-conformance --test linearizability \
             -- --nocapture\n",
            config.replay_env(plan.seed)
        ),
    }))
}

/// The schedules of one run: in one run in four every thread starts at once; otherwise one
/// thread, chosen at random, starts after a delay drawn uniformly from zero to one and a half
/// times the time another thread's list takes, which slides its operations across the others'
/// (the start line releases the threads within about a cache-line transfer of each other when
/// they all have a CPU). One thread in seven yields between its operations.
fn schedules(rng: &mut Rng, durations: &[Duration]) -> Vec<Schedule> {
    let n = durations.len();
    let delayed = if rng.chance(25) {
        None
    } else {
        Some(rng.below(n as u64) as usize)
    };
    (0..n)
        .map(|t| {
            let start_delay = match delayed {
                Some(d) if d == t => {
                    let span = (0..n)
                        .filter(|&o| o != t)
                        .map(|o| durations[o])
                        .max()
                        .unwrap_or_default();
                    let ns = span.as_nanos() as u64 * 3 / 2;
                    Duration::from_nanos(rng.below(ns + 1))
                }
                _ => Duration::ZERO,
            };
            Schedule {
                start_delay,
                yields: rng.chance(15),
            }
        })
        .collect()
}

fn report(
    config: &Config,
    plan: &Plan,
    serial: &SerialOutcomes,
    observed: &History,
    run: u32,
) -> String {
    let render = Render::new(&serial.initial);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "linearizability violation: no serial order of the threads explains this history \
         (seed {}, concurrent run {run})",
        plan.seed
    );
    let _ = write!(out, "{plan}");
    let _ = writeln!(out, "observed:");
    write_history(&mut out, plan, &render, observed, None);
    let closest = serial
        .histories
        .iter()
        .max_by_key(|(h, e)| {
            let (same, state) = h.agreement(observed);
            (same, state, std::cmp::Reverse(e.order.clone()))
        })
        .expect("at least one serial history");
    let (same, state_equal) = closest.0.agreement(observed);
    // Step names: `t1.2` is thread 1's operation 2; a two-step operation's steps are `t1.2a`
    // and `t1.2b`.
    let mut steps: Vec<std::vec::IntoIter<String>> = plan
        .threads
        .iter()
        .enumerate()
        .map(|(t, ops)| {
            let mut names = Vec::new();
            for (i, op) in ops.iter().enumerate() {
                match op.serial_steps() {
                    1 => names.push(format!("t{t}.{i}")),
                    k => names
                        .extend((0..k).map(|j| format!("t{t}.{i}{}", (b'a' + j as u8) as char))),
                }
            }
            names.into_iter()
        })
        .collect();
    let order: Vec<String> = closest
        .1
        .order
        .iter()
        .map(|&t| {
            steps[usize::from(t)]
                .next()
                .expect("the order has each thread's steps")
        })
        .collect();
    let _ = writeln!(
        out,
        "closest serial order: {} ({same} of {} results equal, final tree {}):",
        order.join(" "),
        plan.ops(),
        if state_equal { "equal" } else { "different" }
    );
    write_history(&mut out, plan, &render, closest.0, Some(observed));
    let _ = writeln!(
        out,
        "({} distinct serial histories from {} orders)",
        serial.histories.len(),
        serial.orders
    );
    let _ = writeln!(
        out,
        "replay: {} cargo test -p uvfs-conformance --test linearizability -- --nocapture",
        config.replay_env(plan.seed)
    );
    out
}

fn write_history(
    out: &mut String,
    plan: &Plan,
    render: &Render,
    h: &History,
    compare: Option<&History>,
) {
    for (t, ops) in plan.threads.iter().enumerate() {
        let _ = writeln!(out, "  thread {t}:");
        for (i, op) in ops.iter().enumerate() {
            let r = &h.results[t][i];
            let mark = match compare {
                Some(o) if o.results[t][i] != *r => "   <-- differs",
                _ => "",
            };
            let _ = writeln!(out, "    {op} = {}{mark}", render.result(r));
        }
    }
    let _ = writeln!(out, "  final tree:");
    out.push_str(&render.state(&h.state));
}
