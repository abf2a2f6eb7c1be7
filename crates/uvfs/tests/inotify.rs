//! inotify in process: what the differential cases cannot show (blocking reads, overflow at a
//! small limit, per-user limits, races of events with watch removal), and a smoke run of the
//! common events. The host kernel's event streams are compared in crates/uvfs-conformance
//! (cases/inotify.cases).

use uvfs::abi::*;
use uvfs::{Cred, Errno, Task, Vfs};

fn task() -> Task {
    let vfs = Vfs::new();
    vfs.task(Cred::root())
}

/// Every queued event of the non-blocking instance `fd`.
fn drain(t: &Task, fd: i32) -> Vec<InotifyEvent> {
    let mut buf = vec![0u8; 65536];
    let mut out = Vec::new();
    loop {
        match t.read(fd, &mut buf) {
            Ok(n) => out.extend(InotifyEvent::parse_all(&buf[..n])),
            Err(Errno::EAGAIN) => return out,
            Err(e) => panic!("read: {e:?}"),
        }
    }
}

fn names(evs: &[InotifyEvent]) -> Vec<(i32, u32, String)> {
    evs.iter()
        .map(|e| (e.wd, e.mask, String::from_utf8_lossy(&e.name).into_owned()))
        .collect()
}

#[test]
fn smoke_events_on_a_watched_directory_and_file() {
    let t = task();
    t.mkdirat(AT_FDCWD, "/d", 0o755).unwrap();
    let fd = t.inotify_init1(IN_NONBLOCK).unwrap();
    let wd = t.inotify_add_watch(fd, "/d", IN_ALL_EVENTS).unwrap();
    assert_eq!(wd, 1);
    let f = t
        .openat(AT_FDCWD, "/d/f", OpenFlags::CREAT | OpenFlags::RDWR, 0o644)
        .unwrap();
    t.write(f, b"x").unwrap();
    t.write(f, b"y").unwrap();
    t.close(f).unwrap();
    t.renameat2(AT_FDCWD, "/d/f", AT_FDCWD, "/d/g", RenameFlags::empty())
        .unwrap();
    t.unlinkat(AT_FDCWD, "/d/g", AtFlags::empty()).unwrap();
    let evs = drain(&t, fd);
    let got = names(&evs);
    assert_eq!(
        got,
        vec![
            (1, IN_CREATE, "f".into()),
            (1, IN_OPEN, "f".into()),
            (1, IN_MODIFY, "f".into()),
            (1, IN_CLOSE_WRITE, "f".into()),
            (1, IN_MOVED_FROM, "f".into()),
            (1, IN_MOVED_TO, "g".into()),
            // The link count's IN_ATTRIB goes to the file's own watches only (Linux:
            // `fsnotify_link_count()` reports no parent).
            (1, IN_DELETE, "g".into()),
        ],
        "{evs:?}"
    );
    assert_eq!(evs[4].cookie, evs[5].cookie);
    assert_ne!(evs[4].cookie, 0);
}

mod waits;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use uvfs::fs::InotifyLimits;
use waits::{setup, spawn_interruptible, wait_until, TIMEOUT};

fn create(t: &Task, path: &str) {
    let f = t
        .openat(AT_FDCWD, path, OpenFlags::CREAT | OpenFlags::WRONLY, 0o644)
        .unwrap();
    t.close(f).unwrap();
}

/// A blocking read sleeps until an event comes, and a signal-like interrupt ends it with
/// EINTR.
#[test]
fn a_blocking_read_waits_for_an_event_and_an_interrupt_ends_it() {
    let (_vfs, t) = setup();
    t.mkdirat(AT_FDCWD, "/d", 0o755).unwrap();
    let fd = t.inotify_init1(0).unwrap();
    t.inotify_add_watch(fd, "/d", IN_CREATE).unwrap();
    let (_intr, rx, h) = spawn_interruptible(&t, move |t| {
        let mut buf = [0u8; 256];
        t.read(fd, &mut buf)
            .map(|n| InotifyEvent::parse_all(&buf[..n]))
    });
    wait_until(|| t.readiness_waiters(fd).unwrap() == 1);
    create(&t, "/d/new");
    let evs = rx.recv_timeout(TIMEOUT).expect("the read woke").unwrap();
    h.join().unwrap();
    assert_eq!(names(&evs), vec![(1, IN_CREATE, "new".into())]);

    let (intr, rx, h) = spawn_interruptible(&t, move |t| {
        let mut buf = [0u8; 256];
        t.read(fd, &mut buf)
    });
    wait_until(|| t.readiness_waiters(fd).unwrap() == 1);
    intr.interrupt();
    assert_eq!(rx.recv_timeout(TIMEOUT).unwrap(), Err(Errno::EINTR));
    h.join().unwrap();
}

