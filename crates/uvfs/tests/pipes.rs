//! Pipes and FIFOs through the public API: `pipe2`, reads and writes (blocking and
//! `O_NONBLOCK`), end of file, `EPIPE` and the pending `SIGPIPE`, `PIPE_BUF` atomicity,
//! `O_DIRECT` packets, `F_SETPIPE_SZ`/`F_GETPIPE_SZ`, `FIONREAD`, `EINTR`, the FIFO open
//! rendezvous, and timestamps (none on anonymous pipes, the usual ones on FIFOs).
//! Oracle: pipe(7), fifo(7), pipe2(2), fcntl(2), and Linux fs/pipe.c where the pages are
//! silent (the merge rule of `anon_pipe_write()`, `round_pipe_size()`, `fifo_open()`); the
//! cases in crates/uvfs-conformance/cases/pipes.cases check the same rules against the host.

mod waits;

use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use uvfs::abi::{FcntlCmd, FdFlags, FileType, OpenFlags, Whence, AT_FDCWD};

const S_IFIFO: u32 = FileType::Fifo.mode_bits();
use uvfs::{Capabilities, Cred, Errno, Task};
use waits::{setup, spawn, spawn_interruptible, wait_until, TIMEOUT};

const NB: OpenFlags = OpenFlags::NONBLOCK;

fn pipe_sz(t: &Task, fd: i32) -> i32 {
    t.fcntl(fd, FcntlCmd::GetPipeSz).expect("F_GETPIPE_SZ")
}

#[test]
fn pipe2_gives_two_fifo_ends_owned_by_the_creator() {
    let (vfs, root) = setup();
    let t = vfs.task(Cred::user(1000, 100, &[]));
    drop(root);
    let [r, w] = t.pipe2(OpenFlags::empty()).expect("pipe2");
    assert_eq!((r, w), (0, 1));
    let st = t.fstat(r).expect("fstat");
    assert_eq!(st.mode, S_IFIFO | 0o600);
    assert_eq!((st.uid, st.gid), (1000, 100));
    assert_eq!(st.size, 0);
    assert_eq!(st.blksize, 4096);
    assert_eq!(st.nlink, 1);
    let sw = t.fstat(w).expect("fstat");
    assert_eq!(sw.ino, st.ino, "both ends are one inode");
    let [r2, _] = t.pipe2(OpenFlags::empty()).expect("pipe2");
    assert_ne!(
        t.fstat(r2).expect("fstat").ino,
        st.ino,
        "each pipe its own inode"
    );
    assert_eq!(
        t.fcntl(r, FcntlCmd::GetFl).expect("getfl"),
        OpenFlags::RDONLY.bits() as i32
    );
    assert_eq!(
        t.fcntl(w, FcntlCmd::GetFl).expect("getfl"),
        OpenFlags::WRONLY.bits() as i32
    );
    assert_eq!(t.read(w, &mut [0u8; 1]), Err(Errno::EBADF));
    assert_eq!(t.write(r, b"x"), Err(Errno::EBADF));
}

#[test]
fn pipe2_flags() {
    let (_vfs, t) = setup();
    for bad in [
        OpenFlags::EXCL,
        OpenFlags::APPEND,
        OpenFlags::CREAT,
        OpenFlags::RDWR,
        OpenFlags::NOATIME,
    ] {
        assert_eq!(t.pipe2(bad), Err(Errno::EINVAL), "{bad:?}");
    }
    let [r, w] = t
        .pipe2(OpenFlags::CLOEXEC | NB | OpenFlags::DIRECT)
        .expect("pipe2");
    for fd in [r, w] {
        assert_eq!(
            t.fcntl(fd, FcntlCmd::GetFd).expect("getfd"),
            FdFlags::CLOEXEC.bits() as i32
        );
        let fl = OpenFlags::from_bits_retain(t.fcntl(fd, FcntlCmd::GetFl).expect("getfl") as u32);
        assert!(fl.contains(NB), "{fl:?}");
        // O_DIRECT on the write end only, as Linux's create_pipe_files().
        assert_eq!(fl.contains(OpenFlags::DIRECT), fd == w, "{fl:?}");
    }
    // Both fds or neither.
    t.set_nofile_limit(3).expect("limit");
    assert_eq!(t.pipe2(OpenFlags::empty()), Err(Errno::EMFILE));
    assert_eq!(t.fstat(2), Err(Errno::EBADF), "no fd left behind");
}

