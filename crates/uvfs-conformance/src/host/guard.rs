//! The host side's guard against changing the machine's sysfs ([`crate::sysfs_guard`]): the
//! question asked with raw system calls.

use super::sys::{self, CPath};
use crate::backend::Fds;
use crate::op::Op;
use crate::sysfs_guard::{changes_sysfs, SysfsProbe, SYSFS_MAGIC};

pub use crate::sysfs_guard::REFUSED;

/// `O_PATH | O_CLOEXEC`, and `O_NOFOLLOW` for the calls that act on a link itself.
const O_PATH_CLOEXEC: i32 = 0o10000000 | 0o2000000;
const O_NOFOLLOW: i32 = 0o400000;
const AT_SYMLINK_NOFOLLOW: i32 = 0x100;
const AT_FDCWD: i32 = -100;
const EMFILE: i32 = 24;
const ENFILE: i32 = 23;

/// The device number of the machine's sysfs superblock, which every sysfs mounted in a
/// sandbox shows (one per network namespace), read by [`note_machine_sysfs`].
static MACHINE_SYSFS_DEV: std::sync::OnceLock<Option<u64>> = std::sync::OnceLock::new();

/// Notes the device number of the machine's `/sys`, if a sysfs is mounted there: call before
/// the sandbox hides it. The probe falls back on it when it cannot open the file it asks
/// about (a case that lowered `RLIMIT_NOFILE` to the fds it holds: random seeds of 2026-11-29
/// changed the machine's topology nodes through that gap).
pub fn note_machine_sysfs() {
    MACHINE_SYSFS_DEV.get_or_init(|| {
        let on = sys::statfs(&CPath::new(b"/sys")).is_ok_and(|s| s.f_type == SYSFS_MAGIC);
        on.then(|| sys::fstatat(AT_FDCWD, &CPath::new(b"/sys"), 0).ok())
            .flatten()
            .map(|st| st.st_dev)
    });
}

struct HostProbe;

impl SysfsProbe for HostProbe {
    fn fd_on_sysfs(&mut self, fd: i32) -> bool {
        sys::fstatfs(fd).is_ok_and(|s| s.f_type == SYSFS_MAGIC)
    }

    fn at_on_sysfs(&mut self, dirfd: i32, path: &[u8], follow: bool) -> bool {
        let flags = O_PATH_CLOEXEC | if follow { 0 } else { O_NOFOLLOW };
        match sys::openat(dirfd, &CPath::new(path), flags, 0) {
            Ok(fd) => {
                let on = self.fd_on_sysfs(fd as i32);
                let _ = sys::close(fd as i32);
                on
            }
            // No fd to ask with: the file's device, beside the machine's sysfs's (and if that
            // is unknown, the call is refused rather than risked).
            Err(EMFILE | ENFILE) => {
                let nofollow = if follow { 0 } else { AT_SYMLINK_NOFOLLOW };
                match MACHINE_SYSFS_DEV.get().copied().flatten() {
                    Some(dev) => sys::fstatat(dirfd, &CPath::new(path), nofollow)
                        .is_ok_and(|st| st.st_dev == dev),
                    None => true,
                }
            }
            Err(_) => false,
        }
    }
}

/// Whether the host must not run `op`: it would change the machine's sysfs.
pub fn refuses(op: &Op, fds: &Fds) -> bool {
    changes_sysfs(op, fds, &mut HostProbe)
}
