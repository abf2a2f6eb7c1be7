//! Families: `setxattr`, `getxattr`, `listxattr`, `removexattr` (path, link and fd forms).

use super::*;

impl Gen {
    /// A well-formed xattr target naming `f` (which holds `user.k`), or (`dirs`) `sub`.
    pub(super) fn xat_file(&mut self) -> XAt {
        match self.r.below(3) {
            0 => XAt::Path(self.file_path()),
            1 => XAt::Link(self.plain_file_path()),
            _ => XAt::Fd(self.fd_of(&[Obj::FileRw, Obj::FileRo])),
        }
    }

    /// A hostile xattr target: a bad path or a bad fd; the symlink itself for `user.*`
    /// (EPERM to write, ENODATA to read).
    pub(super) fn bad_xat(&mut self, write: bool) -> Bad<XAt> {
        match self.r.below(4) {
            0 => {
                let e = if write { E::EPERM } else { E::ENODATA };
                bad(XAt::Link(p(b"l")), Hostile::WrongObject, e, Stage::Object)
            }
            1 => {
                let b = self.hostile_fd(&[(Obj::FilePath, E::EBADF, Stage::Fd)]);
                bad(XAt::Fd(b.value), b.kind, b.errno, b.stage)
            }
            _ => {
                let b = self.bad_path(Use::Existing);
                let at = if self.r.chance(50) {
                    XAt::Path(b.value)
                } else {
                    XAt::Link(b.value)
                };
                bad(at, b.kind, b.errno, b.stage)
            }
        }
    }

    /// A hostile xattr name: Linux `setxattr_copy()` / `import_xattr_name()` (empty or past
    /// `XATTR_NAME_MAX` is ERANGE), `xattr_permission()` (`trusted.*` without `CAP_SYS_ADMIN`),
    /// `cap_inode_setxattr()` (`security.*`), `xattr_resolve_name()` (unknown namespace).
    pub(super) fn bad_xname(&mut self, write: bool) -> Bad<Vec<u8>> {
        let mut long = b"user.".to_vec();
        long.extend(std::iter::repeat_n(b'n', 251));
        match self.r.below(5) {
            0 => bad(p(b""), Hostile::BadLength, E::ERANGE, Stage::Args),
            1 => bad(long, Hostile::LongName, E::ERANGE, Stage::Args),
            2 => bad(
                p(b"bogus.a"),
                Hostile::BadValue,
                E::EOPNOTSUPP,
                Stage::Object,
            ),
            3 => {
                let e = if write { E::EPERM } else { E::ENODATA };
                bad(p(b"trusted.k"), Hostile::Privilege, e, Stage::Object)
            }
            _ => {
                if write {
                    bad(
                        p(b"security.a"),
                        Hostile::Privilege,
                        E::EPERM,
                        Stage::Object,
                    )
                } else {
                    bad(p(b"user.k\0x"), Hostile::Nul, E::EINVAL, Stage::Args)
                }
            }
        }
    }

    pub(super) fn scratch_xname(&mut self) -> Vec<u8> {
        self.r
            .pick(&[&b"user.s0"[..], b"user.s1", b"user.s2", b"user.s3"])
            .to_vec()
    }

    /// Linux: `path_setxattr()` / `SYSCALL_DEFINE5(fsetxattr)`: `setxattr_copy()` (flags,
    /// name, size) before the lookup, then `vfs_setxattr()`.
    pub(super) fn setxattr(&mut self, h: bool) -> Call {
        let op = |at, name, len, flags| Op::Setxattr {
            at,
            name,
            len,
            flags,
        };
        let len = self.r.pick(&[0, 4, 100]);
        let flags = self.r.pick(&[0, 1, 2]);
        if !h {
            let at = if self.r.chance(20) {
                XAt::Path(self.dir_path())
            } else {
                self.xat_file()
            };
            return ok_or_state(op(at, self.scratch_xname(), len, flags));
        }
        match self.r.below(5) {
            0 => fails(
                op(self.xat_file(), p(b"user.hx"), len, 4),
                Hostile::BadFlags,
                E::EINVAL,
                Stage::Args,
            ),
            1 => fails(
                op(
                    self.xat_file(),
                    p(b"user.hx"),
                    uvfs::abi::XATTR_SIZE_MAX + 1,
                    0,
                ),
                Hostile::BadLength,
                E::E2BIG,
                Stage::Args,
            ),
            2 => {
                let b = self.bad_xname(true);
                from(op(self.xat_file(), b.value.clone(), len, 0), b)
            }
            _ => {
                let b = self.bad_xat(true);
                from(op(b.value.clone(), p(b"user.hx"), len, 0), b)
            }
        }
    }

    /// Linux: `path_getxattr()` / `fgetxattr`: the name, the lookup, `vfs_getxattr()`; a
    /// buffer smaller than the value is ERANGE.
    pub(super) fn getxattr(&mut self, h: bool) -> Call {
        let op = |at, name, size| Op::Getxattr { at, name, size };
        if !h {
            return if self.r.chance(50) {
                let size = self.r.pick(&[0, 64]);
                ok(op(self.xat_file(), p(b"user.k"), size))
            } else {
                ok_or_state(op(self.xat_file(), self.scratch_xname(), 256))
            };
        }
        match self.r.below(4) {
            0 => fails(
                op(self.xat_file(), p(b"user.k"), 1),
                Hostile::BadLength,
                E::ERANGE,
                Stage::Object,
            ),
            1 => {
                let b = self.bad_xname(false);
                from(op(self.xat_file(), b.value.clone(), 64), b)
            }
            _ => {
                let b = self.bad_xat(false);
                from(op(b.value.clone(), p(b"user.k"), 64), b)
            }
        }
    }

    /// Linux: `path_listxattr()` / `flistxattr`: a buffer smaller than the list is ERANGE.
    pub(super) fn listxattr(&mut self, h: bool) -> Call {
        if !h {
            let size = self.r.pick(&[0, 256]);
            return ok(Op::Listxattr {
                at: self.xat_file(),
                size,
            });
        }
        if self.r.chance(30) {
            return fails(
                Op::Listxattr {
                    at: self.xat_file(),
                    size: 1,
                },
                Hostile::BadLength,
                E::ERANGE,
                Stage::Object,
            );
        }
        let b = loop {
            // The symlink itself has a list (empty): only the bad paths and fds apply.
            let b = self.bad_xat(false);
            if b.kind != Hostile::WrongObject {
                break b;
            }
        };
        from(
            Op::Listxattr {
                at: b.value.clone(),
                size: 256,
            },
            b,
        )
    }

    /// Linux: `path_removexattr()` / `fremovexattr`: the name, the lookup,
    /// `vfs_removexattr()`.
    pub(super) fn removexattr(&mut self, h: bool) -> Call {
        let op = |at, name| Op::Removexattr { at, name };
        if !h {
            return ok_or_state(op(self.xat_file(), self.scratch_xname()));
        }
        if self.r.chance(40) {
            let b = self.bad_xname(true);
            return from(op(self.xat_file(), b.value.clone()), b);
        }
        let b = self.bad_xat(true);
        from(op(b.value.clone(), p(b"user.hx")), b)
    }
}
