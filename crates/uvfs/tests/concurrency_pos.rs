//! A file position shared by two threads moves as one step per read, write and seek (Linux:
//! `f_pos_lock`, taken by `fdget_pos()` when the file may be used by another thread), whether
//! the threads share one fd table (`Task::clone_thread`) or hold the description in two
//! (`Task::fork`); and a position one task alone uses, which moves without that lock, moves as
//! it should. The rules are those of `tests/concurrency.rs` (the same harness): every check
//! counted and every count asserted, every loop bounded, a panic on any thread fails the test,
//! a hang is declared after a deadline.

#[path = "concurrency/harness.rs"]
#[allow(dead_code)]
// Reason: the harness is shared with tests/concurrency.rs, which uses all of it.
mod harness;

use std::thread;

use harness::*;
use uvfs::abi::{OpenFlags, Whence, AT_FDCWD};
use uvfs::{Cred, Task, Vfs};

/// Records in the file: each a 4-byte little-endian index.
const RECORDS: u32 = 400_000;

/// How the second thread gets the description.
#[derive(Clone, Copy, Debug)]
enum Share {
    /// One fd table (threads).
    Table,
    /// Two tables, one description (a forked child's copy of the fd).
    Fork,
}

fn second(t: &Task, share: Share) -> Task {
    match share {
        Share::Table => t.clone_thread(),
        Share::Fork => t.fork(),
    }
}

/// Two threads read records from one description until the end: every record must come to
/// exactly one of them. Reads that took one position and both stored the next would give a
/// record twice (and another never).
fn reads_take_each_record_once(share: Share) {
    let seen = run(move |crew| {
        let vfs = Vfs::new();
        let t = vfs.task(Cred::root());
        let fd = t
            .openat(AT_FDCWD, "/f", OpenFlags::CREAT | OpenFlags::RDWR, 0o644)
            .expect("create");
        let all: Vec<u8> = (0..RECORDS).flat_map(u32::to_le_bytes).collect();
        assert_eq!(t.pwrite(fd, &all, 0), Ok(all.len()));
        // Each task reads once first, so that its fd cache holds the file (the case whose
        // position moves without the lock when the task is alone).
        let u = second(&t, share);
        let mut rec = [0u8; 4];
        assert_eq!(t.pread(fd, &mut rec, 0), Ok(4));
        assert_eq!(u.pread(fd, &mut rec, 0), Ok(4));
        let got = thread::scope(|s| {
            let mut hs = Vec::new();
            for task in [t, u] {
                hs.push(s.spawn(move || {
                    let _g = crew.enlist();
                    let mut got = Vec::new();
                    if !crew.start_line(2) {
                        return got;
                    }
                    let mut rec = [0u8; 4];
                    for _ in 0..=RECORDS {
                        if crew.stopped() {
                            break;
                        }
                        match task.read(fd, &mut rec) {
                            Ok(4) => got.push(u32::from_le_bytes(rec)),
                            Ok(0) => break,
                            r => panic!("{share:?}: read of a record: {r:?}"),
                        }
                    }
                    got
                }));
            }
            hs.into_iter().map(join).collect::<Vec<_>>()
        });
        got
    });
    let mut count = vec![0u32; RECORDS as usize];
    let mut total = 0u64;
    for got in &seen {
        for &i in got {
            count[i as usize] += 1;
            total += 1;
        }
    }
    let twice = count.iter().filter(|&&c| c > 1).count();
    let never = count.iter().filter(|&&c| c == 0).count();
    assert_eq!(
        (twice, never),
        (0, 0),
        "{share:?}: records read twice, and never ({} and {} by each thread)",
        seen[0].len(),
        seen[1].len()
    );
    assert_eq!(total, u64::from(RECORDS), "every record checked once");
}

