//! Readiness waits: the lists of pollers an object keeps, the table a `poll` method registers
//! them through, and the parker a blocked `poll`, `epoll_wait` or pipe call sleeps in. Linux:
//! `wait_queue_head_t`, `poll_table`, `poll_wait()` (include/linux/poll.h), `__wake_up_common()`
//! (kernel/sched/wait.c), `pollwake()` (fs/select.c).
//!
//! # Wake-ups cost nothing when nobody waits
//! A [`WaitList`] has no lock of its own: it lives under the lock of the object whose state it
//! watches (a pipe's state, an eventfd's count, an epoll's ready list), the lock a waker
//! already holds when the state changes. A poller registers under that lock before it reads
//! the state, so a waker that finds the list empty (one plain load) knows nobody can be
//! missing the change: no fence, no atomic, no other lock.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::sync::atomic::{AtomicBool, Ordering};
use crate::sync::lock::{unlocked, Mutex, MutexGuard};
use crate::sync::thread::{self, Thread};

use super::locks::{Interrupt, InterruptWake, WaitingOn};
use crate::abi::{Errno, PollEvents, Result};

/// Something woken when an object it polls may have changed readiness.
pub trait Waker: Send + Sync {
    /// The object's readiness may have changed by `key` (empty: any). Runs under the
    /// object's lock: it must not take that lock or any lock ordered before it. Returns
    /// whether it took the event (an exclusive waiter that returns true ends the wake-up).
    fn wake(&self, key: PollEvents) -> bool;
}

/// A list of wakers, kept under its owner's lock.
#[derive(Default)]
pub struct WaitList {
    entries: Vec<(Arc<dyn Waker>, bool)>,
}

impl WaitList {
    /// An empty list.
    pub const fn new() -> WaitList {
        WaitList {
            entries: Vec::new(),
        }
    }

    /// Registrations.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True if nobody waits.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Adds `w`; an `exclusive` waiter is woken only if no exclusive waiter before it took
    /// the event (`EPOLLEXCLUSIVE`; Linux: `add_wait_queue_exclusive()`).
    pub fn add(&mut self, w: Arc<dyn Waker>, exclusive: bool) {
        if exclusive {
            self.entries.push((w, true));
        } else {
            self.entries.insert(0, (w, false));
        }
    }

    /// Removes every registration of `w`.
    pub fn remove(&mut self, w: &Arc<dyn Waker>) {
        self.entries.retain(|(e, _)| !same(e, w));
    }

    /// Wakes the waiters interested in `key`: every non-exclusive one, and exclusive ones
    /// until one takes it.
    ///
    /// # Fast path
    /// With nobody waiting: one load of the list's length.
    #[inline]
    pub fn wake(&self, key: PollEvents) {
        if self.entries.is_empty() {
            return;
        }
        self.wake_slow(key);
    }

    #[cold]
    fn wake_slow(&self, key: PollEvents) {
        for (w, exclusive) in &self.entries {
            if w.wake(key) && *exclusive {
                break;
            }
        }
    }
}

fn same(a: &Arc<dyn Waker>, b: &Arc<dyn Waker>) -> bool {
    std::ptr::addr_eq(Arc::as_ptr(a), Arc::as_ptr(b))
}

/// An object with wait lists a poller registered on, so that the poller can take itself off.
pub trait WaitSource: Send + Sync {
    /// Removes every registration of `w` from this object's lists.
    fn remove_waiter(&self, w: &Arc<dyn Waker>);
}

/// What a `poll` method registers its poller through (Linux: `poll_table`): the waker to add
/// and the record of where it was added.
pub struct PollTable<'a> {
    waker: Arc<dyn Waker>,
    exclusive: bool,
    sources: &'a mut Vec<Arc<dyn WaitSource>>,
}

