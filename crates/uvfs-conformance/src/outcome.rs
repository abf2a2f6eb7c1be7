//! What one op produced on one side, before normalisation: an errno or a value. The host
//! helper sends these as JSON lines; [`crate::normalise`] turns them into comparable text.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The result of one op.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The call failed with this Linux errno number.
    Errno(i32),
    /// The call succeeded.
    Ok(Value),
}

/// What a successful call returned.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Value {
    /// Success without a value (`0`).
    Unit,
    /// `pipe2`: the read end and the write end.
    FdPair(i32, i32),
    /// A count, an offset, an fd, a mask or flags.
    Int(i64),
    /// `splice`, `tee`, `sendfile`: the count, and each offset given as the call left it.
    Moved {
        /// Bytes moved.
        count: i64,
        /// `off_in` (`sendfile`'s offset).
        off_in: Option<i64>,
        /// `off_out`.
        off_out: Option<i64>,
    },
    /// Data read, a link body, an xattr value, a cwd (with its NUL).
    Bytes(Bytes),
    /// An xattr name list (NUL-terminated names, in the order the call gave them).
    XattrList(Bytes),
    /// `stat`, `lstat`, `fstat`, `fstatat`.
    Stat(StatRec),
    /// `statx`.
    Statx(StatxRec),
    /// `statfs`, `fstatfs`, without `f_fsid`.
    StatFs(StatFsRec),
    /// `statmount`: the fields that do not name a device or a mount.
    Statmount {
        /// `sb_flags`.
        sb_flags: u32,
        /// `mnt_attr`.
        mnt_attr: u64,
        /// `mnt_propagation`.
        propagation: u64,
    },
    /// `getdents` or `listdir` entries, in the order the calls gave them.
    Dirents(Listing),
    /// `lseek $d @NAME` returned the `d_off` of NAME it was given.
    AtEntry(Bytes),
    /// `F_GETLK`/`F_OFD_GETLK`: the `struct flock` the call filled in. `l_pid` is raw here;
    /// the normaliser names process ids by first appearance (`pid#N`).
    Flock {
        /// `l_type`.
        l_type: i16,
        /// `l_whence`.
        whence: i16,
        /// `l_start`.
        start: i64,
        /// `l_len`.
        len: i64,
        /// `l_pid`.
        pid: i32,
    },
    /// `poll`: the count it returned and every entry's `revents`, in order.
    Poll {
        /// The return value.
        count: i64,
        /// `revents` of each `struct pollfd`.
        revents: Vec<u16>,
    },
    /// `epoll_wait`: the events it filled in, in order, as `(events, data)`.
    EpollEvents(Vec<(u32, u64)>),
    /// `inotify_read`: the events of one read of an inotify fd, decoded by
    /// [`decode_inotify`]; cookies are raw here (the normaliser names them).
    Inotify(InotifyRead),
    /// `fanotify_read`: the events of one read of a fanotify fd, decoded by
    /// [`decode_fanotify`], each event's fd replaced by what it was open on.
    Fanotify(FanotifyRead),
    /// `getpid`: the task's process id, raw (named as in [`Value::Flock`]).
    Pid(i32),
    /// `snapshot`: the whole tree and the bound fds.
    Snapshot(SnapshotRec),
    /// `getresuid`/`getresgid`, `getgroups`, `capget`.
    Cred(crate::op::cred::CredValue),
    /// A mount that succeeded, with what the normaliser must forget because the host may
    /// reuse it (the host: learnt from the lines of the sandbox's `mountinfo` that were not
    /// there before; uvfs reuses neither, so it gives nothing). Compared as success alone.
    Mounted {
        /// The device of a new filesystem instance ([`Op::new_fs_target`]): Linux hands a new
        /// tmpfs the lowest free anonymous device number; `None` for other mounts, or if it
        /// could not be learnt.
        ///
        /// [`Op::new_fs_target`]: crate::op::Op::new_fs_target
        dev: Option<Dev>,
        /// The IDs of the mounts the call made (a recursive bind or propagation makes
        /// several): Linux hands each the lowest free 32-bit mount ID (`mnt_alloc_id()`), which
        /// may be one a mount gone before had.
        ids: Vec<u64>,
        /// The new instance is a sysfs, whose stamps are the machine's (on the host, every
        /// sysfs mount shows the machine's tree): the normaliser compares none of them. Both
        /// sides say so, with `dev`.
        #[serde(default)]
        machine_stamps: bool,
    },
}

