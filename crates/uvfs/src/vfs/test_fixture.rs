//! A filesystem with nothing but inodes, for unit tests of the VFS objects (the loom and
//! shuttle checks, the lookup tests): a superblock, inodes and a root dentry, no tmpfs.

use std::any::Any;
use std::sync::Arc;

#[cfg(any(loom, feature = "shuttle"))]
use super::dentry::Dentry;
use super::inode::{Inode, InodeInit};
use super::ops::{FileOps, InodeOps, SuperOps};
use super::super_block::{SbRef, SuperBlock};
use crate::abi::{Errno, FileType, OpenFlags, Result, StatFs};

/// A filesystem with nothing but inodes: the dcache never calls out to it.
struct NoFs;

impl SuperOps for NoFs {
    fn fs_name(&self) -> &'static str {
        "nofs"
    }
    fn statfs(&self, _sb: &SuperBlock) -> Result<StatFs> {
        Err(Errno::EOPNOTSUPP)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

pub(crate) struct NoOps;

impl InodeOps for NoOps {
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn open(&self, _inode: &Arc<Inode>, _flags: OpenFlags) -> Result<Box<dyn FileOps>> {
        Err(Errno::ENXIO)
    }
}

pub(crate) struct Fixture {
    pub(crate) sb: SbRef,
}

impl Fixture {
    pub(crate) fn new() -> Fixture {
        Fixture {
            sb: SuperBlock::new(Box::new(NoFs)),
        }
    }

    pub(crate) fn inode(&self, file_type: FileType) -> Arc<Inode> {
        self.inode_with(file_type, Box::new(NoOps))
    }

    /// An inode with the given operations (a directory that answers `lookup`, say).
    pub(crate) fn inode_with(&self, file_type: FileType, ops: Box<dyn InodeOps>) -> Arc<Inode> {
        let init = InodeInit {
            ino: self.sb.alloc_ino(),
            file_type,
            perm: 0o755,
            uid: 0,
            gid: 0,
            rdev: 0,
            nlink: 1,
        };
        Inode::new(&self.sb, init, ops)
    }

    /// A root dentry over a new directory (the loom and shuttle checks).
    #[cfg(any(loom, feature = "shuttle"))]
    pub(crate) fn root(&self) -> Arc<Dentry> {
        Dentry::new_root(self.inode(FileType::Directory))
    }
}

/// Whether what `w` points to is freed within a second, the epoch collector asked to free
/// what this thread retired between looks (a dentry's or inode's last count can wait in a
/// retired table node).
#[cfg(not(any(loom, feature = "shuttle")))]
pub(crate) fn freed<T>(w: &std::sync::Weak<T>) -> bool {
    for _ in 0..200 {
        if w.strong_count() == 0 {
            return true;
        }
        crate::sync::rcu::flush();
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    false
}
