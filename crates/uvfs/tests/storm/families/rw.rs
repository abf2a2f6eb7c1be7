//! Families: `read`, `write` and their positional and vectored forms, `lseek`, `fsync`, `fdatasync`,
//! `fallocate`, `ftruncate`, `truncate`.

use super::*;

impl Gen {
    /// read (`off == None`) or pread. Linux: `ksys_pread64()` (negative offset first),
    /// `fdget()` (no O_PATH), `vfs_read()` (`FMODE_READ`, `rw_verify_area()`), the
    /// directory's `generic_read_dir()` (EISDIR).
    pub(super) fn read(&mut self, h: bool, positional: Option<()>) -> Call {
        let len = self.r.pick(&[0, 1, 16, 100]);
        let off = positional.map(|()| self.r.pick(&[0i64, 3, 1000]));
        let op = |fd, len, off: Option<i64>| match off {
            Some(off) => Op::Pread { fd, len, off },
            None => Op::Read { fd, len },
        };
        let good = self.fd_of(&[Obj::FileRw, Obj::FileRo]);
        if !h {
            return ok(op(good, len, off));
        }
        if off.is_some() && self.r.chance(40) {
            return if self.r.chance(50) {
                let o = self.r.pick(&[-1, i64::MIN]);
                fails(
                    op(good, 16, Some(o)),
                    Hostile::BadOffset,
                    E::EINVAL,
                    Stage::Args,
                )
            } else {
                fails(
                    op(good, 16, Some(i64::MAX - 8)),
                    Hostile::BadOffset,
                    E::EINVAL,
                    Stage::Object,
                )
            };
        }
        let b = self.hostile_fd(&[
            (Obj::Dir, E::EISDIR, Stage::Object),
            (Obj::FileWo, E::EBADF, Stage::Object),
            (Obj::FilePath, E::EBADF, Stage::Fd),
        ]);
        from(op(b.value.clone(), len.max(1), off), b)
    }

    /// readv or preadv. Linux: `do_preadv()` (negative offset first), `fdget()`,
    /// `vfs_readv()` (`FMODE_READ`, `import_iovec()`: more than `UIO_MAXIOV` is EINVAL,
    /// `rw_verify_area()`).
    pub(super) fn readv(&mut self, h: bool, positional: bool) -> Call {
        let off = positional.then(|| self.r.pick(&[0i64, 5, 100]));
        let iovs = self.r.pick(&[1, 2, 3]);
        let good = self.fd_of(&[Obj::FileRw, Obj::FileRo]);
        let op = |fd, iovs, off| Op::Readv { fd, iovs, off };
        if !h {
            return ok(op(good, iovs, off));
        }
        match self.r.below(4) {
            0 => fails(
                op(good, IOV_MAX + 1, off),
                Hostile::BadLength,
                E::EINVAL,
                Stage::Object,
            ),
            1 if positional => {
                if self.r.chance(50) {
                    fails(
                        op(good, 2, Some(-1)),
                        Hostile::BadOffset,
                        E::EINVAL,
                        Stage::Args,
                    )
                } else {
                    // Two 4-byte buffers past the largest offset.
                    fails(
                        op(good, 2, Some(i64::MAX - 4)),
                        Hostile::BadOffset,
                        E::EINVAL,
                        Stage::Object,
                    )
                }
            }
            _ => {
                let b = self.hostile_fd(&[
                    (Obj::Dir, E::EISDIR, Stage::Object),
                    (Obj::FileWo, E::EBADF, Stage::Object),
                    (Obj::FilePath, E::EBADF, Stage::Fd),
                ]);
                from(op(b.value.clone(), iovs, off), b)
            }
        }
    }

    /// write or pwrite. Linux: `ksys_pwrite64()`, `vfs_write()` (`FMODE_WRITE`,
    /// `rw_verify_area()`), tmpfs's `shmem_write_begin()` (ENOSPC).
    pub(super) fn write(&mut self, h: bool, positional: bool) -> Call {
        let len = self.r.pick(&[0, 1, 5]);
        let off = positional.then(|| self.r.pick(&[0i64, 2, 50]));
        let op = |fd, len, off: Option<i64>| match off {
            Some(off) => Op::Pwrite { fd, len, off },
            None => Op::Write { fd, len },
        };
        let good = self.fd_of(&[Obj::FileRw, Obj::FileWo]);
        if !h {
            return ok(op(good, len, off));
        }
        if positional && self.r.chance(50) {
            return match self.r.below(3) {
                0 => fails(
                    op(good, 1, Some(-1)),
                    Hostile::BadOffset,
                    E::EINVAL,
                    Stage::Args,
                ),
                1 => fails(
                    op(good, 2, Some(i64::MAX - 1)),
                    Hostile::BadOffset,
                    E::EINVAL,
                    Stage::Object,
                ),
                _ => fails(
                    op(fd(Obj::Full), 1, Some(NO_FD_SPACE)),
                    Hostile::NoSpace,
                    E::ENOSPC,
                    Stage::Resource,
                ),
            };
        }
        let b = self.hostile_fd(&[
            (Obj::FileRo, E::EBADF, Stage::Object),
            (Obj::Dir, E::EBADF, Stage::Object),
            (Obj::FilePath, E::EBADF, Stage::Fd),
        ]);
        from(op(b.value.clone(), len.max(1), off), b)
    }

