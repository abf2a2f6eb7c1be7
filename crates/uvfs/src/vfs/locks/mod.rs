//! Advisory file locks: `flock(2)` locks, POSIX record locks and OFD record locks. Linux:
//! fs/locks.c.
//!
//! # Where the locks live
//! An inode's locks are in its [`LockContext`] (Linux: `inode->i_flctx`), made when the inode
//! is first locked and kept until the inode goes. Inodes are memory-tight, so the context is
//! not a field: it sits in a side table keyed by the inode's address, and one bit of the
//! inode's flag word ([`Inode::has_lock_context`]) says whether it has one. A file that was
//! never locked costs its close one relaxed load of that word, which the close reads anyway.
//!
//! # Owners
//! - `flock` locks belong to the open file description: shared by `dup` and `fork`, released
//!   by `LOCK_UN` through any of its fds or when the description's last reference goes.
//!   Changing a lock's type first releases it, so another owner may take the lock in between
//!   and a failed `LOCK_NB` conversion leaves no lock (Linux: `flock_lock_inode()`).
//! - POSIX locks belong to the fd table of the task that took them (Linux: `current->files`):
//!   threads of [`Task::clone_thread`] share them, a [`Task::fork`]ed task has its own. Any
//!   close of any fd of the inode by that table releases all of them (POSIX's rule), and so
//!   does the table's end.
//! - OFD locks belong to the open file description and go with it.
//!
//! POSIX and OFD locks are one list and conflict with each other; `flock` locks are apart.
//!
//! # Waiting
//! `F_SETLKW` and a blocking `flock` wait on a condition variable of their own, listed in the
//! context in the order they came. Every change that may release something, and every woken
//! waiter once it has tried again, runs [`wake`]: it wakes the waiters whose requests
//! conflict with no lock held and with no other woken waiter's request, so that of waiters
//! that conflict with each other (all the writers of one byte) one is woken, not all of
//! them; no spinning. Linux gets the same from its tree of blocked requests
//! (`__locks_insert_block()`). A waiting task can be
//! interrupted from another thread through its [`InterruptHandle`]: the wait returns `EINTR`
//! having changed nothing. A POSIX waiter is recorded in a global table of waiters
//! ([`BLOCKED`]; Linux: `blocked_hash`) for deadlock detection (`EDEADLK`): before it waits,
//! the chain "the owner of what is in my way waits for ..." is followed up to
//! [`MAX_DEADLK_ITERATIONS`] steps, and if it comes back to the requester the request fails
//! (Linux: `posix_locks_deadlock()`).
//!
//! [`Task::clone_thread`]: super::Task::clone_thread
//! [`Task::fork`]: super::Task::fork

pub(crate) mod posix;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock};

use arc_swap::ArcSwap;
use parking_lot::{Condvar, Mutex, MutexGuard};

use self::posix::{Kind, Owner, RangeLock, RangeLocks};
use super::file::FileDescription;
use super::inode::Inode;
use crate::abi::{Errno, Result};
use crate::sync::addr_hash::AddrBuild;

/// Steps of the deadlock detector's walk along the chain of waiters (Linux:
/// `MAX_DEADLK_ITERATIONS`): a longer cycle is not reported.
pub(crate) const MAX_DEADLK_ITERATIONS: usize = 10;

/// Shards of the side table of lock contexts (a power of two).
const SHARDS: usize = 64;

/// The advisory locks of one inode (Linux: `struct file_lock_context`).
#[derive(Default)]
pub(crate) struct LockContext {
    /// Protects: the record locks, the `flock` locks and the waiters.
    /// Order: before [`BLOCKED`] and `Interrupt::waiting_on`.
    state: Mutex<LockState>,
}

#[derive(Default)]
struct LockState {
    posix: RangeLocks,
    /// `flock` locks: the open file description (by address) and the kind.
    flock: Vec<(usize, Kind)>,
    /// Tasks waiting for a lock of this inode, in the order they began to wait.
    waiters: Vec<Waiter>,
    /// [`wake`]'s buffers, empty between calls.
    scratch_woken: Vec<Request>,
    scratch_changes: Vec<(u64, Option<Owner>)>,
}

/// A lock a task waits to take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Request {
    /// A POSIX or OFD record lock over `start..=end`.
    Range {
        owner: Owner,
        kind: Kind,
        start: i64,
        end: i64,
    },
    /// A `flock` lock of the open file description at `file`.
    Flock { file: usize, kind: Kind },
}

impl Request {
    /// True if granting both requests would give two owners conflicting locks (record and
    /// `flock` locks never conflict with each other).
    fn conflicts(&self, other: &Request) -> bool {
        match (*self, *other) {
            (
                Request::Range {
                    owner: a,
                    kind: ka,
                    start: sa,
                    end: ea,
                },
                Request::Range {
                    owner: b,
                    kind: kb,
                    start: sb,
                    end: eb,
                },
            ) => a != b && ka.conflicts(kb) && sa <= eb && sb <= ea,
            (Request::Flock { file: a, kind: ka }, Request::Flock { file: b, kind: kb }) => {
                a != b && ka.conflicts(kb)
            }
            _ => false,
        }
    }

    /// The owner a request in the way of another is charged to.
    fn owner(&self) -> Owner {
        match *self {
            Request::Range { owner, .. } => owner,
            Request::Flock { file, .. } => Owner::File(file),
        }
    }
}

