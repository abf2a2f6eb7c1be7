//! The in-memory inode: identity, attributes and the filesystem's private operations.
//! Linux: `struct inode` in include/linux/fs.h.

use std::sync::Arc;

use parking_lot::{Mutex, RwLock};

use super::ops::InodeOps;
use super::super_block::SbRef;
use super::time::{coarse_now, fine_now};
use crate::abi::{FileType, Timespec, S_IALLUGO};
use crate::sync::atomic::{AtomicI64, AtomicU16, AtomicU32, AtomicU64, Ordering};
use crate::sync::SeqCount;

/// Inode flag: `stat` read the ctime since the last change, so the next change takes a
/// fine-grained timestamp (Linux: `I_CTIME_QUERIED`).
const CTIME_QUERIED: u32 = 1;
/// Inode flag: an `O_TMPFILE` inode that `linkat` may name (Linux: `I_LINKABLE`).
const LINKABLE: u32 = 2;
/// Inode flag: the inode has a lock context in the side table of `vfs::locks` (Linux: a
/// non-null `i_flctx`). Set once, under that table's lock, before the first lock is taken.
const HAS_LOCK_CONTEXT: u32 = 4;
/// Inode flag: the inode has fsnotify marks in the side table of `vfs::notify::mark`. Changed
/// under `MARK_LOCK`.
const HAS_MARKS: u32 = 8;
/// Inode flag: `IN_DELETE_SELF` was sent (once per inode).
const REMOVED_NOTIFIED: u32 = 16;
/// Inode flag: the inode's cached dentries are checked at every step of the walk (Linux:
/// `DCACHE_OP_REVALIDATE`, set on dentries whose filesystem has `d_revalidate`): kernfs sets
/// it on its inodes, whose names its owner removes behind the VFS. Set once, never cleared.
const REVALIDATE: u32 = 32;
/// Inode flag: the filesystem removed the inode's name behind the VFS (kernfs), so a cached
/// dentry of it is stale (Linux: `kernfs_dop_revalidate()` failing for an inactive node).
/// Set once, with `REVALIDATE`, never cleared.
const STALE: u32 = 64;

/// The three changeable timestamps, seconds then nanoseconds (36 bytes where three
/// second/nanosecond pairs of words take 48), with btime's nanoseconds in the last 4 bytes;
/// consistent only under the inode's `attr_seq`. Indexed by `ATIME`, `MTIME`, `CTIME`.
#[derive(Debug)]
struct Times {
    sec: [AtomicI64; 3],
    nsec: [AtomicU32; 3],
    /// Never changes.
    btime_nsec: u32,
}

const ATIME: usize = 0;
const MTIME: usize = 1;
const CTIME: usize = 2;

impl Times {
    fn new(t: Timespec) -> Self {
        let nsec = t.nsec as u32;
        Times {
            sec: [(); 3].map(|()| AtomicI64::new(t.sec)),
            nsec: [(); 3].map(|()| AtomicU32::new(nsec)),
            btime_nsec: nsec,
        }
    }
    #[inline]
    fn load(&self, which: usize) -> Timespec {
        Timespec::new(
            self.sec[which].load(Ordering::Relaxed),
            i64::from(self.nsec[which].load(Ordering::Relaxed)),
        )
    }
    /// `t.nsec` is in `0..1_000_000_000` (a `Timespec` invariant).
    #[inline]
    fn store(&self, which: usize, t: Timespec) {
        debug_assert!((0..1_000_000_000).contains(&t.nsec), "{t:?}");
        self.sec[which].store(t.sec, Ordering::Relaxed);
        self.nsec[which].store(t.nsec as u32, Ordering::Relaxed);
    }
}

/// The top bit of [`Inode::fs_holds`]: the filesystem closed the count (tmpfs: an unlinked
/// inode released with no holder left; an open that finds it set lost the race with that last
/// unlink and says `ESTALE`, and the VFS looks the name up again).
pub const FS_HOLDS_CLOSED: u32 = 1 << 31;

