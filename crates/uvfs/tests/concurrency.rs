//! Seeded, bounded concurrency tests through the public `sys` API: each pits a writer (rename,
//! unlink, create) against readers on other tasks and checks what POSIX guarantees whatever the
//! interleaving. Oracle: POSIX atomicity of rename(2), open(2) with `O_EXCL`, unlink(2) of an
//! open file, and readdir(3) under concurrent changes.
//!
//! Two kinds of check, both counted, and every test asserts its counts:
//! - *racy* checks, in every reader round: the invariant that holds whatever is in flight
//!   (a stat during renames gives one of the inodes or `ENOENT`);
//! - *exact* checks at [`Checkpoints`]: every so many operations the writer stops with nothing
//!   in flight, publishes the tree it left, and waits until every reader has checked exactly
//!   that tree. Their number is fixed by the test (`CHECKPOINTS` per reader), never by luck.
//!
//! No sleeps, every loop bounded: writers run a fixed number of operations; readers run until
//! their writer is done, at most [`MAX_READER_ROUNDS`] rounds. Every thread enlists in the
//! test's [`Crew`]: a thread that panics stops the others (a drop guard sets the crew's stop
//! flag, which every loop and every wait checks), and the panic fails the test with its own
//! message. The test body runs under a deadline ([`HANG_DEADLINE`]): threads still running
//! then (a deadlock or lost wake-up in the library) fail the test as hung instead of hanging
//! it. Seed: `UVFS_STRESS_SEED`, else a constant; every failure message prints it.
//!
//! Under `--cfg loom` or the `shuttle` feature uvfs's dcache uses the model checker's
//! primitives, which panic outside a model, so these tests are ignored there, with that reason.

#[path = "concurrency/harness.rs"]
mod harness;

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;

use harness::*;
use uvfs::abi::{AtFlags, Errno, FileType, OpenFlags, RenameFlags, AT_FDCWD};
use uvfs::{Cred, Task, Vfs};

/// Plain rename (alternately with `RENAME_NOREPLACE`) of one file between `/d/a` and `/d/b`.
/// POSIX: the file has exactly one of the two names at every moment, and always its inode.
/// At each checkpoint the reader finds it exactly where the writer left it.
#[test]
#[cfg_attr(
    any(loom, feature = "shuttle"),
    ignore = "skipped: uvfs built with loom/shuttle primitives, which work only inside a model"
)]
fn rename_moves_one_name_atomically_under_stat() {
    const RENAMES: u64 = 30_000;
    const CHECKPOINTS: u64 = 300;
    let seed = seed();
    let counts = run(move |crew| {
        let vfs = Vfs::new();
        let setup = vfs.task(Cred::root());
        mkdir(&setup, "/d");
        let ino = create_file(&setup, "/d/a");
        // State: 1 if the file is at /d/b.
        let cp = Checkpoints::new(1, 0u64);
        let done = AtomicBool::new(false);
        let counts = thread::scope(|s| {
            let writer = vfs.task(Cred::root());
            let reader = vfs.task(Cred::root());
            let (cp, done) = (&cp, &done);
            let w = s.spawn(move || {
                let _g = crew.enlist();
                let mut rng = Rng::new(seed);
                if !crew.start_line(2) {
                    return;
                }
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
                    writer
                        .renameat2(AT_FDCWD, from, AT_FDCWD, to, flags)
                        .unwrap_or_else(|e| {
                            panic!("seed {seed}: rename {from} -> {to} ({flags:?}): {e:?}")
                        });
                    if i.is_multiple_of(RENAMES / CHECKPOINTS) && !cp.hold(crew, (i + 1) % 2) {
                        return;
                    }
                }
                done.store(true, Ordering::SeqCst);
            });
            let r = s.spawn(move || {
                let _g = crew.enlist();
                let mut c = Counts::default();
                let mut seen = 0;
                crew.start_line(2);
                while !done.load(Ordering::SeqCst) && !crew.stopped() {
                    c.round();
                    let exact = cp.pending(&mut seen);
                    let a = ino_of(&reader, "/d/a");
                    let b = ino_of(&reader, "/d/b");
                    for (name, got) in [("a", a), ("b", b)] {
                        assert!(
                            got == Ok(ino) || got == Err(Errno::ENOENT),
                            "seed {seed}: stat /d/{name} gave {got:?}, want the file ({ino}) or ENOENT"
                        );
                    }
                    if let Some(at_b) = exact {
                        let want = if at_b == 1 {
                            (Err(Errno::ENOENT), Ok(ino))
                        } else {
                            (Ok(ino), Err(Errno::ENOENT))
                        };
                        assert_eq!((a, b), want, "seed {seed}: checkpoint, file at b: {at_b}");
                        c.exact += 1;
                        cp.ack();
                    }
                }
                c
            });
            join(w);
            join(r)
        });
        assert_eq!(
            ino_of(&setup, "/d/a"),
            Ok(ino),
            "seed {seed}: an even number of renames"
        );
        assert_eq!(ino_of(&setup, "/d/b"), Err(Errno::ENOENT));
        counts
    });
    println!("rename_moves_one_name: {counts:?}");
    assert_eq!(counts.exact, CHECKPOINTS, "exact checks");
    assert!(counts.rounds >= counts.exact, "racy checks run every round");
}

