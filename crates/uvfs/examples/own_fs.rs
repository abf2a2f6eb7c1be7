//! Your own filesystem at any path: `genfs`, a small read-only filesystem whose files are
//! computed when read, registered with the VFS and mounted at `/gen` of a tmpfs root.
//!
//! ```text
//! /gen/1/square   "1\n"      /gen/1/name   "one\n"
//! /gen/2/square   "4\n"      /gen/2/name   "two\n"      ... up to count= (default 5)
//! /gen/last  -> 5            (a symbolic link to the last directory)
//! /gen/secret                (mode 0400, root only)
//! ```
//!
//! Run with `cargo run -p uvfs --example own_fs`; `cargo test -p uvfs --example own_fs` runs
//! the tests at the bottom. `uvfs::vfs::ops` documents what a filesystem implements.

use std::any::Any;
use std::sync::Arc;

use uvfs::abi::{
    st_flags, AtFlags, Dirent, Errno, FileType, MountFlags, OpenFlags, Stat, StatFs, UmountFlags,
    AT_FDCWD,
};
use uvfs::vfs::ops::{DirEntry, FileOps, FileSystemType, FsContext, InodeOps, SuperOps};
use uvfs::vfs::super_block::SbRef;
use uvfs::vfs::{Dentry, FileDescription, Inode, InodeInit, SuperBlock};
use uvfs::{Cred, Task, Vfs};

/// `statfs`'s `f_type` of a genfs (any number other filesystems do not use).
const GENFS_MAGIC: i64 = 0x6765_6e66;

/// The filesystem type `mount(2)` knows as `"genfs"`. Its one option, `count=N`, says how
/// many numbered directories an instance has.
struct GenFsType;

impl FileSystemType for GenFsType {
    fn name(&self) -> &str {
        "genfs"
    }

    fn get_tree(&self, fc: &FsContext<'_>) -> uvfs::Result<Arc<Dentry>> {
        let count = parse_count(fc.data)?;
        let sb = SuperBlock::new(Box::new(GenSuper { count }));
        Ok(Dentry::new_root(make_inode(&sb, Node::Root, count)))
    }
}

/// `count=N` (1 to 1000; 5 when absent); anything else is `EINVAL`, as Linux's filesystems
/// refuse an unknown option.
fn parse_count(data: Option<&str>) -> uvfs::Result<u32> {
    let mut count = 5;
    for opt in data.unwrap_or("").split(',').filter(|o| !o.is_empty()) {
        let value = opt.strip_prefix("count=").ok_or(Errno::EINVAL)?;
        count = value.parse().map_err(|_| Errno::EINVAL)?;
        if !(1..=1000).contains(&count) {
            return Err(Errno::EINVAL);
        }
    }
    Ok(count)
}

/// One instance (Linux: the `s_fs_info` of a superblock).
struct GenSuper {
    count: u32,
}

