//! Advisory locks through the public API: `flock`, POSIX and OFD record locks, their owners,
//! the close rule, waiting, `EDEADLK` and `EINTR`.
//! Oracle: fcntl(2) and flock(2), and Linux fs/locks.c where the pages are silent (the
//! non-atomic `flock` conversion of `flock_lock_inode()`, `posix_locks_deadlock()`); the
//! cases in crates/uvfs-conformance/cases/locks.cases check the same rules against the host.

use std::sync::mpsc;
use std::time::Duration;

use uvfs::abi::{Flock, FlockOp, LockCmd, OpenFlags, AT_FDCWD, F_RDLCK, F_UNLCK, F_WRLCK};
use uvfs::{Cred, Errno, Task, Vfs};

/// How long a test waits for another thread before it fails (never reached when it passes).
const TIMEOUT: Duration = Duration::from_secs(20);

fn setup() -> (Vfs, Task) {
    let vfs = Vfs::new();
    let t = vfs.task(Cred::root());
    let fd = t
        .openat(AT_FDCWD, "/f", OpenFlags::CREAT | OpenFlags::RDWR, 0o644)
        .expect("create");
    t.write(fd, &[0u8; 100]).expect("write");
    t.close(fd).expect("close");
    (vfs, t)
}

fn open(t: &Task, flags: OpenFlags) -> i32 {
    t.openat(AT_FDCWD, "/f", flags, 0).expect("open /f")
}

fn set(t: &Task, fd: i32, l_type: i16, start: i64, len: i64) -> Result<(), Errno> {
    t.fcntl_lock(fd, LockCmd::SetLk, &mut Flock::new(l_type, start, len))
}

fn ofd_set(t: &Task, fd: i32, l_type: i16, start: i64, len: i64) -> Result<(), Errno> {
    t.fcntl_lock(fd, LockCmd::OfdSetLk, &mut Flock::new(l_type, start, len))
}

/// `F_GETLK` for a write lock over `start`/`len`: (type, start, len, pid) of the answer.
fn get(t: &Task, fd: i32, start: i64, len: i64) -> (i16, i64, i64, i32) {
    let mut fl = Flock::new(F_WRLCK, start, len);
    t.fcntl_lock(fd, LockCmd::GetLk, &mut fl).expect("F_GETLK");
    (fl.l_type, fl.l_start, fl.l_len, fl.l_pid)
}

/// Waits until `n` tasks wait for a lock of the inode of `fd`.
fn await_waiters(t: &Task, fd: i32, n: u32) {
    let start = std::time::Instant::now();
    while t.lock_waiters(fd).expect("waiters") < n {
        assert!(start.elapsed() < TIMEOUT, "no waiter came");
        std::thread::yield_now();
    }
}

/// Runs `f` on its own thread; the receiver gets its result.
fn spawn<R: Send + 'static>(f: impl FnOnce() -> R + Send + 'static) -> mpsc::Receiver<R> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx
}

/// Runs `F_SETLKW` (or another lock command) of `t` on `fd` on its own thread; the receiver
/// gets the result and the task back.
fn spawn_lock(
    t: Task,
    fd: i32,
    cmd: LockCmd,
    l_type: i16,
    start: i64,
    len: i64,
) -> mpsc::Receiver<(Result<(), Errno>, Task)> {
    spawn(move || {
        let r = t.fcntl_lock(fd, cmd, &mut Flock::new(l_type, start, len));
        (r, t)
    })
}

#[test]
fn a_write_lock_conflicts_with_another_process_and_getlk_names_the_holder() {
    let (_v, a) = setup();
    let b = a.fork();
    let fa = open(&a, OpenFlags::RDWR);
    let fb = open(&b, OpenFlags::RDWR);
    set(&a, fa, F_WRLCK, 10, 10).expect("lock");
    assert_eq!(set(&b, fb, F_RDLCK, 19, 1), Err(Errno::EAGAIN));
    assert_eq!(set(&b, fb, F_WRLCK, 20, 5), Ok(()));
    assert_eq!(get(&b, fb, 0, 0), (F_WRLCK, 10, 10, a.lock_pid()));
    assert_ne!(a.lock_pid(), b.lock_pid());
    // The holder itself sees no conflict with its own locks.
    assert_eq!(get(&a, fa, 10, 10).0, F_UNLCK);
}

#[test]
fn shared_locks_coexist_and_exclusive_ones_do_not() {
    let (_v, a) = setup();
    let b = a.fork();
    let fa = open(&a, OpenFlags::RDWR);
    let fb = open(&b, OpenFlags::RDWR);
    set(&a, fa, F_RDLCK, 0, 10).expect("read lock");
    assert_eq!(set(&b, fb, F_RDLCK, 5, 10), Ok(()));
    assert_eq!(set(&b, fb, F_WRLCK, 5, 1), Err(Errno::EAGAIN));
    assert_eq!(set(&a, fa, F_WRLCK, 9, 1), Err(Errno::EAGAIN));
    assert_eq!(set(&a, fa, F_WRLCK, 0, 5), Ok(()));
}

#[test]
fn threads_share_their_posix_locks_forks_do_not() {
    let (_v, a) = setup();
    let th = a.clone_thread();
    let fa = open(&a, OpenFlags::RDWR);
    set(&a, fa, F_WRLCK, 0, 0).expect("lock");
    assert_eq!(set(&th, fa, F_WRLCK, 0, 0), Ok(()), "same owner");
    assert_eq!(th.lock_pid(), a.lock_pid());
    let child = a.fork();
    assert_eq!(set(&child, fa, F_WRLCK, 0, 1), Err(Errno::EAGAIN));
    // The thread's unlock is the owner's.
    set(&th, fa, F_UNLCK, 0, 0).expect("unlock");
    assert_eq!(set(&child, fa, F_WRLCK, 0, 1), Ok(()));
}

