//! The per-directory table of cached children: lock-free for readers, one writer at a time.
//! Linux: the dentry hash table and `__d_lookup_rcu()` in fs/dcache.c.
//!
//! # Fast path
//! [`ChildTable::find`] runs under an epoch guard (`sync::rcu`, the walk's, taken once per
//! path walk). It loads the bucket array and one chain, comparing each node's stored
//! `hash_len` (hash and length in one word) before it compares name bytes, and returns the
//! node. It takes no lock and performs no atomic read-modify-write. A removed node or array is
//! retired through the epoch collector, so a reader that reached it may keep reading it until
//! its guard ends.
//!
//! # Why a hit needs no validation
//! A node says "`name` in this directory is `dentry`", and says it for as long as it is in the
//! table: its contents are written before it is published (a `Release` store that the
//! reader's loads pair with) and never after, and every change of the namespace changes the
//! table by unpublishing the nodes it falsifies and publishing new ones (`Dentry::d_delete`,
//! `d_instantiate`, `d_move`, `d_exchange`), under the writer lock. A reader that reaches a
//! node read the pointer to it, directly or through a chain, at a moment when the node was in
//! the table: a chain node keeps its `next` when unlinked, so a walk that started on the live
//! chain only passes through nodes that were linked at some moment after it started. So the
//! lookup takes effect at that moment; the caller reads nothing of the hit that can have
//! changed since (a dentry's inode is immutable; its name and parent are not read by the lock-
//! free walk). Linux needs `d_seq` for this step because it compares the name and reads the
//! inode in the dentry itself, which rename and unlink change in place; here both are
//! immutable. A miss falls back to the locked lookup (`namei::lookup_slow`), which is
//! authoritative.
//!
//! Resizing copies every node into a new bucket array and retires the old array with its nodes
//! as a whole. A reader still on the old array sees the table as it was when the array was
//! replaced, a moment after the reader loaded it: it may miss a child added since (a miss falls
//! back), or find one removed since, which it could equally have found a moment earlier.
//!
//! Checked by `vfs::dcache_check` under loom and shuttle (docs/locking.md lists the scenarios).
#![allow(unsafe_code)] // Reason: lock-free chains reclaimed through seize need raw pointers.

use std::ptr;
use std::sync::atomic::{AtomicUsize as StdAtomicUsize, Ordering as StdOrdering};
use std::sync::{Arc, LazyLock};

use super::dentry::Dentry;
use super::name::Name;
use crate::sync::atomic::{AtomicPtr, AtomicU32, Ordering};
use crate::sync::cell::Frozen;
use crate::sync::lock::{Mutex, MutexGuard};
use crate::sync::rcu::{self, Collector, Guard};

/// Enters a read-side critical section covering a whole path walk (the RCU analogue).
pub(crate) use crate::sync::rcu::read as rcu_read;

static SEED: LazyLock<u64> = LazyLock::new(|| {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let a = &t as *const u64 as u64;
    (t ^ a.rotate_left(29)).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1
});

/// The seed of name hashes for this process (read once per walk).
#[inline]
pub(crate) fn hash_seed() -> u64 {
    *SEED
}

const MIX_K: u64 = 0x517c_c1b7_2722_0a95;
const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;
const SLASHES: u64 = 0x2f2f_2f2f_2f2f_2f2f;

#[inline(always)]
fn mix(h: u64, w: u64) -> u64 {
    (h.rotate_left(5) ^ w).wrapping_mul(MIX_K)
}

#[inline(always)]
fn finish(h: u64, len: usize) -> u64 {
    let mut h = h ^ (h >> 29);
    h = h.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h ^= h >> 32;
    ((len as u64) << 32) | (h & 0xffff_ffff)
}

#[inline(always)]
fn load8(s: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&s[at..at + 8]);
    u64::from_le_bytes(a)
}

