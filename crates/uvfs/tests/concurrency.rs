//! Seeded, bounded concurrency tests through the public `sys` API: each pits a writer (rename,
//! unlink, create) against readers on other tasks and checks an invariant that POSIX guarantees
//! whatever the interleaving. Oracle: POSIX atomicity of rename(2), open(2) with `O_EXCL`,
//! unlink(2) of an open file, and readdir(3) under concurrent changes.
//!
//! Renames publish what they are doing in a [`Published`] word: the number of operations done,
//! doubled, plus one while one is in flight. A reader that reads the same even word before and
//! after its calls saw no operation in flight (any store of the writer its calls observed would
//! make the second read see a later word), so it knows the exact tree and checks exact
//! answers; otherwise it checks the weaker invariant that holds mid-operation.
//!
//! No sleeps: writers run a fixed number of operations; readers run until the writer is done
//! (and at least [`MIN_READER_ROUNDS`] rounds). Seed: `UVFS_STRESS_SEED`, else a constant; every
//! failure message prints it.
//!
//! Under `--cfg loom` or the `shuttle` feature uvfs's sequence counts use the model checker's
//! atomics, which panic outside a model, so these tests are ignored there, with that reason.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Barrier;
use std::thread;

use uvfs::abi::{AtFlags, Dirent, Errno, FileType, OpenFlags, RenameFlags, AT_FDCWD};
use uvfs::{Cred, Task, Vfs};

/// Rounds every reader runs even if the writer finished first.
const MIN_READER_ROUNDS: u64 = 200;

fn seed() -> u64 {
    std::env::var("UVFS_STRESS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed_0f0f_a5a5)
}

/// SplitMix64: a seeded generator small enough to keep the tests dependency-free.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            v.swap(i, self.below(i as u64 + 1) as usize);
        }
    }
}

/// The bit of a published word set while an operation is in flight.
const IN_FLIGHT: u64 = 1 << 8;
/// The bits of a published word that hold the writer's state.
const STATE_MASK: u64 = IN_FLIGHT - 1;

/// What a writer is doing: `2 * done + in_flight` above [`STATE_MASK`], and the state of the
/// tree (test-specific bits) in it.
struct Published {
    word: AtomicU64,
    done: AtomicBool,
}

impl Published {
    fn new() -> Published {
        Published {
            word: AtomicU64::new(0),
            done: AtomicBool::new(false),
        }
    }

    /// Marks an operation in flight; `state` is the tree's state before it.
    fn begin(&self, ops: u64, state: u64) {
        self.word
            .store(((2 * ops + 1) * IN_FLIGHT) | state, Ordering::SeqCst);
    }

    /// Marks the operation done; `state` is the tree's state after it.
    fn end(&self, ops: u64, state: u64) {
        self.word
            .store(((2 * ops + 2) * IN_FLIGHT) | state, Ordering::SeqCst);
    }

    fn load(&self) -> u64 {
        self.word.load(Ordering::SeqCst)
    }

    fn finish(&self) {
        self.done.store(true, Ordering::SeqCst);
    }

    fn is_done(&self) -> bool {
        self.done.load(Ordering::SeqCst)
    }
}

/// The state bits of a word read before and after a reader's calls, if no operation was in
/// flight at any point between them.
fn quiescent(before: u64, after: u64) -> Option<u64> {
    (before == after && before & IN_FLIGHT == 0).then_some(before & STATE_MASK)
}

fn ino_of(task: &Task, path: &str) -> Result<u64, Errno> {
    task.stat(path).map(|s| s.ino)
}

fn create_file(task: &Task, path: &str) -> u64 {
    let fd = task
        .openat(
            AT_FDCWD,
            path,
            OpenFlags::CREAT | OpenFlags::EXCL | OpenFlags::WRONLY,
            0o644,
        )
        .unwrap_or_else(|e| panic!("create {path}: {e:?}"));
    let ino = task.fstat(fd).expect("fstat of a new file").ino;
    task.close(fd).expect("close");
    ino
}

fn mkdir(task: &Task, path: &str) -> u64 {
    task.mkdirat(AT_FDCWD, path, 0o755)
        .unwrap_or_else(|e| panic!("mkdir {path}: {e:?}"));
    ino_of(task, path).expect("stat of a new directory")
}

