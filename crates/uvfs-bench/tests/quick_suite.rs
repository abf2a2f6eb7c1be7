//! The suite's runner end to end in quick mode on the host, uvfs, uvfs-vanilla and
//! uvfs-vanilla-notify columns:
//! every configuration runs (or says why not), samples are positive, and the tables, the JSON
//! lines and the SVGs are produced. Oracle: the structure of the result; no timing is asserted.

use indicatif::ProgressBar;
use uvfs_bench::column::Column;
use uvfs_bench::columns::host::Host;
use uvfs_bench::columns::uvfs::{Design, Uvfs};
use uvfs_bench::params::Workload;
use uvfs_bench::runner::{run, Options};
use uvfs_bench::{report, svg};

#[test]
fn quick_run_covers_every_workload_and_writes_outputs() {
    let opts = Options::smoke(Workload::ALL.to_vec(), vec![1, 2]);
    let mut columns: Vec<Box<dyn Column>> = vec![
        Box::new(Host::new()),
        Box::new(Uvfs::new(Design::Current)),
        Box::new(Uvfs::new(Design::Vanilla)),
        Box::new(Uvfs::new(Design::VanillaNotify)),
    ];
    let mut json = Vec::new();
    let r = run(&opts, &mut columns, &ProgressBar::hidden(), Some(&mut json)).expect("run");
    assert!(!r.failed, "no column may fail: {:#?}", r.workloads);
    assert_eq!(r.workloads.len(), Workload::ALL.len());
    let mut uvfs_samples = 0;
    for (_, configs) in &r.workloads {
        for c in configs {
            for col in &c.columns {
                assert!(
                    col.error.is_none(),
                    "{} failed: {:?}",
                    col.column,
                    col.error
                );
                if col.skipped.is_none() {
                    assert_eq!(col.samples.len(), 2, "{} {}", col.column, c.params.label());
                    assert!(col.samples.iter().all(|&s| s > 0.0));
                }
                if col.column == "uvfs" {
                    // Everything, the fanotify mount mark too.
                    assert!(
                        col.skipped.is_none(),
                        "uvfs runs everything: {} {:?}",
                        c.params.label(),
                        col.skipped
                    );
                    uvfs_samples += col.samples.len();
                }
            }
        }
    }
    // write1, write1-watch (7 scenarios), read1, orc (1 + 2x2), stat-walk x5, create-unlink
    // (1 + 2x2), find (1 and 2 walkers), messaging (groups 1 and 2), pipe-pingpong,
    // pipe-bulk, sysfs-open-read (1 + 2x1): 29 configurations.
    assert_eq!(uvfs_samples, 29 * 2);
    let text = String::from_utf8(json).expect("utf-8");
    assert!(text
        .lines()
        .next()
        .is_some_and(|l| l.contains("\"machine\"")));
    assert!(
        text.lines()
            .filter(|l| l.contains("\"type\":\"sample\""))
            .count()
            >= 19 * 2 * 2
    );
    for (_, configs) in &r.workloads {
        let t = report::workload_table(&r.column_names, configs).to_string();
        assert!(t.contains("Amean"));
    }
    let dir = std::env::temp_dir().join(format!("uvfs-bench-svg-{}", std::process::id()));
    let files = svg::write_all(&r, &dir).expect("svg");
    assert_eq!(files.len(), Workload::ALL.len());
    for f in &files {
        let s = std::fs::read_to_string(f).expect("read svg");
        assert!(s.starts_with("<svg") || s.contains("<svg"));
    }
    if std::env::var_os("UVFS_BENCH_KEEP_SVG").is_none() {
        std::fs::remove_dir_all(&dir).expect("cleanup");
    }
}