/// `RENAME_EXCHANGE` of two files `/d/a` and `/d/b`. POSIX (renameat2(2)): the exchange is
/// atomic, so both names exist at every moment and each names one of the two inodes; at each
/// checkpoint, exactly the pair the writer left.
#[test]
#[cfg_attr(
    any(loom, feature = "shuttle"),
    ignore = "skipped: uvfs built with loom/shuttle primitives, which work only inside a model"
)]
fn rename_exchange_keeps_both_names_under_stat() {
    const EXCHANGES: u64 = 30_000;
    const CHECKPOINTS: u64 = 300;
    let seed = seed();
    let counts = run(move |crew| {
        let vfs = Vfs::new();
        let setup = vfs.task(Cred::root());
        mkdir(&setup, "/d");
        let ia = create_file(&setup, "/d/a");
        let ib = create_file(&setup, "/d/b");
        // State: 1 if swapped.
        let cp = Checkpoints::new(2, 0u64);
        let done = AtomicBool::new(false);
        let counts = thread::scope(|s| {
            let writer = vfs.task(Cred::root());
            let (cp, done) = (&cp, &done);
            let w = s.spawn(move || {
                let _g = crew.enlist();
                if !crew.start_line(3) {
                    return;
                }
                for i in 0..EXCHANGES {
                    writer
                        .renameat2(AT_FDCWD, "/d/a", AT_FDCWD, "/d/b", RenameFlags::EXCHANGE)
                        .unwrap_or_else(|e| panic!("seed {seed}: exchange #{i}: {e:?}"));
                    if i.is_multiple_of(EXCHANGES / CHECKPOINTS) && !cp.hold(crew, (i + 1) % 2) {
                        return;
                    }
                }
                done.store(true, Ordering::SeqCst);
            });
            let readers: Vec<_> = [["/d/a", "/d/b"], ["/d/b", "/d/a"]]
                .into_iter()
                .map(|order| {
                    let t = vfs.task(Cred::root());
                    s.spawn(move || {
                        let _g = crew.enlist();
                        let mut c = Counts::default();
                        let mut seen = 0;
                        crew.start_line(3);
                        while !done.load(Ordering::SeqCst) && !crew.stopped() {
                            c.round();
                            let exact = cp.pending(&mut seen);
                            let x = ino_of(&t, order[0]);
                            let y = ino_of(&t, order[1]);
                            for (name, got) in [(order[0], x), (order[1], y)] {
                                assert!(
                                    got == Ok(ia) || got == Ok(ib),
                                    "seed {seed}: stat {name} gave {got:?} during exchanges, want {ia} or {ib}"
                                );
                            }
                            if let Some(swapped) = exact {
                                let (at_a, at_b) = if swapped == 1 { (ib, ia) } else { (ia, ib) };
                                let want = if order[0] == "/d/a" {
                                    (Ok(at_a), Ok(at_b))
                                } else {
                                    (Ok(at_b), Ok(at_a))
                                };
                                assert_eq!((x, y), want, "seed {seed}: checkpoint, swapped {swapped}");
                                c.exact += 1;
                                cp.ack();
                            }
                        }
                        c
                    })
                })
                .collect();
            join(w);
            readers.into_iter().map(join).collect::<Vec<_>>()
        });
        assert_eq!(
            (ino_of(&setup, "/d/a"), ino_of(&setup, "/d/b")),
            (Ok(ia), Ok(ib)),
            "seed {seed}: even exchange count"
        );
        counts
    });
    println!("rename_exchange: {counts:?}");
    for c in counts {
        assert_eq!(c.exact, CHECKPOINTS, "exact checks of each reader");
        assert!(c.rounds >= c.exact);
    }
}

