//! A kernfs node: the inode's private part (Linux: `struct kernfs_node`, and the inode
//! operations of fs/kernfs/inode.c and dir.c).
//!
//! A node *is* its inode: kernfs has one superblock per tree, so each node has exactly one
//! inode, made with the node, and the inode's attributes are the node's (mode, owner and
//! times changed by chmod, chown and utimes stay with the node; Linux keeps them in the node's
//! `iattr` and copies them into each superblock's inode).

use std::any::Any;
use std::sync::{Arc, Weak};

use super::file::{AttrFile, BinFile, DirFile};
use super::{Attribute, BinAttribute, DirOps, Tree};
use crate::abi::{AccessMode, Errno, FileType, OpenFlags, Result, XattrFlags, S_IRUGO, S_IWUGO};
use crate::sync::active::{self, Refused};
use crate::sync::atomic::AtomicU32;
use crate::vfs::ops::{FileOps, InodeOps, Name, NewInode};
use crate::vfs::poll::WaitQueue;
use crate::vfs::{Inode, SetAttr};

/// The key of a directory's children: the name's hash, then the name (Linux:
/// `kernfs_sd_compare()`), which is the order `getdents` lists them in.
pub(crate) type Key = (u32, Box<[u8]>);

/// A directory's children, in Linux's red-black tree ([`Tree`](super::rbtree::Tree)), which
/// both lookups and listings use.
pub(crate) type Children = super::rbtree::Tree<Arc<Inode>>;

/// An extended attribute: name and value.
type Xattr = (Box<[u8]>, Box<[u8]>);

/// What a node is.
pub(crate) enum Kind {
    Dir {
        /// Protects: the children. Order: after the tree's `structure` lock; a leaf
        /// otherwise (held only to find, add or remove one entry).
        children: parking_lot::RwLock<Children>,
        /// `mkdir`/`rmdir` in this directory from system calls (Linux:
        /// `kernfs_syscall_ops`), inherited by the directories made in it.
        ops: Option<Arc<dyn DirOps>>,
    },
    Attr(Arc<dyn Attribute>),
    Bin(Arc<dyn BinAttribute>),
    Link(Weak<Inode>),
}

/// A node's private part, the [`InodeOps`] of its inode.
pub(crate) struct Node {
    pub(crate) name: Box<[u8]>,
    pub(crate) hash: u32,
    /// The directory holding the node; the tree's root has none.
    pub(crate) parent: Option<Weak<Inode>>,
    pub(crate) kind: Kind,
    /// [`active::DEACTIVATED`] once removed; nothing else is stored here, so the word is
    /// written once in the node's life.
    pub(crate) flags: AtomicU32,
    /// Changes notified by the owner ([`super::KernfsNode::notify`]); an open file remembers
    /// the count it last read (Linux: `kernfs_open_node::event`).
    pub(crate) event: std::sync::atomic::AtomicU64,
    /// Pollers of the node's open files, made by the first poll (Linux:
    /// `kernfs_open_node::poll`).
    pub(crate) poll: once_cell::race::OnceBox<WaitQueue>,
    /// Extended attributes of the `trusted.` and `security.` namespaces (Linux:
    /// `kernfs_iattrs::xattrs`), made by the first set.
    /// Protects: the list. Order: a leaf.
    xattrs: parking_lot::Mutex<Vec<Xattr>>,
    pub(crate) tree: Arc<Tree>,
}

impl Node {
    pub(crate) fn new(
        tree: &Arc<Tree>,
        name: &[u8],
        parent: Option<Weak<Inode>>,
        kind: Kind,
    ) -> Node {
        Node {
            name: name.into(),
            hash: name_hash(name),
            parent,
            kind,
            flags: AtomicU32::new(0),
            // An open file's count starts at 0 (`AttrFile::new`).
            event: std::sync::atomic::AtomicU64::new(1),
            poll: once_cell::race::OnceBox::new(),
            xattrs: parking_lot::Mutex::new(Vec::new()),
            tree: tree.clone(),
        }
    }

    /// The node of a kernfs inode (`None` for another filesystem's).
    pub(crate) fn of(inode: &Inode) -> Option<&Node> {
        inode.ops().as_any().downcast_ref::<Node>()
    }

    /// True until the node is removed (Linux: `kernfs_active()`).
    pub(crate) fn is_active(&self) -> bool {
        !active::is_deactivated(&self.flags)
    }

    /// Runs `f` with an active reference on the node: never after [`super::KernfsNode::remove`]
    /// returned, and `remove` waits for it (Linux: `kernfs_get_active()` ...
    /// `kernfs_put_active()`).
    ///
    /// # Errors
    /// `ENODEV` once the node is removed; `EDEADLK` if the thread already runs
    /// [`active::DEPTH`] callbacks.
    pub(crate) fn with_active<R>(&self, f: impl FnOnce() -> Result<R>) -> Result<R> {
        active::with_own(|reg| {
            let _a = reg
                .enter(self as *const Node as usize, &self.flags)
                .map_err(|e| match e {
                    Refused::Gone => Errno::ENODEV,
                    Refused::TooDeep => Errno::EDEADLK,
                })?;
            f()
        })
    }

