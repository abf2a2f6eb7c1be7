//! Threads share their root, working directory and umask; forks copy them.
//! Oracle: clone(2), `CLONE_FS`: "the caller and the child process share the same filesystem
//! information. This includes the root of the filesystem, the current working directory, and
//! the umask. Any call to chroot(2), chdir(2), or umask(2) performed by the calling process or
//! the child process also affects the other process"; without it (fork(2)) the child works on
//! a copy. Linux threads (pthread_create) are made with `CLONE_FS`.

use uvfs::abi::{MountFlags, OpenFlags, UmountFlags, AT_FDCWD};
use uvfs::{Cred, Errno, Task, Vfs};

fn tree() -> (Vfs, Task) {
    let vfs = Vfs::new();
    let t = vfs.task(Cred::root());
    for d in ["/a", "/b", "/m"] {
        t.mkdirat(AT_FDCWD, d, 0o755).expect("mkdir");
    }
    for (p, len) in [("/a/f", 1usize), ("/b/f", 2)] {
        let fd = t
            .openat(AT_FDCWD, p, OpenFlags::CREAT | OpenFlags::WRONLY, 0o644)
            .expect("create");
        t.write(fd, &vec![b'x'; len]).expect("write");
        t.close(fd).expect("close");
    }
    (vfs, t)
}

fn cwd(t: &Task) -> String {
    let mut b = [0u8; 256];
    let n = t.getcwd(&mut b).expect("getcwd");
    String::from_utf8(b[..n - 1].to_vec()).expect("utf-8")
}

/// The size of `f` relative to the cwd: which directory the task works in.
fn size_of_f(t: &Task) -> i64 {
    t.stat("f").expect("stat f").size
}

#[test]
fn chdir_in_one_thread_moves_the_other() {
    let (_v, a) = tree();
    let b = a.clone_thread();
    b.chdir("/a").expect("chdir");
    assert_eq!(cwd(&a), "/a");
    assert_eq!(size_of_f(&a), 1);
    a.chdir("/b").expect("chdir");
    assert_eq!(cwd(&b), "/b");
    assert_eq!(size_of_f(&b), 2);
    let dir = a
        .openat(AT_FDCWD, "/a", OpenFlags::DIRECTORY, 0)
        .expect("open dir");
    b.fchdir(dir).expect("fchdir");
    assert_eq!(cwd(&a), "/a");
}

#[test]
fn chroot_in_one_thread_changes_the_root_of_the_other() {
    let (_v, a) = tree();
    let b = a.clone_thread();
    b.chroot("/b").expect("chroot");
    // "/" now names /b for both; the cwd (still the old root) is outside the new root.
    assert_eq!(a.stat("/f").expect("stat").size, 2);
    assert_eq!(cwd(&a), "(unreachable)/");
    a.chdir("/").expect("chdir");
    assert_eq!(cwd(&b), "/");
    assert_eq!(size_of_f(&b), 2);
}

#[test]
fn umask_in_one_thread_applies_to_the_other() {
    let (_v, a) = tree();
    let b = a.clone_thread();
    assert_eq!(b.umask(0o077), 0o022);
    assert_eq!(a.umask(0o077), 0o077, "the other thread's mask");
    let fd = a
        .openat(
            AT_FDCWD,
            "/a/new",
            OpenFlags::CREAT | OpenFlags::WRONLY,
            0o666,
        )
        .expect("create");
    a.close(fd).expect("close");
    assert_eq!(a.stat("/a/new").expect("stat").mode & 0o777, 0o600);
    a.mkdirat(AT_FDCWD, "/a/newdir", 0o777).expect("mkdir");
    assert_eq!(b.stat("/a/newdir").expect("stat").mode & 0o777, 0o700);
}

