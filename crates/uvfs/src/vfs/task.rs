//! The calling context of every syscall-shaped call: credentials, root, cwd, umask and the fd
//! table. Linux: `struct task_struct` with its `cred`, `fs_struct` and `files_struct`.

use std::cell::{Cell, OnceCell, Ref, RefCell};
use std::sync::Arc;

use super::cred::Cred;
use super::fd_table::FdTable;
use super::file::FileDescription;
use super::fs_struct::{FsHandle, FsState, Umask};
use super::mount::{MountNamespace, VfsPath};
use crate::abi::{Errno, Result};

const FD_CACHE_SLOTS: usize = 4;

static NEXT_CRED_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

fn new_cred_id() -> u64 {
    NEXT_CRED_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// One cached fd and its file.
type FdCacheSlot = Option<(i32, Arc<FileDescription>)>;

/// A thread of a program using the VFS.
///
/// `Task` is `Send` but not `Sync`: one thread uses it at a time, as a Linux thread is the only
/// user of its `current`. The tasks of [`Task::clone_thread`] share one fd table, one root,
/// cwd and umask.
///
/// # The calls, by group
/// Each group below is one block of methods further down this page, headed by its name.
/// - **Files**: [`openat`](Task::openat), [`openat2`](Task::openat2), [`close`](Task::close),
///   [`read`](Task::read), [`write`](Task::write), [`pread`](Task::pread),
///   [`pwrite`](Task::pwrite), [`readv`](Task::readv), [`writev`](Task::writev),
///   [`lseek`](Task::lseek), [`fsync`](Task::fsync), [`fallocate`](Task::fallocate).
/// - **Names** (directories and links): [`mkdirat`](Task::mkdirat),
///   [`mknodat`](Task::mknodat), [`symlinkat`](Task::symlinkat), [`linkat`](Task::linkat),
///   [`unlinkat`](Task::unlinkat), [`renameat2`](Task::renameat2),
///   [`readlinkat`](Task::readlinkat).
/// - **Directories**: [`getdents64`](Task::getdents64), [`chdir`](Task::chdir),
///   [`fchdir`](Task::fchdir), [`chroot`](Task::chroot), [`getcwd`](Task::getcwd),
///   [`umask`](Task::umask).
/// - **Attributes**: [`fstatat`](Task::fstatat), [`statx`](Task::statx),
///   [`statfs`](Task::statfs), [`fchmodat`](Task::fchmodat), [`fchownat`](Task::fchownat),
///   [`utimensat`](Task::utimensat), [`faccessat2`](Task::faccessat2),
///   [`truncate`](Task::truncate).
/// - **Extended attributes**: [`setxattr`](Task::setxattr), [`getxattr`](Task::getxattr),
///   [`listxattr`](Task::listxattr), [`removexattr`](Task::removexattr).
/// - **fds**: [`dup`](Task::dup), [`dup3`](Task::dup3), [`fcntl`](Task::fcntl).
/// - **Pipes**: [`pipe2`](Task::pipe2), [`fionread`](Task::fionread),
///   [`take_sigpipe`](Task::take_sigpipe); `F_SETPIPE_SZ` and `F_GETPIPE_SZ` through
///   [`fcntl`](Task::fcntl).
/// - **Advisory locks**: [`flock`](Task::flock), [`fcntl_lock`](Task::fcntl_lock),
///   [`interrupt_handle`](Task::interrupt_handle).
/// - **Mounts**: [`mount`](Task::mount), [`umount2`](Task::umount2).
/// - **Process state**: [`clone_thread`](Task::clone_thread), [`fork`](Task::fork),
///   [`set_cred`](Task::set_cred), [`setresuid`](Task::setresuid),
///   [`setgroups`](Task::setgroups), [`capset`](Task::capset),
///   [`set_nofile_limit`](Task::set_nofile_limit), [`exec_close_fds`](Task::exec_close_fds).
pub struct Task {
    pub(crate) ns: Arc<MountNamespace>,
    pub(crate) cred: RefCell<Cred>,
    /// Identity of the credentials: shared by tasks that share them (fork, clone), renewed by
    /// [`Task::set_cred`] (Linux compares `struct cred` pointers, e.g. for `linkat`).
    pub(crate) cred_id: Cell<u64>,
    /// Root and cwd: private, or shared with the tasks of `clone_thread` (CLONE_FS).
    pub(crate) fs: FsHandle,
    /// Shared as `fs` is.
    pub(crate) umask: Umask,
    pub(crate) walk_mode: Cell<super::namei::WalkMode>,
    pub(crate) files: Arc<FdTable>,
    /// Files of recently used fds, used only while `files` is not shared.
    ///
    /// # Fast path
    /// Linux's `fdget()` skips the reference count when the table is not shared; here the
    /// table's lock is skipped too: an unshared table changes only through this task, which
    /// evicts an fd from the cache whenever it closes or replaces it. Invalidated by close,
    /// dup2/dup3 onto the fd, exec and sharing; falls back to [`FdTable::get`].
    fd_cache: RefCell<[FdCacheSlot; FD_CACHE_SLOTS]>,
    /// What interrupts this task's blocked lock calls: made by the first
    /// [`Task::interrupt_handle`], so that a task nobody interrupts pays nothing.
    pub(crate) interrupt: OnceCell<Arc<super::locks::Interrupt>>,
    /// A `SIGPIPE` is pending: a write found a pipe with no reader ([`Task::take_sigpipe`]).
    pub(crate) sigpipe: Cell<bool>,
}

/// A borrowed open file: from the task's cache, or a counted reference.
pub(crate) enum FileRef<'a> {
    Cached(Ref<'a, Arc<FileDescription>>),
    Owned(Arc<FileDescription>),
}

impl FileRef<'_> {
    /// The file as an owned reference, for a call that must not borrow the task's fd cache
    /// (it may wait): a shared table's lookup counted it already, and it is taken as it is,
    /// not counted a second time.
    #[inline]
    pub(crate) fn into_owned(self) -> Arc<FileDescription> {
        match self {
            FileRef::Owned(f) => f,
            FileRef::Cached(f) => Arc::clone(&f),
        }
    }

    /// Whether a read, write or seek through this fd may move the file's position without
    /// its lock ([`super::file::FilePos::take`]): when no other thread can use the file until
    /// the call returns (Linux: `fdget_pos()` locks only a file whose count is above 1). That
    /// is a file from the task's fd cache, which only an unshared table fills, held by that
    /// table and the cache alone: two references, so no other fd, table, open file handle or
    /// call in progress has it, and none can get it but through this task's table.
    #[inline]
    pub(crate) fn pos_unshared(&self) -> bool {
        matches!(self, FileRef::Cached(r) if Arc::strong_count(r) == 2)
    }
}