#[test]
fn nonblocking_read_of_an_empty_pipe_is_eagain_and_eof_after_the_writer() {
    let (_vfs, t) = setup();
    let [r, w] = t.pipe2(NB).expect("pipe2");
    let mut buf = [0u8; 16];
    assert_eq!(t.read(r, &mut buf), Err(Errno::EAGAIN));
    assert_eq!(t.read(r, &mut []), Ok(0), "an empty read reads nothing");
    t.write(w, b"abc").expect("write");
    t.write(w, b"def").expect("write");
    assert_eq!(t.read(r, &mut buf[..4]), Ok(4));
    assert_eq!(&buf[..4], b"abcd");
    t.close(w).expect("close");
    assert_eq!(t.read(r, &mut buf), Ok(2), "what is left, then EOF");
    assert_eq!(&buf[..2], b"ef");
    assert_eq!(t.read(r, &mut buf), Ok(0));
    assert_eq!(t.read(r, &mut buf), Ok(0));
}

#[test]
fn epipe_and_sigpipe_when_the_last_reader_is_gone() {
    let (_vfs, t) = setup();
    let [r, w] = t.pipe2(OpenFlags::empty()).expect("pipe2");
    let r2 = t.dup(r).expect("dup");
    t.close(r).expect("close");
    assert_eq!(t.write(w, b"still a reader"), Ok(14));
    assert!(!t.take_sigpipe());
    t.close(r2).expect("close");
    assert_eq!(
        t.write(w, b""),
        Ok(0),
        "a null write succeeds, no reader or not"
    );
    assert!(!t.take_sigpipe());
    assert_eq!(t.write(w, b"x"), Err(Errno::EPIPE));
    assert!(t.take_sigpipe(), "a pending SIGPIPE");
    assert!(!t.take_sigpipe(), "taken once");
}

#[test]
fn small_writes_merge_into_the_last_buffer() {
    let (_vfs, t) = setup();
    let [r, w] = t.pipe2(NB).expect("pipe2");
    // 64 KiB of one-byte writes fit in 16 page buffers only if they merge.
    for i in 0..65536 {
        assert_eq!(t.write(w, b"x"), Ok(1), "write {i}");
    }
    assert_eq!(t.write(w, b"x"), Err(Errno::EAGAIN));
    assert_eq!(t.fionread(r), Ok(65536));
}

#[test]
fn a_pipe_buf_write_that_does_not_fit_whole_is_eagain_and_larger_ones_are_partial() {
    let (_vfs, t) = setup();
    let [r, w] = t.pipe2(NB).expect("pipe2");
    // 16 writes of 4000 bytes: each takes a buffer of its own (4000 + 4000 > 4096).
    for _ in 0..16 {
        assert_eq!(t.write(w, &[1u8; 4000]), Ok(4000));
    }
    assert_eq!(
        t.write(w, &[2u8; 100]),
        Err(Errno::EAGAIN),
        "atomic: whole or not"
    );
    assert_eq!(
        t.write(w, &[2u8; 96]),
        Ok(96),
        "merges into the last buffer"
    );
    assert_eq!(t.write(w, &[2u8; 1]), Err(Errno::EAGAIN));
    // Free one buffer; a write larger than PIPE_BUF then writes what fits.
    let mut buf = vec![0u8; 4000];
    assert_eq!(t.read(r, &mut buf), Ok(4000));
    assert_eq!(t.write(w, &[3u8; 10000]), Ok(4096), "partial");
    assert_eq!(t.fionread(r), Ok(15 * 4000 + 96 + 4096));
}

#[test]
fn a_read_returns_what_is_there_across_buffers() {
    let (_vfs, t) = setup();
    let [r, w] = t.pipe2(NB).expect("pipe2");
    t.write(w, &[1u8; 4000]).expect("write");
    t.write(w, &[2u8; 4000]).expect("write");
    let mut buf = vec![0u8; 10000];
    assert_eq!(t.read(r, &mut buf), Ok(8000));
    assert!(buf[..4000].iter().all(|&b| b == 1));
    assert!(buf[4000..8000].iter().all(|&b| b == 2));
}

