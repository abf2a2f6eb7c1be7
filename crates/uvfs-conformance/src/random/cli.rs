//! The command line of the random tester, shared by its binary and its test: options, the
//! expectations check, and the report.

use std::fmt::Write;
use std::path::Path;
use std::time::Duration;

use super::driver::{Budget, Report};
use super::expect;
use super::gen::Shape;
use crate::report::load_expectations;

/// The usage text.
pub const USAGE: &str = "usage: uvfs-conformance-random [--seeds N] [--start SEED] [--time SECS] \
[--ops N] [--workers N] [--minimise N] [--ticked-one-in N]";

/// Parses the options into a budget, starting from `budget`.
///
/// # Errors
/// An unknown option or a bad number, with the usage.
pub fn parse_args(mut budget: Budget, args: &[String]) -> Result<Budget, String> {
    let mut it = args.iter();
    while let Some(opt) = it.next() {
        let mut num = |what: &str| -> Result<u64, String> {
            it.next()
                .and_then(|v| v.parse::<u64>().ok())
                .ok_or_else(|| format!("{opt} needs a number ({what})\n{USAGE}"))
        };
        match opt.as_str() {
            "--seeds" => budget.seeds = num("how many seeds")?,
            "--start" => budget.start = num("the first seed")?,
            "--time" => budget.time = Some(Duration::from_secs(num("seconds")?)),
            "--ops" => budget.shape.ops = num("ops per sequence")? as usize,
            "--workers" => budget.workers = num("workers")?.max(1) as usize,
            "--minimise" => budget.minimise = num("divergences to minimise")? as usize,
            "--ticked-one-in" => budget.shape.ticked_one_in = num("1 in N seeds ticked")?,
            "-h" | "--help" => return Err(USAGE.to_string()),
            _ => return Err(format!("unknown option {opt}\n{USAGE}")),
        }
    }
    if budget.time.is_some() && !args.iter().any(|a| a == "--seeds") {
        budget.seeds = u64::MAX - budget.start;
    }
    Ok(budget)
}

/// The budget when no option is given: what CI runs.
pub fn default_budget() -> Budget {
    Budget {
        start: 0,
        seeds: 800,
        time: None,
        workers: 2,
        shape: Shape::default(),
        minimise: 3,
        minimise_runs: 600,
    }
}

/// Checks that every expected-divergence class is listed with its reason, and no other.
///
/// # Errors
/// What is missing or stale.
pub fn check_expectations(crate_dir: &Path) -> Result<(), String> {
    let expected = load_expectations(&crate_dir.join("expected-divergences.txt"))?;
    expect::check_listed(&expected)
}

/// The report as text: the counts, every divergence (minimised where it was) as a case to
/// paste into `cases/`, and a replay command for each seed.
pub fn render(budget: &Budget, r: &Report) -> String {
    let mut out = String::new();
    for f in &r.diverged {
        let _ = writeln!(
            out,
            "DIVERGED seed {} at op {} ({}): replay with `uvfs-conformance-random --start {} --seeds 1`",
            f.seed,
            f.step.div_ceil(2),
            f.signature,
            f.seed
        );
        let _ = writeln!(out, "  op:   {}", f.diff.text);
        let _ = writeln!(out, "  uvfs: {}", f.diff.uvfs);
        let _ = writeln!(out, "  host: {}", f.diff.host);
        if let Some(c) = &f.minimised {
            let _ = writeln!(
                out,
                "  minimised to {} steps; as a case for cases/:\n{c}",
                c.steps.len()
            );
        }
    }
    let expected: Vec<String> = r.expected.iter().map(|(k, v)| format!("{k} {v}")).collect();
    let distinct = {
        let mut s: Vec<&str> = r.diverged.iter().map(|f| f.signature.as_str()).collect();
        s.sort_unstable();
        s.dedup();
        s.len()
    };
    let _ = writeln!(
        out,
        "random: {} seeds from {} ({} ops each, {} ticked), {} ops on each side, {} of them \
         calls ({:.0}% succeeded on the host), in {:.1} s with {} workers",
        r.seeds,
        budget.start,
        budget.shape.ops,
        r.ticked,
        r.ops,
        r.ops_real,
        100.0 * r.ops_ok as f64 / r.ops_real.max(1) as f64,
        r.elapsed.as_secs_f64(),
        budget.workers
    );
    let _ = writeln!(
        out,
        "random: {} matched, {} met an expected divergence ({}), {} diverged ({} distinct)",
        r.matched,
        r.expected.values().sum::<u64>(),
        if expected.is_empty() {
            "none".to_string()
        } else {
            expected.join(", ")
        },
        r.diverged.len(),
        distinct
    );
    out
}
