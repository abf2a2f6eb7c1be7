//! Path resolution. Linux: fs/namei.c (`path_lookupat()`, `link_path_walk()`,
//! `walk_component()`, `follow_dotdot()`, `pick_link()`).
//!
//! One walk runs inside one epoch guard ([`crate::vfs::dcache::rcu_read`]). Each component is
//! looked up lock-free in the directory's child table (`Dentry::lookup_fast`); a miss falls
//! back to the locked lookup
//! ([`lookup::lookup_slow`]) for that component only, after which the walk continues lock-free.
//! Positions borrow dentries for the guard's lifetime: no reference count is taken per
//! component, and callers that need the result beyond the walk clone it once
//! ([`Pos::to_path`]).

pub(crate) mod fast;
mod lookup;
mod walk;

pub(crate) use lookup::{fs_lookup, name_too_long};
pub(crate) use walk::{FollowLast, Last, LastKind, Walker};

/// Unit tests only: how often this thread's walks left the lock-free path (a whole-path
/// [`fast::walk_cached`] that gave up, or a cached step that did), so that a test can show a
/// warm walk stays on it. Not compiled outside tests.
#[cfg(test)]
pub(crate) mod fallbacks {
    use std::cell::Cell;

    thread_local! {
        static COUNT: Cell<u64> = const { Cell::new(0) };
    }

    pub(crate) fn note() {
        COUNT.with(|c| c.set(c.get() + 1));
    }

    /// Fallbacks since the last call, which starts a new count.
    pub(crate) fn take() -> u64 {
        COUNT.with(|c| c.replace(0))
    }
}

use std::sync::Arc;

use super::dentry::Dentry;
use super::inode::Inode;
use super::mount::{MountRef, VfsPath};

/// How a task resolves paths.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WalkMode {
    /// Lock-free cached steps, falling back to the locked lookup per component (the default;
    /// Linux: RCU-walk).
    #[default]
    Rcu,
    /// Every component through the locked lookup, taking the directory lock and a reference
    /// (Linux: ref-walk, the design RCU-walk replaced). For benchmarks ("vanilla") and for
    /// tests that force the fallback.
    Ref,
}

/// A borrowed-for-the-walk or owned strong reference.
pub(crate) enum Ref<'a, P> {
    /// Borrowed from the task, a start file, or a dcache node (valid for the walk's guard).
    B(&'a P),
    /// Owned (taken by a locked lookup or a mount crossing).
    O(P),
}

impl<P> Ref<'_, P> {
    #[inline]
    pub(crate) fn arc(&self) -> &P {
        match self {
            Ref::B(a) => a,
            Ref::O(a) => a,
        }
    }
}

impl<P: Clone> Clone for Ref<'_, P> {
    fn clone(&self) -> Self {
        match self {
            Ref::B(a) => Ref::B(a),
            Ref::O(a) => Ref::O(a.clone()),
        }
    }
}

impl<P: std::ops::Deref> std::ops::Deref for Ref<'_, P> {
    type Target = P::Target;
    #[inline]
    fn deref(&self) -> &P::Target {
        self.arc()
    }
}

/// A position of a walk: a mount and a dentry in it.
#[derive(Clone)]
pub(crate) struct Pos<'a> {
    pub(crate) mnt: Ref<'a, MountRef>,
    pub(crate) dentry: Ref<'a, Arc<Dentry>>,
}

impl<'a> Pos<'a> {
    pub(crate) fn borrowed(p: &'a VfsPath) -> Pos<'a> {
        Pos {
            mnt: Ref::B(&p.mnt),
            dentry: Ref::B(&p.dentry),
        }
    }

    /// A counted copy that outlives the walk.
    pub(crate) fn to_path(&self) -> VfsPath {
        VfsPath {
            mnt: self.mnt.arc().clone(),
            dentry: self.dentry.arc().clone(),
        }
    }

    #[inline]
    pub(crate) fn inode(&self) -> Option<&Arc<Inode>> {
        self.dentry.inode()
    }

    #[inline]
    pub(crate) fn same(&self, other: &Pos<'_>) -> bool {
        MountRef::ptr_eq(self.mnt.arc(), other.mnt.arc())
            && Arc::ptr_eq(self.dentry.arc(), other.dentry.arc())
    }

    #[inline]
    pub(crate) fn is_dir(&self) -> bool {
        self.inode().is_some_and(|i| i.is_dir())
    }
}
