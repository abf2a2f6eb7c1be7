//! The whole-path cached walk: dentry pointers only (Linux: the RCU-walk half of
//! `path_lookupat()` and `link_path_walk()`).
//!
//! # Fast path
//! No lock, no reference count, no store; per component one scan-and-hash
//! ([`hash_component_checked`]), a search-permission check from three loads, and one bucket
//! chain ([`Dentry::lookup_fast`]). It gives up (`None`) — and the caller restarts with the
//! general [`super::Walker`], which reports every error — on: a NUL byte, an empty path,
//! `.`/`..`, repeated or trailing slashes, a miss, a negative entry, a mountpoint,
//! a symbolic link to follow, a stale entry ([`crate::vfs::Inode::is_stale`]), and failed
//! search permission.

use std::sync::Arc;

use super::walk::FollowLast;
use crate::abi::FileType;
use crate::sync::rcu::Guard;
use crate::vfs::cred::Cred;
use crate::vfs::dcache::hash_component_checked;
use crate::vfs::dentry::{Cached, Dentry};
use crate::vfs::permission::may_lookup;

/// One cached step from `dir` to `name`: a cached, positive child that is neither a
/// mountpoint, nor stale, nor a symbolic link to follow.
#[inline(always)]
pub(crate) fn step_cached<'g>(
    dir: &Dentry,
    name: &[u8],
    hash_len: u64,
    follow: FollowLast,
    guard: &'g Guard,
) -> Option<&'g Arc<Dentry>> {
    if name.first() == Some(&b'.') && (name.len() == 1 || name == b"..") {
        return None;
    }
    match dir.lookup_fast(hash_len, name, guard) {
        Cached::Hit(d) => {
            let inode = d.inode()?;
            if d.is_mountpoint()
                || (inode.needs_revalidate() && !revalidate(inode))
                || (follow == FollowLast::Yes && inode.file_type() == FileType::Symlink)
            {
                return None;
            }
            Some(d)
        }
        Cached::Miss => None,
    }
}

/// The check of a cached entry whose inode asks for one ([`crate::vfs::Inode::set_revalidate`]:
/// kernfs's): false once the filesystem removed it (Linux: `kernfs_dop_revalidate()`, which
/// since 5.15 takes no global lock for a positive dentry). In the benchmarks' vanilla kernfs
/// mode it first takes the one global mutex twice, as Linux before 5.15 did in
/// `kernfs_iop_permission()` and `kernfs_dop_revalidate()` for every kernfs component.
#[inline(never)]
pub(crate) fn revalidate(inode: &crate::vfs::Inode) -> bool {
    crate::fs::kernfs::vanilla_step(inode);
    !inode.is_stale()
}

/// Resolves `path` from `root` (absolute) or `start` (relative) through cached entries only.
#[inline]
pub(crate) fn walk_cached<'g>(
    guard: &'g Guard,
    cred: &Cred,
    seed: u64,
    root: &'g Arc<Dentry>,
    start: &'g Arc<Dentry>,
    path: &[u8],
    follow: FollowLast,
) -> Option<&'g Arc<Dentry>> {
    let mut i = 0;
    let mut d = if path.first() == Some(&b'/') {
        while i < path.len() && path[i] == b'/' {
            i += 1;
        }
        root
    } else {
        start
    };
    if i == path.len() {
        return None;
    }
    loop {
        let dir = d.inode()?;
        if !dir.is_dir() || may_lookup(cred, dir).is_err() {
            return None;
        }
        let (len, hl) = hash_component_checked(seed, &path[i..])?;
        let name = &path[i..i + len];
        let j = i + len;
        if j == path.len() {
            return step_cached(d, name, hl, follow, guard);
        }
        if j + 1 == path.len() || path[j + 1] == b'/' {
            return None;
        }
        d = step_cached(d, name, hl, FollowLast::Yes, guard)?;
        i = j + 1;
    }
}
