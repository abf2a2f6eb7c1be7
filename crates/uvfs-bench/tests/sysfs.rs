//! `sysfs-open-read` (seed 004) through the suite's runner in quick mode, and its columns one
//! by one. Oracles: the structure of the result (every column measures or says why not), the
//! host's own `core_id` values (each thread checks every read against them) and the count of
//! those checks; no timing is asserted.

use std::sync::Mutex;
use std::time::Duration;

use indicatif::ProgressBar;
use uvfs_bench::column::{is_host, Column, Support};
use uvfs_bench::columns::host::Host;
use uvfs_bench::columns::uvfs::{Design, Uvfs};
use uvfs_bench::columns::vfs_crate::VfsCrate;
use uvfs_bench::params::{Params, Sharing, Workload};
use uvfs_bench::report;
use uvfs_bench::runner::{run, Options};
use uvfs_bench::sysfs::{host_support, params, thread_counts, vanilla_locking_on};

/// The vanilla switch is process-wide: the tests that turn it on, or check that it is off,
/// take turns.
static SWITCH: Mutex<()> = Mutex::new(());

fn switch_turn() -> std::sync::MutexGuard<'static, ()> {
    SWITCH
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Every column of the workload gives two positive samples per configuration or a reason it
/// skips; the uvfs columns always measure, the host's wherever it has the file; the vanilla
/// switch is off afterwards; the tables have the aggregate rows with their speed-ups.
#[test]
fn quick_run_fills_every_column_or_says_why_not() {
    let _turn = switch_turn();
    let threads = thread_counts(None, true);
    let opts = Options {
        sysfs_threads: threads.clone(),
        ..Options::smoke(vec![Workload::SysfsOpenRead], vec![1, 2])
    };
    let mut columns: Vec<Box<dyn Column>> = vec![
        Box::new(Host::new()),
        Box::new(Uvfs::new(Design::Current)),
        Box::new(Uvfs::new(Design::Vanilla)),
        Box::new(Uvfs::new(Design::TmpfsReference)),
        Box::new(Uvfs::new(Design::VanillaNotify)),
        Box::new(VfsCrate::new()),
    ];
    let mut json = Vec::new();
    let r = run(&opts, &mut columns, &ProgressBar::hidden(), Some(&mut json)).expect("run");
    assert!(
        !vanilla_locking_on(),
        "the vanilla kernfs locking is left on"
    );
    assert!(!r.failed, "no column may fail: {:#?}", r.workloads);
    let [(w, configs)] = &r.workloads[..] else {
        panic!("one workload: {:#?}", r.workloads)
    };
    assert_eq!(*w, Workload::SysfsOpenRead);
    // 1 thread, then shared and per-thread for each other count.
    assert_eq!(configs.len(), 1 + 2 * (threads.len() - 1));
    let host_runs = host_support() == Support::Yes;
    let mut measured = 0;
    for c in configs {
        for col in &c.columns {
            let what = format!("{} {}", col.column, c.params.label());
            assert!(col.error.is_none(), "{what}: {:?}", col.error);
            let must_measure = ["uvfs", "uvfs-vanilla", "uvfs-tmpfs"].contains(&col.column)
                || (is_host(col.column) && host_runs);
            match &col.skipped {
                Some(why) => {
                    assert!(!must_measure, "{what} skipped: {why}");
                    assert!(why.starts_with("skipped: "), "{what}: {why}");
                }
                None => {
                    assert!(must_measure, "{what} should skip");
                    assert_eq!(col.samples.len(), 2, "{what}");
                    assert!(col.samples.iter().all(|&s| s > 0.0), "{what}");
                    assert!(col.ops > 0 && col.summary.is_some(), "{what}");
                    measured += 1;
                }
            }
        }
    }
    let per_config = if host_runs { 4 } else { 3 };
    assert_eq!(measured, per_config * configs.len());
    let text = String::from_utf8(json).expect("utf-8");
    let samples = text
        .lines()
        .filter(|l| l.contains("\"type\":\"sample\"") && l.contains("sysfs-open-read"))
        .count();
    assert_eq!(samples, 2 * measured);
    let agg = report::aggregate_table("ops/s (all threads)", &r.column_names, configs).to_string();
    assert!(agg.contains("ops/s (all threads)"), "{agg}");
    assert!(agg.contains("threads=16 per-thread"), "{agg}");
    assert!(agg.contains("x)"), "speed-ups over one thread: {agg}");
    let t = report::workload_table(&r.column_names, configs).to_string();
    assert!(t.contains("Amean threads=16 per-thread"), "{t}");
}

/// Each column's threads check every read: after two runs of 50 rounds on 4 threads, 400
/// checks, in both sharings. A run on more threads than the configuration has files fails
/// (no file for the extra threads) and leaves the vanilla switch off.
#[test]
fn every_read_is_checked_and_counted() {
    let _turn = switch_turn();
    const OPS: u64 = 50;
    let designs = [Design::Current, Design::Vanilla, Design::TmpfsReference];
    for sharing in [Sharing::Shared, Sharing::PerThread] {
        let p = params(4, sharing);
        for design in designs {
            let mut col = Uvfs::new(design);
            assert_eq!(col.supports(&p), Support::Yes);
            col.setup(&p).expect("setup");
            for _ in 0..2 {
                let d = col.run(&p, OPS).expect("run");
                assert!(d > Duration::ZERO);
            }
            // Each run's window ends at the first thread's quota: between one quota and all
            // four per run (every round done was checked: `Reads::end_run`).
            let c = col.sysfs_checks();
            assert!(
                (2 * OPS..=2 * 4 * OPS).contains(&c),
                "{}: {c} checks",
                col.name()
            );
            let e = col
                .run(&params(6, sharing), 1)
                .expect_err("threads 4 and 5 have no file");
            assert!(format!("{e:#}").contains("no file for thread"), "{e:#}");
            assert!(
                !vanilla_locking_on(),
                "{}: left on by a failed run",
                col.name()
            );
            col.teardown();
        }
        let mut host = Host::new();
        if let Support::No(why) = host.supports(&p) {
            eprintln!("host: {why}");
            continue;
        }
        host.setup(&p).expect("host setup");
        host.run(&p, OPS).expect("host run");
        host.run(&p, OPS).expect("host run");
        let c = host.sysfs_checks();
        assert!((2 * OPS..=2 * 4 * OPS).contains(&c), "host: {c} checks");
        host.teardown();
    }
}

/// The other columns skip the workload with their reason; uvfs-tmpfs skips every other one.
#[test]
fn columns_without_a_pseudo_filesystem_say_why() {
    let p = params(2, Sharing::Shared);
    let why = |s: Support| match s {
        Support::No(w) => w,
        Support::Yes => panic!("should skip"),
    };
    assert!(why(VfsCrate::new().supports(&p)).contains("no pseudo filesystem"));
    assert!(why(Uvfs::new(Design::VanillaNotify).supports(&p)).starts_with("skipped: "));
    let tmpfs = Uvfs::new(Design::TmpfsReference);
    for w in Workload::ALL {
        let q = Params {
            workload: w,
            ..params(1, Sharing::Shared)
        };
        let s = tmpfs.supports(&q);
        if w == Workload::SysfsOpenRead {
            assert_eq!(s, Support::Yes);
        } else {
            assert!(why(s).contains("reference only"), "{w:?}");
        }
    }
}
