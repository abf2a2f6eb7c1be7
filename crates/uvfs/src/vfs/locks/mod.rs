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
//! `F_SETLKW` and a blocking `flock` wait on the context's condition variable and are woken
//! by every change that may release something; no spinning. A waiting task can be
//! interrupted from another thread through its [`InterruptHandle`]: the wait returns `EINTR`
//! having changed nothing. A POSIX waiter is recorded in a global table of waiters
//! ([`BLOCKED`]; Linux: `blocked_hash`) for deadlock detection (`EDEADLK`): before it waits,
//! the chain "the owner of the lock in my way waits for a lock of ..." is followed up to
//! [`MAX_DEADLK_ITERATIONS`] steps, and if it comes back to the requester the request fails
//! (Linux: `posix_locks_deadlock()`).
//!
//! [`Task::clone_thread`]: super::Task::clone_thread
//! [`Task::fork`]: super::Task::fork

pub(crate) mod posix;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::{Condvar, Mutex, MutexGuard};

use self::posix::{Kind, Owner, RangeLock, RangeLocks};
use super::file::FileDescription;
use super::inode::Inode;
use crate::abi::{Errno, Result};

/// Steps of the deadlock detector's walk along the chain of waiters (Linux:
/// `MAX_DEADLK_ITERATIONS`): a longer cycle is not reported.
pub(crate) const MAX_DEADLK_ITERATIONS: usize = 10;

/// Shards of the side table of lock contexts (a power of two).
const SHARDS: usize = 16;

/// The advisory locks of one inode (Linux: `struct file_lock_context`).
#[derive(Default)]
pub(crate) struct LockContext {
    /// Protects: the record locks, the `flock` locks and the count of waiters.
    /// Order: before [`BLOCKED`]; taken after `Interrupt::waiting_on` is released.
    state: Mutex<LockState>,
    /// Waiters of this inode's locks, woken by every change that may release a lock.
    cond: Condvar,
}

#[derive(Default)]
struct LockState {
    posix: RangeLocks,
    /// `flock` locks: the open file description (by address) and the kind.
    flock: Vec<(usize, Kind)>,
    /// Tasks waiting on `cond` (a change notifies only if there is one).
    waiters: u32,
}

/// The side table: inode address to its lock context.
/// Protects: the map of its shard. Order: leaf.
static CONTEXTS: [Shard; SHARDS] = [const { Shard(Mutex::new(BTreeMap::new())) }; SHARDS];

/// One shard of [`CONTEXTS`], alone in its cache-line pair: a shard is 32 bytes, and unpadded
/// four of them shared a line pair, so threads locking files of different shards wrote the
/// same line.
#[repr(align(128))]
struct Shard(Mutex<BTreeMap<usize, Arc<LockContext>>>);

fn shard(inode: &Inode) -> (usize, &'static Mutex<BTreeMap<usize, Arc<LockContext>>>) {
    let key = std::ptr::from_ref(inode) as usize;
    // Inodes are 128-byte blocks: skip the low bits that are the same for all.
    (key, &CONTEXTS[(key >> 7) % SHARDS].0)
}

/// The inode's lock context, if it has one.
///
/// # Fast path
/// One relaxed load of the inode's flag word when the inode was never locked. The flag is set
/// under the shard lock before any lock is taken, so a task that took a lock (or learnt of
/// one through any synchronisation) sees it.
#[inline]
fn context_of(inode: &Inode) -> Option<Arc<LockContext>> {
    if !inode.has_lock_context() {
        return None;
    }
    context_of_slow(inode)
}

#[cold]
fn context_of_slow(inode: &Inode) -> Option<Arc<LockContext>> {
    let (key, shard) = shard(inode);
    shard.lock().get(&key).cloned()
}

/// The inode's lock context, made on first use (Linux: `locks_get_lock_context()`).
fn context_or_make(inode: &Inode) -> Arc<LockContext> {
    let (key, shard) = shard(inode);
    let mut map = shard.lock();
    let ctx = map.entry(key).or_default().clone();
    inode.mark_lock_context();
    ctx
}

