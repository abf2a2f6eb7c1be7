//! The `uvfs-nonotify` column runs this binary's hidden `bench serve-uvfs` in a child process
//! and refuses a child with notification compiled in (oracle: the child's ready line, from
//! `uvfs::vfs::notify::COMPILED`); with the `--no-default-features` build present
//! (scripts/build-nonotify.sh), that build runs write1 and messaging.

use uvfs_bench::column::{Column, Support};
use uvfs_bench::columns::nonotify::{default_binary, NoNotify};
use uvfs_bench::params::{grid, MessagingGrid, Params, Workload};
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

#[test]
fn a_child_with_notification_compiled_in_is_refused() {
    // This test's `uvfs` is the default build: notification on.
    let mut col = NoNotify::with_binary(env!("CARGO_BIN_EXE_uvfs").into());
    let e = col
        .setup(&params(Workload::Write1))
        .expect_err("the default build is not the nonotify one");
    assert!(
        format!("{e:#}").contains("has notification compiled in"),
        "{e:#}"
    );
}

#[test]
fn the_nonotify_build_runs_write1_and_messaging() {
    let mut col = NoNotify::find(None);
    if let Support::No(why) = col.supports(&params(Workload::Write1)) {
        eprintln!("{why}: {}", default_binary().display());
        return;
    }
    for w in [Workload::Write1, Workload::Messaging] {
        let p = params(w);
        col.setup(&p).unwrap_or_else(|e| panic!("{w:?}: {e:#}"));
        let ops = p.fixed_ops().unwrap_or(1000);
        for _ in 0..2 {
            let d = col.run(&p, ops).unwrap_or_else(|e| panic!("{w:?}: {e:#}"));
            assert!(!d.is_zero(), "{w:?}");
        }
        assert!(col.helper_pid().is_some(), "the child does the work");
        col.teardown();
        assert!(col.helper_pid().is_none(), "and is gone after teardown");
    }
}