impl SuperOps for GenSuper {
    fn fs_name(&self) -> &'static str {
        "genfs"
    }

    fn statfs(&self, sb: &SuperBlock) -> uvfs::Result<StatFs> {
        Ok(StatFs {
            f_type: GENFS_MAGIC,
            bsize: 4096,
            frsize: 4096,
            namelen: 255,
            files: u64::from(self.count) * 3 + 3,
            fsid: [sb.dev() as i32, (sb.dev() >> 32) as i32],
            ..StatFs::default()
        })
    }

    /// Nothing here can be written: every change is `EROFS`, whatever the mount asks.
    fn always_rdonly(&self) -> bool {
        true
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Every file of an instance, named by what it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Node {
    Root,
    Dir(u32),
    Square(u32),
    Name(u32),
    Last,
    Secret,
}

impl Node {
    /// Computed, so that a file has the same number however often it is looked up.
    fn ino(self) -> u64 {
        match self {
            Node::Root => 1,
            Node::Last => 2,
            Node::Secret => 3,
            Node::Dir(n) => 10 * u64::from(n),
            Node::Square(n) => 10 * u64::from(n) + 1,
            Node::Name(n) => 10 * u64::from(n) + 2,
        }
    }

    fn file_type(self) -> FileType {
        match self {
            Node::Root | Node::Dir(_) => FileType::Directory,
            Node::Last => FileType::Symlink,
            Node::Square(_) | Node::Name(_) | Node::Secret => FileType::Regular,
        }
    }

    fn perm(self) -> u32 {
        match self {
            Node::Root | Node::Dir(_) => 0o555,
            Node::Last => 0o777,
            Node::Secret => 0o400,
            Node::Square(_) | Node::Name(_) => 0o444,
        }
    }

    /// A directory's entries, in listing order.
    fn children(self, count: u32) -> Vec<(String, Node)> {
        match self {
            Node::Root => (1..=count)
                .map(|n| (n.to_string(), Node::Dir(n)))
                .chain([("last".into(), Node::Last), ("secret".into(), Node::Secret)])
                .collect(),
            Node::Dir(n) => vec![
                ("square".into(), Node::Square(n)),
                ("name".into(), Node::Name(n)),
            ],
            _ => Vec::new(),
        }
    }

    /// A regular file's bytes, or a link's target: computed on every read.
    fn contents(self, count: u32) -> Vec<u8> {
        const WORDS: [&str; 10] = [
            "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
        ];
        match self {
            Node::Square(n) => format!("{}\n", u64::from(n) * u64::from(n)).into_bytes(),
            Node::Name(n) => match WORDS.get(n as usize - 1) {
                Some(w) => format!("{w}\n").into_bytes(),
                None => format!("{n}\n").into_bytes(),
            },
            Node::Secret => b"for root only\n".to_vec(),
            Node::Last => count.to_string().into_bytes(),
            Node::Root | Node::Dir(_) => Vec::new(),
        }
    }
}

/// A new inode of `sb` for `node`: identity and attributes in the `Inode`, the node itself as
/// the filesystem's private part.
fn make_inode(sb: &SbRef, node: Node, count: u32) -> Arc<Inode> {
    let subdirs = node
        .children(count)
        .iter()
        .filter(|(_, c)| c.file_type() == FileType::Directory)
        .count() as u32;
    let init = InodeInit {
        ino: node.ino(),
        file_type: node.file_type(),
        perm: node.perm(),
        uid: 0,
        gid: 0,
        rdev: 0,
        // A directory: its name, its `.` and each subdirectory's `..`.
        nlink: if node.file_type() == FileType::Directory {
            2 + subdirs
        } else {
            1
        },
    };
    let inode = Inode::new(sb, init, Box::new(GenInode { node, count }));
    let size = node.contents(count).len() as u64;
    inode.write_attrs(|w| w.set_size(size));
    inode
}

/// The filesystem's part of an inode.
struct GenInode {
    node: Node,
    count: u32,
}

impl InodeOps for GenInode {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn lookup(&self, dir: &Inode, name: &[u8]) -> uvfs::Result<Option<Arc<Inode>>> {
        if self.node.file_type() != FileType::Directory {
            return Err(Errno::ENOTDIR);
        }
        Ok(self
            .node
            .children(self.count)
            .into_iter()
            .find(|(n, _)| n.as_bytes() == name)
            .map(|(_, node)| make_inode(dir.sb(), node, self.count)))
    }

    fn get_link(&self, _inode: &Inode) -> uvfs::Result<Arc<[u8]>> {
        match self.node {
            Node::Last => Ok(self.node.contents(self.count).into()),
            _ => Err(Errno::EINVAL),
        }
    }

    fn open(&self, _inode: &Arc<Inode>, _flags: OpenFlags) -> uvfs::Result<Box<dyn FileOps>> {
        Ok(Box::new(GenFile {
            node: self.node,
            count: self.count,
        }))
    }
}

/// An open file or directory of genfs.
struct GenFile {
    node: Node,
    count: u32,
}

/// `readdir` positions: 0 is `.`, 1 is `..`, and child `i` is at `FIRST_CHILD_POS + i`.
const FIRST_CHILD_POS: u64 = 2;

impl FileOps for GenFile {
    fn read(&self, _file: &FileDescription, buf: &mut [u8], pos: u64) -> uvfs::Result<usize> {
        let data = self.node.contents(self.count);
        let start = usize::try_from(pos).unwrap_or(usize::MAX).min(data.len());
        let n = buf.len().min(data.len() - start);
        buf[..n].copy_from_slice(&data[start..start + n]);
        Ok(n)
    }

    fn readdir(
        &self,
        file: &FileDescription,
        pos: &mut u64,
        sink: &mut dyn FnMut(DirEntry<'_>) -> bool,
    ) -> uvfs::Result<()> {
        if self.node.file_type() != FileType::Directory {
            return Err(Errno::ENOTDIR);
        }
        let dt_dir = FileType::Directory.dirent_type();
        let own = file.inode().ino();
        // The root's dentry has no parent: its `..` is itself.
        let parent = file
            .path()
            .dentry
            .parent()
            .and_then(|p| p.inode().map(|i| i.ino()))
            .unwrap_or(own);
        let dots = [(&b"."[..], own), (&b".."[..], parent)];
        while *pos < FIRST_CHILD_POS {
            let (name, ino) = dots[*pos as usize];
            let e = DirEntry {
                name,
                ino,
                d_type: dt_dir,
                next_pos: *pos + 1,
            };
            if !sink(e) {
                return Ok(());
            }
            *pos += 1;
        }
        let children = self.node.children(self.count);
        let skip = usize::try_from(*pos - FIRST_CHILD_POS).unwrap_or(usize::MAX);
        for (name, node) in children.iter().skip(skip) {
            let e = DirEntry {
                name: name.as_bytes(),
                ino: node.ino(),
                d_type: node.file_type().dirent_type(),
                next_pos: *pos + 1,
            };
            if !sink(e) {
                return Ok(());
            }
            *pos += 1;
        }
        Ok(())
    }
}

// ---- Using it --------------------------------------------------------------------------

/// What [`run`] saw.
#[derive(Debug)]
struct Report {
    /// Every path under `/gen`, depth first, directories with a trailing `/`, links with
    /// ` -> target`.
    listing: Vec<String>,
    /// Files read, by the path they were read through, and their contents.
    reads: Vec<(&'static str, String)>,
    /// `stat` of `/gen/3/square`.
    square: Stat,
    /// `statfs` of `/gen`.
    statfs: StatFs,
    /// Each call expected to be refused, and its errno.
    refused: Vec<(&'static str, Option<Errno>)>,
    /// `/gen` after the unmount: tmpfs's directory again.
    after_umount: Vec<String>,
}

/// Mounts genfs at `/gen` of a fresh tmpfs root, uses it, and unmounts it.
fn run() -> uvfs::Result<Report> {
    let vfs = Vfs::new();
    let root = vfs.task(Cred::root());
    // The tmpfs directory the mount will cover, and a link from tmpfs into the mount.
    root.mkdirat(AT_FDCWD, "/gen", 0o755)?;
    write_file(&root, "/gen/covered-by-the-mount", b"tmpfs\n")?;
    root.symlinkat("gen/3", AT_FDCWD, "/three")?;

    vfs.register_filesystem(Arc::new(GenFsType))?;
    root.mount(
        Some(b"generated"),
        "/gen",
        Some("genfs"),
        MountFlags::empty(),
        Some("count=3"),
    )?;

    let mut listing = Vec::new();
    list_tree(&root, "/gen", &mut listing)?;
    let mut reads = Vec::new();
    for path in [
        "/gen/2/square",
        "/gen/3/name",
        "/gen/last/square",
        "/three/name",
        "/gen/1/../2/name",
        "/gen/secret",
    ] {
        reads.push((path, read_file(&root, path)?));
    }

    let user = vfs.task(Cred::user(1000, 1000, &[]));
    let refused = vec![
        (
            "create /gen/new",
            errno(root.openat(
                AT_FDCWD,
                "/gen/new",
                OpenFlags::CREAT | OpenFlags::WRONLY,
                0o644,
            )),
        ),
        (
            "open /gen/1/square for writing",
            errno(root.openat(AT_FDCWD, "/gen/1/square", OpenFlags::WRONLY, 0)),
        ),
        (
            "mkdir /gen/1/sub",
            errno(root.mkdirat(AT_FDCWD, "/gen/1/sub", 0o755)),
        ),
        (
            "unlink /gen/1/name",
            errno(root.unlinkat(AT_FDCWD, "/gen/1/name", AtFlags::empty())),
        ),
        (
            "chmod /gen/1/name",
            errno(root.fchmodat(AT_FDCWD, "/gen/1/name", 0o666, AtFlags::empty())),
        ),
        (
            "read /gen/secret as uid 1000",
            errno(read_file(&user, "/gen/secret")),
        ),
        (
            "mount genfs as uid 1000",
            errno(user.mount(None, "/gen", Some("genfs"), MountFlags::empty(), None)),
        ),
        (
            "mount genfs with count=0",
            errno(root.mount(
                None,
                "/gen/1",
                Some("genfs"),
                MountFlags::empty(),
                Some("count=0"),
            )),
        ),
    ];
    let square = root.stat("/gen/3/square")?;
    let statfs = root.statfs("/gen")?;

    root.umount2("/gen", UmountFlags::empty())?;
    let mut after_umount = Vec::new();
    list_tree(&root, "/gen", &mut after_umount)?;
    Ok(Report {
        listing,
        reads,
        square,
        statfs,
        refused,
        after_umount,
    })
}

/// The errno of a call expected to fail (`None` if it succeeded).
fn errno<T>(r: uvfs::Result<T>) -> Option<Errno> {
    r.err()
}

fn write_file(t: &Task, path: &str, data: &[u8]) -> uvfs::Result<()> {
    let fd = t.openat(AT_FDCWD, path, OpenFlags::CREAT | OpenFlags::WRONLY, 0o644)?;
    let r = t.write(fd, data);
    t.close(fd)?;
    r.map(drop)
}

fn read_file(t: &Task, path: &str) -> uvfs::Result<String> {
    let fd = t.openat(AT_FDCWD, path, OpenFlags::RDONLY, 0)?;
    let mut out = Vec::new();
    let mut buf = [0u8; 3]; // small, so that reads at an offset are exercised
    let r = loop {
        match t.read(fd, &mut buf) {
            Ok(0) => break Ok(()),
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) => break Err(e),
        }
    };
    t.close(fd)?;
    r.map(|()| String::from_utf8_lossy(&out).into_owned())
}

/// The entries of directory `path`, without `.` and `..`, in listing order.
fn list_dir(t: &Task, path: &str) -> uvfs::Result<Vec<Dirent>> {
    let fd = t.openat(AT_FDCWD, path, OpenFlags::DIRECTORY, 0)?;
    let mut entries = Vec::new();
    let mut buf = [0u8; 64]; // small, so that listings resume at a position
    let r = loop {
        match t.getdents64(fd, &mut buf) {
            Ok(0) => break Ok(()),
            Ok(n) => entries.extend(Dirent::parse(&buf[..n])),
            Err(e) => break Err(e),
        }
    };
    t.close(fd)?;
    r?;
    entries.retain(|e| e.name != b"." && e.name != b"..");
    Ok(entries)
}

fn list_tree(t: &Task, path: &str, out: &mut Vec<String>) -> uvfs::Result<()> {
    for e in list_dir(t, path)? {
        let child = format!("{path}/{}", String::from_utf8_lossy(&e.name));
        if e.d_type == FileType::Directory.dirent_type() {
            out.push(format!("{child}/"));
            list_tree(t, &child, out)?;
        } else if e.d_type == FileType::Symlink.dirent_type() {
            let mut target = [0u8; 256];
            let n = t.readlinkat(AT_FDCWD, &child, &mut target)?;
            out.push(format!(
                "{child} -> {}",
                String::from_utf8_lossy(&target[..n])
            ));
        } else {
            out.push(child);
        }
    }
    Ok(())
}

fn main() -> uvfs::Result<()> {
    let r = run()?;
    println!("mounted genfs (count=3) at /gen of a tmpfs root:");
    for p in &r.listing {
        println!("  {p}");
    }
    for (path, text) in &r.reads {
        println!("read {path}: {text:?}");
    }
    println!(
        "stat /gen/3/square: ino {} mode {:o} size {} nlink {}",
        r.square.ino, r.square.mode, r.square.size, r.square.nlink
    );
    let ro = r.statfs.flags & st_flags::RDONLY != 0;
    println!("statfs /gen: f_type {:#x}, read-only {ro}", r.statfs.f_type);
    for (what, e) in &r.refused {
        match e {
            Some(e) => println!("{what}: {e:?} ({e})"),
            None => println!("{what}: succeeded"),
        }
    }
    println!("after umount2(\"/gen\"): {:?}", r.after_umount);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tmpfs root with genfs (`count=2`) registered and mounted at `/gen`.
    fn mounted() -> (Vfs, Task) {
        let vfs = Vfs::new();
        let t = vfs.task(Cred::root());
        t.mkdirat(AT_FDCWD, "/gen", 0o755).unwrap();
        vfs.register_filesystem(Arc::new(GenFsType)).unwrap();
        t.mount(
            None,
            "/gen",
            Some("genfs"),
            MountFlags::empty(),
            Some("count=2"),
        )
        .unwrap();
        (vfs, t)
    }

    /// The example's own run: listing, contents, attributes, errnos, unmount. Oracle: what
    /// the code above generates, and Linux's errnos for a read-only superblock.
    #[test]
    fn example_run_lists_reads_refuses_and_unmounts() {
        let r = run().unwrap();
        assert_eq!(
            r.listing,
            [
                "/gen/1/",
                "/gen/1/square",
                "/gen/1/name",
                "/gen/2/",
                "/gen/2/square",
                "/gen/2/name",
                "/gen/3/",
                "/gen/3/square",
                "/gen/3/name",
                "/gen/last -> 3",
                "/gen/secret",
            ]
        );
        let reads: Vec<(&str, &str)> = r.reads.iter().map(|(p, s)| (*p, s.as_str())).collect();
        assert_eq!(
            reads,
            [
                ("/gen/2/square", "4\n"),
                ("/gen/3/name", "three\n"),
                ("/gen/last/square", "9\n"),
                ("/three/name", "three\n"),
                ("/gen/1/../2/name", "two\n"),
                ("/gen/secret", "for root only\n"),
            ]
        );
        assert_eq!(r.square.ino, 31);
        assert_eq!(r.square.mode, 0o100444);
        assert_eq!(r.square.size, 2);
        assert_eq!(r.square.nlink, 1);
        assert_eq!(r.statfs.f_type, GENFS_MAGIC);
        assert_ne!(r.statfs.flags & st_flags::RDONLY, 0);
        let refused: Vec<Option<Errno>> = r.refused.iter().map(|(_, e)| *e).collect();
        use Errno as E;
        assert_eq!(
            refused,
            [
                E::EROFS,
                E::EROFS,
                E::EROFS,
                E::EROFS,
                E::EROFS,
                E::EACCES,
                E::EPERM,
                E::EINVAL
            ]
            .map(Some),
            "{:?}",
            r.refused
        );
        assert_eq!(r.after_umount, ["/gen/covered-by-the-mount"]);
    }

    /// stat sees the attributes `make_inode` gave, the same inode number on every lookup,
    /// and a device number of its own.
    #[test]
    fn stat_reports_the_generated_attributes() {
        let (_vfs, t) = mounted();
        let root = t.stat("/gen").unwrap();
        assert_eq!((root.ino, root.mode, root.nlink), (1, 0o040555, 4));
        let dir = t.stat("/gen/2").unwrap();
        assert_eq!((dir.ino, dir.nlink), (20, 2));
        let link = t
            .fstatat(AT_FDCWD, "/gen/last", AtFlags::SYMLINK_NOFOLLOW)
            .unwrap();
        assert_eq!((link.mode, link.size), (0o120777, 1));
        assert_eq!(t.stat("/gen/last").unwrap().ino, 20);
        assert_ne!(root.dev, t.stat("/").unwrap().dev);
        assert_eq!(t.stat("/gen/2/name").unwrap().dev, root.dev);
    }

    /// A plain unmount is refused while a file of the filesystem is open, or a cwd is in it
    /// (Linux: `do_umount()`'s `propagate_mount_busy()`), and works once they are gone;
    /// `MNT_DETACH` does not wait, and the open file keeps reading.
    #[test]
    fn umount_is_busy_while_a_file_or_cwd_is_inside() {
        let (vfs, t) = mounted();
        let fd = t
            .openat(AT_FDCWD, "/gen/1/square", OpenFlags::RDONLY, 0)
            .unwrap();
        assert_eq!(t.umount2("/gen", UmountFlags::empty()), Err(Errno::EBUSY));
        t.close(fd).unwrap();
        let other = vfs.task(Cred::root());
        other.chdir("/gen/2").unwrap();
        assert_eq!(t.umount2("/gen", UmountFlags::empty()), Err(Errno::EBUSY));
        other.chdir("/").unwrap();
        t.umount2("/gen", UmountFlags::empty()).unwrap();
        assert_eq!(list_dir(&t, "/gen").unwrap().len(), 0);

        t.mount(None, "/gen", Some("genfs"), MountFlags::empty(), None)
            .unwrap();
        let fd = t
            .openat(AT_FDCWD, "/gen/5/name", OpenFlags::RDONLY, 0)
            .unwrap();
        t.umount2("/gen", UmountFlags::DETACH).unwrap();
        assert_eq!(t.stat("/gen/5"), Err(Errno::ENOENT));
        let mut buf = [0u8; 8];
        assert_eq!(t.pread(fd, &mut buf, 0), Ok(5));
        assert_eq!(&buf[..5], b"five\n");
        t.close(fd).unwrap();
    }

    /// Mounting needs `CAP_SYS_ADMIN`, checked before the type is looked at (Linux:
    /// `may_mount()` in `path_mount()`): `EPERM` for a registered type and for an unknown one.
    #[test]
    fn mount_without_cap_sys_admin_is_eperm() {
        let (vfs, _t) = mounted();
        let user = vfs.task(Cred::user(1000, 1000, &[]));
        for fstype in ["genfs", "nosuchfs"] {
            assert_eq!(
                user.mount(None, "/", Some(fstype), MountFlags::empty(), None),
                Err(Errno::EPERM),
                "{fstype}"
            );
        }
        assert_eq!(
            user.umount2("/gen", UmountFlags::empty()),
            Err(Errno::EPERM)
        );
    }

    /// Two mounts are two instances: each with its own options, device and contents; one
    /// unmounted leaves the other.
    #[test]
    fn two_mounts_are_independent_instances() {
        let (_vfs, t) = mounted();
        t.mkdirat(AT_FDCWD, "/other", 0o755).unwrap();
        t.mount(
            None,
            "/other",
            Some("genfs"),
            MountFlags::empty(),
            Some("count=4"),
        )
        .unwrap();
        let names = |p: &str| -> Vec<Vec<u8>> {
            list_dir(&t, p)
                .unwrap()
                .into_iter()
                .map(|e| e.name)
                .collect()
        };
        assert_eq!(names("/gen"), [&b"1"[..], b"2", b"last", b"secret"]);
        assert_eq!(
            names("/other"),
            [&b"1"[..], b"2", b"3", b"4", b"last", b"secret"]
        );
        assert_ne!(t.stat("/gen").unwrap().dev, t.stat("/other").unwrap().dev);
        assert_eq!(read_file(&t, "/other/4/square").unwrap(), "16\n");
        t.umount2("/gen", UmountFlags::empty()).unwrap();
        assert_eq!(read_file(&t, "/other/last/name").unwrap(), "four\n");
        assert_eq!(t.stat("/gen/1"), Err(Errno::ENOENT));
    }

    /// The walk crosses into the mount and out of it: `..` of its root is tmpfs's `/`,
    /// symlinks from tmpfs lead in, absolute symlinks resolve from the task's root, and a
    /// name missing in genfs is ENOENT, a name below a file ENOTDIR.
    #[test]
    fn path_walk_crosses_the_mount_both_ways() {
        let (_vfs, t) = mounted();
        let root = t.stat("/").unwrap();
        let up = t.stat("/gen/..").unwrap();
        assert_eq!((up.dev, up.ino), (root.dev, root.ino));
        let up2 = t.stat("/gen/1/../../gen/2/..").unwrap();
        assert_eq!(up2.ino, 1);
        assert_ne!(up2.dev, root.dev);
        t.symlinkat("/gen/2/name", AT_FDCWD, "/abs").unwrap();
        t.symlinkat("gen/last", AT_FDCWD, "/rel").unwrap();
        assert_eq!(read_file(&t, "/abs").unwrap(), "two\n");
        assert_eq!(read_file(&t, "/rel/square").unwrap(), "4\n");
        t.chdir("/gen/1").unwrap();
        assert_eq!(read_file(&t, "../2/square").unwrap(), "4\n");
        assert_eq!(t.stat("../../abs").unwrap().size, 4);
        assert_eq!(t.stat("/gen/9"), Err(Errno::ENOENT));
        assert_eq!(t.stat("/gen/1/name/x"), Err(Errno::ENOTDIR));
    }

    /// `always_rdonly` holds through a remount that asks for read-write (Linux: squashfs's
    /// `reconfigure`), and for a mount that did not ask for read-only.
    #[test]
    fn remount_read_write_stays_read_only() {
        let (_vfs, t) = mounted();
        t.mount(None, "/gen", None, MountFlags::REMOUNT, None)
            .unwrap();
        assert_eq!(t.mkdirat(AT_FDCWD, "/gen/x", 0o755), Err(Errno::EROFS));
        let open_w = t.openat(AT_FDCWD, "/gen/1/name", OpenFlags::RDWR, 0);
        assert_eq!(open_w, Err(Errno::EROFS));
    }
}
