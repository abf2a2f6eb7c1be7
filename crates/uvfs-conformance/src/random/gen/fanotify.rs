//! The fanotify family of the generator: in one seed in [`FANOTIFY_SEEDS_ONE_IN`], a group
//! made by the family's first op (always `FAN_NONBLOCK`), then now and then `fanotify_mark`
//! of a path with random flags and a random mask (inode, mount and filesystem marks, removes,
//! flushes, ignored masks), reads of the queue with buffers of every size, `fionread` and
//! `poll` of a group, and more groups. Every step's `snapshot` opens and lists the tree, so the
//! streams compared include the events of those walks.
//!
//! The family draws from its own generator, seeded apart from the main one and from the
//! inotify family's: a seed without fanotify makes exactly the sequence it made before the
//! family existed.
//!
//! No read can wait: groups are `FAN_NONBLOCK`, and in these seeds every `F_SETFL` keeps
//! `O_NONBLOCK` (see `Gen::fcntl`). Marks stay on the case's tmpfs: mount and filesystem marks
//! name paths of the case. Nothing here depends on what uvfs refuses on purpose
//! (docs/divergences.md): no content class, file-id flag, `FAN_OPEN_EXEC`, `FAN_MARK_IGNORE`,
//! and no `FAN_ONDIR` (see [`EVENT_BITS`]), so the pid uvfs does not report never matters to
//! merging. A read of a group by the main generator's `read` ops shows the raw pid: the
//! expected class `fanotify_pid_zero` (src/random/expect.rs).

use super::*;

/// One seed in this many makes fanotify groups.
pub(super) const FANOTIFY_SEEDS_ONE_IN: usize = 5;

/// Mixed into the seed for the family's own generator.
const FANOTIFY_STREAM: u64 = 0x6661_6e6f_7469_6679;

/// `FAN_NONBLOCK`.
const FAN_NONBLOCK: i64 = 0x2;
/// `FAN_MARK_ADD`.
const FAN_MARK_ADD: i64 = 0x1;
/// `FAN_MARK_REMOVE`.
const FAN_MARK_REMOVE: i64 = 0x2;
/// `FAN_MARK_FLUSH`.
const FAN_MARK_FLUSH: i64 = 0x80;
/// `AT_FDCWD`.
const AT_FDCWD: i32 = -100;

/// The event bits a mask draws from, each by chance. Not `FAN_ONDIR`: the `snapshot` after
/// every op opens and lists every directory, on the host from a process of its own, so Linux
/// would queue those events apart from the actor's where uvfs (pid 0 for all) merges them;
/// without `FAN_ONDIR` no directory event is reported, and the walk opens nothing else.
/// cases/fanotify.cases covers `FAN_ONDIR`.
const EVENT_BITS: [i64; 6] = [
    0x1,         // FAN_ACCESS
    0x2,         // FAN_MODIFY
    0x8,         // FAN_CLOSE_WRITE
    0x10,        // FAN_CLOSE_NOWRITE
    0x20,        // FAN_OPEN
    0x0800_0000, // FAN_EVENT_ON_CHILD
];

/// Bits a notification group without file ids refuses (`EINVAL`), with their chances in
/// percent: `FAN_CREATE`, `FAN_ATTRIB`, `FAN_OPEN_PERM`, `FAN_Q_OVERFLOW`, an unknown bit.
const BAD_BITS: [(u32, i64); 5] = [
    (2, 0x100),
    (1, 0x4),
    (1, 0x1_0000),
    (1, 0x4000),
    (1, 1 << 40),
];

/// `fanotify_mark` flags besides the command, with their chances in percent.
const FLAG_BITS: [(u32, i64); 7] = [
    (12, 0x10),   // FAN_MARK_MOUNT
    (12, 0x100),  // FAN_MARK_FILESYSTEM
    (5, 0x8),     // FAN_MARK_ONLYDIR
    (8, 0x4),     // FAN_MARK_DONT_FOLLOW
    (10, 0x20),   // FAN_MARK_IGNORED_MASK
    (6, 0x40),    // FAN_MARK_IGNORED_SURV_MODIFY
    (1, 0x10000), // not a mark flag
];