/// A consistent snapshot of an inode's changeable attributes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Attrs {
    /// Type and permission bits.
    pub mode: u32,
    /// Owner.
    pub uid: u32,
    /// Group.
    pub gid: u32,
    /// Hard links.
    pub nlink: u32,
    /// Size in bytes.
    pub size: u64,
    /// 512-byte units allocated.
    pub blocks: u64,
    /// Last access.
    pub atime: Timespec,
    /// Last modification.
    pub mtime: Timespec,
    /// Last status change.
    pub ctime: Timespec,
}

/// What a new inode starts with.
#[derive(Clone, Copy, Debug)]
pub struct InodeInit {
    /// Inode number.
    pub ino: u64,
    /// File type.
    pub file_type: FileType,
    /// Permission bits (`S_IALLUGO`).
    pub perm: u32,
    /// Owner.
    pub uid: u32,
    /// Group.
    pub gid: u32,
    /// Device number for device files (see [`super::ops::NewInode::rdev`]).
    pub rdev: u32,
    /// Initial link count.
    pub nlink: u32,
}

/// An inode.
///
/// Attribute fields are atomics grouped under `attr_seq`: readers (stat, permission checks)
/// never lock; writers hold `attr_lock`.
///
/// Laid out in declaration order (`repr(C)`), hottest first: with its 16-byte `Arc` header an
/// inode fills one 160-byte allocator block, and every other block starts 32 bytes into a
/// cache line whose first half is the previous block's last 32 bytes. Those last bytes hold
/// fields that no open, close, read, write or permission check touches (`ino`, `rdev`, btime,
/// `blocks`), so the reference count and `fs_holds` that a thread writes on every open and
/// close of its file never share a line with what another thread reads or writes for its own
/// file, however the allocator placed the two inodes (docs/locking.md, "Shared written
/// locations on the hot paths").
#[repr(C)]
pub struct Inode {
    /// Guards the attribute group below for lock-free readers.
    /// Writers hold `attr_lock`.
    attr_seq: SeqCount,
    perm: AtomicU32,
    uid: AtomicU32,
    gid: AtomicU32,
    sb: SbRef,
    ops: Box<dyn InodeOps>,
    file_type: FileType,
    /// Serialises attribute writers (the write side of `attr_seq`).
    /// Order: innermost; nothing is taken while holding it.
    attr_lock: Mutex<()>,
    /// Open files that may write the inode (Linux: `i_writecount`), in what was padding
    /// beside `fs_holds`, on the line the same opens and closes write. Wraps past 65535 (only
    /// fanotify's "open for write" test reads it).
    writers: AtomicU16,
    /// The filesystem's count of its holders (tmpfs: open files and [`InodeOps::hold`]s;
    /// Linux: `i_count`), kept here, beside the reference count that the same opens and
    /// closes write, rather than in the filesystem's own part, which is a separate allocation
    /// that shares cache lines with other inodes' parts.
    fs_holds: AtomicU32,
    size: AtomicU64,
    flags: AtomicU32,
    nlink: AtomicU32,
    times: Times,
    /// The inode lock (Linux `i_rwsem`). Directories: exclusive for namespace changes in this
    /// directory, shared for lookups that fill the dcache. All inodes: exclusive for `setattr`.
    /// Order: see docs/locking.md (parent before child; `SuperBlock::rename_lock` before any).
    pub(crate) lock: RwLock<()>,
    // The cold tail: the last 32 bytes of the allocation (see above).
    ino: u64,
    /// btime's seconds (its nanoseconds are in `times`).
    btime_sec: i64,
    blocks: AtomicU64,
    rdev: u32,
    /// The events the inode's fsnotify marks ask for, or-ed (Linux: `i_fsnotify_mask`), in
    /// what was the allocation's padding: read by the notification hooks only once the
    /// superblock has a watched inode, written only when marks change.
    notify_mask: AtomicU32,
}