#[test]
fn fork_copies_root_cwd_and_umask() {
    let (_v, a) = tree();
    a.chdir("/a").expect("chdir");
    let f = a.fork();
    assert_eq!(cwd(&f), "/a", "the fork starts where its parent was");
    f.chdir("/b").expect("chdir");
    assert_eq!(cwd(&a), "/a");
    a.chdir("/").expect("chdir");
    assert_eq!(cwd(&f), "/b");
    assert_eq!(f.umask(0o077), 0o022);
    assert_eq!(a.umask(0o022), 0o022);
    f.chroot("/b").expect("chroot");
    assert_eq!(a.stat("/a/f").expect("stat").size, 1);
    assert_eq!(f.stat("/a/f"), Err(Errno::ENOENT));
}

#[test]
fn a_thread_of_a_fork_shares_with_the_fork_only() {
    let (_v, a) = tree();
    let f = a.fork();
    let ft = f.clone_thread();
    ft.chdir("/b").expect("chdir");
    assert_eq!(cwd(&f), "/b");
    assert_eq!(cwd(&a), "/");
    let at = a.clone_thread();
    at.chdir("/a").expect("chdir");
    assert_eq!(cwd(&a), "/a");
    assert_eq!(cwd(&ft), "/b");
}

#[test]
fn a_change_by_a_thread_survives_its_end() {
    let (_v, a) = tree();
    let b = a.clone_thread();
    let b = std::thread::spawn(move || {
        b.chdir("/b").expect("chdir");
        b.umask(0o027);
        b
    })
    .join()
    .expect("thread");
    assert_eq!(cwd(&a), "/b");
    drop(b);
    // The last user of the shared state: it stays as the thread left it, and changes go on.
    assert_eq!(cwd(&a), "/b");
    assert_eq!(a.umask(0o022), 0o027);
    a.chdir("/a").expect("chdir");
    assert_eq!(size_of_f(&a), 1);
    let c = a.clone_thread();
    assert_eq!(cwd(&c), "/a");
}

/// A mount is busy while a task works in it; once the shared cwd leaves it, no thread keeps
/// it busy (Linux: `do_umount()` counts the references held by `fs_struct`s).
#[test]
fn umount_succeeds_once_the_shared_cwd_has_left_the_mount() {
    let (_v, a) = tree();
    a.mount(None, "/m", Some("tmpfs"), MountFlags::empty(), None)
        .expect("mount");
    a.chdir("/m").expect("chdir");
    let b = a.clone_thread();
    assert_eq!(b.umount2("/m", UmountFlags::empty()), Err(Errno::EBUSY));
    b.chdir("/").expect("chdir");
    assert_eq!(b.umount2("/m", UmountFlags::empty()), Ok(()));
    assert_eq!(cwd(&a), "/");
}

/// One thread moves the shared cwd back and forth while another resolves relative paths: every
/// resolution sees one whole state (cwd /a or /b), never a mix, and every check is counted.
#[test]
fn concurrent_chdir_and_relative_walks_see_whole_states() {
    const ROUNDS: usize = 2_000;
    let (_v, a) = tree();
    a.chdir("/b").expect("chdir");
    let b = a.clone_thread();
    let mover = std::thread::spawn(move || {
        for i in 0..ROUNDS {
            b.chdir(if i % 2 == 0 { "/a" } else { "/b" })
                .expect("chdir");
        }
        b.chdir("/a").expect("chdir");
        ROUNDS
    });
    let mut seen = [0usize; 2];
    for _ in 0..ROUNDS {
        let size = size_of_f(&a);
        let where_ = cwd(&a);
        match size {
            1 | 2 => seen[size as usize - 1] += 1,
            other => panic!("f of size {other}"),
        }
        assert!(where_ == "/a" || where_ == "/b", "cwd {where_}");
    }
    let moves = mover.join().expect("the mover must not panic");
    assert_eq!(moves, ROUNDS);
    assert_eq!(cwd(&a), "/a", "the mover's last chdir");
    assert_eq!(seen[0] + seen[1], ROUNDS, "every walk checked");
    println!(
        "clone_fs: {ROUNDS} chdirs, {ROUNDS} walks (cwd /a: {}, /b: {})",
        seen[0], seen[1]
    );
}
