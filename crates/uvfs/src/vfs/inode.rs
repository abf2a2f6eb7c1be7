//! The in-memory inode: identity, attributes and the filesystem's private operations.
//! Linux: `struct inode` in include/linux/fs.h.

use std::sync::Arc;

use parking_lot::RwLock;

use super::ops::InodeOps;
use super::super_block::SbRef;
use super::time::{coarse_now, fine_now};
use crate::abi::{FileType, Timespec, S_IALLUGO, S_IFMT};
use std::collections::BTreeMap;

use crate::sync::atomic::{AtomicU16, AtomicU32, AtomicU64, Ordering};
use crate::sync::SeqLock;

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

/// Inode flag: at least one of the inode's timestamps is outside what a packed word holds
/// and is kept in the [`WIDE`] side table. Set once, under a shard of that table.
const WIDE_TIMES: u32 = 128;

const ATIME: usize = 0;
const MTIME: usize = 1;
const CTIME: usize = 2;
const BTIME: usize = 3;

/// The nanosecond bits of a packed timestamp.
const NSEC_BITS: u32 = 30;
const NSEC_MASK: u64 = (1 << NSEC_BITS) - 1;
/// A packed word whose time is in [`WIDE`]: nanoseconds no `Timespec` has.
const WIDE_TIME: u64 = NSEC_MASK;
/// Packed seconds are signed 34-bit: 1698 to 2242.
const SEC_LIMIT: i64 = 1 << (63 - NSEC_BITS);

/// Where a packed timestamp's seconds start ([`Inode::packed_times`]).
pub(crate) const PACKED_SEC_SHIFT: u32 = NSEC_BITS;

/// `t` as a packed word, ordered as [`Inode::packed_times`]'s (`None` outside 1698-2242).
#[inline(always)]
pub(crate) fn packed(t: Timespec) -> Option<i64> {
    pack_time(t).map(|v| v as i64)
}

/// `t` in one word (seconds in the top 34 bits, nanoseconds in the low 30), if its seconds
/// fit; `t.nsec` is in `0..1_000_000_000` (a `Timespec` invariant).
#[inline(always)]
fn pack_time(t: Timespec) -> Option<u64> {
    debug_assert!((0..1_000_000_000).contains(&t.nsec), "{t:?}");
    if (-SEC_LIMIT..SEC_LIMIT).contains(&t.sec) {
        Some(((t.sec as u64) << NSEC_BITS) | t.nsec as u64)
    } else {
        None
    }
}

/// The time of a packed word that is not [`WIDE_TIME`].
#[inline]
fn unpack_time(v: u64) -> Timespec {
    Timespec::new((v as i64) >> NSEC_BITS, (v & NSEC_MASK) as i64)
}

/// The four timestamps (atime, mtime, ctime, btime), one packed word each: 32 bytes where
/// second/nanosecond pairs took 48, and a racing reader without a snapshot never sees half
/// of one. Consistent with the other attributes only under the inode's `attr`. A time
/// outside 1698-2242 (`utimensat` may set any) is kept in [`WIDE`], its word saying so.
#[derive(Debug)]
struct Times([AtomicU64; 4]);

impl Times {
    fn new(t: Timespec) -> Self {
        let v = pack_time(t).unwrap_or(WIDE_TIME);
        Times([(); 4].map(|()| AtomicU64::new(v)))
    }
}

/// A shard of [`WIDE`], on its own cache lines.
#[repr(align(128))]
struct WideShard(parking_lot::Mutex<BTreeMap<usize, [Timespec; 4]>>);

const WIDE_SHARDS: usize = 16;

/// The timestamps that do not fit a packed word, by inode address: entries are added by an
/// inode's first such time and removed when the inode is dropped (before its address can be
/// reused). Protects: its map. Order: innermost (taken inside an attribute write section).
/// A plain `parking_lot` lock: a static needs a const constructor, which the model
/// checkers' locks lack (no modelled protocol reaches a wide time).
static WIDE: [WideShard; WIDE_SHARDS] =
    [const { WideShard(parking_lot::Mutex::new(BTreeMap::new())) }; WIDE_SHARDS];

