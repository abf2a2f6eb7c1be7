//! The filesystem type `"sysfs"` of a case's uvfs namespace: the `mount` op with type
//! `sysfs` mounts a [`Sysfs::with_cpu_topology`] made for the case at its first mount (so a
//! case that mounts no sysfs pays nothing), as the host's `mount -t sysfs` mounts the
//! machine's sysfs. Every mount of one case shows the same instance, as every sysfs mount of
//! one network namespace shows the same tree on Linux (`sysfs_get_tree()` finds the
//! namespace's superblock).
//!
//! The compared part of the two trees is `devices/system/cpu/cpuN/topology/`: uvfs copies the
//! host's names, modes and values there (CASES.md, "sysfs").

use std::sync::{Arc, OnceLock};

use uvfs::fs::sysfs::Sysfs;
use uvfs::vfs::ops::{FileSystemType, FsContext};
use uvfs::vfs::Dentry;

/// `"sysfs"`, its tree made at the first mount.
#[derive(Default)]
pub(super) struct LazySysfs {
    tree: OnceLock<Sysfs>,
}

impl FileSystemType for LazySysfs {
    fn name(&self) -> &str {
        "sysfs"
    }

    fn get_tree(&self, fc: &FsContext<'_>) -> uvfs::Result<Arc<Dentry>> {
        self.tree
            .get_or_init(Sysfs::with_cpu_topology)
            .fs_type()
            .get_tree(fc)
    }
}
