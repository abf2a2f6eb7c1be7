//! epoll: an interest list of files and a ready list of those that woke it. Linux:
//! fs/eventpoll.c (`ep_insert()`, `ep_modify()`, `ep_remove()`, `ep_poll_callback()`,
//! `ep_send_events()`, `ep_poll()`, `ep_loop_check()`, `eventpoll_release_file()`).
//!
//! Each registration (an [`EpItem`]) is a [`Waker`] on the wait lists of its file, added
//! through the file's [`FileOps::poll`]. A wake-up puts the item on the ready list and
//! wakes one `epoll_wait` (and the pollers of the epoll file itself); `epoll_wait` then asks
//! each ready item's file for its events, with no epoll lock held, and puts level-triggered
//! items that still had events back at the tail.
//!
//! # Locking
//! `Epoll::state` is taken under the lock of a polled file's wait list (a pipe's state, an
//! eventfd's count, an inner epoll's state), in the wake-up; so nothing here calls a file's
//! `poll`, or takes a registration off a file, with `state` held. Nesting is at most
//! [`EP_MAX_NESTS`] deep and never circular (`ELOOP` at `EPOLL_CTL_ADD`), so the order of
//! epoll states is inner before outer.

use std::any::Any;
use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Weak};

use crate::abi::{EpollEvent, EpollOp, Errno, PollEvents, Result};
use crate::sync::lock::Mutex;
use crate::vfs::ops::FileOps;
use crate::vfs::poll::{unregister, PollTable, PollWait, WaitList, WaitSource, Waker};
use crate::vfs::FileDescription;

/// Serialises the additions of epoll files to epolls, from their loop check to their
/// insertion (Linux: `epnested_mutex`).
/// Protects: the shape of the graph of nested epolls. Order: before every other epoll lock
/// (taken first by an `EPOLL_CTL_ADD` of an epoll file, with nothing held).
static EP_NESTED: parking_lot::Mutex<()> = parking_lot::Mutex::new(());

/// How deep epoll files may nest (Linux: `EP_MAX_NESTS`).
pub(crate) const EP_MAX_NESTS: usize = 4;

/// The events an `EPOLLEXCLUSIVE` registration may ask for (Linux:
/// `EPOLLEXCLUSIVE_OK_BITS`).
pub(crate) const EXCLUSIVE_OK: PollEvents = PollEvents::IN
    .union(PollEvents::OUT)
    .union(PollEvents::ERR)
    .union(PollEvents::HUP)
    .union(PollEvents::WAKEUP)
    .union(PollEvents::ET)
    .union(PollEvents::EXCLUSIVE);

/// One file registered with one epoll (Linux: `struct epitem`). Its mutable fields change
/// only under the epoll's state lock; they are atomics so that a wake-up and `epoll_wait`
/// read them through a shared reference.
pub(crate) struct EpItem {
    ep: Weak<Epoll>,
    me: Weak<EpItem>,
    fd: i32,
    file: Weak<FileDescription>,
    file_key: usize,
    events: AtomicU32,
    data: AtomicU64,
    /// On the ready list.
    ready: AtomicBool,
    /// Taken out of the interest list: wake-ups are ignored until the registrations go.
    removed: AtomicBool,
    /// The wait lists this item is registered on.
    /// Protects: the list. Order: a leaf, taken with no epoll lock held.
    sources: Mutex<Vec<Arc<dyn WaitSource>>>,
}

impl EpItem {
    fn events(&self) -> PollEvents {
        PollEvents::from_bits_retain(self.events.load(Ordering::Relaxed))
    }

    fn as_waker(&self) -> Arc<dyn Waker> {
        self.me
            .upgrade()
            .expect("an item is alive while registered")
    }

    /// Takes this item off every wait list it is on (no epoll lock held).
    fn unregister(&self) {
        let w = self.as_waker();
        unregister(&w, &mut self.sources.lock());
    }
}

impl Waker for EpItem {
    fn wake(&self, key: PollEvents) -> bool {
        self.queue(key, true)
    }
}

