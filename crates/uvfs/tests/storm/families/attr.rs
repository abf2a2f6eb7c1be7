//! Families: `fstatat`, `fstat`, `statx`, `statfs`, `fstatfs`, `fchmodat`, `fchmod`, `fchownat`, `fchown`,
//! `utimensat`, `faccessat2`.

use super::*;

impl Gen {
    /// Linux: `vfs_fstatat()` / `vfs_statx()` (flags first, then the walk).
    pub(super) fn fstatat(&mut self, h: bool) -> Call {
        if !h {
            if self.r.chance(25) {
                let o = self.r.pick(&Obj::ALL);
                return ok(at_op(d(o), p(b""), AtFlags::EMPTY_PATH));
            }
            let flags = self.r.pick(&[AtFlags::empty(), AtFlags::SYMLINK_NOFOLLOW]);
            let dir = self.dir();
            return ok(at_op(dir, self.existing(), flags));
        }
        if self.r.chance(25) {
            let dir = self.dir();
            return fails(
                at_op(dir, self.existing(), AtFlags::REMOVEDIR),
                Hostile::BadFlags,
                E::EINVAL,
                Stage::Args,
            );
        }
        let (dir, path, b) = self.at_existing(true);
        with(at_op(dir, path, AtFlags::empty()), b)
    }

    pub(super) fn fstat(&mut self, h: bool) -> Call {
        if !h {
            return ok(Op::Fstat {
                fd: self.fd_of(&Obj::ALL),
            });
        }
        let b = self.bad_fd();
        from(
            Op::Fstat {
                fd: b.value.clone(),
            },
            b,
        )
    }

    /// Linux: `SYSCALL_DEFINE5(statx)` / `do_statx()` (sync type, reserved mask, flags, then
    /// the walk).
    pub(super) fn statx(&mut self, h: bool) -> Call {
        let op = |dir, path, flags: AtFlags, mask: StatxMask| Op::Statx {
            dir,
            path,
            flags: flags.bits(),
            mask: mask.bits(),
        };
        let mask = self.r.pick(&[
            StatxMask::BASIC_STATS,
            StatxMask::empty(),
            StatxMask::BASIC_STATS | StatxMask::BTIME,
        ]);
        if !h {
            let flags = self.r.pick(&[
                AtFlags::empty(),
                AtFlags::SYMLINK_NOFOLLOW,
                AtFlags::STATX_DONT_SYNC,
            ]);
            let dir = self.dir();
            return ok(op(dir, self.existing(), flags, mask));
        }
        if self.r.chance(35) {
            let (flags, mask) = self.r.pick(&[
                (AtFlags::empty(), StatxMask::RESERVED),
                (AtFlags::from_bits_retain(1), StatxMask::BASIC_STATS),
                (
                    AtFlags::STATX_FORCE_SYNC | AtFlags::STATX_DONT_SYNC,
                    StatxMask::BASIC_STATS,
                ),
            ]);
            let dir = self.dir();
            return fails(
                op(dir, self.existing(), flags, mask),
                Hostile::BadFlags,
                E::EINVAL,
                Stage::Args,
            );
        }
        let (dir, path, b) = self.at_existing(true);
        with(op(dir, path, AtFlags::empty(), mask), b)
    }

    pub(super) fn statfs(&mut self, h: bool) -> Call {
        if !h {
            return ok(Op::Statfs {
                path: self.existing(),
            });
        }
        let b = self.bad_path(Use::Existing);
        from(
            Op::Statfs {
                path: b.value.clone(),
            },
            b,
        )
    }

    pub(super) fn fstatfs(&mut self, h: bool) -> Call {
        if !h {
            return ok(Op::Fstatfs {
                fd: self.fd_of(&Obj::ALL),
            });
        }
        let b = self.bad_fd();
        from(
            Op::Fstatfs {
                fd: b.value.clone(),
            },
            b,
        )
    }

