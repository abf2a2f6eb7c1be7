//! Linux error numbers.

use core::fmt;
use core::num::NonZeroU16;

/// A Linux error number (`errno`), never zero.
///
/// `Debug` prints the symbolic name (`ENOENT`), `Display` the `strerror` text.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct Errno(NonZeroU16);

/// The result type of every fallible uvfs call.
pub type Result<T> = core::result::Result<T, Errno>;

macro_rules! errnos {
    ($($name:ident = $num:literal, $text:literal;)*) => {
        impl Errno {
            $(
                #[doc = $text]
                pub const $name: Errno = Errno(match NonZeroU16::new($num) {
                    Some(n) => n,
                    None => panic!("errno 0"),
                });
            )*

            /// The symbolic name, such as `"ENOENT"`, or `None` for an unknown number.
            pub fn name(self) -> Option<&'static str> {
                match self.0.get() {
                    $($num => Some(stringify!($name)),)*
                    _ => None,
                }
            }

            /// The `strerror` text.
            pub fn description(self) -> &'static str {
                match self.0.get() {
                    $($num => $text,)*
                    _ => "Unknown error",
                }
            }
        }
    };
}

errnos! {
    EPERM = 1, "Operation not permitted";
    ENOENT = 2, "No such file or directory";
    ESRCH = 3, "No such process";
    EINTR = 4, "Interrupted system call";
    EIO = 5, "Input/output error";
    ENXIO = 6, "No such device or address";
    E2BIG = 7, "Argument list too long";
    ENOEXEC = 8, "Exec format error";
    EBADF = 9, "Bad file descriptor";
    ECHILD = 10, "No child processes";
    EAGAIN = 11, "Resource temporarily unavailable";
    ENOMEM = 12, "Cannot allocate memory";
    EACCES = 13, "Permission denied";
    EFAULT = 14, "Bad address";
    ENOTBLK = 15, "Block device required";
    EBUSY = 16, "Device or resource busy";
    EEXIST = 17, "File exists";
    EXDEV = 18, "Invalid cross-device link";
    ENODEV = 19, "No such device";
    ENOTDIR = 20, "Not a directory";
    EISDIR = 21, "Is a directory";
    EINVAL = 22, "Invalid argument";
    ENFILE = 23, "Too many open files in system";
    EMFILE = 24, "Too many open files";
    ENOTTY = 25, "Inappropriate ioctl for device";
    ETXTBSY = 26, "Text file busy";
    EFBIG = 27, "File too large";
    ENOSPC = 28, "No space left on device";
    ESPIPE = 29, "Illegal seek";
    EROFS = 30, "Read-only file system";
    EMLINK = 31, "Too many links";
    EPIPE = 32, "Broken pipe";
    EDOM = 33, "Numerical argument out of domain";
    ERANGE = 34, "Numerical result out of range";
    EDEADLK = 35, "Resource deadlock avoided";
    ENAMETOOLONG = 36, "File name too long";
    ENOLCK = 37, "No locks available";
    ENOSYS = 38, "Function not implemented";
    ENOTEMPTY = 39, "Directory not empty";
    ELOOP = 40, "Too many levels of symbolic links";
    ENODATA = 61, "No data available";
    EOVERFLOW = 75, "Value too large for defined data type";
    EBADFD = 77, "File descriptor in bad state";
    EOPNOTSUPP = 95, "Operation not supported";
    ESTALE = 116, "Stale file handle";
    EDQUOT = 122, "Disk quota exceeded";
}

impl Errno {
    /// `ENOTSUP` is `EOPNOTSUPP` on Linux.
    pub const ENOTSUP: Errno = Errno::EOPNOTSUPP;
    /// `EWOULDBLOCK` is `EAGAIN` on Linux.
    pub const EWOULDBLOCK: Errno = Errno::EAGAIN;

    /// The raw positive error number.
    pub const fn raw(self) -> i32 {
        self.0.get() as i32
    }

    /// Builds an `Errno` from a raw positive number; `None` for 0 or out of range.
    pub fn from_raw(raw: i32) -> Option<Errno> {
        u16::try_from(raw).ok().and_then(NonZeroU16::new).map(Errno)
    }
}

impl fmt::Debug for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(n) => f.write_str(n),
            None => write!(f, "Errno({})", self.0),
        }
    }
}

impl fmt::Display for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.description())
    }
}

impl std::error::Error for Errno {}

impl From<Errno> for std::io::Error {
    fn from(e: Errno) -> Self {
        std::io::Error::from_raw_os_error(e.raw())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_prints_symbolic_name_and_display_prints_text() {
        assert_eq!(format!("{:?}", Errno::ENOENT), "ENOENT");
        assert_eq!(Errno::ENOENT.to_string(), "No such file or directory");
        assert_eq!(Errno::ENOTSUP, Errno::EOPNOTSUPP);
        assert_eq!(Errno::from_raw(36), Some(Errno::ENAMETOOLONG));
        assert_eq!(Errno::from_raw(0), None);
    }
}