// With its `Arc` header an inode fills one 160-byte allocator class (issue 7, compact
// objects); a field added here should be weighed against that. (Model-checking builds use
// larger atomics.)
#[cfg(not(any(loom, feature = "shuttle")))]
const _: () = assert!(std::mem::size_of::<Inode>() <= 144);
// The cold tail is the last 32 bytes.
#[cfg(not(any(loom, feature = "shuttle")))]
const _: () = assert!(std::mem::offset_of!(Inode, ino) == 144 - 32);

impl Drop for Inode {
    fn drop(&mut self) {
        let this: &Inode = self;
        if this.has_lock_context() {
            super::locks::forget_context(this);
        }
        this.ops.evict(this);
    }
}

impl Inode {
    /// Creates an inode of `sb` with the given identity and the filesystem's operations; all
    /// four timestamps are "now".
    pub fn new(sb: &SbRef, init: InodeInit, ops: Box<dyn InodeOps>) -> Arc<Inode> {
        let now = coarse_now();
        Arc::new(Inode {
            ino: init.ino,
            file_type: init.file_type,
            rdev: init.rdev,
            btime_sec: now.sec,
            sb: sb.clone(),
            attr_seq: SeqCount::new(0),
            attr_lock: Mutex::new(()),
            perm: AtomicU32::new(init.perm & S_IALLUGO),
            uid: AtomicU32::new(init.uid),
            gid: AtomicU32::new(init.gid),
            nlink: AtomicU32::new(init.nlink),
            size: AtomicU64::new(0),
            blocks: AtomicU64::new(0),
            times: Times::new(now),
            flags: AtomicU32::new(0),
            lock: RwLock::new(()),
            ops,
            fs_holds: AtomicU32::new(0),
            writers: AtomicU16::new(0),
            notify_mask: AtomicU32::new(0),
        })
    }

    /// Inode number.
    #[inline]
    pub fn ino(&self) -> u64 {
        self.ino
    }
    /// File type (never changes).
    #[inline]
    pub fn file_type(&self) -> FileType {
        self.file_type
    }
    /// True for a directory.
    #[inline]
    pub fn is_dir(&self) -> bool {
        self.file_type == FileType::Directory
    }
    /// Device number of a device file.
    pub fn rdev(&self) -> u64 {
        u64::from(self.rdev)
    }
    /// Creation time.
    pub fn btime(&self) -> Timespec {
        Timespec::new(self.btime_sec, i64::from(self.times.btime_nsec))
    }
    /// The superblock.
    #[inline]
    pub fn sb(&self) -> &SbRef {
        &self.sb
    }
    /// The filesystem's operations (its private inode).
    #[inline]
    pub fn ops(&self) -> &dyn InodeOps {
        &*self.ops
    }

    /// Full mode (type and permission bits). A single load: no snapshot needed.
    #[inline]
    pub fn mode(&self) -> u32 {
        self.file_type.mode_bits() | self.perm.load(Ordering::Relaxed)
    }
    /// Owner (single load).
    #[inline]
    pub fn uid(&self) -> u32 {
        self.uid.load(Ordering::Relaxed)
    }
    /// Group (single load).
    #[inline]
    pub fn gid(&self) -> u32 {
        self.gid.load(Ordering::Relaxed)
    }
    /// The filesystem's count of its holders of this inode (see the field): the filesystem
    /// alone writes it. Its top bit, [`FS_HOLDS_CLOSED`], is the filesystem's to use.
    #[inline]
    pub fn fs_holds(&self) -> &AtomicU32 {
        &self.fs_holds
    }

    /// [`Inode::fs_holds`]'s count, without [`FS_HOLDS_CLOSED`].
    #[inline]
    pub fn fs_holders(&self) -> u32 {
        self.fs_holds.load(Ordering::Acquire) & !FS_HOLDS_CLOSED
    }

    /// Link count (single load).
    #[inline]
    pub fn nlink(&self) -> u32 {
        self.nlink.load(Ordering::Relaxed)
    }
    /// Size (single load).
    #[inline]
    pub fn size(&self) -> u64 {
        self.size.load(Ordering::Relaxed)
    }