/// A byte string, carried in JSON as lowercase hex.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Bytes(pub Vec<u8>);

impl Serialize for Bytes {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut hex = String::with_capacity(self.0.len() * 2);
        for b in &self.0 {
            hex.push_str(&format!("{b:02x}"));
        }
        s.serialize_str(&hex)
    }
}

impl<'de> Deserialize<'de> for Bytes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let hex = String::deserialize(d)?;
        if hex.len() % 2 != 0 {
            return Err(serde::de::Error::custom("odd hex length"));
        }
        (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).map_err(serde::de::Error::custom))
            .collect::<Result<Vec<u8>, _>>()
            .map(Bytes)
    }
}

/// A timestamp: seconds and nanoseconds since the epoch.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct Ts {
    /// Seconds.
    pub sec: i64,
    /// Nanoseconds.
    pub nsec: i64,
}

/// A device number split as `major(3)`/`minor(3)` do.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Dev {
    /// Major number.
    pub major: u32,
    /// Minor number.
    pub minor: u32,
}

/// The fields of `struct stat`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[allow(missing_docs)] // The fields are those of `struct stat`, without the `st_` prefix.
pub struct StatRec {
    pub dev: Dev,
    pub ino: u64,
    pub nlink: u64,
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    pub rdev: Dev,
    pub size: i64,
    pub blksize: i64,
    pub blocks: i64,
    pub atime: Ts,
    pub mtime: Ts,
    pub ctime: Ts,
}

/// The fields of `struct statx`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[allow(missing_docs)] // The fields are those of `struct statx`, without the `stx_` prefix.
pub struct StatxRec {
    pub mask: u32,
    pub blksize: u32,
    pub attributes: u64,
    pub nlink: u32,
    pub uid: u32,
    pub gid: u32,
    pub mode: u16,
    pub ino: u64,
    pub size: u64,
    pub blocks: u64,
    pub attributes_mask: u64,
    pub atime: Ts,
    pub btime: Ts,
    pub ctime: Ts,
    pub mtime: Ts,
    pub rdev: Dev,
    pub dev: Dev,
    pub mnt_id: u64,
}

/// The fields of `struct statfs` but `f_fsid`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[allow(missing_docs)] // The fields are those of `struct statfs`, without the `f_` prefix.
pub struct StatFsRec {
    pub fs_type: i64,
    pub bsize: i64,
    pub blocks: u64,
    pub bfree: u64,
    pub bavail: u64,
    pub files: u64,
    pub ffree: u64,
    pub namelen: i64,
    pub frsize: i64,
    pub flags: i64,
}

/// One `linux_dirent64` record.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DirentRec {
    /// `d_name`.
    pub name: Bytes,
    /// `d_type`.
    pub d_type: u8,
    /// `d_ino`.
    pub ino: u64,
    /// `d_off`: where a listing resumes after this entry.
    pub off: i64,
}

/// A directory's identity: its device and inode number.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct DirId {
    /// `st_dev`.
    pub dev: Dev,
    /// `st_ino`.
    pub ino: u64,
}

/// The entries of one `getdents` call or one `listdir`, and the directory they came from
/// (`statx(fd, "", AT_EMPTY_PATH, STATX_INO)`, which observes no timestamp), the scope in
/// which `d_off` values are renumbered.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Listing {
    /// The directory, if `statx` on the fd succeeded.
    pub dir: Option<DirId>,
    /// The records in the order the calls returned them.
    pub entries: Vec<DirentRec>,
}

/// One xattr of a snapshot: its name and its value (or the errno of `lgetxattr`).
pub type XattrRec = (Bytes, Result<Bytes, i32>);

/// One name in a snapshot's tree.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EntryRec {
    /// The path from the namespace root (`/` for the root itself).
    pub path: Bytes,
    /// `lstat`, or its errno.
    pub stat: Result<StatRec, i32>,
    /// `readlink` of a symlink, or its errno; `None` for other types.
    pub link: Option<Result<Bytes, i32>>,
    /// `llistxattr`'s names with each one's `lgetxattr` value (or errno), in list order; or
    /// `llistxattr`'s errno.
    pub xattrs: Result<Vec<XattrRec>, i32>,
    /// For a directory whose listing failed, the errno of the failing call.
    pub list_errno: Option<i32>,
}

