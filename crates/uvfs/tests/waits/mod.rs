//! What the tests of blocking calls (pipes, splice, readiness) share: a root task, a thread of
//! a task with its interrupt handle, and waiting for a waiter to be in place.

#![allow(dead_code)] // Reason: each test binary uses a different part.

use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use uvfs::{Cred, Task, Vfs};

/// How long a test waits for another thread before it fails (never reached when it passes).
pub const TIMEOUT: Duration = Duration::from_secs(20);

/// A new tree and a root task in it.
pub fn setup() -> (Vfs, Task) {
    let vfs = Vfs::new();
    let t = vfs.task(Cred::root());
    (vfs, t)
}

/// Runs `f` on a new thread of `t` (shared fd table); returns its interrupt handle (made
/// before `f` runs), a receiver of its result and the thread.
pub fn spawn_interruptible<R: Send + 'static>(
    t: &Task,
    f: impl FnOnce(&Task) -> R + Send + 'static,
) -> (
    uvfs::vfs::InterruptHandle,
    mpsc::Receiver<R>,
    thread::JoinHandle<()>,
) {
    let t2 = t.clone_thread();
    let intr = t2.interrupt_handle();
    let (tx, rx) = mpsc::channel();
    let h = thread::spawn(move || {
        let r = f(&t2);
        let _ = tx.send(r);
    });
    (intr, rx, h)
}

/// As [`spawn_interruptible`], without the handle (the thread's task makes none).
pub fn spawn<R: Send + 'static>(
    t: &Task,
    f: impl FnOnce(&Task) -> R + Send + 'static,
) -> (mpsc::Receiver<R>, thread::JoinHandle<()>) {
    let t2 = t.clone_thread();
    let (tx, rx) = mpsc::channel();
    let h = thread::spawn(move || {
        let r = f(&t2);
        let _ = tx.send(r);
    });
    (rx, h)
}

/// Waits until `cond` holds (a waiter is in place), failing after [`TIMEOUT`].
pub fn wait_until(mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(start.elapsed() < TIMEOUT, "timed out waiting for a waiter");
        thread::sleep(Duration::from_millis(1));
    }
}
