//! Readiness calls: `poll`, `ppoll`, `epoll_create1`, `epoll_ctl`, `epoll_wait`, and
//! `eventfd2`. Linux: fs/select.c (`do_sys_poll()`, `do_pollfd()`), fs/eventpoll.c
//! (`do_epoll_create()`, `do_epoll_ctl()`, `do_epoll_wait()`), fs/eventfd.c (`do_eventfd()`).

use std::sync::Arc;
use std::time::Duration;

use crate::abi::{
    EfdFlags, EpollEvent, EpollOp, Errno, OpenFlags, PollEvents, PollFd, Result, Timespec,
    EPOLL_CLOEXEC,
};
use crate::fs::anon::anon_file;
use crate::fs::epoll::{epoll_of, EpollFile};
use crate::fs::eventfd::EventFd;
use crate::vfs::poll::{unregister, PollTable, PollWait, WaitSource, Waker};
use crate::vfs::{Capabilities, FileDescription, Task};

/// A poller's waker and the record of the objects it registered on.
type Registration<'a> = (&'a Arc<dyn Waker>, &'a mut Vec<Arc<dyn WaitSource>>);

/// The most events one `epoll_wait` may ask for (Linux: `EP_MAX_EVENTS`, `INT_MAX` over the
/// 12-byte `struct epoll_event`).
pub const EP_MAX_EVENTS: usize = (i32::MAX as usize) / 12;

/// # Readiness
///
/// `poll`, `ppoll`, the epoll calls, `eventfd2`. Every file answers readiness: pipes and
/// FIFOs, eventfds and epoll files by their state; regular files and directories are always
/// readable and writable, as on Linux. A blocked call returns `EINTR` when the task is
/// interrupted ([`Task::interrupt_handle`]).
impl Task {
    /// `poll(2)`: waits until one of `fds` has an event it asks for (or `POLLERR`, `POLLHUP`,
    /// `POLLNVAL`), or `timeout` passes (`None`: no limit; zero: just look). Fills in each
    /// `revents` and returns how many are non-empty.
    ///
    /// # Errors
    /// `EINVAL` for more entries than the fd limit; `EINTR` when interrupted.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// use uvfs::abi::{OpenFlags, PollEvents, PollFd};
    /// use uvfs::{Cred, Errno, Vfs};
    ///
    /// let task = Vfs::new().task(Cred::root());
    /// let [r, w] = task.pipe2(OpenFlags::empty())?;
    /// let mut fds = [PollFd::new(r, PollEvents::IN), PollFd::new(w, PollEvents::OUT)];
    /// assert_eq!(task.poll(&mut fds, Some(Duration::ZERO))?, 1);
    /// assert_eq!(fds[1].revents, PollEvents::OUT); // only what was asked for
    /// task.write(w, b"x")?;
    /// assert_eq!(task.poll(&mut fds[..1], None)?, 1);
    /// assert_eq!(fds[0].revents, PollEvents::IN);
    /// # Ok::<(), Errno>(())
    /// ```
    pub fn poll(&self, fds: &mut [PollFd], timeout: Option<Duration>) -> Result<usize> {
        if fds.len() > self.files.limit() as usize {
            return Err(Errno::EINVAL);
        }
        // A first look registers nothing: a call that finds an event (or may not wait)
        // makes no parker and no registration.
        let n = self.poll_pass(fds, None);
        if n > 0 || timeout == Some(Duration::ZERO) {
            return Ok(n);
        }
        let intr = self.interrupt.get().map(|i| &**i);
        let wait = PollWait::new(intr, timeout);
        let waker = wait.waker();
        let mut sources: Vec<Arc<dyn WaitSource>> = Vec::new();
        // Register on every file, then read its state (Linux: the first pass of
        // `do_poll()`), so that a change after the read wakes the sleep below.
        let mut n = self.poll_pass(fds, Some((&waker, &mut sources)));
        let result = loop {
            if n > 0 {
                break Ok(n);
            }
            match wait.sleep() {
                Ok(true) => n = self.poll_pass(fds, None),
                Ok(false) => break Ok(0),
                Err(e) => break Err(e),
            }
        };
        unregister(&waker, &mut sources);
        result
    }