/// Paths a mark takes when the seed has created none, or now and then.
const MARK_PATHS: [&[u8]; 8] = [b"/", b"/a", b"/b", b"/a/b", b".", b"/c/d", b"", b"/nope"];

/// The family's state: its generator and the groups it made.
#[derive(Debug)]
pub(super) struct Fanotify {
    rng: Rng,
    /// Whether the family made its first op (the group).
    started: bool,
    /// Names bound by `fanotify_init` that succeeded on the guide.
    groups: Vec<String>,
}

impl Fanotify {
    /// The family for `seed`, or `None` for a seed that makes no group.
    pub(super) fn for_seed(seed: u64) -> Option<Fanotify> {
        let mut rng = Rng::new(seed ^ FANOTIFY_STREAM);
        (rng.below(FANOTIFY_SEEDS_ONE_IN) == 0).then(|| Fanotify {
            rng,
            started: false,
            groups: Vec::new(),
        })
    }

    /// Records the name `op` bound, if it made a group.
    pub(super) fn note(&mut self, op: &Op, name: &str) {
        if let Op::FanotifyInit { .. } = op {
            self.groups.push(name.to_string());
        }
    }

    /// Whether the guide made a group (on the one anonymous inode: the lock family must
    /// leave it alone).
    pub(super) fn has_groups(&self) -> bool {
        !self.groups.is_empty()
    }
}

impl Gen {
    /// A fanotify op, if the seed makes them and this step is one: the family's first op
    /// makes a group.
    pub(super) fn fanotify_op(&mut self) -> Option<Op> {
        let n = self.fanotify.as_mut()?;
        let first = !n.started;
        n.started = true;
        if !first && !n.rng.chance(8) {
            return None;
        }
        #[derive(Clone, Copy)]
        enum F {
            Init,
            Mark,
            Read,
            Fionread,
            Poll,
        }
        let pick = if first || n.groups.is_empty() && n.rng.chance(50) {
            F::Init
        } else {
            *n.rng.weighted(&[
                (1, F::Init),
                (10, F::Mark),
                (8, F::Read),
                (1, F::Fionread),
                (1, F::Poll),
            ])
        };
        Some(match pick {
            F::Init => {
                let mut flags = FAN_NONBLOCK;
                // FAN_CLOEXEC, FAN_UNLIMITED_QUEUE, FAN_UNLIMITED_MARKS, an unknown bit.
                for (percent, bit) in [(30, 0x1), (5, 0x10), (5, 0x20), (2, 1 << 20)] {
                    if n.rng.chance(percent) {
                        flags |= bit;
                    }
                }
                // O_RDONLY, O_RDWR, O_WRONLY, with O_CLOEXEC or O_NOATIME; 3 is EINVAL.
                let mut event_f_flags = *n.rng.weighted(&[(8, 0), (2, 2), (1, 1), (1, 3)]);
                for (percent, bit) in [(20, 0o2000000), (10, 0o1000000)] {
                    if n.rng.chance(percent) {
                        event_f_flags |= bit;
                    }
                }
                Op::FanotifyInit {
                    flags,
                    event_f_flags,
                }
            }
            F::Mark => {
                let fd = self.group();
                let n = self.fanotify.as_mut().expect("a fanotify seed");
                let mut flags = *n.rng.weighted(&[
                    (14, FAN_MARK_ADD),
                    (4, FAN_MARK_REMOVE),
                    (1, FAN_MARK_FLUSH),
                ]);
                for &(percent, bit) in &FLAG_BITS {
                    if n.rng.chance(percent) {
                        flags |= bit;
                    }
                }
                let mask = if flags & FAN_MARK_FLUSH != 0 && n.rng.chance(80) {
                    0
                } else {
                    mark_mask(&mut n.rng)
                };
                // A null path with a bound fd as dirfd now and then: the object it is open on.
                let (dirfd, path) = if !self.fds.is_empty() && n.rng.chance(8) {
                    (Fd::Var(n.rng.pick(&self.fds).clone()), None)
                } else {
                    (Fd::Raw(AT_FDCWD), Some(self.mark_path()))
                };
                Op::FanotifyMark {
                    fd,
                    flags,
                    mask,
                    dirfd,
                    path,
                }
            }
            F::Read => {
                let fd = self.group();
                let n = self.fanotify.as_mut().expect("a fanotify seed");
                let bufsize = *n
                    .rng
                    .weighted(&[(10, 4096), (2, 24), (2, 48), (1, 23), (1, 0)]);
                Op::FanotifyRead {
                    fd,
                    bufsize,
                    keep: false,
                }
            }
            F::Fionread => Op::Fionread { fd: self.group() },
            F::Poll => Op::Poll {
                fds: vec![self.group()],
                events: vec![0x001], // POLLIN
                timeout_ms: 0,
            },
        })
    }

