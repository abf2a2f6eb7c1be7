//! `uvfs::fs::Watcher`: inotify through `uvfs::fs`, typed. Oracle: inotify(7) and Linux's
//! fsnotify hooks (fs/notify/, include/linux/fsnotify.h) for which events an operation
//! gives and in what order; the byte-level stream itself is compared with the host kernel by
//! the conformance suite, so these tests check the typing: each kind arrives as its
//! `EventMask` bit, with its name and cookie, on its `WatchDescriptor`.

use std::ffi::OsString;
use std::io::{ErrorKind, Write};
use std::path::Path;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use uvfs::fs::{errno, Event, EventMask, Fs, WatchDescriptor, WatchMask};
use uvfs::{Cred, Errno};

/// How long a test waits for another thread before it fails instead of hanging.
const PATIENCE: Duration = Duration::from_secs(20);

/// `(mask, name)` of each event, for comparisons that read like the man page.
fn seen(events: &[Event]) -> Vec<(EventMask, Option<&str>)> {
    events
        .iter()
        .map(|e| {
            (
                e.mask,
                e.name.as_deref().map(|n| n.to_str().expect("ASCII")),
            )
        })
        .collect()
}

fn all_on(events: &[Event], wd: WatchDescriptor) -> bool {
    events.iter().all(|e| e.wd == wd)
}

#[test]
fn create_open_modify_and_close_write_arrive_typed_with_the_childs_name() {
    let fs = Fs::new();
    fs.create_dir("/d").unwrap();
    let mut w = fs.watcher().unwrap();
    let wd = w.add("/d", WatchMask::ALL_EVENTS).unwrap();
    let mut f = fs.create("/d/new").unwrap();
    f.write_all(b"data").unwrap();
    drop(f);
    let events = w.read_events().unwrap();
    assert_eq!(
        seen(&events),
        [
            (EventMask::CREATE, Some("new")),
            (EventMask::OPEN, Some("new")),
            (EventMask::MODIFY, Some("new")),
            (EventMask::CLOSE_WRITE, Some("new")),
        ]
    );
    assert!(all_on(&events, wd));
    assert!(events.iter().all(|e| e.cookie == 0));
    assert!(w.try_read_events().unwrap().is_empty());
}

#[test]
fn events_on_the_watched_file_itself_have_no_name() {
    let fs = Fs::new();
    fs.write("/f", "x").unwrap();
    let mut w = fs.watcher().unwrap();
    let wd = w
        .add(
            "/f",
            WatchMask::MODIFY | WatchMask::ACCESS | WatchMask::CLOSE,
        )
        .unwrap();
    fs.read("/f").unwrap();
    fs.write("/f", "yz").unwrap();
    let events = w.read_events().unwrap();
    // The read: ACCESS, CLOSE_NOWRITE; the write: MODIFY (truncation), MODIFY (data, merged
    // into the queue's tail as an identical event), CLOSE_WRITE.
    assert_eq!(
        seen(&events),
        [
            (EventMask::ACCESS, None),
            (EventMask::CLOSE_NOWRITE, None),
            (EventMask::MODIFY, None),
            (EventMask::CLOSE_WRITE, None),
        ]
    );
    assert!(all_on(&events, wd));
}

#[test]
fn a_directory_child_carries_isdir() {
    let fs = Fs::new();
    let mut w = fs.watcher().unwrap();
    w.add("/", WatchMask::CREATE | WatchMask::DELETE).unwrap();
    fs.create_dir("/sub").unwrap();
    fs.remove_dir("/sub").unwrap();
    assert_eq!(
        seen(&w.read_events().unwrap()),
        [
            (EventMask::CREATE | EventMask::ISDIR, Some("sub")),
            (EventMask::DELETE | EventMask::ISDIR, Some("sub")),
        ]
    );
}

#[test]
fn moved_from_and_moved_to_share_one_nonzero_cookie() {
    let fs = Fs::new();
    fs.create_dir("/a").unwrap();
    fs.create_dir("/b").unwrap();
    fs.write("/a/x", "").unwrap();
    let mut w = fs.watcher().unwrap();
    let wa = w.add("/a", WatchMask::MOVE).unwrap();
    let wb = w.add("/b", WatchMask::MOVE).unwrap();
    let wx = w.add("/a/x", WatchMask::MOVE_SELF).unwrap();
    assert_ne!(wa, wb);
    fs.rename("/a/x", "/b/y").unwrap();
    let events = w.read_events().unwrap();
    assert_eq!(
        seen(&events),
        [
            (EventMask::MOVED_FROM, Some("x")),
            (EventMask::MOVED_TO, Some("y")),
            (EventMask::MOVE_SELF, None),
        ]
    );
    assert_eq!(
        events.iter().map(|e| e.wd).collect::<Vec<_>>(),
        [wa, wb, wx]
    );
    assert_ne!(events[0].cookie, 0);
    assert_eq!(events[0].cookie, events[1].cookie);
    assert_eq!(events[2].cookie, 0);
    // A second rename takes another cookie.
    fs.rename("/b/y", "/a/x").unwrap();
    let again = w.read_events().unwrap();
    assert_eq!(again[0].mask, EventMask::MOVED_FROM);
    assert_eq!(again[0].cookie, again[1].cookie);
    assert_ne!(again[0].cookie, events[0].cookie);
}

