//! `pipe2`, `FIONREAD`, the pipe-size `fcntl` commands and the pending `SIGPIPE`. Linux:
//! fs/pipe.c (`do_pipe2()`, `pipe_fcntl()`, `pipe_ioctl()`), fs/ioctl.c (`FIONREAD`).

use crate::abi::{Errno, FileType, OpenFlags, Result, PAGE_SIZE};
use crate::fs::pipefs::{self, pipe_max_size, round_pipe_size};
use crate::vfs::{Capabilities, FileDescription, Task};

/// # Pipes
///
/// `pipe2`, `FIONREAD`, the pending `SIGPIPE`.
impl Task {
    /// `pipe2(2)`: a new anonymous pipe; returns its read end and its write end, the lowest
    /// free fds. `O_NONBLOCK` is set on both files, `O_DIRECT` (packet mode: each write of up
    /// to `PIPE_BUF` bytes is one packet, and a read takes at most one) on the write end, as
    /// Linux does, `O_CLOEXEC` on both fds.
    ///
    /// # Errors
    /// `EINVAL` for any other flag (uvfs has no notification pipes, `O_NOTIFICATION_PIPE`);
    /// `EMFILE`.
    ///
    /// # Examples
    /// ```
    /// use uvfs::abi::OpenFlags;
    /// use uvfs::{Cred, Errno, Vfs};
    ///
    /// let task = Vfs::new().task(Cred::root());
    /// let [r, w] = task.pipe2(OpenFlags::NONBLOCK)?;
    /// assert_eq!(task.write(w, b"hi")?, 2);
    /// let mut buf = [0u8; 8];
    /// assert_eq!(task.read(r, &mut buf)?, 2);
    /// assert_eq!(task.read(r, &mut buf), Err(Errno::EAGAIN));
    /// task.close(w)?;
    /// assert_eq!(task.read(r, &mut buf)?, 0); // end of file
    /// # Ok::<(), Errno>(())
    /// ```
    pub fn pipe2(&self, flags: OpenFlags) -> Result<[i32; 2]> {
        if !(flags - (OpenFlags::NONBLOCK | OpenFlags::CLOEXEC | OpenFlags::DIRECT)).is_empty() {
            return Err(Errno::EINVAL);
        }
        let (uid, gid) = {
            let c = self.cred.borrow();
            (c.fsuid, c.fsgid)
        };
        let [r, w] = pipefs::create_pipe_files(uid, gid, flags, self.cred_id.get())?;
        let cloexec = flags.contains(OpenFlags::CLOEXEC);
        let rfd = self.files.install(r, cloexec, 0)?;
        match self.files.install(w, cloexec, 0) {
            Ok(wfd) => Ok([rfd, wfd]),
            Err(e) => {
                // Both fds or neither (Linux reserves both before installing either).
                self.fd_cache_evict(rfd);
                drop(self.files.remove(rfd));
                Err(e)
            }
        }
    }

    /// `ioctl(fd, FIONREAD)`: bytes a read could take now: a pipe's or FIFO's bytes held, a
    /// regular file's bytes from the position to the end (negative past it, as Linux).
    ///
    /// # Errors
    /// `EBADF` (closed or `O_PATH` fd); `ENOTTY` for other kinds of file.
    pub fn fionread(&self, fd: i32) -> Result<i32> {
        let file = self.fget(fd)?;
        if file.fmode().path_only {
            return Err(Errno::EBADF);
        }
        match file.inode().file_type() {
            FileType::Regular => {
                let pos = *file.pos.lock();
                Ok(file.inode().size().wrapping_sub(pos) as i32)
            }
            FileType::Fifo => match pipefs::pipe_file(&file) {
                Some(pf) => Ok(pf.pipe().bytes() as i32),
                None => Err(Errno::ENOTTY),
            },
            // An epoll file has an `ioctl` of its own (`ep_eventpoll_ioctl()`), which refuses
            // commands it does not know with `EINVAL`.
            FileType::Anon if crate::fs::epoll::epoll_of(&file).is_some() => Err(Errno::EINVAL),
            // inotify: the bytes of the queued events (Linux: `inotify_ioctl()`).
            FileType::Anon => {
                if let Some(i) = crate::fs::inotify::inotify_of(&file) {
                    Ok(i.queued_bytes() as i32)
                } else if let Some(f) = crate::fs::fanotify::fanotify_of(&file) {
                    // Linux: `fanotify_ioctl()`: the bytes of the queued events' metadata.
                    Ok(f.queued_bytes() as i32)
                } else {
                    Err(Errno::ENOTTY)
                }
            }
            _ => Err(Errno::ENOTTY),
        }
    }