#[test]
fn an_unlock_in_the_middle_splits_the_lock_as_another_owner_sees() {
    let (_v, a) = setup();
    let b = a.fork();
    let fa = open(&a, OpenFlags::RDWR);
    let fb = open(&b, OpenFlags::RDWR);
    set(&a, fa, F_WRLCK, 0, 100).expect("lock");
    set(&a, fa, F_UNLCK, 40, 20).expect("unlock the middle");
    assert_eq!(get(&b, fb, 0, 0).1..get(&b, fb, 0, 0).2, 0..40);
    assert_eq!(get(&b, fb, 40, 20).0, F_UNLCK);
    assert_eq!(get(&b, fb, 50, 0), (F_WRLCK, 60, 40, a.lock_pid()));
    // A read lock in the middle of a write lock: three pieces.
    set(&a, fa, F_WRLCK, 40, 20).expect("relock");
    set(&a, fa, F_RDLCK, 45, 5).expect("downgrade a piece");
    let mut r = Flock::new(F_RDLCK, 0, 0);
    b.fcntl_lock(fb, LockCmd::GetLk, &mut r).expect("getlk");
    assert_eq!((r.l_start, r.l_len), (0, 45));
    assert_eq!(set(&b, fb, F_RDLCK, 45, 5), Ok(()));
    assert_eq!(set(&b, fb, F_RDLCK, 44, 1), Err(Errno::EAGAIN));
    assert_eq!(set(&b, fb, F_RDLCK, 50, 1), Err(Errno::EAGAIN));
}

#[test]
fn touching_locks_of_one_type_merge_as_another_owner_sees() {
    let (_v, a) = setup();
    let b = a.fork();
    let fa = open(&a, OpenFlags::RDWR);
    let fb = open(&b, OpenFlags::RDWR);
    set(&a, fa, F_RDLCK, 0, 10).expect("lock");
    set(&a, fa, F_RDLCK, 20, 10).expect("lock");
    set(&a, fa, F_RDLCK, 10, 10).expect("lock the gap");
    let mut r = Flock::new(F_WRLCK, 0, 0);
    b.fcntl_lock(fb, LockCmd::GetLk, &mut r).expect("getlk");
    assert_eq!((r.l_type, r.l_start, r.l_len), (F_RDLCK, 0, 30));
    // To the end of the file: l_len 0 back.
    set(&a, fa, F_RDLCK, 30, 0).expect("lock to the end");
    assert_eq!(get(&b, fb, 0, 0).2, 0);
}

#[test]
fn any_close_of_the_file_by_the_owner_releases_its_posix_locks() {
    let (_v, a) = setup();
    let b = a.fork();
    let fa = open(&a, OpenFlags::RDWR);
    let other = open(&a, OpenFlags::RDONLY);
    let fb = open(&b, OpenFlags::RDWR);
    set(&a, fa, F_WRLCK, 0, 10).expect("lock");
    // Closing an unrelated description of the same file, never used for locking.
    a.close(other).expect("close");
    assert_eq!(get(&b, fb, 0, 0).0, F_UNLCK);
    // Through a dup, and through dup2 over the fd.
    set(&a, fa, F_WRLCK, 0, 10).expect("lock");
    let d = a.dup(fa).expect("dup");
    a.close(d).expect("close the dup");
    assert_eq!(get(&b, fb, 0, 0).0, F_UNLCK);
    set(&a, fa, F_WRLCK, 0, 10).expect("lock");
    let d = a.dup(fa).expect("dup");
    let g = open(&a, OpenFlags::RDONLY);
    a.dup2(g, d).expect("dup2 over the dup");
    assert_eq!(get(&b, fb, 0, 0).0, F_UNLCK);
}

#[test]
fn a_close_by_another_process_leaves_the_locks() {
    let (_v, a) = setup();
    let fa = open(&a, OpenFlags::RDWR);
    set(&a, fa, F_WRLCK, 0, 10).expect("lock");
    let b = a.fork();
    b.close(fa).expect("child closes its copy");
    let fb = open(&b, OpenFlags::RDWR);
    assert_eq!(get(&b, fb, 0, 0).0, F_WRLCK);
    // The task's end (its fd table dropped) releases them.
    drop(a);
    assert_eq!(get(&b, fb, 0, 0).0, F_UNLCK);
}

#[test]
fn exec_closing_a_cloexec_fd_releases_the_locks() {
    let (_v, a) = setup();
    let b = a.fork();
    let fa = a
        .openat(AT_FDCWD, "/f", OpenFlags::RDWR | OpenFlags::CLOEXEC, 0)
        .expect("open");
    let fb = open(&b, OpenFlags::RDWR);
    set(&a, fa, F_WRLCK, 0, 10).expect("lock");
    a.exec_close_fds();
    assert_eq!(get(&b, fb, 0, 0).0, F_UNLCK);
}

#[test]
fn ofd_locks_belong_to_the_description() {
    let (_v, a) = setup();
    let f1 = open(&a, OpenFlags::RDWR);
    let f2 = open(&a, OpenFlags::RDWR);
    ofd_set(&a, f1, F_WRLCK, 0, 10).expect("ofd lock");
    // Another description of the same process conflicts, and so does a POSIX lock.
    assert_eq!(ofd_set(&a, f2, F_WRLCK, 5, 1), Err(Errno::EAGAIN));
    assert_eq!(set(&a, f2, F_RDLCK, 5, 1), Err(Errno::EAGAIN));
    let mut fl = Flock::new(F_WRLCK, 0, 0);
    a.fcntl_lock(f2, LockCmd::OfdGetLk, &mut fl).expect("getlk");
    assert_eq!(
        (fl.l_type, fl.l_start, fl.l_len, fl.l_pid),
        (F_WRLCK, 0, 10, -1)
    );
    // Closing another fd of the file does not release it; a dup shares it.
    a.close(f2).expect("close");
    let d = a.dup(f1).expect("dup");
    assert_eq!(ofd_set(&a, d, F_WRLCK, 0, 10), Ok(()), "same owner");
    a.close(f1).expect("close the first fd");
    let f3 = open(&a, OpenFlags::RDWR);
    assert_eq!(ofd_set(&a, f3, F_WRLCK, 0, 1), Err(Errno::EAGAIN));
    // The last fd of the description goes: the lock goes.
    a.close(d).expect("close the dup");
    assert_eq!(ofd_set(&a, f3, F_WRLCK, 0, 1), Ok(()));
}