/// The first `n < 8` bytes of `s[at..]` as a little-endian word, zero-padded, without reading
/// outside `s`.
#[inline(always)]
fn load_partial(s: &[u8], at: usize, n: usize) -> u64 {
    if n == 0 {
        return 0;
    }
    if s.len() >= 8 {
        // One load of the eight bytes that end at `at + n`, shifted so the wanted bytes land
        // at the bottom.
        let end = at + n;
        if end >= 8 {
            return load8(s, end - 8) >> ((8 - n) * 8);
        }
    }
    // A short string: two loads that may overlap, the second shifted to end at byte `n`
    // (the overlapping bytes are the same in both, so OR keeps them), instead of a loop over
    // the bytes (names of find's walks are mostly shorter than eight bytes).
    let b = &s[at..at + n];
    let word = |r: &[u8]| -> u64 {
        match *r {
            [a, b, c, d] => u64::from(u32::from_le_bytes([a, b, c, d])),
            [a, b] => u64::from(u16::from_le_bytes([a, b])),
            _ => 0,
        }
    };
    if n >= 4 {
        word(&b[..4]) | (word(&b[n - 4..]) << ((n - 4) * 8))
    } else if n >= 2 {
        word(&b[..2]) | (word(&b[n - 2..]) << ((n - 2) * 8))
    } else {
        u64::from(b[0])
    }
}

/// The bytes of `s` (at most 7) as a little-endian word, zero-padded ([`Name::inline_word`]).
#[inline(always)]
pub(crate) fn load_short(s: &[u8]) -> u64 {
    debug_assert!(s.len() < 8);
    load_partial(s, 0, s.len())
}

/// Hash and length of a name in one word: `len << 32 | hash`, compared before the bytes.
/// Linux: `hash_len` of `struct qstr`.
#[inline]
pub(crate) fn hash_len(seed: u64, name: &[u8]) -> u64 {
    let mut h = seed;
    let full = name.len() / 8;
    for k in 0..full {
        h = mix(h, load8(name, k * 8));
    }
    let rest = name.len() % 8;
    if rest != 0 {
        h = mix(h, load_partial(name, full * 8, rest));
    }
    finish(h, name.len())
}

/// Scans the component at the start of `s` (up to the first `/` or the end) and hashes it in
/// the same pass, eight bytes at a time; returns the component's length and its `hash_len`
/// (equal to [`hash_len`] of the component), or `None` if the component holds a NUL byte.
/// Linux: `hash_name()` in fs/namei.c.
#[inline]
pub(crate) fn hash_component_checked(seed: u64, s: &[u8]) -> Option<(usize, u64)> {
    let mut h = seed;
    let mut off = 0;
    loop {
        let rem = s.len() - off;
        let (word, avail) = if rem >= 8 {
            (load8(s, off), 8)
        } else {
            (load_partial(s, off, rem), rem)
        };
        let x = word ^ SLASHES;
        let valid = if avail == 8 {
            u64::MAX
        } else {
            (1u64 << (avail * 8)) - 1
        };
        let slash = x.wrapping_sub(ONES) & !x & HIGHS & valid;
        let nul = word.wrapping_sub(ONES) & !word & HIGHS & valid;
        if slash != 0 {
            let n = (slash.trailing_zeros() / 8) as usize;
            let below = (1u64 << (n * 8)).wrapping_sub(1);
            if nul & below != 0 {
                return None;
            }
            if n != 0 {
                h = mix(h, word & below);
            }
            return Some((off + n, finish(h, off + n)));
        }
        if nul != 0 {
            return None;
        }
        if avail < 8 {
            if avail != 0 {
                h = mix(h, word);
            }
            return Some((off + avail, finish(h, off + avail)));
        }
        h = mix(h, word);
        off += 8;
    }
}

/// Name equality for names of equal length, eight bytes at a time (no library call).
#[inline(always)]
fn same_name(a: &[u8], b: &[u8]) -> bool {
    // Every branch below is on `b`'s length: a chain walk passes the probe as `b`, so the
    // compiler specialises the walk's loop for it (a stored name's length is read from its
    // block, which would keep the loop general).
    let n = b.len();
    if a.len() != n {
        return false;
    }
    let a = &a[..n];
    let mut k = 0;
    while k + 8 <= n {
        if load8(a, k) != load8(b, k) {
            return false;
        }
        k += 8;
    }
    let rest = n - k;
    rest == 0 || load_partial(a, k, rest) == load_partial(b, k, rest)
}