    /// The directory's entry `name`, if it is there and active.
    pub(crate) fn child(&self, name: &[u8]) -> Option<Arc<Inode>> {
        let Kind::Dir { children, .. } = &self.kind else {
            return None;
        };
        let key: Key = (name_hash(name), name.into());
        children
            .read()
            .get(&key)
            .filter(|i| Node::of(i).is_some_and(Node::is_active))
            .cloned()
    }

    pub(crate) fn dir_ops(&self) -> Option<&Arc<dyn DirOps>> {
        match &self.kind {
            Kind::Dir { ops, .. } => ops.as_ref(),
            _ => None,
        }
    }
}

/// The position of a name in its directory (Linux: `kernfs_name_hash()` with no namespace):
/// the dcache's old string hash folded to 31 bits, kept clear of 0, 1 (`.` and `..`) and
/// `i32::MAX` (the end), so that `getdents` lists a directory in the host's order and
/// positions.
pub(crate) fn name_hash(name: &[u8]) -> u32 {
    let mut h: u64 = 0;
    for &c in name {
        let c = u64::from(c);
        h = h.wrapping_add((c << 4) + (c >> 4)).wrapping_mul(11);
    }
    // end_name_hash(): hash_long(h, 32) on a 64-bit machine.
    let h = (h.wrapping_mul(0x61C8_8646_80B5_83EB) >> 32) as u32 & 0x7fff_ffff;
    h.clamp(2, i32::MAX as u32 - 1)
}

impl InodeOps for Node {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn lookup(&self, _dir: &Inode, name: &[u8]) -> Result<Option<Arc<Inode>>> {
        match &self.kind {
            Kind::Dir { .. } => Ok(self.child(name)),
            _ => Err(Errno::ENOTDIR),
        }
    }

    fn revalidates(&self) -> bool {
        true
    }

    fn mkdir(&self, dir: &Inode, name: &Name, new: &NewInode<'_>) -> Result<Arc<Inode>> {
        let ops = self.dir_ops().ok_or(Errno::EPERM)?.clone();
        if !self.is_active() {
            return Err(Errno::ENOENT);
        }
        let parent = super::KernfsNode::from_dir(dir)?;
        let made = ops.mkdir(&parent, name, new.mode & 0o7777)?;
        Ok(made.inode)
    }

    fn has_unlink(&self) -> bool {
        // Linux: `kernfs_dir_iops` has no `unlink`.
        false
    }

    fn rmdir(&self, dir: &Inode, _name: &[u8], victim: &Inode) -> Result<()> {
        let ops = self.dir_ops().ok_or(Errno::EPERM)?.clone();
        let _ = dir;
        let victim = super::KernfsNode::from_inode(victim)?;
        ops.rmdir(&victim)
    }

    fn get_link(&self, inode: &Inode) -> Result<Arc<[u8]>> {
        let Kind::Link(target) = &self.kind else {
            return Err(Errno::EINVAL);
        };
        let target = target.upgrade().ok_or(Errno::ENOENT)?;
        let _ = inode;
        Ok(super::relative_path(self.parent.as_ref(), &target).into())
    }

    fn rename(
        &self,
        _old_dir: &Inode,
        _old_name: &[u8],
        _src: &Arc<Inode>,
        _new_dir: &Inode,
        _new_name: &[u8],
        _tgt: Option<&Arc<Inode>>,
        flags: crate::abi::RenameFlags,
        _whiteout: Option<&NewInode<'_>>,
    ) -> Result<Option<Arc<Inode>>> {
        // Linux: `kernfs_iop_rename()` refuses any flag first, then a tree without a rename
        // operation.
        if !flags.is_empty() {
            return Err(Errno::EINVAL);
        }
        Err(Errno::EPERM)
    }

    fn setattr(&self, inode: &Inode, attr: &SetAttr) -> Result<()> {
        // Linux: `inode_newsize_ok()` against kernfs's `s_maxbytes` (`MAX_NON_LFS`).
        if attr.size.is_some_and(|s| s > super::file::MAX_BYTES) {
            return Err(Errno::EFBIG);
        }
        // A size is accepted and ignored: kernfs keeps no data to resize (Linux:
        // `kernfs_iop_setattr()` copies mode, owner and times only), so `O_TRUNC` and
        // `truncate(2)` of an attribute succeed and change nothing.
        SetAttr {
            size: None,
            ..*attr
        }
        .apply(inode);
        Ok(())
    }