impl EpItem {
    /// Queues the item on its epoll's ready list, if its events (or `key`, when not empty)
    /// say so, and wakes the epoll's waiters and pollers. A file's wake-up wakes them even
    /// when the item was queued already (Linux: `ep_poll_callback()`); an `EPOLL_CTL_ADD` or
    /// `EPOLL_CTL_MOD` that finds the file ready (`requeued` false) wakes them only if it
    /// queues the item now (`ep_insert()`, `ep_modify()`: `if (!ep_is_linked(epi))`), so an
    /// edge-triggered watcher of this epoll sees no new edge for an item still queued.
    fn queue(&self, key: PollEvents, requeued: bool) -> bool {
        let Some(ep) = self.ep.upgrade() else {
            return false;
        };
        let mut st = ep.state.lock();
        if self.removed.load(Ordering::Relaxed) {
            return false;
        }
        let ev = self.events();
        // Disabled by `EPOLLONESHOT` until `EPOLL_CTL_MOD`.
        if (ev - PollEvents::EPOLL_INPUT).is_empty() {
            return false;
        }
        if !key.is_empty() && (key & ev).is_empty() {
            return false;
        }
        if !self.ready.swap(true, Ordering::Relaxed) {
            st.ready
                .push_back(self.me.upgrade().expect("alive while registered"));
        } else if !requeued {
            return true;
        }
        st.waiters.wake(PollEvents::empty());
        st.pollers.wake(PollEvents::IN);
        true
    }
}

struct EpState {
    /// The interest list, by fd and file (Linux: the red-black tree keyed by `epoll_filefd`).
    items: BTreeMap<(i32, usize), Arc<EpItem>>,
    /// Items whose files woke them, in order (Linux: `rdllist`).
    ready: VecDeque<Arc<EpItem>>,
    /// Blocked `epoll_wait` calls, woken one at a time (Linux: `ep->wq`, exclusive).
    waiters: WaitList,
    /// `poll` and epoll registrations on this epoll file (Linux: `ep->poll_wait`).
    pollers: WaitList,
}

/// An epoll instance (Linux: `struct eventpoll`).
pub(crate) struct Epoll {
    /// Protects: the interest and ready lists and the wait lists.
    /// Order: after the lock of any file's wait list (see the module's locking notes).
    state: Mutex<EpState>,
    /// The epoll's file (one per instance; `dup` shares it), for the nesting check.
    file: std::sync::OnceLock<Weak<FileDescription>>,
}

impl WaitSource for Epoll {
    fn remove_waiter(&self, w: &Arc<dyn Waker>) {
        self.state.lock().pollers.remove(w);
    }
}

/// The file operations of an epoll file.
pub(crate) struct EpollFile {
    ep: Arc<Epoll>,
}

impl EpollFile {
    /// A new, empty epoll instance.
    pub(crate) fn new() -> EpollFile {
        EpollFile {
            ep: Arc::new(Epoll {
                state: Mutex::new(EpState {
                    items: BTreeMap::new(),
                    ready: VecDeque::new(),
                    waiters: WaitList::new(),
                    pollers: WaitList::new(),
                }),
                file: std::sync::OnceLock::new(),
            }),
        }
    }

    /// Records the epoll's file, once it exists.
    pub(crate) fn set_file(&self, file: &Arc<FileDescription>) {
        let _ = self.ep.file.set(Arc::downgrade(file));
    }
}

/// The epoll of `file`, if it is an epoll file.
pub(crate) fn epoll_of(file: &FileDescription) -> Option<&Arc<Epoll>> {
    file.ops()
        .as_any()?
        .downcast_ref::<EpollFile>()
        .map(|e| &e.ep)
}

impl EpollFile {
    /// Takes `stale` (items found not ready) off the ready list. One whose file turned ready
    /// meanwhile had its wake-up find it queued, so it is queued again here (Linux: a wake-up
    /// during the scan goes to `ovflist`, and `ep_done_scan()` queues it).
    #[cold]
    fn drop_stale(&self, stale: &[Arc<EpItem>]) {
        {
            let mut st = self.ep.state.lock();
            for item in stale {
                item.ready.store(false, Ordering::Relaxed);
            }
            // An item is on the list exactly when its flag is set (both change under the lock).
            st.ready.retain(|i| i.ready.load(Ordering::Relaxed));
        }
        for item in stale {
            if item_events(item).is_some() {
                item.queue(PollEvents::empty(), true);
            }
        }
    }
}

