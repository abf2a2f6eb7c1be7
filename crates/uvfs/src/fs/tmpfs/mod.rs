//! tmpfs: a filesystem whose files live in memory. Linux: mm/shmem.c.
//!
//! Directories keep their own entry maps with stable offsets for `getdents64` (Linux:
//! `simple_offset` in fs/libfs.c); the dcache caches lookups on top of them. Regular files keep
//! sparse 4 KiB pages. Limits (`size=`, `nr_inodes=`) are charged when a page or an inode is
//! allocated and released when the last link and the last holder (an open file, a cwd or
//! root, a mount) are gone.

mod dir;
mod file;
mod options;

pub use options::{total_ram_bytes, TmpfsOptions};

use std::any::Any;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

use once_cell::race::OnceBox;
use parking_lot::Mutex;

use crate::abi::{
    Errno, FileType, OpenFlags, RenameFlags, Result, StatFs, XattrFlags, NAME_MAX, PAGE_SIZE,
    TMPFS_MAGIC,
};
use crate::sync::budget::Budget;
use crate::sync::pcpu_ref::PcpuRef;
use crate::vfs::inode::{Inode, InodeHold, InodeInit, SetAttr, Stamp, FS_HOLDS_CLOSED};
use crate::vfs::ops::{FileOps, InodeOps, Name, NewInode, SuperOps};
use crate::vfs::super_block::SbRef;
use crate::vfs::{Dentry, SuperBlock};

use dir::DirData;
use file::RegData;

/// Size a directory reports per entry (Linux: `BOGO_DIRENT_SIZE`).
pub(crate) const BOGO_DIRENT_SIZE: u64 = 20;
/// Symlink targets up to this length use no data page (Linux: `SHORT_SYMLINK_LEN`).
const SHORT_SYMLINK_LEN: usize = 128;

/// Inode space one inode takes (Linux: `BOGO_INODE_SIZE`).
const BOGO_INODE_SIZE: u64 = 1024;

/// Inode space an extended attribute takes (Linux: `simple_xattr_space()`).
pub(crate) fn xattr_space(name: &[u8], value_len: usize) -> u64 {
    40 + name.len() as u64 + value_len as u64
}

/// Space and inode accounting of one tmpfs instance. Inodes and extended attributes share
/// one budget of "inode space" in bytes, `nr_inodes * 1024` (Linux: `free_ispace`). Both
/// budgets are spread over per-thread reserves (`sync::budget`), so creates, unlinks and page
/// allocations on different threads do not write one shared count each.
#[derive(Debug)]
pub(crate) struct Counters {
    /// Pages (`size=`; 0: no limit).
    blocks: Budget,
    /// Inode space in bytes (`nr_inodes=` times 1024; 0: no limit).
    ispace: Budget,
    /// Inodes with no link that are still held (Linux: `s_remove_count`).
    orphans: AtomicU64,
}

impl Counters {
    fn new(max_blocks: u64, max_inodes: u64) -> Counters {
        Counters {
            blocks: Budget::new(max_blocks, 1),
            ispace: Budget::new(max_inodes.saturating_mul(BOGO_INODE_SIZE), BOGO_INODE_SIZE),
            orphans: AtomicU64::new(0),
        }
    }
    pub(crate) fn alloc_blocks(&self, n: u64) -> Result<()> {
        if self.blocks.charge(n) {
            Ok(())
        } else {
            Err(Errno::ENOSPC)
        }
    }
    pub(crate) fn free_blocks(&self, n: u64) {
        self.blocks.refund(n);
    }
    /// The block limit (0: none) and the blocks free under it now.
    /// The block limit (0: none). Reads one word, where `block_room` reads every slot of
    /// the budget, lines the other threads charging write.
    pub(crate) fn block_max(&self) -> u64 {
        self.blocks.max()
    }
    pub(crate) fn block_room(&self) -> (u64, u64) {
        let max = self.blocks.max();
        (max, max.saturating_sub(self.blocks.used()))
    }
    pub(crate) fn alloc_inode(&self) -> Result<()> {
        self.alloc_ispace(BOGO_INODE_SIZE)
    }
    pub(crate) fn free_inode(&self) {
        self.free_ispace(BOGO_INODE_SIZE);
    }
    /// Charges `bytes` of inode space; free when the instance has no inode limit.
    pub(crate) fn alloc_ispace(&self, bytes: u64) -> Result<()> {
        if self.ispace.charge(bytes) {
            Ok(())
        } else {
            Err(Errno::ENOSPC)
        }
    }
    pub(crate) fn free_ispace(&self, bytes: u64) {
        self.ispace.refund(bytes);
    }
}

/// A counted reference to an instance's accounting, held by the superblock's `Tmpfs` and by
/// every file's page map, so it is spread over per-thread slots (page maps made and freed on
/// different threads write different lines) until the instance's superblock goes and
/// `Tmpfs`'s drop kills it. An inode reaches it through its superblock ([`counters`]).
pub(crate) type CountersRef = PcpuRef<Counters>;

