//! The loop of every testcase, written once over [`Calls`]: the host implements it with real
//! system calls, uvfs with a `Task`. Both columns therefore run the very same sequence of calls.
//!
//! Nothing here allocates or takes a lock of this program: the host's processes mode runs it in
//! a child forked from a multi-threaded process (`host_sys.rs`), where only raw system calls
//! are safe. Buffers live on the stack; results go to the copy's [`Slot`] with plain stores.

use std::ffi::CStr;

use super::board::{Board, Fail, Slot};
use super::testcase::{write_byte, Target, Testcase, PAGE_BYTES, POLL2_FDS, WALK_BYTES};

/// Bytes of one transfer.
const PAGE: usize = PAGE_BYTES as usize;

/// How [`Calls::open`] opens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpenKind {
    /// `O_RDWR`.
    ReadWrite,
    /// `O_RDWR | O_CREAT`, mode 0600.
    CreateReadWrite,
}

/// What [`Calls::lock`] asks for on byte 0 of a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockKind {
    /// `F_WRLCK`.
    Write,
    /// `F_UNLCK`.
    Unlock,
}

/// The calls the testcases make, on one implementation. Paths are relative to the column's
/// directory. Errors are errnos, as [`Fail::Errno`].
pub trait Calls {
    /// An open file descriptor.
    type Fd;
    /// A running `context_switch1` partner.
    type Echo;
    /// The `pollfd` array of `poll1`/`poll2`, on the stack (empty by default).
    type PollSet: Default;
    /// `openat(dir, path, kind)`.
    fn open(&self, path: &CStr, kind: OpenKind) -> Result<Self::Fd, Fail>;
    /// `close(fd)`.
    fn close(&self, fd: Self::Fd) -> Result<(), Fail>;
    /// `dup(fd)`.
    fn dup(&self, fd: &Self::Fd) -> Result<Self::Fd, Fail>;
    /// `unlinkat(dir, path, 0)`.
    fn unlink(&self, path: &CStr) -> Result<(), Fail>;
    /// `lseek(fd, 0, SEEK_SET)`.
    fn rewind(&self, fd: &Self::Fd) -> Result<(), Fail>;
    /// `lseek(fd, 0, SEEK_CUR)`.
    fn position(&self, fd: &Self::Fd) -> Result<u64, Fail>;
    /// `pread(fd, buf, offset)`.
    fn pread(&self, fd: &Self::Fd, buf: &mut [u8], offset: u64) -> Result<usize, Fail>;
    /// `pwrite(fd, buf, offset)`.
    fn pwrite(&self, fd: &Self::Fd, buf: &[u8], offset: u64) -> Result<usize, Fail>;
    /// `read(fd, buf)`.
    fn read(&self, fd: &Self::Fd, buf: &mut [u8]) -> Result<usize, Fail>;
    /// `write(fd, buf)`.
    fn write(&self, fd: &Self::Fd, buf: &[u8]) -> Result<usize, Fail>;
    /// `fallocate(fd, 0, offset, len)`.
    fn fallocate(&self, fd: &Self::Fd, offset: u64, len: u64) -> Result<(), Fail>;
    /// `ftruncate(fd, len)`.
    fn ftruncate(&self, fd: &Self::Fd, len: u64) -> Result<(), Fail>;
    /// The fd's number.
    fn raw(&self, fd: &Self::Fd) -> i32;
    /// `fstat(fd).st_ino` of an fd number, which may belong to another copy (the probe).
    fn ino_of_raw(&self, fd: i32) -> Result<u64, Fail>;
    /// The process id this copy runs in.
    fn pid(&self) -> u32;
    /// `pipe2(0)`: the read end, then the write end.
    fn pipe(&self) -> Result<(Self::Fd, Self::Fd), Fail>;
    /// `fcntl(fd, F_SETLKW, {kind, SEEK_SET, start 0, len 1})`.
    fn lock(&self, fd: &Self::Fd, kind: LockKind) -> Result<(), Fail>;
    /// Starts `context_switch1`'s partner: a task of the copy's kind (a thread sharing the
    /// copy's fd table in threads mode; a forked one with a copy of it in processes mode)
    /// that reads 1 byte from `from` and writes it to `to` until `from` reaches its end, then
    /// closes both. `from` and `to` are the partner's from now on; `keep`, the copy's ends of
    /// the same pipes, are closed in a partner with a table of its own, so that the copy's
    /// close of its write end is the partner's end of file.
    fn start_echo(
        &self,
        from: Self::Fd,
        to: Self::Fd,
        keep: [&Self::Fd; 2],
    ) -> Result<Self::Echo, Fail>;
    /// Waits for the partner to end; its failure if it failed.
    fn join_echo(&self, echo: Self::Echo) -> Result<(), Fail>;
    /// Adds `fd`, asking for `POLLOUT`, to `set` (at most [`POLL2_FDS`]).
    fn poll_add(&self, set: &mut Self::PollSet, fd: &Self::Fd);
    /// `poll(set, timeout 0)`: the number of fds with an event.
    fn poll(&self, set: &mut Self::PollSet) -> Result<usize, Fail>;
    /// `eventfd2(0, 0)`.
    fn eventfd(&self) -> Result<Self::Fd, Fail>;
}

