//! A task's root, working directory and umask, private to the task or shared by the threads of
//! [`super::Task::clone_thread`]. Linux: `struct fs_struct` (fs/fs_struct.c), shared by
//! `clone(CLONE_FS)` and copied by `fork()` (`copy_fs_struct()`).

use std::cell::{Ref, RefCell};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use arc_swap::{ArcSwap, Guard};

use super::inode::InodeHold;
use super::mount::VfsPath;

/// Root and working directory (Linux: `fs_struct::root` and `fs_struct::pwd`).
#[derive(Clone, Debug)]
pub(crate) struct FsState {
    pub(crate) root: HeldPath,
    pub(crate) cwd: HeldPath,
}

impl FsState {
    /// A state rooted at `root`, working in `cwd`.
    pub(crate) fn new(root: VfsPath, cwd: VfsPath) -> FsState {
        FsState {
            root: HeldPath::new(root),
            cwd: HeldPath::new(cwd),
        }
    }
}

/// A root or cwd: the path and a hold on its inode, so a removed directory that is still some
/// task's root or cwd keeps its inode (Linux: `path_get()` in `set_fs_pwd()`,
/// `set_fs_root()` and `copy_fs_struct()`). Every copy of an [`FsState`] holds again and every
/// state dropped gives its holds back: a private state when its task ends or changes it, a
/// shared one when the last task sharing it does (and the last walk that loaded it ends).
#[derive(Clone, Debug)]
pub(crate) struct HeldPath {
    path: VfsPath,
    _hold: InodeHold,
}

impl HeldPath {
    fn new(path: VfsPath) -> HeldPath {
        let hold = InodeHold::of(&path.dentry);
        HeldPath { path, _hold: hold }
    }
}

impl std::ops::Deref for HeldPath {
    type Target = VfsPath;
    #[inline]
    fn deref(&self) -> &VfsPath {
        &self.path
    }
}

/// Where a task keeps its [`FsState`].
enum Slot {
    /// Used by this task alone: read and written in place.
    Own(FsState),
    /// Shared with other tasks: a published copy, replaced whole by each change.
    Shared(Arc<ArcSwap<FsState>>),
}

/// The root and cwd of one task.
///
/// # Fast path
/// A task that shares its state with no other reads it in place: a `RefCell` borrow, no lock,
/// no atomic operation (Linux's RCU walk reads `fs->root` and `fs->pwd` under a seqcount
/// without a reference). Sharing ([`FsHandle::share`]) moves the state into an `ArcSwap`: a
/// reader then loads the published copy (`ArcSwap::load`, which touches only a per-thread
/// debt slot and no shared counter); `chdir`/`chroot` publish a new copy with a
/// compare-and-swap loop (`ArcSwap::rcu`) and take no lock. A shared state whose other users
/// are all gone becomes private again at its next read.
pub(crate) struct FsHandle {
    slot: RefCell<Slot>,
}

/// A read view of a task's [`FsState`], valid while it lives.
pub(crate) enum FsRef<'a> {
    Own(Ref<'a, FsState>),
    Shared(Guard<Arc<FsState>>),
}

impl std::ops::Deref for FsRef<'_> {
    type Target = FsState;
    #[inline]
    fn deref(&self) -> &FsState {
        match self {
            FsRef::Own(r) => r,
            FsRef::Shared(g) => g,
        }
    }
}

impl FsHandle {
    /// A private state.
    pub(crate) fn new(state: FsState) -> FsHandle {
        FsHandle {
            slot: RefCell::new(Slot::Own(state)),
        }
    }

