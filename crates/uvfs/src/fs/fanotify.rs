//! fanotify, notification class, reporting fds: a group of marks on inodes, mounts and
//! filesystems whose events are read as `struct fanotify_event_metadata`, each with an fd
//! opened on the event's file for the reader. Linux: fs/notify/fanotify/fanotify.c and
//! fanotify_user.c.
//!
//! Events are the ones that carry a path: access, modify, open, close. An event equal in
//! file, cause and `FAN_ONDIR` to one of the last 128 unread ones is merged into it (Linux:
//! `fanotify_merge()`); a full queue takes one `FAN_Q_OVERFLOW` and drops what follows.
//! Permission events and file-id reporting are refused (docs/divergences.md), but where
//! Linux decides per open whether permission events are possible (`FMODE_NONOTIFY_PERM`)
//! uvfs has the place: [`crate::vfs::FileDescription::open_done`].

use std::any::Any;
use std::collections::VecDeque;
use std::sync::Arc;

use crate::abi::{
    Errno, FanotifyEvent, FileType, OpenFlags, PollEvents, Result, FANOTIFY_METADATA_VERSION,
    FAN_ACCESS, FAN_CLOSE, FAN_EVENT_METADATA_LEN, FAN_MODIFY, FAN_NOFD, FAN_ONDIR, FAN_OPEN,
    FAN_Q_OVERFLOW,
};
use crate::sync::lock::Mutex;
use crate::vfs::inode::InodeHold;
use crate::vfs::notify::mark::{self, Group, GroupMarks, Mark, Slot};
use crate::vfs::notify::{Event, FS_EVENT_ON_CHILD};
use crate::vfs::ops::FileOps;
use crate::vfs::poll::{park_on, PollTable, WaitList, WaitSource, Waker};
use crate::vfs::{FileDescription, Task, VfsPath};

/// Events a group reporting fds can get (Linux: `FANOTIFY_FD_EVENTS` without permission
/// events).
pub(crate) const FD_EVENTS: u64 = FAN_ACCESS | FAN_MODIFY | FAN_CLOSE | FAN_OPEN;
/// How far back a new event looks for one to merge with (Linux:
/// `FANOTIFY_MAX_MERGE_EVENTS`).
const MAX_MERGE: usize = 128;

/// fanotify's limits (Linux: /proc/sys/fs/fanotify/), per
/// [`MountNamespace`](crate::vfs::MountNamespace).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FanotifyLimits {
    /// Groups one user may have (`max_user_groups`; 128). One more is `EMFILE`.
    pub max_user_groups: u32,
    /// Marks one user's groups may hold together (`max_user_marks`; Linux sizes it from
    /// memory; uvfs's default is 65536). One more is `ENOSPC`, unless the group was made
    /// with `FAN_UNLIMITED_MARKS`.
    pub max_user_marks: u32,
    /// Events a group queues before `FAN_Q_OVERFLOW` (`max_queued_events`; 16384), unless
    /// made with `FAN_UNLIMITED_QUEUE`.
    pub max_queued_events: u32,
}

impl Default for FanotifyLimits {
    fn default() -> Self {
        FanotifyLimits {
            max_user_groups: 128,
            max_user_marks: 65536,
            max_queued_events: 16384,
        }
    }
}

/// uid → (groups, marks).
type UserCounts = std::collections::HashMap<u32, (u32, u32)>;

/// Per-user counts of fanotify groups and marks.
#[derive(Default)]
pub(crate) struct FanotifyUsers {
    /// Protects: the limits and counts. Order: a leaf.
    state: Mutex<(FanotifyLimits, UserCounts)>,
}

