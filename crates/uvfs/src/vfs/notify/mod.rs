//! fsnotify: the notification core under inotify. Linux: fs/notify/fsnotify.c,
//! include/linux/fsnotify.h.
//!
//! Every read, write, open, close, attribute change and namespace change calls a hook here.
//! A hook's first instructions decide, with plain loads, that nothing can be watching, and
//! return; only then does it look at marks (`mark.rs`).
//!
//! # Fast path
//! With nothing watched anywhere in the process, a hook is one relaxed load of a word, the
//! process's count of marked objects (`any_watched`), and a branch. `read`, `pread`, `write`
//! and `pwrite` test it before they call the filesystem and take a separate, out-of-line path
//! when it is set, so that the unwatched path keeps nothing live across the filesystem's call
//! for the hook (docs/locking.md shows the code and its callgrind count); open and close read
//! it through the open file's own `notify_gate` pointer, which for a file notification never
//! sees (`FMODE_NONOTIFY`) points at a count that stays 0. With something watched
//! elsewhere, an out-of-line call adds a test of the file's `FMODE_NONOTIFY` bit (`O_PATH`
//! files, fanotify's own), one relaxed load of the superblock's count of marked objects
//! (Linux: `fsnotify_sb_has_watchers()`) and one of the benchmarks' vanilla switch. With
//! something watched on this filesystem but not this file, its parent, its mount or its
//! filesystem, it adds loads of the dentry's parent-watched flag and the inode's, mount's and
//! superblock's interest masks (Linux: `__fsnotify_parent()`'s early return) and returns. No
//! atomic read-modify-write, fence, lock, allocation or reference is taken on any of these
//! paths; the parent is not touched unless the child's flag says it watches. Only when a mask
//! says an event will be generated (or in vanilla mode) are the marks read (`mark::marks_at`:
//! a shard lock of the mark table and a snapshot of the object's marks). Without the `notify`
//! cargo feature the hooks are empty. The unit test `each_gate_of_the_write_hook_and_its_fallback`
//! forces each gate in turn.

pub(crate) mod mark;

use crate::abi::{
    IN_ACCESS, IN_ALL_EVENTS, IN_ATTRIB, IN_CLOSE_NOWRITE, IN_CLOSE_WRITE, IN_CREATE, IN_DELETE,
    IN_DELETE_SELF, IN_ISDIR, IN_MODIFY, IN_MOVED_FROM, IN_MOVED_TO, IN_MOVE_SELF, IN_OPEN,
    IN_UNMOUNT,
};
use std::sync::Arc;

use mark::{Slot, SLOTS};

// std's atomics, not the model checkers': the statics need const constructors (the
// notification counters are not part of a modelled protocol).
use crate::vfs::{Dentry, FileDescription, Inode, Mount, SetAttr, SuperBlock};
use std::sync::atomic::{AtomicBool, AtomicIsize, AtomicU32, Ordering};

/// Whether notification is compiled in (the `notify` cargo feature, on by default). Without
/// it every hook is empty and `inotify_init1` fails with `ENOSYS`, as Linux built without
/// `CONFIG_INOTIFY_USER`.
pub const COMPILED: bool = cfg!(feature = "notify");

/// A mark's interest in its directory's children's events (Linux: `FS_EVENT_ON_CHILD`; every
/// inotify watch on a directory has it).
pub(crate) const FS_EVENT_ON_CHILD: u32 = 0x0800_0000;
/// Events a directory may get about its children (Linux: `FS_EVENTS_POSS_ON_CHILD`).
pub(crate) const FS_EVENTS_POSS_ON_CHILD: u32 =
    IN_ACCESS | IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_CLOSE_NOWRITE | IN_OPEN;
/// Every event bit a mark can match.
const ALL_EVENTS: u32 = IN_ALL_EVENTS | IN_UNMOUNT;

static VANILLA: AtomicBool = AtomicBool::new(false);