    /// A group's name mostly, else a bound name or a bad number (drawn from the family's
    /// generator).
    fn group(&mut self) -> Fd {
        let n = self.fanotify.as_mut().expect("a fanotify seed");
        if !n.groups.is_empty() && n.rng.chance(90) {
            return Fd::Var(n.rng.pick(&n.groups).clone());
        }
        if !self.fds.is_empty() && n.rng.chance(70) {
            return Fd::Var(n.rng.pick(&self.fds).clone());
        }
        Fd::Raw(*n.rng.pick(&[-1, 0, 99]))
    }

    /// A path the guide created mostly, else one of [`MARK_PATHS`].
    fn mark_path(&mut self) -> Vec<u8> {
        let n = self.fanotify.as_mut().expect("a fanotify seed");
        if !self.known.is_empty() && n.rng.chance(70) {
            return n.rng.pick(&self.known).clone();
        }
        n.rng.pick(&MARK_PATHS).to_vec()
    }
}

/// A mask: each event bit by chance (none now and then: `EINVAL`), and now and then a bit a
/// notification group refuses.
fn mark_mask(rng: &mut Rng) -> i64 {
    let mut mask = 0;
    if !rng.chance(3) {
        for &bit in &EVENT_BITS {
            if rng.chance(35) {
                mask |= bit;
            }
        }
    }
    for &(percent, bit) in &BAD_BITS {
        if rng.chance(percent) {
            mask |= bit;
        }
    }
    mask
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is_fanotify(op: &Op) -> bool {
        matches!(
            op,
            Op::FanotifyInit { .. } | Op::FanotifyMark { .. } | Op::FanotifyRead { .. }
        )
    }

    /// What a sequence's fanotify ops must be for the host never to wait: every group
    /// `FAN_NONBLOCK` and made before any other fanotify op, every `F_SETFL` of the seed keeping
    /// `O_NONBLOCK`; and enough of them to matter.
    #[test]
    fn fanotify_seeds_make_a_group_first_and_never_block() {
        let (mut seeds, mut marks, mut reads) = (0, 0, 0);
        for seed in 0..300 {
            let case = generate(seed, Shape::default());
            let Some(first) = case.steps.iter().position(|s| is_fanotify(&s.op)) else {
                continue;
            };
            seeds += 1;
            assert!(
                matches!(case.steps[first].op, Op::FanotifyInit { .. })
                    && first <= 5 + super::sysfs::prelude().len(),
                "seed {seed}"
            );
            for s in &case.steps {
                match s.op {
                    Op::FanotifyInit { flags, .. } => {
                        assert!(flags & FAN_NONBLOCK != 0, "seed {seed}");
                    }
                    Op::Fcntl {
                        cmd: Fcntl::SetFl(fl),
                        ..
                    } => assert!(fl & 0o4000 != 0, "seed {seed}: {:?}", s.op),
                    Op::FanotifyMark { .. } => marks += 1,
                    Op::FanotifyRead { keep, .. } => {
                        assert!(!keep, "seed {seed}");
                        reads += 1;
                    }
                    _ => {}
                }
            }
        }
        assert!(
            (30..=100).contains(&seeds) && marks > 60 && reads > 60,
            "{seeds} seeds, {marks} marks, {reads} reads"
        );
    }

    /// A seed the family does not pick makes no fanotify op.
    #[test]
    fn seeds_the_family_does_not_pick_make_no_fanotify_op() {
        for seed in 0..100 {
            if Fanotify::for_seed(seed).is_some() {
                continue;
            }
            let case = generate(seed, Shape::default());
            assert!(
                case.steps.iter().all(|s| !is_fanotify(&s.op)),
                "seed {seed}"
            );
        }
    }
}