impl FanotifyUsers {
    pub(crate) fn limits(&self) -> FanotifyLimits {
        self.state.lock().0
    }
    pub(crate) fn set_limits(&self, l: FanotifyLimits) {
        self.state.lock().0 = l;
    }
    fn charge(&self, uid: u32, groups: u32, marks: u32, limited: bool) -> Result<()> {
        let mut st = self.state.lock();
        let (lim, counts) = &mut *st;
        let c = counts.entry(uid).or_default();
        if groups > 0 && c.0 >= lim.max_user_groups {
            return Err(Errno::EMFILE);
        }
        if marks > 0 && limited && c.1 >= lim.max_user_marks {
            return Err(Errno::ENOSPC);
        }
        c.0 += groups;
        c.1 += marks;
        Ok(())
    }
    fn refund(&self, uid: u32, groups: u32, marks: u32) {
        let mut st = self.state.lock();
        if let Some(c) = st.1.get_mut(&uid) {
            c.0 -= groups;
            c.1 -= marks;
            if *c == (0, 0) {
                st.1.remove(&uid);
            }
        }
    }
}

/// A queued event.
struct Queued {
    /// Reported bits, with `FAN_ONDIR` kept to decide merges (not reported).
    mask: u64,
    /// The file, opened for the reader when read; `None` for the overflow.
    path: Option<VfsPath>,
    /// A queued event keeps its file as an open one does (Linux: the event's `path_get()`):
    /// an unlinked file's space and `IN_DELETE_SELF` wait for the event's read.
    _hold: Option<InodeHold>,
    /// And the directory the file keeps, an `O_TMPFILE` file's (the unnamed dentry the
    /// event's path holds is that directory's child), even removed; the file opened for the
    /// reader keeps it too.
    keeps: Option<InodeHold>,
}

struct State {
    queue: VecDeque<Queued>,
    overflow_queued: bool,
    wait: WaitList,
    /// Every mark of the group.
    marks: Vec<Arc<Mark>>,
    shutdown: bool,
}

/// A fanotify group.
pub(crate) struct Fanotify {
    /// Protects: the queue, its wait list and the list of marks. Order: after
    /// `notify::mark::MARK_LOCK`; before an epoll's state.
    state: Mutex<State>,
    users: Arc<FanotifyUsers>,
    uid: u32,
    /// `None` with `FAN_UNLIMITED_QUEUE`.
    max_events: Option<usize>,
    /// False with `FAN_UNLIMITED_MARKS`.
    limited_marks: bool,
    /// Flags of the files opened for events (`event_f_flags`).
    f_flags: OpenFlags,
}

impl Fanotify {
    pub(crate) fn new(
        users: &Arc<FanotifyUsers>,
        uid: u32,
        unlimited_queue: bool,
        unlimited_marks: bool,
        f_flags: OpenFlags,
    ) -> Result<Arc<Fanotify>> {
        users.charge(uid, 1, 0, true)?;
        let lim = users.limits();
        Ok(Arc::new(Fanotify {
            state: Mutex::new(State {
                queue: VecDeque::new(),
                overflow_queued: false,
                wait: WaitList::new(),
                marks: Vec::new(),
                shutdown: false,
            }),
            users: users.clone(),
            uid,
            max_events: (!unlimited_queue).then_some(lim.max_queued_events as usize),
            limited_marks: !unlimited_marks,
            f_flags,
        }))
    }

    fn push(
        &self,
        st: &mut State,
        mask: u64,
        path: VfsPath,
        keeps: Option<&Arc<crate::vfs::Inode>>,
    ) {
        if self.max_events.is_some_and(|m| st.queue.len() >= m) {
            if !st.overflow_queued {
                st.overflow_queued = true;
                st.queue.push_back(Queued {
                    mask: FAN_Q_OVERFLOW,
                    path: None,
                    _hold: None,
                    keeps: None,
                });
                st.wait.wake(PollEvents::IN | PollEvents::RDNORM);
            }
            return;
        }
        let n = st.queue.len();
        for q in st.queue.range_mut(n.saturating_sub(MAX_MERGE)..).rev() {
            let Some(p) = &q.path else { continue };
            if Arc::ptr_eq(&p.dentry, &path.dentry)
                && std::ptr::eq::<crate::vfs::Mount>(&*p.mnt, &*path.mnt)
                && (q.mask & FAN_ONDIR) == (mask & FAN_ONDIR)
            {
                q.mask |= mask;
                return;
            }
        }
        let hold = InodeHold::of(&path.dentry);
        st.queue.push_back(Queued {
            mask,
            path: Some(path),
            _hold: Some(hold),
            keeps: keeps.map(InodeHold::inode),
        });
        st.wait.wake(PollEvents::IN | PollEvents::RDNORM);
    }

