//! Seeded, bounded concurrency tests of creates, unlinks, renames and listings at once in one
//! directory: whatever locks they take, each must look atomic to the others. The rules are
//! those of `tests/concurrency.rs` (the same harness): every check counted and every count
//! asserted, no sleeps, every loop bounded, a panic on any thread fails the test, a hang is
//! declared after a deadline; seed `UVFS_STRESS_SEED`.
//!
//! Oracle: Linux, where a create or unlink holds the directory's `i_rwsem` exclusive, so that
//! each one is atomic to every other call on the directory; uvfs must look the same from
//! outside.

#[path = "concurrency/harness.rs"]
#[allow(dead_code)]
// Reason: the harness is shared with tests/concurrency.rs, which uses all of it.
mod harness;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;

use harness::*;
use uvfs::abi::{AtFlags, Dirent, Errno, OpenFlags, Timespec, AT_FDCWD};
use uvfs::vfs::WalkMode;
use uvfs::{Cred, Task, Vfs};

/// Names the churn threads share: few, so that they meet on one name often.
const NAMES: usize = 6;

/// What `stat` says of `path`: its mtime, or `None` for ENOENT; any other answer fails.
fn mtime_or_gone(t: &Task, path: &str, seed: u64) -> Option<Timespec> {
    match t.stat(path) {
        Ok(st) => Some(st.mtime),
        Err(Errno::ENOENT) => None,
        Err(e) => panic!("seed {seed}: stat {path}: {e:?}"),
    }
}