/// Marked objects in the whole process, plus one while vanilla mode is on: every hook's first
/// test, one relaxed load of a fixed address (a compare with memory and a branch). Written
/// only when an object gets its first mark or loses its last, so it is read-shared by every
/// thread. Linux has no such word (its first test is the superblock's); uvfs adds it because
/// a hook reaches it without loading the inode's superblock.
static WATCHED_ANYWHERE: Gate = Gate(AtomicIsize::new(0));

/// The gate word, alone in its cache line: every hook of every thread reads it, so no
/// counter another thread writes (an id source, a lock) may share the line with it.
#[repr(align(64))]
struct Gate(AtomicIsize);

/// The gate of files notification never sees: always 0.
pub(crate) static NEVER_WATCHED: AtomicIsize = AtomicIsize::new(0);

/// The gate of an open file that notification may see ([`FileDescription`]'s
/// `notify_gate`).
pub(crate) fn gate() -> &'static AtomicIsize {
    &WATCHED_ANYWHERE.0
}

/// Whether anything at all may be watched: the hooks' first gate.
#[inline(always)]
pub(crate) fn any_watched() -> bool {
    COMPILED && WATCHED_ANYWHERE.0.load(Ordering::Relaxed) != 0
}

/// Counts objects that got their first mark or lost their last (under `MARK_LOCK`).
pub(crate) fn watched_anywhere_add(n: isize) {
    WATCHED_ANYWHERE.0.fetch_add(n, Ordering::Relaxed);
}

/// Benchmarks only: makes every hook enter the mark read side and walk the (empty) mark
/// lists even when nothing is watched, as Linux did before 2015, for the `uvfs-vanilla`
/// columns of `uvfs bench`. Never on by default.
#[doc(hidden)]
pub fn set_vanilla_hooks(on: bool) {
    let _g = mark::MARK_LOCK.lock();
    if VANILLA.swap(on, Ordering::Relaxed) != on {
        watched_anywhere_add(if on { 1 } else { -1 });
    }
}

#[inline(always)]
fn vanilla() -> bool {
    VANILLA.load(Ordering::Relaxed)
}

/// The source of rename cookies (Linux: `fsnotify_get_cookie()`).
static COOKIE: AtomicU32 = AtomicU32::new(0);

/// An event on its way to a group.
pub(crate) struct Event<'a> {
    /// Event bits (`IN_*`), with `IN_ISDIR` when the subject is a directory.
    pub(crate) mask: u32,
    /// The subject's name in its directory: for the parent's marks ([`mark::Slot::Parent`])
    /// of a file event, and for the directory's marks of an entry event (`dirent`).
    pub(crate) name: Option<&'a [u8]>,
    /// An entry event (create, delete, move): the name goes to the directory's own marks.
    pub(crate) dirent: bool,
    /// Pairs `IN_MOVED_FROM` with `IN_MOVED_TO`.
    pub(crate) cookie: u32,
    /// The event is about an open file whose name is gone (`IN_EXCL_UNLINK` marks skip it).
    pub(crate) unlinked: bool,
    /// The open file the event is about, if any: fanotify keeps its path (and the directory
    /// an `O_TMPFILE` file keeps, [`FileDescription::kept_dir`]) and opens it for the reader.
    pub(crate) file: Option<&'a FileDescription>,
}

/// Whether anything on `inode`'s filesystem is watched (or vanilla mode is on).
#[inline(always)]
fn sb_watched(inode: &Inode) -> bool {
    inode.sb().notify_watched() || vanilla()
}

// ---- file hooks (Linux: fsnotify_access/modify/open/close) ----

/// A read of `file` returned data (Linux: `fsnotify_access()`).
#[inline(always)]
pub(crate) fn access(file: &FileDescription) {
    file_event(file, IN_ACCESS);
}

/// A write to `file` changed it (Linux: `fsnotify_modify()`).
#[inline(always)]
pub(crate) fn modify(file: &FileDescription) {
    file_event(file, IN_MODIFY);
}

/// `file` was opened (Linux: `fsnotify_open()`).
#[inline(always)]
pub(crate) fn open(file: &FileDescription) {
    file_event(file, IN_OPEN);
}

