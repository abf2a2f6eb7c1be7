//! fanotify in process (notification class, fds in events): marks on inodes, mounts and
//! filesystems, the fds a read opens, merging, ignore masks, overflow and limits. The host
//! kernel's event streams are compared in crates/uvfs-conformance (cases/fanotify.cases).

use uvfs::abi::*;
use uvfs::fs::FanotifyLimits;
use uvfs::{Cred, Errno, Task, Vfs};

fn setup() -> (Vfs, Task) {
    let vfs = Vfs::new();
    let t = vfs.task(Cred::root());
    (vfs, t)
}

/// Reads every queued event; returns (mask, inode number of the event's fd) and closes the
/// fds.
fn drain(t: &Task, fd: i32) -> Vec<(u64, u64)> {
    let mut buf = [0u8; 4096];
    let mut out = Vec::new();
    loop {
        match t.read(fd, &mut buf) {
            Ok(n) => {
                for e in FanotifyEvent::parse_all(&buf[..n]) {
                    assert_eq!((e.event_len, e.vers, e.metadata_len), (24, 3, 24));
                    let ino = if e.fd >= 0 {
                        let st = t.fstat(e.fd).unwrap();
                        t.close(e.fd).unwrap();
                        st.ino
                    } else {
                        0
                    };
                    out.push((e.mask, ino));
                }
            }
            Err(Errno::EAGAIN) => return out,
            Err(e) => panic!("read: {e:?}"),
        }
    }
}

fn ino(t: &Task, path: &str) -> u64 {
    t.stat(path).unwrap().ino
}

fn write_file(t: &Task, path: &str) {
    let f = t
        .openat(AT_FDCWD, path, OpenFlags::CREAT | OpenFlags::WRONLY, 0o644)
        .unwrap();
    t.write(f, b"a").unwrap();
    t.write(f, b"b").unwrap();
    t.close(f).unwrap();
}

#[test]
fn a_mount_mark_reports_each_file_with_an_fd_and_merges_its_events() {
    let (_vfs, t) = setup();
    t.mkdirat(AT_FDCWD, "/d", 0o755).unwrap();
    let g = t.fanotify_init(FAN_NONBLOCK | FAN_CLASS_NOTIF, 0).unwrap();
    t.fanotify_mark(
        g,
        FAN_MARK_ADD | FAN_MARK_MOUNT,
        FAN_MODIFY | FAN_CLOSE_WRITE | FAN_OPEN,
        AT_FDCWD,
        Some(b"/"),
    )
    .unwrap();
    write_file(&t, "/d/a");
    write_file(&t, "/d/b");
    let a = ino(&t, "/d/a");
    let b = ino(&t, "/d/b");
    assert_eq!(
        drain(&t, g),
        vec![
            (FAN_OPEN | FAN_MODIFY | FAN_CLOSE_WRITE, a),
            (FAN_OPEN | FAN_MODIFY | FAN_CLOSE_WRITE, b)
        ]
    );
    // The fds fanotify opened are silent: reading the events made none.
    assert_eq!(drain(&t, g), vec![]);
}

