//! Turns one side's outcomes into comparable text (CASES.md, "Normalisation"): inodes
//! (identified by device and inode number), devices and mount ids renumbered by first
//! appearance, timestamps described as relations (to the same stamp's previous observation
//! and between an inode's own stamps), listings in `getdents` order with `d_off` renumbered
//! per directory, `f_fsid` dropped.

use std::collections::HashMap;
use std::fmt::Write;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::names::{self, errno_display};
use crate::outcome::{
    Dev, DirId, EntryRec, FanotifyRead, FdRec, InotifyRead, Listing, Outcome, SnapshotRec,
    StatFsRec, StatRec, StatxRec, Ts, Value,
};
use crate::parse::Timing;
pub use crate::print::quote;

/// A timestamp further than this from now is shown exactly (it was set with `utimens`).
const FAR_FROM_NOW_SECS: i64 = 24 * 60 * 60;

const STATX_TYPE: u32 = 0x1;
const STATX_MODE: u32 = 0x2;
const STATX_NLINK: u32 = 0x4;
const STATX_UID: u32 = 0x8;
const STATX_GID: u32 = 0x10;
const STATX_ATIME: u32 = 0x20;
const STATX_MTIME: u32 = 0x40;
const STATX_CTIME: u32 = 0x80;
const STATX_INO: u32 = 0x100;
const STATX_SIZE: u32 = 0x200;
const STATX_BLOCKS: u32 = 0x400;
const STATX_BTIME: u32 = 0x800;
const STATX_MNT_ID: u32 = 0x1000;
const STATX_MNT_ID_UNIQUE: u32 = 0x4000;

/// `O_LARGEFILE` (x86-64).
const O_LARGEFILE: i64 = 0o100000;
/// The file-type bits of a mode; none on an anonymous inode.
const S_IFMT: u32 = 0o170000;

/// What `stat` shows of the one inode every eventfd and epoll file shares (a mode with no
/// file-type bits: Linux's `anon_inode_inode`, uvfs's `FileType::Anon`) instead of its
/// device, number and timestamps: Linux made it at boot on an internal superblock (so its
/// stamps are the boot time, shown exactly as "far from now") and uvfs at first use; it is
/// one inode on both sides, and neither ever stamps it (`fchmod`, `fchown` and `utimensat`
/// are `EOPNOTSUPP` on it). Its mode, owner, size and the rest compare as usual.
const ANON_IDENTITY: &str = "ino=anon dev=anon times=anon";

/// What `stat`, `statx` and snapshots show instead of the stamps of an inode on a sysfs: the
/// host's are the machine's, not the case's. A kernfs inode is made with the time it is made
/// (`simple_inode_init_ts()`), and sysfs drops an inode nobody holds
/// (`generic_delete_inode()`), so the next lookup may make it again with new stamps, or find
/// one made days ago; the first setattr of a node since boot stamps it with the fine clock
/// (`__kernfs_iattrs()`), later ones with the coarse one.
const MACHINE_STAMPS: &str = " times=machine";

/// The nlink of a directory on a sysfs (a device with [`MACHINE_STAMPS`]): `2` for one
/// without subdirectories, `2+` for one with (the host's have the machine's subdirectories,
/// uvfs's demo tree only its own: `cpuN` holds `cache`, `power` ... beside `topology`), and
/// exactly for anything else.
fn sysfs_nlink(mode: u32, nlink: u64) -> String {
    if mode & S_IFMT == 0o040000 && nlink > 2 {
        "2+".into()
    } else {
        nlink.to_string()
    }
}

/// The device a `d_ino` is counted on when the listing's directory is unknown.
const UNKNOWN_DEV: Dev = Dev {
    major: u32::MAX,
    minor: u32::MAX,
};

/// Which timestamp of an inode, for its observation history.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stamp {
    Atime = 0,
    Mtime = 1,
    Ctime = 2,
    Btime = 3,
}

/// The stamps one observation returned (`None`: not in a statx mask).
#[derive(Clone, Copy, Debug, Default)]
struct Stamps {
    atime: Option<Ts>,
    mtime: Option<Ts>,
    ctime: Option<Ts>,
    btime: Option<Ts>,
}

/// Normalisation state of one side of one case.
#[derive(Debug)]
pub struct Normaliser {
    timing: Timing,
    inos: HashMap<(Dev, u64), usize>,
    /// The last `ino#` given (labels are never given twice, even after a new instance's
    /// mount forgets some).
    last_ino: usize,
    devs: HashMap<Dev, usize>,
    last_dev: usize,
    /// `STATX_MNT_ID` labels; a mount ID the host hands out again is forgotten first
    /// ([`Value::Mounted`]).
    mnts: HashMap<u64, usize>,
    last_mnt: usize,
    /// `STATX_MNT_ID_UNIQUE` labels (never reused, on either side).
    unique_mnts: HashMap<u64, usize>,
    /// `d_off` numbers, per directory.
    offs: HashMap<Option<DirId>, HashMap<i64, usize>>,
    /// Last observed timestamps by normalised inode number.
    seen: HashMap<usize, [Option<Ts>; 4]>,
    /// Process ids (`getpid`, `F_GETLK`'s `l_pid`), by first appearance.
    pids: HashMap<i32, usize>,
    /// inotify cookies other than 0, by first appearance (`c1`, `c2`, ...).
    cookies: HashMap<u32, usize>,
    /// The names of unnamed (`O_TMPFILE`) files in events: `#` and the inode number (Linux:
    /// `d_tmpfile()`), which differs between the sides, by first appearance (`#t1`, ...).
    tmpfile_names: HashMap<Vec<u8>, usize>,
    /// Devices whose stamps are the machine's, not the case's (a sysfs: [`Value::Mounted`]'s
    /// `machine_stamps`): their inodes' stamps are not compared.
    machine_stamps: std::collections::HashSet<Dev>,
    now_sec: i64,
}

impl Default for Normaliser {
    fn default() -> Self {
        Self::new(Timing::Ticked)
    }
}