/// The accounting of the instance `inode` belongs to, through its superblock, which the inode
/// holds: a node holds no reference of its own (issue 7, compact objects: a word less per
/// inode, and no reference count taken and dropped per inode made and freed).
///
/// # Panics
/// If `inode` is not a tmpfs inode (only tmpfs's nodes call it, on their own inodes).
pub(crate) fn counters(inode: &Inode) -> &Counters {
    &Tmpfs::of(inode).counters
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        self.counters.kill();
    }
}

/// The tmpfs superblock operations.
pub struct Tmpfs {
    counters: CountersRef,
}

impl Tmpfs {
    /// Creates a tmpfs instance with `options` and returns its superblock and root dentry.
    /// The root belongs to `uid`/`gid` and has mode 1777 unless the options say otherwise.
    /// The instance is freed after its last mount (`Mount::new`) and its last inode are gone;
    /// one never mounted is kept until the process ends (its superblock's count is spread
    /// until a last mount ends it: `SbRef`).
    ///
    /// # Errors
    /// `EINVAL` for bad options.
    pub fn new_instance(
        options: &TmpfsOptions,
        uid: u32,
        gid: u32,
    ) -> Result<(SbRef, Arc<Dentry>)> {
        let ram_pages = total_ram_bytes() / PAGE_SIZE;
        let counters = CountersRef::new(Counters::new(
            options.max_blocks.unwrap_or(ram_pages / 2),
            options.max_inodes.unwrap_or(ram_pages / 2),
        ));
        let sb = SuperBlock::new(Box::new(Tmpfs {
            counters: counters.clone(),
        }));
        counters.alloc_inode()?;
        let init = InodeInit {
            ino: sb.alloc_ino(),
            file_type: FileType::Directory,
            perm: options.mode.unwrap_or(0o1777),
            uid: options.uid.unwrap_or(uid),
            gid: options.gid.unwrap_or(gid),
            rdev: 0,
            nlink: 2,
        };
        let root = Inode::new(
            &sb,
            init,
            Box::new(Node::with(Contents::Dir(Box::new(DirData::new(counters))))),
        );
        root.write_attrs(|w| w.set_size(2 * BOGO_DIRENT_SIZE));
        Ok((sb.clone(), Dentry::new_root(root)))
    }
}

impl Tmpfs {
    /// The instance `inode` belongs to.
    ///
    /// # Panics
    /// If `inode` is not a tmpfs inode.
    fn of(inode: &Inode) -> &Tmpfs {
        inode
            .sb()
            .ops()
            .as_any()
            .downcast_ref::<Tmpfs>()
            .expect("a tmpfs inode's superblock is a tmpfs one")
    }
}

impl SuperOps for Tmpfs {
    fn fs_name(&self) -> &'static str {
        "tmpfs"
    }

    fn statfs(&self, sb: &SuperBlock) -> Result<StatFs> {
        let c = &self.counters;
        let mut s = StatFs {
            f_type: TMPFS_MAGIC,
            bsize: PAGE_SIZE as i64,
            namelen: NAME_MAX as i64,
            frsize: PAGE_SIZE as i64,
            fsid: [sb.dev() as i32, (sb.dev() >> 32) as i32],
            ..StatFs::default()
        };
        let mb = c.blocks.max();
        if mb != 0 {
            s.blocks = mb;
            s.bfree = mb.saturating_sub(c.blocks.used());
            s.bavail = s.bfree;
        }
        let mi = c.ispace.max() / BOGO_INODE_SIZE;
        if mi != 0 {
            s.files = mi;
            s.ffree = (mi * BOGO_INODE_SIZE).saturating_sub(c.ispace.used()) / BOGO_INODE_SIZE;
        }
        Ok(s)
    }

    fn has_orphans(&self) -> bool {
        self.counters.orphans.load(Ordering::Relaxed) != 0
    }

    fn remount(&self, _sb: &SuperBlock, data: Option<&str>) -> Result<()> {
        let o = TmpfsOptions::parse(data)?;
        let c = &self.counters;
        // Linux refuses to shrink a limit below what is in use, and to turn an unlimited
        // instance limited.
        // Checked with each budget's reserves given back, so "in use" is exact.
        let refused = |new: Option<u64>, cur: u64, used: u64| {
            new.is_some_and(|m| m != 0 && (used > m || cur == 0))
        };
        let new_ispace = o.max_inodes.map(|mi| mi.saturating_mul(BOGO_INODE_SIZE));
        if c.blocks
            .with_exact(|cur, used| (None, refused(o.max_blocks, cur, used)))
            || c.ispace
                .with_exact(|cur, used| (None, refused(new_ispace, cur, used)))
        {
            return Err(Errno::EINVAL);
        }
        c.blocks.with_exact(|_, _| (o.max_blocks, ()));
        c.ispace.with_exact(|_, _| (new_ispace, ()));
        Ok(())
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// What kind of tmpfs inode this is (its contents are in [`Node::data`]).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Dir,
    Reg,
    Symlink,
    /// FIFO, socket or device node: no contents.
    Special,
}

