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
    let found = inode.ops().lookup(inode, name)?;
    Ok(dir.d_add(name, found))
}
