//! `Fs`: a handle to a uvfs tree with `std::fs`'s calls, shareable between threads.

use std::ffi::OsString;
use std::io::{self, Read, Write};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use parking_lot::Mutex;
use thread_local::ThreadLocal;

use super::dir::ReadDir;
use super::error::{error, error2, Context};
use super::file::{self, File, OpenOptions};
use super::metadata::{timespec, Metadata, Permissions};
use super::path_bytes;
use crate::abi::{
    Access, AtFlags, Dirent, Errno, OpenFlags, RenameFlags, Timespec, XattrFlags, AT_FDCWD,
    UTIME_OMIT,
};
use crate::sys::Vfs;
use crate::vfs::{Cred, Task};

/// Bytes moved per read and write by [`Fs::copy`].
const COPY_CHUNK: usize = 64 * 1024;

/// What every clone of one [`Fs`] and its files share.
pub(crate) struct Inner {
    /// The task every thread's task is forked from; locked once per thread.
    template: Mutex<Task>,
    /// Each thread's own task: credentials, root, cwd and umask copied from `template`, and
    /// a private fd table (used only by `remove_dir_all`), so that calls from two threads
    /// write nothing in common.
    tasks: ThreadLocal<Task>,
}

impl Inner {
    fn new(task: Task) -> Arc<Inner> {
        Arc::new(Inner {
            template: Mutex::new(task),
            tasks: ThreadLocal::new(),
        })
    }

    /// The calling thread's task.
    ///
    /// # Fast path
    /// A thread-local id and an indexed load; the template's lock only on a thread's first
    /// call.
    #[inline]
    pub(crate) fn task(&self) -> &Task {
        self.tasks.get_or(|| self.template.lock().fork())
    }
}

/// A view of a uvfs tree with the calls of `std::fs`: credentials, a root and a working
/// directory, fixed when the view is made.
///
/// `Fs` is `Send + Sync + Clone`: share one by reference across scoped threads, or clone
/// it (a clone is another view with the same credentials, root and working directory).
/// Each thread calls through a task of its own, made on its first call, so threads working
/// on different files share no written memory through the `Fs`, except the reference count
/// of the `Fs` itself when they open files from the same clone (a [`File`] keeps its `Fs`):
/// a clone per thread avoids that too.
///
/// Relative paths resolve from the working directory; `..` stops at the root. Errors are
/// `std::io::Error`s naming the operation and the path; [`errno`](super::errno) gives the
/// Linux errno back.
///
/// ```
/// use uvfs::fs::Fs;
///
/// let fs = Fs::new();
/// fs.create_dir_all("/srv/data")?;
/// fs.write("/srv/data/hello.txt", "hello")?;
/// assert_eq!(fs.read_to_string("/srv/data/hello.txt")?, "hello");
/// assert_eq!(fs.metadata("/srv/data/hello.txt")?.len(), 5);
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct Fs {
    inner: Arc<Inner>,
}

impl Clone for Fs {
    /// Another view with the same credentials, root, working directory and umask, and its
    /// own per-thread tasks and reference count.
    fn clone(&self) -> Fs {
        Fs::from_task(self.inner.template.lock().fork())
    }
}

impl Default for Fs {
    fn default() -> Fs {
        Fs::new()
    }
}

impl std::fmt::Debug for Fs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fs")
            .field("cred", &self.inner.task().cred())
            .finish_non_exhaustive()
    }
}

impl Fs {
    /// A new, empty uvfs tree (a tmpfs root), seen as root (uid 0, all capabilities).
    pub fn new() -> Fs {
        Fs::from_vfs(&Vfs::new(), Cred::root())
    }

    /// A view of `vfs` with `cred`, at its root.
    pub fn from_vfs(vfs: &Vfs, cred: Cred) -> Fs {
        Fs::from_task(vfs.task(cred))
    }

    /// A view with `task`'s credentials, root, working directory and umask (copied now: a
    /// later `chdir` of `task` does not move this view).
    pub fn from_task(task: Task) -> Fs {
        Fs {
            inner: Inner::new(task),
        }
    }