    /// Adds `mask` to `obj`'s mark of this group (or its ignore mask), making the mark.
    pub(crate) fn add_mark(
        self: &Arc<Self>,
        obj: mark::Object,
        dentry: Option<&crate::vfs::Dentry>,
        mask: u32,
        ignore: bool,
        surv_modify: bool,
    ) -> Result<()> {
        let group: Arc<dyn Group> = self.clone();
        let _g = mark::MARK_LOCK.lock();
        // The flag is taken only with an ignore mask: `FAN_MARK_IGNORED_SURV_MODIFY` on a
        // call that adds to the event mask changes nothing (Linux:
        // `fanotify_mark_update_flags()` tests it under `ignore`).
        let flags_of = |old: u32| {
            if surv_modify && ignore {
                old | mark::MARK_IGNORED_SURV_MODIFY
            } else {
                old
            }
        };
        if let Some(m) = mark::find_mark(&obj, &group) {
            let (mk, ig) = if ignore {
                (m.mask(), m.ignore_mask() | mask)
            } else {
                (m.mask() | mask, m.ignore_mask())
            };
            mark::update_mark(&m, dentry, mk, ig, flags_of(m.flags()));
            return Ok(());
        }
        self.users.charge(self.uid, 0, 1, self.limited_marks)?;
        let mut st = self.state.lock();
        if st.shutdown {
            drop(st);
            self.users.refund(self.uid, 0, 1);
            return Err(Errno::EBADF);
        }
        let (mk, ig) = if ignore { (0, mask) } else { (mask, 0) };
        let m = mark::add_mark(
            obj,
            dentry,
            mark::NewMark {
                group,
                id: 0,
                mask: mk,
                ignore_mask: ig,
                flags: flags_of(0),
            },
        );
        st.marks.push(m);
        Ok(())
    }

    /// Takes `mask` from `obj`'s mark (or its ignore mask); the mark goes when nothing is
    /// left (Linux: `fanotify_remove_mark()`).
    ///
    /// # Errors
    /// `ENOENT` if the group has no mark there.
    pub(crate) fn remove_mark(
        self: &Arc<Self>,
        obj: &mark::Object,
        mask: u32,
        ignore: bool,
        umask: u32,
    ) -> Result<()> {
        let group: Arc<dyn Group> = self.clone();
        let g = mark::MARK_LOCK.lock();
        let m = mark::find_mark(obj, &group).ok_or(Errno::ENOENT)?;
        let (mk, ig) = if ignore {
            (m.mask(), m.ignore_mask() & !mask)
        } else {
            (m.mask() & !mask, m.ignore_mask())
        };
        // Nothing left but the bits that mean nothing here (`umask`, Linux's: the event flags
        // of a legacy ignore mask, FAN_EVENT_ON_CHILD off a directory's inode mark): the mark
        // goes (Linux: `fanotify_mark_remove_from_mask()`'s `destroy`).
        if (mk | ig) & !umask == 0 {
            drop(g);
            mark::remove_mark(&m);
        } else {
            mark::update_mark(&m, None, mk, ig, m.flags());
        }
        Ok(())
    }

    /// Removes every mark of the group on objects of one kind (`FAN_MARK_FLUSH`).
    pub(crate) fn flush(&self, kind: fn(&mark::Object) -> bool) {
        let marks: Vec<Arc<Mark>> = self.state.lock().marks.clone();
        for m in marks {
            if m.object().is_some_and(|o| kind(&o)) {
                mark::remove_mark(&m);
            }
        }
    }

    /// Blocked readers and pollers, for tests.
    pub(crate) fn waiters(&self) -> u32 {
        self.state.lock().wait.len() as u32
    }
}