    /// One pass of `poll` over `fds`, registering `reg`'s waker on each file if given:
    /// fills in each `revents`, returns how many are non-empty (Linux: `do_pollfd()`).
    ///
    /// # Fast path
    /// One lookup view of the fd table for the pass ([`FdTable::view`]): on a table no other
    /// task shares, one lock for the whole array and no reference count touched per entry
    /// (`poll2` of will-it-scale polls 128 fds a call; a lookup per fd through the task's
    /// four-slot fd cache missed on every one).
    ///
    /// [`FdTable::view`]: crate::vfs::fd_table::FdTable::view
    fn poll_pass(&self, fds: &mut [PollFd], mut reg: Option<Registration<'_>>) -> usize {
        let mut count = 0;
        let table = self.files.view();
        for p in fds.iter_mut() {
            p.revents = if p.fd < 0 {
                PollEvents::empty()
            } else {
                match table.get(p.fd) {
                    // `POLLNVAL` for a closed fd or an `O_PATH` one (Linux: `fdget()` skips
                    // `FMODE_PATH` files).
                    None => PollEvents::NVAL,
                    Some(f) if f.fmode().path_only => PollEvents::NVAL,
                    Some(file) => {
                        let filter = p.events | PollEvents::ERR | PollEvents::HUP;
                        let mask = match reg.as_mut() {
                            Some((waker, sources)) => {
                                let mut pt = PollTable::new((*waker).clone(), false, sources);
                                file.ops().poll(&file, Some(&mut pt))
                            }
                            None => file.ops().poll(&file, None),
                        };
                        mask & filter
                    }
                }
            };
            if !p.revents.is_empty() {
                count += 1;
            }
        }
        count
    }

    /// `ppoll(2)`: [`Task::poll`] with a `timespec` timeout (uvfs has no signal mask to
    /// swap).
    ///
    /// # Errors
    /// `EINVAL` for a negative or malformed timeout; as [`Task::poll`].
    pub fn ppoll(&self, fds: &mut [PollFd], timeout: Option<Timespec>) -> Result<usize> {
        let timeout = match timeout {
            None => None,
            Some(t) => {
                if t.sec < 0 || !(0..1_000_000_000).contains(&t.nsec) {
                    return Err(Errno::EINVAL);
                }
                Some(Duration::new(t.sec as u64, t.nsec as u32))
            }
        };
        self.poll(fds, timeout)
    }

    /// `epoll_create1(2)`: a new epoll instance; `flags` is 0 or `EPOLL_CLOEXEC`.
    ///
    /// # Errors
    /// `EINVAL` for other flags; `EMFILE`.
    pub fn epoll_create1(&self, flags: u32) -> Result<i32> {
        if flags & !EPOLL_CLOEXEC != 0 {
            return Err(Errno::EINVAL);
        }
        let ops = EpollFile::new();
        let file = anon_file(Box::new(ops), OpenFlags::empty(), self.cred_id.get())?;
        if let Some(ep) = file
            .ops()
            .as_any()
            .and_then(|a| a.downcast_ref::<EpollFile>())
        {
            ep.set_file(&file);
        }
        self.files.install(file, flags & EPOLL_CLOEXEC != 0, 0)
    }

    /// `epoll_ctl(2)`: adds, changes or removes the registration of `fd` in the epoll
    /// instance `epfd`. `event` is needed by `Add` and `Mod`; `EPOLLERR` and `EPOLLHUP` are
    /// always added to its events.
    ///
    /// # Errors
    /// `EBADF`; `EPERM` for a file whose readiness never changes (regular files,
    /// directories); `EINVAL` for `epfd` not an epoll, `fd == epfd`, a bad `EPOLLEXCLUSIVE`
    /// use; `ELOOP` for a cycle of epolls or one nested too deep; `EEXIST`; `ENOENT`;
    /// `EFAULT` for `Add` or `Mod` without an event.
    pub fn epoll_ctl(
        &self,
        epfd: i32,
        op: EpollOp,
        fd: i32,
        event: Option<EpollEvent>,
    ) -> Result<()> {
        self.epoll_ctl_checked(epfd, Ok(op), fd, event)
    }

