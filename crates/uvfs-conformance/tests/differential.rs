//! The differential conformance suite: every case of `cases/*.cases` runs on uvfs (in this
//! process) and on the host kernel (through two `uvfs-conformance-host --serve` helpers, one
//! fresh sandbox per case); the normalised outcomes are compared step by step. Oracle: the host
//! kernel. Deliberate differences are listed in `expected-divergences.txt`, one reason each.
//!
//! Needs root for the host side (mount namespace, tmpfs, chroot). Without it the suite says
//! `skipped N cases: why`, and fails when `CI` is set.
//!
//! `UVFS_CONFORMANCE_CASES=text` (or a bare argument, `cargo test -p uvfs-conformance text`)
//! runs only the cases whose name contains `text`;
//! `UVFS_CONFORMANCE_VERBOSE=1` prints every step of every case run, both sides;
//! `UVFS_CONFORMANCE_REPEAT=N` runs everything N times and fails on any case whose outcomes
//! change from one run to the next on the same side (a case that depends on timing).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::thread;
use std::time::{Duration, Instant};

use uvfs_conformance::host::serve::probe;
use uvfs_conformance::random::expect::only_statx_attributes_mask;
use uvfs_conformance::report::{
    compare, load_expectations, render_divergence, render_instability, render_steps, verdict,
    Expectation, Summary, Verdict,
};
use uvfs_conformance::{load_dir, run_on_uvfs, Case, CaseRun, HostServer};

const HELPER: &str = env!("CARGO_BIN_EXE_uvfs-conformance-host");
/// Host helpers run at once (the machine has two cores).
const HOST_WORKERS: usize = 2;
/// uvfs cases run at once: they spend most of their time waiting for clock ticks.
const UVFS_WORKERS: usize = 4;
/// How long one case may take on uvfs before it counts as hung.
const UVFS_TIMEOUT: Duration = Duration::from_secs(10);

fn main() -> ExitCode {
    let start = Instant::now();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let loaded = load_dir(&root.join("cases")).and_then(|c| {
        Ok((
            c,
            load_expectations(&root.join("expected-divergences.txt"))?,
        ))
    });
    let (mut cases, expected) = match loaded {
        Ok(v) => v,
        Err(e) => {
            println!("differential: {e}\n0 passed, 1 failed");
            return ExitCode::FAILURE;
        }
    };
    // Like libtest, a bare argument (`cargo test -p uvfs-conformance NAME`) filters by name.
    let arg_filter = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let filter = arg_filter.or_else(|| std::env::var("UVFS_CONFORMANCE_CASES").ok());
    if let Some(f) = &filter {
        cases.retain(|c| c.name.contains(f.as_str()));
    }
    let verbose = std::env::var_os("UVFS_CONFORMANCE_VERBOSE").is_some();
    if let Err(why) = probe_host() {
        println!("skipped {} cases: {why}", cases.len());
        println!("0 passed, 0 failed, {} skipped", cases.len());
        return if std::env::var_os("CI").is_some() {
            ExitCode::FAILURE
        } else {
            ExitCode::SUCCESS
        };
    }
    let repeat: usize = std::env::var("UVFS_CONFORMANCE_REPEAT")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(1)
        .max(1);
    let (uvfs_runs, host_runs) = run_both(&cases);
    let unstable: usize = (1..repeat)
        .map(|_| count_unstable(&cases, &uvfs_runs, &host_runs))
        .sum();

    let mut summary = Summary {
        unstable,
        ..Summary::default()
    };
    let mut notes = Vec::new();
    for ((case, u), h) in cases.iter().zip(&uvfs_runs).zip(&host_runs) {
        if verbose {
            print!("{}", render_steps(case, u, h));
        }
        let listed = expected.get(&case.name);
        let mut diffs = compare(case, u, h);
        // A statx answer that differs in its `attributes_mask` alone is the listed divergence
        // `divergence_statx_attributes_mask_lacks_inode_flags` (listed whole, so it stays
        // pinned): excused in every other case, as the random tester's class excuses it.
        if !matches!(listed, Some(Expectation::Case(_))) {
            diffs.retain(|d| {
                let op = d.step.checked_sub(1).and_then(|i| case.steps.get(i));
                !op.is_some_and(|s| only_statx_attributes_mask(&s.op, d))
            });
        }
        let v = verdict(diffs, listed);
        match &v {
            Verdict::Match => {}
            Verdict::Diverged(diffs) => print!("{}", render_divergence(case, diffs)),
            Verdict::ExpectedDivergence(why) => {
                notes.push(format!("expected divergence {}: {why}", case.name))
            }
            Verdict::Stale(why) => println!(
                "STALE expectation {}: the case now matches the host (listed as: {why})",
                case.name
            ),
        }
        summary.add(&v);
    }
    for name in unknown_expectations(&expected, &cases)
        .into_iter()
        .filter(|_| filter.is_none())
    {
        println!("STALE expectation {name}: no case has this name");
        summary.stale += 1;
    }
    for n in notes {
        println!("{n}");
    }
    println!(
        "differential: ran in {:.1} s",
        start.elapsed().as_secs_f64()
    );
    print!("{}", summary.render());
    if summary.failed() > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

fn unknown_expectations<'a>(
    expected: &'a BTreeMap<String, Expectation>,
    cases: &[Case],
) -> Vec<&'a str> {
    expected
        .keys()
        .filter(|n| !n.starts_with(uvfs_conformance::random::expect::PREFIX))
        .filter(|n| !cases.iter().any(|c| &c.name == *n))
        .map(String::as_str)
        .collect()
}

