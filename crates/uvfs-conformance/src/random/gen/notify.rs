//! The inotify family of the generator: in one seed in [`NOTIFY_SEEDS_ONE_IN`], an instance
//! made by the first op (always `IN_NONBLOCK`), then now and then `inotify_add_watch` of a
//! path with a random mask, `inotify_rm_watch`, reads of the queue with buffers of every size,
//! `fionread` and `poll` of an instance, and more instances. Every step's `snapshot` lists the
//! watched directories, so the streams compared include the events of those walks.
//!
//! The family draws from its own generator, seeded apart from the main one: a seed without
//! inotify makes exactly the sequence it made before the family existed, and in one with it
//! the family's choices do not shift the main generator's draws (the ops it adds still
//! change the fd numbers and names the other families pick from).
//!
//! No read can wait: instances are `IN_NONBLOCK`, and in these seeds every `F_SETFL` keeps
//! `O_NONBLOCK` (see `Gen::fcntl`), so no dup of an instance loses it either.

use super::*;

/// One seed in this many makes inotify instances.
pub(super) const NOTIFY_SEEDS_ONE_IN: usize = 5;

/// Mixed into the seed for the family's own generator.
const NOTIFY_STREAM: u64 = 0x696e_6f74_6966_7900;

/// `IN_NONBLOCK`.
const IN_NONBLOCK: i64 = 0o4000;
/// `IN_CLOEXEC`.
const IN_CLOEXEC: i64 = 0o2000000;
/// `IN_ALL_EVENTS`.
const IN_ALL_EVENTS: i64 = 0xfff;

/// The event bits a mask draws from, one at a time.
const EVENT_BITS: [i64; 12] = [
    0x1,   // IN_ACCESS
    0x2,   // IN_MODIFY
    0x4,   // IN_ATTRIB
    0x8,   // IN_CLOSE_WRITE
    0x10,  // IN_CLOSE_NOWRITE
    0x20,  // IN_OPEN
    0x40,  // IN_MOVED_FROM
    0x80,  // IN_MOVED_TO
    0x100, // IN_CREATE
    0x200, // IN_DELETE
    0x400, // IN_DELETE_SELF
    0x800, // IN_MOVE_SELF
];

/// The flag bits of `inotify_add_watch` and others a mask may carry, with their chances in
/// percent (`IN_MASK_ADD | IN_MASK_CREATE` together is `EINVAL`, an unknown bit too).
const FLAG_BITS: [(u32, i64); 9] = [
    (5, 0x0100_0000),  // IN_ONLYDIR
    (5, 0x0200_0000),  // IN_DONT_FOLLOW
    (10, 0x0400_0000), // IN_EXCL_UNLINK
    (10, 0x2000_0000), // IN_MASK_ADD
    (6, 0x1000_0000),  // IN_MASK_CREATE
    (8, 0x8000_0000),  // IN_ONESHOT
    (2, 0x4000_0000),  // IN_ISDIR
    (2, 0x2000),       // IN_UNMOUNT
    (2, 0x1000),       // not an inotify bit
];

/// Paths a watch takes when the seed has created none, or now and then.
const WATCH_PATHS: [&[u8]; 10] = [
    b"/", b"/a", b"/b", b"/a/b", b"a", b".", b"/a/", b"/c/d", b"", b"/nope",
];

/// The family's state: its generator and the instances it made.
#[derive(Debug)]
pub(super) struct Notify {
    rng: Rng,
    /// Names bound by `inotify_init1` that succeeded on the guide.
    instances: Vec<String>,
    /// `inotify_add_watch` calls made (a bound for the wds `inotify_rm_watch` draws).
    adds: usize,
}

impl Notify {
    /// The family for `seed`, or `None` for a seed that makes no instance.
    pub(super) fn for_seed(seed: u64) -> Option<Notify> {
        let mut rng = Rng::new(seed ^ NOTIFY_STREAM);
        (rng.below(NOTIFY_SEEDS_ONE_IN) == 0).then(|| Notify {
            rng,
            instances: Vec::new(),
            adds: 0,
        })
    }

    /// Records the name `op` bound, if it made an instance.
    pub(super) fn note(&mut self, op: &Op, name: &str) {
        if let Op::InotifyInit1 { .. } = op {
            self.instances.push(name.to_string());
        }
    }

    /// Whether the guide made an instance (on the one anonymous inode Linux shares between
    /// eventfds, epoll files and inotify instances: the lock family must leave it alone).
    pub(super) fn has_instances(&self) -> bool {
        !self.instances.is_empty()
    }
}