    /// The name of the anonymous inode `fd` is open on, as `readlink` of `/proc/self/fd/N`
    /// shows it after `anon_inode:` (Linux: the name given to `anon_inode_getfile()`):
    /// `"[eventfd]"`, `"[eventpoll]"`, `"inotify"`, `"[fanotify]"`; `None` for every other
    /// file. uvfs has no /proc; this is what a caller would read there.
    ///
    /// # Errors
    /// `EBADF` if `fd` is not open.
    pub fn anon_inode_name(&self, fd: i32) -> Result<Option<&'static str>> {
        let file = self.fget(fd)?;
        if file.inode().file_type() != FileType::Anon {
            return Ok(None);
        }
        Ok(Some(if crate::fs::inotify::inotify_of(&file).is_some() {
            "inotify"
        } else if crate::fs::fanotify::fanotify_of(&file).is_some() {
            "[fanotify]"
        } else if crate::fs::epoll::epoll_of(&file).is_some() {
            "[eventpoll]"
        } else {
            "[eventfd]"
        }))
    }

    /// Clears the pending `SIGPIPE`; true if there was one. A write to a pipe or FIFO with no
    /// reader left records one (and fails with `EPIPE` if it wrote nothing), where Linux would
    /// send the signal; uvfs has no signals, so the embedder asks here.
    pub fn take_sigpipe(&self) -> bool {
        self.sigpipe.replace(false)
    }

    /// Blocked readers, writers and openers of the pipe or FIFO of `fd` (or, for a path not
    /// open, see [`Task::fifo_waiters_at`]): for tests that must know a waiter is in place.
    ///
    /// # Errors
    /// `EBADF`; `EINVAL` for a file that is not a pipe.
    #[doc(hidden)]
    pub fn pipe_waiters(&self, fd: i32) -> Result<u32> {
        let file = self.fget(fd)?;
        let pf = pipefs::pipe_file(&file).ok_or(Errno::EINVAL)?;
        Ok(pf.pipe().waiters())
    }

    /// Blocked openers, readers and writers of the FIFO at `path`: for tests.
    ///
    /// # Errors
    /// As [`Task::fstatat`]'s walk.
    #[doc(hidden)]
    pub fn fifo_waiters_at(&self, path: &str) -> Result<u32> {
        let fd = self.openat(crate::abi::AT_FDCWD, path, OpenFlags::PATH, 0)?;
        let n = {
            let file = self.fget(fd)?;
            pipefs::fifo_waiters(file.inode())
        };
        self.close(fd)?;
        Ok(n)
    }

    /// `F_SETPIPE_SZ` (Linux: `pipe_set_size()`).
    pub(crate) fn set_pipe_size(&self, file: &FileDescription, arg: u32) -> Result<i32> {
        let pf = pipefs::pipe_file(file).ok_or(Errno::EBADF)?;
        let size = round_pipe_size(arg as usize).ok_or(Errno::EINVAL)?;
        let nr_slots = size / PAGE_SIZE as usize;
        if nr_slots == 0 {
            return Err(Errno::EINVAL);
        }
        if size > pipe_max_size() && !self.cred.borrow().capable(Capabilities::SYS_RESOURCE) {
            return Err(Errno::EPERM);
        }
        // `fcntl` returns an `int` here: 2^31 bytes (a privileged caller's largest) does not
        // fit, and is refused (docs/divergences.md).
        let ret = i32::try_from(size).map_err(|_| Errno::EINVAL)?;
        pf.pipe().set_slots(nr_slots)?;
        Ok(ret)
    }
}