/// Renumbers `raw` as `#1`, `#2`, ... in order of first appearance.
/// Whether `name` is an unnamed file's, `#` and digits (Linux: `d_tmpfile()`).
fn is_tmpfile_name(name: &[u8]) -> bool {
    name.len() > 1 && name[0] == b'#' && name[1..].iter().all(u8::is_ascii_digit)
}

fn renumber<K: std::hash::Hash + Eq>(map: &mut HashMap<K, usize>, raw: K) -> usize {
    let next = map.len() + 1;
    *map.entry(raw).or_insert(next)
}

/// `<`, `=` or `>`.
fn cmp(a: Ts, b: Ts) -> char {
    match a.cmp(&b) {
        std::cmp::Ordering::Less => '<',
        std::cmp::Ordering::Equal => '=',
        std::cmp::Ordering::Greater => '>',
    }
}

impl Normaliser {
    /// Fresh state for a case paced by `timing`: nothing observed yet.
    pub fn new(timing: Timing) -> Normaliser {
        let now_sec = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        Normaliser {
            timing,
            inos: HashMap::new(),
            last_ino: 0,
            devs: HashMap::new(),
            last_dev: 0,
            mnts: HashMap::new(),
            last_mnt: 0,
            unique_mnts: HashMap::new(),
            offs: HashMap::new(),
            seen: HashMap::new(),
            pids: HashMap::new(),
            cookies: HashMap::new(),
            tmpfile_names: HashMap::new(),
            machine_stamps: std::collections::HashSet::new(),
            now_sec,
        }
    }

    /// The normalised text of one outcome; call in step order. A snapshot gives several
    /// lines.
    pub fn outcome(&mut self, o: &Outcome) -> String {
        match o {
            Outcome::Errno(e) => errno_display(*e),
            Outcome::Ok(v) => self.value(v),
        }
    }

    fn value(&mut self, v: &Value) -> String {
        match v {
            Value::Unit => "ok".into(),
            Value::Int(n) => format!("ok {n}"),
            Value::Bytes(b) => match <[u8; 8]>::try_from(&b.0[..]) {
                // Eight bytes: also as the number an eventfd read gives.
                Ok(v) => format!("ok 8 bytes {} (u64 {})", quote(&b.0), u64::from_ne_bytes(v)),
                Err(_) => format!("ok {} bytes {}", b.0.len(), quote(&b.0)),
            },
            Value::Poll { count, revents } => {
                let shown: Vec<String> = revents
                    .iter()
                    .map(|&r| names::flags_text(names::Flags::Poll, i64::from(r)))
                    .collect();
                format!("ok {count} revents [{}]", shown.join(", "))
            }
            Value::EpollEvents(events) => {
                let shown: Vec<String> = events
                    .iter()
                    .map(|&(e, d)| {
                        format!(
                            "{} data={d:#x}",
                            names::flags_text(names::Flags::Epoll, i64::from(e))
                        )
                    })
                    .collect();
                format!("ok {} events [{}]", events.len(), shown.join(", "))
            }
            Value::Moved {
                count,
                off_in,
                off_out,
            } => {
                let mut s = format!("ok {count}");
                if let Some(o) = off_in {
                    s.push_str(&format!(" off_in {o}"));
                }
                if let Some(o) = off_out {
                    s.push_str(&format!(" off_out {o}"));
                }
                s
            }
            Value::XattrList(b) => format!("ok {} bytes xattrs [{}]", b.0.len(), xattr_names(&b.0)),
            Value::Stat(s) => self.stat(s),
            Value::Statx(s) => self.statx(s),
            Value::StatFs(s) => statfs(s),
            Value::Statmount {
                sb_flags,
                mnt_attr,
                propagation,
            } => format!(
                "statmount sb_flags={sb_flags:#x} mnt_attr={mnt_attr:#x} propagation={propagation:#x}"
            ),
            Value::Dirents(d) => self.dirents(d),
            Value::Cred(c) => format!("ok {c}"),
            Value::Pid(p) => format!("ok {}", self.pid(*p)),
            Value::Inotify(r) => self.inotify(r),
            Value::Fanotify(r) => self.fanotify(r),
            Value::Flock {
                l_type,
                whence,
                start,
                len,
                pid,
            } => format!(
                "ok {} {} {start} {len} pid {}",
                names::flags_text(names::Flags::LockType, i64::from(*l_type)),
                names::flags_text(names::Flags::Whence, i64::from(*whence)),
                self.pid(*pid)
            ),
            Value::Snapshot(s) => self.snapshot(s),
            Value::AtEntry(name) => format!("ok the d_off of {}", quote(&name.0)),
            Value::FdPair(r, w) => format!("ok fds {r} {w}"),
            Value::Mounted {
                dev,
                ids,
                machine_stamps,
            } => {
                if let Some(dev) = dev {
                    self.forget_dev(*dev);
                    if *machine_stamps {
                        self.machine_stamps.insert(*dev);
                    }
                }
                for id in ids {
                    self.mnts.remove(id);
                }
                "ok".into()
            }
        }
    }

    /// A process id as `pid#N` by first appearance; 0 and negative ones (`-1` for an OFD
    /// lock) as they are.
    fn pid(&mut self, raw: i32) -> String {
        if raw <= 0 {
            raw.to_string()
        } else {
            format!("pid#{}", renumber(&mut self.pids, raw))
        }
    }

    fn ino(&mut self, dev: Dev, raw: u64) -> usize {
        let last = &mut self.last_ino;
        *self.inos.entry((dev, raw)).or_insert_with(|| {
            *last += 1;
            *last
        })
    }

    fn dev(&mut self, raw: Dev) -> usize {
        let last = &mut self.last_dev;
        *self.devs.entry(raw).or_insert_with(|| {
            *last += 1;
            *last
        })
    }

