//! The traits a filesystem implements: [`FileSystemType`], [`SuperOps`], [`InodeOps`],
//! [`FileOps`]. Linux: `struct file_system_type`, `struct super_operations`,
//! `struct inode_operations`, `struct file_operations`.
//!
//! The VFS does every check that does not depend on the filesystem before calling out:
//! permissions, existence of the target, file type rules, read-only mounts, name validity.
//! A method is called with the locks its `# Locking` section lists held by the VFS.
//!
//! # Writing a filesystem
//!
//! `examples/own_fs.rs` is a whole read-only filesystem in one file. The pieces:
//!
//! - A [`FileSystemType`], registered under its name with
//!   [`Vfs::register_filesystem`](crate::Vfs::register_filesystem). `mount(2)` of that name
//!   ([`Task::mount`](crate::Task::mount)) calls [`FileSystemType::get_tree`], which makes
//!   an instance: a [`SuperBlock::new`] with the instance's [`SuperOps`], a root
//!   [`Inode::new`] of that superblock, and returns
//!   [`Dentry::new_root`](super::Dentry::new_root) of it. Everything else about the mount
//!   (`CAP_SYS_ADMIN`, the target, `ENOTDIR`, `EBUSY` at unmount) is the VFS's, as for tmpfs.
//! - An [`InodeOps`] per inode (the filesystem's private inode, found again with
//!   [`Inode::ops`] and [`InodeOps::as_any`]) and a [`FileOps`] per open file, made by
//!   [`InodeOps::open`] (it may capture whatever the reads need).
//!
//! What an implementer guarantees:
//!
//! - **Inode numbers** ([`InodeInit::ino`]) are unique among the superblock's inodes;
//!   [`SuperBlock::alloc_ino`] hands out such numbers, or the filesystem computes its own.
//!   They are only reported (`st_ino`, `d_ino`): the VFS tells inodes apart by identity.
//!   Return the same number each time a file is looked up, as `stat` users compare them.
//! - **Attributes** live in the [`Inode`]: type, permission bits, owner, group and link count
//!   from [`InodeInit`], the size (and block count) set with [`Inode::write_attrs`], all four
//!   timestamps "now" at [`Inode::new`]. The VFS checks permissions against them before any
//!   call, and serves `stat` from them without calling out.
//! - **Lookups are cached**: [`InodeOps::lookup`] runs on a dcache miss, and its answer,
//!   positive or negative (`Ok(None)`), stays cached until the name is removed through the
//!   VFS. A filesystem whose names change behind the VFS's back says so with
//!   [`InodeOps::revalidates`] and marks what it removed with [`Inode::set_stale`] (Linux:
//!   `d_revalidate`; kernfs, `crate::fs::kernfs`, does this).
//! - **`readdir`** emits `.` and `..` itself, first, then the entries, each with its inode
//!   number and its type as [`FileType::dirent_type`](crate::abi::FileType::dirent_type)
//!   gives it (`DT_DIR`, `DT_REG`, ...); `..` of the filesystem's root is the root itself
//!   (its dentry has no parent: [`FileDescription::path`]). Positions are the filesystem's
//!   own cookies; [`DirEntry::next_pos`] must resume right after that entry.
//! - **`read`** copies from the file's offset `pos` into `buf` and returns the count, 0 at
//!   the end; the VFS has checked the access mode and the file type, and moves the file
//!   position and the atime itself.
//! - **Changes** (a writable filesystem; `tests/own_fs.rs` has a small one) keep the
//!   [`Inode`] true: `create`, `mkdir`, ... make the new inode from the [`NewInode`] the
//!   VFS decided (mode with the umask applied, owner, group) and stamp the directory
//!   ([`Inode::touch_ctime`]); `unlink` and `rmdir` lower the victim's link count; `write`
//!   sets the size and calls [`Inode::update_mtime_ctime`]; `setattr` resizes the data for
//!   a new size, then calls [`SetAttr::apply`]. The VFS has checked permissions, existence,
//!   types and read-only mounts, and updates the dcache after a method succeeds.
//! - **Read-only**: [`SuperOps::always_rdonly`] makes every mount of the superblock read-only;
//!   the VFS then refuses every change with `EROFS` before it calls out (Linux: a read-only
//!   superblock, `SB_RDONLY`).
//! - **Missing operations** keep their defaults, which return what Linux's generic code
//!   returns for an inode that lacks the operation: `create` `EACCES`; `mkdir`, `mknod`,
//!   `symlink`, `link`, `unlink`, `rmdir`, `rename` `EPERM`; `tmpfile` `EOPNOTSUPP`;
//!   `get_link` `EINVAL`; `getxattr`, `setxattr`, `removexattr` `EOPNOTSUPP` (`listxattr`:
//!   none); `setattr` stores the new attributes; `read`, `write` `EINVAL`; `readdir` `ENOTDIR`;
//!   `fallocate` `EOPNOTSUPP`; `fsync` succeeds; `llseek` is [`generic_llseek`].
//! - **Threads and locks**: every method may run on many threads at once (hence `Send +
//!   Sync`), with the VFS locks its `# Locking` section names held; a method never calls back
//!   into the VFS (a [`Task`](crate::Task) of the same namespace), which may need those locks.

