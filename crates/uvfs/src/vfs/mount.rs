//! Mounts and the mount namespace. Linux: `struct mount`, `struct vfsmount`, fs/namespace.c.

use std::collections::HashMap;
use std::sync::atomic::{fence, AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

use arc_swap::ArcSwap;
use parking_lot::{Mutex, RwLock};

use super::dentry::Dentry;
use super::inode::InodeHold;
use super::ops::FileSystemType;
use super::super_block::SbRef;
use crate::sync::dist_counter::DistCounter;
use crate::sync::pcpu_ref::PcpuRef;
use bitflags::bitflags;

bitflags! {
    /// Per-mount flags (Linux `MNT_*`).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
    pub struct MntFlags: u32 {
        /// Writes through this mount fail with `EROFS`.
        const RDONLY = 1;
        /// Set-id bits are ignored on exec.
        const NOSUID = 2;
        /// Device files cannot be opened.
        const NODEV = 4;
        /// Nothing can be executed.
        const NOEXEC = 8;
        /// atime is never updated.
        const NOATIME = 16;
        /// Directory atime is never updated.
        const NODIRATIME = 32;
        /// atime follows relatime rules (the default).
        const RELATIME = 64;
        /// Symbolic links are not followed.
        const NOSYMFOLLOW = 128;
    }
}

static NEXT_MNT_ID: AtomicU64 = AtomicU64::new(1);

/// A mount: a filesystem subtree attached at a point of the namespace.
///
/// A mount holds the inode of its root for as long as it exists (until its last reference,
/// from the tree, an open file, a cwd or a root, is gone), and the inode of its mountpoint
/// while it is attached there: a bind mount of a file or directory keeps the source's inode
/// after its last link goes (Linux: `mnt_root` and `mnt_mountpoint` are counted dentry
/// references, dropped by `cleanup_mnt()` and `umount_mnt()`).
///
/// Aligned to a cache-line pair, which keeps the fields every open reads (flags, superblock)
/// off the line of the `Arc`'s counts in front of them, which every open writes.
#[repr(align(128))]
pub struct Mount {
    id: u64,
    sb: SbRef,
    root: Arc<Dentry>,
    _root_hold: InodeHold,
    flags: AtomicU32,
    /// Open files that may write through this mount (Linux: the per-CPU `mnt_writers`):
    /// spread over cache lines, so opens and closes for writing of different files on
    /// different threads write different lines.
    writers: DistCounter,
    /// Set while a remount read-only decides (Linux: `MNT_WRITE_HOLD`): a new writer waits
    /// until it is cleared, then looks at the flags again.
    write_hold: AtomicBool,
    /// Still part of its namespace's tree (Linux: `check_mnt()`); cleared by a detach.
    attached: AtomicBool,
    /// Marked by a first `umount2(MNT_EXPIRE)`.
    expiry_mark: AtomicBool,
    /// The events this mount's fsnotify marks ask for (Linux: `mnt_fsnotify_mask`); written
    /// only when they change. Shared with the marks, which do not hold the mount (a marked
    /// mount can be unmounted: its marks go with it).
    notify_mask: Arc<AtomicU32>,
    /// Protects: where this mount is attached (parent mount and mountpoint dentry).
    /// Order: innermost.
    parent: Mutex<Option<Attachment>>,
}

impl Drop for Mount {
    /// The filesystem's last mount lets its superblock go: from now on the superblock is
    /// freed by its last reference (an inode's).
    fn drop(&mut self) {
        // Marks on this mount go before its address can be another's.
        super::notify::mount_detached(self);
        if self.sb.mount_gone() {
            super::notify::unmounted(&self.sb);
            self.sb.kill();
        }
    }
}

/// A counted reference to a mount: spread over per-thread slots while the mount is in its
/// namespace's tree, so opens and closes on different threads write different lines (Linux:
/// the per-CPU `mnt_count`); counted centrally once the tree let it go (`Mount::set_detached`
/// or the namespace's end kill it), and freed by its last reference.
pub type MountRef = PcpuRef<Mount>;

/// Where a mount is attached, with the hold on the mountpoint's inode.
struct Attachment {
    mnt: MountRef,
    point: Arc<Dentry>,
    _hold: InodeHold,
}

impl Attachment {
    /// The attachment at `point`, with its hold on the mountpoint's inode (taken before the
    /// namespace's lock: docs/locking.md, "Inode holds").
    fn at(point: &VfsPath) -> Attachment {
        Attachment {
            mnt: point.mnt.clone(),
            point: point.dentry.clone(),
            _hold: InodeHold::of(&point.dentry),
        }
    }
}

impl Mount {
    /// A detached mount of `root` in `sb`. Its count is spread until killed: attach it
    /// (`MountNamespace::attach`; the tree kills it when it lets it go) or kill it
    /// (`MountRef::kill`), or it is never freed.
    pub fn new(sb: SbRef, root: Arc<Dentry>, flags: MntFlags) -> MountRef {
        let root_hold = InodeHold::of(&root);
        sb.mount_added();
        PcpuRef::new(Mount {
            id: NEXT_MNT_ID.fetch_add(1, Ordering::Relaxed),
            sb,
            root,
            _root_hold: root_hold,
            flags: AtomicU32::new(flags.bits()),
            writers: DistCounter::new(),
            write_hold: AtomicBool::new(false),
            attached: AtomicBool::new(true),
            expiry_mark: AtomicBool::new(false),
            notify_mask: Arc::new(AtomicU32::new(0)),
            parent: Mutex::new(None),
        })
    }
    /// The mount ID (statx's `stx_mnt_id`), never given to another mount of the process.
    /// Linux reuses a freed ID for its 32-bit IDs (`mnt_alloc_id()`: the lowest free one) and
    /// has a second, 64-bit ID that is never reused (`STATX_MNT_ID_UNIQUE`); uvfs's one ID
    /// is both (docs/divergences.md).
    #[inline]
    pub fn id(&self) -> u64 {
        self.id
    }
    /// The filesystem.
    #[inline]
    pub fn sb(&self) -> &SbRef {
        &self.sb
    }
    /// The root of the mounted subtree.
    #[inline]
    pub fn root(&self) -> &Arc<Dentry> {
        &self.root
    }
    /// Current flags.
    #[inline]
    pub fn flags(&self) -> MntFlags {
        MntFlags::from_bits_retain(self.flags.load(Ordering::Relaxed))
    }
    /// Replaces the flags (remount).
    pub fn set_flags(&self, f: MntFlags) {
        self.flags.store(f.bits(), Ordering::Relaxed);
    }
    /// True if writes through this mount are refused (mount or superblock read-only).
    #[inline]
    pub fn is_rdonly(&self) -> bool {
        self.flags().contains(MntFlags::RDONLY) || self.sb.is_rdonly()
    }
    /// Counts an open file that may write through this mount and its filesystem, unless
    /// either is read-only once counted (Linux: `mnt_get_write_access()`): the count comes
    /// first, then a full fence, then the look at the flags, and a remount read-only does the
    /// reverse ([`Mount::make_readonly`], `SuperBlock::make_readonly`), so one of the two
    /// always sees the other.
    ///
    /// # Errors
    /// `EROFS`.
    pub(crate) fn get_write(&self) -> crate::abi::Result<()> {
        self.writers.add(1);
        self.sb.get_write();
        fence(Ordering::SeqCst);
        while self.write_hold.load(Ordering::Acquire) || self.sb.write_held() {
            std::hint::spin_loop();
        }
        if self.is_rdonly() {
            self.put_write();
            return Err(crate::abi::Errno::EROFS);
        }
        Ok(())
    }

    /// Makes the mount read-only unless a file may write through it (Linux:
    /// `mnt_make_readonly()`); true if it did. Writers arriving meanwhile wait.
    pub(crate) fn make_readonly(&self, flags: MntFlags) -> bool {
        self.write_hold.store(true, Ordering::Relaxed);
        fence(Ordering::SeqCst);
        let busy = self.writers() > 0;
        if !busy {
            self.set_flags(flags);
        }
        self.write_hold.store(false, Ordering::Release);
        !busy
    }

    /// Uncounts an open file that may write.
    pub(crate) fn put_write(&self) {
        self.writers.add(-1);
        self.sb.put_write();
    }

    /// Marks the mount used: clears the `MNT_EXPIRE` mark, writing only when it is set, so
    /// that a use costs a load of a line every walk into the mount reads anyway (Linux:
    /// `mntput()`, "avoid cacheline pingpong").
    #[inline]
    pub(crate) fn touch(&self) {
        if self.expiry_mark.load(Ordering::Relaxed) {
            self.expiry_mark.store(false, Ordering::Relaxed);
        }
    }

    /// Sets the `MNT_EXPIRE` mark; returns whether it was already set (Linux:
    /// `mnt_expiry_mark`).
    pub(crate) fn set_expiry_mark(&self) -> bool {
        self.expiry_mark.swap(true, Ordering::Relaxed)
    }

    /// True while the mount is part of its namespace's tree.
    pub fn is_attached(&self) -> bool {
        self.attached.load(Ordering::Relaxed)
    }

    /// Takes the mount out of its namespace's tree (a lazy unmount); its fsnotify marks go.
    pub(crate) fn set_detached(&self) {
        self.attached.store(false, Ordering::Relaxed);
        super::notify::mount_detached(self);
    }

    /// The events this mount's fsnotify marks ask for: one relaxed load.
    #[inline]
    pub(crate) fn notify_mask(&self) -> u32 {
        self.notify_mask.load(Ordering::Relaxed)
    }

    /// The cell of the mount's marks' mask, which its marks set (under
    /// `notify::mark::MARK_LOCK`).
    pub(crate) fn notify_mask_cell(&self) -> &Arc<AtomicU32> {
        &self.notify_mask
    }

    /// Files open for writing through this mount (exact when no file is being opened or
    /// closed for writing meanwhile; see `DistCounter`).
    pub fn writers(&self) -> u64 {
        self.writers.sum().max(0) as u64
    }

    /// Parent mount and mountpoint, or `None` for a namespace root or a detached mount.
    pub fn parent(&self) -> Option<(MountRef, Arc<Dentry>)> {
        self.parent
            .lock()
            .as_ref()
            .map(|a| (a.mnt.clone(), a.point.clone()))
    }
}

impl std::fmt::Debug for Mount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mount")
            .field("id", &self.id)
            .field("flags", &self.flags())
            .finish()
    }
}

