//! Families: `mkdirat`, `mknodat`, `symlinkat`, `linkat`, `unlinkat`, `renameat2`, `readlinkat`.

use super::*;

impl Gen {
    /// Linux: `do_mkdirat()` → `filename_create()` (EEXIST), `vfs_mkdir()` (`may_create()`),
    /// `shmem_mknod()` (ENOSPC).
    pub(super) fn mkdirat(&mut self, h: bool) -> Call {
        let mode = self.r.pick(&DIR_MODES);
        let op = |dir, path| Op::Mkdirat { dir, path, mode };
        if !h {
            let dir = self.dir();
            return ok_or_state(op(dir, self.scratch()));
        }
        let dir = self.dir();
        match self.r.below(4) {
            0 => fails(
                op(dir, p(b"full/hx")),
                Hostile::NoSpace,
                E::ENOSPC,
                Stage::Resource,
            ),
            1 => fails(
                op(dir, self.existing()),
                Hostile::WrongObject,
                E::EEXIST,
                Stage::Object,
            ),
            _ => {
                let (dir, path, b) = self.at(true, Use::Create, |g| g.scratch());
                with(op(dir, path), b)
            }
        }
    }

    /// Linux: `do_mknodat()` (`may_mknod()`: directory EPERM, unknown type EINVAL), then as
    /// mkdir, then `vfs_mknod()` (`CAP_MKNOD` for a device, after `may_create()`).
    pub(super) fn mknodat(&mut self, h: bool) -> Call {
        let op = |dir, path, mode, dev| Op::Mknodat {
            dir,
            path,
            mode,
            dev,
        };
        let dir = self.dir();
        if !h {
            let ty = self.r.pick(&[0, S_IFREG, S_IFIFO, S_IFSOCK]);
            return ok_or_state(op(dir, self.r.pick(&NODES).to_vec(), ty | 0o644, 0));
        }
        match self.r.below(5) {
            0 => {
                let (ty, e) = self.r.pick(&[(S_IFMT, E::EINVAL), (S_IFDIR, E::EPERM)]);
                fails(
                    op(dir, p(b"hx"), ty | 0o644, 0),
                    Hostile::BadFlags,
                    e,
                    Stage::Args,
                )
            }
            1 => fails(
                op(dir, p(b"hx"), S_IFCHR | 0o644, DEV_NULL),
                Hostile::Privilege,
                E::EPERM,
                Stage::Object,
            ),
            2 => fails(
                op(dir, p(b"full/hx"), S_IFIFO | 0o644, 0),
                Hostile::NoSpace,
                E::ENOSPC,
                Stage::Resource,
            ),
            _ => {
                let (dir, path, b) = self.at(true, Use::Create, |g| g.r.pick(&NODES).to_vec());
                with(op(dir, path, S_IFIFO | 0o644, 0), b)
            }
        }
    }

    /// Linux: `do_symlinkat()` (`getname()` of the target: empty ENOENT, `PATH_MAX`), then as
    /// mkdir.
    pub(super) fn symlinkat(&mut self, h: bool) -> Call {
        let target = self.r.pick(&TARGETS).to_vec();
        let op = |target, dir, path| Op::Symlinkat { target, dir, path };
        let dir = self.dir();
        if !h {
            return ok_or_state(op(target, dir, self.scratch()));
        }
        match self.r.below(6) {
            0 => fails(
                op(p(b""), dir, p(b"hx")),
                Hostile::BadLength,
                E::ENOENT,
                Stage::Args,
            ),
            1 => {
                let (t, kind, e) = self.r.pick(&[
                    (long_path(), Hostile::LongPath, E::ENAMETOOLONG),
                    (p(b"f\0x"), Hostile::Nul, E::EINVAL),
                ]);
                fails(op(t, dir, p(b"hx")), kind, e, Stage::Args)
            }
            2 => fails(
                op(target, dir, p(b"full/hx")),
                Hostile::NoSpace,
                E::ENOSPC,
                Stage::Resource,
            ),
            3 => fails(
                op(target, dir, self.existing()),
                Hostile::WrongObject,
                E::EEXIST,
                Stage::Object,
            ),
            _ => {
                let (dir, path, b) = self.at(true, Use::Create, |g| g.scratch());
                with(op(target, dir, path), b)
            }
        }
    }