use std::any::Any;
use std::sync::Arc;

use super::cred::Cred;
use super::dentry::Dentry;
use super::file::FileDescription;
#[cfg(doc)]
use super::inode::InodeInit;
use super::inode::{Inode, SetAttr};
use super::poll::PollTable;
use super::super_block::SuperBlock;
use crate::abi::{
    Errno, FallocFlags, MountFlags, OpenFlags, PollEvents, RenameFlags, Result, StatFs, Whence,
    XattrFlags,
};

/// What the VFS decided about a new inode before asking the filesystem to create it.
#[derive(Clone, Copy, Debug)]
pub struct NewInode<'a> {
    /// Type and permission bits, umask already applied, set-group-ID inheritance done.
    pub mode: u32,
    /// Device number for device files, as the kernel's `mknodat` reads it: 32 bits, in the
    /// encoding of [`crate::abi::dev_make`] (12 bits of major, 20 of minor).
    pub rdev: u32,
    /// Owner.
    pub uid: u32,
    /// Group.
    pub gid: u32,
    /// The creator.
    pub cred: &'a Cred,
}

/// The name of a new directory entry: the VFS's dentry and the filesystem's own directory
/// share these bytes (a filesystem keeps a clone, not a copy).
pub use super::name::Name;

/// One directory entry handed to a `readdir` sink.
#[derive(Clone, Copy, Debug)]
pub struct DirEntry<'a> {
    /// Name bytes.
    pub name: &'a [u8],
    /// Inode number.
    pub ino: u64,
    /// `DT_*` type.
    pub d_type: u8,
    /// The position to resume after this entry.
    pub next_pos: u64,
}

/// Where a write goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WritePos {
    /// At this offset.
    At(u64),
    /// At the end of file, read under the filesystem's write lock (`O_APPEND`).
    Append,
}

/// What `mount(2)` asked of a new filesystem instance, handed to
/// [`FileSystemType::get_tree`] (Linux: `struct fs_context`).
#[doc(alias = "fs_context")]
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub struct FsContext<'a> {
    /// `mount(2)`'s `source` (a device name for a disk filesystem; free-form, and often
    /// ignored, for a virtual one).
    pub source: Option<&'a [u8]>,
    /// `mount(2)`'s `data`: the filesystem's options (`"size=1m,mode=755"`), not yet parsed.
    pub data: Option<&'a str>,
    /// `mount(2)`'s flags. The VFS applies `MS_RDONLY`, `MS_SYNCHRONOUS` and the per-mount
    /// flags itself once the instance is made.
    pub flags: MountFlags,
    /// The credentials of the mounting task (tmpfs gives its root to `fsuid`/`fsgid`).
    pub cred: &'a Cred,
}

