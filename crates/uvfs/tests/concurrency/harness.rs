//! The harness of tests/concurrency.rs: the seed, the generator, the crew that turns a panic
//! on any thread into a failure and a hang into a failure after [`HANG_DEADLINE`], the
//! checkpoints where writers and readers meet with nothing in flight, the counts every test
//! asserts, and small helpers over the public API.

use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::{self, ScopedJoinHandle};
use std::time::Duration;

use uvfs::abi::{Dirent, Errno, OpenFlags, AT_FDCWD};
use uvfs::Task;
/// How long one test's threads may run before the test declares them hung. Every test ends in
/// a few seconds even unoptimised on two busy cores; this bound only turns a hang into a
/// failure (it is a correctness bound on liveness, not a performance assertion).
pub(crate) const HANG_DEADLINE: Duration = Duration::from_secs(120);

/// Most rounds one reader runs; more means its writer stopped making progress.
pub(crate) const MAX_READER_ROUNDS: u64 = 50_000_000;

pub(crate) fn seed() -> u64 {
    std::env::var("UVFS_STRESS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed_0f0f_a5a5)
}

/// SplitMix64: a seeded generator small enough to keep the tests dependency-free.
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    pub(crate) fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            v.swap(i, self.below(i as u64 + 1) as usize);
        }
    }
}

/// What the threads of one test share: the flag that ends every loop and wait early.
pub(crate) struct Crew {
    pub(crate) stop: AtomicBool,
    /// Threads that have arrived at the start line.
    pub(crate) started: AtomicU64,
}

/// Stops the crew if its thread unwinds (see [`Crew::enlist`]).
pub(crate) struct StopOnPanic<'a>(&'a Crew);

impl Drop for StopOnPanic<'_> {
    fn drop(&mut self) {
        if thread::panicking() {
            self.0.stop.store(true, Ordering::SeqCst);
        }
    }
}

impl Crew {
    pub(crate) fn stopped(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    /// Called first by every thread of the test: if the thread panics, the others leave their
    /// loops and waits, so the test fails instead of hanging on them.
    pub(crate) fn enlist(&self) -> StopOnPanic<'_> {
        StopOnPanic(self)
    }

    /// Spins, yielding, until `ready()`; false if the crew stopped first.
    pub(crate) fn wait_until(&self, ready: impl Fn() -> bool) -> bool {
        while !ready() {
            if self.stopped() {
                return false;
            }
            thread::yield_now();
        }
        true
    }

    /// Waits until `n` threads have arrived, so that they start together. False if stopped.
    pub(crate) fn start_line(&self, n: u64) -> bool {
        self.started.fetch_add(1, Ordering::SeqCst);
        self.wait_until(|| self.started.load(Ordering::SeqCst) >= n)
    }
}

/// Runs a test body (which spawns and joins the test's threads) on a thread of its own and
/// waits at most [`HANG_DEADLINE`] for it. A panic in the body fails the test with the body's
/// message; a body still running at the deadline is declared hung: the crew is stopped (every
/// loop and wait of the test's threads ends) and the test fails.
pub(crate) fn run<R: Send + 'static>(body: impl FnOnce(&Crew) -> R + Send + 'static) -> R {
    let crew = Arc::new(Crew {
        stop: AtomicBool::new(false),
        started: AtomicU64::new(0),
    });
    let (tx, rx) = mpsc::channel();
    let c = crew.clone();
    thread::Builder::new()
        .name("test body".into())
        .spawn(move || {
            let r = panic::catch_unwind(AssertUnwindSafe(|| body(&c)));
            let _ = tx.send(r);
        })
        .expect("spawn the test body");
    match rx.recv_timeout(HANG_DEADLINE) {
        Ok(Ok(r)) => r,
        Ok(Err(payload)) => panic::resume_unwind(payload),
        Err(_) => {
            crew.stop.store(true, Ordering::SeqCst);
            panic!(
                "seed {}: the test's threads did not finish within {HANG_DEADLINE:?}: declared \
                 hung (a deadlock or a lost wake-up)",
                seed()
            )
        }
    }
}

