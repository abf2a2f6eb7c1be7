//! The `vfs-crate` column: the workloads on `vfs::MemoryFS` (crate `vfs` 0.12), what a Rust user
//! picks today for an in-memory file system.
//!
//! # What MemoryFS is (read from its source, `vfs` 0.12.2 `src/impls/memory.rs`)
//! - One `Arc<RwLock<HashMap<String, MemoryFile>>>` keyed by the whole path (`/d1/d2/f`; the root
//!   is `""`). Every operation is one hash lookup of the full string under that one global lock:
//!   there is no path walk, no per-directory structure, no permission check, no symlink.
//! - `metadata` takes the read lock. `open_file` takes the **write** lock (it updates the access
//!   time first), then the read lock to clone the content `Arc`. `create_file`, `remove_file` and
//!   a write handle's flush take the write lock.
//! - A read handle (`ReadableFile`) holds the `Arc<Vec<u8>>` of the content at open time: it reads
//!   a snapshot, never the file's current content.
//! - A write handle (`WritableFile`) writes into a private `Cursor<Vec<u8>>`; `flush` (and `Drop`,
//!   which calls it) clones that whole buffer and inserts it as the file's new content under the
//!   write lock. So a write is published whole-file, last flush wins; `append_file` copies the
//!   whole current content into the new handle.
//!
//! We call the `FileSystem` trait on `MemoryFS` directly with path strings built in `setup` (the
//! analogue of passing a prebuilt C string to the syscall). `VfsPath`, the crate's usual front
//! door, forwards to the same calls and only adds work: error context on failure, and for
//! `create_file` a parent `exists` + `metadata` check (two more read-locked lookups). So this is
//! the cheapest way through the crate.
//!
//! # Per workload (host syscall → MemoryFS)
//! - `write1` (`pwrite(fd, 1 byte, 0)`): one long-lived write handle per thread, opened in `setup`
//!   with `append_file`; each op is `seek(0)`, `write(1 byte)`, `flush()`. The flush is what makes
//!   the byte visible in the file system (without it nothing leaves the handle until drop), and it
//!   costs a clone of the handle's whole private copy (the 64-byte file), an `Arc` allocation, a clone
//!   of the path `String` and a map insert under the write lock. Reopening with `append_file` per
//!   op would add a write-locked whole-file clone per op and still not be a positioned write.
//! - `read1` (`pread(fd, 1 byte, 0)` of a 64-byte file): a long-lived handle would re-read the
//!   snapshot taken at open, not the current content, so it would measure a `memcpy` from private
//!   memory rather than the file system. Each op therefore opens the file (write lock for atime,
//!   read lock for the lookup, a `Box` allocation), reads 1 byte and drops the handle: read1 here
//!   is a 1-byte open-read-close.
//! - `open-read-close` (`open`, `read` 32 bytes, `close` of a 64-byte file): `open_file`, `read`,
//!   drop. `shared`: one file for all threads; `per-thread`: a file each (in one map, under the
//!   same global lock, so the two differ only in the key).
//! - `stat-walk` (`stat` of `d1/.../f`): `metadata("/d1/.../f")`: one read-locked hash lookup of
//!   the whole string, whatever the depth.
//! - `create-unlink` (`open(O_CREAT|O_EXCL)`, `close`, `unlink`): `create_file`, drop, `remove_file`.
//!   `create_file` checks the parent with `exists` (read lock) and inserts under the write lock,
//!   and the drop flushes (write lock again, an empty-content insert), so an op takes the write
//!   lock three times. `create_file` truncates an existing file instead of failing (no `O_EXCL`).
//!   `shared`: one directory `/d0` for all threads; `per-thread`: a directory `/dN` each; both
//!   live in the one global map.
//! - `find` (`getdents64` of each directory, `fstatat` of every entry): `read_dir(dir)`, then
//!   `metadata("dir/name")` per name, then the subdirectories. `read_dir` returns **names
//!   without attributes**, and it is one pass over the whole map under the read lock, keeping
//!   the paths that start with `dir/` and have no further `/` (a `String` per name): each
//!   directory listed costs a scan of every path in the file system, both walkers' trees
//!   included (they live in the one map). `metadata` builds no path, but the walker formats
//!   one `String` per entry to call it. No modes: the entry count checks types only.

use std::hint::black_box;
use std::io::{Read, Seek, SeekFrom, Write};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context};
use vfs::{FileSystem, MemoryFS, SeekAndWrite, VfsFileType};