/// A location in the namespace: a mount and a dentry in it. Linux: `struct path`.
#[doc(alias = "path")]
#[derive(Clone, Debug)]
pub struct VfsPath {
    /// The mount.
    pub mnt: MountRef,
    /// The dentry.
    pub dentry: Arc<Dentry>,
}

impl VfsPath {
    /// True if both name the same location.
    pub fn same(&self, other: &VfsPath) -> bool {
        MountRef::ptr_eq(&self.mnt, &other.mnt) && Arc::ptr_eq(&self.dentry, &other.dentry)
    }
}

type PointKey = (u64, usize);

/// The mount table as one walk first saw it, loaded at its first mount crossing and kept to
/// its end, so that the mounts it crosses can be borrowed rather than counted
/// ([`MountNamespace::lookup_mount_in`]).
pub(crate) type MountSnapshot = once_cell::unsync::OnceCell<arc_swap::Guard<Arc<MountTable>>>;

/// A mount crossed by a walk: borrowed from its snapshot, or counted.
pub(crate) enum Crossed<'s> {
    Borrowed(&'s MountRef),
    Owned(MountRef),
}

/// The mount table, replaced as a whole on every change (readers load it without a lock).
#[derive(Clone, Default)]
pub(crate) struct MountTable {
    by_point: HashMap<PointKey, MountRef, crate::sync::addr_hash::AddrBuild>,
    children: HashMap<u64, Vec<MountRef>, crate::sync::addr_hash::AddrBuild>,
}

