//! The generator: a seed becomes a [`Case`] of random operations over a small name space, so
//! that names collide and most operations meet objects that earlier ones made.
//!
//! The generator keeps no model of the tree. Instead it runs each op it makes on a uvfs guide
//! as it goes and steers by what happened there: fds are mostly drawn from those the guide
//! still has open, and paths often from those it created. The guide only steers: the host
//! kernel is the oracle, and an op that fails on both sides is as useful as one that succeeds
//! (the driver prints the share of ops that succeeded). A seed therefore names a sequence for a
//! given version of uvfs; a divergence is kept as its printed, minimised case.
//!
//! Safety of the host side: every tmpfs the sequence mounts has a `size=` limit (a `fallocate`
//! of a terabyte on an unlimited tmpfs would take the machine's memory), device nodes use major
//! 0 (no driver: opening one is `ENXIO`), and FIFOs are only made in seeds whose every open is
//! non-blocking, `O_RDWR` or `O_PATH` (a blocking FIFO open would hang the host side).

use std::path::PathBuf;

use super::rng::Rng;

mod attrs;
mod fanotify;
mod fds;
mod mount;
mod notify;
mod ready;
mod sysfs;
use crate::backend::{Backend, Fds};
use crate::op::cred::{CapMasks, CapWhich, CredOp};
use crate::op::{Fcntl, Fd, FlockArg, LockCmd, Offset, Op, TaskStart, Time, XattrTarget};
use crate::outcome::{Outcome, Value};
use crate::parse::{Case, Step, Timing};
use crate::uvfs_backend::UvfsBackend;
use fanotify::Fanotify;
use notify::Notify;
use ready::AnonNames;
use sysfs::Sysfs;

/// The names every path is built from: few, so that they collide.
const NAMES: [&str; 4] = ["a", "b", "c", "d"];

/// Limits of the root tmpfs: small enough that `ENOSPC` is reachable, and every mount has one.
const ROOT_MOUNTS: [&str; 4] = [
    "size=1m,nr_inodes=64",
    "size=256k,nr_inodes=32",
    "size=4m,nr_inodes=16,mode=0755",
    "size=64k,nr_inodes=128,mode=01777",
];

/// Options of the tmpfs mounts a sequence makes; every one has a size limit.
const MOUNT_DATA: [&str; 5] = [
    "size=64k",
    "size=128k,nr_inodes=8",
    "size=64k,mode=0700",
    "size=64k,uid=1000,gid=1000",
    "size=32k,nr_inodes=4,mode=01777",
];

/// Offsets and lengths: the edges where overflow and page arithmetic live.
const OFFSETS: [i64; 16] = [
    0,
    1,
    7,
    4095,
    4096,
    4097,
    8192,
    65536,
    1 << 20,
    1 << 40,
    i64::MAX,
    i64::MAX - 1,
    i64::MAX - 4095,
    -1,
    -4096,
    i64::MIN,
];

/// Read sizes.
const COUNTS: [usize; 8] = [0, 1, 5, 100, 4095, 4096, 5000, 70000];

/// Modes for creation and chmod.
const MODES: [i64; 12] = [
    0o644, 0o755, 0o600, 0o000, 0o777, 0o4755, 0o2755, 0o6711, 0o1777, 0o2775, 0o444, 0o070,
];

/// Ids for chown and credentials: root, the two test users, a group only one of them is in.
const IDS: [i64; 6] = [-1, 0, 1000, 1001, 100, 2000];

/// Xattr names: every namespace, and the malformed ones.
const XATTR_NAMES: [&[u8]; 10] = [
    b"user.a",
    b"user.b",
    b"user.a",
    b"trusted.t",
    b"security.s",
    b"user.",
    b"nonamespace",
    b"system.nope",
    b"trusted.t",
    b"user.b",
];

/// What a sequence looks like.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    /// Operations per sequence, each followed by a `snapshot`.
    pub ops: usize,
    /// One seed in `ticked_one_in` runs with every op on a fresh clock tick (exact atime).
    pub ticked_one_in: u64,
}

impl Default for Shape {
    fn default() -> Shape {
        Shape {
            ops: 120,
            ticked_one_in: 64,
        }
    }
}

