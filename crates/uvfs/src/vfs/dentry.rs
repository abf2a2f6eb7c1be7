//! Directory entries: the name → inode cache. Linux: `struct dentry` in include/linux/dcache.h.
//!
//! A dentry's inode never changes: a negative dentry that becomes positive is replaced by a
//! new dentry (Linux turns the same dentry positive with `d_instantiate()`). Name and parent
//! change on rename, inside a write section of `seq`.

use std::sync::{Arc, Weak};

use super::dcache::{hash_len, hash_seed, ChildTable, TableWriter};
use super::inode::Inode;
use crate::sync::atomic::{AtomicU32, Ordering};
use crate::sync::cell::Frozen;
use crate::sync::lock::Mutex;
use crate::sync::rcu::Guard;
use crate::sync::SeqCount;

/// Dentry flag: unlinked, removed, or replaced; lookups in it find nothing.
const DEAD: u32 = 1;

/// Name and parent of a dentry, changed by rename.
struct Links {
    name: Arc<[u8]>,
    parent: Option<Weak<Dentry>>,
}

/// A directory entry.
pub struct Dentry {
    /// Identity sequence: bumped by every rename or removal of this dentry.
    /// Writers hold the parent directory's inode lock exclusive (both parents for rename).
    pub(crate) seq: SeqCount,
    flags: AtomicU32,
    /// Number of mounts whose mountpoint is this dentry (changed under the namespace lock).
    mounts: AtomicU32,
    /// Never changes; read by lock-free walkers that reached this dentry through a node.
    inode: Frozen<Option<Arc<Inode>>>,
    pub(crate) children: ChildTable,
    /// Protects: `name`, `parent`. Writers also hold the parent's inode lock.
    /// Order: innermost; never held across another lock.
    links: Mutex<Links>,
}

/// The result of the lock-free child lookup.
pub(crate) enum Cached<'g> {
    /// A current child (positive or negative).
    Hit(&'g Arc<Dentry>),
    /// Not cached, or changed while looking: use the locked lookup.
    Miss,
}

impl Dentry {
    /// The root dentry of a filesystem.
    pub fn new_root(inode: Arc<Inode>) -> Arc<Dentry> {
        Arc::new(Dentry::new(Arc::from(&b"/"[..]), None, Some(inode)))
    }

    /// A dentry for an unnamed inode (`O_TMPFILE`), never in a table. `linkable` says whether
    /// `linkat` may give it a name (false with `O_EXCL`).
    pub(crate) fn new_unhashed(
        parent: &Arc<Dentry>,
        name: &[u8],
        inode: Arc<Inode>,
        linkable: bool,
    ) -> Arc<Dentry> {
        if linkable {
            inode.set_linkable(true);
        }
        Arc::new(Dentry::new(
            Arc::from(name),
            Some(Arc::downgrade(parent)),
            Some(inode),
        ))
    }

    fn new(name: Arc<[u8]>, parent: Option<Weak<Dentry>>, inode: Option<Arc<Inode>>) -> Dentry {
        Dentry {
            seq: SeqCount::new(0),
            flags: AtomicU32::new(0),
            mounts: AtomicU32::new(0),
            inode: Frozen::new(inode),
            children: ChildTable::default(),
            links: Mutex::new(Links { name, parent }),
        }
    }

    /// The inode, or `None` for a negative dentry.
    #[inline]
    pub fn inode(&self) -> Option<&Arc<Inode>> {
        self.inode.get().as_ref()
    }

    /// Current name (a copy of the reference).
    pub fn name(&self) -> Arc<[u8]> {
        self.links.lock().name.clone()
    }

    /// Current parent; `None` at a filesystem root or once the parent is gone.
    pub fn parent(&self) -> Option<Arc<Dentry>> {
        self.links.lock().parent.as_ref().and_then(Weak::upgrade)
    }