/// Two tasks create (`O_CREAT|O_EXCL`) and unlink names of one directory, drawn from a set of
/// [`NAMES`], each counting per name the creates and unlinks that succeeded; a third looks the
/// names up, half the time through the locked lookup (`WalkMode::Ref`), and watches the
/// directory's mtime. Linux (each create and unlink atomic under the directory's lock): a
/// create says done or EEXIST, an unlink done or ENOENT, so per name the successes alternate
/// and at the end a name exists exactly when its creates outnumber its unlinks (by one); a
/// lookup says found or ENOENT; the directory's mtime never goes back; with every name
/// removed, the directory is as it began and every inode is given back.
#[test]
fn creates_and_unlinks_in_one_directory_exclude_each_other_per_name() {
    const ROUNDS: u64 = 20_000;
    let seed = seed();
    let (tries, done_ops, looks) = run(move |crew| {
        let vfs = Vfs::new();
        let setup = vfs.task(Cred::root());
        setup.mkdirat(AT_FDCWD, "/d", 0o755).expect("mkdir /d");
        let free_before = setup.statfs("/").expect("statfs").ffree;
        let st_before = setup.stat("/d").expect("stat /d");
        let made: [AtomicU64; NAMES] = Default::default();
        let removed: [AtomicU64; NAMES] = Default::default();
        let finished = AtomicU64::new(0);
        let (made, removed, finished) = (&made, &removed, &finished);
        let churners = [vfs.task(Cred::root()), vfs.task(Cred::root())];
        let looker = vfs.task(Cred::root());
        let (tries, looks) = thread::scope(|s| {
            let hs: Vec<_> = churners
                .into_iter()
                .enumerate()
                .map(|(i, t)| {
                    s.spawn(move || {
                        let _g = crew.enlist();
                        let mut rng = Rng::new(seed ^ (i as u64 + 1));
                        let mut tries = 0u64;
                        if crew.start_line(3) {
                            while tries < ROUNDS && !crew.stopped() {
                                let k = rng.below(NAMES as u64) as usize;
                                let path = format!("/d/n{k}");
                                if rng.below(2) == 0 {
                                    let flags =
                                        OpenFlags::CREAT | OpenFlags::EXCL | OpenFlags::WRONLY;
                                    match t.openat(AT_FDCWD, &path, flags, 0o644) {
                                        Ok(fd) => {
                                            made[k].fetch_add(1, Ordering::Relaxed);
                                            t.close(fd).expect("close");
                                        }
                                        Err(Errno::EEXIST) => {}
                                        Err(e) => panic!("seed {seed}: create {path}: {e:?}"),
                                    }
                                } else {
                                    match t.unlinkat(AT_FDCWD, &path, AtFlags::empty()) {
                                        Ok(()) => {
                                            removed[k].fetch_add(1, Ordering::Relaxed);
                                        }
                                        Err(Errno::ENOENT) => {}
                                        Err(e) => panic!("seed {seed}: unlink {path}: {e:?}"),
                                    }
                                }
                                tries += 1;
                            }
                        }
                        finished.fetch_add(1, Ordering::AcqRel);
                        tries
                    })
                })
                .collect();
            let l = s.spawn(move || {
                let _g = crew.enlist();
                let mut rng = Rng::new(seed ^ 0x100);
                let mut looks = 0u64;
                let mut last = None::<Timespec>;
                if !crew.start_line(3) {
                    return looks;
                }
                while finished.load(Ordering::Acquire) < 2
                    && looks < MAX_READER_ROUNDS
                    && !crew.stopped()
                {
                    looker.set_walk_mode(if rng.below(2) == 0 {
                        WalkMode::Ref
                    } else {
                        WalkMode::Rcu
                    });
                    let k = rng.below(NAMES as u64);
                    mtime_or_gone(&looker, &format!("/d/n{k}"), seed);
                    let m = mtime_or_gone(&looker, "/d", seed).expect("/d is there");
                    if let Some(prev) = last {
                        assert!(
                            m >= prev,
                            "seed {seed}: /d's mtime went back: {prev:?} then {m:?}"
                        );
                    }
                    last = Some(m);
                    looks += 1;
                }
                looks
            });
            let tries: u64 = hs.into_iter().map(join).sum();
            (tries, join(l))
        });
        // Quiet now. Per name, the successes alternated: the name exists exactly when one
        // more create than unlink succeeded.
        let mut done_ops = 0;
        for k in 0..NAMES {
            let path = format!("/d/n{k}");
            let (m, r) = (
                made[k].load(Ordering::Relaxed),
                removed[k].load(Ordering::Relaxed),
            );
            let exists = mtime_or_gone(&setup, &path, seed).is_some();
            assert_eq!(
                m,
                r + u64::from(exists),
                "seed {seed}: {path}: {m} creates and {r} unlinks succeeded, and it {}",
                if exists { "exists" } else { "does not exist" }
            );
            if exists {
                setup
                    .unlinkat(AT_FDCWD, &path, AtFlags::empty())
                    .expect("unlink");
            }
            done_ops += m + r;
        }
        // With every name removed, the directory is as it began, and every inode was given
        // back.
        let fd = setup
            .openat(AT_FDCWD, "/d", OpenFlags::RDONLY | OpenFlags::DIRECTORY, 0)
            .expect("open /d");
        let mut buf = vec![0u8; 4096];
        let n = setup.getdents64(fd, &mut buf).expect("getdents64");
        let names: Vec<Vec<u8>> = Dirent::parse(&buf[..n])
            .into_iter()
            .map(|d| d.name)
            .collect();
        assert_eq!(
            names,
            [b".".to_vec(), b"..".to_vec()],
            "seed {seed}: /d is empty again"
        );
        setup.close(fd).expect("close");
        let st = setup.stat("/d").expect("stat /d");
        assert_eq!(
            (st.nlink, st.size),
            (st_before.nlink, st_before.size),
            "seed {seed}"
        );
        assert_eq!(
            setup.statfs("/").expect("statfs").ffree,
            free_before,
            "seed {seed}"
        );
        (tries, done_ops, looks)
    });
    // Each churner made exactly ROUNDS attempts.
    assert_eq!(tries, 2 * ROUNDS, "seed {seed}: every attempt counted");
    assert!(
        done_ops > 0,
        "seed {seed}: some creates and unlinks succeeded"
    );
    assert!(looks > 0, "seed {seed}: the looker looked");
}