impl std::ops::Deref for FileRef<'_> {
    type Target = Arc<FileDescription>;
    #[inline]
    fn deref(&self) -> &Arc<FileDescription> {
        match self {
            FileRef::Cached(r) => r,
            FileRef::Owned(a) => a,
        }
    }
}

/// # Tasks: making them and their state
///
/// `new`, `clone_thread` (a thread: shared fd table, root and cwd), `fork` (a copy),
/// credentials as embedders set them, the fd limit, exec's close-on-exec.
impl Task {
    /// A task in `ns` with `cred`, rooted and working at the namespace root, umask 022.
    pub fn new(ns: Arc<MountNamespace>, cred: Cred) -> Task {
        let root = VfsPath {
            mnt: ns.root().clone(),
            dentry: ns.root().root().clone(),
        };
        Task {
            ns,
            cred: RefCell::new(cred),
            cred_id: Cell::new(new_cred_id()),
            fs: FsHandle::new(FsState::new(root.clone(), root)),
            umask: Umask::new(0o022),
            walk_mode: Cell::new(super::namei::WalkMode::Rcu),
            files: Arc::new(FdTable::new()),
            fd_cache: RefCell::new(Default::default()),
            interrupt: OnceCell::new(),
            sigpipe: Cell::new(false),
        }
    }