    /// Linux: `do_linkat()` (flags; the old path; `filename_create()`; EXDEV across mounts;
    /// `may_linkat()`; `vfs_link()`: `may_create()`, a directory is EPERM).
    pub(super) fn linkat(&mut self, h: bool) -> Call {
        let op = |odir, old, ndir, new, flags: AtFlags| Op::Linkat {
            odir,
            old,
            ndir,
            new,
            flags: flags.bits(),
        };
        if !h {
            if self.r.chance(25) {
                let o = self.r.pick(&[Obj::FileRw, Obj::FileRo]);
                let ndir = self.dir();
                return ok_or_state(op(d(o), p(b""), ndir, self.scratch(), AtFlags::EMPTY_PATH));
            }
            let flags = self.r.pick(&[AtFlags::empty(), AtFlags::SYMLINK_FOLLOW]);
            let (odir, ndir) = (self.dir(), self.dir());
            let old = self.file_path();
            return ok_or_state(op(odir, old, ndir, self.scratch(), flags));
        }
        let (odir, ndir) = (self.dir(), self.dir());
        match self.r.below(7) {
            0 => fails(
                op(odir, self.file_path(), ndir, p(b"hx"), AtFlags::REMOVEDIR),
                Hostile::BadFlags,
                E::EINVAL,
                Stage::Args,
            ),
            1 => fails(
                op(odir, self.dir_path(), ndir, p(b"hx"), AtFlags::empty()),
                Hostile::WrongObject,
                E::EPERM,
                Stage::Object,
            ),
            2 => fails(
                op(
                    odir,
                    self.file_path(),
                    ndir,
                    p(b"full/hx"),
                    AtFlags::empty(),
                ),
                Hostile::WrongObject,
                E::EXDEV,
                Stage::Object,
            ),
            3 => fails(
                op(
                    odir,
                    self.file_path(),
                    ndir,
                    self.existing(),
                    AtFlags::empty(),
                ),
                Hostile::WrongObject,
                E::EEXIST,
                Stage::Object,
            ),
            4 | 5 => {
                let (odir, old, b) = self.at_existing(true);
                with(op(odir, old, ndir, p(b"hx"), AtFlags::empty()), b)
            }
            _ => {
                let (ndir, new, b) = self.at(true, Use::Create, |g| g.scratch());
                with(op(odir, self.file_path(), ndir, new, AtFlags::empty()), b)
            }
        }
    }

    /// Linux: `do_unlinkat()` / `do_rmdir()` (the last component's kind: `.`, `..`),
    /// `may_delete()` (EISDIR, ENOTDIR), `vfs_rmdir()` (EBUSY on a mountpoint, ENOTEMPTY).
    pub(super) fn unlinkat(&mut self, h: bool) -> Call {
        let op = |dir, path, flags: AtFlags| Op::Unlinkat {
            dir,
            path,
            flags: flags.bits(),
        };
        let dir = self.dir();
        if !h {
            return if self.r.chance(50) {
                let path = if self.r.chance(30) {
                    self.r.pick(&NODES).to_vec()
                } else {
                    self.scratch()
                };
                ok_or_state(op(dir, path, AtFlags::empty()))
            } else {
                ok_or_state(op(dir, self.scratch(), AtFlags::REMOVEDIR))
            };
        }
        let rm = AtFlags::REMOVEDIR;
        match self.r.below(4) {
            0 => fails(
                op(dir, p(b"hx"), AtFlags::SYMLINK_NOFOLLOW),
                Hostile::BadFlags,
                E::EINVAL,
                Stage::Args,
            ),
            1 => {
                let (path, flags, e) = self.r.pick(&[
                    (p(b"sub"), AtFlags::empty(), E::EISDIR),
                    (p(b"."), AtFlags::empty(), E::EISDIR),
                    (p(b"f"), rm, E::ENOTDIR),
                    (p(b"."), rm, E::EINVAL),
                    (p(b"sub"), rm, E::ENOTEMPTY),
                    (p(b"full"), rm, E::EBUSY),
                ]);
                fails(op(dir, path, flags), Hostile::WrongObject, e, Stage::Object)
            }
            _ => {
                let (dir, path, b) = self.at(true, Use::Remove, |g| g.scratch());
                with(op(dir, path, AtFlags::empty()), b)
            }
        }
    }