/// One task makes `a0`, then, round by round, `a{i+1}` and unlinks `a{i}`: each name is made
/// once and removed once, in order. Another lists the directory in one `getdents64` call
/// and then stats names; a third stats the next names before they exist, caching negative
/// entries. Linux: a listing runs under the directory's lock, which a create or unlink holds
/// exclusive, so it sees each one whole, and a `stat` after it agrees: a listed name is found
/// unless its unlink came later, and an older name the listing lacks is gone.
#[test]
fn a_listing_sees_each_create_and_unlink_whole() {
    const LISTINGS: u64 = 20_000;
    const MAX_ROUNDS: u64 = 20_000_000;
    let seed = seed();
    let (checks, listings) = run(move |crew| {
        let vfs = Vfs::new();
        let setup = vfs.task(Cred::root());
        setup.mkdirat(AT_FDCWD, "/d", 0o755).expect("mkdir /d");
        let (writer, lister, peeker) = (
            vfs.task(Cred::root()),
            vfs.task(Cred::root()),
            vfs.task(Cred::root()),
        );
        // `unlinking`: the unlinks of a0..a{unlinking} have begun; `made`: a0..a{made} were made.
        let (unlinking, made, listed) =
            (AtomicU64::new(0), AtomicU64::new(0), AtomicBool::new(false));
        let (unlinking, made, listed) = (&unlinking, &made, &listed);
        let create = move |t: &Task, i: u64| {
            let fd = t
                .openat(
                    AT_FDCWD,
                    format!("/d/a{i}"),
                    OpenFlags::CREAT | OpenFlags::EXCL,
                    0o644,
                )
                .unwrap_or_else(|e| panic!("seed {seed}: create a{i}: {e:?}"));
            t.close(fd).expect("close");
        };
        create(&writer, 0);
        made.store(1, Ordering::Release);
        thread::scope(|s| {
            s.spawn(move || {
                let _g = crew.enlist();
                if !crew.start_line(3) {
                    return;
                }
                let mut i = 0;
                while !listed.load(Ordering::Acquire) && i < MAX_ROUNDS && !crew.stopped() {
                    create(&writer, i + 1);
                    made.store(i + 2, Ordering::Release);
                    // Published before the call: from here on a{i} may be gone.
                    unlinking.store(i + 1, Ordering::Release);
                    writer
                        .unlinkat(AT_FDCWD, format!("/d/a{i}"), AtFlags::empty())
                        .unwrap_or_else(|e| panic!("seed {seed}: unlink a{i}: {e:?}"));
                    i += 1;
                }
            });
            s.spawn(move || {
                let _g = crew.enlist();
                if !crew.start_line(3) {
                    return;
                }
                while !listed.load(Ordering::Acquire) && !crew.stopped() {
                    let next = made.load(Ordering::Acquire);
                    for j in next..next + 2 {
                        mtime_or_gone(&peeker, &format!("/d/a{j}"), seed);
                    }
                }
            });
            let l = s.spawn(move || {
                let _g = crew.enlist();
                let (mut checks, mut listings) = (0u64, 0u64);
                if !crew.start_line(3) {
                    return (checks, listings);
                }
                let fd = lister
                    .openat(AT_FDCWD, "/d", OpenFlags::RDONLY | OpenFlags::DIRECTORY, 0)
                    .expect("open /d");
                let mut buf = vec![0u8; 4096];
                while listings < LISTINGS && !crew.stopped() {
                    lister.lseek(fd, 0, uvfs::abi::Whence::SET).expect("rewind");
                    let n = lister.getdents64(fd, &mut buf).expect("getdents64");
                    let listed_names: Vec<u64> = Dirent::parse(&buf[..n])
                        .iter()
                        .filter_map(|d| {
                            std::str::from_utf8(d.name.strip_prefix(b"a")?)
                                .ok()?
                                .parse()
                                .ok()
                        })
                        .collect();
                    listings += 1;
                    let Some(&top) = listed_names.iter().max() else {
                        panic!("seed {seed}: a listing with no name: one is always there");
                    };
                    // Names below the listing's oldest were made and removed long ago: the
                    // two before it are checked.
                    let oldest = listed_names.iter().copied().min().unwrap_or(top);
                    for j in oldest.saturating_sub(2)..=top {
                        let found = mtime_or_gone(&lister, &format!("/d/a{j}"), seed).is_some();
                        let gone_by_now = unlinking.load(Ordering::Acquire) > j;
                        if listed_names.contains(&j) {
                            assert!(
                                found || gone_by_now,
                                "seed {seed}: a{j} was listed, a stat after the listing missed it, \
                                 and its unlink had not begun"
                            );
                        } else {
                            assert!(
                                !found,
                                "seed {seed}: a{j} is older than the listed a{top}, the listing \
                                 lacked it, and a stat after the listing found it"
                            );
                        }
                        checks += 1;
                    }
                }
                listed.store(true, Ordering::Release);
                lister.close(fd).expect("close");
                (checks, listings)
            });
            join(l)
        })
    });
    assert_eq!(listings, LISTINGS, "seed {seed}: every listing ran");
    assert!(
        checks >= LISTINGS,
        "seed {seed}: each listing checked a name ({checks})"
    );
}

