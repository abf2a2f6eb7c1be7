//! A backend for the [`vfs`](https://docs.rs/vfs/0.12) crate: [`UvfsFS`], its
//! [`FileSystem`] over a uvfs tree (feature `vfs-crate`).
//!
//! Code written against [`VfsPath`](::vfs::VfsPath) switches to uvfs by changing the line
//! that makes its root, and from then on gets Linux's semantics underneath: permissions,
//! `O_APPEND`, nanosecond timestamps, mounts, and every error as the errno Linux returns.
//!
//! ```
//! use std::io::Write;
//! use vfs::VfsPath;
//!
//! // let root: VfsPath = vfs::MemoryFS::new().into();
//! let root: VfsPath = uvfs::vfs_crate::UvfsFS::new().into();
//! root.join("logs/today")?.create_dir_all()?;
//! write!(root.join("logs/today/a.txt")?.create_file()?, "one")?;
//! write!(root.join("logs/today/a.txt")?.append_file()?, " two")?;
//! assert_eq!(root.join("logs/today/a.txt")?.read_to_string()?, "one two");
//! # Ok::<(), vfs::VfsError>(())
//! ```
//!
//! # How the `vfs` crate's calls map to uvfs
//! The `vfs` crate names a file by a `/`-separated UTF-8 path from its root (`""` for the
//! root itself, `"/a/b"` below it); [`UvfsFS`] resolves it from the root of its
//! [`Fs`] view, so `..` and absolute symlinks stop there. Each call is one [`Fs`] call,
//! which is a thin layer over the syscall-shaped [`Task`](crate::Task) calls:
//!
//! | `vfs::FileSystem` | uvfs | |
//! |---|---|---|
//! | `read_dir` | [`Fs::read_dir`] | read whole when called, so errors are not lost |
//! | `create_dir` | [`Fs::create_dir`] (`mkdir`, 0o777 less the umask) | `EEXIST` becomes `DirectoryExists` or `FileExists` |
//! | `open_file` | [`Fs::open`] (`O_RDONLY`) | |
//! | `create_file` | [`Fs::create`] (`O_WRONLY\|O_CREAT\|O_TRUNC`, 0o666) | |
//! | `append_file` | `O_WRONLY\|O_APPEND` | a missing file is `ENOENT`, as the trait wants |
//! | `metadata` | [`Fs::metadata`] (`stat`, following symlinks) | a directory's `len` is 0 |
//! | `set_modification_time`, `set_access_time` | [`Fs::set_times`] (`utimensat`, one time `UTIME_OMIT`) | |
//! | `set_creation_time` | — | `NotSupported`: Linux has no call that sets a birth time |
//! | `exists` | [`Fs::exists`] | `ENOTDIR` (a file in the path) is `false` too |
//! | `remove_file`, `remove_dir` | [`Fs::remove_file`], [`Fs::remove_dir`] | |
//! | `copy_file` | [`Fs::copy`] | |
//! | `move_file`, `move_dir` | [`Fs::rename`] | `EXDEV` (across a mount) becomes `NotSupported`, so `VfsPath` copies instead |
//!
//! Errors keep the `std::io::Error` of [`uvfs::fs`](crate::fs) inside
//! `VfsErrorKind::IoError` (its message names the operation and the uvfs path, and
//! [`errno`] gives the errno back), except where the `vfs` crate has a kind
//! of its own: it turns every `NotFound` into `FileNotFound` itself. docs/divergences.md lists
//! where the `vfs` crate's own backends answer differently.

use std::ffi::OsStr;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::SystemTime;

use ::vfs::error::VfsErrorKind;
use ::vfs::{FileSystem, SeekAndRead, SeekAndWrite, VfsError, VfsFileType, VfsMetadata, VfsResult};

use crate::abi::Errno;
use crate::fs::{errno, Fs, OpenOptions};

/// A [`vfs::FileSystem`] over a uvfs tree: `vfs::VfsPath::new(UvfsFS::new())`
/// where the code had `MemoryFS::new()` or `PhysicalFS::new(dir)`.
///
/// It calls through an [`Fs`] view, with that view's credentials and root: [`UvfsFS::new`]
/// gives a fresh tree seen as root, [`UvfsFS::from_fs`] any view (another user's with
/// [`Fs::as_user`], a subtree with [`Fs::chroot`]). Cloning shares the tree.
#[derive(Clone, Debug, Default)]
pub struct UvfsFS {
    fs: Fs,
}