/// `file`'s last reference went (Linux: `fsnotify_close()`); nothing for a file whose open
/// did not finish.
#[inline(always)]
pub(crate) fn close(file: &FileDescription) {
    if !file.open_finished() {
        return;
    }
    let mask = if file.fmode().write {
        IN_CLOSE_WRITE
    } else {
        IN_CLOSE_NOWRITE
    };
    file_event(file, mask);
}

#[inline(always)]
fn file_event(file: &FileDescription, mask: u32) {
    if !COMPILED || !file.notify_gate_open() {
        return;
    }
    file_event_watched(file, mask);
}

/// [`file_event`] once something somewhere is watched.
#[inline(never)]
fn file_event_watched(file: &FileDescription, mask: u32) {
    let inode = file.inode();
    if file.nonotify() || !sb_watched(inode) {
        return;
    }
    path_event(&file.path().dentry, inode, Some(file), mask);
}

/// [`access`] after a read that returned `n` bytes, which it returns: nothing for 0 (Linux:
/// `if (ret > 0) fsnotify_access(file)`), tested after the first gate so that the unwatched
/// path is one test. The count goes through the slow call and back, so that the caller keeps
/// nothing live across it (no register saved for a call that never happens).
#[inline(always)]
pub(crate) fn accessed(file: &FileDescription, n: usize) -> usize {
    if any_watched() {
        return file_event_counted(file, IN_ACCESS, n);
    }
    n
}

/// [`modify`] after a write that wrote `n` bytes (as [`accessed`]).
#[inline(always)]
pub(crate) fn modified(file: &FileDescription, n: usize) -> usize {
    if any_watched() {
        return file_event_counted(file, IN_MODIFY, n);
    }
    n
}

/// The file event of a read or write of `n` bytes, if any; returns `n`.
#[inline(never)]
fn file_event_counted(file: &FileDescription, mask: u32, n: usize) -> usize {
    if n > 0 {
        file_event_watched(file, mask);
    }
    n
}

// ---- dentry hooks (Linux: fsnotify_change, fsnotify_xattr) ----

/// `attr` was applied to the inode of `dentry` (Linux: `fsnotify_change()`).
#[inline]
pub(crate) fn change(dentry: &Dentry, inode: &Inode, attr: &SetAttr) {
    if !any_watched() || !sb_watched(inode) {
        return;
    }
    let mask = change_mask(attr);
    if mask != 0 {
        path_event(dentry, inode, None, mask);
    }
}

/// The events an attribute change makes (Linux: `fsnotify_change()`'s table).
fn change_mask(attr: &SetAttr) -> u32 {
    let mut mask = 0;
    if attr.uid.is_some() || attr.gid.is_some() || attr.perm.is_some() {
        mask |= IN_ATTRIB;
    }
    if attr.size.is_some() {
        mask |= IN_MODIFY;
    }
    match (attr.atime.is_some(), attr.mtime.is_some()) {
        (true, true) => mask |= IN_ATTRIB,
        (true, false) => mask |= IN_ACCESS,
        (false, true) => mask |= IN_MODIFY,
        (false, false) => {}
    }
    mask
}

/// An extended attribute of the inode of `dentry` was set or removed (Linux:
/// `fsnotify_xattr()`).
#[inline]
pub(crate) fn xattr(dentry: &Dentry, inode: &Inode) {
    if any_watched() && sb_watched(inode) {
        path_event(dentry, inode, None, IN_ATTRIB);
    }
}

/// An event about `inode`, reached through `dentry` (and `path`'s mount for a file event):
/// told to the marks of the inode, its mount and its filesystem, and with the name to its
/// parent's marks when the parent watches its children (Linux: `fsnotify_parent()`,
/// `__fsnotify_parent()`).
#[inline(always)]
fn path_event(dentry: &Dentry, inode: &Inode, file: Option<&FileDescription>, mask: u32) {
    let mask = if inode.is_dir() {
        mask | IN_ISDIR
    } else {
        mask
    };
    let mnt_mask = file.map_or(0, |f| f.path().mnt.notify_mask());
    let marked = inode.notify_mask() | mnt_mask | inode.sb().notify_mask();
    if !dentry.parent_watched_or_dead() && marked & mask & ALL_EVENTS == 0 && !vanilla() {
        return;
    }
    path_event_slow(dentry, inode, file, mask);
}