#[test]
fn ofd_getlk_with_unlck_reports_the_descriptions_own_lock() {
    let (_v, a) = setup();
    let f1 = open(&a, OpenFlags::RDWR);
    let f2 = open(&a, OpenFlags::RDWR);
    ofd_set(&a, f1, F_RDLCK, 100, 10).expect("ofd lock");
    let mut fl = Flock::new(F_UNLCK, 105, 0);
    a.fcntl_lock(f1, LockCmd::OfdGetLk, &mut fl).expect("getlk");
    assert_eq!((fl.l_type, fl.l_start, fl.l_len), (F_RDLCK, 100, 10));
    let mut fl = Flock::new(F_UNLCK, 0, 0);
    a.fcntl_lock(f2, LockCmd::OfdGetLk, &mut fl).expect("getlk");
    assert_eq!(fl.l_type, F_UNLCK);
}

#[test]
fn flock_is_shared_by_dup_and_fork_and_goes_with_the_last_close() {
    let (_v, a) = setup();
    let f = open(&a, OpenFlags::RDONLY);
    let other = open(&a, OpenFlags::RDONLY);
    a.flock(f, FlockOp::EX).expect("flock");
    assert_eq!(
        a.flock(other, FlockOp::SH | FlockOp::NB),
        Err(Errno::EWOULDBLOCK)
    );
    let d = a.dup(f).expect("dup");
    let child = a.fork();
    assert_eq!(
        child.flock(f, FlockOp::EX | FlockOp::NB),
        Ok(()),
        "same description"
    );
    a.close(f).expect("close");
    child.close(f).expect("close");
    assert_eq!(
        a.flock(other, FlockOp::SH | FlockOp::NB),
        Err(Errno::EWOULDBLOCK)
    );
    // LOCK_UN through any fd of the description releases it.
    child.flock(d, FlockOp::UN).expect("unlock through the dup");
    assert_eq!(a.flock(other, FlockOp::EX | FlockOp::NB), Ok(()));
    a.flock(other, FlockOp::UN).expect("unlock");
    a.flock(d, FlockOp::SH).expect("lock");
    a.close(d).expect("close");
    assert_eq!(
        a.flock(other, FlockOp::EX | FlockOp::NB),
        Err(Errno::EWOULDBLOCK)
    );
    child.close(d).expect("the last fd of the description");
    assert_eq!(a.flock(other, FlockOp::EX | FlockOp::NB), Ok(()));
}

#[test]
fn a_failed_flock_conversion_leaves_no_lock() {
    let (_v, a) = setup();
    let (f1, f2, f3) = (
        open(&a, OpenFlags::RDONLY),
        open(&a, OpenFlags::RDONLY),
        open(&a, OpenFlags::RDONLY),
    );
    a.flock(f1, FlockOp::SH).expect("sh");
    a.flock(f2, FlockOp::SH).expect("sh");
    assert_eq!(
        a.flock(f1, FlockOp::EX | FlockOp::NB),
        Err(Errno::EWOULDBLOCK)
    );
    a.flock(f2, FlockOp::UN).expect("unlock");
    // f1 lost its shared lock in the attempt (Linux: the conversion unlocks first).
    assert_eq!(a.flock(f3, FlockOp::EX | FlockOp::NB), Ok(()));
}

#[test]
fn flock_and_posix_locks_do_not_see_each_other() {
    let (_v, a) = setup();
    let b = a.fork();
    let fa = open(&a, OpenFlags::RDWR);
    let fb = open(&b, OpenFlags::RDWR);
    a.flock(fa, FlockOp::EX).expect("flock");
    assert_eq!(set(&b, fb, F_WRLCK, 0, 0), Ok(()));
    assert_eq!(get(&a, fa, 0, 0).0, F_WRLCK);
    assert_eq!(
        b.flock(fb, FlockOp::SH | FlockOp::NB),
        Err(Errno::EWOULDBLOCK)
    );
}

#[test]
fn bad_lock_requests_get_linux_errnos() {
    let (_v, a) = setup();
    let rw = open(&a, OpenFlags::RDWR);
    let ro = open(&a, OpenFlags::RDONLY);
    let wo = open(&a, OpenFlags::WRONLY);
    let path = a
        .openat(AT_FDCWD, "/f", OpenFlags::PATH, 0)
        .expect("O_PATH");
    let with = |whence: i16, start: i64, len: i64, ty: i16| Flock {
        l_type: ty,
        l_whence: whence,
        l_start: start,
        l_len: len,
        l_pid: 0,
    };
    let setlk = |fd: i32, mut fl: Flock| a.fcntl_lock(fd, LockCmd::SetLk, &mut fl);
    assert_eq!(
        setlk(rw, with(3, 0, 0, F_WRLCK)),
        Err(Errno::EINVAL),
        "whence"
    );
    assert_eq!(setlk(rw, with(0, 0, 0, 7)), Err(Errno::EINVAL), "type");
    assert_eq!(
        setlk(rw, with(0, -1, 1, F_WRLCK)),
        Err(Errno::EINVAL),
        "start"
    );
    assert_eq!(
        setlk(rw, with(0, 5, -6, F_WRLCK)),
        Err(Errno::EINVAL),
        "before 0"
    );
    assert_eq!(
        setlk(rw, with(0, i64::MAX, 2, F_WRLCK)),
        Err(Errno::EOVERFLOW)
    );
    assert_eq!(
        setlk(rw, with(0, i64::MAX, 1, F_WRLCK)),
        Ok(()),
        "the last byte"
    );
    assert_eq!(
        setlk(rw, with(1, i64::MAX, 1, 7)),
        Err(Errno::EINVAL),
        "type"
    );
    assert_eq!(
        setlk(rw, with(2, i64::MAX, 1, F_WRLCK)),
        Err(Errno::EOVERFLOW)
    );
    assert_eq!(setlk(rw, with(0, 0, i64::MIN, F_WRLCK)), Err(Errno::EINVAL));
    assert_eq!(
        setlk(rw, with(0, i64::MAX, 0, 7)),
        Err(Errno::EINVAL),
        "type after range"
    );
    assert_eq!(setlk(ro, with(0, 0, 0, F_WRLCK)), Err(Errno::EBADF));
    assert_eq!(setlk(wo, with(0, 0, 0, F_RDLCK)), Err(Errno::EBADF));
    assert_eq!(setlk(wo, with(0, 0, 0, F_UNLCK)), Ok(()));
    assert_eq!(setlk(path, with(0, 0, 0, F_UNLCK)), Err(Errno::EBADF));
    assert_eq!(setlk(99, with(0, 0, 0, F_WRLCK)), Err(Errno::EBADF));
    assert_eq!(setlk(-1, with(0, 0, 0, F_WRLCK)), Err(Errno::EBADF));
    // F_GETLK: F_UNLCK refused first; no open-mode check.
    let mut fl = with(0, i64::MAX, 5, F_UNLCK);
    assert_eq!(
        a.fcntl_lock(rw, LockCmd::GetLk, &mut fl),
        Err(Errno::EINVAL)
    );
    let mut fl = with(0, 0, 0, F_WRLCK);
    assert_eq!(a.fcntl_lock(ro, LockCmd::GetLk, &mut fl), Ok(()));
    // OFD: l_pid must be 0, checked after the range and the open mode.
    let mut fl = Flock {
        l_pid: 1,
        ..with(0, 0, 1, F_WRLCK)
    };
    assert_eq!(
        a.fcntl_lock(rw, LockCmd::OfdSetLk, &mut fl),
        Err(Errno::EINVAL)
    );
    let mut fl = Flock {
        l_pid: 1,
        ..with(0, i64::MAX, 2, F_WRLCK)
    };
    assert_eq!(
        a.fcntl_lock(rw, LockCmd::OfdSetLk, &mut fl),
        Err(Errno::EOVERFLOW)
    );
    let mut fl = Flock {
        l_pid: 1,
        ..with(0, 0, 1, F_WRLCK)
    };
    assert_eq!(
        a.fcntl_lock(ro, LockCmd::OfdSetLk, &mut fl),
        Err(Errno::EBADF)
    );
    let mut fl = Flock {
        l_pid: 1,
        ..with(0, 0, 1, F_WRLCK)
    };
    assert_eq!(
        a.fcntl_lock(rw, LockCmd::OfdGetLk, &mut fl),
        Err(Errno::EINVAL)
    );
    // flock: the operation before the fd.
    assert_eq!(a.flock(99, FlockOp::SH | FlockOp::EX), Err(Errno::EINVAL));
    assert_eq!(a.flock(rw, FlockOp::empty()), Err(Errno::EINVAL));
    assert_eq!(a.flock(rw, FlockOp::NB), Err(Errno::EINVAL));
    assert_eq!(a.flock(99, FlockOp::SH), Err(Errno::EBADF));
    assert_eq!(a.flock(path, FlockOp::UN), Err(Errno::EBADF));
    assert_eq!(a.flock(99, FlockOp::MAND | FlockOp::SH), Ok(()));
}