/// Every name in the directory at `path`, in the order one listing returns them, read with
/// several `getdents64` calls of a `buf_bytes` buffer.
fn list(task: &Task, path: &str, buf_bytes: usize) -> Vec<Vec<u8>> {
    let fd = task
        .openat(AT_FDCWD, path, OpenFlags::RDONLY | OpenFlags::DIRECTORY, 0)
        .expect("open directory");
    let mut buf = vec![0u8; buf_bytes];
    let mut names = Vec::new();
    loop {
        let n = task.getdents64(fd, &mut buf).expect("getdents64");
        if n == 0 {
            break;
        }
        names.extend(Dirent::parse(&buf[..n]).into_iter().map(|d| d.name));
    }
    task.close(fd).expect("close directory");
    names
}

/// Plain rename (alternately with `RENAME_NOREPLACE`) of one file between `/d/a` and `/d/b`.
/// POSIX: the file has exactly one of the two names at every moment, and always its inode.
/// A reader with no rename in flight across both stats finds it exactly where the writer left it.
#[test]
#[cfg_attr(
    any(loom, feature = "shuttle"),
    ignore = "skipped: uvfs built with loom/shuttle atomics, which work only inside a model"
)]
fn rename_moves_one_name_atomically_under_stat() {
    const RENAMES: u64 = 30_000;
    let seed = seed();
    let vfs = Vfs::new();
    let setup = vfs.task(Cred::root());
    mkdir(&setup, "/d");
    let ino = create_file(&setup, "/d/a");
    let pub_ = Published::new();
    let start = Barrier::new(2);
    let (exact, racy) = thread::scope(|s| {
        let writer = vfs.task(Cred::root());
        let reader = vfs.task(Cred::root());
        s.spawn(|| {
            let t = writer;
            let mut rng = Rng::new(seed);
            start.wait();
            for i in 0..RENAMES {
                let (from, to) = if i % 2 == 0 {
                    ("/d/a", "/d/b")
                } else {
                    ("/d/b", "/d/a")
                };
                let flags = if rng.below(2) == 0 {
                    RenameFlags::empty()
                } else {
                    RenameFlags::NOREPLACE
                };
                pub_.begin(i, i % 2);
                t.renameat2(AT_FDCWD, from, AT_FDCWD, to, flags)
                    .unwrap_or_else(|e| {
                        panic!("seed {seed}: rename {from} -> {to} ({flags:?}): {e:?}")
                    });
                pub_.end(i, (i + 1) % 2);
            }
            pub_.finish();
        });
        let r = s.spawn(|| {
            let t = reader;
            let (mut exact, mut racy) = (0u64, 0u64);
            start.wait();
            while !pub_.is_done() || exact + racy < MIN_READER_ROUNDS {
                let before = pub_.load();
                let a = ino_of(&t, "/d/a");
                let b = ino_of(&t, "/d/b");
                let after = pub_.load();
                for (name, got) in [("a", a), ("b", b)] {
                    assert!(
                        got == Ok(ino) || got == Err(Errno::ENOENT),
                        "seed {seed}: stat /d/{name} gave {got:?}, want the file ({ino}) or ENOENT"
                    );
                }
                match quiescent(before, after) {
                    Some(at_b) => {
                        let want = if at_b == 1 { (Err(Errno::ENOENT), Ok(ino)) } else { (Ok(ino), Err(Errno::ENOENT)) };
                        assert_eq!((a, b), want, "seed {seed}: no rename in flight (word {before:#x}), file at b: {at_b}");
                        exact += 1;
                    }
                    None => racy += 1,
                }
            }
            (exact, racy)
        });
        r.join().expect("reader")
    });
    assert!(exact + racy >= MIN_READER_ROUNDS);
    let a = ino_of(&setup, "/d/a");
    assert_eq!(
        a,
        Ok(ino),
        "seed {seed}: an even number of renames leaves the file at /d/a"
    );
    assert_eq!(ino_of(&setup, "/d/b"), Err(Errno::ENOENT));
}