impl FileOps for EpollFile {
    super::anon::anon_stream_ops!();

    fn poll(&self, _file: &FileDescription, pt: Option<&mut PollTable<'_>>) -> PollEvents {
        // Readable when some ready item has events (Linux: `ep_eventpoll_poll()`); the
        // items' files are asked with this epoll's lock released.
        let ready: Vec<Arc<EpItem>> = {
            let mut st = self.ep.state.lock();
            if let Some(pt) = pt {
                pt.register(&mut st.pollers, self.ep.clone());
            }
            st.ready.iter().cloned().collect()
        };
        // Items queued but not ready as far as their events go, up to the first ready one,
        // leave the ready list, as Linux's scan drops them (`__ep_eventpoll_poll()`): a later
        // `EPOLL_CTL_MOD` that finds one ready queues it again and wakes this epoll's watchers.
        let mut stale = Vec::new();
        let mut revents = PollEvents::empty();
        for item in ready {
            if item_events(&item).is_some() {
                revents = PollEvents::IN | PollEvents::RDNORM;
                break;
            }
            stale.push(item);
        }
        if !stale.is_empty() {
            self.drop_stale(&stale);
        }
        revents
    }

    fn as_any(&self) -> Option<&dyn Any> {
        Some(self)
    }

    fn release(&self, _file: &FileDescription) {
        // Linux: `ep_clear_and_put()`.
        let items: Vec<Arc<EpItem>> = {
            let mut st = self.ep.state.lock();
            st.ready.clear();
            std::mem::take(&mut st.items).into_values().collect()
        };
        for item in items {
            item.removed.store(true, Ordering::Relaxed);
            item.unregister();
            unlink_from_file(&item);
        }
    }
}

/// The events of `item`'s file that it asks for, if any (no lock held).
fn item_events(item: &EpItem) -> Option<PollEvents> {
    if item.removed.load(Ordering::Relaxed) {
        return None;
    }
    let file = item.file.upgrade()?;
    let ev = item.events();
    let revents = file.ops().poll(&file, None) & (ev - PollEvents::EPOLL_INPUT);
    (!revents.is_empty()).then_some(revents)
}

/// Drops `item` from its file's list of epoll registrations.
fn unlink_from_file(item: &Arc<EpItem>) {
    if let Some(links) = item
        .file
        .upgrade()
        .as_ref()
        .and_then(|f| f.epoll_links.get())
    {
        links
            .lock()
            .retain(|w| !std::ptr::eq(w.as_ptr(), Arc::as_ptr(item)));
    }
}

/// The last close of a file with epoll registrations: each goes from its epoll (Linux:
/// `eventpoll_release_file()`).
pub(crate) fn file_released(links: Vec<Weak<EpItem>>) {
    for item in links.into_iter().filter_map(|w| w.upgrade()) {
        if let Some(ep) = item.ep.upgrade() {
            let mut st = ep.state.lock();
            st.items.remove(&(item.fd, item.file_key));
            st.ready.retain(|i| !Arc::ptr_eq(i, &item));
        }
        item.removed.store(true, Ordering::Relaxed);
        item.unregister();
    }
}

/// The longest chain of epolls above `ep` (epolls that have `ep`'s file registered, and so
/// on up), for the nesting limit (Linux: `ep_get_upwards_depth_proc()`).
fn depth_above(ep: &Epoll, depth: usize) -> usize {
    if depth > EP_MAX_NESTS {
        return depth;
    }
    let Some(file) = ep.file.get().and_then(Weak::upgrade) else {
        return 0;
    };
    let Some(links) = file.epoll_links.get() else {
        return 0;
    };
    let parents: Vec<Arc<Epoll>> = links
        .lock()
        .iter()
        .filter_map(Weak::upgrade)
        .filter_map(|i| i.ep.upgrade())
        .collect();
    parents
        .iter()
        .map(|p| 1 + depth_above(p, depth + 1))
        .max()
        .unwrap_or(0)
}