/// What one copy of a run does.
#[derive(Clone, Copy, Debug)]
pub struct CopyWork<'a> {
    /// The testcase.
    pub testcase: Testcase,
    /// This copy's index.
    pub copy: usize,
    /// Its file or name ([`Testcase::c_path`]).
    pub path: &'a CStr,
    /// Iterations to run at most (the copy stops earlier when another has run as many).
    pub ops: u64,
}

/// One copy of a run: opens what it holds, waits at the board's gate, runs `w.ops` iterations
/// or until another copy has run as many, and reports to its slot (status, iterations done,
/// its fd's final position, its buffer's first byte).
pub fn run_copy<C: Calls>(c: &C, w: &CopyWork<'_>, board: &Board) {
    let Some(slot) = board.slot(w.copy) else {
        return;
    };
    slot.set_pid(c.pid());
    if w.testcase.makes_own_fds() {
        return run_anon_copy(c, w, board, slot);
    }
    if matches!(w.testcase, Testcase::Poll1 | Testcase::Poll2) {
        return run_poll_copy(c, w, board, slot);
    }
    let prepared = prelude(c, w);
    // The buffer is written before the start: in a forked copy, its stack page is copied then,
    // not inside the measured loop.
    let mut buf = [if reads(w.testcase) {
        0
    } else {
        write_byte(w.copy)
    }; PAGE];
    let go = board.arrive_and_wait();
    let fd = match prepared {
        Ok(fd) => fd,
        Err(e) => return slot.set_status(Err(e)),
    };
    if !go {
        if let Some(fd) = fd {
            let _ = c.close(fd);
        }
        return slot.set_status(Err(Fail::Aborted));
    }
    let mut q = Quota {
        left: w.ops,
        done: 0,
        board,
    };
    match fd {
        None => {
            let r = loop_on_path(c, w, &mut q);
            slot.loop_ended();
            slot.finish(r, q.done, None, None);
        }
        Some(fd) => {
            let r = loop_on_fd(c, w, &mut q, &fd, &mut buf);
            slot.loop_ended();
            let position = c.position(&fd).ok();
            let closed = c.close(fd);
            let last_byte = reads(w.testcase).then_some(buf[0]);
            slot.finish(r.and(closed), q.done, position, last_byte);
        }
    }
}

/// The pipes a `pipe1` or `context_switch1` copy holds through its loop: the end it writes,
/// the end it reads, and `context_switch1`'s partner.
struct PipeEnds<C: Calls> {
    write: C::Fd,
    read: Option<C::Fd>,
    echo: Option<C::Echo>,
}

