//! After a write or a truncate, mtime and ctime are the same instant; after chmod or chown the
//! ctime moves and the mtime does not.
//! Oracle: inode(7) ("st_mtime ... changed by file modifications, for example, by ... write(2)
//! ... truncate(2)"; "st_ctime ... changed by writing or by setting inode information (i.e.,
//! owner, group, link count, mode, etc.)") and Linux's stamping: a write takes one time for
//! both (`inode_update_timestamps()` in fs/inode.c sets the ctime, then the mtime to the same
//! value), a truncate sets both from one `current_time()` (`do_truncate()` with
//! `ATTR_MTIME | ATTR_CTIME`), chmod/chown set `ATTR_CTIME` only. A change that follows a stat
//! gets a fine-grained stamp (multigrain timestamps), so "moves" is strictly later without any
//! sleep. Checked on this project's host (Linux 6.18 tmpfs): the same relations after pwrite,
//! writev, truncate, ftruncate, chmod and chown.

use std::io::IoSlice;

use uvfs::abi::{AtFlags, OpenFlags, Stat, AT_FDCWD};
use uvfs::{Cred, Task, Vfs};

fn ns(t: uvfs::abi::Timespec) -> i128 {
    i128::from(t.sec) * 1_000_000_000 + i128::from(t.nsec)
}

fn stat(t: &Task) -> Stat {
    t.stat("/f").expect("stat")
}

/// What a step changes, and so which stamps must move.
#[derive(Clone, Copy, Debug)]
enum Change {
    /// Data or size: mtime and ctime, one stamp.
    Data,
    /// Attributes: ctime only.
    Attr,
}

fn assert_data_change(before: &Stat, after: &Stat, what: &str) {
    assert_eq!(
        ns(after.mtime),
        ns(after.ctime),
        "{what}: mtime and ctime are one stamp"
    );
    assert!(ns(after.ctime) > ns(before.ctime), "{what}: ctime moves");
}

fn assert_attr_change(before: &Stat, after: &Stat, what: &str) {
    assert!(ns(after.ctime) > ns(before.ctime), "{what}: ctime moves");
    assert_eq!(
        ns(after.mtime),
        ns(before.mtime),
        "{what}: mtime does not move"
    );
}

#[test]
fn writes_and_truncates_stamp_mtime_and_ctime_together_and_attribute_changes_only_ctime() {
    let vfs = Vfs::new();
    let t = vfs.task(Cred::root());
    let fd = t
        .openat(AT_FDCWD, "/f", OpenFlags::CREAT | OpenFlags::RDWR, 0o644)
        .expect("create");
    let mut s = stat(&t);
    let steps: [(&str, Change, &dyn Fn()); 8] = [
        ("write", Change::Data, &|| {
            assert_eq!(t.write(fd, b"abc"), Ok(3))
        }),
        ("pwrite", Change::Data, &|| {
            assert_eq!(t.pwrite(fd, b"z", 10), Ok(1))
        }),
        ("chmod", Change::Attr, &|| {
            t.fchmodat(AT_FDCWD, "/f", 0o600, AtFlags::empty())
                .expect("chmod")
        }),
        ("writev", Change::Data, &|| {
            assert_eq!(
                t.writev(fd, &[IoSlice::new(b"d"), IoSlice::new(b"e")]),
                Ok(2)
            )
        }),
        ("chown", Change::Attr, &|| {
            t.fchown(fd, Some(5), Some(5)).expect("chown")
        }),
        ("truncate", Change::Data, &|| {
            t.truncate("/f", 3).expect("truncate")
        }),
        ("fchmod", Change::Attr, &|| {
            t.fchmod(fd, 0o640).expect("fchmod")
        }),
        ("ftruncate", Change::Data, &|| {
            t.ftruncate(fd, 1).expect("ftruncate")
        }),
    ];
    for (what, change, step) in steps {
        step();
        let next = stat(&t);
        match change {
            Change::Attr => assert_attr_change(&s, &next, what),
            Change::Data => assert_data_change(&s, &next, what),
        }
        s = next;
    }
}