/// Runs everything again and prints each case whose outcomes on one side differ from the
/// first run; returns how many (case, side) pairs changed.
fn count_unstable(cases: &[Case], uvfs_runs: &[CaseRun], host_runs: &[CaseRun]) -> usize {
    let (u2, h2) = run_both(cases);
    let mut unstable = 0;
    for (i, case) in cases.iter().enumerate() {
        for (side, first, again) in [
            ("uvfs", &uvfs_runs[i], &u2[i]),
            ("host", &host_runs[i], &h2[i]),
        ] {
            let diffs = compare(case, first, again);
            if !diffs.is_empty() {
                unstable += 1;
                print!("{}", render_instability(side, case, &diffs));
            }
        }
    }
    unstable
}

/// Checks that the helper can set up its sandbox here.
fn probe_host() -> Result<(), String> {
    probe(Path::new(HELPER))
}

/// Runs every case on both sides: uvfs in this process, the host in helper processes.
fn run_both(cases: &[Case]) -> (Vec<CaseRun>, Vec<CaseRun>) {
    thread::scope(|s| {
        let host = s.spawn(|| {
            pool(
                cases,
                HOST_WORKERS,
                || HostServer::spawn_at(Path::new(HELPER)),
                |server, c| match server {
                    Ok(server) => server.run(c),
                    Err(e) => CaseRun {
                        outcomes: Vec::new(),
                        aborted: Some(format!("cannot start the host helper: {e}")),
                    },
                },
            )
        });
        let uvfs = pool(
            cases,
            UVFS_WORKERS,
            || (),
            |(), c| run_on_uvfs(c, UVFS_TIMEOUT),
        );
        (uvfs, host.join().expect("the host runner does not panic"))
    })
}

/// Runs `f` on every case, `workers` at a time, each worker with its own state from `init`;
/// results in case order.
fn pool<S>(
    cases: &[Case],
    workers: usize,
    init: impl Fn() -> S + Sync,
    f: impl Fn(&mut S, &Case) -> CaseRun + Sync,
) -> Vec<CaseRun> {
    let next = AtomicUsize::new(0);
    let results: Vec<Mutex<Option<CaseRun>>> = cases.iter().map(|_| Mutex::new(None)).collect();
    thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| {
                let mut state = init();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(case) = cases.get(i) else { break };
                    let run = f(&mut state, case);
                    *results[i].lock().expect("no worker panics holding it") = Some(run);
                }
            });
        }
    });
    results
        .into_iter()
        .map(|m| {
            m.into_inner()
                .expect("no worker panicked")
                .expect("every case ran")
        })
        .collect()
}