/// A published child: immutable (`entry`) except `next`.
pub(crate) struct Node {
    entry: Frozen<Entry>,
    next: AtomicPtr<Node>,
}

// Four words, the 32-byte allocator class: one per cached name (issue 7, compact objects).
#[cfg(not(any(loom, feature = "shuttle")))]
const _: () = assert!(std::mem::size_of::<Node>() == 32);

/// What a node says: `name` (with its `hash_len`) in this directory is `dentry`.
struct Entry {
    hash_len: u64,
    /// The dentry's own name (`Dentry::name` at insertion): one copy per child, and a
    /// resize copies the pointer, not the bytes.
    name: Name,
    dentry: Arc<Dentry>,
}

impl Node {
    fn new(entry: Entry, next: *mut Node) -> *mut Node {
        Box::into_raw(Box::new(Node {
            entry: Frozen::new(entry),
            next: AtomicPtr::new(next),
        }))
    }

    /// The child this node names.
    #[inline(always)]
    pub(crate) fn dentry(&self) -> &Arc<Dentry> {
        &self.entry.get().dentry
    }
}

struct Buckets {
    mask: Frozen<usize>,
    slots: Frozen<Box<[AtomicPtr<Node>]>>,
    /// The table's bookkeeping, kept here rather than in every dentry (most dentries are
    /// files, with no table): read and written only by holders of the table's writer lock,
    /// which orders them, so plain `std` atomics (not the model-checked facade) suffice.
    counts: Counts,
}

/// Writer-side bookkeeping of a table.
#[derive(Default)]
struct Counts {
    len: StdAtomicUsize,
    negatives: StdAtomicUsize,
}

impl Counts {
    fn get(c: &StdAtomicUsize) -> usize {
        c.load(StdOrdering::Relaxed)
    }
    fn add(c: &StdAtomicUsize, delta: isize) {
        c.store(
            c.load(StdOrdering::Relaxed).wrapping_add_signed(delta),
            StdOrdering::Relaxed,
        );
    }
}

impl Buckets {
    fn with_slots(n: usize) -> Box<Buckets> {
        Box::new(Buckets {
            mask: Frozen::new(n - 1),
            slots: Frozen::new((0..n).map(|_| AtomicPtr::new(ptr::null_mut())).collect()),
            counts: Counts::default(),
        })
    }
    #[inline]
    fn slot(&self, hash_len: u64) -> &AtomicPtr<Node> {
        &self.slots.get()[(hash_len as usize) & *self.mask.get()]
    }
    fn len(&self) -> usize {
        self.slots.get().len()
    }
}

/// Most negative children one directory caches; past it, misses are not cached.
pub(crate) const MAX_NEGATIVE_CHILDREN: usize = 1024;
/// Slots of a table's first bucket array.
pub(crate) const MIN_SLOTS: usize = 8;

/// The children of one directory dentry.
pub(crate) struct ChildTable {
    buckets: AtomicPtr<Buckets>,
    /// Serialises writers of `buckets`, the chains and the array's counts.
    /// Order: after the directory's inode lock (shared or exclusive); innermost otherwise.
    writer: Mutex<()>,
    /// A word of the owning dentry's (its dead flag and mount count, `Dentry::state`), kept
    /// here to fill the padding after `writer`: the dentry is then 48 bytes, which with its
    /// `Arc` header is one 64-byte allocator class (issue 7, compact objects). A walk step
    /// reads it beside `buckets`. The table never touches it.
    pub(crate) owner_state: AtomicU32,
}

impl Default for ChildTable {
    fn default() -> Self {
        ChildTable {
            buckets: AtomicPtr::new(ptr::null_mut()),
            writer: Mutex::new(()),
            owner_state: AtomicU32::new(0),
        }
    }
}

/// Proof that the writer lock of a table is held.
pub(crate) struct TableWriter<'a> {
    table: &'a ChildTable,
    _lock: MutexGuard<'a, ()>,
}

