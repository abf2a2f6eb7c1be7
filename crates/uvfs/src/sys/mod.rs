//! The syscall-shaped API: methods of [`Task`] named after the Linux system calls, one family
//! per file. Each follows the Linux call's argument checks and error order.

mod attr;
mod cred;
mod dir;
mod fd;
mod lock;
mod mount;
mod namespace;
mod notify;
mod open;
mod pipe;
mod poll;
mod rw;
mod splice;
mod stat;
mod statmount;
mod xattr;

pub use cred::CapSets;
pub use mount::TmpfsType;
pub(crate) use notify::InotifyRead;
pub use poll::EP_MAX_EVENTS;
pub use stat::{STATX_ATTR_MOUNT_ROOT, STATX_SUPPORTED_ATTRIBUTES};

use std::sync::Arc;

use crate::abi::{Errno, ResolveFlags, Result, AT_FDCWD, PATH_MAX, S_ISGID, S_IXGRP};
use crate::fs::tmpfs::{Tmpfs, TmpfsOptions};
use crate::vfs::cred::{Capabilities, Cred};
use crate::vfs::dcache::rcu_read;
use crate::vfs::dentry::Dentry;
use crate::vfs::inode::Inode;
use crate::vfs::mount::{MntFlags, Mount, MountNamespace};
use crate::vfs::namei::{Pos, Walker};
use crate::vfs::ops::NewInode;
use crate::vfs::Task;

/// Where a relative path starts: an fd of the task (`AT_FDCWD`: the working directory), or
/// an open directory held without an fd (`uvfs::fs`'s listings).
#[derive(Clone, Copy)]
pub(crate) enum At<'a> {
    Fd(i32),
    File(&'a crate::vfs::FileDescription),
}

/// A mount namespace with a tmpfs root: the entry point of the library.
///
/// Clones share the namespace. Make a [`Task`] per thread for the syscall-shaped calls, or a
/// [`crate::fs::Fs`] for `std::fs`'s.
///
/// ```
/// use uvfs::{Cred, Vfs};
///
/// let vfs = Vfs::with_root_options(Some("size=1m,mode=755"))?;
/// let task = vfs.task(Cred::root());
/// assert_eq!(task.stat("/")?.mode & 0o7777, 0o755);
/// let fs = uvfs::fs::Fs::from_vfs(&vfs, Cred::root());
/// let big = vec![0u8; 2 << 20];
/// let full = fs.write("/big", &big).unwrap_err();
/// assert_eq!(uvfs::fs::errno(&full), Some(uvfs::Errno::ENOSPC));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Vfs {
    ns: Arc<MountNamespace>,
}

impl Default for Vfs {
    fn default() -> Self {
        Self::new()
    }
}

impl Vfs {
    /// A namespace whose root is a tmpfs with Linux's defaults (mode 1777, half of RAM), in
    /// which `mount(2)` can create tmpfs ([`TmpfsType`]) and the types registered with
    /// [`Vfs::register_filesystem`].
    pub fn new() -> Vfs {
        Self::with_root_options(None).expect("default tmpfs options are valid")
    }

    /// A namespace whose root is a tmpfs mounted with `options` (`"size=1m,mode=755"`).
    ///
    /// # Errors
    /// `EINVAL` for bad options.
    pub fn with_root_options(options: Option<&str>) -> Result<Vfs> {
        let opts = TmpfsOptions::parse(options)?;
        let (sb, root) = Tmpfs::new_instance(&opts, 0, 0)?;
        let mnt = Mount::new(sb, root, MntFlags::RELATIME);
        let ns = MountNamespace::new(mnt);
        ns.register_filesystem(Arc::new(TmpfsType))
            .expect("a new namespace has no type registered");
        Ok(Vfs { ns })
    }

    /// A new task in this namespace at its root, with `cred` and umask 022.
    pub fn task(&self, cred: Cred) -> Task {
        Task::new(self.ns.clone(), cred)
    }

    /// The namespace.
    pub fn namespace(&self) -> &Arc<MountNamespace> {
        &self.ns
    }
}