/// A full queue takes one IN_Q_OVERFLOW, drops what follows, never blocks the writer, and
/// takes events again once a read made room.
#[test]
fn a_full_queue_overflows_once_and_never_blocks_writers() {
    let (vfs, t) = setup();
    vfs.namespace().set_inotify_limits(InotifyLimits {
        max_queued_events: 4,
        ..InotifyLimits::default()
    });
    t.mkdirat(AT_FDCWD, "/d", 0o755).unwrap();
    let fd = t.inotify_init1(IN_NONBLOCK).unwrap();
    t.inotify_add_watch(fd, "/d", IN_CREATE).unwrap();
    for i in 0..10 {
        create(&t, &format!("/d/f{i}"));
    }
    // Four events, the overflow, nothing of the five after it.
    assert_eq!(t.fionread(fd).unwrap(), 4 * 32 + 16);
    let mut buf = [0u8; 32];
    assert_eq!(t.read(fd, &mut buf).unwrap(), 32);
    create(&t, "/d/late");
    let evs = drain(&t, fd);
    let got = names(&evs);
    assert_eq!(
        got,
        vec![
            (1, IN_CREATE, "f1".into()),
            (1, IN_CREATE, "f2".into()),
            (1, IN_CREATE, "f3".into()),
            (-1, IN_Q_OVERFLOW, String::new()),
        ],
        "the queue is still full (the overflow counts) after one read"
    );
    create(&t, "/d/later");
    assert_eq!(names(&drain(&t, fd)), vec![(1, IN_CREATE, "later".into())]);
}

/// Per-user limits: instances past `max_user_instances` are EMFILE, watches past
/// `max_user_watches` ENOSPC; closing gives them back; another user has its own counts.
#[test]
fn per_user_instance_and_watch_limits() {
    let (vfs, t) = setup();
    vfs.namespace().set_inotify_limits(InotifyLimits {
        max_user_instances: 2,
        max_user_watches: 3,
        ..InotifyLimits::default()
    });
    for p in ["/a", "/b", "/c", "/e"] {
        t.mkdirat(AT_FDCWD, p, 0o777).unwrap();
    }
    let i1 = t.inotify_init1(0).unwrap();
    let i2 = t.inotify_init1(0).unwrap();
    assert_eq!(t.inotify_init1(0), Err(Errno::EMFILE));
    let mut other = Cred::root();
    other.euid = 1000;
    other.uid = 1000;
    other.fsuid = 1000;
    let u = vfs.task(other);
    let j = u.inotify_init1(0).unwrap();
    t.inotify_add_watch(i1, "/a", IN_CREATE).unwrap();
    t.inotify_add_watch(i1, "/b", IN_CREATE).unwrap();
    let c = t.inotify_add_watch(i2, "/c", IN_CREATE).unwrap();
    assert_eq!(t.inotify_add_watch(i2, "/e", IN_CREATE), Err(Errno::ENOSPC));
    // Changing a watch is not a new one.
    t.inotify_add_watch(i1, "/a", IN_DELETE).unwrap();
    u.inotify_add_watch(j, "/e", IN_CREATE).unwrap();
    t.inotify_rm_watch(i2, c).unwrap();
    t.inotify_add_watch(i2, "/e", IN_CREATE).unwrap();
    t.close(i1).unwrap();
    t.inotify_init1(0).unwrap();
    t.inotify_add_watch(i2, "/a", IN_CREATE).unwrap();
    t.inotify_add_watch(i2, "/b", IN_CREATE).unwrap();
}