    /// A new filesystem instance (a new superblock) was mounted and shows device `dev`:
    /// it gets new labels, `dev#` and `ino#` (so no stamp history either), and its
    /// directories new `d_off` numbers. Linux hands a new
    /// tmpfs the lowest free anonymous device number (`get_anon_bdev()`), which may be that of
    /// an instance gone before (so nothing can show the old one again), and whether it is
    /// depends on other mounts on the host at the time; uvfs never reuses one. Without this
    /// the host would show the new root as the old root observed again. A device not seen
    /// before has no labels to forget.
    fn forget_dev(&mut self, dev: Dev) {
        self.devs.remove(&dev);
        self.inos.retain(|(d, _), _| *d != dev);
        // Its directories too: the new root's listing numbers its offsets afresh (random
        // seed 219838: `..` of a tmpfs root listed as the old root's second offset).
        self.offs.retain(|d, _| d.is_none_or(|d| d.dev != dev));
    }

    fn far(&self, t: Ts) -> bool {
        // abs_diff: a time set to the ends of the range (i64::MIN, i64::MAX) is far, not an overflow.
        t.sec.abs_diff(self.now_sec) > FAR_FROM_NOW_SECS as u64
    }

    /// Describes `t` against the last observation of the same stamp of inode `ino`, and
    /// records it: `first`, `same`, `later`, `earlier`; a stamp far from now exactly. In
    /// burst timing an atime near now reads `*`: it is not compared.
    fn time(&mut self, ino: usize, which: Stamp, t: Ts) -> String {
        let slot = &mut self.seen.entry(ino).or_default()[which as usize];
        let prev = slot.replace(t);
        if self.far(t) {
            return format!("{}.{:09}", t.sec, t.nsec);
        }
        if which == Stamp::Atime && self.timing == Timing::Burst {
            return "*".into();
        }
        let rel = match prev {
            None => "first",
            Some(p) if t < p => "earlier",
            Some(p) if t == p => "same",
            Some(_) => "later",
        };
        rel.to_string()
    }

    /// The stamps of one observation of inode `ino` (`None` for an unknown inode): each
    /// against its previous observation, then how mtime compares with ctime and, in ticked
    /// timing, atime with mtime and ctime (`m<c a=m a>c`).
    fn times(&mut self, ino: Option<usize>, t: Stamps) -> String {
        let mut out = String::new();
        let mut one = |name: &str, which: Stamp, v: Option<Ts>| {
            let text = match (v, ino) {
                (None, _) => "-".to_string(),
                (Some(v), Some(i)) => self.time(i, which, v),
                (Some(v), None) => format!("{}.{:09}", v.sec, v.nsec),
            };
            write!(out, " {name}={text}").expect("String writes succeed");
        };
        one("atime", Stamp::Atime, t.atime);
        one("mtime", Stamp::Mtime, t.mtime);
        one("ctime", Stamp::Ctime, t.ctime);
        if t.btime.is_some() {
            one("btime", Stamp::Btime, t.btime);
        }
        if let (Some(m), Some(c)) = (t.mtime, t.ctime) {
            write!(out, " m{}c", cmp(m, c)).expect("String writes succeed");
        }
        if let Some(a) = t.atime {
            // In burst timing the atime comes from the coarse clock and may even be older than
            // a fine-grained mtime stamped before it: only a far (set) atime is compared.
            if self.timing == Timing::Ticked || self.far(a) {
                for (name, v) in [("m", t.mtime), ("c", t.ctime)] {
                    if let Some(v) = v {
                        write!(out, " a{}{name}", cmp(a, v)).expect("String writes succeed");
                    }
                }
            }
        }
        out
    }

    fn stat(&mut self, s: &StatRec) -> String {
        if s.mode & S_IFMT == 0 {
            return format!(
                "stat mode=0{:o} nlink={} uid={} gid={} size={} blocks={} blksize={} rdev={}:{} {ANON_IDENTITY}",
                s.mode, s.nlink, s.uid, s.gid, s.size, s.blocks, s.blksize, s.rdev.major, s.rdev.minor,
            );
        }
        let ino = self.ino(s.dev, s.ino);
        let dev = self.dev(s.dev);
        let times = if self.machine_stamps.contains(&s.dev) {
            MACHINE_STAMPS.to_string()
        } else {
            self.times(
                Some(ino),
                Stamps {
                    atime: Some(s.atime),
                    mtime: Some(s.mtime),
                    ctime: Some(s.ctime),
                    btime: None,
                },
            )
        };
        let nlink = if self.machine_stamps.contains(&s.dev) {
            sysfs_nlink(s.mode, s.nlink)
        } else {
            s.nlink.to_string()
        };
        format!(
            "stat mode=0{:o} nlink={nlink} uid={} gid={} size={} blocks={} blksize={} rdev={}:{} ino=ino#{ino} dev=dev#{dev}{times}",
            s.mode, s.uid, s.gid, s.size, s.blocks, s.blksize, s.rdev.major, s.rdev.minor,
        )
    }

