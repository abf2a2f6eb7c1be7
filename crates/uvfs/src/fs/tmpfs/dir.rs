//! tmpfs directories: entries with stable offsets, `readdir`, `rename`.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use hashbrown::HashTable;
use parking_lot::RwLock;

use super::{CountersRef, Node, BOGO_DIRENT_SIZE};
use crate::abi::{Errno, RenameFlags, Result, Whence};
use crate::vfs::dcache::{hash_len, hash_seed};
use crate::vfs::inode::{Inode, Stamp};
use crate::vfs::ops::{DirEntry, FileOps, Name, NewInode};
use crate::vfs::FileDescription;

/// The position of `..` (`.` is at 0).
const DOTDOT_POS: u64 = 1;
/// The position after `..`: resumes at the first entry of the list (Linux: `DIR_OFFSET_FIRST`).
const FIRST_POS: u64 = 2;
/// The smallest offset an entry gets (Linux: `DIR_OFFSET_MIN`).
const MIN_OFFSET: u64 = 3;
/// The position of a listing that reached the end, whatever is created later (Linux:
/// `DIR_OFFSET_EOD`, `S32_MAX`); also the `d_off` of the last entry.
pub(crate) const END_POS: u64 = i32::MAX as u64;
/// The largest offset an entry gets (Linux: `DIR_OFFSET_MAX`).
const MAX_OFFSET: u64 = END_POS - 1;

/// The end of the list; also "no entry" in a node's slot.
pub(super) const NIL: u32 = u32::MAX;

/// One name of a directory, a node of its list.
struct Entry {
    name: Name,
    /// `None` for a place reserved for a whiteout: in the list, but not listed and not found
    /// by name until its inode is added.
    inode: Option<Arc<Inode>>,
    /// The inode's number and `DT_*` type, copied so that a listing reads no inode (a
    /// `find` lists a directory and then stats each name: reading the inodes here would
    /// load each one twice, the listing's batch evicting them in between), packed in one
    /// word ([`InoType`]).
    ino_type: InoType,
    /// Its offset: the `d_off` of the entry listed before it, and where an `lseek` to it
    /// resumes (at most `MAX_OFFSET`).
    off: u32,
    /// Neighbours in listing order, `NIL` at the ends.
    prev: u32,
    next: u32,
}

// Four words: the directory's per-name cost beside the offset index (issue 7, compact
// objects). `Option<Entry>` takes the name's niche.
const _: () = assert!(std::mem::size_of::<Option<Entry>>() == 32);

/// An entry's inode number and `DT_*` type in 32 bits: the type in the top 4 bits (`DT_*`
/// values are below 16), the number in the low 28 when it fits, else [`InoType::FAR`] there
/// and the number is read from the inode. tmpfs numbers its inodes from 1 up in per-thread
/// batches (`SuperBlock::alloc_ino`), so a directory's names have numbers that fit unless
/// some 268 million inodes were made before them.
#[derive(Clone, Copy)]
struct InoType(u32);

impl InoType {
    /// The low 28 bits, all set: the number is the inode's.
    const FAR: u32 = (1 << 28) - 1;

    fn new(ino: u64, d_type: u8) -> InoType {
        debug_assert!(d_type < 16, "DT_* {d_type}");
        let low = if ino < u64::from(Self::FAR) {
            ino as u32
        } else {
            Self::FAR
        };
        InoType(u32::from(d_type) << 28 | low)
    }

    fn of(inode: &Inode) -> InoType {
        InoType::new(inode.ino(), inode.file_type().dirent_type())
    }

    fn d_type(self) -> u8 {
        (self.0 >> 28) as u8
    }

    /// The number; `inode` is the entry's (read only for a number that did not fit).
    fn ino(self, inode: Option<&Arc<Inode>>) -> u64 {
        match self.0 & Self::FAR {
            Self::FAR => inode.map_or(0, |i| i.ino()),
            low => u64::from(low),
        }
    }
}

/// Entry offsets to array positions, sorted by offset (the `by_off` index of [`Entries`]).
///
/// A sorted array rather than a B-tree: offsets come from a cursor that only grows until it
/// wraps at `MAX_OFFSET`, so an insert is almost always a push at the end; a removal leaves a
/// tombstone (position `NIL`), dropped when it reaches the end or when tombstones are half
/// the array. Eight bytes per entry (the B-tree took about 21) and no node to walk for the
/// create and unlink of one name (issue 7, compact objects).
#[derive(Default)]
struct OffIndex {
    /// `(offset, position)`, offsets strictly increasing; position `NIL`: removed.
    v: Vec<(u32, u32)>,
    /// Tombstones in `v`.
    dead: usize,
}

impl OffIndex {
    /// Where `off` is or would go.
    fn find(&self, off: u32) -> std::result::Result<usize, usize> {
        match self.v.last() {
            Some(&(last, _)) if last < off => Err(self.v.len()),
            _ => self.v.binary_search_by_key(&off, |&(o, _)| o),
        }
    }

    /// Indexes position `pos` at `off`, which no entry has.
    fn insert(&mut self, off: u32, pos: u32) {
        match self.find(off) {
            Ok(k) => {
                debug_assert_eq!(self.v[k].1, NIL, "offset {off} taken twice");
                self.v[k].1 = pos;
                self.dead -= 1;
            }
            Err(k) => self.v.insert(k, (off, pos)),
        }
    }