fn wide_shard(
    inode: &Inode,
) -> (
    usize,
    &'static parking_lot::Mutex<BTreeMap<usize, [Timespec; 4]>>,
) {
    let key = std::ptr::from_ref(inode) as usize;
    // Inodes are 128-byte blocks: the low seven bits are the same for all.
    (key, &WIDE[(key >> 7) % WIDE_SHARDS].0)
}

/// Whether a mode's type keeps a device number, in the word of the block count, which a
/// device file does not use (Linux: `i_rdev`, set only by `init_special_inode()`): `S_IFCHR`
/// (0o02) and `S_IFBLK` (0o06) are the types whose four bits, masked with 0b1011, read 0b0010.
#[inline(always)]
fn mode_has_rdev(mode: u32) -> bool {
    (mode >> 12) & 0b1011 == 0b0010
}

/// Every file type.
const ALL_TYPES: [FileType; 8] = [
    FileType::Regular,
    FileType::Directory,
    FileType::Symlink,
    FileType::CharDevice,
    FileType::BlockDevice,
    FileType::Fifo,
    FileType::Socket,
    FileType::Anon,
];

/// File types by the four `S_IFMT` bits of a mode (no type bits: an anonymous inode).
const TYPES: [FileType; 16] = {
    let mut t = [FileType::Anon; 16];
    let all = ALL_TYPES;
    let mut i = 0;
    while i < all.len() {
        t[(all[i].mode_bits() >> 12) as usize] = all[i];
        i += 1;
    }
    t
};

/// The block count as its word keeps it: 512-byte units below 2^31, and above that 4096-byte
/// units with the top bit set (a tmpfs file counts whole pages), saturating at 2^31 - 1
/// pages (8 TiB).
#[inline]
fn pack_blocks(blocks: u64) -> u32 {
    const PAGES: u32 = 1 << 31;
    if blocks < u64::from(PAGES) {
        blocks as u32
    } else {
        PAGES | (blocks >> 3).min(u64::from(PAGES - 1)) as u32
    }
}