    /// Fields whose `STATX_*` bit is missing from the returned mask hold nothing meaningful
    /// (Linux leaves them zero) and read `-`; they are neither renumbered nor recorded.
    fn statx(&mut self, s: &StatxRec) -> String {
        let has = |bit: u32| s.mask & bit != 0;
        let show = |bit: u32, v: &dyn Fn() -> String| if has(bit) { v() } else { "-".to_string() };
        if has(STATX_TYPE) && u32::from(s.mode) & S_IFMT == 0 {
            return format!(
                "statx mask={:#x} attributes={:#x} attributes_mask={:#x} mode=0{:o} nlink={} uid={} gid={} size={} \
                 blocks={} blksize={} rdev={}:{} {ANON_IDENTITY}",
                s.mask,
                s.attributes,
                s.attributes_mask,
                s.mode,
                show(STATX_NLINK, &|| s.nlink.to_string()),
                show(STATX_UID, &|| s.uid.to_string()),
                show(STATX_GID, &|| s.gid.to_string()),
                show(STATX_SIZE, &|| s.size.to_string()),
                show(STATX_BLOCKS, &|| s.blocks.to_string()),
                s.blksize,
                s.rdev.major,
                s.rdev.minor,
            );
        }
        let ino = has(STATX_INO).then(|| self.ino(s.dev, s.ino));
        let dev = self.dev(s.dev);
        // Linux gives the unique ID instead of the reusable one when both are asked for
        // (`vfs_statx_path()`); the two are numbered apart.
        let mnt = if has(STATX_MNT_ID_UNIQUE) {
            format!("mntu#{}", renumber(&mut self.unique_mnts, s.mnt_id))
        } else if has(STATX_MNT_ID) {
            let last = &mut self.last_mnt;
            let n = *self.mnts.entry(s.mnt_id).or_insert_with(|| {
                *last += 1;
                *last
            });
            format!("mnt#{n}")
        } else {
            "-".into()
        };
        let stamp = |bit: u32, t: Ts| has(bit).then_some(t);
        let machine = self.machine_stamps.contains(&Dev {
            major: s.dev.major,
            minor: s.dev.minor,
        });
        let times = if machine {
            MACHINE_STAMPS.to_string()
        } else {
            self.times(
                ino,
                Stamps {
                    atime: stamp(STATX_ATIME, s.atime),
                    mtime: stamp(STATX_MTIME, s.mtime),
                    ctime: stamp(STATX_CTIME, s.ctime),
                    btime: Some(s.btime).filter(|_| has(STATX_BTIME)),
                },
            )
        };
        let btime = if has(STATX_BTIME) { "" } else { " btime=-" };
        format!(
            "statx mask={:#x} attributes={:#x} attributes_mask={:#x} mode={} nlink={} uid={} gid={} size={} \
             blocks={} blksize={} rdev={}:{} ino={} dev=dev#{dev} mnt={mnt}{times}{btime}",
            s.mask,
            s.attributes,
            s.attributes_mask,
            show(STATX_TYPE | STATX_MODE, &|| format!("0{:o}", s.mode)),
            show(STATX_NLINK, &|| if machine {
                sysfs_nlink(u32::from(s.mode), u64::from(s.nlink))
            } else {
                s.nlink.to_string()
            }),
            show(STATX_UID, &|| s.uid.to_string()),
            show(STATX_GID, &|| s.gid.to_string()),
            show(STATX_SIZE, &|| s.size.to_string()),
            show(STATX_BLOCKS, &|| s.blocks.to_string()),
            s.blksize,
            s.rdev.major,
            s.rdev.minor,
            ino.map_or("-".to_string(), |i| format!("ino#{i}")),
        )
    }

    /// `ok N bytes M events`, then one line per event: `wd=W MASK cookie=C name=NAME` (wd
    /// raw, the mask by name, a cookie as `0` or `cN` by first appearance in the case, the name
    /// without its padding, none for an event without one; ` len=L` only when the name field
    /// is not padded as Linux pads it), and any bytes after the last whole event.
    fn inotify(&mut self, r: &InotifyRead) -> String {
        let mut out = format!("ok {} bytes {} events", r.count, r.events.len());
        for e in &r.events {
            let cookie = match e.cookie {
                0 => "0".to_string(),
                c => format!("c{}", renumber(&mut self.cookies, c)),
            };
            write!(
                out,
                "\n  wd={} {} cookie={cookie}",
                e.wd,
                names::flags_text(names::Flags::Inotify, i64::from(e.mask))
            )
            .expect("String writes succeed");
            let name = e.name();
            if is_tmpfile_name(name) {
                let n = renumber(&mut self.tmpfile_names, name.to_vec());
                write!(out, " name=#t{n}").expect("String writes succeed");
            } else if !name.is_empty() {
                write!(out, " name={}", crate::print::word(name)).expect("String writes succeed");
            }
            if !e.padded_as_linux_does() {
                write!(out, " len={} field={}", e.name.0.len(), quote(&e.name.0))
                    .expect("String writes succeed");
            }
        }
        stray_bytes(&mut out, &r.rest.0);
        out
    }

    /// `ok N bytes M events`, then one line per event: its mask by name and the file its fd was
    /// open on, `S_IFxxx ino#N dev#D flags=O_...` (`fd=-1` for an event without one, `fstat`'s
    /// errno if it failed; the flags without `O_LARGEFILE`, which Linux adds to every event fd
    /// on 64-bit and uvfs does not: a case with `keep` shows it with `fcntl`); the header fields only when they are not Linux's (`event_len` and
    /// `metadata_len` 24, `vers` 3, `reserved` 0). No fd number and no pid: uvfs's events carry
    /// pid 0 (docs/divergences.md) and fd numbers say nothing the identity does not.
    fn fanotify(&mut self, r: &FanotifyRead) -> String {
        const META: u32 = crate::outcome::FANOTIFY_METADATA_SIZE as u32;
        let mut out = format!("ok {} bytes {} events", r.count, r.events.len());
        for e in &r.events {
            write!(
                out,
                "\n  {}",
                names::flags_text(names::Flags::Fanotify, e.mask as i64)
            )
            .expect("String writes succeed");
            if let Some(nofd) = e.nofd {
                write!(out, " fd={nofd}").expect("String writes succeed");
            }
            match &e.file {
                None => {}
                Some(Err(errno)) => {
                    write!(out, " fstat={}", errno_display(*errno)).expect("String writes succeed")
                }
                Some(Ok(f)) => {
                    let ino = self.ino(f.dev, f.ino);
                    let dev = self.dev(f.dev);
                    let kind =
                        names::flags_text(names::Flags::FileMode, i64::from(f.mode & S_IFMT));
                    let flags = if f.flags < 0 {
                        errno_display(-f.flags as i32)
                    } else {
                        names::flags_text(names::Flags::Open, f.flags & !O_LARGEFILE)
                    };
                    write!(out, " {kind} ino#{ino} dev#{dev} flags={flags}")
                        .expect("String writes succeed");
                }
            }
            if (e.event_len, e.vers, e.reserved, e.metadata_len) != (META, 3, 0, META as u16) {
                write!(
                    out,
                    " event_len={} vers={} reserved={} metadata_len={}",
                    e.event_len, e.vers, e.reserved, e.metadata_len
                )
                .expect("String writes succeed");
            }
        }
        stray_bytes(&mut out, &r.rest.0);
        out
    }

