//! What a benchmark run measures: workloads and their parameters.

use serde::{Deserialize, Serialize};

use crate::find::{Tree, WALKERS};
use crate::watch::Watch;

/// A workload of the suite.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "kebab-case")]
pub enum Workload {
    /// 1-byte pwrite at offset 0 of one tmpfs file, in a loop (the 2015 fsnotify thread).
    Write1,
    /// `write1` under each watch scenario of seed 001 ([`Watch`]): nothing watched, an
    /// unrelated file, the parent directory, the file itself, the mount.
    Write1Watch,
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
    /// `perf bench sched messaging --pipe` in thread mode ([`crate::pipes`]): per group 20
    /// senders each writing 100-byte messages to 20 receivers' pipes. A sample is one whole
    /// run; its "ns/op" is the run's time.
    Messaging,
    /// A 1-byte round trip between two threads over two pipes; ns/op is ns per round trip.
    PipePingpong,
    /// 64 KiB writes streamed from one thread to another through a pipe; ns/op is ns per
    /// 64 KiB write, read whole on the other side.
    PipeBulk,
    /// open, read, close of `/sys/devices/system/cpu/cpu0/topology/core_id` (seed 004, the
    /// kernfs global mutex): [`crate::sysfs`].
    SysfsOpenRead,
}

impl Workload {
    /// Every workload, in suite order.
    pub const ALL: [Workload; 11] = [
        Workload::Write1,
        Workload::Write1Watch,
        Workload::Read1,
        Workload::OpenReadClose,
        Workload::StatWalk,
        Workload::CreateUnlink,
        Workload::Find,
        Workload::Messaging,
        Workload::PipePingpong,
        Workload::PipeBulk,
        Workload::SysfsOpenRead,
    ];

    /// The name used on the command line and in output.
    pub fn name(self) -> &'static str {
        match self {
            Workload::Write1 => "write1",
            Workload::Write1Watch => "write1-watch",
            Workload::Read1 => "read1",
            Workload::OpenReadClose => "open-read-close",
            Workload::StatWalk => "stat-walk",
            Workload::CreateUnlink => "create-unlink",
            Workload::Find => "find",
            Workload::Messaging => "messaging",
            Workload::PipePingpong => "pipe-pingpong",
            Workload::PipeBulk => "pipe-bulk",
            Workload::SysfsOpenRead => "sysfs-open-read",
        }
    }

    /// The workload named `s`.
    pub fn from_name(s: &str) -> Option<Workload> {
        Self::ALL.into_iter().find(|w| w.name() == s)
    }

    /// True for the pipe workloads, which only the columns with pipes run.
    pub fn uses_pipes(self) -> bool {
        matches!(
            self,
            Workload::Messaging | Workload::PipePingpong | Workload::PipeBulk
        )
    }
}

/// The size of one `messaging` run (perf's `-g` and `-l`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
pub struct Messaging {
    /// Groups of 20 senders and 20 receivers.
    pub groups: usize,
    /// Messages each sender writes to each receiver of its group.
    pub loops: u64,
}

/// Senders per group, and receivers per group (perf's `num_fds`).
pub const MESSAGING_FDS: usize = 20;
/// Bytes of one message (perf's `DATASIZE`).
pub const MESSAGE_BYTES: usize = 100;
/// perf's default loop count.
pub const MESSAGING_LOOPS: u64 = 100;
/// The group counts of a `messaging` run unless asked otherwise.
pub const MESSAGING_GROUPS: [usize; 4] = [1, 2, 4, 8];
/// Bytes of one `pipe-bulk` write.
pub const BULK_WRITE_BYTES: usize = 64 * 1024;

/// Whether threads share the object they work on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "kebab-case")]
pub enum Sharing {
    /// All threads use the same file (or directory).
    Shared,
    /// Each thread has its own file (or directory).
    PerThread,
}

/// One measured configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
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
    /// Groups and loops (`messaging`); `None` otherwise.
    pub messaging: Option<Messaging>,
    /// What is watched while the workload runs (`write1-watch`); [`Watch::None`] otherwise.
    pub watch: Watch,
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
        if let Some(m) = self.messaging {
            return format!("groups={}", m.groups);
        }
        if self.workload == Workload::Write1Watch {
            return format!("watch={}", self.watch.name());
        }
        if matches!(self.workload, Workload::PipePingpong | Workload::PipeBulk) {
            return "2 threads".to_string();
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

    /// The operation count every sample of this configuration runs, if it is fixed rather
    /// than calibrated: a `messaging` sample is one whole run (1 "op").
    pub fn fixed_ops(&self) -> Option<u64> {
        self.messaging.map(|_| 1)
    }

    /// The size of a `messaging` configuration.
    ///
    /// # Errors
    /// The configuration has none (a column bug).
    pub fn messaging_size(&self) -> anyhow::Result<Messaging> {
        self.messaging
            .ok_or_else(|| anyhow::anyhow!("{:?} has no messaging size", self.workload))
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
/// with [`WALKERS`] walkers, a tree each; `messaging` runs each of `messaging`'s group counts
/// with its loops; `write1-watch` each scenario of `watches`, in order.
pub fn grid(
    workload: Workload,
    threads: &[usize],
    find_tree: Tree,
    messaging: &MessagingGrid,
    watches: &[Watch],
) -> Vec<Params> {
    let one = |t, depth, sharing| Params {
        workload,
        threads: t,
        depth,
        sharing,
        tree: None,
        messaging: None,
        watch: Watch::None,
    };
    let mut v = Vec::new();
    match workload {
        Workload::Write1 | Workload::Read1 => v.push(one(1, 1, Sharing::Shared)),
        Workload::Write1Watch => {
            for &watch in watches {
                v.push(Params {
                    watch,
                    ..one(1, 1, Sharing::Shared)
                });
            }
        }
        Workload::StatWalk => {
            for d in DEPTHS {
                v.push(one(1, d, Sharing::Shared));
            }
        }
        Workload::OpenReadClose | Workload::CreateUnlink | Workload::SysfsOpenRead => {
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
        Workload::Messaging => {
            for &groups in &messaging.groups {
                v.push(Params {
                    messaging: Some(Messaging {
                        groups,
                        loops: messaging.loops,
                    }),
                    ..one(groups * 2 * MESSAGING_FDS, 1, Sharing::PerThread)
                });
            }
        }
        Workload::PipePingpong | Workload::PipeBulk => v.push(one(2, 1, Sharing::Shared)),
    }
    v
}

/// The `messaging` configurations of a run: group counts and loops.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MessagingGrid {
    /// Group counts, in order.
    pub groups: Vec<usize>,
    /// Loops of every run.
    pub loops: u64,
}

impl MessagingGrid {
    /// perf's loops and groups 1, 2, 4, 8; groups 1 and 2 of 10 loops for a smoke pass.
    pub fn default_for(quick: bool) -> MessagingGrid {
        if quick {
            MessagingGrid {
                groups: vec![1, 2],
                loops: 10,
            }
        } else {
            MessagingGrid {
                groups: MESSAGING_GROUPS.to_vec(),
                loops: MESSAGING_LOOPS,
            }
        }
    }
}

/// The path components of a stat-walk target of `depth`: `d1/d2/.../f` (depth-1 directories
/// then the file), relative to a column's root.
pub fn walk_components(depth: usize) -> Vec<String> {
    let mut v: Vec<String> = (1..depth).map(|i| format!("d{i}")).collect();
    v.push("f".to_string());
    v
}