#[test]
fn o_direct_packets() {
    let (_vfs, t) = setup();
    let [r, w] = t.pipe2(NB | OpenFlags::DIRECT).expect("pipe2");
    t.write(w, b"abc").expect("write");
    t.write(w, b"de").expect("write");
    let mut buf = [0u8; 100];
    assert_eq!(t.read(r, &mut buf), Ok(3), "one packet per read");
    assert_eq!(&buf[..3], b"abc");
    assert_eq!(t.read(r, &mut buf), Ok(2));
    t.write(w, b"hello").expect("write");
    t.write(w, b"world").expect("write");
    assert_eq!(
        t.read(r, &mut buf[..2]),
        Ok(2),
        "the rest of the packet goes"
    );
    assert_eq!(&buf[..2], b"he");
    assert_eq!(t.read(r, &mut buf), Ok(5));
    assert_eq!(&buf[..5], b"world");
    // Writes larger than a page are cut into page-sized packets.
    t.write(w, &[7u8; 5000]).expect("write");
    let mut big = vec![0u8; 8192];
    assert_eq!(t.read(r, &mut big), Ok(4096));
    assert_eq!(t.read(r, &mut big), Ok(904));
    assert_eq!(t.read(r, &mut big), Err(Errno::EAGAIN));
    // F_SETFL takes O_DIRECT off: writes merge again, reads take everything.
    t.fcntl(w, FcntlCmd::SetFl(NB)).expect("setfl");
    t.write(w, b"ab").expect("write");
    t.write(w, b"cd").expect("write");
    assert_eq!(t.read(r, &mut buf), Ok(4));
}

#[test]
fn f_setpipe_sz_rounds_limits_and_refuses_below_the_contents() {
    let (vfs, root) = setup();
    let t = vfs.task(Cred::user(1000, 1000, &[]));
    let [r, w] = t.pipe2(NB).expect("pipe2");
    assert_eq!(pipe_sz(&t, r), 65536);
    assert_eq!(
        t.fcntl(w, FcntlCmd::SetPipeSz(0)),
        Ok(4096),
        "at least a page"
    );
    assert_eq!(pipe_sz(&t, r), 4096, "one pipe, both ends");
    assert_eq!(t.fcntl(w, FcntlCmd::SetPipeSz(5000)), Ok(8192));
    assert_eq!(t.fcntl(w, FcntlCmd::SetPipeSz(65537)), Ok(131072));
    assert_eq!(t.fcntl(w, FcntlCmd::SetPipeSz(3 << 16)), Ok(262144));
    assert_eq!(t.fcntl(r, FcntlCmd::SetPipeSz(1 << 20)), Ok(1 << 20));
    assert_eq!(
        t.fcntl(r, FcntlCmd::SetPipeSz((1 << 20) + 1)),
        Err(Errno::EPERM)
    );
    assert_eq!(
        t.fcntl(r, FcntlCmd::SetPipeSz((1 << 31) + 1)),
        Err(Errno::EINVAL)
    );
    assert_eq!(pipe_sz(&t, r), 1 << 20, "unchanged by the refusals");
    // CAP_SYS_RESOURCE goes past the maximum.
    let [r2, _w2] = root.pipe2(NB).expect("pipe2");
    assert_eq!(root.fcntl(r2, FcntlCmd::SetPipeSz(4 << 20)), Ok(4 << 20));
    let mut c = root.cred();
    c.caps.remove(Capabilities::SYS_RESOURCE);
    root.set_cred(c);
    assert_eq!(
        root.fcntl(r2, FcntlCmd::SetPipeSz(8 << 20)),
        Err(Errno::EPERM)
    );
    // EBUSY below the buffers held.
    t.fcntl(w, FcntlCmd::SetPipeSz(65536)).expect("set");
    for _ in 0..3 {
        t.write(w, &[0u8; 4096]).expect("write");
    }
    assert_eq!(t.fcntl(w, FcntlCmd::SetPipeSz(8192)), Err(Errno::EBUSY));
    assert_eq!(t.fcntl(w, FcntlCmd::SetPipeSz(16384)), Ok(16384));
    assert_eq!(t.write(w, &[0u8; 10000]), Ok(4096), "one buffer was free");
    // Not a pipe.
    let fd = root
        .openat(AT_FDCWD, "/f", OpenFlags::CREAT | OpenFlags::RDWR, 0o644)
        .expect("create");
    assert_eq!(root.fcntl(fd, FcntlCmd::GetPipeSz), Err(Errno::EBADF));
    assert_eq!(root.fcntl(fd, FcntlCmd::SetPipeSz(4096)), Err(Errno::EBADF));
}

