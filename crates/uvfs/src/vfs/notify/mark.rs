//! Marks, their groups, and the per-object lists that hold them. Linux: fs/notify/mark.c
//! (`fsnotify_add_mark()`, `fsnotify_recalc_mask()`, `fsnotify_destroy_mark()`,
//! `fsnotify_update_sb_watchers()`).
//!
//! A mark is on an inode, a mount or a filesystem ([`Object`]). An object's marks live in a
//! side table keyed by the object's address ([`MARKS`]): the object itself keeps only its
//! aggregated interest mask ([`Inode::notify_mask`], `Mount::notify_mask`,
//! `SuperBlock::notify_mask`), which is what the hooks read. A mark holds its object (Linux:
//! the connector's inode reference), so a marked object's address is not reused while its
//! entry exists; a mount's marks go when the mount leaves its tree ([`remove_object`]), which
//! Linux does at the mount's cleanup.
//!
//! Readers (event delivery) take a snapshot of an object's mark list without a lock
//! (`ArcSwap`); writers (adding, changing and removing marks) hold [`MARK_LOCK`], one lock for
//! every such change: they are rare, and one lock makes the counts of watched objects and the
//! masks exact.

use std::collections::HashMap;
use std::sync::Arc;

use arc_swap::ArcSwap;

use super::{Event, FS_EVENTS_POSS_ON_CHILD, FS_EVENT_ON_CHILD};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
// Plain parking_lot locks: the statics below need const constructors, which the model
// checkers' locks lack (the mark protocol is not one of the modelled ones).
use crate::vfs::super_block::SbRef;
use crate::vfs::{Dentry, Inode, SuperBlock};
use parking_lot::Mutex;

/// A listener: one inotify or fanotify instance (Linux: `struct fsnotify_group`).
pub(crate) trait Group: Send + Sync {
    /// An event that may interest this group, with the group's marks on the event's objects
    /// by [`Slot`] (Linux: `fsnotify_iter_info`); the group decides with their masks. Called
    /// once per group and event, with no lock of the core held.
    fn handle_event(&self, marks: &GroupMarks, ev: &Event<'_>);
    /// `mark` was taken off its object (removed, its inode deleted or unmounted, a one-shot
    /// fired, its mount detached). Called once per mark, after the last event it can get was
    /// handed to [`Group::handle_event`] or refused there (see [`Mark::is_attached`]).
    fn mark_removed(&self, mark: &Arc<Mark>);
}

/// What a mark is on (Linux: `FSNOTIFY_OBJ_TYPE_*`).
#[derive(Clone)]
pub(crate) enum Object {
    /// An inode.
    Inode(Arc<Inode>),
    /// A mount, not held (a marked mount can be unmounted; its end takes its marks off): its
    /// address, its superblock and its mask's cell.
    Mount(usize, SbRef, Arc<AtomicU32>),
    /// A filesystem.
    Sb(SbRef),
}

impl Object {
    /// A mark's object for `mnt`.
    pub(crate) fn mount(mnt: &crate::vfs::Mount) -> Object {
        Object::Mount(
            mnt as *const crate::vfs::Mount as usize,
            mnt.sb().clone(),
            mnt.notify_mask_cell().clone(),
        )
    }

    /// The side table's key: the object's address.
    pub(crate) fn key(&self) -> usize {
        match self {
            Object::Inode(i) => Arc::as_ptr(i) as usize,
            Object::Mount(key, _, _) => *key,
            Object::Sb(sb) => &**sb as *const SuperBlock as usize,
        }
    }
    /// The superblock whose watched count the object's marks count in.
    fn sb(&self) -> &SuperBlock {
        match self {
            Object::Inode(i) => i.sb(),
            Object::Mount(_, sb, _) => sb,
            Object::Sb(sb) => sb,
        }
    }
    fn set_mask(&self, mask: u32) {
        match self {
            Object::Inode(i) => i.set_notify_mask(mask),
            Object::Mount(_, _, cell) => cell.store(mask, Ordering::Relaxed),
            Object::Sb(sb) => sb.set_notify_mask(mask),
        }
    }
    fn mask(&self) -> u32 {
        match self {
            Object::Inode(i) => i.notify_mask(),
            Object::Mount(_, _, cell) => cell.load(Ordering::Relaxed),
            Object::Sb(sb) => sb.notify_mask(),
        }
    }
    fn set_marked(&self, on: bool) {
        if let Object::Inode(i) = self {
            i.set_has_marks(on);
        }
    }
}

/// Where a mark sits relative to an event (Linux: `FSNOTIFY_ITER_TYPE_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Slot {
    /// The event's subject (or, for an entry event, its directory).
    Inode = 0,
    /// The subject's parent directory, told about a child.
    Parent = 1,
    /// The mount the subject was reached through.
    Mount = 2,
    /// The subject's filesystem.
    Sb = 3,
}

