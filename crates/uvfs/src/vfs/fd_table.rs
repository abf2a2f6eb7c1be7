//! The file descriptor table. Linux: `struct files_struct`, fs/file.c.
//!
//! # Locking
//! `inner` (a mutex) holds the table: each open fd's file and close-on-exec flag. Every change
//! takes it; the lowest free fd and the limits are atomics written under it and read without
//! it. `published` and `Locked::low_published` let [`FdTable::get`] find the file of an fd
//! without the lock and without writing anything another fd's `get` writes (Linux: `fdget()`
//! reads `files->fdt` under RCU and takes a reference with `get_file_rcu()`): pointers, one per
//! fd, each null or owning a weak reference (`Weak<FileDescription>`) to the file open at that
//! fd, those of the fds below [`LOW`] beside the lock and the rest in an array that doubles as
//! it fills. Only holders of `inner` write them.
//!
//! Publication is lazy: an fd's pointer is set by the first `get` of the fd, which finds it
//! null and takes the lock (`get_slow`); closing or replacing the fd sets it back to null. So
//! a file opened and closed without a `get` (an open and a close, a dup and a close) costs the
//! table nothing more than the lock, and a `get` after the first is lock-free: it loads the
//! fd's pointer under an epoch guard (`sync::rcu`) and upgrades the weak reference, which
//! fails once the file's last strong reference is gone (a racing close). The table's strong
//! references live in `inner` only, so a close still releases the file at once (what Linux's
//! `close()` does when no call is using the file). A replaced pointer's weak reference, and a
//! replaced array with all of its weak references, are retired to the epoch collector, so that
//! a `get` that loaded one before the change upgrades or fails on memory that is still
//! allocated; when no other task shares the table no `get` can be running, and a replaced
//! pointer's reference is given back at once.
#![allow(unsafe_code)] // Reason: the published array holds weak references as raw pointers.

use std::mem::ManuallyDrop;
use std::sync::{Arc, Weak};

use super::file::FileDescription;
use crate::abi::{Errno, Result, DEFAULT_NOFILE};
use crate::sync::atomic::{AtomicPtr, AtomicU32, AtomicUsize, Ordering};
use crate::sync::dist_counter::Slot;
use crate::sync::lock::{Mutex, MutexGuard};
use crate::sync::rcu;

/// Hard ceiling of the per-table limit (Linux: `fs.nr_open` default).
pub const NR_OPEN: u32 = 1 << 20;

/// Fds a table has room for before its slots grow (Linux: `NR_OPEN_DEFAULT`, the fd array
/// embedded in `files_struct`).
const FIRST_SLOTS: usize = 64;

/// Fds of the first published array, which holds the fds from [`LOW`] up (Linux:
/// `NR_OPEN_DEFAULT`, the fds of the table embedded in `files_struct`); it doubles as it
/// fills. Two under a model checker, whose scenarios grow it in one step (`fd_table_check`),
/// since every slot is a modelled atomic.
const FIRST_PUBLISHED: usize = if cfg!(any(loom, feature = "shuttle")) {
    2
} else {
    64 - LOW
};

#[derive(Clone)]
struct Entry {
    file: Arc<FileDescription>,
    cloexec: bool,
}

/// What the table's lock protects: the slots. (The lowest free fd and the limits are atomics
/// beside it, written under it, so that the lock's line pair has room for the published
/// pointers of the low fds.)
struct Inner {
    slots: Slots,
}

/// The lock-free mirror of the open files from fd [`LOW`] up: one pointer per fd (entry
/// `fd - LOW`), null or from `Weak::into_raw`, owning that weak reference.
struct Published {
    slots: Box<[AtomicPtr<FileDescription>]>,
}

impl Published {
    /// An array of `len` fds holding what `old` holds (each pointer with a weak reference of
    /// its own).
    fn grown(old: Option<&Published>, len: usize) -> Box<Published> {
        let mut v: Vec<AtomicPtr<FileDescription>> = Vec::with_capacity(len);
        for s in old.map_or(&[][..], |t| &t.slots[..]) {
            let p = s.load(Ordering::Relaxed);
            let copy = if p.is_null() {
                p
            } else {
                // SAFETY: `p` owns a weak reference, kept while the caller holds the lock.
                let w = ManuallyDrop::new(unsafe { Weak::from_raw(p.cast_const()) });
                Weak::into_raw(Weak::clone(&w)).cast_mut()
            };
            v.push(AtomicPtr::new(copy));
        }
        v.resize_with(len, || AtomicPtr::new(std::ptr::null_mut()));
        Box::new(Published {
            slots: v.into_boxed_slice(),
        })
    }
}