impl ChildTable {
    /// Finds a node by name. See the module's `# Fast path`.
    #[inline]
    pub(crate) fn find<'g>(
        &self,
        hash_len: u64,
        name: &[u8],
        guard: &'g Guard,
    ) -> Option<&'g Node> {
        let b = rcu::protect(guard, &self.buckets, Ordering::Acquire);
        if b.is_null() {
            return None;
        }
        // SAFETY: a published bucket array is retired through the collector only after it
        // was unpublished (also when the owning table is dropped), and `guard` is active, so it is not reclaimed before `'g` ends, whatever happens to `self`.
        let b: &'g Buckets = unsafe { &*b };
        let mut p = rcu::protect(guard, b.slot(hash_len), Ordering::Acquire);
        // A short name is compared as one word, the stored name's own (the bytes need not be
        // loaded from anywhere else); a stored name whose `hash_len` matches has the same
        // length, so it is inline exactly when the probe is.
        let short = Name::fits_inline(name.len());
        let word = if short { Name::inline_word(name) } else { 0 };
        while !p.is_null() {
            // SAFETY: nodes reachable from a published chain are retired through the collector
            // only after being unlinked; `guard` keeps them alive.
            let n = unsafe { &*p };
            let e = n.entry.get();
            if e.hash_len == hash_len
                && if short {
                    e.name.word() == word
                } else {
                    same_name(&e.name, name)
                }
            {
                return Some(n);
            }
            p = rcu::protect(guard, &n.next, Ordering::Acquire);
        }
        None
    }

    /// Takes the writer lock.
    pub(crate) fn writer(&self) -> TableWriter<'_> {
        TableWriter {
            table: self,
            _lock: self.writer.lock(),
        }
    }
}

