//! sysfs: a [`Kernfs`] tree of kobject-like directories and their attributes, mountable at
//! `/sys` (Linux: fs/sysfs/, lib/kobject.c).
//!
//! ```
//! use uvfs::abi::{OpenFlags, AT_FDCWD};
//! use uvfs::fs::kernfs::show;
//! use uvfs::fs::sysfs::Sysfs;
//! use uvfs::{Cred, Vfs};
//!
//! let sysfs = Sysfs::new();
//! let dev = sysfs.root().add_child("devices")?.add_child("widget0")?;
//! dev.add_attr("serial", 0o444, show(|out| out.extend_from_slice(b"W-0042\n")))?;
//!
//! let vfs = Vfs::new();
//! let task = vfs.task(Cred::root());
//! task.mkdirat(AT_FDCWD, "/sys", 0o555)?;
//! sysfs.mount(&task, "/sys")?;
//! let fd = task.openat(AT_FDCWD, "/sys/devices/widget0/serial", OpenFlags::RDONLY, 0)?;
//! let mut buf = [0u8; 32];
//! let n = task.read(fd, &mut buf)?;
//! assert_eq!(&buf[..n], b"W-0042\n");
//! # Ok::<(), uvfs::abi::Errno>(())
//! ```

use std::sync::Arc;

use super::kernfs::{Attribute, BinAttribute, Kernfs, KernfsNode};
use crate::abi::{Result, PAGE_SIZE};
use crate::vfs::Task;

/// sysfs's `statfs` `f_type` (Linux: `SYSFS_MAGIC`).
pub const SYSFS_MAGIC: i64 = 0x6265_6572;

/// A sysfs instance: one tree, mountable any number of times as filesystem type `"sysfs"`.
pub struct Sysfs {
    kernfs: Kernfs,
    root: Kobject,
}

impl Default for Sysfs {
    fn default() -> Self {
        Sysfs::new()
    }
}

impl Sysfs {
    /// An empty sysfs (its root only).
    pub fn new() -> Sysfs {
        let kernfs = Kernfs::new("sysfs", SYSFS_MAGIC);
        // Linux: `sysfs_init()` makes the root `S_IRUGO | S_IXUGO`.
        kernfs.root().set_mode(0o555);
        let root = Kobject {
            node: kernfs.root().clone(),
        };
        Sysfs { kernfs, root }
    }

    /// A sysfs holding the demo CPU tree ([`Sysfs::add_cpu_topology`]).
    pub fn with_cpu_topology() -> Sysfs {
        let s = Sysfs::new();
        // Adding to a fresh tree cannot find its names taken.
        let _ = s.add_cpu_topology();
        s
    }

    /// The root directory.
    pub fn root(&self) -> &Kobject {
        &self.root
    }

    /// The kernfs tree under this sysfs.
    pub fn kernfs(&self) -> &Kernfs {
        &self.kernfs
    }

    /// The filesystem type `"sysfs"` that mounts this instance (register it with
    /// [`Vfs::register_filesystem`](crate::Vfs::register_filesystem)).
    pub fn fs_type(&self) -> Arc<dyn crate::vfs::ops::FileSystemType> {
        self.kernfs.fs_type()
    }

    /// Registers this instance as `"sysfs"` in `task`'s namespace (unless it is already) and
    /// mounts it at `path`, as `mount -t sysfs sysfs PATH` does ([`Kernfs::mount`]).
    ///
    /// # Errors
    /// What `mount(2)` fails with (`ENOENT` for a missing `path`, `EPERM` without
    /// `CAP_SYS_ADMIN`); `EBUSY` if another instance is registered as `"sysfs"` there.
    pub fn mount(&self, task: &Task, path: &str) -> Result<()> {
        self.kernfs.mount(task, path)
    }

    /// Adds `devices/system/cpu/cpuN/topology/` for every CPU, with the host's topology
    /// attributes and values when the host has them (read once, now), else `core_id`,
    /// `physical_package_id` and `thread_siblings_list` of one package of single-thread cores
    /// (`N`, `0`, `N`), one CPU per available thread. Returns the topology directories.
    ///
    /// # Errors
    /// `EEXIST` if the tree already has them.
    pub fn add_cpu_topology(&self) -> Result<Vec<Kobject>> {
        let cpu = self
            .root
            .child_or_add("devices")?
            .child_or_add("system")?
            .child_or_add("cpu")?;
        let host = host_cpus();
        let mut dirs = Vec::new();
        for (n, attrs) in host {
            let topo = cpu.add_child(format!("cpu{n}"))?.add_child("topology")?;
            for (name, mode, size, value) in attrs {
                if is_cpumask(&name) {
                    topo.add_bin_attr(name, mode, Arc::new(Cpumask::new(value, size)))?;
                    continue;
                }
                let value: Arc<[u8]> = value.into();
                topo.add_attr(
                    name,
                    mode,
                    super::kernfs::show(move |out| out.extend_from_slice(&value)),
                )?;
            }
            dirs.push(topo);
        }
        Ok(dirs)
    }
}

