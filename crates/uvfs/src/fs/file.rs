//! `File` and `OpenOptions`: an open file description held without an fd.

use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::error::{error, Context};
use super::handle::Inner;
use super::metadata::{Metadata, Permissions};
use super::path_bytes;
use crate::abi::{Errno, OpenFlags, Whence, AT_FDCWD};
use crate::vfs::locks::posix::Kind;
use crate::vfs::{FileDescription, Task};

/// An open file, as `std::fs::File`: `Read`, `Write` and `Seek` at the file position,
/// `read_at`/`write_at` beside it, closed when dropped.
///
/// It holds the open file description itself, not an fd: it takes no slot of any fd table
/// (no `EMFILE`), and works on every thread of its [`Fs`](super::Fs), with that `Fs`'s
/// credentials. [`File::try_clone`] shares the description as `dup` does (one position).
/// [`File::install`] puts it in a task's fd table for the syscall-shaped calls.
///
/// ```
/// use std::io::{Read, Seek, SeekFrom, Write};
///
/// let fs = uvfs::fs::Fs::new();
/// let mut f = fs.create("/notes")?;
/// f.write_all(b"hello world")?;
/// f.write_at(b"W", 6)?; // pwrite: the position stays at the end
/// let mut back = String::new();
/// fs.open("/notes")?.read_to_string(&mut back)?;
/// assert_eq!(back, "hello World");
/// assert_eq!(f.seek(SeekFrom::Current(0))?, 11);
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct File {
    pub(crate) fs: Arc<Inner>,
    pub(crate) file: Arc<FileDescription>,
}

impl File {
    #[inline]
    fn task(&self) -> &Task {
        self.fs.task()
    }

    /// The error of `op` on this file, named by its path (computed only on failure).
    #[cold]
    fn fail(&self, op: &'static str, e: Errno) -> io::Error {
        let path = match self.task().path_of_file(&self.file) {
            Ok(p) => {
                PathBuf::from(<std::ffi::OsString as std::os::unix::ffi::OsStringExt>::from_vec(p))
            }
            Err(_) => PathBuf::from("(deleted)"),
        };
        error(op, &path, e)
    }