impl TableWriter<'_> {
    /// Finds a node while holding the writer lock (no guard needed: nothing is retired
    /// without this lock).
    pub(crate) fn find(&self, hash_len: u64, name: &[u8]) -> Option<&Arc<Dentry>> {
        let b = self.table.buckets.load(Ordering::Acquire);
        if b.is_null() {
            return None;
        }
        // SAFETY: only holders of the writer lock unpublish or retire arrays and nodes, and
        // we hold it, so everything reachable now stays valid while `self` lives.
        let b = unsafe { &*b };
        let mut p = b.slot(hash_len).load(Ordering::Acquire);
        while !p.is_null() {
            // SAFETY: as above.
            let n = unsafe { &*p };
            let e = n.entry.get();
            if e.hash_len == hash_len && *e.name == *name {
                return Some(&e.dentry);
            }
            p = n.next.load(Ordering::Acquire);
        }
        None
    }

    /// The current array, if any.
    fn buckets(&self) -> Option<&Buckets> {
        let b = self.table.buckets.load(Ordering::Acquire);
        // SAFETY: writer lock held (see `find`).
        (!b.is_null()).then(|| unsafe { &*b })
    }

    /// Number of cached negative children.
    pub(crate) fn negatives(&self) -> usize {
        self.buckets()
            .map_or(0, |b| Counts::get(&b.counts.negatives))
    }

    /// Publishes `dentry` under `name`; the caller checked the name is absent.
    pub(crate) fn insert(&mut self, hash_len: u64, name: Name, dentry: Arc<Dentry>) {
        let negative = dentry.inode().is_none();
        let mut b = self.table.buckets.load(Ordering::Acquire);
        if b.is_null() {
            b = Box::into_raw(Buckets::with_slots(MIN_SLOTS));
            self.table.buckets.store(b, Ordering::Release);
        } else {
            // SAFETY: writer lock held (see `find`).
            let cur = unsafe { &*b };
            if Counts::get(&cur.counts.len) + 1 > cur.len() * 2 {
                b = self.grow(cur);
            }
        }
        // SAFETY: writer lock held.
        let b = unsafe { &*b };
        Counts::add(&b.counts.len, 1);
        if negative {
            Counts::add(&b.counts.negatives, 1);
        }
        let slot = b.slot(hash_len);
        let node = Node::new(
            Entry {
                hash_len,
                name,
                dentry,
            },
            slot.load(Ordering::Relaxed),
        );
        slot.store(node, Ordering::Release);
    }

    /// Copies every node into an array four times larger, publishes it and retires the old one.
    fn grow(&self, old: &Buckets) -> *mut Buckets {
        let new = Buckets::with_slots(old.len() * 4);
        for (to, from) in [
            (&new.counts.len, &old.counts.len),
            (&new.counts.negatives, &old.counts.negatives),
        ] {
            to.store(Counts::get(from), StdOrdering::Relaxed);
        }
        for s in old.slots.get().iter() {
            let mut p = s.load(Ordering::Acquire);
            while !p.is_null() {
                // SAFETY: writer lock held.
                let n = unsafe { &*p };
                let e = n.entry.get();
                let slot = new.slot(e.hash_len);
                let copy = Node::new(
                    Entry {
                        hash_len: e.hash_len,
                        name: e.name.clone(),
                        dentry: e.dentry.clone(),
                    },
                    slot.load(Ordering::Relaxed),
                );
                slot.store(copy, Ordering::Relaxed);
                p = n.next.load(Ordering::Acquire);
            }
        }
        let new = Box::into_raw(new);
        let old_ptr = self.table.buckets.swap(new, Ordering::AcqRel);
        // SAFETY: the old array is unpublished; readers that still hold it are protected by
        // their guards; `free_buckets` frees it and the nodes still chained in it, which no
        // other retirement owns (removals after this point act on the new array).
        unsafe { rcu::retire(old_ptr, free_buckets) };
        rcu::flush();
        new
    }

    /// Unpublishes the node naming `dentry`, returning true if it was present.
    pub(crate) fn remove(&mut self, hash_len: u64, name: &[u8], dentry: &Dentry) -> bool {
        let b = self.table.buckets.load(Ordering::Acquire);
        if b.is_null() {
            return false;
        }
        // SAFETY: writer lock held.
        let mut link = unsafe { &*b }.slot(hash_len);
        loop {
            let p = link.load(Ordering::Acquire);
            if p.is_null() {
                return false;
            }
            // SAFETY: writer lock held.
            let n = unsafe { &*p };
            let e = n.entry.get();
            if e.hash_len == hash_len && *e.name == *name && ptr::eq(&*e.dentry, dentry) {
                link.store(n.next.load(Ordering::Acquire), Ordering::Release);
                // SAFETY: non-null (checked above); writer lock held.
                let counts = &unsafe { &*b }.counts;
                Counts::add(&counts.len, -1);
                if e.dentry.inode().is_none() {
                    Counts::add(&counts.negatives, -1);
                }
                // SAFETY: unlinked above; readers that reached it are protected by guards.
                unsafe { rcu::retire(p, rcu::reclaim_boxed::<Node>) };
                return true;
            }
            link = &n.next;
        }
    }

    /// Every child dentry (a snapshot of strong references).
    pub(crate) fn children(&self) -> Vec<Arc<Dentry>> {
        let mut out = Vec::with_capacity(self.buckets().map_or(0, |b| Counts::get(&b.counts.len)));
        let b = self.table.buckets.load(Ordering::Acquire);
        if b.is_null() {
            return out;
        }
        // SAFETY: writer lock held.
        for s in unsafe { &*b }.slots.get().iter() {
            let mut p = s.load(Ordering::Acquire);
            while !p.is_null() {
                // SAFETY: writer lock held.
                let n = unsafe { &*p };
                out.push(n.dentry().clone());
                p = n.next.load(Ordering::Acquire);
            }
        }
        out
    }
}

/// Reclaimer of a retired bucket array and the nodes chained in it.
///
/// # Safety
/// `ptr` came from `Box::into_raw` of a `Buckets` that is unreachable by any active reader.
unsafe fn free_buckets(ptr: *mut Buckets, _c: &Collector) {
    // SAFETY: guaranteed by the caller.
    let b = unsafe { Box::from_raw(ptr) };
    free_chains(&b);
}

fn free_chains(b: &Buckets) {
    for s in b.slots.get().iter() {
        let mut p = s.swap(ptr::null_mut(), Ordering::Acquire);
        while !p.is_null() {
            // SAFETY: chains of an unreachable array are owned by that array alone.
            let n = unsafe { Box::from_raw(p) };
            p = n.next.load(Ordering::Relaxed);
        }
    }
}