    /// writev or pwritev: as write, with `import_iovec()`.
    pub(super) fn writev(&mut self, h: bool, positional: bool) -> Call {
        let off = positional.then(|| self.r.pick(&[0i64, 5, 100]));
        let iovs = self.r.pick(&[1, 2, 3]);
        let good = self.fd_of(&[Obj::FileRw, Obj::FileWo]);
        let op = |fd, iovs, off| Op::Writev { fd, iovs, off };
        if !h {
            return ok(op(good, iovs, off));
        }
        match self.r.below(4) {
            0 => fails(
                op(good, IOV_MAX + 1, off),
                Hostile::BadLength,
                E::EINVAL,
                Stage::Object,
            ),
            1 if positional => match self.r.below(3) {
                0 => fails(
                    op(good, 1, Some(-1)),
                    Hostile::BadOffset,
                    E::EINVAL,
                    Stage::Args,
                ),
                1 => fails(
                    op(good, 2, Some(i64::MAX - 4)),
                    Hostile::BadOffset,
                    E::EINVAL,
                    Stage::Object,
                ),
                _ => fails(
                    op(fd(Obj::Full), 1, Some(NO_FD_SPACE)),
                    Hostile::NoSpace,
                    E::ENOSPC,
                    Stage::Resource,
                ),
            },
            _ => {
                let b = self.hostile_fd(&[
                    (Obj::FileRo, E::EBADF, Stage::Object),
                    (Obj::Dir, E::EBADF, Stage::Object),
                    (Obj::FilePath, E::EBADF, Stage::Fd),
                ]);
                from(op(b.value.clone(), iovs, off), b)
            }
        }
    }

    /// Linux: `ksys_lseek()` (`fdget_pos()`, whence past `SEEK_MAX`), `vfs_setpos()`
    /// (negative result), `dcache_dir_lseek()` (a tmpfs directory refuses `SEEK_END`).
    pub(super) fn lseek(&mut self, h: bool) -> Call {
        let op = |fd, off, whence| Op::Lseek { fd, off, whence };
        if !h {
            return if self.r.chance(25) {
                ok(op(fd(Obj::Dir), self.r.pick(&[0, 2]), SEEK_SET))
            } else {
                let f = self.fd_of(&[Obj::FileRw, Obj::FileRo, Obj::FileWo]);
                let (off, whence) =
                    self.r
                        .pick(&[(0, SEEK_SET), (5, SEEK_SET), (0, SEEK_CUR), (0, SEEK_END)]);
                ok(op(f, off, whence))
            };
        }
        let good = self.fd_of(&[Obj::FileRw, Obj::FileRo]);
        match self.r.below(5) {
            0 => fails(op(good, 0, 5), Hostile::BadFlags, E::EINVAL, Stage::Object),
            1 => fails(
                op(good, -1, SEEK_SET),
                Hostile::BadOffset,
                E::EINVAL,
                Stage::Object,
            ),
            2 => fails(
                op(fd(Obj::Dir), 0, SEEK_END),
                Hostile::WrongFd,
                E::EINVAL,
                Stage::Object,
            ),
            _ => {
                let b = self.hostile_fd(&[(Obj::FilePath, E::EBADF, Stage::Fd)]);
                from(op(b.value.clone(), 0, SEEK_SET), b)
            }
        }
    }

    /// fsync or fdatasync. Linux: `do_fsync()` (`fdget()`: no O_PATH).
    pub(super) fn fsync(&mut self, h: bool, data_only: bool) -> Call {
        let op = |fd| {
            if data_only {
                Op::Fdatasync { fd }
            } else {
                Op::Fsync { fd }
            }
        };
        if !h {
            return ok(op(self.fd_of(&[
                Obj::FileRw,
                Obj::FileRo,
                Obj::FileWo,
                Obj::Dir,
                Obj::Full,
            ])));
        }
        let b = self.hostile_fd(&[(Obj::FilePath, E::EBADF, Stage::Fd)]);
        from(op(b.value.clone()), b)
    }