#[test]
fn fionread() {
    let (_vfs, t) = setup();
    let [r, w] = t.pipe2(NB).expect("pipe2");
    assert_eq!(t.fionread(r), Ok(0));
    t.write(w, b"0123456789").expect("write");
    assert_eq!(t.fionread(r), Ok(10));
    assert_eq!(t.fionread(w), Ok(10), "either end");
    t.read(r, &mut [0u8; 3]).expect("read");
    assert_eq!(t.fionread(r), Ok(7));
    let fd = t
        .openat(AT_FDCWD, "/f", OpenFlags::CREAT | OpenFlags::RDWR, 0o644)
        .expect("create");
    t.write(fd, &[0u8; 100]).expect("write");
    t.lseek(fd, 30, Whence::SET).expect("lseek");
    assert_eq!(
        t.fionread(fd),
        Ok(70),
        "a regular file: size minus position"
    );
    let d = t
        .openat(AT_FDCWD, "/", OpenFlags::RDONLY, 0)
        .expect("open /");
    assert_eq!(t.fionread(d), Err(Errno::ENOTTY));
    assert_eq!(t.fionread(99), Err(Errno::EBADF));
}

#[test]
fn no_positions_on_pipes() {
    let (_vfs, t) = setup();
    let [r, w] = t.pipe2(NB).expect("pipe2");
    t.write(w, b"abc").expect("write");
    assert_eq!(t.lseek(r, 0, Whence::SET), Err(Errno::ESPIPE));
    assert_eq!(t.lseek(w, 0, Whence::CUR), Err(Errno::ESPIPE));
    assert_eq!(t.pread(r, &mut [0u8; 2], 0), Err(Errno::ESPIPE));
    assert_eq!(t.pwrite(w, b"x", 0), Err(Errno::ESPIPE));
    assert_eq!(
        t.pwrite(r, b"x", 0),
        Err(Errno::ESPIPE),
        "before the access mode"
    );
    assert_eq!(t.pread(w, &mut [0u8; 2], 0), Err(Errno::ESPIPE));
    assert_eq!(t.fsync(w), Err(Errno::EINVAL));
    assert_eq!(t.fionread(r), Ok(3), "nothing moved");
}

#[test]
fn a_blocked_read_waits_for_a_writer_and_takes_what_is_there() {
    let (_vfs, t) = setup();
    let [r, w] = t.pipe2(OpenFlags::empty()).expect("pipe2");
    let (rx, h) = spawn(&t, move |t| {
        let mut buf = [0u8; 100];
        let n = t.read(r, &mut buf);
        n.map(|n| buf[..n].to_vec())
    });
    wait_until(|| t.pipe_waiters(r).expect("waiters") == 1);
    t.write(w, b"abc").expect("write");
    assert_eq!(rx.recv_timeout(TIMEOUT), Ok(Ok(b"abc".to_vec())));
    h.join().expect("reader");
}

#[test]
fn a_blocked_read_sees_eof_when_the_last_writer_closes() {
    let (_vfs, t) = setup();
    let [r, w] = t.pipe2(OpenFlags::empty()).expect("pipe2");
    let (rx, h) = spawn(&t, move |t| t.read(r, &mut [0u8; 10]));
    wait_until(|| t.pipe_waiters(r).expect("waiters") == 1);
    t.close(w).expect("close");
    assert_eq!(rx.recv_timeout(TIMEOUT), Ok(Ok(0)));
    h.join().expect("reader");
}

#[test]
fn a_blocked_write_waits_for_room_and_gets_epipe_when_the_reader_goes() {
    let (_vfs, t) = setup();
    let [r, w] = t.pipe2(OpenFlags::empty()).expect("pipe2");
    t.write(w, &vec![0u8; 65536]).expect("fill");
    let (rx, h) = spawn(&t, move |t| t.write(w, b"0123456789"));
    wait_until(|| t.pipe_waiters(r).expect("waiters") == 1);
    t.read(r, &mut vec![0u8; 4096]).expect("read");
    assert_eq!(rx.recv_timeout(TIMEOUT), Ok(Ok(10)));
    h.join().expect("writer");
    // Full again; now the reader closes.
    t.write(w, &vec![0u8; 4096 - 10]).expect("fill");
    let (rx, h) = spawn(&t, move |t| {
        let r = t.write(w, b"x");
        (r, t.take_sigpipe())
    });
    wait_until(|| t.pipe_waiters(w).expect("waiters") == 1);
    t.close(r).expect("close");
    assert_eq!(rx.recv_timeout(TIMEOUT), Ok((Err(Errno::EPIPE), true)));
    h.join().expect("writer");
}

