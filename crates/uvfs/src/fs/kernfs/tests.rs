//! kernfs through the VFS: a tree mounted in a [`Vfs`], driven by a [`Task`]'s calls.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use super::*;
use crate::abi::{Errno, OpenFlags, AT_FDCWD};
use crate::{Cred, Task, Vfs};

fn mounted(tree: &Kernfs) -> (Vfs, Task) {
    let vfs = Vfs::new();
    let task = vfs.task(Cred::root());
    task.mkdirat(AT_FDCWD, "/k", 0o755).expect("mkdir");
    tree.mount(&task, "/k").expect("mount");
    (vfs, task)
}

fn read_all(task: &Task, path: &str) -> Result<Vec<u8>> {
    let fd = task.openat(AT_FDCWD, path, OpenFlags::RDONLY, 0)?;
    let mut out = Vec::new();
    let mut buf = [0u8; 7];
    loop {
        let n = task.read(fd, &mut buf)?;
        if n == 0 {
            break;
        }
        out.extend_from_slice(&buf[..n]);
    }
    task.close(fd)?;
    Ok(out)
}

/// Oracle: Linux's sysfs (a value read in pieces, `show` called once per read from 0,
/// `ENODEV` after removal, `ENOENT` for the name).
#[test]
fn an_attribute_is_shown_once_per_read_from_the_start_and_gone_after_removal() {
    let tree = Kernfs::new("kfs", 0x6b66);
    let shows = Arc::new(AtomicUsize::new(0));
    let s2 = shows.clone();
    let d = tree.root().create_dir("d", 0o755).expect("dir");
    d.create_file(
        "v",
        0o444,
        show(move |out| {
            s2.fetch_add(1, Ordering::SeqCst);
            out.extend_from_slice(b"hello, kernfs\n");
        }),
    )
    .expect("file");
    let (_vfs, task) = mounted(&tree);
    assert_eq!(read_all(&task, "/k/d/v").expect("read"), b"hello, kernfs\n");
    assert_eq!(
        shows.load(Ordering::SeqCst),
        1,
        "one show for the reads of one open"
    );
    let fd = task
        .openat(AT_FDCWD, "/k/d/v", OpenFlags::RDONLY, 0)
        .expect("open");
    let mut b = [0u8; 5];
    assert_eq!(task.pread(fd, &mut b, 7).expect("pread"), 5);
    assert_eq!(&b, b"kernf");
    assert_eq!(task.pread(fd, &mut b, 0).expect("pread 0"), 5);
    assert_eq!(shows.load(Ordering::SeqCst), 3);
    d.remove();
    assert_eq!(task.pread(fd, &mut b, 0), Err(Errno::ENODEV));
    assert_eq!(task.pread(fd, &mut b, 100), Err(Errno::ENODEV));
    assert_eq!(
        task.lseek(fd, 0, crate::abi::Whence::SET),
        Err(Errno::ENODEV)
    );
    assert_eq!(shows.load(Ordering::SeqCst), 3, "no show after removal");
    assert_eq!(
        task.openat(AT_FDCWD, "/k/d/v", OpenFlags::RDONLY, 0),
        Err(Errno::ENOENT)
    );
    assert_eq!(
        task.fstatat(AT_FDCWD, "/k/d", Default::default()).err(),
        Some(Errno::ENOENT)
    );
    // A new node of the same name is found again (no stale negative entry).
    let d2 = tree.root().create_dir("d", 0o700).expect("again");
    let st = task
        .fstatat(AT_FDCWD, "/k/d", Default::default())
        .expect("stat");
    assert_eq!(st.mode & 0o7777, 0o700);
    assert_eq!(st.ino, d2.inode().ino());
    task.close(fd).expect("close");
}

/// Oracle: the host's sysfs (`EACCES` for a write open of a 0444 attribute as root, for a
/// create; `EPERM` for mkdir, unlink; truncation succeeds).
#[test]
fn system_calls_that_change_the_tree_are_refused_as_linux_refuses_them() {
    let tree = Kernfs::new("kfs", 0x6b66);
    tree.root()
        .create_file("ro", 0o444, show(|o| o.push(b'1')))
        .expect("file");
    let (_vfs, task) = mounted(&tree);
    assert_eq!(
        task.openat(AT_FDCWD, "/k/ro", OpenFlags::WRONLY, 0),
        Err(Errno::EACCES)
    );
    assert_eq!(
        task.openat(AT_FDCWD, "/k/ro", OpenFlags::RDWR, 0),
        Err(Errno::EACCES)
    );
    assert_eq!(
        task.openat(
            AT_FDCWD,
            "/k/new",
            OpenFlags::CREAT | OpenFlags::RDWR,
            0o644
        ),
        Err(Errno::EACCES)
    );
    assert_eq!(task.mkdirat(AT_FDCWD, "/k/x", 0o755), Err(Errno::EPERM));
    assert_eq!(
        task.unlinkat(AT_FDCWD, "/k/ro", Default::default()),
        Err(Errno::EPERM)
    );
    task.truncate("/k/ro", 0).expect("truncate is accepted");
    let st = task
        .fstatat(AT_FDCWD, "/k/ro", Default::default())
        .expect("stat");
    assert_eq!(st.size, 4096);
}

/// A removed node is freed, its attribute's callbacks with it, once nothing holds it: the
/// open file closed, the stale names dropped by the next walk, and the epoch collector's
/// deferred frees run (Linux: the last `kernfs_put()` frees a removed node). Each callback
/// holds a token, whose count falls back to the test's own when every node holding it is
/// gone; a removed subtree kept alive by a forgotten reference fails it.
#[test]
fn a_removed_node_is_freed_once_nothing_holds_it() {
    let token = Arc::new(());
    let tree = Kernfs::new("kfs", 0x6b66);
    let d = tree.root().create_dir("d", 0o755).expect("dir");
    for name in ["a", "b"] {
        let t = token.clone();
        d.create_file(
            name,
            0o444,
            show(move |out| {
                let _ = &t;
                out.extend_from_slice(b"1\n");
            }),
        )
        .expect("file");
    }
    let sub = d.create_dir("sub", 0o755).expect("subdir");
    let t = token.clone();
    sub.create_file(
        "c",
        0o444,
        show(move |_| {
            let _ = &t;
        }),
    )
    .expect("file");
    assert_eq!(Arc::strong_count(&token), 4);
    let (_vfs, task) = mounted(&tree);
    assert_eq!(read_all(&task, "/k/d/a").expect("read"), b"1\n");
    let fd = task
        .openat(AT_FDCWD, "/k/d/b", OpenFlags::RDONLY, 0)
        .expect("open");
    assert!(task
        .fstatat(AT_FDCWD, "/k/d/sub/c", Default::default())
        .is_ok());
    d.remove();
    drop((d, sub));
    let mut b = [0u8; 4];
    assert_eq!(task.read(fd, &mut b), Err(Errno::ENODEV));
    task.close(fd).expect("close");
    // The walk drops the stale name `d` (and with it its cached children).
    assert_eq!(
        task.fstatat(AT_FDCWD, "/k/d", Default::default()).err(),
        Some(Errno::ENOENT)
    );
    // Deferred frees run once no walk that could see the names is in progress: a test on
    // another thread may be in one, and then frees them when it leaves (bounded wait).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while Arc::strong_count(&token) > 1 && std::time::Instant::now() < deadline {
        crate::sync::rcu::flush();
        std::thread::yield_now();
    }
    assert_eq!(
        Arc::strong_count(&token),
        1,
        "the removed nodes' callbacks are dropped"
    );
}