impl Gen {
    /// An inotify op, if the seed makes them and this step is one: the first step makes an
    /// instance.
    pub(super) fn notify_op(&mut self, step: usize) -> Option<Op> {
        let first = step == 0;
        let n = self.notify.as_mut()?;
        if !first && !n.rng.chance(8) {
            return None;
        }
        #[derive(Clone, Copy)]
        enum N {
            Init,
            Add,
            Rm,
            Read,
            Fionread,
            Poll,
        }
        let pick = if first || n.instances.is_empty() && n.rng.chance(50) {
            N::Init
        } else {
            *n.rng.weighted(&[
                (1, N::Init),
                (9, N::Add),
                (2, N::Rm),
                (7, N::Read),
                (1, N::Fionread),
                (1, N::Poll),
            ])
        };
        Some(match pick {
            N::Init => {
                let mut flags = IN_NONBLOCK;
                for (percent, bit) in [(30, IN_CLOEXEC), (3, 1), (2, 0o2)] {
                    if n.rng.chance(percent) {
                        flags |= bit;
                    }
                }
                Op::InotifyInit1 { flags }
            }
            N::Add => {
                let fd = self.instance();
                let path = self.watch_path();
                let n = self.notify.as_mut().expect("a notify seed");
                n.adds += 1;
                Op::InotifyAddWatch {
                    fd,
                    path,
                    mask: watch_mask(&mut n.rng),
                }
            }
            N::Rm => {
                let fd = self.instance();
                let n = self.notify.as_mut().expect("a notify seed");
                let wd = if n.rng.chance(10) {
                    *n.rng.pick(&[-1, 0, 99])
                } else {
                    1 + n.rng.below(n.adds.max(1)) as i64
                };
                Op::InotifyRmWatch { fd, wd }
            }
            N::Read => {
                let fd = self.instance();
                let n = self.notify.as_mut().expect("a notify seed");
                let bufsize = *n.rng.weighted(&[
                    (10, 4096),
                    (2, 16),
                    (2, 32),
                    (2, 64),
                    (1, 48),
                    (1, 17),
                    (1, 0),
                ]);
                Op::InotifyRead { fd, bufsize }
            }
            N::Fionread => Op::Fionread {
                fd: self.instance(),
            },
            N::Poll => Op::Poll {
                fds: vec![self.instance()],
                events: vec![0x001], // POLLIN
                timeout_ms: 0,
            },
        })
    }

    /// An instance's name mostly, else a bound name or a bad number (drawn from the family's
    /// generator).
    fn instance(&mut self) -> Fd {
        let n = self.notify.as_mut().expect("a notify seed");
        if !n.instances.is_empty() && n.rng.chance(90) {
            return Fd::Var(n.rng.pick(&n.instances).clone());
        }
        if !self.fds.is_empty() && n.rng.chance(70) {
            return Fd::Var(n.rng.pick(&self.fds).clone());
        }
        Fd::Raw(*n.rng.pick(&[-1, 0, 99]))
    }

    /// A path the guide created mostly, else one of [`WATCH_PATHS`].
    fn watch_path(&mut self) -> Vec<u8> {
        let n = self.notify.as_mut().expect("a notify seed");
        if !self.known.is_empty() && n.rng.chance(70) {
            return n.rng.pick(&self.known).clone();
        }
        n.rng.pick(&WATCH_PATHS).to_vec()
    }
}

/// A mask: every event now and then, else each event bit by chance; flags by their chances.
fn watch_mask(rng: &mut Rng) -> i64 {
    let mut mask = 0;
    if rng.chance(15) {
        mask = IN_ALL_EVENTS;
    } else if !rng.chance(3) {
        // No event bit at all now and then: EINVAL, or a watch of flags alone.
        for &bit in &EVENT_BITS {
            if rng.chance(25) {
                mask |= bit;
            }
        }
    }
    for &(percent, bit) in &FLAG_BITS {
        if rng.chance(percent) {
            mask |= bit;
        }
    }
    mask
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a sequence's inotify ops must be for the host never to wait: every instance
    /// `IN_NONBLOCK`, made first, and every `F_SETFL` of the seed keeping `O_NONBLOCK`; and
    /// enough of them to matter.
    #[test]
    fn inotify_seeds_make_an_instance_first_and_never_block() {
        let (mut seeds, mut adds, mut reads) = (0, 0, 0);
        for seed in 0..300 {
            let case = generate(seed, Shape::default());
            let inotify = case.steps.iter().any(|s| {
                matches!(
                    s.op,
                    Op::InotifyInit1 { .. }
                        | Op::InotifyAddWatch { .. }
                        | Op::InotifyRmWatch { .. }
                        | Op::InotifyRead { .. }
                )
            });
            if !inotify {
                continue;
            }
            seeds += 1;
            // After the sysfs family's prelude, in a seed that has one.
            let start = case
                .steps
                .iter()
                .take_while(|s| super::sysfs::prelude().contains(&s.op))
                .count();
            assert!(
                matches!(case.steps[start].op, Op::InotifyInit1 { .. }),
                "seed {seed}"
            );
            for s in &case.steps {
                match s.op {
                    Op::InotifyInit1 { flags } => {
                        assert!(flags & IN_NONBLOCK != 0, "seed {seed}");
                    }
                    Op::Fcntl {
                        cmd: Fcntl::SetFl(fl),
                        ..
                    } => assert!(fl & 0o4000 != 0, "seed {seed}: {:?}", s.op),
                    Op::InotifyAddWatch { .. } => adds += 1,
                    Op::InotifyRead { .. } => reads += 1,
                    _ => {}
                }
            }
        }
        assert!(
            (30..=100).contains(&seeds) && adds > 60 && reads > 60,
            "{seeds} seeds, {adds} add_watch, {reads} reads"
        );
    }

    /// A seed the family does not pick makes no inotify op. (That such a seed makes the
    /// sequence it made before the family existed holds by construction: the family draws
    /// only from its own generator; no test pins old sequences.)
    #[test]
    fn seeds_the_family_does_not_pick_make_no_inotify_op() {
        for seed in 0..100 {
            if Notify::for_seed(seed).is_some() {
                continue;
            }
            let case = generate(seed, Shape::default());
            assert!(case.steps.iter().all(|s| !matches!(
                s.op,
                Op::InotifyInit1 { .. }
                    | Op::InotifyAddWatch { .. }
                    | Op::InotifyRmWatch { .. }
                    | Op::InotifyRead { .. }
            )));
        }
    }
}
