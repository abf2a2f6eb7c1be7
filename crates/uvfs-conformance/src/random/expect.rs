//! Deliberate differences the random tester may meet: each a predicate on the first divergent
//! step, listed with its reason in `expected-divergences.txt` as `random.NAME: reason`
//! (docs/divergences.md has the full story of each).

use std::collections::BTreeMap;

use crate::op::Op;
use crate::outcome::{Outcome, Value};
use crate::parse::Case;
use crate::report::StepDiff;

const ENXIO: i32 = 6;

/// One class of expected divergence.
pub struct Class {
    /// `random.NAME` in the expectations file.
    pub name: &'static str,
    /// True if the step diverged in this class's way.
    pub matches: fn(case: &Case, op: &Op, uvfs: &Outcome, host: &Outcome, diff: &StepDiff) -> bool,
    /// What happens after it.
    pub then: Then,
}

/// Whether a sequence can still be compared after an expected divergence.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Then {
    /// The two states differ from here on: stop comparing.
    Stop,
    /// Only the answer differs, not the state: go on to the next divergent step.
    Continue,
}

/// uvfs bugs the tester found that are not fixed yet, by signature
/// ([`super::signature::signature`]): listed so that CI stays a gate for new ones, each with a
/// `random.NAME: uvfs bug, ...` line. Each goes with its fix (the tester then reports the line
/// as stale only if the class is gone from here; remove both together).
pub const OPEN_BUGS: &[(&str, &str)] = &[];

/// Every class. A class whose line is missing from the expectations file is an error, and so
/// is a `random.` line without a class.
pub const CLASSES: &[Class] = &[
    Class {
        name: "linux_seek_hole_data_overflow",
        matches: linux_seek_hole_data_overflow,
        then: Then::Stop,
    },
    Class {
        name: "removed_name_keeps_its_directory",
        matches: removed_name_keeps_its_directory,
        then: Then::Stop,
    },
    Class {
        name: "burst_stamp_timing",
        matches: burst_stamp_timing,
        then: Then::Continue,
    },
    Class {
        name: "burst_cached_link_atime",
        matches: burst_cached_link_atime,
        then: Then::Stop,
    },
    Class {
        name: "statx_attributes_mask",
        matches: statx_attributes_mask,
        then: Then::Continue,
    },
    Class {
        name: "fanotify_pid_zero",
        matches: fanotify_pid_zero,
        then: Then::Continue,
    },
];

/// Size of `struct fanotify_event_metadata`; its `pid` is the last four bytes.
const FANOTIFY_METADATA: usize = crate::outcome::FANOTIFY_METADATA_SIZE;

/// uvfs's fanotify events carry pid 0 (docs/divergences.md, "Notification"): a plain read of
/// a group (`read`, `readv`, `pread`, `preadv`, which show the raw bytes) matches when the
/// bytes are whole events that differ only in uvfs's pid fields, each 0. The read consumed
/// the same events on both sides, so the comparison goes on.
fn fanotify_pid_zero(_: &Case, op: &Op, uvfs: &Outcome, host: &Outcome, _: &StepDiff) -> bool {
    let reads = matches!(
        op,
        Op::Read { .. } | Op::Readv { .. } | Op::Pread { .. } | Op::Preadv { .. }
    );
    let (Outcome::Ok(Value::Bytes(u)), Outcome::Ok(Value::Bytes(h))) = (uvfs, host) else {
        return false;
    };
    let (u, h) = (&u.0, &h.0);
    let pid = FANOTIFY_METADATA - 4..FANOTIFY_METADATA;
    reads
        && !u.is_empty()
        && u.len() == h.len()
        && u.len() % FANOTIFY_METADATA == 0
        && u.chunks(FANOTIFY_METADATA)
            .zip(h.chunks(FANOTIFY_METADATA))
            .all(|(a, b)| {
                a[..pid.start] == b[..pid.start] && a[pid.clone()].iter().all(|&x| x == 0)
            })
}

/// Linux overflows `loff_t` in `mapping_seek_hole_data()` when data lies in the last page
/// below the largest file size: `SEEK_DATA` says `ENXIO` and `SEEK_HOLE` `INT64_MIN`; uvfs
/// answers with the real offsets (docs/divergences.md, "Linux bugs uvfs does not copy").
fn linux_seek_hole_data_overflow(
    _: &Case,
    op: &Op,
    uvfs: &Outcome,
    host: &Outcome,
    _: &StepDiff,
) -> bool {
    const SEEK_DATA: i64 = 3;
    const SEEK_HOLE: i64 = 4;
    const LAST_PAGES: i64 = 1 << 20;
    let seeks =
        matches!(op, Op::Lseek { whence, .. } if *whence == SEEK_DATA || *whence == SEEK_HOLE);
    let near_end = matches!(uvfs, Outcome::Ok(Value::Int(n)) if *n > i64::MAX - LAST_PAGES);
    let overflowed = matches!(
        host,
        Outcome::Errno(ENXIO) | Outcome::Ok(Value::Int(i64::MIN))
    );
    seeks && near_end && overflowed
}