    /// A consistent snapshot of the attributes.
    ///
    /// # Fast path
    /// No lock and no store unless `mark_queried` is set and the ctime was not yet marked as
    /// observed; retries while a writer is inside its section.
    pub fn attrs(&self, mark_queried: bool) -> Attrs {
        if mark_queried {
            self.mark_ctime_queried();
        }
        self.snapshot(|| Attrs {
            mode: self.mode(),
            uid: self.uid(),
            gid: self.gid(),
            nlink: self.nlink(),
            size: self.size(),
            blocks: self.blocks.load(Ordering::Relaxed),
            atime: self.times.load(ATIME),
            mtime: self.times.load(MTIME),
            ctime: self.times.load(CTIME),
        })
    }

    /// Sets the ctime-observed flag unless it is set (one load in the common case).
    #[inline]
    fn mark_ctime_queried(&self) {
        if self.flags.load(Ordering::Relaxed) & CTIME_QUERIED == 0 {
            self.flags.fetch_or(CTIME_QUERIED, Ordering::Relaxed);
        }
    }

    /// Runs `read` until no attribute writer ran during it (the read side of `attr_seq`).
    #[inline(always)]
    fn snapshot<R>(&self, read: impl Fn() -> R) -> R {
        loop {
            let Some(s) = self.attr_seq.read_begin() else {
                crate::sync::hint::spin_loop();
                continue;
            };
            let r = read();
            if !self.attr_seq.read_retry(s) {
                return r;
            }
        }
    }

    /// `struct stat` of this inode, read as one snapshot and marking the ctime observed
    /// (Linux: `generic_fillattr()`). Fills the result directly from the attribute atomics.
    ///
    /// # Fast path
    /// As [`Inode::attrs`]: no lock, no store after the first observation of a change.
    #[inline]
    pub fn stat(&self) -> crate::abi::Stat {
        self.mark_ctime_queried();
        self.snapshot(|| crate::abi::Stat {
            dev: self.sb.dev(),
            ino: self.ino,
            nlink: u64::from(self.nlink.load(Ordering::Relaxed)),
            mode: self.mode(),
            uid: self.uid(),
            gid: self.gid(),
            rdev: u64::from(self.rdev),
            size: self.size.load(Ordering::Relaxed) as i64,
            blksize: crate::abi::PAGE_SIZE as i64,
            blocks: self.blocks.load(Ordering::Relaxed) as i64,
            atime: self.times.load(ATIME),
            mtime: self.times.load(MTIME),
            ctime: self.times.load(CTIME),
        })
    }

    /// The time to stamp a change with: coarse, or fine if the ctime was observed since the
    /// last change and the coarse clock is not past it (Linux: `inode_set_ctime_current()`:
    /// a coarse stamp later than the observed ctime is already visible).
    #[inline]
    pub fn current_time(&self) -> Timespec {
        let now = coarse_now();
        if self.flags.load(Ordering::Relaxed) & CTIME_QUERIED != 0 {
            self.flags.fetch_and(!CTIME_QUERIED, Ordering::Relaxed);
            if now <= self.times.load(CTIME) {
                return fine_now();
            }
        }
        now
    }

    /// Forgets that the ctime was observed: for a ctime set to another inode's stamp, which
    /// replaces the observed one (Linux: `inode_set_ctime_to_ts()`).
    #[inline]
    pub fn clear_ctime_queried(&self) {
        if self.flags.load(Ordering::Relaxed) & CTIME_QUERIED != 0 {
            self.flags.fetch_and(!CTIME_QUERIED, Ordering::Relaxed);
        }
    }