use crate::column::{Column, Support};
use crate::find::{EntryKind, Tree, TreePath, WalkCount};
use crate::params::{walk_components, Params, Sharing, Workload};

/// Size of the file of `write1`, `read1` and `open-read-close` (as in the host column).
const SMALL_FILE_BYTES: usize = 64;

/// Bytes `open-read-close` reads.
const ORC_READ_BYTES: usize = 32;

/// The `write1` file.
const WRITE1_PATH: &str = "/rw";

/// The `read1` file.
const READ1_PATH: &str = "/r64";

/// The `vfs` crate's `MemoryFS` as a benchmark column.
pub struct VfsCrate {
    /// What `setup` built; `None` before `setup` and after `teardown`.
    state: Option<State>,
}

/// One configuration's file system and the per-thread objects its workload uses.
struct State {
    /// The configuration `setup` built this for; `run` must be called with the same.
    params: Params,
    /// The file system under test, shared by the threads and by the write handles.
    fs: Arc<MemoryFS>,
    /// Per-workload objects.
    plan: Plan,
}

/// What each thread works on, built in `setup`.
enum Plan {
    /// One long-lived write handle per thread, all on [`WRITE1_PATH`].
    Write1 {
        handles: Vec<Box<dyn SeekAndWrite + Send>>,
    },
    /// The file to open per op (see the module doc for why not a long-lived handle).
    Read1,
    /// One file path per thread (the same path for all when shared).
    OpenReadClose { paths: Vec<String> },
    /// The depth-D file path.
    StatWalk { path: String },
    /// One name per thread to create and remove.
    CreateUnlink { paths: Vec<String> },
    /// A tree per walker, under `/w<walker>`.
    Find { tree: Tree },
}

impl VfsCrate {
    /// A column with nothing built yet; `setup` builds a fresh `MemoryFS` per configuration.
    pub fn new() -> VfsCrate {
        VfsCrate { state: None }
    }
}

impl Default for VfsCrate {
    fn default() -> Self {
        Self::new()
    }
}

/// Creates `path` with `content` (create, write, drop: the drop publishes it).
fn create_with(fs: &MemoryFS, path: &str, content: &[u8]) -> anyhow::Result<()> {
    let mut f = fs
        .create_file(path)
        .with_context(|| format!("create_file {path}"))?;
    f.write_all(content)
        .with_context(|| format!("write {path}"))?;
    f.flush().with_context(|| format!("flush {path}"))?;
    Ok(())
}

/// Builds walker `walker`'s `find` tree.
fn build_tree(fs: &MemoryFS, tree: &Tree, walker: usize) -> anyhow::Result<()> {
    let root = format!("/{}", Tree::root(walker));
    fs.create_dir(&root)
        .with_context(|| format!("create_dir {root}"))?;
    for p in tree.paths() {
        match p {
            TreePath::Dir(d) => fs
                .create_dir(&format!("{root}/{d}"))
                .with_context(|| format!("create_dir {root}/{d}"))?,
            TreePath::File(f) => drop(
                fs.create_file(&format!("{root}/{f}"))
                    .with_context(|| format!("create_file {root}/{f}"))?,
            ),
        }
    }
    Ok(())
}

/// `find`'s walk of `path` (see the module doc): `read_dir`, `metadata` of each name, then the
/// subdirectories; each `metadata` counted in `count`.
fn vfs_walk(fs: &MemoryFS, path: &str, count: &mut WalkCount) -> anyhow::Result<()> {
    let mut subdirs = Vec::new();
    for name in fs
        .read_dir(path)
        .with_context(|| format!("read_dir {path}"))?
    {
        let child = format!("{path}/{name}");
        let m = fs
            .metadata(&child)
            .with_context(|| format!("metadata {child}"))?;
        if count.add_type(m.file_type == VfsFileType::Directory) == EntryKind::Directory {
            subdirs.push(child);
        }
    }
    for d in &subdirs {
        vfs_walk(fs, d, count)?;
    }
    Ok(())
}

/// One walk of walker `walker`'s tree, checked.
fn vfs_find(fs: &MemoryFS, tree: &Tree, walker: usize) -> anyhow::Result<()> {
    let mut count = WalkCount::default();
    vfs_walk(fs, &format!("/{}", Tree::root(walker)), &mut count)?;
    count.check(tree, 1, walker)
}

/// Why the vfs crate skips `write1-watch`.
const VFS_CRATE_NO_WATCHES: &str = "skipped: the vfs crate has no notification";

