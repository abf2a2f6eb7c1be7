//! Families: `dup`, `dup2`, `dup3`, `fcntl`.

use super::*;

impl Gen {
    /// Linux: `ksys_dup()`.
    pub(super) fn dup(&mut self, h: bool) -> Call {
        let good = self.fd_of(&Obj::ALL);
        if !h {
            return ok(Op::Dup { fd: good });
        }
        if self.r.chance(30) {
            return fails(
                Op::Dup { fd: good },
                Hostile::NoFreeFd,
                E::EMFILE,
                Stage::Resource,
            );
        }
        let b = self.bad_fd();
        from(
            Op::Dup {
                fd: b.value.clone(),
            },
            b,
        )
    }

    /// Linux: `ksys_dup3()` (flags, equal fds, new fd past `RLIMIT_NOFILE`, then the old fd).
    pub(super) fn dup2(&mut self, h: bool) -> Call {
        let good = self.fd_of(&Obj::ALL);
        if !h {
            return ok(Op::Dup2 {
                fd: good,
                new: NewFd::Scratch,
            });
        }
        if self.r.chance(50) {
            let n = self.r.pick(&[-1, i32::MAX]);
            return fails(
                Op::Dup2 {
                    fd: good,
                    new: NewFd::Bad(n),
                },
                Hostile::BadFd,
                E::EBADF,
                Stage::Args,
            );
        }
        let b = self.bad_fd();
        from(
            Op::Dup2 {
                fd: b.value.clone(),
                new: NewFd::Scratch,
            },
            b,
        )
    }

    pub(super) fn dup3(&mut self, h: bool) -> Call {
        let good = self.fd_of(&Obj::ALL);
        let op = |fd, new, flags: OpenFlags, same| Op::Dup3 {
            fd,
            new,
            flags: flags.bits(),
            same,
        };
        if !h {
            let flags = self.r.pick(&[OpenFlags::empty(), OpenFlags::CLOEXEC]);
            return ok(op(good, NewFd::Scratch, flags, false));
        }
        match self.r.below(4) {
            0 => fails(
                op(good, NewFd::Scratch, OpenFlags::APPEND, false),
                Hostile::BadFlags,
                E::EINVAL,
                Stage::Args,
            ),
            1 => fails(
                op(good, NewFd::Scratch, OpenFlags::empty(), true),
                Hostile::BadFd,
                E::EINVAL,
                Stage::Args,
            ),
            2 => fails(
                op(good, NewFd::Bad(-1), OpenFlags::empty(), false),
                Hostile::BadFd,
                E::EBADF,
                Stage::Args,
            ),
            _ => {
                let b = self.bad_fd();
                from(
                    op(b.value.clone(), NewFd::Scratch, OpenFlags::empty(), false),
                    b,
                )
            }
        }
    }

    /// Linux: `do_fcntl()` → `f_dupfd()` (minimum past `RLIMIT_NOFILE` is EINVAL, then the
    /// allocation).
    pub(super) fn dupfd(&mut self, h: bool) -> Call {
        let good = self.fd_of(&Obj::ALL);
        if !h {
            let min = self.r.pick(&[0, 10, 100]);
            return ok(Op::DupFd { fd: good, min });
        }
        match self.r.below(3) {
            0 => {
                let min = self.r.pick(&[-1, 1 << 20]);
                fails(
                    Op::DupFd { fd: good, min },
                    Hostile::BadLength,
                    E::EINVAL,
                    Stage::Object,
                )
            }
            1 => fails(
                Op::DupFd { fd: good, min: 0 },
                Hostile::NoFreeFd,
                E::EMFILE,
                Stage::Resource,
            ),
            _ => {
                let b = self.bad_fd();
                from(
                    Op::DupFd {
                        fd: b.value.clone(),
                        min: 0,
                    },
                    b,
                )
            }
        }
    }

    pub(super) fn getfl(&mut self, h: bool) -> Call {
        if !h {
            return ok(Op::GetFl {
                fd: self.fd_of(&Obj::ALL),
            });
        }
        let b = self.bad_fd();
        from(
            Op::GetFl {
                fd: b.value.clone(),
            },
            b,
        )
    }

    /// Linux: `fcntl()` (O_PATH allows only a few commands), `setfl()` (O_NOATIME needs the
    /// owner).
    pub(super) fn setfl(&mut self, h: bool) -> Call {
        let flags = self.r.pick(&[0, OpenFlags::NONBLOCK.bits()]);
        if !h {
            let f = self.fd_of(&[Obj::FileRw, Obj::FileRo, Obj::Dir]);
            return ok(Op::SetFl { fd: f, flags });
        }
        if self.r.chance(30) {
            return fails(
                Op::SetFl {
                    fd: fd(Obj::Full),
                    flags: OpenFlags::NOATIME.bits(),
                },
                Hostile::Privilege,
                E::EPERM,
                Stage::Object,
            );
        }
        let b = self.hostile_fd(&[(Obj::FilePath, E::EBADF, Stage::Fd)]);
        from(
            Op::SetFl {
                fd: b.value.clone(),
                flags,
            },
            b,
        )
    }
}