/// The sequence for `seed`: a case named `random_SEED`.
pub fn generate(seed: u64, shape: Shape) -> Case {
    let mut rng = Rng::new(seed);
    let sysfs = Sysfs::for_seed(seed);
    // No FIFOs, pipes or readiness calls beside a sysfs: the sysfs family opens and reads in
    // blocking mode, which a seed with FIFOs never does (a blocking open or read of a FIFO
    // would wait for ever).
    let fifos = rng.chance(10) && sysfs.is_none();
    let mount = Some(rng.pick(&ROOT_MOUNTS).to_string());
    let mut g = Gen {
        rng,
        fds: Vec::new(),
        open: Vec::new(),
        known: Vec::new(),
        fifos,
        anon: AnonNames::default(),
        notify: Notify::for_seed(seed),
        fanotify: Fanotify::for_seed(seed),
        sysfs,
        guide: UvfsBackend::new(mount.as_deref()).ok(),
        guide_fds: Fds::default(),
        tasks: 1,
        task: 1,
    };
    let timing = if shape.ticked_one_in > 0 && seed.is_multiple_of(shape.ticked_one_in) {
        Timing::Ticked
    } else {
        Timing::Burst
    };
    let mut steps = Vec::with_capacity(2 * shape.ops);
    // A sysfs seed's prelude runs before the first snapshot (sysfs.rs), and the paths it
    // made are not the other families' to draw.
    if g.sysfs.is_some() {
        for op in sysfs::prelude() {
            g.observe(&op, None);
            steps.push(Step {
                line: steps.len() + 1,
                text: op.to_string(),
                op,
                bind: None,
            });
        }
        g.known.clear();
    }
    let base = steps.len();
    for i in 0..shape.ops {
        let mut op = g
            .notify_op(i)
            .or_else(|| g.fanotify_op())
            .or_else(|| g.sysfs_op())
            .unwrap_or_else(|| g.op());
        if g.sysfs.is_some() {
            op = g.away_from_sysfs_changes(op);
        }
        let bind = match op {
            // The read end and the write end.
            Op::Pipe2 { .. } => Some(format!("f{}r f{}w", i + 1, i + 1)),
            _ => op.returns_fd().then(|| format!("f{}", i + 1)),
        };
        g.observe(&op, bind.as_deref());
        steps.push(Step {
            line: base + 2 * i + 1,
            text: op.to_string(),
            op,
            bind,
        });
        steps.push(Step {
            line: base + 2 * i + 2,
            text: "snapshot".into(),
            op: Op::Snapshot,
            bind: None,
        });
    }
    Case {
        name: format!("random_{seed}"),
        file: PathBuf::from(format!("random:{seed}")),
        line: 0,
        mount,
        mount_line: 0,
        timing,
        steps,
    }
}

struct Gen {
    rng: Rng,
    /// Names bound so far (open or closed: a closed one tests `EBADF` and fd reuse).
    fds: Vec<String>,
    /// Names whose fd the guide still has open.
    open: Vec<String>,
    /// Paths the guide created (they may be gone again).
    known: Vec<Vec<u8>>,
    /// This seed makes FIFOs, so every open, and every read, must be one that cannot block.
    fifos: bool,
    /// Names bound by `eventfd2` and `epoll_create1` (open or not): see `readiness_op`.
    anon: AnonNames,
    /// The inotify family's generator and instances, in a seed that makes them.
    notify: Option<Notify>,
    /// The fanotify family's generator and groups, in a seed that makes them.
    fanotify: Option<Fanotify>,
    /// The sysfs family's generator and fds, in a seed that shows a sysfs.
    sysfs: Option<Sysfs>,
    /// uvfs, run along to steer the choices; `None` if the root mount failed.
    guide: Option<UvfsBackend>,
    guide_fds: Fds,
    /// Tasks made so far (task 1 and those `task N fork|thread` made: numbered 1 to this).
    tasks: u32,
    /// The task the next op runs in.
    task: u32,
}

/// The path an op creates when it succeeds.
fn created_path(op: &Op) -> Option<&[u8]> {
    match op {
        Op::Open { path, flags, .. } | Op::Openat { path, flags, .. } if flags & 0o100 != 0 => {
            Some(path)
        }
        Op::Mkdirat { path, .. }
        | Op::Mknod { path, .. }
        | Op::Symlink { path, .. }
        | Op::Linkat { new: path, .. }
        | Op::Renameat2 { new: path, .. } => Some(path),
        _ => None,
    }
}

/// The op families and their weights.
#[derive(Clone, Copy)]
enum Kind {
    Open,
    Openat2,
    Close,
    Read,
    Write,
    Vectored,
    Lseek,
    Truncate,
    Fallocate,
    Sync,
    Dup,
    Fcntl,
    Lock,
    Mkdir,
    Mknod,
    Unlink,
    Rename,
    Link,
    Symlink,
    Readlink,
    Stat,
    Statx,
    Chmod,
    Chown,
    Utimens,
    Access,
    Getdents,
    Dirs,
    Umask,
    Xattr,
    Statfs,
    Mount,
    Cred,
    Task,
    Rlimit,
}