impl Drop for Published {
    fn drop(&mut self) {
        for s in &self.slots {
            drop_weak(s.load(Ordering::Relaxed));
        }
    }
}

/// Fds whose slots sit inline, beside the lock ([`Slots`]).
pub(crate) const LOW: usize = 4;

/// The fds' slots: the first [`LOW`] inline in the table's lock line pair, the rest in a
/// boxed slice (a `Vec`'s capacity word would not fit in the pair). Every open and close of a
/// table's lowest fds takes the lock and writes a slot, and in a table other tasks share, the
/// fd's first `get` and its close write its published pointer under the same lock; with the
/// lock, the slots and those pointers in one line pair, two threads sharing the table move one
/// line pair per open, read or close instead of three (`open1`, `dup1` in threads mode, issue
/// 7: POSIX's lowest-free-fd rule makes that one unavoidable). The slice is made with
/// [`FIRST_SLOTS`] fds, so that slots a task writes do not share a cache line with another
/// table's (two small tables made one after the other would sit side by side in the
/// allocator: `open1` in processes mode).
#[derive(Clone)]
struct Slots {
    low: [Option<Entry>; LOW],
    rest: Box<[Option<Entry>]>,
}

impl Slots {
    fn new(capacity: usize) -> Slots {
        Slots {
            low: Default::default(),
            rest: std::iter::repeat_with(|| None)
                .take(capacity.saturating_sub(LOW))
                .collect(),
        }
    }

    /// Fds with a slot (at least [`LOW`]).
    fn len(&self) -> usize {
        LOW + self.rest.len()
    }

    fn get(&self, i: usize) -> Option<&Option<Entry>> {
        match i.checked_sub(LOW) {
            None => self.low.get(i),
            Some(j) => self.rest.get(j),
        }
    }

    fn get_mut(&mut self, i: usize) -> Option<&mut Option<Entry>> {
        match i.checked_sub(LOW) {
            None => self.low.get_mut(i),
            Some(j) => self.rest.get_mut(j),
        }
    }

    /// Gives fds below `n` a slot.
    #[inline]
    fn grow_to(&mut self, n: usize) {
        if n > self.len() {
            self.grow_slow(n);
        }
    }

    /// [`Slots::grow_to`]'s growth, at least doubling the slice.
    #[cold]
    fn grow_slow(&mut self, n: usize) {
        let len = (n - LOW).max((2 * self.rest.len()).min(NR_OPEN as usize - LOW));
        let mut v = std::mem::take(&mut self.rest).into_vec();
        v.resize(len, None);
        self.rest = v.into_boxed_slice();
    }
}

impl std::ops::Index<usize> for Slots {
    type Output = Option<Entry>;
    fn index(&self, i: usize) -> &Option<Entry> {
        self.get(i).expect("an fd inside the slots")
    }
}

impl std::ops::IndexMut<usize> for Slots {
    fn index_mut(&mut self, i: usize) -> &mut Option<Entry> {
        self.get_mut(i).expect("an fd inside the slots")
    }
}

/// The lowest free index of `slots` at or after `from` (its length if none before it).
fn next_free(slots: &Slots, from: usize) -> usize {
    let mut i = from;
    while i < slots.len() && slots[i].is_some() {
        i += 1;
    }
    i
}

/// A pointer owning a new weak reference to `file`, or null.
fn weak_ptr(file: Option<&Arc<FileDescription>>) -> *mut FileDescription {
    file.map_or(std::ptr::null_mut(), |f| {
        Weak::into_raw(Arc::downgrade(f)).cast_mut()
    })
}

/// Gives back the weak reference `p` owns (null: nothing).
fn drop_weak(p: *mut FileDescription) {
    if !p.is_null() {
        // SAFETY: a non-null published pointer came from `Weak::into_raw` and owns one weak
        // reference; the caller gives it up (it is unreachable, or its array is dropped).
        drop(unsafe { Weak::from_raw(p.cast_const()) });
    }
}