#[test]
fn a_write_larger_than_the_pipe_goes_through_in_parts() {
    let (_vfs, t) = setup();
    let [r, w] = t.pipe2(OpenFlags::empty()).expect("pipe2");
    let data: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    let expect = data.clone();
    let (rx, h) = spawn(&t, move |t| t.write(w, &data));
    let mut got = Vec::new();
    let mut buf = vec![0u8; 10000];
    while got.len() < expect.len() {
        let n = t.read(r, &mut buf).expect("read");
        assert!(n > 0);
        got.extend_from_slice(&buf[..n]);
    }
    assert_eq!(rx.recv_timeout(TIMEOUT), Ok(Ok(300_000)));
    assert!(got == expect, "every byte in order");
    h.join().expect("writer");
}

#[test]
fn eintr_for_blocked_reads_and_writes() {
    let (_vfs, t) = setup();
    let [r, w] = t.pipe2(OpenFlags::empty()).expect("pipe2");
    // A blocked read that got nothing: EINTR.
    let (intr, res, h) = spawn_interruptible(&t, move |t| t.read(r, &mut [0u8; 10]));
    wait_until(|| t.pipe_waiters(r).expect("waiters") == 1);
    intr.interrupt();
    assert_eq!(res.recv_timeout(TIMEOUT), Ok(Err(Errno::EINTR)));
    h.join().expect("reader");
    // A blocked write of more than the pipe holds that wrote some: the count so far.
    let (intr, res, h) = spawn_interruptible(&t, move |t| t.write(w, &vec![0u8; 100_000]));
    wait_until(|| t.pipe_waiters(w).expect("waiters") == 1);
    intr.interrupt();
    assert_eq!(res.recv_timeout(TIMEOUT), Ok(Ok(65536)));
    h.join().expect("writer");
    assert_eq!(t.fionread(r), Ok(65536), "nothing half-transferred");
    // A pending interrupt makes the next blocking wait fail at once.
    let intr = t.interrupt_handle();
    intr.interrupt();
    assert_eq!(t.write(w, b"x"), Err(Errno::EINTR));
    assert!(!t.take_interrupt(), "consumed");
}

#[test]
fn a_pending_interrupt_fails_the_next_wait() {
    let (_vfs, t) = setup();
    let [r, _w] = t.pipe2(OpenFlags::empty()).expect("pipe2");
    let (rx, h) = spawn(&t, move |t| {
        let i = t.interrupt_handle();
        i.interrupt();
        t.read(r, &mut [0u8; 4])
    });
    assert_eq!(rx.recv_timeout(TIMEOUT), Ok(Err(Errno::EINTR)));
    h.join().expect("reader");
}

fn mkfifo(t: &Task, path: &str) {
    t.mknodat(AT_FDCWD, path, S_IFIFO | 0o666, 0)
        .expect("mkfifo");
}

