//! splice, tee and sendfile where they wait: a blocked splice or tee woken by a writer, a
//! reader or the last writer's close, and interrupted (`EINTR`, nothing half-moved).
//! Oracle: splice(2), tee(2) and Linux fs/splice.c (`ipipe_prep()`, `opipe_prep()`,
//! `splice_from_pipe_next()`, `wait_for_space()`); what does not wait is compared with the
//! host kernel in crates/uvfs-conformance/cases/splice.cases. Every test counts its checks
//! and asserts the count, so a check skipped by an early return fails the test.

mod waits;

use std::time::Duration;

use uvfs::abi::{OpenFlags, SpliceFlags, AT_FDCWD};
use uvfs::{Errno, Task};
use waits::{setup, spawn_interruptible, wait_until, TIMEOUT};

const NONE: SpliceFlags = SpliceFlags::empty();

/// Runs `f` (a call that must not wait) on a thread of `t`; a call still running after 5 s
/// is interrupted and the test fails, rather than hanging.
fn without_waiting<R: Send + 'static>(t: &Task, f: impl FnOnce(&Task) -> R + Send + 'static) -> R {
    let (intr, rx, h) = spawn_interruptible(t, f);
    match rx.recv_timeout(Duration::from_secs(5)) {
        Ok(r) => {
            h.join().expect("caller");
            r
        }
        Err(_) => {
            intr.interrupt();
            let _ = h.join();
            panic!("the call waited");
        }
    }
}

/// Counts checks: `check!(n, cond, msg)`.
macro_rules! check {
    ($n:ident, $cond:expr, $($msg:tt)*) => {{
        assert!($cond, $($msg)*);
        $n += 1;
    }};
}

#[test]
fn a_blocked_pipe_to_pipe_splice_is_woken_by_a_writer() {
    let (_vfs, t) = setup();
    let mut n = 0;
    let [r1, w1] = t.pipe2(OpenFlags::empty()).expect("pipe2");
    let [r2, w2] = t.pipe2(OpenFlags::empty()).expect("pipe2");
    let (_i, rx, h) = spawn_interruptible(&t, move |t| t.splice(r1, None, w2, None, 100, NONE));
    wait_until(|| t.pipe_waiters(r1).expect("waiters") == 1);
    t.write(w1, b"woken").expect("write");
    check!(
        n,
        rx.recv_timeout(TIMEOUT) == Ok(Ok(5)),
        "the splice moved what came"
    );
    h.join().expect("splicer");
    let mut buf = [0u8; 16];
    check!(n, t.read(r2, &mut buf) == Ok(5), "the output pipe has it");
    check!(n, &buf[..5] == b"woken", "in order");
    check!(n, t.fionread(r1) == Ok(0), "consumed from the input");
    assert_eq!(n, 4);
}

#[test]
fn a_blocked_splice_sees_eof_when_the_last_writer_closes() {
    let (_vfs, t) = setup();
    let mut n = 0;
    let [r1, w1] = t.pipe2(OpenFlags::empty()).expect("pipe2");
    let f = t
        .openat(AT_FDCWD, "/f", OpenFlags::CREAT | OpenFlags::RDWR, 0o644)
        .expect("open");
    let (_i, rx, h) = spawn_interruptible(&t, move |t| t.splice(r1, None, f, None, 100, NONE));
    wait_until(|| t.pipe_waiters(r1).expect("waiters") == 1);
    t.close(w1).expect("close");
    check!(n, rx.recv_timeout(TIMEOUT) == Ok(Ok(0)), "end of file");
    h.join().expect("splicer");
    check!(n, t.fstat(f).expect("fstat").size == 0, "nothing written");
    assert_eq!(n, 2);
}

#[test]
fn a_blocked_pipe_to_file_splice_is_woken_by_a_writer_and_writes_at_the_offset() {
    let (_vfs, t) = setup();
    let mut n = 0;
    let [r1, w1] = t.pipe2(OpenFlags::empty()).expect("pipe2");
    let f = t
        .openat(AT_FDCWD, "/f", OpenFlags::CREAT | OpenFlags::RDWR, 0o644)
        .expect("open");
    let (_i, rx, h) = spawn_interruptible(&t, move |t| {
        let mut off = 10;
        t.splice(r1, None, f, Some(&mut off), 100, NONE)
            .map(|c| (c, off))
    });
    wait_until(|| t.pipe_waiters(r1).expect("waiters") == 1);
    t.write(w1, b"abc").expect("write");
    check!(
        n,
        rx.recv_timeout(TIMEOUT) == Ok(Ok((3, 13))),
        "count and offset"
    );
    h.join().expect("splicer");
    let mut buf = [0u8; 3];
    check!(n, t.pread(f, &mut buf, 10) == Ok(3), "at the offset");
    check!(n, &buf == b"abc", "the bytes");
    check!(
        n,
        t.lseek(f, 0, uvfs::abi::Whence::CUR) == Ok(0),
        "the file position stays"
    );
    assert_eq!(n, 4);
}

