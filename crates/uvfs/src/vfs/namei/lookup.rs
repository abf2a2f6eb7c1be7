//! One component: the lock-free cached lookup and the locked fallback.

use std::sync::Arc;

use crate::abi::{Errno, Result};
use crate::vfs::dentry::Dentry;

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