/// Joins a scoped thread, failing with its own panic message if it panicked.
pub(crate) fn join<T>(h: ScopedJoinHandle<'_, T>) -> T {
    h.join().unwrap_or_else(|p| panic::resume_unwind(p))
}

/// Points where a writer stops with nothing in flight, publishes the tree it left, and waits
/// until each of `readers` readers has checked exactly that tree once.
pub(crate) struct Checkpoints<S> {
    pub(crate) readers: u64,
    pub(crate) epoch: AtomicU64,
    pub(crate) acks: AtomicU64,
    pub(crate) state: Mutex<S>,
}

impl<S: Clone> Checkpoints<S> {
    pub(crate) fn new(readers: u64, initial: S) -> Self {
        Checkpoints {
            readers,
            epoch: AtomicU64::new(0),
            acks: AtomicU64::new(0),
            state: Mutex::new(initial),
        }
    }

    /// Writer: publishes `state` (what the tree is now) and waits for every reader's check.
    /// False if the crew stopped.
    pub(crate) fn hold(&self, crew: &Crew, state: S) -> bool {
        *self.state.lock().expect("state lock") = state;
        let e = self.epoch.load(Ordering::SeqCst) + 1;
        self.epoch.store(e, Ordering::SeqCst);
        crew.wait_until(|| self.acks.load(Ordering::SeqCst) == e * self.readers)
    }

    /// Reader: the state of the checkpoint the writer is holding, if this reader (whose last
    /// checked epoch is `seen`) has not checked it yet. The writer stays stopped until
    /// [`Checkpoints::ack`].
    pub(crate) fn pending(&self, seen: &mut u64) -> Option<S> {
        let e = self.epoch.load(Ordering::SeqCst);
        if e == *seen {
            return None;
        }
        assert_eq!(e, *seen + 1, "a reader missed a checkpoint");
        *seen = e;
        Some(self.state.lock().expect("state lock").clone())
    }

    pub(crate) fn ack(&self) {
        self.acks.fetch_add(1, Ordering::SeqCst);
    }
}

/// What one reader counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Counts {
    /// Rounds, each with its racy checks.
    pub(crate) rounds: u64,
    /// Checkpoints checked exactly.
    pub(crate) exact: u64,
}

impl Counts {
    /// One more round; panics past [`MAX_READER_ROUNDS`].
    pub(crate) fn round(&mut self) {
        self.rounds += 1;
        assert!(
            self.rounds <= MAX_READER_ROUNDS,
            "seed {}: a reader ran {MAX_READER_ROUNDS} rounds: its writer stopped progressing",
            seed()
        );
    }
}

pub(crate) fn ino_of(task: &Task, path: &str) -> Result<u64, Errno> {
    task.stat(path).map(|s| s.ino)
}

pub(crate) fn create_file(task: &Task, path: &str) -> u64 {
    let fd = task
        .openat(
            AT_FDCWD,
            path,
            OpenFlags::CREAT | OpenFlags::EXCL | OpenFlags::WRONLY,
            0o644,
        )
        .unwrap_or_else(|e| panic!("create {path}: {e:?}"));
    let ino = task.fstat(fd).expect("fstat of a new file").ino;
    task.close(fd).expect("close");
    ino
}

pub(crate) fn mkdir(task: &Task, path: &str) -> u64 {
    task.mkdirat(AT_FDCWD, path, 0o755)
        .unwrap_or_else(|e| panic!("mkdir {path}: {e:?}"));
    ino_of(task, path).expect("stat of a new directory")
}

/// Every name in the directory at `path`, in the order one listing returns them, read with
/// several `getdents64` calls of a `buf_bytes` buffer.
pub(crate) fn list(task: &Task, path: &str, buf_bytes: usize) -> Vec<Vec<u8>> {
    let fd = task
        .openat(AT_FDCWD, path, OpenFlags::RDONLY | OpenFlags::DIRECTORY, 0)
        .expect("open directory");
    let mut buf = vec![0u8; buf_bytes];
    let mut names = Vec::new();
    loop {
        let n = task.getdents64(fd, &mut buf).expect("getdents64");
        if n == 0 {
            break;
        }
        names.extend(Dirent::parse(&buf[..n]).into_iter().map(|d| d.name));
    }
    task.close(fd).expect("close directory");
    names
}
