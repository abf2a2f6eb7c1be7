//! Model checks of the production fd table (`FdTable::get` without the lock against
//! `install_at`, `remove` and the growth of the published array), with the atomics, the table
//! lock and the epoch guard of `crate::sync` replaced by loom's (`--cfg loom`) or shuttle's
//! (`--features shuttle`), as in `dcache_check`. The files are real `FileDescription`s of a
//! filesystem with nothing but inodes, whose release is counted.
//!
//! The property checked is `FdTable::get`'s (docs/locking.md, "The fd fast path"): a `get` of
//! an fd racing a change returns the file before or after the change (`EBADF` for a closed
//! fd), never anything else; once the change has completed it returns the file after; a file
//! open throughout is found, also while the array grows; a closed or replaced file is released
//! exactly once, when its last reference goes, and never while a `get` holds it.
//!
//! What is not checked: the weak reference counts of `Arc` (std's atomics, not the model's),
//! and reclamation (retired pointers are freed after each scenario, see `sync::rcu`).
//!
//! Run: as `dcache_check`, with `fd_table_check` as the filter.

use std::sync::atomic::AtomicUsize;
use std::sync::Arc;

use super::fd_table::{FdTable, LOW};
use super::file::FileDescription;
use super::mount::{MntFlags, Mount, MountRef, VfsPath};
use super::ops::FileOps;
use super::test_fixture::Fixture;
use crate::abi::{Errno, FileType, OpenFlags};
use crate::sync::atomic::Ordering;
use crate::sync::model::{check, thread, AtomicBool};

/// File operations that count releases.
struct Counted(Arc<AtomicUsize>);

impl FileOps for Counted {
    fn release(&self, _file: &FileDescription) {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}

struct Files {
    f: Fixture,
    mnt: MountRef,
}

impl Files {
    fn new() -> Files {
        let f = Fixture::new();
        let root = f.root();
        let mnt = Mount::new(f.sb.clone(), root, MntFlags::empty());
        Files { f, mnt }
    }

