//! `inotify(7)`'s calls: `inotify_init1`, `inotify_add_watch`, `inotify_rm_watch`;
//! `fanotify(7)`'s: `fanotify_init`, `fanotify_mark`.

use std::sync::Arc;

use super::EmptyPath;
use crate::abi::*;
use crate::fs::anon::{anon_file, anon_file_read_only, AnonIo};
use crate::fs::fanotify::{fanotify_of, Fanotify, FanotifyFile, FanotifyLimits, FD_EVENTS};
use crate::fs::inotify::{inotify_of, Inotify, InotifyFile, InotifyLimits};
use crate::vfs::cred::Capabilities;
use crate::vfs::namei::FollowLast;
use crate::vfs::notify::mark::Object;
use crate::vfs::permission::inode_permission;
use crate::vfs::{FileDescription, MountNamespace, Task, VfsPath};

/// # inotify
///
/// [`inotify_init1`](Task::inotify_init1), [`inotify_add_watch`](Task::inotify_add_watch),
/// [`inotify_rm_watch`](Task::inotify_rm_watch); events are read with [`Task::read`] in
/// `struct inotify_event` form ([`crate::abi::InotifyEvent::parse_all`]), and
/// [`Task::fionread`] gives the bytes queued. [`crate::fs::Fs::watcher`] reads them typed.
impl Task {
    /// `inotify_init1(2)`: a new inotify instance; `flags` is a set of `IN_NONBLOCK` and
    /// `IN_CLOEXEC`.
    ///
    /// # Errors
    /// `EINVAL` for other flags; `EMFILE` past the user's instance limit
    /// ([`InotifyLimits::max_user_instances`]) or the fd limit; `ENOSYS` without the `notify`
    /// feature.
    pub fn inotify_init1(&self, flags: u32) -> Result<i32> {
        let file = self.inotify_init1_file(flags)?;
        self.files.install(file, flags & IN_CLOEXEC != 0, 0)
    }

    /// [`Task::inotify_init1`] without an fd: the instance's open file, for
    /// `uvfs::fs::Watcher` (its last close ends the instance).
    pub(crate) fn inotify_init1_file(&self, flags: u32) -> Result<Arc<FileDescription>> {
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
        anon_file_read_only(Box::new(InotifyFile { group }), status, self.cred_id.get())
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
        check_watch_mask(mask)?;
        let file = self.fget_not_path(fd)?;
        self.inotify_add_watch_file(&file, path.as_ref(), mask)
    }

    /// [`Task::inotify_add_watch`] on an instance held without an fd.
    pub(crate) fn inotify_add_watch_file(
        &self,
        file: &FileDescription,
        path: &[u8],
        mask: u32,
    ) -> Result<i32> {
        check_watch_mask(mask)?;
        if mask & IN_MASK_ADD != 0 && mask & IN_MASK_CREATE != 0 {
            return Err(Errno::EINVAL);
        }
        let group = inotify_of(file).ok_or(Errno::EINVAL)?.group.clone();
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
        let file = self.fget_not_path(fd)?;
        self.inotify_rm_watch_file(&file, wd)
    }

    /// [`Task::inotify_rm_watch`] on an instance held without an fd.
    pub(crate) fn inotify_rm_watch_file(&self, file: &FileDescription, wd: i32) -> Result<()> {
        let group = inotify_of(file).ok_or(Errno::EINVAL)?.group.clone();
        group.rm_watch(wd)
    }

    /// A read of the instance `file` held without an fd, waiting for an event or not as
    /// `how` says whatever the file's `O_NONBLOCK` (as [`Task::read`] otherwise: whole
    /// events, `EINVAL` for a buffer too small for the first, `EINTR` when interrupted).
    pub(crate) fn inotify_read_file(
        &self,
        file: &FileDescription,
        buf: &mut [u8],
        how: InotifyRead,
    ) -> Result<usize> {
        let io = inotify_of(file).ok_or(Errno::EINVAL)?;
        let nonblock = matches!(how, InotifyRead::NoWait);
        io.read(buf, nonblock, self.interrupt.get().map(|i| &**i))
    }
}

/// Whether [`Task::inotify_read_file`] waits for an event when none is queued.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum InotifyRead {
    /// Until one comes (or the task is interrupted).
    Wait,
    /// No: `EAGAIN`.
    NoWait,
}

/// `EINVAL` for a watch mask with no bit or an unknown one (checked before anything else).
fn check_watch_mask(mask: u32) -> Result<()> {
    if mask & !IN_ALL_BITS != 0 || mask & IN_ALL_BITS == 0 {
        return Err(Errno::EINVAL);
    }
    Ok(())
}

