//! An open file description, shared by every fd `dup`ed from it. Linux: `struct file`.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use super::inode::{Inode, InodeHold};
use super::mount::VfsPath;
use super::ops::FileOps;
use crate::abi::{AccessMode, FileType, OpenFlags};

/// How a file may be used, fixed at open (Linux: `f_mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FMode {
    /// Opened for reading.
    pub read: bool,
    /// Opened for writing.
    pub write: bool,
    /// `O_PATH`: only a location; no I/O.
    pub path_only: bool,
}

/// Status flags `F_SETFL` may change (Linux: `SETFL_MASK`). `O_ASYNC` is set only by a
/// file's `fasync` handler, which of uvfs's files only pipes and FIFOs have
/// ([`FileDescription::set_status_flags`]).
pub(crate) const SETFL_MASK: u32 = OpenFlags::APPEND.bits()
    | OpenFlags::NONBLOCK.bits()
    | OpenFlags::NOATIME.bits()
    | OpenFlags::DIRECT.bits();

/// A file's position (Linux: `f_pos`) and the lock that makes a read, a write or a seek
/// through a description other threads may use move it as one step (Linux: `f_pos_lock`).
/// Linux's `fdget_pos()` takes that lock only when the file may be used by another thread
/// (`file_count() > 1`); so does uvfs ([`FilePos::take`], told by
/// `vfs::task::FileRef::pos_unshared`), saving the lock's two atomic updates on a file one
/// task alone has open.
///
/// The value is an atomic, read and written with relaxed loads and stores, so that a call that
/// takes the lock and one that skips it are never a data race, whatever the decision: at worst
/// two moves of a position would not be one step each, as on a description Linux does not
/// lock.
#[derive(Debug, Default)]
pub(crate) struct FilePos {
    /// Protects: the read-modify-write of `value` by a call that may not be alone.
    /// Order: before the filesystem's data locks and the inode lock.
    lock: Mutex<()>,
    value: std::sync::atomic::AtomicU64,
}

/// A file's position, held for a call: read when taken, written back when dropped.
pub(crate) struct PosGuard<'a> {
    _lock: Option<parking_lot::MutexGuard<'a, ()>>,
    cell: &'a std::sync::atomic::AtomicU64,
    value: u64,
}

impl FilePos {
    /// The position, under the lock.
    #[inline]
    pub(crate) fn lock(&self) -> PosGuard<'_> {
        let g = self.lock.lock();
        PosGuard {
            _lock: Some(g),
            cell: &self.value,
            value: self.value.load(Ordering::Relaxed),
        }
    }

    /// The position, under the lock unless `unshared` (the caller knows no other thread can
    /// use the file until it returns: `vfs::task::FileRef::pos_unshared`).
    #[inline]
    pub(crate) fn take(&self, unshared: bool) -> PosGuard<'_> {
        if unshared {
            self.unshared()
        } else {
            self.lock()
        }
    }

    /// The position, without the lock, for a call that knows no other thread can use the file
    /// until it returns (Linux: `fdget_pos()` of a file whose count is 1).
    #[inline]
    pub(crate) fn unshared(&self) -> PosGuard<'_> {
        PosGuard {
            _lock: None,
            cell: &self.value,
            value: self.value.load(Ordering::Relaxed),
        }
    }
}

impl std::ops::Deref for PosGuard<'_> {
    type Target = u64;
    #[inline]
    fn deref(&self) -> &u64 {
        &self.value
    }
}

impl std::ops::DerefMut for PosGuard<'_> {
    #[inline]
    fn deref_mut(&mut self) -> &mut u64 {
        &mut self.value
    }
}

impl Drop for PosGuard<'_> {
    #[inline]
    fn drop(&mut self) {
        // Here, before the fields drop: under the lock when there is one.
        self.cell.store(self.value, Ordering::Relaxed);
    }
}