/// The names a listing in [`a_listing_never_sees_half_a_rename`] found, with their inodes.
fn listed(t: &Task, fd: i32, buf: &mut [u8]) -> Vec<(Vec<u8>, u64)> {
    t.lseek(fd, 0, uvfs::abi::Whence::SET).expect("rewind");
    let n = t.getdents64(fd, buf).expect("getdents64");
    Dirent::parse(&buf[..n])
        .into_iter()
        .filter(|d| d.name != b"." && d.name != b"..")
        .map(|d| (d.name, d.ino))
        .collect()
}

/// One task swaps `x` and `y` (`RENAME_EXCHANGE`) and another moves `m` to `n` and back, over
/// and over; a third lists the directory in one `getdents64` call per listing. A rename
/// changes two entries (tmpfs: an exchange puts each inode under the other name one entry at
/// a time, a move takes the new place and then drops the old): Linux's listing runs under the
/// directory's lock, which a rename holds exclusive, so every listing shows `x` and `y` on the
/// two inodes, one each, and exactly one of `m` and `n`, on its inode, never half a rename.
/// (Creates and unlinks change one entry each, so `a_listing_sees_each_create_and_unlink_whole`
/// cannot tell whether the listing takes the lock; this test can.) The lister goes on until
/// it has made its listings and each renamer has made [`RENAMES`] renames, so the three
/// overlap even when the machine runs one thread at a time for a while.
#[test]
fn a_listing_never_sees_half_a_rename() {
    use uvfs::abi::RenameFlags;
    /// Renames each renamer makes at least while the lister lists.
    const RENAMES: u64 = 50_000;
    const LISTINGS: u64 = 50_000;
    let seed = seed();
    let (checks, renames) = run(move |crew| {
        let vfs = Vfs::new();
        let setup = vfs.task(Cred::root());
        setup.mkdirat(AT_FDCWD, "/d", 0o755).expect("mkdir /d");
        let ino = |name: &str| {
            let fd = setup
                .openat(AT_FDCWD, name, OpenFlags::CREAT | OpenFlags::EXCL, 0o644)
                .expect("create");
            setup.close(fd).expect("close");
            setup.stat(name).expect("stat").ino
        };
        let (x, y, m) = (ino("/d/x"), ino("/d/y"), ino("/d/m"));
        let (swapper, mover, lister) = (
            vfs.task(Cred::root()),
            vfs.task(Cred::root()),
            vfs.task(Cred::root()),
        );
        let done = AtomicBool::new(false);
        let counts = [AtomicU64::new(0), AtomicU64::new(0)];
        let (done, counts) = (&done, &counts);
        thread::scope(|s| {
            s.spawn(move || {
                let _g = crew.enlist();
                if !crew.start_line(3) {
                    return;
                }
                let mut rounds = 0;
                while !done.load(Ordering::Acquire) && rounds < MAX_READER_ROUNDS && !crew.stopped()
                {
                    swapper
                        .renameat2(AT_FDCWD, "/d/x", AT_FDCWD, "/d/y", RenameFlags::EXCHANGE)
                        .unwrap_or_else(|e| panic!("seed {seed}: exchange: {e:?}"));
                    rounds += 1;
                    counts[0].store(rounds, Ordering::Release);
                }
            });
            s.spawn(move || {
                let _g = crew.enlist();
                if !crew.start_line(3) {
                    return;
                }
                let mut rounds = 0;
                while !done.load(Ordering::Acquire) && rounds < MAX_READER_ROUNDS && !crew.stopped()
                {
                    let (from, to) = if rounds % 2 == 0 {
                        ("/d/m", "/d/n")
                    } else {
                        ("/d/n", "/d/m")
                    };
                    mover
                        .renameat2(AT_FDCWD, from, AT_FDCWD, to, RenameFlags::empty())
                        .unwrap_or_else(|e| panic!("seed {seed}: rename {from}: {e:?}"));
                    rounds += 1;
                    counts[1].store(rounds, Ordering::Release);
                }
            });
            let l = s.spawn(move || {
                let _g = crew.enlist();
                let mut checks = 0u64;
                if !crew.start_line(3) {
                    return checks;
                }
                let fd = lister
                    .openat(AT_FDCWD, "/d", OpenFlags::RDONLY | OpenFlags::DIRECTORY, 0)
                    .expect("open /d");
                let mut buf = vec![0u8; 4096];
                let more = |checks: u64| {
                    checks < LISTINGS || counts.iter().any(|c| c.load(Ordering::Acquire) < RENAMES)
                };
                while more(checks) && checks < MAX_READER_ROUNDS && !crew.stopped() {
                    let mut names = listed(&lister, fd, &mut buf);
                    names.sort();
                    let of = |n: &[u8]| names.iter().find(|(k, _)| k == n).map(|&(_, i)| i);
                    let (lx, ly) = (of(b"x"), of(b"y"));
                    assert!(
                        (lx, ly) == (Some(x), Some(y)) || (lx, ly) == (Some(y), Some(x)),
                        "seed {seed}: x and y listed on {lx:?} and {ly:?}, not on {x} and {y} \
                         one each: half an exchange ({names:?})"
                    );
                    let moved: Vec<_> = names
                        .iter()
                        .filter(|(k, _)| k == b"m" || k == b"n")
                        .collect();
                    assert!(
                        moved.len() == 1 && moved[0].1 == m,
                        "seed {seed}: m and n listed as {moved:?}, not one of them on {m}: half a \
                         move"
                    );
                    assert_eq!(
                        names.len(),
                        3,
                        "seed {seed}: only x, y and m or n: {names:?}"
                    );
                    checks += 1;
                }
                done.store(true, Ordering::Release);
                lister.close(fd).expect("close");
                checks
            });
            let checks = join(l);
            (checks, counts.each_ref().map(|c| c.load(Ordering::Acquire)))
        })
    });
    assert!(
        checks >= LISTINGS,
        "seed {seed}: every listing checked ({checks})"
    );
    assert!(
        renames.iter().all(|&r| r >= RENAMES),
        "seed {seed}: each renamer renamed while the listings ran ({renames:?})"
    );
}

