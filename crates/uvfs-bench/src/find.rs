//! The `find` workload: a warm walk of a tree the way `find`, `du`, `ls -l`, `rsync` and
//! `git status` walk one.
//!
//! # The tree
//! Each walker has its own [`Tree`]: a root `w<walker>` holding `dirs` directories `d<j>`, with
//! the `files` empty files `f<i>` spread over them (file `i` in directory `i * dirs / files`,
//! the naming of `uvfs bench memory`): 100,000 files in 100 directories, `--quick` 2,000 in 10.
//! Files have mode [`FILE_PERMISSIONS`], directories [`DIR_PERMISSIONS`]. Two walkers walk two
//! trees side by side in one file system. The trees are built once per configuration, untimed,
//! and walked once before the first sample, so every cache is warm.
//!
//! # The walk (one sample: whole walks only)
//! Open the root with `openat(O_RDONLY|O_DIRECTORY)`; `getdents64` it into a
//! [`GETDENTS_BUF_BYTES`] buffer until it returns 0, and for every entry but `.` and `..`
//! `fstatat(dirfd, name, AT_SYMLINK_NOFOLLOW)`; then descend into each entry the stat called
//! a directory and do the same; close each directory when done with it. That is what `find`
//! (through `fts` and glibc's `readdir`) and `du` do, minus their output. An operation is one
//! entry stat'ed, so a sample's ns/op is the wall time per entry per walker; a sample is a
//! whole number of walks ([`Params::ops_granule`](crate::params::Params::ops_granule)).
//!
//! # The entry count is checked, never assumed
//! Every walker counts what its stats said ([`WalkCount`]) and the run fails unless each walk
//! stat'ed exactly the tree's files and directories with the tree's modes: a walker that lists
//! too little, or that skips the `fstatat` (the modes come only from it), is an error, not a
//! fast result.
//!
//! # What the columns leave out (beside each column's own note)
//! - host: nothing; real system calls on a private tmpfs, walkers are threads of this process
//!   (one fd table).
//! - uvfs: the syscall boundary and the copy of each `struct stat` to user memory; each walker
//!   is its own task ([`uvfs::Task::fork`]: its own fd table). The records of `getdents64` are
//!   read in place, as glibc's `readdir` does.
//! - vfs-crate: `read_dir` returns names without attributes and is a scan of every path in the
//!   file system (both walkers' trees) for the directory's prefix; `metadata` of the whole path
//!   string per entry. It has no modes, so its count checks types only.
//! - gvisor: the syscall layer; `IterDirents` into a [`GETDENTS_BUF_BYTES`] budget as its
//!   `getdents64` does, then `StatAt` from the directory's dentry per name (its `fstatat`).

use anyhow::{ensure, Result};
use serde::Serialize;

/// Files of a full run's tree (the 100k files in 100 directories).
pub const FULL_FILES: u64 = 100_000;
/// Directories of a full run's tree.
pub const FULL_DIRS: u64 = 100;
/// Files of a `--quick` tree.
pub const QUICK_FILES: u64 = 2_000;
/// Directories of a `--quick` tree.
pub const QUICK_DIRS: u64 = 10;

/// Walker counts of the workload: the issue compares two walkers with one. (`--threads` does
/// not apply: every walker needs a tree of its own.)
pub const WALKERS: [usize; 2] = [1, 2];

/// The `getdents64` buffer: glibc's `opendir` buffer, 32 KiB on tmpfs.
pub const GETDENTS_BUF_BYTES: usize = 32 * 1024;

/// Permission bits of the tree's files (owner-only, so no umask changes them).
pub const FILE_PERMISSIONS: u32 = 0o600;
/// Permission bits of the tree's directories.
pub const DIR_PERMISSIONS: u32 = 0o700;

const S_IFREG: u32 = 0o100_000;
const S_IFDIR: u32 = 0o040_000;

/// The full `st_mode` of a tree file.
pub const FILE_MODE: u32 = S_IFREG | FILE_PERMISSIONS;
/// The full `st_mode` of a tree directory.
pub const DIR_MODE: u32 = S_IFDIR | DIR_PERMISSIONS;

/// One walker's tree: `files` empty files in `dirs` directories under a root.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, serde::Deserialize, PartialOrd, Ord,
)]
pub struct Tree {
    /// Empty files.
    pub files: u64,
    /// Directories under the root, holding the files.
    pub dirs: u64,
}

