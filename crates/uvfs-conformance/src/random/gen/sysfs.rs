//! The sysfs family of the generator: in one seed in [`SYSFS_SEEDS_ONE_IN`], a sysfs shown at
//! `/cpu` (a bind mount of its `devices/system/cpu`, made before the first op and before the
//! first snapshot), then now and then an op on its topology attributes and directories: opens
//! with every access mode and creating flags, reads, `pread`s and `lseek`s of what those
//! opens bound, `stat`, `statx`, listings, `mkdir`, `unlink`, `rename`, `link`, `symlink` and
//! `mknod` in its directories, `access`, `statfs`, user xattrs, `readlink`, `truncate` and
//! `chdir` into a topology directory (so relative paths of the other families act there). The
//! other families act on its fds too, as on any.
//!
//! The host's sysfs is the machine's: both sides agree under `cpuN/topology/` only (CASES.md,
//! "sysfs"), so the family names nothing else but the directories on the way, which it never
//! lists or `stat`s; its attributes are text ones and the binary CPU masks and lists
//! (`sysfs_cpumask_attrs_read_as_binary_attributes`). A call of any family that would
//! change a sysfs node (the host refuses those, `crate::sysfs_guard`) is drawn again, as is
//! one that meets a uvfs bug listed in expected-divergences.txt and not fixed yet
//! ([`Gen::meets_open_sysfs_bug`]).
//!
//! The family draws from its own generator, seeded apart from the main one, as the inotify
//! family does.

use super::*;

/// One seed in this many shows a sysfs.
pub(super) const SYSFS_SEEDS_ONE_IN: usize = 6;

/// Mixed into the seed for the family's own generator.
const SYSFS_STREAM: u64 = 0x7379_7366_7300_0000;

/// `mkdir /s; mount sysfs /s; mkdir /cpu; mount --bind /s/devices/system/cpu /cpu; umount /s;
/// rmdir /s`: only `devices/system/cpu` shows (the sysfs root's mode is uvfs's bug
/// `sysfs_root_dir_mode_is_0555`, and the rest is the machine's).
pub(super) fn prelude() -> Vec<Op> {
    const MS_BIND: u64 = 4096;
    vec![
        Op::Mkdirat {
            dirfd: Fd::Raw(-100),
            path: b"/s".to_vec(),
            mode: 0o755,
        },
        Op::Mount {
            src: Some(b"sysfs".to_vec()),
            target: b"/s".to_vec(),
            fstype: Some("sysfs".into()),
            flags: 0,
            data: None,
        },
        Op::Mkdirat {
            dirfd: Fd::Raw(-100),
            path: b"/cpu".to_vec(),
            mode: 0o755,
        },
        Op::Mount {
            src: Some(b"/s/devices/system/cpu".to_vec()),
            target: b"/cpu".to_vec(),
            fstype: None,
            flags: MS_BIND,
            data: None,
        },
        Op::Umount2 {
            target: b"/s".to_vec(),
            flags: 0,
        },
        Op::Unlinkat {
            dirfd: Fd::Raw(-100),
            path: b"/s".to_vec(),
            flags: 0x200,
        },
    ]
}

/// Attributes: text ones, and binary CPU masks and lists (reads agree at every offset and
/// count).
const ATTRS: [&[u8]; 9] = [
    b"/cpu/cpu0/topology/core_id",
    b"/cpu/cpu0/topology/die_id",
    b"/cpu/cpu0/topology/cluster_id",
    b"/cpu/cpu0/topology/physical_package_id",
    b"/cpu/cpu1/topology/core_id",
    b"/cpu/cpu1/topology/cluster_id",
    b"/cpu/cpu0/topology/core_siblings_list",
    b"/cpu/cpu1/topology/thread_siblings",
    b"/cpu/cpu0/topology/package_cpus",
];

/// Topology directories.
const DIRS: [&[u8]; 4] = [
    b"/cpu/cpu0/topology",
    b"/cpu/cpu1/topology",
    b"/cpu/cpu0/topology/",
    b"/cpu/cpu0/topology/.",
];