const KINDS: [(u32, Kind); 35] = [
    (14, Kind::Open),
    (3, Kind::Openat2),
    (4, Kind::Close),
    (5, Kind::Read),
    (7, Kind::Write),
    (3, Kind::Vectored),
    (4, Kind::Lseek),
    (3, Kind::Truncate),
    (3, Kind::Fallocate),
    (1, Kind::Sync),
    (3, Kind::Dup),
    (3, Kind::Fcntl),
    (3, Kind::Lock),
    (7, Kind::Mkdir),
    (3, Kind::Mknod),
    (6, Kind::Unlink),
    (7, Kind::Rename),
    (4, Kind::Link),
    (4, Kind::Symlink),
    (2, Kind::Readlink),
    (5, Kind::Stat),
    (2, Kind::Statx),
    (4, Kind::Chmod),
    (3, Kind::Chown),
    (3, Kind::Utimens),
    (3, Kind::Access),
    (3, Kind::Getdents),
    (2, Kind::Dirs),
    (1, Kind::Umask),
    (6, Kind::Xattr),
    (1, Kind::Statfs),
    (2, Kind::Mount),
    (3, Kind::Cred),
    (1, Kind::Task),
    (1, Kind::Rlimit),
];

/// Capabilities the VFS consults, the ones worth dropping one at a time.
const FS_CAPS: [u32; 10] = [0, 1, 2, 3, 4, 6, 7, 18, 21, 27];

impl Gen {
    /// Runs `op` on the guide and learns from the outcome.
    fn observe(&mut self, op: &Op, bind: Option<&str>) {
        let Some(guide) = self.guide.as_mut() else {
            return;
        };
        let outcome = guide.run(self.fds.len(), op, &self.guide_fds);
        let ok = matches!(outcome, Outcome::Ok(_));
        if let (true, Op::Task { id, start }) = (ok, op) {
            self.task = *id;
            if start.is_some() {
                self.tasks = self.tasks.max(*id);
            }
        }
        if let Some(names) = bind {
            self.guide_fds.bind(names, &outcome, self.task);
            for name in names.split(' ') {
                self.fds.push(name.to_string());
                if matches!(outcome, Outcome::Ok(Value::Int(_) | Value::FdPair(..))) {
                    self.open.push(name.to_string());
                }
            }
        }
        if let (true, Some(names)) = (ok, bind) {
            self.anon.note(op, names);
            if let Some(n) = self.notify.as_mut() {
                n.note(op, names);
            }
            if let Some(n) = self.fanotify.as_mut() {
                n.note(op, names);
            }
            if let Some(n) = self.sysfs.as_mut() {
                n.note(op, names);
            }
        }
        if let (true, Op::Close { fd: Fd::Var(name) }) = (ok, op) {
            self.open.retain(|n| n != name);
        }
        if let (true, Some(path)) = (ok, created_path(op)) {
            if !path.is_empty() && !self.known.iter().any(|k| k == path) {
                self.known.push(path.to_vec());
            }
        }
    }

