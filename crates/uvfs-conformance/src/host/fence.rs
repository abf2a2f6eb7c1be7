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
//! The fence is a read-write lock on byte 1 of [`LOCK_PATH`], which every helper opens before
//! it enters its sandbox: ops run holding it shared, and everything that writes `mount_lock`
//! holds it exclusive (sandbox setup and teardown, `mount`/`umount2` ops, and every op of a
//! case after its first mount op, since a detached mount's last reference may go with any
//! op). It orders this suite's own processes only; a mount by an unrelated program can still
//! cut a long chain short.
//!
//! Linux grants a shared file lock whenever no exclusive one is *held*, however long an
//! exclusive request has waited, so a stream of overlapping shared holders (parallel helpers
//! running ops back to back) can starve a helper's sandbox setup past the 10 s step limit; it
//! did, under load. So every taker first passes a turnstile, an exclusive lock on byte 0 held
//! only while it waits for byte 1: a waiting exclusive taker holds the turnstile, new takers
//! queue behind it, and the shared holders it waits for drain. The locks are open file
//! description locks (`F_OFD_SETLKW`): they belong to the helper's open file, shared by its
//! observer and actors, which take them one at a time.

use std::sync::atomic::{AtomicBool, Ordering};

use super::sandbox::FENCE_FD;
use super::sys::{self, CPath};

/// The lock file, in the host's namespace (opened before the sandbox is entered).
pub const LOCK_PATH: &[u8] = b"/tmp/uvfs-conformance-mount-fence.lock";

/// The byte waited for behind the turnstile.
const FENCE_BYTE: i64 = 1;
/// The byte held while waiting for [`FENCE_BYTE`].
const TURNSTILE_BYTE: i64 = 0;
const F_RDLCK: i16 = libc::F_RDLCK as i16;
const F_WRLCK: i16 = libc::F_WRLCK as i16;
const F_UNLCK: i16 = libc::F_UNLCK as i16;
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
            let _ = sys::ofd_lock_byte(FENCE_FD, FENCE_BYTE, F_UNLCK);
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
    let kind = match mode {
        FenceMode::Shared if WALKS_UNFENCED.load(Ordering::Relaxed) => {
            return Held { locked: false }
        }
        FenceMode::Shared => F_RDLCK,
        FenceMode::Exclusive => F_WRLCK,
    };
    let lock = |byte, kind| while sys::ofd_lock_byte(FENCE_FD, byte, kind) == Err(libc::EINTR) {};
    lock(TURNSTILE_BYTE, F_WRLCK);
    lock(FENCE_BYTE, kind);
    lock(TURNSTILE_BYTE, F_UNLCK);
    Held { locked: true }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;
    use crate::host::proc::{self, Forked};

    /// How long a step may take before the test fails (it takes milliseconds).
    const DEADLINE: Duration = Duration::from_secs(10);
    const SYS_FCNTL: &str = "72 ";

    /// A process with its own open file of `path` at [`FENCE_FD`] that takes the fence in
    /// `mode` when asked: it writes `s` once started, `h` once it holds the fence, and lets go
    /// and exits when its socket sends a byte or closes.
    struct Taker {
        pid: i32,
        sock: i32,
    }

    impl Taker {
        fn spawn(path: &[u8], mode: FenceMode) -> Taker {
            let (mine, theirs) = proc::socketpair().expect("socketpair");
            match proc::fork().expect("fork") {
                Forked::Child => {
                    // Killed with the test's thread: a failed test leaves no taker behind
                    // (each holds the others' sockets open, so none would see its close).
                    proc::die_with_parent();
                    let _ = sys::close(mine);
                    let fd = sys::openat(-100, &CPath::new(path), O_RDWR_CREAT_CLOEXEC, 0o600)
                        .expect("the lock file opens") as i32;
                    let _ = sys::dup3(fd, FENCE_FD, 0o2000000);
                    let _ = sys::write(theirs, b"s");
                    let held = hold(mode);
                    let _ = sys::write(theirs, b"h");
                    let _ = sys::read(theirs, &mut [0u8]);
                    drop(held);
                    proc::exit_now(0)
                }
                Forked::Parent(pid) => {
                    let _ = sys::close(theirs);
                    proc::set_receive_timeout(mine, DEADLINE).expect("SO_RCVTIMEO");
                    Taker { pid, sock: mine }
                }
            }
        }

        /// Waits for the next byte the taker writes.
        fn expect(&self, what: u8) {
            let mut b = [0u8];
            assert_eq!(sys::read(self.sock, &mut b), Ok(1), "taker {}", self.pid);
            assert_eq!(b[0], what);
        }

        /// Whether it has written `h` (without waiting).
        fn holds(&self) -> bool {
            let mut b = [0u8];
            let _ = sys::fcntl(self.sock, libc::F_SETFL, libc::O_NONBLOCK.into());
            let n = sys::read(self.sock, &mut b);
            let _ = sys::fcntl(self.sock, libc::F_SETFL, 0);
            n == Ok(1) && b[0] == b'h'
        }

        /// Waits until it is asleep in `fcntl` (waiting for a lock) or holds the fence;
        /// true if it holds it.
        fn blocked_or_holding(&self) -> bool {
            let start = Instant::now();
            loop {
                if self.holds() {
                    return true;
                }
                let syscall = std::fs::read_to_string(format!("/proc/{}/syscall", self.pid))
                    .unwrap_or_default();
                if syscall.starts_with(SYS_FCNTL) {
                    return false;
                }
                assert!(
                    start.elapsed() < DEADLINE,
                    "taker {} neither waits nor holds",
                    self.pid
                );
                std::thread::yield_now();
            }
        }

        fn release(self) {
            let _ = sys::write(self.sock, b"r");
            assert!(proc::wait_for(self.pid).is_some());
            let _ = sys::close(self.sock);
        }
    }

    /// The starvation the turnstile prevents: a shared taker arriving while an exclusive one
    /// waits for a shared holder must queue behind the exclusive one, not join the holder.
    #[test]
    fn a_waiting_exclusive_taker_is_not_overtaken_by_shared_ones() {
        let path = format!("/tmp/uvfs-fence-test-{}.lock\0", std::process::id());
        let path = &path.as_bytes()[..path.len() - 1];
        let a = Taker::spawn(path, FenceMode::Shared);
        a.expect(b's');
        a.expect(b'h');
        let b = Taker::spawn(path, FenceMode::Exclusive);
        b.expect(b's');
        assert!(
            !b.blocked_or_holding(),
            "an exclusive taker waits for a shared holder"
        );
        let c = Taker::spawn(path, FenceMode::Shared);
        c.expect(b's');
        assert!(
            !c.blocked_or_holding(),
            "a shared taker overtook a waiting exclusive one"
        );
        a.release();
        b.expect(b'h');
        assert!(
            !c.holds(),
            "a shared taker holds beside an exclusive holder"
        );
        b.release();
        c.expect(b'h');
        c.release();
        let _ = std::fs::remove_file(std::str::from_utf8(path).expect("ASCII"));
    }
}