/// Names that are not there, or not what the path says, or not to be listed.
const OTHER: [&[u8]; 8] = [
    b"/cpu/cpu0/topology/a",
    b"/cpu/cpu0/topology/core_id/",
    b"/cpu/cpu0/topology/core_id/a",
    b"/cpu/cpu0/topology/core_siblings_list",
    b"/cpu/cpu1/topology/thread_siblings",
    b"/cpu/cpu0/a",
    b"/cpu/a",
    b"/cpu/cpu0/topology/..",
];

/// The family's state: its generator and the fds its opens bound.
#[derive(Debug)]
pub(super) struct Sysfs {
    rng: Rng,
    /// Names bound by the family's opens that succeeded on the guide.
    fds: Vec<String>,
}

impl Sysfs {
    /// The family for `seed`, or `None` for a seed without a sysfs.
    pub(super) fn for_seed(seed: u64) -> Option<Sysfs> {
        let mut rng = Rng::new(seed ^ SYSFS_STREAM);
        (rng.below(SYSFS_SEEDS_ONE_IN) == 0).then(|| Sysfs {
            rng,
            fds: Vec::new(),
        })
    }

    /// Remembers what a successful op of the family bound.
    pub(super) fn note(&mut self, op: &Op, names: &str) {
        if let Op::Open { path, .. } = op {
            if path.starts_with(b"/cpu/") {
                self.fds.push(names.to_string());
            }
        }
    }

    fn attr(&mut self) -> Vec<u8> {
        self.rng.pick(&ATTRS).to_vec()
    }

    /// Any path of the family: mostly attributes, then directories, then the others.
    fn path(&mut self) -> Vec<u8> {
        match self.rng.below(10) {
            0..=4 => self.attr(),
            5..=7 => self.rng.pick(&DIRS).to_vec(),
            _ => self.rng.pick(&OTHER).to_vec(),
        }
    }

    /// A path to `stat`: attributes (binary ones too) and topology directories.
    fn stat_path(&mut self) -> Vec<u8> {
        match self.rng.below(6) {
            0..=2 => self.attr(),
            3 => b"/cpu/cpu1/topology/core_siblings_list".to_vec(),
            _ => self.rng.pick(&DIRS).to_vec(),
        }
    }

    fn fd(&mut self) -> Option<Fd> {
        (!self.fds.is_empty()).then(|| Fd::Var(self.rng.pick(&self.fds).clone()))
    }

    fn open_flags(&mut self) -> i64 {
        let mut f = *self
            .rng
            .weighted(&[(10, 0o0), (2, 0o1), (2, 0o2), (1, 0o3)]);
        for (percent, bit) in [
            (10, 0o100),     // O_CREAT
            (5, 0o200),      // O_EXCL
            (5, 0o1000),     // O_TRUNC
            (5, 0o2000),     // O_APPEND
            (10, 0o200000),  // O_DIRECTORY
            (5, 0o400000),   // O_NOFOLLOW
            (5, 0o10000000), // O_PATH
            (2, 0o20200000), // O_TMPFILE
            (10, 0o4000),    // O_NONBLOCK
            (10, 0o2000000), // O_CLOEXEC
            (3, 0o1000000),  // O_NOATIME
        ] {
            if self.rng.chance(percent) {
                f |= bit;
            }
        }
        f
    }
}