/// A watch's last event is IN_IGNORED: events racing with `inotify_rm_watch` are queued
/// before it or dropped, never after it, and the instance never sees its wd again.
#[test]
fn no_event_follows_in_ignored_when_writes_race_with_removal() {
    let (vfs, t) = setup();
    // Room for every event of a slow round: an overflow would take the IN_IGNORED's place.
    vfs.namespace().set_inotify_limits(InotifyLimits {
        max_queued_events: 1 << 22,
        ..InotifyLimits::default()
    });
    t.mkdirat(AT_FDCWD, "/d", 0o755).unwrap();
    create(&t, "/d/f");
    let fd = t.inotify_init1(IN_NONBLOCK).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let t2 = t.clone_thread();
        let stop = stop.clone();
        std::thread::spawn(move || {
            let f = t2.openat(AT_FDCWD, "/d/f", OpenFlags::WRONLY, 0).unwrap();
            let mut writes = 0u64;
            while !stop.load(Ordering::Relaxed) {
                t2.pwrite(f, b"x", 0).unwrap();
                t2.fchmod(f, 0o644).unwrap();
                writes += 1;
            }
            writes
        })
    };
    let mut rounds = 0;
    let start = Instant::now();
    while rounds < 2000 && start.elapsed() < TIMEOUT {
        let wd = t
            .inotify_add_watch(fd, "/d/f", IN_MODIFY | IN_ATTRIB)
            .unwrap();
        std::thread::yield_now();
        t.inotify_rm_watch(fd, wd).unwrap();
        let evs = drain(&t, fd);
        let last = evs.last().expect("IN_IGNORED is queued");
        assert_eq!((last.wd, last.mask), (wd, IN_IGNORED), "{evs:?}");
        assert!(evs[..evs.len() - 1]
            .iter()
            .all(|e| e.wd == wd && e.mask & (IN_MODIFY | IN_ATTRIB) != 0));
        rounds += 1;
    }
    stop.store(true, Ordering::Relaxed);
    let writes = writer.join().unwrap();
    assert_eq!(rounds, 2000);
    assert!(writes > 0);
}

/// IN_ONESHOT: the first event, then IN_IGNORED; the wd is gone.
#[test]
fn a_oneshot_watch_gives_one_event_then_in_ignored() {
    let t = task();
    t.mkdirat(AT_FDCWD, "/d", 0o755).unwrap();
    let fd = t.inotify_init1(IN_NONBLOCK).unwrap();
    let wd = t
        .inotify_add_watch(fd, "/d", IN_CREATE | IN_ONESHOT)
        .unwrap();
    create(&t, "/d/a");
    create(&t, "/d/b");
    assert_eq!(
        names(&drain(&t, fd)),
        vec![(wd, IN_CREATE, "a".into()), (wd, IN_IGNORED, String::new())]
    );
    assert_eq!(t.inotify_rm_watch(fd, wd), Err(Errno::EINVAL));
}

/// The superblock's last mount going sends IN_UNMOUNT then IN_IGNORED to watches on it
/// (with IN_ISDIR for a directory, as Linux's `fsnotify_inode()` adds it).
#[test]
fn unmounting_sends_in_unmount_then_in_ignored() {
    let t = task();
    t.mkdirat(AT_FDCWD, "/mnt", 0o755).unwrap();
    t.mount(
        Some(b"tmpfs"),
        "/mnt",
        Some("tmpfs"),
        MountFlags::empty(),
        None,
    )
    .unwrap();
    t.mkdirat(AT_FDCWD, "/mnt/d", 0o755).unwrap();
    let fd = t.inotify_init1(IN_NONBLOCK).unwrap();
    let wd = t.inotify_add_watch(fd, "/mnt/d", IN_CREATE).unwrap();
    t.umount2("/mnt", UmountFlags::empty()).unwrap();
    assert_eq!(
        names(&drain(&t, fd)),
        vec![
            (wd, IN_UNMOUNT | IN_ISDIR, String::new()),
            (wd, IN_IGNORED, String::new())
        ]
    );
}

/// IN_DELETE_SELF of an unlinked file comes at its last close, after the close's event.
#[test]
fn delete_self_of_an_open_file_waits_for_its_last_close() {
    let t = task();
    create(&t, "/f");
    let fd = t.inotify_init1(IN_NONBLOCK).unwrap();
    let wd = t.inotify_add_watch(fd, "/f", IN_ALL_EVENTS).unwrap();
    let f = t.openat(AT_FDCWD, "/f", OpenFlags::RDONLY, 0).unwrap();
    let g = t.dup(f).unwrap();
    t.unlinkat(AT_FDCWD, "/f", AtFlags::empty()).unwrap();
    t.close(f).unwrap();
    assert_eq!(
        names(&drain(&t, fd)),
        vec![(wd, IN_OPEN, String::new()), (wd, IN_ATTRIB, String::new())]
    );
    t.close(g).unwrap();
    assert_eq!(
        names(&drain(&t, fd)),
        vec![
            (wd, IN_CLOSE_NOWRITE, String::new()),
            (wd, IN_DELETE_SELF, String::new()),
            (wd, IN_IGNORED, String::new()),
        ]
    );
}