#[test]
fn a_blocked_file_to_pipe_splice_waits_for_room() {
    let (_vfs, t) = setup();
    let mut n = 0;
    let [r, w] = t.pipe2(OpenFlags::empty()).expect("pipe2");
    let f = t
        .openat(AT_FDCWD, "/f", OpenFlags::CREAT | OpenFlags::RDWR, 0o644)
        .expect("open");
    t.pwrite(f, b"file data", 0).expect("pwrite");
    t.write(w, &vec![7u8; 65536]).expect("fill");
    check!(
        n,
        without_waiting(&t, move |t| t.splice(
            f,
            Some(&mut 0),
            w,
            None,
            9,
            SpliceFlags::NONBLOCK
        )) == Err(Errno::EAGAIN),
        "SPLICE_F_NONBLOCK does not wait on a full pipe"
    );
    let (_i, rx, h) = spawn_interruptible(&t, move |t| t.splice(f, None, w, None, 9, NONE));
    wait_until(|| t.pipe_waiters(w).expect("waiters") == 1);
    t.read(r, &mut vec![0u8; 4096]).expect("read a page");
    check!(n, rx.recv_timeout(TIMEOUT) == Ok(Ok(9)), "it went in");
    h.join().expect("splicer");
    check!(
        n,
        t.fionread(r) == Ok(61440 + 9),
        "the rest and the spliced bytes"
    );
    check!(
        n,
        t.lseek(f, 0, uvfs::abi::Whence::CUR) == Ok(9),
        "the file position advanced"
    );
    assert_eq!(n, 4);
}

#[test]
fn a_blocked_tee_is_woken_and_consumes_nothing() {
    let (_vfs, t) = setup();
    let mut n = 0;
    let [r1, w1] = t.pipe2(OpenFlags::empty()).expect("pipe2");
    let [r2, w2] = t.pipe2(OpenFlags::empty()).expect("pipe2");
    let (_i, rx, h) = spawn_interruptible(&t, move |t| t.tee(r1, w2, 100, NONE));
    wait_until(|| t.pipe_waiters(r1).expect("waiters") == 1);
    t.write(w1, b"both").expect("write");
    check!(n, rx.recv_timeout(TIMEOUT) == Ok(Ok(4)), "tee copied");
    h.join().expect("tee");
    let mut a = [0u8; 8];
    let mut b = [0u8; 8];
    // FIONREAD first: a blocking read of an emptied input would wait for ever.
    check!(n, t.fionread(r1) == Ok(4), "the input still has it");
    check!(n, t.read(r1, &mut a) == Ok(4), "and reads it");
    check!(n, t.read(r2, &mut b) == Ok(4), "the output has it");
    check!(n, a[..4] == b[..4] && &a[..4] == b"both", "same bytes");
    assert_eq!(n, 5);
}

#[test]
fn splice_f_nonblock_overrides_a_blocking_pipe() {
    let (_vfs, t) = setup();
    let mut n = 0;
    let [r1, _w1] = t.pipe2(OpenFlags::empty()).expect("pipe2");
    let [_r2, w2] = t.pipe2(OpenFlags::empty()).expect("pipe2");
    let f = t
        .openat(AT_FDCWD, "/f", OpenFlags::CREAT | OpenFlags::RDWR, 0o644)
        .expect("open");
    let nb = SpliceFlags::NONBLOCK;
    check!(
        n,
        without_waiting(&t, move |t| t.splice(r1, None, w2, None, 1, nb)) == Err(Errno::EAGAIN),
        "pipe to pipe"
    );
    check!(
        n,
        without_waiting(&t, move |t| t.splice(r1, None, f, None, 1, nb)) == Err(Errno::EAGAIN),
        "pipe to file"
    );
    check!(
        n,
        without_waiting(&t, move |t| t.tee(r1, w2, 1, nb)) == Err(Errno::EAGAIN),
        "tee"
    );
    check!(n, t.pipe_waiters(r1) == Ok(0), "nobody waits");
    assert_eq!(n, 4);
}

