//! Readiness through the public API where it needs more than one thread: blocked `poll`,
//! `epoll_wait` and eventfd calls woken by another thread, timeouts, `EINTR`, the
//! registrations a finished wait leaves behind (none), `EPOLLEXCLUSIVE` waking one
//! instance, nested epolls, and a stress test of edge-triggered epoll draining pipes fed by
//! many writers with no event lost. Oracle: poll(2), epoll(7), epoll_ctl(2), eventfd(2) and
//! Linux fs/eventpoll.c where the pages are silent; the single-thread behaviour is compared
//! with the host in crates/uvfs-conformance/cases/readiness.cases.

mod waits;

use std::thread;
use std::time::{Duration, Instant};

use uvfs::abi::{EfdFlags, EpollEvent, EpollOp, OpenFlags, PollEvents, PollFd};
use uvfs::{Errno, Task};
use waits::{setup, spawn_interruptible, wait_until, TIMEOUT};

fn waiters(t: &Task, fd: i32) -> u32 {
    t.readiness_waiters(fd).expect("readiness_waiters")
}

#[test]
fn a_blocked_poll_wakes_when_a_writer_writes_and_leaves_no_registration() {
    let (_vfs, t) = setup();
    let [r, w] = t.pipe2(OpenFlags::empty()).expect("pipe2");
    let (_i, res, h) = spawn_interruptible(&t, move |t| {
        let mut fds = [PollFd::new(r, PollEvents::IN)];
        t.poll(&mut fds, None).map(|n| (n, fds[0].revents))
    });
    wait_until(|| waiters(&t, r) == 1);
    assert!(res.try_recv().is_err(), "poll waited");
    t.write(w, b"x").expect("write");
    assert_eq!(res.recv_timeout(TIMEOUT), Ok(Ok((1, PollEvents::IN))));
    h.join().expect("poller");
    assert_eq!(waiters(&t, r), 0, "the poller took itself off the pipe");
}

#[test]
fn poll_times_out_with_nothing_ready_and_a_closed_writer_ends_the_wait_with_pollhup() {
    let (_vfs, t) = setup();
    let [r, w] = t.pipe2(OpenFlags::empty()).expect("pipe2");
    let mut fds = [PollFd::new(r, PollEvents::IN)];
    let start = Instant::now();
    assert_eq!(t.poll(&mut fds, Some(Duration::from_millis(30))), Ok(0));
    assert!(
        start.elapsed() >= Duration::from_millis(30),
        "waited the timeout"
    );
    assert_eq!(fds[0].revents, PollEvents::empty());
    assert_eq!(waiters(&t, r), 0);
    let (_i, res, h) = spawn_interruptible(&t, move |t| {
        let mut fds = [PollFd::new(r, PollEvents::IN)];
        t.poll(&mut fds, None).map(|n| (n, fds[0].revents))
    });
    wait_until(|| waiters(&t, r) == 1);
    t.close(w).expect("close");
    assert_eq!(res.recv_timeout(TIMEOUT), Ok(Ok((1, PollEvents::HUP))));
    h.join().expect("poller");
}

#[test]
fn interrupted_poll_epoll_wait_and_eventfd_read_return_eintr() {
    let (_vfs, t) = setup();
    let [r, _w] = t.pipe2(OpenFlags::empty()).expect("pipe2");
    let (intr, res, h) = spawn_interruptible(&t, move |t| {
        let mut fds = [PollFd::new(r, PollEvents::IN)];
        t.poll(&mut fds, None)
    });
    wait_until(|| waiters(&t, r) == 1);
    intr.interrupt();
    assert_eq!(res.recv_timeout(TIMEOUT), Ok(Err(Errno::EINTR)));
    h.join().expect("poller");
    assert_eq!(
        waiters(&t, r),
        0,
        "an interrupted poll leaves no registration"
    );

    let ep = t.epoll_create1(0).expect("epoll");
    t.epoll_ctl(
        ep,
        EpollOp::Add,
        r,
        Some(EpollEvent::new(PollEvents::IN, 1)),
    )
    .expect("add");
    let (intr, res, h) = spawn_interruptible(&t, move |t| {
        t.epoll_wait(ep, &mut [EpollEvent::default(); 2], None)
    });
    wait_until(|| waiters(&t, ep) == 1);
    intr.interrupt();
    assert_eq!(res.recv_timeout(TIMEOUT), Ok(Err(Errno::EINTR)));
    h.join().expect("epoll waiter");
    assert_eq!(waiters(&t, ep), 0);

    let efd = t.eventfd2(0, EfdFlags::empty()).expect("eventfd");
    let (intr, res, h) = spawn_interruptible(&t, move |t| t.read(efd, &mut [0u8; 8]));
    wait_until(|| waiters(&t, efd) == 1);
    intr.interrupt();
    assert_eq!(res.recv_timeout(TIMEOUT), Ok(Err(Errno::EINTR)));
    h.join().expect("eventfd reader");
    // Nothing was taken: the count is still 0, and a write then a read see only it.
    t.write(efd, &5u64.to_ne_bytes()).expect("write");
    let mut buf = [0u8; 8];
    assert_eq!(t.read(efd, &mut buf), Ok(8));
    assert_eq!(u64::from_ne_bytes(buf), 5);
}