#[cold]
#[inline(never)]
fn path_event_slow(dentry: &Dentry, inode: &Inode, file: Option<&FileDescription>, mask: u32) {
    let path = file.map(FileDescription::path);
    #[cfg(test)]
    tests::SLOW.with(|c| c.set(c.get() + 1));
    let mut objects = [None; SLOTS];
    let mut parent_dentry = None;
    if dentry.parent_watched_or_dead() {
        if let Some(parent) = dentry.parent() {
            if let Some(dir) = parent.inode() {
                let dir_mask = dir.notify_mask();
                if !mark::watches_children(dir_mask) {
                    // Set eagerly, cleared lazily (Linux: `fsnotify_clear_child_dentry_flag()`).
                    if dentry.parent_watched() {
                        dentry.clear_parent_watched();
                    }
                } else if dir_mask & mask & ALL_EVENTS != 0 && !fifo_io(inode, mask) {
                    objects[Slot::Parent as usize] = Some(Arc::as_ptr(dir) as usize);
                }
            }
            parent_dentry = Some(parent);
        }
    }
    let mnt_mask = path.map_or(0, |p| p.mnt.notify_mask());
    let marked = inode.notify_mask() | mnt_mask | inode.sb().notify_mask();
    if objects[Slot::Parent as usize].is_none() && marked & mask & ALL_EVENTS == 0 && !vanilla() {
        return;
    }
    // Only objects with marks (a mask) are looked up; vanilla mode looks at them all.
    let all = vanilla();
    if inode.notify_mask() != 0 || all {
        objects[Slot::Inode as usize] = Some(inode as *const Inode as usize);
    }
    if let Some(p) = path.filter(|p| p.mnt.notify_mask() != 0 || all) {
        objects[Slot::Mount as usize] = Some(&*p.mnt as *const Mount as usize);
    }
    if inode.sb().notify_mask() != 0 || all {
        objects[Slot::Sb as usize] = Some(&**inode.sb() as *const SuperBlock as usize);
    }
    let name = objects[Slot::Parent as usize].map(|_| dentry.name());
    let ev = Event {
        mask,
        name: name.as_deref(),
        dirent: false,
        cookie: 0,
        unlinked: file.is_some() && dentry.is_unlinked(),
        file,
    };
    deliver(objects, &ev);
    drop(parent_dentry);
}

/// A read or write of a FIFO: told to the FIFO's own marks only, never to its directory's
/// (what Linux 6.18 does: a directory watching its children for `IN_ACCESS` and `IN_MODIFY`
/// gets neither from a FIFO in it, while the FIFO's own watch gets both, and the directory
/// still gets the FIFO's `IN_OPEN` and `IN_CLOSE_*`; case
/// `inotify_fifo_io_is_told_to_the_fifo_not_its_directory`). fanotify reports nothing of
/// FIFOs at all (`fs::fanotify`).
fn fifo_io(inode: &Inode, mask: u32) -> bool {
    mask & (IN_ACCESS | IN_MODIFY) != 0 && inode.file_type() == crate::abi::FileType::Fifo
}

/// Hands `ev` to the groups with marks on `objects` ([`mark::deliver`]).
fn deliver(objects: [Option<usize>; SLOTS], ev: &Event<'_>) {
    #[cfg(test)]
    tests::DELIVERIES.with(|c| c.set(c.get() + 1));
    mark::deliver(objects, ev);
}

// ---- inode hooks (Linux: fsnotify_inode, fsnotify_link_count, fsnotify_inoderemove) ----