fn key(mnt: &Mount, d: &Dentry) -> PointKey {
    (mnt.id, d as *const Dentry as usize)
}

/// A mount namespace: a root mount and the tree attached below it, and the filesystem types
/// `mount(2)` can create in it.
pub struct MountNamespace {
    root: MountRef,
    table: ArcSwap<MountTable>,
    /// Serialises changes of the mount tree (Linux: `namespace_sem`).
    /// Order: after a mountpoint's inode lock (docs/locking.md), before `Mount::parent`.
    pub(crate) lock: Mutex<()>,
    /// Protects: the registered filesystem types, by name (Linux: `file_systems_lock`).
    /// Order: innermost; a mount clones the type out and calls it after.
    filesystems: RwLock<HashMap<Box<str>, Arc<dyn FileSystemType>>>,
    /// inotify's limits and per-user counts for the tasks of this namespace.
    pub(crate) inotify_users: Arc<crate::fs::inotify::InotifyUsers>,
    /// fanotify's limits and per-user counts for the tasks of this namespace.
    pub(crate) fanotify_users: Arc<crate::fs::fanotify::FanotifyUsers>,
}

impl MountNamespace {
    /// A namespace whose root is `root`, with no filesystem type registered: `mount(2)` of
    /// a new filesystem, tmpfs included, is `ENODEV` until one is
    /// ([`MountNamespace::register_filesystem`]; [`Vfs`](crate::Vfs) registers tmpfs).
    pub fn new(root: MountRef) -> Arc<MountNamespace> {
        Arc::new(MountNamespace {
            root,
            table: ArcSwap::from_pointee(MountTable::default()),
            lock: Mutex::new(()),
            filesystems: RwLock::new(HashMap::new()),
            inotify_users: Arc::default(),
            fanotify_users: Arc::default(),
        })
    }