    fn op(&mut self) -> Op {
        // Pipes only in seeds that keep every fd non-blocking (a FIFO seed): a read of an
        // empty pipe, or a write to a full one, would wait for ever.
        if self.fifos && self.rng.chance(8) {
            return if self.rng.chance(50) {
                self.splice_op()
            } else {
                self.pipe_op()
            };
        }
        if self.rng.chance(1) {
            return self.sendfile();
        }
        // Readiness calls and eventfds likewise: their reads and writes must not wait.
        if self.fifos && self.rng.chance(20) {
            return self.readiness_op();
        }
        match *self.rng.weighted(&KINDS) {
            Kind::Open => self.open(),
            Kind::Openat2 => Op::Openat2 {
                dirfd: self.dirfd(),
                path: self.path(),
                flags: self.open_flags() as u64,
                mode: self.mode_for_open() as u64,
                resolve: self.resolve(),
            },
            Kind::Close => Op::Close { fd: self.fd() },
            Kind::Read => self.read(),
            Kind::Write => self.write(),
            Kind::Vectored => self.vectored(),
            Kind::Lseek => Op::Lseek {
                fd: self.fd(),
                off: if self.rng.chance(10) {
                    // Resume a listing after an entry it returned.
                    Offset::AfterEntry(self.rng.pick(&NAMES).as_bytes().to_vec())
                } else {
                    Offset::Raw(self.offset())
                },
                whence: *self.rng.pick(&[0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 5]),
            },
            Kind::Truncate => {
                let len = self.length();
                if self.rng.chance(50) {
                    Op::Truncate {
                        path: self.path(),
                        len,
                    }
                } else {
                    Op::Ftruncate { fd: self.fd(), len }
                }
            }
            Kind::Fallocate => Op::Fallocate {
                fd: self.fd(),
                mode: *self.rng.weighted(&[
                    (6, 0),
                    (4, 0x01),
                    (4, 0x03),
                    (1, 0x02),
                    (2, 0x10),
                    (1, 0x11),
                    (1, 0x08),
                    (1, 0x20),
                    (1, 0x40),
                    (1, 0x80),
                ]),
                off: self.offset(),
                len: self.length(),
            },
            Kind::Sync => {
                let fd = self.fd();
                if self.rng.chance(50) {
                    Op::Fsync { fd }
                } else {
                    Op::Fdatasync { fd }
                }
            }
            Kind::Dup => self.dup(),
            Kind::Fcntl => self.fcntl(),
            Kind::Lock => self.lock(),
            Kind::Mkdir => Op::Mkdirat {
                dirfd: self.dirfd(),
                path: self.path(),
                mode: self.mode(),
            },
            Kind::Mknod => self.mknod(),
            Kind::Unlink => Op::Unlinkat {
                dirfd: self.dirfd(),
                path: self.path(),
                flags: *self.rng.weighted(&[(6, 0), (4, 0x200), (1, 0x100)]),
            },
            Kind::Rename => Op::Renameat2 {
                olddirfd: self.dirfd(),
                old: self.path(),
                newdirfd: self.dirfd(),
                new: self.path(),
                flags: *self.rng.weighted(&[
                    (8, 0),
                    (3, 1),
                    (3, 2),
                    (2, 4),
                    (1, 3),
                    (1, 5),
                    (1, 8),
                ]),
            },
            Kind::Link => {
                let flags = *self
                    .rng
                    .weighted(&[(6, 0), (2, 0x400), (1, 0x1000), (1, 0x100)]);
                let (olddirfd, old) = if flags == 0x1000 {
                    (self.fd_arg(), Vec::new())
                } else {
                    (self.dirfd(), self.path())
                };
                Op::Linkat {
                    olddirfd,
                    old,
                    newdirfd: self.dirfd(),
                    new: self.path(),
                    flags,
                }
            }
            Kind::Symlink => Op::Symlink {
                target: self.symlink_target(),
                path: self.path(),
            },
            Kind::Readlink => Op::Readlinkat {
                dirfd: self.dirfd(),
                path: self.path(),
                count: *self.rng.pick(&[0, 1, 3, 4096, 4096]),
            },
            Kind::Stat => self.stat(),
            Kind::Statx => Op::Statx {
                dirfd: self.dirfd(),
                path: self.maybe_empty_path(),
                flags: self.at_flags() | *self.rng.pick(&[0, 0, 0x2000, 0x4000, 0x6000]),
                mask: *self.rng.pick(&[
                    0x7ff,
                    0xfff,
                    0x1fff,
                    0x1,
                    0x800,
                    0,
                    0x8000_0000,
                    0x5fff,
                    0x4000,
                ]),
            },
            Kind::Chmod => self.chmod(),
            Kind::Chown => self.chown(),
            Kind::Utimens => self.utimens(),
            Kind::Access => Op::Faccessat2 {
                dirfd: self.dirfd(),
                path: self.maybe_empty_path(),
                mode: *self.rng.pick(&[0, 1, 2, 4, 6, 7, 8]),
                flags: *self
                    .rng
                    .weighted(&[(5, 0), (3, 0x200), (1, 0x100), (1, 0x1000)]),
            },
            Kind::Getdents => {
                if self.rng.chance(40) {
                    Op::Listdir { path: self.path() }
                } else {
                    Op::Getdents {
                        fd: self.fd(),
                        bufsize: *self.rng.pick(&[0, 1, 24, 64, 200, 4096]),
                    }
                }
            }
            Kind::Dirs => match self.rng.below(5) {
                0 | 1 => Op::Chdir { path: self.path() },
                2 => Op::Fchdir { fd: self.fd() },
                3 => Op::Chroot { path: self.path() },
                _ => Op::Getcwd {
                    size: *self.rng.pick(&[0, 1, 2, 5, 4096]),
                },
            },
            Kind::Umask => Op::Umask {
                mask: *self.rng.pick(&[0o022, 0o077, 0, 0o777, 0o002]),
            },
            Kind::Xattr => self.xattr(),
            Kind::Statfs => {
                if self.rng.chance(15) {
                    Op::Statmount { path: self.path() }
                } else if self.rng.chance(50) {
                    Op::Statfs { path: self.path() }
                } else {
                    Op::Fstatfs { fd: self.fd() }
                }
            }
            Kind::Mount => self.mount(),
            Kind::Cred => Op::Cred(self.cred()),
            Kind::Task => self.task_op(),
            Kind::Rlimit => Op::SetrlimitNofile {
                // Below, at and above the fds a sequence holds; `nr_open` and above it
                // (`EPERM`); `RLIM_INFINITY`.
                limit: *self.rng.pick(&[
                    0,
                    3,
                    4,
                    6,
                    10,
                    64,
                    1024,
                    1 << 20,
                    (1 << 20) + 1,
                    u64::MAX,
                ]),
            },
        }
    }

