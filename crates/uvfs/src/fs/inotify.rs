//! inotify: a group of fsnotify marks read as a file of `struct inotify_event`s. Linux:
//! fs/notify/inotify/inotify_user.c and inotify_fsnotify.c.
//!
//! An instance keeps its watches by descriptor (allocated cyclically from 1, as Linux's
//! `idr_alloc_cyclic()`), and a queue of events: an event equal to the queue's last unread
//! one (mask, watch and name) is merged into it, and a full queue takes one `IN_Q_OVERFLOW`
//! and drops what follows until a read makes room. Writers to watched files never wait for
//! the queue.

use std::any::Any;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;

use super::anon::AnonIo;
use crate::abi::{
    Errno, InotifyEvent, PollEvents, Result, IN_ALL_EVENTS, IN_IGNORED, IN_ISDIR, IN_Q_OVERFLOW,
    IN_UNMOUNT,
};
use crate::sync::lock::Mutex;
use crate::vfs::locks::Interrupt;
use crate::vfs::notify::mark::{self, Group, GroupMarks, Mark, NewMark, Object, Slot};
use crate::vfs::notify::Event;
use crate::vfs::ops::FileOps;
use crate::vfs::poll::{park_on, PollTable, WaitList, WaitSource, Waker};
use crate::vfs::FileDescription;

/// inotify's limits (Linux: /proc/sys/fs/inotify/), for the tasks of one
/// [`MountNamespace`](crate::vfs::MountNamespace) and the namespaces cloned from it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InotifyLimits {
    /// Instances one user (effective uid) may have (`max_user_instances`; Linux's default
    /// 128). One more is `EMFILE`.
    pub max_user_instances: u32,
    /// Watches one user's instances may hold together (`max_user_watches`; Linux sizes its
    /// default from memory, between 8192 and 1048576; uvfs's is 65536). One more is `ENOSPC`.
    pub max_user_watches: u32,
    /// Events an instance queues before `IN_Q_OVERFLOW` (`max_queued_events`; 16384), fixed
    /// for an instance when it is made.
    pub max_queued_events: u32,
}

impl Default for InotifyLimits {
    fn default() -> Self {
        InotifyLimits {
            max_user_instances: 128,
            max_user_watches: 65536,
            max_queued_events: 16384,
        }
    }
}

/// Per-user counts of instances and watches against [`InotifyLimits`] (Linux: the ucounts
/// `UCOUNT_INOTIFY_INSTANCES`, `UCOUNT_INOTIFY_WATCHES`).
#[derive(Default)]
pub(crate) struct InotifyUsers {
    /// Protects: the limits and the counts. Order: a leaf.
    state: Mutex<UsersState>,
}

#[derive(Default)]
struct UsersState {
    limits: InotifyLimits,
    /// uid → (instances, watches).
    counts: HashMap<u32, (u32, u32)>,
}

impl InotifyUsers {
    pub(crate) fn limits(&self) -> InotifyLimits {
        self.state.lock().limits
    }

    pub(crate) fn set_limits(&self, l: InotifyLimits) {
        self.state.lock().limits = l;
    }

    fn charge_instance(&self, uid: u32) -> Result<()> {
        let mut st = self.state.lock();
        let max = st.limits.max_user_instances;
        let c = st.counts.entry(uid).or_default();
        if c.0 >= max {
            return Err(Errno::EMFILE);
        }
        c.0 += 1;
        Ok(())
    }

    fn charge_watch(&self, uid: u32) -> Result<()> {
        let mut st = self.state.lock();
        let max = st.limits.max_user_watches;
        let c = st.counts.entry(uid).or_default();
        if c.1 >= max {
            return Err(Errno::ENOSPC);
        }
        c.1 += 1;
        Ok(())
    }

    fn refund(&self, uid: u32, instances: u32, watches: u32) {
        let mut st = self.state.lock();
        if let Some(c) = st.counts.get_mut(&uid) {
            c.0 -= instances;
            c.1 -= watches;
            if *c == (0, 0) {
                st.counts.remove(&uid);
            }
        }
    }
}