#[test]
fn interrupted_splices_and_tee_return_eintr_having_moved_nothing() {
    let (_vfs, t) = setup();
    let mut n = 0;
    let [r1, w1] = t.pipe2(OpenFlags::empty()).expect("pipe2");
    let [r2, w2] = t.pipe2(OpenFlags::empty()).expect("pipe2");
    let f = t
        .openat(AT_FDCWD, "/f", OpenFlags::CREAT | OpenFlags::RDWR, 0o644)
        .expect("open");
    t.pwrite(f, b"abc", 0).expect("pwrite");
    // Each blocked call, interrupted, returns EINTR.
    type Call = fn(&Task, [i32; 5]) -> Result<usize, Errno>;
    let calls: [(&str, Call, bool); 4] = [
        (
            "pipe to pipe",
            |t, [r1, _, _, w2, _]| t.splice(r1, None, w2, None, 10, NONE),
            true,
        ),
        (
            "pipe to file",
            |t, [r1, _, _, _, f]| t.splice(r1, None, f, None, 10, NONE),
            true,
        ),
        ("tee", |t, [r1, _, _, w2, _]| t.tee(r1, w2, 10, NONE), true),
        (
            "file to full pipe",
            |t, [_, _, _, w2, f]| t.splice(f, Some(&mut 0), w2, None, 3, NONE),
            false,
        ),
    ];
    for (name, call, on_input) in calls {
        if !on_input {
            t.write(w2, &vec![0u8; 65536]).expect("fill the output");
        }
        let fds = [r1, w1, r2, w2, f];
        let (intr, rx, h) = spawn_interruptible(&t, move |t| call(t, fds));
        let waited_on = if on_input { r1 } else { w2 };
        wait_until(|| t.pipe_waiters(waited_on).expect("waiters") == 1);
        intr.interrupt();
        check!(
            n,
            rx.recv_timeout(TIMEOUT) == Ok(Err(Errno::EINTR)),
            "{name}"
        );
        h.join().expect("splicer");
    }
    check!(n, t.fionread(r1) == Ok(0), "nothing appeared in the input");
    check!(n, t.fionread(r2) == Ok(65536), "nothing more went out");
    check!(
        n,
        t.fstat(f).expect("fstat").size == 3,
        "the file is as it was"
    );
    assert_eq!(n, 7);
}

#[test]
fn a_blocked_splice_into_a_full_pipe_gets_epipe_and_sigpipe_when_its_reader_goes() {
    let (_vfs, t) = setup();
    let mut n = 0;
    let [r1, w1] = t.pipe2(OpenFlags::empty()).expect("pipe2");
    let [r2, w2] = t.pipe2(OpenFlags::empty()).expect("pipe2");
    t.write(w1, b"x").expect("write");
    t.write(w2, &vec![0u8; 65536]).expect("fill");
    let (_i, rx, h) = spawn_interruptible(&t, move |t| {
        let r = t.splice(r1, None, w2, None, 10, NONE);
        (r, t.take_sigpipe())
    });
    wait_until(|| t.pipe_waiters(w2).expect("waiters") == 1);
    t.close(r2).expect("close");
    check!(
        n,
        rx.recv_timeout(TIMEOUT) == Ok((Err(Errno::EPIPE), true)),
        "EPIPE, SIGPIPE"
    );
    h.join().expect("splicer");
    check!(n, t.fionread(r1) == Ok(1), "the input kept its byte");
    let _ = w1;
    assert_eq!(n, 2);
}

#[test]
fn a_reader_blocked_on_the_output_is_woken_by_splice_and_tee() {
    let (_vfs, t) = setup();
    let mut n = 0;
    let [r1, w1] = t.pipe2(OpenFlags::empty()).expect("pipe2");
    let [r2, w2] = t.pipe2(OpenFlags::empty()).expect("pipe2");
    let f = t
        .openat(AT_FDCWD, "/f", OpenFlags::CREAT | OpenFlags::RDWR, 0o644)
        .expect("open");
    t.pwrite(f, b"from a file", 0).expect("pwrite");
    type Feed = fn(&Task, [i32; 4]) -> Result<usize, Errno>;
    let feeds: [(&str, Feed); 4] = [
        ("splice pipe to pipe", |t, [r1, w1, w2, _]| {
            t.write(w1, b"spliced")?;
            t.splice(r1, None, w2, None, 100, NONE)
        }),
        ("tee", |t, [r1, w1, w2, _]| {
            t.write(w1, b"teed")?;
            let n = t.tee(r1, w2, 100, NONE)?;
            t.read(r1, &mut [0u8; 100])?;
            Ok(n)
        }),
        ("splice file to pipe", |t, [_, _, w2, f]| {
            t.splice(f, Some(&mut 0), w2, None, 100, NONE)
        }),
        ("sendfile to a pipe", |t, [_, _, w2, f]| {
            t.sendfile(w2, f, Some(&mut 0), 100)
        }),
    ];
    for (name, feed) in feeds {
        let (_i, rx, h) = spawn_interruptible(&t, move |t| {
            let mut buf = [0u8; 100];
            t.read(r2, &mut buf).map(|k| buf[..k].to_vec())
        });
        wait_until(|| t.pipe_waiters(r2).expect("waiters") == 1);
        let moved = feed(&t, [r1, w1, w2, f]).expect(name);
        let got = rx.recv_timeout(TIMEOUT);
        check!(
            n,
            got.as_ref()
                .is_ok_and(|g| g.as_ref().is_ok_and(|g| g.len() == moved)),
            "{name}: {got:?}"
        );
        h.join().expect("reader");
    }
    assert_eq!(n, 4);
}