#[test]
fn seek_cur_seek_end_and_a_negative_length_place_the_range() {
    let (_v, a) = setup();
    let b = a.fork();
    let fa = open(&a, OpenFlags::RDWR);
    let fb = open(&b, OpenFlags::RDWR);
    a.lseek(fa, 30, uvfs::abi::Whence::SET).expect("seek");
    let mut fl = Flock {
        l_whence: 1,
        ..Flock::new(F_WRLCK, -10, 5)
    };
    a.fcntl_lock(fa, LockCmd::SetLk, &mut fl).expect("SEEK_CUR");
    assert_eq!(
        get(&b, fb, 0, 0).1..get(&b, fb, 0, 0).1 + get(&b, fb, 0, 0).2,
        20..25
    );
    set(&a, fa, F_UNLCK, 0, 0).expect("unlock");
    // The file is 100 bytes: the last 10, written as a negative length from the end.
    let mut fl = Flock {
        l_whence: 2,
        ..Flock::new(F_WRLCK, 0, -10)
    };
    a.fcntl_lock(fa, LockCmd::SetLk, &mut fl).expect("SEEK_END");
    assert_eq!(get(&b, fb, 0, 0), (F_WRLCK, 90, 10, a.lock_pid()));
}

#[test]
fn setlkw_waits_until_the_conflict_goes() {
    let (_v, a) = setup();
    let b = a.fork();
    let fa = open(&a, OpenFlags::RDWR);
    let fb = open(&b, OpenFlags::RDWR);
    set(&a, fa, F_WRLCK, 0, 10).expect("lock");
    let got = spawn_lock(b, fb, LockCmd::SetLkW, F_WRLCK, 5, 1);
    await_waiters(&a, fa, 1);
    set(&a, fa, F_UNLCK, 0, 5).expect("a part that is not in the way");
    assert!(got.try_recv().is_err(), "still waiting");
    set(&a, fa, F_UNLCK, 5, 1).expect("the byte in the way");
    let (r, _b) = got.recv_timeout(TIMEOUT).expect("the waiter returns");
    assert_eq!(r, Ok(()));
    assert_eq!(get(&a, fa, 5, 1).0, F_WRLCK);
}

/// A holder that turns its write lock into a read lock lets the readers waiting for it in
/// (Linux: `posix_lock_inode()` wakes the waiters of the locks it replaces).
#[test]
fn a_downgrade_to_a_read_lock_lets_the_waiting_readers_in() {
    let (_v, a) = setup();
    let b = a.fork();
    let fa = open(&a, OpenFlags::RDWR);
    let fb = open(&b, OpenFlags::RDWR);
    set(&a, fa, F_WRLCK, 0, 10).expect("lock");
    let got = spawn_lock(b, fb, LockCmd::SetLkW, F_RDLCK, 0, 10);
    await_waiters(&a, fa, 1);
    set(&a, fa, F_RDLCK, 0, 10).expect("downgrade");
    let (r, b) = got.recv_timeout(TIMEOUT).expect("the reader is let in");
    assert_eq!(r, Ok(()));
    // Both read locks are held: a writer of a third owner sees one of them.
    let c = a.fork();
    let fc = open(&c, OpenFlags::RDWR);
    assert_eq!(get(&c, fc, 0, 10).0, F_RDLCK);
    drop(b);
}