struct State {
    queue: VecDeque<InotifyEvent>,
    /// Bytes a read of the whole queue would give (`FIONREAD`).
    bytes: usize,
    /// The queue's `IN_Q_OVERFLOW` is in it (Linux: the group's one `overflow_event` is
    /// listed).
    overflow_queued: bool,
    /// Blocked readers and pollers.
    wait: WaitList,
    /// The watches, by descriptor.
    marks: BTreeMap<i32, Arc<Mark>>,
    /// The last descriptor handed out (the cyclic allocator's cursor).
    last_wd: i32,
    /// The instance's last close ran: no more events, marks going.
    shutdown: bool,
}

/// An inotify instance (Linux: an fsnotify group with `inotify_data`).
pub(crate) struct Inotify {
    /// Protects: the queue, its wait list and the watches. Order: after
    /// `notify::mark::MARK_LOCK`; before an epoll's state (its wakers).
    state: Mutex<State>,
    users: Arc<InotifyUsers>,
    /// The user charged for the instance and its watches.
    uid: u32,
    max_events: usize,
}

impl Inotify {
    /// A new instance for `uid`, charged to it.
    ///
    /// # Errors
    /// `EMFILE` past the user's instance limit.
    pub(crate) fn new(users: &Arc<InotifyUsers>, uid: u32) -> Result<Arc<Inotify>> {
        users.charge_instance(uid)?;
        let max_events = users.limits().max_queued_events as usize;
        Ok(Arc::new(Inotify {
            state: Mutex::new(State {
                queue: VecDeque::new(),
                bytes: 0,
                overflow_queued: false,
                wait: WaitList::new(),
                marks: BTreeMap::new(),
                last_wd: 0,
                shutdown: false,
            }),
            users: users.clone(),
            uid,
            max_events,
        }))
    }

    /// Queues an event (Linux: `fsnotify_insert_event()` with `inotify_merge()`); the name
    /// is copied only if the event is not merged.
    fn push(&self, st: &mut State, wd: i32, mask: u32, cookie: u32, name: &[u8]) {
        if st.queue.len() >= self.max_events {
            if !st.overflow_queued {
                st.overflow_queued = true;
                let o = InotifyEvent {
                    wd: -1,
                    mask: IN_Q_OVERFLOW,
                    cookie: 0,
                    name: Vec::new(),
                };
                st.bytes += o.encoded_len();
                st.queue.push_back(o);
                st.wait.wake(PollEvents::IN | PollEvents::RDNORM);
            }
            return;
        }
        if let Some(last) = st.queue.back() {
            if last.mask & IN_IGNORED == 0
                && last.mask == mask
                && last.wd == wd
                && last.name.len() == name.len()
                && (name.is_empty() || last.name == name)
            {
                return;
            }
        }
        let ev = InotifyEvent {
            wd,
            mask,
            cookie,
            name: name.to_vec(),
        };
        st.bytes += ev.encoded_len();
        st.queue.push_back(ev);
        st.wait.wake(PollEvents::IN | PollEvents::RDNORM);
    }