/// Makes the pipes of a pipe testcase's copy (and starts `context_switch1`'s partner), or the
/// eventfd of `eventfd1` (its `read` end then is the same fd, `None`), closing what it made if
/// a later step fails.
fn pipe_prelude<C: Calls>(c: &C, t: Testcase) -> Result<PipeEnds<C>, Fail> {
    if t == Testcase::Eventfd1 {
        return Ok(PipeEnds {
            write: c.eventfd()?,
            read: None,
            echo: None,
        });
    }
    let (read, write) = c.pipe()?;
    if t != Testcase::ContextSwitch1 {
        return Ok(PipeEnds {
            write,
            read: Some(read),
            echo: None,
        });
    }
    // Pipe A carries the copy's byte to the partner, pipe B brings it back.
    let (a_read, a_write) = (read, write);
    let (b_read, b_write) = match c.pipe() {
        Ok(p) => p,
        Err(e) => {
            let _ = c.close(a_read);
            let _ = c.close(a_write);
            return Err(e);
        }
    };
    match c.start_echo(a_read, b_write, [&a_write, &b_read]) {
        Ok(echo) => Ok(PipeEnds {
            write: a_write,
            read: Some(b_read),
            echo: Some(echo),
        }),
        Err(e) => {
            let _ = c.close(a_write);
            let _ = c.close(b_read);
            Err(e)
        }
    }
}

/// One copy of `pipe1`, `context_switch1` or `eventfd1`: makes its pipes (and partner) or
/// eventfd before the gate, then writes 1 byte and reads 1 byte back per iteration (eventfd:
/// 8 bytes, the value 1); reports the first byte of the last read (its own [`write_byte`], 1
/// for an eventfd, or 0 if it read none), no position.
fn run_anon_copy<C: Calls>(c: &C, w: &CopyWork<'_>, board: &Board, slot: &Slot) {
    let prepared = pipe_prelude(c, w.testcase);
    let (out, mut back) = if w.testcase == Testcase::Eventfd1 {
        (1u64.to_ne_bytes(), [0u8; 8])
    } else {
        ([write_byte(w.copy); 8], [0u8; 8])
    };
    let size = if w.testcase == Testcase::Eventfd1 {
        8
    } else {
        1
    };
    let go = board.arrive_and_wait();
    let ends = match prepared {
        Ok(ends) => ends,
        Err(e) => return slot.set_status(Err(e)),
    };
    let mut q = Quota {
        left: w.ops,
        done: 0,
        board,
    };
    let read_end = ends.read.as_ref().unwrap_or(&ends.write);
    let r = if go {
        (|| {
            while q.next() {
                whole(c.write(&ends.write, &out[..size])?, size)?;
                whole(c.read(read_end, &mut back[..size])?, size)?;
            }
            Ok(())
        })()
    } else {
        Err(Fail::Aborted)
    };
    slot.loop_ended();
    // Closing the write end first ends the partner's loop; it answers with its count.
    let (closed, echoed) = match ends.read {
        Some(read) => {
            let closed = c.close(ends.write);
            let echoed = match (&ends.echo, &r) {
                (Some(_), Ok(())) => check_echoed(c, &read, q.done),
                _ => Ok(()),
            };
            (closed.and(c.close(read)), echoed)
        }
        None => (c.close(ends.write), Ok(())),
    };
    let joined = ends.echo.map_or(Ok(()), |e| c.join_echo(e));
    slot.finish(
        r.and(echoed).and(closed).and(joined),
        q.done,
        None,
        Some(back[0]),
    );
}

/// One byte moved, or [`Fail::Short`].
fn one_byte(n: usize) -> Result<(), Fail> {
    whole(n, 1)
}

/// `size` bytes moved, or [`Fail::Short`].
fn whole(n: usize, size: usize) -> Result<(), Fail> {
    if n == size {
        Ok(())
    } else {
        Err(Fail::Short(n))
    }
}