#[test]
fn fifo_nonblocking_opens() {
    let (_vfs, t) = setup();
    mkfifo(&t, "/p");
    // On a thread, so that a wait where there should be none fails the test, not hangs it.
    let (rx, h) = spawn(&t, |t| t.openat(AT_FDCWD, "/p", OpenFlags::WRONLY | NB, 0));
    assert_eq!(rx.recv_timeout(TIMEOUT), Ok(Err(Errno::ENXIO)), "no reader");
    h.join().expect("opener");
    let r = t
        .openat(AT_FDCWD, "/p", OpenFlags::RDONLY | NB, 0)
        .expect("a reader opens at once");
    let mut buf = [0u8; 8];
    assert_eq!(t.read(r, &mut buf), Ok(0), "no writer: end of file");
    let w = t
        .openat(AT_FDCWD, "/p", OpenFlags::WRONLY | NB, 0)
        .expect("a reader is there");
    assert_eq!(t.read(r, &mut buf), Err(Errno::EAGAIN), "a writer, no data");
    t.write(w, b"through").expect("write");
    assert_eq!(t.fionread(r), Ok(7));
    assert_eq!(t.read(r, &mut buf), Ok(7));
    assert_eq!(&buf[..7], b"through");
    t.close(w).expect("close");
    assert_eq!(t.read(r, &mut buf), Ok(0));
    t.close(r).expect("close");
    let rw = t
        .openat(AT_FDCWD, "/p", OpenFlags::RDWR, 0)
        .expect("O_RDWR never blocks");
    t.write(rw, b"self").expect("write");
    assert_eq!(t.read(rw, &mut buf), Ok(4));
    assert_eq!(t.lseek(rw, 0, Whence::SET), Err(Errno::ESPIPE));
    assert_eq!(t.pread(rw, &mut buf, 0), Err(Errno::ESPIPE));
    let st = t.fstat(rw).expect("fstat");
    assert_eq!(st.mode & !0o7777, S_IFIFO);
    assert_eq!(st.size, 0);
    assert_eq!(
        t.openat(AT_FDCWD, "/p", OpenFlags::WRONLY | OpenFlags::DIRECT, 0),
        Err(Errno::EINVAL)
    );
    assert_eq!(t.fcntl(rw, FcntlCmd::GetPipeSz), Ok(65536));
}

#[test]
fn fifo_data_goes_with_the_last_close() {
    let (_vfs, t) = setup();
    mkfifo(&t, "/p");
    let rw = t.openat(AT_FDCWD, "/p", OpenFlags::RDWR, 0).expect("open");
    t.write(rw, b"lost").expect("write");
    t.close(rw).expect("close");
    let r = t
        .openat(AT_FDCWD, "/p", OpenFlags::RDONLY | NB, 0)
        .expect("open");
    let w = t
        .openat(AT_FDCWD, "/p", OpenFlags::WRONLY | NB, 0)
        .expect("open");
    assert_eq!(t.read(r, &mut [0u8; 8]), Err(Errno::EAGAIN), "a new pipe");
    // While one file stays open, the pipe (and its data) stays.
    t.write(w, b"kept").expect("write");
    t.close(w).expect("close");
    let w = t
        .openat(AT_FDCWD, "/p", OpenFlags::WRONLY | NB, 0)
        .expect("open");
    assert_eq!(t.read(r, &mut [0u8; 8]), Ok(4));
    t.close(w).expect("close");
    t.close(r).expect("close");
    // An unlinked FIFO still open works.
    let rw = t.openat(AT_FDCWD, "/p", OpenFlags::RDWR, 0).expect("open");
    t.unlinkat(AT_FDCWD, "/p", uvfs::abi::AtFlags::empty())
        .expect("unlink");
    t.write(rw, b"x").expect("write");
    assert_eq!(t.read(rw, &mut [0u8; 8]), Ok(1));
}

#[test]
fn fifo_open_waits_for_the_other_side() {
    let (_vfs, t) = setup();
    mkfifo(&t, "/p");
    // A reader waits for a writer.
    let (rx, h) = spawn(&t, |t| t.openat(AT_FDCWD, "/p", OpenFlags::RDONLY, 0));
    wait_until(|| t.fifo_waiters_at("/p").expect("waiters") == 1);
    assert!(rx.try_recv().is_err(), "still waiting");
    let w = t
        .openat(AT_FDCWD, "/p", OpenFlags::WRONLY, 0)
        .expect("a reader is there");
    let r = rx.recv_timeout(TIMEOUT).expect("opened").expect("open");
    h.join().expect("reader");
    t.write(w, b"hi").expect("write");
    let mut buf = [0u8; 4];
    assert_eq!(t.read(r, &mut buf), Ok(2));
    t.close(w).expect("close");
    t.close(r).expect("close");
    // A writer waits for a reader.
    let (rx, h) = spawn(&t, |t| t.openat(AT_FDCWD, "/p", OpenFlags::WRONLY, 0));
    wait_until(|| t.fifo_waiters_at("/p").expect("waiters") == 1);
    let r = t
        .openat(AT_FDCWD, "/p", OpenFlags::RDONLY | NB, 0)
        .expect("open");
    let w = rx.recv_timeout(TIMEOUT).expect("opened").expect("open");
    h.join().expect("writer");
    t.write(w, b"yo").expect("write");
    assert_eq!(t.read(r, &mut buf), Ok(2));
    t.close(w).expect("close");
    t.close(r).expect("close");
    // A reader also opens when an O_RDWR opener comes.
    let (rx, h) = spawn(&t, |t| t.openat(AT_FDCWD, "/p", OpenFlags::RDONLY, 0));
    wait_until(|| t.fifo_waiters_at("/p").expect("waiters") == 1);
    let rw = t.openat(AT_FDCWD, "/p", OpenFlags::RDWR, 0).expect("open");
    rx.recv_timeout(TIMEOUT).expect("opened").expect("open");
    h.join().expect("reader");
    t.close(rw).expect("close");
}

