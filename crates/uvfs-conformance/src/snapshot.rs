//! The `snapshot` op's walk, shared by both sides: every name reachable from the namespace
//! root, depth first, each directory's children in `getdents` order, with `lstat`, `readlink`
//! for symlinks, and every xattr (CASES.md, "Snapshots"). Each side supplies the calls through
//! [`Observe`], made by an observer with root's credentials and every capability, rooted at
//! the namespace root, whatever the acting task's credentials, root or cwd are.

use std::collections::HashMap;

use crate::outcome::{Bytes, DirentRec, EntryRec, StatRec};

/// Largest xattr value (`XATTR_SIZE_MAX`) and name list (`XATTR_LIST_MAX`) Linux allows.
pub const XATTR_BUF: usize = 65536;
/// The buffer tried first: Linux allocates (and for values zeroes) a kernel buffer of the size
/// passed, so a snapshot asks for 64 KiB only after `ERANGE`.
const SMALL_XATTR_BUF: usize = 4096;
const ERANGE: i32 = 34;
/// A snapshot stops after this many names (the same on both sides), so that a case that makes
/// a huge tree gives a long answer rather than an endless one.
pub const MAX_ENTRIES: usize = 4096;

const S_IFMT: u32 = 0o170000;
const S_IFDIR: u32 = 0o040000;
const S_IFLNK: u32 = 0o120000;

/// The calls a snapshot makes, by absolute path from the observer's root (the namespace
/// root). `list_dir` opens with `O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NOATIME |
/// O_CLOEXEC`, so listing leaves the directory's atime alone, and reads to the end.
pub trait Observe {
    /// `fstatat(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW)`.
    fn lstat(&mut self, path: &[u8]) -> Result<StatRec, i32>;
    /// `readlink(path)`, with a `PATH_MAX` buffer.
    fn readlink(&mut self, path: &[u8]) -> Result<Vec<u8>, i32>;
    /// `llistxattr(path)` into a buffer of `size` bytes: NUL-terminated names.
    fn llistxattr(&mut self, path: &[u8], size: usize) -> Result<Vec<u8>, i32>;
    /// `lgetxattr(path, name)` into a buffer of `size` bytes.
    fn lgetxattr(&mut self, path: &[u8], name: &[u8], size: usize) -> Result<Vec<u8>, i32>;
    /// The records of the directory at `path`, `.` and `..` included.
    fn list_dir(&mut self, path: &[u8]) -> Result<Vec<DirentRec>, i32>;
    /// `statfs(path)`'s `f_type`.
    fn fs_type(&mut self, path: &[u8]) -> Result<i64, i32>;
}

use crate::sysfs_guard::SYSFS_MAGIC;

/// Whether a sysfs directory's entry `name` is in the part of sysfs both sides show: the
/// path to and into `devices/system/cpu/cpuN/topology/` (CASES.md, "sysfs"). The host's
/// sysfs is the machine's, thousands of names, uvfs's the demo tree; everything in a
/// `topology` directory is kept, elsewhere only directories on that path.
fn sysfs_shared(dir_name: &[u8], name: &[u8]) -> bool {
    if dir_name == b"topology" {
        return true;
    }
    let cpu_n = name
        .strip_prefix(b"cpu")
        .is_some_and(|n| !n.is_empty() && n.iter().all(u8::is_ascii_digit));
    matches!(name, b"devices" | b"system" | b"cpu" | b"topology") || cpu_n
}

/// Where a snapshot walk is: the device of the directory being listed, and whether it is a
/// sysfs (asked with `statfs` at each mount crossing).
#[derive(Clone, Copy)]
struct Place {
    dev: (u32, u32),
    sysfs: bool,
}

/// Walks the tree from `/`.
pub fn observe_tree(o: &mut dyn Observe) -> Vec<EntryRec> {
    let mut out = Vec::new();
    visit(o, b"/".to_vec(), &mut out, &mut HashMap::new(), None);
    out
}