/// Why the `vfs` crate's column skips `sysfs-open-read`.
const VFS_CRATE_NO_SYSFS: &str = "skipped: the vfs crate has no pseudo filesystem";

/// Builds the file system and the per-thread objects `p` needs.
fn build(p: &Params) -> anyhow::Result<(Arc<MemoryFS>, Plan)> {
    ensure!(p.threads >= 1, "threads must be at least 1");
    let fs = Arc::new(MemoryFS::new());
    let plan = match p.workload {
        Workload::Write1 => {
            create_with(&fs, WRITE1_PATH, &[b'w'; SMALL_FILE_BYTES])?;
            let handles = (0..p.threads)
                .map(|_| fs.append_file(WRITE1_PATH).context("append_file"))
                .collect::<anyhow::Result<Vec<_>>>()?;
            Plan::Write1 { handles }
        }
        Workload::Read1 => {
            create_with(&fs, READ1_PATH, &[b'r'; SMALL_FILE_BYTES])?;
            Plan::Read1
        }
        Workload::OpenReadClose => {
            let paths: Vec<String> = (0..p.threads)
                .map(|i| match p.sharing {
                    Sharing::Shared => "/orc".to_string(),
                    Sharing::PerThread => format!("/orc{i}"),
                })
                .collect();
            for path in &paths {
                create_with(&fs, path, &[b'o'; SMALL_FILE_BYTES])?;
            }
            Plan::OpenReadClose { paths }
        }
        Workload::StatWalk => {
            ensure!(p.depth >= 1, "stat-walk depth must be at least 1");
            let mut path = String::new();
            let components = walk_components(p.depth);
            let (file, dirs) = components
                .split_last()
                .expect("walk_components returns the file last");
            for d in dirs {
                path.push('/');
                path.push_str(d);
                fs.create_dir(&path)
                    .with_context(|| format!("create_dir {path}"))?;
            }
            path.push('/');
            path.push_str(file);
            create_with(&fs, &path, b"s")?;
            Plan::StatWalk { path }
        }
        Workload::CreateUnlink => {
            let mut paths = Vec::with_capacity(p.threads);
            if p.sharing == Sharing::Shared {
                fs.create_dir("/d0").context("create_dir /d0")?;
            }
            for i in 0..p.threads {
                paths.push(match p.sharing {
                    Sharing::Shared => format!("/d0/t{i}"),
                    Sharing::PerThread => {
                        let dir = format!("/d{i}");
                        fs.create_dir(&dir)
                            .with_context(|| format!("create_dir {dir}"))?;
                        format!("{dir}/t{i}")
                    }
                });
            }
            Plan::CreateUnlink { paths }
        }
        Workload::Find => {
            let tree = p.find_tree()?;
            for walker in 0..p.threads {
                build_tree(&fs, &tree, walker)?;
                // The warm-up walk, checked.
                vfs_find(&fs, &tree, walker)?;
            }
            Plan::Find { tree }
        }
        Workload::Messaging | Workload::PipePingpong | Workload::PipeBulk => {
            bail!("vfs-crate: the vfs crate has no pipes")
        }
        Workload::Write1Watch => bail!("{VFS_CRATE_NO_WATCHES}"),
        Workload::SysfsOpenRead => bail!("{VFS_CRATE_NO_SYSFS}"),
    };
    Ok((fs, plan))
}