    /// `task N fork|thread` (a new process or a new thread of the current task's process,
    /// which then acts) while there is room for one, else, or sometimes, `task N` back to one
    /// made before. Every later op runs in the task last named, its fds drawn from all bound
    /// so far (a forked copy shares their numbers, a name another task closed is `EBADF`).
    /// A seed with fanotify groups makes threads only: Linux keeps the events of different
    /// processes apart (`fanotify_should_merge()` compares the pid), uvfs, whose events carry
    /// pid 0, merges them (docs/divergences.md); a process's threads share its pid.
    fn task_op(&mut self) -> Op {
        if self.tasks < crate::op::MAX_TASKS && (self.tasks == 1 || self.rng.chance(60)) {
            let start = if self.fanotify.is_none() && self.rng.chance(50) {
                TaskStart::Fork
            } else {
                TaskStart::Thread
            };
            Op::Task {
                id: self.tasks + 1,
                start: Some(start),
            }
        } else {
            Op::Task {
                id: 1 + self.rng.below(self.tasks as usize) as u32,
                start: None,
            }
        }
    }

    /// A credential id: unchanged (-1), root, the test users, a group.
    fn cred_id(&mut self) -> u32 {
        *self.rng.pick(&IDS) as u32
    }

    /// A credential change of any kind; most keep some privilege, so that a sequence goes on
    /// doing things after it.
    fn cred(&mut self) -> CredOp {
        match self.rng.below(20) {
            0..=5 => CredOp::CapChange {
                cap: *self.rng.pick(&FS_CAPS),
                which: if self.rng.chance(70) {
                    CapWhich::EP
                } else {
                    CapWhich {
                        effective: true,
                        ..CapWhich::default()
                    }
                },
                raise: self.rng.chance(25),
            },
            6 | 7 => CredOp::Setfsuid {
                uid: self.cred_id(),
            },
            8 => CredOp::Setfsgid {
                gid: self.cred_id(),
            },
            9 => CredOp::Setresuid {
                ruid: self.cred_id(),
                euid: self.cred_id(),
                suid: if self.rng.chance(70) {
                    0
                } else {
                    self.cred_id()
                },
            },
            10 => CredOp::Setresgid {
                rgid: self.cred_id(),
                egid: self.cred_id(),
                sgid: self.cred_id(),
            },
            11 => CredOp::Setreuid {
                ruid: self.cred_id(),
                euid: self.cred_id(),
            },
            12 => CredOp::Setregid {
                rgid: self.cred_id(),
                egid: self.cred_id(),
            },
            13 => CredOp::Setuid {
                uid: self.cred_id(),
            },
            14 => CredOp::Setgid {
                gid: self.cred_id(),
            },
            15 => CredOp::Setgroups {
                groups: self
                    .rng
                    .pick(&[&[][..], &[100], &[1000, 100], &[2000, 1001]])
                    .to_vec(),
            },
            16 => CredOp::Getresuid,
            17 => CredOp::Getgroups {
                size: *self.rng.pick(&[0, 1, 64]),
            },
            18 => CredOp::Capget,
            _ => {
                let keep = (1u64 << 41) - 1;
                let drop = 1u64 << *self.rng.pick(&FS_CAPS);
                CredOp::Capset(CapMasks {
                    effective: keep & !drop,
                    permitted: if self.rng.chance(50) {
                        keep
                    } else {
                        keep & !drop
                    },
                    inheritable: if self.rng.chance(20) { drop } else { 0 },
                })
            }
        }
    }

    /// A path over the small name space; now and then a malformed or special one.
    fn path(&mut self) -> Vec<u8> {
        if !self.known.is_empty() && self.rng.chance(50) {
            let p = self.rng.pick(&self.known).clone();
            return p;
        }
        if self.rng.chance(8) {
            let special: &[&[u8]] = &[
                b"/",
                b".",
                b"..",
                b"",
                b"a/",
                b"/a/.",
                b"/a/../b",
                b"a//b",
                b"/a/b/c/d",
                b"b/..",
                b"/../a",
            ];
            let mut p = self.rng.pick(special).to_vec();
            if self.rng.chance(10) {
                // NAME_MAX and one past it.
                p = format!("/{}", "n".repeat(255 + self.rng.below(2))).into_bytes();
            }
            return p;
        }
        let depth = *self.rng.weighted(&[(6, 1), (3, 2), (1, 3)]);
        let mut p = Vec::new();
        if self.rng.chance(75) {
            p.push(b'/');
        }
        for i in 0..depth {
            if i > 0 {
                p.push(b'/');
            }
            p.extend_from_slice(self.rng.pick(&NAMES).as_bytes());
        }
        if self.rng.chance(4) {
            p.push(b'/');
        }
        p
    }