/// `fstat` of a bound fd in the task that bound it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FdRec {
    /// The variable, without `$`.
    pub name: String,
    /// Its fd number.
    pub fd: i32,
    /// The task whose table holds it.
    pub task: u32,
    /// `fstat`, or its errno (other than `EBADF`: a closed fd is left out).
    pub stat: Result<StatRec, i32>,
}

/// What `snapshot` saw: every name reachable from the namespace root (crossing mounts) in
/// depth-first order, each directory's children in `getdents` order, then every bound fd
/// still open.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnapshotRec {
    /// The tree.
    pub entries: Vec<EntryRec>,
    /// The open bound fds, in order of first binding.
    pub fds: Vec<FdRec>,
}

/// One `struct inotify_event` as a read gave it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InotifyRec {
    /// `wd`.
    pub wd: i32,
    /// `mask`.
    pub mask: u32,
    /// `cookie`.
    pub cookie: u32,
    /// The whole `len`-byte name field: the name, its NUL and the padding.
    pub name: Bytes,
}

impl InotifyRec {
    /// The name, up to its first NUL.
    pub fn name(&self) -> &[u8] {
        let end = self
            .name
            .0
            .iter()
            .position(|&b| b == 0)
            .unwrap_or(self.name.0.len());
        &self.name.0[..end]
    }

    /// Whether the name field is what Linux writes: empty without a name, else the name, a NUL
    /// and NULs up to a multiple of the event header's size (`round_event_name_len()` in
    /// fs/notify/inotify/inotify_user.c).
    pub fn padded_as_linux_does(&self) -> bool {
        let name = self.name().len();
        let field = &self.name.0;
        let want = if name == 0 {
            0
        } else {
            (name + 1).next_multiple_of(INOTIFY_EVENT_SIZE)
        };
        field.len() == want && field[name..].iter().all(|&b| b == 0)
    }
}

/// What one read of an inotify fd returned.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct InotifyRead {
    /// The byte count the read returned.
    pub count: usize,
    /// The events in those bytes, in order.
    pub events: Vec<InotifyRec>,
    /// Bytes after the last whole event (a read never returns a part of one; shown if it did).
    pub rest: Bytes,
}

/// Size of `struct inotify_event` without its name: `wd`, `mask`, `cookie`, `len`.
const INOTIFY_EVENT_SIZE: usize = 16;

/// Decodes what a read of an inotify fd returned (`struct inotify_event`: `int wd`, `u32 mask`,
/// `u32 cookie`, `u32 len`, then `len` bytes of name). Written from inotify(7), not borrowed
/// from uvfs, so that both sides are read by one decoder that neither of them wrote.
pub fn decode_inotify(buf: &[u8]) -> InotifyRead {
    let mut out = InotifyRead {
        count: buf.len(),
        ..InotifyRead::default()
    };
    let mut rest = buf;
    while rest.len() >= INOTIFY_EVENT_SIZE {
        let word = |i: usize| u32::from_ne_bytes(rest[i..i + 4].try_into().expect("4 bytes"));
        let len = word(12) as usize;
        let Some(name) = rest.get(INOTIFY_EVENT_SIZE..INOTIFY_EVENT_SIZE + len) else {
            break;
        };
        out.events.push(InotifyRec {
            wd: word(0) as i32,
            mask: word(4),
            cookie: word(8),
            name: Bytes(name.to_vec()),
        });
        rest = &rest[INOTIFY_EVENT_SIZE + len..];
    }
    out.rest = Bytes(rest.to_vec());
    out
}

/// What an event's fd was open on: its `fstat` identity and type and its `F_GETFL` flags.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FanotifyFile {
    /// `st_dev`.
    pub dev: Dev,
    /// `st_ino`.
    pub ino: u64,
    /// `st_mode`.
    pub mode: u32,
    /// `fcntl(fd, F_GETFL)`, or its errno negated.
    pub flags: i64,
}