/// Number of [`Slot`]s.
pub(crate) const SLOTS: usize = 4;

/// A group's marks on the objects of one event, by [`Slot`].
#[derive(Default)]
pub(crate) struct GroupMarks {
    pub(crate) by_slot: [Option<Arc<Mark>>; SLOTS],
}

impl GroupMarks {
    /// The group's mark in `slot`.
    pub(crate) fn get(&self, slot: Slot) -> Option<&Arc<Mark>> {
        self.by_slot[slot as usize].as_ref()
    }
    /// Each mark with its slot.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (Slot, &Arc<Mark>)> {
        [Slot::Inode, Slot::Parent, Slot::Mount, Slot::Sb]
            .into_iter()
            .filter_map(|s| self.get(s).map(|m| (s, m)))
    }
}

/// Mark flag: remove the mark after its first event (`IN_ONESHOT`).
pub(crate) const MARK_ONESHOT: u32 = 1;
/// Mark flag: no events about the object once it is unlinked (`IN_EXCL_UNLINK`).
pub(crate) const MARK_EXCL_UNLINK: u32 = 2;
/// Mark flag: the ignore mask survives a modification (`FAN_MARK_IGNORED_SURV_MODIFY`).
pub(crate) const MARK_IGNORED_SURV_MODIFY: u32 = 4;

/// One group's interest in one object (Linux: `struct fsnotify_mark`).
pub(crate) struct Mark {
    pub(crate) group: Arc<dyn Group>,
    /// The marked object, held while the mark is attached.
    object: Mutex<Option<Object>>,
    /// Events (`FS_*` bits, with `FS_EVENT_ON_CHILD` for a directory watching its children
    /// and `IN_ISDIR` (`FAN_ONDIR`) for events on directories).
    mask: AtomicU32,
    /// Events ignored (fanotify's ignore mask; 0 for inotify).
    ignore_mask: AtomicU32,
    /// `MARK_*` flags.
    flags: AtomicU32,
    /// The front end's name for the mark (inotify's watch descriptor).
    pub(crate) id: i32,
    /// Cleared once, under [`MARK_LOCK`], when the mark leaves its object.
    attached: AtomicBool,
}

impl Mark {
    /// The events the mark asks for.
    #[inline]
    pub(crate) fn mask(&self) -> u32 {
        self.mask.load(Ordering::Relaxed)
    }
    /// The events the mark ignores.
    #[inline]
    pub(crate) fn ignore_mask(&self) -> u32 {
        self.ignore_mask.load(Ordering::Relaxed)
    }
    /// The mark's `MARK_*` flags.
    #[inline]
    pub(crate) fn flags(&self) -> u32 {
        self.flags.load(Ordering::Relaxed)
    }
    /// False once the mark left its object: a group refuses events for it from then on (an
    /// event racing with the removal is dropped, never queued after `IN_IGNORED`).
    #[inline]
    pub(crate) fn is_attached(&self) -> bool {
        self.attached.load(Ordering::Acquire)
    }
    /// The marked object while attached.
    pub(crate) fn object(&self) -> Option<Object> {
        self.object.lock().clone()
    }
    /// Clears the ignore mask (Linux: `send_to_group()` on `FS_MODIFY` for marks without
    /// `FSNOTIFY_MARK_FLAG_IGNORED_SURV_MODIFY`).
    pub(crate) fn clear_ignore_mask(&self) {
        if self.ignore_mask() != 0 {
            self.ignore_mask.store(0, Ordering::Relaxed);
        }
    }
}

/// An object's marks (Linux: `struct fsnotify_mark_connector`).
struct Connector {
    marks: ArcSwap<Vec<Arc<Mark>>>,
}

/// Shards of the object → marks table; a power of two.
const SHARDS: usize = 64;

/// An object's address → its marks.
type ConnectorMap = Mutex<Option<HashMap<usize, Arc<Connector>>>>;

/// One shard, alone in its cache-line pair.
#[repr(align(128))]
struct Shard(ConnectorMap);

/// The marks of every marked object, by address.
/// Protects: each shard's map. Order: a leaf, taken after [`MARK_LOCK`].
static MARKS: [Shard; SHARDS] = [const { Shard(Mutex::new(None)) }; SHARDS];