    /// Linux: `do_fchmodat()` (flags), the walk, `chmod_common()` → `notify_change()` (a
    /// symlink is EOPNOTSUPP; `setattr_prepare()`: the owner or `CAP_FOWNER`).
    pub(super) fn fchmodat(&mut self, h: bool) -> Call {
        let op = |dir, path, mode, flags: AtFlags| Op::Fchmodat {
            dir,
            path,
            mode,
            flags: flags.bits(),
        };
        let dir = self.dir();
        let fmode = self.r.pick(&FILE_MODES);
        if !h {
            return match self.r.below(3) {
                0 => ok(op(dir, self.file_path(), fmode, AtFlags::empty())),
                1 => {
                    let m = self.r.pick(&DIR_MODES);
                    ok(op(dir, self.dir_path(), m, AtFlags::empty()))
                }
                _ => ok_or_state(op(dir, self.scratch(), fmode, AtFlags::empty())),
            };
        }
        match self.r.below(5) {
            0 => fails(
                op(dir, self.file_path(), fmode, AtFlags::REMOVEDIR),
                Hostile::BadFlags,
                E::EINVAL,
                Stage::Args,
            ),
            1 => fails(
                op(dir, p(b"l"), fmode, AtFlags::SYMLINK_NOFOLLOW),
                Hostile::WrongObject,
                E::EOPNOTSUPP,
                Stage::Object,
            ),
            2 => fails(
                op(dir, p(b"full/big"), 0o666, AtFlags::empty()),
                Hostile::Privilege,
                E::EPERM,
                Stage::Object,
            ),
            _ => {
                let (dir, path, b) = self.at_existing(true);
                with(op(dir, path, fmode, AtFlags::empty()), b)
            }
        }
    }

    /// Linux: `SYSCALL_DEFINE2(fchmod)` (`fdget()`: no O_PATH), `chmod_common()`.
    pub(super) fn fchmod(&mut self, h: bool) -> Call {
        if !h {
            return if self.r.chance(25) {
                ok(Op::Fchmod {
                    fd: fd(Obj::Dir),
                    mode: self.r.pick(&DIR_MODES),
                })
            } else {
                let f = self.fd_of(&[Obj::FileRw, Obj::FileRo, Obj::FileWo]);
                ok(Op::Fchmod {
                    fd: f,
                    mode: self.r.pick(&FILE_MODES),
                })
            };
        }
        if self.r.chance(25) {
            return fails(
                Op::Fchmod {
                    fd: fd(Obj::Full),
                    mode: 0o666,
                },
                Hostile::Privilege,
                E::EPERM,
                Stage::Object,
            );
        }
        let b = self.hostile_fd(&[(Obj::FilePath, E::EBADF, Stage::Fd)]);
        from(
            Op::Fchmod {
                fd: b.value.clone(),
                mode: 0o644,
            },
            b,
        )
    }

    /// Linux: `do_fchownat()` (flags, the walk), `chown_common()` → `notify_change()` →
    /// `setattr_prepare()` (`chown_ok()`, `chgrp_ok()`).
    pub(super) fn fchownat(&mut self, h: bool) -> Call {
        let op = |dir, path, uid, gid, flags: AtFlags| Op::Fchownat {
            dir,
            path,
            uid,
            gid,
            flags: flags.bits(),
        };
        let uid = self.r.pick(&[None, Some(1000)]);
        let gid = self.r.pick(&[None, Some(1000)]);
        let dir = self.dir();
        if !h {
            let flags = self.r.pick(&[AtFlags::empty(), AtFlags::SYMLINK_NOFOLLOW]);
            return ok(op(dir, self.existing(), uid, gid, flags));
        }
        match self.r.below(4) {
            0 => {
                let (u, g) = self.r.pick(&[(Some(0), None), (None, Some(0))]);
                fails(
                    op(dir, self.existing(), u, g, AtFlags::empty()),
                    Hostile::Privilege,
                    E::EPERM,
                    Stage::Object,
                )
            }
            1 => fails(
                op(dir, self.existing(), uid, gid, AtFlags::REMOVEDIR),
                Hostile::BadFlags,
                E::EINVAL,
                Stage::Args,
            ),
            _ => {
                let (dir, path, b) = self.at_existing(true);
                with(op(dir, path, uid, gid, AtFlags::empty()), b)
            }
        }
    }

    pub(super) fn fchown(&mut self, h: bool) -> Call {
        let uid = self.r.pick(&[None, Some(1000)]);
        let gid = self.r.pick(&[None, Some(1000)]);
        let good = self.fd_of(&[Obj::FileRw, Obj::FileRo, Obj::FileWo, Obj::Dir]);
        if !h {
            return ok(Op::Fchown { fd: good, uid, gid });
        }
        if self.r.chance(25) {
            return fails(
                Op::Fchown {
                    fd: good,
                    uid: Some(0),
                    gid: None,
                },
                Hostile::Privilege,
                E::EPERM,
                Stage::Object,
            );
        }
        let b = self.hostile_fd(&[(Obj::FilePath, E::EBADF, Stage::Fd)]);
        from(
            Op::Fchown {
                fd: b.value.clone(),
                uid,
                gid,
            },
            b,
        )
    }

