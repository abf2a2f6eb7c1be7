//! The attribute family of the generator: `stat`/`fstatat`, `chmod` and `chown` in their
//! fd and `*at` forms, `utimensat` (times inside and past each end of a packed inode time,
//! and the ends of 64 bits), and the extended attributes.

use super::*;

impl Gen {
    pub(super) fn stat(&mut self) -> Op {
        match self.rng.below(3) {
            0 => Op::Fstat { fd: self.fd() },
            _ => {
                let flags = self.at_flags();
                let (dirfd, path) = if flags & 0x1000 != 0 && self.rng.chance(70) {
                    (self.fd_arg(), Vec::new())
                } else {
                    (self.dirfd(), self.path())
                };
                Op::Fstatat { dirfd, path, flags }
            }
        }
    }

    pub(super) fn chmod(&mut self) -> Op {
        let mode = self.mode();
        if self.rng.chance(35) {
            Op::Fchmod {
                fd: self.fd(),
                mode,
            }
        } else {
            Op::Fchmodat {
                dirfd: self.dirfd(),
                path: self.maybe_empty_path(),
                mode,
                flags: self.change_at_flags(),
            }
        }
    }

    pub(super) fn chown(&mut self) -> Op {
        let uid = *self.rng.pick(&IDS);
        let gid = *self.rng.pick(&IDS);
        if self.rng.chance(35) {
            Op::Fchown {
                fd: self.fd(),
                uid,
                gid,
            }
        } else {
            Op::Fchownat {
                dirfd: self.dirfd(),
                path: self.maybe_empty_path(),
                uid,
                gid,
                flags: self.change_at_flags(),
            }
        }
    }

    fn time(&mut self) -> Time {
        match self.rng.below(6) {
            0 | 1 => Time {
                sec: 0,
                nsec: Time::UTIME_NOW,
            },
            2 => Time {
                sec: 0,
                nsec: Time::UTIME_OMIT,
            },
            3 => Time {
                sec: 1_000_000_000,
                nsec: 5,
            },
            4 => Time {
                // Inside and past each end of a packed inode time (-2^33..2^33), and the extremes.
                sec: *self.rng.pick(&[
                    0,
                    -1,
                    1 << 33,
                    (1 << 33) - 1,
                    -(1 << 33) - 1,
                    i64::MAX,
                    i64::MIN,
                ]),
                nsec: 0,
            },
            _ => Time {
                sec: 100,
                nsec: *self.rng.pick(&[-1, 1_000_000_000, 999_999_999]),
            },
        }
    }

    pub(super) fn utimens(&mut self) -> Op {
        let times = if self.rng.chance(25) {
            None
        } else {
            Some([self.time(), self.time()])
        };
        if self.rng.chance(30) {
            Op::Utimensat {
                dirfd: self.fd(),
                path: None,
                times,
                flags: 0,
            }
        } else {
            Op::Utimensat {
                dirfd: self.dirfd(),
                path: Some(self.path()),
                times,
                flags: *self.rng.weighted(&[(6, 0), (3, 0x100), (1, 0x200)]),
            }
        }
    }

    fn xattr_target(&mut self) -> XattrTarget {
        match self.rng.below(5) {
            0 | 1 => XattrTarget::Path(self.path()),
            2 => XattrTarget::Link(self.path()),
            _ => XattrTarget::File(self.fd()),
        }
    }

    fn xattr_name(&mut self) -> Vec<u8> {
        if self.rng.chance(3) {
            let mut n = b"user.".to_vec();
            n.extend(std::iter::repeat_n(b'x', 251 + self.rng.below(2)));
            return n;
        }
        self.rng.pick(&XATTR_NAMES).to_vec()
    }

    pub(super) fn xattr(&mut self) -> Op {
        let target = self.xattr_target();
        match self.rng.below(8) {
            0..=2 => Op::Setxattr {
                target,
                name: self.xattr_name(),
                value: match self.rng.below(6) {
                    0 => Vec::new(),
                    1 => (0..65537).map(|i| (i % 251) as u8).collect(),
                    2 => (0..3000).map(|i| (i % 251) as u8).collect(),
                    _ => b"value".to_vec(),
                },
                flags: *self.rng.weighted(&[(6, 0), (2, 1), (2, 2), (1, 3)]),
            },
            3 | 4 => Op::Getxattr {
                target,
                name: self.xattr_name(),
                size: *self.rng.pick(&[0, 1, 4096, 4096]),
            },
            5 | 6 => Op::Listxattr {
                target,
                size: *self.rng.pick(&[0, 1, 10, 4096, 4096]),
            },
            _ => Op::Removexattr {
                target,
                name: self.xattr_name(),
            },
        }
    }

    /// The `*at` flags of fchmodat and fchownat: none, `AT_SYMLINK_NOFOLLOW`,
    /// `AT_EMPTY_PATH`, and an invalid one.
    fn change_at_flags(&mut self) -> i64 {
        *self
            .rng
            .weighted(&[(6, 0), (2, 0x100), (1, 0x1000), (1, 0x200)])
    }
}