/// An event about `inode` told to the marks of the inode and its filesystem (Linux:
/// `fsnotify_inode()`). `IN_ISDIR` only for the events that are not about the object's own
/// life (`IN_DELETE_SELF` and `IN_MOVE_SELF` of a directory come without it, as the host
/// kernel's show).
#[inline]
fn inode_event(inode: &Inode, mask: u32) {
    if !any_watched() || !sb_watched(inode) {
        return;
    }
    let mask = if inode.is_dir() && mask & (IN_DELETE_SELF | IN_MOVE_SELF) == 0 {
        mask | IN_ISDIR
    } else {
        mask
    };
    let marked = inode.notify_mask() | inode.sb().notify_mask();
    if marked & mask & ALL_EVENTS != 0 || vanilla() {
        let ev = Event {
            mask,
            name: None,
            dirent: false,
            cookie: 0,
            unlinked: false,
            file: None,
        };
        deliver(inode_objects(inode), &ev);
    }
}

fn inode_objects(inode: &Inode) -> [Option<usize>; SLOTS] {
    let all = vanilla();
    let mut objects = [None; SLOTS];
    if inode.notify_mask() != 0 || all {
        objects[Slot::Inode as usize] = Some(inode as *const Inode as usize);
    }
    if inode.sb().notify_mask() != 0 || all {
        objects[Slot::Sb as usize] = Some(&**inode.sb() as *const SuperBlock as usize);
    }
    objects
}

/// `inode`'s link count changed (link, unlink, a rename over it) (Linux:
/// `fsnotify_link_count()`).
#[inline]
pub(crate) fn link_count(inode: &Inode) {
    inode_event(inode, IN_ATTRIB);
}

/// `inode`'s last link is gone and nothing holds it any more: `IN_DELETE_SELF`, then every
/// mark goes (`IN_IGNORED`) (Linux: `fsnotify_inoderemove()` from `dentry_unlink_inode()`).
/// Once per inode, however many of the callers (the unlink, the last close) see it.
#[inline]
pub(crate) fn inode_removed(inode: &Inode) {
    if !any_watched() || !sb_watched(inode) {
        return;
    }
    inode_removed_slow(inode);
}

#[cold]
#[inline(never)]
fn inode_removed_slow(inode: &Inode) {
    if !inode.has_marks() || !inode.take_removed() {
        return;
    }
    inode_event(inode, IN_DELETE_SELF);
    mark::remove_object(inode as *const Inode as usize);
}

/// After an unlink, rmdir or rename over it: `inode` lost a name; if it has no link left
/// and its filesystem says nothing holds it, it is removed now (else at its last holder's
/// end, which the filesystem reports with [`inode_removed`]).
#[inline]
pub(crate) fn name_gone(inode: &Inode) {
    if any_watched() && sb_watched(inode) && inode.nlink() == 0 && inode.fs_holders() == 0 {
        inode_removed_slow(inode);
    }
}

/// A kernfs node's contents changed, as its owner said (Linux: `kernfs_notify_workfn()`):
/// `IN_MODIFY` with the node's name to its directory's marks that watch children, then
/// `IN_MODIFY` to the node's own marks and its filesystem's.
pub(crate) fn child_modified(dir: Option<&Inode>, name: &[u8], inode: &Inode) {
    if !any_watched() || !sb_watched(inode) {
        return;
    }
    if let Some(dir) = dir {
        let dir_mask = dir.notify_mask();
        if mark::watches_children(dir_mask) && dir_mask & IN_MODIFY != 0 {
            let mut objects = [None; SLOTS];
            objects[Slot::Parent as usize] = Some(dir as *const Inode as usize);
            let ev = Event {
                mask: IN_MODIFY,
                name: Some(name),
                dirent: false,
                cookie: 0,
                unlinked: false,
                file: None,
            };
            deliver(objects, &ev);
        }
    }
    inode_event(inode, IN_MODIFY);
}

/// `inode` was moved (Linux: `fsnotify_inode(source, FS_MOVE_SELF)`).
#[inline]
fn move_self(inode: &Inode) {
    inode_event(inode, IN_MOVE_SELF);
}

