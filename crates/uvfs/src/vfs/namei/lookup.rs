//! One component: the lock-free cached lookup and the locked fallback.

use std::sync::Arc;

use crate::abi::{Errno, Result};
use crate::vfs::dentry::Dentry;

/// Whether the lookup of `name` in `dir` is `ENAMETOOLONG`: a name past `NAME_MAX` in a
/// directory whose filesystem refuses such names
/// ([`SuperOps::lookup_limits_names`](crate::vfs::ops::SuperOps::lookup_limits_names)). One
/// length compare for every name of the walk; the filesystem is asked only past `NAME_MAX`.
#[inline]
pub(crate) fn name_too_long(dir: &Dentry, name: &[u8]) -> bool {
    name.len() > crate::abi::NAME_MAX
        && dir
            .inode()
            .is_none_or(|i| i.sb().ops().lookup_limits_names())
}

/// Looks `name` up in `dir` under the directory's inode lock (shared), asking the filesystem
/// when the dcache has no current entry, and caches the answer. Linux: `lookup_slow()`.
///
/// # Locking
/// Takes `dir`'s inode lock shared, then the child table's writer lock.
///
/// # Errors
/// `ENOENT` if `dir` is negative or was removed; what the filesystem's `lookup` returns.
#[cold]
pub(crate) fn lookup_slow(dir: &Arc<Dentry>, name: &[u8]) -> Result<Arc<Dentry>> {
    let inode = dir.inode().ok_or(Errno::ENOENT)?;
    let _g = inode.lock.read();
    if dir.is_dead() {
        return Err(Errno::ENOENT);
    }
    // Under the directory lock no rename or removal in it is in progress, so a cached entry
    // found here is current.
    if let Some(d) = dir.cached_child(name) {
        // The benchmarks' vanilla kernfs (the ref-walk of Linux before 5.15, which locked
        // here too).
        if let Some(i) = d.inode().filter(|i| i.needs_revalidate()) {
            crate::fs::kernfs::vanilla_step(i);
        }
        return Ok(d);
    }
    let found = fs_lookup(inode, name)?;
    Ok(dir.d_add(name, found))
}

/// Asks the filesystem for `name`, a name the dcache does not have, unless the dcache holds
/// every name of the directory ([`InodeOps::dcache_complete`]): then it is missing.
///
/// [`InodeOps::dcache_complete`]: crate::vfs::ops::InodeOps::dcache_complete
pub(crate) fn fs_lookup(
    dir: &crate::vfs::Inode,
    name: &[u8],
) -> Result<Option<Arc<crate::vfs::Inode>>> {
    if dir.ops().dcache_complete() {
        debug_assert!(
            matches!(dir.ops().lookup(dir, name), Ok(None)),
            "a complete dcache misses {:?}",
            String::from_utf8_lossy(name)
        );
        return Ok(None);
    }
    dir.ops().lookup(dir, name)
}

#[cfg(all(test, not(any(loom, feature = "shuttle"))))]
mod tests {
    use std::any::Any;
    use std::sync::Arc;

    use super::{fs_lookup, lookup_slow};
    use crate::abi::{Errno, FileType, OpenFlags, Result};
    use crate::vfs::dentry::Dentry;
    use crate::vfs::inode::Inode;
    use crate::vfs::ops::{FileOps, InodeOps};
    use crate::vfs::test_fixture::Fixture;

    /// A directory whose only name, `x`, the filesystem knows and the dcache does not
    /// (`dcache_complete` is false, the trait's default): a filesystem with a backing store.
    struct Dir(Arc<Inode>);

    impl InodeOps for Dir {
        fn as_any(&self) -> &dyn Any {
            self
        }
        fn lookup(&self, _dir: &Inode, name: &[u8]) -> Result<Option<Arc<Inode>>> {
            Ok((name == b"x").then(|| self.0.clone()))
        }
        fn open(&self, _inode: &Arc<Inode>, _flags: OpenFlags) -> Result<Box<dyn FileOps>> {
            Err(Errno::ENXIO)
        }
    }

    /// Oracle: `InodeOps::dcache_complete`'s contract (a filesystem that does not keep every
    /// name in the dcache is asked for the names the dcache lacks; Linux: `lookup_slow()` calls
    /// `->lookup`). tmpfs keeps every name, so only a filesystem like this one reaches it.
    #[test]
    fn a_directory_whose_dcache_is_not_complete_asks_its_filesystem() {
        let f = Fixture::new();
        let x = f.inode(FileType::Regular);
        let dir = f.inode_with(FileType::Directory, Box::new(Dir(x.clone())));
        let found = fs_lookup(&dir, b"x").expect("lookup x");
        assert!(found.is_some_and(|i| Arc::ptr_eq(&i, &x)), "x is found");
        assert!(fs_lookup(&dir, b"y").expect("lookup y").is_none());
        // The locked lookup caches what the filesystem found as a positive entry.
        let root = Dentry::new_root(dir);
        let d = lookup_slow(&root, b"x").expect("lookup_slow x");
        assert!(d.inode().is_some_and(|i| Arc::ptr_eq(i, &x)));
        assert!(lookup_slow(&root, b"y")
            .expect("lookup_slow y")
            .inode()
            .is_none());
    }
}
