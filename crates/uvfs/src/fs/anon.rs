//! anon_inodefs: the one nameless inode that eventfd and epoll files share. Linux:
//! fs/anon_inodes.c (`anon_inode_getfile()`, `anon_inode_inode`).
//!
//! As in Linux, every such file has the same inode: mode 0600 with no file-type bits
//! ([`FileType::Anon`]), owned by root, on an internal superblock mounted nowhere; what the
//! file is lives in its [`FileOps`]. No timestamps change on it.

use std::any::Any;
use std::sync::{Arc, OnceLock};

use crate::abi::{Errno, FileType, OpenFlags, Result, StatFs, PAGE_SIZE};
use crate::vfs::locks::Interrupt;
use crate::vfs::mount::MountRef;
use crate::vfs::ops::{FileOps, InodeOps, SuperOps};
use crate::vfs::super_block::SbRef;
use crate::vfs::SetAttr;
use crate::vfs::{Dentry, FileDescription, Inode, InodeInit, MntFlags, SuperBlock, Task, VfsPath};

/// anon_inodefs's `f_type` (Linux: `ANON_INODE_FS_MAGIC`).
const ANON_INODE_FS_MAGIC: i64 = 0x0904_1934;

struct AnonFs {
    mnt: MountRef,
    inode: Arc<Inode>,
    _sb: SbRef,
}

fn anonfs() -> &'static AnonFs {
    static FS: OnceLock<AnonFs> = OnceLock::new();
    FS.get_or_init(|| {
        let sb = SuperBlock::new(Box::new(AnonSuper));
        let root = Inode::new(
            &sb,
            InodeInit {
                ino: sb.alloc_ino(),
                file_type: FileType::Directory,
                perm: 0o700,
                uid: 0,
                gid: 0,
                rdev: 0,
                nlink: 1,
            },
            Box::new(AnonInode),
        );
        let mnt = crate::vfs::Mount::new(sb.clone(), Dentry::new_root(root), MntFlags::empty());
        let inode = Inode::new(
            &sb,
            InodeInit {
                ino: sb.alloc_ino(),
                file_type: FileType::Anon,
                perm: 0o600,
                uid: 0,
                gid: 0,
                rdev: 0,
                nlink: 1,
            },
            Box::new(AnonInode),
        );
        AnonFs {
            mnt,
            inode,
            _sb: sb,
        }
    })
}

struct AnonSuper;

impl SuperOps for AnonSuper {
    fn fs_name(&self) -> &'static str {
        "anon_inodefs"
    }
    fn multigrain_times(&self) -> bool {
        false
    }
    fn has_btime(&self) -> bool {
        false
    }
    fn statfs(&self, sb: &SuperBlock) -> Result<StatFs> {
        Ok(StatFs {
            f_type: ANON_INODE_FS_MAGIC,
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

struct AnonInode;

impl InodeOps for AnonInode {
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn open(&self, _inode: &Arc<Inode>, _flags: OpenFlags) -> Result<Box<dyn FileOps>> {
        Err(Errno::ENXIO)
    }
    fn setattr(&self, _inode: &Inode, _attr: &SetAttr) -> Result<()> {
        // The inode is shared by every such file: nobody may change it (Linux:
        // `anon_inode_setattr()`).
        Err(Errno::EOPNOTSUPP)
    }
}

/// A new open file on the shared anonymous inode with `ops`, open for reading and writing
/// with the status flags of `flags` (Linux: `anon_inode_getfile()` with `O_RDWR`).
pub(crate) fn anon_file(
    ops: Box<dyn FileOps>,
    flags: OpenFlags,
    opener_cred: u64,
) -> Result<Arc<FileDescription>> {
    let fs = anonfs();
    let path = VfsPath {
        mnt: fs.mnt.clone(),
        dentry: Dentry::new_root(fs.inode.clone()),
    };
    FileDescription::new(
        path,
        fs.inode.clone(),
        OpenFlags::RDWR | (flags & OpenFlags::NONBLOCK),
        ops,
        opener_cred,
    )
}

/// What an anonymous file kind does with `read` and `write`, which may block: the task's
/// interrupt comes with them.
pub(crate) trait AnonIo {
    /// `read(2)`; `nonblock` from the file's flags.
    fn read(&self, buf: &mut [u8], nonblock: bool, intr: Option<&Interrupt>) -> Result<usize>;
    /// `write(2)`.
    fn write(&self, buf: &[u8], nonblock: bool, intr: Option<&Interrupt>) -> Result<usize>;
}

fn anon_io(file: &FileDescription) -> Option<&dyn AnonIo> {
    let any = file.ops().as_any()?;
    if let Some(e) = any.downcast_ref::<super::eventfd::EventFd>() {
        return Some(e);
    }
    None
}

/// Whether the anonymous file can be read and written at all (an eventfd; not an epoll).
pub(crate) fn has_io(file: &FileDescription) -> bool {
    anon_io(file).is_some()
}

/// `read` of an anonymous file for `task` (epoll files cannot be read: `EINVAL`).
pub(crate) fn read(task: &Task, file: &FileDescription, buf: &mut [u8]) -> Result<usize> {
    let io = anon_io(file).ok_or(Errno::EINVAL)?;
    let nonblock = file.flags().contains(OpenFlags::NONBLOCK);
    io.read(buf, nonblock, task.interrupt.get().map(|i| &**i))
}

/// `write` of an anonymous file for `task` (epoll files cannot be written: `EINVAL`).
pub(crate) fn write(task: &Task, file: &FileDescription, buf: &[u8]) -> Result<usize> {
    let io = anon_io(file).ok_or(Errno::EINVAL)?;
    let nonblock = file.flags().contains(OpenFlags::NONBLOCK);
    io.write(buf, nonblock, task.interrupt.get().map(|i| &**i))
}
