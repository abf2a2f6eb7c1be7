//! kernfs: pseudo filesystems built from code (Linux: fs/kernfs/, the library under sysfs and
//! cgroupfs). A [`Kernfs`] is a tree of [`KernfsNode`]s: directories, attributes whose
//! contents an [`Attribute`]'s `show` makes and whose writes its `store` takes, binary
//! attributes ([`BinAttribute`]) and symbolic links to other nodes. The owner adds and
//! removes nodes at any time, also while they are open; [`Kernfs::mount`] (or
//! [`Kernfs::fs_type`] registered by name) mounts the tree.
//!
//! ```
//! use std::sync::Arc;
//! use uvfs::abi::{OpenFlags, AT_FDCWD};
//! use uvfs::fs::kernfs::{show, Kernfs};
//! use uvfs::{Cred, Vfs};
//!
//! let tree = Kernfs::new("demofs", 0x6465_6d6f);
//! let dev = tree.root().create_dir("dev0", 0o755)?;
//! dev.create_file("name", 0o444, show(|out| out.extend_from_slice(b"disk\n")))?;
//!
//! let vfs = Vfs::new();
//! let task = vfs.task(Cred::root());
//! task.mkdirat(AT_FDCWD, "/demo", 0o755)?;
//! tree.mount(&task, "/demo")?; // registers "demofs", then mount -t demofs demofs /demo
//! let fd = task.openat(AT_FDCWD, "/demo/dev0/name", OpenFlags::RDONLY, 0)?;
//! let mut buf = [0u8; 16];
//! let n = task.read(fd, &mut buf)?;
//! assert_eq!(&buf[..n], b"disk\n");
//! dev.remove(); // later reads of the open file fail with ENODEV
//! assert_eq!(task.pread(fd, &mut buf, 0), Err(uvfs::abi::Errno::ENODEV));
//! # Ok::<(), uvfs::abi::Errno>(())
//! ```
//!
//! # Semantics (Linux's kernfs and sysfs)
//!
//! - An attribute's first read, and every read from offset 0, calls `show` once into the open
//!   file's buffer; other reads and `lseek` are served from it (Linux: `seq_file`). Writes give
//!   `store` at most a page. Opening for an access the mode (as root too) or the attribute
//!   lacks fails with `EACCES`. Attributes report a size of one page, binary attributes
//!   their own.
//! - Removal ([`KernfsNode::remove`]) takes the node and everything below it out of the tree
//!   at once, then waits for their callbacks already running; none starts afterwards, and open
//!   files' reads, writes and seeks fail with `ENODEV` (Linux: active references,
//!   `kernfs_drain()`).
//! - [`KernfsNode::notify`] wakes pollers of the attribute (`POLLERR | POLLPRI` until the file
//!   is read again) and sends `IN_MODIFY` to its watchers (Linux: `kernfs_notify()`).
//! - chmod, chown and utimes change the node's own attributes, which every mount sees;
//!   truncation succeeds and changes nothing; `mkdir`, `unlink`, `rename`, `link`, `symlink`
//!   fail with `EPERM` and creating files with `EACCES`, unless a directory has
//!   [`DirOps`] for `mkdir`/`rmdir` (Linux: `kernfs_syscall_ops`).
//! - `getdents` lists a directory in the order of Linux's kernfs name hash, with its
//!   positions (so listings match the host's sysfs).
//!
//! # Concurrency
//! The path walk reaches kernfs nodes through the dcache without a lock, as it reaches
//! tmpfs's: permission checks read the node's inode, and a removed node's cached dentries are
//! recognised by one flag ([`Inode::is_stale`]). Callbacks run under an active reference that
//! writes only the calling thread's own slot (`sync::active`), so many threads opening and
//! reading one attribute write no shared cache line on kernfs's behalf. docs/locking.md,
//! "kernfs", has the protocol.

mod file;
mod node;
mod rbtree;

use std::any::Any;
use std::collections::HashSet;
use std::sync::{Arc, Weak};

use self::node::{name_hash, Kind, Node};
use crate::abi::{Errno, FileType, PollEvents, Result, StatFs, NAME_MAX, PAGE_SIZE};
use crate::sync::active;
use crate::vfs::ops::{FileSystemType, FsContext, SuperOps};
use crate::vfs::super_block::SbRef;
use crate::vfs::{Dentry, Inode, InodeInit, SuperBlock};

