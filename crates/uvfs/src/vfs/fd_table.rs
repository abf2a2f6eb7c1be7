//! The file descriptor table. Linux: `struct files_struct`, fs/file.c.
//!
//! # Locking
//! `inner` (a mutex) holds the table: each open fd's file and close-on-exec flag, the lowest
//! fd that may be free, the limit. Every change takes it. `published` lets [`FdTable::get`]
//! find the file of an fd without the lock and without writing anything another fd's `get`
//! writes (Linux: `fdget()` reads `files->fdt` under RCU and takes a reference with
//! `get_file_rcu()`): an array of pointers, one per fd, each null or owning a weak reference
//! (`Weak<FileDescription>`) to the file open at that fd. Only holders of `inner` write it.
//!
//! Publication is lazy: an fd's pointer is set by the first `get` of the fd, which finds it
//! null and takes the lock (`get_slow`); closing or replacing the fd sets it back to null. So
//! a file opened and closed without a `get` (an open and a close, a dup and a close) costs the
//! table nothing more than the lock, and a `get` after the first is lock-free: it loads the
//! array and the fd's pointer under an epoch guard (`sync::rcu`) and upgrades the weak
//! reference, which fails once the file's last strong reference is gone (a racing close). The
//! table's strong references live in `inner` only, so a close still releases the file at once
//! (what Linux's `close()` does when no call is using the file). A replaced pointer's weak
//! reference, and a replaced array with all of its weak references, are retired to the epoch
//! collector, so that a `get` that loaded one before the change upgrades or fails on memory
//! that is still allocated; when no other task shares the table no `get` can be running, and
//! a replaced pointer's reference is given back at once.
#![allow(unsafe_code)] // Reason: the published array holds weak references as raw pointers.

use std::mem::ManuallyDrop;
use std::sync::{Arc, Weak};

use super::file::FileDescription;
use crate::abi::{Errno, Result, DEFAULT_NOFILE};
use crate::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, Ordering};
use crate::sync::dist_counter::Slot;
use crate::sync::lock::{Mutex, MutexGuard};
use crate::sync::rcu;

/// Hard ceiling of the per-table limit (Linux: `fs.nr_open` default).
pub const NR_OPEN: u32 = 1 << 20;

/// Fds a table has room for before its slots grow (Linux: `NR_OPEN_DEFAULT`, the fd array
/// embedded in `files_struct`).
const FIRST_SLOTS: usize = 64;

/// Fds of the first published array (Linux: `NR_OPEN_DEFAULT`, the fds of the table embedded
/// in `files_struct`); it doubles as it fills. Two under a model checker, whose scenarios grow
/// it in one step (`fd_table_check`), since every slot is a modelled atomic.
const FIRST_PUBLISHED: usize = if cfg!(any(loom, feature = "shuttle")) {
    2
} else {
    64
};

#[derive(Clone)]
struct Entry {
    file: Arc<FileDescription>,
    cloexec: bool,
}

struct Inner {
    slots: Slots,
    /// Lowest free index (exact).
    first_free: usize,
    limit: u32,
    /// The hard limit: raised only with `CAP_SYS_RESOURCE` (`RLIMIT_NOFILE`'s `rlim_max`).
    hard: u32,
}

/// The lock-free mirror of the open files: one pointer per fd, null or from
/// `Weak::into_raw`, owning that weak reference.
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
const LOW: usize = 4;

/// The fds' slots: the first [`LOW`] inline in the table's lock line pair, the rest in a
/// `Vec`. Every open and close of a table's lowest fds takes the lock and writes a slot; with
/// both in one line pair, two threads sharing the table move one line pair per call instead
/// of two (`open1`, `dup1` in threads mode, issue 7: POSIX's lowest-free-fd rule makes that
/// one unavoidable). The `Vec` is made with room for [`FIRST_SLOTS`] fds, so that slots a
/// task writes do not share a cache line with another table's (two small tables made one
/// after the other would sit side by side in the allocator: `open1` in processes mode).
#[derive(Clone)]
struct Slots {
    low: [Option<Entry>; LOW],
    rest: Vec<Option<Entry>>,
}

