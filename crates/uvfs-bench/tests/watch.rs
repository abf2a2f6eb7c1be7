//! The watch scenarios of `write1-watch` place real watches: after a run of writes, each
//! column's queue holds what the scenario makes (oracle: inotify(7) — an event per matching
//! write, identical consecutive events merged into one; the host kernel for the host column),
//! the drainer has read events, and a watch that is not really placed is refused at setup.

use std::time::Duration;

use uvfs_bench::column::{Column, Support};
use uvfs_bench::columns::gvisor::Gvisor;
use uvfs_bench::columns::host::Host;
use uvfs_bench::columns::host_notify::HostNotify;
use uvfs_bench::columns::uvfs::{Design, Uvfs};
use uvfs_bench::params::{grid, MessagingGrid, Params, Workload};
use uvfs_bench::watch::{NotifySys, Poke, Watch, WatchState, Watcher};

/// Writes each run does: many more than one, so that an unmerged queue would show.
const WRITES: u64 = 200;

/// Bytes of one queued `struct inotify_event` without a name, and with the name `f` (padded to
/// 16 with its NUL).
const EVENT_BYTES: usize = 16;
const NAMED_EVENT_BYTES: usize = 32;

fn params(watch: Watch) -> Params {
    let mut v = grid(
        Workload::Write1Watch,
        &[1],
        uvfs_bench::find::Tree::default_for(true),
        &MessagingGrid::default_for(true),
        &[watch],
    );
    assert_eq!(v.len(), 1);
    v.remove(0)
}

/// What the queue must hold after the run (None: not checked), and whether the drainer must
/// have read events.
fn expected(watch: Watch) -> (Option<usize>, bool) {
    match watch {
        Watch::None | Watch::Unrelated | Watch::ParentOther => (Some(0), false),
        Watch::Parent => (Some(NAMED_EVENT_BYTES), false),
        Watch::SelfUndrained => (Some(EVENT_BYTES), false),
        // The drainer may or may not have read the last write's event yet.
        Watch::SelfDrained => (None, true),
        // One merged fanotify event: its metadata (24 bytes).
        Watch::Mount => (Some(24), false),
    }
}

/// How long the drainer may take to read its first event: its thread may not have run yet
/// when the writes end, on a loaded machine.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(20);

/// Runs every scenario `col` supports, checking the state after `WRITES` writes with `state`
/// and the drainer with `drained` (which waits for at least the events asked, with a timeout).
fn check_column<C: Column>(
    col: &mut C,
    state: impl Fn(&C) -> anyhow::Result<WatchState>,
    drained: impl Fn(&C, u64, Duration) -> u64,
) -> usize {
    let mut ran = 0;
    for watch in Watch::ALL {
        let p = params(watch);
        if let Support::No(why) = col.supports(&p) {
            eprintln!("{} {}: {why}", col.name(), watch.name());
            continue;
        }
        col.setup(&p)
            .unwrap_or_else(|e| panic!("{} {}: {e:#}", col.name(), watch.name()));
        col.run(&p, WRITES)
            .unwrap_or_else(|e| panic!("{} {}: {e:#}", col.name(), watch.name()));
        let s = state(col).expect("watch state");
        let (queued, drains) = expected(watch);
        if let Some(q) = queued {
            assert_eq!(
                s.queued_bytes,
                q,
                "{} {}: bytes queued after {WRITES} writes",
                col.name(),
                watch.name()
            );
        }
        let read = if drains {
            drained(col, 1, DRAIN_TIMEOUT)
        } else {
            s.drained_events
        };
        assert_eq!(
            read > 0,
            drains,
            "{} {}: the drainer read {read} events",
            col.name(),
            watch.name(),
        );
        col.teardown();
        assert_eq!(
            state(col).expect("watch state"),
            WatchState::default(),
            "{} {}: the watch is gone after teardown",
            col.name(),
            watch.name()
        );
        ran += 1;
    }
    ran
}

