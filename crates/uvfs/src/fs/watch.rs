//! `Watcher`: an inotify instance held without an fd, with typed watches and events.
//!
//! The names follow the `inotify` crate's (`WatchMask`, `EventMask`, `WatchDescriptor`,
//! `Event`), so that code written against it reads the same; the calls are
//! [`Fs::watcher`], [`Watcher::add`], [`Watcher::remove`], [`Watcher::read_events`] and
//! [`Watcher::try_read_events`]. Every semantic is inotify's, as [`Task::inotify_add_watch`]
//! and `inotify(7)` describe it.

use std::ffi::OsString;
use std::io;
use std::os::unix::ffi::OsStringExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bitflags::bitflags;

use super::error::{error_no_path, Context};
use super::handle::{Fs, Inner};
use super::path_bytes;
use crate::abi::{self, Errno, InotifyEvent};
use crate::sys::InotifyRead;
use crate::vfs::{FileDescription, Task};

/// Bytes a read asks for at least: room for many events, and always for one with the longest
/// name (`INOTIFY_EVENT_SIZE + NAME_MAX + 1`, rounded up to 16: 272).
const READ_CHUNK_BYTES: usize = 4096;

/// Source of [`Watcher`] identities, so that a [`WatchDescriptor`] of one watcher is refused
/// by another (descriptor numbers repeat between instances).
static NEXT_INSTANCE: AtomicU64 = AtomicU64::new(1);

bitflags! {
    /// What a watch asks for ([`Watcher::add`]): event bits and `inotify_add_watch(2)`'s
    /// flags (`IN_*`).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
    pub struct WatchMask: u32 {
        /// `IN_ACCESS`: the file was read.
        #[doc(alias = "IN_ACCESS")] const ACCESS = abi::IN_ACCESS;
        /// `IN_MODIFY`: the file was written or truncated.
        #[doc(alias = "IN_MODIFY")] const MODIFY = abi::IN_MODIFY;
        /// `IN_ATTRIB`: metadata changed.
        #[doc(alias = "IN_ATTRIB")] const ATTRIB = abi::IN_ATTRIB;
        /// `IN_CLOSE_WRITE`: a file opened for writing was closed.
        #[doc(alias = "IN_CLOSE_WRITE")] const CLOSE_WRITE = abi::IN_CLOSE_WRITE;
        /// `IN_CLOSE_NOWRITE`: a file not opened for writing was closed.
        #[doc(alias = "IN_CLOSE_NOWRITE")] const CLOSE_NOWRITE = abi::IN_CLOSE_NOWRITE;
        /// `IN_OPEN`: the file was opened.
        #[doc(alias = "IN_OPEN")] const OPEN = abi::IN_OPEN;
        /// `IN_MOVED_FROM`: a file left the watched directory.
        #[doc(alias = "IN_MOVED_FROM")] const MOVED_FROM = abi::IN_MOVED_FROM;
        /// `IN_MOVED_TO`: a file entered the watched directory.
        #[doc(alias = "IN_MOVED_TO")] const MOVED_TO = abi::IN_MOVED_TO;
        /// `IN_CREATE`: a file was created in the watched directory.
        #[doc(alias = "IN_CREATE")] const CREATE = abi::IN_CREATE;
        /// `IN_DELETE`: a file was deleted from the watched directory.
        #[doc(alias = "IN_DELETE")] const DELETE = abi::IN_DELETE;
        /// `IN_DELETE_SELF`: the watched file itself was deleted.
        #[doc(alias = "IN_DELETE_SELF")] const DELETE_SELF = abi::IN_DELETE_SELF;
        /// `IN_MOVE_SELF`: the watched file itself was moved.
        #[doc(alias = "IN_MOVE_SELF")] const MOVE_SELF = abi::IN_MOVE_SELF;
        /// `IN_CLOSE`: both close events.
        #[doc(alias = "IN_CLOSE")] const CLOSE = abi::IN_CLOSE;
        /// `IN_MOVE`: both move events.
        #[doc(alias = "IN_MOVE")] const MOVE = abi::IN_MOVE;
        /// `IN_ALL_EVENTS`: every event above.
        #[doc(alias = "IN_ALL_EVENTS")] const ALL_EVENTS = abi::IN_ALL_EVENTS;
        /// `IN_ONLYDIR`: watch only a directory (`ENOTDIR` otherwise).
        #[doc(alias = "IN_ONLYDIR")] const ONLYDIR = abi::IN_ONLYDIR;
        /// `IN_DONT_FOLLOW`: do not follow a final symbolic link.
        #[doc(alias = "IN_DONT_FOLLOW")] const DONT_FOLLOW = abi::IN_DONT_FOLLOW;
        /// `IN_EXCL_UNLINK`: no events for children once they are unlinked.
        #[doc(alias = "IN_EXCL_UNLINK")] const EXCL_UNLINK = abi::IN_EXCL_UNLINK;
        /// `IN_MASK_CREATE`: `EEXIST` if this watcher watches the file already.
        #[doc(alias = "IN_MASK_CREATE")] const MASK_CREATE = abi::IN_MASK_CREATE;
        /// `IN_MASK_ADD`: add to the watch's mask instead of replacing it.
        #[doc(alias = "IN_MASK_ADD")] const MASK_ADD = abi::IN_MASK_ADD;
        /// `IN_ONESHOT`: remove the watch after its first event.
        #[doc(alias = "IN_ONESHOT")] const ONESHOT = abi::IN_ONESHOT;
    }
}