/// Whether an empty path names the `dirfd` itself (`AT_EMPTY_PATH`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum EmptyPath {
    /// Empty path is `ENOENT`.
    Reject,
    /// Empty path names `dirfd`.
    Allow,
}

/// Checks a path argument as Linux's `getname()` does.
///
/// # Errors
/// `ENOENT` for an empty path (unless allowed), `ENAMETOOLONG` at `PATH_MAX`, `EINVAL` for an
/// interior NUL (uvfs takes byte slices; see docs/divergences.md).
pub(crate) fn check_path(path: &[u8], empty: EmptyPath) -> Result<()> {
    if path.len() >= PATH_MAX {
        return Err(Errno::ENAMETOOLONG);
    }
    if path.contains(&0) {
        return Err(Errno::EINVAL);
    }
    if path.is_empty() && empty == EmptyPath::Reject {
        return Err(Errno::ENOENT);
    }
    Ok(())
}

impl Task {
    /// Runs `f` with a walker and the position a relative `path` starts from (Linux:
    /// `path_init()`): the cwd for `AT_FDCWD`, else the directory open at `dirfd`. With
    /// `RESOLVE_BENEATH`/`RESOLVE_IN_ROOT` the start is also the walk's root.
    ///
    /// # Errors
    /// As [`check_path`]; `EBADF` for a bad `dirfd`; `ENOTDIR` if a relative path starts at a
    /// non-directory; what `f` returns.
    pub(crate) fn with_path<R>(
        &self,
        dirfd: i32,
        path: &[u8],
        empty: EmptyPath,
        resolve: ResolveFlags,
        f: impl for<'w> FnOnce(&mut Walker<'w>, Pos<'w>) -> Result<R>,
    ) -> Result<R> {
        self.with_path_at(At::Fd(dirfd), path, empty, resolve, f)
    }

    /// [`Task::with_path`] from `at`: an fd, or an open directory held without one.
    pub(crate) fn with_path_at<R>(
        &self,
        at: At<'_>,
        path: &[u8],
        empty: EmptyPath,
        resolve: ResolveFlags,
        f: impl for<'w> FnOnce(&mut Walker<'w>, Pos<'w>) -> Result<R>,
    ) -> Result<R> {
        check_path(path, empty)?;
        let absolute = path.first() == Some(&b'/');
        // Linux refuses an absolute path under `RESOLVE_BENEATH` when it jumps to the root,
        // before it looks at `dirfd`; `RESOLVE_IN_ROOT` resolves it from `dirfd` instead
        // (Linux: `path_init()` and `nd_jump_root()` in fs/namei.c).
        if absolute && resolve.contains(ResolveFlags::BENEATH) {
            return Err(Errno::EXDEV);
        }
        let guard = rcu_read();
        let mounts = crate::vfs::mount::MountSnapshot::new();
        let cred = self.cred.borrow();
        let fs = self.fs.borrow();
        let scoped = resolve.intersects(ResolveFlags::BENEATH | ResolveFlags::IN_ROOT);
        let file;
        let start = if absolute && !scoped {
            Pos::borrowed(&fs.root)
        } else {
            let dir = match at {
                At::Fd(AT_FDCWD) => None,
                At::Fd(dirfd) => {
                    file = self.files.get(dirfd)?;
                    Some(&*file)
                }
                At::File(dir) => Some(dir),
            };
            match dir {
                None => Pos::borrowed(&fs.cwd),
                Some(dir) => {
                    if !path.is_empty() && !dir.inode().is_dir() {
                        return Err(Errno::ENOTDIR);
                    }
                    Pos::borrowed(dir.path())
                }
            }
        };
        let root = if scoped {
            start.clone()
        } else {
            Pos::borrowed(&fs.root)
        };
        let mut w = Walker::new(
            &guard,
            &cred,
            &self.ns,
            &mounts,
            root,
            resolve,
            self.walk_mode.get(),
        );
        // An absolute path fetches the root before the walk starts (Linux: `path_init()`).
        w.root_set |= absolute;
        f(&mut w, start)
    }
}

