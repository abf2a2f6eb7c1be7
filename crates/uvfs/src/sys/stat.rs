//! `fstatat`, `statx`, `statfs`. Linux: fs/stat.c (`vfs_statx()`, `cp_new_stat()`,
//! `cp_statx()`), fs/statfs.c.

use crate::abi::{
    dev_split, st_flags, AtFlags, Errno, ResolveFlags, Result, Stat, StatFs, Statx, StatxMask,
    PAGE_SIZE,
};
use crate::vfs::dcache::{hash_seed, rcu_read};
use crate::vfs::inode::Inode;
use crate::vfs::mount::{MntFlags, Mount};
use crate::vfs::namei::fast::walk_cached;
use crate::vfs::namei::FollowLast;
use crate::vfs::Task;

use super::{At, EmptyPath};

/// `STATX_ATTR_MOUNT_ROOT`: the file is the root of a mount.
pub const STATX_ATTR_MOUNT_ROOT: u64 = 0x2000;
/// `STATX_ATTR_AUTOMOUNT`: the file is an automount trigger (never, in uvfs).
const STATX_ATTR_AUTOMOUNT: u64 = 0x1000;
/// `STATX_ATTR_DAX`: the file is accessed directly (never, in uvfs).
const STATX_ATTR_DAX: u64 = 0x0020_0000;
/// The `attributes_mask`: the attributes uvfs reports truthfully, which are the three the
/// Linux VFS adds for every filesystem (`vfs_getattr_nosec()`, `vfs_statx()`). Host tmpfs also
/// advertises immutable, append-only and nodump, which it can set (`FS_IOC_SETFLAGS`) and uvfs
/// cannot (docs/divergences.md).
pub const STATX_SUPPORTED_ATTRIBUTES: u64 =
    STATX_ATTR_AUTOMOUNT | STATX_ATTR_MOUNT_ROOT | STATX_ATTR_DAX;

const STATX_SYNC_TYPE: u32 = AtFlags::STATX_FORCE_SYNC.bits() | AtFlags::STATX_DONT_SYNC.bits();

fn follow_of(flags: AtFlags) -> FollowLast {
    if flags.contains(AtFlags::SYMLINK_NOFOLLOW) {
        FollowLast::No
    } else {
        FollowLast::Yes
    }
}

fn empty_of(flags: AtFlags) -> EmptyPath {
    if flags.contains(AtFlags::EMPTY_PATH) {
        EmptyPath::Allow
    } else {
        EmptyPath::Reject
    }
}

fn fill_statx(inode: &Inode, mnt: &Mount, is_mount_root: bool, request: StatxMask) -> Statx {
    // mtime and ctime are reported (and the ctime marked observed) only when asked for, btime
    // only when asked for (Linux: `generic_fillattr()`, `shmem_getattr()`).
    // A filesystem without multigrain timestamps reports them always, and one without a
    // birth time never reports it (pipefs: plain `generic_fillattr()`).
    let sops = inode.sb().ops();
    let multigrain = sops.multigrain_times();
    let cmtime = request.intersects(StatxMask::MTIME | StatxMask::CTIME) || !multigrain;
    let a = inode.attrs(cmtime && multigrain);
    // Asked for the mount ID that is never reused, Linux gives it instead of the other
    // (`vfs_statx_path()`). uvfs never reuses a mount ID, so the two are the same number.
    let mnt_id = if request.contains(StatxMask::MNT_ID_UNIQUE) {
        StatxMask::MNT_ID_UNIQUE
    } else {
        StatxMask::MNT_ID
    };
    let mut mask = (StatxMask::BASIC_STATS - StatxMask::MTIME - StatxMask::CTIME) | mnt_id;
    if cmtime {
        mask |= StatxMask::MTIME | StatxMask::CTIME;
    }
    if request.contains(StatxMask::BTIME) && sops.has_btime() {
        mask |= StatxMask::BTIME;
    }
    let (rdev_major, rdev_minor) = dev_split(inode.rdev());
    let (dev_major, dev_minor) = dev_split(inode.sb().dev());
    Statx {
        mask: mask.bits(),
        blksize: PAGE_SIZE as u32,
        attributes: if is_mount_root {
            STATX_ATTR_MOUNT_ROOT
        } else {
            0
        },
        nlink: a.nlink,
        uid: a.uid,
        gid: a.gid,
        mode: a.mode as u16,
        ino: inode.ino(),
        size: a.size,
        blocks: a.blocks,
        attributes_mask: STATX_SUPPORTED_ATTRIBUTES,
        atime: a.atime,
        btime: inode.btime(),
        ctime: a.ctime,
        mtime: a.mtime,
        rdev_major,
        rdev_minor,
        dev_major,
        dev_minor,
        mnt_id: mnt.id(),
    }
}

