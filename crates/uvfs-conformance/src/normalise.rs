//! Turns one side's outcomes into comparable text (CASES.md, "Normalisation"): inode, device
//! and mount ids renumbered by first appearance, timestamps described relative to the same
//! inode's previous observation, directory listings sorted, `f_fsid` and `d_off` dropped.

use std::collections::HashMap;
use std::fmt::Write;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::names::errno_display;
use crate::outcome::{Dev, DirentRec, Outcome, StatFsRec, StatRec, StatxRec, Ts, Value};

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

/// Which timestamp of an inode, for its observation history.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stamp {
    Atime = 0,
    Mtime = 1,
    Ctime = 2,
    Btime = 3,
}

/// Normalisation state of one side of one case.
#[derive(Debug)]
pub struct Normaliser {
    inos: HashMap<u64, usize>,
    devs: HashMap<Dev, usize>,
    mnts: HashMap<u64, usize>,
    /// Last observed timestamps by normalised inode number.
    seen: HashMap<usize, [Option<Ts>; 4]>,
    now_sec: i64,
}

impl Default for Normaliser {
    fn default() -> Self {
        Self::new()
    }
}

/// Renumbers `raw` as `#1`, `#2`, ... in order of first appearance.
fn renumber<K: std::hash::Hash + Eq>(map: &mut HashMap<K, usize>, raw: K) -> usize {
    let next = map.len() + 1;
    *map.entry(raw).or_insert(next)
}

impl Normaliser {
    /// Fresh state: nothing observed yet.
    pub fn new() -> Normaliser {
        let now_sec = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        Normaliser {
            inos: HashMap::new(),
            devs: HashMap::new(),
            mnts: HashMap::new(),
            seen: HashMap::new(),
            now_sec,
        }
    }