/// The last close of a description releases its `flock` lock, and then its OFD locks, and
/// each release lets the task waiting for it in (Linux: `locks_remove_file()`).
#[test]
fn the_last_close_of_a_holder_lets_its_waiter_in() {
    let (_v, a) = setup();
    // The flock lock.
    let f1 = open(&a, OpenFlags::RDONLY);
    let f2 = open(&a, OpenFlags::RDONLY);
    a.flock(f1, FlockOp::EX).expect("ex");
    let t = a.clone_thread();
    let got = spawn(move || (t.flock(f2, FlockOp::EX), t));
    await_waiters(&a, f1, 1);
    a.close(f1).expect("close");
    let (r, _t) = got
        .recv_timeout(TIMEOUT)
        .expect("the flock waiter is let in");
    assert_eq!(r, Ok(()));
    // An OFD lock.
    let f3 = open(&a, OpenFlags::RDWR);
    let f4 = open(&a, OpenFlags::RDWR);
    ofd_set(&a, f3, F_WRLCK, 0, 10).expect("ofd lock");
    let t = a.clone_thread();
    let got = spawn_lock(t, f4, LockCmd::OfdSetLkW, F_WRLCK, 0, 10);
    await_waiters(&a, f3, 1);
    a.close(f3).expect("close");
    let (r, _t) = got.recv_timeout(TIMEOUT).expect("the OFD waiter is let in");
    assert_eq!(r, Ok(()));
}

#[test]
fn a_blocking_flock_waits_for_the_holder() {
    let (_v, a) = setup();
    let f1 = open(&a, OpenFlags::RDONLY);
    let f2 = open(&a, OpenFlags::RDONLY);
    a.flock(f1, FlockOp::SH).expect("sh");
    let t = a.clone_thread();
    let got = spawn(move || (t.flock(f2, FlockOp::EX), t));
    await_waiters(&a, f1, 1);
    a.flock(f1, FlockOp::UN).expect("unlock");
    let (r, _t) = got.recv_timeout(TIMEOUT).expect("returns");
    assert_eq!(r, Ok(()));
    assert_eq!(
        a.flock(f1, FlockOp::SH | FlockOp::NB),
        Err(Errno::EWOULDBLOCK)
    );
}

/// `F_SETLKW` of a write lock on byte `byte` by `t`, which must fail with `EDEADLK` at once.
/// Run on its own thread: if the cycle is missed, the call would wait forever; it is then
/// interrupted and the test fails.
fn expect_edeadlk(t: Task, fd: i32, byte: i64) -> Task {
    let handle = t.interrupt_handle();
    let got = spawn_lock(t, fd, LockCmd::SetLkW, F_WRLCK, byte, 1);
    match got.recv_timeout(Duration::from_secs(5)) {
        Ok((r, t)) => {
            assert_eq!(r, Err(Errno::EDEADLK));
            t
        }
        Err(_) => {
            handle.interrupt();
            let (r, _t) = got
                .recv_timeout(TIMEOUT)
                .expect("the interrupted call returns");
            panic!("the cycle was not detected: the call waited (then {r:?})");
        }
    }
}

#[test]
fn a_cycle_of_two_waiters_is_edeadlk() {
    let (_v, a) = setup();
    let b = a.fork();
    let fa = open(&a, OpenFlags::RDWR);
    let fb = open(&b, OpenFlags::RDWR);
    set(&a, fa, F_WRLCK, 0, 1).expect("a holds 0");
    set(&b, fb, F_WRLCK, 1, 1).expect("b holds 1");
    let got = spawn_lock(b, fb, LockCmd::SetLkW, F_WRLCK, 0, 1);
    await_waiters(&a, fa, 1);
    let a = expect_edeadlk(a, fa, 1);
    // Nothing changed: b still waits; a's release lets it in.
    set(&a, fa, F_UNLCK, 0, 1).expect("unlock");
    let (r, _b) = got.recv_timeout(TIMEOUT).expect("returns");
    assert_eq!(r, Ok(()));
}

#[test]
fn a_cycle_of_three_waiters_is_edeadlk() {
    let (_v, a) = setup();
    let b = a.fork();
    let c = a.fork();
    let (fa, fb, fc) = (
        open(&a, OpenFlags::RDWR),
        open(&b, OpenFlags::RDWR),
        open(&c, OpenFlags::RDWR),
    );
    set(&a, fa, F_WRLCK, 0, 1).expect("a holds 0");
    set(&b, fb, F_WRLCK, 1, 1).expect("b holds 1");
    set(&c, fc, F_WRLCK, 2, 1).expect("c holds 2");
    // b waits for a, c waits for b.
    let wb = spawn(move || {
        (
            b.fcntl_lock(fb, LockCmd::SetLkW, &mut Flock::new(F_WRLCK, 0, 1)),
            b,
        )
    });
    await_waiters(&a, fa, 1);
    let wc = spawn(move || {
        (
            c.fcntl_lock(fc, LockCmd::SetLkW, &mut Flock::new(F_WRLCK, 1, 1)),
            c,
        )
    });
    await_waiters(&a, fa, 2);
    // a waiting for c closes a -> c -> b -> a.
    let a = expect_edeadlk(a, fa, 2);
    set(&a, fa, F_UNLCK, 0, 1).expect("unlock");
    let (r, b) = wb.recv_timeout(TIMEOUT).expect("b returns");
    assert_eq!(r, Ok(()));
    set(&b, fb, F_UNLCK, 0, 0).expect("b lets go");
    let (r, _c) = wc.recv_timeout(TIMEOUT).expect("c returns");
    assert_eq!(r, Ok(()));
}