/// One copy of `poll1` or `poll2`: opens its own file (`poll2`: [`POLL2_FDS`] times) before the
/// gate, then polls the fds for `POLLOUT` with timeout 0 per iteration, each of which must
/// answer (a regular file is always writable); reports its first fd's position (0), no byte.
fn run_poll_copy<C: Calls>(c: &C, w: &CopyWork<'_>, board: &Board, slot: &Slot) {
    let n = if w.testcase == Testcase::Poll2 {
        POLL2_FDS
    } else {
        1
    };
    let mut fds: [Option<C::Fd>; POLL2_FDS] = std::array::from_fn(|_| None);
    let mut set = C::PollSet::default();
    let mut prepared = Ok(());
    for slot_fd in fds.iter_mut().take(n) {
        match c.open(w.path, OpenKind::ReadWrite) {
            Ok(fd) => {
                c.poll_add(&mut set, &fd);
                *slot_fd = Some(fd);
            }
            Err(e) => {
                prepared = Err(e);
                break;
            }
        }
    }
    let go = board.arrive_and_wait();
    let mut q = Quota {
        left: w.ops,
        done: 0,
        board,
    };
    let r = match (prepared, go) {
        (Err(e), _) => Err(e),
        (Ok(()), false) => Err(Fail::Aborted),
        (Ok(()), true) => (|| {
            while q.next() {
                let ready = c.poll(&mut set)?;
                if ready != n {
                    return Err(Fail::Short(ready));
                }
            }
            Ok(())
        })(),
    };
    slot.loop_ended();
    let position = fds[0].as_ref().and_then(|fd| c.position(fd).ok());
    let mut closed = Ok(());
    for fd in fds.into_iter().flatten() {
        closed = closed.and(c.close(fd));
    }
    slot.finish(r.and(closed), q.done, position, None);
}

/// `context_switch1`'s partner loop over any [`Calls`]: echoes 1 byte at a time from `from` to
/// `to` until `from` reaches its end, then writes the count of bytes it echoed (8 bytes,
/// native order) to `to`, which the copy checks against its iterations.
///
/// # Errors
/// A call failed or moved no byte.
pub fn echo_loop<C: Calls>(c: &C, from: &C::Fd, to: &C::Fd) -> Result<(), Fail> {
    let mut b = [0u8; 1];
    let mut echoed = 0u64;
    loop {
        if c.read(from, &mut b)? == 0 {
            break;
        }
        one_byte(c.write(to, &b)?)?;
        echoed += 1;
    }
    let count = echoed.to_ne_bytes();
    let n = c.write(to, &count)?;
    if n != count.len() {
        return Err(Fail::Short(n));
    }
    Ok(())
}

/// After a `context_switch1` copy closed its write end: reads the count its partner echoed and
/// checks it against the copy's iterations.
fn check_echoed<C: Calls>(c: &C, read: &C::Fd, done: u64) -> Result<(), Fail> {
    let mut count = [0u8; 8];
    let mut got = 0;
    while got < count.len() {
        let n = c.read(read, &mut count[got..])?;
        if n == 0 {
            return Err(Fail::Short(got));
        }
        got += n;
    }
    let echoed = u64::from_ne_bytes(count);
    if echoed != done {
        return Err(Fail::Short(usize::try_from(echoed).unwrap_or(usize::MAX)));
    }
    Ok(())
}

/// A copy's iterations: at most its quota, `CopyWork::ops`, and none once another copy has
/// completed its own ([`Board::stop_all`]), so that the sample ends while every copy still runs.
struct Quota<'b> {
    left: u64,
    done: u64,
    board: &'b Board,
}