    /// A task with this view's credentials, root, working directory and umask, for the
    /// syscall-shaped calls: `fork` of the task the view was made from (a copy of its fd
    /// table; views made by [`Fs::new`] and [`Fs::from_vfs`] start with none).
    pub fn task(&self) -> Task {
        self.inner.template.lock().fork()
    }

    /// This view with other credentials (the working directory and root stay): what a
    /// process of that user would see. Dropping to a non-root user drops the capabilities.
    ///
    /// ```
    /// use uvfs::{fs::{Fs, Permissions}, Cred};
    ///
    /// let fs = Fs::new();
    /// fs.write("/secret", "root's")?;
    /// fs.set_permissions("/secret", Permissions::from_mode(0o600))?;
    /// let alice = fs.as_user(Cred::user(1000, 1000, &[]));
    /// let e = alice.read("/secret").unwrap_err();
    /// assert_eq!(e.kind(), std::io::ErrorKind::PermissionDenied);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn as_user(&self, cred: Cred) -> Fs {
        let t = self.inner.template.lock().fork();
        t.set_cred(cred);
        Fs::from_task(t)
    }

    /// This view rooted at `path` (`chroot`, then `chdir("/")`): nothing outside is reachable,
    /// `..` at the new root stays there, symlinks resolve inside.
    ///
    /// # Errors
    /// `EPERM` without `CAP_SYS_CHROOT`; path errors; `ENOTDIR`.
    pub fn chroot(&self, path: impl AsRef<Path>) -> io::Result<Fs> {
        let path = path.as_ref();
        let t = self.inner.template.lock().fork();
        t.chroot(path_bytes(path)).at("chroot to", path)?;
        t.chdir("/").at("chroot to", path)?;
        Ok(Fs::from_task(t))
    }

    /// This view working in `path` (`chdir`): relative paths resolve from there.
    ///
    /// # Errors
    /// Path errors; `ENOTDIR`; `EACCES` without search permission.
    pub fn with_current_dir(&self, path: impl AsRef<Path>) -> io::Result<Fs> {
        let path = path.as_ref();
        let t = self.inner.template.lock().fork();
        t.chdir(path_bytes(path)).at("change directory to", path)?;
        Ok(Fs::from_task(t))
    }

    /// This view with another file creation mask (`umask`; 022 by default).
    pub fn with_umask(&self, mask: u32) -> Fs {
        let t = self.inner.template.lock().fork();
        t.umask(mask);
        Fs::from_task(t)
    }

    /// The working directory (`getcwd`).
    ///
    /// # Errors
    /// `ENOENT` if it was removed.
    pub fn current_dir(&self) -> io::Result<PathBuf> {
        let mut buf = vec![0u8; crate::abi::PATH_MAX];
        let n = self
            .task_ref()
            .getcwd(&mut buf)
            .at("get current directory", Path::new("."))?;
        buf.truncate(n.saturating_sub(1));
        Ok(PathBuf::from(OsString::from_vec(buf)))
    }

    /// The credentials of this view.
    pub fn cred(&self) -> Cred {
        self.task_ref().cred()
    }

    /// What this view's files share (for the other types of `uvfs::fs`).
    #[inline]
    pub(crate) fn inner(&self) -> &Arc<Inner> {
        &self.inner
    }

    #[inline]
    fn task_ref(&self) -> &Task {
        self.inner.task()
    }

    // ---- files ----

    /// Opens `path` for reading.
    ///
    /// # Errors
    /// Path errors (`ENOENT`, `ENOTDIR`, `EACCES`, `ELOOP`, `ENAMETOOLONG`).
    #[inline]
    pub fn open(&self, path: impl AsRef<Path>) -> io::Result<File> {
        file::open(&self.inner, path.as_ref(), OpenOptions::new().read(true))
    }

    /// Opens `path` for writing, creating it (mode 0o666 less the umask) or truncating it.
    ///
    /// # Errors
    /// As [`Fs::open`]; `EISDIR`; `EROFS`; `ENOSPC`.
    pub fn create(&self, path: impl AsRef<Path>) -> io::Result<File> {
        let opts = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .clone();
        file::open(&self.inner, path.as_ref(), &opts)
    }

    /// Opens `path` as `opts` say.
    ///
    /// # Errors
    /// `EINVAL` for options `std` refuses too (no access mode; truncation or creation without
    /// writing); otherwise as `open(2)`.
    #[inline]
    pub fn open_with(&self, path: impl AsRef<Path>, opts: &OpenOptions) -> io::Result<File> {
        file::open(&self.inner, path.as_ref(), opts)
    }

    /// The whole contents of `path`.
    ///
    /// # Errors
    /// As [`Fs::open`]; `EISDIR`.
    pub fn read(&self, path: impl AsRef<Path>) -> io::Result<Vec<u8>> {
        let mut f = self.open(path)?;
        let mut out = Vec::new();
        // The size is a hint; one the heap cannot take is `OutOfMemory`, as in `std`, not
        // an abort (a sparse file's size costs nothing to make).
        let hint = usize::try_from(f.metadata()?.len()).unwrap_or(usize::MAX);
        out.try_reserve_exact(hint)
            .map_err(|_| io::Error::from(io::ErrorKind::OutOfMemory))?;
        f.read_to_end(&mut out)?;
        Ok(out)
    }

    /// The whole contents of `path` as UTF-8.
    ///
    /// # Errors
    /// As [`Fs::read`]; `InvalidData` if it is not UTF-8.
    pub fn read_to_string(&self, path: impl AsRef<Path>) -> io::Result<String> {
        let path = path.as_ref();
        String::from_utf8(self.read(path)?).map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("failed to read {path:?}: stream did not contain valid UTF-8"),
            )
        })
    }

    /// Replaces the contents of `path` with `contents`, creating it if needed.
    ///
    /// # Errors
    /// As [`Fs::create`].
    pub fn write(&self, path: impl AsRef<Path>, contents: impl AsRef<[u8]>) -> io::Result<()> {
        self.create(path)?.write_all(contents.as_ref())
    }

    /// Copies the contents and permission bits of the file `from` to `to` (created or
    /// truncated); returns the bytes copied. Symlinks are followed, as in `std`.
    ///
    /// # Errors
    /// `InvalidInput` if `from` is not a regular file; as [`Fs::open`] and [`Fs::create`].
    pub fn copy(&self, from: impl AsRef<Path>, to: impl AsRef<Path>) -> io::Result<u64> {
        let (from, to) = (from.as_ref(), to.as_ref());
        let src = self.open(from)?;
        let meta = src.metadata()?;
        if !meta.is_file() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("failed to copy {from:?}: not a regular file"),
            ));
        }
        let perm = meta.permissions();
        let dst = self.open_with(
            to,
            OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(perm.mode()),
        )?;
        // The bits go on before the data, as `std` sets them (so a write by a non-root owner
        // then clears set-id bits, as Linux does); only on a regular file.
        if dst.metadata()?.is_file() {
            dst.set_permissions(perm)?;
        }
        let mut buf = vec![0u8; COPY_CHUNK.min(meta.len().max(1) as usize)];
        let mut total = 0u64;
        loop {
            let n = (&src).read(&mut buf)?;
            if n == 0 {
                break;
            }
            (&dst).write_all(&buf[..n])?;
            total += n as u64;
        }
        Ok(total)
    }

    // ---- metadata ----

    /// `stat` of `path`, following symlinks.
    ///
    /// # Errors
    /// Path errors.
    #[inline]
    pub fn metadata(&self, path: impl AsRef<Path>) -> io::Result<Metadata> {
        let path = path.as_ref();
        self.task_ref()
            .fstatat_with(AT_FDCWD, path_bytes(path), AtFlags::empty(), Metadata::of)
            .at("stat", path)
    }

    /// `lstat` of `path`: a symlink's own metadata.
    ///
    /// # Errors
    /// Path errors.
    pub fn symlink_metadata(&self, path: impl AsRef<Path>) -> io::Result<Metadata> {
        let path = path.as_ref();
        self.task_ref()
            .fstatat_with(
                AT_FDCWD,
                path_bytes(path),
                AtFlags::SYMLINK_NOFOLLOW,
                Metadata::of,
            )
            .at("lstat", path)
    }

    /// Whether `path` exists (following symlinks: a dangling link does not): `Ok(false)` for
    /// `ENOENT` only, as `std::fs::exists`.
    ///
    /// # Errors
    /// Other path errors (`EACCES`, `ENOTDIR`, `ELOOP`).
    pub fn exists(&self, path: impl AsRef<Path>) -> io::Result<bool> {
        let path = path.as_ref();
        match self
            .task_ref()
            .fstatat_with(AT_FDCWD, path_bytes(path), AtFlags::empty(), |_| ())
        {
            Ok(()) => Ok(true),
            Err(Errno::ENOENT) => Ok(false),
            Err(e) => Err(error("stat", path, e)),
        }
    }

    /// Whether this view's credentials may access `path` as `how` asks (`faccessat2` with
    /// `AT_EACCESS`: the effective ids, as `open` checks). `Ok(false)` for `EACCES` and
    /// `EROFS`.
    ///
    /// # Errors
    /// Path errors.
    pub fn access(&self, path: impl AsRef<Path>, how: Access) -> io::Result<bool> {
        let path = path.as_ref();
        match self
            .task_ref()
            .faccessat2(AT_FDCWD, path_bytes(path), how, AtFlags::EACCESS)
        {
            Ok(()) => Ok(true),
            Err(Errno::EACCES | Errno::EROFS) => Ok(false),
            Err(e) => Err(error("check access to", path, e)),
        }
    }

    /// Sets the permission bits of `path` (following symlinks).
    ///
    /// # Errors
    /// `EPERM` unless the owner or `CAP_FOWNER`; path errors; `EROFS`.
    pub fn set_permissions(&self, path: impl AsRef<Path>, perm: Permissions) -> io::Result<()> {
        let path = path.as_ref();
        self.task_ref()
            .fchmodat(AT_FDCWD, path_bytes(path), perm.mode(), AtFlags::empty())
            .at("set permissions of", path)
    }

    /// Changes the owner and group of `path` (`None` keeps one), following symlinks, as
    /// `std::os::unix::fs::chown`.
    ///
    /// # Errors
    /// `EPERM` without `CAP_CHOWN` (an owner may change the group to one of its groups).
    pub fn chown(
        &self,
        path: impl AsRef<Path>,
        uid: Option<u32>,
        gid: Option<u32>,
    ) -> io::Result<()> {
        let path = path.as_ref();
        self.task_ref()
            .fchownat(AT_FDCWD, path_bytes(path), uid, gid, AtFlags::empty())
            .at("change owner of", path)
    }

    /// Sets the access and modification times of `path` (`None` leaves one), following
    /// symlinks (`utimensat`).
    ///
    /// # Errors
    /// `EPERM`/`EACCES` unless the owner (or writable, for "now"); path errors.
    pub fn set_times(
        &self,
        path: impl AsRef<Path>,
        accessed: Option<SystemTime>,
        modified: Option<SystemTime>,
    ) -> io::Result<()> {
        let path = path.as_ref();
        let omit = Timespec {
            sec: 0,
            nsec: UTIME_OMIT,
        };
        let times = [
            accessed.map_or(omit, timespec),
            modified.map_or(omit, timespec),
        ];
        self.task_ref()
            .utimensat(
                AT_FDCWD,
                Some(path_bytes(path)),
                Some(times),
                AtFlags::empty(),
            )
            .at("set times of", path)
    }

    // ---- directories ----

    /// Creates the directory `path` (mode 0o777 less the umask).
    ///
    /// # Errors
    /// `EEXIST`; `ENOENT` if the parent is missing; path errors.
    pub fn create_dir(&self, path: impl AsRef<Path>) -> io::Result<()> {
        let path = path.as_ref();
        self.task_ref()
            .mkdirat(AT_FDCWD, path_bytes(path), 0o777)
            .at("create directory", path)
    }

    /// Creates `path` and every missing parent; an existing directory is fine.
    ///
    /// # Errors
    /// As [`Fs::create_dir`], but not `EEXIST` for a directory.
    pub fn create_dir_all(&self, path: impl AsRef<Path>) -> io::Result<()> {
        let path = path.as_ref();
        if path.as_os_str().is_empty() {
            return Ok(());
        }
        let t = self.task_ref();
        let is_dir = |p: &Path| {
            t.fstatat_with(AT_FDCWD, path_bytes(p), AtFlags::empty(), |i| i.is_dir())
                .unwrap_or(false)
        };
        match t.mkdirat(AT_FDCWD, path_bytes(path), 0o777) {
            Ok(()) => return Ok(()),
            Err(Errno::ENOENT) => {}
            Err(_) if is_dir(path) => return Ok(()),
            Err(e) => return Err(error("create directory", path, e)),
        }
        match path.parent() {
            Some(parent) => self.create_dir_all(parent)?,
            None => return Err(error("create directory", path, Errno::ENOENT)),
        }
        match t.mkdirat(AT_FDCWD, path_bytes(path), 0o777) {
            Ok(()) => Ok(()),
            Err(_) if is_dir(path) => Ok(()),
            Err(e) => Err(error("create directory", path, e)),
        }
    }

    /// Removes the empty directory `path`.
    ///
    /// # Errors
    /// `ENOTEMPTY`; `ENOTDIR`; `EBUSY` for a mount point or root; path errors.
    pub fn remove_dir(&self, path: impl AsRef<Path>) -> io::Result<()> {
        let path = path.as_ref();
        self.task_ref()
            .unlinkat(AT_FDCWD, path_bytes(path), AtFlags::REMOVEDIR)
            .at("remove directory", path)
    }

    /// Removes the directory `path` and everything below it, following no symlink (a symlink
    /// `path` is removed itself, as in `std`). Works from directory fds, so depth is not
    /// bounded by `PATH_MAX`.
    ///
    /// # Errors
    /// `ENOTDIR` for a file; the first failure below; what was removed before it stays
    /// removed.
    pub fn remove_dir_all(&self, path: impl AsRef<Path>) -> io::Result<()> {
        let path = path.as_ref();
        let t = self.task_ref();
        // A symlink goes itself; any other non-directory is `ENOTDIR` from the open below.
        if self.symlink_metadata(path)?.is_symlink() {
            return self.remove_file(path);
        }
        remove_recursive(t, None, path_bytes(path)).map_err(|e| error("remove", path, e))
    }

    /// The entries of the directory `path`.
    ///
    /// ```
    /// let fs = uvfs::fs::Fs::new();
    /// fs.create_dir_all("/d/sub")?;
    /// fs.write("/d/file", "")?;
    /// fs.symlink("file", "/d/link")?;
    /// let mut kinds: Vec<_> = fs
    ///     .read_dir("/d")?
    ///     .map(|e| {
    ///         let e = e?;
    ///         let t = e.file_type()?; // from the listing, no stat
    ///         Ok((e.file_name(), t.is_dir(), t.is_symlink()))
    ///     })
    ///     .collect::<std::io::Result<_>>()?;
    /// kinds.sort();
    /// assert_eq!(kinds, [("file".into(), false, false), ("link".into(), false, true), ("sub".into(), true, false)]);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    ///
    /// # Errors
    /// Path errors; `ENOTDIR`; `EACCES` without read permission.
    pub fn read_dir(&self, path: impl AsRef<Path>) -> io::Result<ReadDir> {
        ReadDir::open(&self.inner, path.as_ref())
    }

    // ---- names ----

    /// Removes the file (or symlink, or other non-directory) `path`.
    ///
    /// # Errors
    /// `EISDIR` for a directory; path errors.
    pub fn remove_file(&self, path: impl AsRef<Path>) -> io::Result<()> {
        let path = path.as_ref();
        self.task_ref()
            .unlinkat(AT_FDCWD, path_bytes(path), AtFlags::empty())
            .at("remove file", path)
    }

    /// Renames `from` to `to`, replacing `to` (a file by a file, a directory by an empty
    /// directory) atomically.
    ///
    /// # Errors
    /// `EISDIR`, `ENOTDIR`, `ENOTEMPTY`, `EXDEV` across mounts, `EINVAL` into itself.
    pub fn rename(&self, from: impl AsRef<Path>, to: impl AsRef<Path>) -> io::Result<()> {
        let (from, to) = (from.as_ref(), to.as_ref());
        self.task_ref()
            .renameat2(
                AT_FDCWD,
                path_bytes(from),
                AT_FDCWD,
                path_bytes(to),
                RenameFlags::empty(),
            )
            .map_err(|e| error2("rename", from, to, e))
    }

    /// Makes `link` another name of the file `original` (not following a symlink
    /// `original`, as `linkat` without flags).
    ///
    /// # Errors
    /// `EEXIST`; `EPERM` for a directory; `EXDEV`; `EMLINK`.
    pub fn hard_link(&self, original: impl AsRef<Path>, link: impl AsRef<Path>) -> io::Result<()> {
        let (original, link) = (original.as_ref(), link.as_ref());
        self.task_ref()
            .linkat(
                AT_FDCWD,
                path_bytes(original),
                AT_FDCWD,
                path_bytes(link),
                AtFlags::empty(),
            )
            .map_err(|e| error2("hard link", original, link, e))
    }

    /// Makes `link` a symlink to `original` (stored as given, not resolved).
    ///
    /// # Errors
    /// `EEXIST`; `ENOENT` for an empty `original`; path errors.
    pub fn symlink(&self, original: impl AsRef<Path>, link: impl AsRef<Path>) -> io::Result<()> {
        let (original, link) = (original.as_ref(), link.as_ref());
        self.task_ref()
            .symlinkat(path_bytes(original), AT_FDCWD, path_bytes(link))
            .map_err(|e| error2("symlink", original, link, e))
    }

    /// The target of the symlink `path`.
    ///
    /// # Errors
    /// `EINVAL` if not a symlink; path errors.
    pub fn read_link(&self, path: impl AsRef<Path>) -> io::Result<PathBuf> {
        let path = path.as_ref();
        let mut buf = vec![0u8; crate::abi::PATH_MAX];
        let n = self
            .task_ref()
            .readlinkat(AT_FDCWD, path_bytes(path), &mut buf)
            .at("read link", path)?;
        buf.truncate(n);
        Ok(PathBuf::from(OsString::from_vec(buf)))
    }

    /// The absolute path of `path` from this view's root with every symlink, `.` and `..`
    /// resolved, as `std::fs::canonicalize` gives it on Linux: glibc's `realpath(3)`, which
    /// builds the path one component at a time with `readlink` (a `..` drops the previous
    /// component without looking at it), checks with `faccessat` that a component followed
    /// by `/`, `/.` or `/..` is a directory, and gives `ELOOP` past 40 links.
    ///
    /// # Errors
    /// `ENOENT` (also for an empty path), `ENOTDIR`, `EACCES`, `ELOOP`, `ENAMETOOLONG`.
    pub fn canonicalize(&self, path: impl AsRef<Path>) -> io::Result<PathBuf> {
        let path = path.as_ref();
        realpath(self.task_ref(), path_bytes(path))
            .map(|p| PathBuf::from(OsString::from_vec(p)))
            .map_err(|e| error("canonicalize", path, e))
    }

    // ---- trees in and out ----

    /// Copies the host directory `host_src` into this tree at `dest`, keeping types, hard
    /// links, holes, modes, owners (when this view may `chown`), extended attributes and
    /// times, as [`crate::tree::import`] describes.
    ///
    /// # Errors
    /// The first failure, naming the operation and the path; what was copied stays.
    pub fn import(
        &self,
        host_src: impl AsRef<Path>,
        dest: impl AsRef<Path>,
    ) -> io::Result<crate::tree::Report> {
        let opts = crate::tree::Options::default();
        Ok(crate::tree::import(
            self.task_ref(),
            host_src,
            path_bytes(dest.as_ref()),
            &opts,
        )?)
    }

    /// Copies the tree at `src` out to the host directory `host_dest`, as
    /// [`crate::tree::export`] describes.
    ///
    /// # Errors
    /// As [`Fs::import`].
    pub fn export(
        &self,
        src: impl AsRef<Path>,
        host_dest: impl AsRef<Path>,
    ) -> io::Result<crate::tree::Report> {
        let opts = crate::tree::Options::default();
        Ok(crate::tree::export(
            self.task_ref(),
            path_bytes(src.as_ref()),
            host_dest,
            &opts,
        )?)
    }

    // ---- extended attributes ----

    /// Sets the extended attribute `name` of `path` (following symlinks).
    ///
    /// # Errors
    /// `EOPNOTSUPP` for an unknown namespace; `EPERM` for `trusted.*` without
    /// `CAP_SYS_ADMIN`; `ERANGE` for a name or value too long; `ENOSPC`; path errors.
    pub fn set_xattr(
        &self,
        path: impl AsRef<Path>,
        name: impl AsRef<[u8]>,
        value: &[u8],
    ) -> io::Result<()> {
        let path = path.as_ref();
        self.task_ref()
            .setxattr(path_bytes(path), name, value, XattrFlags::empty())
            .at("set extended attribute of", path)
    }

    /// The value of the extended attribute `name` of `path`, `None` if it has none.
    ///
    /// # Errors
    /// As [`Fs::set_xattr`] but `ENOSPC`.
    pub fn get_xattr(
        &self,
        path: impl AsRef<Path>,
        name: impl AsRef<[u8]>,
    ) -> io::Result<Option<Vec<u8>>> {
        let (path, name) = (path.as_ref(), name.as_ref());
        let t = self.task_ref();
        loop {
            let size = match t.getxattr(path_bytes(path), name, &mut []) {
                Ok(n) => n,
                Err(Errno::ENODATA) => return Ok(None),
                Err(e) => return Err(error("get extended attribute of", path, e)),
            };
            let mut buf = vec![0u8; size];
            match t.getxattr(path_bytes(path), name, &mut buf) {
                Ok(n) => {
                    buf.truncate(n);
                    return Ok(Some(buf));
                }
                // It grew in between: ask again.
                Err(Errno::ERANGE) => continue,
                Err(Errno::ENODATA) => return Ok(None),
                Err(e) => return Err(error("get extended attribute of", path, e)),
            }
        }
    }

    /// The names of the extended attributes of `path` that this view may see.
    ///
    /// # Errors
    /// Path errors.
    pub fn list_xattr(&self, path: impl AsRef<Path>) -> io::Result<Vec<OsString>> {
        let path = path.as_ref();
        let t = self.task_ref();
        loop {
            let size = t
                .listxattr(path_bytes(path), &mut [])
                .at("list extended attributes of", path)?;
            let mut buf = vec![0u8; size];
            match t.listxattr(path_bytes(path), &mut buf) {
                Ok(n) => {
                    buf.truncate(n);
                    return Ok(buf
                        .split(|&b| b == 0)
                        .filter(|n| !n.is_empty())
                        .map(|n| OsString::from_vec(n.to_vec()))
                        .collect());
                }
                Err(Errno::ERANGE) => continue,
                Err(e) => return Err(error("list extended attributes of", path, e)),
            }
        }
    }

    /// Removes the extended attribute `name` of `path`.
    ///
    /// # Errors
    /// `ENODATA` if it has none; path errors.
    pub fn remove_xattr(&self, path: impl AsRef<Path>, name: impl AsRef<[u8]>) -> io::Result<()> {
        let path = path.as_ref();
        self.task_ref()
            .removexattr(path_bytes(path), name)
            .at("remove extended attribute of", path)
    }
}