/// A host attribute: name, permission bits, size `stat` shows, value.
type HostAttr = (String, u32, u64, Vec<u8>);

/// The CPUs' topology attributes: the host's (`/sys/devices/system/cpu/cpuN/topology/*`,
/// name, permission bits and value), or a made-up one-package machine.
fn host_cpus() -> Vec<(usize, Vec<HostAttr>)> {
    let mut cpus = Vec::new();
    if let Ok(dir) = std::fs::read_dir("/sys/devices/system/cpu") {
        for e in dir.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let Some(n) = name
                .strip_prefix("cpu")
                .and_then(|s| s.parse::<usize>().ok())
            else {
                continue;
            };
            let Ok(topo) = std::fs::read_dir(e.path().join("topology")) else {
                continue;
            };
            let mut attrs = Vec::new();
            for a in topo.flatten() {
                use std::os::unix::fs::PermissionsExt;
                let Ok(meta) = a.metadata() else { continue };
                let Ok(value) = std::fs::read(a.path()) else {
                    continue;
                };
                attrs.push((
                    a.file_name().to_string_lossy().into_owned(),
                    meta.permissions().mode() & 0o7777,
                    meta.len(),
                    value,
                ));
            }
            attrs.sort_by(|a, b| creation_rank(&a.0).cmp(&creation_rank(&b.0)));
            cpus.push((n, attrs));
        }
    }
    if cpus.is_empty() {
        let n = std::thread::available_parallelism().map_or(1, |n| n.get());
        for c in 0..n {
            cpus.push((
                c,
                vec![
                    ("core_id".into(), 0o444, 4096, format!("{c}\n").into_bytes()),
                    ("physical_package_id".into(), 0o444, 4096, b"0\n".to_vec()),
                    (
                        "thread_siblings_list".into(),
                        0o444,
                        4096,
                        format!("{c}\n").into_bytes(),
                    ),
                ],
            ));
        }
    }
    cpus.sort_by_key(|c| c.0);
    cpus
}

/// The topology attributes in the order Linux creates them (drivers/base/topology.c:
/// `topology_attr_group`'s `attrs`, then its binary attributes, [`TOPOLOGY_CPUMASKS`], each in
/// its array's order, the way `sysfs_create_group()` adds them). A kernfs directory's tree has
/// the shape its creation order gives it, which a listing resumed between two entries shows
/// (`kernfs_dir_pos()`), so the demo tree adds the host's attributes in this order; names
/// not listed come last, by name.
const TOPOLOGY_ATTRS: &[&str] = &[
    "physical_package_id",
    "die_id",
    "cluster_id",
    "core_id",
    "book_id",
    "drawer_id",
    "ppin",
];

/// The topology group's binary attributes, the CPU masks and lists (since Linux 5.16,
/// `BIN_ATTR_RO`), in the order Linux creates them.
const TOPOLOGY_CPUMASKS: &[&str] = &[
    "core_cpus",
    "core_cpus_list",
    "thread_siblings",
    "thread_siblings_list",
    "core_siblings",
    "core_siblings_list",
    "cluster_cpus",
    "cluster_cpus_list",
    "die_cpus",
    "die_cpus_list",
    "package_cpus",
    "package_cpus_list",
    "book_siblings",
    "book_siblings_list",
    "drawer_siblings",
    "drawer_siblings_list",
];

/// Whether the topology attribute `name` is a CPU mask or list (a binary attribute).
fn is_cpumask(name: &str) -> bool {
    TOPOLOGY_CPUMASKS.contains(&name)
}

/// A CPU mask or list attribute as Linux reads one (`cpumap_print_bitmask_to_buf()`,
/// `cpumap_print_list_to_buf()`): the text and a NUL are read as memory at the position, and
/// the read returns one byte less than it copied, so a read of two bytes gives one and a read
/// at or past the NUL gives -1 (`EPERM`).
struct Cpumask {
    /// The text and its NUL.
    bytes: Box<[u8]>,
    /// The size `stat` shows, where reads stop (`CPUMAP_FILE_MAX_BYTES`,
    /// `CPULIST_FILE_MAX_BYTES`: the host's).
    size: u64,
}

impl Cpumask {
    fn new(mut text: Vec<u8>, size: u64) -> Cpumask {
        text.push(0);
        Cpumask {
            bytes: text.into(),
            size,
        }
    }
}

impl BinAttribute for Cpumask {
    fn size(&self) -> u64 {
        self.size
    }

    fn read(&self, buf: &mut [u8], pos: u64) -> Result<usize> {
        // Linux: `memory_read_from_buffer()` over the text and its NUL, then one less.
        let from = usize::try_from(pos)
            .unwrap_or(usize::MAX)
            .min(self.bytes.len());
        let n = buf.len().min(self.bytes.len() - from);
        buf[..n].copy_from_slice(&self.bytes[from..from + n]);
        n.checked_sub(1).ok_or(crate::abi::Errno::EPERM)
    }
}