#[test]
fn inode_and_filesystem_marks_ondir_and_ignore_masks() {
    let (_vfs, t) = setup();
    t.mkdirat(AT_FDCWD, "/d", 0o755).unwrap();
    write_file(&t, "/d/a");
    write_file(&t, "/d/b");
    let g = t.fanotify_init(FAN_NONBLOCK, 0).unwrap();
    // The directory's children, through an inode mark with FAN_EVENT_ON_CHILD.
    t.fanotify_mark(
        g,
        FAN_MARK_ADD,
        FAN_CLOSE_NOWRITE | FAN_EVENT_ON_CHILD,
        AT_FDCWD,
        Some(b"/d"),
    )
    .unwrap();
    // ... but not /d/b.
    t.fanotify_mark(
        g,
        FAN_MARK_ADD | FAN_MARK_IGNORED_MASK,
        FAN_CLOSE_NOWRITE,
        AT_FDCWD,
        Some(b"/d/b"),
    )
    .unwrap();
    for p in ["/d/a", "/d/b", "/d"] {
        let f = t.openat(AT_FDCWD, p, OpenFlags::RDONLY, 0).unwrap();
        t.close(f).unwrap();
    }
    assert_eq!(drain(&t, g), vec![(FAN_CLOSE_NOWRITE, ino(&t, "/d/a"))]);
    // A filesystem mark with FAN_ONDIR sees the directory too.
    t.fanotify_mark(
        g,
        FAN_MARK_ADD | FAN_MARK_FILESYSTEM,
        FAN_OPEN | FAN_ONDIR,
        AT_FDCWD,
        Some(b"/"),
    )
    .unwrap();
    let f = t.openat(AT_FDCWD, "/d", OpenFlags::RDONLY, 0).unwrap();
    t.close(f).unwrap();
    assert_eq!(drain(&t, g), vec![(FAN_OPEN, ino(&t, "/d"))]);
    assert_eq!(
        t.fanotify_mark(g, FAN_MARK_REMOVE, FAN_OPEN, AT_FDCWD, Some(b"/d/a")),
        Err(Errno::ENOENT)
    );
    t.fanotify_mark(g, FAN_MARK_FLUSH | FAN_MARK_FILESYSTEM, 0, AT_FDCWD, None)
        .unwrap();
    let f = t.openat(AT_FDCWD, "/d", OpenFlags::RDONLY, 0).unwrap();
    t.close(f).unwrap();
    assert_eq!(drain(&t, g), vec![]);
}

#[test]
fn bad_input_and_limits() {
    let (vfs, t) = setup();
    assert_eq!(t.fanotify_init(FAN_CLASS_CONTENT, 0), Err(Errno::EINVAL));
    assert_eq!(t.fanotify_init(FAN_REPORT_FID, 0), Err(Errno::EINVAL));
    assert_eq!(t.fanotify_init(0, 3), Err(Errno::EINVAL));
    assert_eq!(t.fanotify_init(1 << 20, 0), Err(Errno::EINVAL));
    let mut user = Cred::root();
    user.uid = 1000;
    user.euid = 1000;
    user.fsuid = 1000;
    user.caps = uvfs::Capabilities::empty();
    assert_eq!(vfs.task(user).fanotify_init(0, 0), Err(Errno::EPERM));
    let g = t.fanotify_init(0, 0).unwrap();
    let mark = |flags, mask, path: &[u8]| t.fanotify_mark(g, flags, mask, AT_FDCWD, Some(path));
    assert_eq!(mark(FAN_MARK_ADD, 0, b"/"), Err(Errno::EINVAL));
    assert_eq!(
        mark(FAN_MARK_ADD | FAN_MARK_REMOVE, FAN_OPEN, b"/"),
        Err(Errno::EINVAL)
    );
    assert_eq!(mark(FAN_MARK_ADD, FAN_CREATE, b"/"), Err(Errno::EINVAL));
    assert_eq!(mark(FAN_MARK_ADD, FAN_OPEN_PERM, b"/"), Err(Errno::EINVAL));
    assert_eq!(mark(FAN_MARK_ADD, 1 << 40, b"/"), Err(Errno::EINVAL));
    assert_eq!(mark(FAN_MARK_ADD, FAN_OPEN, b"/nope"), Err(Errno::ENOENT));
    assert_eq!(
        t.fanotify_mark(99, FAN_MARK_ADD, FAN_OPEN, AT_FDCWD, Some(b"/")),
        Err(Errno::EBADF)
    );
    let i = t.inotify_init1(0).unwrap();
    assert_eq!(
        t.fanotify_mark(i, FAN_MARK_ADD, FAN_OPEN, AT_FDCWD, Some(b"/")),
        Err(Errno::EINVAL)
    );
    assert_eq!(t.write(g, &[0; 8]), Err(Errno::EINVAL));

    vfs.namespace().set_fanotify_limits(FanotifyLimits {
        max_user_marks: 2,
        max_queued_events: 2,
        ..FanotifyLimits::default()
    });
    t.mkdirat(AT_FDCWD, "/x", 0o755).unwrap();
    t.mkdirat(AT_FDCWD, "/y", 0o755).unwrap();
    let q = t.fanotify_init(FAN_NONBLOCK, 0).unwrap();
    let mq = |p: &[u8]| {
        t.fanotify_mark(
            q,
            FAN_MARK_ADD,
            FAN_CLOSE_NOWRITE | FAN_EVENT_ON_CHILD,
            AT_FDCWD,
            Some(p),
        )
    };
    mq(b"/x").unwrap();
    mq(b"/y").unwrap();
    assert_eq!(mq(b"/"), Err(Errno::ENOSPC));
    for n in 0..4 {
        let p = format!("/x/{n}");
        write_file(&t, &p);
        let f = t
            .openat(AT_FDCWD, p.as_str(), OpenFlags::RDONLY, 0)
            .unwrap();
        t.close(f).unwrap();
    }
    let evs = drain(&t, q);
    assert_eq!(evs.len(), 3, "{evs:?}");
    assert_eq!(evs[2], (FAN_Q_OVERFLOW, 0));
    let mut small = [0u8; 23];
    write_file(&t, "/x/0");
    let f = t.openat(AT_FDCWD, "/x/0", OpenFlags::RDONLY, 0).unwrap();
    t.close(f).unwrap();
    assert_eq!(t.read(q, &mut small), Err(Errno::EINVAL));
    assert_eq!(t.fionread(q), Ok(24));
}