/// Reclaimer of a retired slot pointer.
///
/// # Safety
/// `p` is a slot pointer no reader can load any more, retired once.
unsafe fn reclaim_weak(p: *mut FileDescription, _: &rcu::Collector) {
    drop_weak(p);
}

/// A table of open fds, shared by tasks cloned with shared files. Aligned to a cache-line
/// pair so that two tasks' tables never share a line (tables made one after the other by
/// one thread sit side by side in the allocator); `inner` has a line pair of its own, which
/// every open and close writes. It holds the published pointers of fds 0 to 3 too, so a
/// `get` of one of those reads the line pair the last open or close wrote (one line pair per
/// call between two threads of the table, where the pointers' own line was a second); the
/// array of the higher fds and the limits, in the table's first line pair, are written only
/// by a first `get`, a close of an fd that was published, a growth and `setrlimit`.
#[repr(align(128))]
pub struct FdTable {
    /// The table's identity, never reused: the owner of the POSIX locks its tasks take
    /// (Linux: `current->files`), and what `F_GETLK` reports as their `l_pid`.
    id: u64,
    /// The open files, read by `get` without the lock (module docs). Written under `inner`.
    published: AtomicPtr<Published>,
    /// The open-file limit (`RLIMIT_NOFILE`'s soft limit), and the hard limit, raised only
    /// with `CAP_SYS_RESOURCE` (`rlim_max`). Written under `inner`'s lock, read without it.
    limit: AtomicU32,
    hard: AtomicU32,
    inner: Slot<Locked>,
}

/// The table's lock, the lowest free fd and the published pointers of the low fds.
struct Locked {
    /// Protects: every slot, and the writes of `first_free`, the limits, `published`, its
    /// slots and `low_published`.
    /// Order: innermost except for dropping closed files, which happens after release.
    lock: Mutex<Inner>,
    /// The lowest free fd (exact under the lock), an atomic so that the check an open makes
    /// before its walk (`has_free`) takes no lock: one lock less per open (Linux's
    /// `alloc_fd()` and `close()` take `file_lock`, `fd_install()` does not).
    first_free: AtomicUsize,
    /// The published pointers of the fds below [`LOW`] (the published array leaves them
    /// null): beside the lock and the slots an install and a close write anyway.
    low_published: [AtomicPtr<FileDescription>; LOW],
}

// The lock, the lowest free fd, the inline slots and their published pointers fill one
// cache-line pair ([`Slots`]); a field added here should be weighed against that.
// (Model-checking builds use larger locks.)
#[cfg(not(any(loom, feature = "shuttle")))]
const _: () = assert!(std::mem::size_of::<Locked>() <= 128);

/// Lookups of many fds ([`FdTable::view`]).
pub(crate) struct FdView<'a>(View<'a>);

enum View<'a> {
    /// An unshared table, locked: files are lent.
    Alone(MutexGuard<'a, Inner>),
    /// A shared table: each lookup takes a reference, under one epoch guard for the view.
    Shared(&'a Arc<FdTable>, rcu::Guard),
}

impl FdView<'_> {
    /// The file at `fd`, or `None` if `fd` is not open.
    #[inline]
    pub(crate) fn get(&self, fd: i32) -> Option<std::borrow::Cow<'_, Arc<FileDescription>>> {
        match &self.0 {
            View::Alone(g) => match g.slots.get(usize::try_from(fd).ok()?) {
                Some(Some(e)) => Some(std::borrow::Cow::Borrowed(&e.file)),
                _ => None,
            },
            View::Shared(t, guard) => {
                let i = usize::try_from(fd).ok()?;
                match t.get_published(guard, i) {
                    Some(r) => r.ok(),
                    None => t.get_slow(i).ok(),
                }
                .map(std::borrow::Cow::Owned)
            }
        }
    }
}

/// The next [`FdTable::id`].
static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