/// Every `fanotify_mark` flag Linux knows (`FANOTIFY_MARK_FLAGS`).
const FAN_MARK_ALL: u32 = FAN_MARK_ADD
    | FAN_MARK_REMOVE
    | FAN_MARK_DONT_FOLLOW
    | FAN_MARK_ONLYDIR
    | FAN_MARK_MOUNT
    | FAN_MARK_IGNORED_MASK
    | FAN_MARK_IGNORED_SURV_MODIFY
    | FAN_MARK_FLUSH
    | FAN_MARK_FILESYSTEM
    | FAN_MARK_EVICTABLE
    | FAN_MARK_IGNORE;
/// Every event bit `fanotify_mark` knows (Linux: `FANOTIFY_EVENTS`, the permission events
/// and `FANOTIFY_EVENT_FLAGS`).
const FAN_MASK_ALL: u64 = FAN_ACCESS
    | FAN_MODIFY
    | FAN_ATTRIB
    | FAN_CLOSE
    | FAN_OPEN
    | FAN_MOVED_FROM
    | FAN_MOVED_TO
    | FAN_CREATE
    | FAN_DELETE
    | FAN_DELETE_SELF
    | FAN_MOVE_SELF
    | FAN_OPEN_EXEC
    | FAN_FS_ERROR
    | FAN_RENAME
    | FAN_OPEN_PERM
    | FAN_ACCESS_PERM
    | FAN_OPEN_EXEC_PERM
    | FAN_PRE_ACCESS
    | FAN_ONDIR
    | FAN_EVENT_ON_CHILD;
/// The permission events (Linux: `FANOTIFY_PERM_EVENTS`).
const FAN_PERM_EVENTS: u64 = FAN_OPEN_PERM | FAN_ACCESS_PERM | FAN_OPEN_EXEC_PERM | FAN_PRE_ACCESS;

/// # fanotify
///
/// [`fanotify_init`](Task::fanotify_init) and [`fanotify_mark`](Task::fanotify_mark), for the
/// notification class with fds in the events; events are read with [`Task::read`] as
/// `struct fanotify_event_metadata` ([`crate::abi::FanotifyEvent::parse_all`]), each with an
/// fd opened on its file in the reader's table.
impl Task {
    /// `fanotify_init(2)`: a new fanotify group of the notification class. `flags`: any of
    /// `FAN_CLOEXEC`, `FAN_NONBLOCK`, `FAN_UNLIMITED_QUEUE`, `FAN_UNLIMITED_MARKS`,
    /// `FAN_REPORT_TID`; `event_f_flags`: the flags of the files opened for events (an
    /// access mode and any of `O_LARGEFILE`, `O_CLOEXEC`, `O_APPEND`, `O_DSYNC`, `O_NOATIME`,
    /// `O_NONBLOCK`, `O_SYNC`).
    ///
    /// # Errors
    /// `EINVAL` for unknown flags, the content and pre-content classes, file-id and pidfd
    /// reporting and audit (which uvfs does not provide: docs/divergences.md), or bad
    /// `event_f_flags`; `EPERM` without `CAP_SYS_ADMIN`; `EMFILE` past the user's group limit
    /// or the fd limit; `ENOSYS` without the `notify` feature.
    pub fn fanotify_init(&self, flags: u32, event_f_flags: u32) -> Result<i32> {
        if !crate::vfs::notify::COMPILED {
            return Err(Errno::ENOSYS);
        }
        // Linux's order (`fanotify_init`): the capability, then the flags.
        if !self.cred.borrow().capable(Capabilities::SYS_ADMIN) {
            return Err(Errno::EPERM);
        }
        let known =
            FAN_CLOEXEC | FAN_NONBLOCK | FAN_UNLIMITED_QUEUE | FAN_UNLIMITED_MARKS | FAN_REPORT_TID;
        if flags & !known != 0 {
            return Err(Errno::EINVAL);
        }
        let allowed_f = OpenFlags::from_bits_retain(OpenFlags::ACCMODE)
            | OpenFlags::LARGEFILE
            | OpenFlags::CLOEXEC
            | OpenFlags::APPEND
            | OpenFlags::DSYNC
            | OpenFlags::NOATIME
            | OpenFlags::NONBLOCK
            | OpenFlags::SYNC;
        let f_flags = OpenFlags::from_bits_retain(event_f_flags);
        if !(f_flags - allowed_f).is_empty() || f_flags.access() == AccessMode::Neither {
            return Err(Errno::EINVAL);
        }
        let euid = self.cred.borrow().euid;
        let group = Fanotify::new(
            &self.ns.fanotify_users,
            euid,
            flags & FAN_UNLIMITED_QUEUE != 0,
            flags & FAN_UNLIMITED_MARKS != 0,
            f_flags,
        )?;
        let status = if flags & FAN_NONBLOCK != 0 {
            OpenFlags::NONBLOCK
        } else {
            OpenFlags::empty()
        };
        let file = anon_file(Box::new(FanotifyFile { group }), status, self.cred_id.get())?;
        self.files.install(file, flags & FAN_CLOEXEC != 0, 0)
    }