/// Whether `target` (an epoll) reaches `ep` through its items, and how deep the epolls
/// below `target` go (Linux: `ep_loop_check_proc()`).
fn depth_below(
    target: &Arc<Epoll>,
    ep: &Arc<Epoll>,
    depth: usize,
) -> std::result::Result<usize, ()> {
    if Arc::ptr_eq(target, ep) || depth > EP_MAX_NESTS {
        return Err(());
    }
    let children: Vec<Arc<FileDescription>> = target
        .state
        .lock()
        .items
        .values()
        .filter_map(|i| i.file.upgrade())
        .collect();
    let mut max = 0;
    for f in children {
        if let Some(inner) = epoll_of(&f) {
            max = max.max(1 + depth_below(inner, ep, depth + 1)?);
        }
    }
    Ok(max)
}

impl Epoll {
    /// `epoll_ctl(2)` on this epoll, `file` being the target behind `fd` (checked by the
    /// caller not to be the epoll's own file).
    ///
    /// # Errors
    /// `EEXIST`, `ENOENT`, `ELOOP`, `EINVAL` as `epoll_ctl(2)`.
    pub(crate) fn ctl(
        self: &Arc<Self>,
        op: EpollOp,
        fd: i32,
        file: &Arc<FileDescription>,
        event: Option<EpollEvent>,
    ) -> Result<()> {
        let key = (fd, Arc::as_ptr(file) as usize);
        let mut events = event.map_or(PollEvents::empty(), |e| e.events);
        let target_ep = epoll_of(file);
        // Adding an epoll to an epoll: the loop and depth check and the insertion are one
        // hold of `EP_NESTED`, so that two epolls added to each other at once cannot both
        // pass the check and close a cycle (Linux: `epnested_mutex`).
        let _nested = (op == EpollOp::Add && target_ep.is_some()).then(|| EP_NESTED.lock());
        if op == EpollOp::Add {
            if let Some(t) = target_ep {
                let below = depth_below(t, self, 0).map_err(|()| Errno::ELOOP)?;
                if below + 1 + depth_above(self, 0) > EP_MAX_NESTS {
                    return Err(Errno::ELOOP);
                }
            }
        }
        match op {
            EpollOp::Add => {
                let mut st = self.state.lock();
                if st.items.contains_key(&key) {
                    return Err(Errno::EEXIST);
                }
                events |= PollEvents::ERR | PollEvents::HUP;
                let item = Arc::new_cyclic(|me| EpItem {
                    ep: Arc::downgrade(self),
                    me: me.clone(),
                    fd,
                    file: Arc::downgrade(file),
                    file_key: key.1,
                    events: AtomicU32::new(events.bits()),
                    data: AtomicU64::new(event.map_or(0, |e| e.data)),
                    ready: AtomicBool::new(false),
                    removed: AtomicBool::new(false),
                    sources: Mutex::new(Vec::new()),
                });
                st.items.insert(key, item.clone());
                drop(st);
                file.epoll_links
                    .get_or_init(Box::default)
                    .lock()
                    .push(Arc::downgrade(&item));
                let revents = {
                    let mut sources = item.sources.lock();
                    let mut pt = PollTable::new(
                        item.clone(),
                        events.contains(PollEvents::EXCLUSIVE),
                        &mut sources,
                    );
                    file.ops().poll(file, Some(&mut pt))
                };
                if !(revents & events).is_empty() {
                    item.queue(PollEvents::empty(), false);
                }
                Ok(())
            }
            EpollOp::Mod => {
                let item = self
                    .state
                    .lock()
                    .items
                    .get(&key)
                    .cloned()
                    .ok_or(Errno::ENOENT)?;
                if item.events().contains(PollEvents::EXCLUSIVE) {
                    return Err(Errno::EINVAL);
                }
                events |= PollEvents::ERR | PollEvents::HUP;
                {
                    let _st = self.state.lock();
                    item.events.store(events.bits(), Ordering::Relaxed);
                    item.data
                        .store(event.map_or(0, |e| e.data), Ordering::Relaxed);
                }
                // Linux: `ep_modify()` polls the file again and queues the item if ready.
                if !(file.ops().poll(file, None) & events).is_empty() {
                    item.queue(PollEvents::empty(), false);
                }
                Ok(())
            }
            EpollOp::Del => {
                let item = self.state.lock().items.remove(&key).ok_or(Errno::ENOENT)?;
                {
                    let mut st = self.state.lock();
                    item.removed.store(true, Ordering::Relaxed);
                    st.ready.retain(|i| !Arc::ptr_eq(i, &item));
                }
                item.unregister();
                unlink_from_file(&item);
                Ok(())
            }
        }
    }