    /// A thread of this task (Linux: `clone(CLONE_FILES | CLONE_FS | ...)`): it shares the fd
    /// table, the root, the cwd and the umask, so `chdir`, `chroot`, `umask`, `open` and
    /// `close` in one are seen by the other. Credentials are copied.
    pub fn clone_thread(&self) -> Task {
        self.fd_cache_clear();
        Task {
            ns: self.ns.clone(),
            cred: RefCell::new(self.cred.borrow().clone()),
            cred_id: Cell::new(self.cred_id.get()),
            fs: self.fs.share(),
            umask: self.umask.share(),
            walk_mode: Cell::new(self.walk_mode.get()),
            files: self.files.clone(),
            fd_cache: RefCell::new(Default::default()),
            interrupt: OnceCell::new(),
            sigpipe: Cell::new(false),
        }
    }

    /// A task with a copy of this one's fd table, root, cwd and umask (Linux: `fork()`).
    pub fn fork(&self) -> Task {
        Task {
            ns: self.ns.clone(),
            cred: RefCell::new(self.cred.borrow().clone()),
            // A new process's credentials are a copy, not the parent's (Linux:
            // `copy_creds()` shares them only with `CLONE_THREAD`), so a file the parent
            // opened is not the child's own for `linkat(AT_EMPTY_PATH)`.
            cred_id: Cell::new(new_cred_id()),
            fs: self.fs.copy(),
            umask: self.umask.copy(),
            walk_mode: Cell::new(self.walk_mode.get()),
            files: Arc::new(self.files.duplicate()),
            fd_cache: RefCell::new(Default::default()),
            interrupt: OnceCell::new(),
            sigpipe: Cell::new(false),
        }
    }

    /// The credentials (a copy).
    pub fn cred(&self) -> Cred {
        self.cred.borrow().clone()
    }

    /// Replaces the credentials at once, for embedders; the checked calls are `setresuid`,
    /// `setgroups`, `capset` and the rest of `sys/cred.rs`. When the fsuid changes from 0 to
    /// non-zero, the filesystem capabilities are dropped as Linux does.
    pub fn set_cred(&self, mut cred: Cred) {
        let old = self.cred.borrow().fsuid;
        if old == 0 && cred.fsuid != 0 {
            cred.caps.remove(super::cred::Capabilities::FS_MASK);
        }
        self.commit_cred(cred);
    }

    /// Installs `cred` as they are, with a new identity (Linux: `commit_creds()`).
    pub(crate) fn commit_cred(&self, cred: Cred) {
        *self.cred.borrow_mut() = cred;
        self.cred_id.set(new_cred_id());
    }

    /// Chooses how this task resolves paths ([`super::WalkMode`]): `Ref` forces the locked
    /// lookup for every component, the design the lock-free walk replaced. For benchmarks and
    /// tests; hidden from the documentation.
    #[doc(hidden)]
    pub fn set_walk_mode(&self, mode: super::namei::WalkMode) {
        self.walk_mode.set(mode);
    }

    /// The mount namespace.
    pub fn namespace(&self) -> &Arc<MountNamespace> {
        &self.ns
    }

    /// Sets the open file limit, soft and hard (`setrlimit(RLIMIT_NOFILE)` with both
    /// `limit`): see [`Task::set_nofile_rlimit`].
    ///
    /// # Errors
    /// As [`Task::set_nofile_rlimit`].
    pub fn set_nofile_limit(&self, limit: u32) -> Result<()> {
        self.set_nofile_rlimit(limit, limit)
    }