/// A kind of filesystem that `mount(2)` creates by name (Linux: `struct file_system_type`,
/// registered with `register_filesystem()`). Register it with
/// [`Vfs::register_filesystem`](crate::Vfs::register_filesystem) or
/// [`MountNamespace::register_filesystem`](super::MountNamespace::register_filesystem);
/// [`Task::mount`](crate::Task::mount) then mounts it exactly as it mounts tmpfs, with the
/// same permission checks and errors.
pub trait FileSystemType: Send + Sync + 'static {
    /// The name `mount(2)` gives as `filesystemtype` (`"tmpfs"`). It never changes.
    fn name(&self) -> &str;

    /// Makes the filesystem instance to mount and returns its root: a
    /// [`Dentry::new_root`] of a directory inode of a new [`SuperBlock`] (Linux:
    /// `get_tree`, usually through `fill_super`). Returning the root of an instance made
    /// earlier mounts that instance again; its superblock, and so its read-only state, is
    /// then shared with the earlier mounts, and the new mount's `MS_RDONLY` makes only that
    /// mount read-only (Linux: `sget_fc()` finding an existing one, as `kernfs_get_tree()`
    /// does).
    ///
    /// # Locking
    /// No VFS lock is held. Called after the mount target was looked up and the caller's
    /// `CAP_SYS_ADMIN` checked, before the mountpoint is locked.
    ///
    /// # Errors
    /// `EINVAL` for options (`fc.data`) the filesystem does not accept; what making the
    /// instance fails with (`ENOMEM`, `ENOSPC`, `ENOENT` for a missing source). A root that
    /// is not a directory is refused later with `ENOTDIR`.
    fn get_tree(&self, fc: &FsContext<'_>) -> Result<Arc<Dentry>>;
}

/// Operations on a mounted filesystem instance.
pub trait SuperOps: Send + Sync + 'static {
    /// The filesystem type name (`"tmpfs"`).
    fn fs_name(&self) -> &'static str;

    /// `statfs(2)` figures.
    ///
    /// # Errors
    /// As the filesystem reports.
    fn statfs(&self, sb: &SuperBlock) -> Result<StatFs>;

    /// Applies a remount's filesystem options (`data` of `mount(2)`).
    ///
    /// # Errors
    /// `EINVAL` for an unknown or invalid option.
    fn remount(&self, sb: &SuperBlock, data: Option<&str>) -> Result<()> {
        let _ = sb;
        match data {
            None | Some("") => Ok(()),
            Some(_) => Err(Errno::EINVAL),
        }
    }

    /// True while unlinked inodes are still open (Linux: `s_remove_count`), which keeps the
    /// filesystem from becoming read-only.
    fn has_orphans(&self) -> bool {
        false
    }

    /// True for a filesystem that is never written, whatever `mount(2)` asks: the VFS makes
    /// the superblock read-only when it mounts it and keeps it so through every remount, so
    /// every change is refused with `EROFS` before an [`InodeOps`] method is called (Linux:
    /// squashfs and cramfs add `SB_RDONLY` to the mount's flags in `get_tree` and
    /// `reconfigure`). The answer must not change.
    fn always_rdonly(&self) -> bool {
        false
    }

    /// Whether the filesystem's mtime and ctime are multigrain (Linux: `FS_MGTIME`): `statx`
    /// then reports them only when asked for, and marks the ctime observed. tmpfs's are.
    fn multigrain_times(&self) -> bool {
        true
    }

    /// Whether the filesystem keeps a birth time for `statx`'s `STATX_BTIME` (tmpfs does).
    fn has_btime(&self) -> bool {
        true
    }

    /// Whether the filesystem's lookup refuses a name past `NAME_MAX` with `ENAMETOOLONG`
    /// (Linux: `simple_lookup()`, tmpfs's, checks the length; `kernfs_iop_lookup()` does not,
    /// so there a long name is just not found). The answer must not change.
    fn lookup_limits_names(&self) -> bool {
        true
    }

    /// The largest file position the filesystem's files reach (Linux: `s_maxbytes`):
    /// `sendfile` past the smaller of its two files' limits is `EOVERFLOW`. Default: Linux's
    /// `MAX_LFS_FILESIZE`, tmpfs's and the pseudo filesystems'; kernfs's is `MAX_NON_LFS`.
    fn max_bytes(&self) -> u64 {
        i64::MAX as u64
    }

    /// Down-casting support.
    fn as_any(&self) -> &dyn Any;
}