/// One task creates `/u/f` (`O_CREAT|O_EXCL`), writes, unlinks and closes it, over and over;
/// another opens `/u/f`. POSIX (open(2), unlink(2)): every open fails with `ENOENT` or gives a
/// regular file that was created here; an unlinked open file keeps working, with `nlink` 0.
/// Checkpoints with the file present (the open must give exactly it) and absent (`ENOENT`).
#[test]
#[cfg_attr(
    any(loom, feature = "shuttle"),
    ignore = "skipped: uvfs built with loom/shuttle primitives, which work only inside a model"
)]
fn unlink_races_open_and_open_files_outlive_their_name() {
    const ROUNDS: u64 = 12_000;
    /// Rounds between two checkpoints (one with the file, one without).
    const HOLD_EVERY: u64 = 40;
    /// Opened fds the opener keeps until the end (the rest it closes at once).
    const KEEP: usize = 200;
    let seed = seed();
    let (creator_checks, c, kept_checks) = run(move |crew| {
        let vfs = Vfs::new();
        let setup = vfs.task(Cred::root());
        mkdir(&setup, "/u");
        // State: the inode now at /u/f, if any.
        let cp = Checkpoints::new(1, None::<u64>);
        let done = AtomicBool::new(false);
        let creator = vfs.task(Cred::root());
        let opener = vfs.task(Cred::root());
        let ((created, creator_checks), (opener, kept, c)) = thread::scope(|s| {
            let (cp, done) = (&cp, &done);
            let cr = s.spawn(move || {
                let _g = crew.enlist();
                let t = creator;
                let mut inos = HashSet::new();
                let mut checks = 0u64;
                if !crew.start_line(2) {
                    return (inos, checks);
                }
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
                    if i.is_multiple_of(HOLD_EVERY) && !cp.hold(crew, Some(st.ino)) {
                        break;
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
                    checks += 1;
                    if i.is_multiple_of(HOLD_EVERY) && !cp.hold(crew, None) {
                        break;
                    }
                }
                done.store(true, Ordering::SeqCst);
                (inos, checks)
            });
            let op = s.spawn(move || {
                let _g = crew.enlist();
                let t = opener;
                let mut kept = Vec::new();
                let mut c = Counts::default();
                let mut seen = 0;
                crew.start_line(2);
                while !done.load(Ordering::SeqCst) && !crew.stopped() {
                    c.round();
                    let exact = cp.pending(&mut seen);
                    let r = t.openat(AT_FDCWD, "/u/f", OpenFlags::RDWR, 0);
                    let got = match r {
                        Err(Errno::ENOENT) => None,
                        Err(e) => panic!("seed {seed}: open /u/f: {e:?}, want a file or ENOENT"),
                        Ok(fd) => {
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
                            Some(st.ino)
                        }
                    };
                    if let Some(want) = exact {
                        assert_eq!(got, want, "seed {seed}: open /u/f at a checkpoint");
                        c.exact += 1;
                        cp.ack();
                    }
                }
                (t, kept, c)
            });
            (join(cr), join(op))
        });
        // Every name is gone now: each kept fd is an unlinked file that still reads and writes.
        let mut kept_checks = 0u64;
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
            kept_checks += 1;
        }
        assert_eq!(ino_of(&setup, "/u/f"), Err(Errno::ENOENT));
        (creator_checks, c, kept_checks)
    });
    println!("unlink_races_open: creator rounds checked {creator_checks}, opener {c:?}, kept fds checked {kept_checks}");
    assert_eq!(creator_checks, ROUNDS, "creator rounds checked");
    assert_eq!(
        c.exact,
        2 * ROUNDS.div_ceil(HOLD_EVERY),
        "exact checks (present and absent)"
    );
    // The opener opened the file at every present checkpoint alone, more than it keeps.
    assert_eq!(kept_checks, KEEP as u64, "kept fds checked");
}