/// The contents of a tmpfs inode.
enum Contents {
    /// Behind a pointer, so that `Data` is small for the other kinds.
    Dir(Box<DirData>),
    /// The pages.
    Reg(Arc<RegData>),
    /// The target.
    Symlink(Arc<[u8]>),
    Special,
}

/// The contents of a tmpfs inode and what few inodes use, in one block: made with the inode
/// for a directory or a symlink, and at the first need for the others (a regular file's
/// first page, by a write, fallocate or a resize to a non-zero size; an xattr; a pinned
/// parent). An empty file has none, and none is made to open it.
struct Data {
    contents: Contents,
    /// Made at the first `setxattr` or the first pinned parent.
    extra: OnceBox<Extra>,
}

/// The private part of every tmpfs inode.
pub(crate) struct Node {
    /// The inode's charge (one inode, its pages) was returned to the instance.
    released: AtomicBool,
    /// Counted in `Counters::orphans`.
    orphan: AtomicBool,
    /// `Extra::parent_pins` may be non-empty: the last holder's going looks at them.
    pinning: AtomicBool,
    kind: Kind,
    /// The position of one of the inode's names in its directory's entry array, `dir::NIL`
    /// for none: how a directory finds an entry without a name index (`dir::Entries`).
    /// Written by the directory that has that name, under its entry lock; claimed from
    /// `NIL` by a compare-and-swap.
    pub(super) slot: AtomicU32,
    /// One word for everything else (a `OnceLock` takes two).
    data: OnceBox<Data>,
}

// An empty file's tmpfs part is a 16-byte block: four bytes of flags and kind, the slot and
// one pointer (issue 7, compact objects); a field added here should be weighed against that.
const _: () = assert!(std::mem::size_of::<Node>() <= 16);

/// The part of a tmpfs inode that most inodes never need, out of line.
#[derive(Default)]
struct Extra {
    /// Protects: the extended attributes. Order: innermost.
    xattrs: Mutex<BTreeMap<Vec<u8>, Vec<u8>>>,
    /// Protects: the directories this inode's names were removed from while it was held,
    /// each kept until no holder is left ([`InodeOps::keep_parent`]). Order: innermost.
    parent_pins: Mutex<Vec<InodeHold>>,
}

impl Data {
    fn boxed(contents: Contents) -> Box<Data> {
        Box::new(Data {
            contents,
            extra: OnceBox::new(),
        })
    }
}

impl Node {
    /// A node of `kind` with no contents yet (a regular file or a special file).
    fn new(kind: Kind) -> Node {
        debug_assert!(matches!(kind, Kind::Reg | Kind::Special));
        Node::make(kind, OnceBox::new())
    }

    /// A node with its contents (a directory or a symlink).
    fn with(contents: Contents) -> Node {
        let kind = match contents {
            Contents::Dir(_) => Kind::Dir,
            Contents::Reg(_) => Kind::Reg,
            Contents::Symlink(_) => Kind::Symlink,
            Contents::Special => Kind::Special,
        };
        Node::make(kind, OnceBox::with_value(Data::boxed(contents)))
    }

    fn make(kind: Kind, data: OnceBox<Data>) -> Node {
        Node {
            released: AtomicBool::new(false),
            orphan: AtomicBool::new(false),
            pinning: AtomicBool::new(false),
            kind,
            slot: AtomicU32::new(dir::NIL),
            data,
        }
    }

    /// The contents, made now if they are not yet (`inode` is this node's).
    fn data(&self, inode: &Inode) -> &Data {
        self.data.get_or_init(|| {
            let contents = match self.kind {
                Kind::Reg => {
                    Contents::Reg(Arc::new(RegData::new(Tmpfs::of(inode).counters.clone())))
                }
                Kind::Special => Contents::Special,
                // Made with the node.
                Kind::Dir | Kind::Symlink => unreachable!("a {:?} node has its data", self.kind),
            };
            Data::boxed(contents)
        })
    }

    fn contents_if_made(&self) -> Option<&Contents> {
        self.data.get().map(|d| &d.contents)
    }

    fn extra_if_made(&self) -> Option<&Extra> {
        self.data.get()?.extra.get()
    }

    /// The tmpfs node of a VFS inode, if it is one.
    pub(crate) fn of(inode: &Inode) -> Option<&Node> {
        inode.ops().as_any().downcast_ref::<Node>()
    }

    /// `inode` is this node's.
    fn extra(&self, inode: &Inode) -> &Extra {
        self.data(inode).extra.get_or_init(Box::default)
    }