    /// Adds a watch of `inode` (reached through `dentry`) or changes this instance's watch
    /// of it (Linux: `inotify_update_watch()`); returns the descriptor.
    pub(crate) fn add_watch(
        self: &Arc<Self>,
        dentry: &crate::vfs::Dentry,
        inode: &Arc<crate::vfs::Inode>,
        mask: u32,
    ) -> Result<i32> {
        use crate::abi::{IN_EXCL_UNLINK, IN_MASK_ADD, IN_MASK_CREATE, IN_ONESHOT};
        let mut events = IN_UNMOUNT | (mask & IN_ALL_EVENTS);
        if inode.is_dir() {
            events |= crate::vfs::notify::FS_EVENT_ON_CHILD;
        }
        let mut flags = 0;
        if mask & IN_ONESHOT != 0 {
            flags |= mark::MARK_ONESHOT;
        }
        if mask & IN_EXCL_UNLINK != 0 {
            flags |= mark::MARK_EXCL_UNLINK;
        }
        let group: Arc<dyn Group> = self.clone();
        let obj = Object::Inode(inode.clone());
        let _g = mark::MARK_LOCK.lock();
        if let Some(m) = mark::find_mark(&obj, &group) {
            if mask & IN_MASK_CREATE != 0 {
                return Err(Errno::EEXIST);
            }
            if mask & IN_MASK_ADD != 0 {
                events |= m.mask();
                flags |= m.flags();
            }
            mark::update_mark(&m, Some(dentry), events, 0, flags);
            return Ok(m.id);
        }
        self.users.charge_watch(self.uid)?;
        let mut st = self.state.lock();
        if st.shutdown {
            drop(st);
            self.users.refund(self.uid, 0, 1);
            return Err(Errno::EBADF);
        }
        let wd = next_wd(&st);
        st.last_wd = wd;
        let m = mark::add_mark(
            obj,
            Some(dentry),
            NewMark {
                group,
                id: wd,
                mask: events,
                ignore_mask: 0,
                flags,
            },
        );
        st.marks.insert(wd, m);
        Ok(wd)
    }

    /// Removes watch `wd` (Linux: `inotify_rm_watch`); its `IN_IGNORED` follows.
    pub(crate) fn rm_watch(&self, wd: i32) -> Result<()> {
        let m = self.state.lock().marks.get(&wd).cloned();
        let m = m.ok_or(Errno::EINVAL)?;
        mark::remove_mark(&m);
        Ok(())
    }

    /// Blocked readers and pollers, for tests.
    pub(crate) fn waiters(&self) -> u32 {
        self.state.lock().wait.len() as u32
    }
}

/// The descriptor after the last one handed out that is free, wrapping to 1 after
/// `i32::MAX` (Linux: `idr_alloc_cyclic(idr, mark, 1, 0, ...)`).
fn next_wd(st: &State) -> i32 {
    let mut wd = st.last_wd;
    loop {
        wd = if wd == i32::MAX { 1 } else { wd + 1 };
        if !st.marks.contains_key(&wd) {
            return wd;
        }
    }
}

impl Inotify {
    /// Queues `ev` for `mark`, with the name or without (Linux:
    /// `inotify_handle_inode_event()`).
    fn queue_for(&self, mark: &Arc<Mark>, ev: &Event<'_>, name: Option<&[u8]>) {
        if ev.unlinked && mark.flags() & mark::MARK_EXCL_UNLINK != 0 {
            return;
        }
        let mut st = self.state.lock();
        if st.shutdown || !mark.is_attached() {
            return;
        }
        let mask = ev.mask & (IN_ALL_EVENTS | IN_ISDIR | IN_UNMOUNT);
        self.push(&mut st, mark.id, mask, ev.cookie, name.unwrap_or_default());
        drop(st);
        if mark.flags() & mark::MARK_ONESHOT != 0 {
            mark::remove_mark(mark);
        }
    }
}

impl Group for Inotify {
    /// The parent's mark first, with the child's name, then the subject's own mark (Linux:
    /// `fsnotify_handle_event()`).
    fn handle_event(&self, marks: &GroupMarks, ev: &Event<'_>) {
        let events = ev.mask & (IN_ALL_EVENTS | IN_UNMOUNT);
        if let Some(m) = marks.get(Slot::Parent) {
            if m.mask() & crate::vfs::notify::FS_EVENT_ON_CHILD != 0 && m.mask() & events != 0 {
                self.queue_for(m, ev, ev.name);
            }
        }
        if let Some(m) = marks.get(Slot::Inode) {
            if m.mask() & events != 0 {
                self.queue_for(m, ev, if ev.dirent { ev.name } else { None });
            }
        }
    }