#[test]
fn a_blocked_epoll_wait_wakes_for_a_pipe_and_through_a_nested_epoll() {
    let (_vfs, t) = setup();
    let [r, w] = t.pipe2(OpenFlags::empty()).expect("pipe2");
    let inner = t.epoll_create1(0).expect("inner");
    let outer = t.epoll_create1(0).expect("outer");
    t.epoll_ctl(
        inner,
        EpollOp::Add,
        r,
        Some(EpollEvent::new(PollEvents::IN, 11)),
    )
    .expect("add r");
    t.epoll_ctl(
        outer,
        EpollOp::Add,
        inner,
        Some(EpollEvent::new(PollEvents::IN, 22)),
    )
    .expect("add inner");
    let (_i, res, h) = spawn_interruptible(&t, move |t| {
        let mut ev = [EpollEvent::default(); 4];
        t.epoll_wait(outer, &mut ev, None).map(|n| ev[..n].to_vec())
    });
    wait_until(|| waiters(&t, outer) == 1);
    t.write(w, b"hi").expect("write");
    assert_eq!(
        res.recv_timeout(TIMEOUT),
        Ok(Ok(vec![EpollEvent::new(PollEvents::IN, 22)]))
    );
    h.join().expect("outer waiter");
    let mut ev = [EpollEvent::default(); 4];
    assert_eq!(t.epoll_wait(inner, &mut ev, Some(Duration::ZERO)), Ok(1));
    assert_eq!(ev[0], EpollEvent::new(PollEvents::IN, 11));
}

#[test]
fn eventfd_blocking_read_and_write_wait_for_each_other() {
    let (_vfs, t) = setup();
    let efd = t.eventfd2(0, EfdFlags::empty()).expect("eventfd");
    let (_i, res, h) = spawn_interruptible(&t, move |t| {
        let mut buf = [0u8; 8];
        t.read(efd, &mut buf).map(|_| u64::from_ne_bytes(buf))
    });
    wait_until(|| waiters(&t, efd) == 1);
    t.write(efd, &9u64.to_ne_bytes()).expect("write");
    assert_eq!(res.recv_timeout(TIMEOUT), Ok(Ok(9)));
    h.join().expect("reader");
    // A write that would reach u64::MAX waits for a read.
    t.write(efd, &(u64::MAX - 2).to_ne_bytes()).expect("fill");
    let (_i, res, h) = spawn_interruptible(&t, move |t| t.write(efd, &2u64.to_ne_bytes()));
    wait_until(|| waiters(&t, efd) == 1);
    let mut buf = [0u8; 8];
    assert_eq!(t.read(efd, &mut buf), Ok(8));
    assert_eq!(u64::from_ne_bytes(buf), u64::MAX - 2);
    assert_eq!(res.recv_timeout(TIMEOUT), Ok(Ok(8)));
    h.join().expect("writer");
    assert_eq!(t.read(efd, &mut buf), Ok(8));
    assert_eq!(u64::from_ne_bytes(buf), 2);
}

