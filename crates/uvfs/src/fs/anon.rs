//! anon_inodefs: the one nameless inode that eventfd and epoll files share. Linux:
//! fs/anon_inodes.c (`anon_inode_getfile()`, `anon_inode_inode`).
//!
//! As in Linux, every such file has the same inode: mode 0600 with no file-type bits
//! ([`FileType::Anon`]), owned by root, on an internal superblock mounted nowhere; what the
//! file is lives in its [`FileOps`]. No timestamps change on it.

use std::sync::{Arc, OnceLock};

use super::pseudo::PseudoFs;
use crate::abi::{Errno, FileType, OpenFlags, Result};
use crate::vfs::locks::Interrupt;
use crate::vfs::ops::FileOps;
use crate::vfs::{Dentry, FileDescription, Inode, Task, VfsPath};

/// anon_inodefs's `f_type` (Linux: `ANON_INODE_FS_MAGIC`).
const ANON_INODE_FS_MAGIC: i64 = 0x0904_1934;

struct AnonFs {
    fs: PseudoFs,
    inode: Arc<Inode>,
}

fn anonfs() -> &'static AnonFs {
    static FS: OnceLock<AnonFs> = OnceLock::new();
    FS.get_or_init(|| {
        let fs = PseudoFs::new("anon_inodefs", ANON_INODE_FS_MAGIC, true);
        let inode = fs.inode(FileType::Anon, 0o600, 0, 0);
        AnonFs { fs, inode }
    })
}

/// A new open file on the shared anonymous inode with `ops`, open for reading and writing
/// with the status flags of `flags` (Linux: `anon_inode_getfile()` with `O_RDWR`).
pub(crate) fn anon_file(
    ops: Box<dyn FileOps>,
    flags: OpenFlags,
    opener_cred: u64,
) -> Result<Arc<FileDescription>> {
    anon_file_mode(ops, OpenFlags::RDWR, flags, opener_cred)
}

/// [`anon_file`] open for reading only (Linux: inotify's `anon_inode_getfd()` with
/// `O_RDONLY`: a write is `EBADF`).
pub(crate) fn anon_file_read_only(
    ops: Box<dyn FileOps>,
    flags: OpenFlags,
    opener_cred: u64,
) -> Result<Arc<FileDescription>> {
    anon_file_mode(ops, OpenFlags::RDONLY, flags, opener_cred)
}

/// An anonymous file is silent to notification (Linux: `alloc_file_pseudo()` sets
/// `FMODE_NONOTIFY`).
fn anon_file_mode(
    ops: Box<dyn FileOps>,
    access: OpenFlags,
    flags: OpenFlags,
    opener_cred: u64,
) -> Result<Arc<FileDescription>> {
    let fs = anonfs();
    let path = VfsPath {
        mnt: fs.fs.mnt.clone(),
        dentry: Dentry::new_root(fs.inode.clone()),
    };
    let mut file = FileDescription::new(
        path,
        fs.inode.clone(),
        access | (flags & OpenFlags::NONBLOCK),
        ops,
        opener_cred,
    )?;
    file.set_nonotify();
    Ok(file)
}

/// The file operations every anonymous-inode file kind (eventfd, epoll, inotify, fanotify)
/// has alike, as methods of a `FileOps` impl: `llseek` leaves the position where it is (Linux:
/// `noop_llseek()`), `fsync` is `EINVAL` (no `fsync` operation: `vfs_fsync_range()`), and the
/// file can be polled.
macro_rules! anon_stream_ops {
    () => {
        fn llseek(
            &self,
            _file: &$crate::vfs::FileDescription,
            _offset: i64,
            _whence: $crate::abi::Whence,
            cur: u64,
        ) -> $crate::abi::Result<u64> {
            Ok(cur)
        }

        fn fsync(&self, _file: &$crate::vfs::FileDescription) -> $crate::abi::Result<()> {
            Err($crate::abi::Errno::EINVAL)
        }

        fn can_poll(&self) -> bool {
            true
        }
    };
}
pub(crate) use anon_stream_ops;

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
    if let Some(i) = any.downcast_ref::<super::inotify::InotifyFile>() {
        return Some(i);
    }
    None
}

/// Whether the anonymous file can be read and written at all (an eventfd, an inotify or
/// fanotify group; not an epoll).
pub(crate) fn has_io(file: &FileDescription) -> bool {
    anon_io(file).is_some() || super::fanotify::fanotify_of(file).is_some()
}

/// `read` of an anonymous file for `task` (epoll files cannot be read: `EINVAL`).
pub(crate) fn read(task: &Task, file: &FileDescription, buf: &mut [u8]) -> Result<usize> {
    let nonblock = file.flags().contains(OpenFlags::NONBLOCK);
    // A fanotify read opens files into the reader's fd table.
    if let Some(f) = super::fanotify::fanotify_of(file) {
        return f.read(task, buf, nonblock);
    }
    let io = anon_io(file).ok_or(Errno::EINVAL)?;
    io.read(buf, nonblock, task.interrupt.get().map(|i| &**i))
}

/// `write` of an anonymous file for `task` (epoll files cannot be written: `EINVAL`).
pub(crate) fn write(task: &Task, file: &FileDescription, buf: &[u8]) -> Result<usize> {
    let io = anon_io(file).ok_or(Errno::EINVAL)?;
    let nonblock = file.flags().contains(OpenFlags::NONBLOCK);
    io.write(buf, nonblock, task.interrupt.get().map(|i| &**i))
}