/// One task creates and unlinks `/u/f` over and over while two others open it with `O_CREAT`
/// (no `O_EXCL`). Linux: such an open either finds the name or creates it under the directory
/// lock, and opens the inode it found even if the name is unlinked right after, so it never
/// fails with `ENOENT` (`open_last_lookups()` and `lookup_open()` in fs/namei.c). At each
/// checkpoint (the creator stopped after an unlink) each opener's open creates the file, and
/// the name then leads to the inode it opened.
#[test]
#[cfg_attr(
    any(loom, feature = "shuttle"),
    ignore = "skipped: uvfs built with loom/shuttle primitives, which work only inside a model"
)]
fn open_creat_never_says_enoent_while_the_name_comes_and_goes() {
    const ROUNDS: u64 = 20_000;
    /// Rounds between two checkpoints.
    const HOLD_EVERY: u64 = 500;
    const OPENERS: u64 = 2;
    let seed = seed();
    let (churn_checks, counts) = run(move |crew| {
        let vfs = Vfs::new();
        let setup = vfs.task(Cred::root());
        mkdir(&setup, "/u");
        let cp = Checkpoints::new(OPENERS, ());
        let done = AtomicBool::new(false);
        let churner = vfs.task(Cred::root());
        let openers: Vec<Task> = (0..OPENERS).map(|_| vfs.task(Cred::root())).collect();
        thread::scope(|s| {
            let (cp, done) = (&cp, &done);
            let ch = s.spawn(move || {
                let _g = crew.enlist();
                let t = churner;
                let mut checks = 0u64;
                if !crew.start_line(1 + OPENERS) {
                    return checks;
                }
                for i in 0..ROUNDS {
                    let fd = t
                        .openat(AT_FDCWD, "/u/f", OpenFlags::CREAT | OpenFlags::RDWR, 0o600)
                        .unwrap_or_else(|e| panic!("seed {seed}: create #{i}: {e:?}"));
                    t.close(fd).expect("close");
                    // Only this task unlinks, and the name exists: the unlink must succeed.
                    t.unlinkat(AT_FDCWD, "/u/f", AtFlags::empty())
                        .unwrap_or_else(|e| panic!("seed {seed}: unlink #{i}: {e:?}"));
                    checks += 1;
                    if i.is_multiple_of(HOLD_EVERY) && !cp.hold(crew, ()) {
                        break;
                    }
                }
                done.store(true, Ordering::SeqCst);
                checks
            });
            let ops: Vec<_> = openers
                .into_iter()
                .map(|t| {
                    s.spawn(move || {
                        let _g = crew.enlist();
                        let mut c = Counts::default();
                        let mut seen = 0;
                        crew.start_line(1 + OPENERS);
                        while !done.load(Ordering::SeqCst) && !crew.stopped() {
                            c.round();
                            let exact = cp.pending(&mut seen).is_some();
                            let fd = t
                                .openat(AT_FDCWD, "/u/f", OpenFlags::CREAT | OpenFlags::RDWR, 0o600)
                                .unwrap_or_else(|e| {
                                    panic!("seed {seed}: open(O_CREAT) of /u/f: {e:?}, want a file")
                                });
                            let st = t.fstat(fd).expect("fstat of an open file");
                            assert_eq!(
                                st.file_type(),
                                Some(FileType::Regular),
                                "seed {seed}: {st:?}"
                            );
                            assert!(st.nlink <= 1, "seed {seed}: nlink {}", st.nlink);
                            if exact {
                                // The creator is stopped: the name is the file just opened
                                // (this opener's or the other's, both made it at this point).
                                assert_eq!(
                                    ino_of(&t, "/u/f"),
                                    Ok(st.ino),
                                    "seed {seed}: /u/f at a checkpoint"
                                );
                                c.exact += 1;
                            }
                            t.close(fd).expect("close");
                            if exact {
                                cp.ack();
                            }
                        }
                        c
                    })
                })
                .collect();
            (join(ch), ops.into_iter().map(join).collect::<Vec<_>>())
        })
    });
    println!("open_creat_never_says_enoent: churner rounds {churn_checks}, openers {counts:?}");
    assert_eq!(churn_checks, ROUNDS, "churner rounds checked");
    for c in &counts {
        assert_eq!(
            c.exact,
            ROUNDS.div_ceil(HOLD_EVERY),
            "exact checks of each opener"
        );
        assert!(c.rounds >= c.exact, "racy checks run every round");
    }
}