#[test]
fn fifo_open_is_interruptible() {
    let (_vfs, t) = setup();
    mkfifo(&t, "/p");
    let (intr, res, h) =
        spawn_interruptible(&t, |t| t.openat(AT_FDCWD, "/p", OpenFlags::WRONLY, 0));
    wait_until(|| t.fifo_waiters_at("/p").expect("waiters") == 1);
    intr.interrupt();
    assert_eq!(res.recv_timeout(TIMEOUT), Ok(Err(Errno::EINTR)));
    h.join().expect("opener");
    // The interrupted writer was not counted: a non-blocking reader sees no writer.
    let r = t
        .openat(AT_FDCWD, "/p", OpenFlags::RDONLY | NB, 0)
        .expect("open");
    assert_eq!(t.read(r, &mut [0u8; 4]), Ok(0));
    assert_eq!(t.fifo_waiters_at("/p"), Ok(0));
    t.close(r).expect("close");
    // The same for an interrupted reader: a non-blocking writer finds no reader (ENXIO).
    let (intr, res, h) =
        spawn_interruptible(&t, |t| t.openat(AT_FDCWD, "/p", OpenFlags::RDONLY, 0));
    wait_until(|| t.fifo_waiters_at("/p").expect("waiters") == 1);
    intr.interrupt();
    assert_eq!(res.recv_timeout(TIMEOUT), Ok(Err(Errno::EINTR)));
    h.join().expect("opener");
    assert_eq!(
        t.openat(AT_FDCWD, "/p", OpenFlags::WRONLY | NB, 0),
        Err(Errno::ENXIO)
    );
}

fn tick() {
    // Past a tick of the coarse clock, so that a stamp would differ.
    thread::sleep(Duration::from_millis(30));
}

#[test]
fn anonymous_pipes_do_no_timestamp_work() {
    let (_vfs, t) = setup();
    let [r, w] = t.pipe2(NB).expect("pipe2");
    let before = t.fstat(r).expect("fstat");
    tick();
    t.write(w, b"abc").expect("write");
    t.read(r, &mut [0u8; 8]).expect("read");
    t.write(w, &[0u8; 10000]).expect("write");
    t.read(r, &mut [0u8; 10000]).expect("read");
    let after = t.fstat(r).expect("fstat");
    assert_eq!(
        (before.atime, before.mtime, before.ctime),
        (after.atime, after.mtime, after.ctime)
    );
}

#[test]
fn fifos_keep_their_timestamps_rules() {
    let (_vfs, t) = setup();
    mkfifo(&t, "/p");
    let rw = t.openat(AT_FDCWD, "/p", OpenFlags::RDWR, 0).expect("open");
    let s0 = t.fstat(rw).expect("fstat");
    tick();
    t.write(rw, b"abc").expect("write");
    let s1 = t.fstat(rw).expect("fstat");
    assert!(
        s1.mtime > s0.mtime && s1.ctime > s0.ctime,
        "write stamps mtime, ctime"
    );
    assert_eq!(s1.atime, s0.atime);
    tick();
    t.read(rw, &mut [0u8; 8]).expect("read");
    let s2 = t.fstat(rw).expect("fstat");
    assert!(
        s2.atime > s1.atime,
        "read updates atime (relatime: atime <= mtime)"
    );
    assert_eq!((s2.mtime, s2.ctime), (s1.mtime, s1.ctime));
    // Nothing moved, nothing stamped.
    tick();
    assert_eq!(t.write(rw, b""), Ok(0));
    let nb = t
        .openat(AT_FDCWD, "/p", OpenFlags::RDONLY | NB, 0)
        .expect("open");
    assert_eq!(t.read(nb, &mut [0u8; 8]), Err(Errno::EAGAIN));
    let s3 = t.fstat(rw).expect("fstat");
    assert_eq!(
        (s3.atime, s3.mtime, s3.ctime),
        (s2.atime, s2.mtime, s2.ctime)
    );
}