    /// Linux: `do_utimes()`: both `UTIME_OMIT` returns at once; a null path at `AT_FDCWD` is
    /// EFAULT (`getname()`); `do_utimes_path()` (flags, the walk) or `do_utimes_fd()`
    /// (`fdget()`); `vfs_utimes()` (nanoseconds after the lookup; explicit times need the
    /// owner).
    pub(super) fn utimensat(&mut self, h: bool) -> Call {
        let op = |dir, path, times, flags: AtFlags| Op::Utimensat {
            dir,
            path,
            times,
            flags: flags.bits(),
        };
        let now = (0, UTIME_NOW);
        let omit = (0, UTIME_OMIT);
        let times = self
            .r
            .pick(&[[now, now], [omit, now], [(1, 0), (2, 5)], [omit, omit]]);
        let live = self.r.pick(&[[now, now], [omit, now], [(1, 0), (2, 5)]]);
        if !h {
            return if self.r.chance(30) {
                let f = self.fd_of(&[Obj::FileRw, Obj::FileRo, Obj::Dir]);
                ok(op(DirArg::Fd(f), None, times, AtFlags::empty()))
            } else {
                let flags = self.r.pick(&[AtFlags::empty(), AtFlags::SYMLINK_NOFOLLOW]);
                let dir = self.dir();
                ok(op(dir, Some(self.existing()), times, flags))
            };
        }
        let dir = self.dir();
        match self.r.below(7) {
            0 => {
                let bad_ns = self.r.pick(&[[(0, 1_000_000_000), now], [now, (0, -1)]]);
                fails(
                    op(dir, Some(self.existing()), bad_ns, AtFlags::empty()),
                    Hostile::BadValue,
                    E::EINVAL,
                    Stage::Object,
                )
            }
            1 => fails(
                op(dir, Some(self.existing()), live, AtFlags::REMOVEDIR),
                Hostile::BadFlags,
                E::EINVAL,
                Stage::Args,
            ),
            2 => fails(
                op(DirArg::Cwd, None, live, AtFlags::empty()),
                Hostile::BadValue,
                E::EFAULT,
                Stage::Args,
            ),
            3 => fails(
                op(
                    dir,
                    Some(p(b"full/big")),
                    [(1, 0), (2, 0)],
                    AtFlags::empty(),
                ),
                Hostile::Privilege,
                E::EPERM,
                Stage::Object,
            ),
            4 => {
                let b = self.hostile_fd(&[(Obj::FilePath, E::EBADF, Stage::Fd)]);
                from(
                    op(DirArg::Fd(b.value.clone()), None, live, AtFlags::empty()),
                    b,
                )
            }
            _ => {
                let (dir, path, b) = self.at_existing(true);
                with(op(dir, Some(path), live, AtFlags::empty()), b)
            }
        }
    }

    /// Linux: `do_faccessat()` (mode, flags, then the walk and `inode_permission()` with the
    /// real ids).
    pub(super) fn faccessat2(&mut self, h: bool) -> Call {
        let op = |dir, path, mode, flags: AtFlags| Op::Faccessat2 {
            dir,
            path,
            mode,
            flags: flags.bits(),
        };
        let dir = self.dir();
        if !h {
            return if self.r.chance(30) {
                ok(op(dir, self.dir_path(), R_OK | X_OK, AtFlags::empty()))
            } else {
                let mode = self.r.pick(&[F_OK, R_OK, W_OK, R_OK | W_OK]);
                let flags = self.r.pick(&[AtFlags::empty(), AtFlags::EACCESS]);
                ok(op(dir, self.file_path(), mode, flags))
            };
        }
        match self.r.below(5) {
            0 => fails(
                op(dir, self.file_path(), 8, AtFlags::empty()),
                Hostile::BadValue,
                E::EINVAL,
                Stage::Args,
            ),
            1 => fails(
                op(dir, self.file_path(), R_OK, AtFlags::SYMLINK_FOLLOW),
                Hostile::BadFlags,
                E::EINVAL,
                Stage::Args,
            ),
            2 => fails(
                op(dir, p(b"full/big"), X_OK, AtFlags::empty()),
                Hostile::Privilege,
                E::EACCES,
                Stage::Object,
            ),
            _ => {
                let (dir, path, b) = self.at_existing(true);
                with(op(dir, path, F_OK, AtFlags::empty()), b)
            }
        }
    }
}
