//! Families: `openat`, `openat2`, `close`.

use super::*;

impl Gen {
    /// Linux: `do_sys_openat2()` (`build_open_flags()`, `getname()`, `get_unused_fd_flags()`),
    /// `path_openat()`, `open_last_lookups()`, `do_open()`, `may_open()`.
    pub(super) fn openat(&mut self, h: bool) -> Call {
        use OpenFlags as O;
        let acc = [O::RDONLY, O::WRONLY, O::RDWR];
        if !h {
            let dir = self.dir();
            return match self.r.below(6) {
                0 => {
                    let extra = self.r.pick(&[
                        O::empty(),
                        O::CLOEXEC,
                        O::NONBLOCK,
                        O::TRUNC,
                        // openat ignores unknown bits.
                        O::from_bits_retain(1 << 27),
                    ]);
                    let a = self.r.pick(&acc);
                    ok(openat_op(dir, self.file_path(), a | extra, 0))
                }
                1 => ok(openat_op(dir, self.plain_file_path(), O::NOFOLLOW, 0)),
                2 => ok(openat_op(dir, self.dir_path(), O::DIRECTORY, 0)),
                3 => {
                    let path = self.existing();
                    ok(openat_op(dir, path, O::PATH, 0))
                }
                4 => {
                    let excl = self.r.pick(&[O::empty(), O::EXCL]);
                    let a = self.r.pick(&[O::WRONLY, O::RDWR]);
                    ok_or_state(openat_op(dir, self.scratch(), O::CREAT | a | excl, 0o644))
                }
                _ => {
                    let where_ = self.r.pick(&[&b"."[..], b"sub"]);
                    ok(openat_op(dir, p(where_), O::TMPFILE | O::RDWR, 0o600))
                }
            };
        }
        let dir = self.dir();
        match self.r.below(9) {
            0 | 1 => {
                let (dir, path, b) = self.at_existing(true);
                with(openat_op(dir, path, O::RDONLY, 0), b)
            }
            // `build_open_flags()`: O_CREAT with O_DIRECTORY (Linux 6.4+); O_TMPFILE without
            // write access.
            2 => fails(
                openat_op(dir, p(b"hx"), O::CREAT | O::DIRECTORY | O::WRONLY, 0o644),
                Hostile::BadFlags,
                E::EINVAL,
                Stage::Args,
            ),
            3 => fails(
                openat_op(dir, p(b"."), O::TMPFILE | O::RDONLY, 0o600),
                Hostile::BadFlags,
                E::EINVAL,
                Stage::Args,
            ),
            // `may_open()`: a directory for writing; `do_open()`: O_DIRECTORY on a file;
            // O_NOFOLLOW on a symlink.
            4 => {
                let a = self.r.pick(&[O::WRONLY, O::RDWR]);
                fails(
                    openat_op(dir, self.dir_path(), a, 0),
                    Hostile::WrongObject,
                    E::EISDIR,
                    Stage::Object,
                )
            }
            5 => {
                let (path, flags, e) = if self.r.chance(50) {
                    (self.plain_file_path(), O::DIRECTORY, E::ENOTDIR)
                } else {
                    (p(b"l"), O::NOFOLLOW, E::ELOOP)
                };
                fails(
                    openat_op(dir, path, flags, 0),
                    Hostile::WrongObject,
                    e,
                    Stage::Object,
                )
            }
            6 => fails(
                openat_op(dir, p(b"full/hx"), O::CREAT | O::WRONLY, 0o644),
                Hostile::NoSpace,
                E::ENOSPC,
                Stage::Resource,
            ),
            // `may_open()`: O_NOATIME on a file the caller does not own.
            7 => fails(
                openat_op(dir, p(b"full/big"), O::NOATIME, 0),
                Hostile::Privilege,
                E::EPERM,
                Stage::Object,
            ),
            _ => fails(
                openat_op(dir, self.file_path(), O::RDONLY, 0),
                Hostile::NoFreeFd,
                E::EMFILE,
                Stage::Resource,
            ),
        }
    }

    /// Linux: `do_sys_openat2()` with `build_open_flags()`'s strict checks, then as openat;
    /// `RESOLVE_*` in `path_init()`, `handle_dots()`, `pick_link()`.
    pub(super) fn openat2(&mut self, h: bool) -> Call {
        use OpenFlags as O;
        const NO_XDEV: u64 = 0x01;
        const NO_MAGICLINKS: u64 = 0x02;
        const NO_SYMLINKS: u64 = 0x04;
        const BENEATH: u64 = 0x08;
        const IN_ROOT: u64 = 0x10;
        let op = |dir, path, flags: O, mode: u64, resolve| Op::Openat2 {
            dir,
            path,
            flags: u64::from(flags.bits()),
            mode,
            resolve,
        };
        let dir = self.dir();
        if !h {
            return match self.r.below(3) {
                0 => {
                    let resolve = self.r.pick(&[0, NO_XDEV, NO_MAGICLINKS]);
                    let a = self.r.pick(&[O::RDONLY, O::WRONLY, O::RDWR]);
                    ok(op(dir, self.file_path(), a, 0, resolve))
                }
                1 => {
                    let resolve = self.r.pick(&[NO_SYMLINKS, BENEATH, IN_ROOT]);
                    ok(op(dir, self.plain_file_path(), O::RDONLY, 0, resolve))
                }
                _ => ok_or_state(op(dir, self.scratch(), O::CREAT | O::WRONLY, 0o644, 0)),
            };
        }
        match self.r.below(8) {
            0 | 1 => {
                let (dir, path, b) = self.at_existing(true);
                with(op(dir, path, O::RDONLY, 0, 0), b)
            }
            2 => {
                let (flags, mode, resolve) = self.r.pick(&[
                    (O::from_bits_retain(1 << 27), 0, 0),
                    (O::RDONLY, 0, 1 << 10),
                    (O::RDONLY, 0o644, 0),
                    (O::RDONLY, 0, BENEATH | IN_ROOT),
                    (O::PATH | O::RDWR, 0, 0),
                ]);
                fails(
                    op(dir, self.file_path(), flags, mode, resolve),
                    Hostile::BadFlags,
                    E::EINVAL,
                    Stage::Args,
                )
            }
            3 => fails(
                op(dir, p(b"l"), O::RDONLY, 0, NO_SYMLINKS),
                Hostile::WrongObject,
                E::ELOOP,
                Stage::Walk,
            ),
            4 => {
                let path = self.r.pick(&[&b"/d/f"[..], b"../d/f"]);
                fails(
                    op(dir, p(path), O::RDONLY, 0, BENEATH),
                    Hostile::WrongObject,
                    E::EXDEV,
                    Stage::Walk,
                )
            }
            5 => fails(
                op(dir, p(b"full/hx"), O::CREAT | O::WRONLY, 0o600, 0),
                Hostile::NoSpace,
                E::ENOSPC,
                Stage::Resource,
            ),
            _ => fails(
                op(dir, self.file_path(), O::RDONLY, 0, 0),
                Hostile::NoFreeFd,
                E::EMFILE,
                Stage::Resource,
            ),
        }
    }

    /// Linux: `close_fd()`.
    pub(super) fn close(&mut self, h: bool) -> Call {
        if !h {
            return ok(Op::Close { fd: FdArg::Fresh });
        }
        let b = self.bad_fd();
        from(
            Op::Close {
                fd: b.value.clone(),
            },
            b,
        )
    }
}