/// `RENAME_EXCHANGE` of two files `/d/a` and `/d/b`. POSIX (renameat2(2)): the exchange is
/// atomic, so both names exist at every moment and each names one of the two inodes; with no
/// exchange in flight, exactly the pair the writer left.
#[test]
#[cfg_attr(
    any(loom, feature = "shuttle"),
    ignore = "skipped: uvfs built with loom/shuttle atomics, which work only inside a model"
)]
fn rename_exchange_keeps_both_names_under_stat() {
    const EXCHANGES: u64 = 30_000;
    let seed = seed();
    let vfs = Vfs::new();
    let setup = vfs.task(Cred::root());
    mkdir(&setup, "/d");
    let ia = create_file(&setup, "/d/a");
    let ib = create_file(&setup, "/d/b");
    let pub_ = Published::new();
    let start = Barrier::new(3);
    thread::scope(|s| {
        let writer = vfs.task(Cred::root());
        s.spawn(|| {
            let t = writer;
            start.wait();
            for i in 0..EXCHANGES {
                pub_.begin(i, i % 2);
                t.renameat2(AT_FDCWD, "/d/a", AT_FDCWD, "/d/b", RenameFlags::EXCHANGE)
                    .unwrap_or_else(|e| panic!("seed {seed}: exchange #{i}: {e:?}"));
                pub_.end(i, (i + 1) % 2);
            }
            pub_.finish();
        });
        for order in [["/d/a", "/d/b"], ["/d/b", "/d/a"]] {
            let reader = vfs.task(Cred::root());
            let (pub_, start) = (&pub_, &start);
            s.spawn(move || {
                let t = reader;
                let mut rounds = 0u64;
                start.wait();
                while !pub_.is_done() || rounds < MIN_READER_ROUNDS {
                    let before = pub_.load();
                    let x = ino_of(&t, order[0]);
                    let y = ino_of(&t, order[1]);
                    let after = pub_.load();
                    for (name, got) in [(order[0], x), (order[1], y)] {
                        assert!(
                            got == Ok(ia) || got == Ok(ib),
                            "seed {seed}: stat {name} gave {got:?} during exchanges, want {ia} or {ib}"
                        );
                    }
                    if let Some(swapped) = quiescent(before, after) {
                        let (at_a, at_b) = if swapped == 1 { (ib, ia) } else { (ia, ib) };
                        let want = if order[0] == "/d/a" { (Ok(at_a), Ok(at_b)) } else { (Ok(at_b), Ok(at_a)) };
                        assert_eq!((x, y), want, "seed {seed}: no exchange in flight (word {before:#x})");
                    }
                    rounds += 1;
                }
            });
        }
    });
    assert_eq!(
        (ino_of(&setup, "/d/a"), ino_of(&setup, "/d/b")),
        (Ok(ia), Ok(ib)),
        "seed {seed}: even exchange count"
    );
}