/// One task waiting in a [`LockContext`] (Linux: a request on a blocker's
/// `flc_blocked_requests`).
struct Waiter {
    /// This wait, unique over all contexts (its key in [`BLOCKED`]).
    token: u64,
    request: Request,
    /// Woken to try again and not yet run: the waiters whose requests conflict with this one
    /// stay asleep until it has tried (Linux keeps them blocked under it), so that a release
    /// wakes one of a group of conflicting waiters, not all of them.
    woken: bool,
    /// The owner this waiter is recorded in [`BLOCKED`] as waiting for; `None` if it is not
    /// recorded (woken, or not a POSIX request).
    blocker: Option<Owner>,
    /// What the waiter sleeps on (one each, so that a wake-up reaches only its waiter).
    cond: Arc<Condvar>,
}

/// One shard of the side table: inode address to lock context.
type ContextMap = HashMap<usize, Arc<LockContext>, AddrBuild>;

/// The side table: inode address to its lock context, in shards replaced as a whole on each
/// change (copy on write), so that a lock call finds its context without taking a lock or
/// writing a count another thread's call writes: an `ArcSwap` load (a debt slot of the calling
/// thread's own) and a hash probe. Changes are rare: an inode's first lock, and the inode's
/// end.
static CONTEXTS: LazyLock<[Shard; SHARDS]> =
    LazyLock::new(|| std::array::from_fn(|_| Shard(ArcSwap::from_pointee(ContextMap::default()))));

/// Serialises changes of [`CONTEXTS`].
/// Order: leaf (taken with no lock held: an inode's first lock, or the inode's drop).
static CONTEXTS_LOCK: Mutex<()> = Mutex::new(());

/// One shard of [`CONTEXTS`], alone in its cache-line pair, so that replacing one shard never
/// writes the line another shard's readers load.
#[repr(align(128))]
struct Shard(ArcSwap<ContextMap>);

fn shard(inode: &Inode) -> (usize, &'static ArcSwap<ContextMap>) {
    let key = std::ptr::from_ref(inode) as usize;
    // Inodes are 128-byte blocks: skip the low bits that are the same for all.
    (key, &CONTEXTS[(key >> 7) % SHARDS].0)
}

/// Runs `f` on the inode's lock context, if it has one; the context is borrowed from the
/// table (it stays there until the inode goes, and the caller holds the inode).
///
/// # Fast path
/// One relaxed load of the inode's flag word when the inode was never locked. The flag is set
/// after the context is published and before any lock is taken, so a task that took a lock (or
/// learnt of one through any synchronisation) finds it.
#[inline]
fn with_context<R>(inode: &Inode, f: impl FnOnce(&Arc<LockContext>) -> R) -> Option<R> {
    if !inode.has_lock_context() {
        return None;
    }
    with_context_slow(inode, f)
}

#[cold]
fn with_context_slow<R>(inode: &Inode, f: impl FnOnce(&Arc<LockContext>) -> R) -> Option<R> {
    let (key, shard) = shard(inode);
    shard.load().get(&key).map(f)
}

/// Runs `f` on the inode's lock context, made on first use (Linux:
/// `locks_get_lock_context()`).
fn with_context_or_make<R>(inode: &Inode, f: impl FnOnce(&Arc<LockContext>) -> R) -> R {
    let (key, shard) = shard(inode);
    if inode.has_lock_context() {
        if let Some(ctx) = shard.load().get(&key) {
            return f(ctx);
        }
    }
    f(&make_context(inode, key, shard))
}

/// Publishes a context for `inode` (the first lock of the inode), or finds the one another
/// call published meanwhile.
#[cold]
fn make_context(inode: &Inode, key: usize, shard: &ArcSwap<ContextMap>) -> Arc<LockContext> {
    let _g = CONTEXTS_LOCK.lock();
    let cur = shard.load();
    let ctx = match cur.get(&key) {
        Some(c) => c.clone(),
        None => {
            let ctx = Arc::<LockContext>::default();
            let mut m = ContextMap::clone(&cur);
            m.insert(key, ctx.clone());
            shard.store(Arc::new(m));
            ctx
        }
    };
    inode.mark_lock_context();
    ctx
}

/// Forgets the context of an inode that is going away (from `Inode`'s drop, after which its
/// address may be reused). A call still borrowing it from the old shard keeps that shard, and
/// the context with it, until it returns.
#[cold]
pub(crate) fn forget_context(inode: &Inode) {
    let (key, shard) = shard(inode);
    let old = {
        let _g = CONTEXTS_LOCK.lock();
        let cur = shard.load_full();
        if !cur.contains_key(&key) {
            return;
        }
        let mut m = ContextMap::clone(&cur);
        m.remove(&key);
        shard.swap(Arc::new(m))
    };
    // The old shard, and with it maybe the context's last count, go after the lock.
    drop(old);
}

/// A waiter on a POSIX lock, for deadlock detection (Linux: a request on `blocked_hash`).
struct Blocked {
    /// The fd table of the waiting task.
    owner: u64,
    /// This wait (one owner may have several waiting threads).
    token: u64,
    /// The owner of what is in its way (a lock, or a woken waiter's request).
    blocker: Owner,
}

/// The POSIX waiters (Linux: `blocked_hash` under `blocked_lock_lock`).
/// Protects: the list. Order: after `LockContext::state`; leaf.
static BLOCKED: Mutex<Vec<Blocked>> = Mutex::new(Vec::new());