    /// Linux: `ksys_fallocate()` (`fdget()`), `vfs_fallocate()` (offset and length, mode,
    /// `FMODE_WRITE`, file type, `s_maxbytes` overflow as EFBIG), `shmem_fallocate()`.
    pub(super) fn fallocate(&mut self, h: bool) -> Call {
        let keep = FallocFlags::KEEP_SIZE.bits();
        let punch = FallocFlags::PUNCH_HOLE.bits();
        let op = |fd, mode, off, len| Op::Fallocate { fd, mode, off, len };
        let good = self.fd_of(&[Obj::FileRw, Obj::FileWo]);
        if !h {
            let (mode, off, len) =
                self.r
                    .pick(&[(0, 0, 10), (keep, 100, 4096), (punch | keep, 0, 5)]);
            return ok(op(good, mode, off, len));
        }
        match self.r.below(7) {
            0 => {
                let (off, len) = self.r.pick(&[(-1, 10), (0, 0), (0, -1)]);
                let kind = if off < 0 {
                    Hostile::BadOffset
                } else {
                    Hostile::BadLength
                };
                fails(op(good, 0, off, len), kind, E::EINVAL, Stage::Object)
            }
            1 => {
                let mode = self.r.pick(&[0x100, punch]);
                fails(
                    op(good, mode, 0, 10),
                    Hostile::BadFlags,
                    E::EOPNOTSUPP,
                    Stage::Object,
                )
            }
            2 => fails(
                op(good, 0, i64::MAX - 10, 100),
                Hostile::BadOffset,
                E::EFBIG,
                Stage::Object,
            ),
            3 => fails(
                op(fd(Obj::Full), 0, NO_FD_SPACE, 4096),
                Hostile::NoSpace,
                E::ENOSPC,
                Stage::Resource,
            ),
            _ => {
                let b = self.hostile_fd(&[
                    (Obj::FileRo, E::EBADF, Stage::Object),
                    (Obj::Dir, E::EBADF, Stage::Object),
                    (Obj::FilePath, E::EBADF, Stage::Fd),
                ]);
                from(op(b.value.clone(), 0, 0, 10), b)
            }
        }
    }

    /// Linux: `do_sys_ftruncate()` (negative length first, `fdget()`), `do_ftruncate()` (a
    /// regular file open for writing, else EINVAL).
    pub(super) fn ftruncate(&mut self, h: bool) -> Call {
        let good = self.fd_of(&[Obj::FileRw, Obj::FileWo]);
        let len = self.r.pick(&[0, 5, 100]);
        if !h {
            return ok(Op::Ftruncate { fd: good, len });
        }
        if self.r.chance(25) {
            return fails(
                Op::Ftruncate { fd: good, len: -1 },
                Hostile::BadLength,
                E::EINVAL,
                Stage::Args,
            );
        }
        let b = self.hostile_fd(&[
            (Obj::FileRo, E::EINVAL, Stage::Object),
            (Obj::Dir, E::EINVAL, Stage::Object),
            (Obj::FilePath, E::EBADF, Stage::Fd),
        ]);
        from(
            Op::Ftruncate {
                fd: b.value.clone(),
                len,
            },
            b,
        )
    }

    /// Linux: `do_sys_truncate()` (negative length first), `vfs_truncate()` (EISDIR, EINVAL,
    /// write permission).
    pub(super) fn truncate(&mut self, h: bool) -> Call {
        let len = self.r.pick(&[0, 5, 100]);
        if !h {
            return if self.r.chance(70) {
                ok(Op::Truncate {
                    path: self.file_path(),
                    len,
                })
            } else {
                ok_or_state(Op::Truncate {
                    path: self.scratch(),
                    len,
                })
            };
        }
        match self.r.below(4) {
            0 => fails(
                Op::Truncate {
                    path: self.file_path(),
                    len: -1,
                },
                Hostile::BadLength,
                E::EINVAL,
                Stage::Args,
            ),
            1 => fails(
                Op::Truncate {
                    path: self.dir_path(),
                    len,
                },
                Hostile::WrongObject,
                E::EISDIR,
                Stage::Object,
            ),
            _ => {
                let b = self.bad_path(Use::Existing);
                from(
                    Op::Truncate {
                        path: b.value.clone(),
                        len,
                    },
                    b,
                )
            }
        }
    }
}
