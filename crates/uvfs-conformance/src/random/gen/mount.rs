//! The mount family of the generator: `mount` (new instances, binds, moves, remounts,
//! propagation changes) and `umount2`, each with the flags Linux checks.

use super::{Gen, MOUNT_DATA};
use crate::op::Op;

impl Gen {
    pub(super) fn mount(&mut self) -> Op {
        const MS_RDONLY: u64 = 1;
        const MS_NOSUID: u64 = 2;
        const MS_NODEV: u64 = 4;
        const MS_NOEXEC: u64 = 8;
        const MS_REMOUNT: u64 = 32;
        const MS_NOSYMFOLLOW: u64 = 256;
        const MS_NOATIME: u64 = 1024;
        const MS_BIND: u64 = 4096;
        const MS_MOVE: u64 = 8192;
        const MS_REC: u64 = 16384;
        const MS_PRIVATE: u64 = 1 << 18;
        const MS_NODIRATIME: u64 = 2048;
        const MS_RELATIME: u64 = 1 << 21;
        const MS_STRICTATIME: u64 = 1 << 24;
        const MS_LAZYTIME: u64 = 1 << 25;
        match self.rng.below(10) {
            0..=2 => {
                let flags = self.some_of(
                    &[
                        MS_RDONLY,
                        MS_NOSUID,
                        MS_NODEV,
                        MS_NOEXEC,
                        MS_NOATIME,
                        MS_NOSYMFOLLOW,
                        MS_NODIRATIME,
                        MS_RELATIME,
                        MS_STRICTATIME,
                        MS_LAZYTIME,
                    ],
                    15,
                );
                Op::Mount {
                    src: Some(b"none".to_vec()),
                    target: self.path(),
                    fstype: Some("tmpfs".into()),
                    flags,
                    data: Some(self.rng.pick(&MOUNT_DATA).to_string()),
                }
            }
            3 | 4 => Op::Mount {
                src: Some(self.path()),
                target: self.path(),
                fstype: None,
                flags: MS_BIND | if self.rng.chance(30) { MS_REC } else { 0 },
                data: None,
            },
            5 | 6 => {
                let mut flags = MS_REMOUNT;
                if self.rng.chance(50) {
                    flags |= MS_BIND;
                }
                flags |= self.some_of(
                    &[
                        MS_RDONLY,
                        MS_NOSUID,
                        MS_NODEV,
                        MS_NOEXEC,
                        MS_NOATIME,
                        MS_STRICTATIME,
                        MS_NOSYMFOLLOW,
                        MS_NODIRATIME,
                        MS_RELATIME,
                        MS_LAZYTIME,
                    ],
                    20,
                );
                let data = (flags & MS_BIND == 0 && self.rng.chance(50))
                    .then(|| self.rng.pick(&MOUNT_DATA).to_string());
                Op::Mount {
                    src: None,
                    target: self.path(),
                    fstype: None,
                    flags,
                    data,
                }
            }
            7 => Op::Mount {
                src: Some(self.path()),
                target: self.path(),
                fstype: None,
                flags: MS_MOVE,
                data: None,
            },
            8 => Op::Mount {
                src: None,
                target: self.path(),
                fstype: None,
                flags: MS_PRIVATE,
                data: None,
            },
            _ => Op::Umount2 {
                target: self.path(),
                flags: *self
                    .rng
                    .weighted(&[(5, 0), (3, 2), (1, 1), (1, 4), (1, 8), (1, 0x10)]),
            },
        }
    }

    /// Each of `bits`, kept with `percent`% chance, in order (one draw per bit).
    fn some_of(&mut self, bits: &[u64], percent: u32) -> u64 {
        bits.iter()
            .filter(|_| self.rng.chance(percent))
            .fold(0, |acc, b| acc | b)
    }
}