/// One `struct fanotify_event_metadata` as a read gave it, its fd already looked at and closed
/// (the raw fd number and the pid are not kept: neither is compared).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FanotifyRec {
    /// `event_len`.
    pub event_len: u32,
    /// `vers`.
    pub vers: u8,
    /// `reserved`.
    pub reserved: u8,
    /// `metadata_len`.
    pub metadata_len: u16,
    /// `mask`.
    pub mask: u64,
    /// The fd when it is negative (`FAN_NOFD`); `None` for an fd.
    pub nofd: Option<i32>,
    /// For an fd: what it was open on, or the errno of its `fstat`.
    pub file: Option<Result<FanotifyFile, i32>>,
}

/// What one read of a fanotify fd returned.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FanotifyRead {
    /// The byte count the read returned.
    pub count: usize,
    /// The events in those bytes, in order.
    pub events: Vec<FanotifyRec>,
    /// Bytes after the last whole event (shown if there are any).
    pub rest: Bytes,
}

/// Size of `struct fanotify_event_metadata`.
pub const FANOTIFY_METADATA_SIZE: usize = 24;

/// Decodes what a read of a fanotify fd returned (`struct fanotify_event_metadata`: `u32
/// event_len`, `u8 vers`, `u8 reserved`, `u16 metadata_len`, `u64 mask`, `s32 fd`, `s32 pid`,
/// events `event_len` bytes apart). `open_file` is called once per event with an fd of 0 or
/// more, in order, and must close it (the reader owns the event fds). Written from
/// fanotify(7), not borrowed from uvfs, so that both sides are read by one decoder.
pub fn decode_fanotify(
    buf: &[u8],
    mut open_file: impl FnMut(i32) -> Result<FanotifyFile, i32>,
) -> FanotifyRead {
    let mut out = FanotifyRead {
        count: buf.len(),
        ..FanotifyRead::default()
    };
    let mut rest = buf;
    while rest.len() >= FANOTIFY_METADATA_SIZE {
        let u32_at = |i: usize| u32::from_ne_bytes(rest[i..i + 4].try_into().expect("4 bytes"));
        let event_len = u32_at(0);
        let len = event_len as usize;
        if len < FANOTIFY_METADATA_SIZE || len > rest.len() {
            break;
        }
        let fd = u32_at(16) as i32;
        out.events.push(FanotifyRec {
            event_len,
            vers: rest[4],
            reserved: rest[5],
            metadata_len: u16::from_ne_bytes([rest[6], rest[7]]),
            mask: u64::from_ne_bytes(rest[8..16].try_into().expect("8 bytes")),
            nofd: (fd < 0).then_some(fd),
            file: (fd >= 0).then(|| open_file(fd)),
        });
        rest = &rest[len..];
    }
    out.rest = Bytes(rest.to_vec());
    out
}