#[test]
fn host_scenarios_place_real_watches() {
    let mut host = Host::new();
    if let Support::No(why) = host.supports(&params(Watch::None)) {
        eprintln!("{why}");
        return;
    }
    let ran = check_column(&mut host, Host::watch_state, Host::wait_drained);
    assert!(ran >= 6, "every inotify scenario runs on the host");
}

#[test]
fn uvfs_scenarios_place_real_watches() {
    if !uvfs::vfs::notify::COMPILED {
        eprintln!("skipped: uvfs built without its notify feature");
        return;
    }
    for design in [Design::Current, Design::Vanilla] {
        let mut col = Uvfs::new(design);
        let ran = check_column(&mut col, Uvfs::watch_state, Uvfs::wait_drained);
        // Every scenario, the fanotify mount mark too.
        assert_eq!(ran, 7, "{design:?}");
    }
}

/// The host's calls with an `inotify_add_watch` that places nothing (and answers a watch
/// descriptor): what a setup that forgot its watch would look like.
struct ForgetfulHost(HostNotify);

impl NotifySys for ForgetfulHost {
    type Fd = <HostNotify as NotifySys>::Fd;
    type Thread = ();

    fn inotify_init(&self) -> anyhow::Result<Self::Fd> {
        self.0.inotify_init()
    }
    fn add_watch(&self, _fd: &Self::Fd, _path: &str, _mask: u32) -> anyhow::Result<i32> {
        Ok(1)
    }
    fn fanotify_mount_mark(&self) -> anyhow::Result<Self::Fd> {
        // An fanotify instance without its mark.
        self.0.inotify_init()
    }
    fn fanotify_events(&self, fd: &Self::Fd) -> anyhow::Result<Vec<u64>> {
        self.0.fanotify_events(fd)
    }
    fn queued(&self, fd: &Self::Fd) -> anyhow::Result<usize> {
        self.0.queued(fd)
    }
    fn thread(&self) {}
    fn read(t: &(), fd: &Self::Fd, buf: &mut [u8]) -> anyhow::Result<usize> {
        HostNotify::read(t, fd, buf)
    }
    fn poke(&self, poke: Poke) -> anyhow::Result<()> {
        self.0.poke(poke)
    }
    fn close(&self, fd: Self::Fd) -> anyhow::Result<()> {
        self.0.close(fd)
    }
}

#[test]
fn a_watch_that_is_not_placed_is_refused_at_setup() {
    let dir = std::env::temp_dir().join(format!("uvfs-bench-forgetful-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("w")).expect("mkdir");
    std::fs::write(dir.join("w/f"), b"x").expect("create w/f");
    std::fs::write(dir.join("u"), b"x").expect("create u");
    let open = std::fs::File::open(&dir).expect("open dir");
    let sys = ForgetfulHost(HostNotify::new(dir.clone(), open.into()));
    for watch in Watch::ALL {
        let placed = Watcher::place(&sys, watch);
        match watch {
            Watch::None => assert!(placed.is_ok(), "nothing to place"),
            _ => {
                let e = placed.err().expect("a missing watch is refused");
                eprintln!("{}: {e:#}", watch.name());
            }
        }
    }
    std::fs::remove_dir_all(&dir).expect("cleanup");
}

/// gVisor's driver checks each watch itself at setup and exits if the events are not the
/// scenario's; here its setup and a run must succeed for every inotify scenario.
#[test]
fn gvisor_driver_places_every_inotify_watch() {
    let mut g = Gvisor::prepare(&mut |s| eprintln!("gvisor: {s}"));
    let mut ran = 0;
    for watch in Watch::ALL {
        let p = params(watch);
        if let Support::No(why) = g.supports(&p) {
            eprintln!("gvisor {}: {why}", watch.name());
            continue;
        }
        g.setup(&p)
            .unwrap_or_else(|e| panic!("gvisor {}: {e:#}", watch.name()));
        g.run(&p, WRITES)
            .unwrap_or_else(|e| panic!("gvisor {}: {e:#}", watch.name()));
        g.teardown();
        ran += 1;
    }
    if ran > 0 {
        assert_eq!(ran, 6, "every scenario but the mount mark");
    }
}