    /// Entries in `getdents` order as `"name" type ino#N @off#M`, `d_off` renumbered by first
    /// appearance within the listing's directory.
    fn dirents(&mut self, d: &Listing) -> String {
        let dev = d.dir.map_or(UNKNOWN_DEV, |id| id.dev);
        let mut out = format!("ok {} entries [", d.entries.len());
        for (i, e) in d.entries.iter().enumerate() {
            let ino = self.ino(dev, e.ino);
            let off = renumber(self.offs.entry(d.dir).or_default(), e.off);
            let sep = if i == 0 { "" } else { ", " };
            write!(
                out,
                "{sep}{} {} ino#{ino} @off#{off}",
                quote(&e.name.0),
                d_type(e.d_type)
            )
            .expect("String writes succeed");
        }
        out.push(']');
        out
    }

    /// One line per name and per open bound fd, in the snapshot's order.
    fn snapshot(&mut self, s: &SnapshotRec) -> String {
        let mut out = format!(
            "snapshot of {} names and {} fds",
            s.entries.len(),
            s.fds.len()
        );
        for e in &s.entries {
            out.push_str("\n  ");
            out.push_str(&self.entry(e));
        }
        for f in &s.fds {
            out.push_str("\n  ");
            out.push_str(&self.fd_rec(f));
        }
        out
    }

    fn entry(&mut self, e: &EntryRec) -> String {
        let mut out = quote(&e.path.0);
        match &e.stat {
            Ok(st) => write!(out, " {}", self.stat(st)),
            Err(err) => write!(out, " lstat {}", errno_display(*err)),
        }
        .expect("String writes succeed");
        match &e.link {
            Some(Ok(t)) => write!(out, " -> {}", quote(&t.0)),
            Some(Err(err)) => write!(out, " readlink {}", errno_display(*err)),
            None => Ok(()),
        }
        .expect("String writes succeed");
        match &e.xattrs {
            Ok(x) if x.is_empty() => Ok(()),
            Ok(x) => {
                let mut x: Vec<_> = x.iter().collect();
                x.sort_by(|a, b| a.0 .0.cmp(&b.0 .0));
                let shown: Vec<String> = x
                    .iter()
                    .map(|(n, v)| match v {
                        Ok(v) => format!("{}={}", quote(&n.0), quote(&v.0)),
                        Err(err) => format!("{}:{}", quote(&n.0), errno_display(*err)),
                    })
                    .collect();
                write!(out, " xattrs [{}]", shown.join(", "))
            }
            Err(err) => write!(out, " llistxattr {}", errno_display(*err)),
        }
        .expect("String writes succeed");
        if let Some(err) = e.list_errno {
            write!(out, " listing {}", errno_display(err)).expect("String writes succeed");
        }
        out
    }

    fn fd_rec(&mut self, f: &FdRec) -> String {
        let st = match &f.stat {
            Ok(st) => self.stat(st),
            Err(err) => format!("fstat {}", errno_display(*err)),
        };
        format!("${}={} (task {}) {st}", f.name, f.fd, f.task)
    }
}

/// NUL-terminated names, sorted, quoted.
fn xattr_names(list: &[u8]) -> String {
    let mut names: Vec<&[u8]> = list.split(|&c| c == 0).filter(|n| !n.is_empty()).collect();
    names.sort();
    let shown: Vec<String> = names.iter().map(|n| quote(n)).collect();
    shown.join(", ")
}

fn statfs(s: &StatFsRec) -> String {
    format!(
        "statfs type={:#x} bsize={} blocks={} bfree={} bavail={} files={} ffree={} namelen={} frsize={} flags={:#x}",
        s.fs_type, s.bsize, s.blocks, s.bfree, s.bavail, s.files, s.ffree, s.namelen, s.frsize, s.flags
    )
}

fn d_type(t: u8) -> String {
    match t {
        0 => "unknown".into(),
        1 => "fifo".into(),
        2 => "chr".into(),
        4 => "dir".into(),
        6 => "blk".into(),
        8 => "reg".into(),
        10 => "lnk".into(),
        12 => "sock".into(),
        other => format!("type{other}"),
    }
}