fn new_id() -> u64 {
    NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

impl Default for FdTable {
    fn default() -> Self {
        FdTable {
            id: new_id(),
            published: AtomicPtr::new(std::ptr::null_mut()),
            limit: AtomicU32::new(DEFAULT_NOFILE),
            hard: AtomicU32::new(NR_OPEN),
            inner: Slot(Locked {
                lock: Mutex::new(Inner {
                    slots: Slots::new(FIRST_SLOTS),
                }),
                first_free: AtomicUsize::new(0),
                low_published: Default::default(),
            }),
        }
    }
}

impl Drop for FdTable {
    fn drop(&mut self) {
        // The table's end closes each of its fds, and each close releases the table's POSIX
        // locks on that file (Linux: `close_files()` → `filp_close()`). The files of locked
        // inodes are collected under the table's lock (one load per file; nothing is
        // allocated when none was ever locked) and released after it, which stays a leaf.
        let locked: Vec<Arc<FileDescription>> = {
            let g = self.lock();
            g.slots
                .low
                .iter()
                .chain(g.slots.rest.iter())
                .flatten()
                .filter(|e| e.file.inode().has_lock_context())
                .map(|e| e.file.clone())
                .collect()
        };
        for file in &locked {
            super::locks::remove_posix(file, self.id);
        }
        drop(locked);
        for s in &self.inner.0.low_published {
            drop_weak(s.load(Ordering::Acquire));
        }
        let p = self.published.load(Ordering::Acquire);
        if !p.is_null() {
            // SAFETY: `published` came from `Box::into_raw`; with `&mut self` no `get` is
            // running on this table, and nothing else owns the array.
            drop(unsafe { Box::from_raw(p) });
        }
    }
}

impl FdTable {
    /// An empty table with the default limit.
    pub fn new() -> Self {
        Self::default()
    }

    /// The table's identity (see the field).
    #[inline]
    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.0.lock.lock()
    }

    /// The lowest free fd (exact while the caller holds the lock).
    fn first_free(&self) -> usize {
        self.inner.0.first_free.load(Ordering::Relaxed)
    }

    /// Sets the lowest free fd (caller holds the lock).
    fn set_first_free(&self, i: usize) {
        self.inner.0.first_free.store(i, Ordering::Relaxed);
    }

    /// The file at `fd`.
    ///
    /// # Fast path
    /// On a table other tasks share: takes no lock and writes no location another fd's `get`
    /// writes: an epoch guard, one protected load (the fd's pointer; for an fd from [`LOW`] up,
    /// the array's first) and the
    /// upgrade of a weak reference, which writes only the file's own reference count.
    /// Falls back when: the fd's pointer is null (its first `get`, or the fd is not open) or
    /// past the array: `get_slow` takes the lock and publishes the file. A racing close makes
    /// the upgrade fail (`EBADF`, as if the close came first). A table no other task shares
    /// is read under its lock, which nobody else takes, and publishes nothing: publishing
    /// would cost an open, read and close more than the lock (`uvfs bench open-read-close`).
    /// Checked by: `fd_table_check` (loom and shuttle) and `tests/concurrency_files.rs`; the
    /// fallback by every first `get` of an fd (`fd_table_check` gets before and after it).
    ///
    /// # Errors
    /// `EBADF` if `fd` is not open.
    #[inline]
    pub fn get(self: &Arc<Self>, fd: i32) -> Result<Arc<FileDescription>> {
        let i = usize::try_from(fd).map_err(|_| Errno::EBADF)?;
        if Self::alone(self) {
            return match self.lock().slots.get(i) {
                Some(Some(e)) => Ok(e.file.clone()),
                _ => Err(Errno::EBADF),
            };
        }
        let found = self.get_published(&rcu::read(), i);
        match found {
            Some(r) => r,
            None => self.get_slow(i),
        }
    }

    /// The lock-free half of [`FdTable::get`] under `guard`: `None` when fd `i` has no
    /// published file (the caller takes `get_slow`).
    #[inline(always)]
    fn get_published(&self, guard: &rcu::Guard, i: usize) -> Option<Result<Arc<FileDescription>>> {
        let slot = match i.checked_sub(LOW) {
            None => &self.inner.0.low_published[i],
            Some(j) => {
                let table = rcu::protect(guard, &self.published, Ordering::Acquire);
                // SAFETY: a published array is retired only after it is replaced, and freed
                // after every guard that could have loaded it, this one included, has ended.
                unsafe { table.as_ref() }.and_then(|t| t.slots.get(j))?
            }
        };
        let p = rcu::protect(guard, slot, Ordering::Acquire);
        if p.is_null() {
            return None;
        }
        // SAFETY: `p` came from `Weak::into_raw`; the weak reference it owns is given back
        // only after it is unpublished and every guard that could have loaded it has ended,
        // so the allocation is live; `ManuallyDrop` leaves that reference to its owner.
        let weak = ManuallyDrop::new(unsafe { Weak::from_raw(p.cast_const()) });
        Some(weak.upgrade().ok_or(Errno::EBADF))
    }

    /// A view for looking up many fds in one call (`poll`'s pass over its array; Linux:
    /// `do_poll()`'s `fdget()` of each entry, which takes no reference when the table is not
    /// shared). On a table no other task shares, the view holds the lock for its life and
    /// lends each file without touching its reference count: no other thread can reach the
    /// table (the one task that holds it runs this call), so holding the lock across the
    /// files' operations orders against nothing. On a shared table each lookup is a [`get`]
    /// under one epoch guard for the view (a guard held across the files' operations delays
    /// reclamation by that long, as a `get` in a long call would).
    ///
    /// # Locking
    /// While the view of an unshared table lives, nothing may look up, install or close an
    /// fd of this table (the lock is not reentrant); what the caller does with the files
    /// (their `poll`) never does.
    ///
    /// [`get`]: FdTable::get
    pub(crate) fn view(self: &Arc<Self>) -> FdView<'_> {
        FdView(if Self::alone(self) {
            View::Alone(self.lock())
        } else {
            View::Shared(self, rcu::read())
        })
    }

    /// `get` of an fd whose file is not published: under the lock, the file, published for
    /// the next `get`.
    #[cold]
    fn get_slow(&self, i: usize) -> Result<Arc<FileDescription>> {
        let g = self.lock();
        let file = match g.slots.get(i) {
            Some(Some(e)) => e.file.clone(),
            _ => return Err(Errno::EBADF),
        };
        self.publish(i, &file);
        Ok(file)
    }

    /// Publishes `file` at fd `i`, whose published pointer is null (caller holds the lock):
    /// grows the array to hold `i` first.
    fn publish(&self, i: usize, file: &Arc<FileDescription>) {
        let slot = match i.checked_sub(LOW) {
            None => &self.inner.0.low_published[i],
            Some(j) => self.published_slot_growing(j),
        };
        if slot.load(Ordering::Relaxed).is_null() {
            slot.store(weak_ptr(Some(file)), Ordering::Release);
        }
    }

    /// Entry `j` of the published array (fd `LOW + j`), growing the array to hold it first
    /// (caller holds the lock).
    fn published_slot_growing(&self, j: usize) -> &AtomicPtr<FileDescription> {
        let mut cur = self.published.load(Ordering::Acquire);
        // SAFETY: only holders of `inner` (the caller) replace or free the array.
        let old = unsafe { cur.as_ref() };
        let len = old.map_or(0, |t| t.slots.len());
        if j >= len {
            let grown = (j + 1)
                .next_power_of_two()
                .max(FIRST_PUBLISHED)
                .max(len * 2);
            let new = Box::into_raw(Published::grown(old, grown));
            self.published.store(new, Ordering::Release);
            if !cur.is_null() {
                // SAFETY: `cur` is unpublished, and retired once: only the holder of `inner`
                // that replaced it retires it.
                unsafe { rcu::retire(cur, rcu::reclaim_boxed) };
            }
            cur = new;
        }
        // SAFETY: as above (the array lives while the lock is held); `j` is inside it now.
        unsafe { &(*cur).slots[j] }
    }

    /// True if no other task shares this table, so that no `get` can be running on it: a
    /// replaced weak reference may then be given back at once instead of retired (the file's
    /// memory is then reused while it is still in cache). The acquire fence orders the `get`s
    /// of the tasks that shared the table before their release of it.
    fn alone(this: &Arc<Self>) -> bool {
        if Arc::strong_count(this) == 1 {
            std::sync::atomic::fence(std::sync::atomic::Ordering::Acquire);
            true
        } else {
            false
        }
    }

    /// Sets fd `i`'s published pointer back to null (it was closed or replaced, under the
    /// lock): retires the weak reference it held, or gives it back at once if `alone`.
    fn unpublish(&self, i: usize, alone: bool) {
        let slot = match i.checked_sub(LOW) {
            None => &self.inner.0.low_published[i],
            Some(j) => {
                let cur = self.published.load(Ordering::Acquire);
                // SAFETY: only holders of `inner` (the caller) replace or free the array.
                let Some(slot) = unsafe { cur.as_ref() }.and_then(|t| t.slots.get(j)) else {
                    return;
                };
                slot
            }
        };
        if slot.load(Ordering::Relaxed).is_null() {
            return;
        }
        let old = slot.swap(std::ptr::null_mut(), Ordering::AcqRel);
        if alone {
            drop_weak(old);
        } else {
            // SAFETY: `old` is unpublished, and retired once: the swap took it.
            unsafe { rcu::retire(old, reclaim_weak) };
        }
    }

    /// Installs `file` at the lowest free fd `>= min`.
    ///
    /// # Errors
    /// `EMFILE` when no fd below the limit is free; `EINVAL` if `min` is at or past the limit.
    pub fn install(&self, file: Arc<FileDescription>, cloexec: bool, min: i32) -> Result<i32> {
        let mut g = self.lock();
        self.install_locked(&mut g, file, cloexec, min)
    }

    /// `dup(2)`: installs the file of `fd` at the lowest free fd, `FD_CLOEXEC` clear, under
    /// one hold of the lock.
    ///
    /// # Errors
    /// `EBADF` if `fd` is not open; `EMFILE` when no fd below the limit is free.
    pub fn dup(&self, fd: i32) -> Result<i32> {
        let i = usize::try_from(fd).map_err(|_| Errno::EBADF)?;
        let mut g = self.lock();
        let file = match g.slots.get(i) {
            Some(Some(e)) => e.file.clone(),
            _ => return Err(Errno::EBADF),
        };
        self.install_locked(&mut g, file, false, 0)
    }

    fn install_locked(
        &self,
        g: &mut Inner,
        file: Arc<FileDescription>,
        cloexec: bool,
        min: i32,
    ) -> Result<i32> {
        let min = usize::try_from(min).map_err(|_| Errno::EINVAL)?;
        let limit = self.limit() as usize;
        if min >= limit {
            return Err(if min == 0 {
                Errno::EMFILE
            } else {
                Errno::EINVAL
            });
        }
        let first_free = self.first_free();
        let start = min.max(first_free);
        let mut i = start;
        while i < g.slots.len() && g.slots[i].is_some() {
            i += 1;
        }
        if i >= limit {
            return Err(Errno::EMFILE);
        }
        g.slots.grow_to(i + 1);
        g.slots[i] = Some(Entry { file, cloexec });
        if start == first_free {
            self.set_first_free(next_free(&g.slots, i + 1));
        }
        Ok(i as i32)
    }

    /// Installs `file` at exactly `fd`, returning what was there (`dup2`/`dup3`).
    ///
    /// # Errors
    /// `EBADF` if `fd` is negative or at/past the limit.
    pub fn install_at(
        self: &Arc<Self>,
        fd: i32,
        file: Arc<FileDescription>,
        cloexec: bool,
    ) -> Result<Option<Arc<FileDescription>>> {
        let i = usize::try_from(fd).map_err(|_| Errno::EBADF)?;
        let mut g = self.lock();
        if i >= self.limit() as usize {
            return Err(Errno::EBADF);
        }
        g.slots.grow_to(i + 1);
        let old = g.slots[i].replace(Entry { file, cloexec });
        if i == self.first_free() {
            self.set_first_free(next_free(&g.slots, i + 1));
        }
        self.unpublish(i, Self::alone(self));
        Ok(old.map(|e| e.file))
    }

    /// Removes `fd`, returning its file (dropped by the caller after the lock is released).
    ///
    /// # Errors
    /// `EBADF` if `fd` is not open.
    pub fn remove(self: &Arc<Self>, fd: i32) -> Result<Arc<FileDescription>> {
        let i = usize::try_from(fd).map_err(|_| Errno::EBADF)?;
        let mut g = self.lock();
        let e = g
            .slots
            .get_mut(i)
            .and_then(Option::take)
            .ok_or(Errno::EBADF)?;
        if i < self.first_free() {
            self.set_first_free(i);
        }
        self.unpublish(i, Self::alone(self));
        Ok(e.file)
    }

    /// The `FD_CLOEXEC` flag of `fd`.
    ///
    /// # Errors
    /// `EBADF` if `fd` is not open.
    pub fn cloexec(&self, fd: i32) -> Result<bool> {
        let i = usize::try_from(fd).map_err(|_| Errno::EBADF)?;
        let g = self.lock();
        match g.slots.get(i) {
            Some(Some(e)) => Ok(e.cloexec),
            _ => Err(Errno::EBADF),
        }
    }

    /// Sets the `FD_CLOEXEC` flag of `fd`.
    ///
    /// # Errors
    /// `EBADF` if `fd` is not open.
    pub fn set_cloexec(&self, fd: i32, on: bool) -> Result<()> {
        let i = usize::try_from(fd).map_err(|_| Errno::EBADF)?;
        let mut g = self.lock();
        match g.slots.get_mut(i) {
            Some(Some(e)) => {
                e.cloexec = on;
                Ok(())
            }
            _ => Err(Errno::EBADF),
        }
    }

    /// True if some fd below the limit is free (open checks before it walks, where Linux
    /// reserves one). Takes no lock: exact unless another task changes the table meanwhile,
    /// and the install that follows checks again under the lock.
    pub fn has_free(&self) -> bool {
        self.first_free() < self.limit() as usize
    }

    /// The hard open-file limit (`RLIMIT_NOFILE`'s `rlim_max`).
    pub fn hard_limit(&self) -> u32 {
        self.hard.load(Ordering::Relaxed)
    }

    /// The soft and hard open-file limits as one `setrlimit` left them: read under the lock
    /// that `set_limits` writes them under, so never a soft limit above the hard one.
    pub fn limits(&self) -> (u32, u32) {
        let _g = self.lock();
        (self.limit(), self.hard_limit())
    }

    /// The open-file limit (Linux: `RLIMIT_NOFILE`). Takes no lock.
    pub fn limit(&self) -> u32 {
        self.limit.load(Ordering::Relaxed)
    }

    /// Sets the open-file limits (`RLIMIT_NOFILE`'s soft `limit` and `hard`); fds at or past
    /// the soft limit stay open, as with `setrlimit`. Raising the hard limit takes
    /// `may_raise` (`CAP_SYS_RESOURCE`).
    ///
    /// # Errors
    /// `EINVAL` for a soft limit above the hard one; `EPERM` for a hard limit past
    /// [`NR_OPEN`], or above the current one without `may_raise` (Linux: `do_prlimit()`).
    pub fn set_limits(&self, limit: u32, hard: u32, may_raise: bool) -> Result<()> {
        if limit > hard {
            return Err(Errno::EINVAL);
        }
        if hard > NR_OPEN {
            return Err(Errno::EPERM);
        }
        let g = self.lock();
        if hard > self.hard.load(Ordering::Relaxed) && !may_raise {
            return Err(Errno::EPERM);
        }
        self.limit.store(limit, Ordering::Relaxed);
        self.hard.store(hard, Ordering::Relaxed);
        drop(g);
        Ok(())
    }

    /// Removes every close-on-exec fd (exec), returning the files to drop.
    pub fn close_on_exec(self: &Arc<Self>) -> Vec<Arc<FileDescription>> {
        let mut g = self.lock();
        let mut out = Vec::new();
        for i in 0..g.slots.len() {
            if g.slots[i].as_ref().is_some_and(|e| e.cloexec) {
                out.extend(g.slots[i].take().map(|e| e.file));
                self.unpublish(i, Self::alone(self));
            }
        }
        self.set_first_free(next_free(&g.slots, 0));
        out
    }

    /// A copy of the table (fork without shared files).
    pub fn duplicate(&self) -> FdTable {
        let g = self.lock();
        let mut slots = Slots::new(g.slots.len().max(FIRST_SLOTS));
        slots.low.clone_from(&g.slots.low);
        slots.rest[..g.slots.rest.len()].clone_from_slice(&g.slots.rest);
        FdTable {
            id: new_id(),
            published: AtomicPtr::new(std::ptr::null_mut()),
            limit: AtomicU32::new(self.limit()),
            hard: AtomicU32::new(self.hard_limit()),
            inner: Slot(Locked {
                lock: Mutex::new(Inner { slots }),
                first_free: AtomicUsize::new(self.first_free()),
                low_published: Default::default(),
            }),
        }
    }
}