impl Gen {
    /// An op of the sysfs family, in a seed that has one: about one op in four.
    pub(super) fn sysfs_op(&mut self) -> Option<Op> {
        let s = self.sysfs.as_mut()?;
        if !s.rng.chance(25) {
            return None;
        }
        let op = match s.rng.below(20) {
            0..=4 => {
                let path = match s.rng.below(4) {
                    0 => s.rng.pick(&DIRS).to_vec(),
                    1 => s.rng.pick(&OTHER[..3]).to_vec(),
                    _ => s.attr(),
                };
                Op::Open {
                    path,
                    flags: s.open_flags(),
                    mode: 0o644,
                }
            }
            5..=7 => match s.fd() {
                Some(fd) => {
                    let count = *s.rng.pick(&[0, 1, 2, 3, 100, 4096, 4097]);
                    if s.rng.chance(50) {
                        Op::Read { fd, count }
                    } else {
                        Op::Pread {
                            fd,
                            count,
                            off: *s.rng.pick(&[0, 1, 2, 3, 5, 6, 7, 4095, 4096, 100_000, -1]),
                        }
                    }
                }
                None => Op::Listdir {
                    path: s.rng.pick(&DIRS).to_vec(),
                },
            },
            8 | 9 => match s.fd() {
                Some(fd) => Op::Lseek {
                    fd,
                    off: Offset::Raw(*s.rng.pick(&[0, 1, 2, -1, 5, 4095, 4096, 4097, 1 << 20])),
                    whence: *s.rng.pick(&[0, 1, 2, 3, 4, 0, 1, 5]),
                },
                None => Op::Listdir {
                    path: s.rng.pick(&DIRS).to_vec(),
                },
            },
            10 => {
                let path = s.stat_path();
                Op::Fstatat {
                    dirfd: Fd::Raw(-100),
                    path,
                    flags: *s.rng.pick(&[0, 0x100]),
                }
            }
            11 => match (s.rng.chance(50), s.fd()) {
                (true, Some(fd)) => Op::Getdents {
                    fd,
                    bufsize: *s.rng.pick(&[24, 64, 200, 4096]),
                },
                _ => Op::Listdir {
                    path: s.rng.pick(&DIRS).to_vec(),
                },
            },
            12 => {
                let name = *s.rng.pick(&[&b"a"[..], b"core_id", b"die_id", b"."]);
                let dir = s.rng.pick(&DIRS[..2]).to_vec();
                let mut path = dir;
                path.push(b'/');
                path.extend_from_slice(name);
                match s.rng.below(4) {
                    0 => Op::Mkdirat {
                        dirfd: Fd::Raw(-100),
                        path,
                        mode: 0o755,
                    },
                    1 => Op::Unlinkat {
                        dirfd: Fd::Raw(-100),
                        path,
                        flags: *s.rng.pick(&[0, 0x200]),
                    },
                    2 => Op::Mknod {
                        path,
                        mode: *s.rng.pick(&[0o100644, 0o644, 0o20644, 0o140644]),
                        dev: 0,
                    },
                    _ => Op::Symlink {
                        target: b"core_id".to_vec(),
                        path,
                    },
                }
            }
            13 => {
                let old = s.path();
                let new = match s.rng.below(3) {
                    0 => s.path(),
                    1 => b"/a".to_vec(),
                    _ => b"/cpu/cpu0/topology/b".to_vec(),
                };
                if s.rng.chance(50) {
                    Op::Renameat2 {
                        olddirfd: Fd::Raw(-100),
                        old,
                        newdirfd: Fd::Raw(-100),
                        new,
                        flags: 0,
                    }
                } else {
                    Op::Linkat {
                        olddirfd: Fd::Raw(-100),
                        old,
                        newdirfd: Fd::Raw(-100),
                        new,
                        flags: 0,
                    }
                }
            }
            14 => Op::Faccessat2 {
                dirfd: Fd::Raw(-100),
                path: s.path(),
                mode: *s.rng.pick(&[0, 1, 2, 4, 6]),
                flags: *s.rng.pick(&[0, 0x200]),
            },
            15 => match (s.rng.chance(50), s.fd()) {
                (true, Some(fd)) => Op::Fstatfs { fd },
                _ => Op::Statfs { path: s.path() },
            },
            16 => {
                let target = match (s.rng.chance(30), s.fd()) {
                    (true, Some(fd)) => XattrTarget::File(fd),
                    _ => XattrTarget::Path(s.path()),
                };
                match s.rng.below(3) {
                    0 => Op::Getxattr {
                        target,
                        name: s.rng.pick(&[&b"user.a"[..], b"trusted.t", b"foo"]).to_vec(),
                        size: 4096,
                    },
                    1 => Op::Listxattr { target, size: 4096 },
                    _ => Op::Setxattr {
                        target,
                        name: b"user.a".to_vec(),
                        value: b"value".to_vec(),
                        flags: 0,
                    },
                }
            }
            17 => Op::Readlinkat {
                dirfd: Fd::Raw(-100),
                path: s.path(),
                count: 4096,
            },
            18 => Op::Truncate {
                path: s.path(),
                len: *s.rng.pick(&[0, 1, 4096, -1]),
            },
            _ => Op::Chdir {
                path: s.rng.pick(&DIRS[..2]).to_vec(),
            },
        };
        Some(op)
    }