    /// [`Task::epoll_ctl`] with the raw `op` number, checked where Linux checks it (after the
    /// fds: an unknown op with a bad fd is `EBADF`).
    ///
    /// # Errors
    /// As [`Task::epoll_ctl`]; `EINVAL` for an unknown `op`.
    pub fn epoll_ctl_raw(
        &self,
        epfd: i32,
        op: i32,
        fd: i32,
        event: Option<EpollEvent>,
    ) -> Result<()> {
        self.epoll_ctl_checked(epfd, EpollOp::from_raw(op), fd, event)
    }

    fn epoll_ctl_checked(
        &self,
        epfd: i32,
        op: Result<EpollOp>,
        fd: i32,
        event: Option<EpollEvent>,
    ) -> Result<()> {
        let has_event = !matches!(op, Ok(EpollOp::Del));
        let mut event = event;
        if has_event && event.is_none() {
            return Err(Errno::EFAULT);
        }
        let epf = self.epoll_fget(epfd)?;
        let tf = self.epoll_fget(fd)?;
        if !tf.ops().can_poll() {
            return Err(Errno::EPERM);
        }
        if has_event {
            if let Some(e) = event.as_mut() {
                // Linux: `ep_take_care_of_epollwakeup()`.
                if !self.cred.borrow().capable(Capabilities::BLOCK_SUSPEND) {
                    e.events.remove(PollEvents::WAKEUP);
                }
            }
        }
        let ep = match epoll_of(&epf) {
            Some(ep) if !Arc::ptr_eq(&epf, &tf) => ep.clone(),
            _ => return Err(Errno::EINVAL),
        };
        if has_event {
            if let Some(e) = event {
                if e.events.contains(PollEvents::EXCLUSIVE) {
                    if matches!(op, Ok(EpollOp::Mod)) {
                        return Err(Errno::EINVAL);
                    }
                    if matches!(op, Ok(EpollOp::Add))
                        && (epoll_of(&tf).is_some()
                            || !(e.events - crate::fs::epoll::EXCLUSIVE_OK).is_empty())
                    {
                        return Err(Errno::EINVAL);
                    }
                }
            }
        }
        ep.ctl(op?, fd, &tf, event)
    }

    /// An fd's file for the epoll calls (Linux: `fdget()`: `O_PATH` files are `EBADF`).
    fn epoll_fget(&self, fd: i32) -> Result<Arc<FileDescription>> {
        let f = self.fget(fd)?;
        if f.fmode().path_only {
            return Err(Errno::EBADF);
        }
        Ok((*f).clone())
    }