/// Operations on one inode; `&self` is the filesystem's private inode.
///
/// Defaults return the errno Linux returns when an inode lacks the operation.
#[allow(unused_variables)]
pub trait InodeOps: Send + Sync + 'static {
    /// Down-casting support (a filesystem finds its own private inode of another `Inode`).
    fn as_any(&self) -> &dyn Any;

    /// Finds `name` in this directory. `Ok(None)` is a negative result the VFS may cache.
    /// `name` is one component: never empty, `.` or `..`, without `/`, at most `NAME_MAX`
    /// bytes. A found inode belongs to `dir`'s superblock; the VFS caches it under `name`
    /// (see "Writing a filesystem" above).
    ///
    /// # Locking
    /// The directory's inode lock is held shared.
    ///
    /// # Errors
    /// `ENOTDIR` if this is not a directory.
    fn lookup(&self, dir: &Inode, name: &[u8]) -> Result<Option<Arc<Inode>>> {
        Err(Errno::ENOTDIR)
    }

    /// Called once as the inode is freed (its last reference gone), before any of its fields
    /// is dropped: the filesystem gives back what the inode was charged while the inode, and
    /// so its superblock, is still whole (Linux: `evict_inode`).
    fn evict(&self, inode: &Inode) {}

    /// True if every name this directory has is in the dcache from its creation until its
    /// removal (a filesystem whose dentries are its directory, as tmpfs's are in Linux):
    /// a name the dcache does not have is then missing, and the VFS does not call
    /// [`InodeOps::lookup`] for it (Linux: `simple_lookup()`, which only adds a negative
    /// dentry). Debug builds still call it and check that it finds nothing.
    fn dcache_complete(&self) -> bool {
        false
    }

    /// True for a directory whose names the filesystem adds and removes itself, not through
    /// the VFS (kernfs: nodes made and removed by code). The VFS then caches no negative
    /// entry in it (a name added later would be hidden by one) and treats a cached entry
    /// whose inode [`Inode::is_stale`] as missing: the next lookup drops it and asks
    /// [`InodeOps::lookup`] again (Linux: `d_revalidate`, `kernfs_dop_revalidate()`). Read
    /// on the locked lookup only; the answer must not change.
    fn revalidates(&self) -> bool {
        false
    }

    /// Creates a regular file (`open(O_CREAT)`, `mknod(S_IFREG)`).
    ///
    /// # Locking
    /// The directory's inode lock is held exclusive; `name` does not exist.
    ///
    /// # Errors
    /// `ENOSPC` when the filesystem is full; `EACCES` if unsupported (Linux: `vfs_create()`
    /// and `lookup_open()` for a directory without `->create`).
    fn create(&self, dir: &Inode, name: &Name, new: &NewInode<'_>) -> Result<Arc<Inode>> {
        Err(Errno::EACCES)
    }

    /// Creates a directory. Locking and errors as [`InodeOps::create`], plus `EMLINK`, and
    /// `EPERM` if unsupported (Linux: `vfs_mkdir()`; so for the others below).
    fn mkdir(&self, dir: &Inode, name: &Name, new: &NewInode<'_>) -> Result<Arc<Inode>> {
        Err(Errno::EPERM)
    }

    /// Creates a special file (FIFO, socket, device). Locking and errors as
    /// [`InodeOps::mkdir`].
    fn mknod(&self, dir: &Inode, name: &Name, new: &NewInode<'_>) -> Result<Arc<Inode>> {
        Err(Errno::EPERM)
    }

    /// Creates a symbolic link holding `target`. Locking and errors as [`InodeOps::mkdir`].
    fn symlink(
        &self,
        dir: &Inode,
        name: &Name,
        target: &[u8],
        new: &NewInode<'_>,
    ) -> Result<Arc<Inode>> {
        Err(Errno::EPERM)
    }

    /// Creates an unnamed regular file in this directory (`O_TMPFILE`), with `nlink == 0`.
    ///
    /// # Errors
    /// `EOPNOTSUPP` if unsupported.
    fn tmpfile(&self, dir: &Inode, new: &NewInode<'_>) -> Result<Arc<Inode>> {
        Err(Errno::EOPNOTSUPP)
    }

    /// Adds a hard link `name` to `target`.
    ///
    /// # Locking
    /// The directory's inode lock and `target`'s inode lock are held exclusive.
    ///
    /// # Errors
    /// `EMLINK`, `ENOSPC`; `EPERM` if unsupported.
    fn link(&self, dir: &Inode, name: &Name, target: &Arc<Inode>) -> Result<()> {
        Err(Errno::EPERM)
    }

    /// Removes the non-directory entry `name`, whose inode is `victim`.
    ///
    /// # Locking
    /// The directory's and the victim's inode locks are held exclusive.
    ///
    /// # Errors
    /// `EPERM` if unsupported.
    fn unlink(&self, dir: &Inode, name: &[u8], victim: &Inode) -> Result<()> {
        Err(Errno::EPERM)
    }

    /// Whether this directory has an `unlink` at all (Linux: a non-null `i_op->unlink`).
    /// `vfs_unlink()` says `EPERM` for a directory without one before it looks for a mount
    /// on the victim (`EBUSY`); a filesystem whose `unlink` only ever refuses says `false`
    /// here (kernfs). The answer must not change.
    fn has_unlink(&self) -> bool {
        true
    }

    /// Removes the directory entry `name`, whose inode is `victim`.
    ///
    /// # Locking
    /// As [`InodeOps::unlink`].
    ///
    /// # Errors
    /// `ENOTEMPTY` if `victim` has entries.
    fn rmdir(&self, dir: &Inode, name: &[u8], victim: &Inode) -> Result<()> {
        Err(Errno::EPERM)
    }

    /// Renames `old_name` (the inode `src`) in this directory to `new_name` in `new_dir`
    /// (same superblock), which names `tgt` if it exists (Linux passes both dentries). The VFS
    /// has checked types, emptiness of a replaced directory, loops and `flags`.
    ///
    /// With `RENAME_WHITEOUT`, `whiteout` is the new inode to leave at `old_name` (a
    /// character device 0:0); the filesystem makes it before it moves anything, so a failure
    /// to make it leaves both directories as they were (Linux: `shmem_whiteout()` first in
    /// `shmem_rename2()`), and returns it for the VFS to bind to `old_name`.
    ///
    /// # Locking
    /// `SuperBlock::rename_lock` (cross-directory), both directories' and both inodes'
    /// inode locks exclusive.
    ///
    /// # Errors
    /// `EMLINK`, `ENOSPC` (also: no inode left for the whiteout); `EINVAL` for unsupported
    /// flags.
    #[allow(clippy::too_many_arguments)] // Reason: Linux's `rename` takes as much.
    fn rename(
        &self,
        old_dir: &Inode,
        old_name: &[u8],
        src: &Arc<Inode>,
        new_dir: &Inode,
        new_name: &[u8],
        tgt: Option<&Arc<Inode>>,
        flags: RenameFlags,
        whiteout: Option<&NewInode<'_>>,
    ) -> Result<Option<Arc<Inode>>> {
        Err(Errno::EPERM)
    }

    /// The target of a symbolic link.
    ///
    /// # Errors
    /// `EINVAL` if this is not a symbolic link.
    fn get_link(&self, inode: &Inode) -> Result<Arc<[u8]>> {
        Err(Errno::EINVAL)
    }

    /// Changes attributes; the VFS has checked permissions. A filesystem with data resizes it
    /// for `attr.size` and then calls [`SetAttr::apply`].
    ///
    /// # Locking
    /// The inode lock is held exclusive.
    ///
    /// # Errors
    /// `EFBIG`, `ENOSPC` for sizes the filesystem cannot hold.
    fn setattr(&self, inode: &Inode, attr: &SetAttr) -> Result<()> {
        attr.apply(inode);
        Ok(())
    }

    /// Opens the inode, returning the file's operations.
    ///
    /// # Errors
    /// `ENXIO` for a device with no driver.
    fn open(&self, inode: &Arc<Inode>, flags: OpenFlags) -> Result<Box<dyn FileOps>>;

    /// The file operations of an `O_PATH` descriptor of the inode. Such a descriptor keeps
    /// the inode alive like any open file (Linux: an `O_PATH` file holds its dentry, so an
    /// unlinked inode is evicted only at its close); its I/O calls fail in the VFS.
    fn open_path(&self, inode: &Arc<Inode>) -> Box<dyn FileOps> {
        Box::new(super::file::PathOnly)
    }

    /// A long-lived holder other than an open file took the inode: a task's cwd or root, a
    /// mount whose root or mountpoint it is. Until the matching [`InodeOps::unhold`] the
    /// inode must outlive its last link (Linux: the inode reference behind the holder's
    /// dentry; an unlinked inode is evicted at its last `iput()`). The VFS pairs the calls
    /// (its `InodeHold`); a filesystem that frees nothing at its last link keeps the no-op
    /// default.
    ///
    /// # Locking
    /// Any inode lock and `MountNamespace::lock` may be held (a rename or unlink gives back
    /// the holds [`InodeOps::keep_parent`] took); no filesystem lock is.
    fn hold(&self, inode: &Inode) {}

    /// The holder of an earlier [`InodeOps::hold`] let go; an unlinked inode nothing holds
    /// any more is freed now.
    ///
    /// # Locking
    /// As [`InodeOps::hold`].
    fn unhold(&self, inode: &Inode) {}

    /// The inode's name in `dir` was removed (unlink, rmdir, a rename over it), or the
    /// inode was just made and opened by `O_TMPFILE` in `dir`. A holder may still use the
    /// inode through that name (or unnamed dentry), and the name keeps its directory, even a
    /// removed one, until the holder goes (Linux: a dentry holds its parent dentry, and a
    /// removed dentry still referenced is only unhashed; `d_tmpfile()`). A filesystem that
    /// frees nothing at the last link keeps the no-op default.
    ///
    /// # Locking
    /// After a removal, `dir`'s inode lock (and the victim's) held exclusive; after an
    /// `O_TMPFILE` open, no lock (the inode has no name to race with).
    fn keep_parent(&self, inode: &Inode, dir: &Arc<Inode>) {}

    /// Reads an extended attribute value.
    ///
    /// # Errors
    /// `ENODATA` if absent; `EOPNOTSUPP` if unsupported.
    fn getxattr(&self, inode: &Inode, name: &[u8]) -> Result<Vec<u8>> {
        Err(Errno::EOPNOTSUPP)
    }

    /// Sets an extended attribute.
    ///
    /// # Errors
    /// `EEXIST` with `CREATE`, `ENODATA` with `REPLACE`, `ENOSPC`; `EOPNOTSUPP` if unsupported.
    fn setxattr(&self, inode: &Inode, name: &[u8], value: &[u8], flags: XattrFlags) -> Result<()> {
        Err(Errno::EOPNOTSUPP)
    }

    /// Names of every extended attribute.
    ///
    /// # Errors
    /// `EOPNOTSUPP` if unsupported.
    fn listxattr(&self, inode: &Inode) -> Result<Vec<Vec<u8>>> {
        Ok(Vec::new())
    }

    /// Removes an extended attribute.
    ///
    /// # Errors
    /// `ENODATA` if absent.
    fn removexattr(&self, inode: &Inode, name: &[u8]) -> Result<()> {
        Err(Errno::EOPNOTSUPP)
    }
}