/// A queued event keeps its file as an open one does (Linux: the event's path reference): an
/// unlinked file's IN_DELETE_SELF waits for the event's read, and closing the group with the
/// event unread lets it go (without a deadlock on the group's own lock).
#[test]
fn a_queued_event_holds_its_unlinked_file_until_read_or_closed() {
    let (_vfs, t) = setup();
    t.mkdirat(AT_FDCWD, "/d", 0o755).unwrap();
    for round in 0..2 {
        let path = format!("/d/f{round}");
        let i = t.inotify_init1(IN_NONBLOCK).unwrap();
        let g = t.fanotify_init(FAN_NONBLOCK, 0).unwrap();
        t.fanotify_mark(
            g,
            FAN_MARK_ADD | FAN_MARK_MOUNT,
            FAN_CLOSE_WRITE,
            AT_FDCWD,
            Some(b"/"),
        )
        .unwrap();
        write_file(&t, &path);
        t.fanotify_mark(g, FAN_MARK_ADD, FAN_OPEN, AT_FDCWD, Some(path.as_bytes()))
            .unwrap();
        t.inotify_add_watch(i, &path, IN_DELETE_SELF).unwrap();
        t.unlinkat(AT_FDCWD, path.as_str(), AtFlags::empty())
            .unwrap();
        let mut buf = [0u8; 64];
        assert_eq!(
            t.read(i, &mut buf),
            Err(Errno::EAGAIN),
            "the event holds the file"
        );
        if round == 0 {
            assert_eq!(drain(&t, g).len(), 1);
        } else {
            // On another thread, so that a deadlock fails the test instead of hanging it.
            let t2 = t.clone_thread();
            let (tx, rx) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                let _ = tx.send(t2.close(g));
            });
            let closed = rx.recv_timeout(std::time::Duration::from_secs(20));
            assert_eq!(closed, Ok(Ok(())), "the group's close finished");
        }
        let n = t
            .read(i, &mut buf)
            .expect("IN_DELETE_SELF once the event went");
        let evs = InotifyEvent::parse_all(&buf[..n]);
        assert_eq!(evs[0].mask, IN_DELETE_SELF, "{evs:?}");
        t.close(i).unwrap();
        if round == 0 {
            t.close(g).unwrap();
        }
    }
}