    /// `epoll_wait(2)`: waits until a registered file is ready or `timeout` passes (`None`:
    /// no limit; zero: just look), fills `events` from the front and returns how many.
    ///
    /// # Errors
    /// `EBADF` first; then `EINVAL` for an empty `events` or one longer than
    /// [`EP_MAX_EVENTS`], or `epfd` not an epoll; `EINTR`.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// use uvfs::abi::{EpollEvent, EpollOp, OpenFlags, PollEvents};
    /// use uvfs::{Cred, Errno, Vfs};
    ///
    /// let task = Vfs::new().task(Cred::root());
    /// let [r, w] = task.pipe2(OpenFlags::empty())?;
    /// let ep = task.epoll_create1(0)?;
    /// task.epoll_ctl(ep, EpollOp::Add, r, Some(EpollEvent::new(PollEvents::IN, 7)))?;
    /// let mut out = [EpollEvent::default(); 4];
    /// assert_eq!(task.epoll_wait(ep, &mut out, Some(Duration::ZERO))?, 0);
    /// task.write(w, b"x")?;
    /// assert_eq!(task.epoll_wait(ep, &mut out, None)?, 1);
    /// assert_eq!(out[0], EpollEvent::new(PollEvents::IN, 7));
    /// # Ok::<(), Errno>(())
    /// ```
    pub fn epoll_wait(
        &self,
        epfd: i32,
        events: &mut [EpollEvent],
        timeout: Option<Duration>,
    ) -> Result<usize> {
        // Linux 6.18 looks the fd up first (`do_epoll_wait()`: `EBADF` before the count's
        // `EINVAL`; older kernels checked the count first).
        // Borrowed, not cloned: no reference count of the epoll's file or instance is
        // written per call.
        let f = self.fget(epfd)?;
        if f.fmode().path_only {
            return Err(Errno::EBADF);
        }
        if events.is_empty() || events.len() > EP_MAX_EVENTS {
            return Err(Errno::EINVAL);
        }
        let ep = epoll_of(&f).ok_or(Errno::EINVAL)?;
        ep.wait(events, timeout, self.interrupt.get().map(|i| &**i))
    }

    /// Waiters on the file of `fd`: pollers and epoll registrations of a pipe or FIFO;
    /// blocked readers, writers and pollers of an eventfd; blocked `epoll_wait` calls and
    /// pollers of an epoll. For tests that must know a waiter is in place.
    ///
    /// # Errors
    /// `EBADF`; `EINVAL` for other kinds of file.
    #[doc(hidden)]
    pub fn readiness_waiters(&self, fd: i32) -> Result<u32> {
        let f = self.fget(fd)?;
        if let Some(pf) = crate::fs::pipefs::pipe_file(&f) {
            return Ok(pf.pipe().pollers());
        }
        if let Some(ep) = epoll_of(&f) {
            return Ok(ep.waiters());
        }
        if let Some(i) = crate::fs::inotify::inotify_of(&f) {
            return Ok(i.group.waiters());
        }
        if let Some(i) = crate::fs::fanotify::fanotify_of(&f) {
            return Ok(i.group.waiters());
        }
        match f.ops().as_any().and_then(|a| a.downcast_ref::<EventFd>()) {
            Some(e) => Ok(e.waiters()),
            None => Err(Errno::EINVAL),
        }
    }

    /// `eventfd2(2)`: a new eventfd counting from `initval`.
    ///
    /// # Errors
    /// `EINVAL` for unknown flags; `EMFILE`.
    ///
    /// # Examples
    /// ```
    /// use uvfs::abi::EfdFlags;
    /// use uvfs::{Cred, Errno, Vfs};
    ///
    /// let task = Vfs::new().task(Cred::root());
    /// let efd = task.eventfd2(0, EfdFlags::NONBLOCK)?;
    /// task.write(efd, &3u64.to_ne_bytes())?;
    /// task.write(efd, &4u64.to_ne_bytes())?;
    /// let mut buf = [0u8; 8];
    /// assert_eq!(task.read(efd, &mut buf)?, 8);
    /// assert_eq!(u64::from_ne_bytes(buf), 7);
    /// assert_eq!(task.read(efd, &mut buf), Err(Errno::EAGAIN));
    /// # Ok::<(), Errno>(())
    /// ```
    pub fn eventfd2(&self, initval: u32, flags: EfdFlags) -> Result<i32> {
        if !(flags - EfdFlags::all()).is_empty() {
            return Err(Errno::EINVAL);
        }
        let ops = EventFd::new(initval, flags.contains(EfdFlags::SEMAPHORE));
        let status = if flags.contains(EfdFlags::NONBLOCK) {
            OpenFlags::NONBLOCK
        } else {
            OpenFlags::empty()
        };
        let file = anon_file(Box::new(ops), status, self.cred_id.get())?;
        self.files
            .install(file, flags.contains(EfdFlags::CLOEXEC), 0)
    }
}