/// Symbolic links `realpath` follows before it gives `ELOOP` (glibc: `__eloop_threshold()`).
const REALPATH_MAX_LINKS: usize = 40;

/// Whether what follows a component asks for it to be a directory: a trailing `/`, or a `.`
/// or `..` component next (glibc: `suffix_requires_dir_check()`).
fn suffix_requires_dir(rest: &[u8]) -> bool {
    let mut rest = rest;
    while rest.first() == Some(&b'/') {
        while rest.first() == Some(&b'/') {
            rest = &rest[1..];
        }
        match rest {
            [] => return true,
            [b'.'] | [b'.', b'/', ..] | [b'.', b'.'] | [b'.', b'.', b'/', ..] => return true,
            [b'.', ..] => rest = &rest[1..],
            _ => return false,
        }
    }
    false
}

/// glibc's `realpath(3)` over the syscall-shaped calls (see [`Fs::canonicalize`]).
fn realpath(t: &Task, name: &[u8]) -> crate::abi::Result<Vec<u8>> {
    if name.is_empty() {
        return Err(Errno::ENOENT);
    }
    let mut out: Vec<u8> = if name[0] == b'/' {
        b"/".to_vec()
    } else {
        let mut buf = vec![0u8; crate::abi::PATH_MAX];
        let n = t.getcwd(&mut buf)?;
        buf.truncate(n.saturating_sub(1));
        buf
    };
    let mut todo: Vec<u8> = name.to_vec();
    let mut at = 0usize;
    let mut links = 0usize;
    let mut link_buf = vec![0u8; crate::abi::PATH_MAX];
    while at < todo.len() {
        while todo.get(at) == Some(&b'/') {
            at += 1;
        }
        let start = at;
        while at < todo.len() && todo[at] != b'/' {
            at += 1;
        }
        let comp = &todo[start..at];
        match comp {
            b"" => break,
            b"." => {}
            b".." => {
                if out.len() > 1 {
                    let cut = out.iter().rposition(|&b| b == b'/').unwrap_or(0);
                    out.truncate(cut.max(1));
                }
            }
            _ => {
                let keep = out.len();
                if out.len() > 1 {
                    out.push(b'/');
                }
                out.extend_from_slice(comp);
                match t.readlinkat(AT_FDCWD, &out, &mut link_buf) {
                    Ok(n) => {
                        links += 1;
                        if links > REALPATH_MAX_LINKS {
                            return Err(Errno::ELOOP);
                        }
                        let mut next = link_buf[..n].to_vec();
                        next.extend_from_slice(&todo[at..]);
                        todo = next;
                        at = 0;
                        if link_buf.first() == Some(&b'/') {
                            out.truncate(1);
                        } else {
                            out.truncate(keep);
                        }
                    }
                    Err(Errno::EINVAL) if !suffix_requires_dir(&todo[at..]) => {}
                    Err(Errno::EINVAL) => {
                        let mut dir = out.clone();
                        dir.push(b'/');
                        t.faccessat2(AT_FDCWD, &dir, Access::empty(), AtFlags::EACCESS)?;
                    }
                    Err(e) => return Err(e),
                }
            }
        }
    }
    Ok(out)
}

