//! A filesystem implemented outside the crate, mounted through the registry
//! (`Vfs::register_filesystem` + `Task::mount`): the registry's rules, what `get_tree` is
//! told, what a refused mount leaves, and the errnos of the operations such a filesystem
//! leaves out. `examples/own_fs.rs` tests a whole read-only filesystem; this file a minimal
//! writable-looking one, `mapfs`: a root with a file `hello` and an empty directory `sub`,
//! and none of the namespace-changing operations.

use std::any::Any;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use uvfs::abi::{AtFlags, Errno, FileType, MountFlags, OpenFlags, RenameFlags, StatFs, AT_FDCWD};
use uvfs::vfs::ops::{FileOps, FileSystemType, FsContext, InodeOps, SuperOps};
use uvfs::vfs::super_block::SbRef;
use uvfs::vfs::{Capabilities, Dentry, FileDescription, Inode, InodeInit, SuperBlock};
use uvfs::{Cred, Task, Vfs};

/// What `get_tree` was told, as owned values.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Seen {
    source: Option<Vec<u8>>,
    data: Option<String>,
    flags: MountFlags,
    fsuid: u32,
}

/// The `mapfs` type under a name, with the text of its one file; counts its calls and its
/// live instances.
struct MapFsType {
    name: &'static str,
    hello: &'static [u8],
    calls: AtomicUsize,
    live: Arc<AtomicUsize>,
    seen: Mutex<Vec<Seen>>,
}

impl MapFsType {
    fn new(name: &'static str, hello: &'static [u8]) -> Arc<MapFsType> {
        Arc::new(MapFsType {
            name,
            hello,
            calls: AtomicUsize::new(0),
            live: Arc::new(AtomicUsize::new(0)),
            seen: Mutex::new(Vec::new()),
        })
    }
}

impl FileSystemType for MapFsType {
    fn name(&self) -> &str {
        self.name
    }

    /// Option `fileroot` makes an instance whose root is a regular file.
    fn get_tree(&self, fc: &FsContext<'_>) -> uvfs::Result<Arc<Dentry>> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.seen.lock().unwrap().push(Seen {
            source: fc.source.map(<[u8]>::to_vec),
            data: fc.data.map(str::to_owned),
            flags: fc.flags,
            fsuid: fc.cred.fsuid,
        });
        let root_kind = match fc.data {
            None => Kind::Root,
            Some("fileroot") => Kind::Hello,
            Some(_) => return Err(Errno::EINVAL),
        };
        self.live.fetch_add(1, Ordering::SeqCst);
        let sb = SuperBlock::new(Box::new(MapSuper {
            live: self.live.clone(),
        }));
        Ok(Dentry::new_root(node(&sb, root_kind, self.hello)))
    }
}

struct MapSuper {
    live: Arc<AtomicUsize>,
}

impl Drop for MapSuper {
    fn drop(&mut self) {
        self.live.fetch_sub(1, Ordering::SeqCst);
    }
}

impl SuperOps for MapSuper {
    fn fs_name(&self) -> &'static str {
        "mapfs"
    }
    fn statfs(&self, _sb: &SuperBlock) -> uvfs::Result<StatFs> {
        Ok(StatFs::default())
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Root,
    Sub,
    Hello,
}

struct MapInode {
    kind: Kind,
    hello: &'static [u8],
}

fn node(sb: &SbRef, kind: Kind, hello: &'static [u8]) -> Arc<Inode> {
    let (ino, file_type, perm, nlink) = match kind {
        Kind::Root => (1, FileType::Directory, 0o777, 3),
        Kind::Sub => (2, FileType::Directory, 0o777, 2),
        Kind::Hello => (3, FileType::Regular, 0o666, 1),
    };
    let init = InodeInit {
        ino,
        file_type,
        perm,
        uid: 0,
        gid: 0,
        rdev: 0,
        nlink,
    };
    let inode = Inode::new(sb, init, Box::new(MapInode { kind, hello }));
    if kind == Kind::Hello {
        inode.write_attrs(|w| w.set_size(hello.len() as u64));
    }
    inode
}