impl UvfsFS {
    /// A new, empty uvfs tree (a tmpfs root), seen as root (uid 0, all capabilities).
    pub fn new() -> UvfsFS {
        UvfsFS::from_fs(Fs::new())
    }

    /// The tree `fs` views, with its credentials; the `vfs` crate's root is `fs`'s root.
    pub fn from_fs(fs: Fs) -> UvfsFS {
        UvfsFS { fs }
    }

    /// The view this backend calls through, for what the `vfs` crate cannot say (symlinks,
    /// permissions, xattrs, mounts).
    pub fn fs(&self) -> &Fs {
        &self.fs
    }
}

/// The uvfs path of the `vfs` crate's `path`: from the view's root, `""` being the root.
///
/// # Errors
/// `InvalidPath` for a NUL byte, which no Linux path can hold.
fn uvfs_path(path: &str) -> VfsResult<&Path> {
    if path.as_bytes().contains(&0) {
        return Err(VfsErrorKind::InvalidPath.into());
    }
    Ok(match path {
        "" => Path::new("/"),
        // The trait's paths all start with '/'; any other resolves from the root all the same.
        p => Path::new(OsStr::from_bytes(p.as_bytes())),
    })
}

/// The `vfs` crate's error for an error of `uvfs::fs`: the `io::Error` kept whole.
fn vfs_error(e: io::Error) -> VfsError {
    VfsError::from(VfsErrorKind::IoError(e))
}

/// `EXDEV` from `rename` as `NotSupported`, on which `VfsPath` copies and removes instead.
fn rename_error(e: io::Error) -> VfsError {
    match errno(&e) {
        Some(Errno::EXDEV) => VfsErrorKind::NotSupported.into(),
        _ => vfs_error(e),
    }
}