    fn maybe_empty_path(&mut self) -> Vec<u8> {
        if self.rng.chance(10) {
            Vec::new()
        } else {
            self.path()
        }
    }

    fn symlink_target(&mut self) -> Vec<u8> {
        match self.rng.below(10) {
            0 => b"".to_vec(),
            1 => b"/nonexistent".to_vec(),
            2 => self.rng.pick(&NAMES).as_bytes().to_vec(),
            3 => b"..".to_vec(),
            _ => self.path(),
        }
    }

    /// A bound fd most of the time; a bad or standard number otherwise.
    fn fd(&mut self) -> Fd {
        if self.fds.is_empty() || self.rng.chance(6) {
            return Fd::Raw(*self.rng.pick(&[-1, 0, 1, 2, 99, 1_000_000]));
        }
        if !self.open.is_empty() && self.rng.chance(92) {
            return Fd::Var(self.rng.pick(&self.open).clone());
        }
        // Recent fds are likelier to be open.
        let n = self.fds.len();
        let back = self.rng.below(n.min(6));
        Fd::Var(self.fds[n - 1 - back].clone())
    }

    /// A directory fd argument: the cwd, a bound fd, or a bad one.
    fn dirfd(&mut self) -> Fd {
        if self.rng.chance(65) {
            Fd::Raw(-100)
        } else {
            self.fd()
        }
    }

    /// An fd for `AT_EMPTY_PATH`-style calls.
    fn fd_arg(&mut self) -> Fd {
        if self.rng.chance(10) {
            Fd::Raw(-100)
        } else {
            self.fd()
        }
    }

    fn offset(&mut self) -> i64 {
        if self.rng.chance(15) {
            (self.rng.next_u64() % 20_000) as i64
        } else {
            *self.rng.pick(&OFFSETS)
        }
    }

    fn length(&mut self) -> i64 {
        *self
            .rng
            .pick(&[0, 1, 10, 4095, 4096, 4097, 10_000, 1 << 20, -1, i64::MAX])
    }

    fn mode(&mut self) -> i64 {
        if self.rng.chance(10) {
            (self.rng.next_u64() & 0o7777) as i64
        } else {
            *self.rng.pick(&MODES)
        }
    }

    fn mode_for_open(&mut self) -> i64 {
        if self.rng.chance(5) {
            // Bits above the permission bits: openat2 refuses them, openat masks them.
            0o170644
        } else {
            self.mode()
        }
    }

    fn open_flags(&mut self) -> i64 {
        let mut f = *self.rng.weighted(&[(4, 0o0), (3, 0o1), (5, 0o2), (1, 0o3)]);
        for (percent, bit) in [
            (55, 0o100),      // O_CREAT
            (12, 0o200),      // O_EXCL
            (12, 0o1000),     // O_TRUNC
            (12, 0o2000),     // O_APPEND
            (10, 0o200000),   // O_DIRECTORY
            (8, 0o400000),    // O_NOFOLLOW
            (6, 0o10000000),  // O_PATH
            (4, 0o20200000),  // O_TMPFILE
            (10, 0o4000),     // O_NONBLOCK
            (15, 0o2000000),  // O_CLOEXEC
            (4, 0o1000000),   // O_NOATIME
            (3, 0o4010000),   // O_SYNC
            (2, 0o40000),     // O_DIRECT
            (2, 0o400),       // O_NOCTTY
            (2, 0o100000),    // O_LARGEFILE
            (1, 0o20000),     // O_ASYNC
            (1, 0x4000_0000), // an unknown bit
        ] {
            if self.rng.chance(percent) {
                f |= bit;
            }
        }
        // A FIFO opened for reading, or read when empty, blocks (the host's actor and uvfs's
        // guide alike), so a seed that makes FIFOs opens everything non-blocking.
        if self.fifos && f & 0o10000000 == 0 {
            f |= 0o4000;
        }
        f
    }

    fn resolve(&mut self) -> u64 {
        let mut r = 0;
        for (percent, bit) in [
            (10, 0x1),
            (5, 0x2),
            (15, 0x4),
            (15, 0x8),
            (15, 0x10),
            (8, 0x20),
            (1, 0x40),
        ] {
            if self.rng.chance(percent) {
                r |= bit;
            }
        }
        r
    }