#[test]
fn deleting_the_watched_file_gives_delete_self_then_ignored_and_ends_the_watch() {
    let fs = Fs::new();
    fs.write("/doomed", "").unwrap();
    let mut w = fs.watcher().unwrap();
    let wd = w.add("/doomed", WatchMask::ALL_EVENTS).unwrap();
    fs.remove_file("/doomed").unwrap();
    let events = w.read_events().unwrap();
    // The link count's change (ATTRIB), the inode's end, the watch's end.
    assert_eq!(
        seen(&events),
        [
            (EventMask::ATTRIB, None),
            (EventMask::DELETE_SELF, None),
            (EventMask::IGNORED, None),
        ]
    );
    assert!(all_on(&events, wd));
    let e = w.remove(wd).unwrap_err();
    assert_eq!(errno(&e), Some(Errno::EINVAL));
}

#[test]
fn remove_gives_ignored_and_refuses_another_watchers_descriptor() {
    let fs = Fs::new();
    let mut w = fs.watcher().unwrap();
    let mut other = fs.watcher().unwrap();
    let wd = w.add("/", WatchMask::CREATE).unwrap();
    let theirs = other.add("/", WatchMask::CREATE).unwrap();
    // The same number in two instances, but not the same watch.
    assert_eq!(wd.raw(), theirs.raw());
    assert_ne!(wd, theirs);
    let e = w.remove(theirs).unwrap_err();
    assert_eq!(errno(&e), Some(Errno::EINVAL));
    assert_eq!(
        e.to_string(),
        "failed to remove watch: Invalid argument (os error 22)"
    );
    w.remove(wd).unwrap();
    assert_eq!(
        seen(&w.read_events().unwrap()),
        [(EventMask::IGNORED, None)]
    );
    // Its watch is gone; the other's stays.
    fs.write("/f", "").unwrap();
    assert!(w.try_read_events().unwrap().is_empty());
    assert_eq!(
        seen(&other.try_read_events().unwrap()),
        [(EventMask::CREATE, Some("f"))]
    );
}

#[test]
fn try_read_events_is_empty_not_an_error_when_nothing_is_queued() {
    let fs = Fs::new();
    let mut w = fs.watcher().unwrap();
    assert!(w.try_read_events().unwrap().is_empty());
    w.add("/", WatchMask::CREATE).unwrap();
    assert!(w.try_read_events().unwrap().is_empty());
    // More events than one read's first chunk holds come back in one call.
    let names: Vec<String> = (0..300)
        .map(|i| format!("file-with-a-longish-name-{i:03}"))
        .collect();
    for n in &names {
        fs.write(Path::new("/").join(n), "").unwrap();
    }
    let events = w.try_read_events().unwrap();
    let got: Vec<OsString> = events.into_iter().map(|e| e.name.unwrap()).collect();
    assert_eq!(got, names.iter().map(OsString::from).collect::<Vec<_>>());
    assert!(w.try_read_events().unwrap().is_empty());
}

#[test]
fn a_blocked_read_events_is_woken_by_a_write_from_another_thread() {
    let fs = Fs::new();
    fs.write("/f", "").unwrap();
    let mut w = fs.watcher().unwrap();
    let wd = w.add("/f", WatchMask::MODIFY).unwrap();
    // An fd of the instance, to see the reader parked on it.
    let observer = fs.task();
    let fd = w.install(&observer).unwrap();
    let (tx, rx) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        let r = w.read_events();
        tx.send(r.map(|ev| (ev, wd))).expect("the test waits");
    });
    let deadline = Instant::now() + PATIENCE;
    let mut checks = 0u32;
    while observer.readiness_waiters(fd).unwrap() == 0 {
        checks += 1;
        assert!(
            Instant::now() < deadline,
            "the reader did not block within {PATIENCE:?} ({checks} checks)"
        );
        std::thread::yield_now();
    }
    assert_eq!(rx.try_recv().unwrap_err(), mpsc::TryRecvError::Empty);
    let writer = {
        let fs = fs.clone();
        std::thread::spawn(move || fs.write("/f", "wake up").unwrap())
    };
    let (events, wd) = rx
        .recv_timeout(PATIENCE)
        .unwrap_or_else(|e| panic!("the write did not wake the reader within {PATIENCE:?}: {e}"))
        .unwrap();
    writer.join().unwrap();
    reader.join().unwrap();
    assert!(!events.is_empty());
    assert!(all_on(&events, wd));
    assert!(events.iter().all(|e| e.mask == EventMask::MODIFY));
    eprintln!("the reader was seen blocked after {checks} checks");
}