impl Tree {
    /// The tree of a full run, or of a `--quick` one.
    pub fn default_for(quick: bool) -> Tree {
        if quick {
            Tree {
                files: QUICK_FILES,
                dirs: QUICK_DIRS,
            }
        } else {
            Tree {
                files: FULL_FILES,
                dirs: FULL_DIRS,
            }
        }
    }

    /// Entries a walk stats: every file and every directory below the root.
    pub fn entries(&self) -> u64 {
        self.files + self.dirs
    }

    /// The root of walker `walker`'s tree: `w<walker>`.
    pub fn root(walker: usize) -> String {
        format!("w{walker}")
    }

    /// The directory file `i` goes in.
    pub fn dir_of(&self, i: u64) -> u64 {
        i * self.dirs / self.files
    }

    /// Every directory (`d<j>`) then every file (`d<j>/f<i>`) of a tree, relative to its root,
    /// in creation order.
    pub fn paths(&self) -> impl Iterator<Item = TreePath> + '_ {
        let dirs = (0..self.dirs).map(|j| TreePath::Dir(format!("d{j}")));
        let files = (0..self.files).map(|i| TreePath::File(format!("d{}/f{i}", self.dir_of(i))));
        dirs.chain(files)
    }

    /// Whole walks in `ops` operations (entries), which must be a positive multiple of
    /// [`entries`](Self::entries).
    ///
    /// # Errors
    /// `ops` is not such a multiple (a runner bug).
    pub fn walks(&self, ops: u64) -> Result<u64> {
        let per_walk = self.entries();
        ensure!(
            ops > 0 && ops.is_multiple_of(per_walk),
            "find: {ops} operations is not a whole number of walks of {per_walk} entries"
        );
        Ok(ops / per_walk)
    }
}

/// A path of a tree, relative to its root, to create.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TreePath {
    /// A directory, mode [`DIR_PERMISSIONS`].
    Dir(String),
    /// An empty file, mode [`FILE_PERMISSIONS`].
    File(String),
}

/// What a stat said an entry is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryKind {
    /// A tree directory: the walker descends into it.
    Directory,
    /// A tree file.
    File,
    /// Anything else (a wrong type or mode): the check fails.
    Other,
}

/// What one walker's stats said, over its walks of one sample.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WalkCount {
    /// Entries stat'ed as tree files.
    pub files: u64,
    /// Entries stat'ed as tree directories.
    pub dirs: u64,
    /// Entries whose stat matched neither.
    pub other: u64,
}

impl WalkCount {
    /// Counts an entry by the `st_mode` its `fstatat` returned, and says what it is.
    pub fn add_mode(&mut self, mode: u32) -> EntryKind {
        let kind = match mode {
            DIR_MODE => EntryKind::Directory,
            FILE_MODE => EntryKind::File,
            _ => EntryKind::Other,
        };
        self.add_kind(kind);
        kind
    }

    /// Counts an entry by a type alone (the `vfs` crate has no modes); says what it is.
    pub fn add_type(&mut self, is_dir: bool) -> EntryKind {
        let kind = if is_dir {
            EntryKind::Directory
        } else {
            EntryKind::File
        };
        self.add_kind(kind);
        kind
    }

    fn add_kind(&mut self, kind: EntryKind) {
        match kind {
            EntryKind::Directory => self.dirs += 1,
            EntryKind::File => self.files += 1,
            EntryKind::Other => self.other += 1,
        }
    }

    /// Checks that `walks` walks of `tree` by walker `walker` stat'ed exactly its entries.
    ///
    /// # Errors
    /// Any difference, with the counts.
    pub fn check(&self, tree: &Tree, walks: u64, walker: usize) -> Result<()> {
        ensure!(
            self.files == tree.files * walks && self.dirs == tree.dirs * walks && self.other == 0,
            "find: walker {walker} stat'ed {} files, {} directories and {} other entries in \
             {walks} walks of a tree of {} files and {} directories (modes {FILE_MODE:o} and \
             {DIR_MODE:o}): a walk that sees less is an error, not a result",
            self.files,
            self.dirs,
            self.other,
            tree.files,
            tree.dirs
        );
        Ok(())
    }
}

/// Offset of `d_name` in `struct linux_dirent64`.
const DIRENT64_NAME_OFFSET: usize = 19;

