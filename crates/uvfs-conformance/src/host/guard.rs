//! What the host side refuses to run: calls that would change the machine's sysfs.
//!
//! A `sysfs` mounted in the sandbox's private namespace is not private: every sysfs mount of
//! the network namespace shows one superblock, the machine's (`sysfs_get_tree()`), and its
//! nodes keep their mode, owner, stamps and `trusted.`/`security.` xattrs in the node
//! (`kernfs_iattrs`), for every later case and every other program. So the host side never
//! runs, on a sysfs node, `chmod`, `chown`, `utimensat`, a `setxattr` or `removexattr` of a
//! `trusted.` or `security.` name (the ones sysfs keeps), or a remount of the superblock (`MS_REMOUNT`
//! without `MS_BIND`, which would make the machine's `/sys` read-only): it answers
//! [`REFUSED`] instead, which no call gives for these, so a case or random sequence that
//! tries shows a divergence (CASES.md, "sysfs"). Truncation is left alone: it changes nothing
//! but stamps.

use super::sys::{self, CPath};
use crate::backend::Fds;
use crate::op::{Op, XattrTarget};

/// The errno the host answers a refused call with: `ENOTRECOVERABLE`, which no call here
/// gives otherwise.
pub const REFUSED: i32 = libc::ENOTRECOVERABLE;

/// sysfs's `statfs` `f_type`.
const SYSFS_MAGIC: i64 = 0x6265_6572;
const AT_SYMLINK_NOFOLLOW: i64 = 0x100;
const AT_EMPTY_PATH: i64 = 0x1000;
const MS_REMOUNT: u64 = 32;
const MS_BIND: u64 = 4096;
/// `O_PATH | O_CLOEXEC`, and `O_NOFOLLOW` for the calls that act on a link itself.
const O_PATH_CLOEXEC: i32 = 0o10000000 | 0o2000000;
const O_NOFOLLOW: i32 = 0o400000;

/// Whether the file open at `fd` is on a sysfs.
fn fd_on_sysfs(fd: i32) -> bool {
    sys::fstatfs(fd).is_ok_and(|s| s.f_type == SYSFS_MAGIC)
}

/// Whether `path` (from `dirfd`) names a file on a sysfs; the link itself unless `follow`.
/// A name that does not resolve is not (the call then fails, or makes a file elsewhere).
fn at_on_sysfs(dirfd: i32, path: &[u8], empty_path: bool, follow: bool) -> bool {
    if path.is_empty() && empty_path {
        return fd_on_sysfs(dirfd);
    }
    let flags = O_PATH_CLOEXEC | if follow { 0 } else { O_NOFOLLOW };
    match sys::openat(dirfd, &CPath::new(path), flags, 0) {
        Ok(fd) => {
            let on = fd_on_sysfs(fd as i32);
            let _ = sys::close(fd as i32);
            on
        }
        Err(_) => false,
    }
}

/// Whether a `setxattr`/`removexattr` of `name` could change a sysfs node: sysfs keeps
/// `trusted.` and `security.` xattrs (kernfs's handlers); it refuses `user.` ones and has no
/// handler for other names.
fn kept_xattr(name: &[u8]) -> bool {
    name.starts_with(b"trusted.") || name.starts_with(b"security.")
}

/// Whether the host must not run `op`: it would change the machine's sysfs.
pub fn refuses(op: &Op, fds: &Fds) -> bool {
    let fd = |f: &crate::op::Fd| fds.get(f);
    let xattr_target = |t: &XattrTarget| match t {
        XattrTarget::Path(p) => at_on_sysfs(super::AT_FDCWD, p, false, true),
        XattrTarget::Link(p) => at_on_sysfs(super::AT_FDCWD, p, false, false),
        XattrTarget::File(f) => fd_on_sysfs(fds.get(f)),
    };
    match op {
        Op::Fchmodat {
            dirfd, path, flags, ..
        }
        | Op::Fchownat {
            dirfd, path, flags, ..
        } => at_on_sysfs(
            fd(dirfd),
            path,
            flags & AT_EMPTY_PATH != 0,
            flags & AT_SYMLINK_NOFOLLOW == 0,
        ),
        Op::Fchmod { fd: f, .. } | Op::Fchown { fd: f, .. } => fd_on_sysfs(fd(f)),
        Op::Utimensat {
            dirfd, path, flags, ..
        } => match path {
            None => fd_on_sysfs(fd(dirfd)),
            Some(p) => at_on_sysfs(
                fd(dirfd),
                p,
                flags & AT_EMPTY_PATH != 0,
                flags & AT_SYMLINK_NOFOLLOW == 0,
            ),
        },
        Op::Setxattr { target, name, .. } | Op::Removexattr { target, name } => {
            kept_xattr(name) && xattr_target(target)
        }
        Op::Mount { target, flags, .. } => {
            flags & MS_REMOUNT != 0
                && flags & MS_BIND == 0
                && at_on_sysfs(super::AT_FDCWD, target, false, true)
        }
        _ => false,
    }
}