impl InodeOps for MapInode {
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn lookup(&self, dir: &Inode, name: &[u8]) -> uvfs::Result<Option<Arc<Inode>>> {
        let kind = match (self.kind, name) {
            (Kind::Root, b"hello") => Kind::Hello,
            (Kind::Root, b"sub") => Kind::Sub,
            (Kind::Root | Kind::Sub, _) => return Ok(None),
            (Kind::Hello, _) => return Err(Errno::ENOTDIR),
        };
        Ok(Some(node(dir.sb(), kind, self.hello)))
    }
    fn open(&self, _inode: &Arc<Inode>, _flags: OpenFlags) -> uvfs::Result<Box<dyn FileOps>> {
        Ok(Box::new(MapFile(self.hello)))
    }
}

/// Reads `hello`; every other file operation keeps its default.
struct MapFile(&'static [u8]);

impl FileOps for MapFile {
    fn read(&self, _file: &FileDescription, buf: &mut [u8], pos: u64) -> uvfs::Result<usize> {
        let start = usize::try_from(pos).unwrap_or(usize::MAX).min(self.0.len());
        let n = buf.len().min(self.0.len() - start);
        buf[..n].copy_from_slice(&self.0[start..start + n]);
        Ok(n)
    }
}

/// A tmpfs root with `/m` (a directory) and `/file` (a regular file), and root's task.
fn setup() -> (Vfs, Task) {
    let vfs = Vfs::new();
    let t = vfs.task(Cred::root());
    t.mkdirat(AT_FDCWD, "/m", 0o755).unwrap();
    let fd = t
        .openat(
            AT_FDCWD,
            "/file",
            OpenFlags::CREAT | OpenFlags::WRONLY,
            0o644,
        )
        .unwrap();
    t.close(fd).unwrap();
    (vfs, t)
}

fn mount(t: &Task, fstype: &str, target: &str) -> uvfs::Result<()> {
    t.mount(None, target, Some(fstype), MountFlags::empty(), None)
}

fn read_all(t: &Task, path: &str) -> uvfs::Result<Vec<u8>> {
    let fd = t.openat(AT_FDCWD, path, OpenFlags::RDONLY, 0)?;
    let mut buf = [0u8; 64];
    let r = t.pread(fd, &mut buf, 0);
    t.close(fd)?;
    Ok(buf[..r?].to_vec())
}

/// An operation the filesystem leaves out gets the errno Linux's generic code gives for an
/// inode without it. Oracle: the host kernel (6.18) on debugfs, whose directories have only
/// `lookup`: `open(O_CREAT)` and `mknod(S_IFREG)` EACCES; `mkdir`, `symlink`, `mkfifo`,
/// `link`, `unlink` EPERM; and fs/namei.c's `vfs_rmdir()`/`vfs_rename()` (EPERM), fs/read_write.c's
/// `vfs_write()` for a file without `write` (EINVAL).
#[test]
fn missing_operations_give_linuxs_generic_errnos() {
    let (vfs, t) = setup();
    vfs.register_filesystem(MapFsType::new("mapfs", b"hi\n"))
        .unwrap();
    mount(&t, "mapfs", "/m").unwrap();
    let creat = t.openat(
        AT_FDCWD,
        "/m/new",
        OpenFlags::CREAT | OpenFlags::WRONLY,
        0o644,
    );
    assert_eq!(creat, Err(Errno::EACCES));
    assert_eq!(
        t.mknodat(AT_FDCWD, "/m/new", 0o100644, 0),
        Err(Errno::EACCES)
    );
    assert_eq!(
        t.mknodat(AT_FDCWD, "/m/new", 0o010644, 0),
        Err(Errno::EPERM)
    );
    assert_eq!(t.mkdirat(AT_FDCWD, "/m/new", 0o755), Err(Errno::EPERM));
    assert_eq!(t.symlinkat("x", AT_FDCWD, "/m/new"), Err(Errno::EPERM));
    let link = t.linkat(AT_FDCWD, "/m/hello", AT_FDCWD, "/m/new", AtFlags::empty());
    assert_eq!(link, Err(Errno::EPERM));
    assert_eq!(
        t.unlinkat(AT_FDCWD, "/m/hello", AtFlags::empty()),
        Err(Errno::EPERM)
    );
    assert_eq!(
        t.unlinkat(AT_FDCWD, "/m/sub", AtFlags::REMOVEDIR),
        Err(Errno::EPERM)
    );
    let rename = t.renameat2(
        AT_FDCWD,
        "/m/hello",
        AT_FDCWD,
        "/m/new",
        RenameFlags::empty(),
    );
    assert_eq!(rename, Err(Errno::EPERM));
    let fd = t.openat(AT_FDCWD, "/m/hello", OpenFlags::RDWR, 0).unwrap();
    assert_eq!(t.write(fd, b"x"), Err(Errno::EINVAL));
    t.close(fd).unwrap();
    // Nothing of the above changed the tree.
    assert_eq!(read_all(&t, "/m/hello").unwrap(), b"hi\n");
    assert_eq!(t.stat("/m/new"), Err(Errno::ENOENT));
}

/// Names are unique (Linux: `register_filesystem()` says EBUSY), tmpfs's included; an
/// unknown type is ENODEV and a missing one EINVAL (`do_new_mount()`); an unregistered type
/// can no longer be mounted, but its mounts keep working.
#[test]
fn registry_names_are_unique_and_unregistering_keeps_mounts() {
    let (vfs, t) = setup();
    let ty = MapFsType::new("mapfs", b"hi\n");
    vfs.register_filesystem(ty.clone()).unwrap();
    assert_eq!(vfs.register_filesystem(ty.clone()), Err(Errno::EBUSY));
    let fake_tmpfs = MapFsType::new("tmpfs", b"not tmpfs\n");
    assert_eq!(vfs.register_filesystem(fake_tmpfs), Err(Errno::EBUSY));
    for bad in ["", "a/b", "a\0b"] {
        let r = vfs.register_filesystem(MapFsType::new(bad, b""));
        assert_eq!(r, Err(Errno::EINVAL), "{bad:?}");
    }
    assert_eq!(mount(&t, "nosuchfs", "/m"), Err(Errno::ENODEV));
    assert_eq!(
        t.mount(None, "/m", None, MountFlags::empty(), None),
        Err(Errno::EINVAL)
    );
    // tmpfs still mounts as tmpfs.
    mount(&t, "tmpfs", "/m").unwrap();
    assert_eq!(t.stat("/m/hello"), Err(Errno::ENOENT));
    mount(&t, "mapfs", "/m").unwrap();
    vfs.unregister_filesystem("mapfs").unwrap();
    assert_eq!(vfs.unregister_filesystem("mapfs"), Err(Errno::EINVAL));
    assert_eq!(mount(&t, "mapfs", "/file"), Err(Errno::ENODEV));
    assert_eq!(read_all(&t, "/m/hello").unwrap(), b"hi\n");
    assert_eq!(ty.calls.load(Ordering::SeqCst), 1);
}

/// Each name mounts its own type.
#[test]
fn each_name_mounts_its_own_type() {
    let (vfs, t) = setup();
    let (a, b) = (
        MapFsType::new("fs-a", b"a\n"),
        MapFsType::new("fs-b", b"b\n"),
    );
    vfs.register_filesystem(a.clone()).unwrap();
    vfs.register_filesystem(b.clone()).unwrap();
    t.mkdirat(AT_FDCWD, "/n", 0o755).unwrap();
    mount(&t, "fs-b", "/m").unwrap();
    mount(&t, "fs-a", "/n").unwrap();
    assert_eq!(read_all(&t, "/m/hello").unwrap(), b"b\n");
    assert_eq!(read_all(&t, "/n/hello").unwrap(), b"a\n");
    assert_eq!(
        (
            a.calls.load(Ordering::SeqCst),
            b.calls.load(Ordering::SeqCst)
        ),
        (1, 1)
    );
}

/// `get_tree` is told the source, the options, the flags and the mounting credentials; the
/// VFS applies `MS_RDONLY` to the new superblock itself.
#[test]
fn get_tree_sees_source_data_flags_and_creds() {
    let (vfs, root) = setup();
    let ty = MapFsType::new("mapfs", b"hi\n");
    vfs.register_filesystem(ty.clone()).unwrap();
    let mut admin = Cred::user(1000, 1000, &[]);
    admin.caps = Capabilities::SYS_ADMIN;
    admin.permitted = Capabilities::SYS_ADMIN;
    let user = vfs.task(admin);
    let flags = MountFlags::RDONLY | MountFlags::NOSUID;
    user.mount(Some(b"the-source"), "/m", Some("mapfs"), flags, None)
        .unwrap();
    assert_eq!(
        *ty.seen.lock().unwrap(),
        [Seen {
            source: Some(b"the-source".to_vec()),
            data: None,
            flags,
            fsuid: 1000,
        }]
    );
    let w = user.openat(AT_FDCWD, "/m/hello", OpenFlags::WRONLY, 0);
    assert_eq!(w, Err(Errno::EROFS));
    assert_eq!(user.mkdirat(AT_FDCWD, "/m/x", 0o755), Err(Errno::EROFS));
    // tmpfs, a registered type too, gives its root to the mounting task's fsuid and fsgid.
    root.mkdirat(AT_FDCWD, "/t", 0o755).unwrap();
    mount(&user, "tmpfs", "/t").unwrap();
    let st = user.stat("/t").unwrap();
    assert_eq!((st.uid, st.gid, st.mode), (1000, 1000, 0o41777));
}

/// Permission, then the target, come before the filesystem is asked for anything (Linux:
/// `path_mount()`'s `may_mount()` before `do_new_mount()`'s `get_tree`): a refused mount
/// makes no instance.
#[test]
fn a_mount_refused_before_the_type_makes_no_instance() {
    let (vfs, t) = setup();
    let ty = MapFsType::new("mapfs", b"hi\n");
    vfs.register_filesystem(ty.clone()).unwrap();
    let user = vfs.task(Cred::user(1000, 1000, &[]));
    assert_eq!(mount(&user, "mapfs", "/m"), Err(Errno::EPERM));
    assert_eq!(mount(&t, "mapfs", "/missing"), Err(Errno::ENOENT));
    assert_eq!(ty.calls.load(Ordering::SeqCst), 0);
    assert_eq!(t.stat("/m/hello"), Err(Errno::ENOENT));
}

/// A mount refused after `get_tree` (over a non-directory, or of a root that is not a
/// directory: Linux's `graft_tree()` ENOTDIR) frees the instance it made, and `get_tree`'s
/// own error reaches the caller.
#[test]
fn a_mount_refused_after_get_tree_frees_the_instance() {
    let (vfs, t) = setup();
    let ty = MapFsType::new("mapfs", b"hi\n");
    vfs.register_filesystem(ty.clone()).unwrap();
    assert_eq!(mount(&t, "mapfs", "/file"), Err(Errno::ENOTDIR));
    let fileroot = t.mount(
        None,
        "/m",
        Some("mapfs"),
        MountFlags::empty(),
        Some("fileroot"),
    );
    assert_eq!(fileroot, Err(Errno::ENOTDIR));
    let bad = t.mount(None, "/m", Some("mapfs"), MountFlags::empty(), Some("bad"));
    assert_eq!(bad, Err(Errno::EINVAL));
    assert_eq!(ty.calls.load(Ordering::SeqCst), 3);
    assert_eq!(
        ty.live.load(Ordering::SeqCst),
        0,
        "a refused instance lives on"
    );
    // A mounted instance lives until its unmount.
    mount(&t, "mapfs", "/m").unwrap();
    assert_eq!(ty.live.load(Ordering::SeqCst), 1);
    t.umount2("/m", uvfs::abi::UmountFlags::empty()).unwrap();
    assert_eq!(ty.live.load(Ordering::SeqCst), 0);
}

// ---- A writable filesystem outside the crate -------------------------------------------

/// `flatfs`: one directory of regular files, kept in memory; creates, writes, truncates and
/// unlinks, and nothing else (no subdirectories, links or renames).
struct FlatType;

impl FileSystemType for FlatType {
    fn name(&self) -> &str {
        "flatfs"
    }
    fn get_tree(&self, fc: &FsContext<'_>) -> uvfs::Result<Arc<Dentry>> {
        let sb = SuperBlock::new(Box::new(FlatSuper));
        let init = InodeInit {
            ino: sb.alloc_ino(),
            file_type: FileType::Directory,
            perm: 0o1777,
            uid: fc.cred.fsuid,
            gid: fc.cred.fsgid,
            rdev: 0,
            nlink: 2,
        };
        let dir = Flat::Dir(Mutex::new(std::collections::BTreeMap::new()));
        Ok(Dentry::new_root(Inode::new(&sb, init, Box::new(dir))))
    }
}

struct FlatSuper;

impl SuperOps for FlatSuper {
    fn fs_name(&self) -> &'static str {
        "flatfs"
    }
    fn statfs(&self, _sb: &SuperBlock) -> uvfs::Result<StatFs> {
        Ok(StatFs::default())
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// The private part of a flatfs inode. Its own locks rank below the inode locks the VFS
/// holds when it calls in, and are never held across a call out.
enum Flat {
    Dir(Mutex<std::collections::BTreeMap<Vec<u8>, Arc<Inode>>>),
    File(Mutex<Vec<u8>>),
}

impl Flat {
    fn of(inode: &Inode) -> &Flat {
        inode.ops().as_any().downcast_ref().expect("a flatfs inode")
    }
    fn entries(&self) -> uvfs::Result<&Mutex<std::collections::BTreeMap<Vec<u8>, Arc<Inode>>>> {
        match self {
            Flat::Dir(e) => Ok(e),
            Flat::File(_) => Err(Errno::ENOTDIR),
        }
    }
    fn data(&self) -> uvfs::Result<&Mutex<Vec<u8>>> {
        match self {
            Flat::File(d) => Ok(d),
            Flat::Dir(_) => Err(Errno::EISDIR),
        }
    }
}

impl InodeOps for Flat {
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn lookup(&self, _dir: &Inode, name: &[u8]) -> uvfs::Result<Option<Arc<Inode>>> {
        Ok(self.entries()?.lock().unwrap().get(name).cloned())
    }
    /// The VFS decided mode, owner and group (`new`); the directory is stamped as Linux's
    /// filesystems stamp it.
    fn create(
        &self,
        dir: &Inode,
        name: &uvfs::vfs::Name,
        new: &uvfs::vfs::NewInode<'_>,
    ) -> uvfs::Result<Arc<Inode>> {
        let init = InodeInit {
            ino: dir.sb().alloc_ino(),
            file_type: FileType::Regular,
            perm: new.mode,
            uid: new.uid,
            gid: new.gid,
            rdev: 0,
            nlink: 1,
        };
        let inode = Inode::new(dir.sb(), init, Box::new(Flat::File(Mutex::new(Vec::new()))));
        let entries = self.entries()?;
        entries.lock().unwrap().insert(name.to_vec(), inode.clone());
        dir.touch_ctime(uvfs::vfs::Stamp::CtimeMtime);
        Ok(inode)
    }
    fn unlink(&self, dir: &Inode, name: &[u8], victim: &Inode) -> uvfs::Result<()> {
        self.entries()?.lock().unwrap().remove(name);
        victim.write_attrs(|w| w.add_nlink(-1));
        dir.touch_ctime(uvfs::vfs::Stamp::CtimeMtime);
        Ok(())
    }
    /// A new size resizes the data first (Linux: `simple_setattr()` after
    /// `truncate_setsize()`).
    fn setattr(&self, inode: &Inode, attr: &uvfs::vfs::SetAttr) -> uvfs::Result<()> {
        if let Some(size) = attr.size {
            let len = usize::try_from(size).map_err(|_| Errno::EFBIG)?;
            self.data()?.lock().unwrap().resize(len, 0);
        }
        attr.apply(inode);
        Ok(())
    }
    fn open(&self, _inode: &Arc<Inode>, _flags: OpenFlags) -> uvfs::Result<Box<dyn FileOps>> {
        Ok(Box::new(FlatFile))
    }
}

/// An open flatfs file or directory: its data is found through the file's inode.
struct FlatFile;

impl FileOps for FlatFile {
    fn read(&self, file: &FileDescription, buf: &mut [u8], pos: u64) -> uvfs::Result<usize> {
        let data = Flat::of(file.inode()).data()?.lock().unwrap();
        let start = usize::try_from(pos).unwrap_or(usize::MAX).min(data.len());
        let n = buf.len().min(data.len() - start);
        buf[..n].copy_from_slice(&data[start..start + n]);
        Ok(n)
    }

    /// Stores the bytes, then keeps the inode's size and stamps true (Linux: the
    /// filesystem's `write_iter` calls `file_update_time()` and `i_size_write()`).
    fn write(
        &self,
        file: &FileDescription,
        buf: &[u8],
        pos: uvfs::vfs::WritePos,
    ) -> uvfs::Result<(usize, u64)> {
        let inode = file.inode();
        let mut data = Flat::of(inode).data()?.lock().unwrap();
        let at = match pos {
            uvfs::vfs::WritePos::At(p) => usize::try_from(p).map_err(|_| Errno::EFBIG)?,
            uvfs::vfs::WritePos::Append => data.len(),
        };
        let end = at.checked_add(buf.len()).ok_or(Errno::EFBIG)?;
        if data.len() < end {
            data.resize(end, 0);
        }
        data[at..end].copy_from_slice(buf);
        let size = data.len() as u64;
        inode.write_attrs(|w| w.set_size(size));
        drop(data);
        inode.update_mtime_ctime();
        Ok((buf.len(), end as u64))
    }

    fn readdir(
        &self,
        file: &FileDescription,
        pos: &mut u64,
        sink: &mut dyn FnMut(uvfs::vfs::DirEntry<'_>) -> bool,
    ) -> uvfs::Result<()> {
        let inode = file.inode();
        let entries = Flat::of(inode).entries()?.lock().unwrap();
        // `.` and `..` (the root: itself), then the entries in name order.
        let dir = FileType::Directory.dirent_type();
        let mut all = vec![
            (&b"."[..], inode.ino(), dir),
            (&b".."[..], inode.ino(), dir),
        ];
        for (name, i) in entries.iter() {
            all.push((name, i.ino(), i.file_type().dirent_type()));
        }
        for (name, ino, d_type) in all.into_iter().skip(*pos as usize) {
            let e = uvfs::vfs::DirEntry {
                name,
                ino,
                d_type,
                next_pos: *pos + 1,
            };
            if !sink(e) {
                break;
            }
            *pos += 1;
        }
        Ok(())
    }
}

/// A writable filesystem outside the crate gets the whole file API: create with the VFS's
/// mode and owner, write, append, read, truncate, list, unlink; with its timestamps, sizes
/// and link counts kept by the filesystem. Oracle: what tmpfs gives for the same calls.
#[test]
fn a_writable_filesystem_outside_the_crate_works_like_tmpfs() {
    let (vfs, t) = setup();
    vfs.register_filesystem(Arc::new(FlatType)).unwrap();
    t.mkdirat(AT_FDCWD, "/t", 0o755).unwrap();
    mount(&t, "flatfs", "/m").unwrap();
    mount(&t, "tmpfs", "/t").unwrap();
    let user = vfs.task(Cred::user(1000, 1000, &[]));
    let mut seen = Vec::new();
    for dir in ["/m", "/t"] {
        let f = format!("{dir}/f");
        let fd = user
            .openat(AT_FDCWD, &f, OpenFlags::CREAT | OpenFlags::RDWR, 0o666)
            .unwrap();
        assert_eq!(user.write(fd, b"hello"), Ok(5));
        user.close(fd).unwrap();
        let fd = user
            .openat(AT_FDCWD, &f, OpenFlags::WRONLY | OpenFlags::APPEND, 0)
            .unwrap();
        assert_eq!(user.pwrite(fd, b", world", 0), Ok(7));
        let appended = user.fstat(fd).unwrap().size;
        user.ftruncate(fd, 9).unwrap();
        user.close(fd).unwrap();
        let st = user.stat(&f).unwrap();
        let data = read_all(&user, &f).unwrap();
        let excl = user.openat(AT_FDCWD, &f, OpenFlags::CREAT | OpenFlags::EXCL, 0o600);
        // The sticky root: another user may not remove the file.
        let other = vfs.task(Cred::user(1001, 1001, &[]));
        let sticky = other.unlinkat(AT_FDCWD, &f, AtFlags::empty());
        let dirfd = user.openat(AT_FDCWD, dir, OpenFlags::DIRECTORY, 0).unwrap();
        let mut buf = [0u8; 256];
        let n = user.getdents64(dirfd, &mut buf).unwrap();
        let names: Vec<Vec<u8>> = uvfs::abi::Dirent::parse(&buf[..n])
            .into_iter()
            .map(|d| d.name)
            .collect();
        user.close(dirfd).unwrap();
        let fd = user.openat(AT_FDCWD, &f, OpenFlags::RDONLY, 0).unwrap();
        user.unlinkat(AT_FDCWD, &f, AtFlags::empty()).unwrap();
        let after = (user.stat(&f), user.fstat(fd).map(|s| s.nlink));
        user.close(fd).unwrap();
        seen.push((
            st.mode, st.uid, st.gid, appended, st.size, st.nlink, data, excl, sticky, names, after,
        ));
    }
    assert_eq!(seen[0], seen[1], "flatfs against tmpfs");
    assert_eq!(seen[0].0, 0o100644);
    assert_eq!((seen[0].3, seen[0].4), (12, 9));
    assert_eq!(seen[0].6, b"hello, wo");
}