/// Operations on an open file.
#[allow(unused_variables)]
pub trait FileOps: Send + Sync + 'static {
    /// Reads at `pos` into `buf`; 0 at end of file.
    ///
    /// # Errors
    /// `EINVAL` if the file cannot be read (the VFS has checked the access mode).
    fn read(&self, file: &FileDescription, buf: &mut [u8], pos: u64) -> Result<usize> {
        Err(Errno::EINVAL)
    }

    /// Writes `buf`; returns bytes written and the position after them. The VFS has checked
    /// the access mode, offsets and limits it knows, and cleared set-id bits; the filesystem
    /// sets the new size and stamps mtime and ctime ([`Inode::update_mtime_ctime`]; Linux:
    /// `file_update_time()` in the filesystem's `write_iter`).
    ///
    /// # Errors
    /// `ENOSPC`, `EFBIG` (nothing written); a short count if space ran out part way.
    fn write(&self, file: &FileDescription, buf: &[u8], pos: WritePos) -> Result<(usize, u64)> {
        Err(Errno::EINVAL)
    }

    /// Computes a new position for `lseek` (`cur` is the current one).
    ///
    /// # Errors
    /// `EINVAL` for a bad origin or a negative result; `ENXIO` for `SEEK_DATA`/`SEEK_HOLE`
    /// past the end.
    fn llseek(&self, file: &FileDescription, offset: i64, whence: Whence, cur: u64) -> Result<u64> {
        generic_llseek(file.inode().size(), offset, whence, cur)
    }

    /// Emits directory entries from `*pos` until `sink` returns false or the end; updates
    /// `*pos` to resume after the last entry accepted.
    ///
    /// # Errors
    /// `ENOTDIR` for a non-directory.
    fn readdir(
        &self,
        file: &FileDescription,
        pos: &mut u64,
        sink: &mut dyn FnMut(DirEntry<'_>) -> bool,
    ) -> Result<()> {
        Err(Errno::ENOTDIR)
    }

    /// Flushes data (`fsync`, `fdatasync`).
    ///
    /// # Errors
    /// `EINVAL` if the file cannot be synchronised.
    fn fsync(&self, file: &FileDescription) -> Result<()> {
        Ok(())
    }

    /// Allocates or deallocates space.
    ///
    /// # Errors
    /// `EOPNOTSUPP` for unsupported modes; `ENOSPC`; `EFBIG`.
    fn fallocate(
        &self,
        file: &FileDescription,
        mode: FallocFlags,
        offset: u64,
        len: u64,
    ) -> Result<()> {
        Err(Errno::EOPNOTSUPP)
    }

    /// Readiness of the open file for `poll` and epoll (Linux: `->poll`): the events that hold
    /// now. With `pt`, first registers the poller on the wait lists through which the file's
    /// state changes wake it ([`PollTable::register`] or [`WaitQueue::register`](super::poll::WaitQueue::register)).
    /// The default, for files whose readiness never changes (regular files, directories),
    /// is [`PollEvents::DEFAULT`] and registers nothing.
    fn poll(&self, file: &FileDescription, pt: Option<&mut PollTable<'_>>) -> PollEvents {
        PollEvents::DEFAULT
    }

    /// Whether the file takes `pwrite` (Linux: `FMODE_PWRITE`); `pwrite` and `pwritev` of a
    /// file that does not say `ESPIPE`, before the access mode. kernfs attributes opened
    /// without write access do not (Linux: `seq_open()` clears it).
    fn can_pwrite(&self, file: &FileDescription) -> bool {
        let _ = file;
        true
    }

    /// Whether a read of the file (`read`, `pread`, the vectored ones, `splice` to a pipe)
    /// updates its atime by the mount's rule. Linux leaves that to each filesystem's
    /// `read_iter`: tmpfs's (`filemap_read()`) calls `file_accessed()`, kernfs's attributes
    /// (`seq_read_iter()`, `kernfs_file_read_iter()`) do not. `sendfile` updates it whatever
    /// this says (Linux: `splice_direct_to_actor()`).
    fn reads_touch_atime(&self) -> bool {
        true
    }

    /// Whether the file takes `O_DIRECT` at its open and in `F_SETFL` (Linux:
    /// `FMODE_CAN_ODIRECT`, set by filesystems that do direct I/O); the VFS asks only a
    /// regular file's (pipes do). `EINVAL` if not.
    fn can_odirect(&self) -> bool {
        true
    }

    /// Whether the file's readiness can change, so that epoll may watch it (Linux:
    /// `file_can_poll()`, true when the file has a `->poll`). `epoll_ctl` refuses others with
    /// `EPERM`; `poll` reports [`FileOps::poll`] for every file.
    fn can_poll(&self) -> bool {
        false
    }

    /// The file operations as `Any`, for the VFS to find its own kinds of files (pipes) among
    /// them; `None` for a filesystem's files.
    fn as_any(&self) -> Option<&dyn Any> {
        None
    }

    /// Called once when the last fd of the open file is closed (Linux: `->release`).
    ///
    /// # Locking
    /// No VFS lock is held.
    fn release(&self, file: &FileDescription) {}
}

/// `lseek` arithmetic for a file of `size` bytes with no holes (Linux: `generic_file_llseek()`).
///
/// # Errors
/// `EINVAL` for an unknown origin or a negative result; `ENXIO` for `SEEK_DATA`/`SEEK_HOLE` at or
/// past the end; `EOVERFLOW` when the sum overflows.
pub fn generic_llseek(size: u64, offset: i64, whence: Whence, cur: u64) -> Result<u64> {
    let size_i = i64::try_from(size).map_err(|_| Errno::EOVERFLOW)?;
    let base = match whence {
        Whence::SET => 0,
        Whence::CUR => i64::try_from(cur).map_err(|_| Errno::EOVERFLOW)?,
        Whence::END => size_i,
        Whence::DATA => {
            if offset < 0 || offset >= size_i {
                return Err(Errno::ENXIO);
            }
            return Ok(offset as u64);
        }
        Whence::HOLE => {
            if offset < 0 || offset >= size_i {
                return Err(Errno::ENXIO);
            }
            return Ok(size);
        }
        _ => return Err(Errno::EINVAL),
    };
    let new = base.checked_add(offset).ok_or(Errno::EINVAL)?;
    if new < 0 {
        return Err(Errno::EINVAL);
    }
    Ok(new as u64)
}