impl Quota<'_> {
    /// Whether to run one more iteration, counted as done: the loop completes it or the run
    /// fails. The first copy to use up its quota stops the others.
    #[inline]
    fn next(&mut self) -> bool {
        if self.left == 0 {
            self.board.stop_all();
            return false;
        }
        if self.board.should_stop() {
            return false;
        }
        self.left -= 1;
        self.done += 1;
        true
    }
}

/// True for the testcases whose loop reads into the buffer.
fn reads(t: Testcase) -> bool {
    matches!(
        t,
        Testcase::Pread1
            | Testcase::Pread2
            | Testcase::Pread3
            | Testcase::Read1
            | Testcase::Read2
            | Testcase::Readseek1
    )
}

/// Opens the fd a copy holds through its loop, if its testcase holds one.
fn prelude<C: Calls>(c: &C, w: &CopyWork<'_>) -> Result<Option<C::Fd>, Fail> {
    if !w.testcase.holds_fd() {
        return Ok(None);
    }
    if w.testcase.target() == Target::Unlinked {
        let fd = c.open(w.path, OpenKind::CreateReadWrite)?;
        c.unlink(w.path)?;
        return Ok(Some(fd));
    }
    c.open(w.path, OpenKind::ReadWrite).map(Some)
}

/// A whole page, or [`Fail::Short`].
fn page(n: usize) -> Result<(), Fail> {
    if n == PAGE {
        Ok(())
    } else {
        Err(Fail::Short(n))
    }
}

/// open*, unlink*: the loop opens (and creates, and unlinks) by name.
fn loop_on_path<C: Calls>(c: &C, w: &CopyWork<'_>, q: &mut Quota<'_>) -> Result<(), Fail> {
    match w.testcase {
        Testcase::Unlink1 | Testcase::Unlink2 => {
            while q.next() {
                let fd = c.open(w.path, OpenKind::CreateReadWrite)?;
                c.close(fd)?;
                c.unlink(w.path)?;
            }
        }
        _ => {
            while q.next() {
                let fd = c.open(w.path, OpenKind::ReadWrite)?;
                c.close(fd)?;
            }
        }
    }
    Ok(())
}

/// Every other testcase: the loop works on the fd the copy holds.
fn loop_on_fd<C: Calls>(
    c: &C,
    w: &CopyWork<'_>,
    q: &mut Quota<'_>,
    fd: &C::Fd,
    buf: &mut [u8; PAGE],
) -> Result<(), Fail> {
    let own_page = PAGE_BYTES * w.copy as u64;
    match w.testcase {
        Testcase::Dup1 => {
            while q.next() {
                let d = c.dup(fd)?;
                c.close(d)?;
            }
        }
        Testcase::Lseek1 | Testcase::Lseek2 => {
            while q.next() {
                c.rewind(fd)?;
            }
        }
        Testcase::Pread1 | Testcase::Pread2 | Testcase::Pread3 => {
            let at = if w.testcase == Testcase::Pread3 {
                own_page
            } else {
                0
            };
            while q.next() {
                page(c.pread(fd, buf, at)?)?;
            }
        }
        Testcase::Pwrite1 | Testcase::Pwrite2 | Testcase::Pwrite3 => {
            let at = if w.testcase == Testcase::Pwrite3 {
                own_page
            } else {
                0
            };
            while q.next() {
                page(c.pwrite(fd, buf, at)?)?;
            }
        }
        Testcase::Read1 | Testcase::Read2 => {
            let mut pos = 0;
            while q.next() {
                page(c.read(fd, buf)?)?;
                pos += PAGE_BYTES;
                if pos == WALK_BYTES {
                    c.rewind(fd)?;
                    pos = 0;
                }
            }
        }
        Testcase::Write1 => {
            let mut pos = 0;
            while q.next() {
                page(c.write(fd, buf)?)?;
                pos += PAGE_BYTES;
                if pos == WALK_BYTES {
                    c.rewind(fd)?;
                    pos = 0;
                }
            }
        }
        Testcase::Readseek1 => {
            while q.next() {
                c.rewind(fd)?;
                page(c.read(fd, buf)?)?;
            }
        }
        Testcase::Writeseek1 => {
            while q.next() {
                c.rewind(fd)?;
                page(c.write(fd, buf)?)?;
            }
        }
        Testcase::Fallocate1 => {
            let mut at = 0;
            while q.next() {
                c.fallocate(fd, at, PAGE_BYTES)?;
                at += PAGE_BYTES;
                if at == WALK_BYTES {
                    c.ftruncate(fd, 0)?;
                    at = 0;
                }
            }
        }
        Testcase::Lock1 | Testcase::Lock2 => {
            while q.next() {
                c.lock(fd, LockKind::Write)?;
                c.lock(fd, LockKind::Unlock)?;
            }
        }
        Testcase::Open1
        | Testcase::Open2
        | Testcase::Open3
        | Testcase::Unlink1
        | Testcase::Unlink2 => return loop_on_path(c, w, q),
        // run_copy gives them to run_anon_copy and run_poll_copy.
        Testcase::Pipe1
        | Testcase::ContextSwitch1
        | Testcase::Eventfd1
        | Testcase::Poll1
        | Testcase::Poll2 => return Err(Fail::Aborted),
    }
    Ok(())
}