impl<'a> PollTable<'a> {
    pub(crate) fn new(
        waker: Arc<dyn Waker>,
        exclusive: bool,
        sources: &'a mut Vec<Arc<dyn WaitSource>>,
    ) -> PollTable<'a> {
        PollTable {
            waker,
            exclusive,
            sources,
        }
    }

    /// Registers the poller on `list`, owned by `source` (Linux: `poll_wait()`); call it
    /// under the lock that guards `list`, before reading the state the readiness comes from.
    pub fn register(&mut self, list: &mut WaitList, source: Arc<dyn WaitSource>) {
        list.add(self.waker.clone(), self.exclusive);
        if !self
            .sources
            .iter()
            .any(|s| std::ptr::addr_eq(Arc::as_ptr(s), Arc::as_ptr(&source)))
        {
            self.sources.push(source);
        }
    }
}

/// Takes `w` off every source it was registered on.
pub(crate) fn unregister(w: &Arc<dyn Waker>, sources: &mut Vec<Arc<dyn WaitSource>>) {
    for s in sources.drain(..) {
        s.remove_waiter(w);
    }
}

/// A thread blocked in `poll`, `epoll_wait` or a pipe call, and the flag its wakers set.
///
/// # Spin, then park
/// A wait first spins for a short while, watching the flag, before it parks the thread: a
/// waker on another CPU that answers within that time spares both the futex wake-up and the
/// sleep (the round trip of a pipe ping-pong between two cores).
pub(crate) struct Parker {
    woken: AtomicBool,
    thread: Thread,
}

/// How long a wait spins before it parks.
const SPIN: Duration = Duration::from_micros(20);
/// Pause instructions a wait spins with before it yields instead. Few: a pause takes up to
/// 140 cycles, and with more runnable threads than CPUs the thread that will wake this one
/// may be waiting for this CPU. With 200 (10 us on a Xeon) context_switch1 on two copies
/// (two pairs on two CPUs) ran at 0.33-0.38x the host's rate, with 20 at 1.08x; a round
/// trip between two CPUs (`pipe-pingpong`) moved by less than between runs.
const SPIN_PAUSES: u32 = 20;

/// Why a [`Parker::wait`] returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Woke {
    /// A waker (or an interrupt) set the flag.
    Woken,
    /// The deadline passed.
    TimedOut,
}

impl Parker {
    /// A parker for the calling thread.
    pub(crate) fn new() -> Arc<Parker> {
        Arc::new(Parker {
            woken: AtomicBool::new(false),
            thread: thread::current(),
        })
    }

    /// Sets the flag and unparks the thread; false if the flag was already set (the waiter
    /// is already on its way, so an exclusive wake-up goes on to the next).
    pub(crate) fn unpark(&self) -> bool {
        let first = !self.woken.swap(true, Ordering::AcqRel);
        if first {
            self.thread.unpark();
        }
        first
    }

    /// Clears the flag before the waiter looks at the state again.
    pub(crate) fn reset(&self) {
        self.woken.store(false, Ordering::Release);
    }

    /// Waits until the flag is set or `deadline` passes (`None`: no deadline); the caller
    /// re-reads the state after it (wake-ups may be spurious).
    pub(crate) fn wait(&self, deadline: Option<Instant>, spin: bool) -> Woke {
        if spin && thread::SPIN {
            let start = Instant::now();
            let end = deadline.map_or(start + SPIN, |d| d.min(start + SPIN));
            let mut n = 0u32;
            loop {
                if self.woken.load(Ordering::Acquire) {
                    return Woke::Woken;
                }
                n += 1;
                if n < SPIN_PAUSES {
                    std::hint::spin_loop();
                    continue;
                }
                // Past the first pauses, yield: a waker that is runnable on this CPU (more
                // threads than CPUs) gets it, and with nothing else to run the yield returns
                // at once.
                thread::yield_now();
                if Instant::now() >= end {
                    break;
                }
            }
        }
        loop {
            if self.woken.load(Ordering::Acquire) {
                return Woke::Woken;
            }
            match deadline {
                None => thread::park(),
                Some(d) => {
                    let now = Instant::now();
                    if now >= d {
                        return Woke::TimedOut;
                    }
                    thread::park_timeout(d - now);
                }
            }
        }
    }
}

impl Waker for Parker {
    fn wake(&self, _key: PollEvents) -> bool {
        self.unpark()
    }
}

impl InterruptWake for Parker {
    fn wake_for_interrupt(&self) {
        self.unpark();
    }
}

