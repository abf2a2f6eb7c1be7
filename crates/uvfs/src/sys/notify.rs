//! `inotify(7)`'s calls: `inotify_init1`, `inotify_add_watch`, `inotify_rm_watch`.

use crate::abi::{Errno, Result};
use crate::vfs::Task;

/// # inotify
///
/// [`inotify_init1`](Task::inotify_init1), [`inotify_add_watch`](Task::inotify_add_watch),
/// [`inotify_rm_watch`](Task::inotify_rm_watch); events are read with [`Task::read`] in
/// `struct inotify_event` form ([`crate::abi::InotifyEvent::parse_all`]), and
/// [`Task::fionread`] gives the bytes queued.
impl Task {
    /// `inotify_init1(2)`: a new inotify instance; `flags` is a set of `IN_NONBLOCK` and
    /// `IN_CLOEXEC`.
    ///
    /// # Errors
    /// `EINVAL` for other flags; `EMFILE` past the user's instance limit or the fd limit.
    pub fn inotify_init1(&self, flags: u32) -> Result<i32> {
        let _ = flags;
        Err(Errno::ENOSYS)
    }

    /// `inotify_add_watch(2)`: watches the file at `path` (relative to the working directory)
    /// for the events of `mask`; returns the watch descriptor, the same one again for a file
    /// this instance already watches.
    ///
    /// # Errors
    /// `EBADF` (`fd` not open), `EINVAL` (`fd` not an inotify instance, no event bits, unknown
    /// bits, `IN_MASK_ADD` with `IN_MASK_CREATE`), `EEXIST` (`IN_MASK_CREATE` on a watched
    /// file), `ENOTDIR` (`IN_ONLYDIR`), `ENOSPC` (the user's watch limit), the walk's errors,
    /// `EACCES` without read permission on the file.
    pub fn inotify_add_watch(&self, fd: i32, path: impl AsRef<[u8]>, mask: u32) -> Result<i32> {
        let _ = (fd, path.as_ref(), mask);
        Err(Errno::ENOSYS)
    }

    /// `inotify_rm_watch(2)`: removes watch `wd`; an `IN_IGNORED` event follows.
    ///
    /// # Errors
    /// `EBADF`, `EINVAL` (`fd` not an inotify instance, or `wd` not one of its watches).
    pub fn inotify_rm_watch(&self, fd: i32, wd: i32) -> Result<()> {
        let _ = (fd, wd);
        Err(Errno::ENOSYS)
    }
}