    /// The normalised text of one outcome; call in step order.
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
            Value::Bytes(b) => format!("ok {} bytes {}", b.0.len(), quote(&b.0)),
            Value::XattrList(b) => {
                let mut names: Vec<&[u8]> =
                    b.0.split(|&c| c == 0).filter(|n| !n.is_empty()).collect();
                names.sort();
                let shown: Vec<String> = names.iter().map(|n| quote(n)).collect();
                format!("ok {} bytes xattrs [{}]", b.0.len(), shown.join(", "))
            }
            Value::Stat(s) => self.stat(s),
            Value::Statx(s) => self.statx(s),
            Value::StatFs(s) => statfs(s),
            Value::Dirents(d) => self.dirents(d),
            Value::Cred(c) => format!("ok {c}"),
        }
    }

    fn ino(&mut self, raw: u64) -> usize {
        renumber(&mut self.inos, raw)
    }

    fn dev(&mut self, raw: Dev) -> usize {
        renumber(&mut self.devs, raw)
    }

    /// Describes `t` against the last observation of the same stamp of inode `ino`, and
    /// records it.
    fn time(&mut self, ino: usize, which: Stamp, t: Ts) -> String {
        let slot = &mut self.seen.entry(ino).or_default()[which as usize];
        let prev = slot.replace(t);
        if (t.sec - self.now_sec).abs() > FAR_FROM_NOW_SECS {
            return format!("{}.{:09}", t.sec, t.nsec);
        }
        let rel = match prev {
            None => "first",
            Some(p) if t < p => "earlier",
            // atime follows the coarse clock and relatime rules: only its direction counts.
            Some(_) if which == Stamp::Atime => "not-earlier",
            Some(p) if t == p => "same",
            Some(_) => "later",
        };
        rel.to_string()
    }

    fn stat(&mut self, s: &StatRec) -> String {
        let ino = self.ino(s.ino);
        let dev = self.dev(s.dev);
        format!(
            "stat mode=0{:o} nlink={} uid={} gid={} size={} blocks={} blksize={} rdev={}:{} ino=ino#{ino} dev=dev#{dev} \
             atime={} mtime={} ctime={}",
            s.mode,
            s.nlink,
            s.uid,
            s.gid,
            s.size,
            s.blocks,
            s.blksize,
            s.rdev.major,
            s.rdev.minor,
            self.time(ino, Stamp::Atime, s.atime),
            self.time(ino, Stamp::Mtime, s.mtime),
            self.time(ino, Stamp::Ctime, s.ctime),
        )
    }

    /// Fields whose `STATX_*` bit is missing from the returned mask hold nothing meaningful
    /// (Linux leaves them zero) and read `-`; they are neither renumbered nor recorded.
    fn statx(&mut self, s: &StatxRec) -> String {
        let has = |bit: u32| s.mask & bit != 0;
        let show = |bit: u32, v: &dyn Fn() -> String| if has(bit) { v() } else { "-".to_string() };
        let ino = has(STATX_INO).then(|| self.ino(s.ino));
        let dev = self.dev(s.dev);
        let mnt = if has(STATX_MNT_ID) {
            format!("mnt#{}", renumber(&mut self.mnts, s.mnt_id))
        } else {
            "-".into()
        };
        let mut time = |bit: u32, which: Stamp, t: Ts| match ino {
            Some(i) if has(bit) => self.time(i, which, t),
            _ if has(bit) => format!("{}.{:09}", t.sec, t.nsec),
            _ => "-".to_string(),
        };
        let (atime, mtime) = (
            time(STATX_ATIME, Stamp::Atime, s.atime),
            time(STATX_MTIME, Stamp::Mtime, s.mtime),
        );
        let (ctime, btime) = (
            time(STATX_CTIME, Stamp::Ctime, s.ctime),
            time(STATX_BTIME, Stamp::Btime, s.btime),
        );
        format!(
            "statx mask={:#x} attributes={:#x} attributes_mask={:#x} mode={} nlink={} uid={} gid={} size={} \
             blocks={} blksize={} rdev={}:{} ino={} dev=dev#{dev} mnt={mnt} atime={atime} mtime={mtime} ctime={ctime} btime={btime}",
            s.mask,
            s.attributes,
            s.attributes_mask,
            show(STATX_TYPE | STATX_MODE, &|| format!("0{:o}", s.mode)),
            show(STATX_NLINK, &|| s.nlink.to_string()),
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

    fn dirents(&mut self, d: &[DirentRec]) -> String {
        let mut sorted: Vec<&DirentRec> = d.iter().collect();
        sorted.sort_by(|a, b| a.name.0.cmp(&b.name.0));
        let mut out = format!("ok {} entries [", sorted.len());
        for (i, e) in sorted.iter().enumerate() {
            let ino = self.ino(e.ino);
            let sep = if i == 0 { "" } else { ", " };
            write!(
                out,
                "{sep}{} {} ino#{ino}",
                quote(&e.name.0),
                d_type(e.d_type)
            )
            .expect("String writes succeed");
        }
        out.push(']');
        out
    }
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

/// Runs of one byte at least this long are shown as `{rep:N:X}`.
const RUN_SHOWN_AS_REP: usize = 16;

/// Bytes as a double-quoted string with `\n`, `\t`, `\\`, `\"`, `\0` and `\xNN` escapes, and
/// long runs of one byte as `{rep:N:X}` as in case files (a literal `{` is `\x7b`, so the text
/// stays exact).
pub fn quote(b: &[u8]) -> String {
    let mut s = String::with_capacity(b.len() + 2);
    s.push('"');
    let mut i = 0;
    while i < b.len() {
        let run = b[i..].iter().take_while(|&&c| c == b[i]).count();
        if run >= RUN_SHOWN_AS_REP {
            s.push_str(&format!("{{rep:{run}:"));
            push_escaped(&mut s, b[i]);
            s.push('}');
            i += run;
        } else {
            push_escaped(&mut s, b[i]);
            i += 1;
        }
    }
    s.push('"');
    s
}

fn push_escaped(s: &mut String, c: u8) {
    match c {
        b'\n' => s.push_str("\\n"),
        b'\t' => s.push_str("\\t"),
        b'\\' => s.push_str("\\\\"),
        b'"' => s.push_str("\\\""),
        0 => s.push_str("\\0"),
        b'{' => s.push_str("\\x7b"),
        0x20..=0x7e => s.push(c as char),
        _ => write!(s, "\\x{c:02x}").expect("String writes succeed"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::Bytes;

    fn now() -> i64 {
        Normaliser::new().now_sec
    }

    #[test]
    fn inodes_and_devices_renumber_by_first_appearance() {
        let mut n = Normaliser::new();
        let t = Ts {
            sec: now(),
            nsec: 0,
        };
        let a = StatRec {
            ino: 900,
            dev: Dev {
                major: 0,
                minor: 40,
            },
            atime: t,
            mtime: t,
            ctime: t,
            ..StatRec::default()
        };
        let b = StatRec {
            ino: 17,
            ..a.clone()
        };
        let sa = n.stat(&a);
        let sb = n.stat(&b);
        assert!(
            sa.contains("ino=ino#1 dev=dev#1") && sa.contains("mtime=first"),
            "{sa}"
        );
        assert!(sb.contains("ino=ino#2 dev=dev#1"), "{sb}");
        let again = n.stat(&a);
        assert!(
            again.contains("ino=ino#1") && again.contains("atime=not-earlier mtime=same"),
            "{again}"
        );
    }

    #[test]
    fn timestamps_read_relative_to_the_previous_observation_unless_far() {
        let mut n = Normaliser::new();
        let t = now();
        assert_eq!(n.time(1, Stamp::Mtime, Ts { sec: t, nsec: 5 }), "first");
        assert_eq!(n.time(1, Stamp::Mtime, Ts { sec: t, nsec: 6 }), "later");
        assert_eq!(n.time(1, Stamp::Mtime, Ts { sec: t, nsec: 1 }), "earlier");
        assert_eq!(n.time(1, Stamp::Atime, Ts { sec: t, nsec: 1 }), "first");
        assert_eq!(
            n.time(1, Stamp::Atime, Ts { sec: t, nsec: 1 }),
            "not-earlier"
        );
        assert_eq!(
            n.time(1, Stamp::Mtime, Ts { sec: 1000, nsec: 7 }),
            "1000.000000007"
        );
    }

    #[test]
    fn quoting_escapes_and_folds_long_runs() {
        assert_eq!(quote(b"a\n\0\xff\"{"), r#""a\n\0\xff\"\x7b""#);
        let mut data = vec![0u8; 20];
        data.extend_from_slice(b"xy");
        assert_eq!(quote(&data), r#""{rep:20:\0}xy""#);
        assert_eq!(quote(&[b'z'; 15]), format!("\"{}\"", "z".repeat(15)));
    }

    #[test]
    fn statx_fields_outside_the_mask_are_not_compared() {
        let mut n = Normaliser::new();
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
            out.contains("ino=ino#1 dev=dev#1 mnt=- atime=- mtime=- ctime=- btime=-"),
            "{out}"
        );
    }

    #[test]
    fn listings_sort_by_name_and_xattr_lists_by_name() {
        let mut n = Normaliser::new();
        let e = |name: &[u8], ino| DirentRec {
            name: Bytes(name.to_vec()),
            d_type: 8,
            ino,
        };
        let s = n.dirents(&[e(b"b", 5), e(b"a", 9)]);
        assert_eq!(s, r#"ok 2 entries ["a" reg ino#1, "b" reg ino#2]"#);
        let x = n.value(&Value::XattrList(Bytes(b"user.b\0user.a\0".to_vec())));
        assert_eq!(x, r#"ok 14 bytes xattrs ["user.a", "user.b"]"#);
    }
}