/// One task creates `/u/f` (`O_CREAT|O_EXCL`), writes, unlinks and closes it, over and over;
/// another opens `/u/f`. POSIX (open(2), unlink(2)): every open fails with `ENOENT` or gives a
/// regular file that was created here; an unlinked open file keeps working, with `nlink` 0.
#[test]
#[cfg_attr(
    any(loom, feature = "shuttle"),
    ignore = "skipped: uvfs built with loom/shuttle atomics, which work only inside a model"
)]
fn unlink_races_open_and_open_files_outlive_their_name() {
    const ROUNDS: u64 = 12_000;
    /// Opened fds the opener keeps until the end (the rest it closes at once).
    const KEEP: usize = 200;
    /// Bound of the creator's wait for the opener (it never waits on a descheduled opener long).
    const MAX_SPINS: u32 = 200_000;
    let seed = seed();
    let vfs = Vfs::new();
    let setup = vfs.task(Cred::root());
    mkdir(&setup, "/u");
    let done = AtomicBool::new(false);
    // Opens attempted so far: on odd rounds the creator waits (spinning, bounded) for two more
    // attempts before it unlinks, so that opens also land while the file exists.
    let attempts = AtomicU64::new(0);
    let start = Barrier::new(2);
    let creator = vfs.task(Cred::root());
    let opener = vfs.task(Cred::root());
    let (created, (opener, kept, opened, missing)) = thread::scope(|s| {
        let c = s.spawn(|| {
            let t = creator;
            let mut inos = HashSet::new();
            start.wait();
            for i in 0..ROUNDS {
                let fd = t
                    .openat(
                        AT_FDCWD,
                        "/u/f",
                        OpenFlags::CREAT | OpenFlags::EXCL | OpenFlags::RDWR,
                        0o600,
                    )
                    .unwrap_or_else(|e| panic!("seed {seed}: create #{i}: {e:?}"));
                let st = t.fstat(fd).expect("fstat");
                inos.insert(st.ino);
                assert_eq!(t.pwrite(fd, &[i as u8], 0), Ok(1));
                if i % 2 == 1 {
                    let seen = attempts.load(Ordering::SeqCst);
                    let mut spins = 0u32;
                    while attempts.load(Ordering::SeqCst) < seen + 2 && spins < MAX_SPINS {
                        std::hint::spin_loop();
                        spins += 1;
                    }
                }
                t.unlinkat(AT_FDCWD, "/u/f", AtFlags::empty())
                    .unwrap_or_else(|e| panic!("seed {seed}: unlink #{i}: {e:?}"));
                let st = t.fstat(fd).expect("fstat after unlink");
                assert_eq!(st.nlink, 0, "seed {seed}: nlink after unlink #{i}");
                assert_eq!(
                    t.pwrite(fd, b"after", 1),
                    Ok(5),
                    "seed {seed}: write after unlink"
                );
                let mut b = [0u8; 6];
                assert_eq!(
                    t.pread(fd, &mut b, 0),
                    Ok(6),
                    "seed {seed}: read after unlink"
                );
                assert_eq!(&b, &[i as u8, b'a', b'f', b't', b'e', b'r']);
                t.close(fd).expect("close");
            }
            done.store(true, Ordering::SeqCst);
            inos
        });
        let o = s.spawn(|| {
            let t = opener;
            let mut kept = Vec::new();
            let (mut opened, mut missing) = (0u64, 0u64);
            start.wait();
            while !done.load(Ordering::SeqCst) || opened + missing < MIN_READER_ROUNDS {
                let r = t.openat(AT_FDCWD, "/u/f", OpenFlags::RDWR, 0);
                attempts.fetch_add(1, Ordering::SeqCst);
                match r {
                    Err(Errno::ENOENT) => missing += 1,
                    Err(e) => panic!("seed {seed}: open /u/f: {e:?}, want a file or ENOENT"),
                    Ok(fd) => {
                        opened += 1;
                        let st = t.fstat(fd).expect("fstat of an open file");
                        assert_eq!(
                            st.file_type(),
                            Some(FileType::Regular),
                            "seed {seed}: {st:?}"
                        );
                        assert!(
                            st.nlink <= 1,
                            "seed {seed}: nlink {} of a file with one name",
                            st.nlink
                        );
                        assert_eq!(
                            t.pwrite(fd, b"o", 8),
                            Ok(1),
                            "seed {seed}: write to an opened file"
                        );
                        let mut b = [0u8; 1];
                        assert_eq!(t.pread(fd, &mut b, 8), Ok(1));
                        assert_eq!(&b, b"o");
                        if kept.len() < KEEP {
                            kept.push((fd, st.ino));
                        } else {
                            t.close(fd).expect("close");
                        }
                    }
                }
            }
            (t, kept, opened, missing)
        });
        (c.join().expect("creator"), o.join().expect("opener"))
    });
    assert!(opened + missing >= MIN_READER_ROUNDS);
    // Every name is gone now: each kept fd is an unlinked file that still reads and writes.
    for (fd, ino) in kept {
        assert!(
            created.contains(&ino),
            "seed {seed}: opened inode {ino} that the creator never made"
        );
        let st = opener.fstat(fd).expect("fstat");
        assert_eq!(
            (st.ino, st.nlink),
            (ino, 0),
            "seed {seed}: kept fd {fd} after every unlink"
        );
        assert_eq!(opener.pwrite(fd, b"late", 16), Ok(4));
        let mut b = [0u8; 4];
        assert_eq!(opener.pread(fd, &mut b, 16), Ok(4));
        assert_eq!(&b, b"late");
        opener.close(fd).expect("close");
    }
    assert_eq!(ino_of(&setup, "/u/f"), Err(Errno::ENOENT));
}

