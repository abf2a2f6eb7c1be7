//! What a benchmark run measures: workloads and their parameters.

use serde::Serialize;

use crate::find::{Tree, WALKERS};

/// A workload of the suite.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, PartialOrd, Ord)]
#[serde(rename_all = "kebab-case")]
pub enum Workload {
    /// 1-byte pwrite at offset 0 of one tmpfs file, in a loop (the 2015 fsnotify thread).
    Write1,
    /// 1-byte pread at offset 0 of one tmpfs file.
    Read1,
    /// open, read 32 bytes, close of one small file (the kernfs thread's shape).
    OpenReadClose,
    /// stat of a path of a given depth, warm cache.
    StatWalk,
    /// create and unlink a file in a directory.
    CreateUnlink,
    /// A warm walk of a tree per walker, `getdents64` then `fstatat` of every entry
    /// ([`crate::find`]).
    Find,
}

impl Workload {
    /// Every workload, in suite order.
    pub const ALL: [Workload; 6] = [
        Workload::Write1,
        Workload::Read1,
        Workload::OpenReadClose,
        Workload::StatWalk,
        Workload::CreateUnlink,
        Workload::Find,
    ];

    /// The name used on the command line and in output.
    pub fn name(self) -> &'static str {
        match self {
            Workload::Write1 => "write1",
            Workload::Read1 => "read1",
            Workload::OpenReadClose => "open-read-close",
            Workload::StatWalk => "stat-walk",
            Workload::CreateUnlink => "create-unlink",
            Workload::Find => "find",
        }
    }

    /// The workload named `s`.
    pub fn from_name(s: &str) -> Option<Workload> {
        Self::ALL.into_iter().find(|w| w.name() == s)
    }
}

/// Whether threads share the object they work on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, PartialOrd, Ord)]
#[serde(rename_all = "kebab-case")]
pub enum Sharing {
    /// All threads use the same file (or directory).
    Shared,
    /// Each thread has its own file (or directory).
    PerThread,
}

/// One measured configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, PartialOrd, Ord)]
pub struct Params {
    /// The workload.
    pub workload: Workload,
    /// Threads running it at once.
    pub threads: usize,
    /// Path depth (`stat-walk`); 1 otherwise.
    pub depth: usize,
    /// Same object or one per thread (multi-thread workloads).
    pub sharing: Sharing,
    /// Each walker's tree (`find`); `None` otherwise.
    pub tree: Option<Tree>,
}

impl Params {
    /// A short label: `threads=2 per-thread`, `depth=8`, ...
    pub fn label(&self) -> String {
        let mut s = String::new();
        if self.workload == Workload::StatWalk {
            s.push_str(&format!("depth={}", self.depth));
            if self.threads > 1 {
                s.push_str(&format!(" threads={}", self.threads));
            }
            return s;
        }
        if self.workload == Workload::Find {
            return format!("walkers={}", self.threads);
        }
        s.push_str(&format!("threads={}", self.threads));
        if self.threads > 1 {
            s.push_str(match self.sharing {
                Sharing::Shared => " shared",
                Sharing::PerThread => " per-thread",
            });
        }
        s
    }

    /// The operation counts a sample may take are multiples of this: the entries of one
    /// walk for `find` (a sample walks whole trees), 1 otherwise.
    pub fn ops_granule(&self) -> u64 {
        self.tree.map_or(1, |t| t.entries())
    }

    /// The tree of a `find` configuration.
    ///
    /// # Errors
    /// The configuration has none (a column bug).
    pub fn find_tree(&self) -> anyhow::Result<Tree> {
        self.tree
            .ok_or_else(|| anyhow::anyhow!("{:?} has no find tree", self.workload))
    }
}

/// Stat-walk depths of the suite.
pub const DEPTHS: [usize; 5] = [1, 2, 4, 8, 16];

/// The parameter grid of `workload` for the given thread counts; `find` walks `find_tree`
/// with [`WALKERS`] walkers, a tree each.
pub fn grid(workload: Workload, threads: &[usize], find_tree: Tree) -> Vec<Params> {
    let one = |t, depth, sharing| Params {
        workload,
        threads: t,
        depth,
        sharing,
        tree: None,
    };
    let mut v = Vec::new();
    match workload {
        Workload::Write1 | Workload::Read1 => v.push(one(1, 1, Sharing::Shared)),
        Workload::StatWalk => {
            for d in DEPTHS {
                v.push(one(1, d, Sharing::Shared));
            }
        }
        Workload::OpenReadClose | Workload::CreateUnlink => {
            for &t in threads {
                if t == 1 {
                    v.push(one(1, 1, Sharing::Shared));
                } else {
                    v.push(one(t, 1, Sharing::Shared));
                    v.push(one(t, 1, Sharing::PerThread));
                }
            }
        }
        Workload::Find => {
            for walkers in WALKERS {
                v.push(Params {
                    tree: Some(find_tree),
                    ..one(walkers, 1, Sharing::PerThread)
                });
            }
        }
    }
    v
}

/// The path components of a stat-walk target of `depth`: `d1/d2/.../f` (depth-1 directories
/// then the file), relative to a column's root.
pub fn walk_components(depth: usize) -> Vec<String> {
    let mut v: Vec<String> = (1..depth).map(|i| format!("d{i}")).collect();
    v.push("f".to_string());
    v
}