#[test]
fn dropping_a_watcher_ends_its_instance_and_its_watches() {
    let fs = Fs::new();
    let ns = fs.task().namespace().clone();
    let mut limits = ns.inotify_limits();
    limits.max_user_instances = 1;
    limits.max_user_watches = 1;
    ns.set_inotify_limits(limits);

    let mut first = fs.watcher().unwrap();
    first.add("/", WatchMask::CREATE).unwrap();
    let e = fs.watcher().unwrap_err();
    assert_eq!(errno(&e), Some(Errno::EMFILE));
    assert_eq!(
        e.to_string(),
        "failed to create inotify instance: Too many open files (os error 24)"
    );
    drop(first);
    // Both the instance and its watch were given back.
    let mut second = fs.watcher().unwrap();
    second.add("/", WatchMask::CREATE).unwrap();
    fs.create_dir("/d").unwrap();
    let e = second.add("/d", WatchMask::CREATE).unwrap_err();
    assert_eq!(errno(&e), Some(Errno::ENOSPC));
}

#[test]
fn an_installed_watcher_lives_until_its_fd_closes_too() {
    let fs = Fs::new();
    let task = fs.task();
    let mut w = fs.watcher().unwrap();
    w.add("/", WatchMask::CREATE).unwrap();
    let fd = w.install(&task).unwrap();
    drop(w);
    fs.write("/f", "").unwrap();
    assert!(task.fionread(fd).unwrap() > 0);
    task.close(fd).unwrap();
}

#[test]
fn errors_name_the_operation_and_the_path() {
    let fs = Fs::new();
    fs.write("/file", "").unwrap();
    let mut w = fs.watcher().unwrap();

    let e = w.add("/missing/x", WatchMask::CREATE).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound);
    assert_eq!(
        e.to_string(),
        "failed to watch \"/missing/x\": No such file or directory (os error 2)"
    );
    let inner = e
        .get_ref()
        .unwrap()
        .downcast_ref::<uvfs::fs::Error>()
        .unwrap();
    assert_eq!(inner.op(), "watch");
    assert_eq!(inner.path(), Path::new("/missing/x"));

    let cases = [
        ("/file", WatchMask::empty(), Errno::EINVAL),
        ("/file", WatchMask::ONLYDIR, Errno::ENOTDIR),
        (
            "/file",
            WatchMask::CREATE | WatchMask::ONLYDIR,
            Errno::ENOTDIR,
        ),
        (
            "/file",
            WatchMask::CREATE | WatchMask::MASK_ADD | WatchMask::MASK_CREATE,
            Errno::EINVAL,
        ),
        ("/file/x", WatchMask::CREATE, Errno::ENOTDIR),
        ("", WatchMask::CREATE, Errno::ENOENT),
    ];
    for (path, mask, want) in cases {
        let e = w.add(path, mask).unwrap_err();
        assert_eq!(errno(&e), Some(want), "{path:?} {mask:?}");
        assert!(
            e.to_string()
                .starts_with(&format!("failed to watch {path:?}: ")),
            "{e}"
        );
    }
    w.add("/file", WatchMask::CREATE).unwrap();
    let e = w
        .add("/file", WatchMask::CREATE | WatchMask::MASK_CREATE)
        .unwrap_err();
    assert_eq!(errno(&e), Some(Errno::EEXIST));

    fs.set_permissions("/file", uvfs::fs::Permissions::from_mode(0o600))
        .unwrap();
    let alice = fs.as_user(Cred::user(1000, 1000, &[]));
    let mut aw = alice.watcher().unwrap();
    let e = aw.add("/file", WatchMask::MODIFY).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::PermissionDenied);
    assert!(e.to_string().contains("\"/file\""), "{e}");
}

#[test]
fn mask_add_widens_and_a_plain_add_replaces_the_mask() {
    let fs = Fs::new();
    let mut w = fs.watcher().unwrap();
    let wd = w.add("/", WatchMask::CREATE).unwrap();
    assert_eq!(
        w.add("/", WatchMask::DELETE | WatchMask::MASK_ADD).unwrap(),
        wd
    );
    fs.write("/f", "").unwrap();
    fs.remove_file("/f").unwrap();
    assert_eq!(
        seen(&w.read_events().unwrap()),
        [
            (EventMask::CREATE, Some("f")),
            (EventMask::DELETE, Some("f"))
        ]
    );
    assert_eq!(w.add("/", WatchMask::DELETE).unwrap(), wd);
    fs.write("/g", "").unwrap();
    fs.remove_file("/g").unwrap();
    assert_eq!(
        seen(&w.read_events().unwrap()),
        [(EventMask::DELETE, Some("g"))]
    );
}