/// A timing difference, not a rule difference: in burst timing, after a namespace change
/// (unlink, link, rename, ...) a directory's mtime or ctime reads `same` on one side and
/// `later` on the other. Linux gives the directory the victim's (or link target's) new stamp
/// (`shmem_unlink()`, `shmem_link()`), which moves an observed directory ctime only if the
/// coarse clock ticked, or any process on the machine took a fine-grained stamp (the
/// multigrain floor is system-wide), since the directory's last fine-grained stamp; uvfs
/// follows the same rule. A 120-op sequence takes about 1 ms on uvfs and 5 to 14 ms on the host
/// (one IPC round trip per op), so the host crosses ticks the uvfs run does not. Matches a
/// snapshot, or the answer of a stat call (`fstat`, `fstatat`, `statx`), whose only
/// differences are mtime/ctime words and their relations (and for `statx`, the
/// `attributes_mask` of [`statx_attributes_mask`], which may come with them); the comparison
/// goes on (the trees are otherwise equal, and each side's later relations are to its own
/// earlier stamps). A stamp a change fails to set is caught in ticked timing, where every op
/// starts on a fresh tick.
fn burst_stamp_timing(case: &Case, op: &Op, _: &Outcome, _: &Outcome, diff: &StepDiff) -> bool {
    let is_statx = matches!(op, Op::Statx { .. });
    // `mtime=same`, `ctime=later`, and relations such as `m<c` or `a=m`.
    let stamp_word = |w: &str| {
        let b = w.as_bytes();
        w.starts_with("mtime=")
            || w.starts_with("ctime=")
            || (is_statx && w.starts_with("attributes_mask="))
            || (b.len() == 3
                && matches!(b[0], b'a' | b'm')
                && matches!(b[1], b'<' | b'=' | b'>')
                && matches!(b[2], b'm' | b'c'))
    };
    let stats = matches!(op, Op::Snapshot | Op::Fstat { .. } | Op::Fstatat { .. }) || is_statx;
    if !stats || case.timing != crate::parse::Timing::Burst {
        return false;
    }
    let (u, h): (Vec<&str>, Vec<&str>) = (diff.uvfs.lines().collect(), diff.host.lines().collect());
    let mut stamps_differ = false;
    let only_stamps = u.len() == h.len()
        && u.iter().zip(&h).all(|(a, b)| {
            let (wa, wb): (Vec<&str>, Vec<&str>) = (
                a.split_whitespace().collect(),
                b.split_whitespace().collect(),
            );
            wa.len() == wb.len()
                && wa.iter().zip(&wb).all(|(x, y)| {
                    let same = x == y;
                    stamps_differ |= !same && !x.starts_with("attributes_mask=");
                    same || (stamp_word(x) && stamp_word(y))
                })
        });
    // A statx that differs only in its mask is `statx_attributes_mask`'s.
    only_stamps && stamps_differ
}

/// uvfs counts the holders of an inode, not of each of its names, so a name removed while the
/// inode is held keeps its directory until the inode's last holder goes, where Linux lets the
/// directory go with the last holder of that very name (docs/divergences.md, "Holders are
/// counted per inode"; the case `divergence_a_removed_name_keeps_its_directory_while_any_link
/// _is_held`). Seen only in `statfs`: uvfs counts more inodes (and maybe blocks) in use, every
/// other field equal, and only in a sequence that gave some inode a second name (`link`) and
/// removed a directory (`rmdir`) before.
fn removed_name_keeps_its_directory(
    case: &Case,
    op: &Op,
    uvfs: &Outcome,
    host: &Outcome,
    diff: &StepDiff,
) -> bool {
    const AT_REMOVEDIR: i64 = 0x200;
    let (Outcome::Ok(Value::StatFs(u)), Outcome::Ok(Value::StatFs(h))) = (uvfs, host) else {
        return false;
    };
    if !matches!(op, Op::Statfs { .. } | Op::Fstatfs { .. }) {
        return false;
    }
    let before = steps_before(case, diff);
    let linked = before.iter().any(|s| matches!(s.op, Op::Linkat { .. }));
    let rmdir = before
        .iter()
        .any(|s| matches!(s.op, Op::Unlinkat { flags, .. } if flags & AT_REMOVEDIR != 0));
    let rest_equal = crate::outcome::StatFsRec {
        ffree: h.ffree,
        bfree: h.bfree,
        bavail: h.bavail,
        ..u.clone()
    } == *h;
    linked && rmdir && rest_equal && u.ffree < h.ffree && u.bfree <= h.bfree
}