/// Serialises every change of marks: adding, changing and removing them, the object masks
/// and flags they set, and the superblocks' counts of watched objects.
/// Order: before a group's state lock and the [`MARKS`] shards.
pub(crate) static MARK_LOCK: Mutex<()> = Mutex::new(());

fn shard(key: usize) -> &'static ConnectorMap {
    // Objects are allocator blocks of 64 bytes or more: the low bits say little.
    let i = (key >> 6).wrapping_mul(0x9E37_79B9) >> 7;
    &MARKS[i & (SHARDS - 1)].0
}

fn connector(key: usize) -> Option<Arc<Connector>> {
    shard(key)
        .lock()
        .as_ref()
        .and_then(|m| m.get(&key).cloned())
}

/// A snapshot of the marks of the object at `key` (empty when it has none). The slow path of
/// every hook.
pub(crate) fn marks_at(key: usize) -> Option<Arc<Vec<Arc<Mark>>>> {
    connector(key).map(|c| c.marks.load_full())
}

/// Whether an inode's mask makes it watch its children's events (Linux:
/// `fsnotify_inode_watches_children()`).
#[inline]
pub(crate) fn watches_children(mask: u32) -> bool {
    mask & FS_EVENT_ON_CHILD != 0 && mask & FS_EVENTS_POSS_ON_CHILD != 0
}

/// The mark of `group` on `obj`, if any (Linux: `fsnotify_find_mark()`).
pub(crate) fn find_mark(obj: &Object, group: &Arc<dyn Group>) -> Option<Arc<Mark>> {
    marks_at(obj.key())?
        .iter()
        .find(|m| same_group(&m.group, group))
        .cloned()
}

/// Whether two groups are one.
pub(crate) fn same_group(a: &Arc<dyn Group>, b: &Arc<dyn Group>) -> bool {
    std::ptr::addr_eq(Arc::as_ptr(a), Arc::as_ptr(b))
}

/// What a new mark asks for.
pub(crate) struct NewMark {
    pub(crate) group: Arc<dyn Group>,
    pub(crate) id: i32,
    pub(crate) mask: u32,
    pub(crate) ignore_mask: u32,
    pub(crate) flags: u32,
}

/// Adds a mark to `obj`; `dentry` is the object's dentry for an inode (whose children are
/// flagged if the inode now watches them).
///
/// # Locking
/// Caller holds [`MARK_LOCK`] (so that a check for an existing mark and this addition are
/// one step).
pub(crate) fn add_mark(obj: Object, dentry: Option<&Dentry>, new: NewMark) -> Arc<Mark> {
    let key = obj.key();
    let mark = Arc::new(Mark {
        group: new.group,
        object: Mutex::new(Some(obj.clone())),
        mask: AtomicU32::new(new.mask),
        ignore_mask: AtomicU32::new(new.ignore_mask),
        flags: AtomicU32::new(new.flags),
        id: new.id,
        attached: AtomicBool::new(true),
    });
    let conn = {
        let mut map = shard(key).lock();
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
        obj.sb().notify_watched_add(1);
        super::watched_anywhere_add(1);
        obj.set_marked(true);
    }
    list.push(mark.clone());
    conn.marks.store(Arc::new(list));
    recalc(&obj, dentry);
    mark
}

/// Changes a mark's masks and flags.
///
/// # Locking
/// Caller holds [`MARK_LOCK`].
pub(crate) fn update_mark(
    mark: &Mark,
    dentry: Option<&Dentry>,
    mask: u32,
    ignore_mask: u32,
    flags: u32,
) {
    mark.mask.store(mask, Ordering::Relaxed);
    mark.ignore_mask.store(ignore_mask, Ordering::Relaxed);
    mark.flags.store(flags, Ordering::Relaxed);
    if let Some(obj) = mark.object() {
        recalc(&obj, dentry);
    }
}

/// Takes `mark` off its object and tells its group ([`Group::mark_removed`]); nothing if it
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
    let Some(obj) = mark.object.lock().take() else {
        return true;
    };
    let key = obj.key();
    if let Some(conn) = connector(key) {
        let mut list = Vec::clone(&conn.marks.load());
        list.retain(|m| !Arc::ptr_eq(m, mark));
        if list.is_empty() {
            if let Some(map) = shard(key).lock().as_mut() {
                map.remove(&key);
            }
            obj.sb().notify_watched_add(-1);
            super::watched_anywhere_add(-1);
            obj.set_marked(false);
        }
        conn.marks.store(Arc::new(list));
    }
    recalc(&obj, None);
    true
}