#[test]
fn epollexclusive_wakes_one_of_the_waiting_instances() {
    let (_vfs, t) = setup();
    let efd = t.eventfd2(0, EfdFlags::NONBLOCK).expect("eventfd");
    let eps: Vec<i32> = (0..2)
        .map(|i| {
            let ep = t.epoll_create1(0).expect("epoll");
            let ev = EpollEvent::new(PollEvents::IN | PollEvents::EXCLUSIVE, i);
            t.epoll_ctl(ep, EpollOp::Add, efd, Some(ev)).expect("add");
            ep
        })
        .collect();
    let waits: Vec<_> = eps
        .iter()
        .map(|&ep| {
            spawn_interruptible(&t, move |t| {
                let mut ev = [EpollEvent::default(); 2];
                t.epoll_wait(ep, &mut ev, None).map(|n| ev[..n].to_vec())
            })
        })
        .collect();
    for &ep in &eps {
        wait_until(|| waiters(&t, ep) == 1);
    }
    t.write(efd, &1u64.to_ne_bytes()).expect("write");
    // One instance wakes with the event...
    let mut woken = None;
    let start = Instant::now();
    while woken.is_none() {
        assert!(start.elapsed() < TIMEOUT, "nobody woke");
        for (k, (_, rx, _)) in waits.iter().enumerate() {
            if let Ok(r) = rx.try_recv() {
                let ev = r.expect("epoll_wait");
                assert_eq!(ev, vec![EpollEvent::new(PollEvents::IN, k as u64)]);
                woken = Some(k);
            }
        }
        thread::sleep(Duration::from_millis(1));
    }
    // ...and the other is still waiting, until interrupted.
    let other = 1 - woken.expect("one woke");
    thread::sleep(Duration::from_millis(20));
    assert!(
        waits[other].1.try_recv().is_err(),
        "the other instance stayed asleep"
    );
    waits[other].0.interrupt();
    assert_eq!(waits[other].1.recv_timeout(TIMEOUT), Ok(Err(Errno::EINTR)));
    for (_, _, h) in waits {
        h.join().expect("waiter");
    }
}

/// Writers on threads of their own feed pipes; one reader drains them through an
/// edge-triggered epoll with non-blocking reads, reading each ready pipe until `EAGAIN` as
/// edge-triggered use requires. A lost wake-up hangs the reader (caught by the timeout);
/// a lost or duplicated byte breaks the sums.
#[test]
fn stress_edge_triggered_epoll_drains_many_writers_without_losing_an_event() {
    const WRITERS: usize = 4;
    const MESSAGES: u32 = 2000;
    let (_vfs, t) = setup();
    let ep = t.epoll_create1(0).expect("epoll");
    let mut writers = Vec::new();
    let mut reads = Vec::new();
    for k in 0..WRITERS {
        let [r, w] = t.pipe2(OpenFlags::NONBLOCK).expect("pipe2");
        t.epoll_ctl(
            ep,
            EpollOp::Add,
            r,
            Some(EpollEvent::new(PollEvents::IN | PollEvents::ET, k as u64)),
        )
        .expect("add");
        reads.push(r);
        let tw = t.clone_thread();
        writers.push(thread::spawn(move || {
            let mut sum = 0u64;
            for i in 0..MESSAGES {
                let msg = i.to_le_bytes();
                loop {
                    match tw.write(w, &msg) {
                        Ok(4) => break,
                        Err(Errno::EAGAIN) => thread::yield_now(),
                        other => panic!("write: {other:?}"),
                    }
                }
                sum += u64::from(i);
            }
            tw.close(w).expect("close");
            sum
        }));
    }
    let mut got = [0u64; WRITERS];
    let mut bytes = [0usize; WRITERS];
    let mut closed = 0;
    let mut checks = 0u64;
    let mut pending: Vec<Vec<u8>> = vec![Vec::new(); WRITERS];
    let start = Instant::now();
    while closed < WRITERS {
        assert!(start.elapsed() < TIMEOUT * 3, "an event was lost");
        let mut ev = [EpollEvent::default(); WRITERS];
        let n = t
            .epoll_wait(ep, &mut ev, Some(TIMEOUT))
            .expect("epoll_wait");
        assert!(n > 0, "epoll_wait timed out with writers still running");
        for e in &ev[..n] {
            let k = e.data as usize;
            let mut buf = [0u8; 4096];
            loop {
                match t.read(reads[k], &mut buf) {
                    Ok(0) => {
                        closed += 1;
                        t.epoll_ctl(ep, EpollOp::Del, reads[k], None).expect("del");
                        break;
                    }
                    Ok(m) => {
                        pending[k].extend_from_slice(&buf[..m]);
                        bytes[k] += m;
                    }
                    Err(Errno::EAGAIN) => break,
                    Err(e) => panic!("read: {e:?}"),
                }
            }
            let whole = pending[k].len() / 4 * 4;
            for c in pending[k][..whole].chunks(4) {
                got[k] += u64::from(u32::from_le_bytes(c.try_into().expect("4 bytes")));
                checks += 1;
            }
            pending[k].drain(..whole);
        }
    }
    for (k, h) in writers.into_iter().enumerate() {
        let sum = h.join().expect("writer");
        assert_eq!(got[k], sum, "pipe {k}: the sum of its messages");
        assert_eq!(bytes[k], 4 * MESSAGES as usize, "pipe {k}: every byte once");
    }
    assert_eq!(checks, WRITERS as u64 * u64::from(MESSAGES));
}