    /// Makes `fs` mountable by its name, [`FileSystemType::name`] (Linux:
    /// `register_filesystem()`). Mounts already made are not affected.
    ///
    /// # Errors
    /// `EBUSY` if a type of that name is registered (in a [`Vfs`](crate::Vfs)'s namespace,
    /// `"tmpfs"` is); `EINVAL` for an empty name or one with a `/` or a NUL.
    pub fn register_filesystem(&self, fs: Arc<dyn FileSystemType>) -> crate::abi::Result<()> {
        let name = fs.name();
        if name.is_empty() || name.contains(['/', '\0']) {
            return Err(crate::abi::Errno::EINVAL);
        }
        let mut types = self.filesystems.write();
        if types.contains_key(name) {
            return Err(crate::abi::Errno::EBUSY);
        }
        types.insert(name.into(), fs);
        Ok(())
    }

    /// Makes the type `name` unmountable again (Linux: `unregister_filesystem()`). Mounts of
    /// it stay, and keep working, until unmounted.
    ///
    /// # Errors
    /// `EINVAL` if no type of that name is registered.
    pub fn unregister_filesystem(&self, name: &str) -> crate::abi::Result<()> {
        // The type is dropped after the lock.
        let gone = self.filesystems.write().remove(name);
        gone.map(drop).ok_or(crate::abi::Errno::EINVAL)
    }

    /// The registered type of that name (Linux: `get_fs_type()`).
    pub fn filesystem(&self, name: &str) -> Option<Arc<dyn FileSystemType>> {
        self.filesystems.read().get(name).cloned()
    }

    /// The root mount.
    pub fn root(&self) -> &MountRef {
        &self.root
    }