// ---- directory entry hooks (Linux: fsnotify_create, fsnotify_delete, fsnotify_move) ----

/// An entry event told to `dir`'s marks (and its filesystem's) with the entry's name.
#[inline]
fn dirent_event(dir: &Inode, mask: u32, name: &[u8], cookie: u32) {
    if !any_watched() || !sb_watched(dir) {
        return;
    }
    let marked = dir.notify_mask() | dir.sb().notify_mask();
    if marked & mask & ALL_EVENTS != 0 || vanilla() {
        let ev = Event {
            mask,
            name: Some(name),
            dirent: true,
            cookie,
            unlinked: false,
            file: None,
        };
        deliver(inode_objects(dir), &ev);
    }
}
fn isdir(child: &Inode) -> u32 {
    if child.is_dir() {
        IN_ISDIR
    } else {
        0
    }
}

/// `child` was made as `name` in `dir` (create, mkdir, mknod, symlink) (Linux:
/// `fsnotify_create()`, `fsnotify_mkdir()`).
#[inline]
pub(crate) fn create(dir: &Inode, name: &[u8], child: &Inode) {
    dirent_event(dir, IN_CREATE | isdir(child), name, 0);
}

/// `inode` got the new name `name` in `dir` (Linux: `fsnotify_link()`: the link count
/// change, then the entry).
#[inline]
pub(crate) fn link(dir: &Inode, name: &[u8], inode: &Inode) {
    link_count(inode);
    dirent_event(dir, IN_CREATE | isdir(inode), name, 0);
}

/// `name` (`child`) was unlinked or removed from `dir` (Linux: `vfs_unlink()`'s
/// `fsnotify_link_count()` for a file, then `d_delete_notify()`: the inode's removal if it was
/// its last use, then `fsnotify_delete()`).
#[inline]
pub(crate) fn delete(dir: &Inode, name: &[u8], child: &Inode) {
    if !child.is_dir() {
        link_count(child);
    }
    name_gone(child);
    dirent_event(dir, IN_DELETE | isdir(child), name, 0);
}

/// A rename (Linux: `fsnotify_move()`): `source` moved from `old_name` in `old_dir` to
/// `new_name` in `new_dir`, replacing `target` (not for `RENAME_EXCHANGE`, which is two
/// moves with no target).
#[inline]
pub(crate) fn rename(
    old_dir: &Inode,
    old_name: &[u8],
    new_dir: &Inode,
    new_name: &[u8],
    source: &Inode,
    target: Option<&Inode>,
) {
    if !any_watched() || !(sb_watched(old_dir) || sb_watched(new_dir)) {
        return;
    }
    let cookie = COOKIE.fetch_add(1, Ordering::Relaxed).wrapping_add(1);
    let d = isdir(source);
    dirent_event(old_dir, IN_MOVED_FROM | d, old_name, cookie);
    dirent_event(new_dir, IN_MOVED_TO | d, new_name, cookie);
    if let Some(t) = target {
        link_count(t);
    }
    move_self(source);
}

// ---- unmount ----

/// `sb`'s last mount went (Linux: `fsnotify_unmount_inodes()` from
/// `generic_shutdown_super()`): every watched inode gets `IN_UNMOUNT`, then loses its marks.
#[inline]
pub(crate) fn unmounted(sb: &SuperBlock) {
    if any_watched() && sb.notify_watched() {
        unmounted_slow(sb);
    }
}

#[cold]
#[inline(never)]
fn unmounted_slow(sb: &SuperBlock) {
    // Newest first, as Linux walks `s_inodes` (new inodes go to its head).
    let mut inodes = mark::marked_inodes_of(sb);
    inodes.sort_by_key(|i| std::cmp::Reverse(i.ino()));
    for inode in inodes {
        inode_event(&inode, IN_UNMOUNT);
        mark::remove_object(Arc::as_ptr(&inode) as usize);
    }
    mark::remove_object(sb as *const SuperBlock as usize);
}