/// An open file description.
pub struct FileDescription {
    /// The path and inode, counted or through the dentry's pin (`vfs::pin`).
    hold: super::pin::FileHold,
    fmode: FMode,
    /// This file is counted in its mount's and superblock's writers.
    counted_writer: bool,
    /// The open finished (Linux: `FMODE_OPENED` as `__fput()` sees it): its last close is
    /// notified. Files whose open failed late (a FIFO's rendezvous) are released silently.
    opened: std::sync::atomic::AtomicBool,
    /// The file's notification gate: the process-wide count of marked objects, or, for a
    /// file notification never sees (Linux: `FMODE_NONOTIFY`: `O_PATH` files, anonymous files,
    /// the files fanotify opens for its readers), a count that stays 0. The file hooks' first
    /// (and, with nothing watched, only) test is one load through this pointer: a file's
    /// own field and a compare with memory, where the static's address would take a load
    /// more in code inlined into another crate.
    notify_gate: &'static std::sync::atomic::AtomicIsize,
    /// Identity of the opener's credentials (`Task::cred_id`; Linux: `f_cred`).
    opener_cred: u64,
    flags: AtomicU32,
    /// The file position (Linux: `f_pos` and `f_pos_lock`).
    pub(crate) pos: FilePos,
    ops: Box<dyn FileOps>,
    /// The directory an `O_TMPFILE` file was made in, kept, even removed, until this file's
    /// release (Linux: `d_tmpfile()` makes the file's unnamed dentry the directory's child,
    /// and a dentry holds its parent until `__fput()`'s `dput()`).
    kept_dir: Option<InodeHold>,
    /// The epoll registrations of this file, which go with its last close (Linux: `f_ep`,
    /// `eventpoll_release()`).
    /// Protects: the list. Order: a leaf (taken with no epoll's or pipe's lock held).
    /// Made by the first registration, so a file never watched keeps one null pointer.
    pub(crate) epoll_links:
        once_cell::race::OnceBox<Mutex<Vec<std::sync::Weak<crate::fs::epoll::EpItem>>>>,
}

impl FileDescription {
    /// Builds an open file.
    pub(crate) fn new(
        path: VfsPath,
        inode: Arc<Inode>,
        flags: OpenFlags,
        ops: Box<dyn FileOps>,
        opener_cred: u64,
    ) -> crate::abi::Result<Arc<Self>> {
        Self::new_held(
            super::pin::FileHold::owned(path, inode),
            flags,
            ops,
            opener_cred,
        )
    }

    /// [`FileDescription::new`] with the path and inode held as `hold` holds them.
    pub(crate) fn new_held(
        hold: super::pin::FileHold,
        flags: OpenFlags,
        ops: Box<dyn FileOps>,
        opener_cred: u64,
    ) -> crate::abi::Result<Arc<Self>> {
        let inode = hold.inode();
        let path_only = flags.contains(OpenFlags::PATH);
        let (read, write) = if path_only {
            (false, false)
        } else {
            match flags.access() {
                AccessMode::ReadOnly => (true, false),
                AccessMode::WriteOnly => (false, true),
                AccessMode::ReadWrite => (true, true),
                AccessMode::Neither => (false, false),
            }
        };
        // Files of special types write to a device or pipe, not to the filesystem (Linux:
        // `special_file()` in `do_dentry_open()`).
        let counted_writer = write
            && matches!(
                inode.file_type(),
                FileType::Regular | FileType::Directory | FileType::Symlink
            );
        let kept = flags.bits()
            & !(OpenFlags::CREAT
                | OpenFlags::EXCL
                | OpenFlags::NOCTTY
                | OpenFlags::TRUNC
                | OpenFlags::CLOEXEC)
                .bits();
        let mut file = FileDescription {
            hold,
            fmode: FMode {
                read,
                write,
                path_only,
            },
            counted_writer: false,
            opened: std::sync::atomic::AtomicBool::new(false),
            notify_gate: if path_only {
                &super::notify::NEVER_WATCHED
            } else {
                super::notify::gate()
            },
            opener_cred,
            flags: AtomicU32::new(kept),
            pos: FilePos::default(),
            ops,
            kept_dir: None,
            epoll_links: once_cell::race::OnceBox::new(),
        };
        // Counted only if the mount and filesystem are still writable once counted (a
        // remount read-only that raced with this open either sees the count or is seen):
        // refused, the file is released as it drops (Linux: `mnt_get_write_access()` in
        // `do_dentry_open()`).
        if counted_writer {
            file.hold.path().mnt.get_write()?;
            file.counted_writer = true;
            file.hold.inode().count_writer(true);
        }
        Ok(Arc::new(file))
    }

    /// Keeps `dir` until this file's release, after the filesystem's `release`. Only for a
    /// file no one else has seen yet (`O_TMPFILE`'s, before it is installed).
    pub(crate) fn keep_dir(self: &mut Arc<Self>, dir: &Arc<Inode>) {
        let file = Arc::get_mut(self).expect("a new file description is not shared yet");
        file.kept_dir = Some(InodeHold::inode(dir));
    }

    /// The directory [`FileDescription::keep_dir`] keeps, if any.
    pub(crate) fn kept_dir(&self) -> Option<&Arc<Inode>> {
        self.kept_dir.as_ref().and_then(InodeHold::get)
    }