/// A blocking call's wait on a [`WaitList`] kept under `mutex`, which `guard` holds: parks the
/// calling thread (spinning first) with the lock released, registered on the list that
/// `list` picks, until a waker or the task's interrupt unparks it. The parker is made at the
/// call's first wait and kept in `waiting` for its later ones. The caller re-checks its
/// condition after it returns.
///
/// # Errors
/// `EINTR` when the task's interrupt is pending before the wait (it is consumed).
pub(crate) fn park_on<'m, 'i, T>(
    mutex: &'m Mutex<T>,
    guard: &mut MutexGuard<'m, T>,
    list: impl Fn(&mut T) -> &mut WaitList,
    intr: Option<&'i Interrupt>,
    waiting: &mut Option<(Arc<Parker>, WaitingOn<'i>)>,
) -> Result<()> {
    let (parker, _) = waiting.get_or_insert_with(|| {
        let p = Parker::new();
        let w = WaitingOn::enter(intr, p.clone());
        (p, w)
    });
    parker.reset();
    if intr.is_some_and(Interrupt::take) {
        return Err(Errno::EINTR);
    }
    let waker: Arc<dyn Waker> = parker.clone();
    list(guard).add(waker.clone(), false);
    unlocked(guard, mutex, || {
        parker.wait(None, true);
    });
    list(guard).remove(&waker);
    Ok(())
}

/// A poller's wait with a deadline and the task's interrupt: [`PollWait::sleep`] returns
/// `EINTR` once the interrupt is pending.
pub(crate) struct PollWait<'i> {
    pub(crate) parker: Arc<Parker>,
    intr: Option<&'i Interrupt>,
    _waiting: Option<WaitingOn<'i>>,
    deadline: Option<Instant>,
}

impl<'i> PollWait<'i> {
    /// A wait ending at `timeout` from now (`None`: never), interruptible through `intr`.
    pub(crate) fn new(intr: Option<&'i Interrupt>, timeout: Option<Duration>) -> PollWait<'i> {
        let parker = Parker::new();
        let waiting = intr.map(|i| WaitingOn::enter(Some(i), parker.clone()));
        PollWait {
            parker,
            intr,
            _waiting: waiting,
            deadline: timeout.and_then(|t| Instant::now().checked_add(t)),
        }
    }

    /// The waker to register.
    pub(crate) fn waker(&self) -> Arc<dyn Waker> {
        self.parker.clone()
    }

    /// Sleeps until woken; `Ok(false)` when the deadline has passed.
    ///
    /// # Errors
    /// `EINTR` when the task's interrupt is pending (it is consumed).
    pub(crate) fn sleep(&self) -> Result<bool> {
        if self.intr.is_some_and(Interrupt::take) {
            return Err(Errno::EINTR);
        }
        let r = self.parker.wait(self.deadline, true);
        self.parker.reset();
        if self.intr.is_some_and(Interrupt::take) {
            return Err(Errno::EINTR);
        }
        Ok(r == Woke::Woken)
    }
}

/// A [`WaitList`] with a lock of its own, for filesystems outside uvfs whose files change
/// readiness (their [`FileOps::poll`](super::FileOps::poll) registers on it; their state
/// changes call [`WaitQueue::wake`]).
#[derive(Default)]
pub struct WaitQueue {
    /// Protects: the list. Order: a leaf, but for the wakers' own locks (epoll's).
    list: Mutex<WaitList>,
}

impl WaitQueue {
    /// An empty queue.
    pub fn new() -> WaitQueue {
        WaitQueue::default()
    }

    /// Registers `pt`'s poller (from a `poll` method); `source` is the object that owns this
    /// queue and takes the poller off it through [`WaitSource::remove_waiter`] (call
    /// [`WaitQueue::remove`] there).
    pub fn register(&self, pt: &mut PollTable<'_>, source: Arc<dyn WaitSource>) {
        pt.register(&mut self.list.lock(), source);
    }

    /// Takes `w` off the queue.
    pub fn remove(&self, w: &Arc<dyn Waker>) {
        self.list.lock().remove(w);
    }

    /// Wakes the pollers interested in `key`. Call it after the state changed.
    pub fn wake(&self, key: PollEvents) {
        self.list.lock().wake(key);
    }
}