    /// Reads at `offset` without moving the file position (`pread`).
    ///
    /// # Errors
    /// `EBADF` if not open for reading, `EISDIR`, `EINVAL` for an offset past `i64::MAX`.
    #[inline]
    pub fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        let off = i64::try_from(offset).map_err(|_| self.fail("read from", Errno::EINVAL))?;
        match self.task().pread_file(&self.file, buf, off) {
            Ok(n) => Ok(n),
            Err(e) => Err(self.fail("read from", e)),
        }
    }

    /// Writes at `offset` without moving the file position (`pwrite`; a file opened for
    /// appending is appended to whatever the offset, as on Linux).
    ///
    /// # Errors
    /// `EBADF` if not open for writing, `EINVAL`, `EFBIG`, `ENOSPC`.
    #[inline]
    pub fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<usize> {
        let off = i64::try_from(offset).map_err(|_| self.fail("write to", Errno::EINVAL))?;
        match self.task().pwrite_file(&self.file, buf, off) {
            Ok(n) => Ok(n),
            Err(e) => Err(self.fail("write to", e)),
        }
    }

    /// Reads exactly `buf.len()` bytes at `offset`.
    ///
    /// # Errors
    /// As [`File::read_at`]; `UnexpectedEof` if the file ends first.
    pub fn read_exact_at(&self, mut buf: &mut [u8], mut offset: u64) -> io::Result<()> {
        while !buf.is_empty() {
            match self.read_at(buf, offset)? {
                0 => return Err(io::ErrorKind::UnexpectedEof.into()),
                n => {
                    buf = &mut buf[n..];
                    offset += n as u64;
                }
            }
        }
        Ok(())
    }

    /// Writes all of `buf` at `offset`.
    ///
    /// # Errors
    /// As [`File::write_at`]; `WriteZero` if a write takes nothing.
    pub fn write_all_at(&self, mut buf: &[u8], mut offset: u64) -> io::Result<()> {
        while !buf.is_empty() {
            match self.write_at(buf, offset)? {
                0 => return Err(io::ErrorKind::WriteZero.into()),
                n => {
                    buf = &buf[n..];
                    offset += n as u64;
                }
            }
        }
        Ok(())
    }

    /// Truncates or extends the file to `size` bytes (`ftruncate`).
    ///
    /// # Errors
    /// `EINVAL` if not open for writing; `InvalidInput` (no errno) past `i64::MAX`; `EFBIG`.
    pub fn set_len(&self, size: u64) -> io::Result<()> {
        // Past `i64::MAX` `std` refuses before the call, with no errno.
        let size = i64::try_from(size).map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "failed to set length: size past i64::MAX",
            )
        })?;
        self.task()
            .ftruncate_file(&self.file, size)
            .map_err(|e| self.fail("set length of", e))
    }

    /// The file's metadata (`fstat`).
    ///
    /// # Errors
    /// None on uvfs; `io::Result` as in `std::fs`.
    #[inline]
    pub fn metadata(&self) -> io::Result<Metadata> {
        Ok(Metadata::of(self.file.inode()))
    }

    /// Flushes data and metadata (`fsync`).
    ///
    /// # Errors
    /// What the filesystem's `fsync` says.
    pub fn sync_all(&self) -> io::Result<()> {
        self.task()
            .fsync_file(&self.file)
            .map_err(|e| self.fail("sync", e))
    }

    /// Flushes data (`fdatasync`).
    ///
    /// # Errors
    /// As [`File::sync_all`].
    pub fn sync_data(&self) -> io::Result<()> {
        self.sync_all()
    }

    /// Another handle to the same open file (as `dup`: one position, one set of flags).
    ///
    /// # Errors
    /// None on uvfs; `io::Result` as in `std::fs`.
    pub fn try_clone(&self) -> io::Result<File> {
        Ok(File {
            fs: self.fs.clone(),
            file: self.file.clone(),
        })
    }

    /// Changes the permission bits (`fchmod`).
    ///
    /// # Errors
    /// `EPERM` unless the owner or `CAP_FOWNER`; `EROFS`.
    pub fn set_permissions(&self, perm: Permissions) -> io::Result<()> {
        self.task()
            .fchmod_file(&self.file, perm.mode())
            .map_err(|e| self.fail("set permissions of", e))
    }

    /// Puts this open file in `task`'s fd table at the lowest free fd (as `dup`), for the
    /// syscall-shaped calls; closing that fd leaves this `File` open.
    ///
    /// # Errors
    /// `EMFILE` when the table is full.
    pub fn install(&self, task: &Task) -> io::Result<i32> {
        task.files
            .install(self.file.clone(), false, 0)
            .map_err(|e| self.fail("install", e))
    }

    /// Takes an exclusive advisory lock of the whole file, waiting while another open file
    /// holds a lock of it (`flock(LOCK_EX)`, as `std::fs::File::lock`). The lock belongs to
    /// this open file and its [`File::try_clone`]s, and goes when the last of them closes;
    /// a shared lock held here is converted (released first, as `flock` does).
    ///
    /// # Errors
    /// `EBADF` for a file opened for neither reading nor writing.
    pub fn lock(&self) -> io::Result<()> {
        self.flock(Some(Kind::Write), false)
            .map_err(|e| self.fail("lock", e))
    }

    /// Takes a shared advisory lock of the whole file, waiting while another open file holds
    /// an exclusive one (`flock(LOCK_SH)`, as `std::fs::File::lock_shared`).
    ///
    /// # Errors
    /// As [`File::lock`].
    pub fn lock_shared(&self) -> io::Result<()> {
        self.flock(Some(Kind::Read), false)
            .map_err(|e| self.fail("lock", e))
    }

    /// [`File::lock`] without waiting: `TryLockError::WouldBlock` if another open file holds
    /// a lock of the file (`flock(LOCK_EX | LOCK_NB)`, as `std::fs::File::try_lock`).
    ///
    /// # Errors
    /// `WouldBlock`, or the errors of [`File::lock`].
    pub fn try_lock(&self) -> Result<(), std::fs::TryLockError> {
        self.try_flock(Kind::Write)
    }

    /// [`File::lock_shared`] without waiting (`flock(LOCK_SH | LOCK_NB)`, as
    /// `std::fs::File::try_lock_shared`).
    ///
    /// # Errors
    /// As [`File::try_lock`].
    pub fn try_lock_shared(&self) -> Result<(), std::fs::TryLockError> {
        self.try_flock(Kind::Read)
    }

    /// Releases this open file's advisory lock, if any (`flock(LOCK_UN)`, as
    /// `std::fs::File::unlock`).
    ///
    /// # Errors
    /// None on uvfs; `io::Result` as in `std::fs`.
    pub fn unlock(&self) -> io::Result<()> {
        self.flock(None, false).map_err(|e| self.fail("unlock", e))
    }

    fn flock(&self, kind: Option<Kind>, nonblocking: bool) -> crate::abi::Result<()> {
        self.task().flock_file(&self.file, kind, nonblocking)
    }

    fn try_flock(&self, kind: Kind) -> Result<(), std::fs::TryLockError> {
        match self.flock(Some(kind), true) {
            Ok(()) => Ok(()),
            Err(Errno::EWOULDBLOCK) => Err(std::fs::TryLockError::WouldBlock),
            Err(e) => Err(std::fs::TryLockError::Error(self.fail("lock", e))),
        }
    }

    /// The open file description.
    pub fn description(&self) -> &Arc<FileDescription> {
        &self.file
    }

    fn seek_to(&self, pos: SeekFrom) -> io::Result<u64> {
        let (off, whence) = match pos {
            SeekFrom::Start(n) => (
                i64::try_from(n).map_err(|_| self.fail("seek in", Errno::EINVAL))?,
                Whence::SET,
            ),
            SeekFrom::Current(n) => (n, Whence::CUR),
            SeekFrom::End(n) => (n, Whence::END),
        };
        match self.task().lseek_file(&self.file, off, whence, false) {
            Ok(n) => Ok(n as u64),
            Err(e) => Err(self.fail("seek in", e)),
        }
    }
}

