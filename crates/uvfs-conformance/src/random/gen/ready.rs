//! The readiness family of the generator: `poll`, `epoll_create1`, `epoll_ctl`, `epoll_wait`
//! and `eventfd2` with 8-byte reads and writes of eventfds. Made only in seeds that keep every
//! fd non-blocking (the FIFO seeds, like pipes): eventfds are always `EFD_NONBLOCK`, and every
//! `poll` and `epoll_wait` has timeout 0, so no call can wait.
//!
//! Eventfd and epoll files share one inode on Linux for the whole machine, so a lock on one
//! would meet the locks other cases and workers take on it: [`Gen::is_anon`] lets the lock
//! family leave them alone.

use super::*;

/// `EPOLLIN`, `EPOLLOUT` and the other bits an `epoll_ctl` event draws from.
const EPOLL_BITS: [i64; 9] = [
    0x001,   // EPOLLIN
    0x004,   // EPOLLOUT
    0x002,   // EPOLLPRI
    0x040,   // EPOLLRDNORM
    0x010,   // EPOLLHUP
    0x2000,  // EPOLLRDHUP
    1 << 31, // EPOLLET
    1 << 30, // EPOLLONESHOT
    1 << 28, // EPOLLEXCLUSIVE
];

/// `POLLIN`, `POLLOUT` and the other bits a `poll` entry draws from.
const POLL_BITS: [i64; 6] = [0x001, 0x004, 0x002, 0x040, 0x100, 0x2000];

/// Counter values an eventfd write draws from: small ones, and the edges of the limit
/// (`u64::MAX - 1` is the largest count, `u64::MAX` is refused).
const EVENTFD_VALUES: [u64; 7] = [0, 1, 2, 7, u64::MAX - 2, u64::MAX - 1, u64::MAX];

/// The names the seed bound to eventfds and epoll files, and to pipe ends (which
/// `epoll_ctl` prefers, with eventfds: files whose readiness changes).
#[derive(Debug, Default)]
pub(super) struct AnonNames {
    eventfds: Vec<String>,
    epolls: Vec<String>,
    pipes: Vec<String>,
}

impl AnonNames {
    /// Records the names `op` bound (`names`: one, or a pipe's two), if it made an eventfd,
    /// an epoll file or a pipe.
    pub(super) fn note(&mut self, op: &Op, names: &str) {
        let list = match op {
            Op::Eventfd2 { .. } => &mut self.eventfds,
            Op::EpollCreate1 { .. } => &mut self.epolls,
            Op::Pipe2 { .. } => &mut self.pipes,
            _ => return,
        };
        list.extend(names.split(' ').map(str::to_string));
    }

    fn any(&self) -> bool {
        !self.eventfds.is_empty() || !self.epolls.is_empty()
    }
}

impl Gen {
    /// One readiness call or eventfd read or write.
    pub(super) fn readiness_op(&mut self) -> Op {
        #[derive(Clone, Copy)]
        enum R {
            Eventfd2,
            Create,
            Ctl,
            Wait,
            Poll,
            Write,
            Read,
        }
        let pick = *self.rng.weighted(&[
            (2, R::Eventfd2),
            (2, R::Create),
            (4, R::Ctl),
            (3, R::Wait),
            (2, R::Poll),
            (2, R::Write),
            (1, R::Read),
        ]);
        match pick {
            R::Eventfd2 => self.eventfd2(),
            R::Create => Op::EpollCreate1 {
                flags: *self
                    .rng
                    .weighted(&[(6, 0), (3, 0o2000000), (1, 1), (1, 0o4000)]),
            },
            R::Ctl => self.epoll_ctl(),
            R::Wait => Op::EpollWait {
                epfd: self.epoll_fd(),
                maxevents: *self
                    .rng
                    .weighted(&[(6, 8), (3, 1), (2, 2), (1, 0), (1, -1)]),
                timeout_ms: 0,
            },
            R::Poll => self.poll(),
            R::Write => {
                let fd = self.eventfd();
                let v = *self.rng.pick(&EVENTFD_VALUES);
                let data = if self.rng.chance(10) {
                    v.to_ne_bytes()[..*self.rng.pick(&[0, 4, 7])].to_vec()
                } else {
                    v.to_ne_bytes().to_vec()
                };
                Op::Write { fd, data }
            }
            R::Read => Op::Read {
                fd: self.eventfd(),
                count: *self.rng.weighted(&[(8, 8), (2, 16), (1, 4), (1, 0)]),
            },
        }
    }

    /// `eventfd2`, always `EFD_NONBLOCK` (now and then with a flag it refuses).
    fn eventfd2(&mut self) -> Op {
        let mut flags = 0o4000;
        for (percent, bit) in [(40, 1), (30, 0o2000000), (3, 0o2), (3, 0o100)] {
            if self.rng.chance(percent) {
                flags |= bit;
            }
        }
        Op::Eventfd2 {
            initval: *self.rng.pick(&[0, 0, 1, 3, 0xffff_ffff, -1]),
            flags,
        }
    }

