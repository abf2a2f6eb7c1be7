//! The mount fence: a lock shared by every host-side process of the suite, so that no path
//! walk runs while another case mounts.
//!
//! Why: Linux counts the symlinks a lookup follows in `nameidata.total_link_count` and does
//! not reset the count when an RCU-mode walk is abandoned and the lookup restarts in ref-walk
//! mode (`filename_lookup()` and `path_openat()` retry with the same nameidata; the count is
//! only set in `__set_nameidata()`; `reserve_stack()` checks it against `MAXSYMLINKS`, all in
//! fs/namei.c). An RCU walk is abandoned when `mount_lock` changed during it, and
//! `mount_lock` is one system-wide seqlock that every mount, unmount, namespace teardown and
//! final `mntput()` of a detached mount writes. So a walk through a chain of 40 symlinks (the
//! limit) reports `ELOOP` when a mount happens anywhere at that moment: about one run in
//! twelve of `walk_symlink_chain_of_40_links_resolves_41_is_eloop` did, while the suite's
//! other host helper set up its sandbox (a test program that mounts in a loop beside a
//! `stat` of such a chain makes a third of the stats fail).
//!
//! The fence is an `flock` on [`LOCK_PATH`], which every helper opens before it enters its
//! sandbox: ops run holding it shared, and everything that writes `mount_lock` holds it
//! exclusive (sandbox setup and teardown, `mount`/`umount2` ops, and every op of a case after
//! its first mount op, since a detached mount's last reference may go with any op). It
//! orders this suite's own processes only; a mount by an unrelated program can still cut a
//! long chain short.

use super::sandbox::FENCE_FD;
use super::sys::{self, CPath};

/// The lock file, in the host's namespace (opened before the sandbox is entered).
pub const LOCK_PATH: &[u8] = b"/tmp/uvfs-conformance-mount-fence.lock";

const LOCK_SH: i32 = 1;
const LOCK_EX: i32 = 2;
const LOCK_UN: i32 = 8;
const O_RDWR_CREAT_CLOEXEC: i32 = 0o2 | 0o100 | 0o2000000;

/// How an op holds the fence.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum FenceMode {
    /// With other ops: it does not mount.
    Shared,
    /// Alone: it may write `mount_lock`.
    Exclusive,
}

/// Opens the lock file at [`FENCE_FD`]; without it (an unwritable `/tmp`) the fence is off.
pub fn open() {
    if let Ok(fd) = sys::openat(-100, &CPath::new(LOCK_PATH), O_RDWR_CREAT_CLOEXEC, 0o666) {
        let fd = fd as i32;
        if fd != FENCE_FD {
            let _ = sys::dup3(fd, FENCE_FD, 0o2000000);
            let _ = sys::close(fd);
        }
    }
}

/// The fence held until the guard drops.
#[derive(Debug)]
pub struct Held(());

impl Drop for Held {
    fn drop(&mut self) {
        let _ = sys::flock(FENCE_FD, LOCK_UN);
    }
}

/// Takes the fence (waits for it); a no-op when it is not open.
pub fn hold(mode: FenceMode) -> Held {
    let op = match mode {
        FenceMode::Shared => LOCK_SH,
        FenceMode::Exclusive => LOCK_EX,
    };
    while sys::flock(FENCE_FD, op) == Err(libc::EINTR) {}
    Held(())
}