impl FileSystem for UvfsFS {
    /// The names in the directory `path` (without `.` and `..`), read when called.
    ///
    /// # Errors
    /// `ENOENT`, `ENOTDIR`, `EACCES` as `opendir` gives them; `InvalidData` for a name that is
    /// not UTF-8 (another user of the tree made it), which no `vfs` path can name.
    fn read_dir(&self, path: &str) -> VfsResult<Box<dyn Iterator<Item = String> + Send>> {
        let dir = uvfs_path(path)?;
        let mut names = Vec::new();
        for entry in self.fs.read_dir(dir).map_err(vfs_error)? {
            let name = entry.map_err(vfs_error)?.file_name();
            match name.into_string() {
                Ok(name) => names.push(name),
                Err(name) => {
                    return Err(vfs_error(io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!("a name in {dir:?} is not UTF-8: {name:?}"),
                    )))
                }
            }
        }
        Ok(Box::new(names.into_iter()))
    }

    /// `mkdir`, mode 0o777 less the umask.
    ///
    /// # Errors
    /// `DirectoryExists` or `FileExists` for `EEXIST` (by a `stat` after it, following a
    /// symlink); others as `mkdir` gives them.
    fn create_dir(&self, path: &str) -> VfsResult<()> {
        let p = uvfs_path(path)?;
        self.fs.create_dir(p).map_err(|e| {
            if errno(&e) != Some(Errno::EEXIST) {
                return vfs_error(e);
            }
            match self.fs.metadata(p) {
                Ok(m) if m.is_dir() => VfsErrorKind::DirectoryExists.into(),
                Ok(_) => VfsErrorKind::FileExists.into(),
                // Gone again, or a dangling symlink: the `EEXIST` itself.
                Err(_) => vfs_error(e),
            }
        })
    }

    /// `open(O_RDONLY)`. A directory opens, as on Linux; reading it fails with `EISDIR`.
    fn open_file(&self, path: &str) -> VfsResult<Box<dyn SeekAndRead + Send>> {
        Ok(Box::new(self.fs.open(uvfs_path(path)?).map_err(vfs_error)?))
    }

    /// `open(O_WRONLY|O_CREAT|O_TRUNC, 0o666)`.
    fn create_file(&self, path: &str) -> VfsResult<Box<dyn SeekAndWrite + Send>> {
        Ok(Box::new(
            self.fs.create(uvfs_path(path)?).map_err(vfs_error)?,
        ))
    }

    /// `open(O_WRONLY|O_APPEND)`: every write goes to the end, even after a seek.
    ///
    /// # Errors
    /// `FileNotFound` for a missing file (no `O_CREAT`).
    fn append_file(&self, path: &str) -> VfsResult<Box<dyn SeekAndWrite + Send>> {
        let file = self
            .fs
            .open_with(uvfs_path(path)?, OpenOptions::new().append(true))
            .map_err(vfs_error)?;
        Ok(Box::new(file))
    }

    /// `stat`, following symlinks. A directory is `Directory` with `len` 0 (the trait's
    /// convention; tmpfs gives a directory a size); anything else is `File` with `st_size`.
    /// The times are `st_mtime`, `st_atime` and statx's birth time.
    fn metadata(&self, path: &str) -> VfsResult<VfsMetadata> {
        let m = self.fs.metadata(uvfs_path(path)?).map_err(vfs_error)?;
        let (file_type, len) = if m.is_dir() {
            (VfsFileType::Directory, 0)
        } else {
            (VfsFileType::File, m.len())
        };
        Ok(VfsMetadata {
            file_type,
            len,
            created: m.created().ok(),
            modified: m.modified().ok(),
            accessed: m.accessed().ok(),
        })
    }

    // `set_creation_time` stays the trait's `NotSupported`: Linux has no call that sets a
    // birth time (`utimensat` sets only the access and modification times).

    /// `utimensat` with the access time left (`UTIME_OMIT`); the change time becomes now.
    ///
    /// # Errors
    /// `EPERM` unless the owner (or `CAP_FOWNER`); path errors.
    fn set_modification_time(&self, path: &str, time: SystemTime) -> VfsResult<()> {
        self.fs
            .set_times(uvfs_path(path)?, None, Some(time))
            .map_err(vfs_error)
    }

    /// `utimensat` with the modification time left (`UTIME_OMIT`); the change time becomes
    /// now.
    ///
    /// # Errors
    /// As [`set_modification_time`](UvfsFS::set_modification_time).
    fn set_access_time(&self, path: &str, time: SystemTime) -> VfsResult<()> {
        self.fs
            .set_times(uvfs_path(path)?, Some(time), None)
            .map_err(vfs_error)
    }

    /// Whether `stat` finds `path`: `false` for `ENOENT`, and for `ENOTDIR` (a file where a
    /// directory of the path should be: nothing can be there).
    ///
    /// # Errors
    /// `EACCES`, `ELOOP`, `ENAMETOOLONG`: whether it exists is not known.
    fn exists(&self, path: &str) -> VfsResult<bool> {
        match self.fs.exists(uvfs_path(path)?) {
            Ok(found) => Ok(found),
            Err(e) if errno(&e) == Some(Errno::ENOTDIR) => Ok(false),
            Err(e) => Err(vfs_error(e)),
        }
    }

    /// `unlink`.
    ///
    /// # Errors
    /// `EISDIR` for a directory; path errors.
    fn remove_file(&self, path: &str) -> VfsResult<()> {
        self.fs.remove_file(uvfs_path(path)?).map_err(vfs_error)
    }

    /// `rmdir`.
    ///
    /// # Errors
    /// `ENOTEMPTY`; `ENOTDIR`; `EBUSY` for the root or a mount point; path errors.
    fn remove_dir(&self, path: &str) -> VfsResult<()> {
        self.fs.remove_dir(uvfs_path(path)?).map_err(vfs_error)
    }

    /// [`Fs::copy`]: contents and permission bits, `dest` created or truncated (`VfsPath`
    /// refuses an existing `dest` before calling).
    ///
    /// # Errors
    /// `InvalidInput` if `src` is not a regular file; as `open` for either path.
    fn copy_file(&self, src: &str, dest: &str) -> VfsResult<()> {
        self.fs
            .copy(uvfs_path(src)?, uvfs_path(dest)?)
            .map(drop)
            .map_err(vfs_error)
    }

    /// `rename` (`VfsPath` refuses an existing `dest` before calling).
    ///
    /// # Errors
    /// `NotSupported` for `EXDEV`, so that `VfsPath` copies; others as `rename` gives them.
    fn move_file(&self, src: &str, dest: &str) -> VfsResult<()> {
        self.fs
            .rename(uvfs_path(src)?, uvfs_path(dest)?)
            .map_err(rename_error)
    }

    /// `rename` of a directory, as [`move_file`](UvfsFS::move_file); `EINVAL` into itself.
    fn move_dir(&self, src: &str, dest: &str) -> VfsResult<()> {
        self.fs
            .rename(uvfs_path(src)?, uvfs_path(dest)?)
            .map_err(rename_error)
    }
}
