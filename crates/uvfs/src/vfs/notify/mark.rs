//! Marks, their groups, and the per-inode lists that hold them. Linux: fs/notify/mark.c
//! (`fsnotify_add_mark()`, `fsnotify_recalc_mask()`, `fsnotify_destroy_mark()`,
//! `fsnotify_update_sb_watchers()`).
//!
//! An inode's marks live in a side table keyed by the inode's address ([`INODE_MARKS`]): the
//! inode itself keeps only its aggregated interest mask ([`Inode::notify_mask`]), which is
//! what the hooks read, and a flag that it has marks. A mark holds its inode (Linux: the
//! connector's inode reference, `FSNOTIFY_CONN_FLAG_HAS_IREF`), so a watched inode's address
//! is not reused while its entry exists.
//!
//! Readers (event delivery) take a snapshot of an inode's mark list without a lock
//! (`ArcSwap`); writers (adding, changing and removing marks) hold [`MARK_LOCK`], one lock for
//! every such change: they are rare, and one lock makes the counts of watched objects and the
//! masks exact.

use std::collections::HashMap;
use std::sync::Arc;

use arc_swap::ArcSwap;

use super::{Event, FS_EVENTS_POSS_ON_CHILD, FS_EVENT_ON_CHILD};
use crate::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use crate::sync::lock::Mutex;
use crate::vfs::{Dentry, Inode};