bitflags! {
    /// What happened ([`Event::mask`]): one event bit, with [`EventMask::ISDIR`] when the
    /// subject is a directory; or one of [`EventMask::IGNORED`], [`EventMask::UNMOUNT`],
    /// [`EventMask::Q_OVERFLOW`].
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
    pub struct EventMask: u32 {
        /// `IN_ACCESS`: the file was read.
        #[doc(alias = "IN_ACCESS")] const ACCESS = abi::IN_ACCESS;
        /// `IN_MODIFY`: the file was written or truncated.
        #[doc(alias = "IN_MODIFY")] const MODIFY = abi::IN_MODIFY;
        /// `IN_ATTRIB`: metadata changed.
        #[doc(alias = "IN_ATTRIB")] const ATTRIB = abi::IN_ATTRIB;
        /// `IN_CLOSE_WRITE`: a file opened for writing was closed.
        #[doc(alias = "IN_CLOSE_WRITE")] const CLOSE_WRITE = abi::IN_CLOSE_WRITE;
        /// `IN_CLOSE_NOWRITE`: a file not opened for writing was closed.
        #[doc(alias = "IN_CLOSE_NOWRITE")] const CLOSE_NOWRITE = abi::IN_CLOSE_NOWRITE;
        /// `IN_OPEN`: the file was opened.
        #[doc(alias = "IN_OPEN")] const OPEN = abi::IN_OPEN;
        /// `IN_MOVED_FROM`: a file left the watched directory; [`Event::cookie`] pairs it
        /// with its `MOVED_TO`.
        #[doc(alias = "IN_MOVED_FROM")] const MOVED_FROM = abi::IN_MOVED_FROM;
        /// `IN_MOVED_TO`: a file entered the watched directory.
        #[doc(alias = "IN_MOVED_TO")] const MOVED_TO = abi::IN_MOVED_TO;
        /// `IN_CREATE`: a file was created in the watched directory.
        #[doc(alias = "IN_CREATE")] const CREATE = abi::IN_CREATE;
        /// `IN_DELETE`: a file was deleted from the watched directory.
        #[doc(alias = "IN_DELETE")] const DELETE = abi::IN_DELETE;
        /// `IN_DELETE_SELF`: the watched file itself was deleted (an `IGNORED` follows).
        #[doc(alias = "IN_DELETE_SELF")] const DELETE_SELF = abi::IN_DELETE_SELF;
        /// `IN_MOVE_SELF`: the watched file itself was moved.
        #[doc(alias = "IN_MOVE_SELF")] const MOVE_SELF = abi::IN_MOVE_SELF;
        /// `IN_UNMOUNT`: the watched file's filesystem was unmounted.
        #[doc(alias = "IN_UNMOUNT")] const UNMOUNT = abi::IN_UNMOUNT;
        /// `IN_Q_OVERFLOW`: the queue was full and events were dropped ([`Event::wd`] is -1).
        #[doc(alias = "IN_Q_OVERFLOW")] const Q_OVERFLOW = abi::IN_Q_OVERFLOW;
        /// `IN_IGNORED`: the watch is gone (removed, or its file deleted or unmounted).
        #[doc(alias = "IN_IGNORED")] const IGNORED = abi::IN_IGNORED;
        /// `IN_ISDIR`: the subject of the event is a directory.
        #[doc(alias = "IN_ISDIR")] const ISDIR = abi::IN_ISDIR;
    }
}