/// Whether a mask (or ignore mask) applies to an event on a directory or a child (Linux:
/// `fsnotify_mask_applicable()`).
fn applicable(mask: u32, ondir: bool, slot: Slot) -> bool {
    if ondir && mask & FAN_ONDIR as u32 == 0 {
        return false;
    }
    !(slot == Slot::Parent && mask & FS_EVENT_ON_CHILD == 0)
}

impl Group for Fanotify {
    /// Linux: `send_to_group()` and `fanotify_group_event_mask()`.
    fn handle_event(&self, marks: &GroupMarks, ev: &Event<'_>) {
        // A modification clears the ignore masks first, also for an event the group cannot
        // report (Linux: `send_to_group()` clears them before it asks the group; the
        // `FS_MODIFY` of an `O_TRUNC` open or a `truncate` comes without a path).
        if ev.mask & FAN_MODIFY as u32 != 0 {
            for (_, m) in marks.iter() {
                if m.flags() & mark::MARK_IGNORED_SURV_MODIFY == 0 {
                    m.clear_ignore_mask();
                }
            }
        }
        let Some(file) = ev.file else {
            // An event without a file cannot carry an fd.
            return;
        };
        let path = file.path();
        // Only regular files and directories (Linux: `fanotify_group_event_mask()`: "path
        // type events are only relevant for files and dirs"), so no FIFO or pipe events.
        if !path
            .dentry
            .inode()
            .is_some_and(|i| matches!(i.file_type(), FileType::Regular | FileType::Directory))
        {
            return;
        }
        let ondir = ev.mask & FAN_ONDIR as u32 != 0;
        let mut marks_mask = 0;
        let mut ignore = 0;
        for (slot, m) in marks.iter() {
            if !m.is_attached() {
                continue;
            }
            let ig = m.ignore_mask();
            if ig != 0 {
                if !ondir && slot != Slot::Parent {
                    ignore |= ig;
                } else {
                    // The legacy ignore mask: events on directories always ignored, on
                    // children if the mark watches children (Linux: `fsnotify_ignore_mask()`).
                    let legacy = ((ig | FAN_ONDIR as u32) & !FS_EVENT_ON_CHILD)
                        | (m.mask() & FS_EVENT_ON_CHILD);
                    if applicable(legacy, ondir, slot) {
                        ignore |= legacy;
                    }
                }
            }
            if applicable(m.mask(), ondir, slot) {
                marks_mask |= m.mask();
            }
        }
        let report = u64::from(ev.mask & marks_mask & !ignore) & FD_EVENTS;
        if report == 0 {
            return;
        }
        let mut st = self.state.lock();
        if st.shutdown {
            return;
        }
        let ondir_bit = if ondir { FAN_ONDIR } else { 0 };
        self.push(&mut st, report | ondir_bit, path.clone(), file.kept_dir());
    }

    fn mark_removed(&self, mark: &Arc<Mark>) {
        self.state.lock().marks.retain(|m| !Arc::ptr_eq(m, mark));
        self.users.refund(self.uid, 0, 1);
    }
}

impl WaitSource for Fanotify {
    fn remove_waiter(&self, w: &Arc<dyn Waker>) {
        self.state.lock().wait.remove(w);
    }
}

/// The file operations of a fanotify group's file.
pub(crate) struct FanotifyFile {
    pub(crate) group: Arc<Fanotify>,
}

