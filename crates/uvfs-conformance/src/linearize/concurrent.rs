//! Running one plan's thread lists at the same time on one [`Vfs`]: a pool of worker threads,
//! one per plan thread, each with its own [`uvfs::Task`].
//!
//! Each run: the coordinator publishes a job (a fresh `Vfs` with the initial tree, the lists,
//! a schedule per thread); every worker makes its task, then waits at a spinning start line
//! until all are there, busy-waits for its start delay, and runs its operations (with a
//! `yield_now` between them in some runs), noting when it started and finished. The delays
//! (see [`super::check`]) slide the threads' lists across each other so that the runs of one
//! seed meet in different places.
//!
//! Failures never hang: a worker runs its list under `catch_unwind` and a panic is reported
//! to the coordinator (and releases the others from the start line). A worker stuck inside
//! uvfs (a deadlock) cannot be released; the coordinator gives up on it after
//! `stuck_after` and reports it, leaving the thread behind (it is not joined).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use uvfs::{Cred, Vfs};

use super::exec::{run_op, RawResult};
use super::plan::Plan;

/// How long a thread at the start line spins before it starts yielding its CPU.
const SPIN_BEFORE_YIELD: Duration = Duration::from_micros(50);

/// How one thread runs its list in one run.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Schedule {
    /// How long to busy-wait after the start line before the first operation.
    pub(crate) start_delay: Duration,
    /// Whether to `yield_now` between operations.
    pub(crate) yields: bool,
}

/// What one thread did in one run.
#[derive(Debug)]
pub(crate) struct ThreadRun {
    /// Each operation's result.
    pub(crate) results: Vec<RawResult>,
    /// When the first operation started.
    pub(crate) started: Instant,
    /// When the last operation returned.
    pub(crate) finished: Instant,
}

struct Job {
    vfs: Vfs,
    plan: Arc<Plan>,
    schedules: Vec<Schedule>,
}

#[derive(Default)]
struct State {
    generation: u64,
    job: Option<Arc<Job>>,
    results: Vec<Option<ThreadRun>>,
    finished: usize,
    panic: Option<String>,
    shutdown: bool,
}

struct Shared {
    /// Protects: the job, the results, the counts. Order: alone (no other lock is taken while
    /// it is held; uvfs runs outside it).
    state: Mutex<State>,
    changed: Condvar,
    /// Workers at the start line of the current run.
    ready: AtomicUsize,
    /// Set when a worker panicked: the others leave the start line.
    abort: AtomicBool,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A worker never panics while holding the lock (uvfs runs outside it), so a poisoned
        // lock still holds consistent counts.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Worker threads for plans of `threads` threads.
pub(crate) struct Pool {
    shared: Arc<Shared>,
    workers: Vec<JoinHandle<()>>,
    stuck_after: Duration,
    /// Set when a run did not finish: its workers cannot be joined.
    abandoned: bool,
}

/// Why a concurrent run did not produce a history.
#[derive(Debug)]
pub(crate) enum RunError {
    /// A worker panicked (the message).
    Panicked(String),
    /// A worker did not finish within the limit (deadlock or livelock in uvfs).
    Stuck(Duration),
}

impl Pool {
    /// Starts `threads` workers.
    pub(crate) fn new(threads: usize, stuck_after: Duration) -> Pool {
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
            ready: AtomicUsize::new(0),
            abort: AtomicBool::new(false),
        });
        let workers = (0..threads)
            .map(|i| {
                let shared = shared.clone();
                std::thread::Builder::new()
                    .name(format!("linearize-{i}"))
                    .spawn(move || worker(&shared, i))
                    .expect("spawning a worker thread")
            })
            .collect();
        Pool {
            shared,
            workers,
            stuck_after,
            abandoned: false,
        }
    }

    /// The number of workers.
    pub(crate) fn threads(&self) -> usize {
        self.workers.len()
    }

    /// Runs `plan` (with as many threads as the pool) on `vfs`, which holds the initial tree;
    /// returns what each thread did.
    pub(crate) fn run(
        &mut self,
        vfs: Vfs,
        plan: &Arc<Plan>,
        schedules: Vec<Schedule>,
    ) -> Result<Vec<ThreadRun>, RunError> {
        assert_eq!(
            plan.threads.len(),
            self.threads(),
            "one worker per plan thread"
        );
        let n = self.threads();
        let job = Arc::new(Job {
            vfs,
            plan: plan.clone(),
            schedules,
        });
        let sh = &*self.shared;
        sh.ready.store(0, Ordering::SeqCst);
        sh.abort.store(false, Ordering::SeqCst);
        let mut st = sh.lock();
        st.results = (0..n).map(|_| None).collect();
        st.finished = 0;
        st.panic = None;
        st.job = Some(job);
        st.generation += 1;
        sh.changed.notify_all();
        let deadline = Instant::now() + self.stuck_after;
        while st.finished < n {
            let now = Instant::now();
            if now >= deadline {
                self.abandoned = true;
                sh.abort.store(true, Ordering::SeqCst);
                return Err(RunError::Stuck(self.stuck_after));
            }
            st = sh
                .changed
                .wait_timeout(st, deadline - now)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        st.job = None;
        if let Some(p) = st.panic.take() {
            return Err(RunError::Panicked(p));
        }
        Ok(st
            .results
            .iter_mut()
            .map(|r| {
                r.take()
                    .expect("a worker that finished without panicking left results")
            })
            .collect())
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        self.shared.lock().shutdown = true;
        self.shared.abort.store(true, Ordering::SeqCst);
        self.shared.changed.notify_all();
        if !self.abandoned {
            for w in self.workers.drain(..) {
                // A worker's panics were caught and reported by `run`.
                let _ = w.join();
            }
        }
    }
}