/// A file's epoll registrations go with its last close (Linux: `eventpoll_release()`): the
/// pipe, still open at its other end, keeps no poller for the closed read end, and the
/// epoll reports nothing for it.
#[test]
fn the_last_close_of_a_registered_file_takes_its_registrations_off() {
    let (_vfs, t) = setup();
    let [r, w] = t.pipe2(OpenFlags::NONBLOCK).expect("pipe2");
    let ep = t.epoll_create1(0).expect("epoll");
    let ev = EpollEvent::new(PollEvents::IN, 1);
    t.epoll_ctl(ep, EpollOp::Add, r, Some(ev)).expect("add");
    assert_eq!(waiters(&t, w), 1, "registered on the pipe");
    let d = t.dup(r).expect("dup");
    t.close(r).expect("close");
    assert_eq!(
        waiters(&t, w),
        1,
        "a dup keeps the file, and its registration"
    );
    t.close(d).expect("close the dup");
    assert_eq!(waiters(&t, w), 0, "the last close took it off the pipe");
    let mut out = [EpollEvent::default(); 2];
    assert_eq!(t.epoll_wait(ep, &mut out, Some(Duration::ZERO)), Ok(0));
}

/// One `poll` of many fds gives each entry what polling it alone gives: open files, pipes,
/// closed fds (`POLLNVAL`), `O_PATH` fds (`POLLNVAL`) and negative fds (nothing), on a table
/// the task alone holds (one lock for the pass, files lent) and on one shared with a thread
/// (a lookup each). Oracle: poll(2) (`POLLNVAL`, negative fds ignored) and the same fds polled
/// one at a time.
#[test]
fn a_poll_of_many_fds_answers_each_as_a_poll_of_one_on_private_and_shared_tables() {
    let (_vfs, t) = setup();
    let file = t
        .openat(
            uvfs::abi::AT_FDCWD,
            b"/f",
            OpenFlags::CREAT | OpenFlags::RDWR,
            0o644,
        )
        .expect("open");
    let [r, w] = t.pipe2(OpenFlags::empty()).expect("pipe2");
    t.write(w, b"x").expect("write");
    let path = t
        .openat(uvfs::abi::AT_FDCWD, b"/f", OpenFlags::PATH, 0)
        .expect("O_PATH");
    let mut fds = vec![file, r, w, path, -1];
    for i in 0..150 {
        fds.push(t.dup(if i % 2 == 0 { file } else { r }).expect("dup"));
    }
    // Closed after all the dups, so that no later dup takes their numbers again.
    for i in (0..150).step_by(7) {
        t.close(fds[5 + i]).expect("close");
    }
    fds.push(1 << 20);
    let events = PollEvents::IN | PollEvents::OUT;
    let one_by_one = |t: &Task| -> Vec<PollEvents> {
        fds.iter()
            .map(|&fd| {
                let mut one = [PollFd::new(fd, events)];
                t.poll(&mut one, Some(Duration::ZERO)).expect("poll of one");
                one[0].revents
            })
            .collect()
    };
    let all_at_once = |t: &Task| -> Vec<PollEvents> {
        let mut all: Vec<PollFd> = fds.iter().map(|&fd| PollFd::new(fd, events)).collect();
        let n = t.poll(&mut all, Some(Duration::ZERO)).expect("poll of all");
        assert_eq!(n, all.iter().filter(|p| !p.revents.is_empty()).count());
        all.iter().map(|p| p.revents).collect()
    };
    let alone = all_at_once(&t);
    assert_eq!(alone, one_by_one(&t), "unshared table");
    // Spot checks against poll(2) itself, so that both sides cannot be wrong together.
    assert_eq!(alone[0], PollEvents::IN | PollEvents::OUT, "a regular file");
    assert_eq!(alone[1], PollEvents::IN, "a pipe with a byte");
    assert_eq!(alone[3], PollEvents::NVAL, "an O_PATH fd");
    assert_eq!(alone[4], PollEvents::empty(), "a negative fd");
    assert_eq!(alone[5], PollEvents::NVAL, "a closed fd");
    assert_eq!(
        *alone.last().expect("entries"),
        PollEvents::NVAL,
        "past the table"
    );
    let nval = alone.iter().filter(|e| **e == PollEvents::NVAL).count();
    assert_eq!(nval, 1 + 22 + 1, "O_PATH, the closed dups, past the table");
    let thread = t.clone_thread();
    let shared = all_at_once(&t);
    assert_eq!(shared, alone, "shared table");
    assert_eq!(
        all_at_once(&thread),
        alone,
        "the other task of the shared table"
    );
}