/// Runs `op` `ops` times on one thread per element of `per_thread`, all released by one barrier,
/// and returns the time from the earliest start to the latest finish.
fn run_threads<S: Send>(
    per_thread: Vec<S>,
    ops: u64,
    op: impl Fn(&mut S) -> anyhow::Result<()> + Sync,
) -> anyhow::Result<Duration> {
    let barrier = Barrier::new(per_thread.len());
    let spans: Vec<anyhow::Result<(Instant, Instant)>> = std::thread::scope(|s| {
        let workers: Vec<_> = per_thread
            .into_iter()
            .map(|mut st| {
                let (barrier, op) = (&barrier, &op);
                s.spawn(move || {
                    barrier.wait();
                    let start = Instant::now();
                    for _ in 0..ops {
                        op(&mut st)?;
                    }
                    Ok((start, Instant::now()))
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().expect("a benchmark thread panicked"))
            .collect()
    });
    let spans = spans.into_iter().collect::<anyhow::Result<Vec<_>>>()?;
    let start = spans
        .iter()
        .map(|s| s.0)
        .min()
        .expect("at least one thread");
    let end = spans
        .iter()
        .map(|s| s.1)
        .max()
        .expect("at least one thread");
    Ok(end - start)
}

/// `open_file`, read `buf.len()` bytes, drop: the open-read-close analogue (also `read1`).
fn open_read_drop(fs: &MemoryFS, path: &str, buf: &mut [u8]) -> anyhow::Result<()> {
    let mut f = fs.open_file(path)?;
    let n = f.read(buf)?;
    ensure!(
        n == buf.len(),
        "short read of {path}: {n} of {} bytes",
        buf.len()
    );
    black_box(&buf);
    Ok(())
}

impl Column for VfsCrate {
    fn name(&self) -> &'static str {
        "vfs-crate"
    }

    fn supports(&self, p: &Params) -> Support {
        if p.workload.uses_pipes() {
            return Support::No("skipped: the vfs crate has no pipes".into());
        }
        if p.workload == Workload::Write1Watch {
            return Support::No(VFS_CRATE_NO_WATCHES.into());
        }
        if p.workload == Workload::SysfsOpenRead {
            return Support::No(VFS_CRATE_NO_SYSFS.into());
        }
        Support::Yes
    }

    fn setup(&mut self, p: &Params) -> anyhow::Result<()> {
        self.teardown();
        let (fs, plan) = build(p)?;
        self.state = Some(State {
            params: *p,
            fs,
            plan,
        });
        Ok(())
    }

    fn run(&mut self, p: &Params, ops: u64) -> anyhow::Result<Duration> {
        let Some(state) = self.state.as_mut() else {
            bail!("vfs-crate: run before setup")
        };
        if state.params != *p {
            bail!(
                "vfs-crate: run({}) after setup({})",
                p.label(),
                state.params.label()
            );
        }
        let fs = &state.fs;
        let t = p.threads;
        match &mut state.plan {
            Plan::Write1 { handles } => run_threads(handles.iter_mut().collect(), ops, |h| {
                h.seek(SeekFrom::Start(0))?;
                let n = h.write(black_box(b"y"))?;
                ensure!(n == 1, "write1: wrote {n} bytes");
                h.flush()?;
                Ok(())
            }),
            Plan::Read1 => run_threads(vec![Arc::clone(fs); t], ops, |fs| {
                open_read_drop(fs, READ1_PATH, &mut [0; 1])
            }),
            Plan::OpenReadClose { paths } => {
                let per_thread = paths
                    .iter()
                    .map(|path| (Arc::clone(fs), path.as_str()))
                    .collect();
                run_threads(per_thread, ops, |(fs, path)| {
                    open_read_drop(fs, path, &mut [0; ORC_READ_BYTES])
                })
            }
            Plan::StatWalk { path } => {
                let path = path.as_str();
                run_threads(vec![Arc::clone(fs); t], ops, |fs| {
                    black_box(fs.metadata(path)?);
                    Ok(())
                })
            }
            Plan::CreateUnlink { paths } => {
                let per_thread = paths
                    .iter()
                    .map(|path| (Arc::clone(fs), path.as_str()))
                    .collect();
                run_threads(per_thread, ops, |(fs, path)| {
                    drop(fs.create_file(path)?);
                    fs.remove_file(path)?;
                    Ok(())
                })
            }
            Plan::Find { tree } => {
                let tree = *tree;
                let walks = tree.walks(ops)?;
                let per_thread = (0..t).map(|walker| (Arc::clone(fs), walker)).collect();
                run_threads(per_thread, walks, |(fs, walker)| {
                    vfs_find(fs, &tree, *walker)
                })
            }
        }
    }

    fn teardown(&mut self) {
        // Dropping the write handles flushes them into the file system they hold an `Arc` of;
        // then the last `Arc` of the file system goes.
        self.state = None;
    }

    fn note(&self) -> &'static str {
        "vfs 0.12 MemoryFS: one global RwLock over a map of whole paths (no path walk, one hash \
         lookup per call); no permissions, symlinks or fds; open takes the write lock (atime); a \
         write handle publishes a whole-file copy on flush (no pwrite); find: read_dir returns \
         names without attributes (a scan of every path per directory), then metadata per name"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every workload and sharing mode runs a few ops on 1 and 2 threads; the oracle is
    /// MemoryFS's own `Result` (any failure fails the test) and a positive duration. The pipe
    /// workloads are skipped with the reason.
    #[test]
    fn every_workload_runs_on_one_and_two_threads() {
        let mut col = VfsCrate::new();
        for workload in Workload::ALL {
            for threads in [1, 2] {
                for sharing in [Sharing::Shared, Sharing::PerThread] {
                    for depth in [1, 4] {
                        let p = Params {
                            workload,
                            threads,
                            depth,
                            sharing,
                            tree: (workload == Workload::Find).then(|| Tree::default_for(true)),
                            messaging: None,
                            watch: crate::watch::Watch::None,
                        };
                        if workload.uses_pipes() {
                            assert!(
                                matches!(col.supports(&p), Support::No(w) if w.contains("no pipes"))
                            );
                            continue;
                        }
                        if workload == Workload::Write1Watch {
                            assert_eq!(col.supports(&p), Support::No(VFS_CRATE_NO_WATCHES.into()));
                            continue;
                        }
                        if workload == Workload::SysfsOpenRead {
                            assert_eq!(col.supports(&p), Support::No(VFS_CRATE_NO_SYSFS.into()));
                            continue;
                        }
                        assert_eq!(col.supports(&p), Support::Yes);
                        col.setup(&p)
                            .unwrap_or_else(|e| panic!("setup {workload:?} {p:?}: {e:#}"));
                        for _ in 0..2 {
                            let d = col
                                .run(&p, 5u64.next_multiple_of(p.ops_granule()))
                                .unwrap_or_else(|e| panic!("run {p:?}: {e:#}"));
                            assert!(d > Duration::ZERO, "{p:?}: zero duration");
                        }
                        col.teardown();
                    }
                }
            }
        }
    }

    /// After `write1`, a fresh open sees the byte written at offset 0 and the rest of the file
    /// unchanged (the oracle: what `pwrite` at offset 0 leaves).
    #[test]
    fn write1_is_visible_to_a_new_open() {
        let p = Params {
            workload: Workload::Write1,
            threads: 1,
            depth: 1,
            sharing: Sharing::Shared,
            tree: None,
            messaging: None,
            watch: crate::watch::Watch::None,
        };
        let mut col = VfsCrate::new();
        col.setup(&p).unwrap();
        col.run(&p, 3).unwrap();
        let fs = Arc::clone(&col.state.as_ref().unwrap().fs);
        let mut s = String::new();
        fs.open_file(WRITE1_PATH)
            .unwrap()
            .read_to_string(&mut s)
            .unwrap();
        assert_eq!(s, format!("y{}", "w".repeat(SMALL_FILE_BYTES - 1)));
    }

    /// After `create-unlink`, the created names are gone again.
    #[test]
    fn create_unlink_leaves_no_file() {
        let p = Params {
            workload: Workload::CreateUnlink,
            threads: 2,
            depth: 1,
            sharing: Sharing::PerThread,
            tree: None,
            messaging: None,
            watch: crate::watch::Watch::None,
        };
        let mut col = VfsCrate::new();
        col.setup(&p).unwrap();
        col.run(&p, 3).unwrap();
        let fs = Arc::clone(&col.state.as_ref().unwrap().fs);
        assert!(!fs.exists("/d0/t0").unwrap());
        assert!(!fs.exists("/d1/t1").unwrap());
    }

    /// A walker that sees fewer entries than the tree has is an error: one file removed
    /// behind the walker's back fails the run with the counts.
    #[test]
    fn find_fails_on_a_short_walk() {
        let tree = Tree::default_for(true);
        let p = Params {
            workload: Workload::Find,
            threads: 2,
            depth: 1,
            sharing: Sharing::PerThread,
            tree: Some(tree),
            messaging: None,
            watch: crate::watch::Watch::None,
        };
        let mut col = VfsCrate::new();
        col.setup(&p).unwrap();
        col.run(&p, 2 * tree.entries()).unwrap();
        let fs = Arc::clone(&col.state.as_ref().unwrap().fs);
        fs.remove_file("/w1/d0/f0").unwrap();
        let e = col.run(&p, tree.entries()).expect_err("a file is missing");
        assert!(
            format!("{e:#}").contains("walker 1 stat'ed 1999 files, 10 directories"),
            "{e:#}"
        );
        col.run(&p, tree.entries() + 1)
            .expect_err("not a whole walk");
    }

    #[test]
    fn run_without_setup_fails() {
        let p = Params {
            workload: Workload::Read1,
            threads: 1,
            depth: 1,
            sharing: Sharing::Shared,
            tree: None,
            messaging: None,
            watch: crate::watch::Watch::None,
        };
        assert!(VfsCrate::new().run(&p, 1).is_err());
    }
}