/// Three tasks create, in a seeded shuffled order, files of their own and the same shared
/// names in one directory with `O_CREAT|O_EXCL`. POSIX (open(2)): exactly one creator of each
/// shared name succeeds and the others get `EEXIST`; the directory then lists every name once.
#[test]
#[cfg_attr(
    any(loom, feature = "shuttle"),
    ignore = "skipped: uvfs built with loom/shuttle atomics, which work only inside a model"
)]
fn create_storm_has_one_winner_per_name_and_lists_each_once() {
    const THREADS: u64 = 3;
    const OWN: u64 = 400;
    const SHARED: u64 = 400;
    let seed = seed();
    let vfs = Vfs::new();
    let setup = vfs.task(Cred::root());
    mkdir(&setup, "/c");
    let start = Barrier::new(THREADS as usize);
    let wins: Vec<Vec<String>> = thread::scope(|s| {
        let handles: Vec<_> = (0..THREADS)
            .map(|tid| {
                let t = vfs.task(Cred::root());
                let start = &start;
                s.spawn(move || {
                    let mut names: Vec<String> = (0..OWN).map(|j| format!("t{tid}-{j}")).collect();
                    names.extend((0..SHARED).map(|j| format!("s{j}")));
                    Rng::new(seed ^ tid).shuffle(&mut names);
                    let mut won = Vec::new();
                    start.wait();
                    for name in names {
                        let path = format!("/c/{name}");
                        match t.openat(
                            AT_FDCWD,
                            &path,
                            OpenFlags::CREAT | OpenFlags::EXCL | OpenFlags::WRONLY,
                            0o644,
                        ) {
                            Ok(fd) => {
                                t.close(fd).expect("close");
                                won.push(name);
                            }
                            Err(Errno::EEXIST) if name.starts_with('s') => {}
                            Err(e) => panic!("seed {seed}: task {tid} create {path}: {e:?}"),
                        }
                    }
                    won
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("creator"))
            .collect()
    });
    let mut winners: BTreeMap<&str, u64> = BTreeMap::new();
    for (tid, won) in wins.iter().enumerate() {
        for name in won {
            *winners.entry(name.as_str()).or_default() += 1;
            if name.starts_with('t') {
                assert!(
                    name.starts_with(&format!("t{tid}-")),
                    "seed {seed}: task {tid} created {name}"
                );
            }
        }
    }
    let mut expected: BTreeSet<Vec<u8>> = BTreeSet::new();
    for tid in 0..THREADS {
        for j in 0..OWN {
            let n = format!("t{tid}-{j}");
            assert_eq!(
                winners.get(n.as_str()),
                Some(&1),
                "seed {seed}: {n} created once by its owner"
            );
            expected.insert(n.into_bytes());
        }
    }
    for j in 0..SHARED {
        let n = format!("s{j}");
        assert_eq!(
            winners.get(n.as_str()),
            Some(&1),
            "seed {seed}: {n} has exactly one winner"
        );
        expected.insert(n.into_bytes());
    }
    let listed = list(&setup, "/c", 256);
    let mut seen = BTreeSet::new();
    for n in &listed {
        assert!(
            seen.insert(n.clone()),
            "seed {seed}: {} listed twice",
            String::from_utf8_lossy(n)
        );
    }
    assert!(
        seen.remove(&b"."[..]) && seen.remove(&b".."[..]),
        "seed {seed}: . and .. are listed"
    );
    assert_eq!(
        seen, expected,
        "seed {seed}: the listing is exactly the created names"
    );
}

/// A lister reads a directory with a small buffer (several `getdents64` calls per listing)
/// while another task creates and unlinks other names, never reusing one. POSIX (readdir(3)):
/// whether a name added or removed during the listing appears is unspecified, but no entry is
/// returned twice and every name present for the whole listing is returned.
#[test]
#[cfg_attr(
    any(loom, feature = "shuttle"),
    ignore = "skipped: uvfs built with loom/shuttle atomics, which work only inside a model"
)]
fn getdents_during_churn_returns_stable_names_once() {
    const STABLE: u64 = 48;
    const CHURN: u64 = 15_000;
    let seed = seed();
    let vfs = Vfs::new();
    let setup = vfs.task(Cred::root());
    mkdir(&setup, "/g");
    let stable: BTreeSet<Vec<u8>> = (0..STABLE)
        .map(|i| {
            let n = format!("keep-{i}");
            create_file(&setup, &format!("/g/{n}"));
            n.into_bytes()
        })
        .collect();
    let done = AtomicBool::new(false);
    let start = Barrier::new(2);
    let churner = vfs.task(Cred::root());
    let lister = vfs.task(Cred::root());
    let listings = thread::scope(|s| {
        s.spawn(|| {
            let t = churner;
            let mut rng = Rng::new(seed);
            let mut live: Vec<u64> = Vec::new();
            start.wait();
            for i in 0..CHURN {
                // Grow while small, otherwise create or unlink at random.
                if live.len() < 8 || (live.len() < 64 && rng.below(2) == 0) {
                    create_file(&t, &format!("/g/tmp-{i}"));
                    live.push(i);
                } else {
                    let k = live.swap_remove(rng.below(live.len() as u64) as usize);
                    t.unlinkat(AT_FDCWD, format!("/g/tmp-{k}"), AtFlags::empty())
                        .unwrap_or_else(|e| panic!("seed {seed}: unlink tmp-{k}: {e:?}"));
                }
            }
            done.store(true, Ordering::SeqCst);
        });
        let l = s.spawn(|| {
            let t = lister;
            let mut listings = 0u64;
            start.wait();
            while !done.load(Ordering::SeqCst) || listings < MIN_READER_ROUNDS / 10 {
                // 80 bytes hold two or three records: many calls per listing.
                let names = list(&t, "/g", 80);
                let mut seen = HashSet::new();
                for n in &names {
                    assert!(
                        seen.insert(n.as_slice()),
                        "seed {seed}: {} returned twice in one listing",
                        String::from_utf8_lossy(n)
                    );
                    assert!(
                        n == b"."
                            || n == b".."
                            || n.starts_with(b"keep-")
                            || n.starts_with(b"tmp-"),
                        "seed {seed}: unknown name {}",
                        String::from_utf8_lossy(n)
                    );
                }
                for k in &stable {
                    assert!(
                        seen.contains(k.as_slice()),
                        "seed {seed}: stable {} missing",
                        String::from_utf8_lossy(k)
                    );
                }
                listings += 1;
            }
            listings
        });
        l.join().expect("lister")
    });
    assert!(listings >= MIN_READER_ROUNDS / 10);
}

/// Names of the lookup fast-path stress tree: `/s/L` and `/s/R` each hold
/// `c1/c2/c3/c4/c5/f`.
const DEEP_L: &str = "/s/L/c1/c2/c3/c4/c5/f";
const DEEP_R: &str = "/s/R/c1/c2/c3/c4/c5/f";
const MID_L: &str = "/s/L/c1/c2/c3";
const MID_R: &str = "/s/R/c1/c2/c3";

/// State bits of the stress tree.
const SWAPPED: u64 = 1; // /s/L and /s/R exchanged
const L_HIDDEN: u64 = 2; // c2 under /s/L renamed to h2
const R_AWAY: u64 = 4; // /s/R renamed to /s/T

/// Readers stat deep paths while a writer renames the directories on them back and forth:
/// top-level exchanges (`RENAME_EXCHANGE`), a top-level move away and back, and a move of an
/// intermediate directory (`c2`) away and back. Every rename invalidates cached lookups the
/// readers' lock-free walks rely on, forcing the locked fallback. POSIX: a stat returns
/// `ENOENT` or one of the inodes the path can name; with no rename in flight, exactly the one
/// it names.
#[test]
#[cfg_attr(
    any(loom, feature = "shuttle"),
    ignore = "skipped: uvfs built with loom/shuttle atomics, which work only inside a model"
)]
fn lookup_fast_path_survives_renames_of_intermediate_directories() {
    const OPS: u64 = 30_000;
    let seed = seed();
    let vfs = Vfs::new();
    let setup = vfs.task(Cred::root());
    mkdir(&setup, "/s");
    // inos[side] = (c3, f) for side 0 (made as L) and 1 (made as R).
    let mut inos = [(0, 0); 2];
    for (side, top) in ["/s/L", "/s/R"].into_iter().enumerate() {
        let mut p = top.to_string();
        mkdir(&setup, &p);
        for c in ["c1", "c2", "c3", "c4", "c5"] {
            p = format!("{p}/{c}");
            let ino = mkdir(&setup, &p);
            if c == "c3" {
                inos[side].0 = ino;
            }
        }
        inos[side].1 = create_file(&setup, &format!("{p}/f"));
    }
    // Warm the cache so that the readers start on the fast path.
    for p in [DEEP_L, DEEP_R, MID_L, MID_R] {
        ino_of(&setup, p).expect("warm");
    }
    /// What `path` names in `state`: the side under that top-level name, or ENOENT.
    fn expected(state: u64, left: bool, deep: bool, inos: &[(u64, u64); 2]) -> Result<u64, Errno> {
        if (left && state & L_HIDDEN != 0) || (!left && state & R_AWAY != 0) {
            return Err(Errno::ENOENT);
        }
        let side = usize::from(left == (state & SWAPPED != 0));
        Ok(if deep { inos[side].1 } else { inos[side].0 })
    }
    let pub_ = Published::new();
    let start = Barrier::new(3);
    thread::scope(|s| {
        let writer = vfs.task(Cred::root());
        s.spawn(|| {
            let t = writer;
            let mut rng = Rng::new(seed);
            let mut state = 0u64;
            let mut ops = 0u64;
            let mut rename = |from: &str, to: &str, flags: RenameFlags, next: u64| {
                pub_.begin(ops, state);
                t.renameat2(AT_FDCWD, from, AT_FDCWD, to, flags)
                    .unwrap_or_else(|e| {
                        panic!("seed {seed}: rename {from} -> {to} in state {state}: {e:?}")
                    });
                state = next;
                pub_.end(ops, state);
                ops += 1;
            };
            start.wait();
            for _ in 0..OPS / 2 {
                match rng.below(3) {
                    0 => {
                        rename("/s/L", "/s/R", RenameFlags::EXCHANGE, SWAPPED);
                        rename("/s/L", "/s/R", RenameFlags::EXCHANGE, 0);
                    }
                    1 => {
                        rename("/s/L/c1/c2", "/s/L/c1/h2", RenameFlags::NOREPLACE, L_HIDDEN);
                        rename("/s/L/c1/h2", "/s/L/c1/c2", RenameFlags::empty(), 0);
                    }
                    _ => {
                        rename("/s/R", "/s/T", RenameFlags::empty(), R_AWAY);
                        rename("/s/T", "/s/R", RenameFlags::NOREPLACE, 0);
                    }
                }
            }
            pub_.finish();
        });
        for (id, paths) in [[DEEP_L, MID_R], [MID_L, DEEP_R]].into_iter().enumerate() {
            let reader = if id == 0 {
                vfs.task(Cred::root())
            } else {
                setup.clone_thread()
            };
            let (pub_, start, inos) = (&pub_, &start, &inos);
            s.spawn(move || {
                let t = reader;
                let mut rounds = 0u64;
                start.wait();
                while !pub_.is_done() || rounds < MIN_READER_ROUNDS {
                    let before = pub_.load();
                    let got: Vec<_> = paths.iter().map(|p| ino_of(&t, p)).collect();
                    let after = pub_.load();
                    for (p, g) in paths.iter().zip(&got) {
                        let deep = p.ends_with("/f");
                        let ok = match g {
                            Err(e) => *e == Errno::ENOENT,
                            Ok(i) => [0, 1].iter().any(|&s| *i == if deep { inos[s].1 } else { inos[s].0 }),
                        };
                        assert!(ok, "seed {seed}: stat {p} gave {g:?} (word {before:#x} -> {after:#x}), inodes {inos:?}");
                        if let Some(state) = quiescent(before, after) {
                            let want = expected(state, p.starts_with("/s/L"), deep, inos);
                            assert_eq!(*g, want, "seed {seed}: stat {p} with no rename in flight, state {state}");
                        }
                    }
                    rounds += 1;
                }
            });
        }
    });
    for (p, want) in [
        (DEEP_L, inos[0].1),
        (DEEP_R, inos[1].1),
        (MID_L, inos[0].0),
        (MID_R, inos[1].0),
    ] {
        assert_eq!(
            ino_of(&setup, p),
            Ok(want),
            "seed {seed}: {p} after every rename was undone"
        );
    }
}