    /// `fanotify_mark(2)`: adds (`FAN_MARK_ADD`) or removes (`FAN_MARK_REMOVE`) the events of
    /// `mask` to or from the group's mark on the inode at `path` (relative to `dirfd`; `None`:
    /// the file `dirfd` itself), its mount (`FAN_MARK_MOUNT`) or its filesystem
    /// (`FAN_MARK_FILESYSTEM`), or the mark's ignore mask (`FAN_MARK_IGNORED_MASK`, with
    /// `FAN_MARK_IGNORED_SURV_MODIFY`); `FAN_MARK_FLUSH` removes every mark of one kind.
    ///
    /// # Errors
    /// In Linux's order: `EINVAL` (unknown flags, no or two commands, an empty mask, unknown
    /// bits, `FAN_MARK_IGNORE`, which uvfs does not provide), `EBADF`, `EINVAL` (`fd` not a
    /// fanotify group; permission events; events without a file, which need file-id
    /// reporting; `FAN_MARK_EVICTABLE` off an inode), then the path's errors, `ENOTDIR`
    /// (`FAN_MARK_ONLYDIR`), `EACCES` (no read permission), `ENOENT` (removing from no
    /// mark), `ENOSPC` (the user's mark limit).
    pub fn fanotify_mark(
        &self,
        fd: i32,
        flags: u32,
        mask: u64,
        dirfd: i32,
        path: Option<&[u8]>,
    ) -> Result<()> {
        if flags & !FAN_MARK_ALL != 0 {
            return Err(Errno::EINVAL);
        }
        let kind = flags & (FAN_MARK_MOUNT | FAN_MARK_FILESYSTEM);
        let cmd = flags & (FAN_MARK_ADD | FAN_MARK_REMOVE | FAN_MARK_FLUSH);
        match cmd {
            FAN_MARK_ADD | FAN_MARK_REMOVE if mask == 0 => return Err(Errno::EINVAL),
            FAN_MARK_ADD | FAN_MARK_REMOVE => {}
            FAN_MARK_FLUSH => {
                if flags & !(FAN_MARK_MOUNT | FAN_MARK_FILESYSTEM | FAN_MARK_FLUSH) != 0 {
                    return Err(Errno::EINVAL);
                }
            }
            _ => return Err(Errno::EINVAL),
        }
        if mask & !FAN_MASK_ALL != 0 {
            return Err(Errno::EINVAL);
        }
        if flags & FAN_MARK_IGNORE != 0 {
            return Err(Errno::EINVAL);
        }
        let ignore = flags & FAN_MARK_IGNORED_MASK != 0;
        let mut mask = mask;
        if ignore {
            // Event flags mean nothing in a legacy ignore mask.
            mask &= !(FAN_ONDIR | FAN_EVENT_ON_CHILD);
        }
        let file = self.fget_not_path(fd)?;
        let group = fanotify_of(&file).ok_or(Errno::EINVAL)?.group.clone();
        drop(file);
        if kind == FAN_MARK_MOUNT | FAN_MARK_FILESYSTEM {
            // FAN_MARK_MNTNS: mount namespace marks need a FAN_REPORT_MNT group.
            return Err(Errno::EINVAL);
        }
        // Mount and filesystem marks need CAP_SYS_ADMIN; an inode mark only read permission
        // on the inode (a group made by a privileged task may be used by another).
        if kind != FAN_MARK_INODE && !self.cred.borrow().capable(Capabilities::SYS_ADMIN) {
            return Err(Errno::EPERM);
        }
        if mask & FAN_PERM_EVENTS != 0 {
            return Err(Errno::EINVAL);
        }
        if flags & FAN_MARK_EVICTABLE != 0 && kind != FAN_MARK_INODE {
            return Err(Errno::EINVAL);
        }
        if mask & !(FD_EVENTS | FAN_ONDIR | FAN_EVENT_ON_CHILD) != 0 {
            return Err(Errno::EINVAL);
        }
        if cmd == FAN_MARK_FLUSH {
            group.flush(match kind {
                FAN_MARK_MOUNT => |o| matches!(o, Object::Mount(..)),
                FAN_MARK_FILESYSTEM => |o| matches!(o, Object::Sb(_)),
                _ => |o| matches!(o, Object::Inode(_)),
            });
            return Ok(());
        }
        let target = self.fanotify_path(dirfd, path, flags)?;
        let inode = target.dentry.inode().ok_or(Errno::ENOENT)?.clone();
        // No new mount or filesystem marks on the kernel-internal ones (pipefs, anon_inodefs)
        // (Linux: `fanotify_events_supported()`, for an addition only, before the permission
        // check, as the host shows).
        if cmd == FAN_MARK_ADD
            && kind != FAN_MARK_INODE
            && matches!(inode.sb().ops().fs_name(), "pipefs" | "anon_inodefs")
        {
            return Err(Errno::EINVAL);
        }
        inode_permission(&self.cred.borrow(), &inode, Access::READ)?;
        // FAN_EVENT_ON_CHILD only on a directory's inode mark; the bits a removal leaves
        // that mean nothing (Linux: `umask`).
        let mut umask = if ignore {
            (FAN_ONDIR | FAN_EVENT_ON_CHILD) as u32
        } else {
            0
        };
        if kind != FAN_MARK_INODE || !inode.is_dir() {
            mask &= !FAN_EVENT_ON_CHILD;
            umask |= FAN_EVENT_ON_CHILD as u32;
        }
        let (obj, dentry) = match kind {
            FAN_MARK_MOUNT => (Object::mount(&target.mnt), None),
            FAN_MARK_FILESYSTEM => (Object::Sb(inode.sb().clone()), None),
            _ => (Object::Inode(inode), Some(&*target.dentry)),
        };
        // An ignore mask a modification would clear is not added while someone has the
        // file open for writing (Linux: `fanotify_add_inode_mark()`).
        if cmd == FAN_MARK_ADD
            && ignore
            && flags & FAN_MARK_IGNORED_SURV_MODIFY == 0
            && matches!(&obj, Object::Inode(i) if i.is_open_for_write())
        {
            return Ok(());
        }
        if cmd == FAN_MARK_ADD {
            group.add_mark(
                obj,
                dentry,
                mask as u32,
                ignore,
                flags & FAN_MARK_IGNORED_SURV_MODIFY != 0,
            )
        } else {
            group.remove_mark(&obj, mask as u32, ignore, umask)
        }
    }