/// uvfs cannot set immutable, append-only or nodump, so statx's `attributes_mask` leaves them
/// out where the host tmpfs advertises them; every other field must match.
fn statx_attributes_mask(_: &Case, op: &Op, _: &Outcome, _: &Outcome, diff: &StepDiff) -> bool {
    only_statx_attributes_mask(op, diff)
}

/// A timing difference, not a rule difference: in burst timing, an `openat2` with
/// `RESOLVE_CACHED` that follows a symbolic link says `EAGAIN` on one side only. Following a
/// link whose atime is stale writes it, which a cached walk may not do (Linux: `pick_link()`,
/// `atime_needs_update()`); a link made (or last followed) on this tick is not stale, one made
/// on an earlier tick is, and the host crosses ticks the faster uvfs run does not (see
/// [`burst_stamp_timing`]). Matched only in a sequence that made a symbolic link before the
/// step; ticked timing, where every op starts on a fresh tick, checks the rule itself.
fn burst_cached_link_atime(
    case: &Case,
    op: &Op,
    uvfs: &Outcome,
    host: &Outcome,
    diff: &StepDiff,
) -> bool {
    const EAGAIN: i32 = 11;
    const RESOLVE_CACHED: u64 = 0x20;
    let Op::Openat2 { resolve, .. } = op else {
        return false;
    };
    let before = steps_before(case, diff);
    let linked = before.iter().any(|s| matches!(s.op, Op::Symlink { .. }));
    let one_side_gave_up = (*uvfs == Outcome::Errno(EAGAIN)) != (*host == Outcome::Errno(EAGAIN));
    case.timing == crate::parse::Timing::Burst
        && resolve & RESOLVE_CACHED != 0
        && linked
        && one_side_gave_up
}

/// True if `diff`, a step of `op`, is a statx answer that differs in its `attributes_mask`
/// alone (the random class `statx_attributes_mask`; the differential runner excuses such a
/// step in every case not listed as a whole, so that cases can use statx's other fields).
pub fn only_statx_attributes_mask(op: &Op, diff: &StepDiff) -> bool {
    let without_mask = |text: &str| -> String {
        text.split(' ')
            .filter(|w| !w.starts_with("attributes_mask="))
            .collect::<Vec<_>>()
            .join(" ")
    };
    matches!(op, Op::Statx { .. })
        && diff.uvfs.contains("attributes_mask=")
        && without_mask(&diff.uvfs) == without_mask(&diff.host)
}

/// The steps of `case` before the divergent step of `diff`.
fn steps_before<'c>(case: &'c Case, diff: &StepDiff) -> &'c [crate::parse::Step] {
    &case.steps[..diff.step.saturating_sub(1).min(case.steps.len())]
}

/// The class that explains step `step` (1-based) of `case`, if one does.
pub fn classify(
    case: &Case,
    step: usize,
    uvfs: &Outcome,
    host: &Outcome,
    diff: &StepDiff,
    signature: &str,
) -> Option<(&'static str, Then)> {
    let op = &case.steps.get(step.checked_sub(1)?)?.op;
    CLASSES
        .iter()
        .find(|c| (c.matches)(case, op, uvfs, host, diff))
        .map(|c| (c.name, c.then))
        .or_else(|| {
            OPEN_BUGS
                .iter()
                .find(|(_, s)| *s == signature)
                .map(|(name, _)| (*name, Then::Stop))
        })
}

/// The prefix of random classes in the expectations file.
pub const PREFIX: &str = "random.";