static NEXT_TOKEN: AtomicU64 = AtomicU64::new(1);

/// What the fd table `owner` waits for: the owner of the lock in the way of its latest wait.
fn waiting_for(blocked: &[Blocked], owner: Owner) -> Option<Owner> {
    let Owner::Files(id) = owner else {
        // OFD requests never wait in the table (Linux: `locks_insert_global_blocked()`
        // takes POSIX requests only).
        return None;
    };
    blocked
        .iter()
        .rev()
        .find(|b| b.owner == id)
        .map(|b| b.blocker)
}

/// True if `caller` waiting for a lock of `blocker` closes a cycle of waiters (Linux:
/// `posix_locks_deadlock()`).
fn deadlock(blocked: &[Blocked], caller: u64, blocker: Owner) -> bool {
    let mut at = blocker;
    for step in 0.. {
        let Some(next) = waiting_for(blocked, at) else {
            return false;
        };
        if step > MAX_DEADLK_ITERATIONS {
            return false;
        }
        if next == Owner::Files(caller) {
            return true;
        }
        at = next;
    }
    unreachable!("the loop returns")
}

/// Something a task blocks in (a lock context, a pipe) that an interrupt must wake.
pub(crate) trait InterruptWake: Send + Sync {
    /// Wakes every waiter, taking the lock under which waiters check
    /// [`Interrupt::take`] before they sleep, so that none misses the wake-up.
    fn wake_for_interrupt(&self);
}

impl InterruptWake for LockContext {
    fn wake_for_interrupt(&self) {
        // Under the state lock: a waiter checks `pending` under it before it sleeps, so it
        // either sees the flag or is asleep when this notifies. The waiters not interrupted
        // find themselves not woken and sleep again.
        let st = self.state.lock();
        for w in &st.waiters {
            w.cond.notify_one();
        }
    }
}

/// What makes a blocked lock or pipe wait of one task return `EINTR`.
pub(crate) struct Interrupt {
    /// The atomics and lock of the `sync` facade, so that the model checks of the waits
    /// (`vfs::poll_check`) see its orderings.
    pending: crate::sync::atomic::AtomicBool,
    /// What the task waits in, while it is in a blocking lock or pipe call.
    /// Protects: itself. Order: leaf (the interrupter releases it before it takes the
    /// waited object's lock; a pipe waiter takes it under `Pipe::state`, a lock waiter
    /// under `LockContext::state`).
    waiting_on: crate::sync::lock::Mutex<Option<Arc<dyn InterruptWake>>>,
}

impl Interrupt {
    pub(crate) fn new() -> Interrupt {
        Interrupt {
            pending: crate::sync::atomic::AtomicBool::new(false),
            waiting_on: crate::sync::lock::Mutex::new(None),
        }
    }

    /// Clears the pending interrupt; true if there was one.
    pub(crate) fn take(&self) -> bool {
        self.pending
            .swap(false, crate::sync::atomic::Ordering::SeqCst)
    }
}

impl std::fmt::Debug for Interrupt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Interrupt")
    }
}

/// A handle that interrupts one task's blocking call (lock, pipe, splice, poll, epoll, eventfd)
/// from any thread (the embedder's signal). See [`Task::interrupt_handle`](super::Task::interrupt_handle).
#[derive(Clone)]
pub struct InterruptHandle(pub(crate) Arc<Interrupt>);

impl InterruptHandle {
    /// Interrupts the task: its blocked `F_SETLKW`, `F_OFD_SETLKW` or blocking `flock`
    /// returns `EINTR` having taken nothing; its blocked pipe or FIFO read, write or open,
    /// `splice` or `tee` returns `EINTR` if it moved nothing, else the count it moved; its
    /// blocked `poll`, `ppoll`, `epoll_wait` or eventfd read or write returns `EINTR`
    /// (`epoll_wait` returns events instead if some are ready). If none is blocked
    /// now, the interrupt stays pending until a call of the task is about to wait (which
    /// then returns `EINTR`) or [`Task::take_interrupt`](super::Task::take_interrupt) clears it. Calls that do not
    /// wait leave it pending.
    pub fn interrupt(&self) {
        self.0
            .pending
            .store(true, crate::sync::atomic::Ordering::SeqCst);
        let target = self.0.waiting_on.lock().clone();
        if let Some(target) = target {
            target.wake_for_interrupt();
        }
    }
}

impl std::fmt::Debug for InterruptHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InterruptHandle")
            .field(
                "pending",
                &self.0.pending.load(crate::sync::atomic::Ordering::Relaxed),
            )
            .finish()
    }
}

/// Whether a lock call waits for a conflicting lock to go.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Wait<'a> {
    /// Fail with `EAGAIN` (`F_SETLK`, `LOCK_NB`).
    No,
    /// Wait; interruptible through the task's interrupt if it has one.
    Yes(Option<&'a Interrupt>),
}

/// Marks a task as waiting in `ctx` for the length of a blocking call.
pub(crate) struct WaitingOn<'a>(Option<&'a Interrupt>);

impl<'a> WaitingOn<'a> {
    pub(crate) fn enter(intr: Option<&'a Interrupt>, ctx: Arc<dyn InterruptWake>) -> WaitingOn<'a> {
        if let Some(i) = intr {
            *i.waiting_on.lock() = Some(ctx);
        }
        WaitingOn(intr)
    }
}

impl Drop for WaitingOn<'_> {
    fn drop(&mut self) {
        if let Some(i) = self.0 {
            let old = i.waiting_on.lock().take();
            drop(old);
        }
    }
}