    fn open(&mut self) -> Op {
        let flags = self.open_flags();
        let mode = self.mode_for_open();
        if self.rng.chance(70) {
            Op::Open {
                path: self.path(),
                flags,
                mode,
            }
        } else {
            Op::Openat {
                dirfd: self.dirfd(),
                path: self.maybe_empty_path(),
                flags,
                mode,
            }
        }
    }

    fn data(&mut self) -> Vec<u8> {
        match self.rng.below(8) {
            0 => Vec::new(),
            1 => b"x".to_vec(),
            2 | 3 => b"hello world".to_vec(),
            4 => (0..4096).map(|i| (i % 251) as u8).collect(),
            5 => (0..5000).map(|i| (i % 251) as u8).collect(),
            6 => vec![0; 100],
            _ => (0..(self.rng.below(300)))
                .map(|i| (i % 251) as u8)
                .collect(),
        }
    }

    fn read(&mut self) -> Op {
        let fd = self.fd();
        let count = *self.rng.pick(&COUNTS);
        if self.rng.chance(50) {
            Op::Read { fd, count }
        } else {
            Op::Pread {
                fd,
                count,
                off: self.offset(),
            }
        }
    }

    fn write(&mut self) -> Op {
        let fd = self.fd();
        let data = self.data();
        if self.rng.chance(50) {
            Op::Write { fd, data }
        } else {
            Op::Pwrite {
                fd,
                data,
                off: self.offset(),
            }
        }
    }

    fn vectored(&mut self) -> Op {
        let fd = self.fd();
        let n = self.rng.below(4);
        let counts: Vec<usize> = (0..n).map(|_| *self.rng.pick(&COUNTS[..7])).collect();
        let bufs: Vec<Vec<u8>> = (0..n).map(|_| self.data()).collect();
        match self.rng.below(4) {
            0 => Op::Readv { fd, counts },
            1 => Op::Writev { fd, bufs },
            2 => Op::Preadv {
                fd,
                counts,
                off: self.offset(),
            },
            _ => Op::Pwritev {
                fd,
                bufs,
                off: self.offset(),
            },
        }
    }

    fn mknod(&mut self) -> Op {
        let mut types: Vec<(u32, i64)> = vec![
            (4, 0o100000), // S_IFREG
            (2, 0),        // no type: a regular file
            (3, 0o20000),  // S_IFCHR
            (1, 0o60000),  // S_IFBLK
            (3, 0o140000), // S_IFSOCK
            (1, 0o40000),  // S_IFDIR: EPERM
            (1, 0o170000), // not a type
        ];
        if self.fifos {
            types.push((5, 0o10000)); // S_IFIFO
        }
        let kind = *self.rng.weighted(&types);
        let perm = self.mode() & 0o7777;
        Op::Mknod {
            path: self.path(),
            mode: kind | perm,
            // Major 0 has no driver: opening such a node is ENXIO on the host too. The
            // system call reads 32 bits: the last three are 0:2 and 0:0 (a whiteout) with a
            // high half to drop, and minor 256, whose bits lie above the first 12.
            dev: *self
                .rng
                .pick(&[0, 1, 2, 3, 0x1_0000_0002, 0x1_0000_0000, 0x0010_0000]),
        }
    }