/// A lock that only adds bytes, or a call that changes nothing, leaves the waiters as they
/// were: each stays recorded as waiting for the lock it first found in its way, even where
/// the new lock is now the first in its way. Linux's deadlock check follows that record
/// (`posix_locks_deadlock()` reads a request's `flc_blocker`, which `posix_lock_inode()`
/// changes only when it wakes the waiters of a lock it replaces), so a request that closes a
/// cycle through the new lock waits instead of failing with `EDEADLK`. (Checked on the host,
/// Linux 6.18, with three processes and `lockf`: c waited, and b's next try after a signal
/// failed with `EDEADLK`.)
#[test]
fn a_lock_that_only_adds_leaves_whom_each_waiter_waits_for() {
    let (_v, a) = setup();
    let b = a.fork();
    let c = a.fork();
    let fa = open(&a, OpenFlags::RDWR);
    let fb = open(&b, OpenFlags::RDWR);
    let fc = open(&c, OpenFlags::RDWR);
    // c's locks come first in the list, then a's, then b's.
    set(&c, fc, F_WRLCK, 5, 1).expect("c: byte 5");
    set(&a, fa, F_WRLCK, 0, 1).expect("a: byte 0");
    set(&b, fb, F_WRLCK, 10, 1).expect("b: byte 10");
    // b waits for bytes 0 and 1, for a.
    let b_got = spawn_lock(b, fb, LockCmd::SetLkW, F_WRLCK, 0, 2);
    await_waiters(&a, fa, 1);
    // c takes byte 1, now in b's way too, and then waits for b's byte 10: b is recorded as
    // waiting for a, who waits for nobody, so c waits.
    set(&c, fc, F_WRLCK, 1, 1).expect("c: byte 1 (adds only)");
    // Calls that change nothing leave the waiters as they were too.
    set(&c, fc, F_UNLCK, 50, 1).expect("c: unlock of a byte it does not hold");
    set(&c, fc, F_WRLCK, 5, 1).expect("c: byte 5 again");
    let handle = c.interrupt_handle();
    let c_got = spawn_lock(c, fc, LockCmd::SetLkW, F_WRLCK, 10, 1);
    await_waiters(&a, fa, 2);
    assert!(c_got.try_recv().is_err(), "c waits");
    handle.interrupt();
    let (r, c) = c_got.recv_timeout(TIMEOUT).expect("c returns");
    assert_eq!(r, Err(Errno::EINTR));
    // a's release lets b try again; c's byte 1 is in its way and c waits for nobody, so b
    // waits on, until c lets go.
    set(&a, fa, F_UNLCK, 0, 1).expect("a: unlock");
    set(&c, fc, F_UNLCK, 0, 0).expect("c: unlock all");
    let (r, _b) = b_got.recv_timeout(TIMEOUT).expect("b returns");
    assert_eq!(r, Ok(()));
}

#[test]
fn an_interrupted_setlkw_returns_eintr_and_takes_nothing() {
    let (_v, a) = setup();
    let b = a.fork();
    let fa = open(&a, OpenFlags::RDWR);
    let fb = open(&b, OpenFlags::RDWR);
    set(&a, fa, F_WRLCK, 5, 1).expect("lock");
    let handle = b.interrupt_handle();
    let got = spawn_lock(b, fb, LockCmd::SetLkW, F_WRLCK, 0, 10);
    await_waiters(&a, fa, 1);
    handle.interrupt();
    let (r, b) = got.recv_timeout(TIMEOUT).expect("returns");
    assert_eq!(r, Err(Errno::EINTR));
    set(&a, fa, F_UNLCK, 0, 0).expect("unlock");
    assert_eq!(get(&a, fa, 0, 0).0, F_UNLCK, "the waiter took nothing");
    assert!(!b.take_interrupt(), "consumed");
    // A pending interrupt fails the next wait at once, and only a wait.
    handle.interrupt();
    assert_eq!(set(&b, fb, F_WRLCK, 0, 1), Ok(()), "no wait: stays pending");
    set(&a, fa, F_WRLCK, 50, 1).expect("lock");
    let mut fl = Flock::new(F_WRLCK, 50, 1);
    assert_eq!(
        b.fcntl_lock(fb, LockCmd::SetLkW, &mut fl),
        Err(Errno::EINTR)
    );
}

#[test]
fn an_interrupted_flock_returns_eintr_and_keeps_nothing() {
    let (_v, a) = setup();
    let f1 = open(&a, OpenFlags::RDONLY);
    let f2 = open(&a, OpenFlags::RDONLY);
    a.flock(f1, FlockOp::EX).expect("ex");
    let t = a.clone_thread();
    let handle = t.interrupt_handle();
    let got = spawn(move || (t.flock(f2, FlockOp::SH), t));
    await_waiters(&a, f1, 1);
    handle.interrupt();
    let (r, _t) = got.recv_timeout(TIMEOUT).expect("returns");
    assert_eq!(r, Err(Errno::EINTR));
    a.flock(f1, FlockOp::UN).expect("unlock");
    let f3 = open(&a, OpenFlags::RDONLY);
    assert_eq!(a.flock(f3, FlockOp::EX | FlockOp::NB), Ok(()));
}

#[test]
fn getlk_reports_the_first_conflicting_owner_in_lock_order() {
    let (_v, a) = setup();
    let b = a.fork();
    let c = a.fork();
    let (fa, fb, fc) = (
        open(&a, OpenFlags::RDWR),
        open(&b, OpenFlags::RDWR),
        open(&c, OpenFlags::RDWR),
    );
    set(&b, fb, F_RDLCK, 50, 10).expect("b first");
    set(&a, fa, F_RDLCK, 0, 10).expect("a second");
    assert_eq!(get(&c, fc, 0, 0), (F_RDLCK, 50, 10, b.lock_pid()));
    set(&b, fb, F_UNLCK, 0, 0).expect("b gone");
    set(&b, fb, F_RDLCK, 50, 10).expect("b again, now last");
    assert_eq!(get(&c, fc, 0, 0), (F_RDLCK, 0, 10, a.lock_pid()));
}

/// A lock the stress test's model records: owner, type, first and last byte.
type Held = (usize, i16, i64, i64);