/// Waits in `ctx` until a [`wake`] finds that `request` may be granted, or an interrupt.
/// `blocker` is the owner in the way for a POSIX request, `None` for others: a POSIX waiter
/// is recorded in [`BLOCKED`] for the deadlock check while it sleeps.
///
/// On `Ok` the caller must try the request again and then call [`wake`] whatever the outcome:
/// the waiters that conflict with this request slept on while it was woken.
///
/// # Errors
/// `EDEADLK` if waiting would close a cycle of POSIX waiters, `EINTR` if interrupted before
/// or during the wait; nothing is left recorded.
fn wait_turn<'a>(
    ctx: &Arc<LockContext>,
    st: &mut MutexGuard<'_, LockState>,
    request: Request,
    blocker: Option<Owner>,
    intr: Option<&'a Interrupt>,
    waiting: &mut Option<WaitingOn<'a>>,
) -> Result<()> {
    if waiting.is_none() {
        // Under the state lock, before `pending` is read below: an interrupter that finds no
        // context here set `pending` first, and this wait sees it.
        *waiting = Some(WaitingOn::enter(intr, ctx.clone()));
    }
    if intr.is_some_and(Interrupt::take) {
        return Err(Errno::EINTR);
    }
    // The token is drawn only by a call that waits: a lock taken at once writes no shared
    // counter.
    let token = NEXT_TOKEN.fetch_add(1, Ordering::Relaxed);
    if let (Some(blocker), Owner::Files(me)) = (blocker, request.owner()) {
        let mut blocked = BLOCKED.lock();
        if deadlock(&blocked, me, blocker) {
            return Err(Errno::EDEADLK);
        }
        blocked.push(Blocked {
            owner: me,
            token,
            blocker,
        });
    }
    let cond = Arc::new(Condvar::new());
    st.waiters.push(Waiter {
        token,
        request,
        woken: false,
        blocker: blocker.filter(|_| matches!(request.owner(), Owner::Files(_))),
        cond: cond.clone(),
    });
    let woken = loop {
        cond.wait(st);
        let me = st
            .waiters
            .iter()
            .find(|w| w.token == token)
            .expect("a waiter's entry stays until it leaves");
        if me.woken {
            break true;
        }
        if intr.is_some_and(|i| i.pending.load(crate::sync::atomic::Ordering::SeqCst)) {
            break false;
        }
    };
    leave(st, token);
    if intr.is_some_and(Interrupt::take) {
        if woken {
            // The waiters held back for this one are due a look.
            wake(st);
        }
        return Err(Errno::EINTR);
    }
    Ok(())
}

/// Takes the waiter `token` off the context's list and out of [`BLOCKED`] (its wait ended).
fn leave(st: &mut LockState, token: u64) {
    let at = st
        .waiters
        .iter()
        .position(|w| w.token == token)
        .expect("a waiter's entry stays until it leaves");
    let me = st.waiters.remove(at);
    if me.blocker.is_some() {
        BLOCKED.lock().retain(|b| b.token != token);
    }
}

/// After a change of the locks of a context, or when a woken waiter has tried again: wakes
/// each waiter whose request conflicts with no lock held and with no woken waiter's request,
/// and records in [`BLOCKED`] whom each POSIX waiter left asleep waits for (Linux:
/// `locks_wake_up_blocks()` and the tree of blocked requests that `__locks_insert_block()`
/// builds: of the waiters that conflict with each other, one is woken).
///
/// # Fast path
/// One length test when nobody waits. Otherwise no system call unless a waiter is woken, and
/// [`BLOCKED`] is taken only where a waiter's record changes.
fn wake(st: &mut LockState) {
    if st.waiters.is_empty() {
        return;
    }
    // Buffers kept in the state between calls: a wake-up allocates nothing.
    let mut woken = std::mem::take(&mut st.scratch_woken);
    let mut changes = std::mem::take(&mut st.scratch_changes);
    woken.extend(st.waiters.iter().filter(|w| w.woken).map(|w| w.request));
    for i in 0..st.waiters.len() {
        if st.waiters[i].woken {
            continue;
        }
        let request = st.waiters[i].request;
        let in_way = held_in_way(st, &request).or_else(|| {
            woken
                .iter()
                .find(|r| r.conflicts(&request))
                .map(Request::owner)
        });
        let w = &mut st.waiters[i];
        match in_way {
            None => {
                w.woken = true;
                w.cond.notify_one();
                woken.push(request);
                if w.blocker.take().is_some() {
                    changes.push((w.token, None));
                }
            }
            Some(owner) => {
                if w.blocker.is_some_and(|b| b != owner) {
                    w.blocker = Some(owner);
                    changes.push((w.token, Some(owner)));
                }
            }
        }
    }
    if !changes.is_empty() {
        // `changes` is in token order: a context's waiters are listed in the order their
        // tokens were drawn (under its state lock).
        BLOCKED
            .lock()
            .retain_mut(|b| match changes.binary_search_by_key(&b.token, |c| c.0) {
                Ok(i) => match changes[i].1 {
                    None => false,
                    Some(owner) => {
                        b.blocker = owner;
                        true
                    }
                },
                Err(_) => true,
            });
    }
    woken.clear();
    changes.clear();
    st.scratch_woken = woken;
    st.scratch_changes = changes;
}