impl std::fmt::Debug for File {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("File")
            .field("ino", &self.file.inode().ino())
            .field("flags", &self.file.flags())
            .finish()
    }
}

impl Read for &File {
    #[inline]
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self.task().read_file(&self.file, buf, false) {
            Ok(n) => Ok(n),
            Err(e) => Err(self.fail("read from", e)),
        }
    }
}

impl Read for File {
    #[inline]
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        (&*self).read(buf)
    }
}

impl Write for &File {
    #[inline]
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self.task().write_file(&self.file, buf, false) {
            Ok(n) => Ok(n),
            Err(e) => Err(self.fail("write to", e)),
        }
    }
    /// Nothing to flush: writes reach the filesystem at once.
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Write for File {
    #[inline]
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        (&*self).write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Seek for &File {
    fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
        self.seek_to(pos)
    }
}

impl Seek for File {
    fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
        self.seek_to(pos)
    }
}

const NEEDS_WRITE: &str = "creating or truncating a file requires write or append access";

/// How to open a file, as `std::fs::OpenOptions` (with `std::os::unix::fs::OpenOptionsExt`'s
/// `mode` and `custom_flags`). Open with [`Fs::open_with`](super::Fs::open_with).
///
/// ```
/// use std::io::Write;
/// use uvfs::fs::{Fs, OpenOptions};
///
/// let fs = Fs::new();
/// let mut log = fs.open_with("/log", OpenOptions::new().append(true).create(true).mode(0o600))?;
/// writeln!(log, "one")?;
/// let mut again = OpenOptions::new().append(true).open(&fs, "/log")?;
/// writeln!(again, "two")?;
/// assert_eq!(fs.read_to_string("/log")?, "one\ntwo\n");
/// assert_eq!(fs.metadata("/log")?.permissions().mode(), 0o100600); // st_mode whole, as std
/// let refused = OpenOptions::new().create_new(true).write(true).open(&fs, "/log");
/// assert_eq!(refused.unwrap_err().kind(), std::io::ErrorKind::AlreadyExists);
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct OpenOptions {
    read: bool,
    write: bool,
    append: bool,
    truncate: bool,
    create: bool,
    create_new: bool,
    mode: u32,
    custom: OpenFlags,
}

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions::new()
    }
}