    /// Linux: `do_renameat2()` (flags; both parent walks; EXDEV; `.`/`..` as EBUSY; the
    /// lookups; `vfs_rename()`: `may_delete()`, `may_create()`, into itself EINVAL).
    pub(super) fn renameat2(&mut self, h: bool) -> Call {
        let op = |odir, old, ndir, new, flags: RenameFlags| Op::Renameat2 {
            odir,
            old,
            ndir,
            new,
            flags: flags.bits(),
        };
        let (odir, ndir) = (self.dir(), self.dir());
        if !h {
            return if self.r.chance(20) {
                // Whiteouts need no privilege since Linux 5.8; they appear only among the
                // special files, which are never opened.
                let flags = self.r.pick(&[RenameFlags::empty(), RenameFlags::WHITEOUT]);
                let (a, b) = (self.r.pick(&NODES), self.r.pick(&NODES));
                ok_or_state(op(odir, p(a), ndir, p(b), flags))
            } else {
                let flags = self.r.pick(&[
                    RenameFlags::empty(),
                    RenameFlags::NOREPLACE,
                    RenameFlags::EXCHANGE,
                ]);
                let old = self.scratch();
                ok_or_state(op(odir, old, ndir, self.scratch(), flags))
            };
        }
        match self.r.below(6) {
            0 => {
                let flags = self.r.pick(&[
                    RenameFlags::from_bits_retain(8),
                    RenameFlags::EXCHANGE | RenameFlags::NOREPLACE,
                    RenameFlags::EXCHANGE | RenameFlags::WHITEOUT,
                ]);
                fails(
                    op(odir, p(b"hx"), ndir, p(b"hy"), flags),
                    Hostile::BadFlags,
                    E::EINVAL,
                    Stage::Args,
                )
            }
            1 | 2 => {
                let (old, new, e) = self.r.pick(&[
                    (p(b"f"), p(b"sub"), E::EISDIR),
                    (p(b"sub"), p(b"f"), E::ENOTDIR),
                    (p(b"sub"), p(b"sub/hx"), E::EINVAL),
                    (p(b"."), p(b"hx"), E::EBUSY),
                    (p(b"f"), p(b"full/hx"), E::EXDEV),
                ]);
                fails(
                    op(odir, old, ndir, new, RenameFlags::empty()),
                    Hostile::WrongObject,
                    e,
                    Stage::Object,
                )
            }
            3 | 4 => {
                let (odir, old, b) = self.at(true, Use::Remove, |g| g.scratch());
                with(op(odir, old, ndir, p(b"hx"), RenameFlags::empty()), b)
            }
            _ => {
                // The old name exists (`f`), so the new name's failure is the only one.
                let (ndir, new, b) = self.at(true, Use::Create, |g| g.scratch());
                with(op(odir, p(b"f"), ndir, new, RenameFlags::NOREPLACE), b)
            }
        }
    }

    /// Linux: `do_readlinkat()` (size first; a non-link is EINVAL, or ENOENT for an empty
    /// path).
    pub(super) fn readlinkat(&mut self, h: bool) -> Call {
        let size = self.r.pick(&[1, 64]);
        let op = |dir, path, size| Op::Readlinkat { dir, path, size };
        if !h {
            return if self.r.chance(25) {
                ok(op(d(Obj::LinkPath), p(b""), size))
            } else {
                let dir = self.dir();
                ok(op(dir, p(b"l"), size))
            };
        }
        let dir = self.dir();
        match self.r.below(4) {
            0 => fails(
                op(dir, p(b"l"), 0),
                Hostile::BadLength,
                E::EINVAL,
                Stage::Args,
            ),
            1 => {
                if self.r.chance(50) {
                    fails(
                        op(dir, self.plain_file_path(), size),
                        Hostile::WrongObject,
                        E::EINVAL,
                        Stage::Object,
                    )
                } else {
                    fails(
                        op(d(Obj::FilePath), p(b""), size),
                        Hostile::WrongFd,
                        E::ENOENT,
                        Stage::Object,
                    )
                }
            }
            _ => {
                let (dir, path, b) = self.at_existing(true);
                with(op(dir, path, size), b)
            }
        }
    }
}