    /// The pages of a regular file (`inode`, this node's), made on the first call (`None` for
    /// other kinds).
    pub(crate) fn reg_data(&self, inode: &Inode) -> Option<&Arc<RegData>> {
        if self.kind != Kind::Reg {
            return None;
        }
        match &self.data(inode).contents {
            Contents::Reg(r) => Some(r),
            _ => None,
        }
    }

    /// The pages of a regular file if it has any yet.
    pub(crate) fn reg_data_if_made(&self) -> Option<&Arc<RegData>> {
        match self.contents_if_made()? {
            Contents::Reg(r) => Some(r),
            _ => None,
        }
    }

    fn dir(&self) -> Result<&DirData> {
        match self.contents_if_made() {
            Some(Contents::Dir(d)) => Ok(d),
            _ => Err(Errno::ENOTDIR),
        }
    }

    /// Returns the inode's charge once it has no link and no holder (Linux:
    /// `shmem_evict_inode()` at the last `iput()`).
    pub(crate) fn maybe_release(&self, inode: &Inode) {
        self.release_if_done(inode, || counters(inode));
    }

    /// [`Node::maybe_release`] by a caller that has the instance's accounting at hand (a
    /// directory's unlink).
    pub(crate) fn maybe_release_in(&self, inode: &Inode, c: &Counters) {
        self.release_if_done(inode, || c);
    }