/// Where Linux creates a topology attribute: its place among [`TOPOLOGY_ATTRS`], then
/// [`TOPOLOGY_CPUMASKS`], then by name.
fn creation_rank(name: &str) -> (usize, &str) {
    let at = TOPOLOGY_ATTRS.iter().position(|n| *n == name).or_else(|| {
        let mask = TOPOLOGY_CPUMASKS.iter().position(|n| *n == name)?;
        Some(TOPOLOGY_ATTRS.len() + mask)
    });
    (
        at.unwrap_or(TOPOLOGY_ATTRS.len() + TOPOLOGY_CPUMASKS.len()),
        name,
    )
}

/// A sysfs directory, as a kobject is one (Linux: `struct kobject`, `kobject_add()`).
#[derive(Clone, Debug)]
pub struct Kobject {
    node: KernfsNode,
}

impl Kobject {
    /// The directory's kernfs node.
    pub fn node(&self) -> &KernfsNode {
        &self.node
    }

    /// Adds a child kobject: a directory, mode 0755 (Linux: `kobject_add()`).
    ///
    /// # Errors
    /// As [`KernfsNode::create_dir`].
    pub fn add_child(&self, name: impl AsRef<[u8]>) -> Result<Kobject> {
        Ok(Kobject {
            node: self.node.create_dir(name, 0o755)?,
        })
    }

    /// The child `name`, made if missing.
    ///
    /// # Errors
    /// As [`KernfsNode::create_dir`].
    pub fn child_or_add(&self, name: impl AsRef<[u8]>) -> Result<Kobject> {
        match self.node.find(name.as_ref()) {
            Some(node) => Ok(Kobject { node }),
            None => self.add_child(name),
        }
    }

    /// Adds an attribute file (Linux: `sysfs_create_file()`): what `show` gives is cut to a
    /// page less one byte, as sysfs does.
    ///
    /// # Errors
    /// As [`KernfsNode::create_file`].
    pub fn add_attr(
        &self,
        name: impl AsRef<[u8]>,
        mode: u32,
        attr: Arc<dyn Attribute>,
    ) -> Result<KernfsNode> {
        self.node
            .create_file(name, mode, Arc::new(PageCapped(attr)))
    }

    /// Adds a binary attribute file (Linux: `sysfs_create_bin_file()`).
    ///
    /// # Errors
    /// As [`KernfsNode::create_bin`].
    pub fn add_bin_attr(
        &self,
        name: impl AsRef<[u8]>,
        mode: u32,
        attr: Arc<dyn BinAttribute>,
    ) -> Result<KernfsNode> {
        self.node.create_bin(name, mode, attr)
    }

    /// Adds a group of attributes, in a subdirectory `name` if given (Linux:
    /// `sysfs_create_group()`); on an error the ones already added are removed.
    ///
    /// # Errors
    /// As [`Kobject::add_attr`].
    pub fn add_group(
        &self,
        name: Option<&str>,
        attrs: &[(&str, u32, Arc<dyn Attribute>)],
    ) -> Result<Kobject> {
        let dir = match name {
            Some(n) => self.add_child(n)?,
            None => self.clone(),
        };
        let mut added = Vec::new();
        for (n, mode, a) in attrs {
            match dir.add_attr(n, *mode, a.clone()) {
                Ok(node) => added.push(node),
                Err(e) => {
                    if name.is_some() {
                        dir.remove();
                    } else {
                        added.iter().for_each(KernfsNode::remove);
                    }
                    return Err(e);
                }
            }
        }
        Ok(dir)
    }

    /// Adds a symbolic link to another kobject (Linux: `sysfs_create_link()`).
    ///
    /// # Errors
    /// As [`KernfsNode::create_link`].
    pub fn add_link(&self, name: impl AsRef<[u8]>, target: &Kobject) -> Result<KernfsNode> {
        self.node.create_link(name, &target.node)
    }

    /// Tells pollers and watchers that the attribute `attr` of this kobject changed (Linux:
    /// `sysfs_notify(kobj, NULL, attr)`); nothing happens if there is no such attribute.
    pub fn notify(&self, attr: impl AsRef<[u8]>) {
        if let Some(n) = self.node.find(attr) {
            n.notify();
        }
    }

    /// Removes the kobject's directory and everything in it (Linux: `kobject_del()`); see
    /// [`KernfsNode::remove`].
    pub fn remove(&self) {
        self.node.remove();
    }
}

/// A sysfs attribute: `show` output cut to `PAGE_SIZE - 1` bytes (Linux:
/// `sysfs_kf_seq_show()` "struggles along" with that much).
struct PageCapped(Arc<dyn Attribute>);

impl Attribute for PageCapped {
    fn show(&self, out: &mut Vec<u8>) -> Result<()> {
        let start = out.len();
        self.0.show(out)?;
        let max = PAGE_SIZE as usize - 1;
        if out.len() - start > max {
            out.truncate(start + max);
        }
        Ok(())
    }
    fn store(&self, data: &[u8]) -> Result<usize> {
        self.0.store(data)
    }
    fn can_show(&self) -> bool {
        self.0.can_show()
    }
    fn can_store(&self) -> bool {
        self.0.can_store()
    }
}