/// An attribute file's contents (Linux: a sysfs attribute's `show` and `store`).
///
/// Callbacks may run on many threads at once, never after [`KernfsNode::remove`] of their
/// node returned; they must not call back into the VFS (a [`Task`](crate::Task)).
pub trait Attribute: Send + Sync + 'static {
    /// Appends the attribute's current text to `out` (Linux: `show`).
    ///
    /// # Errors
    /// Whatever the read should fail with.
    fn show(&self, out: &mut Vec<u8>) -> Result<()>;

    /// Takes a write of at most a page (Linux: `store`); returns how many bytes it used.
    ///
    /// # Errors
    /// Whatever the write should fail with (`EINVAL` for a value it refuses).
    fn store(&self, data: &[u8]) -> Result<usize> {
        let _ = data;
        Err(Errno::EIO)
    }

    /// Whether the attribute can be read: opening it for reading fails with `EACCES` if not.
    fn can_show(&self) -> bool {
        true
    }

    /// Whether the attribute takes writes: opening it for writing fails with `EACCES` if not.
    fn can_store(&self) -> bool {
        false
    }
}

/// A binary attribute: bytes read and written at offsets (Linux: `struct bin_attribute`).
pub trait BinAttribute: Send + Sync + 'static {
    /// The size `stat` reports and reads stop at; 0 for no limit.
    fn size(&self) -> u64;

    /// Reads at `pos` (below the size) into `buf`, at most a page.
    ///
    /// # Errors
    /// Whatever the read should fail with.
    fn read(&self, buf: &mut [u8], pos: u64) -> Result<usize>;

    /// Writes at `pos` (below the size), at most a page.
    ///
    /// # Errors
    /// Whatever the write should fail with.
    fn write(&self, data: &[u8], pos: u64) -> Result<usize> {
        let _ = (data, pos);
        Err(Errno::EIO)
    }

    /// Whether the attribute can be read.
    fn can_read(&self) -> bool {
        true
    }

    /// Whether the attribute takes writes.
    fn can_write(&self) -> bool {
        false
    }
}

/// `mkdir` and `rmdir` of system calls in a directory (Linux: `kernfs_syscall_ops`, as
/// cgroupfs uses them). Called with the VFS's directory locks held; they may add and remove
/// nodes, not call back into the VFS.
pub trait DirOps: Send + Sync + 'static {
    /// `mkdir(2)` of `name` in `parent`: make the directory (and whatever it holds).
    ///
    /// # Errors
    /// As `mkdir(2)` should fail.
    fn mkdir(&self, parent: &KernfsNode, name: &[u8], mode: u32) -> Result<KernfsNode>;

    /// `rmdir(2)` of `dir`: remove it.
    ///
    /// # Errors
    /// As `rmdir(2)` should fail (`EBUSY`, `ENOTEMPTY`).
    fn rmdir(&self, dir: &KernfsNode) -> Result<()>;
}

/// An [`Attribute`] made of a `show` closure (read-only).
pub fn show<F>(f: F) -> Arc<dyn Attribute>
where
    F: Fn(&mut Vec<u8>) + Send + Sync + 'static,
{
    struct Show<F>(F);
    impl<F: Fn(&mut Vec<u8>) + Send + Sync + 'static> Attribute for Show<F> {
        fn show(&self, out: &mut Vec<u8>) -> Result<()> {
            (self.0)(out);
            Ok(())
        }
    }
    Arc::new(Show(f))
}

/// An [`Attribute`] made of a `show` and a `store` closure (read-write).
pub fn show_store<F, G>(show: F, store: G) -> Arc<dyn Attribute>
where
    F: Fn(&mut Vec<u8>) + Send + Sync + 'static,
    G: Fn(&[u8]) -> Result<usize> + Send + Sync + 'static,
{
    struct ShowStore<F, G>(F, G);
    impl<F, G> Attribute for ShowStore<F, G>
    where
        F: Fn(&mut Vec<u8>) + Send + Sync + 'static,
        G: Fn(&[u8]) -> Result<usize> + Send + Sync + 'static,
    {
        fn show(&self, out: &mut Vec<u8>) -> Result<()> {
            (self.0)(out);
            Ok(())
        }
        fn store(&self, data: &[u8]) -> Result<usize> {
            (self.1)(data)
        }
        fn can_store(&self) -> bool {
            true
        }
    }
    Arc::new(ShowStore(show, store))
}