impl Slots {
    fn new(capacity: usize) -> Slots {
        Slots {
            low: Default::default(),
            rest: Vec::with_capacity(capacity.saturating_sub(LOW)),
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
    fn grow_to(&mut self, n: usize) {
        if n > self.len() {
            self.rest.resize(n - LOW, None);
        }
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
/// one thread sit side by side in the allocator); `inner` has a line pair of its own, so
/// that a change of the table does not evict `published` from the readers' caches more than
/// the change itself requires.
#[repr(align(128))]
pub struct FdTable {
    /// The table's identity, never reused: the owner of the POSIX locks its tasks take
    /// (Linux: `current->files`), and what `F_GETLK` reports as their `l_pid`.
    id: u64,
    /// The open files, read by `get` without the lock (module docs). Written under `inner`.
    published: AtomicPtr<Published>,
    inner: Slot<Locked>,
}

/// The table's lock and the two figures `has_free` and `limit` read without it.
struct Locked {
    /// Protects: every slot, the limit, and the writes of `published`, its slots and the
    /// two mirrors below.
    /// Order: innermost except for dropping closed files, which happens after release.
    lock: Mutex<Inner>,
    /// `Inner::first_free` and `Inner::limit`, stored under the lock at each change, so that
    /// the check an open makes before its walk (`has_free`) and `limit` take no lock: one
    /// lock less per open (Linux's `alloc_fd()` and `close()` take `file_lock`, `fd_install()`
    /// does not).
    first_free: AtomicU64,
    limit: AtomicU32,
}

// The lock, the mirrors and the inline slots fill one cache-line pair ([`Slots`]); a field
// added here should be weighed against that. (Model-checking builds use larger locks.)
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
            inner: Slot(Locked {
                lock: Mutex::new(Inner {
                    slots: Slots::new(FIRST_SLOTS),
                    first_free: 0,
                    limit: DEFAULT_NOFILE,
                    hard: NR_OPEN,
                }),
                first_free: AtomicU64::new(0),
                limit: AtomicU32::new(DEFAULT_NOFILE),
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

    /// Stores `g`'s lowest free fd and limit in their mirrors (caller holds the lock).
    fn mirror(&self, g: &Inner) {
        self.inner
            .0
            .first_free
            .store(g.first_free as u64, Ordering::Relaxed);
        self.inner.0.limit.store(g.limit, Ordering::Relaxed);
    }

    /// The file at `fd`.
    ///
    /// # Fast path
    /// On a table other tasks share: takes no lock and writes no location another fd's `get`
    /// writes: an epoch guard, two protected loads (the array, the fd's pointer) and the
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
        let table = rcu::protect(guard, &self.published, Ordering::Acquire);
        // SAFETY: a published array is retired only after it is replaced, and freed after
        // every guard that could have loaded it, this one included, has ended.
        let slot = unsafe { table.as_ref() }.and_then(|t| t.slots.get(i))?;
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
        let mut cur = self.published.load(Ordering::Acquire);
        // SAFETY: only holders of `inner` (this call) replace or free the array.
        let old = unsafe { cur.as_ref() };
        let len = old.map_or(0, |t| t.slots.len());
        if i >= len {
            let grown = (i + 1)
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
        // SAFETY: as above; `i` is inside the array now.
        let slot = unsafe { &(*cur).slots[i] };
        if slot.load(Ordering::Relaxed).is_null() {
            slot.store(weak_ptr(Some(&file)), Ordering::Release);
        }
        Ok(file)
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
        let cur = self.published.load(Ordering::Acquire);
        // SAFETY: only holders of `inner` (the caller) replace or free the array.
        let Some(slot) = unsafe { cur.as_ref() }.and_then(|t| t.slots.get(i)) else {
            return;
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
        let r = Self::install_locked(&mut g, file, cloexec, min);
        self.mirror(&g);
        r
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
        let r = Self::install_locked(&mut g, file, false, 0);
        self.mirror(&g);
        r
    }

    fn install_locked(
        g: &mut Inner,
        file: Arc<FileDescription>,
        cloexec: bool,
        min: i32,
    ) -> Result<i32> {
        let min = usize::try_from(min).map_err(|_| Errno::EINVAL)?;
        let limit = g.limit as usize;
        if min >= limit {
            return Err(if min == 0 {
                Errno::EMFILE
            } else {
                Errno::EINVAL
            });
        }
        let start = min.max(g.first_free);
        let mut i = start;
        while i < g.slots.len() && g.slots[i].is_some() {
            i += 1;
        }
        if i >= limit {
            return Err(Errno::EMFILE);
        }
        g.slots.grow_to(i + 1);
        g.slots[i] = Some(Entry { file, cloexec });
        if start == g.first_free {
            g.first_free = next_free(&g.slots, i + 1);
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
        if i >= g.limit as usize {
            return Err(Errno::EBADF);
        }
        g.slots.grow_to(i + 1);
        let old = g.slots[i].replace(Entry { file, cloexec });
        if i == g.first_free {
            g.first_free = next_free(&g.slots, i + 1);
            self.mirror(&g);
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
        if i < g.first_free {
            g.first_free = i;
            self.mirror(&g);
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
        self.inner.0.first_free.load(Ordering::Relaxed) < u64::from(self.limit())
    }

    /// The hard open-file limit (`RLIMIT_NOFILE`'s `rlim_max`).
    pub fn hard_limit(&self) -> u32 {
        self.lock().hard
    }

    /// The open-file limit (Linux: `RLIMIT_NOFILE`). Takes no lock.
    pub fn limit(&self) -> u32 {
        self.inner.0.limit.load(Ordering::Relaxed)
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
        let mut g = self.lock();
        if hard > g.hard && !may_raise {
            return Err(Errno::EPERM);
        }
        g.limit = limit;
        g.hard = hard;
        self.mirror(&g);
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
        g.first_free = next_free(&g.slots, 0);
        self.mirror(&g);
        out
    }

    /// A copy of the table (fork without shared files).
    pub fn duplicate(&self) -> FdTable {
        let g = self.lock();
        FdTable {
            id: new_id(),
            published: AtomicPtr::new(std::ptr::null_mut()),
            inner: Slot(Locked {
                lock: Mutex::new(Inner {
                    slots: {
                        let mut v = Slots::new(g.slots.len().max(FIRST_SLOTS));
                        v.low.clone_from(&g.slots.low);
                        v.rest.extend(g.slots.rest.iter().cloned());
                        v
                    },
                    first_free: g.first_free,
                    limit: g.limit,
                    hard: g.hard,
                }),
                first_free: AtomicU64::new(g.first_free as u64),
                limit: AtomicU32::new(g.limit),
            }),
        }
    }
}