fn worker(shared: &Shared, index: usize) {
    let mut seen = 0u64;
    loop {
        let job = {
            let mut st = shared.lock();
            while st.generation == seen && !st.shutdown {
                st = shared.changed.wait(st).unwrap_or_else(|p| p.into_inner());
            }
            if st.shutdown {
                return;
            }
            seen = st.generation;
            st.job.clone().expect("a new generation carries a job")
        };
        let out = catch_unwind(AssertUnwindSafe(|| run_list(shared, &job, index)));
        let mut st = shared.lock();
        match out {
            Ok(Some(results)) => st.results[index] = Some(results),
            Ok(None) => {}
            Err(payload) => {
                let msg = panic_message(&*payload);
                st.panic
                    .get_or_insert(format!("worker {index} panicked: {msg}"));
                shared.abort.store(true, Ordering::SeqCst);
            }
        }
        st.finished += 1;
        shared.changed.notify_all();
    }
}

/// Runs thread `index`'s list; `None` if another worker panicked before the start.
fn run_list(shared: &Shared, job: &Job, index: usize) -> Option<ThreadRun> {
    let task = job.vfs.task(Cred::root());
    let ops = &job.plan.threads[index];
    let sched = job.schedules[index];
    let n = job.plan.threads.len();
    shared.ready.fetch_add(1, Ordering::SeqCst);
    let arrived = Instant::now();
    let mut spins = 0u32;
    while shared.ready.load(Ordering::SeqCst) < n {
        if shared.abort.load(Ordering::SeqCst) {
            return None;
        }
        std::hint::spin_loop();
        spins = spins.wrapping_add(1);
        // Pure spinning releases the threads within a cache-line transfer of each other; but
        // when the others have no CPU (fewer free cores than threads) they need this one's.
        if spins & 255 == 0 && arrived.elapsed() > SPIN_BEFORE_YIELD {
            std::thread::yield_now();
        }
    }
    if !sched.start_delay.is_zero() {
        let until = Instant::now() + sched.start_delay;
        while Instant::now() < until {
            std::hint::spin_loop();
        }
    }
    let started = Instant::now();
    let mut results = Vec::with_capacity(ops.len());
    for (i, op) in ops.iter().enumerate() {
        if i > 0 && sched.yields {
            std::thread::yield_now();
        }
        results.push(run_op(&task, op));
    }
    Some(ThreadRun {
        results,
        started,
        finished: Instant::now(),
    })
}

/// The message of a caught panic.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "non-string panic payload".to_string())
}
