//! The `uvfs-nonotify` column: its child's protocol (run here in process: a ready line saying
//! whether notification is compiled in, then one round per count), the column's refusal of a
//! missing binary, and the tables' comparison of uvfs with it. Oracles: the protocol as
//! `columns::served` reads it; `Summary::differs_from` for the marks.

use uvfs_bench::column::{Column, Support};
use uvfs_bench::columns::nonotify::{self, NoNotify, Ready, NONOTIFY};
use uvfs_bench::params::{grid, MessagingGrid, Params, Workload};
use uvfs_bench::report::{messaging_table, workload_table};
use uvfs_bench::runner::{ColumnResult, ConfigResult};
use uvfs_bench::stats::Summary;
use uvfs_bench::watch::Watch;

fn params(w: Workload) -> Params {
    grid(
        w,
        &[1],
        uvfs_bench::find::Tree::default_for(true),
        &MessagingGrid {
            groups: vec![1],
            loops: 2,
        },
        &[Watch::None],
    )[0]
}

#[derive(serde::Deserialize)]
struct Round {
    elapsed_ns: u64,
}

#[test]
fn the_child_side_answers_each_count_with_a_round() {
    for w in [Workload::Write1, Workload::Messaging] {
        let p = params(w);
        let mut out = Vec::new();
        nonotify::serve(&p, &b"100\n\n1\n"[..], &mut out).expect("serve");
        let text = String::from_utf8(out).expect("utf-8");
        let mut lines = text.lines();
        let ready: Ready = serde_json::from_str(lines.next().expect("a ready line")).expect("json");
        assert!(ready.ready);
        assert_eq!(ready.notify, uvfs::vfs::notify::COMPILED, "{w:?}");
        let rounds: Vec<Round> = lines
            .map(|l| serde_json::from_str(l).expect("a round"))
            .collect();
        assert_eq!(rounds.len(), 2, "{w:?}: one round per count: {text}");
        assert!(rounds.iter().all(|r| r.elapsed_ns > 0), "{text}");
    }
}

#[test]
fn the_child_side_refuses_a_bad_count() {
    let mut out = Vec::new();
    let e = nonotify::serve(&params(Workload::Write1), &b"ten\n"[..], &mut out)
        .expect_err("not a count");
    assert!(format!("{e:#}").contains("bad operation count"), "{e:#}");
}

#[test]
fn a_missing_child_binary_skips_with_the_script_named() {
    // The only test of this binary that reads the variable.
    std::env::set_var(nonotify::BINARY_ENV, "/nonexistent/uvfs");
    let col = NoNotify::find(None);
    std::env::remove_var(nonotify::BINARY_ENV);
    assert_eq!(
        col.supports(&params(Workload::Write1)),
        Support::No("skipped: not built (scripts/build-nonotify.sh)".into())
    );
}

#[test]
fn a_child_binary_that_cannot_start_fails_the_setup_naming_it() {
    let col = NoNotify::with_binary("/nonexistent/uvfs".into());
    let mut col: Box<dyn Column> = Box::new(col);
    let p = params(Workload::Write1);
    assert_eq!(col.supports(&p), Support::Yes, "unchecked binary");
    let e = col.setup(&p).expect_err("no such binary");
    assert!(format!("{e:#}").contains("/nonexistent/uvfs"), "{e:#}");
    // A watched scenario needs notification, which the column has compiled out.
    let watched = Params {
        watch: Watch::Parent,
        ..params(Workload::Write1Watch)
    };
    assert!(matches!(col.supports(&watched), Support::No(_)));
}

fn col(name: &'static str, samples: &[f64]) -> ColumnResult {
    ColumnResult {
        column: name,
        skipped: None,
        error: None,
        samples: samples.to_vec(),
        ops: 1,
        summary: Some(Summary::of(samples)),
    }
}

#[test]
fn tables_compare_uvfs_with_nonotify_and_the_vanilla_hooks() {
    let names = ["host", "uvfs", NONOTIFY, "uvfs-vanilla-notify"];
    let write1 = ConfigResult {
        params: params(Workload::Write1),
        columns: vec![
            col("host", &[300.0, 300.0, 300.0]),
            col("uvfs", &[110.0, 110.1, 109.9]),
            col(NONOTIFY, &[100.0, 100.1, 99.9]),
            col("uvfs-vanilla-notify", &[110.0, 140.0, 80.0]),
        ],
    };
    let t = workload_table(&names, std::slice::from_ref(&write1)).to_string();
    assert!(t.contains("uvfs vs x threads=1"), "{t}");
    // uvfs is 10% slower than the build without notification, significantly; the vanilla
    // hooks' samples are too spread to tell.
    assert!(t.contains("+10.00% *"), "{t}");
    assert!(t.contains("+0.00%") && !t.contains("+0.00% *"), "{t}");
    let messaging = ConfigResult {
        params: params(Workload::Messaging),
        columns: vec![
            col("host", &[2e9, 2e9, 2e9]),
            col("uvfs", &[1e9, 1.001e9, 0.999e9]),
            col(NONOTIFY, &[1e9, 1.5e9, 0.5e9]),
            col("uvfs-vanilla-notify", &[1.2e9, 1.201e9, 1.199e9]),
        ],
    };
    let t = messaging_table(&names, &[messaging]).to_string();
    assert!(t.contains("vanilla-notify vs uvfs"), "{t}");
    assert!(t.contains("uvfs vs nonotify"), "{t}");
    assert!(t.contains("+20.00% *"), "the vanilla hooks' cost: {t}");
    assert!(
        t.contains("+0.00%") && !t.contains("+0.00% *"),
        "no significant cost: {t}"
    );
}
