//! Which calls would change a sysfs node or its superblock (CASES.md, "sysfs").
//!
//! A `sysfs` mounted in the host's sandbox is not private: every sysfs mount of the network
//! namespace shows one superblock, the machine's (`sysfs_get_tree()`), and its nodes keep
//! their mode, owner, stamps and `trusted.`/`security.` xattrs in the node (`kernfs_iattrs`),
//! for every later case and every other program. So the host side never runs, on a sysfs
//! node, `chmod`, `chown`, `utimensat`, a `setxattr` or `removexattr` of a `trusted.` or
//! `security.` name (the ones sysfs keeps), or a remount of the superblock (`MS_REMOUNT`
//! without `MS_BIND`, which would make the machine's `/sys` read-only): it answers
//! [`REFUSED`] instead (`host::guard`), which no call gives for these, so a case that tries
//! shows a divergence. The random generator asks the same question of its uvfs guide and
//! draws again. Truncation is left alone: it changes nothing but stamps.

use crate::backend::Fds;
use crate::op::{Op, XattrTarget};

/// The errno the host answers a refused call with: `ENOTRECOVERABLE`, which no call here
/// gives otherwise.
pub const REFUSED: i32 = 131;

/// sysfs's `statfs` `f_type`.
pub const SYSFS_MAGIC: i64 = 0x6265_6572;

const AT_FDCWD: i32 = -100;
const AT_SYMLINK_NOFOLLOW: i64 = 0x100;
const AT_EMPTY_PATH: i64 = 0x1000;
const MS_REMOUNT: u64 = 32;
const MS_BIND: u64 = 4096;

/// How one side finds out whether a file is on a sysfs.
pub trait SysfsProbe {
    /// Whether the file open at `fd` is on a sysfs (false for a bad fd).
    fn fd_on_sysfs(&mut self, fd: i32) -> bool;
    /// Whether `path` (not empty) from `dirfd` names a file on a sysfs; the link itself
    /// unless `follow`. A name that does not resolve is not (the call then fails, or makes a
    /// file elsewhere).
    fn at_on_sysfs(&mut self, dirfd: i32, path: &[u8], follow: bool) -> bool;
}

/// Whether the file a `*at` call with `dirfd` and `path` acts on is on a sysfs: with an
/// empty path and `AT_EMPTY_PATH`, the file open at `dirfd`, or the cwd for `AT_FDCWD`
/// (seed 227 of the first sysfs run: `fchmodat AT_FDCWD "" 02755 AT_EMPTY_PATH` in a
/// topology directory, which an `fstatfs(AT_FDCWD)` did not see).
fn at(probe: &mut dyn SysfsProbe, dirfd: i32, path: &[u8], empty_path: bool, follow: bool) -> bool {
    match (path.is_empty() && empty_path, dirfd) {
        (true, AT_FDCWD) => probe.at_on_sysfs(AT_FDCWD, b".", true),
        (true, _) => probe.fd_on_sysfs(dirfd),
        (false, _) => !path.is_empty() && probe.at_on_sysfs(dirfd, path, follow),
    }
}

/// Whether a `setxattr`/`removexattr` of `name` could change a sysfs node: sysfs keeps
/// `trusted.` and `security.` xattrs (kernfs's handlers); it refuses `user.` ones and has no
/// handler for other names.
fn kept_xattr(name: &[u8]) -> bool {
    name.starts_with(b"trusted.") || name.starts_with(b"security.")
}

