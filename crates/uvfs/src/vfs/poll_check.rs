//! Model checks of the production wait and wake-up protocol of blocked calls (`vfs::poll`'s
//! `Parker`, `park_on` and `PollWait`, a pipe's and an eventfd's wait lists, the task
//! interrupt), with the locks, atomics and thread parking of `crate::sync` replaced by
//! loom's (`--cfg loom`) or shuttle's (`--features shuttle`), as in `dcache_check`.
//!
//! The property checked: no wake-up is lost. A blocked read of an empty pipe returns the
//! byte a writer on another thread writes, or `EINTR` if an interrupter got there first (and
//! then the byte is still in the pipe); a poller registered on a pipe wakes for a write; an
//! eventfd writer blocked on a full count wakes for a read. A lost wake-up leaves a thread
//! parked forever, which the model checker reports as a deadlock.
//!
//! What is not checked: the interrupt's pending flag and its `waiting_on` slot are std's
//! atomics and `parking_lot`'s lock (not the model's), so their orderings are not explored;
//! the spin before a park is off under the model (`sync::thread::SPIN`).
//!
//! Run: as `dcache_check`, with `poll_check` as the filter.

use std::sync::Arc;

use super::locks::{Interrupt, InterruptHandle, Wait};
use super::poll::{unregister, PollTable, PollWait, WaitSource};
use crate::abi::{Errno, PollEvents};
use crate::fs::anon::AnonIo;
use crate::fs::eventfd::EventFd;
use crate::fs::pipefs::pipe::Pipe;
use crate::sync::model::{check, thread};

/// A reader blocked on an empty pipe wakes for a writer's byte.
#[test]
fn poll_check_a_blocked_pipe_read_wakes_for_a_write() {
    check(|| {
        let pipe = Pipe::new_anon();
        let writer = {
            let pipe = pipe.clone();
            thread::spawn(move || {
                let sigpipe = std::cell::Cell::new(false);
                assert_eq!(pipe.write(b"x", Wait::No, false, &sigpipe), Ok(1));
            })
        };
        let mut buf = [0u8; 4];
        assert_eq!(pipe.read(&mut buf, Wait::Yes(None)), Ok(1));
        assert_eq!(buf[0], b'x');
        writer.join().expect("writer");
    });
}

/// A reader blocked on an empty pipe, a writer and an interrupter: the read returns the byte,
/// or `EINTR` with the byte left in the pipe; it never sleeps through both.
#[test]
fn poll_check_an_interrupt_or_a_write_ends_a_blocked_pipe_read() {
    check(|| {
        let pipe = Pipe::new_anon();
        let intr = Arc::new(Interrupt::new());
        let writer = {
            let pipe = pipe.clone();
            thread::spawn(move || {
                let sigpipe = std::cell::Cell::new(false);
                assert_eq!(pipe.write(b"x", Wait::No, false, &sigpipe), Ok(1));
            })
        };
        let interrupter = {
            let h = InterruptHandle(intr.clone());
            thread::spawn(move || h.interrupt())
        };
        let mut buf = [0u8; 4];
        match pipe.read(&mut buf, Wait::Yes(Some(&intr))) {
            Ok(1) => assert_eq!(buf[0], b'x'),
            Err(Errno::EINTR) => {
                writer.join().expect("writer");
                assert_eq!(pipe.read(&mut buf, Wait::No), Ok(1), "the byte stayed");
                interrupter.join().expect("interrupter");
                return;
            }
            other => panic!("read: {other:?}"),
        }
        writer.join().expect("writer");
        interrupter.join().expect("interrupter");
    });
}

/// A poller registered on a pipe through its `poll` wakes for a write, as `Task::poll` waits:
/// register and read the state, sleep, read the state again.
#[test]
fn poll_check_a_registered_poller_wakes_for_a_write() {
    check(|| {
        let pipe = Pipe::new_anon();
        let writer = {
            let pipe = pipe.clone();
            thread::spawn(move || {
                let sigpipe = std::cell::Cell::new(false);
                assert_eq!(pipe.write(b"x", Wait::No, false, &sigpipe), Ok(1));
            })
        };
        let wait = PollWait::new(None, None);
        let waker = wait.waker();
        let mut sources: Vec<Arc<dyn WaitSource>> = Vec::new();
        let mut mask = {
            let mut pt = PollTable::new(waker.clone(), false, &mut sources);
            pipe.poll(true, false, 0, Some(&mut pt))
        };
        while !mask.contains(PollEvents::IN) {
            assert_eq!(wait.sleep(), Ok(true), "no deadline");
            mask = pipe.poll(true, false, 0, None);
        }
        unregister(&waker, &mut sources);
        assert_eq!(pipe.pollers(), 0);
        writer.join().expect("writer");
    });
}

/// An eventfd writer blocked on a count one short of the maximum wakes for a read.
#[test]
fn poll_check_a_blocked_eventfd_write_wakes_for_a_read() {
    check(|| {
        let efd = Arc::new(EventFd::new(0, false));
        assert_eq!(
            efd.write(&(u64::MAX - 1).to_ne_bytes(), true, None),
            Ok(8),
            "fill"
        );
        let reader = {
            let efd = efd.clone();
            thread::spawn(move || {
                let mut buf = [0u8; 8];
                assert_eq!(efd.read(&mut buf, true, None), Ok(8));
                assert_eq!(u64::from_ne_bytes(buf), u64::MAX - 1);
            })
        };
        assert_eq!(efd.write(&1u64.to_ne_bytes(), false, None), Ok(8));
        reader.join().expect("reader");
        let mut buf = [0u8; 8];
        assert_eq!(efd.read(&mut buf, true, None), Ok(8));
        assert_eq!(u64::from_ne_bytes(buf), 1);
    });
}