/// Forgets the context of an inode that is going away (from `Inode`'s drop, after which its
/// address may be reused).
#[cold]
pub(crate) fn forget_context(inode: &Inode) {
    let (key, shard) = shard(inode);
    let ctx = shard.lock().remove(&key);
    drop(ctx);
}

/// A waiter on a POSIX lock, for deadlock detection (Linux: a request on `blocked_hash`).
struct Blocked {
    /// The fd table of the waiting task.
    owner: u64,
    /// This wait (one owner may have several waiting threads).
    token: u64,
    /// The context the waiter waits in, by address.
    ctx: usize,
    /// The owner of the lock in its way.
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
        // Under the state lock: the waiter checks `pending` under it before it waits,
        // so it either sees the flag or is waiting when this notifies.
        let _st = self.state.lock();
        self.cond.notify_all();
    }
}

/// What makes a blocked lock or pipe wait of one task return `EINTR`.
pub(crate) struct Interrupt {
    /// The atomics and lock of the `sync` facade, so that the model checks of the waits
    /// (`vfs::poll_check`) see its orderings.
    pending: crate::sync::atomic::AtomicBool,
    /// What the task waits in, while it is in a blocking lock or pipe call.
    /// Protects: itself. Order: leaf (the interrupter releases it before it takes the
    /// waited object's lock; a pipe waiter takes it under `Pipe::state`).
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

/// Waits once on `ctx`'s condition variable; `EINTR` if interrupted before or during.
fn wait_once(
    ctx: &LockContext,
    st: &mut MutexGuard<'_, LockState>,
    intr: Option<&Interrupt>,
) -> Result<()> {
    if intr.is_some_and(Interrupt::take) {
        return Err(Errno::EINTR);
    }
    st.waiters += 1;
    ctx.cond.wait(st);
    st.waiters -= 1;
    if intr.is_some_and(Interrupt::take) {
        return Err(Errno::EINTR);
    }
    Ok(())
}

/// After a change of `changer`'s locks in `ctx`: wakes the waiters, and takes the POSIX
/// waiters that `changer` was in the way of out of the deadlock table until they look again
/// (Linux: `locks_wake_up_blocks()`).
fn wake(ctx: &Arc<LockContext>, st: &LockState, changer: Option<Owner>) {
    if st.waiters == 0 {
        return;
    }
    if let Some(changer) = changer {
        let addr = Arc::as_ptr(ctx) as usize;
        BLOCKED
            .lock()
            .retain(|b| !(b.ctx == addr && b.blocker == changer));
    }
    ctx.cond.notify_all();
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
    let ctx = match req.kind {
        None => match context_of(inode) {
            Some(c) => c,
            None => return Ok(()),
        },
        Some(_) => context_or_make(inode),
    };
    let intr = match wait {
        Wait::Yes(i) => i,
        Wait::No => None,
    };
    let _waiting = WaitingOn::enter(intr, ctx.clone());
    let mut st = ctx.state.lock();
    loop {
        if let Some(kind) = req.kind {
            if let Some(c) = st.posix.first_conflict(req.owner, kind, req.start, req.end) {
                let blocker = c.owner;
                let Wait::Yes(_) = wait else {
                    return Err(Errno::EAGAIN);
                };
                // The token is drawn only by a call that waits, under `BLOCKED`, which a
                // wait writes anyway: a lock taken at once writes no shared counter.
                let mut token = None;
                if let Owner::Files(me) = req.owner {
                    let mut blocked = BLOCKED.lock();
                    if deadlock(&blocked, me, blocker) {
                        return Err(Errno::EDEADLK);
                    }
                    let t = NEXT_TOKEN.fetch_add(1, Ordering::Relaxed);
                    token = Some(t);
                    blocked.push(Blocked {
                        owner: me,
                        token: t,
                        ctx: Arc::as_ptr(&ctx) as usize,
                        blocker,
                    });
                }
                let r = wait_once(&ctx, &mut st, intr);
                if let Some(t) = token {
                    BLOCKED.lock().retain(|b| b.token != t);
                }
                r?;
                continue;
            }
        }
        if st
            .posix
            .set(req.owner, req.pid, req.kind, req.start, req.end)
        {
            wake(&ctx, &st, Some(req.owner));
        }
        return Ok(());
    }
}

/// The lock `F_GETLK` reports for a request (Linux: `posix_test_lock()`): the first lock of
/// another owner it conflicts with; for `kind` `None` (`F_OFD_GETLK` with `F_UNLCK`), the
/// first of the owner's own locks it overlaps.
pub(crate) fn posix_test(inode: &Inode, req: RangeRequest) -> Option<RangeLock> {
    let ctx = context_of(inode)?;
    let st = ctx.state.lock();
    match req.kind {
        Some(kind) => st
            .posix
            .first_conflict(req.owner, kind, req.start, req.end)
            .copied(),
        None => st.posix.first_own(req.owner, req.start, req.end).copied(),
    }
}

/// `flock(2)` on the open file `file` of `inode`: `kind` `None` releases (Linux:
/// `flock_lock_inode()`).
///
/// # Errors
/// `EWOULDBLOCK` on a conflict with [`Wait::No`]; `EINTR` if interrupted while waiting.
pub(crate) fn flock(inode: &Inode, file: usize, kind: Option<Kind>, wait: Wait<'_>) -> Result<()> {
    let ctx = match kind {
        None => match context_of(inode) {
            Some(c) => c,
            None => return Ok(()),
        },
        Some(_) => context_or_make(inode),
    };
    let intr = match wait {
        Wait::Yes(i) => i,
        Wait::No => None,
    };
    let _waiting = WaitingOn::enter(intr, ctx.clone());
    let mut st = ctx.state.lock();
    loop {
        // The description's own lock: kept if of the same kind, else released first (a
        // conversion is not atomic).
        if let Some(i) = st.flock.iter().position(|&(f, _)| f == file) {
            if Some(st.flock[i].1) == kind {
                return Ok(());
            }
            st.flock.remove(i);
            wake(&ctx, &st, None);
        }
        let Some(kind) = kind else {
            return Ok(());
        };
        if st
            .flock
            .iter()
            .any(|&(f, k)| f != file && k.conflicts(kind))
        {
            let Wait::Yes(_) = wait else {
                return Err(Errno::EWOULDBLOCK);
            };
            wait_once(&ctx, &mut st, intr)?;
            continue;
        }
        st.flock.push((file, kind));
        return Ok(());
    }
}

/// Tasks waiting for a lock of `inode` (for tests that must know a waiter is in place).
pub(crate) fn waiters(inode: &Inode) -> u32 {
    context_of(inode).map_or(0, |c| c.state.lock().waiters)
}

/// Releases every POSIX lock of the fd table `table` on the inode of `file` (a close of any
/// of its fds by that table, or the table's end; Linux: `locks_remove_posix()`).
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
    if let Some(ctx) = context_of_slow(file.inode()) {
        remove_owner(&ctx, Owner::Files(table));
    }
}

fn remove_owner(ctx: &Arc<LockContext>, owner: Owner) {
    let mut st = ctx.state.lock();
    if st.posix.remove_owner(owner) {
        wake(ctx, &st, Some(owner));
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
    let Some(ctx) = context_of_slow(file.inode()) else {
        return;
    };
    let addr = std::ptr::from_ref(file) as usize;
    let mut st = ctx.state.lock();
    let ofd = st.posix.remove_owner(Owner::File(addr));
    let before = st.flock.len();
    st.flock.retain(|&(f, _)| f != addr);
    if ofd || st.flock.len() != before {
        wake(&ctx, &st, Some(Owner::File(addr)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blocked(owner: u64, blocker: u64) -> Blocked {
        Blocked {
            owner,
            token: 0,
            ctx: 0,
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
}