/// What the nodes of one tree share.
pub(crate) struct Tree {
    sb: SbRef,
    /// Serialises changes of the tree's shape (adding and removing nodes); lookups never
    /// take it (Linux: `kernfs_root::kernfs_rwsem`, written).
    /// Order: before any directory's `children` lock; never held while draining.
    structure: parking_lot::Mutex<()>,
    /// The root directory's inode (held by the [`Kernfs`]), for `mkdir` in it.
    root: std::sync::OnceLock<Weak<Inode>>,
}

/// A kernfs tree: one superblock, mountable any number of times (each mount shows the same
/// nodes).
pub struct Kernfs {
    root: KernfsNode,
    root_dentry: Arc<Dentry>,
    name: &'static str,
    /// The type that mounts the tree (one, so that [`Kernfs::mount`] knows its own).
    fs_type: Arc<dyn FileSystemType>,
}

/// The superblock operations of a kernfs tree.
struct KernfsSuper {
    name: &'static str,
    magic: i64,
}

impl SuperOps for KernfsSuper {
    fn fs_name(&self) -> &'static str {
        self.name
    }
    fn statfs(&self, sb: &SuperBlock) -> Result<StatFs> {
        Ok(StatFs {
            f_type: self.magic,
            bsize: PAGE_SIZE as i64,
            frsize: PAGE_SIZE as i64,
            namelen: NAME_MAX as i64,
            fsid: [sb.dev() as i32, (sb.dev() >> 32) as i32],
            ..StatFs::default()
        })
    }
    fn multigrain_times(&self) -> bool {
        false
    }
    fn has_btime(&self) -> bool {
        false
    }
    fn max_bytes(&self) -> u64 {
        file::MAX_BYTES
    }
    fn lookup_limits_names(&self) -> bool {
        false
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl Kernfs {
    /// An empty tree (a root directory, mode 0755, owned by root) whose filesystem type is
    /// `name` and whose `statfs` `f_type` is `magic` (sysfs: `"sysfs"`, `0x62656572`).
    pub fn new(name: &'static str, magic: i64) -> Kernfs {
        Kernfs::with_root_ops(name, magic, None)
    }

    /// [`Kernfs::new`] whose root directory (and every directory made in it) takes `mkdir`
    /// and `rmdir` through `ops`.
    pub fn with_root_ops(name: &'static str, magic: i64, ops: Option<Arc<dyn DirOps>>) -> Kernfs {
        let sb = SuperBlock::new(Box::new(KernfsSuper { name, magic }));
        let tree = Arc::new(Tree {
            sb,
            structure: parking_lot::Mutex::new(()),
            root: std::sync::OnceLock::new(),
        });
        let node = Node::new(
            &tree,
            b"",
            None,
            Kind::Dir {
                children: parking_lot::RwLock::new(Default::default()),
                ops,
            },
        );
        let inode = make_inode(&tree, node, 0o755);
        let _ = tree.root.set(Arc::downgrade(&inode));
        let root = KernfsNode {
            inode: inode.clone(),
        };
        let root_dentry = Dentry::new_root(inode);
        Kernfs {
            fs_type: Arc::new(KernfsType {
                name,
                root: root_dentry.clone(),
            }),
            root_dentry,
            root,
            name,
        }
    }

    /// The root directory.
    pub fn root(&self) -> &KernfsNode {
        &self.root
    }

    /// The filesystem type that mounts this tree (register it with
    /// [`Vfs::register_filesystem`](crate::Vfs::register_filesystem), or let
    /// [`Kernfs::mount`] do it); every mount shows the same superblock. Mount options are
    /// refused with `EINVAL` (sysfs takes none). Each call gives the same type.
    pub fn fs_type(&self) -> Arc<dyn FileSystemType> {
        self.fs_type.clone()
    }

    /// Registers this tree's type in `task`'s namespace under its name (unless it is there
    /// already) and mounts the tree at `path`, as `mount -t NAME NAME PATH` does.
    ///
    /// # Errors
    /// What `mount(2)` fails with (`ENOENT` for a missing `path`, `EPERM` without
    /// `CAP_SYS_ADMIN`); `EBUSY` if another type is registered under the name there.
    pub fn mount(&self, task: &crate::Task, path: &str) -> Result<()> {
        let ns = task.namespace();
        match ns.filesystem(self.name) {
            Some(t) if std::ptr::addr_eq(Arc::as_ptr(&t), Arc::as_ptr(&self.fs_type)) => {}
            Some(_) => return Err(Errno::EBUSY),
            None => ns.register_filesystem(self.fs_type.clone())?,
        }
        task.mount(
            Some(self.name.as_bytes()),
            path,
            Some(self.name),
            Default::default(),
            None,
        )
    }

    /// The tree's root dentry (the one every mount shows).
    pub fn root_dentry(&self) -> &Arc<Dentry> {
        &self.root_dentry
    }
}

/// The filesystem type of a kernfs tree: every mount gets its root.
struct KernfsType {
    name: &'static str,
    root: Arc<Dentry>,
}

impl FileSystemType for KernfsType {
    fn name(&self) -> &str {
        self.name
    }
    fn get_tree(&self, fc: &FsContext<'_>) -> Result<Arc<Dentry>> {
        if fc.data.is_some_and(|d| !d.is_empty()) {
            return Err(Errno::EINVAL);
        }
        Ok(self.root.clone())
    }
}

fn make_inode(tree: &Arc<Tree>, node: Node, perm: u32) -> Arc<Inode> {
    let file_type = node::file_type_of(&node.kind);
    let size = match &node.kind {
        Kind::Attr(_) => PAGE_SIZE,
        Kind::Bin(b) => b.size(),
        Kind::Dir { .. } | Kind::Link(_) => 0,
    };
    let nlink = if file_type == FileType::Directory {
        2
    } else {
        1
    };
    let inode = Inode::new(
        &tree.sb,
        InodeInit {
            ino: tree.sb.alloc_ino(),
            file_type,
            perm,
            uid: 0,
            gid: 0,
            rdev: 0,
            nlink,
        },
        Box::new(node),
    );
    if size != 0 {
        inode.write_attrs(|w| w.set_size(size));
    }
    inode.set_revalidate();
    inode
}

/// The benchmarks' "vanilla" kernfs: Linux's kernfs before 5.15 (seed 004), for
/// `uvfs bench sysfs-open-read`'s vanilla column. Off unless [`set_vanilla_locking`] turns it
/// on. That kernfs refused RCU-walk (`kernfs_iop_permission()` returned `-ECHILD` under
/// `MAY_NOT_BLOCK`), so its walks took a reference per component (the column's tasks use
/// [`WalkMode::Ref`](crate::vfs::WalkMode::Ref), uvfs's ref-walk); and every kernfs component
/// took one global mutex twice: in `kernfs_iop_permission()`, around `kernfs_refresh_inode()`
/// (the node's attributes copied into its inode), and in `kernfs_dop_revalidate()`, around the
/// node's checks.
static VANILLA: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
static VANILLA_MUTEX: parking_lot::Mutex<()> = parking_lot::Mutex::new(());

/// Turns the vanilla kernfs locking on or off, process-wide (see the benchmarks' vanilla
/// column): with it on, every walk step onto a kernfs node takes one global mutex twice, once
/// around a copy of the node's attributes into its inode and once around its revalidation, as
/// Linux did before 5.15. Never on by default.
pub fn set_vanilla_locking(on: bool) {
    VANILLA.store(on, std::sync::atomic::Ordering::SeqCst);
}

/// Whether [`set_vanilla_locking`] is on.
pub fn vanilla_locking() -> bool {
    VANILLA.load(std::sync::atomic::Ordering::SeqCst)
}

/// The vanilla steps of [`set_vanilla_locking`] for a walk step onto `inode`, when it is on.
#[inline]
pub(crate) fn vanilla_step(inode: &Inode) {
    if VANILLA.load(std::sync::atomic::Ordering::Relaxed) {
        vanilla_lock_twice(inode);
    }
}

#[cold]
#[inline(never)]
fn vanilla_lock_twice(inode: &Inode) {
    {
        // kernfs_iop_permission(): kernfs_refresh_inode() under the mutex.
        let _g = VANILLA_MUTEX.lock();
        let (perm, uid, gid) = (inode.mode() & 0o7777, inode.uid(), inode.gid());
        inode.write_attrs(|w| {
            w.set_perm(perm);
            w.set_uid(uid);
            w.set_gid(gid);
        });
    }
    // kernfs_dop_revalidate(): the node's checks under the mutex.
    let _g = VANILLA_MUTEX.lock();
    std::hint::black_box(
        Node::of(inode).map(|n| (n.is_active(), n.name.len(), n.parent.is_some())),
    );
}

/// A node of a [`Kernfs`] tree: a handle its owner keeps to add nodes below it, notify
/// changes and remove it. Clones name the same node.
#[derive(Clone)]
pub struct KernfsNode {
    pub(crate) inode: Arc<Inode>,
}

impl std::fmt::Debug for KernfsNode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KernfsNode")
            .field("name", &String::from_utf8_lossy(&self.node().name))
            .field("ino", &self.inode.ino())
            .field("removed", &self.is_removed())
            .finish()
    }
}