/// Three tasks create, in a seeded shuffled order, files of their own and the same shared
/// names in one directory with `O_CREAT|O_EXCL`. POSIX (open(2)): exactly one creator of each
/// shared name succeeds and the others get `EEXIST`; the directory then lists every name once.
#[test]
#[cfg_attr(
    any(loom, feature = "shuttle"),
    ignore = "skipped: uvfs built with loom/shuttle primitives, which work only inside a model"
)]
fn create_storm_has_one_winner_per_name_and_lists_each_once() {
    const THREADS: u64 = 3;
    const OWN: u64 = 400;
    const SHARED: u64 = 400;
    let seed = seed();
    let (outcomes, listed) = run(move |crew| {
        let vfs = Vfs::new();
        let setup = vfs.task(Cred::root());
        mkdir(&setup, "/c");
        let wins: Vec<(Vec<String>, u64)> = thread::scope(|s| {
            let handles: Vec<_> = (0..THREADS)
                .map(|tid| {
                    let t = vfs.task(Cred::root());
                    s.spawn(move || {
                        let _g = crew.enlist();
                        let mut names: Vec<String> =
                            (0..OWN).map(|j| format!("t{tid}-{j}")).collect();
                        names.extend((0..SHARED).map(|j| format!("s{j}")));
                        Rng::new(seed ^ tid).shuffle(&mut names);
                        let mut won = Vec::new();
                        let mut outcomes = 0u64;
                        if !crew.start_line(THREADS) {
                            return (won, outcomes);
                        }
                        for name in names {
                            if crew.stopped() {
                                break;
                            }
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
                            outcomes += 1;
                        }
                        (won, outcomes)
                    })
                })
                .collect();
            handles.into_iter().map(join).collect()
        });
        let mut winners: BTreeMap<&str, u64> = BTreeMap::new();
        let mut outcomes = 0;
        for (tid, (won, n)) in wins.iter().enumerate() {
            outcomes += n;
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
        (outcomes, listed.len() as u64)
    });
    println!("create_storm: {outcomes} create outcomes checked, {listed} names listed");
    assert_eq!(
        outcomes,
        THREADS * (OWN + SHARED),
        "every create's outcome checked"
    );
    assert_eq!(listed, THREADS * OWN + SHARED + 2, "listing checked");
}

/// A lister reads a directory with a small buffer (several `getdents64` calls per listing)
/// while another task creates and unlinks other names, never reusing one. POSIX (readdir(3)):
/// whether a name added or removed during the listing appears is unspecified, but no entry is
/// returned twice and every name present for the whole listing is returned; at a checkpoint,
/// the listing is exactly the names present.
#[test]
#[cfg_attr(
    any(loom, feature = "shuttle"),
    ignore = "skipped: uvfs built with loom/shuttle primitives, which work only inside a model"
)]
fn getdents_during_churn_returns_stable_names_once() {
    const STABLE: u64 = 48;
    const CHURN: u64 = 15_000;
    const CHECKPOINTS: u64 = 100;
    let seed = seed();
    let c = run(move |crew| {
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
        // State: the churned names present.
        let cp = Checkpoints::new(1, BTreeSet::<Vec<u8>>::new());
        let done = AtomicBool::new(false);
        let churner = vfs.task(Cred::root());
        let lister = vfs.task(Cred::root());
        thread::scope(|s| {
            let (cp, done, stable) = (&cp, &done, &stable);
            let w = s.spawn(move || {
                let _g = crew.enlist();
                let t = churner;
                let mut rng = Rng::new(seed);
                let mut live: Vec<u64> = Vec::new();
                if !crew.start_line(2) {
                    return;
                }
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
                    if i.is_multiple_of(CHURN / CHECKPOINTS) {
                        let names = live
                            .iter()
                            .map(|k| format!("tmp-{k}").into_bytes())
                            .collect();
                        if !cp.hold(crew, names) {
                            return;
                        }
                    }
                }
                done.store(true, Ordering::SeqCst);
            });
            let l = s.spawn(move || {
                let _g = crew.enlist();
                let t = lister;
                let mut c = Counts::default();
                let mut seen_epoch = 0;
                crew.start_line(2);
                while !done.load(Ordering::SeqCst) && !crew.stopped() {
                    c.round();
                    let exact = cp.pending(&mut seen_epoch);
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
                    for k in stable {
                        assert!(
                            seen.contains(k.as_slice()),
                            "seed {seed}: stable {} missing",
                            String::from_utf8_lossy(k)
                        );
                    }
                    if let Some(live) = exact {
                        let mut want: BTreeSet<&[u8]> =
                            stable.iter().chain(&live).map(|n| n.as_slice()).collect();
                        want.insert(b".");
                        want.insert(b"..");
                        let got: BTreeSet<&[u8]> = seen.into_iter().collect();
                        assert_eq!(got, want, "seed {seed}: listing at a checkpoint");
                        c.exact += 1;
                        cp.ack();
                    }
                }
                c
            });
            join(w);
            join(l)
        })
    });
    println!("getdents_during_churn: {c:?}");
    assert_eq!(c.exact, CHECKPOINTS, "exact listings");
    assert!(c.rounds >= c.exact);
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
/// intermediate directory (`c2`) away and back. Every rename removes cached entries the
/// readers' lock-free walks use, forcing the locked fallback. POSIX: a stat returns `ENOENT` or
/// one of the inodes the path can name; at a checkpoint, exactly the one it names.
#[test]
#[cfg_attr(
    any(loom, feature = "shuttle"),
    ignore = "skipped: uvfs built with loom/shuttle primitives, which work only inside a model"
)]
fn lookup_fast_path_survives_renames_of_intermediate_directories() {
    const OPS: u64 = 30_000;
    const CHECKPOINTS: u64 = 300;
    let seed = seed();
    let counts = run(move |crew| {
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
        fn expected(
            state: u64,
            left: bool,
            deep: bool,
            inos: &[(u64, u64); 2],
        ) -> Result<u64, Errno> {
            if (left && state & L_HIDDEN != 0) || (!left && state & R_AWAY != 0) {
                return Err(Errno::ENOENT);
            }
            let side = usize::from(left == (state & SWAPPED != 0));
            Ok(if deep { inos[side].1 } else { inos[side].0 })
        }
        let cp = Checkpoints::new(2, 0u64);
        let done = AtomicBool::new(false);
        let counts = thread::scope(|s| {
            let writer = vfs.task(Cred::root());
            let (cp, done, inos) = (&cp, &done, &inos);
            let w = s.spawn(move || {
                let _g = crew.enlist();
                let t = writer;
                let mut rng = Rng::new(seed);
                let mut state = 0u64;
                let mut ops = 0u64;
                let mut rename = |from: &str, to: &str, flags: RenameFlags, next: u64| -> bool {
                    t.renameat2(AT_FDCWD, from, AT_FDCWD, to, flags)
                        .unwrap_or_else(|e| {
                            panic!("seed {seed}: rename {from} -> {to} in state {state}: {e:?}")
                        });
                    state = next;
                    ops += 1;
                    if ops.is_multiple_of(OPS / CHECKPOINTS) {
                        cp.hold(crew, state)
                    } else {
                        true
                    }
                };
                if !crew.start_line(3) {
                    return;
                }
                for _ in 0..OPS / 2 {
                    let ok = match rng.below(3) {
                        0 => {
                            rename("/s/L", "/s/R", RenameFlags::EXCHANGE, SWAPPED)
                                && rename("/s/L", "/s/R", RenameFlags::EXCHANGE, 0)
                        }
                        1 => {
                            rename("/s/L/c1/c2", "/s/L/c1/h2", RenameFlags::NOREPLACE, L_HIDDEN)
                                && rename("/s/L/c1/h2", "/s/L/c1/c2", RenameFlags::empty(), 0)
                        }
                        _ => {
                            rename("/s/R", "/s/T", RenameFlags::empty(), R_AWAY)
                                && rename("/s/T", "/s/R", RenameFlags::NOREPLACE, 0)
                        }
                    };
                    if !ok {
                        return;
                    }
                }
                done.store(true, Ordering::SeqCst);
            });
            let readers: Vec<_> = [[DEEP_L, MID_R], [MID_L, DEEP_R]]
                .into_iter()
                .enumerate()
                .map(|(id, paths)| {
                    let t = if id == 0 {
                        vfs.task(Cred::root())
                    } else {
                        setup.clone_thread()
                    };
                    s.spawn(move || {
                        let _g = crew.enlist();
                        let mut c = Counts::default();
                        let mut seen = 0;
                        crew.start_line(3);
                        while !done.load(Ordering::SeqCst) && !crew.stopped() {
                            c.round();
                            let exact = cp.pending(&mut seen);
                            let got: Vec<_> = paths.iter().map(|p| ino_of(&t, p)).collect();
                            for (p, g) in paths.iter().zip(&got) {
                                let deep = p.ends_with("/f");
                                let ok = match g {
                                    Err(e) => *e == Errno::ENOENT,
                                    Ok(i) => [0, 1]
                                        .iter()
                                        .any(|&s| *i == if deep { inos[s].1 } else { inos[s].0 }),
                                };
                                assert!(ok, "seed {seed}: stat {p} gave {g:?}, inodes {inos:?}");
                                if let Some(state) = exact {
                                    let want = expected(state, p.starts_with("/s/L"), deep, inos);
                                    assert_eq!(
                                        *g, want,
                                        "seed {seed}: stat {p} at a checkpoint, state {state}"
                                    );
                                }
                            }
                            if exact.is_some() {
                                c.exact += 1;
                                cp.ack();
                            }
                        }
                        c
                    })
                })
                .collect();
            join(w);
            readers.into_iter().map(join).collect::<Vec<_>>()
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
        counts
    });
    println!("lookup_fast_path_survives_renames: {counts:?}");
    for c in counts {
        assert_eq!(c.exact, CHECKPOINTS, "exact checks of each reader");
        assert!(c.rounds >= c.exact);
    }
}

/// The names of the locked-lookup stress test.
const FROM: &str = "/l/a";
const TO: &str = "/l/b";

/// One task, round after round, creates `/l/a` (`O_CREAT|O_EXCL`), renames it to `/l/b` and
/// unlinks `/l/b`, while two others stat both names. A rename or unlink leaves its old name
/// uncached, so the lookers' stats of it go through the locked lookup (`lookup_slow`), which
/// asks the filesystem and caches the answer. POSIX (rename(2), unlink(2), open(2)): once the
/// call has returned, the old name is gone for everyone, so the writer's own stat of it says
/// `ENOENT` and its next exclusive create succeeds. The lookers check that a stat gives the
/// writer's file or `ENOENT`.
///
/// What this guards: `lookup_slow` holds the directory's inode lock shared from asking the
/// filesystem to caching its answer. Without it, a lookup that asked before a rename or
/// unlink can cache what it found after the change removed the name from the cache: a stale
/// entry that outlives the change (stat finds a removed file; an exclusive create or a
/// `RENAME_NOREPLACE` fails with `EEXIST`). Every writer round checks, so such an entry is
/// reported in the round it appears.
#[test]
#[cfg_attr(
    any(loom, feature = "shuttle"),
    ignore = "skipped: uvfs built with loom/shuttle primitives, which work only inside a model"
)]
fn renamed_or_unlinked_names_stay_gone_for_racing_lookups() {
    const ROUNDS: u64 = 20_000;
    const LOOKERS: u64 = 2;
    /// Checks per writer round: create, stat of the old name after the rename, rename's target
    /// found, stat after the unlink.
    const CHECKS_PER_ROUND: u64 = 4;
    let seed = seed();
    let (writer_checks, looker_rounds) = run(move |crew| {
        let vfs = Vfs::new();
        let setup = vfs.task(Cred::root());
        mkdir(&setup, "/l");
        let done = AtomicBool::new(false);
        thread::scope(|s| {
            let writer = vfs.task(Cred::root());
            let done = &done;
            let w = s.spawn(move || {
                let _g = crew.enlist();
                let t = writer;
                let mut checks = 0u64;
                if !crew.start_line(1 + LOOKERS) {
                    return checks;
                }
                for i in 0..ROUNDS {
                    if crew.stopped() {
                        break;
                    }
                    let fd = t
                        .openat(AT_FDCWD, FROM, OpenFlags::CREAT | OpenFlags::EXCL | OpenFlags::WRONLY, 0o644)
                        .unwrap_or_else(|e| panic!("seed {seed}: round {i}: exclusive create of {FROM}, gone since the last round: {e:?}"));
                    let ino = t.fstat(fd).expect("fstat").ino;
                    t.close(fd).expect("close");
                    t.renameat2(AT_FDCWD, FROM, AT_FDCWD, TO, RenameFlags::NOREPLACE)
                        .unwrap_or_else(|e| panic!("seed {seed}: round {i}: rename {FROM} -> {TO} (gone since the last round): {e:?}"));
                    assert_eq!(ino_of(&t, FROM), Err(Errno::ENOENT), "seed {seed}: round {i}: stat {FROM} after its rename returned");
                    assert_eq!(ino_of(&t, TO), Ok(ino), "seed {seed}: round {i}: stat {TO} after the rename");
                    t.unlinkat(AT_FDCWD, TO, AtFlags::empty())
                        .unwrap_or_else(|e| panic!("seed {seed}: round {i}: unlink {TO}: {e:?}"));
                    assert_eq!(ino_of(&t, TO), Err(Errno::ENOENT), "seed {seed}: round {i}: stat {TO} after its unlink returned");
                    checks += CHECKS_PER_ROUND;
                }
                done.store(true, Ordering::SeqCst);
                checks
            });
            let lookers: Vec<_> = (0..LOOKERS)
                .map(|k| {
                    let t = vfs.task(Cred::root());
                    s.spawn(move || {
                        let _g = crew.enlist();
                        let mut c = Counts::default();
                        crew.start_line(1 + LOOKERS);
                        while !done.load(Ordering::SeqCst) && !crew.stopped() {
                            c.round();
                            let path = if (c.rounds + k) % 2 == 0 { FROM } else { TO };
                            match t.stat(path) {
                                Err(Errno::ENOENT) => {}
                                Ok(st) => assert_eq!(
                                    st.file_type(),
                                    Some(FileType::Regular),
                                    "seed {seed}: {path}: {st:?}"
                                ),
                                Err(e) => panic!("seed {seed}: stat {path}: {e:?}"),
                            }
                        }
                        c.rounds
                    })
                })
                .collect();
            let checks = join(w);
            (checks, lookers.into_iter().map(join).sum::<u64>())
        })
    });
    println!("renamed_or_unlinked_names_stay_gone: writer checks {writer_checks}, looker rounds (each a racy check) {looker_rounds}");
    assert_eq!(writer_checks, CHECKS_PER_ROUND * ROUNDS, "writer checks");
    assert!(looker_rounds > 0, "the lookers ran");
}