/// A watch of one [`Watcher`]: what [`Watcher::add`] returns and [`Event::wd`] names.
///
/// Equal to another only if both are the same watch of the same watcher (the numbers
/// repeat between watchers); [`WatchDescriptor::raw`] is the number `inotify_add_watch(2)`
/// gave.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct WatchDescriptor {
    instance: u64,
    wd: i32,
}

impl WatchDescriptor {
    /// The watch descriptor number (`wd`; -1 in a [`EventMask::Q_OVERFLOW`] event).
    #[doc(alias = "wd")]
    pub fn raw(self) -> i32 {
        self.wd
    }
}

/// One event ([`Watcher::read_events`]): `struct inotify_event`, typed.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Event {
    /// The watch that saw it.
    pub wd: WatchDescriptor,
    /// What happened.
    pub mask: EventMask,
    /// Pairs a [`EventMask::MOVED_FROM`] with its [`EventMask::MOVED_TO`] (the same non-zero
    /// number in both); 0 for other events.
    pub cookie: u32,
    /// The name of the child of a watched directory the event is about; `None` for an event
    /// on the watched file itself.
    pub name: Option<OsString>,
}

/// An inotify instance of an [`Fs`]'s tree: watches added by path, events read typed. Made
/// by [`Fs::watcher`]; the instance ends (its watches go, its queue is dropped, its count
/// against the user's instance limit is given back) when the `Watcher` is dropped, unless
/// [`Watcher::install`] put it in an fd table too, whose fd then keeps it.
///
/// As [`File`](super::File) does, it holds the open file description, not an fd: it takes
/// no slot of any fd table, and works on every thread with its `Fs`'s credentials.
pub struct Watcher {
    fs: Arc<Inner>,
    file: Arc<FileDescription>,
    instance: u64,
    /// What reads read into; grows to the bytes queued at the largest read.
    buf: Vec<u8>,
}

impl Fs {
    /// A new inotify instance (`inotify_init1(2)`), charged to this view's effective uid.
    ///
    /// ```
    /// use uvfs::fs::{EventMask, Fs, WatchMask};
    ///
    /// let fs = Fs::new();
    /// fs.create_dir("/inbox")?;
    /// let mut watcher = fs.watcher()?;
    /// let wd = watcher.add("/inbox", WatchMask::CREATE | WatchMask::CLOSE_WRITE)?;
    /// fs.write("/inbox/letter", "hello")?;
    /// let events = watcher.read_events()?;
    /// let seen: Vec<_> = events.iter().map(|e| (e.mask, e.name.as_deref())).collect();
    /// assert_eq!(
    ///     seen,
    ///     [
    ///         (EventMask::CREATE, Some("letter".as_ref())),
    ///         (EventMask::CLOSE_WRITE, Some("letter".as_ref())),
    ///     ]
    /// );
    /// assert!(events.iter().all(|e| e.wd == wd));
    /// assert!(watcher.try_read_events()?.is_empty()); // nothing more, no waiting
    /// # Ok::<(), std::io::Error>(())
    /// ```
    ///
    /// # Errors
    /// `EMFILE` past the user's instance limit
    /// ([`InotifyLimits::max_user_instances`](super::InotifyLimits::max_user_instances), set by
    /// [`MountNamespace::set_inotify_limits`](crate::vfs::MountNamespace::set_inotify_limits)); `ENOSYS` without the
    /// `notify` feature.
    pub fn watcher(&self) -> io::Result<Watcher> {
        let inner = self.inner();
        let file = inner
            .task()
            .inotify_init1_file(0)
            .map_err(|e| error_no_path("create inotify instance", e))?;
        Ok(Watcher {
            fs: inner.clone(),
            file,
            instance: NEXT_INSTANCE.fetch_add(1, Ordering::Relaxed),
            buf: Vec::new(),
        })
    }
}

impl Watcher {
    #[inline]
    fn task(&self) -> &Task {
        self.fs.task()
    }

    fn descriptor(&self, wd: i32) -> WatchDescriptor {
        WatchDescriptor {
            instance: self.instance,
            wd,
        }
    }