impl KernfsNode {
    fn node(&self) -> &Node {
        Node::of(&self.inode).expect("a kernfs node's inode")
    }

    pub(crate) fn from_inode(inode: &Inode) -> Result<KernfsNode> {
        let node = Node::of(inode).ok_or(Errno::EINVAL)?;
        // The inode is held by its parent's map (or is the root, held by the tree) while
        // active; find the Arc through the parent.
        let parent = node
            .parent
            .as_ref()
            .and_then(Weak::upgrade)
            .ok_or(Errno::EPERM)?;
        let pnode = Node::of(&parent).ok_or(Errno::EINVAL)?;
        let Kind::Dir { children, .. } = &pnode.kind else {
            return Err(Errno::ENOTDIR);
        };
        let key = (node.hash, node.name.clone());
        let found = children.read().get(&key).cloned().ok_or(Errno::ENOENT)?;
        Ok(KernfsNode { inode: found })
    }

    pub(crate) fn from_dir(dir: &Inode) -> Result<KernfsNode> {
        let node = Node::of(dir).ok_or(Errno::EINVAL)?;
        if node.parent.is_none() {
            // The root: its tree holds it; find it through a child or keep a weak handle.
            return node
                .tree
                .root
                .get()
                .and_then(Weak::upgrade)
                .map(|inode| KernfsNode { inode })
                .ok_or(Errno::ENOENT);
        }
        KernfsNode::from_inode(dir)
    }

