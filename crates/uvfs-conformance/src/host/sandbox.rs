//! The helper process's setup: result output on high fds, a private mount namespace, a fresh
//! tmpfs as root. Everything mounted here disappears with the namespace when the helper
//! exits; nothing is created in the caller's namespace.

use std::io;

use super::sys::{self, CPath};
use crate::outcome::{Outcome, Value};

/// The fd the helper writes its JSON result lines to.
pub const RESULT_FD: i32 = 1023;
/// The fd the helper writes diagnostics (setup failures, panics) to.
pub const DIAG_FD: i32 = 1022;
/// The `RLIMIT_NOFILE` of a case, as uvfs's default fd table limit.
pub const NOFILE: u64 = 1024;
/// Seconds after which the kernel kills a helper whose case hangs.
pub const TIMEOUT_SECS: u32 = 20;

const CLONE_NEWNS: i32 = 0x0002_0000;
const RLIMIT_NOFILE: u32 = 7;
const MNT_DETACH: i32 = 2;
const AT_FDCWD: i32 = -100;
const MS_REC: u64 = 16384;
const MS_PRIVATE: u64 = 1 << 18;
/// Where the staging tmpfs goes inside the private namespace; only its mount is used.
const STAGING: &[u8] = b"/tmp";
/// The case's root, a fresh directory on the staging tmpfs.
const CASE_ROOT: &[u8] = b"/tmp/uvfs-case-root";

/// An `io::Write` over a raw fd of this process (the helper keeps no `File` for its output, so
/// no destructor can close an fd a case is using).
#[derive(Clone, Copy, Debug)]
pub struct RawFdWriter(pub i32);

impl io::Write for RawFdWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        sys::write(self.0, buf)
            .map(|n| n as usize)
            .map_err(io::Error::from_raw_os_error)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn step(what: &str, r: sys::SysResult) -> Result<(), String> {
    r.map(|_| ())
        .map_err(|e| format!("{what}: {}", io::Error::from_raw_os_error(e)))
}

/// Prepares the process for a case: sets `RLIMIT_NOFILE` to [`NOFILE`], moves stdout to
/// [`RESULT_FD`] and stderr to [`DIAG_FD`], closes every other fd (0, 1 and 2 included) so the
/// case's first fd is 0 as in uvfs, and arms a [`TIMEOUT_SECS`] alarm against hangs. Call
/// first, before anything else opens a file.
///
/// # Errors
/// A message if an fd could not be moved (the caller can still print it to stderr).
pub fn prepare_process() -> Result<(), String> {
    step(
        "setrlimit RLIMIT_NOFILE",
        sys::setrlimit(RLIMIT_NOFILE, NOFILE, NOFILE),
    )?;
    step("dup2 stdout", sys::dup2(1, RESULT_FD))?;
    step("dup2 stderr", sys::dup2(2, DIAG_FD))?;
    step("close_range", sys::close_range(0, (DIAG_FD - 1) as u32, 0))?;
    step(
        "close_range",
        sys::close_range((RESULT_FD + 1) as u32, u32::MAX, 0),
    )?;
    step("alarm", sys::alarm(TIMEOUT_SECS))
}

/// Enters a private mount namespace, mounts a tmpfs with `options` on a fresh directory,
/// makes it the namespace root and the process root, and sets umask 022. Returns the outcome
/// of the root mount: when it fails (bad options) the process is left outside and the case
/// must stop.
///
/// The tmpfs becomes the namespace root with `pivot_root(".", ".")` and a lazy unmount of the
/// old root stacked above it (the pivot_root(2) idiom), then `chroot(".")`: as in uvfs, nothing
/// exists above the case's root, so paths that `getcwd` reports as `(unreachable)` agree.
///
/// # Errors
/// A message when the environment refuses the sandbox (not root, no mount namespaces).
pub fn enter(options: Option<&str>) -> Result<Outcome, String> {
    step("unshare(CLONE_NEWNS)", sys::unshare(CLONE_NEWNS))?;
    step(
        "make / private",
        sys::mount(None, &CPath::new(b"/"), None, MS_REC | MS_PRIVATE, None),
    )?;
    let tmpfs = CPath::new(b"tmpfs");
    step(
        "mount staging tmpfs",
        sys::mount(Some(&tmpfs), &CPath::new(STAGING), Some(&tmpfs), 0, None),
    )?;
    let root = CPath::new(CASE_ROOT);
    step("mkdir case root", sys::mkdirat(AT_FDCWD, &root, 0o700))?;
    let data = options.map(|o| CPath::new(o.as_bytes()));
    if let Err(e) = sys::mount(Some(&tmpfs), &root, Some(&tmpfs), 0, data.as_ref()) {
        return Ok(Outcome::Errno(e));
    }
    let dot = CPath::new(b".");
    step("chdir to the case root", sys::chdir(&root))?;
    step("pivot_root", sys::pivot_root(&dot, &dot))?;
    step("detach the old root", sys::umount2(&dot, MNT_DETACH))?;
    step("chroot", sys::chroot(&dot))?;
    // uvfs's root task has no supplementary groups; neither has the host's.
    step("setgroups", sys::setgroups(&[]))?;
    step("chdir /", sys::chdir(&CPath::new(b"/")))?;
    sys::umask(0o022).expect("umask cannot fail");
    Ok(Outcome::Ok(Value::Unit))
}