    /// The mount attached at `dentry` of `mnt`, if any. Called only for dentries whose
    /// mountpoint count is non-zero.
    pub fn lookup_mount(&self, mnt: &Mount, dentry: &Dentry) -> Option<MountRef> {
        self.table.load().by_point.get(&key(mnt, dentry)).cloned()
    }

    /// [`MountNamespace::lookup_mount`] for a walk: the mount borrowed from the table the walk
    /// loaded into `snap` (at its first crossing) while the namespace still has that table,
    /// so that a crossing writes no reference count, not even the mount's per-thread one, and
    /// nothing the threads crossing the same mount share (Linux: `__lookup_mnt()` under RCU
    /// in `__follow_mount_rcu()`, checked against `mount_lock`); a counted reference when the
    /// table changed since (a mount or unmount ran during the walk).
    #[inline]
    pub(crate) fn lookup_mount_in<'s>(
        &self,
        snap: &'s MountSnapshot,
        mnt: &Mount,
        dentry: &Dentry,
    ) -> Option<Crossed<'s>> {
        let t = match snap.get() {
            // A later crossing: borrow only while the table is still the one loaded.
            Some(t) => {
                let now = self.table.load();
                if !Arc::ptr_eq(t, &now) {
                    return now
                        .by_point
                        .get(&key(mnt, dentry))
                        .cloned()
                        .map(Crossed::Owned);
                }
                t
            }
            // The first: the table just loaded is the current one.
            None => snap.get_or_init(|| self.table.load()),
        };
        t.by_point.get(&key(mnt, dentry)).map(Crossed::Borrowed)
    }

    /// Mounts attached directly below `mnt`.
    pub fn children(&self, mnt: &Mount) -> Vec<MountRef> {
        self.table
            .load()
            .children
            .get(&mnt.id)
            .cloned()
            .unwrap_or_default()
    }

    /// Attaches `child` at `point`: a mount being built (its submounts' copies), or a test's.
    ///
    /// # Locking
    /// Takes `lock`.
    pub(crate) fn attach(&self, child: &MountRef, point: &VfsPath) {
        let at = Attachment::at(point);
        let g = self.lock.lock();
        self.attach_locked(child, point, at);
        drop(g);
    }

    /// Attaches `child` at `point` in the tree, first detaching it from where it is if
    /// `moving`: all under `lock`, after checking there that `point`'s mount and every mount
    /// above it are still in the tree, and after the caller's `check` (which sees the tree as
    /// the graft will), so that nothing is grafted onto a mount an unmount has just taken out
    /// and no two moves cross into a cycle (Linux: `do_lock_mount()` checks `is_mounted()`,
    /// and `do_move_mount()` its loop check, under `namespace_sem`, held to the graft). A new
    /// mount (not `moving`) that is not grafted is discarded: killed, with the copies
    /// attached below it (`MS_REC`) taken apart, so that it is freed.
    ///
    /// # Errors
    /// `ENOENT` if `point`'s mount left the tree; what `check` says; a move's detach errors.
    ///
    /// # Locking
    /// Takes `lock`.
    pub(crate) fn graft(
        &self,
        child: &MountRef,
        point: &VfsPath,
        moving: bool,
        check: impl FnOnce() -> crate::abi::Result<()>,
    ) -> crate::abi::Result<()> {
        let at = Attachment::at(point);
        let g = self.lock.lock();
        let checked = if self.in_tree(&point.mnt) {
            check()
        } else {
            Err(crate::abi::Errno::ENOENT)
        };
        let gone = match checked {
            Ok(()) if moving => self.detach_locked(child, Detach::Move, 0).map(Some),
            Ok(()) => Ok(None),
            Err(e) => Err(e),
        };
        let gone = match gone {
            Ok(gone) => {
                self.attach_locked(child, point, at);
                gone
            }
            Err(e) => {
                let discarded = (!moving).then(|| self.discard_locked(child));
                drop(g);
                drop(at);
                drop(discarded);
                return Err(e);
            }
        };
        drop(g);
        drop(gone);
        Ok(())
    }

    /// Takes apart a mount that was never attached, with the copies attached below it, and
    /// kills them all. Returns what is dropped after `lock`.
    fn discard_locked(&self, child: &MountRef) -> Detached {
        let mut t = MountTable::clone(&self.table.load());
        let (mut released, mut disconnected) = (Vec::new(), Vec::new());
        Self::take_out_below(&mut t, child, &mut released, &mut disconnected);
        child.set_detached();
        child.kill();
        self.table.store(Arc::new(t));
        for at in released.iter().flatten() {
            at.point.remove_mount();
        }
        Detached {
            _released: released,
            _disconnected: disconnected,
        }
    }

    /// Takes every mount below `top` out of `t`, detached, disconnected and killed (a lazy
    /// unmount's tree, a discarded copy's).
    fn take_out_below(
        t: &mut MountTable,
        top: &MountRef,
        released: &mut Vec<Option<Attachment>>,
        disconnected: &mut Vec<MountRef>,
    ) {
        let mut todo = vec![top.clone()];
        while let Some(m) = todo.pop() {
            for c in t.children.remove(&m.id).unwrap_or_default() {
                let at = c.parent.lock().take();
                if let Some(at) = &at {
                    t.by_point.remove(&key(&m, &at.point));
                }
                c.set_detached();
                c.kill();
                released.push(at);
                todo.push(c.clone());
                disconnected.push(c);
            }
        }
    }

    /// The mount of this namespace's tree whose id is `id` (Linux: `lookup_mnt_in_ns()`):
    /// a walk of the tree from the root, without a lock (the table is loaded once). A
    /// detached mount, the root included after a lazy unmount, is not in the tree.
    pub(crate) fn find_mount(&self, id: u64) -> Option<MountRef> {
        let t = self.table.load();
        let mut todo = vec![self.root.clone()];
        while let Some(m) = todo.pop() {
            if !m.is_attached() {
                continue;
            }
            if m.id == id {
                return Some(m);
            }
            todo.extend(t.children.get(&m.id).into_iter().flatten().cloned());
        }
        None
    }

    /// Whether `m` and every mount above it are attached, up to this namespace's root.
    pub(crate) fn in_tree(&self, m: &MountRef) -> bool {
        let mut cur = m.clone();
        loop {
            if !cur.is_attached() {
                return false;
            }
            match cur.parent() {
                Some((p, _)) => cur = p,
                None => return MountRef::ptr_eq(&cur, &self.root),
            }
        }
    }

    fn attach_locked(&self, child: &MountRef, point: &VfsPath, at: Attachment) {
        let mut t = MountTable::clone(&self.table.load());
        t.by_point
            .insert(key(&point.mnt, &point.dentry), child.clone());
        t.children
            .entry(point.mnt.id)
            .or_default()
            .push(child.clone());
        let old = child.parent.lock().replace(at);
        child.attached.store(true, Ordering::Relaxed);
        point.dentry.add_mount();
        self.table.store(Arc::new(t));
        // `old` (none: a mount is attached once, or detached first) is dropped after `lock`.
        debug_assert!(old.is_none(), "a mount attached twice");
        drop(old);
    }

    /// Detaches `child` from its parent (`how`: an unmount, lazy or not, or the first half of
    /// a move). A plain unmount refuses with `EBUSY` when something below is mounted or
    /// something outside the table holds the mount. A lazy unmount also takes the namespace's
    /// root out of the tree, and disconnects every mount of the detached tree from its parent,
    /// so that a task whose root or cwd is inside sees the directories below them (Linux:
    /// `umount_tree()` and `disconnect_mount()` in fs/namespace.c); a move keeps the subtree
    /// attached to the moved mount.
    ///
    /// # Errors
    /// `EINVAL` if `child` is not attached (or, but for a lazy unmount, is the namespace's
    /// root); `EBUSY` as above.
    pub(crate) fn detach(
        &self,
        child: &MountRef,
        how: Detach,
        caller_refs: usize,
    ) -> crate::abi::Result<()> {
        let g = self.lock.lock();
        let gone = self.detach_locked(child, how, caller_refs)?;
        drop(g);
        drop(gone);
        Ok(())
    }

    /// [`MountNamespace::detach`] with `lock` held. Returns what it took apart: the
    /// attachments, whose inodes are given back, and the mounts disconnected, to be dropped
    /// after `lock`.
    fn detach_locked(
        &self,
        child: &MountRef,
        how: Detach,
        caller_refs: usize,
    ) -> crate::abi::Result<Detached> {
        let parent = child.parent();
        let lazy_root = how == Detach::Lazy && MountRef::ptr_eq(child, &self.root);
        if parent.is_none() && !(lazy_root && child.is_attached()) {
            return Err(crate::abi::Errno::EINVAL);
        }
        let cur = self.table.load();
        let has_children = cur.children.get(&child.id).is_some_and(|v| !v.is_empty());
        if how == Detach::Busy {
            // References: the table's two entries, the caller's own, and the parent slot held
            // by nothing else. Anything more is an open file, a cwd or a root.
            if has_children || child.count() > 2 + caller_refs as i64 {
                return Err(crate::abi::Errno::EBUSY);
            }
        }
        let mut t = MountTable::clone(&cur);
        drop(cur);
        // The attachments taken apart and the mounts disconnected: their inodes are given
        // back, and the mounts freed, after the tree lock.
        let mut released = Vec::new();
        let mut disconnected = Vec::new();
        if let Some((pm, pd)) = parent {
            t.by_point.remove(&key(&pm, &pd));
            if let Some(v) = t.children.get_mut(&pm.id) {
                v.retain(|m| !MountRef::ptr_eq(m, child));
            }
            released.push(child.parent.lock().take());
        }
        child.set_detached();
        // The tree lets go of the mount (a move attaches it again at once): from now on it
        // is counted centrally and freed by its last reference.
        if how != Detach::Move {
            child.kill();
        }
        if how == Detach::Lazy {
            Self::take_out_below(&mut t, child, &mut released, &mut disconnected);
        }
        self.table.store(Arc::new(t));
        for at in released.iter().flatten() {
            at.point.remove_mount();
        }
        Ok(Detached {
            _released: released,
            _disconnected: disconnected,
        })
    }
}