/// # Attributes: stat
///
/// `fstatat`, `stat`, `lstat`, `fstat`, `statx`, `statfs`, `fstatfs`.
impl Task {
    /// `fstatat(2)` (`newfstatat`).
    ///
    /// # Errors
    /// `EINVAL` for unknown flags; path errors; `EBADF`.
    ///
    /// # Fast path
    /// A path whose components are all cached is resolved and stat'ed under one epoch guard:
    /// no lock, no reference count, no atomic read-modify-write (the first stat after a
    /// change marks the ctime as observed once).
    pub fn fstatat(&self, dirfd: i32, path: impl AsRef<[u8]>, flags: AtFlags) -> Result<Stat> {
        self.fstatat_with(dirfd, path.as_ref(), flags, Inode::stat)
    }

    /// [`Task::fstatat`], reading what `get` takes from the inode (the stat, or the stat and
    /// the birth time for `uvfs::fs::Metadata`).
    #[inline]
    pub(crate) fn fstatat_with<T>(
        &self,
        dirfd: i32,
        path: &[u8],
        flags: AtFlags,
        get: impl Fn(&Inode) -> T,
    ) -> Result<T> {
        self.fstatat_at(At::Fd(dirfd), path, flags, get)
    }

    /// [`Task::fstatat_with`] from `at`: an fd, or an open directory held without one (a
    /// `uvfs::fs::DirEntry`'s directory).
    #[inline]
    pub(crate) fn fstatat_at<T>(
        &self,
        at: At<'_>,
        path: &[u8],
        flags: AtFlags,
        get: impl Fn(&Inode) -> T,
    ) -> Result<T> {
        let allowed = AtFlags::SYMLINK_NOFOLLOW | AtFlags::NO_AUTOMOUNT | AtFlags::EMPTY_PATH;
        if flags.bits() & !(allowed.bits() | STATX_SYNC_TYPE) != 0 {
            return Err(Errno::EINVAL);
        }
        if let Some(st) = self.stat_cached(at, path, follow_of(flags), &get) {
            return Ok(st);
        }
        self.with_path_at(
            at,
            path,
            empty_of(flags),
            ResolveFlags::empty(),
            |w, start| {
                let pos = w.lookup(start, path, follow_of(flags))?;
                Ok(get(pos.inode().ok_or(Errno::ENOENT)?))
            },
        )
    }

    /// `fstatat` of a cached path from the root, the cwd or `dirfd`: [`walk_cached`] under one
    /// epoch guard, then the stat from the inode. `None` sends the call through the general
    /// walk.
    ///
    /// # Fast path
    /// No walker, no position values, no lock, no reference count (`dirfd`'s file comes from
    /// `Task::fget`: the task's fd cache, or the fd table's lock-free `get`); the path is
    /// checked for length here and for NUL bytes during the scan. This is the `fstatat(dirfd,
    /// name)` of `find`, `du` and `ls -l` after `getdents64`.
    /// Falls back when: ref-walk mode, a path of `PATH_MAX` bytes or more, a bad `dirfd`, and
    /// whatever [`walk_cached`] gives up on.
    #[inline]
    fn stat_cached<T>(
        &self,
        at: At<'_>,
        path: &[u8],
        follow: FollowLast,
        get: &impl Fn(&Inode) -> T,
    ) -> Option<T> {
        if self.walk_mode.get() == crate::vfs::WalkMode::Ref || path.len() >= crate::abi::PATH_MAX {
            return None;
        }
        let dir_file;
        let guard = rcu_read();
        let cred = self.cred.borrow();
        let fs = self.fs.borrow();
        let start = match at {
            _ if path.first() == Some(&b'/') => &fs.root,
            At::Fd(crate::abi::AT_FDCWD) => &fs.cwd,
            At::Fd(dirfd) => {
                dir_file = self.fget(dirfd).ok()?;
                dir_file.path()
            }
            At::File(dir) => dir.path(),
        };
        let d = walk_cached(
            &guard,
            &cred,
            hash_seed(),
            &fs.root.dentry,
            &start.dentry,
            path,
            follow,
        )?;
        let st = get(d.inode()?);
        // The cached walk stays in the mount it starts in (it gives up at mountpoints).
        start.mnt.touch();
        Some(st)
    }

