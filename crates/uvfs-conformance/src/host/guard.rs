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
            Err(_) => false,
        }
    }
}

/// Whether the host must not run `op`: it would change the machine's sysfs.
pub fn refuses(op: &Op, fds: &Fds) -> bool {
    changes_sysfs(op, fds, &mut HostProbe)
}