/// What a detach took apart, dropped after the namespace's lock: attachments (each holds its
/// mountpoint's inode) and disconnected mounts.
pub(crate) struct Detached {
    _released: Vec<Option<Attachment>>,
    _disconnected: Vec<MountRef>,
}

impl Drop for MountNamespace {
    /// The tree's mounts are let go: each is freed by its last reference (an open file, a
    /// cwd or a root may outlive the namespace).
    fn drop(&mut self) {
        super::notify::mount_detached(&self.root);
        self.root.kill();
        for m in self.table.load().by_point.values() {
            super::notify::mount_detached(m);
            m.kill();
        }
    }
}

/// Why `detach` takes a mount out of its place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Detach {
    /// `umount2` without `MNT_DETACH`: `EBUSY` if in use.
    Busy,
    /// `MNT_DETACH`: detach now, with every mount of the tree disconnected; each is freed
    /// when unused.
    Lazy,
    /// `MS_MOVE`: detached to be attached elsewhere, with its subtree.
    Move,
}

#[cfg(all(test, not(any(loom, feature = "shuttle"))))]
mod tests {
    use super::*;
    use crate::fs::tmpfs::{Tmpfs, TmpfsOptions};
    use crate::vfs::super_block::SuperBlock;

    /// A namespace with a root mount and one mount on it; `hold` keeps a reference to the
    /// child past the namespace. Returns the superblocks' counts' drops: at the namespace's
    /// end, and after the held reference goes.
    fn drops_at_namespace_end(hold: bool) -> ((i64, i64), (i64, i64)) {
        let (sb, root) = Tmpfs::new_instance(&TmpfsOptions::default(), 0, 0).expect("tmpfs");
        let (sb2, root2) = Tmpfs::new_instance(&TmpfsOptions::default(), 0, 0).expect("tmpfs");
        let ns = MountNamespace::new(Mount::new(sb.clone(), root.clone(), MntFlags::empty()));
        let child = Mount::new(sb2.clone(), root2.clone(), MntFlags::empty());
        let point = VfsPath {
            mnt: ns.root().clone(),
            dentry: root.clone(),
        };
        ns.attach(&child, &point);
        drop(point);
        let held = hold.then(|| child.clone());
        drop(child);
        let counts = || (sb.count(), sb2.count());
        let before = counts();
        drop(ns);
        let at_end = counts();
        drop(held);
        let after = counts();
        (
            (before.0 - at_end.0, before.1 - at_end.1),
            (at_end.0 - after.0, at_end.1 - after.1),
        )
    }