impl FanotifyFile {
    /// `read(2)` by `task`: whole events, each with an fd opened on its file in `task`'s
    /// table (Linux: `fanotify_read()`, `copy_event_to_user()`).
    pub(crate) fn read(&self, task: &Task, buf: &mut [u8], nonblock: bool) -> Result<usize> {
        let g = &self.group;
        let intr = task.interrupt.get().map(|i| &**i);
        let mut used = 0;
        loop {
            let ev = {
                let mut st = g.state.lock();
                let mut waiting = None;
                while st.queue.is_empty() {
                    if used > 0 {
                        return Ok(used);
                    }
                    if nonblock {
                        return Err(Errno::EAGAIN);
                    }
                    park_on(&g.state, &mut st, |s| &mut s.wait, intr, &mut waiting)?;
                }
                if buf.len() - used < FAN_EVENT_METADATA_LEN {
                    return if used == 0 {
                        Err(Errno::EINVAL)
                    } else {
                        Ok(used)
                    };
                }
                let ev = st.queue.pop_front().expect("not empty");
                if ev.mask == FAN_Q_OVERFLOW {
                    st.overflow_queued = false;
                }
                ev
            };
            let fd = match &ev.path {
                None => FAN_NOFD,
                Some(p) => match open_event_file(
                    task,
                    p,
                    ev.keeps.as_ref().and_then(InodeHold::get),
                    g.f_flags,
                ) {
                    Ok(fd) => fd,
                    // The event is lost, as Linux's (it was taken off the queue).
                    Err(e) if used == 0 => return Err(e),
                    Err(_) => return Ok(used),
                },
            };
            let meta = FanotifyEvent {
                event_len: FAN_EVENT_METADATA_LEN as u32,
                vers: FANOTIFY_METADATA_VERSION,
                metadata_len: FAN_EVENT_METADATA_LEN as u16,
                mask: ev.mask & !FAN_ONDIR,
                fd,
                pid: 0,
            };
            let mut out = Vec::with_capacity(FAN_EVENT_METADATA_LEN);
            meta.encode_into(&mut out);
            buf[used..used + out.len()].copy_from_slice(&out);
            used += out.len();
        }
    }

    /// Bytes queued (`FIONREAD`).
    pub(crate) fn queued_bytes(&self) -> usize {
        self.group.state.lock().queue.len() * FAN_EVENT_METADATA_LEN
    }
}

/// Opens the event's file (a regular file or directory) for the reader, silent to
/// notification (Linux: `create_fd()`: `dentry_open()` with the group's `event_f_flags` and
/// `FMODE_NONOTIFY`, no permission check).
fn open_event_file(
    task: &Task,
    path: &VfsPath,
    keeps: Option<&Arc<crate::vfs::Inode>>,
    flags: OpenFlags,
) -> Result<i32> {
    let inode = path.dentry.inode().ok_or(Errno::ENOENT)?.clone();
    let ops = inode.ops().open(&inode, flags)?;
    let mut file = FileDescription::new(path.clone(), inode, flags, ops, task.cred_id.get())?;
    file.set_nonotify();
    if let Some(dir) = keeps {
        file.keep_dir(dir);
    }
    // Linux's `dentry_open()` takes `event_f_flags` whole (an `O_CLOEXEC` stays in `f_flags`,
    // as `F_GETFL` shows) and `force_o_largefile()` adds `O_LARGEFILE`.
    file.add_status_bits(OpenFlags::LARGEFILE | (flags & OpenFlags::CLOEXEC));
    task.files
        .install(file, flags.contains(OpenFlags::CLOEXEC), 0)
}

impl FileOps for FanotifyFile {
    super::anon::anon_stream_ops!();

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

    /// The last close: every mark goes and the group's charge is given back (Linux:
    /// `fanotify_release()`).
    fn release(&self, _file: &FileDescription) {
        let g = &self.group;
        let (marks, queue) = {
            let mut st = g.state.lock();
            st.shutdown = true;
            (st.marks.clone(), std::mem::take(&mut st.queue))
        };
        // The queued events' holds go with no lock held: the last one of an unlinked file
        // sends its IN_DELETE_SELF, which may reach this group.
        drop(queue);
        for m in &marks {
            mark::remove_mark(m);
        }
        g.users.refund(g.uid, 1, 0);
    }

    fn as_any(&self) -> Option<&dyn Any> {
        Some(self)
    }
}

/// The fanotify group behind `file`, if it is one.
pub(crate) fn fanotify_of(file: &FileDescription) -> Option<&FanotifyFile> {
    file.ops().as_any()?.downcast_ref::<FanotifyFile>()
}