/// Whether `op` would change a sysfs node or superblock, as `probe` sees the files.
pub fn changes_sysfs(op: &Op, fds: &Fds, probe: &mut dyn SysfsProbe) -> bool {
    let fd = |f: &crate::op::Fd| fds.get(f);
    match op {
        Op::Fchmodat {
            dirfd, path, flags, ..
        }
        | Op::Fchownat {
            dirfd, path, flags, ..
        } => at(
            probe,
            fd(dirfd),
            path,
            flags & AT_EMPTY_PATH != 0,
            flags & AT_SYMLINK_NOFOLLOW == 0,
        ),
        Op::Fchmod { fd: f, .. } | Op::Fchown { fd: f, .. } => probe.fd_on_sysfs(fd(f)),
        Op::Utimensat {
            dirfd, path, flags, ..
        } => match path {
            None => probe.fd_on_sysfs(fd(dirfd)),
            Some(p) => at(
                probe,
                fd(dirfd),
                p,
                flags & AT_EMPTY_PATH != 0,
                flags & AT_SYMLINK_NOFOLLOW == 0,
            ),
        },
        Op::Setxattr { target, name, .. } | Op::Removexattr { target, name } => {
            kept_xattr(name)
                && match target {
                    XattrTarget::Path(p) => at(probe, AT_FDCWD, p, false, true),
                    XattrTarget::Link(p) => at(probe, AT_FDCWD, p, false, false),
                    XattrTarget::File(f) => probe.fd_on_sysfs(fd(f)),
                }
        }
        Op::Mount { target, flags, .. } => {
            flags & MS_REMOUNT != 0
                && flags & MS_BIND == 0
                && at(probe, AT_FDCWD, target, false, true)
        }
        _ => false,
    }
}

/// The mode and owner of every node of the machine's `/sys/devices/system/cpu/cpuN/topology/`
/// and of the directories above them up to `/sys/devices/system/cpu` (what a sequence's
/// sysfs shows: CASES.md, "sysfs"), as `path mode uid gid` lines: a long run takes it before
/// and after, and fails if any changed (the guard let a change through).
pub fn machine_topology_state() -> Vec<String> {
    use std::os::unix::fs::MetadataExt;
    let mut out = Vec::new();
    let root = std::path::Path::new("/sys/devices/system/cpu");
    let Ok(cpus) = std::fs::read_dir(root) else {
        return out;
    };
    let mut dirs: Vec<std::path::PathBuf> = cpus
        .flatten()
        .map(|e| e.path().join("topology"))
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    let mut paths = vec![root.to_path_buf()];
    paths.extend(
        dirs.iter()
            .filter_map(|d| d.parent().map(std::path::Path::to_path_buf)),
    );
    for dir in dirs {
        paths.push(dir.clone());
        if let Ok(entries) = std::fs::read_dir(&dir) {
            let mut names: Vec<_> = entries.flatten().map(|e| e.path()).collect();
            names.sort();
            paths.extend(names);
        }
    }
    for p in paths {
        if let Ok(m) = std::fs::symlink_metadata(&p) {
            out.push(format!(
                "{} {:o} {} {}",
                p.display(),
                m.mode(),
                m.uid(),
                m.gid()
            ));
        }
    }
    out
}

/// The lines of `after` that are not in `before`: what changed in the machine's sysfs.
pub fn machine_topology_changes(before: &[String], after: &[String]) -> Vec<String> {
    after
        .iter()
        .filter(|l| !before.contains(l))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The state names the bind-mounted root, each cpu directory and each topology node, so a
    /// change to any of them shows as a changed line.
    #[test]
    fn machine_state_covers_the_cpu_directories_and_their_topology_nodes() {
        let state = machine_topology_state();
        let has = |path: &str| state.iter().any(|l| l.starts_with(&format!("{path} ")));
        assert!(has("/sys/devices/system/cpu"), "{state:?}");
        assert!(has("/sys/devices/system/cpu/cpu0"), "{state:?}");
        assert!(has("/sys/devices/system/cpu/cpu0/topology"), "{state:?}");
        assert!(
            has("/sys/devices/system/cpu/cpu0/topology/core_id"),
            "{state:?}"
        );
        let mut changed = state.clone();
        changed[0] = changed[0].replace(" 40755 ", " 40070 ");
        assert_ne!(changed, state, "the root's line states its mode");
        assert_eq!(
            machine_topology_changes(&state, &changed),
            vec![changed[0].clone()]
        );
    }
}
