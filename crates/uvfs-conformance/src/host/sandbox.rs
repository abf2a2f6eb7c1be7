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
/// The fd of the mount fence's lock file ([`super::fence`]).
pub const FENCE_FD: i32 = 1021;
/// The fd of the host's mount namespace, to leave the sandbox by.
pub const HOST_NS_FD: i32 = 1020;
/// Task N's end of its socket to the observer is at `ACTOR_SOCK_BASE + N` (1012 to 1019).
pub const ACTOR_SOCK_BASE: i32 = 1011;
/// The observer's end of task N's socket is at `OBSERVER_SOCK_BASE + N` (1004 to 1011), in
/// the observer's fd table only.
pub const OBSERVER_SOCK_BASE: i32 = 1003;
/// `/proc/self` of the process that prepared the sandbox, a directory fd through which the
/// sandbox's `mountinfo` is read (the sandbox's namespace has no `/proc`).
pub const PROC_FD: i32 = 1000;
/// The sandbox's `mountinfo`, opened when the sandbox is entered and read again from offset 0
/// after each mount (`host::mounts`): a case that lowered `RLIMIT_NOFILE` to the fds it holds
/// leaves no fd to open it with then. Closed when the sandbox is left (it keeps the
/// namespace).
pub const MOUNTINFO_FD: i32 = 1001;
/// Fds from here up belong to the helper: a case must not use them.
pub const FIRST_RESERVED_FD: i32 = 1000;
/// The `RLIMIT_NOFILE` of a case, as uvfs's default fd table limit.
pub const NOFILE: u64 = 1024;
/// Seconds after which the kernel kills a helper whose case hangs.
pub const TIMEOUT_SECS: u32 = 20;

const CLONE_NEWNS: i32 = 0x0002_0000;
const O_RDONLY_CLOEXEC: i32 = 0o2000000;
/// `O_PATH | O_DIRECTORY | O_CLOEXEC`.
const O_PATH_DIR_CLOEXEC: i32 = 0o10000000 | 0o200000 | 0o2000000;
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

/// Prepares the process for a case: sets `RLIMIT_NOFILE` to [`NOFILE`], moves `result_fd`
/// to [`RESULT_FD`] and stderr to [`DIAG_FD`], opens the mount fence at [`FENCE_FD`], the
/// host's mount namespace at [`HOST_NS_FD`] and `/proc/self` at [`PROC_FD`], closes every other fd (0, 1 and 2 included) so
/// the case's first fd is 0 as in uvfs, and arms a [`TIMEOUT_SECS`] alarm against hangs. Call
/// first, before anything else opens a file.
///
/// # Errors
/// A message if an fd could not be moved (the caller can still print it to stderr).
pub fn prepare_process(result_fd: i32) -> Result<(), String> {
    super::guard::note_machine_sysfs();
    step(
        "setrlimit RLIMIT_NOFILE",
        sys::setrlimit(RLIMIT_NOFILE, NOFILE, NOFILE),
    )?;
    step("dup2 result fd", sys::dup2(result_fd, RESULT_FD))?;
    step("dup2 stderr", sys::dup2(2, DIAG_FD))?;
    super::fence::open();
    let ns = sys::openat(
        AT_FDCWD,
        &CPath::new(b"/proc/self/ns/mnt"),
        O_RDONLY_CLOEXEC,
        0,
    );
    step("open /proc/self/ns/mnt", ns)?;
    let ns = ns.expect("checked") as i32;
    step("dup2 the namespace fd", sys::dup2(ns, HOST_NS_FD))?;
    step(
        "close_range",
        sys::close_range(0, (HOST_NS_FD - 1) as u32, 0),
    )?;
    step(
        "close_range",
        sys::close_range((RESULT_FD + 1) as u32, u32::MAX, 0),
    )?;
    let proc = sys::openat(AT_FDCWD, &CPath::new(b"/proc/self"), O_PATH_DIR_CLOEXEC, 0);
    step("open /proc/self", proc)?;
    let proc = proc.expect("checked") as i32;
    step("dup2 the /proc/self fd", sys::dup2(proc, PROC_FD))?;
    step("close", sys::close(proc))?;
    step("alarm", sys::alarm(TIMEOUT_SECS))
}

/// Leaves the sandbox for the host's mount namespace, holding the mount fence, so that the
/// sandbox's namespace (the last process in it is this one) is torn down while no other case
/// walks a path. Call after every actor of the case was reaped.
///
/// # Errors
/// A message if `setns` failed.
pub fn leave() -> Result<(), String> {
    let _fence = super::fence::hold(super::fence::FenceMode::Exclusive);
    step(
        "setns to the host namespace",
        sys::setns(HOST_NS_FD, CLONE_NEWNS),
    )?;
    // The namespace's last reference: it is torn down here, under the fence.
    let _ = sys::close(MOUNTINFO_FD);
    Ok(())
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
///
/// Holds the mount fence exclusive throughout ([`super::fence`]).
pub fn enter(options: Option<&str>) -> Result<Outcome, String> {
    let _fence = super::fence::hold(super::fence::FenceMode::Exclusive);
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
    // Best effort: without it, a mount's new IDs are learnt while an fd can be opened.
    if let Ok(fd) = sys::openat(PROC_FD, &CPath::new(b"mountinfo"), O_RDONLY_CLOEXEC, 0) {
        let _ = sys::dup2(fd as i32, MOUNTINFO_FD);
        let _ = sys::close(fd as i32);
    }
    Ok(Outcome::Ok(Value::Unit))
}