    /// `op`, or another drawn in its place when it would change a sysfs node (the host
    /// refuses those: `crate::sysfs_guard`) or meet an open uvfs bug on sysfs; a `getcwd`
    /// if twenty draws do.
    pub(super) fn away_from_sysfs_changes(&mut self, mut op: Op) -> Op {
        for _ in 0..20 {
            let refused = self
                .guide
                .as_ref()
                .is_some_and(|g| g.changes_sysfs(&op, &self.guide_fds));
            if !refused && !self.meets_open_sysfs_bug(&op) {
                return op;
            }
            op = self.op();
        }
        Op::Getcwd { size: 4096 }
    }

    /// Whether `op` meets a uvfs bug on sysfs that expected-divergences.txt lists and that is
    /// not fixed yet (each arm goes with its fix; the cases named keep the bug in view), or
    /// lists a sysfs directory whose host listing is the machine's.
    pub(super) fn meets_open_sysfs_bug(&self, op: &Op) -> bool {
        let Some(guide) = self.guide.as_ref() else {
            return false;
        };
        const AT_FDCWD: i32 = -100;
        /// Events other readers of a file cause: access, close without writing, open (inotify's
        /// and fanotify's bits alike), and fanotify's open for exec.
        const READERS_EVENTS: i64 = 0x1 | 0x10 | 0x20 | 0x1000;
        match op {
            // Not a bug: the host's sysfs is the machine's, read by other processes (the
            // host side's snapshots of other seeds among them), whose opens, reads and closes
            // a watch or mark there would see as well (CASES.md, "sysfs"; random seeds 44257
            // and 47598).
            Op::InotifyAddWatch { path, mask, .. } => {
                mask & READERS_EVENTS != 0 && guide.on_sysfs_at(AT_FDCWD, path)
            }
            Op::FanotifyMark {
                mask, dirfd, path, ..
            } => {
                let dirfd = self.guide_fds.get(dirfd);
                mask & READERS_EVENTS != 0
                    && guide.on_sysfs_at(dirfd, path.as_deref().unwrap_or_default())
            }
            // Not a bug: an advisory lock on a sysfs node is the machine's node's, which other
            // processes (the other host worker's seeds among them) may lock or test at the
            // same time, so a `flock` or a record lock there can find theirs (CASES.md,
            // "sysfs"; random seed 110456, whose `flock LOCK_EX|LOCK_NB` met EAGAIN on the host
            // with two workers and matched with one).
            Op::Flock { fd, .. }
            | Op::Fcntl {
                fd,
                cmd: crate::op::Fcntl::Lock(..),
            } => guide.fd_on_sysfs(self.guide_fds.get(fd)),
            // Not a bug: a listing of a sysfs directory above a topology one shows the
            // machine's entries (CASES.md, "sysfs").
            Op::Listdir { path } => guide.sysfs_dir_with_subdirs(AT_FDCWD, Some(path)),
            Op::Getdents { fd, .. } => guide.sysfs_dir_with_subdirs(self.guide_fds.get(fd), None),
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sysfs seed shows the sysfs before its first snapshot, and no op of any family in it
    /// would change a sysfs node (the host refuses those) or meet an open uvfs bug; enough
    /// seeds and ops of the family to matter.
    #[test]
    fn sysfs_seeds_mount_first_and_never_change_the_sysfs() {
        let (mut seeds, mut family, mut checked, mut locks) = (0, 0, 0, 0);
        for seed in 0..300 {
            let case = generate(seed, Shape::default());
            let prelude = prelude();
            if case.steps.first().map(|s| &s.op) != prelude.first() {
                continue;
            }
            seeds += 1;
            let ops: Vec<&Op> = case.steps.iter().map(|s| &s.op).collect();
            assert_eq!(ops[..prelude.len()], prelude.iter().collect::<Vec<_>>()[..]);
            assert_eq!(ops[prelude.len() + 1], &Op::Snapshot, "seed {seed}");
            // Replay on a guide, asking before every op what the host's guard would, and
            // checking after it, independently of the guard, that no sysfs node changed its
            // mode, owner or xattrs (uvfs's sysfs is the case's own, so it shows what the
            // host's would have suffered).
            let mut guide = UvfsBackend::new(case.mount.as_deref()).expect("root mount");
            let mut fds = Fds::default();
            let mut before = None;
            for (k, s) in case.steps.iter().enumerate() {
                if s.op == Op::Snapshot {
                    let now = sysfs_nodes(&guide);
                    match &before {
                        None => before = Some(now),
                        Some(b) => {
                            for (path, what) in &now {
                                if let Some(was) = b.get(path) {
                                    assert_eq!(
                                        was,
                                        what,
                                        "seed {seed} step {k}: {}",
                                        String::from_utf8_lossy(path)
                                    );
                                }
                            }
                            checked += 1;
                        }
                    }
                    continue;
                }
                assert!(
                    !guide.changes_sysfs(&s.op, &fds),
                    "seed {seed} step {k}: {}",
                    s.text
                );
                // No advisory lock on a sysfs node: the machine's node, which other processes
                // lock too (`meets_open_sysfs_bug`).
                if let Op::Flock { fd, .. }
                | Op::Fcntl {
                    fd,
                    cmd: crate::op::Fcntl::Lock(..),
                } = &s.op
                {
                    assert!(
                        !guide.fd_on_sysfs(fds.get(fd)),
                        "seed {seed} step {k}: {}",
                        s.text
                    );
                    locks += 1;
                }
                if s.text.contains("/cpu/") {
                    family += 1;
                }
                let out = guide.run(k, &s.op, &fds);
                if let Some(b) = &s.bind {
                    fds.bind(b, &out, 1);
                }
            }
        }
        assert!(seeds >= 10, "only {seeds} sysfs seeds in 300");
        assert!(
            locks >= seeds / 2,
            "only {locks} advisory locks in {seeds} seeds"
        );
        assert!(checked >= 10 * seeds, "only {checked} snapshots checked");
        assert!(
            family >= 10 * seeds,
            "only {family} ops on /cpu in {seeds} seeds"
        );
    }

    /// Mode, owner and xattrs of every node on a sysfs that a snapshot of `guide` shows, by
    /// path (a mount over a sysfs directory hides what it covers, and changes nothing there).
    fn sysfs_nodes(guide: &UvfsBackend) -> std::collections::BTreeMap<Vec<u8>, String> {
        let Value::Snapshot(snap) = guide.snapshot_now() else {
            panic!("a snapshot");
        };
        let sysfs_dev = snap
            .entries
            .iter()
            .find(|e| e.path.0 == b"/cpu/cpu0/topology/core_id")
            .and_then(|e| e.stat.as_ref().ok())
            .map(|s| s.dev);
        snap.entries
            .iter()
            .filter_map(|e| {
                let s = e.stat.as_ref().ok()?;
                (Some(s.dev) == sysfs_dev).then(|| {
                    let what = format!("{:o} {} {} {:?}", s.mode, s.uid, s.gid, e.xattrs);
                    (e.path.0.clone(), what)
                })
            })
            .collect()
    }
}