    /// Watches `path` for the events of `mask` (`inotify_add_watch(2)`), following a final
    /// symlink unless [`WatchMask::DONT_FOLLOW`]. A file this watcher watches already keeps
    /// its descriptor, and `mask` replaces its mask (or adds to it, with
    /// [`WatchMask::MASK_ADD`]).
    ///
    /// # Errors
    /// Named by `path`: `EINVAL` for a mask with no event bit, or both `MASK_ADD` and
    /// `MASK_CREATE`; `EEXIST` (`MASK_CREATE` on a watched file); `ENOTDIR` (`ONLYDIR`);
    /// `ENOSPC` past the user's watch limit; path errors; `EACCES` without read permission.
    pub fn add(&mut self, path: impl AsRef<Path>, mask: WatchMask) -> io::Result<WatchDescriptor> {
        let path = path.as_ref();
        let wd = self
            .task()
            .inotify_add_watch_file(&self.file, path_bytes(path), mask.bits())
            .at("watch", path)?;
        Ok(self.descriptor(wd))
    }

    /// Removes the watch `wd` (`inotify_rm_watch(2)`); an [`EventMask::IGNORED`] event
    /// follows.
    ///
    /// # Errors
    /// `EINVAL` if `wd` is not a watch of this watcher now (another watcher's, or one gone
    /// already: removed, or its file deleted).
    pub fn remove(&mut self, wd: WatchDescriptor) -> io::Result<()> {
        if wd.instance != self.instance {
            return Err(error_no_path("remove watch", Errno::EINVAL));
        }
        self.task()
            .inotify_rm_watch_file(&self.file, wd.wd)
            .map_err(|e| error_no_path("remove watch", e))
    }

    /// The events queued, waiting for one if there are none; events that come while it
    /// reads may be left for the next call.
    ///
    /// # Errors
    /// None on uvfs (`EINTR` would need an interrupt of the calling thread's task, and an
    /// `Fs`'s tasks have none); `io::Result` for the reads' sake.
    pub fn read_events(&mut self) -> io::Result<Vec<Event>> {
        let mut events = self.read(InotifyRead::Wait)?;
        if self.queued_bytes() > 0 {
            events.extend(self.read(InotifyRead::NoWait)?);
        }
        Ok(events)
    }

    /// The events queued, without waiting: empty if there are none.
    ///
    /// # Errors
    /// None on uvfs; `io::Result` for the reads' sake.
    pub fn try_read_events(&mut self) -> io::Result<Vec<Event>> {
        self.read(InotifyRead::NoWait)
    }

    /// Bytes a read would take now, in `struct inotify_event` form (`FIONREAD`).
    fn queued_bytes(&self) -> usize {
        crate::fs::inotify::inotify_of(&self.file)
            .expect("a watcher's file is an inotify instance")
            .queued_bytes()
    }

    /// One read of the events queued (of at least one event, if `how` waits).
    fn read(&mut self, how: InotifyRead) -> io::Result<Vec<Event>> {
        let want = self.queued_bytes().max(READ_CHUNK_BYTES);
        if self.buf.len() < want {
            self.buf.resize(want, 0);
        }
        let n = match self
            .fs
            .task()
            .inotify_read_file(&self.file, &mut self.buf, how)
        {
            Ok(n) => n,
            Err(Errno::EAGAIN) if how == InotifyRead::NoWait => return Ok(Vec::new()),
            Err(e) => return Err(error_no_path("read inotify events", e)),
        };
        Ok(InotifyEvent::parse_all(&self.buf[..n])
            .into_iter()
            .map(|e| Event {
                wd: self.descriptor(e.wd),
                mask: EventMask::from_bits_retain(e.mask),
                cookie: e.cookie,
                name: (!e.name.is_empty()).then(|| OsString::from_vec(e.name)),
            })
            .collect())
    }

    /// Puts the instance in `task`'s fd table at the lowest free fd (as `dup`), for
    /// [`Task::poll`], epoll and the byte-level calls ([`Task::read`],
    /// [`Task::inotify_add_watch`]); the instance lives until both this `Watcher` and that fd
    /// are closed. Descriptors added through the fd are not this `Watcher`'s
    /// [`WatchDescriptor`]s: compare [`WatchDescriptor::raw`].
    ///
    /// # Errors
    /// `EMFILE` when the table is full.
    pub fn install(&self, task: &Task) -> io::Result<i32> {
        task.files
            .install(self.file.clone(), false, 0)
            .map_err(|e| error_no_path("install inotify instance", e))
    }
}

impl std::fmt::Debug for Watcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watcher")
            .field("instance", &self.instance)
            .field("queued_bytes", &self.queued_bytes())
            .finish()
    }
}
