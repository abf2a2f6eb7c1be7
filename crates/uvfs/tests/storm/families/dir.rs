//! Families: `getdents64`, `chdir`, `fchdir`, `chroot`, `getcwd`, `mount`, `umount2`.

use super::*;

impl Gen {
    /// Linux: `getdents64()` (`fdget_pos()`: no O_PATH), `iterate_dir()` (ENOTDIR), a buffer
    /// smaller than the first entry is EINVAL.
    pub(super) fn getdents(&mut self, h: bool) -> Call {
        if !h {
            let size = self.r.pick(&[64, 4096]);
            return ok(Op::Getdents {
                fd: fd(Obj::Dir),
                size,
            });
        }
        if self.r.chance(30) {
            return fails(
                Op::Getdents {
                    fd: fd(Obj::Dir),
                    size: 8,
                },
                Hostile::BadLength,
                E::EINVAL,
                Stage::Object,
            );
        }
        let b = self.hostile_fd(&[
            (Obj::FileRw, E::ENOTDIR, Stage::Object),
            (Obj::DirPath, E::EBADF, Stage::Fd),
            (Obj::FilePath, E::EBADF, Stage::Fd),
        ]);
        from(
            Op::Getdents {
                fd: b.value.clone(),
                size: 4096,
            },
            b,
        )
    }

    /// Linux: `ksys_chdir()` (the walk with `LOOKUP_DIRECTORY`, then `MAY_EXEC | MAY_CHDIR`).
    pub(super) fn chdir(&mut self, h: bool) -> Call {
        if !h {
            let path = self.r.pick(&[&b"."[..], b"/d", b"sub/..", b"/d/sub/../"]);
            return ok(Op::Chdir { path: p(path) });
        }
        match self.r.below(4) {
            0 => fails(
                Op::Chdir {
                    path: self.file_path(),
                },
                Hostile::WrongObject,
                E::ENOTDIR,
                Stage::Object,
            ),
            1 => fails(
                Op::Chdir { path: p(b"/vault") },
                Hostile::Forbidden,
                E::EACCES,
                Stage::Object,
            ),
            _ => {
                let b = self.bad_path(Use::Existing);
                from(
                    Op::Chdir {
                        path: b.value.clone(),
                    },
                    b,
                )
            }
        }
    }

    /// Linux: `SYSCALL_DEFINE1(fchdir)` (`fdget_raw()`: O_PATH allowed; ENOTDIR; `MAY_EXEC`).
    pub(super) fn fchdir(&mut self, h: bool) -> Call {
        if !h {
            return ok(Op::Fchdir {
                fd: self.fd_of(&[Obj::Dir, Obj::DirPath]),
            });
        }
        let b = self.hostile_fd(&[
            (Obj::FileRw, E::ENOTDIR, Stage::Object),
            (Obj::LinkPath, E::ENOTDIR, Stage::Object),
        ]);
        from(
            Op::Fchdir {
                fd: b.value.clone(),
            },
            b,
        )
    }

    /// Linux: `ksys_chroot()`: the walk, `MAY_EXEC | MAY_CHDIR`, then `CAP_SYS_CHROOT`.
    pub(super) fn chroot(&mut self, h: bool) -> Call {
        if !h {
            let path = self.r.pick(&[&b"."[..], b"sub", b"/d"]);
            return fails(
                Op::Chroot { path: p(path) },
                Hostile::Privilege,
                E::EPERM,
                Stage::Object,
            );
        }
        match self.r.below(4) {
            0 => fails(
                Op::Chroot {
                    path: self.file_path(),
                },
                Hostile::WrongObject,
                E::ENOTDIR,
                Stage::Object,
            ),
            1 => fails(
                Op::Chroot { path: p(b"/vault") },
                Hostile::Forbidden,
                E::EACCES,
                Stage::Object,
            ),
            _ => {
                let b = self.bad_path(Use::Existing);
                from(
                    Op::Chroot {
                        path: b.value.clone(),
                    },
                    b,
                )
            }
        }
    }

    /// Linux: `SYSCALL_DEFINE2(getcwd)`: ERANGE for a buffer smaller than the path.
    pub(super) fn getcwd(&mut self, h: bool) -> Call {
        if !h {
            return ok(Op::Getcwd {
                size: self.r.pick(&[64, 4096]),
            });
        }
        let size = self.r.pick(&[0, 2]);
        fails(
            Op::Getcwd { size },
            Hostile::BadLength,
            E::ERANGE,
            Stage::Object,
        )
    }

    /// Linux: `do_mount()`: the target walk, then `may_mount()` (`CAP_SYS_ADMIN`).
    pub(super) fn mount(&mut self, h: bool) -> Call {
        if !h {
            return fails(
                Op::Mount {
                    target: self.dir_path(),
                    flags: 0,
                },
                Hostile::Privilege,
                E::EPERM,
                Stage::Object,
            );
        }
        let b = self.bad_path(Use::Existing);
        from(
            Op::Mount {
                target: b.value.clone(),
                flags: 0,
            },
            b,
        )
    }

    /// Linux: `ksys_umount()` (flags, the walk), `can_umount()` (`may_mount()`).
    pub(super) fn umount2(&mut self, h: bool) -> Call {
        if !h {
            let flags = self.r.pick(&[0, 2]);
            return fails(
                Op::Umount2 {
                    target: p(b"full"),
                    flags,
                },
                Hostile::Privilege,
                E::EPERM,
                Stage::Object,
            );
        }
        if self.r.chance(30) {
            return fails(
                Op::Umount2 {
                    target: p(b"full"),
                    flags: 0x100,
                },
                Hostile::BadFlags,
                E::EINVAL,
                Stage::Args,
            );
        }
        let b = self.bad_path(Use::Existing);
        from(
            Op::Umount2 {
                target: b.value.clone(),
                flags: 0,
            },
            b,
        )
    }
}