    /// The current root and cwd.
    #[inline]
    pub(crate) fn borrow(&self) -> FsRef<'_> {
        let own = Ref::filter_map(self.slot.borrow(), |s| match s {
            Slot::Own(st) => Some(st),
            Slot::Shared(_) => None,
        });
        match own {
            Ok(st) => FsRef::Own(st),
            Err(slot) => {
                drop(slot);
                self.borrow_shared()
            }
        }
    }

    #[cold]
    fn borrow_shared(&self) -> FsRef<'_> {
        self.unshare_if_alone();
        let slot = self.slot.borrow();
        match &*slot {
            Slot::Shared(s) => FsRef::Shared(s.load()),
            Slot::Own(_) => FsRef::Own(Ref::map(slot, |s| match s {
                Slot::Own(st) => st,
                Slot::Shared(_) => unreachable!("matched Own above"),
            })),
        }
    }

    /// Makes a shared state private again when no other task holds it (they all ended).
    fn unshare_if_alone(&self) {
        let Ok(mut slot) = self.slot.try_borrow_mut() else {
            return;
        };
        let Slot::Shared(s) = &mut *slot else {
            return;
        };
        // A plain load first: `Arc::get_mut` writes the shared counter.
        if Arc::strong_count(s) != 1 {
            return;
        }
        let Some(sw) = Arc::get_mut(s) else {
            return;
        };
        let state = FsState::clone(&sw.load());
        let old = std::mem::replace(&mut *slot, Slot::Own(state));
        drop(slot);
        drop(old);
    }

    /// Replaces the working directory (Linux: `set_fs_pwd()`).
    pub(crate) fn set_cwd(&self, cwd: VfsPath) {
        self.replace(HeldPath::new(cwd), |st| &mut st.cwd);
    }

    /// Replaces the root (Linux: `set_fs_root()`).
    pub(crate) fn set_root(&self, root: VfsPath) {
        self.replace(HeldPath::new(root), |st| &mut st.root);
    }

    /// Stores `new` in the `field` of the state; the replaced path (and its hold) is dropped
    /// after every borrow ends.
    fn replace(&self, new: HeldPath, field: fn(&mut FsState) -> &mut HeldPath) {
        let mut slot = self.slot.borrow_mut();
        match &mut *slot {
            Slot::Own(st) => {
                let old = std::mem::replace(field(st), new);
                drop(slot);
                drop(old);
            }
            Slot::Shared(s) => {
                let s = s.clone();
                drop(slot);
                let old = s.rcu(|cur| {
                    let mut next = FsState::clone(cur);
                    *field(&mut next) = new.clone();
                    next
                });
                drop(old);
            }
        }
    }

    /// A handle sharing this state (Linux: `clone(CLONE_FS)`); this handle shares it from now
    /// on.
    pub(crate) fn share(&self) -> FsHandle {
        let mut slot = self.slot.borrow_mut();
        let shared = match &*slot {
            Slot::Shared(s) => s.clone(),
            Slot::Own(st) => {
                let s = Arc::new(ArcSwap::from_pointee(st.clone()));
                let old = std::mem::replace(&mut *slot, Slot::Shared(s.clone()));
                drop(slot);
                drop(old);
                s
            }
        };
        FsHandle {
            slot: RefCell::new(Slot::Shared(shared)),
        }
    }

    /// A private copy of this state (Linux: `copy_fs_struct()` in `fork()`).
    pub(crate) fn copy(&self) -> FsHandle {
        FsHandle::new(FsState::clone(&self.borrow()))
    }
}

/// The file mode creation mask (Linux: `fs_struct::umask`), shared like [`FsHandle`].
///
/// # Fast path
/// Creating calls read it with one relaxed load (a plain load on the machines uvfs targets).
pub(crate) struct Umask(Arc<AtomicU32>);

impl Umask {
    /// A private mask.
    pub(crate) fn new(mask: u32) -> Umask {
        Umask(Arc::new(AtomicU32::new(mask)))
    }

    /// The mask.
    #[inline]
    pub(crate) fn get(&self) -> u32 {
        self.0.load(Ordering::Relaxed)
    }

    /// Sets the mask; returns the previous one.
    pub(crate) fn replace(&self, mask: u32) -> u32 {
        self.0.swap(mask, Ordering::Relaxed)
    }

    /// A mask shared with this one (`clone(CLONE_FS)`).
    pub(crate) fn share(&self) -> Umask {
        Umask(self.0.clone())
    }

    /// A private copy (`fork()`).
    pub(crate) fn copy(&self) -> Umask {
        Umask::new(self.get())
    }
}
