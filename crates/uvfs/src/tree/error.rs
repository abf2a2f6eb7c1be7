//! The error of a tree copy: what failed, where, and the errno.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

/// A tree copy's failure: the operation, the path it was applied to, and the `io::Error`
/// (which carries the errno: [`Error::raw_os_error`]).
///
/// Converts into an `io::Error` of the same kind whose message names the operation and the
/// path (`?` in a function returning `io::Result`).
#[derive(Debug)]
pub struct Error {
    op: &'static str,
    path: PathBuf,
    source: io::Error,
}

/// The result of a tree copy.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub(super) fn new(op: &'static str, path: PathBuf, source: io::Error) -> Error {
        Error { op, path, source }
    }

    /// The operation that failed, named after its system call (`"openat"`, `"pwrite"`, ...).
    pub fn op(&self) -> &'static str {
        self.op
    }

    /// The path it was applied to: the side's root joined with the entry's path in the tree
    /// (a uvfs path or a host path; an archive's entry path for tar).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The errno, if the failure was a system call's (`ENOSPC`, `ENOTDIR`, ...).
    pub fn raw_os_error(&self) -> Option<i32> {
        self.source.raw_os_error()
    }

    /// The kind of the underlying `io::Error`.
    pub fn kind(&self) -> io::ErrorKind {
        self.source.kind()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}: {}", self.op, self.path.display(), self.source)
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

impl From<Error> for io::Error {
    fn from(e: Error) -> io::Error {
        io::Error::new(e.source.kind(), e)
    }
}