/// Several owners (two processes with POSIX locks, two descriptions with OFD locks) take and
/// release random overlapping ranges with `F_SETLKW`; a shared model records every held
/// range, and each acquisition checks that no other owner holds a conflicting one.
#[test]
fn owners_racing_for_overlapping_ranges_never_hold_conflicting_locks() {
    const OWNERS: usize = 4;
    const ROUNDS: usize = 300;
    let (_v, root) = setup();
    let held: std::sync::Arc<std::sync::Mutex<Vec<Held>>> = Default::default();
    let checks = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut done = Vec::new();
    for who in 0..OWNERS {
        let t = root.fork();
        let fd = open(&t, OpenFlags::RDWR);
        let (held, checks) = (held.clone(), checks.clone());
        let cmd = if who % 2 == 0 {
            LockCmd::SetLkW
        } else {
            LockCmd::OfdSetLkW
        };
        done.push(spawn(move || {
            let mut seed = 0x9e37_79b9_7f4a_7c15u64 ^ (who as u64 + 1);
            let mut next = move || {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                seed
            };
            for _ in 0..ROUNDS {
                let start = (next() % 40) as i64;
                let len = (next() % 12 + 1) as i64;
                let ty = if next() % 3 == 0 { F_WRLCK } else { F_RDLCK };
                t.fcntl_lock(fd, cmd, &mut Flock::new(ty, start, len))
                    .expect("lock");
                {
                    let mut h = held.lock().expect("model");
                    for &(o, k, s, e) in h.iter() {
                        let overlap = s < start + len && start <= e;
                        assert!(
                            o == who || !overlap || (k == F_RDLCK && ty == F_RDLCK),
                            "owner {who} got {ty} {start}+{len} while {o} holds {k} {s}..={e}"
                        );
                    }
                    h.push((who, ty, start, start + len - 1));
                    checks.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
                std::thread::yield_now();
                held.lock().expect("model").retain(|&(o, ..)| o != who);
                t.fcntl_lock(fd, cmd, &mut Flock::new(F_UNLCK, start, len))
                    .expect("unlock");
            }
        }));
    }
    for d in done {
        d.recv_timeout(Duration::from_secs(120))
            .expect("an owner panicked or hung");
    }
    assert_eq!(
        checks.load(std::sync::atomic::Ordering::Relaxed),
        OWNERS * ROUNDS
    );
}

/// Lock holders racing with closers: one process's thread takes locks through an fd while its
/// other thread closes that fd and reopens it on another file and back (each close releases
/// the process's locks on the file; a lock that raced with the close of its fd is taken back
/// out, `EBADF`), and another process waits with `F_SETLKW` for the same bytes, which the
/// closes keep releasing. No call hangs or fails otherwise, and once every fd is closed no
/// lock of the process is left on either file.
#[test]
fn lock_holders_racing_with_closers_leave_no_lock_behind() {
    const ROUNDS: usize = 400;
    let (_v, root) = setup();
    let g = root
        .openat(AT_FDCWD, "/g", OpenFlags::CREAT | OpenFlags::RDWR, 0o644)
        .expect("create /g");
    root.close(g).expect("close");
    let holder = root.fork();
    let fd = open(&holder, OpenFlags::RDWR);
    let closer = holder.clone_thread();
    let other = root.fork();
    let fo = open(&other, OpenFlags::RDWR);
    let h = spawn(move || {
        let mut outcomes = [0usize; 3];
        for i in 0..ROUNDS {
            let mut fl = Flock::new(F_WRLCK, (i % 10) as i64, 5);
            match holder.fcntl_lock(fd, LockCmd::SetLk, &mut fl) {
                Ok(()) => outcomes[0] += 1,
                Err(Errno::EAGAIN) => outcomes[1] += 1,
                Err(Errno::EBADF) => outcomes[2] += 1,
                Err(e) => panic!("round {i}: {e:?}"),
            }
        }
        (holder, outcomes)
    });
    let c = spawn(move || {
        for _ in 0..ROUNDS / 4 {
            for path in ["/g", "/f"] {
                let _ = closer.close(fd);
                let again = closer
                    .openat(AT_FDCWD, path, OpenFlags::RDWR, 0)
                    .expect("reopen");
                assert_eq!(again, fd, "the lowest free fd");
            }
        }
        closer
    });
    let o = spawn(move || {
        for i in 0..ROUNDS / 8 {
            let mut fl = Flock::new(F_WRLCK, (i % 10) as i64, 1);
            other
                .fcntl_lock(fo, LockCmd::SetLkW, &mut fl)
                .expect("wait");
            set(&other, fo, F_UNLCK, 0, 0).expect("unlock");
        }
        other
    });
    let (holder, outcomes) = h
        .recv_timeout(TIMEOUT)
        .expect("the holder panicked or hung");
    let closer = c
        .recv_timeout(TIMEOUT)
        .expect("the closer panicked or hung");
    // The holder's last lock may have come after the closer's last close: it stays until
    // this close (POSIX), and the waiter may be waiting for it, so the close comes before the
    // wait for the waiter (waiting first hung whenever the holder won that last race).
    closer.close(fd).expect("close the last fd");
    let other = o
        .recv_timeout(TIMEOUT)
        .expect("the waiter panicked or hung");
    assert_eq!(outcomes.iter().sum::<usize>(), ROUNDS, "{outcomes:?}");
    // Every fd of the holder's table closed, the tasks still alive: no lock may remain.
    let fg = other
        .openat(AT_FDCWD, "/g", OpenFlags::RDWR, 0)
        .expect("open /g");
    assert_eq!(
        get(&other, fo, 0, 0).0,
        F_UNLCK,
        "a lock on /f outlived its fds"
    );
    assert_eq!(
        get(&other, fg, 0, 0).0,
        F_UNLCK,
        "a lock on /g outlived its fds"
    );
    drop((holder, closer));
}

#[test]
fn fs_file_locks_behave_as_std_file_locks_on_linux() {
    let fs = uvfs::fs::Fs::new();
    let a = fs.create("/l").expect("create");
    let b = fs.open("/l").expect("open");
    a.lock().expect("lock");
    assert!(matches!(
        b.try_lock_shared(),
        Err(std::fs::TryLockError::WouldBlock)
    ));
    // A clone shares the open file, so its lock.
    let a2 = a.try_clone().expect("clone");
    assert!(a2.try_lock().is_ok());
    drop(a);
    assert!(matches!(
        b.try_lock(),
        Err(std::fs::TryLockError::WouldBlock)
    ));
    drop(a2);
    b.try_lock()
        .expect("the last handle of the lock's file is gone");
    b.unlock().expect("unlock");
    b.lock_shared().expect("shared");
    let c = fs.open("/l").expect("open");
    c.try_lock_shared().expect("shared with shared");
}

/// A wait that ended without a wake-up from its blocker (interrupted) leaves no trace for
/// the deadlock check: b waited for a and was interrupted, then a waits for b; with b's old
/// wait still on record that would look like a cycle (EDEADLK).
#[test]
fn a_finished_wait_is_forgotten_by_the_deadlock_check() {
    let (_v, a) = setup();
    let b = a.fork();
    let fa = open(&a, OpenFlags::RDWR);
    let fb = open(&b, OpenFlags::RDWR);
    set(&a, fa, F_WRLCK, 0, 1).expect("a holds 0");
    set(&b, fb, F_WRLCK, 1, 1).expect("b holds 1");
    let stop = b.interrupt_handle();
    let got = spawn_lock(b, fb, LockCmd::SetLkW, F_WRLCK, 0, 1);
    await_waiters(&a, fa, 1);
    stop.interrupt();
    let (r, b) = got.recv_timeout(TIMEOUT).expect("b's wait returns");
    assert_eq!(r, Err(Errno::EINTR), "b was interrupted");
    // Now a waits for b's byte: no cycle, since b waits for nothing any more.
    let a2 = a.clone_thread();
    let got = spawn_lock(a2, fa, LockCmd::SetLkW, F_WRLCK, 1, 1);
    await_waiters(&b, fb, 1);
    set(&b, fb, F_UNLCK, 1, 1).expect("b lets go");
    let (r, _a2) = got.recv_timeout(TIMEOUT).expect("a's wait returns");
    assert_eq!(r, Ok(()), "not EDEADLK: b's finished wait was forgotten");
}

/// Two processes waiting behind the root's write lock of byte 5 (taken here): a for bytes
/// 0..=10, listed first, then b for byte 5. Returns a's interrupt handle and the receivers of
/// their `F_SETLKW` results, each with its task and fd.
#[allow(clippy::type_complexity)] // Reason: two receivers of (result, task, fd).
fn two_waiters_behind_byte_5(
    root: &Task,
    fr: i32,
) -> (
    uvfs::vfs::InterruptHandle,
    mpsc::Receiver<(Result<(), Errno>, Task, i32)>,
    mpsc::Receiver<(Result<(), Errno>, Task, i32)>,
) {
    let (a, b) = (root.fork(), root.fork());
    let (fa, fb) = (open(&a, OpenFlags::RDWR), open(&b, OpenFlags::RDWR));
    let stop_a = a.interrupt_handle();
    set(root, fr, F_WRLCK, 5, 1).expect("the root holds byte 5");
    let wa = spawn(move || {
        let r = a.fcntl_lock(fa, LockCmd::SetLkW, &mut Flock::new(F_WRLCK, 0, 11));
        (r, a, fa)
    });
    await_waiters(root, fr, 1);
    let wb = spawn(move || {
        let r = b.fcntl_lock(fb, LockCmd::SetLkW, &mut Flock::new(F_WRLCK, 5, 1));
        (r, b, fb)
    });
    await_waiters(root, fr, 2);
    (stop_a, wa, wb)
}

/// Receives a waiter's result, which must be success, and releases what it took.
fn took_and_let_go(w: &mpsc::Receiver<(Result<(), Errno>, Task, i32)>, who: &str) {
    let (r, t, fd) = w
        .recv_timeout(TIMEOUT)
        .unwrap_or_else(|_| panic!("{who} returns"));
    assert_eq!(r, Ok(()), "{who}");
    set(&t, fd, F_UNLCK, 0, 0).unwrap_or_else(|e| panic!("{who} lets go: {e:?}"));
}

/// A waiter woken by a release that finds its bytes taken again before it runs (the releaser
/// took part of them back) waits again, and lets through the waiter it held back whose bytes
/// are free ([`two_waiters_behind_byte_5`]); the root releases byte 5 and takes byte 0 at
/// once. b must get byte 5 while the root still holds byte 0 (Linux:
/// `__locks_insert_block()` wakes the requests blocked under the one it queues again). When
/// a runs first and takes its bytes, the round shows nothing and is run again; the test
/// counts the rounds that showed it.
#[test]
fn a_woken_waiter_that_waits_again_lets_the_next_one_in() {
    const ROUNDS: usize = 20;
    let (_v, root) = setup();
    let fr = open(&root, OpenFlags::RDWR);
    let mut shown = 0;
    for _ in 0..ROUNDS {
        let (_stop_a, wa, wb) = two_waiters_behind_byte_5(&root, fr);
        set(&root, fr, F_UNLCK, 5, 1).expect("release byte 5");
        if set(&root, fr, F_WRLCK, 0, 1).is_ok() {
            // a was woken but cannot have run before the root took byte 0 back.
            let (r, b, fb) = wb
                .recv_timeout(Duration::from_secs(5))
                .expect("b gets the free byte 5 while a waits again");
            assert_eq!(r, Ok(()));
            shown += 1;
            assert_eq!(root.lock_waiters(fr), Ok(1), "a waits again");
            set(&root, fr, F_UNLCK, 0, 1).expect("release byte 0");
            set(&b, fb, F_UNLCK, 5, 1).expect("b lets go");
            took_and_let_go(&wa, "a");
        } else {
            // a ran first and holds 0..=10.
            took_and_let_go(&wa, "a");
            took_and_let_go(&wb, "b");
        }
    }
    assert!(shown > 0, "no round showed the case in {ROUNDS}");
    eprintln!("{shown} of {ROUNDS} rounds showed the case");
}

/// As above, with the woken waiter interrupted before it runs: it returns `EINTR` and lets
/// through the waiter it held back. When a runs first and takes its bytes, the round shows
/// nothing and is run again.
#[test]
fn a_woken_waiter_interrupted_before_it_runs_lets_the_next_one_in() {
    const ROUNDS: usize = 20;
    let (_v, root) = setup();
    let fr = open(&root, OpenFlags::RDWR);
    let mut shown = 0;
    for _ in 0..ROUNDS {
        let (stop_a, wa, wb) = two_waiters_behind_byte_5(&root, fr);
        set(&root, fr, F_UNLCK, 5, 1).expect("release byte 5");
        stop_a.interrupt();
        let (ra, a, fa) = wa.recv_timeout(TIMEOUT).expect("a returns");
        if ra == Err(Errno::EINTR) {
            let (r, b, fb) = wb
                .recv_timeout(Duration::from_secs(5))
                .expect("b gets the free byte 5 once a has gone");
            assert_eq!(r, Ok(()));
            shown += 1;
            set(&b, fb, F_UNLCK, 5, 1).expect("b lets go");
        } else {
            // a ran first and holds 0..=10.
            assert_eq!(ra, Ok(()));
            a.take_interrupt();
            set(&a, fa, F_UNLCK, 0, 0).expect("a lets go");
            took_and_let_go(&wb, "b");
        }
    }
    assert!(shown > 0, "no round showed the case in {ROUNDS}");
    eprintln!("{shown} of {ROUNDS} rounds showed the case");
}
