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

fn drain(t: &Task, fd: i32) -> Vec<InotifyEvent> {
    let mut buf = vec![0u8; 65536];
    match t.read(fd, &mut buf) {
        Ok(n) => InotifyEvent::parse_all(&buf[..n]),
        Err(Errno::EAGAIN) => Vec::new(),
        Err(e) => panic!("read: {e:?}"),
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