    /// Runs `f` as one attribute write section.
    ///
    /// # Locking
    /// Takes `attr_lock` (innermost). Callers may hold the inode lock or the filesystem's
    /// data lock.
    pub fn write_attrs<R>(&self, f: impl FnOnce(&AttrWriter<'_>) -> R) -> R {
        let _g = self.attr_lock.lock();
        self.attr_seq.write_begin();
        let r = f(&AttrWriter { inode: self });
        self.attr_seq.write_end();
        r
    }

    /// Stamps mtime and ctime with `now` if either differs (Linux: `file_update_time()`).
    ///
    /// # Fast path
    /// Two relaxed loads when the coarse clock has not ticked since the last stamp.
    #[inline]
    pub fn update_mtime_ctime(&self) {
        let now = self.current_time();
        if self.times.load(MTIME) != now || self.times.load(CTIME) != now {
            self.write_attrs(|w| {
                w.set_mtime(now);
                w.set_ctime(now);
            });
        }
    }

    /// Stamps ctime (and mtime when `also_mtime`) now; used by directory changes.
    pub fn touch_ctime(&self, also: Stamp) {
        // The stamp is read inside the section, so that stamps follow the order of the
        // sections (a directory moved by rename is stamped without its own lock).
        self.write_attrs(|w| {
            let now = self.current_time();
            w.set_ctime(now);
            if also == Stamp::CtimeMtime {
                w.set_mtime(now);
            }
        });
    }

    /// True for an unnamed inode that `linkat` may link.
    pub fn is_linkable(&self) -> bool {
        self.flags.load(Ordering::Relaxed) & LINKABLE != 0
    }

    pub(crate) fn set_linkable(&self, on: bool) {
        if on {
            self.flags.fetch_or(LINKABLE, Ordering::Relaxed);
        } else {
            self.flags.fetch_and(!LINKABLE, Ordering::Relaxed);
        }
    }

    /// True if the inode has a lock context (it was locked once): one relaxed load.
    #[inline]
    pub(crate) fn has_lock_context(&self) -> bool {
        self.flags.load(Ordering::Relaxed) & HAS_LOCK_CONTEXT != 0
    }

    /// Records that the inode has a lock context (under the side table's lock).
    pub(crate) fn mark_lock_context(&self) {
        if !self.has_lock_context() {
            self.flags.fetch_or(HAS_LOCK_CONTEXT, Ordering::Relaxed);
        }
    }

    /// The events this inode's fsnotify marks ask for (0 when unwatched): one relaxed load.
    #[inline]
    pub(crate) fn notify_mask(&self) -> u32 {
        self.notify_mask.load(Ordering::Relaxed)
    }

    /// Sets the aggregated mark mask (under `notify::mark::MARK_LOCK`).
    pub(crate) fn set_notify_mask(&self, mask: u32) {
        self.notify_mask.store(mask, Ordering::Relaxed);
    }

    /// Counts an open file that may write (`up`) or its end (Linux: `get_write_access()`,
    /// `put_write_access()`).
    pub(crate) fn count_writer(&self, up: bool) {
        if up {
            self.writers.fetch_add(1, Ordering::Relaxed);
        } else {
            self.writers.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// True if a file open for writing has the inode (Linux: `inode_is_open_for_write()`).
    pub(crate) fn is_open_for_write(&self) -> bool {
        self.writers.load(Ordering::Relaxed) != 0
    }

    /// True if the inode has fsnotify marks.
    #[inline]
    pub(crate) fn has_marks(&self) -> bool {
        self.flags.load(Ordering::Relaxed) & HAS_MARKS != 0
    }

    /// Records whether the inode has fsnotify marks (under `notify::mark::MARK_LOCK`).
    pub(crate) fn set_has_marks(&self, on: bool) {
        if on {
            self.flags.fetch_or(HAS_MARKS, Ordering::Relaxed);
        } else {
            self.flags.fetch_and(!HAS_MARKS, Ordering::Relaxed);
        }
    }

    /// Makes the walk check the inode's cached dentries at every step ([`Inode::is_stale`],
    /// and the vanilla kernfs locking of the benchmarks): for a filesystem whose names change
    /// behind the VFS, which sets it on each inode before the inode is first looked up
    /// (Linux: `d_set_d_op()` setting `DCACHE_OP_REVALIDATE`).
    pub fn set_revalidate(&self) {
        self.flags.fetch_or(REVALIDATE, Ordering::Release);
    }

    /// True if the walk must check this inode's cached dentries: one load, on the walk's fast
    /// path.
    #[inline]
    pub(crate) fn needs_revalidate(&self) -> bool {
        self.flags.load(Ordering::Acquire) & REVALIDATE != 0
    }

    /// Marks the inode's names stale: its filesystem removed it behind the VFS (a kernfs node
    /// removed by code), so every cached dentry of it is treated as missing from now on and
    /// the next lookup of its name asks the filesystem again (Linux: `kernfs_dop_revalidate()`
    /// failing once the node is deactivated). Never undone; only directories whose
    /// [`InodeOps::revalidates`] is true may hold such
    /// names.
    pub fn set_stale(&self) {
        self.flags.fetch_or(STALE | REVALIDATE, Ordering::Release);
    }

    /// True once [`Inode::set_stale`] was called.
    #[inline]
    pub fn is_stale(&self) -> bool {
        self.flags.load(Ordering::Acquire) & STALE != 0
    }

    /// Claims the one `IN_DELETE_SELF` of the inode: true the first time.
    pub(crate) fn take_removed(&self) -> bool {
        self.flags.fetch_or(REMOVED_NOTIFIED, Ordering::AcqRel) & REMOVED_NOTIFIED == 0
    }

    /// The access time, read without a snapshot (a racing update may tear sec/nsec).
    #[inline]
    pub fn atime_raw(&self) -> Timespec {
        self.times.load(ATIME)
    }

    /// The modification time, read without a snapshot.
    #[inline]
    pub fn mtime_raw(&self) -> Timespec {
        self.times.load(MTIME)
    }

    /// The change time, read without a snapshot.
    #[inline]
    pub fn ctime_raw(&self) -> Timespec {
        self.times.load(CTIME)
    }
}

/// Which timestamps a namespace change stamps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stamp {
    /// Only ctime (link count or owner changed).
    Ctime,
    /// ctime and mtime (directory contents changed).
    CtimeMtime,
}

/// Write access to an inode's attributes inside [`Inode::write_attrs`].
pub struct AttrWriter<'a> {
    inode: &'a Inode,
}

impl AttrWriter<'_> {
    /// Sets the permission bits (type bits are ignored).
    pub fn set_perm(&self, perm: u32) {
        self.inode.perm.store(perm & S_IALLUGO, Ordering::Relaxed);
    }
    /// Sets the owner.
    pub fn set_uid(&self, uid: u32) {
        self.inode.uid.store(uid, Ordering::Relaxed);
    }
    /// Sets the group.
    pub fn set_gid(&self, gid: u32) {
        self.inode.gid.store(gid, Ordering::Relaxed);
    }
    /// Sets the link count.
    pub fn set_nlink(&self, n: u32) {
        self.inode.nlink.store(n, Ordering::Relaxed);
    }
    /// Adds `delta` (may be negative) to the link count.
    pub fn add_nlink(&self, delta: i32) {
        let n = self.inode.nlink.load(Ordering::Relaxed);
        self.inode
            .nlink
            .store(n.saturating_add_signed(delta), Ordering::Relaxed);
    }
    /// Sets the size.
    pub fn set_size(&self, size: u64) {
        self.inode.size.store(size, Ordering::Relaxed);
    }
    /// Sets the allocated 512-byte units.
    pub fn set_blocks(&self, blocks: u64) {
        self.inode.blocks.store(blocks, Ordering::Relaxed);
    }
    /// Sets atime.
    pub fn set_atime(&self, t: Timespec) {
        self.inode.times.store(ATIME, t);
    }
    /// Sets mtime.
    pub fn set_mtime(&self, t: Timespec) {
        self.inode.times.store(MTIME, t);
    }
    /// Sets ctime.
    pub fn set_ctime(&self, t: Timespec) {
        self.inode.times.store(CTIME, t);
    }
    /// Sets ctime to another inode's stamp and forgets that the old ctime was observed
    /// (Linux: `inode_set_ctime_to_ts()`, whose write clears `I_CTIME_QUERIED` with the same
    /// store). Inside the section, so that a `stat` that marks the ctime observed and then
    /// reads the new value (its snapshot waits for the section) keeps its mark; cleared
    /// after the section, that mark was lost and the next change in the same tick could
    /// keep the observed ctime.
    pub fn set_ctime_to(&self, t: Timespec) {
        self.inode.clear_ctime_queried();
        self.set_ctime(t);
    }
}

