//! The pipe workloads, written once over [`PipeSys`] so that the host kernel and uvfs run the
//! very same sequence of calls from the same thread harness:
//!
//! - `messaging`: a port of `perf bench sched messaging --pipe` in thread mode (Linux:
//!   tools/perf/bench/sched-messaging.c, `group()`, `sender()`, `receiver()`). Each group has
//!   20 receivers, each reading its own pipe, and 20 senders, each of which writes `loops`
//!   times a 100-byte message to every receiver of its group, in receiver order. A receiver
//!   reads message by message (100 bytes, finishing a short read with another) until it has
//!   all 20 × `loops` messages. Every thread is created and waits at a gate before the clock
//!   starts; the time runs from opening the gate until the last thread was joined, as perf
//!   times from its wake-up write until its last `pthread_join()`.
//! - `pipe-pingpong`: one thread writes 1 byte into pipe A and reads 1 byte from pipe B; the
//!   other reads A and writes B.
//! - `pipe-bulk`: one thread writes 64 KiB at a time into a pipe; the other reads with a
//!   64 KiB buffer until it has every byte.
//!
//! Every run checks after the clock stopped that each reader got exactly what was written to
//! it: its byte count, and no byte left in its pipe.

use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, ensure};

use crate::params::{Messaging, BULK_WRITE_BYTES, MESSAGE_BYTES, MESSAGING_FDS};

/// Stack of each benchmark thread: perf creates its threads with a minimal stack; ours hold
/// one message or one 64 KiB buffer (on the heap) and need little.
const THREAD_STACK_BYTES: usize = 256 * 1024;

/// The calls the pipe workloads make, on one implementation.
pub trait PipeSys {
    /// An open pipe end.
    type Fd: Send + Sync;
    /// What one thread calls through (uvfs: its task; the host: nothing).
    type Thread: Send;

    /// `pipe2(0)`: the read end, then the write end.
    ///
    /// # Errors
    /// The call failed.
    fn pipe(&self) -> anyhow::Result<(Self::Fd, Self::Fd)>;

    /// A caller for one more thread, made before the clock starts (uvfs: a task sharing the
    /// fd table, as perf's threads share theirs).
    fn thread(&self) -> Self::Thread;

    /// `read(fd, buf)` through thread `t`'s caller.
    ///
    /// # Errors
    /// The call failed.
    fn read(t: &Self::Thread, fd: &Self::Fd, buf: &mut [u8]) -> anyhow::Result<usize>;

    /// `write(fd, buf)` through thread `t`'s caller.
    ///
    /// # Errors
    /// The call failed.
    fn write(t: &Self::Thread, fd: &Self::Fd, buf: &[u8]) -> anyhow::Result<usize>;

    /// `ioctl(fd, FIONREAD)`: bytes waiting in the pipe.
    ///
    /// # Errors
    /// The call failed.
    fn unread(&self, fd: &Self::Fd) -> anyhow::Result<usize>;

    /// `close(fd)`.
    ///
    /// # Errors
    /// The call failed.
    fn close(&self, fd: Self::Fd) -> anyhow::Result<()>;
}

/// The start gate of a run's threads: each arrives and waits; the main thread opens it once
/// all have arrived, or aborts it if it could not make them all.
#[derive(Default)]
struct Gate {
    /// Threads arrived, and whether the gate was opened (`Some(true)`) or aborted.
    /// Protects: both. Order: leaf.
    state: Mutex<(usize, Option<bool>)>,
    changed: Condvar,
}

