//! Directory entries: the name → inode cache. Linux: `struct dentry` in include/linux/dcache.h.
//!
//! A dentry's inode never changes: a negative dentry that becomes positive is replaced by a
//! new dentry (Linux turns the same dentry positive with `d_instantiate()`). Name and parent
//! change on rename, under `links`; where a dentry is *found* is its parent's child table,
//! whose nodes are immutable (see `dcache.rs` for why a lock-free hit needs no validation).

use std::sync::{Arc, Weak};

use super::dcache::{hash_len, hash_seed, ChildTable, TableWriter};
use super::inode::Inode;
use super::ops::Name;
use crate::sync::atomic::{AtomicU32, Ordering};
use crate::sync::cell::Frozen;
use crate::sync::lock::Mutex;
use crate::sync::rcu::Guard;

/// Dentry flag: unlinked, removed, or replaced; lookups in it find nothing.
/// In `Dentry::state`: set once the dentry is dead; the bits below count its mounts.
const DEAD: u32 = 1 << 31;
/// Dentry flag: the parent's inode may watch its children's events (Linux:
/// `DCACHE_FSNOTIFY_PARENT_WATCHED`). Set eagerly (when the parent starts watching, and when
/// the dentry is made or moved under a watching parent), cleared lazily by the first event
/// that finds the parent no longer interested.
const PARENT_WATCHED: u32 = 1 << 30;
/// Dentry flag: open files may hold the dentry through its pin (`vfs::pin`), which must be
/// taken out of the pin table when the dentry leaves the dcache. Set once, under the pin
/// table's lock; a dead dentry may carry it with no pin left.
const PINNED: u32 = 1 << 29;
/// Dentry flag: made outside any table (`O_TMPFILE`'s unnamed dentry), so its parent's
/// watches never flag it (Linux's `d_tmpfile()` dentry is on its parent's child list, which
/// `fsnotify_set_children_dentry_flags()` walks): its events always ask the parent, as a dead
/// dentry's do, and it is never pinned (nothing would take the pin out).
const UNHASHED: u32 = 1 << 28;
/// The mount count's bits in `Dentry::state`.
const MOUNTS: u32 = UNHASHED - 1;

/// Name and parent of a dentry, changed by rename.
struct Links {
    name: Name,
    parent: Option<Weak<Dentry>>,
}

/// A directory entry.
pub struct Dentry {
    /// Never changes; read by lock-free walkers that reached this dentry through a node.
    inode: Frozen<Option<Arc<Inode>>>,
    pub(crate) children: ChildTable,
    /// Protects: `name`, `parent`. Writers also hold the parent's inode lock.
    /// Order: innermost; never held across another lock.
    links: Mutex<Links>,
}