/// Two threads append records through one description with plain writes at the position:
/// every write must land past the last, so the file ends with every record once. Writes that
/// took one position would overwrite each other and leave the file short.
fn writes_land_one_after_another(share: Share) {
    const PER_THREAD: u32 = RECORDS / 2;
    let file = run(move |crew| {
        let vfs = Vfs::new();
        let t = vfs.task(Cred::root());
        let fd = t
            .openat(AT_FDCWD, "/f", OpenFlags::CREAT | OpenFlags::RDWR, 0o644)
            .expect("create");
        let u = second(&t, share);
        // A seek by each first, which also puts the file in each task's fd cache.
        assert_eq!(t.lseek(fd, 0, Whence::SET), Ok(0));
        assert_eq!(u.lseek(fd, 0, Whence::SET), Ok(0));
        let reader = vfs.task(Cred::root());
        thread::scope(|s| {
            let mut hs = Vec::new();
            for (k, task) in [t, u].into_iter().enumerate() {
                hs.push(s.spawn(move || {
                    let _g = crew.enlist();
                    if !crew.start_line(2) {
                        return 0;
                    }
                    let mut written = 0;
                    for i in 0..PER_THREAD {
                        if crew.stopped() {
                            break;
                        }
                        let index = i * 2 + k as u32;
                        assert_eq!(task.write(fd, &index.to_le_bytes()), Ok(4), "{share:?}");
                        written += 1;
                    }
                    written
                }));
            }
            let written: u32 = hs.into_iter().map(join).sum();
            assert_eq!(written, RECORDS, "{share:?}: every write made");
        });
        let rfd = reader
            .openat(AT_FDCWD, "/f", OpenFlags::RDONLY, 0)
            .expect("open to check");
        let mut all = vec![0u8; RECORDS as usize * 4 + 4];
        let n = reader.pread(rfd, &mut all, 0).expect("read back");
        all.truncate(n);
        all
    });
    assert_eq!(
        file.len(),
        RECORDS as usize * 4,
        "{share:?}: the file's length after {RECORDS} writes of 4 bytes"
    );
    let mut count = vec![0u32; RECORDS as usize];
    for rec in file.chunks_exact(4) {
        let i = u32::from_le_bytes(rec.try_into().expect("4 bytes"));
        count[i as usize] += 1;
    }
    assert!(
        count.iter().all(|&c| c == 1),
        "{share:?}: every record once in the file"
    );
}

#[test]
#[cfg_attr(
    any(loom, feature = "shuttle"),
    ignore = "skipped: uvfs built with loom/shuttle primitives, which work only inside a model"
)]
fn reads_of_a_shared_table_take_each_record_once() {
    reads_take_each_record_once(Share::Table);
}

#[test]
#[cfg_attr(
    any(loom, feature = "shuttle"),
    ignore = "skipped: uvfs built with loom/shuttle primitives, which work only inside a model"
)]
fn reads_of_a_description_two_tables_hold_take_each_record_once() {
    reads_take_each_record_once(Share::Fork);
}

#[test]
#[cfg_attr(
    any(loom, feature = "shuttle"),
    ignore = "skipped: uvfs built with loom/shuttle primitives, which work only inside a model"
)]
fn writes_of_a_shared_table_land_one_after_another() {
    writes_land_one_after_another(Share::Table);
}

#[test]
#[cfg_attr(
    any(loom, feature = "shuttle"),
    ignore = "skipped: uvfs built with loom/shuttle primitives, which work only inside a model"
)]
fn writes_of_a_description_two_tables_hold_land_one_after_another() {
    writes_land_one_after_another(Share::Fork);
}

/// A task alone with its file (its position moves without the lock): reads, writes and seeks
/// move the position as they should, also after a dup (two fds of one description, where the
/// lock is taken again), a close of the dup, and a fork whose child closes its copy.
#[test]
fn a_position_one_task_uses_moves_as_it_should() {
    let vfs = Vfs::new();
    let t = vfs.task(Cred::root());
    let fd = t
        .openat(AT_FDCWD, "/f", OpenFlags::CREAT | OpenFlags::RDWR, 0o644)
        .expect("create");
    let mut checks = 0;
    assert_eq!(t.write(fd, b"abcdef"), Ok(6));
    assert_eq!(t.lseek(fd, 0, Whence::CUR), Ok(6));
    assert_eq!(t.lseek(fd, 1, Whence::SET), Ok(1));
    let mut b = [0u8; 2];
    assert_eq!(t.read(fd, &mut b), Ok(2));
    assert_eq!(&b, b"bc");
    checks += 4;
    let dup = t.dup(fd).expect("dup");
    assert_eq!(t.read(dup, &mut b), Ok(2));
    assert_eq!(&b, b"de");
    assert_eq!(t.lseek(fd, 0, Whence::CUR), Ok(5));
    t.close(dup).expect("close the dup");
    assert_eq!(t.read(fd, &mut b), Ok(1));
    assert_eq!(b[0], b'f');
    checks += 4;
    let child = t.fork();
    assert_eq!(child.lseek(fd, 2, Whence::SET), Ok(2));
    assert_eq!(t.lseek(fd, 0, Whence::CUR), Ok(2));
    child.close(fd).expect("the child's close");
    drop(child);
    assert_eq!(t.write(fd, b"XY"), Ok(2));
    assert_eq!(t.lseek(fd, 0, Whence::CUR), Ok(4));
    let mut all = [0u8; 8];
    assert_eq!(t.pread(fd, &mut all, 0), Ok(6));
    assert_eq!(&all[..6], b"abXYef");
    checks += 4;
    assert_eq!(checks, 12);
}
