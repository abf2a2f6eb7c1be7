//! Pinned dentries: how open files of one name hold it without all writing one count.
//!
//! An open file keeps its dentry and inode alive. Counting each open in the dentry's and the
//! inode's reference counts makes every open and close of one file, from any thread, write
//! the same two cache lines, and the lines the path walk reads (the dentry's inode pointer
//! and child table, the inode's mode and owner) with them: two threads opening one file got
//! less done than one (0.43x on `uvfs bench scale open3`; seed 004's sysfs attribute is the
//! same case). Linux counts each open in the dentry's `lockref` too; the scaling it loses
//! there is the cost seed 004's 96 threads still paid after its global mutex went.
//!
//! A dentry that more than one holder keeps (found so at an open) gets a *pin*: one counted
//! reference to the dentry, itself counted per thread ([`PcpuRef`]), kept in a side table
//! keyed by the dentry's address, with a flag in the dentry's state word. Opens of a pinned
//! dentry take a reference to the pin (an add to the calling thread's own slot) and hold
//! the dentry and its inode through it ([`FileHold`]); closes drop it the same way. A dentry
//! held once (one thread opening and closing a file) is never pinned and costs what it did.
//!
//! # Lifetime
//! A pin holds its dentry; the side table holds the pin. The pair would keep each other
//! forever, so every way a dentry leaves the dcache takes its pin out of the table and kills
//! it ([`PcpuRef::kill`]: counting becomes central, and the last file's close frees the pin
//! and with it the dentry's count): `Dentry::kill` (unlink, rmdir, replacement, a rename
//! over it) and the drop of its parent's child table (a whole tree going away). A pin is
//! made only for a dentry that is not dead; making one and killing the dentry are ordered by
//! the state word (the maker sets `PINNED` with a read-modify-write before it publishes, and
//! gives up if that finds `DEAD`; the killer's read-modify-write that sets `DEAD` then finds
//! `PINNED`), and both publish and remove under `PIN_LOCK`.
//!
//! # Fast path
//! The open of a pinned dentry: one load of the dentry's state, an `ArcSwap` load of one
//! shard of the side table, a hash probe, and an add to the thread's own slot of the pin.
//! Nothing written is shared with another thread opening the same file.
#![allow(unsafe_code)] // Reason: a file's path and inode borrowed from its pin as `Arc`s that are never dropped.

use std::collections::HashMap;
use std::mem::ManuallyDrop;
use std::sync::{Arc, LazyLock};

use arc_swap::ArcSwap;

use super::dentry::Dentry;
use super::inode::Inode;
use super::mount::{MountRef, VfsPath};
use crate::sync::addr_hash::AddrBuild;
use crate::sync::pcpu_ref::PcpuRef;

/// A dentry's pin: the one counted reference its pinned holders share.
pub(crate) struct Pin {
    dentry: Arc<Dentry>,
}

type PinMap = HashMap<usize, PcpuRef<Pin>, AddrBuild>;

/// Shards of the side table (a power of two).
const SHARDS: usize = 64;

/// The pins, by dentry address, in shards replaced as a whole on each change (readers load
/// them without a lock).
static PINS: LazyLock<Vec<ArcSwap<PinMap>>> = LazyLock::new(|| {
    (0..SHARDS)
        .map(|_| ArcSwap::from_pointee(PinMap::default()))
        .collect()
});

/// Serialises changes of `PINS`.
/// Order: after the dentry's parent's inode lock and child-table writer lock (a kill holds
/// them); innermost otherwise.
static PIN_LOCK: parking_lot::Mutex<()> = parking_lot::Mutex::new(());

fn shard(addr: usize) -> &'static ArcSwap<PinMap> {
    &PINS[(addr >> 6).wrapping_mul(0x9e37_79b9) % SHARDS]
}

/// The pin of `dentry` for an open, made now if the dentry is held by someone else too;
/// `None` when the open should count the dentry itself (held once, dead, negative, or a
/// directory, whose holders are cwds and roots rather than opens).
pub(crate) fn pin_for_open(dentry: &Arc<Dentry>) -> Option<PcpuRef<Pin>> {
    if dentry.is_pinned() {
        return shard(addr(dentry)).load().get(&addr(dentry)).cloned();
    }
    let inode = dentry.inode()?;
    if inode.is_dir() || dentry.is_dead() || Arc::strong_count(dentry) < 2 {
        return None;
    }
    make(dentry)
}