    /// Forgets `off`.
    fn remove(&mut self, off: u32) {
        let Ok(k) = self.find(off) else {
            debug_assert!(false, "offset {off} not indexed");
            return;
        };
        self.v[k].1 = NIL;
        self.dead += 1;
        while self.v.last().is_some_and(|&(_, p)| p == NIL) {
            self.v.pop();
            self.dead -= 1;
        }
        if self.v.len() >= 64 && self.dead * 2 >= self.v.len() {
            self.v.retain(|&(_, p)| p != NIL);
            self.dead = 0;
        }
    }

    /// The first offset from `off` on that no entry has, if one is at most `MAX_OFFSET`.
    fn first_free_from(&self, mut off: u64) -> Option<u32> {
        let Ok(start) = u32::try_from(off) else {
            return None;
        };
        let mut k = self.find(start).unwrap_or_else(|k| k);
        while let Some(&(o, p)) = self.v.get(k) {
            if u64::from(o) != off || p == NIL {
                break;
            }
            off += 1;
            k += 1;
        }
        (off <= MAX_OFFSET).then_some(off as u32)
    }

    /// The position of the entry with the largest offset at most `key`.
    fn last_at_or_below(&self, key: u32) -> Option<u32> {
        let end = match self.find(key) {
            Ok(k) => k + 1,
            Err(k) => k,
        };
        self.v[..end]
            .iter()
            .rev()
            .map(|&(_, p)| p)
            .find(|&p| p != NIL)
    }

    /// Moves every position `p` to `to[p]` (the array was compacted), dropping tombstones.
    fn renumber(&mut self, to: &[u32]) {
        self.v.retain(|&(_, p)| p != NIL);
        self.dead = 0;
        for (_, p) in &mut self.v {
            *p = to[*p as usize];
        }
        self.v.shrink_to_fit();
    }
}

/// A tmpfs directory's entries as Linux 6.18 keeps them: a list in listing order, newest at
/// the head (the dentry's `d_children` list: a new or moved entry goes to the head), and for
/// each entry an offset from a per-directory counter that only grows (`simple_offset_add()`,
/// cyclic from `MIN_OFFSET`). The two orders differ once an entry is moved: a rename puts
/// it at the head with the offset of the entry it replaced, an exchange keeps both names'
/// offsets.
///
/// Stored compactly: the entries in one array (a removed one leaves a hole the next insert
/// reuses, and the array is compacted when three quarters are holes), linked into the list by
/// index, and indexed by offset (a sorted array of 4-byte pairs, [`OffIndex`]).
///
/// There is no index by name: the dcache has every name of a tmpfs directory
/// ([`InodeOps::dcache_complete`](crate::vfs::ops::InodeOps::dcache_complete)), and every
/// call that changes a name names its inode too. An entry is found from its inode: each
/// tmpfs node's `slot` holds the array position of one of its inode's names, in whichever
/// directory has it (the first name that found the slot free); the other names of an inode
/// with several links, which directories alone, are in their directory's `multi`, a hash table
/// by name that no directory without such names allocates. So a name is in `multi` or is its
/// inode's slot entry, never both (Linux: a tmpfs dentry carries its offset,
/// `dentry->d_fsdata`; here the dentry is not the filesystem's to extend). Issue 7, compact
/// objects: the name index cost 10 to 14 bytes per file, and a name hash per create and unlink.
struct Entries {
    slab: Vec<Option<Entry>>,
    /// The holes of `slab`.
    free: Vec<u32>,
    /// The newest entry, or `NIL`.
    head: u32,
    /// Entries with an inode.
    named: u32,
    /// Positions of the named entries whose inode's slot names another entry (see above).
    multi: HashTable<u32>,
    /// Offset to position.
    by_off: OffIndex,
    /// Where the search for the next free offset starts (0: none taken yet).
    next_off: u64,
    /// The place taken for a name that is added later: a rename's whiteout, which Linux
    /// creates before it moves the source (`shmem_whiteout()` in `shmem_rename2()`).
    reserved: Option<u32>,
}

impl Default for Entries {
    fn default() -> Entries {
        Entries {
            slab: Vec::new(),
            free: Vec::new(),
            head: NIL,
            named: 0,
            multi: HashTable::new(),
            by_off: OffIndex::default(),
            next_off: 0,
            reserved: None,
        }
    }
}

/// The test `Entries::multi` probes with: position `i` holds an entry named `name`.
fn names<'a>(slab: &'a [Option<Entry>], name: &'a [u8]) -> impl Fn(&u32) -> bool + 'a {
    move |&i| slab[i as usize].as_ref().is_some_and(|e| *e.name == *name)
}

/// The slot of a tmpfs inode: the position of its slot entry, or `NIL`.
fn slot_of(inode: &Inode) -> &AtomicU32 {
    &Node::of(inode)
        .expect("a tmpfs directory holds tmpfs inodes")
        .slot
}