/// A timestamp to set in `setattr`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeSet {
    /// The current time.
    Now,
    /// A given time.
    At(Timespec),
}

/// The attributes a `setattr` changes (Linux: `struct iattr`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SetAttr {
    /// New permission bits.
    pub perm: Option<u32>,
    /// New owner.
    pub uid: Option<u32>,
    /// New group.
    pub gid: Option<u32>,
    /// New size (truncate/extend).
    pub size: Option<u64>,
    /// New atime.
    pub atime: Option<TimeSet>,
    /// New mtime.
    pub mtime: Option<TimeSet>,
    /// Stamp ctime (Linux `ATTR_CTIME`; every call but `truncate(2)` sets it).
    pub ctime: bool,
}

impl SetAttr {
    /// Applies every field to the inode in one write section (Linux: `setattr_copy()`).
    pub fn apply(&self, inode: &Inode) {
        // Only a stamp consumes the ctime observation (Linux: `current_time()` marks nothing).
        let stamps =
            self.ctime || self.atime == Some(TimeSet::Now) || self.mtime == Some(TimeSet::Now);
        let now = if stamps {
            inode.current_time()
        } else {
            coarse_now()
        };
        inode.write_attrs(|w| {
            if let Some(p) = self.perm {
                w.set_perm(p);
            }
            if let Some(u) = self.uid {
                w.set_uid(u);
            }
            if let Some(g) = self.gid {
                w.set_gid(g);
            }
            if let Some(s) = self.size {
                w.set_size(s);
            }
            let resolve = |t: TimeSet| match t {
                TimeSet::Now => now,
                TimeSet::At(t) => t,
            };
            if let Some(t) = self.atime {
                w.set_atime(resolve(t));
            }
            if let Some(t) = self.mtime {
                w.set_mtime(resolve(t));
            }
            if self.ctime {
                w.set_ctime(now);
            }
        });
    }
}