/// One task makes `/d/s` and renames it over the directory `/d/t`, over and over (done when
/// `t` was empty, ENOTEMPTY otherwise, and then it removes `s`); another creates `/d/t/f`
/// (`O_CREAT|O_EXCL`) and, when that succeeds, unlinks it. Linux: a rename that replaces a
/// directory holds the victim's lock (`vfs_rename()` locks a replaced directory target) from
/// its emptiness test until the victim is dead, and a create holds the directory's lock from
/// its dead-directory test (ENOENT, `lookup_open()`) to the new entry, so a create lands
/// either in a `t` that no rename will replace while `f` is in it, or not at all: every
/// unlink of a made `f` succeeds, and at the end `/d` holds `t` alone, empty, with every inode
/// given back. (Without that lock, `f` could be made in a `t` the rename found empty a moment
/// before and then killed: the unlink would find no `f`, and `f`'s inode would be lost in a
/// dead directory.)
#[test]
fn a_directory_replaced_by_rename_takes_no_create_after_its_emptiness_test() {
    use uvfs::abi::RenameFlags;
    /// Renames the renamer tries; the creator goes on until the renamer is done.
    const RENAMES: u64 = 100_000;
    let seed = seed();
    let (tries, replaced, refused, unlinks) = run(move |crew| {
        let vfs = Vfs::new();
        let setup = vfs.task(Cred::root());
        setup.mkdirat(AT_FDCWD, "/d", 0o755).expect("mkdir /d");
        setup.mkdirat(AT_FDCWD, "/d/t", 0o755).expect("mkdir /d/t");
        let free_before = setup.statfs("/").expect("statfs").ffree;
        let (renamer, creator) = (vfs.task(Cred::root()), vfs.task(Cred::root()));
        let done = AtomicBool::new(false);
        let done = &done;
        let (tries, replaced, refused, unlinks) = thread::scope(|s| {
            let r = s.spawn(move || {
                let _g = crew.enlist();
                let (mut tries, mut replaced, mut refused) = (0u64, 0u64, 0u64);
                if crew.start_line(2) {
                    while tries < RENAMES && !crew.stopped() {
                        renamer
                            .mkdirat(AT_FDCWD, "/d/s", 0o755)
                            .unwrap_or_else(|e| panic!("seed {seed}: mkdir /d/s: {e:?}"));
                        match renamer.renameat2(
                            AT_FDCWD,
                            "/d/s",
                            AT_FDCWD,
                            "/d/t",
                            RenameFlags::empty(),
                        ) {
                            Ok(()) => replaced += 1,
                            Err(Errno::ENOTEMPTY) => {
                                refused += 1;
                                renamer
                                    .unlinkat(AT_FDCWD, "/d/s", AtFlags::REMOVEDIR)
                                    .unwrap_or_else(|e| panic!("seed {seed}: rmdir /d/s: {e:?}"));
                            }
                            Err(e) => panic!("seed {seed}: rename /d/s /d/t: {e:?}"),
                        }
                        tries += 1;
                    }
                }
                done.store(true, Ordering::Release);
                (tries, replaced, refused)
            });
            let c = s.spawn(move || {
                let _g = crew.enlist();
                let mut unlinks = 0u64;
                if !crew.start_line(2) {
                    return unlinks;
                }
                let mut rounds = 0;
                while !done.load(Ordering::Acquire) && rounds < MAX_READER_ROUNDS && !crew.stopped()
                {
                    let flags = OpenFlags::CREAT | OpenFlags::EXCL | OpenFlags::WRONLY;
                    match creator.openat(AT_FDCWD, "/d/t/f", flags, 0o644) {
                        Ok(fd) => {
                            creator.close(fd).expect("close");
                            creator
                                .unlinkat(AT_FDCWD, "/d/t/f", AtFlags::empty())
                                .unwrap_or_else(|e| {
                                    panic!(
                                        "seed {seed}: unlink of the /d/t/f just made: {e:?} (made \
                                         in a directory a rename then replaced)"
                                    )
                                });
                            unlinks += 1;
                        }
                        // The create met a `t` already replaced (dead).
                        Err(Errno::ENOENT) => {}
                        Err(e) => panic!("seed {seed}: create /d/t/f: {e:?}"),
                    }
                    rounds += 1;
                }
                unlinks
            });
            let (tries, replaced, refused) = join(r);
            (tries, replaced, refused, join(c))
        });
        // Quiet now: `/d` holds `t` alone, `t` is empty, and every inode was given back.
        let fd = setup
            .openat(AT_FDCWD, "/d", OpenFlags::RDONLY | OpenFlags::DIRECTORY, 0)
            .expect("open /d");
        let mut buf = vec![0u8; 4096];
        let names: Vec<Vec<u8>> = listed(&setup, fd, &mut buf)
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        assert_eq!(names, [b"t".to_vec()], "seed {seed}: /d holds t alone");
        setup.close(fd).expect("close");
        let fd = setup
            .openat(
                AT_FDCWD,
                "/d/t",
                OpenFlags::RDONLY | OpenFlags::DIRECTORY,
                0,
            )
            .expect("open /d/t");
        assert_eq!(
            listed(&setup, fd, &mut buf),
            [],
            "seed {seed}: /d/t is empty"
        );
        setup.close(fd).expect("close");
        assert_eq!(
            setup.statfs("/").expect("statfs").ffree,
            free_before,
            "seed {seed}: every inode given back"
        );
        (tries, replaced, refused, unlinks)
    });
    assert_eq!(tries, RENAMES, "seed {seed}: every rename counted");
    assert_eq!(replaced + refused, RENAMES, "seed {seed}");
    // Both outcomes happened, and the creator made and removed `f` many times: the two met.
    assert!(
        replaced > 0 && refused > 0 && unlinks > 0,
        "seed {seed}: {replaced} replaced, {refused} refused, {unlinks} unlinks"
    );
}
