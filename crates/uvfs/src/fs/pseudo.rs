//! Kernel-internal pseudo filesystems (pipefs, anon_inodefs): a superblock mounted nowhere,
//! whose inodes have no name and cannot be opened by a path. Linux: `init_pseudo()`,
//! `kern_mount()` (fs/libfs.c, fs/namespace.c).

use std::any::Any;
use std::sync::Arc;

use crate::abi::{Errno, FileType, OpenFlags, Result, StatFs, PAGE_SIZE};
use crate::vfs::mount::MountRef;
use crate::vfs::ops::{FileOps, InodeOps, SuperOps};
use crate::vfs::super_block::SbRef;
use crate::vfs::{Dentry, Inode, InodeInit, MntFlags, SetAttr, SuperBlock};

/// The superblock operations of a pseudo filesystem: its name and `f_type`.
struct PseudoSuper {
    name: &'static str,
    magic: i64,
}

impl SuperOps for PseudoSuper {
    fn fs_name(&self) -> &'static str {
        self.name
    }
    fn multigrain_times(&self) -> bool {
        false
    }
    fn has_btime(&self) -> bool {
        false
    }
    fn statfs(&self, sb: &SuperBlock) -> Result<StatFs> {
        Ok(StatFs {
            f_type: self.magic,
            bsize: PAGE_SIZE as i64,
            frsize: PAGE_SIZE as i64,
            namelen: 255,
            fsid: [sb.dev() as i32, (sb.dev() >> 32) as i32],
            ..StatFs::default()
        })
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// The inode operations of a pseudo filesystem's inodes: `open` (refused: a pseudo inode has
/// no path to be opened by) and `setattr`.
pub(crate) struct PseudoInode {
    /// The inode is shared by unrelated files, so nobody may change it (anon_inodefs; Linux:
    /// `anon_inode_setattr()`); pipefs's inodes take chmod, chown and times as any inode.
    refuse_setattr: bool,
}

impl InodeOps for PseudoInode {
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn open(&self, _inode: &Arc<Inode>, _flags: OpenFlags) -> Result<Box<dyn FileOps>> {
        Err(Errno::ENXIO)
    }
    fn setattr(&self, inode: &Inode, attr: &SetAttr) -> Result<()> {
        if self.refuse_setattr {
            return Err(Errno::EOPNOTSUPP);
        }
        attr.apply(inode);
        Ok(())
    }
}

/// A pseudo filesystem instance: its superblock and the internal mount its files are "at".
pub(crate) struct PseudoFs {
    pub(crate) sb: SbRef,
    pub(crate) mnt: MountRef,
    refuse_setattr: bool,
}

impl PseudoFs {
    /// A new instance named `name` with `f_type` `magic`, mounted nowhere with no mount flags
    /// (strictatime, as Linux's `kern_mount()`); with `refuse_setattr` its inodes refuse
    /// every attribute change with `EOPNOTSUPP`.
    pub(crate) fn new(name: &'static str, magic: i64, refuse_setattr: bool) -> PseudoFs {
        let sb = SuperBlock::new(Box::new(PseudoSuper { name, magic }));
        let root = PseudoFs::inode_of(&sb, refuse_setattr, FileType::Directory, 0o700, 0, 0);
        let mnt = crate::vfs::Mount::new(sb.clone(), Dentry::new_root(root), MntFlags::empty());
        PseudoFs {
            sb,
            mnt,
            refuse_setattr,
        }
    }

    /// A new nameless inode of this filesystem.
    pub(crate) fn inode(&self, file_type: FileType, perm: u32, uid: u32, gid: u32) -> Arc<Inode> {
        PseudoFs::inode_of(&self.sb, self.refuse_setattr, file_type, perm, uid, gid)
    }

    fn inode_of(
        sb: &SbRef,
        refuse_setattr: bool,
        file_type: FileType,
        perm: u32,
        uid: u32,
        gid: u32,
    ) -> Arc<Inode> {
        Inode::new(
            sb,
            InodeInit {
                ino: sb.alloc_ino(),
                file_type,
                perm,
                uid,
                gid,
                rdev: 0,
                nlink: 1,
            },
            Box::new(PseudoInode { refuse_setattr }),
        )
    }
}