    fn epoll_ctl(&mut self) -> Op {
        let epfd = self.epoll_fd();
        let op = *self
            .rng
            .weighted(&[(6, 1), (2, 2), (3, 3), (1, 0), (1, 4), (1, -1)]);
        let fd = match self.rng.below(8) {
            0 | 1 => self.epoll_fd(),
            2..=4 if !self.anon.pipes.is_empty() => {
                Fd::Var(self.rng.pick(&self.anon.pipes).clone())
            }
            5 => self.eventfd(),
            _ => self.fd(),
        };
        let event = if self.rng.chance(5) {
            None
        } else {
            let mut events = 0;
            for &bit in &EPOLL_BITS {
                let percent = match bit {
                    0x001 | 0x004 => 60,
                    0x8000_0000 | 0x4000_0000 => 25,
                    _ => 10,
                };
                if self.rng.chance(percent) {
                    events |= bit;
                }
            }
            Some(crate::op::EpollArg {
                events,
                data: *self.rng.pick(&[0, 1, 2, 3, 42, u64::MAX]),
            })
        };
        Op::EpollCtl {
            epfd,
            op,
            fd,
            event,
        }
    }

    /// `poll` of one to four fds, timeout 0.
    fn poll(&mut self) -> Op {
        let n = 1 + self.rng.below(4);
        let mut fds = Vec::new();
        let mut events = Vec::new();
        for _ in 0..n {
            fds.push(match self.rng.below(8) {
                0 => Fd::Raw(*self.rng.pick(&[-1, -7])),
                1 => self.epoll_fd(),
                2 => self.eventfd(),
                _ => self.fd(),
            });
            let mut ev = 0;
            for &bit in &POLL_BITS {
                if self.rng.chance(40) {
                    ev |= bit;
                }
            }
            events.push(ev);
        }
        Op::Poll {
            fds,
            events,
            timeout_ms: 0,
        }
    }

    /// An epoll file's name mostly, else any fd.
    fn epoll_fd(&mut self) -> Fd {
        if !self.anon.epolls.is_empty() && self.rng.chance(80) {
            Fd::Var(self.rng.pick(&self.anon.epolls).clone())
        } else {
            self.fd()
        }
    }

    /// An eventfd's name mostly, else any fd.
    fn eventfd(&mut self) -> Fd {
        if !self.anon.eventfds.is_empty() && self.rng.chance(85) {
            Fd::Var(self.rng.pick(&self.anon.eventfds).clone())
        } else {
            self.fd()
        }
    }

    /// Whether `fd` is an eventfd, epoll file, inotify instance or fanotify group on the guide (the shared anonymous inode,
    /// whose mode has no file-type bits), for the ops that must not lock it.
    pub(super) fn is_anon(&mut self, fd: &Fd) -> bool {
        let instances = self.notify.as_ref().is_some_and(|n| n.has_instances())
            || self.fanotify.as_ref().is_some_and(|n| n.has_groups());
        if !self.anon.any() && !instances {
            return false;
        }
        let Some(guide) = self.guide.as_mut() else {
            return false;
        };
        matches!(
            guide.run(0, &Op::Fstat { fd: fd.clone() }, &self.guide_fds),
            Outcome::Ok(Value::Stat(s)) if s.mode & 0o170000 == 0
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a sequence's readiness ops must be for the host never to wait: eventfds made
    /// non-blocking, zero timeouts, and only in seeds whose `F_SETFL`s keep `O_NONBLOCK`.
    #[test]
    fn readiness_ops_never_wait() {
        let (mut seeds, mut ops) = (0, 0);
        for seed in 0..400 {
            let case = generate(seed, Shape::default());
            let mut any = false;
            for s in &case.steps {
                match &s.op {
                    Op::Eventfd2 { flags, .. } => assert!(flags & 0o4000 != 0, "seed {seed}"),
                    Op::Poll { timeout_ms, .. } | Op::EpollWait { timeout_ms, .. } => {
                        assert_eq!(*timeout_ms, 0, "seed {seed}");
                    }
                    Op::EpollCreate1 { .. } | Op::EpollCtl { .. } => {}
                    _ => continue,
                }
                any = true;
                ops += 1;
            }
            if any {
                seeds += 1;
                let keeps_nonblock = case.steps.iter().all(|s| match s.op {
                    Op::Fcntl {
                        cmd: Fcntl::SetFl(fl),
                        ..
                    } => fl & 0o4000 != 0,
                    _ => true,
                });
                assert!(keeps_nonblock, "seed {seed} may clear O_NONBLOCK");
            }
        }
        assert!(
            seeds > 20 && ops > 100,
            "{ops} readiness ops in {seeds} seeds"
        );
    }
}