/// The names of the `struct linux_dirent64` records of a `getdents64` result, read in place
/// (no allocation per entry, as glibc's `readdir`), `.` and `..` skipped.
pub fn dirent64_names(buf: &[u8]) -> Dirent64Names<'_> {
    Dirent64Names { rest: buf }
}

/// Iterator of [`dirent64_names`].
pub struct Dirent64Names<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for Dirent64Names<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        loop {
            if self.rest.len() < DIRENT64_NAME_OFFSET {
                return None;
            }
            let reclen = u16::from_ne_bytes([self.rest[16], self.rest[17]]) as usize;
            if reclen <= DIRENT64_NAME_OFFSET || reclen > self.rest.len() {
                // A malformed record ends the listing (the walk's count check then fails).
                self.rest = &[];
                return None;
            }
            let field = &self.rest[DIRENT64_NAME_OFFSET..reclen];
            self.rest = &self.rest[reclen..];
            let name = &field[..field.iter().position(|&b| b == 0).unwrap_or(field.len())];
            if name != b"." && name != b".." {
                return Some(name);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quick() -> Tree {
        Tree::default_for(true)
    }

    /// Oracle: the counts a correct walk of the quick tree must produce.
    #[test]
    fn check_accepts_exactly_the_tree() {
        let t = quick();
        let mut c = WalkCount::default();
        for _ in 0..2 {
            for p in t.paths() {
                let mode = match p {
                    TreePath::Dir(_) => DIR_MODE,
                    TreePath::File(_) => FILE_MODE,
                };
                c.add_mode(mode);
            }
        }
        c.check(&t, 2, 0).expect("two whole walks");
        c.check(&t, 1, 0)
            .expect_err("counted twice the tree for one walk");
    }

    /// A walker that lists one directory too few, or that never stats (so never learns a
    /// mode), fails the check.
    #[test]
    fn check_rejects_a_short_or_unstat_ed_walk() {
        let t = quick();
        let short = WalkCount {
            files: t.files - t.files / t.dirs,
            dirs: t.dirs,
            other: 0,
        };
        let e = short.check(&t, 1, 1).expect_err("a directory missing");
        assert!(
            format!("{e}").contains("walker 1 stat'ed 1800 files"),
            "{e}"
        );
        // Types from d_type, without the permission bits only a stat returns.
        let mut typed_only = WalkCount::default();
        for p in t.paths() {
            let mode = match p {
                TreePath::Dir(_) => S_IFDIR,
                TreePath::File(_) => S_IFREG,
            };
            assert_eq!(typed_only.add_mode(mode), EntryKind::Other);
        }
        typed_only.check(&t, 1, 0).expect_err("no modes");
        // A symbolic link (what AT_SYMLINK_NOFOLLOW would show if the tree had one).
        const S_IFLNK: u32 = 0o120_000;
        assert_eq!(
            WalkCount::default().add_mode(S_IFLNK | 0o777),
            EntryKind::Other
        );
    }

    #[test]
    fn walks_must_be_whole() {
        let t = quick();
        assert_eq!(t.walks(3 * t.entries()).expect("whole"), 3);
        t.walks(0).expect_err("no walk");
        t.walks(t.entries() + 1).expect_err("a partial walk");
    }

    /// Oracle: records encoded by uvfs's own `Dirent::encode` (the Linux layout).
    #[test]
    fn dirent64_names_reads_records_in_place_and_skips_dots() {
        let mut buf = vec![0u8; 256];
        let mut used = 0;
        for (i, name) in [&b"."[..], b"..", b"f1", b"a-longer-name"]
            .iter()
            .enumerate()
        {
            used +=
                uvfs::abi::Dirent::encode(&mut buf[used..], 1, i as i64, 8, name).expect("fits");
        }
        let got: Vec<&[u8]> = dirent64_names(&buf[..used]).collect();
        assert_eq!(got, [&b"f1"[..], b"a-longer-name"]);
        // A truncated record ends the listing rather than reading past it.
        assert_eq!(dirent64_names(&buf[..used - 1]).count(), 1);
    }

    #[test]
    fn the_tree_spreads_files_evenly() {
        let t = quick();
        let mut per_dir = vec![0u64; t.dirs as usize];
        for i in 0..t.files {
            per_dir[t.dir_of(i) as usize] += 1;
        }
        assert!(
            per_dir.iter().all(|&n| n == t.files / t.dirs),
            "{per_dir:?}"
        );
        assert_eq!(t.paths().count() as u64, t.entries());
    }
}