/// A symlink's target, by its inode (`(major, minor, ino)`), once per snapshot.
type Targets = HashMap<(u32, u32, u64), Result<Bytes, i32>>;

/// `call` with a small buffer, again with the largest on `ERANGE`.
fn sized(mut call: impl FnMut(usize) -> Result<Vec<u8>, i32>) -> Result<Vec<u8>, i32> {
    match call(SMALL_XATTR_BUF) {
        Err(ERANGE) => call(XATTR_BUF),
        r => r,
    }
}

/// Observes `path` and what is below it. A symlink reached by a second name (a bind mount, a
/// hard link) is not read again: its first `readlink` in this snapshot gave its target.
/// Reading it again would touch its atime a second time within one step, at a moment only
/// the clock decides (a tick between the two reads on the slower side: seed 356160 of the
/// 5fdf096 long run, in ticked timing, on a link whose mtime lay in the future, so that
/// relatime updated its atime on every read).
///
/// In a sysfs, only the entries [`sysfs_shared`] keeps are visited.
fn visit(
    o: &mut dyn Observe,
    path: Vec<u8>,
    out: &mut Vec<EntryRec>,
    targets: &mut Targets,
    parent: Option<Place>,
) {
    if out.len() >= MAX_ENTRIES {
        return;
    }
    let stat = o.lstat(&path);
    let kind = stat.as_ref().map_or(0, |s| s.mode & S_IFMT);
    let dir_name = path
        .rsplit(|&c| c == b'/')
        .next()
        .unwrap_or_default()
        .to_vec();
    let place = match &stat {
        Ok(s) if kind == S_IFDIR => {
            let dev = (s.dev.major, s.dev.minor);
            Some(match parent {
                Some(p) if p.dev == dev => p,
                _ => Place {
                    dev,
                    sysfs: o.fs_type(&path) == Ok(SYSFS_MAGIC),
                },
            })
        }
        _ => None,
    };
    let link = match &stat {
        Ok(s) if kind == S_IFLNK => Some(
            targets
                .entry((s.dev.major, s.dev.minor, s.ino))
                .or_insert_with(|| o.readlink(&path).map(Bytes))
                .clone(),
        ),
        _ => None,
    };
    let xattrs = sized(|size| o.llistxattr(&path, size)).map(|list| {
        list.split(|&c| c == 0)
            .filter(|n| !n.is_empty())
            .map(|n| {
                let value = sized(|size| o.lgetxattr(&path, n, size));
                (Bytes(n.to_vec()), value.map(Bytes))
            })
            .collect()
    });
    let children = if kind == S_IFDIR {
        Some(o.list_dir(&path))
    } else {
        None
    };
    out.push(EntryRec {
        path: Bytes(path.clone()),
        stat,
        link,
        xattrs,
        list_errno: children.as_ref().and_then(|c| c.as_ref().err().copied()),
    });
    let Some(Ok(children)) = children else { return };
    let sysfs = place.is_some_and(|p| p.sysfs);
    for e in children {
        if e.name.0 == b"." || e.name.0 == b".." {
            continue;
        }
        if sysfs && !sysfs_shared(&dir_name, &e.name.0) {
            continue;
        }
        let mut child = path.clone();
        if child != b"/" {
            child.push(b'/');
        }
        child.extend_from_slice(&e.name.0);
        visit(o, child, out, targets, place);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// One node of a tree in memory: mode, link body, xattrs, children in listing order.
    type Node = (
        u32,
        Vec<u8>,
        Vec<(&'static [u8], &'static [u8])>,
        Vec<&'static [u8]>,
    );

    #[derive(Default)]
    struct Fake {
        nodes: BTreeMap<Vec<u8>, Node>,
        /// Names that are another name of an inode: path -> the first name's path.
        aliases: BTreeMap<Vec<u8>, Vec<u8>>,
        calls: Vec<String>,
        readlinks: Vec<String>,
        /// Mount roots that are sysfs (their trees are on device 2, the rest on device 1).
        sysfs: Vec<Vec<u8>>,
    }

    const TMPFS_MAGIC: i64 = 0x0102_1994;

    impl Observe for Fake {
        fn lstat(&mut self, path: &[u8]) -> Result<StatRec, i32> {
            self.calls
                .push(format!("lstat {}", String::from_utf8_lossy(path)));
            let n = self.nodes.get(path).ok_or(2)?;
            // Each name its own inode (its place in the map), an alias its first name's.
            let first = self.aliases.get(path).map_or(path, Vec::as_slice);
            let ino = self.nodes.keys().position(|k| k == first).ok_or(2)? as u64 + 1;
            let on_sysfs = self.sysfs.iter().any(|r| path.starts_with(r));
            Ok(StatRec {
                mode: n.0,
                ino,
                nlink: 7,
                dev: crate::outcome::Dev {
                    major: 0,
                    minor: if on_sysfs { 2 } else { 1 },
                },
                ..StatRec::default()
            })
        }
        fn readlink(&mut self, path: &[u8]) -> Result<Vec<u8>, i32> {
            self.readlinks
                .push(String::from_utf8_lossy(path).into_owned());
            Ok(self.nodes[path].1.clone())
        }
        fn llistxattr(&mut self, path: &[u8], _size: usize) -> Result<Vec<u8>, i32> {
            let mut v = Vec::new();
            for (n, _) in &self.nodes[path].2 {
                v.extend_from_slice(n);
                v.push(0);
            }
            Ok(v)
        }
        fn lgetxattr(&mut self, path: &[u8], name: &[u8], _size: usize) -> Result<Vec<u8>, i32> {
            let n = &self.nodes[path];
            n.2.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_vec())
                .ok_or(61)
        }
        fn fs_type(&mut self, path: &[u8]) -> Result<i64, i32> {
            Ok(if self.sysfs.iter().any(|p| p == path) {
                SYSFS_MAGIC
            } else {
                TMPFS_MAGIC
            })
        }
        fn list_dir(&mut self, path: &[u8]) -> Result<Vec<DirentRec>, i32> {
            let mut names: Vec<&[u8]> = vec![b".", b".."];
            names.extend(self.nodes[path].3.iter().copied());
            Ok(names
                .into_iter()
                .map(|n| DirentRec {
                    name: Bytes(n.to_vec()),
                    d_type: 0,
                    ino: 0,
                    off: 0,
                })
                .collect())
        }
    }

    #[test]
    fn walks_depth_first_in_listing_order_with_links_and_xattrs() {
        let mut f = Fake::default();
        f.nodes
            .insert(b"/".to_vec(), (S_IFDIR, vec![], vec![], vec![b"z", b"a"]));
        f.nodes.insert(
            b"/z".to_vec(),
            (S_IFDIR, vec![], vec![(b"user.k", b"v")], vec![b"l"]),
        );
        f.nodes.insert(
            b"/z/l".to_vec(),
            (S_IFLNK, b"../a".to_vec(), vec![], vec![]),
        );
        f.nodes
            .insert(b"/a".to_vec(), (0o100000, vec![], vec![], vec![]));
        let t = observe_tree(&mut f);
        let paths: Vec<&[u8]> = t.iter().map(|e| e.path.0.as_slice()).collect();
        assert_eq!(paths, [&b"/"[..], b"/z", b"/z/l", b"/a"]);
        assert_eq!(t[2].link, Some(Ok(Bytes(b"../a".to_vec()))));
        assert_eq!(t[1].link, None);
        assert_eq!(
            t[1].xattrs,
            Ok(vec![(Bytes(b"user.k".to_vec()), Ok(Bytes(b"v".to_vec())))])
        );
        assert_eq!(f.calls.len(), 4, "one lstat per name: {:?}", f.calls);
    }

    /// A symlink reached by two names (a bind mount of its directory, a hard link) is read
    /// once: a second `readlink` could touch its atime again within the step.
    #[test]
    fn reads_each_symlink_inode_once() {
        let mut f = Fake::default();
        f.nodes.insert(
            b"/".to_vec(),
            (S_IFDIR, vec![], vec![], vec![b"l", b"m", b"o"]),
        );
        for (name, body) in [(&b"/l"[..], &b"/x"[..]), (b"/m", b"/x"), (b"/o", b"/y")] {
            f.nodes
                .insert(name.to_vec(), (S_IFLNK, body.to_vec(), vec![], vec![]));
        }
        f.aliases.insert(b"/m".to_vec(), b"/l".to_vec());
        let t = observe_tree(&mut f);
        assert_eq!(f.readlinks, ["/l", "/o"], "one readlink per symlink inode");
        let links: Vec<_> = t.iter().map(|e| e.link.clone()).collect();
        assert_eq!(
            links,
            [
                None,
                Some(Ok(Bytes(b"/x".to_vec()))),
                Some(Ok(Bytes(b"/x".to_vec()))),
                Some(Ok(Bytes(b"/y".to_vec())))
            ]
        );
    }

    /// In a sysfs only the path to `devices/system/cpu/cpuN/topology/` and what is in it are
    /// walked (the host's is the machine's).
    #[test]
    fn walks_only_the_shared_part_of_a_sysfs() {
        let mut f = Fake::default();
        let dir = |kids: Vec<&'static [u8]>| (S_IFDIR, vec![], vec![], kids);
        let file = || (0o100444, vec![], vec![], vec![]);
        f.nodes.insert(b"/".to_vec(), dir(vec![b"sys", b"a"]));
        f.nodes
            .insert(b"/a".to_vec(), dir(vec![b"cpu9", b"kernel"]));
        f.nodes.insert(b"/a/cpu9".to_vec(), file());
        f.nodes.insert(b"/a/kernel".to_vec(), file());
        f.nodes
            .insert(b"/sys".to_vec(), dir(vec![b"kernel", b"devices", b"block"]));
        f.nodes
            .insert(b"/sys/devices".to_vec(), dir(vec![b"virtual", b"system"]));
        f.nodes.insert(
            b"/sys/devices/system".to_vec(),
            dir(vec![b"cpu", b"memory"]),
        );
        f.nodes.insert(
            b"/sys/devices/system/cpu".to_vec(),
            dir(vec![b"online", b"cpu0", b"cpufreq"]),
        );
        f.nodes.insert(
            b"/sys/devices/system/cpu/cpu0".to_vec(),
            dir(vec![b"cache", b"topology", b"online"]),
        );
        f.nodes.insert(
            b"/sys/devices/system/cpu/cpu0/topology".to_vec(),
            dir(vec![b"core_id", b"die_id"]),
        );
        f.nodes.insert(
            b"/sys/devices/system/cpu/cpu0/topology/core_id".to_vec(),
            file(),
        );
        f.nodes.insert(
            b"/sys/devices/system/cpu/cpu0/topology/die_id".to_vec(),
            file(),
        );
        f.sysfs.push(b"/sys".to_vec());
        let t = observe_tree(&mut f);
        let seen: Vec<(String, u64)> = t
            .iter()
            .map(|e| {
                let nlink = e.stat.as_ref().map_or(99, |s| s.nlink);
                (String::from_utf8_lossy(&e.path.0).into_owned(), nlink)
            })
            .collect();
        let want = [
            ("/", 7),
            ("/sys", 7),
            ("/sys/devices", 7),
            ("/sys/devices/system", 7),
            ("/sys/devices/system/cpu", 7),
            ("/sys/devices/system/cpu/cpu0", 7),
            ("/sys/devices/system/cpu/cpu0/topology", 7),
            ("/sys/devices/system/cpu/cpu0/topology/core_id", 7),
            ("/sys/devices/system/cpu/cpu0/topology/die_id", 7),
            ("/a", 7),
            ("/a/cpu9", 7),
            ("/a/kernel", 7),
        ];
        let want: Vec<(String, u64)> = want.iter().map(|(p, n)| (p.to_string(), *n)).collect();
        assert_eq!(seen, want);
    }
}