/// Appends the bytes a read of events left after its last whole event, if any.
fn stray_bytes(out: &mut String, rest: &[u8]) {
    if !rest.is_empty() {
        write!(out, "\n  {} stray bytes {}", rest.len(), quote(rest))
            .expect("String writes succeed");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::{Bytes, DirentRec};

    fn now() -> i64 {
        Normaliser::new(Timing::Ticked).now_sec
    }

    fn ts(ns: i64) -> Ts {
        Ts {
            sec: now(),
            nsec: ns,
        }
    }

    fn rec(dev_minor: u32, ino: u64, a: i64, m: i64, c: i64) -> StatRec {
        StatRec {
            ino,
            mode: 0o100644,
            dev: Dev {
                major: 0,
                minor: dev_minor,
            },
            atime: ts(a),
            mtime: ts(m),
            ctime: ts(c),
            ..StatRec::default()
        }
    }

    #[test]
    fn inotify_cookies_are_numbered_by_first_appearance_and_zero_stays() {
        use crate::outcome::InotifyRec;
        let ev = |wd, mask, cookie, name: &[u8]| InotifyRec {
            wd,
            mask,
            cookie,
            name: Bytes(if name.is_empty() {
                Vec::new()
            } else {
                let mut f = name.to_vec();
                f.resize(16, 0);
                f
            }),
        };
        let read = |events: Vec<InotifyRec>| {
            Value::Inotify(InotifyRead {
                count: 16 * 2 * events.len(),
                events,
                rest: Bytes::default(),
            })
        };
        let mut n = Normaliser::default();
        let a = n.value(&read(vec![
            ev(1, 0x40, 99, b"a"),
            ev(2, 0x80, 99, b"b"),
            ev(1, 0x4000_0100, 0, b"d"),
        ]));
        assert_eq!(
            a,
            "ok 96 bytes 3 events\n  wd=1 IN_MOVED_FROM cookie=c1 name=a\n  \
             wd=2 IN_MOVED_TO cookie=c1 name=b\n  wd=1 IN_CREATE|IN_ISDIR cookie=0 name=d"
        );
        let b = n.value(&read(vec![ev(1, 0x40, 5, b"x"), ev(1, 0x8000, 0, b"")]));
        assert_eq!(
            b,
            "ok 64 bytes 2 events\n  wd=1 IN_MOVED_FROM cookie=c2 name=x\n  wd=1 IN_IGNORED cookie=0"
        );
        let odd = n.value(&read(vec![InotifyRec {
            wd: 1,
            mask: 2,
            cookie: 0,
            name: Bytes(b"ab\0".to_vec()),
        }]));
        assert!(odd.ends_with("name=ab len=3 field=\"ab\\0\""), "{odd}");
    }

    /// An unnamed file's name in an event carries its inode number, which differs between
    /// the sides (random seed 44943: uvfs `#1027`, the host `#5`): both show `#t1` for the
    /// first such name, and another file's name gets `#t2`.
    #[test]
    fn tmpfile_names_in_events_are_numbered_by_first_appearance() {
        use crate::outcome::InotifyRec;
        let read = |names: &[&[u8]]| {
            let events: Vec<InotifyRec> = names
                .iter()
                .map(|name| {
                    let mut f = name.to_vec();
                    f.resize(16, 0);
                    InotifyRec {
                        wd: 1,
                        mask: 0x20,
                        cookie: 0,
                        name: Bytes(f),
                    }
                })
                .collect();
            Value::Inotify(InotifyRead {
                count: 32 * events.len(),
                events,
                rest: Bytes::default(),
            })
        };
        let uvfs = Normaliser::default().value(&read(&[b"#1027", b"#1030", b"#1027", b"#a"]));
        let host = Normaliser::default().value(&read(&[b"#5", b"#9", b"#5", b"#a"]));
        assert_eq!(uvfs, host);
        assert_eq!(uvfs.matches("name=#t1").count(), 2, "{uvfs}");
        assert_eq!(uvfs.matches("name=#t2").count(), 1, "{uvfs}");
        assert!(
            uvfs.contains("name=\"#a\""),
            "a name that is not a number stays: {uvfs}"
        );
    }

    #[test]
    fn fanotify_events_show_mask_names_and_the_file_by_identity() {
        use crate::outcome::{FanotifyFile, FanotifyRec};
        let file = |ino, mode, flags| {
            Some(Ok(FanotifyFile {
                dev: Dev {
                    major: 0,
                    minor: 40,
                },
                ino,
                mode,
                flags,
            }))
        };
        let ev = |mask, nofd, file| FanotifyRec {
            event_len: 24,
            vers: 3,
            reserved: 0,
            metadata_len: 24,
            mask,
            nofd,
            file,
        };
        let mut n = Normaliser::default();
        let read = Value::Fanotify(FanotifyRead {
            count: 24 * 4 + 2,
            events: vec![
                ev(0x2 | 0x8 | 0x20, None, file(900, 0o100644, 0o100000)),
                ev(0x20, None, file(77, 0o40755, 0o100002 | 0o2000000)),
                ev(0x4000, Some(-1), None),
                FanotifyRec {
                    vers: 2,
                    ..ev(0x1, None, Some(Err(9)))
                },
            ],
            rest: Bytes(vec![1, 0]),
        });
        assert_eq!(
            n.value(&read),
            "ok 98 bytes 4 events\n  FAN_MODIFY|FAN_CLOSE_WRITE|FAN_OPEN S_IFREG ino#1 dev#1 \
             flags=O_RDONLY\n  FAN_OPEN S_IFDIR ino#2 dev#1 flags=O_RDWR|O_CLOEXEC\n  \
             FAN_Q_OVERFLOW fd=-1\n  FAN_ACCESS fstat=EBADF event_len=24 vers=2 reserved=0 \
             metadata_len=24\n  2 stray bytes \"\\x01\\0\""
        );
        // The inode labels are the ones `stat` gives: the same file later is ino#1 again.
        let again = Value::Fanotify(FanotifyRead {
            count: 24,
            events: vec![ev(0x1, None, file(900, 0o100644, 0))],
            rest: Bytes::default(),
        });
        assert_eq!(
            n.value(&again),
            "ok 24 bytes 1 events\n  FAN_ACCESS S_IFREG ino#1 dev#1 flags=O_RDONLY"
        );
    }

    #[test]
    fn inodes_are_identified_by_device_and_number() {
        let mut n = Normaliser::default();
        let sa = n.stat(&rec(40, 900, 1, 1, 1));
        let sb = n.stat(&rec(40, 17, 1, 1, 1));
        let sc = n.stat(&rec(41, 900, 1, 1, 1));
        let again = n.stat(&rec(40, 900, 1, 1, 1));
        assert!(sa.contains("ino=ino#1 dev=dev#1"), "{sa}");
        assert!(sb.contains("ino=ino#2 dev=dev#1"), "{sb}");
        assert!(sc.contains("ino=ino#3 dev=dev#2"), "{sc}");
        assert!(again.contains("ino=ino#1 dev=dev#1"), "{again}");
        assert!(
            again.contains("atime=same mtime=same ctime=same"),
            "{again}"
        );
    }

    #[test]
    fn ticked_atime_tells_same_from_later_and_compares_with_mtime_and_ctime() {
        let mut n = Normaliser::new(Timing::Ticked);
        let first = n.stat(&rec(1, 1, 5, 5, 5));
        assert!(
            first.ends_with("atime=first mtime=first ctime=first m=c a=m a=c"),
            "{first}"
        );
        let read = n.stat(&rec(1, 1, 9, 5, 5));
        assert!(
            read.ends_with("atime=later mtime=same ctime=same m=c a>m a>c"),
            "{read}"
        );
        let again = n.stat(&rec(1, 1, 9, 5, 5));
        assert!(again.contains("atime=same "), "{again}");
        let back = n.stat(&rec(1, 1, 3, 5, 5));
        assert!(back.contains("atime=earlier "), "{back}");
    }

    #[test]
    fn mtime_and_ctime_are_compared_within_the_inode_in_both_timings() {
        for timing in [Timing::Ticked, Timing::Burst] {
            let mut n = Normaliser::new(timing);
            // A write that stamped mtime 1 ns after ctime (a planted bug) shows as m>c.
            let skewed = n.stat(&rec(1, 1, 5, 8, 7));
            assert!(skewed.contains(" m>c"), "{timing:?}: {skewed}");
            let chmod = n.stat(&rec(1, 2, 5, 5, 8));
            assert!(chmod.contains(" m<c"), "{timing:?}: {chmod}");
            let write = n.stat(&rec(1, 3, 5, 8, 8));
            assert!(write.contains(" m=c"), "{timing:?}: {write}");
        }
    }

    #[test]
    fn burst_atime_is_shown_only_when_far_from_now() {
        let mut n = Normaliser::new(Timing::Burst);
        let near = n.stat(&rec(1, 1, 5, 5, 5));
        assert!(
            near.ends_with("atime=* mtime=first ctime=first m=c"),
            "{near}"
        );
        let far = StatRec {
            atime: Ts { sec: 1000, nsec: 7 },
            ..rec(1, 1, 0, 5, 5)
        };
        let s = n.stat(&far);
        assert!(
            s.ends_with("atime=1000.000000007 mtime=same ctime=same m=c a<m a<c"),
            "{s}"
        );
    }

    #[test]
    fn timestamps_read_relative_to_the_previous_observation_unless_far() {
        let mut n = Normaliser::default();
        let t = now();
        assert_eq!(n.time(1, Stamp::Mtime, Ts { sec: t, nsec: 5 }), "first");
        assert_eq!(n.time(1, Stamp::Mtime, Ts { sec: t, nsec: 6 }), "later");
        assert_eq!(n.time(1, Stamp::Mtime, Ts { sec: t, nsec: 1 }), "earlier");
        assert_eq!(
            n.time(1, Stamp::Mtime, Ts { sec: 1000, nsec: 7 }),
            "1000.000000007"
        );
    }

    #[test]
    fn the_anonymous_inode_shows_no_identity_or_stamps() {
        let mut n = Normaliser::default();
        let anon = |sec| StatRec {
            mode: 0o600,
            ino: 1039,
            dev: Dev {
                major: 0,
                minor: 16,
            },
            atime: Ts { sec, nsec: 1 },
            ..StatRec::default()
        };
        // Linux's stamps are the boot time; uvfs's the first use.
        let host = n.stat(&anon(1000));
        let uvfs = Normaliser::default().stat(&anon(now()));
        assert_eq!(host, uvfs);
        assert!(host.ends_with("ino=anon dev=anon times=anon"), "{host}");
        // The anonymous inode takes no label: the next file is still ino#1.
        let file = n.stat(&rec(1, 5, 1, 1, 1));
        assert!(file.contains("ino=ino#1 dev=dev#1"), "{file}");
    }

    #[test]
    fn statx_fields_outside_the_mask_are_not_compared() {
        let mut n = Normaliser::default();
        let s = StatxRec {
            mask: STATX_TYPE | STATX_INO,
            mode: 0o100644,
            ino: 77,
            size: 9,
            ..StatxRec::default()
        };
        let out = n.statx(&s);
        assert!(
            out.contains("mode=0100644 nlink=- uid=- gid=- size=- "),
            "{out}"
        );
        assert!(
            out.ends_with("ino=ino#1 dev=dev#1 mnt=- atime=- mtime=- ctime=- btime=-"),
            "{out}"
        );
    }

    #[test]
    fn listings_keep_their_order_and_renumber_offsets_per_directory() {
        let mut n = Normaliser::default();
        let e = |name: &[u8], ino, off| DirentRec {
            name: Bytes(name.to_vec()),
            d_type: 8,
            ino,
            off,
        };
        let dir = |ino| {
            Some(DirId {
                dev: Dev::default(),
                ino,
            })
        };
        let a = n.dirents(&Listing {
            dir: dir(1),
            entries: vec![e(b"b", 5, 7), e(b"a", 9, i64::from(i32::MAX))],
        });
        assert_eq!(
            a,
            r#"ok 2 entries ["b" reg ino#1 @off#1, "a" reg ino#2 @off#2]"#
        );
        // The same raw offsets in another directory start again at off#1.
        let b = n.dirents(&Listing {
            dir: dir(2),
            entries: vec![e(b"c", 6, i64::from(i32::MAX)), e(b"d", 7, 7)],
        });
        assert_eq!(
            b,
            r#"ok 2 entries ["c" reg ino#3 @off#1, "d" reg ino#4 @off#2]"#
        );
        let x = n.value(&Value::XattrList(Bytes(b"user.b\0user.a\0".to_vec())));
        assert_eq!(x, r#"ok 14 bytes xattrs ["user.a", "user.b"]"#);
        // A new instance that shows a forgotten device again: its root (the same raw inode
        // number) numbers its offsets afresh.
        let dev = |minor| Dev { major: 0, minor };
        let root = Some(DirId {
            dev: dev(9),
            ino: 1,
        });
        let before = n.dirents(&Listing {
            dir: root,
            entries: vec![e(b".", 1, 1), e(b"..", 1, 2)],
        });
        assert_eq!(
            before,
            r#"ok 2 entries ["." reg ino#5 @off#1, ".." reg ino#5 @off#2]"#
        );
        n.value(&Value::Mounted {
            dev: Some(dev(9)),
            ids: Vec::new(),
            machine_stamps: false,
        });
        let after = n.dirents(&Listing {
            dir: root,
            entries: vec![e(b".", 1, 2), e(b"..", 1, i64::from(i32::MAX))],
        });
        assert_eq!(
            after,
            r#"ok 2 entries ["." reg ino#6 @off#1, ".." reg ino#6 @off#2]"#
        );
    }

    #[test]
    fn snapshots_show_one_line_per_name_and_fd() {
        let mut n = Normaliser::default();
        let s = SnapshotRec {
            entries: vec![
                EntryRec {
                    path: Bytes(b"/".to_vec()),
                    stat: Ok(rec(1, 1, 1, 1, 1)),
                    link: None,
                    xattrs: Ok(vec![]),
                    list_errno: None,
                },
                EntryRec {
                    path: Bytes(b"/l".to_vec()),
                    stat: Ok(rec(1, 2, 1, 1, 1)),
                    link: Some(Ok(Bytes(b"t".to_vec()))),
                    xattrs: Ok(vec![
                        (Bytes(b"trusted.z".to_vec()), Ok(Bytes(b"1".to_vec()))),
                        (Bytes(b"security.a".to_vec()), Err(61)),
                    ]),
                    list_errno: None,
                },
            ],
            fds: vec![FdRec {
                name: "f".into(),
                fd: 3,
                task: 1,
                stat: Ok(rec(1, 2, 1, 1, 1)),
            }],
        };
        let text = n.value(&Value::Snapshot(s));
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4, "{text}");
        assert_eq!(lines[0], "snapshot of 2 names and 1 fds");
        assert!(lines[1].starts_with(r#"  "/" stat "#), "{text}");
        assert!(
            lines[2].ends_with(r#" -> "t" xattrs ["security.a":ENODATA, "trusted.z"="1"]"#),
            "{text}"
        );
        assert!(lines[3].starts_with("  $f=3 (task 1) stat "), "{text}");
        assert!(lines[3].contains("ino=ino#2 "), "{text}");
    }

    /// Seed 26086: the host gave a new tmpfs the device number of one unmounted before it.
    #[test]
    fn a_new_fs_mounted_on_a_reused_device_number_gets_new_labels() {
        let snap = |d_ino: u64, mtime: i64| SnapshotRec {
            entries: [
                (&b"/"[..], rec(1, 1, 1, 1, 1)),
                (b"/d", rec(40, d_ino, 5, mtime, mtime)),
            ]
            .into_iter()
            .map(|(path, st)| EntryRec {
                path: Bytes(path.to_vec()),
                stat: Ok(st),
                link: None,
                xattrs: Ok(Vec::new()),
                list_errno: None,
            })
            .collect(),
            fds: Vec::new(),
        };
        let line = |text: &str, path: &str| -> String {
            let start = format!("  \"{path}\" stat ");
            text.lines()
                .find(|l| l.starts_with(&start))
                .unwrap_or_else(|| panic!("no {path} in {text}"))
                .to_string()
        };
        let mut n = Normaliser::default();
        let first = n.snapshot(&snap(1, 5));
        let d = line(&first, "/d");
        assert!(d.contains("ino=ino#2 dev=dev#2 atime=first"), "{d}");
        // Unmounted, and a new instance mounted on /d: the host hands it device 40 again.
        let mounted = n.value(&Value::Mounted {
            dev: Some(Dev {
                major: 0,
                minor: 40,
            }),
            ids: Vec::new(),
            machine_stamps: false,
        });
        assert_eq!(mounted, "ok");
        let second = n.snapshot(&snap(1, 9));
        let root = line(&second, "/");
        assert!(root.contains("ino=ino#1 dev=dev#1 atime=same"), "{root}");
        let d = line(&second, "/d");
        assert!(
            d.contains("ino=ino#3 dev=dev#3 atime=first mtime=first ctime=first"),
            "{d}"
        );
        // Forgotten once: the same instance observed again keeps its labels.
        let third = n.snapshot(&snap(1, 9));
        let d = line(&third, "/d");
        assert!(
            d.contains("ino=ino#3 dev=dev#3 atime=same mtime=same"),
            "{d}"
        );
        // A new label never repeats an old one.
        let other = n.stat(&rec(41, 7, 1, 1, 1));
        assert!(other.contains("ino=ino#4 dev=dev#4"), "{other}");
    }

    /// The inodes of a sysfs the case mounted show no stamps (the host's are the machine's);
    /// those of every other device still do.
    #[test]
    fn a_sysfs_device_shows_no_stamps() {
        let mut n = Normaliser::new(Timing::Burst);
        let mounted = n.value(&Value::Mounted {
            dev: Some(Dev {
                major: 0,
                minor: 22,
            }),
            ids: Vec::new(),
            machine_stamps: true,
        });
        assert_eq!(mounted, "ok");
        let sysfs = n.stat(&rec(22, 7, 1, 2, 3));
        assert!(
            sysfs.ends_with("ino=ino#1 dev=dev#1 times=machine"),
            "{sysfs}"
        );
        let again = n.stat(&rec(22, 7, 5, 6, 7));
        assert_eq!(again, sysfs, "no stamp is compared, so nothing changes");
        let tmpfs = n.stat(&rec(23, 7, 1, 2, 3));
        assert!(tmpfs.contains("mtime=first ctime=first"), "{tmpfs}");
        // A sysfs directory's nlink: 2 exactly, more as `2+`; elsewhere exactly.
        let dir = |dev, nlink| StatRec {
            mode: 0o040755,
            nlink,
            ..rec(dev, 8, 1, 2, 3)
        };
        assert!(n.stat(&dir(22, 2)).contains(" nlink=2 "));
        assert!(n.stat(&dir(22, 7)).contains(" nlink=2+ "));
        assert!(n.stat(&dir(23, 7)).contains(" nlink=7 "));
    }
}