/// The owner of the first lock held that conflicts with `request`, if any.
fn held_in_way(st: &LockState, request: &Request) -> Option<Owner> {
    match *request {
        Request::Range {
            owner,
            kind,
            start,
            end,
        } => st
            .posix
            .first_conflict(owner, kind, start, end)
            .map(|l| l.owner),
        Request::Flock { file, kind } => st
            .flock
            .iter()
            .find(|&&(f, k)| f != file && k.conflicts(kind))
            .map(|&(f, _)| Owner::File(f)),
    }
}

/// A record-lock request over `start..=end` (both checked: `0 <= start <= end`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct RangeRequest {
    pub(crate) owner: Owner,
    pub(crate) pid: i32,
    /// `None`: unlock.
    pub(crate) kind: Option<Kind>,
    pub(crate) start: i64,
    pub(crate) end: i64,
}

/// Applies a record-lock request to `inode` (Linux: `posix_lock_inode()`).
///
/// # Errors
/// `EAGAIN` on a conflict with [`Wait::No`]; `EDEADLK` if waiting would close a cycle of
/// POSIX waiters; `EINTR` if interrupted while waiting.
pub(crate) fn posix_lock(inode: &Inode, req: RangeRequest, wait: Wait<'_>) -> Result<()> {
    match req.kind {
        None => with_context(inode, |ctx| posix_lock_in(ctx, req, wait)).unwrap_or(Ok(())),
        Some(_) => with_context_or_make(inode, |ctx| posix_lock_in(ctx, req, wait)),
    }
}

/// [`posix_lock`] in the inode's context.
fn posix_lock_in(ctx: &Arc<LockContext>, req: RangeRequest, wait: Wait<'_>) -> Result<()> {
    let mut waiting = None;
    let mut st = ctx.state.lock();
    // True after a wait: this request was woken, and the waiters that conflict with it are
    // due a look whatever it finds.
    let mut woken = false;
    loop {
        if let Some(kind) = req.kind {
            if let Some(c) = st.posix.first_conflict(req.owner, kind, req.start, req.end) {
                let blocker = c.owner;
                let Wait::Yes(intr) = wait else {
                    return Err(Errno::EAGAIN);
                };
                if woken {
                    wake(&mut st);
                }
                let request = Request::Range {
                    owner: req.owner,
                    kind,
                    start: req.start,
                    end: req.end,
                };
                wait_turn(ctx, &mut st, request, Some(blocker), intr, &mut waiting)?;
                woken = true;
                continue;
            }
        }
        // A lock over bytes where the owner held none releases nothing, so it lets no
        // waiter in (Linux wakes only the waiters of the owner's locks it changes). Looked
        // for only when someone waits: with nobody waiting `wake` does nothing anyway.
        let adds_only = !st.waiters.is_empty()
            && req.kind.is_some()
            && st.posix.first_own(req.owner, req.start, req.end).is_none();
        let changed = st
            .posix
            .set(req.owner, req.pid, req.kind, req.start, req.end);
        if (changed && !adds_only) || woken {
            wake(&mut st);
        }
        return Ok(());
    }
}

/// The lock `F_GETLK` reports for a request (Linux: `posix_test_lock()`): the first lock of
/// another owner it conflicts with; for `kind` `None` (`F_OFD_GETLK` with `F_UNLCK`), the
/// first of the owner's own locks it overlaps.
pub(crate) fn posix_test(inode: &Inode, req: RangeRequest) -> Option<RangeLock> {
    with_context(inode, |ctx| {
        let st = ctx.state.lock();
        match req.kind {
            Some(kind) => st
                .posix
                .first_conflict(req.owner, kind, req.start, req.end)
                .copied(),
            None => st.posix.first_own(req.owner, req.start, req.end).copied(),
        }
    })
    .flatten()
}

/// `flock(2)` on the open file `file` of `inode`: `kind` `None` releases (Linux:
/// `flock_lock_inode()`).
///
/// # Errors
/// `EWOULDBLOCK` on a conflict with [`Wait::No`]; `EINTR` if interrupted while waiting.
pub(crate) fn flock(inode: &Inode, file: usize, kind: Option<Kind>, wait: Wait<'_>) -> Result<()> {
    match kind {
        None => with_context(inode, |ctx| flock_in(ctx, file, kind, wait)).unwrap_or(Ok(())),
        Some(_) => with_context_or_make(inode, |ctx| flock_in(ctx, file, kind, wait)),
    }
}

/// [`flock`] in the inode's context.
fn flock_in(ctx: &Arc<LockContext>, file: usize, kind: Option<Kind>, wait: Wait<'_>) -> Result<()> {
    let mut waiting = None;
    let mut st = ctx.state.lock();
    // As in `posix_lock`.
    let mut woken = false;
    loop {
        // The description's own lock: kept if of the same kind, else released first (a
        // conversion is not atomic).
        if let Some(i) = st.flock.iter().position(|&(f, _)| f == file) {
            if Some(st.flock[i].1) == kind {
                if woken {
                    wake(&mut st);
                }
                return Ok(());
            }
            st.flock.remove(i);
            wake(&mut st);
        }
        let Some(kind) = kind else {
            return Ok(());
        };
        if st
            .flock
            .iter()
            .any(|&(f, k)| f != file && k.conflicts(kind))
        {
            let Wait::Yes(intr) = wait else {
                return Err(Errno::EWOULDBLOCK);
            };
            if woken {
                wake(&mut st);
            }
            let request = Request::Flock { file, kind };
            wait_turn(ctx, &mut st, request, None, intr, &mut waiting)?;
            woken = true;
            continue;
        }
        st.flock.push((file, kind));
        if woken {
            wake(&mut st);
        }
        return Ok(());
    }
}