    fn mark_removed(&self, mark: &Arc<Mark>) {
        let mut st = self.state.lock();
        st.marks.remove(&mark.id);
        if !st.shutdown {
            self.push(&mut st, mark.id, IN_IGNORED, 0, &[]);
        }
        drop(st);
        self.users.refund(self.uid, 0, 1);
    }
}

impl WaitSource for Inotify {
    fn remove_waiter(&self, w: &Arc<dyn Waker>) {
        self.state.lock().wait.remove(w);
    }
}

/// The file operations of an inotify instance's file.
pub(crate) struct InotifyFile {
    pub(crate) group: Arc<Inotify>,
}

impl AnonIo for InotifyFile {
    /// Whole events, as many as fit; `EINVAL` if the first does not (Linux:
    /// `inotify_read()`).
    fn read(&self, buf: &mut [u8], nonblock: bool, intr: Option<&Interrupt>) -> Result<usize> {
        let g = &self.group;
        let mut st = g.state.lock();
        let mut waiting = None;
        while st.queue.is_empty() {
            if nonblock {
                return Err(Errno::EAGAIN);
            }
            park_on(&g.state, &mut st, |s| &mut s.wait, intr, &mut waiting)?;
        }
        let mut out = Vec::new();
        while let Some(ev) = st.queue.front() {
            let len = ev.encoded_len();
            if out.len() + len > buf.len() {
                if out.is_empty() {
                    return Err(Errno::EINVAL);
                }
                break;
            }
            ev.encode_into(&mut out);
            let overflow = ev.mask == IN_Q_OVERFLOW;
            st.bytes -= len;
            if overflow {
                st.overflow_queued = false;
            }
            st.queue.pop_front();
        }
        drop(st);
        buf[..out.len()].copy_from_slice(&out);
        Ok(out.len())
    }

    fn write(&self, _buf: &[u8], _nonblock: bool, _intr: Option<&Interrupt>) -> Result<usize> {
        // Linux: inotify's file has no `write`, so `vfs_write()` says `EINVAL`.
        Err(Errno::EINVAL)
    }
}

impl InotifyFile {
    /// Bytes queued (`FIONREAD`).
    pub(crate) fn queued_bytes(&self) -> usize {
        self.group.state.lock().bytes
    }
}

impl FileOps for InotifyFile {
    fn llseek(
        &self,
        _file: &FileDescription,
        _offset: i64,
        _whence: crate::abi::Whence,
        cur: u64,
    ) -> Result<u64> {
        // Linux: `noop_llseek()`.
        Ok(cur)
    }

    fn fsync(&self, _file: &FileDescription) -> Result<()> {
        Err(Errno::EINVAL)
    }

    fn can_poll(&self) -> bool {
        true
    }

    fn poll(&self, _file: &FileDescription, pt: Option<&mut PollTable<'_>>) -> PollEvents {
        let mut st = self.group.state.lock();
        if let Some(pt) = pt {
            pt.register(&mut st.wait, self.group.clone());
        }
        if st.queue.is_empty() {
            PollEvents::empty()
        } else {
            PollEvents::IN | PollEvents::RDNORM
        }
    }

    /// The last close: every watch goes, without `IN_IGNORED` (no one can read it), and the
    /// instance's charge is given back (Linux: `inotify_release()`).
    fn release(&self, _file: &FileDescription) {
        let g = &self.group;
        let marks: Vec<Arc<Mark>> = {
            let mut st = g.state.lock();
            st.shutdown = true;
            st.queue.clear();
            st.bytes = 0;
            st.marks.values().cloned().collect()
        };
        for m in &marks {
            mark::remove_mark(m);
        }
        g.users.refund(g.uid, 1, 0);
    }

    fn as_any(&self) -> Option<&dyn Any> {
        Some(self)
    }
}

/// The inotify instance behind `file`, if it is one.
pub(crate) fn inotify_of(file: &FileDescription) -> Option<&InotifyFile> {
    file.ops().as_any()?.downcast_ref::<InotifyFile>()
}