/// Decodes the records of a `getdents64` buffer (`struct linux_dirent64`: ino u64, off i64,
/// reclen u16, type u8, NUL-terminated name). Both sides use this decoder, so it is written
/// here from the man page rather than borrowed from uvfs.
pub fn decode_dirents(mut buf: &[u8]) -> Vec<DirentRec> {
    const NAME_AT: usize = 19;
    let mut out = Vec::new();
    while buf.len() >= NAME_AT {
        let ino = u64::from_ne_bytes(buf[0..8].try_into().expect("8 bytes"));
        let off = i64::from_ne_bytes(buf[8..16].try_into().expect("8 bytes"));
        let reclen = usize::from(u16::from_ne_bytes([buf[16], buf[17]]));
        if reclen < NAME_AT || reclen > buf.len() {
            break;
        }
        let name = &buf[NAME_AT..reclen];
        let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
        out.push(DirentRec {
            name: Bytes(name[..end].to_vec()),
            d_type: buf[18],
            ino,
            off,
        });
        buf = &buf[reclen..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_round_trip_through_json() {
        let all = [
            Outcome::Errno(2),
            Outcome::Ok(Value::Unit),
            Outcome::Ok(Value::Bytes(Bytes(vec![0, 0xff, b'a']))),
            Outcome::Ok(Value::Dirents(Listing {
                dir: Some(DirId::default()),
                entries: vec![DirentRec {
                    name: Bytes(b"x".to_vec()),
                    d_type: 8,
                    ino: 7,
                    off: i64::MAX,
                }],
            })),
            Outcome::Ok(Value::Snapshot(SnapshotRec {
                entries: vec![EntryRec {
                    path: Bytes(b"/".to_vec()),
                    stat: Err(2),
                    link: Some(Ok(Bytes(b"t".to_vec()))),
                    xattrs: Ok(vec![(Bytes(b"user.a".to_vec()), Err(61))]),
                    list_errno: None,
                }],
                fds: vec![FdRec {
                    name: "f".into(),
                    fd: 3,
                    task: 2,
                    stat: Ok(StatRec::default()),
                }],
            })),
            Outcome::Ok(Value::Stat(StatRec {
                ino: 3,
                mode: 0o100644,
                ..StatRec::default()
            })),
        ];
        for o in all {
            let j = serde_json::to_string(&o).expect("serialises");
            assert_eq!(
                serde_json::from_str::<Outcome>(&j).expect("parses"),
                o,
                "{j}"
            );
        }
    }

    #[test]
    fn inotify_events_decode_with_their_names_and_a_stray_tail() {
        let mut buf = Vec::new();
        for w in [1u32, 0x100, 0, 16] {
            buf.extend_from_slice(&w.to_ne_bytes());
        }
        buf.extend_from_slice(b"foo\0\0\0\0\0\0\0\0\0\0\0\0\0");
        for w in [2u32, 0x40, 7, 0] {
            buf.extend_from_slice(&w.to_ne_bytes());
        }
        buf.extend_from_slice(&[9, 9, 9]);
        let r = decode_inotify(&buf);
        assert_eq!(r.count, 16 + 16 + 16 + 3);
        assert_eq!(r.events.len(), 2);
        assert_eq!(r.events[0].name(), b"foo");
        assert!(r.events[0].padded_as_linux_does());
        assert_eq!(
            (r.events[1].wd, r.events[1].mask, r.events[1].cookie),
            (2, 0x40, 7)
        );
        assert!(r.events[1].padded_as_linux_does());
        assert_eq!(r.rest, Bytes(vec![9, 9, 9]));
        let short = InotifyRec {
            wd: 1,
            mask: 0,
            cookie: 0,
            name: Bytes(b"foo\0".to_vec()),
        };
        assert!(!short.padded_as_linux_does());
    }

    #[test]
    fn fanotify_events_decode_and_each_fd_is_handed_over_once() {
        let mut buf = Vec::new();
        let mut event = |mask: u64, fd: i32| {
            buf.extend_from_slice(&24u32.to_ne_bytes());
            buf.extend_from_slice(&[3, 0]);
            buf.extend_from_slice(&24u16.to_ne_bytes());
            buf.extend_from_slice(&mask.to_ne_bytes());
            buf.extend_from_slice(&fd.to_ne_bytes());
            buf.extend_from_slice(&77i32.to_ne_bytes());
        };
        event(0x20 | 0x8, 5);
        event(0x4000, -1);
        event(0x1, 6);
        buf.extend_from_slice(&[1, 2]);
        let mut seen = Vec::new();
        let r = decode_fanotify(&buf, |fd| {
            seen.push(fd);
            Err(fd)
        });
        assert_eq!(seen, [5, 6]);
        assert_eq!(r.count, 3 * 24 + 2);
        assert_eq!(r.events.len(), 3);
        assert_eq!(r.events[0].mask, 0x28);
        assert_eq!(r.events[0].file, Some(Err(5)));
        assert_eq!(r.events[1].nofd, Some(-1));
        assert_eq!(r.events[1].file, None);
        assert_eq!((r.events[2].vers, r.events[2].metadata_len), (3, 24));
        assert_eq!(r.rest, Bytes(vec![1, 2]));
        // An event_len below the header's size ends the decoding: the rest is shown raw.
        let mut bad = buf[..24].to_vec();
        bad[0] = 8;
        let r = decode_fanotify(&bad, |_| panic!("no event is decoded"));
        assert!(r.events.is_empty());
        assert_eq!(r.rest.0.len(), 24);
    }

    #[test]
    fn dirent_records_decode_with_offsets() {
        let mut buf = vec![0u8; 24];
        buf[0] = 5;
        buf[8] = 9;
        buf[16] = 24;
        buf[18] = 4;
        buf[19] = b'.';
        assert_eq!(
            decode_dirents(&buf),
            vec![DirentRec {
                name: Bytes(b".".to_vec()),
                d_type: 4,
                ino: 5,
                off: 9,
            }]
        );
    }
}