/// Removes the directory `name` (relative to the directory fd `parent`, or the working
/// directory) and everything in it, depth first, following no symlink; a name that is not a
/// directory is unlinked, unless it is the top one (`ENOTDIR`). A name that is gone by the
/// time it is removed is not an error, so that a concurrent removal does not fail this one
/// (the rules of `std::fs::remove_dir_all` on Linux).
fn remove_recursive(t: &Task, parent: Option<i32>, name: &[u8]) -> crate::abi::Result<()> {
    let at = parent.unwrap_or(AT_FDCWD);
    let flags = OpenFlags::RDONLY | OpenFlags::DIRECTORY | OpenFlags::NOFOLLOW;
    let dir = match (t.openat(at, name, flags, 0), parent) {
        (Ok(fd), _) => fd,
        (Err(Errno::ENOTDIR | Errno::ELOOP), Some(p)) => {
            return t.unlinkat(p, name, AtFlags::empty())
        }
        (Err(e), _) => return Err(e),
    };
    let r = remove_entries(t, dir);
    let closed = t.close(dir);
    r?;
    closed?;
    match t.unlinkat(at, name, AtFlags::REMOVEDIR) {
        Ok(()) | Err(Errno::ENOENT) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Removes every entry of the directory open at `dir` (see [`remove_recursive`]).
fn remove_entries(t: &Task, dir: i32) -> crate::abi::Result<()> {
    let mut buf = vec![0u8; 32 * 1024];
    loop {
        let n = t.getdents64(dir, &mut buf)?;
        if n == 0 {
            return Ok(());
        }
        for e in Dirent::parse(&buf[..n]) {
            if e.name == b"." || e.name == b".." {
                continue;
            }
            // `DT_DIR`, or not said (`DT_UNKNOWN`): try it as a directory.
            let r = if e.d_type == 4 || e.d_type == 0 {
                remove_recursive(t, Some(dir), &e.name)
            } else {
                t.unlinkat(dir, &e.name, AtFlags::empty())
            };
            match r {
                Ok(()) | Err(Errno::ENOENT) => {}
                Err(e) => return Err(e),
            }
        }
    }
}

/// Bytes of a path, for the syscall-shaped calls (no allocation).
#[inline]
pub(crate) fn bytes_of(path: &Path) -> &[u8] {
    path.as_os_str().as_bytes()
}