/// Tasks waiting for a lock of `inode` (for tests that must know a waiter is in place).
pub(crate) fn waiters(inode: &Inode) -> u32 {
    with_context(inode, |c| {
        u32::try_from(c.state.lock().waiters.len()).unwrap_or(u32::MAX)
    })
    .unwrap_or(0)
}

/// Releases every POSIX lock of the fd table `table` on the inode of `file` (a close of any
/// of its fds by that table, or the table's end; Linux: `locks_remove_posix()`). A close of an
/// `O_PATH` fd releases nothing: Linux's `filp_flush()` skips `FMODE_PATH` files.
///
/// # Fast path
/// One relaxed load (the inode's flag word) for an inode that was never locked.
#[inline]
pub(crate) fn remove_posix(file: &FileDescription, table: u64) {
    if file.inode().has_lock_context() {
        remove_posix_slow(file, table);
    }
}

#[cold]
fn remove_posix_slow(file: &FileDescription, table: u64) {
    if file.fmode().path_only {
        return;
    }
    with_context_slow(file.inode(), |ctx| remove_owner(ctx, Owner::Files(table)));
}

fn remove_owner(ctx: &LockContext, owner: Owner) {
    let mut st = ctx.state.lock();
    if st.posix.remove_owner(owner) {
        wake(&mut st);
    }
    drop(st);
}

/// Releases the OFD and `flock` locks of a file description that is going away (Linux:
/// `locks_remove_file()`).
///
/// # Fast path
/// As [`remove_posix`].
#[inline]
pub(crate) fn remove_file(file: &FileDescription) {
    if file.inode().has_lock_context() {
        remove_file_slow(file);
    }
}