/// A listener: one inotify instance (Linux: `struct fsnotify_group`).
pub(crate) trait Group: Send + Sync {
    /// An event one of this group's marks asked for. Called with no lock of the core held.
    fn handle_event(&self, mark: &Arc<Mark>, ev: &Event<'_>);
    /// `mark` was taken off its inode (removed, its inode deleted or unmounted, a one-shot
    /// fired). Called once per mark, after the last event it can get was handed to
    /// [`Group::handle_event`] or refused there (see [`Mark::is_attached`]).
    fn mark_removed(&self, mark: &Arc<Mark>);
}

/// Mark flag: remove the mark after its first event (`IN_ONESHOT`).
pub(crate) const MARK_ONESHOT: u32 = 1;
/// Mark flag: no events about the object once it is unlinked (`IN_EXCL_UNLINK`).
pub(crate) const MARK_EXCL_UNLINK: u32 = 2;

/// One group's interest in one inode (Linux: `struct fsnotify_mark`).
pub(crate) struct Mark {
    pub(crate) group: Arc<dyn Group>,
    /// The watched inode, held while the mark is attached.
    inode: Mutex<Option<Arc<Inode>>>,
    /// Events (`FS_*` bits, with `FS_EVENT_ON_CHILD` for a directory watching its children).
    mask: AtomicU32,
    /// `MARK_*` flags.
    flags: AtomicU32,
    /// The front end's name for the mark (inotify's watch descriptor).
    pub(crate) id: i32,
    /// Cleared once, under [`MARK_LOCK`], when the mark leaves its inode.
    attached: AtomicBool,
}

impl Mark {
    /// The events the mark asks for.
    #[inline]
    pub(crate) fn mask(&self) -> u32 {
        self.mask.load(Ordering::Relaxed)
    }
    /// The mark's `MARK_*` flags.
    #[inline]
    pub(crate) fn flags(&self) -> u32 {
        self.flags.load(Ordering::Relaxed)
    }
    /// False once the mark left its inode: a group refuses events for it from then on (an
    /// event racing with the removal is dropped, never queued after `IN_IGNORED`).
    #[inline]
    pub(crate) fn is_attached(&self) -> bool {
        self.attached.load(Ordering::Acquire)
    }
    /// The watched inode while attached.
    pub(crate) fn inode(&self) -> Option<Arc<Inode>> {
        self.inode.lock().clone()
    }
}

/// An inode's marks (Linux: `struct fsnotify_mark_connector`).
struct Connector {
    marks: ArcSwap<Vec<Arc<Mark>>>,
}

/// Shards of the inode → marks table; a power of two.
const SHARDS: usize = 64;

/// An inode's address → its marks.
type ConnectorMap = Mutex<Option<HashMap<usize, Arc<Connector>>>>;

/// One shard, alone in its cache-line pair.
#[repr(align(128))]
struct Shard(ConnectorMap);

/// The marks of every watched inode, by inode address.
/// Protects: each shard's map. Order: a leaf, taken after [`MARK_LOCK`].
static INODE_MARKS: [Shard; SHARDS] = [const { Shard(Mutex::new(None)) }; SHARDS];

/// Serialises every change of marks: adding, changing and removing them, the inode masks and
/// flags they set, and the superblocks' counts of watched inodes.
/// Order: before a group's state lock and the [`INODE_MARKS`] shards.
pub(crate) static MARK_LOCK: Mutex<()> = Mutex::new(());

fn shard(inode: &Inode) -> (usize, &'static ConnectorMap) {
    let key = inode as *const Inode as usize;
    // Inodes are 160-byte blocks: the low bits say little.
    let i = (key >> 5).wrapping_mul(0x9E37_79B9) >> 7;
    (key, &INODE_MARKS[i & (SHARDS - 1)].0)
}

fn connector(inode: &Inode) -> Option<Arc<Connector>> {
    let (key, shard) = shard(inode);
    shard.lock().as_ref().and_then(|m| m.get(&key).cloned())
}

/// A snapshot of `inode`'s marks (empty when it has none). The slow path of every hook.
pub(crate) fn marks_of(inode: &Inode) -> Arc<Vec<Arc<Mark>>> {
    match connector(inode) {
        Some(c) => c.marks.load_full(),
        None => Arc::new(Vec::new()),
    }
}

/// Whether an inode's mask makes it watch its children's events (Linux:
/// `fsnotify_inode_watches_children()`).
#[inline]
pub(crate) fn watches_children(mask: u32) -> bool {
    mask & FS_EVENT_ON_CHILD != 0 && mask & FS_EVENTS_POSS_ON_CHILD != 0
}

/// The mark of `group` on `inode`, if any (Linux: `fsnotify_find_mark()`).
pub(crate) fn find_mark(inode: &Inode, group: &Arc<dyn Group>) -> Option<Arc<Mark>> {
    marks_of(inode)
        .iter()
        .find(|m| same_group(&m.group, group))
        .cloned()
}

/// Whether two groups are one.
pub(crate) fn same_group(a: &Arc<dyn Group>, b: &Arc<dyn Group>) -> bool {
    std::ptr::addr_eq(Arc::as_ptr(a), Arc::as_ptr(b))
}

/// Adds a mark of `group` with `mask` and `flags` to `inode`, reached through `dentry`
/// (whose children are flagged if the inode now watches them).
///
/// # Locking
/// Caller holds [`MARK_LOCK`] (so that a check for an existing mark and this addition are
/// one step).
pub(crate) fn add_mark(
    dentry: &Dentry,
    inode: &Arc<Inode>,
    group: Arc<dyn Group>,
    id: i32,
    mask: u32,
    flags: u32,
) -> Arc<Mark> {
    let mark = Arc::new(Mark {
        group,
        inode: Mutex::new(Some(inode.clone())),
        mask: AtomicU32::new(mask),
        flags: AtomicU32::new(flags),
        id,
        attached: AtomicBool::new(true),
    });
    let (key, shard) = shard(inode);
    let conn = {
        let mut map = shard.lock();
        map.get_or_insert_with(HashMap::new)
            .entry(key)
            .or_insert_with(|| {
                Arc::new(Connector {
                    marks: ArcSwap::from_pointee(Vec::new()),
                })
            })
            .clone()
    };
    let mut list = Vec::clone(&conn.marks.load());
    if list.is_empty() {
        inode.sb().notify_watched_add(1);
        inode.set_has_marks(true);
    }
    list.push(mark.clone());
    conn.marks.store(Arc::new(list));
    recalc(inode, Some(dentry));
    mark
}

/// Changes a mark's mask and flags (`inotify_add_watch` of a watched inode).
///
/// # Locking
/// Caller holds [`MARK_LOCK`].
pub(crate) fn update_mark(mark: &Mark, dentry: &Dentry, mask: u32, flags: u32) {
    mark.mask.store(mask, Ordering::Relaxed);
    mark.flags.store(flags, Ordering::Relaxed);
    if let Some(inode) = mark.inode() {
        recalc(&inode, Some(dentry));
    }
}

/// Takes `mark` off its inode and tells its group ([`Group::mark_removed`]); nothing if it
/// was already taken off. Returns whether this call took it off.
///
/// # Locking
/// Takes [`MARK_LOCK`]; the group's `mark_removed` runs after it is released.
pub(crate) fn remove_mark(mark: &Arc<Mark>) -> bool {
    let guard = MARK_LOCK.lock();
    let removed = detach_locked(mark);
    drop(guard);
    if removed {
        mark.group.mark_removed(mark);
    }
    removed
}

/// [`remove_mark`] with [`MARK_LOCK`] held and without telling the group; true if this call
/// took the mark off.
pub(crate) fn detach_locked(mark: &Arc<Mark>) -> bool {
    if !mark.attached.swap(false, Ordering::AcqRel) {
        return false;
    }
    let Some(inode) = mark.inode.lock().take() else {
        return true;
    };
    let (key, shard) = shard(&inode);
    let conn = shard.lock().as_ref().and_then(|m| m.get(&key).cloned());
    if let Some(conn) = conn {
        let mut list = Vec::clone(&conn.marks.load());
        list.retain(|m| !Arc::ptr_eq(m, mark));
        if list.is_empty() {
            if let Some(map) = shard.lock().as_mut() {
                map.remove(&key);
            }
            inode.sb().notify_watched_add(-1);
            inode.set_has_marks(false);
        }
        conn.marks.store(Arc::new(list));
    }
    recalc(&inode, None);
    true
}

/// Recomputes `inode`'s aggregated mask from its marks (Linux: `fsnotify_recalc_mask()`),
/// and flags the children of `dentry` when the inode starts watching them (set eagerly;
/// cleared lazily by the first event that finds the parent no longer interested).
fn recalc(inode: &Inode, dentry: Option<&Dentry>) {
    let mask = marks_of(inode).iter().fold(0, |m, k| m | k.mask());
    let before = inode.notify_mask();
    inode.set_notify_mask(mask);
    if watches_children(mask) && !watches_children(before) {
        if let Some(d) = dentry {
            d.set_children_parent_watched();
        }
    }
}

/// Takes every mark off `inode` (its last link went and nothing uses it, or its filesystem
/// is unmounted), each group told once. Returns the marks taken off, in list order.
pub(crate) fn remove_all(inode: &Inode) -> Vec<Arc<Mark>> {
    let guard = MARK_LOCK.lock();
    let marks = marks_of(inode);
    let mut gone = Vec::new();
    for m in marks.iter() {
        if detach_locked(m) {
            gone.push(m.clone());
        }
    }
    drop(guard);
    for m in &gone {
        m.group.mark_removed(m);
    }
    gone
}

/// Every watched inode of `sb`, for an unmount.
pub(crate) fn watched_inodes_of(sb: &crate::vfs::SuperBlock) -> Vec<Arc<Inode>> {
    let mut out = Vec::new();
    for s in &INODE_MARKS {
        let Some(map) = &*s.0.lock() else { continue };
        for c in map.values() {
            for m in c.marks.load().iter() {
                if let Some(i) = m.inode() {
                    if std::ptr::eq::<crate::vfs::SuperBlock>(&**i.sb(), sb) {
                        out.push(i);
                        break;
                    }
                }
            }
        }
    }
    out
}