/// The mode of a new non-directory `mode` (type and permission bits as the call gave them) is
/// given in `dir`: set-group-ID stripped as Linux's `mode_strip_sgid()` strips it, then the
/// umask applied, in that order (Linux: `vfs_prepare_mode()`; so `02775` with umask `077`
/// loses set-group-ID when `02700` alone would keep it).
pub(crate) fn prepare_mode(cred: &Cred, dir: &Inode, mode: u32, umask: u32) -> u32 {
    let is_dir = crate::abi::FileType::from_mode(mode) == Some(crate::abi::FileType::Directory);
    let strip = mode & (S_ISGID | S_IXGRP) == (S_ISGID | S_IXGRP)
        && !is_dir
        && dir.mode() & S_ISGID != 0
        && !cred.in_group(dir.gid())
        && !cred.capable(Capabilities::FSETID);
    let mode = if strip { mode & !S_ISGID } else { mode };
    mode & !(umask & 0o777)
}

/// What the filesystem is asked to create in `dir`: owner, group and mode decided as Linux's
/// `inode_init_owner()` does (the caller prepared the mode: [`prepare_mode`]).
pub(crate) fn new_inode<'a>(cred: &'a Cred, dir: &Inode, mode: u32, rdev: u32) -> NewInode<'a> {
    let (uid, gid, mode) = init_owner(cred, dir, mode);
    NewInode {
        mode,
        rdev,
        uid,
        gid,
        cred,
    }
}

/// Owner, group and mode of a new inode (Linux: `inode_init_owner()`): a set-group-ID
/// directory gives its group, and to a new directory its set-group-ID bit.
fn init_owner(cred: &Cred, dir: &Inode, mut mode: u32) -> (u32, u32, u32) {
    let is_dir = crate::abi::FileType::from_mode(mode) == Some(crate::abi::FileType::Directory);
    if dir.mode() & S_ISGID != 0 {
        if is_dir {
            mode |= S_ISGID;
        }
        (cred.fsuid, dir.gid(), mode)
    } else {
        (cred.fsuid, cred.fsgid, mode)
    }
}

/// Looks up `name` in `dir` while the caller holds `dir`'s inode lock exclusive; caches the
/// answer. Linux: `lookup_one_qstr_excl()`.
///
/// # Errors
/// `ENOENT` if `dir` was removed; `ENAMETOOLONG`; what the filesystem returns.
pub(crate) fn lookup_locked(dir: &Arc<Dentry>, name: &[u8]) -> Result<Arc<Dentry>> {
    match lookup_locked_for_create(dir, name)? {
        Some(d) => Ok(d),
        None => Ok(dir.d_add(name, None)),
    }
}

/// As [`lookup_locked`], for a caller about to create the name if it is missing: a name the
/// filesystem does not have is answered `None`, with no negative dentry cached (the create
/// caches the new one; a negative one would be made and retired at once).
///
/// # Errors
/// As [`lookup_locked`].
pub(crate) fn lookup_locked_for_create(
    dir: &Arc<Dentry>,
    name: &[u8],
) -> Result<Option<Arc<Dentry>>> {
    // A removed directory says ENOENT before its filesystem's lookup could find the name
    // too long (Linux: `lookup_one_qstr_excl()` tests `IS_DEADDIR` before `->lookup()`,
    // and shmem's `simple_lookup()` is where `NAME_MAX` is enforced).
    if dir.is_dead() {
        return Err(Errno::ENOENT);
    }
    if let Some(d) = dir.cached_child(name) {
        return Ok(Some(d));
    }
    if crate::vfs::namei::name_too_long(dir, name) {
        return Err(Errno::ENAMETOOLONG);
    }
    let inode = dir.inode().ok_or(Errno::ENOENT)?;
    Ok(crate::vfs::namei::fs_lookup(inode, name)?.map(|found| dir.d_add(name, Some(found))))
}