#[cold]
fn make(dentry: &Arc<Dentry>) -> Option<PcpuRef<Pin>> {
    let _g = PIN_LOCK.lock();
    if !dentry.set_pinned() {
        // Dead, never in a table, or pinned by another open meanwhile.
        return if dentry.is_dead() || !dentry.is_pinned() {
            None
        } else {
            shard(addr(dentry)).load().get(&addr(dentry)).cloned()
        };
    }
    let pin = PcpuRef::new(Pin {
        dentry: dentry.clone(),
    });
    let s = shard(addr(dentry));
    let mut m = PinMap::clone(&s.load());
    m.insert(addr(dentry), pin.clone());
    s.store(Arc::new(m));
    Some(pin)
}

/// Takes `dentry`'s pin out of the side table and kills it: the dentry left the dcache
/// (`DEAD` is set, or its parent's table is going). Files that hold the pin keep the dentry
/// until the last of them closes.
pub(crate) fn unpin(dentry: &Dentry) {
    let a = dentry as *const Dentry as usize;
    let taken = {
        let _g = PIN_LOCK.lock();
        let s = shard(a);
        let cur = s.load();
        if !cur.contains_key(&a) {
            return;
        }
        let mut m = PinMap::clone(&cur);
        let taken = m.remove(&a);
        s.store(Arc::new(m));
        taken
    };
    if let Some(p) = taken {
        p.kill();
        // The table's reference; the last holder's drop frees the pin, after the lock.
        drop(p);
    }
}

fn addr(d: &Arc<Dentry>) -> usize {
    Arc::as_ptr(d) as usize
}

/// What an open file holds of its path and inode: counted references of its own, or its
/// dentry's pin with the path and inode read through it.
pub(crate) struct FileHold {
    /// With a pin, its `dentry` is the pin's dentry as an `Arc` that was never counted (and
    /// is never dropped); its mount is counted either way.
    path: ManuallyDrop<VfsPath>,
    /// With a pin, the dentry's inode, likewise not counted.
    inode: ManuallyDrop<Arc<Inode>>,
    pin: Option<PcpuRef<Pin>>,
}

impl FileHold {
    /// Counted references of the file's own.
    pub(crate) fn owned(path: VfsPath, inode: Arc<Inode>) -> FileHold {
        FileHold {
            path: ManuallyDrop::new(path),
            inode: ManuallyDrop::new(inode),
            pin: None,
        }
    }

    /// The hold of an open of `dentry` (positive) through `mnt`: through the dentry's pin when
    /// [`pin_for_open`] gives one, else counted.
    pub(crate) fn open(mnt: MountRef, dentry: &Arc<Dentry>, inode: &Arc<Inode>) -> FileHold {
        let Some(pin) = pin_for_open(dentry) else {
            return FileHold::owned(
                VfsPath {
                    mnt,
                    dentry: dentry.clone(),
                },
                inode.clone(),
            );
        };
        debug_assert!(Arc::ptr_eq(&pin.dentry, dentry));
        // SAFETY: `Arc::from_raw` of a pointer from `Arc::as_ptr` of a live `Arc` makes a second
        // `Arc` to the same allocation without adding to its count. The pin, kept in this
        // hold, holds a counted `Arc` of the dentry (which holds the inode, its inode never
        // changes) until the hold's drop, which drops the pin only after forgetting both of
        // these (never dropping them); every clone made from them meanwhile is counted.
        let (d, i) = unsafe {
            (
                Arc::from_raw(Arc::as_ptr(&pin.dentry)),
                Arc::from_raw(Arc::as_ptr(inode)),
            )
        };
        debug_assert!(pin.dentry.inode().is_some_and(|x| Arc::ptr_eq(x, inode)));
        FileHold {
            path: ManuallyDrop::new(VfsPath { mnt, dentry: d }),
            inode: ManuallyDrop::new(i),
            pin: Some(pin),
        }
    }

    #[inline]
    pub(crate) fn path(&self) -> &VfsPath {
        &self.path
    }

    #[inline]
    pub(crate) fn inode(&self) -> &Arc<Inode> {
        &self.inode
    }

    /// True if the hold goes through a pin (for tests).
    #[cfg(all(test, not(any(loom, feature = "shuttle"))))]
    pub(crate) fn is_pinned(&self) -> bool {
        self.pin.is_some()
    }
}

impl Drop for FileHold {
    fn drop(&mut self) {
        if self.pin.is_some() {
            // SAFETY: `path` is taken once, here, and not used after.
            let VfsPath { mnt, dentry } = unsafe { ManuallyDrop::take(&mut self.path) };
            drop(mnt);
            // Never counted (see `open`): forgotten, not dropped; the pin goes after.
            std::mem::forget(dentry);
        } else {
            // SAFETY: dropped once, here, and not used after.
            unsafe {
                ManuallyDrop::drop(&mut self.path);
                ManuallyDrop::drop(&mut self.inode);
            }
        }
    }
}

