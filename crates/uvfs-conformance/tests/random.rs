//! The random differential tester's CI budget: a fixed range of seeds (src/random), each a
//! sequence of 120 random system calls with a snapshot of the whole tree after every one, run
//! on uvfs and on the host kernel and compared op by op. Oracle: the host kernel. Fails on any
//! divergence that no class in `expected-divergences.txt` explains, printing it minimised as a
//! case for `cases/`.
//!
//! Needs root for the host side; without it the test says `skipped: why`, and fails when `CI`
//! is set. `UVFS_RANDOM_ARGS="--seeds 100000 --workers 4"` replaces the budget (the options
//! of `uvfs-conformance-random`).

use std::path::Path;
use std::process::ExitCode;

use uvfs_conformance::host::serve::{probe, Fencing, HostServer};
use uvfs_conformance::random::cli::{check_expectations, default_budget, parse_args, render};
use uvfs_conformance::random::driver::run;
use uvfs_conformance::sysfs_guard::{machine_topology_changes, machine_topology_state};

const HELPER: &str = env!("CARGO_BIN_EXE_uvfs-conformance-host");

fn main() -> ExitCode {
    let args: Vec<String> = std::env::var("UVFS_RANDOM_ARGS")
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_string)
        .collect();
    let budget = match parse_args(default_budget(), &args) {
        Ok(b) => b,
        Err(e) => {
            println!("random: {e}\n0 passed, 1 failed");
            return ExitCode::FAILURE;
        }
    };
    if let Err(e) = check_expectations(Path::new(env!("CARGO_MANIFEST_DIR"))) {
        println!("random: {e}\n0 passed, 1 failed");
        return ExitCode::FAILURE;
    }
    if let Err(why) = probe(Path::new(HELPER)) {
        println!("skipped {} seeds: {why}", budget.seeds);
        println!("0 passed, 0 failed, {} skipped", budget.seeds);
        return if std::env::var_os("CI").is_some() {
            ExitCode::FAILURE
        } else {
            ExitCode::SUCCESS
        };
    }
    let sysfs_before = machine_topology_state();
    let report = run(&budget, || {
        HostServer::spawn_with(Path::new(HELPER), Fencing::MountsOnly)
            .expect("the host helper starts")
    });
    print!("{}", render(&budget, &report));
    let changed = machine_topology_changes(&sysfs_before, &machine_topology_state());
    if !changed.is_empty() {
        println!("random: the machine's sysfs changed (src/sysfs_guard.rs let a call through):");
        changed.iter().for_each(|l| println!("  {l}"));
        println!("0 passed, 1 failed");
        return ExitCode::FAILURE;
    }
    let failed = report.diverged.len() as u64;
    let ran_short = report.seeds < budget.seeds && budget.time.is_none();
    if ran_short {
        println!(
            "random: only {} of {} seeds ran",
            report.seeds, budget.seeds
        );
    }
    println!(
        "{} passed, {} failed",
        report.seeds - failed,
        failed + u64::from(ran_short)
    );
    if failed > 0 || ran_short {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