    /// The node's name (empty for the root).
    pub fn name(&self) -> &[u8] {
        &self.node().name
    }

    /// The node's inode: its attributes (mode, owner, times) as `stat` shows them.
    pub fn inode(&self) -> &Arc<Inode> {
        &self.inode
    }

    /// True once the node (or a directory above it) was removed.
    pub fn is_removed(&self) -> bool {
        !self.node().is_active()
    }

    /// The entry `name` of this directory, if it exists.
    pub fn find(&self, name: impl AsRef<[u8]>) -> Option<KernfsNode> {
        self.node()
            .child(name.as_ref())
            .map(|inode| KernfsNode { inode })
    }

    /// Adds a directory `name` with permission bits `mode` (Linux: `kernfs_create_dir()`).
    ///
    /// # Errors
    /// `EEXIST` if the name is taken; `EINVAL` for an empty name, `.`, `..` or one with `/`
    /// or NUL; `ENAMETOOLONG` past 255 bytes; `ENOTDIR` if this is not a directory; `ENOENT`
    /// if it was removed.
    pub fn create_dir(&self, name: impl AsRef<[u8]>, mode: u32) -> Result<KernfsNode> {
        let ops = self.node().dir_ops().cloned();
        self.add(
            name.as_ref(),
            mode,
            Kind::Dir {
                children: parking_lot::RwLock::new(Default::default()),
                ops,
            },
        )
    }

    /// Adds an attribute file `name` (Linux: `kernfs_create_file()`, `sysfs_create_file()`).
    ///
    /// # Errors
    /// As [`KernfsNode::create_dir`].
    pub fn create_file(
        &self,
        name: impl AsRef<[u8]>,
        mode: u32,
        attr: Arc<dyn Attribute>,
    ) -> Result<KernfsNode> {
        self.add(name.as_ref(), mode, Kind::Attr(attr))
    }

    /// Adds a binary attribute file `name` (Linux: `sysfs_create_bin_file()`).
    ///
    /// # Errors
    /// As [`KernfsNode::create_dir`].
    pub fn create_bin(
        &self,
        name: impl AsRef<[u8]>,
        mode: u32,
        attr: Arc<dyn BinAttribute>,
    ) -> Result<KernfsNode> {
        self.add(name.as_ref(), mode, Kind::Bin(attr))
    }

