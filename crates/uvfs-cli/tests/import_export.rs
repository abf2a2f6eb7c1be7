//! `uvfs import DIR ARCHIVE` then `uvfs export ARCHIVE DIR2`: DIR2 is DIR, as `diff -r` and a
//! stat comparison of every entry see it (type, mode, owner, size, allocated blocks, mtime to
//! the nanosecond, link targets, hard-link groups, user xattrs). The fixture lives on the
//! host's /dev/shm (a tmpfs, with user xattrs and holes). Bad arguments are refused with one
//! line naming the argument; nothing panics.

use std::collections::BTreeMap;
use std::os::unix::fs::{symlink, MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn uvfs(args: &[&Path]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_uvfs"))
        .args(args)
        .env("RUST_BACKTRACE", "0")
        .output()
        .expect("run uvfs")
}

/// A fresh directory on /dev/shm, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(tag: &str) -> Scratch {
        let p = PathBuf::from(format!("/dev/shm/uvfs-cli-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir(&p).unwrap();
        Scratch(p)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn fixture(root: &Path) {
    let p = |s: &str| root.join(s);
    std::fs::create_dir_all(p("a/b")).unwrap();
    std::fs::write(p("a/data"), b"some data").unwrap();
    std::fs::write(p("empty"), b"").unwrap();
    let f = std::fs::File::create(p("sparse")).unwrap();
    rustix::io::pwrite(&f, &[1u8; 4096], 1 << 20).unwrap();
    f.set_len(4 << 20).unwrap();
    std::fs::write(p("a/b/linked"), b"one inode").unwrap();
    std::fs::hard_link(p("a/b/linked"), p("second")).unwrap();
    symlink("a/data", p("to-data")).unwrap();
    symlink("nowhere", p("dangling")).unwrap();
    std::fs::write(p("odd name\n-rf \u{e9}"), b"x").unwrap();
    rustix::fs::setxattr(
        p("a/data"),
        "user.colour",
        b"blue",
        rustix::fs::XattrFlags::empty(),
    )
    .unwrap();
    std::fs::set_permissions(p("a/data"), std::fs::Permissions::from_mode(0o4750)).unwrap();
    std::fs::set_permissions(p("a/b"), std::fs::Permissions::from_mode(0o1777)).unwrap();
    let t = rustix::fs::Timestamps {
        last_access: rustix::fs::Timespec {
            tv_sec: 1_000_000_000,
            tv_nsec: 123_456_789,
        },
        last_modification: rustix::fs::Timespec {
            tv_sec: 1_600_000_000,
            tv_nsec: 987_654_321,
        },
    };
    rustix::fs::utimensat(
        rustix::fs::CWD,
        p("empty"),
        &t,
        rustix::fs::AtFlags::empty(),
    )
    .unwrap();
    // Owners other than the runner's (root in CI): the round trip must keep them.
    for (name, uid, gid) in [
        ("a/b/linked", 1000, 1000),
        ("a", 1000, 100),
        ("to-data", 1001, 1001),
    ] {
        let (u, g) = (
            rustix::process::Uid::from_raw(uid),
            rustix::process::Gid::from_raw(gid),
        );
        rustix::fs::chownat(
            rustix::fs::CWD,
            p(name),
            Some(u),
            Some(g),
            rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
        )
        .unwrap();
    }
}

/// Every entry below `root`: its stat fields that a copy keeps, and which names share an
/// inode.
fn survey(root: &Path) -> BTreeMap<PathBuf, String> {
    let mut out = BTreeMap::new();
    let mut groups: BTreeMap<u64, Vec<PathBuf>> = BTreeMap::new();
    let mut todo = vec![root.to_path_buf()];
    while let Some(dir) = todo.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let e = e.unwrap();
            let path = e.path();
            let m = std::fs::symlink_metadata(&path).unwrap();
            let rel = path.strip_prefix(root).unwrap().to_path_buf();
            groups.entry(m.ino()).or_default().push(rel.clone());
            let mut xattrs = Vec::new();
            if !m.file_type().is_symlink() {
                let mut names = vec![0u8; 4096];
                let n = rustix::fs::listxattr(&path, &mut names).unwrap();
                for name in names[..n]
                    .split(|&b| b == 0)
                    .filter(|n| n.starts_with(b"user."))
                {
                    let mut v = vec![0u8; 4096];
                    let k = rustix::fs::getxattr(&path, name, &mut v).unwrap();
                    xattrs.push(format!("{}={:?}", String::from_utf8_lossy(name), &v[..k]));
                }
            }
            let target = std::fs::read_link(&path).ok();
            let dir_size = m.is_dir();
            out.insert(
                rel,
                format!(
                    "mode={:o} uid={} gid={} size={} blocks={} mtime={}.{:09} nlink={} target={target:?} xattrs={xattrs:?}",
                    m.mode(),
                    m.uid(),
                    m.gid(),
                    if dir_size { 0 } else { m.size() },
                    if dir_size { 0 } else { m.blocks() },
                    m.mtime(),
                    m.mtime_nsec(),
                    m.nlink(),
                ),
            );
            if m.is_dir() {
                todo.push(path);
            }
        }
    }
    for names in groups.values().filter(|g| g.len() > 1) {
        for n in names {
            let mut g = names.clone();
            g.sort();
            out.get_mut(n).unwrap().push_str(&format!(" group={g:?}"));
        }
    }
    out
}

#[test]
fn a_host_tree_comes_back_from_its_archive_unchanged() {
    let s = Scratch::new("roundtrip");
    let src = s.0.join("src");
    std::fs::create_dir(&src).unwrap();
    fixture(&src);
    let archive = s.0.join("tree.tar");
    let out = s.0.join("out");

    let o = uvfs(&[Path::new("import"), &src, &archive]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = uvfs(&[Path::new("export"), &archive, &out]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("extracted:"), "{err}");

    let diff = Command::new("diff")
        .args(["-r", "--no-dereference"])
        .arg(&src)
        .arg(&out)
        .output()
        .expect("diff");
    assert!(
        diff.status.success(),
        "diff -r: {}",
        String::from_utf8_lossy(&diff.stdout)
    );
    let (a, b) = (survey(&src), survey(&out));
    assert_eq!(a.len(), 10, "the fixture's entries: {a:#?}");
    for (k, v) in &a {
        assert_eq!(Some(v), b.get(k), "{k:?}");
    }
    assert_eq!(a, b);
    // The sparse file's holes stayed holes.
    let m = std::fs::metadata(out.join("sparse")).unwrap();
    assert!(m.blocks() * 512 < m.len() / 4, "{} blocks", m.blocks());
}

#[test]
fn bad_arguments_are_refused_in_one_line() {
    let s = Scratch::new("bad");
    let file = s.0.join("file");
    std::fs::write(&file, b"").unwrap();
    let dir = s.0.join("dir");
    std::fs::create_dir(&dir).unwrap();
    let garbage = s.0.join("garbage.tar");
    std::fs::write(&garbage, vec![7u8; 1500]).unwrap();
    let nowhere = s.0.join("no/such/dir");
    let cases: [(&[&Path], &str); 6] = [
        (
            &[Path::new("import"), &nowhere, &s.0.join("x.tar")],
            "'<DIR>'",
        ),
        (&[Path::new("import"), &file, &s.0.join("x.tar")], "'<DIR>'"),
        (&[Path::new("import"), &dir, &file], "'<ARCHIVE>'"),
        (
            &[Path::new("export"), &nowhere, &s.0.join("o")],
            "'<ARCHIVE>'",
        ),
        (&[Path::new("export"), &file, &nowhere], "'<DIR>'"),
        (&[Path::new("export"), &file, &file], "'<DIR>'"),
    ];
    for (args, names) in cases {
        let o = uvfs(args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        let first = err.lines().next().unwrap_or("");
        assert!(first.contains(names), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
    // A source that cannot be read fails the run and leaves no archive behind.
    let closed = s.0.join("closed");
    std::fs::create_dir_all(closed.join("inner")).unwrap();
    std::fs::write(closed.join("inner/f"), b"x").unwrap();
    std::fs::set_permissions(closed.join("inner"), std::fs::Permissions::from_mode(0o000)).unwrap();
    let open_dir = s.0.join("anyone");
    std::fs::create_dir(&open_dir).unwrap();
    std::fs::set_permissions(&open_dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let archive = open_dir.join("closed.tar");
    let o = Command::new(env!("CARGO_BIN_EXE_uvfs"))
        .args([Path::new("import"), &closed, &archive])
        .uid(1000)
        .gid(1000)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(!archive.exists(), "an archive of a failed import: {err}");
    std::fs::set_permissions(closed.join("inner"), std::fs::Permissions::from_mode(0o755)).unwrap();
    // A file that is not an archive: an error (not a refused argument), no panic.
    let o = uvfs(&[Path::new("export"), &garbage, &s.0.join("g")]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(uvfs(&[Path::new("import")]).status.code(), Some(2));
}