    /// `stat(2)`.
    ///
    /// # Errors
    /// As [`Task::fstatat`].
    pub fn stat(&self, path: impl AsRef<[u8]>) -> Result<Stat> {
        self.fstatat(crate::abi::AT_FDCWD, path, AtFlags::empty())
    }

    /// `lstat(2)`.
    ///
    /// # Errors
    /// As [`Task::fstatat`].
    pub fn lstat(&self, path: impl AsRef<[u8]>) -> Result<Stat> {
        self.fstatat(crate::abi::AT_FDCWD, path, AtFlags::SYMLINK_NOFOLLOW)
    }

    /// `fstat(2)` (works on `O_PATH` fds).
    ///
    /// # Errors
    /// `EBADF`.
    pub fn fstat(&self, fd: i32) -> Result<Stat> {
        let file = self.fget(fd)?;
        Ok(file.inode().stat())
    }

    /// `statx(2)`: tmpfs fills the basic fields and the mount id; mtime/ctime and the birth time
    /// only when `mask` asks for them.
    ///
    /// # Errors
    /// `EINVAL` for `STATX__RESERVED`, unknown flags or both sync types; path errors.
    pub fn statx(
        &self,
        dirfd: i32,
        path: impl AsRef<[u8]>,
        flags: AtFlags,
        mask: StatxMask,
    ) -> Result<Statx> {
        if mask.contains(StatxMask::RESERVED) {
            return Err(Errno::EINVAL);
        }
        let allowed = AtFlags::SYMLINK_NOFOLLOW | AtFlags::NO_AUTOMOUNT | AtFlags::EMPTY_PATH;
        if flags.bits() & !(allowed.bits() | STATX_SYNC_TYPE) != 0
            || flags.bits() & STATX_SYNC_TYPE == STATX_SYNC_TYPE
        {
            return Err(Errno::EINVAL);
        }
        let path = path.as_ref();
        self.with_path(
            dirfd,
            path,
            empty_of(flags),
            ResolveFlags::empty(),
            |w, start| {
                let pos = w.lookup(start, path, follow_of(flags))?;
                let is_root = std::sync::Arc::ptr_eq(pos.dentry.arc(), pos.mnt.root());
                Ok(fill_statx(
                    pos.inode().ok_or(Errno::ENOENT)?,
                    &pos.mnt,
                    is_root,
                    mask,
                ))
            },
        )
    }

    /// `statfs(2)`.
    ///
    /// # Errors
    /// Path errors.
    pub fn statfs(&self, path: impl AsRef<[u8]>) -> Result<StatFs> {
        let path = path.as_ref();
        self.with_path(
            crate::abi::AT_FDCWD,
            path,
            EmptyPath::Reject,
            ResolveFlags::empty(),
            |w, start| {
                let pos = w.lookup(start, path, FollowLast::Yes)?;
                statfs_of(&pos.mnt)
            },
        )
    }

    /// `fstatfs(2)` (works on `O_PATH` fds).
    ///
    /// # Errors
    /// `EBADF`.
    pub fn fstatfs(&self, fd: i32) -> Result<StatFs> {
        let file = self.fget(fd)?;
        statfs_of(&file.path().mnt)
    }
}

fn statfs_of(mnt: &Mount) -> Result<StatFs> {
    let mut s = mnt.sb().ops().statfs(mnt.sb())?;
    let f = mnt.flags();
    let mut fl = st_flags::VALID;
    if mnt.is_rdonly() {
        fl |= st_flags::RDONLY;
    }
    for (m, s) in [
        (MntFlags::NOSUID, st_flags::NOSUID),
        (MntFlags::NODEV, st_flags::NODEV),
        (MntFlags::NOEXEC, st_flags::NOEXEC),
        (MntFlags::NOATIME, st_flags::NOATIME),
        (MntFlags::NODIRATIME, st_flags::NODIRATIME),
        (MntFlags::RELATIME, st_flags::RELATIME),
    ] {
        if f.contains(m) {
            fl |= s;
        }
    }
    if mnt.sb().is_synchronous() {
        fl |= st_flags::SYNCHRONOUS;
    }
    if f.contains(MntFlags::NOSYMFOLLOW) {
        fl |= st_flags::NOSYMFOLLOW;
    }
    s.flags = fl;
    Ok(s)
}
