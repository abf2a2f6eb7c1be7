//! `inotify(7)`'s calls: `inotify_init1`, `inotify_add_watch`, `inotify_rm_watch`.

use super::EmptyPath;
use crate::abi::Access;
use crate::abi::{
    Errno, OpenFlags, ResolveFlags, Result, AT_FDCWD, IN_ALL_BITS, IN_CLOEXEC, IN_DONT_FOLLOW,
    IN_MASK_ADD, IN_MASK_CREATE, IN_NONBLOCK, IN_ONLYDIR,
};
use crate::fs::anon::anon_file;
use crate::fs::inotify::{inotify_of, Inotify, InotifyFile, InotifyLimits};
use crate::vfs::namei::FollowLast;
use crate::vfs::permission::inode_permission;
use crate::vfs::{MountNamespace, Task};

/// # inotify
///
/// [`inotify_init1`](Task::inotify_init1), [`inotify_add_watch`](Task::inotify_add_watch),
/// [`inotify_rm_watch`](Task::inotify_rm_watch); events are read with [`Task::read`] in
/// `struct inotify_event` form ([`crate::abi::InotifyEvent::parse_all`]), and
/// [`Task::fionread`] gives the bytes queued. [`crate::fs::Fs::watch`] reads them typed.
impl Task {
    /// `inotify_init1(2)`: a new inotify instance; `flags` is a set of `IN_NONBLOCK` and
    /// `IN_CLOEXEC`.
    ///
    /// # Errors
    /// `EINVAL` for other flags; `EMFILE` past the user's instance limit
    /// ([`InotifyLimits::max_user_instances`]) or the fd limit; `ENOSYS` without the `notify`
    /// feature.
    pub fn inotify_init1(&self, flags: u32) -> Result<i32> {
        if !crate::vfs::notify::COMPILED {
            return Err(Errno::ENOSYS);
        }
        if flags & !(IN_NONBLOCK | IN_CLOEXEC) != 0 {
            return Err(Errno::EINVAL);
        }
        let euid = self.cred.borrow().euid;
        let group = Inotify::new(&self.ns.inotify_users, euid)?;
        let status = if flags & IN_NONBLOCK != 0 {
            OpenFlags::NONBLOCK
        } else {
            OpenFlags::empty()
        };
        let file = anon_file(Box::new(InotifyFile { group }), status, self.cred_id.get())?;
        self.files.install(file, flags & IN_CLOEXEC != 0, 0)
    }

    /// `inotify_add_watch(2)`: watches the file at `path` (relative to the working directory)
    /// for the events of `mask`; returns the watch descriptor, the same one again for a file
    /// this instance already watches (whose mask `mask` replaces, or adds to with
    /// `IN_MASK_ADD`).
    ///
    /// # Errors
    /// `EINVAL` (no or unknown bits, checked first; `IN_MASK_ADD` with `IN_MASK_CREATE`; `fd`
    /// not an inotify instance), `EBADF` (`fd` not open), `EEXIST` (`IN_MASK_CREATE` on a
    /// watched file), `ENOTDIR` (`IN_ONLYDIR`), `ENOSPC` (the user's watch limit), the walk's
    /// errors, `EACCES` without read permission on the file.
    pub fn inotify_add_watch(&self, fd: i32, path: impl AsRef<[u8]>, mask: u32) -> Result<i32> {
        // Linux's order (`inotify_add_watch`): the mask, the fd, the flag pair, the fd's kind.
        if mask & !IN_ALL_BITS != 0 || mask & IN_ALL_BITS == 0 {
            return Err(Errno::EINVAL);
        }
        let file = self.fget(fd)?;
        if mask & IN_MASK_ADD != 0 && mask & IN_MASK_CREATE != 0 {
            return Err(Errno::EINVAL);
        }
        let group = inotify_of(&file).ok_or(Errno::EINVAL)?.group.clone();
        let path = path.as_ref();
        let follow = if mask & IN_DONT_FOLLOW != 0 {
            FollowLast::No
        } else {
            FollowLast::Yes
        };
        let target = self.with_path(
            AT_FDCWD,
            path,
            EmptyPath::Reject,
            ResolveFlags::empty(),
            |w, s| {
                let pos = w.lookup(s, path, follow)?;
                Ok(pos.dentry.arc().clone())
            },
        )?;
        let inode = target.inode().ok_or(Errno::ENOENT)?.clone();
        if mask & IN_ONLYDIR != 0 && !inode.is_dir() {
            return Err(Errno::ENOTDIR);
        }
        inode_permission(&self.cred.borrow(), &inode, Access::READ)?;
        group.add_watch(&target, &inode, mask)
    }

    /// `inotify_rm_watch(2)`: removes watch `wd`; an `IN_IGNORED` event follows.
    ///
    /// # Errors
    /// `EBADF`, `EINVAL` (`fd` not an inotify instance, or `wd` not one of its watches).
    pub fn inotify_rm_watch(&self, fd: i32, wd: i32) -> Result<()> {
        let file = self.fget(fd)?;
        let group = inotify_of(&file).ok_or(Errno::EINVAL)?.group.clone();
        group.rm_watch(wd)
    }
}

impl MountNamespace {
    /// inotify's limits for the tasks of this namespace.
    pub fn inotify_limits(&self) -> InotifyLimits {
        self.inotify_users.limits()
    }

    /// Sets inotify's limits (Linux: writing /proc/sys/fs/inotify/); an instance keeps the
    /// queue limit it was made with.
    pub fn set_inotify_limits(&self, limits: InotifyLimits) {
        self.inotify_users.set_limits(limits);
    }
}
