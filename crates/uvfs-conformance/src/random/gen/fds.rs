//! The fd family of the generator: `dup`/`dup2`/`dup3`, pipes (`pipe2`, FIONREAD, pipe
//! sizes), `splice`/`tee`/`sendfile` (never one that would wait), `fcntl`, and the advisory locks (`flock` and the record-lock commands, never a
//! command that would wait).

use super::*;

impl Gen {
    pub(super) fn dup(&mut self) -> Op {
        let fd = self.fd();
        match self.rng.below(3) {
            0 => Op::Dup { fd },
            1 => Op::Dup2 {
                fd,
                newfd: self.newfd(),
            },
            _ => Op::Dup3 {
                fd,
                newfd: self.newfd(),
                flags: *self.rng.pick(&[0, 0o2000000, 0o2000000, 1]),
            },
        }
    }

    pub(super) fn newfd(&mut self) -> Fd {
        if self.rng.chance(50) {
            Fd::Raw(*self.rng.pick(&[0, 3, 4, 5, 10, -1, 1023, 5000]))
        } else {
            self.fd()
        }
    }

    /// `pipe2` (always `O_NONBLOCK`, sometimes with a flag it refuses), the pipe-size `fcntl`
    /// commands or `FIONREAD`, on any fd.
    pub(super) fn pipe_op(&mut self) -> Op {
        match self.rng.below(4) {
            0 | 1 => {
                let mut flags = 0o4000;
                for (percent, bit) in [(30, 0o2000000), (30, 0o40000), (5, 0o2000), (3, 0o2)] {
                    if self.rng.chance(percent) {
                        flags |= bit;
                    }
                }
                Op::Pipe2 { flags }
            }
            2 => {
                let fd = self.fd();
                let cmd = if self.rng.chance(50) {
                    Fcntl::GetPipeSz
                } else {
                    Fcntl::SetPipeSz(*self.rng.pick(&[
                        0,
                        1,
                        4096,
                        5000,
                        65536,
                        1 << 20,
                        (1 << 20) + 1,
                        (1 << 31) + 1,
                        1 << 32,
                    ]))
                };
                Op::Fcntl { fd, cmd }
            }
            _ => Op::Fionread { fd: self.fd() },
        }
    }

    /// An offset argument of `splice` or `sendfile`: null half the time, else page edges,
    /// the end of a small file, a negative one and one whose end overflows.
    fn splice_off(&mut self) -> Option<i64> {
        if self.rng.chance(50) {
            return None;
        }
        Some(
            *self
                .rng
                .pick(&[0, 0, 1, 100, 4095, 4096, 70000, -1, i64::MAX - 1]),
        )
    }

    fn splice_len(&mut self) -> u64 {
        *self
            .rng
            .pick(&[0, 1, 3, 100, 4096, 5000, 65536, 1 << 20, 1 << 63, u64::MAX])
    }

    /// `splice`, `tee` (always `SPLICE_F_NONBLOCK`, sometimes with an unknown bit, which is
    /// refused first) or `sendfile`, between any two fds. Only a seed whose fds are all
    /// non-blocking (a FIFO seed) may ask: a pipe end with `O_NONBLOCK` never waits, and
    /// `sendfile` into a pipe waits only without it.
    pub(super) fn splice_op(&mut self) -> Op {
        let mut flags = 2; // SPLICE_F_NONBLOCK
        for (percent, bit) in [(20, 1), (20, 4), (5, 8), (3, 0x10)] {
            if self.rng.chance(percent) {
                flags |= bit;
            }
        }
        match self.rng.below(5) {
            0 | 1 => Op::Splice {
                fd_in: self.fd(),
                off_in: self.splice_off(),
                fd_out: self.fd(),
                off_out: self.splice_off(),
                len: self.splice_len(),
                flags,
            },
            2 => Op::Tee {
                fd_in: self.fd(),
                fd_out: self.fd(),
                len: self.splice_len(),
                flags,
            },
            _ => self.sendfile(),
        }
    }

    /// `sendfile` between any two fds: safe in every seed, since only a pipe can make it
    /// wait, and seeds that make pipes keep them non-blocking.
    pub(super) fn sendfile(&mut self) -> Op {
        Op::Sendfile {
            out_fd: self.fd(),
            in_fd: self.fd(),
            off: self.splice_off(),
            count: self.splice_len(),
        }
    }

    pub(super) fn fcntl(&mut self) -> Op {
        let fd = self.fd();
        let cmd = match self.rng.below(6) {
            0 => Fcntl::DupFd(*self.rng.pick(&[0, 3, 10, -1, 5000])),
            1 => Fcntl::DupFdCloexec(*self.rng.pick(&[0, 3, 10])),
            2 => Fcntl::GetFd,
            3 => Fcntl::SetFd(*self.rng.pick(&[0, 1, 3])),
            4 => Fcntl::GetFl,
            _ => {
                let mut fl = 0;
                for bit in [0o2000, 0o4000, 0o1000000, 0o40000, 0o20000, 0o1, 0o100] {
                    if self.rng.chance(30) {
                        fl |= bit;
                    }
                }
                if self.fifos || self.notify.is_some() || self.fanotify.is_some() {
                    // Keeps every FIFO read (see `open_flags`) and inotify and fanotify read
                    // non-blocking.
                    fl |= 0o4000;
                }
                Fcntl::SetFl(fl)
            }
        };
        Op::Fcntl { fd, cmd }
    }

    /// `flock` or a record-lock `fcntl` that never waits (a seed has one task, so only OFD
    /// locks of other descriptions and `flock` locks can conflict): `LOCK_NB` with every
    /// `flock` that takes a lock, no `F_SETLKW`.
    pub(super) fn lock(&mut self) -> Op {
        let fd = self.fd();
        if self.is_anon(&fd) {
            // One inode for the whole machine: other cases' locks on it would conflict.
            return Op::Fstat { fd };
        }
        if self.rng.chance(35) {
            let op = match self.rng.below(8) {
                0 => 1 | 4, // LOCK_SH|LOCK_NB
                1 => 2 | 4, // LOCK_EX|LOCK_NB
                2 => 8,     // LOCK_UN
                3 => 8 | 4,
                4 => *self.rng.pick(&[0, 4, 3 | 4, 16, 64, 32 | 2]),
                _ => *self.rng.pick(&[1 | 4, 2 | 4, 8]),
            };
            return Op::Flock { fd, op };
        }
        let cmd = *self.rng.pick(&[
            LockCmd::GetLk,
            LockCmd::SetLk,
            LockCmd::SetLk,
            LockCmd::OfdGetLk,
            LockCmd::OfdSetLk,
            LockCmd::OfdSetLk,
        ]);
        let l_type = if self.rng.chance(5) {
            *self.rng.pick(&[3, -1, 65536])
        } else {
            *self.rng.pick(&[0, 1, 2])
        };
        let whence = if self.rng.chance(5) {
            *self.rng.pick(&[3, 4, -1])
        } else {
            *self.rng.pick(&[0, 0, 1, 2])
        };
        let start = *self
            .rng
            .pick(&[0, 0, 1, 5, 10, 100, 4096, -1, -10, i64::MAX, i64::MAX - 1]);
        let len = *self
            .rng
            .pick(&[0, 0, 1, 5, 10, 100, -1, -5, i64::MAX, i64::MIN]);
        let pid = if self.rng.chance(10) { 1 } else { 0 };
        Op::Fcntl {
            fd,
            cmd: Fcntl::Lock(
                cmd,
                FlockArg {
                    l_type,
                    whence,
                    start,
                    len,
                    pid,
                },
            ),
        }
    }
}