    fn open(&self, inode: &Arc<Inode>, flags: OpenFlags) -> Result<Box<dyn FileOps>> {
        let (read, write) = match flags.access() {
            AccessMode::ReadOnly => (true, false),
            AccessMode::WriteOnly => (false, true),
            AccessMode::ReadWrite => (true, true),
            AccessMode::Neither => (false, false),
        };
        let mode = inode.mode();
        match &self.kind {
            Kind::Dir { .. } => Ok(Box::new(DirFile)),
            Kind::Attr(a) => {
                // Linux: `kernfs_fop_open()` refuses an access the mode or the attribute
                // lacks, even for a caller whom the permission check let through.
                if (read && (mode & S_IRUGO == 0 || !a.can_show()))
                    || (write && (mode & S_IWUGO == 0 || !a.can_store()))
                {
                    return Err(Errno::EACCES);
                }
                self.with_active(|| Ok(()))?;
                Ok(Box::new(AttrFile::new()))
            }
            Kind::Bin(b) => {
                if (read && (mode & S_IRUGO == 0 || !b.can_read()))
                    || (write && (mode & S_IWUGO == 0 || !b.can_write()))
                {
                    return Err(Errno::EACCES);
                }
                self.with_active(|| Ok(()))?;
                Ok(Box::new(BinFile::default()))
            }
            Kind::Link(_) => Err(Errno::ELOOP),
        }
    }

    fn getxattr(&self, _inode: &Inode, name: &[u8]) -> Result<Vec<u8>> {
        self.xattrs
            .lock()
            .iter()
            .find(|(n, _)| &**n == name)
            .map(|(_, v)| v.to_vec())
            .ok_or(Errno::ENODATA)
    }

    fn setxattr(&self, _inode: &Inode, name: &[u8], value: &[u8], flags: XattrFlags) -> Result<()> {
        // Linux's sysfs has handlers for `trusted.` and `security.` only (cgroup's kernfs adds
        // `user.`, which this kernfs does not).
        if !(name.starts_with(b"trusted.") || name.starts_with(b"security.")) {
            return Err(Errno::EOPNOTSUPP);
        }
        let mut xs = self.xattrs.lock();
        let at = xs.iter().position(|(n, _)| &**n == name);
        match at {
            Some(_) if flags.contains(XattrFlags::CREATE) => Err(Errno::EEXIST),
            None if flags.contains(XattrFlags::REPLACE) => Err(Errno::ENODATA),
            Some(i) => {
                xs[i].1 = value.into();
                Ok(())
            }
            None => {
                xs.push((name.into(), value.into()));
                Ok(())
            }
        }
    }

    fn listxattr(&self, _inode: &Inode) -> Result<Vec<Vec<u8>>> {
        Ok(self.xattrs.lock().iter().map(|(n, _)| n.to_vec()).collect())
    }

    fn removexattr(&self, _inode: &Inode, name: &[u8]) -> Result<()> {
        // As `setxattr`: only the namespaces sysfs has handlers for (a removal is a set of
        // nothing to Linux's handlers).
        if !(name.starts_with(b"trusted.") || name.starts_with(b"security.")) {
            return Err(Errno::EOPNOTSUPP);
        }
        let mut xs = self.xattrs.lock();
        let i = xs
            .iter()
            .position(|(n, _)| &**n == name)
            .ok_or(Errno::ENODATA)?;
        xs.remove(i);
        Ok(())
    }
}

/// The file type of a node kind.
pub(crate) fn file_type_of(kind: &Kind) -> FileType {
    match kind {
        Kind::Dir { .. } => FileType::Directory,
        Kind::Attr(_) | Kind::Bin(_) => FileType::Regular,
        Kind::Link(_) => FileType::Symlink,
    }
}

#[cfg(test)]
mod tests {
    use super::name_hash;

    /// Oracle: the host's sysfs lists `devices/system/cpu/cpu0/topology` in this order (Linux
    /// 6.18, `ls -f`), which is the order of `kernfs_name_hash()`.
    #[test]
    fn names_sort_by_hash_in_the_hosts_order() {
        let host = [
            "cluster_cpus",
            "die_id",
            "cluster_cpus_list",
            "physical_package_id",
            "core_cpus_list",
            "die_cpus_list",
            "core_siblings",
            "cluster_id",
            "core_siblings_list",
            "package_cpus",
            "package_cpus_list",
            "die_cpus",
            "thread_siblings_list",
            "core_id",
            "core_cpus",
            "thread_siblings",
        ];
        let mut sorted = host.to_vec();
        sorted.sort_by_key(|n| (name_hash(n.as_bytes()), n.to_string()));
        assert_eq!(sorted, host);
        assert!(host
            .iter()
            .all(|n| (2..i32::MAX as u32).contains(&name_hash(n.as_bytes()))));
    }
}