    /// A file open for reading and its release count.
    fn file(&self) -> (Arc<FileDescription>, Arc<AtomicUsize>) {
        let released = Arc::new(AtomicUsize::new(0));
        let path = VfsPath {
            mnt: self.mnt.clone(),
            dentry: self.mnt.root().clone(),
        };
        let file = FileDescription::new(
            path,
            self.f.inode(FileType::Regular),
            OpenFlags::RDONLY,
            Box::new(Counted(released.clone())),
            0,
        )
        .expect("a read-only open of a writable mount");
        (file, released)
    }
}

impl Drop for Files {
    fn drop(&mut self) {
        self.mnt.kill();
    }
}

fn releases(r: &AtomicUsize) -> usize {
    r.load(std::sync::atomic::Ordering::SeqCst)
}

/// Runs `change` on another thread and, on this one, reads whether it has completed and then
/// gets `fd`: `(completed before the get, what the get returned)`.
fn race(
    change: impl FnOnce() + Send + 'static,
    table: &Arc<FdTable>,
    fd: i32,
) -> (
    bool,
    Result<Arc<FileDescription>, Errno>,
    thread::JoinHandle<()>,
) {
    let done = Arc::new(AtomicBool::new(false));
    let writer = {
        let done = done.clone();
        thread::spawn(move || {
            change();
            done.store(true, Ordering::Release);
        })
    };
    let completed = done.load(Ordering::Acquire);
    let got = table.get(fd);
    (completed, got, writer)
}

/// An empty table and a second handle on it, as a second task sharing it would hold (so
/// `get` takes its lock-free path).
fn shared_table() -> (Arc<FdTable>, Arc<FdTable>) {
    let table = Arc::new(FdTable::new());
    let other = table.clone();
    (table, other)
}

/// Closes `fd` of `table` on another thread while this one gets it (see [`race`]).
fn race_close(
    table: &Arc<FdTable>,
    fd: i32,
) -> (
    bool,
    Result<Arc<FileDescription>, Errno>,
    thread::JoinHandle<()>,
) {
    let closer = table.clone();
    race(
        move || drop(closer.remove(fd).expect("the fd is open")),
        table,
        fd,
    )
}

/// close of a duplicated fd: a get racing `remove` returns the file or `EBADF`, `EBADF` once
/// the close has completed although the file stays open at the other fd; closing that one too
/// releases the file once, after the get's reference is gone. The two fds are `base` and
/// `base + 1` (0: published beside the lock; `LOW`: in the published array). With `published`
/// a get before the race publishes the fd; without, the racing get is its first (`get_slow`).
fn close_scenario(published: bool, base: i32) {
    let files = Files::new();
    let (table, _other_task) = shared_table();
    let (a, released) = files.file();
    assert_eq!(table.install(a.clone(), false, base), Ok(base));
    assert_eq!(table.install(a.clone(), false, base), Ok(base + 1));
    drop(a);
    if published {
        drop(table.get(base).expect("the fd is open"));
    }
    let (completed, got, writer) = race_close(&table, base);
    match &got {
        Ok(_) => assert!(!completed, "a get after the close completed found the file"),
        Err(e) => assert_eq!(*e, Errno::EBADF),
    }
    writer.join().expect("the close panicked");
    assert_eq!(
        table.get(base).err(),
        Some(Errno::EBADF),
        "fd {base} is closed"
    );
    drop(table.remove(base + 1).expect("the second fd is open"));
    assert_eq!(
        releases(&released),
        usize::from(got.is_err()),
        "released while a get holds it"
    );
    drop(got);
    assert_eq!(
        releases(&released),
        1,
        "released once, at its last reference"
    );
}

/// close racing a get: the file is released once, never while the get holds it.
fn last_close_scenario() {
    let files = Files::new();
    let (table, _other_task) = shared_table();
    let (a, released) = files.file();
    assert_eq!(table.install(a, false, 0), Ok(0));
    drop(table.get(0).expect("fd 0 is open"));
    let (completed, got, writer) = race_close(&table, 0);
    match &got {
        Ok(_) => {
            assert!(!completed, "a get after the close completed found the file");
            assert_eq!(releases(&released), 0, "released while a get holds it");
        }
        Err(e) => assert_eq!(*e, Errno::EBADF),
    }
    drop(got);
    writer.join().expect("the close panicked");
    assert_eq!(
        releases(&released),
        1,
        "released once, at its last reference"
    );
}

/// dup2 onto an open fd (`fd`: 0, beside the lock; `LOW`, in the array): a get returns the
/// old or the new file, the new once the dup2 has completed; the old file is released once.
fn replace_scenario(fd: i32) {
    let files = Files::new();
    let (table, _other_task) = shared_table();
    let (a, released_a) = files.file();
    let (b, released_b) = files.file();
    assert_eq!(table.install(a.clone(), false, fd), Ok(fd));
    drop(table.get(fd).expect("the fd is open"));
    let (completed, got, writer) = race(
        {
            let (table, b) = (table.clone(), b.clone());
            move || {
                drop(
                    table
                        .install_at(fd, b, false)
                        .expect("the fd is below the limit"),
                )
            }
        },
        &table,
        fd,
    );
    let got = got.expect("the fd is open throughout");
    assert!(
        Arc::ptr_eq(&got, &b) || (!completed && Arc::ptr_eq(&got, &a)),
        "the get returned neither the new file nor, before the dup2 completed, the old one"
    );
    drop((got, a));
    writer.join().expect("the dup2 panicked");
    assert!(Arc::ptr_eq(&table.get(fd).expect("the fd is open"), &b));
    assert_eq!(
        releases(&released_a),
        1,
        "the replaced file is released once"
    );
    assert_eq!(releases(&released_b), 0, "the installed file stays open");
}

/// The first get of an fd past the published array's end grows it: a file open throughout is
/// found through the old or the new array, and the new fd once the install has completed.
fn grow_scenario() {
    let files = Files::new();
    let (table, _other_task) = shared_table();
    let (a, _) = files.file();
    let (b, _) = files.file();
    // The first fd of the array (the fds below it are published beside the lock); its first
    // get makes the first array (two fds under a model checker).
    let first = i32::try_from(LOW).expect("a few fds");
    assert_eq!(table.install(a.clone(), false, first), Ok(first));
    drop(table.get(first).expect("the first fd is open"));
    // Past the first array: the get after the install grows it.
    let far = first + 3;
    let (completed, got, writer) = race(
        {
            let (table, b) = (table.clone(), b.clone());
            move || {
                assert!(table
                    .install_at(far, b, false)
                    .expect("below the limit")
                    .is_none());
                drop(table.get(far).expect("just installed"));
            }
        },
        &table,
        first,
    );
    let got = got.expect("the first fd is open throughout the growth");
    assert!(
        Arc::ptr_eq(&got, &a),
        "fd {first} is its file throughout the growth"
    );
    match table.get(far) {
        Ok(f) => assert!(Arc::ptr_eq(&f, &b), "fd {far} is the installed file"),
        Err(e) => {
            assert_eq!(e, Errno::EBADF);
            assert!(!completed, "a get after the install completed missed it");
        }
    }
    writer.join().expect("the install panicked");
}

#[test]
fn fd_table_check_get_never_returns_a_file_closed_before_it() {
    check(|| close_scenario(true, 0));
}

#[test]
fn fd_table_check_get_of_an_fd_in_the_array_never_returns_a_file_closed_before_it() {
    check(|| close_scenario(true, i32::try_from(LOW).expect("a few fds")));
}

#[test]
fn fd_table_check_a_first_get_never_returns_a_file_closed_before_it() {
    check(|| close_scenario(false, 0));
}

#[test]
fn fd_table_check_a_first_get_in_the_array_never_returns_a_file_closed_before_it() {
    check(|| close_scenario(false, i32::try_from(LOW).expect("a few fds")));
}

#[test]
fn fd_table_check_the_last_close_releases_once_and_never_under_a_get() {
    check(last_close_scenario);
}

#[test]
fn fd_table_check_get_sees_a_dup2_onto_an_open_fd() {
    check(|| replace_scenario(0));
}

#[test]
fn fd_table_check_get_sees_a_dup2_onto_an_open_fd_in_the_array() {
    check(|| replace_scenario(i32::try_from(LOW).expect("a few fds")));
}

#[test]
fn fd_table_check_get_finds_open_files_while_the_table_grows() {
    check(grow_scenario);
}