    /// The object of a `fanotify_mark`: `path` from `dirfd`, or the file `dirfd` (Linux:
    /// `fanotify_find_path()`).
    fn fanotify_path(&self, dirfd: i32, path: Option<&[u8]>, flags: u32) -> Result<VfsPath> {
        let p = match path {
            None => {
                let file = self.fget_not_path(dirfd)?;
                file.path().clone()
            }
            Some(path) => {
                let follow = if flags & FAN_MARK_DONT_FOLLOW != 0 {
                    FollowLast::No
                } else {
                    FollowLast::Yes
                };
                self.with_path(
                    dirfd,
                    path,
                    EmptyPath::Reject,
                    ResolveFlags::empty(),
                    |w, s| Ok(w.lookup(s, path, follow)?.to_path()),
                )?
            }
        };
        if flags & FAN_MARK_ONLYDIR != 0 && !p.dentry.inode().is_some_and(|i| i.is_dir()) {
            return Err(Errno::ENOTDIR);
        }
        Ok(p)
    }
}

impl MountNamespace {
    /// fanotify's limits for the tasks of this namespace.
    pub fn fanotify_limits(&self) -> FanotifyLimits {
        self.fanotify_users.limits()
    }

    /// Sets fanotify's limits (Linux: writing /proc/sys/fs/fanotify/); a group keeps the
    /// queue limit it was made with.
    pub fn set_fanotify_limits(&self, limits: FanotifyLimits) {
        self.fanotify_users.set_limits(limits);
    }

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

impl Task {
    /// The file of `fd`, as Linux's `fdget()` finds it: an `O_PATH` file is not there
    /// (`EBADF`).
    fn fget_not_path(&self, fd: i32) -> Result<crate::vfs::task::FileRef<'_>> {
        let file = self.fget(fd)?;
        if file.fmode().path_only {
            return Err(Errno::EBADF);
        }
        Ok(file)
    }
}