/// A self-describing record of `PIPE_BUF` bytes: writer, sequence number, checksum of the
/// payload.
const REC: usize = 4096;

fn record(writer: u32, seq: u32) -> Vec<u8> {
    let mut r = vec![0u8; REC];
    r[0..4].copy_from_slice(&writer.to_le_bytes());
    r[4..8].copy_from_slice(&seq.to_le_bytes());
    let mut x = writer.wrapping_mul(2_654_435_761) ^ seq;
    for b in &mut r[16..] {
        x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
        *b = (x >> 16) as u8;
    }
    let sum = checksum(&r[16..]);
    r[8..16].copy_from_slice(&sum.to_le_bytes());
    r
}

fn checksum(data: &[u8]) -> u64 {
    data.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
    })
}

/// Checks one record whole; returns (writer, seq).
fn check_record(r: &[u8]) -> (u32, u32) {
    assert_eq!(r.len(), REC, "a read of a record took a whole record");
    let writer = u32::from_le_bytes(r[0..4].try_into().expect("4 bytes"));
    let seq = u32::from_le_bytes(r[4..8].try_into().expect("4 bytes"));
    let sum = u64::from_le_bytes(r[8..16].try_into().expect("8 bytes"));
    assert_eq!(checksum(&r[16..]), sum, "record {writer}/{seq} whole");
    assert!(
        r == record(writer, seq).as_slice(),
        "record {writer}/{seq} intact"
    );
    (writer, seq)
}

#[test]
fn stress_pipe_buf_records_from_many_writers_to_many_readers() {
    const WRITERS: u32 = 4;
    const READERS: usize = 3;
    const PER_WRITER: u32 = 400;
    let (_vfs, t) = setup();
    let [r, w] = t.pipe2(OpenFlags::empty()).expect("pipe2");
    // Every thread reports through a channel that the test waits on with a timeout, so a
    // lost wake-up or a missing end of file fails the test instead of hanging it.
    let (wtx, wrx) = mpsc::channel();
    let mut handles = Vec::new();
    for id in 0..WRITERS {
        let t2 = t.clone_thread();
        let wtx = wtx.clone();
        handles.push(thread::spawn(move || {
            for seq in 0..PER_WRITER {
                assert_eq!(t2.write(w, &record(id, seq)), Ok(REC));
            }
            wtx.send(id).expect("send");
        }));
    }
    let (rtx, rrx) = mpsc::channel();
    for _ in 0..READERS {
        let t2 = t.clone_thread();
        let rtx = rtx.clone();
        handles.push(thread::spawn(move || {
            let mut seen = Vec::new();
            let mut buf = vec![0u8; REC];
            loop {
                let n = t2.read(r, &mut buf).expect("read");
                if n == 0 {
                    break;
                }
                seen.push(check_record(&buf[..n]));
            }
            rtx.send(seen).expect("send");
        }));
    }
    for _ in 0..WRITERS {
        // A panicking writer drops its sender unsent: the wait then times out or fails.
        wrx.recv_timeout(TIMEOUT).expect("a writer finished");
    }
    // The last writer goes: the readers drain the pipe and see end of file.
    t.close(w).expect("close");
    let mut all = Vec::new();
    for _ in 0..READERS {
        all.extend(rrx.recv_timeout(TIMEOUT).expect("a reader finished"));
    }
    for h in handles {
        h.join().expect("a thread panicked");
    }
    assert_eq!(
        all.len(),
        (WRITERS * PER_WRITER) as usize,
        "records checked"
    );
    all.sort_unstable();
    all.dedup();
    assert_eq!(
        all.len(),
        (WRITERS * PER_WRITER) as usize,
        "none duplicated"
    );
    for id in 0..WRITERS {
        for seq in 0..PER_WRITER {
            assert!(
                all.binary_search(&(id, seq)).is_ok(),
                "record {id}/{seq} lost"
            );
        }
    }
}