/// The hash of a name in `Entries::multi` (seeded per process, as the dcache's).
#[inline(always)]
fn name_hash(name: &[u8]) -> u64 {
    (hash_len(hash_seed(), name) as u32 as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

impl Entries {
    fn at(&self, i: u32) -> &Entry {
        self.slab[i as usize]
            .as_ref()
            .expect("the indexes and the list name only filled places")
    }

    fn at_mut(&mut self, i: u32) -> &mut Entry {
        self.slab[i as usize]
            .as_mut()
            .expect("the indexes and the list name only filled places")
    }

    /// The position of the entry `name` of `inode` (whose slot is `slot`), if this directory
    /// has it.
    fn find(&self, name: &[u8], inode: &Inode, slot: &AtomicU32) -> Option<u32> {
        let is = |i: u32| {
            self.slab[i as usize].as_ref().is_some_and(|e| {
                *e.name == *name && e.inode.as_deref().is_some_and(|x| std::ptr::eq(x, inode))
            })
        };
        if !self.multi.is_empty() {
            if let Some(&i) = self.multi.find(name_hash(name), names(&self.slab, name)) {
                return is(i).then_some(i);
            }
        }
        // Not in `multi`: if this directory has the name, it is the inode's slot entry.
        let i = slot.load(Ordering::Acquire);
        ((i as usize) < self.slab.len() && is(i)).then_some(i)
    }

    /// The inode named `name`, by a walk of the whole list: for a check of the dcache's
    /// completeness, in debug builds only (`fs_lookup`), and for tests.
    fn find_by_walk(&self, name: &[u8]) -> Option<&Arc<Inode>> {
        self.slab
            .iter()
            .flatten()
            .find(|e| e.inode.is_some() && *e.name == *name)
            .and_then(|e| e.inode.as_ref())
    }

    /// Records where entry `i` (filled, with an inode) is: its inode's slot if that is free,
    /// else `multi`.
    fn index_entry(&mut self, i: u32) {
        self.named += 1;
        let e = self.at(i);
        let inode = e.inode.as_deref().expect("indexed entries have an inode");
        if slot_of(inode)
            .compare_exchange(NIL, i, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            return;
        }
        let h = name_hash(&e.name);
        let slab = &self.slab;
        self.multi.insert_unique(h, i, |&j| {
            name_hash(&slab[j as usize].as_ref().expect("indexed").name)
        });
    }

    /// The first free offset from the cursor, wrapping around to `MIN_OFFSET` (Linux:
    /// `mtree_alloc_cyclic()`).
    fn take_off(&mut self) -> u32 {
        let off = self
            .by_off
            .first_free_from(self.next_off.max(MIN_OFFSET))
            .or_else(|| self.by_off.first_free_from(MIN_OFFSET))
            .expect("a directory holds fewer than 2^31 entries: each one costs memory");
        self.next_off = u64::from(off) + 1;
        off
    }

    /// Puts an entry at the head of the list with offset `off`, indexed by name if it has an
    /// inode; returns its position.
    fn insert(&mut self, name: Name, inode: Option<Arc<Inode>>, off: u32) -> u32 {
        let named = inode.is_some();
        let ino_type = inode.as_deref().map_or(InoType::new(0, 0), InoType::of);
        let e = Entry {
            name,
            inode,
            ino_type,
            off,
            prev: NIL,
            next: self.head,
        };
        let i = match self.free.pop() {
            Some(i) => {
                self.slab[i as usize] = Some(e);
                i
            }
            None => {
                self.slab.push(Some(e));
                u32::try_from(self.slab.len() - 1)
                    .ok()
                    .filter(|&i| i != NIL)
                    .expect("a directory holds fewer than 2^31 entries")
            }
        };
        if self.head != NIL {
            let h = self.head;
            self.at_mut(h).prev = i;
        }
        self.head = i;
        self.by_off.insert(off, i);
        if named {
            self.index_entry(i);
        }
        i
    }

    /// Takes the entry `name` of `inode` out of the list and the indexes; returns it.
    fn unlink(&mut self, name: &[u8], inode: &Inode) -> Option<Entry> {
        let slot = slot_of(inode);
        let i = self.find(name, inode, slot)?;
        let in_multi = !self.multi.is_empty()
            && self
                .multi
                .find_entry(name_hash(name), |&j| j == i)
                .map(|o| o.remove())
                .is_ok();
        if !in_multi {
            let cleared = slot.compare_exchange(i, NIL, Ordering::AcqRel, Ordering::Acquire);
            debug_assert!(
                cleared.is_ok(),
                "an entry not in multi is its inode's slot entry"
            );
        }
        self.named -= 1;
        let e = self.slab[i as usize]
            .take()
            .expect("a named entry is in the list");
        if e.prev == NIL {
            self.head = e.next;
        } else {
            self.at_mut(e.prev).next = e.next;
        }
        if e.next != NIL {
            self.at_mut(e.next).prev = e.prev;
        }
        self.by_off.remove(e.off);
        self.free.push(i);
        if self.slab.len() >= 64 && self.free.len() * 4 >= self.slab.len() * 3 {
            self.compact();
        }
        Some(e)
    }

    /// Moves the entries to the front of a smaller array, in list order, and renumbers the
    /// list, the indexes and the slots of the slot entries (the names' hashes do not change).
    fn compact(&mut self) {
        let mut to = vec![NIL; self.slab.len()];
        let mut slab = Vec::with_capacity((self.slab.len() - self.free.len()) * 2);
        let mut i = self.head;
        while i != NIL {
            let mut e = self.slab[i as usize].take().expect("listed");
            to[i as usize] = slab.len() as u32;
            i = e.next;
            let n = slab.len() as u32;
            e.prev = if n == 0 { NIL } else { n - 1 };
            e.next = if i == NIL { NIL } else { n + 1 };
            slab.push(Some(e));
        }
        self.head = if slab.is_empty() { NIL } else { 0 };
        self.slab = slab;
        self.free = Vec::new();
        for i in self.multi.iter_mut() {
            *i = to[*i as usize];
        }
        self.by_off.renumber(&to);
        self.reserved = self.reserved.map(|i| to[i as usize]);
        let slab = &self.slab;
        self.multi
            .shrink_to_fit(|&j| name_hash(&slab[j as usize].as_ref().expect("indexed").name));
        for (old, &new) in to.iter().enumerate() {
            let Some(inode) = slab
                .get(new as usize)
                .and_then(|e| e.as_ref())
                .and_then(|e| e.inode.as_deref())
            else {
                continue;
            };
            let in_multi = !self.multi.is_empty()
                && self
                    .multi
                    .find(
                        name_hash(&slab[new as usize].as_ref().expect("filled").name),
                        |&j| j == new,
                    )
                    .is_some();
            if !in_multi {
                let moved = slot_of(inode).compare_exchange(
                    old as u32,
                    new,
                    Ordering::AcqRel,
                    Ordering::Acquire,
                );
                debug_assert!(moved.is_ok(), "a slot entry's inode's slot names it");
            }
        }
    }

    /// The entries a listing at position `pos` (past `..`) returns: from the entry with the
    /// largest offset not above `pos`, or from the head if there is none (Linux:
    /// `offset_dir_lookup()`; `FIRST_POS` is below every offset).
    fn listing_from(&self, pos: u64) -> impl Iterator<Item = &Entry> {
        let key = u32::try_from(pos).unwrap_or(u32::MAX);
        let mut i = self.by_off.last_at_or_below(key).unwrap_or(self.head);
        std::iter::from_fn(move || {
            while i != NIL {
                let e = self.at(i);
                i = e.next;
                if e.inode.is_some() {
                    return Some(e);
                }
            }
            None
        })
    }
}

/// The entries of a tmpfs directory.
///
/// A listing walks the list from the entry its position names, so a `getdents64` cursor
/// (the offset of the next entry to return) returns entries that existed when the listing
/// passed them and not those created at the head since; a listing that reached the end stays
/// there (`END_POS`) until it is rewound (Linux: `offset_iterate_dir()` in fs/libfs.c).
pub(crate) struct DirData {
    /// Protects: the entry maps. Taken under the VFS inode lock for changes; shared by readdir
    /// and lookup. Order: after the directory's inode lock; innermost.
    inner: RwLock<Entries>,
    /// The instance's accounting, which every create and unlink in this directory charges:
    /// one reference per directory, where a reference in every node cost a word per file and
    /// a count taken and dropped per file made and freed, and the way through the superblock
    /// ([`super::counters`]) two dynamic calls per create and unlink.
    pub(super) counters: CountersRef,
}

impl DirData {
    pub(super) fn new(counters: CountersRef) -> DirData {
        DirData {
            inner: RwLock::default(),
            counters,
        }
    }

    /// The inode named `name`, by a walk of the whole directory: tmpfs's `lookup`, which the
    /// VFS calls only to check in debug builds that the dcache is complete.
    pub(crate) fn get(&self, name: &[u8]) -> Option<Arc<Inode>> {
        self.inner.read().find_by_walk(name).cloned()
    }

    /// Adds an entry at the head of the list with a new offset, or in the place reserved for
    /// its name.
    pub(crate) fn add(&self, name: &Name, inode: Arc<Inode>) {
        let mut e = self.inner.write();
        // A reservation waits for its name (the whiteout, added under the same inode lock).
        if let Some(r) = e.reserved {
            if *e.at(r).name == **name {
                e.reserved = None;
                let slot = e.at_mut(r);
                slot.ino_type = InoType::of(&inode);
                slot.inode = Some(inode);
                e.index_entry(r);
                return;
            }
        }
        let off = e.take_off();
        e.insert(name.clone(), Some(inode), off);
    }

    /// Removes the entry `name` of `inode`.
    pub(crate) fn remove(&self, name: &[u8], inode: &Inode) -> Option<Arc<Inode>> {
        self.inner.write().unlink(name, inode).and_then(|e| e.inode)
    }

    /// The offset a rename to `name` gives the moved entry: the replaced entry's (`tgt`, the
    /// inode `name` has), or a new one (Linux: `simple_offset_add()` of the new dentry at the
    /// start of `shmem_rename2()`, then `simple_offset_rename()`). Call before anything else
    /// takes an offset here.
    fn rename_offset(&self, name: &[u8], tgt: Option<&Inode>) -> u32 {
        let mut e = self.inner.write();
        match tgt.and_then(|t| e.find(name, t, slot_of(t))) {
            Some(i) => e.at(i).off,
            None => e.take_off(),
        }
    }

    /// Adds the entry a rename moved here: at the head, with the offset
    /// [`rename_offset`](Self::rename_offset) gave.
    fn add_moved(&self, name: &[u8], inode: Arc<Inode>, off: u32) {
        self.inner.write().insert(Name::new(name), Some(inode), off);
    }

    /// Puts `inode` under the existing `name` of `had`, which keeps its offset and moves to
    /// the head; returns the inode it had (one side of `RENAME_EXCHANGE`: Linux's
    /// `simple_offset_rename_exchange()` swaps the offsets with the dentries, `d_exchange()`
    /// moves both to the heads).
    fn swap_in(&self, name: &[u8], had: &Inode, inode: Arc<Inode>) -> Option<Arc<Inode>> {
        let mut e = self.inner.write();
        let old = e.unlink(name, had)?;
        e.insert(old.name, Some(inode), old.off);
        old.inode
    }

    /// Takes a new offset and head place now for `name`, added later.
    pub(super) fn reserve(&self, name: &[u8]) {
        let mut e = self.inner.write();
        let off = e.take_off();
        let i = e.insert(Name::new(name), None, off);
        e.reserved = Some(i);
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.inner.read().named == 0
    }
}

/// An open tmpfs directory.
pub(crate) struct DirFile;

impl FileOps for DirFile {
    /// Linux: `offset_readdir()` and `dir_emit_dots()`. Each entry's `next_pos` is the offset
    /// of the entry after it, or `END_POS` for the last, and `*pos` ends at the offset of the
    /// first entry not accepted, or at `END_POS`.
    ///
    /// # Locking
    /// The caller holds the directory's inode lock shared; takes `DirData::inner` shared.
    fn readdir(
        &self,
        file: &FileDescription,
        pos: &mut u64,
        sink: &mut dyn FnMut(DirEntry<'_>) -> bool,
    ) -> Result<()> {
        let inode = file.inode();
        let node = Node::of(inode).ok_or(Errno::ENOTDIR)?;
        let d = node.dir()?;
        if *pos == 0 {
            if !sink(DirEntry {
                name: b".",
                ino: inode.ino(),
                d_type: 4,
                next_pos: DOTDOT_POS,
            }) {
                return Ok(());
            }
            *pos = DOTDOT_POS;
        }
        let e = d.inner.read();
        if *pos == DOTDOT_POS {
            let pino = file
                .path()
                .dentry
                .parent()
                .and_then(|p| p.inode().map(|i| i.ino()))
                .unwrap_or(inode.ino());
            if !sink(DirEntry {
                name: b"..",
                ino: pino,
                d_type: 4,
                next_pos: e
                    .listing_from(FIRST_POS)
                    .next()
                    .map_or(END_POS, |n| u64::from(n.off)),
            }) {
                return Ok(());
            }
            *pos = FIRST_POS;
        }
        if *pos == END_POS {
            return Ok(());
        }
        let mut entries = e.listing_from(*pos).peekable();
        while let Some(ent) = entries.next() {
            *pos = u64::from(ent.off);
            let next_pos = entries.peek().map_or(END_POS, |n| u64::from(n.off));
            if !sink(DirEntry {
                name: &ent.name,
                ino: ent.ino_type.ino(ent.inode.as_ref()),
                d_type: ent.ino_type.d_type(),
                next_pos,
            }) {
                return Ok(());
            }
        }
        *pos = END_POS;
        Ok(())
    }
    fn llseek(
        &self,
        _file: &FileDescription,
        offset: i64,
        whence: Whence,
        cur: u64,
    ) -> Result<u64> {
        let new = match whence {
            Whence::SET => offset,
            Whence::CUR => i64::try_from(cur)
                .map_err(|_| Errno::EINVAL)?
                .checked_add(offset)
                .ok_or(Errno::EINVAL)?,
            _ => return Err(Errno::EINVAL),
        };
        if new < 0 {
            return Err(Errno::EINVAL);
        }
        Ok(new as u64)
    }

    fn release(&self, file: &FileDescription) {
        if let Some(n) = Node::of(file.inode()) {
            n.drop_hold(file.inode());
        }
    }
}

/// Renames an entry; the VFS checked everything that does not depend on tmpfs.
#[allow(clippy::too_many_arguments)] // Reason: InodeOps::rename's, as Linux's `rename`.
pub(super) fn rename(
    old_node: &Node,
    old_dir: &Inode,
    old_name: &[u8],
    src: &Arc<Inode>,
    new_dir: &Inode,
    new_name: &[u8],
    tgt: Option<&Arc<Inode>>,
    flags: RenameFlags,
    whiteout: Option<&NewInode<'_>>,
) -> Result<Option<Arc<Inode>>> {
    let new_node = Node::of(new_dir).ok_or(Errno::EXDEV)?;
    let od = old_node.dir()?;
    let nd = new_node.dir()?;
    let same_dir = std::ptr::eq(old_dir, new_dir);
    let src = src.clone();
    // Linux: `simple_rename_timestamp()` in fs/libfs.c stamps the old directory, the new one,
    // the moved inode and the replaced one, each with its own `inode_set_ctime_current()`.
    let stamp_dirs = |old_delta: i32, new_delta: i32, old_size: i64, new_size: i64| {
        let now = old_dir.current_time();
        old_dir.write_attrs(|w| {
            w.add_nlink(old_delta);
            w.set_size(old_dir.size().saturating_add_signed(old_size));
            w.set_mtime(now);
            w.set_ctime(now);
        });
        if !same_dir {
            let now = new_dir.current_time();
            new_dir.write_attrs(|w| {
                w.add_nlink(new_delta);
                w.set_size(new_dir.size().saturating_add_signed(new_size));
                w.set_mtime(now);
                w.set_ctime(now);
            });
        }
    };
    let bogo = BOGO_DIRENT_SIZE as i64;
    if flags.contains(RenameFlags::EXCHANGE) {
        let tgt = tgt.ok_or(Errno::ENOENT)?.clone();
        // Each name keeps its offset; the target moves to the head first.
        od.swap_in(old_name, &src, tgt.clone());
        nd.swap_in(new_name, &tgt, src.clone());
        let (mut o, mut n) = (0, 0);
        if !same_dir {
            if src.is_dir() {
                o -= 1;
                n += 1;
            }
            if tgt.is_dir() {
                n -= 1;
                o += 1;
            }
        }
        stamp_dirs(o, n, 0, 0);
        src.touch_ctime(Stamp::Ctime);
        tgt.touch_ctime(Stamp::Ctime);
        return Ok(None);
    }
    let (mut o, mut n, mut nsize) = (0, 0, bogo);
    let new_off = nd.rename_offset(new_name, tgt.map(|t| &**t));
    let tgt = tgt.cloned();
    if let Some(tgt) = &tgt {
        if Arc::ptr_eq(tgt, &src) {
            return Ok(None);
        }
        if let Some(tn) = Node::of(tgt) {
            if let Ok(td) = tn.dir() {
                if !td.is_empty() {
                    return Err(Errno::ENOTEMPTY);
                }
            }
        }
    }
    // The whiteout comes first: if it cannot be made (no inode left), nothing has moved
    // (Linux: `shmem_whiteout()` before `simple_offset_rename()` in `shmem_rename2()`). It
    // takes its offset after the moved entry's, and its place in the listing before it.
    let whiteout = match whiteout {
        Some(new) if flags.contains(RenameFlags::WHITEOUT) => {
            Some(old_node.make_whiteout(old_dir, old_name, new)?)
        }
        _ => None,
    };
    let mut replaced = None;
    if let Some(tgt) = tgt {
        nd.remove(new_name, &tgt);
        nsize -= bogo;
        // The replaced inode is unlinked first: stamped, and the new directory takes its
        // stamp (Linux: `shmem_rename2()` calls `shmem_unlink()`).
        let now = tgt.current_time();
        if tgt.is_dir() {
            n -= 1;
            tgt.write_attrs(|w| {
                w.set_nlink(0);
                w.set_ctime(now);
            });
        } else {
            if tgt.nlink() > 1 {
                od.counters.free_inode();
            }
            tgt.write_attrs(|w| {
                w.add_nlink(-1);
                w.set_ctime(now);
            });
        }
        new_dir.write_attrs(|w| {
            w.set_mtime(now);
            w.set_ctime_to(now);
        });
        if let Some(tn) = Node::of(&tgt) {
            tn.maybe_release_in(&tgt, &nd.counters);
        }
        replaced = Some(tgt);
    }
    od.remove(old_name, &src);
    // The moved entry goes to the head; the whiteout, made first, comes after it.
    nd.add_moved(new_name, src.clone(), new_off);
    if let Some(w) = &whiteout {
        od.add(&Name::from(old_name), w.clone());
    }
    if src.is_dir() && !same_dir {
        o -= 1;
        n += 1;
    }
    if same_dir {
        stamp_dirs(o + n, 0, nsize - bogo, 0);
    } else {
        stamp_dirs(o, n, -bogo, nsize);
    }
    src.touch_ctime(Stamp::Ctime);
    if let Some(tgt) = replaced {
        tgt.touch_ctime(Stamp::Ctime);
    }
    Ok(whiteout)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// The names of directory `fd`, with their inode numbers, from `getdents64`.
    fn listing(task: &crate::Task, fd: i32) -> BTreeMap<Vec<u8>, u64> {
        task.lseek(fd, 0, Whence::SET).unwrap();
        let mut out = BTreeMap::new();
        let mut buf = vec![0u8; 4096];
        loop {
            let n = task.getdents64(fd, &mut buf).unwrap();
            if n == 0 {
                return out;
            }
            let mut at = 0;
            while at < n {
                let ino = u64::from_ne_bytes(buf[at..at + 8].try_into().unwrap());
                let reclen = usize::from(u16::from_ne_bytes([buf[at + 16], buf[at + 17]]));
                let name = &buf[at + 19..at + reclen];
                let name = &name[..name.iter().position(|&b| b == 0).unwrap()];
                if name != b"." && name != b".." {
                    assert!(out.insert(name.to_vec(), ino).is_none(), "listed twice");
                }
                at += reclen;
            }
        }
    }

    /// A name's removal frees its inode's slot for the inode's next name, so that `multi`
    /// holds only names whose inode's slot is taken by another (white-box: `multi` is the cost
    /// of hard links, and would otherwise grow with every link made after the first name went).
    #[test]
    fn a_removed_name_gives_its_slot_to_the_next() {
        use crate::abi::{AtFlags, OpenFlags, AT_FDCWD};
        let vfs = crate::Vfs::new();
        let task = vfs.task(crate::Cred::root());
        let fd = task
            .openat(AT_FDCWD, "/x", OpenFlags::CREAT | OpenFlags::RDWR, 0o644)
            .unwrap();
        let link = |from: &str, to: &str| {
            task.linkat(AT_FDCWD, from, AT_FDCWD, to, AtFlags::empty())
                .unwrap();
        };
        let root = task
            .openat(AT_FDCWD, "/", OpenFlags::RDONLY | OpenFlags::DIRECTORY, 0)
            .unwrap();
        let root_inode = task.fget(root).unwrap().inode().clone();
        let multi = || {
            let node = Node::of(&root_inode).unwrap();
            let n = node.dir().unwrap().inner.read().multi.len();
            n
        };
        link("/x", "/y");
        assert_eq!(multi(), 1, "the second name of an inode is in multi");
        task.unlinkat(AT_FDCWD, "/x", AtFlags::empty()).unwrap();
        link("/y", "/z");
        assert_eq!(
            multi(),
            1,
            "the name made after the first went takes its slot"
        );
        task.close(fd).unwrap();
        task.close(root).unwrap();
    }

    /// A listing gives every name its inode's number and type, also for numbers too large
    /// for an entry's packed word ([`InoType`]: those are read from the inode) and beside
    /// the types of small numbers. Oracle: `fstatat` of each name. Fails if the packed word
    /// keeps only the low bits of a large number or loses the type.
    #[test]
    fn listings_give_large_inode_numbers_and_every_type() {
        use crate::abi::{AtFlags, OpenFlags, AT_FDCWD};
        let vfs = crate::Vfs::new();
        let task = vfs.task(crate::Cred::root());
        let make = |name: &str| {
            let fd = task
                .openat(AT_FDCWD, name, OpenFlags::CREAT | OpenFlags::WRONLY, 0o644)
                .unwrap();
            task.close(fd).unwrap();
        };
        task.mkdirat(AT_FDCWD, "/d", 0o755).unwrap();
        make("/d/small");
        task.mkdirat(AT_FDCWD, "/d/subdir", 0o755).unwrap();
        task.symlinkat("small", AT_FDCWD, "/d/link").unwrap();
        let root = task
            .openat(AT_FDCWD, "/", OpenFlags::RDONLY | OpenFlags::DIRECTORY, 0)
            .unwrap();
        let sb = task.fget(root).unwrap().inode().sb().clone();
        for (i, next) in [(1u64 << 28) - 1, 1 << 28, (1 << 32) + 7, u64::MAX >> 1]
            .into_iter()
            .enumerate()
        {
            sb.skip_inos_to(next);
            make(&format!("/d/far{i}"));
        }
        let d = task
            .openat(AT_FDCWD, "/d", OpenFlags::RDONLY | OpenFlags::DIRECTORY, 0)
            .unwrap();
        let listed = listing(&task, d);
        assert_eq!(listed.len(), 7, "{listed:?}");
        let mut far = 0;
        for (name, ino) in &listed {
            let path = format!("/d/{}", String::from_utf8_lossy(name));
            let st = task
                .fstatat(AT_FDCWD, &path, AtFlags::SYMLINK_NOFOLLOW)
                .unwrap();
            assert_eq!(*ino, st.ino, "{path}");
            far += usize::from(st.ino >= (1 << 28) - 1);
        }
        assert_eq!(far, 4, "the large numbers were made: {listed:?}");
        // Types, from the same listing (`d_type` is byte 18 of each record).
        task.lseek(d, 0, Whence::SET).unwrap();
        let mut buf = vec![0u8; 4096];
        let n = task.getdents64(d, &mut buf).unwrap();
        let mut types = BTreeMap::new();
        let mut at = 0;
        while at < n {
            let reclen = usize::from(u16::from_ne_bytes([buf[at + 16], buf[at + 17]]));
            let name = &buf[at + 19..at + reclen];
            let name = &name[..name.iter().position(|&b| b == 0).unwrap()];
            types.insert(name.to_vec(), buf[at + 18]);
            at += reclen;
        }
        assert_eq!(types[&b"small"[..]], 8);
        assert_eq!(types[&b"subdir"[..]], 4);
        assert_eq!(types[&b"link"[..]], 10);
        assert_eq!(types[&b"far3"[..]], 8);
        task.close(d).unwrap();
        task.close(root).unwrap();
    }

    /// Entries are found without a name index (`Node::slot`, `Entries::multi`): hard links
    /// in one directory and across two, renames over other names (over another link of the
    /// same inode too, which changes nothing), exchanges, and growth and shrinkage past the
    /// array's compaction, in a fixed pseudo-random sequence checked against a model of the
    /// names (naive oracle: a map of names to inode numbers; the calls' semantics are the
    /// differential suite's to check). After each phase every name is listed once with its
    /// inode and stats to it with its link count, and at the end every name unlinks and both
    /// directories are empty. Fails if an entry is not found where its name is (a name left
    /// listed after its unlink, a panic of the slot's checks in debug builds).
    #[test]
    fn names_are_found_through_links_renames_and_compactions() {
        use crate::abi::{AtFlags, OpenFlags, RenameFlags, AT_FDCWD};
        let vfs = crate::Vfs::new();
        let task = vfs.task(crate::Cred::root());
        let dirs = ["/a", "/b"];
        for d in dirs {
            task.mkdirat(AT_FDCWD, d, 0o755).unwrap();
        }
        let dfd: Vec<i32> = dirs
            .iter()
            .map(|d| {
                task.openat(AT_FDCWD, *d, OpenFlags::RDONLY | OpenFlags::DIRECTORY, 0)
                    .unwrap()
            })
            .collect();
        let mut model: BTreeMap<(usize, Vec<u8>), u64> = BTreeMap::new();
        let path = |d: usize, n: &[u8]| format!("{}/{}", dirs[d], String::from_utf8_lossy(n));
        let mut rng = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = |m: u64| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng % m
        };
        let mut checks = 0;
        for phase in 0..6 {
            let growing = phase % 2 == 0;
            for _ in 0..1500 {
                let d = next(2) as usize;
                let name = format!("n{}", next(150)).into_bytes();
                let any = |k: u64| model.keys().nth(k as usize).cloned();
                let pick = if model.is_empty() {
                    None
                } else {
                    any(next(model.len() as u64))
                };
                match (next(10), pick) {
                    (0..=3, _) if growing && !model.contains_key(&(d, name.clone())) => {
                        let fd = task
                            .openat(
                                AT_FDCWD,
                                path(d, &name).as_str(),
                                OpenFlags::CREAT | OpenFlags::EXCL | OpenFlags::RDWR,
                                0o644,
                            )
                            .unwrap();
                        let ino = task.fstat(fd).unwrap().ino;
                        task.close(fd).unwrap();
                        model.insert((d, name), ino);
                    }
                    (4..=6, Some((sd, sn)))
                        if growing && !model.contains_key(&(d, name.clone())) =>
                    {
                        task.linkat(
                            AT_FDCWD,
                            path(sd, &sn).as_str(),
                            AT_FDCWD,
                            path(d, &name).as_str(),
                            AtFlags::empty(),
                        )
                        .unwrap();
                        let ino = model[&(sd, sn)];
                        model.insert((d, name), ino);
                    }
                    (7, Some((sd, sn))) => {
                        // A rename, over whatever `name` is (nothing changes when it is
                        // another link of the same inode).
                        let (from, to) = ((sd, sn), (d, name));
                        task.renameat2(
                            AT_FDCWD,
                            path(from.0, &from.1).as_str(),
                            AT_FDCWD,
                            path(to.0, &to.1).as_str(),
                            RenameFlags::empty(),
                        )
                        .unwrap();
                        let ino = model[&from];
                        if from != to && model.get(&to) != Some(&ino) {
                            model.remove(&from);
                            model.insert(to, ino);
                        }
                    }
                    (8, Some(a)) => {
                        if let Some(b) = any(next(model.len() as u64)).filter(|b| *b != a) {
                            task.renameat2(
                                AT_FDCWD,
                                path(a.0, &a.1).as_str(),
                                AT_FDCWD,
                                path(b.0, &b.1).as_str(),
                                RenameFlags::EXCHANGE,
                            )
                            .unwrap();
                            let (ia, ib) = (model[&a], model[&b]);
                            model.insert(a, ib);
                            model.insert(b, ia);
                        }
                    }
                    (_, Some(k)) if !growing || next(4) == 0 => {
                        task.unlinkat(AT_FDCWD, path(k.0, &k.1).as_str(), AtFlags::empty())
                            .unwrap();
                        model.remove(&k);
                    }
                    _ => {}
                }
            }
            for d in 0..2 {
                let want: BTreeMap<Vec<u8>, u64> = model
                    .iter()
                    .filter(|((md, _), _)| *md == d)
                    .map(|((_, n), &i)| (n.clone(), i))
                    .collect();
                assert_eq!(listing(&task, dfd[d]), want, "phase {phase}, {}", dirs[d]);
                for (n, &ino) in &want {
                    let st = task
                        .fstatat(AT_FDCWD, path(d, n).as_str(), AtFlags::empty())
                        .unwrap();
                    let links = model.values().filter(|&&i| i == ino).count() as u64;
                    assert_eq!((st.ino, st.nlink), (ino, links));
                    checks += 1;
                }
            }
        }
        for (d, n) in model.keys() {
            task.unlinkat(AT_FDCWD, path(*d, n).as_str(), AtFlags::empty())
                .unwrap();
        }
        for (d, fd) in dfd.into_iter().enumerate() {
            assert!(listing(&task, fd).is_empty());
            task.close(fd).unwrap();
            task.unlinkat(AT_FDCWD, dirs[d], AtFlags::REMOVEDIR)
                .unwrap();
        }
        assert!(checks > 300, "{checks} names checked");
    }

    /// `OffIndex` against a B-tree of the live offsets (the naive model), under random
    /// inserts (mostly at the end, as the offset cursor gives them, sometimes below),
    /// removals (of the newest, the oldest, any), compactions and both queries.
    #[test]
    fn off_index_answers_as_a_btree_of_the_live_offsets() {
        let mut rng = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move |n: u64| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng % n
        };
        let mut checks = 0u32;
        for round in 0..40 {
            let mut ix = OffIndex::default();
            let mut model: BTreeMap<u32, u32> = BTreeMap::new();
            let mut cursor = 3u32;
            for step in 0..2000u32 {
                let live: Vec<u32> = model.keys().copied().collect();
                match next(10) {
                    0..=4 => {
                        // The cursor's next free offset, or a free one below it.
                        let off = if next(8) == 0 && cursor > 3 {
                            let o = 3 + next(u64::from(cursor - 3)) as u32;
                            if model.contains_key(&o) {
                                continue;
                            }
                            o
                        } else {
                            let o = ix.first_free_from(u64::from(cursor)).expect("room");
                            cursor = o + 1;
                            o
                        };
                        ix.insert(off, step);
                        model.insert(off, step);
                    }
                    5..=8 if !live.is_empty() => {
                        let off = match next(3) {
                            0 => *live.last().expect("non-empty"),
                            1 => live[0],
                            _ => live[next(live.len() as u64) as usize],
                        };
                        ix.remove(off);
                        model.remove(&off);
                    }
                    9 if round % 2 == 0 => {
                        // A compaction: positions renumbered densely in offset order.
                        let top = model.values().copied().max().unwrap_or(0) as usize;
                        let mut to = vec![NIL; top + 1];
                        for (rank, &p) in model.values().enumerate() {
                            to[p as usize] = 5000 + rank as u32;
                        }
                        ix.renumber(&to);
                        for p in model.values_mut() {
                            *p = to[*p as usize];
                        }
                    }
                    _ => {}
                }
                let probe = next(u64::from(cursor) + 8) as u32;
                let want = model.range(..=probe).next_back().map(|(_, &p)| p);
                assert_eq!(
                    ix.last_at_or_below(probe),
                    want,
                    "round {round} step {step}"
                );
                let mut free = u64::from(probe.max(3));
                while model.contains_key(&(free as u32)) {
                    free += 1;
                }
                assert_eq!(
                    ix.first_free_from(u64::from(probe.max(3))),
                    Some(free as u32),
                    "round {round} step {step}"
                );
                let listed: Vec<(u32, u32)> =
                    ix.v.iter().copied().filter(|&(_, p)| p != NIL).collect();
                assert_eq!(
                    listed,
                    model.iter().map(|(&o, &p)| (o, p)).collect::<Vec<_>>()
                );
                assert_eq!(ix.dead, ix.v.len() - listed.len());
                checks += 1;
            }
        }
        assert!(checks > 70_000, "{checks} checks");
    }
}
