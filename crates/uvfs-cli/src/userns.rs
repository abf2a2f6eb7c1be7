//! The host column without root: this process enters a user namespace of its own, in which
//! it is root, and a mount namespace owned by it, so that it may mount the host column's
//! private tmpfs, as `unshare -Urm` does (util-linux's `sys-utils/unshare.c`). Linux:
//! `unshare(CLONE_NEWUSER | CLONE_NEWNS)`, then `setgroups` denied and the one-line uid and
//! gid maps written (user_namespaces(7)).
//!
//! `unshare(CLONE_NEWUSER)` fails with `EINVAL` in a process with more than one thread, so
//! [`enter`] runs before the run starts any (the progress bar's ticker, gVisor's driver
//! build, the columns). Children (the memory probes, the scale testcases' forked copies,
//! gVisor's driver) inherit the namespaces. Files the run writes are owned by the user as
//! before: uid 0 inside maps to the user's uid outside, and the namespace grants no access to
//! files of other users.
//!
//! Where the kernel refuses (`user.max_user_namespaces` is 0, a seccomp or LSM policy), or
//! [`NO_USERNS_ENV`] is set, the process stays as it is and the host columns fall back to a
//! plain directory, named `host (not tmpfs)` in the tables.

use rustix::process::{getegid, geteuid};
use rustix::thread::UnshareFlags;

/// Set (to anything) to keep `uvfs bench` out of a user namespace when not root: the host
/// columns then run in a plain directory.
pub const NO_USERNS_ENV: &str = "UVFS_BENCH_NO_USERNS";

/// Where the host columns' tmpfs can come from.
#[derive(Debug, PartialEq, Eq)]
pub enum HostPrivilege {
    /// Already root: mount in the namespaces the process was started in.
    Root,
    /// Root in a user namespace of this process's own.
    UserNamespace,
    /// Neither, and why: the host columns run in a plain directory.
    Unprivileged(String),
}

/// Makes the process root of a user and mount namespace of its own, unless it is root or
/// [`NO_USERNS_ENV`] is set. Call before any thread is started.
pub fn enter() -> HostPrivilege {
    let (uid, gid) = (geteuid(), getegid());
    if uid.is_root() {
        return HostPrivilege::Root;
    }
    if std::env::var_os(NO_USERNS_ENV).is_some() {
        return HostPrivilege::Unprivileged(format!("{NO_USERNS_ENV} is set"));
    }
    if let Err(e) = unshare_user_and_mount() {
        return HostPrivilege::Unprivileged(format!("unshare(CLONE_NEWUSER): {e}"));
    }
    let maps = [
        ("/proc/self/setgroups", "deny".to_string()),
        ("/proc/self/uid_map", format!("0 {} 1", uid.as_raw())),
        ("/proc/self/gid_map", format!("0 {} 1", gid.as_raw())),
    ];
    for (file, line) in maps {
        if let Err(e) = std::fs::write(file, line) {
            return HostPrivilege::Unprivileged(format!("writing {file}: {e}"));
        }
    }
    HostPrivilege::UserNamespace
}

/// `unshare(CLONE_NEWUSER | CLONE_NEWNS)`.
#[allow(unsafe_code)] // Reason: rustix marks unshare unsafe for CLONE_FILES, not used here.
fn unshare_user_and_mount() -> rustix::io::Result<()> {
    // SAFETY: `FILES` is not among the flags, so no fd changes meaning for any thread; the
    // namespaces change what this process may mount, nothing Rust's memory model sees.
    unsafe { rustix::thread::unshare_unsafe(UnshareFlags::NEWUSER | UnshareFlags::NEWNS) }
}