    /// Blocked `epoll_wait` calls and pollers of the epoll file: for tests that must know a
    /// waiter is in place.
    pub(crate) fn waiters(&self) -> u32 {
        let st = self.state.lock();
        (st.waiters.len() + st.pollers.len()) as u32
    }

    /// Takes the ready items' events into `out` (Linux: `ep_send_events()`); returns the
    /// count.
    fn send_events(&self, out: &mut [EpollEvent]) -> usize {
        let tx: Vec<Arc<EpItem>> = {
            let mut st = self.state.lock();
            let tx: Vec<_> = st.ready.drain(..).collect();
            for i in &tx {
                i.ready.store(false, Ordering::Relaxed);
            }
            tx
        };
        if tx.is_empty() {
            return 0;
        }
        let mut n = 0;
        let mut leftover = Vec::new();
        let mut requeue = Vec::new();
        for item in tx {
            if n == out.len() {
                leftover.push(item);
                continue;
            }
            let Some(revents) = item_events(&item) else {
                continue;
            };
            out[n] = EpollEvent {
                events: revents,
                data: item.data.load(Ordering::Relaxed),
            };
            n += 1;
            let ev = item.events();
            if ev.contains(PollEvents::ONESHOT) {
                let _st = self.state.lock();
                item.events
                    .store((ev & PollEvents::EPOLL_INPUT).bits(), Ordering::Relaxed);
            } else if !ev.contains(PollEvents::ET) {
                requeue.push(item);
            }
        }
        let mut st = self.state.lock();
        for item in leftover.into_iter().rev() {
            if !item.removed.load(Ordering::Relaxed) && !item.ready.swap(true, Ordering::Relaxed) {
                st.ready.push_front(item);
            }
        }
        for item in requeue {
            if !item.removed.load(Ordering::Relaxed) && !item.ready.swap(true, Ordering::Relaxed) {
                st.ready.push_back(item);
            }
        }
        if !st.ready.is_empty() {
            st.waiters.wake(PollEvents::empty());
        }
        n
    }

    /// `epoll_wait(2)`: waits until some registered file is ready, at most `timeout` (`None`:
    /// no limit; zero: just look), interruptible through `intr`.
    ///
    /// # Errors
    /// `EINTR`.
    pub(crate) fn wait(
        &self,
        out: &mut [EpollEvent],
        timeout: Option<std::time::Duration>,
        intr: Option<&crate::vfs::locks::Interrupt>,
    ) -> Result<usize> {
        // A call that finds events, or may not wait, makes no parker.
        let n = self.send_events(out);
        if n > 0 || timeout == Some(std::time::Duration::ZERO) {
            return Ok(n);
        }
        let wait = PollWait::new(intr, timeout);
        let waker = wait.waker();
        loop {
            // Registered under the state lock only while the ready list is empty, so that the
            // item that fills it wakes this sleep; a list filled meanwhile is looked at now.
            let registered = {
                let mut st = self.state.lock();
                let empty = st.ready.is_empty();
                if empty {
                    st.waiters.add(waker.clone(), true);
                }
                empty
            };
            let r = if registered {
                let r = wait.sleep();
                self.state.lock().waiters.remove(&waker);
                r
            } else {
                Ok(true)
            };
            // Events go before `EINTR` and the timeout, as in Linux's `ep_poll()`.
            let n = self.send_events(out);
            if n > 0 {
                return Ok(n);
            }
            if !r? {
                return Ok(0);
            }
        }
    }
}
