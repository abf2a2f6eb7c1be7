//! Trees in and out (`uvfs::tree`): a host fixture imported into uvfs and exported back is the
//! same tree, by `diff -r --no-dereference` and by a comparison of every entry's `lstat`, link
//! target, extended attributes, hole map and hard-link grouping; the same through a tar
//! archive; and `Vfs::snapshot` gives an independent copy.
//!
//! Oracle: the host kernel. The fixture is built with host calls on a private tmpfs (mounted on
//! a temporary directory; root needed, as CI has), and both ends of each round trip are read
//! back with host calls. Without root the fixture lives in a plain temporary directory, owners
//! are not preserved and `trusted.*` is left out: the test says so on stderr and still runs.

use std::collections::{BTreeMap, BTreeSet};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::process::Command;

use rustix::fs::{self as rfs, AtFlags, Mode, OFlags, SeekFrom, Timestamps, CWD};
use uvfs::abi::{AtFlags as UAtFlags, OpenFlags, AT_FDCWD};
use uvfs::tree::{self, Options, SkipReason};
use uvfs::{Cred, Vfs};

fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// A private host directory: a tmpfs mounted on a new temporary directory when root (unmounted
/// and removed on drop, also when a test fails), else the plain directory.
///
/// The tmpfs is `noatime`: reading a symlink (the copy's `readlinkat`, and the comparison's)
/// sets its atime, and no call reads a link without that; explicit times still apply.
struct HostDir {
    path: PathBuf,
    mounted: bool,
}

impl HostDir {
    fn new(tag: &str) -> HostDir {
        let path = std::env::temp_dir().join(format!(
            "uvfs-tree-{}-{}-{tag}",
            std::process::id(),
            std::thread::current()
                .name()
                .unwrap_or("t")
                .replace("::", "-")
        ));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).expect("create the temporary directory");
        let mounted = is_root()
            && Command::new("mount")
                .args(["-t", "tmpfs", "-o", "mode=755,noatime", "tmpfs"])
                .arg(&path)
                .status()
                .map(|s| s.success())
                .unwrap_or(false);
        if !mounted {
            eprintln!(
                "note: {} is a plain directory, not a private tmpfs (not root or mount failed)",
                path.display()
            );
        }
        HostDir { path, mounted }
    }
}