/// Recomputes `obj`'s aggregated mask from its marks (Linux: `fsnotify_recalc_mask()`), and
/// flags the children of `dentry` when an inode starts watching them (set eagerly; cleared
/// lazily by the first event that finds the parent no longer interested).
fn recalc(obj: &Object, dentry: Option<&Dentry>) {
    let mask = marks_at(obj.key())
        .map(|l| l.iter().fold(0, |m, k| m | interest(k)))
        .unwrap_or(0);
    let before = obj.mask();
    obj.set_mask(mask);
    if watches_children(mask) && !watches_children(before) {
        if let Some(d) = dentry {
            d.set_children_parent_watched();
        }
    }
}

/// What a mark makes its object show interest in (Linux: `fsnotify_calc_mask()`): its
/// events, the events it ignores (so that a child's event reaches the ignoring parent), and a
/// modification when its ignore mask is to be cleared by one.
fn interest(m: &Mark) -> u32 {
    let ignore = m.ignore_mask();
    if ignore == 0 {
        return m.mask();
    }
    let clear = if m.flags() & MARK_IGNORED_SURV_MODIFY == 0 {
        crate::abi::IN_MODIFY
    } else {
        0
    };
    m.mask() | ignore | clear
}

/// Takes every mark off the object at `key` (an inode whose last link went and that nothing
/// uses, or whose filesystem is unmounted; a mount leaving its tree), each group told once.
pub(crate) fn remove_object(key: usize) -> Vec<Arc<Mark>> {
    let guard = MARK_LOCK.lock();
    let mut gone = Vec::new();
    if let Some(marks) = marks_at(key) {
        for m in marks.iter() {
            if detach_locked(m) {
                gone.push(m.clone());
            }
        }
    }
    drop(guard);
    for m in &gone {
        m.group.mark_removed(m);
    }
    gone
}

/// Every marked inode of `sb`, and its own marks' key, for an unmount.
pub(crate) fn marked_inodes_of(sb: &SuperBlock) -> Vec<Arc<Inode>> {
    let mut out = Vec::new();
    for s in &MARKS {
        let Some(map) = &*s.0.lock() else { continue };
        for c in map.values() {
            for m in c.marks.load().iter() {
                if let Some(Object::Inode(i)) = &*m.object.lock() {
                    if std::ptr::eq::<SuperBlock>(&**i.sb(), sb) {
                        out.push(i.clone());
                        break;
                    }
                }
            }
        }
    }
    out
}

/// Hands `ev` to every group with a mark in `objects` (by [`Slot`]: each an object's key, or
/// `None`), once per group with all its marks (Linux: `fsnotify()`'s iteration and
/// `send_to_group()`). Up to [`INLINE_GROUPS`] groups are gathered without an allocation.
pub(crate) fn deliver(objects: [Option<usize>; SLOTS], ev: &Event<'_>) {
    let mut inline: [Option<GroupMarks>; INLINE_GROUPS] = Default::default();
    let mut extra: Vec<GroupMarks> = Vec::new();
    for (slot, key) in objects.iter().enumerate() {
        let Some(list) = key.and_then(marks_at) else {
            continue;
        };
        for m in list.iter() {
            let g = group_entry(&mut inline, &mut extra, &m.group);
            g.by_slot[slot] = Some(m.clone());
        }
    }
    for g in inline.iter().flatten().chain(extra.iter()) {
        let first = g
            .by_slot
            .iter()
            .flatten()
            .next()
            .expect("a group has a mark");
        first.group.handle_event(g, ev);
    }
}

/// Groups one event gathers without allocating.
const INLINE_GROUPS: usize = 4;

/// The entry of `group` among those gathered so far, made if new.
fn group_entry<'a>(
    inline: &'a mut [Option<GroupMarks>; INLINE_GROUPS],
    extra: &'a mut Vec<GroupMarks>,
    group: &Arc<dyn Group>,
) -> &'a mut GroupMarks {
    let is = |g: &GroupMarks| {
        g.by_slot
            .iter()
            .flatten()
            .next()
            .is_some_and(|x| same_group(&x.group, group))
    };
    if let Some(i) = inline.iter().position(|g| g.as_ref().is_some_and(is)) {
        return inline[i].as_mut().expect("found");
    }
    if let Some(i) = extra.iter().position(is) {
        return &mut extra[i];
    }
    if let Some(i) = inline.iter().position(Option::is_none) {
        return inline[i].insert(GroupMarks::default());
    }
    extra.push(GroupMarks::default());
    extra.last_mut().expect("just pushed")
}
