//! The random differential tester (crates/uvfs-conformance/src/random): seeded sequences of
//! system calls on uvfs and on the host kernel, compared op by op; divergences minimised and
//! printed as cases. Needs root (the host side runs in a private mount namespace).
//!
//! `uvfs-conformance-random [--seeds N] [--start SEED] [--time SECS] [--ops N] [--workers N]
//! [--minimise N] [--ticked-one-in N]`. Exit status 0 when no sequence diverged outside the
//! expected classes, 1 when one did, 2 for bad options or a broken expectations file.

use std::path::Path;
use std::process::ExitCode;

use uvfs_conformance::host::serve::find_helper;
use uvfs_conformance::random::cli::{check_expectations, default_budget, parse_args, render};
use uvfs_conformance::random::driver::run;
use uvfs_conformance::sysfs_guard::{machine_topology_changes, machine_topology_state};
use uvfs_conformance::{Fencing, HostServer};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let budget = match parse_args(default_budget(), &args) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    if let Err(e) = check_expectations(Path::new(env!("CARGO_MANIFEST_DIR"))) {
        eprintln!("{e}");
        return ExitCode::from(2);
    }
    let sysfs_before = machine_topology_state();
    let report = run(&budget, || {
        let helper = find_helper().expect(
            "the host helper is built beside this binary (cargo build -p uvfs-conformance)",
        );
        HostServer::spawn_with(&helper, Fencing::MountsOnly).expect("the host helper starts")
    });
    print!("{}", render(&budget, &report));
    let changed = machine_topology_changes(&sysfs_before, &machine_topology_state());
    if !changed.is_empty() {
        println!("random: the machine's sysfs changed (src/sysfs_guard.rs let a call through):");
        changed.iter().for_each(|l| println!("  {l}"));
        return ExitCode::FAILURE;
    }
    if report.diverged.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