impl Drop for HostDir {
    fn drop(&mut self) {
        if self.mounted {
            // Every fd of the tests is close-on-exec, so a child that another test forks does
            // not keep the mount busy; a lazy unmount is the fallback all the same.
            let ok = Command::new("umount")
                .arg(&self.path)
                .status()
                .map(|s| s.success())
                .unwrap_or(false);
            if !ok {
                let _ = Command::new("umount").arg("-l").arg(&self.path).status();
            }
        }
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

fn open_dir(dir: &OwnedFd, name: &[u8]) -> OwnedFd {
    rfs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::NOATIME | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .expect("open a fixture directory")
}

fn write_at(dir: &OwnedFd, name: &[u8], parts: &[(u64, &[u8])], size: u64) {
    let fd = rfs::openat(
        dir,
        name,
        OFlags::CREATE | OFlags::EXCL | OFlags::WRONLY | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o644),
    )
    .expect("create a fixture file");
    for (off, data) in parts {
        rustix::io::pwrite(&fd, data, *off).expect("write a fixture file");
    }
    rfs::ftruncate(&fd, size).expect("size a fixture file");
}

fn set_times(dir: &OwnedFd, name: &[u8], n: i64) {
    let t = Timestamps {
        last_access: rfs::Timespec {
            tv_sec: 1_000_000_000 + n * 1000,
            tv_nsec: 123_456_789 + n,
        },
        last_modification: rfs::Timespec {
            tv_sec: 1_100_000_000 + n * 1000,
            tv_nsec: 987_654_321 - n,
        },
    };
    rfs::utimensat(dir, name, &t, AtFlags::SYMLINK_NOFOLLOW).expect("set fixture times");
}

/// Names of the odd-name directory: not UTF-8, a newline, a space, a leading dash, 255 bytes.
fn odd_names() -> Vec<Vec<u8>> {
    vec![
        b"\xff\xfe".to_vec(),
        b"new\nline".to_vec(),
        b"with space".to_vec(),
        b"-rf".to_vec(),
        vec![b'n'; 255],
    ]
}

/// Depth of the long-path chain: 18 names of 250 bytes, past `PATH_MAX` (4096).
const LONG_DEPTH: usize = 18;

/// Builds the fixture in `root` (see the module doc); every entry gets its own atime and mtime
/// with nanoseconds, directories after their children.
fn build_fixture(root: &Path) {
    let r = rfs::openat(
        CWD,
        root,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .expect("open the fixture root");
    rfs::mkdirat(&r, "dir1", Mode::from_raw_mode(0o755)).expect("mkdir dir1");
    rfs::mkdirat(&r, "dir2", Mode::from_raw_mode(0o755)).expect("mkdir dir2");
    rfs::mkdirat(&r, "odd", Mode::from_raw_mode(0o750)).expect("mkdir odd");
    let d1 = open_dir(&r, b"dir1");
    let d2 = open_dir(&r, b"dir2");
    let odd = open_dir(&r, b"odd");
    let text: Vec<u8> = (0..10_000u32).flat_map(|i| i.to_le_bytes()).collect();
    write_at(&d1, b"data", &[(0, &text)], text.len() as u64);
    write_at(&d1, b"empty", &[], 0);
    let page = vec![0xabu8; 4096];
    let mib = 1 << 20;
    write_at(
        &d1,
        b"sparse",
        &[(mib, &page), (8 * mib, &page)],
        9 * mib + 4096,
    );
    // Thirty data pages between holes: past the four segments a GNU tar header holds.
    let pages: Vec<(u64, &[u8])> = (0..30u64)
        .map(|k| (k * 2 * 4096 + 4096, &page[..]))
        .collect();
    write_at(&d1, b"many_holes", &pages, 64 * 4096);
    write_at(&d1, b"hl1", &[(0, b"linked\n")], 7);
    rfs::linkat(&d1, "hl1", &d1, "hl2", AtFlags::empty()).expect("link hl2");
    rfs::linkat(&d1, "hl1", &d1, "hl3", AtFlags::empty()).expect("link hl3");
    rfs::linkat(&d1, "hl1", &d2, "hl4", AtFlags::empty()).expect("link hl4");
    write_at(&d1, b"setuid", &[(0, b"#!/bin/sh\n")], 10);
    rfs::chmodat(&d1, "setuid", Mode::from_raw_mode(0o4755), AtFlags::empty()).expect("chmod");
    write_at(&d2, b"private", &[(0, b"secret")], 6);
    write_at(&d2, b"before_1970", &[(0, b"old")], 3);
    rfs::chmodat(&d2, "private", Mode::from_raw_mode(0o600), AtFlags::empty()).expect("chmod");
    rfs::mkdirat(&d2, "sticky", Mode::from_raw_mode(0o755)).expect("mkdir sticky");
    rfs::chmodat(&d2, "sticky", Mode::from_raw_mode(0o1777), AtFlags::empty()).expect("chmod");
    rfs::symlinkat("dir1/data", &r, "sym_file").expect("symlink");
    rfs::symlinkat("does/not/exist", &r, "dangling").expect("symlink");
    rfs::symlinkat("dir1", &r, "sym_dir").expect("symlink");
    // A target that is not a normal path: kept byte for byte.
    rfs::symlinkat("dir1//./x/", &r, "sym_odd").expect("symlink");
    rfs::mkfifoat(&r, "fifo", Mode::from_raw_mode(0o640)).expect("mkfifo");
    for (i, n) in odd_names().iter().enumerate() {
        write_at(&odd, n, &[(0, n)], n.len() as u64);
        set_times(&odd, n, 40 + i as i64);
    }
    for (fd, name) in [(&d1, "data"), (&d1, ".")] {
        rfs::setxattr(
            format!(
                "/proc/self/fd/{}/{name}",
                std::os::fd::AsRawFd::as_raw_fd(fd)
            ),
            "user.a",
            b"alpha",
            rfs::XattrFlags::empty(),
        )
        .expect("setxattr user.a (the fixture's filesystem must support user xattrs)");
        rfs::setxattr(
            format!(
                "/proc/self/fd/{}/{name}",
                std::os::fd::AsRawFd::as_raw_fd(fd)
            ),
            "user.b",
            b"\x00binary\xff",
            rfs::XattrFlags::empty(),
        )
        .expect("setxattr user.b");
    }
    if is_root() {
        // A symlink's xattr (trusted.* only: user.* is refused on symlinks) and other owners.
        let p = format!(
            "/proc/self/fd/{}/sym_file",
            std::os::fd::AsRawFd::as_raw_fd(&r)
        );
        rfs::lsetxattr(p, "trusted.t", b"on a link", rfs::XattrFlags::empty())
            .expect("lsetxattr trusted.t");
        let (u, g) = (
            Some(rustix::process::Uid::from_raw(1234)),
            Some(rustix::process::Gid::from_raw(5678)),
        );
        rfs::chownat(&d2, "private", u, g, AtFlags::empty()).expect("chown");
        rfs::chownat(&r, "dangling", u, g, AtFlags::SYMLINK_NOFOLLOW).expect("chown");
        rfs::chownat(&r, "fifo", u, None, AtFlags::SYMLINK_NOFOLLOW).expect("chown");
        // chown cleared set-user-ID of setuid? No: it was not chowned. Give dir2 a group.
        rfs::chownat(&r, "dir2", None, g, AtFlags::empty()).expect("chown");
    }
    // A chain of directories whose path passes PATH_MAX, with a file and a link at the bottom.
    let mut cur = open_dir(&r, b".");
    let long = vec![b'L'; 250];
    for _ in 0..LONG_DEPTH {
        rfs::mkdirat(&cur, long.as_slice(), Mode::from_raw_mode(0o755)).expect("mkdir long");
        cur = open_dir(&cur, &long);
    }
    write_at(&cur, b"deep", &[(0, b"deep file")], 9);
    rfs::linkat(&d1, "data", &cur, "deep_link", AtFlags::empty()).expect("link deep");
    set_times(&cur, b"deep", 90);
    // Times: leaves first, then directories bottom-up.
    for (fd, names) in [
        (
            &d1,
            &["data", "empty", "sparse", "many_holes", "hl1", "setuid"] as &[&str],
        ),
        (&d2, &["private", "sticky"]),
        (&r, &["sym_file", "dangling", "sym_dir", "sym_odd", "fifo"]),
    ] {
        for (i, n) in names.iter().enumerate() {
            set_times(fd, n.as_bytes(), i as i64);
        }
    }
    let old = Timestamps {
        last_access: rfs::Timespec {
            tv_sec: -1_000_000,
            tv_nsec: 500_000_001,
        },
        last_modification: rfs::Timespec {
            tv_sec: -1,
            tv_nsec: 999_999_999,
        },
    };
    rfs::utimensat(&d2, "before_1970", &old, AtFlags::empty()).expect("set times before 1970");
    set_long_dir_times(&r, &long, LONG_DEPTH);
    for (i, n) in ["dir1", "dir2", "odd"].iter().enumerate() {
        set_times(&r, n.as_bytes(), 60 + i as i64);
    }
    set_times(&r, b".", 99);
}

fn set_long_dir_times(r: &OwnedFd, long: &[u8], depth: usize) {
    let mut fds = vec![open_dir(r, b".")];
    for _ in 0..depth {
        let next = open_dir(fds.last().expect("a level"), long);
        fds.push(next);
    }
    for level in (0..depth).rev() {
        set_times(&fds[level], long, 70 + level as i64);
    }
}

/// What the comparison keeps of one entry.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Info {
    mode: u32,
    uid: u32,
    gid: u32,
    size: i64,
    nlink: u64,
    atime: (i64, u32),
    mtime: (i64, u32),
    target: Option<Vec<u8>>,
    xattrs: BTreeMap<Vec<u8>, Vec<u8>>,
    /// Data segments by SEEK_DATA/SEEK_HOLE, and the allocated blocks (tmpfs counts pages).
    segments: Vec<(u64, u64)>,
    blocks: u64,
    /// FNV-1a of a regular file's bytes (`diff -r` cannot reach past `PATH_MAX`).
    content: u64,
}

fn fnv(fd: &OwnedFd) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut buf = vec![0u8; 1 << 16];
    let mut off = 0;
    loop {
        let n = rustix::io::pread(fd, &mut buf[..], off).expect("read a file to compare");
        if n == 0 {
            return h;
        }
        for &b in &buf[..n] {
            h = (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
        }
        off += n as u64;
    }
}

/// Every entry of a host tree by its path in the tree, and the hard-link groups (sets of paths
/// sharing an inode). Walks with directory fds and `O_NOATIME`, so reading changes no atime.
struct Snapshot {
    entries: BTreeMap<Vec<u8>, Info>,
    groups: BTreeSet<Vec<Vec<u8>>>,
}

fn xattrs_at(dir: &OwnedFd, name: &[u8]) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut p = format!("/proc/self/fd/{}/", std::os::fd::AsRawFd::as_raw_fd(dir)).into_bytes();
    p.extend_from_slice(name);
    let mut list = vec![0u8; 4096];
    let n = rfs::llistxattr(p.as_slice(), &mut list[..]).expect("llistxattr");
    let mut out = BTreeMap::new();
    for x in list[..n].split(|&b| b == 0).filter(|x| !x.is_empty()) {
        let mut v = vec![0u8; 65536];
        let m = rfs::lgetxattr(p.as_slice(), x, &mut v[..]).expect("lgetxattr");
        out.insert(x.to_vec(), v[..m].to_vec());
    }
    out
}