#[inline(always)]
fn unpack_blocks(v: u32) -> u64 {
    // Without a branch: pages (the top bit) shift by 3.
    u64::from(v & !(1 << 31)) << ((v >> 31) * 3)
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
/// Attribute fields are atomics grouped under `attr`, a sequence lock: readers (stat,
/// permission checks) never lock; writers hold it (its count odd).
///
/// Laid out in declaration order (`repr(C)`): with its 16-byte `Arc` header an inode fills
/// one 128-byte allocator block, two cache lines of its own (issue 7, compact objects). What
/// every open and close of a file writes (the `Arc` count, `fs_holds`, `writers`) is on the
/// first; the timestamps a write stamps on the second. Two inodes never share a line, so a
/// thread's opens, closes and writes of its file write no line that another thread reads or
/// writes for its own file (docs/locking.md, "Shared written locations on the hot paths").
#[repr(C)]
pub struct Inode {
    /// The attribute group's sequence count, which is also its writers' lock, and the
    /// inode's flags in its low byte (`CTIME_QUERIED` and the rest above).
    attr: SeqLock,
    /// Type and permission bits (Linux: `i_mode`, a `umode_t`); the type never changes.
    mode: AtomicU16,
    /// Open files that may write the inode (Linux: `i_writecount`). Wraps past 65535 (only
    /// fanotify's "open for write" test reads it).
    writers: AtomicU16,
    uid: AtomicU32,
    gid: AtomicU32,
    sb: SbRef,
    ops: Box<dyn InodeOps>,
    /// The filesystem's count of its holders (tmpfs: open files and [`InodeOps::hold`]s;
    /// Linux: `i_count`), kept here, on the line of the reference count that the same opens
    /// and closes write, rather than in the filesystem's own part, which is a separate
    /// allocation that shares cache lines with other inodes' parts.
    fs_holds: AtomicU32,
    nlink: AtomicU32,
    size: AtomicU64,
    times: Times,
    /// The inode lock (Linux `i_rwsem`). Directories: exclusive for namespace changes in this
    /// directory, shared for lookups that fill the dcache. All inodes: exclusive for `setattr`.
    /// Order: see docs/locking.md (parent before child; `SuperBlock::rename_lock` before any).
    pub(crate) lock: RwLock<()>,
    /// The events the inode's fsnotify marks ask for, or-ed (Linux: `i_fsnotify_mask`): read
    /// by the notification hooks only once the superblock has a watched inode, written only
    /// when marks change.
    notify_mask: AtomicU32,
    /// 512-byte blocks allocated ([`pack_blocks`]), or a device file's number.
    blocks_rdev: AtomicU32,
    ino: u64,
}

// With its `Arc` header an inode fills one 128-byte allocator class (issue 7, compact
// objects); a field added here should be weighed against that. (Model-checking builds use
// larger atomics.)
#[cfg(not(any(loom, feature = "shuttle")))]
const _: () = assert!(std::mem::size_of::<Inode>() <= 112);

impl Drop for Inode {
    fn drop(&mut self) {
        let this: &Inode = self;
        // One load of the flags for both side tables.
        let flags = this.flags(Ordering::Relaxed);
        if flags & HAS_LOCK_CONTEXT != 0 {
            super::locks::forget_context(this);
        }
        if flags & WIDE_TIMES != 0 {
            let (key, shard) = wide_shard(this);
            shard.lock().remove(&key);
        }
        this.ops.evict(this);
    }
}

impl Inode {
    /// Creates an inode of `sb` with the given identity and the filesystem's operations; all
    /// four timestamps are "now".
    pub fn new(sb: &SbRef, init: InodeInit, ops: Box<dyn InodeOps>) -> Arc<Inode> {
        let now = coarse_now();
        let inode = Arc::new(Inode {
            ino: init.ino,
            mode: AtomicU16::new((init.file_type.mode_bits() | (init.perm & S_IALLUGO)) as u16),
            blocks_rdev: AtomicU32::new(if mode_has_rdev(init.file_type.mode_bits()) {
                init.rdev
            } else {
                0
            }),
            sb: sb.clone(),
            attr: SeqLock::new(),
            uid: AtomicU32::new(init.uid),
            gid: AtomicU32::new(init.gid),
            nlink: AtomicU32::new(init.nlink),
            size: AtomicU64::new(0),
            times: Times::new(now),
            lock: RwLock::new(()),
            ops,
            fs_holds: AtomicU32::new(0),
            writers: AtomicU16::new(0),
            notify_mask: AtomicU32::new(0),
        });
        if pack_time(now).is_none() {
            // A clock outside the packed range: the words say so, the side table has it.
            inode.set_wide_times(&[ATIME, MTIME, CTIME, BTIME], now);
        }
        inode
    }

    /// Inode number.
    #[inline]
    pub fn ino(&self) -> u64 {
        self.ino
    }
    /// File type (never changes): one load and a table lookup.
    #[inline]
    pub fn file_type(&self) -> FileType {
        TYPES[usize::from(self.mode.load(Ordering::Relaxed) >> 12)]
    }
    /// True for a directory.
    #[inline]
    pub fn is_dir(&self) -> bool {
        u32::from(self.mode.load(Ordering::Relaxed)) & S_IFMT == FileType::Directory.mode_bits()
    }
    /// Device number of a device file (0 for any other).
    pub fn rdev(&self) -> u64 {
        self.blocks_rdev(self.mode()).1
    }
    /// 512-byte units allocated and the device number, from the inode's `mode` (one load).
    #[inline(always)]
    fn blocks_rdev(&self, mode: u32) -> (u64, u64) {
        let v = self.blocks_rdev.load(Ordering::Relaxed);
        // A device file has no blocks; any other no device number.
        let dev = u64::from(mode_has_rdev(mode));
        (
            unpack_blocks(v) & dev.wrapping_sub(1),
            u64::from(v) & dev.wrapping_neg(),
        )
    }
    /// Creation time.
    pub fn btime(&self) -> Timespec {
        self.time(BTIME)
    }

    /// Timestamp `which`, read without a snapshot; never torn.
    #[inline(always)]
    fn time(&self, which: usize) -> Timespec {
        let v = self.times.0[which].load(Ordering::Relaxed);
        if v == WIDE_TIME {
            return self.wide_time(which);
        }
        unpack_time(v)
    }

    #[cold]
    #[inline(never)]
    fn wide_time(&self, which: usize) -> Timespec {
        // The entry was added before the word said so, under the shard lock taken here.
        let (key, shard) = wide_shard(self);
        shard
            .lock()
            .get(&key)
            .map_or(Timespec::new(0, 0), |t| t[which])
    }

    /// Stores timestamp `which` (inside a write section, or before the inode is shared).
    #[inline]
    fn set_time(&self, which: usize, t: Timespec) {
        match pack_time(t) {
            Some(v) => self.times.0[which].store(v, Ordering::Relaxed),
            None => self.set_wide_times(&[which], t),
        }
    }

    #[cold]
    #[inline(never)]
    fn set_wide_times(&self, which: &[usize], t: Timespec) {
        let (key, shard) = wide_shard(self);
        let mut map = shard.lock();
        let entry = map.entry(key).or_insert([Timespec::new(0, 0); 4]);
        for &w in which {
            entry[w] = t;
        }
        self.attr.set_flags(WIDE_TIMES, Ordering::Relaxed);
        // Published under the shard lock: a reader that sees the word finds the entry.
        for &w in which {
            self.times.0[w].store(WIDE_TIME, Ordering::Relaxed);
        }
    }

    /// The inode's flag bits (one load of the attribute word).
    #[inline(always)]
    fn flags(&self, order: Ordering) -> u32 {
        self.attr.flags(order)
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

    /// The filesystem's part as the `T` it is, without a down-cast's two virtual calls and
    /// type comparison: for a filesystem's file operations reaching their own inode on every
    /// read and write (tmpfs's regular files).
    ///
    /// # Safety
    /// The part is a `T`: the caller made it (a file a filesystem opened on its own inode).
    #[allow(unsafe_code)] // Reason: a pointer cast the caller vouches for, checked in debug builds.
    #[inline]
    pub(crate) unsafe fn ops_unchecked<T: InodeOps>(&self) -> &T {
        debug_assert!(self.ops.as_any().is::<T>());
        // SAFETY: the caller guarantees the part is a `T`; the reference lives as `self`.
        unsafe { &*std::ptr::from_ref::<dyn InodeOps>(&*self.ops).cast::<T>() }
    }

    /// Full mode (type and permission bits). A single load: no snapshot needed.
    #[inline]
    pub fn mode(&self) -> u32 {
        u32::from(self.mode.load(Ordering::Relaxed))
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
            blocks: self.blocks_rdev(self.mode()).0,
            atime: self.time(ATIME),
            mtime: self.time(MTIME),
            ctime: self.time(CTIME),
        })
    }

    /// Sets the ctime-observed flag unless it is set (one load in the common case).
    #[inline]
    fn mark_ctime_queried(&self) {
        if self.flags(Ordering::Relaxed) & CTIME_QUERIED == 0 {
            self.attr.set_flags(CTIME_QUERIED, Ordering::Relaxed);
        }
    }

    /// Runs `read` until no attribute writer ran during it (the read side of `attr`).
    #[inline(always)]
    fn snapshot<R>(&self, read: impl Fn() -> R) -> R {
        loop {
            let Some(s) = self.attr.read_begin() else {
                crate::sync::hint::spin_loop();
                continue;
            };
            let r = read();
            if !self.attr.read_retry(s) {
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
        let flags = self.flags(Ordering::Relaxed);
        if flags & CTIME_QUERIED == 0 {
            self.attr.set_flags(CTIME_QUERIED, Ordering::Relaxed);
        }
        if flags & WIDE_TIMES != 0 {
            return self.stat_wide();
        }
        // No time is wide: each word is a packed time. (One that a racing section made wide
        // makes this snapshot retry, and the next one take `stat_wide`.)
        self.stat_with(|w| unpack_time(self.times.0[w].load(Ordering::Relaxed)))
    }

    #[cold]
    #[inline(never)]
    fn stat_wide(&self) -> crate::abi::Stat {
        self.stat_with(|w| self.time(w))
    }

    /// [`Inode::stat`]'s snapshot, with `time` reading the timestamps.
    #[inline(always)]
    fn stat_with(&self, time: impl Fn(usize) -> Timespec) -> crate::abi::Stat {
        // The snapshot's loop written out: as a closure, `snapshot` was left out of line.
        loop {
            let Some(s) = self.attr.read_begin() else {
                crate::sync::hint::spin_loop();
                continue;
            };
            let mode = self.mode();
            let (blocks, rdev) = self.blocks_rdev(mode);
            let st = crate::abi::Stat {
                dev: self.sb.dev(),
                ino: self.ino,
                nlink: u64::from(self.nlink.load(Ordering::Relaxed)),
                mode,
                uid: self.uid(),
                gid: self.gid(),
                rdev,
                size: self.size.load(Ordering::Relaxed) as i64,
                blksize: crate::abi::PAGE_SIZE as i64,
                blocks: blocks as i64,
                atime: time(ATIME),
                mtime: time(MTIME),
                ctime: time(CTIME),
            };
            if !self.attr.read_retry(s) {
                return st;
            }
        }
    }

    /// The time to stamp a change with: coarse, or fine if the ctime was observed since the
    /// last change and the coarse clock is not past it (Linux: `inode_set_ctime_current()`:
    /// a coarse stamp later than the observed ctime is already visible).
    #[inline]
    pub fn current_time(&self) -> Timespec {
        let now = coarse_now();
        if self.flags(Ordering::Relaxed) & CTIME_QUERIED != 0 {
            self.attr.clear_flags(CTIME_QUERIED, Ordering::Relaxed);
            if now <= self.time(CTIME) {
                return fine_now();
            }
        }
        now
    }

    /// Forgets that the ctime was observed: for a ctime set to another inode's stamp, which
    /// replaces the observed one (Linux: `inode_set_ctime_to_ts()`).
    #[inline]
    pub fn clear_ctime_queried(&self) {
        if self.flags(Ordering::Relaxed) & CTIME_QUERIED != 0 {
            self.attr.clear_flags(CTIME_QUERIED, Ordering::Relaxed);
        }
    }

    /// Runs `f` as one attribute write section.
    ///
    /// # Locking
    /// Takes the write side of `attr` (innermost but for the side table of wide timestamps). Callers may
    /// hold the inode lock or the filesystem's data lock. A panic in `f` ends the section
    /// as it unwinds.
    pub fn write_attrs<R>(&self, f: impl FnOnce(&AttrWriter<'_>) -> R) -> R {
        struct Section<'a>(&'a SeqLock);
        impl Drop for Section<'_> {
            #[inline]
            fn drop(&mut self) {
                self.0.write_unlock();
            }
        }
        self.attr.write_lock();
        let _section = Section(&self.attr);
        f(&AttrWriter { inode: self })
    }

    /// Stamps mtime and ctime with `now` if either differs (Linux: `file_update_time()`).
    ///
    /// # Fast path
    /// Two relaxed loads when the coarse clock has not ticked since the last stamp.
    #[inline]
    pub fn update_mtime_ctime(&self) {
        let now = self.current_time();
        // Packed words compare as the times they hold; a wide time is never equal to a
        // packed `now` (its word's nanoseconds are no time's), and a `now` that does not
        // pack always stamps.
        let same = pack_time(now).is_some_and(|p| {
            self.times.0[MTIME].load(Ordering::Relaxed) == p
                && self.times.0[CTIME].load(Ordering::Relaxed) == p
        });
        if !same {
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
        self.flags(Ordering::Relaxed) & LINKABLE != 0
    }

    pub(crate) fn set_linkable(&self, on: bool) {
        if on {
            self.attr.set_flags(LINKABLE, Ordering::Relaxed);
        } else {
            self.attr.clear_flags(LINKABLE, Ordering::Relaxed);
        }
    }

    /// True if the inode has a lock context (it was locked once): one relaxed load.
    #[inline]
    pub(crate) fn has_lock_context(&self) -> bool {
        self.flags(Ordering::Relaxed) & HAS_LOCK_CONTEXT != 0
    }

    /// Records that the inode has a lock context (under the side table's lock).
    pub(crate) fn mark_lock_context(&self) {
        if !self.has_lock_context() {
            self.attr.set_flags(HAS_LOCK_CONTEXT, Ordering::Relaxed);
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
        self.flags(Ordering::Relaxed) & HAS_MARKS != 0
    }

    /// Records whether the inode has fsnotify marks (under `notify::mark::MARK_LOCK`).
    pub(crate) fn set_has_marks(&self, on: bool) {
        if on {
            self.attr.set_flags(HAS_MARKS, Ordering::Relaxed);
        } else {
            self.attr.clear_flags(HAS_MARKS, Ordering::Relaxed);
        }
    }

    /// Makes the walk check the inode's cached dentries at every step ([`Inode::is_stale`],
    /// and the vanilla kernfs locking of the benchmarks): for a filesystem whose names change
    /// behind the VFS, which sets it on each inode before the inode is first looked up
    /// (Linux: `d_set_d_op()` setting `DCACHE_OP_REVALIDATE`).
    pub fn set_revalidate(&self) {
        self.attr.set_flags(REVALIDATE, Ordering::Release);
    }

    /// True if the walk must check this inode's cached dentries: one load, on the walk's fast
    /// path.
    #[inline]
    pub(crate) fn needs_revalidate(&self) -> bool {
        self.flags(Ordering::Acquire) & REVALIDATE != 0
    }

    /// Marks the inode's names stale: its filesystem removed it behind the VFS (a kernfs node
    /// removed by code), so every cached dentry of it is treated as missing from now on and
    /// the next lookup of its name asks the filesystem again (Linux: `kernfs_dop_revalidate()`
    /// failing once the node is deactivated). Never undone; only directories whose
    /// [`InodeOps::revalidates`] is true may hold such
    /// names.
    pub fn set_stale(&self) {
        self.attr.set_flags(STALE | REVALIDATE, Ordering::Release);
    }

    /// True once [`Inode::set_stale`] was called.
    #[inline]
    pub fn is_stale(&self) -> bool {
        self.flags(Ordering::Acquire) & STALE != 0
    }

    /// Claims the one `IN_DELETE_SELF` of the inode: true the first time.
    pub(crate) fn take_removed(&self) -> bool {
        self.attr.set_flags(REMOVED_NOTIFIED, Ordering::AcqRel) & REMOVED_NOTIFIED == 0
    }

    /// atime, mtime and ctime as their packed words, read without a snapshot: ordered as the
    /// times they hold, seconds in the bits from [`PACKED_SEC_SHIFT`] up. `None` if the inode
    /// has a time outside the packed range (a racing change can still make one wide after
    /// the test: its word then reads as a time in 1970, which only ever asks for a stamp).
    #[inline(always)]
    pub(crate) fn packed_times(&self) -> Option<[i64; 3]> {
        if self.flags(Ordering::Relaxed) & WIDE_TIMES != 0 {
            return None;
        }
        Some([ATIME, MTIME, CTIME].map(|w| self.times.0[w].load(Ordering::Relaxed) as i64))
    }

    /// The access time, read without a snapshot (one word: never torn).
    #[inline]
    pub fn atime_raw(&self) -> Timespec {
        self.time(ATIME)
    }

    /// The modification time, read without a snapshot.
    #[inline]
    pub fn mtime_raw(&self) -> Timespec {
        self.time(MTIME)
    }

    /// The change time, read without a snapshot.
    #[inline]
    pub fn ctime_raw(&self) -> Timespec {
        self.time(CTIME)
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
        let kind = u32::from(self.inode.mode.load(Ordering::Relaxed)) & S_IFMT;
        self.inode
            .mode
            .store((kind | (perm & S_IALLUGO)) as u16, Ordering::Relaxed);
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
    /// Sets the allocated 512-byte units (above 2^31 they are counted in 4096-byte units,
    /// and saturate at 8 TiB; ignored for a device file, whose word holds its number).
    pub fn set_blocks(&self, blocks: u64) {
        if !mode_has_rdev(self.inode.mode()) {
            self.inode
                .blocks_rdev
                .store(pack_blocks(blocks), Ordering::Relaxed);
        }
    }
    /// Sets atime.
    pub fn set_atime(&self, t: Timespec) {
        self.inode.set_time(ATIME, t);
    }
    /// Sets mtime.
    pub fn set_mtime(&self, t: Timespec) {
        self.inode.set_time(MTIME, t);
    }
    /// Sets ctime.
    pub fn set_ctime(&self, t: Timespec) {
        self.inode.set_time(CTIME, t);
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
            .field("type", &self.file_type())
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

    /// The inode held, if any.
    pub(crate) fn get(&self) -> Option<&Arc<Inode>> {
        self.0.as_ref()
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

#[cfg(all(test, not(any(loom, feature = "shuttle"))))]
mod tests {
    use super::*;
    use crate::vfs::test_fixture::Fixture;

    /// Every time reads back as set, on both sides of each end of the packed range, and a
    /// time past it lives in the side table only while the inode does.
    #[test]
    fn times_round_trip_inside_and_outside_a_word() {
        let fx = Fixture::new();
        let inode = fx.inode(FileType::Regular);
        let key = std::ptr::from_ref(&*inode) as usize;
        let secs = [
            0,
            -1,
            1,
            SEC_LIMIT - 1,
            -SEC_LIMIT,
            SEC_LIMIT,
            -SEC_LIMIT - 1,
            i64::MAX,
            i64::MIN,
        ];
        let mut checks = 0;
        for &sec in &secs {
            for nsec in [0, 1, 999_999_999] {
                let t = Timespec::new(sec, nsec);
                inode.write_attrs(|w| {
                    w.set_atime(t);
                    w.set_mtime(Timespec::new(5, 6));
                });
                let a = inode.attrs(false);
                assert_eq!((a.atime, a.mtime), (t, Timespec::new(5, 6)), "{sec}.{nsec}");
                assert_eq!(inode.atime_raw(), t);
                checks += 1;
            }
        }
        assert_eq!(checks, secs.len() * 3);
        assert!(inode.flags(Ordering::Relaxed) & WIDE_TIMES != 0);
        assert!(wide_shard(&inode).1.lock().contains_key(&key));
        drop(inode);
        assert!(
            !wide_shard_of_key(key).lock().contains_key(&key),
            "a dropped inode's wide times stayed in the side table"
        );
    }

    /// A panic inside a write section ends the section: the next writer and reader go on
    /// (checked on a thread with a deadline, so that a section left locked fails the test
    /// instead of hanging it).
    #[test]
    fn a_panic_in_a_write_section_unlocks_it() {
        let fx = Fixture::new();
        let inode = fx.inode(FileType::Regular);
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            inode.write_attrs(|w| {
                w.set_size(7);
                panic!("inside the section");
            })
        }));
        assert!(r.is_err());
        let (tx, rx) = std::sync::mpsc::channel();
        let i = inode.clone();
        std::thread::spawn(move || {
            i.write_attrs(|w| w.set_size(9));
            tx.send(i.attrs(false).size).expect("the test waits");
        });
        let size = rx
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("the section a panic left is still locked");
        assert_eq!(size, 9);
    }

    fn wide_shard_of_key(
        key: usize,
    ) -> &'static parking_lot::Mutex<BTreeMap<usize, [Timespec; 4]>> {
        &WIDE[(key >> 7) % WIDE_SHARDS].0
    }

    /// Block counts past 2^31 units are kept in pages; a device file's word is its number,
    /// which a block count never overwrites.
    #[test]
    fn blocks_and_device_numbers_share_a_word() {
        let fx = Fixture::new();
        let file = fx.inode(FileType::Regular);
        for (set, got) in [
            (0, 0),
            (8, 8),
            ((1 << 31) - 1, (1 << 31) - 1),
            (1 << 31, 1 << 31),
            (1 << 33, 1 << 33),
            ((1 << 33) + 5, 1 << 33),
            (u64::MAX, ((1 << 31) - 1) << 3),
        ] {
            file.write_attrs(|w| w.set_blocks(set));
            assert_eq!(file.attrs(false).blocks, got, "{set}");
            assert_eq!(file.stat().blocks as u64, got);
            assert_eq!(file.rdev(), 0);
        }
        let init = InodeInit {
            ino: 9,
            file_type: FileType::CharDevice,
            perm: 0o600,
            uid: 0,
            gid: 0,
            rdev: 0x0010_0005,
            nlink: 1,
        };
        let dev = Inode::new(&fx.sb, init, Box::new(crate::vfs::test_fixture::NoOps));
        dev.write_attrs(|w| w.set_blocks(8));
        assert_eq!((dev.rdev(), dev.stat().blocks), (0x0010_0005, 0));
        assert_eq!(dev.file_type(), FileType::CharDevice);
        assert_eq!(dev.mode(), 0o020600);
        dev.write_attrs(|w| w.set_perm(0o7777 | 0o170000));
        assert_eq!(dev.mode(), 0o027777, "set_perm changed the type bits");
        // The type table and the device test agree with `FileType` for every type.
        for t in ALL_TYPES {
            let mode = t.mode_bits() | 0o644;
            assert_eq!(TYPES[(mode >> 12) as usize], t);
            let device = matches!(t, FileType::CharDevice | FileType::BlockDevice);
            assert_eq!(mode_has_rdev(mode), device, "{t:?}");
        }
    }
}