/// One copy of the fd-table probe: opens its own file `path`, records the fd number and inode
/// on the board, waits for every copy to have done so, then looks up every other copy's fd
/// number in its own table and records which of them name that copy's file (threads: all of
/// them, one shared table; processes: none, a table each). It keeps its fd open until every
/// copy has looked.
pub fn probe_copy<C: Calls>(c: &C, copy: usize, copies: usize, path: &CStr, board: &Board) {
    let Some(slot) = board.slot(copy) else {
        return;
    };
    slot.set_pid(c.pid());
    // The same start gate as a run's; an aborted start still goes through the probe's gates
    // (with a failed status), so that no copy waits for this one in vain.
    let started = board.arrive_and_wait();
    let fd = c.open(path, OpenKind::CreateReadWrite);
    let mine = fd
        .as_ref()
        .map_err(|e| *e)
        .and_then(|fd| Ok((c.raw(fd), c.ino_of_raw(c.raw(fd))?)));
    match mine {
        Ok((raw, ino)) => slot.set_probe(raw, ino),
        Err(_) => slot.set_probe(-1, 0),
    }
    // Every copy passes both gates, even a failed one, so that none waits for it in vain.
    let together = board.recorded_and_wait(copies);
    let mut seen = 0u64;
    for j in (0..copies).filter(|&j| j != copy) {
        let Some(other) = board.slot(j).map(Slot::read) else {
            continue;
        };
        if other.fd >= 0 && c.ino_of_raw(other.fd) == Ok(other.ino) {
            seen |= 1 << (j % 64);
        }
    }
    slot.set_seen(seen);
    let together = board.checked_and_wait(copies) && together;
    let closed = match fd {
        Ok(fd) => c.close(fd),
        Err(e) => Err(e),
    };
    let status = match (mine, together && started) {
        (Err(e), _) => Err(e),
        (Ok(_), false) => Err(Fail::Aborted),
        (Ok(_), true) => closed,
    };
    slot.set_status(status);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quota_ends_at_its_count_or_once_another_copy_used_its_own() {
        let board = Board::default();
        let mut first = Quota {
            left: 3,
            done: 0,
            board: &board,
        };
        let mut second = Quota {
            left: 3,
            done: 0,
            board: &board,
        };
        assert!(first.next() && first.next() && second.next() && first.next());
        assert!(!board.should_stop(), "nobody has used up a quota yet");
        assert!(!first.next(), "three iterations were the quota");
        assert!(board.should_stop(), "the first to finish stops the others");
        assert!(!second.next(), "stopped by the first");
        assert_eq!((first.done, second.done), (3, 1));
    }
}