    /// The namespace's end lets its mounts go: mounts nobody else holds are freed with it
    /// (each gives back its `SbRef`); a mount an open file, cwd or root holds lives
    /// until that goes, and keeps the mount it is attached to (Linux: `mnt_parent`).
    #[test]
    fn a_namespace_frees_its_mounts_when_it_goes() {
        assert_eq!(drops_at_namespace_end(false), ((1, 1), (0, 0)));
        assert_eq!(drops_at_namespace_end(true), ((0, 0), (1, 1)));
    }

    /// A filesystem that records its superblock's end.
    struct DropFs(Arc<std::sync::atomic::AtomicBool>);

    impl crate::vfs::ops::SuperOps for DropFs {
        fn fs_name(&self) -> &'static str {
            "dropfs"
        }
        fn statfs(&self, _sb: &SuperBlock) -> crate::abi::Result<crate::abi::StatFs> {
            Err(crate::abi::Errno::EOPNOTSUPP)
        }
        fn as_any(&self) -> &dyn std::any::Any {
            self
        }
    }

    impl Drop for DropFs {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }

    struct NoOps;

    impl crate::vfs::ops::InodeOps for NoOps {
        fn as_any(&self) -> &dyn std::any::Any {
            self
        }
        fn open(
            &self,
            _inode: &Arc<crate::vfs::inode::Inode>,
            _flags: crate::abi::OpenFlags,
        ) -> crate::abi::Result<Box<dyn crate::vfs::ops::FileOps>> {
            Err(crate::abi::Errno::ENXIO)
        }
    }

    /// A superblock is freed once its last mount and its last inode are gone, and not
    /// before: its spread count is ended by the last mount (`SuperBlock::mounts`).
    #[test]
    fn a_superblock_goes_with_its_last_mount_and_inode() {
        let gone = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let sb = SuperBlock::new(Box::new(DropFs(gone.clone())));
        let init = crate::vfs::inode::InodeInit {
            ino: sb.alloc_ino(),
            file_type: crate::abi::FileType::Directory,
            perm: 0o755,
            uid: 0,
            gid: 0,
            rdev: 0,
            nlink: 2,
        };
        let root = Dentry::new_root(crate::vfs::inode::Inode::new(&sb, init, Box::new(NoOps)));
        let a = Mount::new(sb.clone(), root.clone(), MntFlags::empty());
        let b = Mount::new(sb.clone(), root.clone(), MntFlags::empty());
        drop(sb);
        // Never attached: no tree kills them, so the test does, as a tree would.
        a.kill();
        b.kill();
        drop(a);
        assert!(!gone.load(Ordering::SeqCst), "freed with a mount left");
        drop(b);
        assert!(
            !gone.load(Ordering::SeqCst),
            "freed with its root inode left"
        );
        drop(root);
        assert!(
            gone.load(Ordering::SeqCst),
            "not freed after its last mount and inode"
        );
    }
}