impl std::fmt::Debug for Inode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inode")
            .field("ino", &self.ino)
            .field("type", &self.file_type)
            .field("mode", &format_args!("{:o}", self.mode()))
            .finish()
    }
}

/// A long-lived hold on the inode of a dentry, for the holders that are not open files: a
/// task's cwd and root, a mount's root and mountpoint (Linux: the reference such a holder's
/// `struct path` keeps; see [`InodeOps::hold`]). Cloning takes another hold; dropping gives
/// this one back, which frees an unlinked inode nothing else holds.
///
/// Taken and dropped only where a holder changes (`chdir`, `chroot`, `fork`, task end, mount,
/// unmount), never by a path walk, an open or a `stat`.
pub(crate) struct InodeHold(Option<Arc<Inode>>);

impl InodeHold {
    /// Holds the inode of `dentry` (nothing for a negative dentry).
    pub(crate) fn of(dentry: &super::Dentry) -> InodeHold {
        InodeHold::new(dentry.inode().cloned())
    }

    /// Holds `inode`.
    pub(crate) fn inode(inode: &Arc<Inode>) -> InodeHold {
        InodeHold::new(Some(inode.clone()))
    }

    fn new(inode: Option<Arc<Inode>>) -> InodeHold {
        if let Some(i) = &inode {
            i.ops().hold(i);
        }
        InodeHold(inode)
    }
}

impl Clone for InodeHold {
    fn clone(&self) -> InodeHold {
        InodeHold::new(self.0.clone())
    }
}

impl Drop for InodeHold {
    fn drop(&mut self) {
        if let Some(i) = &self.0 {
            i.ops().unhold(i);
        }
    }
}

impl std::fmt::Debug for InodeHold {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("InodeHold")
            .field(&self.0.as_ref().map(|i| i.ino()))
            .finish()
    }
}