// With its `Arc` header a dentry fills one 64-byte allocator class (issue 7, compact
// objects): the child table's counts live in its bucket array, which files do not have, the
// name is one word ([`Name`]), and the dead flag and mount count share one word in the child
// table's padding.
#[cfg(not(any(loom, feature = "shuttle")))]
const _: () = assert!(std::mem::size_of::<Dentry>() <= 48);

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
        Arc::new(Dentry::new(Name::new(b"/"), None, Some(inode)))
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
        let d = Arc::new(Dentry::new(
            Name::new(name),
            Some(Arc::downgrade(parent)),
            Some(inode),
        ));
        // A child of `parent` for notification (Linux: `d_tmpfile()` instantiates it there),
        // whatever watches the parent gets later.
        d.state().fetch_or(UNHASHED, Ordering::Relaxed);
        d
    }

    fn new(name: Name, parent: Option<Weak<Dentry>>, inode: Option<Arc<Inode>>) -> Dentry {
        Dentry {
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
    pub fn name(&self) -> Name {
        self.links.lock().name.clone()
    }

    /// Current parent; `None` at a filesystem root or once the parent is gone.
    pub fn parent(&self) -> Option<Arc<Dentry>> {
        self.links.lock().parent.as_ref().and_then(Weak::upgrade)
    }

    /// True once unlinked, removed or replaced.
    #[inline]
    pub fn is_dead(&self) -> bool {
        self.state().load(Ordering::Acquire) & DEAD != 0
    }

    /// True once unlinked, removed or replaced, or if never in a table (`O_TMPFILE`'s unnamed
    /// dentry, also after `linkat` named its inode elsewhere): Linux's `d_unlinked()`, a
    /// dentry that is not hashed, which `IN_EXCL_UNLINK` asks about.
    #[inline]
    pub(crate) fn is_unlinked(&self) -> bool {
        self.state().load(Ordering::Acquire) & (DEAD | UNHASHED) != 0
    }

    /// True if something is mounted here (in some mount).
    #[inline]
    pub fn is_mountpoint(&self) -> bool {
        self.state().load(Ordering::Acquire) & MOUNTS != 0
    }

    /// True if the parent's inode may watch this dentry's events: one relaxed load.
    #[inline]
    pub(crate) fn parent_watched(&self) -> bool {
        self.state().load(Ordering::Relaxed) & PARENT_WATCHED != 0
    }

    /// True if the parent may watch this dentry's events, or it is unlinked or was never in
    /// a table (then its parent was never told to flag it, and is asked directly: Linux keeps
    /// an unlinked but used dentry, and `d_tmpfile()`'s, among its parent's children, which
    /// `fsnotify_set_children_dentry_flags()` flags): one relaxed load.
    #[inline]
    pub(crate) fn parent_watched_or_dead(&self) -> bool {
        self.state().load(Ordering::Relaxed) & (PARENT_WATCHED | DEAD | UNHASHED) != 0
    }

    pub(crate) fn clear_parent_watched(&self) {
        self.state().fetch_and(!PARENT_WATCHED, Ordering::Relaxed);
    }

    /// Flags this dentry if `parent`'s inode watches its children, unflags it if not.
    fn update_parent_watched(&self, parent: &Dentry) {
        let watched = parent
            .inode()
            .is_some_and(|i| crate::vfs::notify::mark::watches_children(i.notify_mask()));
        if watched {
            self.state().fetch_or(PARENT_WATCHED, Ordering::Relaxed);
        } else if self.parent_watched() {
            self.clear_parent_watched();
        }
    }

    /// Flags every cached child: this directory's inode started watching its children
    /// (Linux: `fsnotify_set_children_dentry_flags()`).
    pub(crate) fn set_children_parent_watched(&self) {
        for c in self.children.writer().children() {
            c.state().fetch_or(PARENT_WATCHED, Ordering::Relaxed);
        }
    }

    /// True if the dentry has (or had) a pin: one relaxed load.
    #[inline]
    pub(crate) fn is_pinned(&self) -> bool {
        self.state().load(Ordering::Relaxed) & PINNED != 0
    }

    /// Flags the dentry pinned; false if it was already, or is dead (then nothing may pin
    /// it: its killer has looked, or will look, for a pin to take out before this flag).
    pub(crate) fn set_pinned(&self) -> bool {
        if self.state().load(Ordering::Relaxed) & UNHASHED != 0 {
            return false;
        }
        self.state().fetch_or(PINNED, Ordering::AcqRel) & (PINNED | DEAD) == 0
    }

    pub(crate) fn add_mount(&self) {
        self.state().fetch_add(1, Ordering::AcqRel);
    }

    pub(crate) fn remove_mount(&self) {
        self.state().fetch_sub(1, Ordering::AcqRel);
    }

    /// The dead flag (`DEAD`, set with the parent directory's inode lock exclusive after the
    /// dentry's node left the parent's table, never cleared), the notification and pin flags,
    /// and, below them, the number of mounts whose mountpoint this dentry is (changed under
    /// the namespace lock; fewer than 2^29). Kept in the child table's padding
    /// (`ChildTable::owner_state`).
    #[inline]
    fn state(&self) -> &AtomicU32 {
        &self.children.owner_state
    }

    /// The lock-free lookup of a cached child.
    ///
    /// # Fast path
    /// No lock, no store: one chain walk in [`ChildTable::find`]. A hit is a node that was in
    /// this directory's table at some moment of the call, so `self/name` was that child then
    /// (the lookup takes effect at that moment; nothing read from a hit can have changed since,
    /// see `dcache.rs`). Falls back (`Miss`) when the name is not cached; the locked lookup
    /// then decides.
    ///
    /// Not inlined: kept out of line (as the compiler chose when this function also compared
    /// a sequence count) it costs fewer instructions per component in the walk than inlined;
    /// measured with callgrind on `stat` of 1- and 8-component paths.
    #[inline(never)]
    pub(crate) fn lookup_fast<'g>(
        &self,
        hash_len: u64,
        name: &[u8],
        guard: &'g Guard,
    ) -> Cached<'g> {
        match self.children.find(hash_len, name, guard) {
            Some(n) => Cached::Hit(n.dentry()),
            None => Cached::Miss,
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
        let shared = Name::new(name);
        let d = Arc::new(Dentry::new(
            shared.clone(),
            Some(Arc::downgrade(self)),
            inode,
        ));
        if negative
            && (w.negatives() >= super::dcache::MAX_NEGATIVE_CHILDREN
                || self.is_dead()
                || self.inode().is_some_and(|i| i.ops().revalidates()))
        {
            return d;
        }
        d.update_parent_watched(self);
        w.insert(hl, shared, d.clone());
        d
    }

    /// Looks up a cached child while holding the table's writer lock. A child whose inode the
    /// filesystem removed behind the VFS ([`Inode::is_stale`]) is dropped from the table here
    /// and not returned (Linux: `d_invalidate()` after a failed `d_revalidate`).
    ///
    /// # Locking
    /// Caller holds this directory's inode lock (shared suffices).
    pub(crate) fn cached_child(&self, name: &[u8]) -> Option<Arc<Dentry>> {
        let hl = hash_len(hash_seed(), name);
        let mut w = self.children.writer();
        let d = w.find(hl, name)?.clone();
        if d.inode().is_some_and(|i| i.is_stale()) {
            Self::kill(&mut w, hl, name, &d);
            return None;
        }
        Some(d)
    }

    /// Replaces whatever is cached under `name` with a positive dentry for `inode`
    /// (after create, mkdir, link, symlink). Returns the new dentry.
    ///
    /// # Locking
    /// Caller holds this directory's inode lock exclusive.
    pub(crate) fn d_instantiate(self: &Arc<Self>, name: &[u8], inode: Arc<Inode>) -> Arc<Dentry> {
        self.d_instantiate_shared(&Name::new(name), inode)
    }

    /// [`d_instantiate`](Self::d_instantiate) with the name the filesystem keeps too, so the
    /// bytes are stored once.
    pub(crate) fn d_instantiate_shared(
        self: &Arc<Self>,
        name: &Name,
        inode: Arc<Inode>,
    ) -> Arc<Dentry> {
        let hl = hash_len(hash_seed(), name);
        let mut w = self.children.writer();
        if let Some(old) = w.find(hl, name).cloned() {
            Self::kill(&mut w, hl, name, &old);
        }
        let shared = name.clone();
        let d = Arc::new(Dentry::new(
            shared.clone(),
            Some(Arc::downgrade(self)),
            Some(inode),
        ));
        d.update_parent_watched(self);
        w.insert(hl, shared, d.clone());
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

    /// Unpublishes `child` (lookups that start now miss it), then marks it dead.
    fn kill(w: &mut TableWriter<'_>, hl: u64, name: &[u8], child: &Dentry) {
        w.remove(hl, name, child);
        if child.state().fetch_or(DEAD, Ordering::AcqRel) & PINNED != 0 {
            super::pin::unpin(child);
        }
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
        // Out of the old name before it is published under the new one: never under both. In between, lookups of either name miss and wait for the directory locks.
        self.children.writer().remove(old_hl, old_name, child);
        let name = Name::new(new_name);
        {
            let mut l = child.links.lock();
            l.name = name.clone();
            l.parent = Some(Arc::downgrade(new_parent));
        }
        child.update_parent_watched(new_parent);
        new_parent
            .children
            .writer()
            .insert(new_hl, name, child.clone());
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
        // Both out before either is back, as in `d_move`.
        self.children.writer().remove(a_hl, a_name, a);
        b_parent.children.writer().remove(b_hl, b_name, b);
        {
            let mut la = a.links.lock();
            la.name = Name::new(b_name);
            la.parent = Some(Arc::downgrade(b_parent));
        }
        {
            let mut lb = b.links.lock();
            lb.name = Name::new(a_name);
            lb.parent = Some(Arc::downgrade(self));
        }
        a.update_parent_watched(b_parent);
        b.update_parent_watched(self);
        b_parent.children.writer().insert(b_hl, a.name(), a.clone());
        self.children.writer().insert(a_hl, b.name(), b.clone());
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The dead flag and the mount count share `Dentry::state`: each reads as itself
    /// whatever the other holds.
    #[test]
    fn the_state_word_keeps_the_dead_flag_and_the_mount_count_apart() {
        let dir = Arc::new(Dentry::new(Name::new(b"/"), None, None));
        let child = dir.d_add(b"c", None);
        let other = dir.d_add(b"o", None);
        let seen = |d: &Dentry| (d.is_dead(), d.is_mountpoint());
        assert_eq!(seen(&child), (false, false));
        child.add_mount();
        child.add_mount();
        assert_eq!(seen(&child), (false, true));
        dir.d_delete(b"c", &child);
        assert_eq!(seen(&child), (true, true));
        child.remove_mount();
        assert_eq!(seen(&child), (true, true));
        child.remove_mount();
        assert_eq!(seen(&child), (true, false));
        assert_eq!(seen(&other), (false, false));
    }
}