impl OpenOptions {
    /// Nothing set; mode 0o666 (before the umask).
    pub fn new() -> OpenOptions {
        OpenOptions {
            read: false,
            write: false,
            append: false,
            truncate: false,
            create: false,
            create_new: false,
            mode: 0o666,
            custom: OpenFlags::empty(),
        }
    }
    /// Open for reading.
    pub fn read(&mut self, yes: bool) -> &mut Self {
        self.read = yes;
        self
    }
    /// Open for writing.
    pub fn write(&mut self, yes: bool) -> &mut Self {
        self.write = yes;
        self
    }
    /// Open for appending (implies writing).
    pub fn append(&mut self, yes: bool) -> &mut Self {
        self.append = yes;
        self
    }
    /// Truncate to 0 bytes (`O_TRUNC`; needs writing).
    pub fn truncate(&mut self, yes: bool) -> &mut Self {
        self.truncate = yes;
        self
    }
    /// Create if missing (`O_CREAT`; needs writing or appending).
    pub fn create(&mut self, yes: bool) -> &mut Self {
        self.create = yes;
        self
    }
    /// Create, failing if it exists (`O_CREAT|O_EXCL`; symlinks are not followed).
    pub fn create_new(&mut self, yes: bool) -> &mut Self {
        self.create_new = yes;
        self
    }
    /// The mode of a created file, before the umask.
    pub fn mode(&mut self, mode: u32) -> &mut Self {
        self.mode = mode;
        self
    }
    /// Further `O_*` flags (the access mode bits are ignored, as in `std`).
    pub fn custom_flags(&mut self, flags: OpenFlags) -> &mut Self {
        self.custom = flags;
        self
    }

    /// The `open` flags, refusing what `std` refuses, with `std`'s words (an `InvalidInput`
    /// error without an errno): no access at all, truncation or creation without writing,
    /// truncation with appending.
    pub(crate) fn flags(&self) -> Result<OpenFlags, &'static str> {
        let access = match (self.read, self.write, self.append) {
            (true, false, false) => OpenFlags::RDONLY,
            (false, true, false) => OpenFlags::WRONLY,
            (true, true, false) => OpenFlags::RDWR,
            (false, _, true) => OpenFlags::WRONLY | OpenFlags::APPEND,
            (true, _, true) => OpenFlags::RDWR | OpenFlags::APPEND,
            (false, false, false) if self.truncate || self.create || self.create_new => {
                return Err(NEEDS_WRITE)
            }
            (false, false, false) => {
                return Err("must specify at least one of read, write, or append access")
            }
        };
        if !self.write && !self.append {
            if self.truncate || self.create || self.create_new {
                return Err(NEEDS_WRITE);
            }
        } else if self.append && self.truncate && !self.create_new {
            return Err("creating or truncating a file requires write or append access");
        }
        let creation = match (self.create, self.truncate, self.create_new) {
            (false, false, false) => OpenFlags::empty(),
            (true, false, false) => OpenFlags::CREAT,
            (false, true, false) => OpenFlags::TRUNC,
            (true, true, false) => OpenFlags::CREAT | OpenFlags::TRUNC,
            (_, _, true) => OpenFlags::CREAT | OpenFlags::EXCL,
        };
        let custom = self.custom - OpenFlags::WRONLY - OpenFlags::RDWR;
        Ok(access | creation | custom | OpenFlags::CLOEXEC)
    }

    /// Opens `path` through `fs`.
    ///
    /// # Errors
    /// As [`Fs::open_with`](super::Fs::open_with).
    pub fn open(&self, fs: &super::Fs, path: impl AsRef<Path>) -> io::Result<File> {
        fs.open_with(path, self)
    }
}

/// Opens `path` through `inner`'s task.
#[inline]
pub(crate) fn open(inner: &Arc<Inner>, path: &Path, opts: &OpenOptions) -> io::Result<File> {
    let flags = opts.flags().map_err(|why| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("failed to open file {path:?}: {why}"),
        )
    })?;
    let file = inner
        .task()
        .openat_file(AT_FDCWD, path_bytes(path), flags, opts.mode)
        .at("open file", path)?;
    Ok(File {
        fs: inner.clone(),
        file,
    })
}