#[cold]
fn remove_file_slow(file: &FileDescription) {
    let addr = std::ptr::from_ref(file) as usize;
    with_context_slow(file.inode(), |ctx| {
        let mut st = ctx.state.lock();
        let ofd = st.posix.remove_owner(Owner::File(addr));
        let before = st.flock.len();
        st.flock.retain(|&(f, _)| f != addr);
        if ofd || st.flock.len() != before {
            wake(&mut st);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Tokens of the waiters these tests make: far above what `NEXT_TOKEN` hands out, so that
    /// the tests that share [`BLOCKED`] with them never see each other's records.
    static TEST_TOKENS: AtomicU64 = AtomicU64::new(1 << 62);

    fn write_of(owner: u64, start: i64, end: i64) -> Request {
        range_of(owner, Kind::Write, start, end)
    }

    fn range_of(owner: u64, kind: Kind, start: i64, end: i64) -> Request {
        Request::Range {
            owner: Owner::Files(owner),
            kind,
            start,
            end,
        }
    }

    /// Lists a waiter for `request` as `wait_turn` does, recorded in [`BLOCKED`] as waiting
    /// for `blocker`; returns its token.
    fn add_waiter(st: &mut LockState, request: Request, blocker: Owner) -> u64 {
        let token = TEST_TOKENS.fetch_add(1, Ordering::Relaxed);
        let Owner::Files(me) = request.owner() else {
            panic!("POSIX waiters only")
        };
        BLOCKED.lock().push(Blocked {
            owner: me,
            token,
            blocker,
        });
        st.waiters.push(Waiter {
            token,
            request,
            woken: false,
            blocker: Some(blocker),
            cond: Arc::new(Condvar::new()),
        });
        token
    }

    fn woken(st: &LockState) -> Vec<u64> {
        st.waiters
            .iter()
            .filter(|w| w.woken)
            .map(|w| w.token)
            .collect()
    }

    /// Whom `token` is recorded in [`BLOCKED`] as waiting for.
    fn recorded(token: u64) -> Option<Owner> {
        BLOCKED
            .lock()
            .iter()
            .find(|b| b.token == token)
            .map(|b| b.blocker)
    }

    fn clean_up(st: &mut LockState) {
        let tokens: Vec<u64> = st.waiters.iter().map(|w| w.token).collect();
        BLOCKED.lock().retain(|b| !tokens.contains(&b.token));
    }

    #[test]
    fn of_writers_waiting_for_one_byte_a_release_wakes_one() {
        let mut st = LockState::default();
        st.posix.set(Owner::Files(1), 1, Some(Kind::Write), 0, 0);
        let tokens: Vec<u64> = (2..7)
            .map(|o| add_waiter(&mut st, write_of(o, 0, 0), Owner::Files(1)))
            .collect();
        wake(&mut st);
        assert_eq!(woken(&st), [], "the byte is still held");
        st.posix.set(Owner::Files(1), 1, None, 0, 0);
        wake(&mut st);
        assert_eq!(woken(&st), [tokens[0]], "the first waiter, alone");
        // The others now wait for the woken one's owner, as Linux's deadlock check sees a
        // request blocked under another; the woken one is out of the table.
        assert_eq!(recorded(tokens[0]), None);
        for &t in &tokens[1..] {
            assert_eq!(recorded(t), Some(Owner::Files(2)));
        }
        wake(&mut st);
        assert_eq!(woken(&st), [tokens[0]], "a second look wakes no one more");
        // The woken waiter finds the byte taken again (the releaser took it back first) and
        // waits again: the others go back to waiting for the holder, and nobody is woken.
        st.posix.set(Owner::Files(1), 1, Some(Kind::Write), 0, 0);
        leave(&mut st, tokens[0]);
        let again = add_waiter(&mut st, write_of(2, 0, 0), Owner::Files(1));
        wake(&mut st);
        assert_eq!(woken(&st), []);
        for &t in tokens[1..].iter().chain([&again]) {
            assert_eq!(recorded(t), Some(Owner::Files(1)));
        }
        clean_up(&mut st);
    }

    #[test]
    fn readers_waiting_for_a_writer_are_woken_together() {
        let mut st = LockState::default();
        st.posix.set(Owner::Files(1), 1, Some(Kind::Write), 0, 9);
        st.posix.set(Owner::Files(7), 7, Some(Kind::Write), 20, 20);
        let readers: Vec<u64> = (2..5)
            .map(|o| add_waiter(&mut st, range_of(o, Kind::Read, 0, 9), Owner::Files(1)))
            .collect();
        let writer = add_waiter(&mut st, write_of(5, 5, 5), Owner::Files(1));
        let elsewhere = add_waiter(&mut st, write_of(6, 20, 20), Owner::Files(7));
        st.posix.set(Owner::Files(1), 1, None, 0, 9);
        wake(&mut st);
        assert_eq!(
            woken(&st),
            readers,
            "the readers, not the writer among them"
        );
        assert_eq!(recorded(writer), Some(Owner::Files(2)));
        assert_eq!(recorded(elsewhere), Some(Owner::Files(7)), "untouched");
        clean_up(&mut st);
    }

    /// A woken waiter that finds its way blocked again lets through the waiters it held back
    /// that are free to go (Linux: `__locks_insert_block()` wakes the request's own
    /// waiters).
    #[test]
    fn a_woken_waiter_that_must_wait_again_lets_the_others_look() {
        let mut st = LockState::default();
        // 1 holds byte 5; a (2) waits for 0..=10, b (3) for byte 5.
        st.posix.set(Owner::Files(1), 1, Some(Kind::Write), 5, 5);
        let a = add_waiter(&mut st, write_of(2, 0, 10), Owner::Files(1));
        let b = add_waiter(&mut st, write_of(3, 5, 5), Owner::Files(1));
        st.posix.set(Owner::Files(1), 1, None, 5, 5);
        wake(&mut st);
        assert_eq!(woken(&st), [a], "b conflicts with a");
        // Before a runs, 1 takes byte 0 (in a's way, not in b's).
        st.posix.set(Owner::Files(1), 1, Some(Kind::Write), 0, 0);
        leave(&mut st, a);
        let a = add_waiter(&mut st, write_of(2, 0, 10), Owner::Files(1));
        wake(&mut st);
        assert_eq!(woken(&st), [b]);
        assert_eq!(recorded(a), Some(Owner::Files(1)));
        clean_up(&mut st);
    }

    /// Lists a waiter for a `flock` lock of `kind` through the description at `file`, as
    /// `flock_in` does; returns its token.
    fn add_flock_waiter(st: &mut LockState, file: usize, kind: Kind) -> u64 {
        let token = TEST_TOKENS.fetch_add(1, Ordering::Relaxed);
        st.waiters.push(Waiter {
            token,
            request: Request::Flock { file, kind },
            woken: false,
            blocker: None,
            cond: Arc::new(Condvar::new()),
        });
        token
    }

    /// A lock state with one `flock` lock held, of `kind` through the description at `file`.
    fn flock_held(file: usize, kind: Kind) -> LockState {
        let mut st = LockState::default();
        st.flock.push((file, kind));
        st
    }

    /// `flock` waiters are woken as record waiters are: of those that conflict with each
    /// other one, the shared ones together, and two waiters through one description (two
    /// threads, one owner) do not hold each other back.
    #[test]
    fn flock_waiters_conflict_by_description_and_kind() {
        let mut st = flock_held(100, Kind::Write);
        let writers = [
            add_flock_waiter(&mut st, 200, Kind::Write),
            add_flock_waiter(&mut st, 300, Kind::Write),
        ];
        wake(&mut st);
        assert_eq!(woken(&st), [], "the lock is still held");
        st.flock.clear();
        wake(&mut st);
        assert_eq!(woken(&st), [writers[0]], "the first writer, alone");

        let mut st = flock_held(100, Kind::Write);
        let readers = [
            add_flock_waiter(&mut st, 200, Kind::Read),
            add_flock_waiter(&mut st, 300, Kind::Read),
        ];
        let writer = add_flock_waiter(&mut st, 400, Kind::Write);
        st.flock.clear();
        wake(&mut st);
        assert_eq!(woken(&st), readers, "the readers, not the writer");
        assert!(!woken(&st).contains(&writer));

        // A shared lock held lets the shared waiters in, and not the exclusive one.
        let mut st = flock_held(100, Kind::Read);
        let reader = add_flock_waiter(&mut st, 200, Kind::Read);
        let writer = add_flock_waiter(&mut st, 300, Kind::Write);
        wake(&mut st);
        assert_eq!(
            woken(&st),
            [reader],
            "past the shared lock, the reader alone"
        );
        assert!(!woken(&st).contains(&writer));

        let mut st = flock_held(100, Kind::Write);
        let one_owner = [
            add_flock_waiter(&mut st, 200, Kind::Write),
            add_flock_waiter(&mut st, 200, Kind::Write),
        ];
        st.flock.clear();
        wake(&mut st);
        assert_eq!(woken(&st), one_owner, "one description's waiters together");
    }

    /// A wait that ends lets go of what it waited in: the task's interrupt no longer names it
    /// (a later interrupt wakes nothing there) and does not keep it alive.
    #[test]
    fn a_wait_that_ends_lets_go_of_what_it_waited_in() {
        let intr = Interrupt::new();
        let ctx = Arc::new(LockContext::default());
        {
            let _w = WaitingOn::enter(Some(&intr), ctx.clone());
            assert!(intr.waiting_on.lock().is_some());
            assert_eq!(Arc::strong_count(&ctx), 2);
        }
        assert!(intr.waiting_on.lock().is_none());
        assert_eq!(Arc::strong_count(&ctx), 1);
    }

    /// The public handle's `Debug` shows whether an interrupt is pending.
    #[test]
    fn an_interrupt_handle_shows_its_pending_interrupt() {
        let h = InterruptHandle(Arc::new(Interrupt::new()));
        assert_eq!(format!("{h:?}"), "InterruptHandle { pending: false }");
        h.interrupt();
        assert_eq!(format!("{h:?}"), "InterruptHandle { pending: true }");
        assert_eq!(format!("{:?}", h.0), "Interrupt");
    }

    #[test]
    fn flock_waiters_and_record_waiters_do_not_hold_each_other_back() {
        let mut st = LockState::default();
        st.posix.set(Owner::Files(1), 1, Some(Kind::Write), 0, 0);
        let record = add_waiter(&mut st, write_of(2, 0, 0), Owner::Files(1));
        st.flock.push((100, Kind::Write));
        let token = TEST_TOKENS.fetch_add(1, Ordering::Relaxed);
        st.waiters.push(Waiter {
            token,
            request: Request::Flock {
                file: 200,
                kind: Kind::Write,
            },
            woken: false,
            blocker: None,
            cond: Arc::new(Condvar::new()),
        });
        st.flock.clear();
        st.posix.set(Owner::Files(1), 1, None, 0, 0);
        wake(&mut st);
        assert_eq!(woken(&st), [record, token]);
        clean_up(&mut st);
    }

    fn blocked(owner: u64, blocker: u64) -> Blocked {
        Blocked {
            owner,
            token: 0,
            blocker: Owner::Files(blocker),
        }
    }

    #[test]
    fn the_detector_follows_the_chain_of_waiters() {
        // 2 waits for 3, 3 waits for 1: 1 waiting for 2 closes the cycle.
        let b = [blocked(2, 3), blocked(3, 1)];
        assert!(deadlock(&b, 1, Owner::Files(2)));
        assert!(!deadlock(&b, 4, Owner::Files(2)));
        // An OFD lock in the way ends the chain.
        assert!(!deadlock(&b, 1, Owner::File(2)));
    }

    #[test]
    fn the_detector_gives_up_after_its_step_limit() {
        // A chain 2 -> 3 -> ... -> n -> 1.
        let chain = |n: u64| -> Vec<Blocked> {
            (2..n)
                .map(|o| blocked(o, o + 1))
                .chain([blocked(n, 1)])
                .collect()
        };
        assert!(deadlock(&chain(12), 1, Owner::Files(2)));
        assert!(!deadlock(&chain(14), 1, Owner::Files(2)));
    }

    /// Whether the side table holds a context under `key`.
    #[cfg(not(any(loom, feature = "shuttle")))]
    fn in_table(key: usize) -> bool {
        CONTEXTS[(key >> 7) % SHARDS].0.load().contains_key(&key)
    }

    #[cfg(not(any(loom, feature = "shuttle")))]
    #[test]
    fn an_inode_s_end_takes_its_context_out_of_the_table() {
        use crate::abi::{Flock, LockCmd, OpenFlags, AT_FDCWD, F_WRLCK};
        use crate::{Cred, Vfs};
        let vfs = Vfs::new();
        let task = vfs.task(Cred::root());
        let fd = task
            .openat(AT_FDCWD, "/f", OpenFlags::CREAT | OpenFlags::RDWR, 0o644)
            .expect("create");
        let inode = Arc::downgrade(task.files.get(fd).expect("open fd").inode());
        let key = inode.as_ptr() as usize;
        assert!(!in_table(key), "a file never locked has no context");
        let mut lock = Flock {
            l_type: F_WRLCK,
            l_whence: 0,
            l_start: 0,
            l_len: 1,
            l_pid: 0,
        };
        task.fcntl_lock(fd, LockCmd::SetLk, &mut lock)
            .expect("lock");
        assert!(in_table(key), "the first lock publishes the context");
        task.close(fd).expect("close");
        task.unlinkat(AT_FDCWD, "/f", Default::default())
            .expect("unlink");
        assert!(
            crate::vfs::test_fixture::freed(&inode),
            "the inode goes with its last name and file"
        );
        assert!(
            !in_table(key),
            "a context left behind would be found by the next inode at this address"
        );
    }
}