#[cfg(all(test, not(any(loom, feature = "shuttle"))))]
mod tests {
    use std::sync::{Arc, Weak};

    use crate::abi::{OpenFlags, AT_FDCWD};
    use crate::vfs::test_fixture::freed;
    use crate::vfs::Inode;
    use crate::{Cred, Vfs};

    fn pinned(task: &crate::Task, fd: i32) -> bool {
        task.files.get(fd).expect("open fd").is_pinned()
    }

    /// Oracle: the lifetime rules of the module docs. A file held once is counted, not pinned;
    /// a second concurrent open pins it; the pinned files read the file as any; after an
    /// unlink and the last close, nothing keeps the inode (its weak reference dies), and the
    /// dentry's pin was taken out of the table.
    #[test]
    fn a_second_open_pins_and_the_last_close_after_an_unlink_frees_the_inode() {
        let vfs = Vfs::new();
        let task = vfs.task(Cred::root());
        let fd0 = task
            .openat(AT_FDCWD, "/f", OpenFlags::CREAT | OpenFlags::RDWR, 0o644)
            .expect("create");
        task.pwrite(fd0, b"data", 0).expect("write");
        task.close(fd0).expect("close");
        let a = task
            .openat(AT_FDCWD, "/f", OpenFlags::RDONLY, 0)
            .expect("open a");
        assert!(!pinned(&task, a), "held once: counted");
        let b = task
            .openat(AT_FDCWD, "/f", OpenFlags::RDONLY, 0)
            .expect("open b");
        assert!(pinned(&task, b), "held twice: pinned");
        let c = task
            .openat(AT_FDCWD, "/f", OpenFlags::RDONLY, 0)
            .expect("open c");
        assert!(pinned(&task, c));
        let inode: Weak<Inode> = Arc::downgrade(task.files.get(c).expect("c").inode());
        let dentry = task.files.get(c).expect("c").path().dentry.clone();
        let key = Arc::as_ptr(&dentry) as usize;
        assert!(super::shard(key).load().contains_key(&key));
        // The parent's table, the first open's count and the pin: not one per pinned open.
        assert_eq!(
            Arc::strong_count(&dentry),
            4,
            "the clone here is the fourth"
        );
        let weak = Arc::downgrade(&dentry);
        drop(dentry);
        let dentry = weak;
        task.unlinkat(AT_FDCWD, "/f", Default::default())
            .expect("unlink");
        assert!(
            !super::shard(key).load().contains_key(&key),
            "unpinned by the unlink"
        );
        let mut buf = [0u8; 4];
        assert_eq!(task.pread(c, &mut buf, 0).expect("read"), 4);
        assert_eq!(&buf, b"data");
        for fd in [a, b, c] {
            assert!(inode.upgrade().is_some(), "an open file keeps the inode");
            task.close(fd).expect("close");
        }
        // The unlinked name's table node goes with the epoch collector (pinned or not); then
        // nothing is left, unless the pin kept the dentry.
        assert!(freed(&dentry), "{} left", dentry.strong_count());
        assert!(freed(&inode));
    }

    /// A pinned file whose whole tree goes (the namespace dropped) is freed with it once
    /// closed: the parent's table unpins its children.
    #[test]
    fn a_pinned_file_of_a_dropped_tree_is_freed_at_its_close() {
        let vfs = Vfs::new();
        let task = vfs.task(Cred::root());
        task.mkdirat(AT_FDCWD, "/d", 0o755).expect("mkdir");
        let fd = task
            .openat(AT_FDCWD, "/d/f", OpenFlags::CREAT | OpenFlags::RDWR, 0o644)
            .expect("create");
        let other = vfs.task(Cred::root());
        let p = other
            .openat(AT_FDCWD, "/d/f", OpenFlags::RDONLY, 0)
            .expect("open");
        assert!(pinned(&other, p));
        let file = other.files.get(p).expect("p");
        let inode = Arc::downgrade(file.inode());
        let dentry = Arc::downgrade(&file.path().dentry);
        drop(file);
        task.close(fd).expect("close");
        drop(task);
        drop(vfs);
        assert!(inode.upgrade().is_some(), "the open file keeps it");
        other.close(p).expect("close");
        drop(other);
        // The directory `d` goes when the epoch collector frees the root's retired table, and
        // with it its table, which unpins `f`; then `f`'s own retired node goes.
        assert!(freed(&dentry), "{} left", dentry.strong_count());
        assert!(freed(&inode));
    }
}