/// `mnt` left its namespace's tree: its marks go (Linux: `fsnotify_vfsmount_delete()` at the
/// mount's cleanup).
#[inline]
pub(crate) fn mount_detached(mnt: &Mount) {
    if any_watched() && mnt.sb().notify_watched() {
        mark::remove_object(mnt as *const Mount as usize);
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use crate::abi::{AtFlags, OpenFlags, AT_FDCWD, IN_CREATE, IN_MODIFY, IN_NONBLOCK};
    use crate::{Cred, Task, Vfs};

    thread_local! {
        /// Entries into `path_event_slow` on this thread.
        pub(super) static SLOW: Cell<u32> = const { Cell::new(0) };
        /// Mark list walks (`deliver`) on this thread.
        pub(super) static DELIVERIES: Cell<u32> = const { Cell::new(0) };
    }

    fn counts() -> (u32, u32) {
        (SLOW.with(Cell::get), DELIVERIES.with(Cell::get))
    }

    /// Runs `n` one-byte writes to `fd` and returns how many entered the slow path and how
    /// many mark lists they walked.
    fn writes(t: &Task, fd: i32, n: u32) -> (u32, u32) {
        let before = counts();
        for _ in 0..n {
            t.pwrite(fd, b"x", 0).unwrap();
        }
        let after = counts();
        (after.0 - before.0, after.1 - before.1)
    }

    /// Each gate of the write hook, forced in turn: nothing watched (the superblock's count),
    /// an unrelated inode watched (the dentry flag and the inode mask), the parent watching
    /// (the slow path and its mark list), the parent's watch gone (one slow entry clears the
    /// flag, then the gates hold again), the file itself watched, and vanilla mode (every
    /// hook walks the empty lists).
    #[test]
    fn each_gate_of_the_write_hook_and_its_fallback() {
        let vfs = Vfs::new();
        let t = vfs.task(Cred::root());
        t.mkdirat(AT_FDCWD, "/d", 0o755).unwrap();
        t.mkdirat(AT_FDCWD, "/other", 0o755).unwrap();
        let f = t
            .openat(AT_FDCWD, "/d/f", OpenFlags::CREAT | OpenFlags::RDWR, 0o644)
            .unwrap();
        let ino = t.inotify_init1(IN_NONBLOCK).unwrap();
        assert_eq!(writes(&t, f, 10), (0, 0), "nothing watched");

        let other = t.inotify_add_watch(ino, "/other", IN_MODIFY).unwrap();
        assert_eq!(writes(&t, f, 10), (0, 0), "an unrelated directory watched");

        let d = t.inotify_add_watch(ino, "/d", IN_CREATE).unwrap();
        assert_eq!(
            writes(&t, f, 10),
            (0, 0),
            "the parent watched for no child event: its children are not flagged"
        );
        t.inotify_add_watch(ino, "/d", IN_MODIFY).unwrap();
        assert_eq!(
            writes(&t, f, 10),
            (10, 10),
            "the parent watches: each write delivers"
        );

        t.inotify_rm_watch(ino, d).unwrap();
        assert_eq!(
            writes(&t, f, 10),
            (1, 0),
            "the parent's watch gone: one slow entry clears the flag, nothing is delivered"
        );

        t.inotify_add_watch(ino, "/d/f", IN_MODIFY).unwrap();
        assert_eq!(writes(&t, f, 10), (10, 10), "the file itself watched");

        let g = t
            .openat(AT_FDCWD, "/d/g", OpenFlags::CREAT | OpenFlags::RDWR, 0o644)
            .unwrap();
        super::set_vanilla_hooks(true);
        let vanilla = writes(&t, g, 10);
        super::set_vanilla_hooks(false);
        assert_eq!(
            vanilla,
            (10, 10),
            "vanilla: every write walks the empty list"
        );
        assert_eq!(writes(&t, g, 10), (0, 0));

        t.inotify_rm_watch(ino, other).unwrap();
        t.unlinkat(AT_FDCWD, "/d/g", AtFlags::empty()).unwrap();
    }
}