impl Gate {
    fn lock(&self) -> std::sync::MutexGuard<'_, (usize, Option<bool>)> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Arrives and waits; true if the gate opened.
    fn arrive_and_wait(&self) -> bool {
        let mut g = self.lock();
        g.0 += 1;
        self.changed.notify_all();
        loop {
            if let Some(open) = g.1 {
                return open;
            }
            g = self.changed.wait(g).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// Waits for `n` arrivals, then opens; the time of the opening, read under the lock so
    /// that no thread can have passed the gate before it (a clock read after the opening raced
    /// with the threads: a main thread descheduled there would start the clock late).
    fn open_when(&self, n: usize) -> Instant {
        let mut g = self.lock();
        while g.0 < n {
            g = self.changed.wait(g).unwrap_or_else(|p| p.into_inner());
        }
        let start = Instant::now();
        g.1 = Some(true);
        self.changed.notify_all();
        start
    }

    fn abort(&self) {
        self.lock().1 = Some(false);
        self.changed.notify_all();
    }
}

/// Runs `work(i, caller)` on one thread per caller, all released together; returns the time
/// from the release until the last thread was joined, and each thread's result in order.
fn gate_and_time<C: Send, R: Send>(
    callers: Vec<C>,
    work: impl Fn(usize, C) -> anyhow::Result<R> + Sync,
) -> anyhow::Result<(Duration, Vec<R>)> {
    let n = callers.len();
    let gate = Gate::default();
    std::thread::scope(|s| {
        let mut handles = Vec::with_capacity(n);
        for (i, c) in callers.into_iter().enumerate() {
            let (gate, work) = (&gate, &work);
            let h = std::thread::Builder::new()
                .stack_size(THREAD_STACK_BYTES)
                .spawn_scoped(s, move || {
                    if !gate.arrive_and_wait() {
                        bail!("aborted before the start");
                    }
                    work(i, c)
                });
            match h {
                Ok(h) => handles.push(h),
                Err(e) => {
                    // Release the threads already made, which fail at the gate.
                    gate.abort();
                    bail!("creating benchmark thread {i} of {n}: {e}");
                }
            }
        }
        let start = gate.open_when(n);
        let mut results = Vec::with_capacity(n);
        let mut first_err = None;
        for h in handles {
            match h.join() {
                Ok(Ok(r)) => results.push(r),
                Ok(Err(e)) => first_err = first_err.or(Some(e)),
                Err(_) => first_err = first_err.or(Some(anyhow!("a benchmark thread panicked"))),
            }
        }
        let elapsed = start.elapsed();
        match first_err {
            Some(e) => Err(e),
            None => Ok((elapsed, results)),
        }
    })
}

/// Writes all of `buf` to `fd`, finishing a short write with more (perf's `again:` loop).
#[inline]
fn write_all<S: PipeSys>(t: &S::Thread, fd: &S::Fd, mut buf: &[u8]) -> anyhow::Result<()> {
    while !buf.is_empty() {
        let n = S::write(t, fd, buf)?;
        ensure!(n > 0, "write moved no byte");
        buf = &buf[n..];
    }
    Ok(())
}

/// Fills all of `buf` from `fd`, finishing a short read with more; an end of file first is an
/// error.
#[inline]
fn read_exact<S: PipeSys>(t: &S::Thread, fd: &S::Fd, buf: &mut [u8]) -> anyhow::Result<()> {
    let mut done = 0;
    while done < buf.len() {
        let n = S::read(t, fd, &mut buf[done..])?;
        ensure!(n > 0, "end of file after {done} of {} bytes", buf.len());
        done += n;
    }
    Ok(())
}

/// Messages each receiver of a `m` run reads: one per sender of its group per loop.
pub fn messages_per_receiver(m: Messaging) -> u64 {
    MESSAGING_FDS as u64 * m.loops
}

/// One thread of a messaging run.
enum Role {
    /// Reads its group's pipe `receiver`.
    Receiver { group: usize, receiver: usize },
    /// Writes to every pipe of its group.
    Sender { group: usize },
}

/// Closes every end in `ends`, reporting the first failure.
fn close_all<S: PipeSys>(sys: &S, ends: impl IntoIterator<Item = S::Fd>) -> anyhow::Result<()> {
    let mut r = Ok(());
    for fd in ends {
        let c = sys.close(fd);
        if r.is_ok() {
            r = c;
        }
    }
    r
}

/// Checks that `fd`, whose reader got everything it expected, has no byte left.
fn check_drained<S: PipeSys>(sys: &S, fd: &S::Fd, who: &str) -> anyhow::Result<()> {
    let left = sys.unread(fd)?;
    ensure!(
        left == 0,
        "{who} stopped with {left} bytes left unread in its pipe"
    );
    Ok(())
}

/// One `messaging` run of `m` (see the module doc); the time from the start until the last
/// receiver was done.
///
/// # Errors
/// A call failed, a receiver met an end of file, or a receiver's pipe held bytes it did not
/// read.
pub fn messaging<S: PipeSys>(sys: &S, m: Messaging) -> anyhow::Result<Duration> {
    ensure!(m.groups > 0 && m.loops > 0, "an empty messaging run");
    // Per group, the read and write end of each receiver's pipe.
    let mut reads: Vec<Vec<S::Fd>> = Vec::with_capacity(m.groups);
    let mut writes: Vec<Vec<S::Fd>> = Vec::with_capacity(m.groups);
    let made = (|| {
        for _ in 0..m.groups {
            let (mut r, mut w) = (Vec::new(), Vec::new());
            for _ in 0..MESSAGING_FDS {
                let (a, b) = sys.pipe()?;
                r.push(a);
                w.push(b);
            }
            reads.push(r);
            writes.push(w);
        }
        anyhow::Ok(())
    })();
    let run = made.and_then(|()| {
        // perf creates each group's receivers, then its senders.
        let mut callers = Vec::with_capacity(m.groups * 2 * MESSAGING_FDS);
        for group in 0..m.groups {
            for receiver in 0..MESSAGING_FDS {
                callers.push((Role::Receiver { group, receiver }, sys.thread()));
            }
            for _ in 0..MESSAGING_FDS {
                callers.push((Role::Sender { group }, sys.thread()));
            }
        }
        let packets = messages_per_receiver(m);
        let (elapsed, got) = gate_and_time(callers, |_, (role, t)| match role {
            Role::Receiver { group, receiver } => {
                let fd = &reads[group][receiver];
                let mut data = [0u8; MESSAGE_BYTES];
                let mut bytes = 0u64;
                for _ in 0..packets {
                    read_exact::<S>(&t, fd, &mut data)?;
                    bytes += MESSAGE_BYTES as u64;
                }
                Ok(Some((group, receiver, bytes)))
            }
            Role::Sender { group } => {
                let data = [0u8; MESSAGE_BYTES];
                for _ in 0..m.loops {
                    for fd in &writes[group] {
                        write_all::<S>(&t, fd, &data)?;
                    }
                }
                Ok(None)
            }
        })?;
        let want = packets * MESSAGE_BYTES as u64;
        for (group, receiver, bytes) in got.into_iter().flatten() {
            let who = format!("receiver {receiver} of group {group}");
            ensure!(bytes == want, "{who} read {bytes} bytes, not {want}");
            check_drained(sys, &reads[group][receiver], &who)?;
        }
        Ok(elapsed)
    });
    let closed = close_all(sys, reads.into_iter().chain(writes).flatten());
    let elapsed = run?;
    closed?;
    Ok(elapsed)
}

/// `ops` 1-byte round trips between two threads over two pipes, pinned to CPUs 0 and 1; the
/// time from the start until both threads were done.
///
/// # Errors
/// A call failed or met an end of file, or a byte was left over.
pub fn pingpong<S: PipeSys>(sys: &S, ops: u64) -> anyhow::Result<Duration> {
    let (a_read, a_write) = sys.pipe()?;
    let (b_read, b_write) = match sys.pipe() {
        Ok(p) => p,
        Err(e) => {
            let _ = close_all(sys, [a_read, a_write]);
            return Err(e);
        }
    };
    let callers = vec![sys.thread(), sys.thread()];
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let run = gate_and_time(callers, |i, t| {
        // Across cores, as the issue asks: each thread on a CPU of its own (with two CPUs or
        // more), so every round trip crosses between them on the host and on uvfs alike.
        if cpus >= 2 {
            crate::machine::pin(i);
        }
        let mut byte = [0u8; 1];
        if i == 0 {
            for k in 0..ops {
                byte[0] = k as u8;
                write_all::<S>(&t, &a_write, &byte)?;
                read_exact::<S>(&t, &b_read, &mut byte)?;
                ensure!(
                    byte[0] == k as u8,
                    "round trip {k} came back as {}",
                    byte[0]
                );
            }
        } else {
            for _ in 0..ops {
                read_exact::<S>(&t, &a_read, &mut byte)?;
                write_all::<S>(&t, &b_write, &byte)?;
            }
        }
        Ok(())
    })
    .and_then(|(elapsed, _)| {
        check_drained(sys, &a_read, "the pong thread")?;
        check_drained(sys, &b_read, "the ping thread")?;
        Ok(elapsed)
    });
    let closed = close_all(sys, [a_read, a_write, b_read, b_write]);
    let elapsed = run?;
    closed?;
    Ok(elapsed)
}

/// `ops` writes of 64 KiB streamed from one thread to another through one pipe; the time from
/// the start until the reader had every byte.
///
/// # Errors
/// A call failed, the reader met an end of file or a wrong byte, or bytes were left over.
pub fn bulk<S: PipeSys>(sys: &S, ops: u64) -> anyhow::Result<Duration> {
    let (r, w) = sys.pipe()?;
    let total = ops * BULK_WRITE_BYTES as u64;
    let callers = vec![sys.thread(), sys.thread()];
    let run = gate_and_time(callers, |i, t| {
        let mut buf = vec![0u8; BULK_WRITE_BYTES];
        if i == 0 {
            buf.fill(0xa5);
            for _ in 0..ops {
                write_all::<S>(&t, &w, &buf)?;
            }
            Ok(0)
        } else {
            let mut got = 0u64;
            while got < total {
                let want = (total - got).min(BULK_WRITE_BYTES as u64) as usize;
                let n = S::read(&t, &r, &mut buf[..want])?;
                ensure!(n > 0, "end of file after {got} of {total} bytes");
                got += n as u64;
            }
            ensure!(buf[0] == 0xa5, "read a byte never written: {:#x}", buf[0]);
            Ok(got)
        }
    })
    .and_then(|(elapsed, got)| {
        ensure!(
            got[1] == total,
            "the reader got {} of {total} bytes",
            got[1]
        );
        check_drained(sys, &r, "the reader")?;
        Ok(elapsed)
    });
    let closed = close_all(sys, [r, w]);
    let elapsed = run?;
    closed?;
    Ok(elapsed)
}