impl Drop for ChildTable {
    fn drop(&mut self) {
        // Relaxed: `&mut self` means every store to `buckets` happened before this drop.
        let b = self.buckets.load(Ordering::Relaxed);
        if !b.is_null() {
            // Children leave the dcache with the table: their pins go (`vfs::pin`), else a
            // pin and its dentry would keep each other.
            // SAFETY: `&mut self`: no writer runs, and the array is still ours.
            for s in unsafe { &*b }.slots.get().iter() {
                let mut p = s.load(Ordering::Acquire);
                while !p.is_null() {
                    // SAFETY: as above.
                    let n = unsafe { &*p };
                    if n.dentry().is_pinned() {
                        super::pin::unpin(n.dentry());
                    }
                    p = n.next.load(Ordering::Acquire);
                }
            }
            // SAFETY: the owning dentry is being dropped, so the array is unreachable for any
            // reader that enters from now on; a reader that reached one of its nodes earlier
            // (through a node of this table found under its guard) is protected by that guard,
            // so the array is retired rather than freed.
            unsafe { rcu::retire(b, free_buckets) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every partial load equals the bytes assembled one by one (the hashes and the name
    /// comparison all read through it, so a wrong load would agree with itself elsewhere).
    #[test]
    fn partial_loads_are_the_bytes_in_order_for_every_length_and_offset() {
        let text: Vec<u8> = (1..=24u8).map(|b| b.wrapping_mul(37)).collect();
        let mut checked = 0;
        for len in 0..=text.len() {
            let s = &text[..len];
            for at in 0..=len {
                for n in 0..8.min(len - at + 1) {
                    let mut want = 0u64;
                    for (k, &b) in s[at..at + n].iter().enumerate() {
                        want |= u64::from(b) << (8 * k);
                    }
                    assert_eq!(load_partial(s, at, n), want, "len {len} at {at} n {n}");
                    checked += 1;
                }
            }
        }
        assert_eq!(checked, 1956);
    }

    #[test]
    fn component_scan_hashes_like_hash_len_for_every_length_and_offset() {
        let s = hash_seed();
        let text = b"abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGH";
        for len in 0..40 {
            for pre in 0..9 {
                let mut path = vec![b'x'; pre];
                path.clear();
                path.extend_from_slice(&text[..len]);
                path.push(b'/');
                path.extend_from_slice(&text[..pre]);
                let (n, h) = hash_component_checked(s, &path).expect("no NUL");
                assert_eq!(n, len);
                assert_eq!(h, hash_len(s, &text[..len]), "len {len} tail {pre}");
                let (n2, h2) = hash_component_checked(s, &text[..len]).expect("no NUL");
                assert_eq!((n2, h2), (len, hash_len(s, &text[..len])));
            }
        }
        for (path, want) in [
            (&b"ab\0c/d"[..], None),
            (b"abcdefg\0", None),
            (b"abcdefgh/\0", Some(8)),
            (b"abc", Some(3)),
        ] {
            assert_eq!(
                hash_component_checked(s, path).map(|(n, _)| n),
                want,
                "{path:?}"
            );
        }
        assert_eq!(
            hash_component_checked(s, b"abcdefghij/x").map(|(_, h)| h),
            Some(hash_len(s, b"abcdefghij"))
        );
        assert!(same_name(b"abcdefghij", b"abcdefghij"));
        assert!(!same_name(b"abcdefghij", b"abcdefghiJ"));
        assert!(!same_name(b"abc", b"abd"));
    }

    #[test]
    fn hash_len_puts_length_in_the_high_word_and_differs_by_content() {
        let s = hash_seed();
        assert_eq!(hash_len(s, b"abc") >> 32, 3);
        assert_ne!(hash_len(s, b"abc"), hash_len(s, b"abd"));
        assert_ne!(hash_len(s, b"abcdefgh1"), hash_len(s, b"abcdefgh2"));
        assert_eq!(hash_len(s, b"same-name"), hash_len(s, b"same-name"));
    }
}