    /// Adds a symbolic link `name` to `target`, a node of the same tree; reading it gives the
    /// relative path from this directory to the target (Linux: `kernfs_create_link()`,
    /// `kernfs_get_target_path()`).
    ///
    /// # Errors
    /// As [`KernfsNode::create_dir`]; `EINVAL` if `target` is in another tree.
    pub fn create_link(&self, name: impl AsRef<[u8]>, target: &KernfsNode) -> Result<KernfsNode> {
        if !Arc::ptr_eq(&self.node().tree, &target.node().tree) {
            return Err(Errno::EINVAL);
        }
        self.add(
            name.as_ref(),
            0o777,
            Kind::Link(Arc::downgrade(&target.inode)),
        )
    }

    fn add(&self, name: &[u8], mode: u32, kind: Kind) -> Result<KernfsNode> {
        if name.is_empty()
            || name == b"."
            || name == b".."
            || name.contains(&b'/')
            || name.contains(&0)
        {
            return Err(Errno::EINVAL);
        }
        if name.len() > NAME_MAX {
            return Err(Errno::ENAMETOOLONG);
        }
        let me = self.node();
        let Kind::Dir { children, .. } = &me.kind else {
            return Err(Errno::ENOTDIR);
        };
        let is_dir = matches!(kind, Kind::Dir { .. });
        let tree = me.tree.clone();
        let _g = tree.structure.lock();
        if !me.is_active() {
            return Err(Errno::ENOENT);
        }
        let key = (name_hash(name), Box::<[u8]>::from(name));
        let mut map = children.write();
        if map.get(&key).is_some() {
            return Err(Errno::EEXIST);
        }
        let node = Node::new(&tree, name, Some(Arc::downgrade(&self.inode)), kind);
        let inode = make_inode(&tree, node, mode & 0o7777);
        if map.insert(key, inode.clone()).is_err() {
            debug_assert!(false, "the name was checked free under the same lock");
            return Err(Errno::EEXIST);
        }
        drop(map);
        if is_dir {
            self.inode.write_attrs(|w| w.add_nlink(1));
        }
        self.inode.touch_ctime(crate::vfs::Stamp::CtimeMtime);
        Ok(KernfsNode { inode })
    }

    /// Removes the node and everything below it (Linux: `kernfs_remove()`): from now on
    /// lookups miss them, open files' reads, writes and seeks fail with `ENODEV`, and no
    /// callback of theirs starts; returns once every callback of theirs already running has
    /// returned (but for the caller's own, when a callback removes its own node: Linux's
    /// `kernfs_remove_self()`), also when another thread's removal of the node, or of a node
    /// below it, began first and is still waiting. The name stays taken (`EEXIST`) until the
    /// node's callbacks have returned. Removing a removed node does nothing; the root cannot
    /// be removed (nothing happens).
    pub fn remove(&self) {
        let me = self.node();
        let Some(parent) = me.parent.as_ref().and_then(Weak::upgrade) else {
            return;
        };
        let Some(Kind::Dir {
            children: siblings, ..
        }) = Node::of(&parent).map(|n| &n.kind)
        else {
            return;
        };
        let key = (me.hash, me.name.clone());
        let linked =
            |map: &node::Children| map.get(&key).is_some_and(|i| Arc::ptr_eq(i, &self.inode));
        let tree = me.tree.clone();
        let g = tree.structure.lock();
        // A node leaves its parent only once drained (below), so one that has left it has no
        // callback running (Linux: `__kernfs_remove()` returns for a node off its parent's
        // rbtree). One still on it may be another removal's, still draining: drain it too.
        if !linked(&siblings.read()) {
            return;
        }
        // Every node of the subtree (those another removal deactivated included),
        // deactivated and its dentries made stale.
        let mut gone: Vec<Arc<Inode>> = vec![self.inode.clone()];
        let mut i = 0;
        while i < gone.len() {
            let cur = gone[i].clone();
            if let Some(Kind::Dir { children, .. }) = Node::of(&cur).map(|n| &n.kind) {
                gone.extend(children.read().iter().map(|(_, i)| i.clone()));
            }
            i += 1;
        }
        for inode in &gone {
            let n = Node::of(inode).expect("kernfs");
            active::deactivate(&n.flags);
            inode.set_stale();
        }
        drop(g);
        let keys: HashSet<usize> = gone
            .iter()
            .map(|i| Node::of(i).expect("kernfs") as *const Node as usize)
            .collect();
        active::with_own(|own| active::DOMAIN.drain(Some(own), &|k| keys.contains(&k)));
        // Off the parent once drained; of concurrent removals, the first to get here.
        let g = tree.structure.lock();
        let unlinked = {
            let mut map = siblings.write();
            linked(&map) && map.remove(&key).is_some()
        };
        if unlinked {
            if self.inode.is_dir() {
                parent.write_attrs(|w| w.add_nlink(-1));
            }
            parent.touch_ctime(crate::vfs::Stamp::CtimeMtime);
        }
        drop(g);
        for inode in &gone {
            let n = Node::of(inode).expect("kernfs");
            if let Some(q) = n.poll.get() {
                q.wake(PollEvents::ERR | PollEvents::PRI);
            }
        }
    }