    /// True once unlinked, removed or replaced.
    #[inline]
    pub fn is_dead(&self) -> bool {
        self.flags.load(Ordering::Acquire) & DEAD != 0
    }

    /// True if something is mounted here (in some mount).
    #[inline]
    pub fn is_mountpoint(&self) -> bool {
        self.mounts.load(Ordering::Acquire) != 0
    }

    pub(crate) fn add_mount(&self) {
        self.mounts.fetch_add(1, Ordering::AcqRel);
    }

    pub(crate) fn remove_mount(&self) {
        self.mounts.fetch_sub(1, Ordering::AcqRel);
    }

    /// The lock-free lookup of a cached child.
    ///
    /// # Fast path
    /// No lock, no store: one chain walk in [`ChildTable::find`] and one load of the child's
    /// `seq`, compared with the value the node was published with. Falls back (`Miss`) when the
    /// name is not cached or the child was renamed or removed since.
    #[inline]
    pub(crate) fn lookup_fast<'g>(
        &self,
        hash_len: u64,
        name: &[u8],
        guard: &'g Guard,
    ) -> Cached<'g> {
        match self.children.find(hash_len, name, guard) {
            Some(n) if n.dentry().seq.raw() == n.expect_seq() => Cached::Hit(n.dentry()),
            _ => Cached::Miss,
        }
    }

    /// Adds a child to the cache, or returns the one already cached under `name`.
    /// Negative results past [`super::dcache::MAX_NEGATIVE_CHILDREN`] are returned uncached.
    ///
    /// # Locking
    /// Caller holds this directory's inode lock (shared suffices); takes the table's writer lock.
    pub(crate) fn d_add(self: &Arc<Self>, name: &[u8], inode: Option<Arc<Inode>>) -> Arc<Dentry> {
        let hl = hash_len(hash_seed(), name);
        let mut w = self.children.writer();
        if let Some(d) = w.find(hl, name) {
            return d.clone();
        }
        let negative = inode.is_none();
        let d = Arc::new(Dentry::new(
            Arc::from(name),
            Some(Arc::downgrade(self)),
            inode,
        ));
        if negative && (w.negatives() >= super::dcache::MAX_NEGATIVE_CHILDREN || self.is_dead()) {
            return d;
        }
        w.insert(hl, name, d.clone(), 0);
        d
    }

    /// Looks up a cached child while holding the table's writer lock.
    pub(crate) fn cached_child(&self, name: &[u8]) -> Option<Arc<Dentry>> {
        let hl = hash_len(hash_seed(), name);
        self.children.writer().find(hl, name).cloned()
    }

    /// Replaces whatever is cached under `name` with a positive dentry for `inode`
    /// (after create, mkdir, link, symlink). Returns the new dentry.
    ///
    /// # Locking
    /// Caller holds this directory's inode lock exclusive.
    pub(crate) fn d_instantiate(self: &Arc<Self>, name: &[u8], inode: Arc<Inode>) -> Arc<Dentry> {
        let hl = hash_len(hash_seed(), name);
        let mut w = self.children.writer();
        if let Some(old) = w.find(hl, name).cloned() {
            Self::kill(&mut w, hl, name, &old);
        }
        let d = Arc::new(Dentry::new(
            Arc::from(name),
            Some(Arc::downgrade(self)),
            Some(inode),
        ));
        w.insert(hl, name, d.clone(), 0);
        d
    }

    /// Removes `child` from this directory's cache and marks it dead (unlink, rmdir).
    ///
    /// # Locking
    /// Caller holds this directory's inode lock exclusive.
    pub(crate) fn d_delete(&self, name: &[u8], child: &Dentry) {
        let hl = hash_len(hash_seed(), name);
        let mut w = self.children.writer();
        Self::kill(&mut w, hl, name, child);
    }

    fn kill(w: &mut TableWriter<'_>, hl: u64, name: &[u8], child: &Dentry) {
        child.seq.write_begin();
        w.remove(hl, name, child);
        child.flags.fetch_or(DEAD, Ordering::AcqRel);
        child.seq.write_end();
    }

    /// Drops every cached negative child (before rmdir, so the directory can die empty).
    ///
    /// # Locking
    /// Caller holds this directory's inode lock exclusive.
    pub(crate) fn prune_negatives(&self) {
        let mut w = self.children.writer();
        for c in w.children() {
            if c.inode().is_none() {
                let name = c.name();
                let hl = hash_len(hash_seed(), &name);
                Self::kill(&mut w, hl, &name, &c);
            }
        }
    }

    /// Moves `child` (named `old_name` here) to `new_parent` as `new_name`, replacing and
    /// killing whatever is cached there (Linux: `d_move()`).
    ///
    /// # Locking
    /// Caller holds the inode locks of both directories exclusive (and the superblock's
    /// rename lock when they differ).
    pub(crate) fn d_move(
        self: &Arc<Self>,
        old_name: &[u8],
        child: &Arc<Dentry>,
        new_parent: &Arc<Dentry>,
        new_name: &[u8],
    ) {
        let old_hl = hash_len(hash_seed(), old_name);
        let new_hl = hash_len(hash_seed(), new_name);
        // Kill the target first (its table may be ours).
        {
            let mut w = new_parent.children.writer();
            if let Some(t) = w.find(new_hl, new_name).cloned() {
                if !Arc::ptr_eq(&t, child) {
                    Self::kill(&mut w, new_hl, new_name, &t);
                }
            }
        }
        child.seq.write_begin();
        self.children.writer().remove(old_hl, old_name, child);
        {
            let mut l = child.links.lock();
            l.name = Arc::from(new_name);
            l.parent = Some(Arc::downgrade(new_parent));
        }
        let expect = child.seq.raw().wrapping_add(1);
        new_parent
            .children
            .writer()
            .insert(new_hl, new_name, child.clone(), expect);
        child.seq.write_end();
    }

    /// Swaps two cached children (`RENAME_EXCHANGE`).
    ///
    /// # Locking
    /// As [`Dentry::d_move`].
    pub(crate) fn d_exchange(
        self: &Arc<Self>,
        a_name: &[u8],
        a: &Arc<Dentry>,
        b_parent: &Arc<Dentry>,
        b_name: &[u8],
        b: &Arc<Dentry>,
    ) {
        let a_hl = hash_len(hash_seed(), a_name);
        let b_hl = hash_len(hash_seed(), b_name);
        a.seq.write_begin();
        b.seq.write_begin();
        self.children.writer().remove(a_hl, a_name, a);
        b_parent.children.writer().remove(b_hl, b_name, b);
        {
            let mut la = a.links.lock();
            la.name = Arc::from(b_name);
            la.parent = Some(Arc::downgrade(b_parent));
        }
        {
            let mut lb = b.links.lock();
            lb.name = Arc::from(a_name);
            lb.parent = Some(Arc::downgrade(self));
        }
        let ea = a.seq.raw().wrapping_add(1);
        let eb = b.seq.raw().wrapping_add(1);
        b_parent
            .children
            .writer()
            .insert(b_hl, b_name, a.clone(), ea);
        self.children.writer().insert(a_hl, a_name, b.clone(), eb);
        b.seq.write_end();
        a.seq.write_end();
    }

    /// True if `self` is `other` or one of its ancestors (within one filesystem).
    pub fn is_ancestor_of(self: &Arc<Self>, other: &Arc<Dentry>) -> bool {
        let mut cur = Some(other.clone());
        while let Some(d) = cur {
            if Arc::ptr_eq(&d, self) {
                return true;
            }
            cur = d.parent();
        }
        false
    }
}

impl std::fmt::Debug for Dentry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dentry")
            .field("name", &String::from_utf8_lossy(&self.name()))
            .field("inode", &self.inode().map(|i| i.ino()))
            .field("dead", &self.is_dead())
            .finish()
    }
}