fn segments_of(fd: &OwnedFd, size: u64) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    let mut off = 0;
    while off < size {
        let Ok(d) = rfs::seek(fd, SeekFrom::Data(off)) else {
            break;
        };
        let h = rfs::seek(fd, SeekFrom::Hole(d)).expect("SEEK_HOLE");
        out.push((d, h - d));
        off = h;
    }
    out
}

fn scan(root: &Path) -> Snapshot {
    let r = rfs::openat(
        CWD,
        root,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOATIME | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .expect("open a tree to compare");
    let mut entries = BTreeMap::new();
    let mut by_ino: BTreeMap<u64, Vec<Vec<u8>>> = BTreeMap::new();
    let parent = open_dir(&r, b".");
    visit(&parent, b".", b".".to_vec(), &mut entries, &mut by_ino);
    let groups = by_ino
        .into_values()
        .filter(|g| g.len() > 1)
        .map(|mut g| {
            g.sort();
            g
        })
        .collect();
    Snapshot { entries, groups }
}

fn visit(
    parent: &OwnedFd,
    name: &[u8],
    rel: Vec<u8>,
    entries: &mut BTreeMap<Vec<u8>, Info>,
    by_ino: &mut BTreeMap<u64, Vec<Vec<u8>>>,
) {
    let st = rfs::statat(parent, name, AtFlags::SYMLINK_NOFOLLOW).expect("lstat");
    let kind = st.st_mode & 0o170000;
    let mut info = Info {
        mode: st.st_mode,
        uid: st.st_uid,
        gid: st.st_gid,
        size: st.st_size,
        nlink: st.st_nlink as u64,
        atime: (st.st_atime, st.st_atime_nsec as u32),
        mtime: (st.st_mtime, st.st_mtime_nsec as u32),
        target: None,
        xattrs: xattrs_at(parent, name),
        segments: Vec::new(),
        blocks: st.st_blocks as u64,
        content: 0,
    };
    if kind == 0o120000 {
        info.target = Some(
            rfs::readlinkat(parent, name, Vec::new())
                .expect("readlink")
                .into_bytes(),
        );
    }
    if kind != 0o040000 {
        by_ino.entry(st.st_ino).or_default().push(rel.clone());
    }
    if kind == 0o100000 {
        let fd = rfs::openat(
            parent,
            name,
            OFlags::RDONLY | OFlags::NOATIME | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .expect("open a file to compare");
        info.segments = segments_of(&fd, st.st_size as u64);
        info.content = fnv(&fd);
    }
    entries.insert(rel.clone(), info);
    if kind == 0o040000 {
        let dir = open_dir(parent, name);
        let mut names: Vec<Vec<u8>> = Vec::new();
        let mut d = rfs::Dir::read_from(&dir).expect("read a directory");
        while let Some(e) = d.read() {
            let n = e.expect("dirent").file_name().to_bytes().to_vec();
            if n != b"." && n != b".." {
                names.push(n);
            }
        }
        for n in names {
            let mut child = rel.clone();
            child.push(b'/');
            child.extend_from_slice(&n);
            visit(&dir, &n, child, entries, by_ino);
        }
    }
}

/// Asserts that two host trees are the same by the stat comparison (every field of [`Info`]
/// for every entry, and the hard-link groups), then by `diff -r --no-dereference`.
fn assert_same_tree(a: &Path, b: &Path) {
    let (sa, sb) = (scan(a), scan(b));
    let names_a: Vec<_> = sa.entries.keys().collect();
    let names_b: Vec<_> = sb.entries.keys().collect();
    assert_eq!(names_a, names_b, "the trees have different entries");
    // Without root the trees are on a filesystem without `noatime`, where every readlink
    // (the copy's and the comparison's) sets a symlink's atime: those are left out, loudly.
    let mask = !is_root();
    if mask {
        eprintln!("note: not root: symlink atimes are not compared");
    }
    for (k, ia) in &sa.entries {
        let mut ib = sb.entries[k].clone();
        if mask && ia.target.is_some() {
            ib.atime = ia.atime;
        }
        assert_eq!(ia, &ib, "entry {} differs", short(k));
    }
    let show = |g: &BTreeSet<Vec<Vec<u8>>>| -> Vec<Vec<String>> {
        g.iter()
            .map(|v| v.iter().map(|p| short(p)).collect())
            .collect()
    };
    assert_eq!(
        show(&sa.groups),
        show(&sb.groups),
        "hard-link groups differ"
    );
    // Last: diff reads every file and directory, which may move atimes. It cannot compare
    // FIFOs ("is a fifo while ... is a fifo", exit 1), and it names files by whole paths, so
    // it fails past PATH_MAX: the FIFO and the long chain are left to the comparison above.
    let out = Command::new("diff")
        .args([
            "-r",
            "--no-dereference",
            "-x",
            "fifo",
            "-x",
            &"L".repeat(250),
        ])
        .arg(a)
        .arg(b)
        .output()
        .expect("run diff");
    assert!(
        out.status.success(),
        "diff -r found differences:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A path for a message: lossy UTF-8, runs of the long chain's names shortened.
fn short(p: &[u8]) -> String {
    String::from_utf8_lossy(p).replace(&"L".repeat(250), "L*250")
}

fn fixture() -> HostDir {
    let h = HostDir::new("src");
    build_fixture(&h.path);
    h
}

#[test]
fn import_then_export_gives_the_same_tree() {
    let src = fixture();
    let vfs = Vfs::new();
    let task = vfs.task(Cred::root());
    let opts = Options::default();
    let rep = tree::import(&task, &src.path, "/imported", &opts).expect("import");
    assert_eq!(rep.hard_links, 4, "hl2, hl3, hl4 and deep_link: {rep:?}");
    assert_eq!(rep.symlinks, 4);
    assert_eq!(rep.specials, 1);
    assert_eq!(
        rep.hole_bytes,
        (9 * (1 << 20) + 4096 - 2 * 4096) + (64 - 30) * 4096,
        "{rep:?}"
    );
    assert_eq!(rep.xattrs, 4 + u64::from(is_root()), "{rep:?}");
    assert!(rep.skipped.is_empty(), "{:?}", rep.skipped);
    // The sparse file is sparse in uvfs too.
    let st = task.lstat("/imported/dir1/sparse").expect("stat sparse");
    assert_eq!(st.size, 9 * (1 << 20) + 4096);
    assert_eq!(st.blocks, 2 * 8, "two 4 KiB pages allocated");
    let out = HostDir::new("out");
    let rep2 = tree::export(&task, "/imported", &out.path, &opts).expect("export");
    assert_eq!(
        (rep2.files, rep2.dirs, rep2.hard_links, rep2.bytes),
        (rep.files, rep.dirs, rep.hard_links, rep.bytes)
    );
    assert_same_tree(&src.path, &out.path);
}

#[test]
fn a_snapshot_is_independent_of_its_original() {
    let src = fixture();
    let vfs = Vfs::new();
    let task = vfs.task(Cred::root());
    tree::import(&task, &src.path, "/t", &Options::default()).expect("import");
    // The snapshot first: exporting the original reads its symlinks, which sets their atimes.
    let snap = vfs.snapshot().expect("snapshot");
    let before = HostDir::new("before");
    tree::export(&task, "/t", &before.path, &Options::default()).expect("export before");
    let stask = snap.task(Cred::root());
    // Hard links are links in the snapshot itself (an export would hide a snapshot that
    // split them if the export split them too).
    let a = stask.lstat("/t/dir1/hl1").expect("stat hl1");
    let b = stask.lstat("/t/dir2/hl4").expect("stat hl4");
    assert_eq!((a.ino, a.nlink), (b.ino, 4), "one inode with four names");
    // So are holes, xattrs, set-id bits and times.
    let sparse = stask.lstat("/t/dir1/sparse").expect("stat sparse");
    assert_eq!(sparse.blocks, 16, "two pages of data, the rest holes");
    let mut v = [0u8; 16];
    let n = stask
        .lgetxattr("/t/dir1/data", "user.a", &mut v)
        .expect("xattr in the snapshot");
    assert_eq!(&v[..n], b"alpha");
    assert_eq!(
        stask.lstat("/t/dir1/setuid").expect("stat").mode & 0o7777,
        0o4755
    );
    let (o, c) = (
        task.lstat("/t/dir1").expect("stat"),
        stask.lstat("/t/dir1").expect("stat"),
    );
    assert_eq!(
        (o.atime, o.mtime),
        (c.atime, c.mtime),
        "directory times after children"
    );
    // Change the original: data, a hard link, a mode, a new file.
    let fd = task
        .openat(AT_FDCWD, "/t/dir1/hl1", OpenFlags::WRONLY, 0)
        .expect("open hl1");
    task.pwrite(fd, b"CHANGED", 0).expect("write");
    task.close(fd).expect("close");
    task.unlinkat(AT_FDCWD, "/t/dir2/hl4", UAtFlags::empty())
        .expect("unlink");
    task.fchmodat(AT_FDCWD, "/t/dir1/data", 0o600, UAtFlags::empty())
        .expect("chmod");
    task.mkdirat(AT_FDCWD, "/t/new", 0o755).expect("mkdir");
    let after_snap = HostDir::new("snap");
    tree::export(&stask, "/t", &after_snap.path, &Options::default()).expect("export snap");
    assert_same_tree(&before.path, &after_snap.path);
    // And the other way: change the snapshot, the original stays as it is now (kept in a
    // second snapshot, which does not read it through its own mount's atimes).
    let orig_now = vfs.snapshot().expect("second snapshot");
    stask
        .unlinkat(AT_FDCWD, "/t/dir1/sparse", UAtFlags::empty())
        .expect("unlink in snapshot");
    let fd = stask
        .openat(AT_FDCWD, "/t/dir1/data", OpenFlags::WRONLY, 0)
        .expect("open");
    stask.ftruncate(fd, 1).expect("truncate");
    stask.close(fd).expect("close");
    let (a, b) = (HostDir::new("orig1"), HostDir::new("orig2"));
    tree::export(
        &orig_now.task(Cred::root()),
        "/t",
        &a.path,
        &Options::default(),
    )
    .expect("export the reference");
    tree::export(&task, "/t", &b.path, &Options::default()).expect("export orig");
    assert_same_tree(&a.path, &b.path);
}

#[test]
fn a_snapshot_keeps_the_root_filesystem_not_its_submounts() {
    let vfs = Vfs::new();
    let t = vfs.task(Cred::root());
    t.mkdirat(AT_FDCWD, "/mnt", 0o755).expect("mkdir");
    t.mkdirat(AT_FDCWD, "/mnt/under", 0o755).expect("mkdir");
    t.mount(
        None,
        "/mnt",
        Some("tmpfs"),
        uvfs::abi::MountFlags::empty(),
        None,
    )
    .expect("mount");
    t.mkdirat(AT_FDCWD, "/mnt/over", 0o755).expect("mkdir");
    let snap = vfs.snapshot().expect("snapshot");
    let s = snap.task(Cred::root());
    assert!(
        s.stat("/mnt/under").is_ok(),
        "the covered directory is copied"
    );
    assert!(s.stat("/mnt/over").is_err(), "the submount is not");
}

#[test]
fn bad_destinations_and_sources_give_linux_errnos() {
    let vfs = Vfs::new();
    let task = vfs.task(Cred::root());
    let src = HostDir::new("bad");
    std::fs::write(src.path.join("f"), b"x").expect("write");
    let e = tree::import(&task, src.path.join("missing"), "/d", &Options::default())
        .expect_err("missing source");
    assert_eq!(e.raw_os_error(), Some(ENOENT), "{e}");
    let e = tree::import(&task, src.path.join("f"), "/d", &Options::default())
        .expect_err("file source");
    assert_eq!(e.raw_os_error(), Some(ENOTDIR), "{e}");
    let fd = task
        .openat(
            AT_FDCWD,
            "/file",
            OpenFlags::CREAT | OpenFlags::WRONLY,
            0o644,
        )
        .expect("create");
    task.close(fd).expect("close");
    let e = tree::import(&task, &src.path, "/file", &Options::default()).expect_err("dest file");
    assert_eq!(e.raw_os_error(), Some(ENOTDIR), "{e}");
    let e = tree::import(&task, &src.path, "/no/such/parent", &Options::default())
        .expect_err("no parent");
    assert_eq!(e.raw_os_error(), Some(ENOENT), "{e}");
    // A destination whose entry exists: EEXIST, nothing replaced, the path named.
    tree::import(&task, &src.path, "/d", &Options::default()).expect("first import");
    let e = tree::import(&task, &src.path, "/d", &Options::default()).expect_err("again");
    assert_eq!(e.raw_os_error(), Some(EEXIST), "{e}");
    assert_eq!(e.path(), Path::new("/d/f"), "{e}");
    assert!(e.to_string().contains("/d/f"), "{e}");
    let io: std::io::Error = e.into();
    assert_eq!(io.kind(), std::io::ErrorKind::AlreadyExists);
}

const ENOENT: i32 = 2;
const EPERM: i32 = 1;
const EEXIST: i32 = 17;
const ENOTDIR: i32 = 20;
const ENOSPC: i32 = 28;

#[test]
fn a_full_tmpfs_is_enospc_not_a_panic() {
    let src = HostDir::new("big");
    std::fs::write(src.path.join("big"), vec![7u8; 3 << 20]).expect("write");
    let vfs = Vfs::with_root_options(Some("size=1m")).expect("small tmpfs");
    let task = vfs.task(Cred::root());
    let e = tree::import(&task, &src.path, "/d", &Options::default()).expect_err("too big");
    assert_eq!(e.raw_os_error(), Some(ENOSPC), "{e}");
    assert_eq!(e.op(), "pwrite");
}

#[test]
fn a_device_node_the_task_may_not_make_is_reported_not_fatal() {
    if !is_root() {
        eprintln!("skipped: mknod of a device on the host needs root");
        return;
    }
    let src = HostDir::new("dev");
    rfs::mknodat(
        CWD,
        src.path.join("null"),
        rfs::FileType::CharacterDevice,
        Mode::from_raw_mode(0o666),
        rfs::makedev(1, 3),
    )
    .expect("mknod");
    let vfs = Vfs::new();
    let root = vfs.task(Cred::root());
    root.mkdirat(AT_FDCWD, "/home", 0o777).expect("mkdir");
    root.fchmodat(AT_FDCWD, "/home", 0o777, UAtFlags::empty())
        .expect("chmod");
    let user = vfs.task(Cred::user(1000, 1000, &[]));
    let rep = tree::import(&user, &src.path, "/home/d", &Options::default()).expect("import");
    assert_eq!(rep.specials, 0);
    assert_eq!(rep.skipped.len(), 1, "{rep:?}");
    assert_eq!(rep.skipped[0].reason, SkipReason::Node(EPERM));
    // As root it is made, with its device number.
    let rep = tree::import(&root, &src.path, "/as_root", &Options::default()).expect("import");
    assert_eq!(rep.specials, 1);
    let st = root.lstat("/as_root/null").expect("stat");
    assert_eq!(st.rdev, rfs::makedev(1, 3));
}

#[cfg(feature = "tar")]
#[test]
fn a_tree_round_trips_through_a_tar_archive() {
    let src = fixture();
    let vfs = Vfs::new();
    let task = vfs.task(Cred::root());
    let opts = Options::default();
    tree::import(&task, &src.path, "/t", &opts).expect("import");
    let mut archive = Vec::new();
    let rep = tree::export_tar(&task, "/t", &mut archive, &opts).expect("export_tar");
    assert!(rep.skipped.is_empty(), "{:?}", rep.skipped);
    // Only the data of the sparse file is in the archive.
    assert!(archive.len() < 1 << 20, "{} bytes", archive.len());
    let fresh = Vfs::new();
    let ftask = fresh.task(Cred::root());
    let rep2 = tree::import_tar(&ftask, archive.as_slice(), "/t", &opts).expect("import_tar");
    assert!(rep2.skipped.is_empty(), "{:?}", rep2.skipped);
    assert_eq!(
        (
            rep2.files,
            rep2.dirs,
            rep2.symlinks,
            rep2.hard_links,
            rep2.bytes
        ),
        (rep.files, rep.dirs, rep.symlinks, rep.hard_links, rep.bytes)
    );
    let out = HostDir::new("tar-out");
    tree::export(&ftask, "/t", &out.path, &opts).expect("export");
    assert_same_tree(&src.path, &out.path);
}

#[cfg(feature = "tar")]
#[test]
fn gnu_tar_reads_the_archive() {
    let src = fixture();
    // GNU tar opens each entry by its whole path, which fails past PATH_MAX: the chain goes.
    std::fs::remove_dir_all(src.path.join("L".repeat(250))).expect("remove the long chain");
    let vfs = Vfs::new();
    let task = vfs.task(Cred::root());
    tree::import(&task, &src.path, "/t", &Options::default()).expect("import");
    let out = HostDir::new("gnutar");
    let file = out.path.join("a.tar");
    let w = std::fs::File::create(&file).expect("create the archive");
    tree::export_tar(&task, "/t", w, &Options::default()).expect("export_tar");
    let x = out.path.join("x");
    std::fs::create_dir(&x).expect("mkdir");
    let st = Command::new("tar")
        .arg("-xpf")
        .arg(&file)
        .arg("-C")
        .arg(&x)
        .output()
        .expect("run tar");
    assert!(
        st.status.success(),
        "GNU tar failed: {}",
        String::from_utf8_lossy(&st.stderr)
    );
    // GNU tar keeps contents, links, modes, mtimes (not atimes): contents and names by diff.
    let d = Command::new("diff")
        .args([
            "-r",
            "--no-dereference",
            "-x",
            "fifo",
            "-x",
            &"L".repeat(250),
        ])
        .arg(&src.path)
        .arg(&x)
        .output()
        .expect("run diff");
    assert!(d.status.success(), "{}", String::from_utf8_lossy(&d.stdout));
    let sparse = std::fs::metadata(x.join("dir1/sparse")).expect("stat");
    assert_eq!(
        std::os::unix::fs::MetadataExt::blocks(&sparse),
        16,
        "holes kept"
    );
}

#[cfg(feature = "tar")]
#[test]
fn a_tar_entry_leaving_the_destination_is_not_extracted() {
    let mut b = ::tar::Builder::new(Vec::new());
    let mut h = ::tar::Header::new_gnu();
    h.set_size(1);
    h.set_mode(0o644);
    h.set_entry_type(::tar::EntryType::Regular);
    // The crate refuses ".." in set_path: write the name bytes directly.
    h.as_old_mut().name[..9].copy_from_slice(b"../escape");
    h.set_cksum();
    b.append(&h, &b"x"[..]).expect("append");
    let data = b.into_inner().expect("finish");
    let vfs = Vfs::new();
    let task = vfs.task(Cred::root());
    let rep = tree::import_tar(&task, data.as_slice(), "/d", &Options::default()).expect("import");
    assert_eq!(rep.files, 0);
    assert_eq!(rep.skipped[0].reason, SkipReason::UnsafePath);
    assert!(task.stat("/escape").is_err());
    // Garbage is an error, not a panic.
    let junk = vec![0x41u8; 1024];
    assert!(tree::import_tar(&task, junk.as_slice(), "/e", &Options::default()).is_err());
}

#[cfg(feature = "tar")]
#[test]
fn a_socket_is_copied_as_a_socket_and_left_out_of_a_tar_archive() {
    let src = HostDir::new("sock");
    let _listener =
        std::os::unix::net::UnixListener::bind(src.path.join("sock")).expect("bind a socket");
    let vfs = Vfs::new();
    let task = vfs.task(Cred::root());
    let rep = tree::import(&task, &src.path, "/d", &Options::default()).expect("import");
    assert_eq!(rep.specials, 1, "{rep:?}");
    let st = task.lstat("/d/sock").expect("stat");
    assert_eq!(st.mode & 0o170000, 0o140000, "a socket");
    let rep = tree::export_tar(&task, "/d", std::io::sink(), &Options::default()).expect("tar");
    assert_eq!(rep.specials, 0);
    assert_eq!(rep.skipped.len(), 1, "{rep:?}");
    assert_eq!(rep.skipped[0].reason, SkipReason::Socket);
    assert_eq!(rep.skipped[0].path, Path::new("sock"));
}

#[cfg(feature = "tar")]
/// An archive: a symlink `esc` to `/`, then `entry` (a hard link to `target`, or a file).
fn escaping_archive(entry: &str, link_to: Option<&str>) -> Vec<u8> {
    let mut b = ::tar::Builder::new(Vec::new());
    let new = || {
        let mut h = ::tar::Header::new_gnu();
        h.set_uid(0);
        h.set_gid(0);
        h.set_mtime(0);
        h
    };
    let mut h = new();
    h.set_entry_type(::tar::EntryType::Symlink);
    h.set_mode(0o777);
    h.set_size(0);
    b.append_link(&mut h, "esc", "/").expect("symlink entry");
    let mut h = new();
    h.set_mode(0o644);
    match link_to {
        Some(t) => {
            h.set_entry_type(::tar::EntryType::Link);
            h.set_size(0);
            b.append_link(&mut h, entry, t).expect("link entry");
        }
        None => {
            h.set_entry_type(::tar::EntryType::Regular);
            h.set_size(4);
            b.append_data(&mut h, entry, &b"evil"[..])
                .expect("file entry");
        }
    }
    b.into_inner().expect("finish")
}

#[cfg(feature = "tar")]
#[test]
fn a_tar_archive_cannot_reach_out_through_its_own_symlink() {
    let vfs = Vfs::new();
    let task = vfs.task(Cred::root());
    let fd = task
        .openat(
            AT_FDCWD,
            "/victim",
            OpenFlags::CREAT | OpenFlags::WRONLY,
            0o600,
        )
        .expect("create");
    task.close(fd).expect("close");
    // A hard link whose target goes through the symlink: refused, no second name of /victim.
    let a = escaping_archive("h", Some("esc/victim"));
    let e = tree::import_tar(&task, a.as_slice(), "/d1", &Options::default())
        .expect_err("a link through a symlink");
    assert!(
        matches!(e.raw_os_error(), Some(40) | Some(20)),
        "ELOOP or ENOTDIR: {e}"
    );
    assert!(task.lstat("/d1/h").is_err());
    assert_eq!(task.lstat("/victim").expect("stat").nlink, 1);
    // A file under the symlink: refused, nothing made at /evil.
    let a = escaping_archive("esc/evil", None);
    let e = tree::import_tar(&task, a.as_slice(), "/d2", &Options::default())
        .expect_err("a file through a symlink");
    assert!(
        matches!(e.raw_os_error(), Some(40) | Some(20)),
        "ELOOP or ENOTDIR: {e}"
    );
    assert!(task.lstat("/evil").is_err());
}

#[test]
fn options_select_owners_xattrs_and_mounts() {
    let src = HostDir::new("opts");
    std::fs::create_dir(src.path.join("sub")).expect("mkdir");
    std::fs::write(src.path.join("f"), b"x").expect("write");
    rfs::setxattr(src.path.join("f"), "user.k", b"v", rfs::XattrFlags::empty()).expect("xattr");
    let vfs = Vfs::new();
    let root = vfs.task(Cred::root());
    root.mkdirat(AT_FDCWD, "/home", 0o777).expect("mkdir");
    root.fchmodat(AT_FDCWD, "/home", 0o777, UAtFlags::empty())
        .expect("chmod");
    let user = vfs.task(Cred::user(1000, 1000, &[]));
    // Owners: a task without CAP_CHOWN copies as itself by default, and fails if asked to keep.
    let host_uid = rfs::fstat(
        rfs::openat(
            CWD,
            &src.path,
            OFlags::RDONLY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .expect("open"),
    )
    .expect("fstat")
    .st_uid;
    tree::import(&user, &src.path, "/home/auto", &Options::default()).expect("import");
    assert_eq!(user.lstat("/home/auto/f").expect("stat").uid, 1000);
    let mut keep = Options::default();
    keep.owners = tree::Owners::Preserve;
    let r = tree::import(&user, &src.path, "/home/keep", &keep);
    if host_uid == 1000 {
        r.expect("chown to oneself is allowed");
    } else {
        let e = r.expect_err("a chown the task may not make");
        assert_eq!((e.raw_os_error(), e.op()), (Some(EPERM), "fchownat"), "{e}");
    }
    // Xattrs: ignored on request.
    let mut no_x = Options::default();
    no_x.xattrs = tree::Xattrs::Ignore;
    let rep = tree::import(&root, &src.path, "/nox", &no_x).expect("import");
    assert_eq!(rep.xattrs, 0);
    let mut v = [0u8; 8];
    assert!(root.lgetxattr("/nox/f", "user.k", &mut v).is_err());
    // Mounts: a tmpfs inside the source is copied, or left as an empty directory.
    if !is_root() {
        eprintln!("skipped: the mount part needs root");
        return;
    }
    let inner = src.path.join("sub");
    assert!(Command::new("mount")
        .args(["-t", "tmpfs", "tmpfs"])
        .arg(&inner)
        .status()
        .expect("mount")
        .success());
    std::fs::write(inner.join("in_mount"), b"m").expect("write");
    let crossed = tree::import(&root, &src.path, "/cross", &Options::default());
    let mut one = Options::default();
    one.mounts = tree::Mounts::OneFilesystem;
    let stayed = tree::import(&root, &src.path, "/one", &one);
    let _ = Command::new("umount").arg(&inner).status();
    crossed.expect("import across mounts");
    assert!(root.lstat("/cross/sub/in_mount").is_ok());
    let rep = stayed.expect("import on one filesystem");
    assert!(root.lstat("/one/sub").is_ok());
    assert!(root.lstat("/one/sub/in_mount").is_err());
    assert_eq!(rep.skipped.len(), 1, "{rep:?}");
    assert_eq!(rep.skipped[0].reason, SkipReason::MountPoint);
    assert_eq!(rep.skipped[0].path, Path::new("sub"));
}
