//! Errors of `uvfs::fs`: a `std::io::Error` whose message names the operation and the path.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use crate::abi::Errno;

/// What went wrong in a `uvfs::fs` call: the operation, the path (two for `rename`, `copy`
/// and links; none for the few calls that take none, such as [`Fs::watcher`](super::Fs::watcher)),
/// and the errno the call returned.
///
/// Every `uvfs::fs` call returns it inside a [`std::io::Error`] whose `kind()` is the errno's
/// kind and whose message reads like `failed to open file "/a/b": No such file or directory
/// (os error 2)`. `std::io::Error` keeps a raw OS error only when it carries no message, so
/// `raw_os_error()` is `None` on these; [`errno`] gives the number back (and works on plain
/// OS errors too), and [`std::error::Error::source`] is the bare OS error.
#[derive(Debug)]
pub struct Error {
    op: &'static str,
    /// `None` for an operation on no path.
    path: Option<PathBuf>,
    to: Option<PathBuf>,
    os: io::Error,
    errno: Errno,
}

impl Error {
    /// The operation, as the message words it (`"open file"`, `"create directory"`).
    pub fn op(&self) -> &'static str {
        self.op
    }
    /// The path the operation was given (the source for two-path operations); empty for an
    /// operation on no path.
    pub fn path(&self) -> &Path {
        self.path.as_deref().unwrap_or(Path::new(""))
    }
    /// The destination of `rename`, `copy`, `hard_link` and `symlink`.
    pub fn to(&self) -> Option<&Path> {
        self.to.as_deref()
    }
    /// The errno.
    pub fn errno(&self) -> Errno {
        self.errno
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "failed to {}", self.op)?;
        if let Some(path) = &self.path {
            write!(f, " {path:?}")?;
        }
        if let Some(to) = &self.to {
            write!(f, " to {to:?}")?;
        }
        write!(f, ": {}", self.os)
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.os)
    }
}

/// The errno of an error from `uvfs::fs` (or of any `std::io::Error` made from an OS error).
///
/// ```
/// let fs = uvfs::fs::Fs::new();
/// let e = fs.read("/nope").unwrap_err();
/// assert_eq!(uvfs::fs::errno(&e), Some(uvfs::Errno::ENOENT));
/// assert_eq!(e.kind(), std::io::ErrorKind::NotFound);
/// ```
pub fn errno(e: &io::Error) -> Option<Errno> {
    if let Some(raw) = e.raw_os_error() {
        return Errno::from_raw(raw);
    }
    e.get_ref()?.downcast_ref::<Error>().map(|e| e.errno)
}

/// The `io::Error` of `op` on `path` failing with `errno`.
#[cold]
pub(crate) fn error(op: &'static str, path: &Path, errno: Errno) -> io::Error {
    make(op, Some(path.to_path_buf()), None, errno)
}

/// The `io::Error` of `op`, which has no path, failing with `errno`.
#[cold]
pub(crate) fn error_no_path(op: &'static str, errno: Errno) -> io::Error {
    make(op, None, None, errno)
}

/// The `io::Error` of a two-path `op` failing with `errno`.
#[cold]
pub(crate) fn error2(op: &'static str, from: &Path, to: &Path, errno: Errno) -> io::Error {
    make(op, Some(from.to_path_buf()), Some(to.to_path_buf()), errno)
}

fn make(op: &'static str, path: Option<PathBuf>, to: Option<PathBuf>, errno: Errno) -> io::Error {
    let os = io::Error::from_raw_os_error(errno.raw());
    io::Error::new(
        os.kind(),
        Error {
            op,
            path,
            to,
            os,
            errno,
        },
    )
}

/// Attaches `op` and `path` to a `Result` of a `Task` call.
pub(crate) trait Context<T> {
    /// The error, if any, as `uvfs::fs` reports it.
    fn at(self, op: &'static str, path: &Path) -> io::Result<T>;
}

impl<T> Context<T> for crate::abi::Result<T> {
    #[inline]
    fn at(self, op: &'static str, path: &Path) -> io::Result<T> {
        match self {
            Ok(v) => Ok(v),
            Err(e) => Err(error(op, path, e)),
        }
    }
}