    fn at_flags(&mut self) -> i64 {
        *self.rng.weighted(&[
            (6, 0),
            (3, 0x100),
            (1, 0x800),
            (1, 0x1000),
            (1, 0x1100),
            (1, 0x1),
        ])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_always_gives_the_same_case() {
        let a = generate(42, Shape::default());
        let b = generate(42, Shape::default());
        assert_eq!(a, b);
        assert_eq!(a.steps.len(), 240);
        assert!(a
            .steps
            .iter()
            .skip(1)
            .step_by(2)
            .all(|s| s.op == Op::Snapshot));
        assert_ne!(a, generate(43, Shape::default()));
    }

    #[test]
    fn fifo_seeds_never_open_or_read_in_a_blocking_mode() {
        let mut seeds_with_fifos = 0;
        for seed in 0..400 {
            let case = generate(seed, Shape::default());
            let makes_fifo = case.steps.iter().any(|s| {
                matches!(s.op, Op::Mknod { mode, .. } if mode & 0o170000 == 0o10000)
                    || matches!(s.op, Op::Pipe2 { .. })
            });
            if !makes_fifo {
                continue;
            }
            seeds_with_fifos += 1;
            for s in &case.steps {
                let flags = match &s.op {
                    Op::Open { flags, .. } | Op::Openat { flags, .. } | Op::Pipe2 { flags } => {
                        *flags
                    }
                    Op::Openat2 { flags, .. } => *flags as i64,
                    Op::Fcntl {
                        cmd: Fcntl::SetFl(fl),
                        ..
                    } => {
                        assert!(fl & 0o4000 != 0, "seed {seed}: {:?}", s.op);
                        continue;
                    }
                    _ => continue,
                };
                let path_only = flags & 0o10000000 != 0;
                assert!(path_only || flags & 0o4000 != 0, "seed {seed}: {:?}", s.op);
            }
        }
        assert!(
            seeds_with_fifos > 10,
            "only {seeds_with_fifos} seeds made FIFOs"
        );
    }

    #[test]
    fn splice_and_tee_come_only_in_non_blocking_seeds_and_never_wait() {
        let (mut splices, mut sendfiles) = (0, 0);
        for seed in 0..300 {
            let case = generate(seed, Shape::default());
            // Every fd of the seed is opened non-blocking (or `O_PATH`).
            let fifo_seed = case.steps.iter().all(|s| match &s.op {
                Op::Open { flags, .. } | Op::Openat { flags, .. } | Op::Pipe2 { flags } => {
                    flags & 0o4000 != 0 || flags & 0o10000000 != 0
                }
                Op::Openat2 { flags, .. } => flags & 0o4000 != 0 || flags & 0o10000000 != 0,
                _ => true,
            });
            for s in &case.steps {
                match s.op {
                    Op::Splice { flags, .. } | Op::Tee { flags, .. } => {
                        assert!(fifo_seed, "seed {seed}: {:?}", s.op);
                        assert!(flags & 2 != 0, "seed {seed}: SPLICE_F_NONBLOCK");
                        splices += 1;
                    }
                    Op::Sendfile { .. } => sendfiles += 1,
                    _ => {}
                }
            }
        }
        assert!(splices > 30, "only {splices} splice and tee ops");
        assert!(sendfiles > 30, "only {sendfiles} sendfile ops");
    }

    #[test]
    fn every_mount_has_a_size_limit() {
        let mut mounts = 0;
        for seed in 0..300 {
            let case = generate(seed, Shape::default());
            assert!(case.mount.as_deref().is_some_and(|m| m.contains("size=")));
            for s in &case.steps {
                if let Op::Mount {
                    fstype: Some(t),
                    data,
                    ..
                } = &s.op
                {
                    if t == "sysfs" {
                        // The sysfs family's prelude: the machine's tree, no instance made.
                        continue;
                    }
                    assert_eq!(t, "tmpfs");
                    assert!(data.as_deref().is_some_and(|d| d.contains("size=")));
                    mounts += 1;
                }
            }
        }
        assert!(mounts > 50, "only {mounts} new tmpfs mounts in 300 seeds");
    }

    #[test]
    fn tasks_are_made_in_turn_and_switched_to_only_once_made() {
        let (mut forks, mut threads, mut switches, mut fanotify_threads) = (0, 0, 0, 0);
        for seed in 0..300 {
            let case = generate(seed, Shape::default());
            let fanotify = case
                .steps
                .iter()
                .any(|s| matches!(s.op, Op::FanotifyInit { .. }));
            let mut made = 1;
            for s in &case.steps {
                match s.op {
                    Op::Task {
                        id,
                        start: Some(start),
                    } => {
                        assert_eq!(id, made + 1, "seed {seed}: task {id} made out of turn");
                        assert!(id <= crate::op::MAX_TASKS);
                        made = id;
                        match start {
                            // Events of two processes merge on uvfs alone (pid 0).
                            TaskStart::Fork if fanotify => {
                                panic!("seed {seed}: a fork in a fanotify seed")
                            }
                            TaskStart::Fork => forks += 1,
                            TaskStart::Thread if fanotify => fanotify_threads += 1,
                            TaskStart::Thread => threads += 1,
                        }
                    }
                    Op::Task { id, start: None } => {
                        assert!((1..=made).contains(&id), "seed {seed}: task {id} not made");
                        switches += 1;
                    }
                    // No op may wait, whichever task holds the other side.
                    Op::Fcntl {
                        cmd: Fcntl::Lock(LockCmd::SetLkW | LockCmd::OfdSetLkW, _),
                        ..
                    } => panic!("seed {seed}: a waiting lock command"),
                    _ => {}
                }
            }
        }
        assert!(
            forks > 30 && threads > 30 && switches > 10 && fanotify_threads > 0,
            "{forks} forks, {threads} threads ({fanotify_threads} in fanotify seeds), \
             {switches} switches in 300 seeds"
        );
    }
}