    /// Tells the node's readers that its contents changed (Linux: `kernfs_notify()`,
    /// `sysfs_notify()`): pollers of its open files wake with `POLLERR | POLLPRI`, and
    /// inotify and fanotify watchers of the node (and of its directory) get `IN_MODIFY`.
    pub fn notify(&self) {
        let me = self.node();
        me.event.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        if let Some(q) = me.poll.get() {
            q.wake(PollEvents::IN | PollEvents::ERR | PollEvents::PRI);
        }
        let parent = me.parent.as_ref().and_then(Weak::upgrade);
        crate::vfs::notify::child_modified(parent.as_deref(), &me.name, &self.inode);
    }

    /// Sets the node's permission bits (Linux: `kernfs_setattr()` with `ATTR_MODE`); chmod
    /// through a mount does the same.
    pub fn set_mode(&self, mode: u32) {
        crate::vfs::SetAttr {
            perm: Some(mode & 0o7777),
            ctime: true,
            ..Default::default()
        }
        .apply(&self.inode);
    }

    /// Sets the node's owner and group (Linux: `kernfs_setattr()` with `ATTR_UID|ATTR_GID`).
    pub fn set_owner(&self, uid: u32, gid: u32) {
        crate::vfs::SetAttr {
            uid: Some(uid),
            gid: Some(gid),
            ctime: true,
            ..Default::default()
        }
        .apply(&self.inode);
    }
}

/// The relative path from directory `from` (a link's parent) to `target` (Linux:
/// `kernfs_get_target_path()`): `../` up to the first directory above `from` that holds the
/// target, then the names down to it.
fn relative_path(from: Option<&Weak<Inode>>, target: &Arc<Inode>) -> Vec<u8> {
    let chain = |start: Option<Arc<Inode>>| {
        let mut v = Vec::new();
        let mut cur = start;
        while let Some(i) = cur {
            cur = Node::of(&i)
                .and_then(|n| n.parent.as_ref())
                .and_then(Weak::upgrade);
            v.push(i);
        }
        v
    };
    // Ancestors of the target's directory, nearest first, the root last.
    let target_up = chain(
        Node::of(target)
            .and_then(|n| n.parent.as_ref())
            .and_then(Weak::upgrade),
    );
    let mut path = Vec::new();
    let mut base = from.and_then(Weak::upgrade);
    while let Some(b) = base.clone() {
        if target_up.iter().any(|a| Arc::ptr_eq(a, &b)) {
            break;
        }
        let up = Node::of(&b)
            .and_then(|n| n.parent.as_ref())
            .and_then(Weak::upgrade);
        if up.is_none() {
            break;
        }
        path.extend_from_slice(b"../");
        base = up;
    }
    // The names from below `base` down to the target.
    let mut names = Vec::new();
    let mut cur = Some(target.clone());
    while let Some(i) = cur {
        if base.as_ref().is_some_and(|b| Arc::ptr_eq(b, &i)) {
            break;
        }
        let n = Node::of(&i);
        let up = n.and_then(|n| n.parent.as_ref()).and_then(Weak::upgrade);
        if up.is_none() {
            break;
        }
        names.push(n.map(|n| n.name.clone()).unwrap_or_default());
        cur = up;
    }
    for (k, name) in names.iter().rev().enumerate() {
        if k > 0 {
            path.push(b'/');
        }
        path.extend_from_slice(name);
    }
    path
}

#[cfg(test)]
mod tests;
