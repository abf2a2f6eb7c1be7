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

use std::sync::atomic::{AtomicBool, Ordering};

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
pub struct Held {
    /// Whether a lock was taken (and must be released).
    locked: bool,
}

impl Drop for Held {
    fn drop(&mut self) {
        if self.locked {
            let _ = sys::flock(FENCE_FD, LOCK_UN);
        }
    }
}

/// Set in a server for random sequences ([`unfence_walks`]): ops that do not mount run
/// without the fence.
static WALKS_UNFENCED: AtomicBool = AtomicBool::new(false);

/// From now on (in this process and those it forks) [`FenceMode::Shared`] holds nothing: for
/// the random tester, whose sequences have no symlink chain near the limit (a walk would have
/// to follow more than 20 links without a loop, of a name space of 84 names) and so need no
/// protection from other helpers' mounts. Its own mounts still take the fence exclusive, for
/// other helpers' sake. Without shared holders, an exclusive waiter cannot starve: two random
/// workers' shared holds, back to back on one CPU, once kept a third's sandbox setup waiting
/// past the 10 s step limit.
pub fn unfence_walks() {
    WALKS_UNFENCED.store(true, Ordering::Relaxed);
}

/// Takes the fence (waits for it); a no-op when it is not open, or for a shared hold after
/// [`unfence_walks`].
pub fn hold(mode: FenceMode) -> Held {
    let op = match mode {
        FenceMode::Shared if WALKS_UNFENCED.load(Ordering::Relaxed) => {
            return Held { locked: false }
        }
        FenceMode::Shared => LOCK_SH,
        FenceMode::Exclusive => LOCK_EX,
    };
    while sys::flock(FENCE_FD, op) == Err(libc::EINTR) {}
    Held { locked: true }
}
