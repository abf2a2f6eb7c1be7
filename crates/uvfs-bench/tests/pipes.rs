//! The pipe workloads (`messaging`, `pipe-pingpong`, `pipe-bulk`) on the host kernel and on
//! uvfs through the columns the suite runs.
//!
//! Oracles: each run's own checks (every receiver got exactly 20 × loops messages of 100
//! bytes and left no byte in its pipe; every round trip brought its byte back; the bulk reader
//! got every byte), which make a run an error otherwise; the seed-style table's structure. No
//! timing is asserted. The uvfs columns run in one test, one after another: "vanilla" turns a
//! process-wide switch on for its runs, and a uvfs run refuses to start with the switch in the
//! other position.

use uvfs::{Cred, Vfs};
use uvfs_bench::column::{Column, Support};
use uvfs_bench::columns::host::{Host, HostPipes};
use uvfs_bench::columns::uvfs::{Design, Uvfs, UvfsPipes};
use uvfs_bench::params::{grid, Messaging, MessagingGrid, Params, Workload};
use uvfs_bench::pipes::{self, PipeSys};
use uvfs_bench::report::messaging_table;
use uvfs_bench::runner::{ColumnResult, ConfigResult};
use uvfs_bench::stats::Summary;

fn params(w: Workload) -> Vec<Params> {
    grid(
        w,
        &[1],
        uvfs_bench::find::Tree::default_for(true),
        &MessagingGrid {
            groups: vec![1, 2],
            loops: 3,
        },
        &[],
    )
}

/// Runs every pipe configuration on `col`: messaging groups 1 and 2, 3 loops; 500 round trips;
/// 40 bulk writes.
fn run_all(col: &mut dyn Column) {
    for w in [
        Workload::Messaging,
        Workload::PipePingpong,
        Workload::PipeBulk,
    ] {
        for p in params(w) {
            assert_eq!(
                col.supports(&p),
                Support::Yes,
                "{} {}",
                col.name(),
                w.name()
            );
            col.setup(&p).expect("setup");
            let ops = p
                .fixed_ops()
                .unwrap_or(if w == Workload::PipeBulk { 40 } else { 500 });
            let d = col
                .run(&p, ops)
                .unwrap_or_else(|e| panic!("{} {} {}: {e:#}", col.name(), w.name(), p.label()));
            assert!(d.as_nanos() > 0);
            col.teardown();
        }
    }
}

#[test]
fn host_pipes_run_every_pipe_workload_checked() {
    run_all(&mut Host::new());
    // The harness directly, with a count of messages per receiver perf would use.
    let m = Messaging {
        groups: 1,
        loops: 2,
    };
    assert_eq!(pipes::messages_per_receiver(m), 40);
    pipes::messaging(&HostPipes, m).expect("messaging");
}

#[test]
fn uvfs_and_vanilla_run_every_pipe_workload_and_the_switch_is_checked() {
    run_all(&mut Uvfs::new(Design::Current));
    run_all(&mut Uvfs::new(Design::Vanilla));
    assert!(
        !uvfs::fs::pipefs::vanilla_pipe_times(),
        "the vanilla column turns the switch off after each run"
    );
    // A vanilla run whose switch is off is refused, as is a uvfs run with it on.
    let vfs = Vfs::new();
    let task = vfs.task(Cred::root());
    let vanilla = UvfsPipes {
        task: &task,
        design: Design::Vanilla,
    };
    let e = vanilla.pipe().expect_err("switch off");
    assert!(format!("{e}").contains("pre-2025 pipe times off"), "{e}");
    uvfs::fs::pipefs::set_vanilla_pipe_times(true);
    let current = UvfsPipes {
        task: &task,
        design: Design::Current,
    };
    let e = current.pipe().expect_err("switch on");
    uvfs::fs::pipefs::set_vanilla_pipe_times(false);
    assert!(format!("{e}").contains("pre-2025 pipe times on"), "{e}");
}

/// Oracle: a pipe holding a byte nobody reads makes the pingpong run an error (the check a
/// short-counting receiver trips), through a `PipeSys` that writes one byte too many.
#[test]
fn a_byte_left_in_a_pipe_fails_the_run() {
    struct Extra;
    impl PipeSys for Extra {
        type Fd = <HostPipes as PipeSys>::Fd;
        type Thread = ();
        fn pipe(&self) -> anyhow::Result<(Self::Fd, Self::Fd)> {
            HostPipes.pipe()
        }
        fn thread(&self) {}
        fn read(t: &(), fd: &Self::Fd, buf: &mut [u8]) -> anyhow::Result<usize> {
            HostPipes::read(t, fd, buf)
        }
        fn write(t: &(), fd: &Self::Fd, buf: &[u8]) -> anyhow::Result<usize> {
            // Every write also sends a second copy of its first byte.
            HostPipes::write(t, fd, &buf[..1])?;
            HostPipes::write(t, fd, buf)
        }
        fn unread(&self, fd: &Self::Fd) -> anyhow::Result<usize> {
            HostPipes.unread(fd)
        }
        fn close(&self, fd: Self::Fd) -> anyhow::Result<()> {
            HostPipes.close(fd)
        }
    }
    let e = pipes::bulk(&Extra, 4).expect_err("4 bytes too many");
    assert!(format!("{e:#}").contains("left unread"), "{e:#}");
}

/// Oracle: the numbers given; vanilla 10% slower than uvfs with tight samples is marked, the
/// same difference with wide ones is not.
#[test]
fn messaging_table_marks_a_significant_vanilla_difference() {
    let col = |name: &'static str, samples: &[f64]| ColumnResult {
        column: name,
        skipped: None,
        error: None,
        samples: samples.to_vec(),
        ops: 1,
        summary: Some(Summary::of(samples)),
    };
    let p = params(Workload::Messaging)[0];
    let tight = ConfigResult {
        params: p,
        columns: vec![
            col("host", &[2e9, 2e9, 2e9]),
            col("uvfs", &[1e9, 1.001e9, 0.999e9]),
            col("uvfs-vanilla", &[1.1e9, 1.101e9, 1.099e9]),
        ],
    };
    let names = ["host", "uvfs", "uvfs-vanilla"];
    let t = messaging_table(&names, &[tight]).to_string();
    assert!(t.contains("Amean 1"), "{t}");
    assert!(t.contains("+10.00% *"), "{t}");
    assert!(t.contains("1.1000"), "seconds: {t}");
    let wide = ConfigResult {
        params: p,
        columns: vec![
            col("host", &[2e9, 2e9, 2e9]),
            col("uvfs", &[0.5e9, 1.5e9, 1e9]),
            col("uvfs-vanilla", &[0.6e9, 1.6e9, 1.1e9]),
        ],
    };
    let t = messaging_table(&names, &[wide]).to_string();
    assert!(t.contains("+10.00%") && !t.contains("+10.00% *"), "{t}");
}