/// Checks that every class has a line in `expected` and every `random.` line a class.
///
/// # Errors
/// The names missing on either side.
pub fn check_listed<V>(expected: &BTreeMap<String, V>) -> Result<(), String> {
    let mut errors = Vec::new();
    let names = || {
        CLASSES
            .iter()
            .map(|c| c.name)
            .chain(OPEN_BUGS.iter().map(|b| b.0))
    };
    for name in names() {
        if !expected.contains_key(&format!("{PREFIX}{name}")) {
            errors.push(format!(
                "class {name} has no `{PREFIX}{name}: reason` line in expected-divergences.txt"
            ));
        }
    }
    for name in expected.keys().filter_map(|k| k.strip_prefix(PREFIX)) {
        if !names().any(|n| n == name) {
            errors.push(format!(
                "expected-divergences.txt lists {PREFIX}{name}, which is no class"
            ));
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("\n"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse_cases;

    fn case(timing: &str, op: &str) -> (Case, Op) {
        let text = format!("case c\ntiming {timing}\n{op}\nend\n");
        let case = parse_cases(&text, std::path::Path::new("t.cases"))
            .expect("parses")
            .remove(0);
        let op = case.steps[0].op.clone();
        (case, op)
    }

    fn diff(uvfs: &str, host: &str) -> StepDiff {
        StepDiff {
            step: 1,
            line: 3,
            text: String::new(),
            uvfs: uvfs.into(),
            host: host.into(),
        }
    }

    /// Seed 52822: the listed per-inode divergence, met by the random tester.
    #[test]
    fn removed_name_keeps_its_directory_needs_a_link_an_rmdir_and_fewer_free_inodes() {
        let text = "case c\nmkdir /b 070\nopen a O_RDWR|O_CREAT 0444 => f\nlink a /b/b\n\
                    unlink /b/b\nrmdir /b\nfstatfs $f\nend\n";
        let case = parse_cases(text, std::path::Path::new("t.cases"))
            .expect("parses")
            .remove(0);
        let step = case.steps.len();
        let op = case.steps[step - 1].op.clone();
        let fs = |ffree| {
            Outcome::Ok(Value::StatFs(crate::outcome::StatFsRec {
                fs_type: 0x0102_1994,
                bsize: 4096,
                blocks: 16,
                bfree: 16,
                bavail: 16,
                files: 128,
                ffree,
                namelen: 255,
                frsize: 4096,
                flags: 0x20,
            }))
        };
        let d = StepDiff {
            step,
            ..diff("", "")
        };
        let m = |c: &Case, u: &Outcome, h: &Outcome, d: &StepDiff| {
            removed_name_keeps_its_directory(c, &op, u, h, d)
        };
        assert!(m(&case, &fs(125), &fs(126), &d));
        assert!(!m(&case, &fs(127), &fs(126), &d), "uvfs freed more");
        let Outcome::Ok(Value::StatFs(mut other)) = fs(125) else {
            unreachable!()
        };
        other.files = 64;
        assert!(
            !m(&case, &Outcome::Ok(Value::StatFs(other)), &fs(126), &d),
            "another field differs"
        );
        let early = StepDiff {
            step: 4,
            ..d.clone()
        };
        assert!(
            !m(&case, &fs(125), &fs(126), &early),
            "no rmdir before step 4"
        );
        let unlinked_only = parse_cases(&text.replace("rmdir /b\n", ""), std::path::Path::new("t"))
            .expect("parses")
            .remove(0);
        let d2 = StepDiff {
            step: step - 1,
            ..d.clone()
        };
        assert!(!m(&unlinked_only, &fs(125), &fs(126), &d2), "no rmdir");
    }

    /// Seed 741141's rule in burst timing: one side's link atime went stale, the other's not.
    #[test]
    fn burst_cached_link_atime_needs_burst_timing_a_link_and_one_eagain() {
        let text = |timing: &str, link: &str| {
            let t = format!(
                "case c\ntiming {timing}\n{link}\n\
                 openat2 AT_FDCWD /l O_RDONLY 0 RESOLVE_CACHED\nend\n"
            );
            parse_cases(&t, std::path::Path::new("t.cases"))
                .expect("parses")
                .remove(0)
        };
        let d = StepDiff {
            step: 2,
            ..diff("EAGAIN", "ok 3")
        };
        let (again, fd) = (Outcome::Errno(11), Outcome::Ok(Value::Int(3)));
        let m = |c: &Case, u: &Outcome, h: &Outcome| {
            burst_cached_link_atime(c, &c.steps[1].op, u, h, &d)
        };
        let burst = text("burst", "symlink /f /l");
        assert!(m(&burst, &again, &fd));
        assert!(m(&burst, &fd, &again), "either side");
        assert!(!m(&burst, &again, &again), "both gave up");
        assert!(
            m(&burst, &again, &Outcome::Errno(2)),
            "the other side may fail later on"
        );
        assert!(
            !m(&text("ticked", "symlink /f /l"), &again, &fd),
            "ticked timing checks the rule"
        );
        assert!(
            !m(&text("burst", "mkdir /l 0755"), &again, &fd),
            "no link made"
        );
        let plain = text("burst", "symlink /f /l");
        let mut no_cached = plain.clone();
        if let Op::Openat2 { resolve, .. } = &mut no_cached.steps[1].op {
            *resolve = 0;
        }
        assert!(!m(&no_cached, &again, &fd), "not a cached walk");
    }

    const STAT: &str = "stat mode=040777 nlink=2 uid=0 gid=0 size=40 ino=ino#1 dev=dev#1 atime=* mtime=first ctime=first";

    /// Seeds 508474 and 519332: a burst-timing stamp relation in the answer of a stat call.
    #[test]
    fn burst_stamp_timing_takes_stat_answers_and_only_stamp_words() {
        let (burst, stat) = case("burst", "stat /a");
        let (ticked, _) = case("ticked", "stat /a");
        let m_eq_c = format!("{STAT} m=c");
        let m_lt_c = format!("{STAT} m<c");
        let u = Outcome::Ok(Value::Unit);
        let matches =
            |c: &Case, op: &Op, a: &str, b: &str| burst_stamp_timing(c, op, &u, &u, &diff(a, b));
        assert!(matches(&burst, &stat, &m_eq_c, &m_lt_c));
        assert!(
            !matches(&ticked, &stat, &m_eq_c, &m_lt_c),
            "ticked timing compares stamps"
        );
        let other_mode = m_lt_c.replace("mode=040777", "mode=040755");
        assert!(
            !matches(&burst, &stat, &m_eq_c, &other_mode),
            "a mode is not a stamp"
        );
        let (_, unlink) = case("burst", "unlink /a");
        assert!(
            !matches(&burst, &unlink, &m_eq_c, &m_lt_c),
            "not an answer with stamps"
        );

        let (_, statx) = case("burst", "statx AT_FDCWD /a 0 STATX_BASIC_STATS");
        let (mask_u, mask_h) = (
            "statx attributes_mask=0x203000",
            "statx attributes_mask=0x203070",
        );
        let both = (
            format!("{mask_u} {STAT} m=c"),
            format!("{mask_h} {STAT} m<c"),
        );
        assert!(
            matches(&burst, &statx, &both.0, &both.1),
            "mask and stamps together"
        );
        let mask_only = (
            format!("{mask_u} {STAT} m=c"),
            format!("{mask_h} {STAT} m=c"),
        );
        assert!(
            !matches(&burst, &statx, &mask_only.0, &mask_only.1),
            "the mask alone is statx_attributes_mask's"
        );
        assert!(statx_attributes_mask(
            &burst,
            &statx,
            &u,
            &u,
            &diff(&mask_only.0, &mask_only.1)
        ));
    }

    #[test]
    fn fanotify_pid_zero_takes_reads_that_differ_only_in_a_zero_pid() {
        let (c, read) = case("burst", "read 3 4096");
        let (_, write) = case("burst", "write 3 \"x\"");
        let event = |pid: i32, mask: u64| {
            let mut b = Vec::new();
            b.extend_from_slice(&24u32.to_ne_bytes());
            b.extend_from_slice(&[3, 0]);
            b.extend_from_slice(&24u16.to_ne_bytes());
            b.extend_from_slice(&mask.to_ne_bytes());
            b.extend_from_slice(&4i32.to_ne_bytes());
            b.extend_from_slice(&pid.to_ne_bytes());
            b
        };
        let bytes = |v: Vec<u8>| Outcome::Ok(Value::Bytes(crate::outcome::Bytes(v)));
        let two = |pid, second| [event(pid, 0x20), event(pid, second)].concat();
        let d = diff("", "");
        let m = |op: &Op, u: &Outcome, h: &Outcome| fanotify_pid_zero(&c, op, u, h, &d);
        assert!(m(&read, &bytes(two(0, 0x8)), &bytes(two(1234, 0x8))));
        assert!(!m(&write, &bytes(two(0, 0x8)), &bytes(two(1234, 0x8))));
        assert!(
            !m(&read, &bytes(two(0, 0x8)), &bytes(two(1234, 0x10))),
            "a mask differs"
        );
        assert!(
            !m(&read, &bytes(two(7, 0x8)), &bytes(two(1234, 0x8))),
            "uvfs's pid is not 0"
        );
        assert!(!m(&read, &bytes(event(0, 0x20)), &bytes(two(1234, 0x8))));
        assert!(!m(&read, &bytes(vec![0; 5]), &bytes(vec![1; 5])));
        assert!(!m(&read, &bytes(Vec::new()), &bytes(Vec::new())));
    }
}