    /// `setrlimit(RLIMIT_NOFILE, {soft, hard})`. A table starts at 1024 with a hard limit of
    /// `NR_OPEN` (2^20); lowering the hard limit is allowed, raising it takes
    /// `CAP_SYS_RESOURCE`. Tasks sharing a table (`clone_thread`) share the limits; `fork`
    /// copies them.
    ///
    /// # Errors
    /// `EINVAL` for `soft > hard`; `EPERM` for `hard` past `NR_OPEN`, or above the current
    /// hard limit without `CAP_SYS_RESOURCE`.
    pub fn set_nofile_rlimit(&self, soft: u32, hard: u32) -> Result<()> {
        let may_raise = self
            .cred
            .borrow()
            .capable(super::cred::Capabilities::SYS_RESOURCE);
        self.files.set_limits(soft, hard, may_raise)
    }

    /// `getrlimit(RLIMIT_NOFILE)`: the soft and hard open file limits.
    pub fn nofile_rlimit(&self) -> (u32, u32) {
        self.files.limits()
    }

    /// Runs exec's fd side: closes every close-on-exec fd.
    pub fn exec_close_fds(&self) {
        self.fd_cache_clear();
        let closed = self.files.close_on_exec();
        for file in &closed {
            super::locks::remove_posix(file, self.files.id());
        }
        drop(closed);
    }

    /// The file at `fd`.
    #[inline]
    pub(crate) fn fget(&self, fd: i32) -> Result<FileRef<'_>> {
        if fd < 0 {
            return Err(Errno::EBADF);
        }
        if Arc::strong_count(&self.files) != 1 {
            return Ok(FileRef::Owned(self.files.get(fd)?));
        }
        let slot = fd as usize % FD_CACHE_SLOTS;
        {
            let c = self.fd_cache.borrow();
            if matches!(&c[slot], Some((f, _)) if *f == fd) {
                return Ok(FileRef::Cached(Ref::map(c, |c| match &c[slot] {
                    Some((_, file)) => file,
                    None => unreachable!("checked above"),
                })));
            }
        }
        self.fget_slow(fd, slot)
    }

    #[cold]
    fn fget_slow(&self, fd: i32, slot: usize) -> Result<FileRef<'_>> {
        let file = self.files.get(fd)?;
        match self.fd_cache.try_borrow_mut() {
            Ok(mut c) => {
                c[slot] = Some((fd, file));
                drop(c);
                let c = self.fd_cache.borrow();
                Ok(FileRef::Cached(Ref::map(c, |c| match &c[slot] {
                    Some((_, file)) => file,
                    None => unreachable!("filled above"),
                })))
            }
            Err(_) => Ok(FileRef::Owned(file)),
        }
    }

    /// Installs `file` at the lowest free fd and, while the table is not shared, puts it in
    /// the fd cache, so that the first call on the new fd (the read after an open) finds it
    /// there instead of in the table. The fd was free, so no cached entry names it.
    pub(crate) fn install_cached(&self, file: Arc<FileDescription>, cloexec: bool) -> Result<i32> {
        if Arc::strong_count(&self.files) != 1 {
            return self.files.install(file, cloexec, 0);
        }
        let cached = file.clone();
        let fd = self.files.install(file, cloexec, 0)?;
        let old = match self.fd_cache.try_borrow_mut() {
            Ok(mut c) => c[fd as usize % FD_CACHE_SLOTS].replace((fd, cached)),
            Err(_) => None,
        };
        drop(old);
        Ok(fd)
    }

    /// Forgets `fd` in the cache (it was closed or replaced).
    pub(crate) fn fd_cache_evict(&self, fd: i32) {
        if fd >= 0 {
            let slot = fd as usize % FD_CACHE_SLOTS;
            let old = {
                let mut c = self.fd_cache.borrow_mut();
                if matches!(&c[slot], Some((f, _)) if *f == fd) {
                    c[slot].take()
                } else {
                    None
                }
            };
            drop(old);
        }
    }

    fn fd_cache_clear(&self) {
        let old = std::mem::take(&mut *self.fd_cache.borrow_mut());
        drop(old);
    }
}

impl std::fmt::Debug for Task {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Task")
            .field("cred", &*self.cred.borrow())
            .finish()
    }
}