    /// Where the file was opened.
    #[inline]
    pub fn path(&self) -> &VfsPath {
        self.hold.path()
    }
    /// The inode.
    #[inline]
    pub fn inode(&self) -> &Arc<Inode> {
        self.hold.inode()
    }
    /// True if the file holds its dentry through the dentry's pin (`vfs::pin`).
    #[cfg(all(test, not(any(loom, feature = "shuttle"))))]
    pub(crate) fn is_pinned(&self) -> bool {
        self.hold.is_pinned()
    }
    /// Access mode.
    #[inline]
    pub fn fmode(&self) -> FMode {
        self.fmode
    }
    /// Status flags (access mode and `F_SETFL` flags; creation flags removed).
    #[inline]
    pub fn flags(&self) -> OpenFlags {
        OpenFlags::from_bits_retain(self.flags.load(Ordering::Relaxed))
    }
    /// Replaces the `F_SETFL`-changeable flags; `O_ASYNC` too if `fasync` (the file kinds
    /// whose Linux `->fasync` sets `FASYNC`: pipes and FIFOs).
    pub(crate) fn set_status_flags(&self, new: OpenFlags, fasync: bool) {
        let mask = if fasync {
            SETFL_MASK | OpenFlags::ASYNC.bits()
        } else {
            SETFL_MASK
        };
        let cur = self.flags.load(Ordering::Relaxed);
        let v = (cur & !mask) | (new.bits() & mask);
        self.flags.store(v, Ordering::Relaxed);
    }
    /// Identity of the credentials that opened the file.
    pub fn opener_cred(&self) -> u64 {
        self.opener_cred
    }

    /// Whether the file takes an offset (`pread`, `pwrite`, a `splice` or `sendfile` offset):
    /// every file opened by path but a FIFO; no pipe and no anonymous-inode file (eventfd,
    /// epoll) (Linux: `FMODE_PREAD`/`FMODE_PWRITE`, set by `do_dentry_open()` only).
    #[inline]
    pub(crate) fn has_pread(&self) -> bool {
        !matches!(self.inode().file_type(), FileType::Fifo | FileType::Anon)
    }

    /// Records that the open finished, and tells fsnotify (Linux: `fsnotify_open()` after
    /// `do_dentry_open()`). Files made without an open (pipes, anonymous files) never are.
    pub(crate) fn open_done(&self) {
        self.opened.store(true, Ordering::Relaxed);
        super::notify::open(self);
    }

    /// No notification for this file (Linux: `FMODE_NONOTIFY`): `O_PATH` files and the
    /// files fanotify opens for its readers.
    #[inline]
    pub(crate) fn nonotify(&self) -> bool {
        std::ptr::eq(self.notify_gate, &super::notify::NEVER_WATCHED)
    }

    /// Whether anything may be watched, for this file's hooks: one load through
    /// `notify_gate`.
    #[inline(always)]
    pub(crate) fn notify_gate_open(&self) -> bool {
        self.notify_gate.load(Ordering::Relaxed) != 0
    }

    /// Makes a file no one else has seen yet silent ([`FileDescription::nonotify`]).
    pub(crate) fn set_nonotify(self: &mut Arc<Self>) {
        let file = Arc::get_mut(self).expect("a new file description is not shared yet");
        file.notify_gate = &super::notify::NEVER_WATCHED;
    }

    /// Adds `bits` to the status flags of a file no one else has seen yet (fanotify's event
    /// files, whose `f_flags` keep what Linux's `dentry_open()` was given).
    pub(crate) fn add_status_bits(self: &mut Arc<Self>, bits: OpenFlags) {
        let file = Arc::get_mut(self).expect("a new file description is not shared yet");
        *file.flags.get_mut() |= bits.bits();
    }

    /// Whether the open finished ([`FileDescription::open_done`]).
    #[inline]
    pub(crate) fn open_finished(&self) -> bool {
        self.opened.load(Ordering::Relaxed)
    }

    /// The filesystem's operations for this open file.
    #[inline]
    pub fn ops(&self) -> &dyn FileOps {
        &*self.ops
    }
}

impl Drop for FileDescription {
    fn drop(&mut self) {
        // Linux: `fsnotify_close()` first in `__fput()`.
        super::notify::close(self);
        // The last close puts the file's path (Linux: `__fput()` → `mntput()`).
        self.path().mnt.touch();
        // The description's OFD and `flock` locks go with it (Linux: `locks_remove_file()`
        // in `__fput()`); one load for a file never locked.
        super::locks::remove_file(self);
        if let Some(links) = self.epoll_links.get() {
            let links = std::mem::take(&mut *links.lock());
            crate::fs::epoll::file_released(links);
        }
        self.ops.release(self);
        if self.counted_writer {
            self.inode().count_writer(false);
            self.path().mnt.put_write();
        }
    }
}

impl std::fmt::Debug for FileDescription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileDescription")
            .field("inode", self.inode())
            .field("fmode", &self.fmode)
            .finish()
    }
}

/// The file operations of an `O_PATH` descriptor: every I/O call fails with `EBADF` in the
/// VFS before reaching them.
pub(crate) struct PathOnly;

impl FileOps for PathOnly {}