    fn release_if_done<'a>(&self, inode: &Inode, c: impl FnOnce() -> &'a Counters) {
        if inode.nlink() != 0 || self.released.load(Ordering::Acquire) {
            return;
        }
        let c = c();
        // Closed only from no holder, in one step with the test: an open that adds a holder
        // after it finds the count closed and backs off (`Node::take_open_hold`), so no open
        // reads an inode whose pages were given back.
        if inode
            .fs_holds()
            .compare_exchange(0, FS_HOLDS_CLOSED, Ordering::SeqCst, Ordering::SeqCst)
            .is_err()
        {
            self.mark_orphan(c);
            return;
        }
        if self.released.swap(true, Ordering::AcqRel) {
            return;
        }
        self.give_back(inode, c, 1);
    }

    /// Gives back everything `inode` was charged (it is being released, once): its pages, a
    /// long symlink's block, its xattrs, `inodes` inodes' space (one, and one per link past
    /// the first that it still has: `link` charges each), and its orphan count.
    fn give_back(&self, inode: &Inode, c: &Counters, inodes: u64) {
        if self.orphan.swap(false, Ordering::AcqRel) {
            c.orphans.fetch_sub(1, Ordering::Relaxed);
        }
        if let Some(r) = self.reg_data_if_made() {
            let pages = r.release_all();
            c.free_blocks(pages);
            inode.write_attrs(|w| w.set_blocks(0));
        }
        if let Some(Contents::Symlink(t)) = self.contents_if_made() {
            if t.len() > SHORT_SYMLINK_LEN {
                c.free_blocks(1);
            }
        }
        self.free_xattrs(c);
        c.free_ispace(inodes * BOGO_INODE_SIZE);
    }

    /// Counts this held, unlinked inode as an orphan (once).
    fn mark_orphan(&self, c: &Counters) {
        if !self.orphan.swap(true, Ordering::AcqRel) {
            c.orphans.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn free_xattrs(&self, c: &Counters) {
        let Some(e) = self.extra_if_made() else {
            return;
        };
        let x = std::mem::take(&mut *e.xattrs.lock());
        for (k, v) in x {
            c.free_ispace(xattr_space(&k, v.len()));
        }
    }

    /// Counts a holder: an open file description (`O_PATH` ones too) or a VFS
    /// [`InodeOps::hold`] (cwds, roots, mounts). An unlinked inode keeps its space while any is
    /// left (Linux: the inode's reference count, `i_count`). The count is
    /// [`Inode::fs_holds`], which shares a cache line with the inode's reference count.
    fn take_hold(inode: &Inode) {
        inode.fs_holds().fetch_add(1, Ordering::SeqCst);
    }

    /// Counts an open file's hold, unless the inode was released meanwhile: its walk found the
    /// name before an unlink (or a rename over it) took its last link, and the unlink found no
    /// holder and gave its pages back. The open then says `ESTALE`, and the VFS looks the name
    /// up again (Linux: the walk's dentry reference keeps the inode from eviction, so such an
    /// open opens the old file; it happens, here, after the unlink instead).
    fn take_open_hold(inode: &Inode) -> Result<()> {
        if inode.fs_holds().fetch_add(1, Ordering::SeqCst) & FS_HOLDS_CLOSED != 0 {
            inode.fs_holds().fetch_sub(1, Ordering::SeqCst);
            return Err(Errno::ESTALE);
        }
        Ok(())
    }

    /// Uncounts a holder; frees an unlinked inode that was the last one's, and gives back the
    /// directories its removed names kept.
    pub(crate) fn drop_hold(&self, inode: &Inode) {
        // `SeqCst` pairs with `keep_parent`: it stores `pinning` and then loads `Inode::fs_holds`, this
        // stores `holds` and then loads `pinning`, so one of the two sees the other.
        let last = inode.fs_holds().fetch_sub(1, Ordering::SeqCst) & !FS_HOLDS_CLOSED == 1;
        let pins = if last && self.pinning.load(Ordering::SeqCst) {
            let mut p = self.extra(inode).parent_pins.lock();
            self.pinning.store(false, Ordering::SeqCst);
            std::mem::take(&mut *p)
        } else {
            Vec::new()
        };
        self.maybe_release(inode);
        drop(pins);
        // The last holder of an unlinked inode went (Linux: the final `dput()` runs
        // `dentry_unlink_inode()`, which sends `IN_DELETE_SELF`).
        if last && inode.nlink() == 0 {
            crate::vfs::notify::inode_removed(inode);
        }
    }

    /// Allocates and initialises a new inode of this instance (Linux: `shmem_get_inode()`).
    /// `self` is the directory's node.
    fn new_inode(&self, dir: &Inode, new: &NewInode<'_>, node: Node) -> Result<Arc<Inode>> {
        self.dir()?.counters.alloc_inode()?;
        let file_type = FileType::from_mode(new.mode).ok_or(Errno::EINVAL)?;
        let nlink = if file_type == FileType::Directory {
            2
        } else {
            1
        };
        let init = InodeInit {
            ino: dir.sb().alloc_ino(),
            file_type,
            perm: new.mode,
            uid: new.uid,
            gid: new.gid,
            rdev: new.rdev,
            nlink,
        };
        let inode = Inode::new(dir.sb(), init, Box::new(node));
        if file_type == FileType::Directory {
            inode.write_attrs(|w| w.set_size(2 * BOGO_DIRENT_SIZE));
        }
        Ok(inode)
    }

    /// Creates and links a new inode named `name` in this directory.
    fn create_entry(
        &self,
        dir: &Inode,
        name: &Name,
        new: &NewInode<'_>,
        node: Node,
    ) -> Result<Arc<Inode>> {
        let d = self.dir()?;
        let is_dir = node.kind == Kind::Dir;
        let inode = self.new_inode(dir, new, node)?;
        stamp_new_entry(dir, &inode, if is_dir { 1 } else { 0 }, || {
            d.add(name, inode.clone())
        });
        Ok(inode)
    }

    /// Makes the whiteout a rename leaves at `name`, stamped and counted in `dir` as a new
    /// entry, with its place in the listing taken now; it is added to `dir` once the source
    /// has moved (Linux: `shmem_whiteout()` calls `shmem_mknod()`).
    fn make_whiteout(&self, dir: &Inode, name: &[u8], new: &NewInode<'_>) -> Result<Arc<Inode>> {
        let d = self.dir()?;
        let inode = self.new_inode(dir, new, Node::new(Kind::Special))?;
        stamp_new_entry(dir, &inode, 0, || d.reserve(name));
        Ok(inode)
    }

    fn remove_entry(&self, dir: &Inode, name: &[u8], victim: &Inode, dir_delta: i32) {
        if let Ok(d) = self.dir() {
            let removed = d.remove(name, victim);
            debug_assert!(
                removed.is_some(),
                "the VFS removes a name the directory has"
            );
        }
        // The victim is stamped and the directory takes the victim's stamp, so a directory
        // observed in the same tick may keep its ctime (Linux: `shmem_unlink()`). The stamp is
        // read inside the directory's section, so that the directory's stamps follow the
        // order of its sections even where they are not all under one lock.
        let now = dir.write_attrs(|w| {
            let now = victim.current_time();
            w.add_nlink(dir_delta);
            w.set_size(dir.size().saturating_sub(BOGO_DIRENT_SIZE));
            w.set_mtime(now);
            w.set_ctime_to(now);
            now
        });
        victim.write_attrs(|w| w.set_ctime(now));
    }
}

/// Stamps a new entry: the new inode takes its own (coarse) stamp before `enter` puts it in
/// the directory's table, then the directory takes one that may be fine-grained, and grows by
/// one entry and `nlink_delta` links (Linux: `shmem_get_inode()` before `shmem_mknod()` stamps
/// `dir`). The directory's stamp is read inside its section, so that its stamps follow the
/// order of the sections.
fn stamp_new_entry(dir: &Inode, inode: &Inode, nlink_delta: i32, enter: impl FnOnce()) {
    let born = inode.current_time();
    enter();
    dir.write_attrs(|w| {
        let now = dir.current_time();
        w.add_nlink(nlink_delta);
        w.set_size(dir.size() + BOGO_DIRENT_SIZE);
        w.set_mtime(now);
        w.set_ctime(now);
    });
    inode.write_attrs(|w| {
        w.set_atime(born);
        w.set_mtime(born);
        w.set_ctime(born);
    });
}

/// An `O_PATH` descriptor of a tmpfs inode: a holder, so an unlinked inode keeps its pages
/// until the descriptor is closed (Linux: `shmem_evict_inode()` at the last `iput()`, which an
/// `O_PATH` file delays).
struct PathFile;

impl FileOps for PathFile {
    fn release(&self, file: &crate::vfs::FileDescription) {
        if let Some(n) = Node::of(file.inode()) {
            n.drop_hold(file.inode());
        }
    }
}

impl InodeOps for Node {
    fn as_any(&self) -> &dyn Any {
        self
    }

    /// Gives back the charge of an inode freed while it still had it: a linked inode whose
    /// instance goes, or one an error path drops (an unlinked one gave it back at its last
    /// holder's going, `maybe_release`). A directory's links are its subdirectories', not
    /// charged.
    fn evict(&self, inode: &Inode) {
        if !self.released.load(Ordering::Relaxed) {
            let links = if inode.is_dir() {
                1
            } else {
                inode.nlink().max(1)
            };
            self.give_back(inode, counters(inode), u64::from(links));
        }
    }

    fn lookup(&self, _dir: &Inode, name: &[u8]) -> Result<Option<Arc<Inode>>> {
        Ok(self.dir()?.get(name))
    }

    /// Every entry gets its dentry when it is made (create, mkdir, mknod, symlink, link,
    /// rename's whiteout, `linkat` of an `O_TMPFILE`) and loses it only with the entry
    /// (unlink, rmdir, rename): nothing evicts a positive dentry.
    fn dcache_complete(&self) -> bool {
        self.kind == Kind::Dir
    }

    fn create(&self, dir: &Inode, name: &Name, new: &NewInode<'_>) -> Result<Arc<Inode>> {
        self.create_entry(dir, name, new, Node::new(Kind::Reg))
    }

    fn mkdir(&self, dir: &Inode, name: &Name, new: &NewInode<'_>) -> Result<Arc<Inode>> {
        if dir.nlink() == u32::MAX {
            return Err(Errno::EMLINK);
        }
        let counters = self.dir()?.counters.clone();
        let node = Node::with(Contents::Dir(Box::new(DirData::new(counters))));
        self.create_entry(dir, name, new, node)
    }

    fn mknod(&self, dir: &Inode, name: &Name, new: &NewInode<'_>) -> Result<Arc<Inode>> {
        let kind = match FileType::from_mode(new.mode) {
            Some(FileType::Regular) => Kind::Reg,
            _ => Kind::Special,
        };
        self.create_entry(dir, name, new, Node::new(kind))
    }

    fn symlink(
        &self,
        dir: &Inode,
        name: &Name,
        target: &[u8],
        new: &NewInode<'_>,
    ) -> Result<Arc<Inode>> {
        let long = target.len() > SHORT_SYMLINK_LEN;
        let c = &self.dir()?.counters;
        if long {
            c.alloc_blocks(1)?;
        }
        let node = Node::with(Contents::Symlink(Arc::from(target)));
        let r = self.create_entry(dir, name, new, node);
        match &r {
            Ok(inode) => inode.write_attrs(|w| {
                w.set_size(target.len() as u64);
                if long {
                    w.set_blocks(PAGE_SIZE / 512);
                }
            }),
            Err(_) if long => c.free_blocks(1),
            Err(_) => {}
        }
        r
    }

    fn tmpfile(&self, dir: &Inode, new: &NewInode<'_>) -> Result<Arc<Inode>> {
        self.dir()?;
        let inode = self.new_inode(dir, new, Node::new(Kind::Reg))?;
        if let Some(n) = Node::of(&inode) {
            n.mark_orphan(counters(&inode));
        }
        inode.write_attrs(|w| w.set_nlink(0));
        Ok(inode)
    }

    fn link(&self, dir: &Inode, name: &Name, target: &Arc<Inode>) -> Result<()> {
        let d = self.dir()?;
        if target.nlink() == u32::MAX {
            return Err(Errno::EMLINK);
        }
        // Every extra link of a tmpfs inode is charged as an inode (Linux: `shmem_link()`);
        // linking an O_TMPFILE inode (no links yet) reuses its own charge.
        let c = &d.counters;
        if target.nlink() > 0 {
            c.alloc_inode()?;
        }
        if let Some(n) = Node::of(target) {
            // A linked O_TMPFILE inode is live again.
            n.released.store(false, Ordering::Release);
            target
                .fs_holds()
                .fetch_and(!FS_HOLDS_CLOSED, Ordering::SeqCst);
            if n.orphan.swap(false, Ordering::AcqRel) {
                c.orphans.fetch_sub(1, Ordering::Relaxed);
            }
        }
        d.add(name, target.clone());
        // The target is stamped and the directory takes its stamp (Linux: `shmem_link()`).
        let now = target.current_time();
        target.write_attrs(|w| {
            w.add_nlink(1);
            w.set_ctime(now);
        });
        dir.write_attrs(|w| {
            w.set_size(dir.size() + BOGO_DIRENT_SIZE);
            w.set_mtime(now);
            w.set_ctime_to(now);
        });
        Ok(())
    }

    fn unlink(&self, dir: &Inode, name: &[u8], victim: &Inode) -> Result<()> {
        let c = &self.dir()?.counters;
        if victim.nlink() > 1 {
            c.free_inode();
        }
        self.remove_entry(dir, name, victim, 0);
        victim.write_attrs(|w| w.add_nlink(-1));
        if let Some(n) = Node::of(victim) {
            n.maybe_release_in(victim, c);
        }
        Ok(())
    }

    fn rmdir(&self, dir: &Inode, name: &[u8], victim: &Inode) -> Result<()> {
        let vn = Node::of(victim).ok_or(Errno::EXDEV)?;
        if !vn.dir()?.is_empty() {
            return Err(Errno::ENOTEMPTY);
        }
        self.remove_entry(dir, name, victim, -1);
        victim.write_attrs(|w| w.set_nlink(0));
        vn.maybe_release_in(victim, &self.dir()?.counters);
        Ok(())
    }

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
        dir::rename(
            self, old_dir, old_name, src, new_dir, new_name, tgt, flags, whiteout,
        )
    }

    fn get_link(&self, _inode: &Inode) -> Result<Arc<[u8]>> {
        match self.contents_if_made() {
            Some(Contents::Symlink(t)) => Ok(Arc::clone(t)),
            _ => Err(Errno::EINVAL),
        }
    }

    fn setattr(&self, inode: &Inode, attr: &SetAttr) -> Result<()> {
        let mut attr = *attr;
        if let (Some(size), Kind::Reg) = (attr.size, self.kind) {
            // A file with no pages has size 0 (every call that changes the size makes them),
            // so truncating it to 0 changes nothing and needs none.
            let stamp = match self.reg_data_if_made() {
                None if size == 0 => false,
                _ => self
                    .reg_data(inode)
                    .map_or(Ok(false), |r| r.resize(inode, size))?,
            };
            if stamp {
                attr.ctime = true;
                if attr.mtime.is_none() {
                    attr.mtime = Some(crate::vfs::TimeSet::Now);
                }
            }
            attr.size = None;
        }
        attr.apply(inode);
        Ok(())
    }

    fn open(&self, inode: &Arc<Inode>, _flags: OpenFlags) -> Result<Box<dyn FileOps>> {
        match self.kind {
            Kind::Reg => {
                Node::take_open_hold(inode)?;
                Ok(Box::new(file::RegFile))
            }
            Kind::Dir => {
                Node::take_hold(inode);
                Ok(Box::new(dir::DirFile))
            }
            Kind::Symlink => Err(Errno::ELOOP),
            Kind::Special => Err(Errno::ENXIO),
        }
    }

    fn open_path(&self, inode: &Arc<Inode>) -> Box<dyn FileOps> {
        Node::take_hold(inode);
        Box::new(PathFile)
    }

    fn hold(&self, inode: &Inode) {
        Node::take_hold(inode);
    }

    fn unhold(&self, inode: &Inode) {
        self.drop_hold(inode);
    }

    fn keep_parent(&self, inode: &Inode, dir: &Arc<Inode>) {
        // Whether a holder uses this very name is not known: any holder keeps the directory
        // (docs/divergences.md).
        if inode.fs_holds().load(Ordering::SeqCst) & !FS_HOLDS_CLOSED == 0 {
            return;
        }
        let mut pins = self.extra(inode).parent_pins.lock();
        self.pinning.store(true, Ordering::SeqCst);
        if inode.fs_holds().load(Ordering::SeqCst) & !FS_HOLDS_CLOSED != 0 {
            pins.push(InodeHold::inode(dir));
        }
    }

    fn getxattr(&self, _inode: &Inode, name: &[u8]) -> Result<Vec<u8>> {
        let Some(e) = self.extra_if_made() else {
            return Err(Errno::ENODATA);
        };
        let value = e.xattrs.lock().get(name).cloned();
        value.ok_or(Errno::ENODATA)
    }

    fn setxattr(&self, inode: &Inode, name: &[u8], value: &[u8], flags: XattrFlags) -> Result<()> {
        // Charge first, refund what is replaced (Linux: `shmem_xattr_handler_set()`).
        let c = counters(inode);
        c.alloc_ispace(xattr_space(name, value.len()))?;
        let old = {
            let mut x = self.extra(inode).xattrs.lock();
            let exists = x.contains_key(name);
            let refused = if flags.contains(XattrFlags::CREATE) && exists {
                Some(Errno::EEXIST)
            } else if flags.contains(XattrFlags::REPLACE) && !exists {
                Some(Errno::ENODATA)
            } else {
                None
            };
            if let Some(e) = refused {
                drop(x);
                c.free_ispace(xattr_space(name, value.len()));
                return Err(e);
            }
            x.insert(name.to_vec(), value.to_vec())
        };
        if let Some(old) = old {
            c.free_ispace(xattr_space(name, old.len()));
        }
        inode.touch_ctime(Stamp::Ctime);
        Ok(())
    }

    fn listxattr(&self, _inode: &Inode) -> Result<Vec<Vec<u8>>> {
        Ok(self
            .extra_if_made()
            .map(|e| e.xattrs.lock().keys().cloned().collect())
            .unwrap_or_default())
    }

    fn removexattr(&self, inode: &Inode, name: &[u8]) -> Result<()> {
        let e = self.extra_if_made().ok_or(Errno::ENODATA)?;
        let old = e.xattrs.lock().remove(name).ok_or(Errno::ENODATA)?;
        counters(inode).free_ispace(xattr_space(name, old.len()));
        inode.touch_ctime(Stamp::Ctime);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::{Node, Tmpfs};
    use crate::abi::{AtFlags, OpenFlags, XattrFlags, AT_FDCWD};
    use crate::{Cred, Vfs};

    /// Every charge an instance's inodes took is given back by the time the instance is gone:
    /// the space of files, symlinks, directories and xattrs that were unlinked, and of those
    /// still linked when the last mount went (each freed inode's `evict`). Oracle: the
    /// accounting's own invariant (Linux: `shmem_put_super()` finds `used_blocks` at 0,
    /// `percpu_counter_destroy()` with nothing in use); what `statfs` reports of the same
    /// counts while the instance lives is checked against the host by the differential cases.
    #[test]
    fn every_charge_is_given_back_when_the_instance_goes() {
        let vfs = Vfs::new();
        let task = vfs.task(Cred::root());
        let create = |path: &str, bytes: usize| {
            let fd = task
                .openat(AT_FDCWD, path, OpenFlags::CREAT | OpenFlags::RDWR, 0o644)
                .unwrap();
            task.pwrite(fd, &vec![7u8; bytes], 0).unwrap();
            fd
        };
        let fd = create("/kept", 10_000);
        let counters = Tmpfs::of(task.fget(fd).unwrap().inode()).counters.clone();
        task.close(fd).unwrap();
        task.mkdirat(AT_FDCWD, "/d", 0o755).unwrap();
        task.close(create("/d/kept", 5000)).unwrap();
        task.close(create("/gone", 5000)).unwrap();
        task.unlinkat(AT_FDCWD, "/gone", AtFlags::empty()).unwrap();
        let open_unlinked = create("/open-unlinked", 5000);
        task.unlinkat(AT_FDCWD, "/open-unlinked", AtFlags::empty())
            .unwrap();
        task.setxattr("/kept", "user.a", b"value", XattrFlags::empty())
            .unwrap();
        task.symlinkat(&[b'x'; 200][..], AT_FDCWD, "/long-link")
            .unwrap();
        task.linkat(AT_FDCWD, "/kept", AT_FDCWD, "/d/second", AtFlags::empty())
            .unwrap();
        let used = || {
            (
                counters.ispace.with_exact(|_, used| (None, used)),
                counters.blocks.with_exact(|_, used| (None, used)),
            )
        };
        let (inodes, blocks) = used();
        assert!(
            inodes > 0 && blocks > 0,
            "the files are charged: {inodes} {blocks}"
        );
        task.close(open_unlinked).unwrap();
        drop(task);
        drop(vfs);
        // Dentries (and with them inodes) are freed through the epoch collector, each freed
        // table retiring its nodes in turn: one flush per level of the tree, and some spare.
        for _ in 0..8 {
            crate::sync::rcu::flush();
        }
        assert_eq!(
            used(),
            (0, 0),
            "inode space and pages in use after the instance went"
        );
    }

    /// An empty file has no page map until something gives it pages (issue 7, compact
    /// inodes): truncating it to 0, with either call, must not make one. Oracle: the memory
    /// rule of `RegData` (a map is made by the first call that needs pages); the sizes and
    /// stamps the calls give are checked against the host by the differential cases.
    #[test]
    fn truncating_a_file_without_pages_to_zero_makes_no_page_map() {
        let vfs = Vfs::new();
        let task = vfs.task(Cred::root());
        let fd = task
            .openat(AT_FDCWD, "/f", OpenFlags::CREAT | OpenFlags::RDWR, 0o644)
            .unwrap();
        let made = |task: &crate::Task| {
            let file = task.fget(fd).unwrap();
            Node::of(file.inode()).unwrap().reg_data_if_made().is_some()
        };
        assert!(!made(&task), "a new file has no page map");
        task.ftruncate(fd, 0).unwrap();
        task.truncate("/f", 0).unwrap();
        assert!(!made(&task), "truncating to 0 made a page map");
        // The check can fail: a call that needs pages makes the map.
        task.ftruncate(fd, 1).unwrap();
        assert!(made(&task), "a size of 1 needs the map");
        task.close(fd).unwrap();
    }
}
