//! Seeded, bounded concurrency tests of hard links made while the source's last name goes. The
//! rules are those of `tests/concurrency.rs` (the same harness): every check counted and every
//! count asserted, no sleeps, every loop bounded, a panic on any thread fails the test, a hang
//! is declared after a deadline; seed `UVFS_STRESS_SEED`.

#[path = "concurrency/harness.rs"]
#[allow(dead_code)]
// Reason: the harness is shared with tests/concurrency.rs, which uses all of it.
mod harness;

use std::thread;

use harness::*;
use uvfs::abi::{AtFlags, Errno, MountFlags, OpenFlags, RenameFlags, UmountFlags, AT_FDCWD};
use uvfs::{Cred, Task, Vfs};

/// Creates `path` (it must not exist).
fn create(t: &Task, path: &str, seed: u64) {
    let flags = OpenFlags::CREAT | OpenFlags::EXCL | OpenFlags::WRONLY;
    let fd = t
        .openat(AT_FDCWD, path, flags, 0o644)
        .unwrap_or_else(|e| panic!("seed {seed}: create {path}: {e:?}"));
    t.close(fd).expect("close");
}

/// Unlinks `path` (it must exist).
fn unlink(t: &Task, path: &str, seed: u64) {
    t.unlinkat(AT_FDCWD, path, AtFlags::empty())
        .unwrap_or_else(|e| panic!("seed {seed}: unlink {path}: {e:?}"));
}

/// One task runs `round` (which makes `/a/x` and then takes its last name away) `rounds`
/// times; another links `/a/x` to `/b/y` and unlinks `/b/y` whenever the link was made, twice
/// as often. Linux (the inode's lock, held by `vfs_link()`, `vfs_unlink()` and `vfs_rename()`):
/// a link either finds the file, which then lives on under `/b/y`, or says `ENOENT`; it never
/// makes a name for an inode whose last name's removal already released it. So at the end,
/// with every name gone, the filesystem's free inode count is what it was before (a revived
/// inode keeps the charge of the link that revived it). Returns the checks made and the links.
fn link_race(rounds: u64, round: fn(&Task, u64)) -> (u64, u64) {
    let seed = seed();
    let (checks, links) = run(move |crew| {
        let vfs = Vfs::new();
        let setup = vfs.task(Cred::root());
        mkdir(&setup, "/a");
        mkdir(&setup, "/b");
        let free_before = setup.statfs("/").expect("statfs").ffree;
        let (maker, linker) = (vfs.task(Cred::root()), vfs.task(Cred::root()));
        let (made, (links, checks)) = thread::scope(|s| {
            let m = s.spawn(move || {
                let _g = crew.enlist();
                let mut made = 0u64;
                if !crew.start_line(2) {
                    return made;
                }
                while made < rounds && !crew.stopped() {
                    round(&maker, seed);
                    made += 1;
                }
                made
            });
            let l = s.spawn(move || {
                let _g = crew.enlist();
                let mut rng = Rng::new(seed);
                let (mut links, mut checks) = (0u64, 0u64);
                if !crew.start_line(2) {
                    return (links, checks);
                }
                while checks < 2 * rounds && !crew.stopped() {
                    let follow = if rng.below(2) == 0 {
                        AtFlags::empty()
                    } else {
                        AtFlags::SYMLINK_FOLLOW
                    };
                    match linker.linkat(AT_FDCWD, "/a/x", AT_FDCWD, "/b/y", follow) {
                        Ok(()) => {
                            let st = linker.stat("/b/y").expect("the new link");
                            assert!(st.nlink >= 1, "seed {seed}: a made link has a count");
                            unlink(&linker, "/b/y", seed);
                            links += 1;
                        }
                        Err(Errno::ENOENT) => {}
                        Err(e) => panic!("seed {seed}: link /a/x /b/y: {e:?}"),
                    }
                    checks += 1;
                }
                (links, checks)
            });
            (join(m), join(l))
        });
        assert_eq!(made, rounds, "seed {seed}: every round made");
        let free_after = setup.statfs("/").expect("statfs").ffree;
        assert_eq!(
            free_after, free_before,
            "seed {seed}: with every name gone every inode is free ({links} links made)"
        );
        (checks + 1, links)
    });
    assert_eq!(
        checks,
        2 * rounds + 1,
        "every link and the end state checked"
    );
    (checks, links)
}

/// The last name goes by `unlink`.
#[test]
#[cfg_attr(
    any(loom, feature = "shuttle"),
    ignore = "skipped: uvfs built with loom/shuttle primitives, which work only inside a model"
)]
fn a_link_racing_the_last_unlink_never_revives_a_released_inode() {
    let (checks, links) = link_race(10_000, |t, seed| {
        create(t, "/a/x", seed);
        unlink(t, "/a/x", seed);
    });
    println!("link against unlink: {checks} checks, {links} links made");
}

/// The last name goes by a rename over it (`/a/t` onto `/a/x`); then the new `/a/x` goes.
#[test]
#[cfg_attr(
    any(loom, feature = "shuttle"),
    ignore = "skipped: uvfs built with loom/shuttle primitives, which work only inside a model"
)]
fn a_link_racing_a_rename_over_its_source_never_revives_a_released_inode() {
    let (checks, links) = link_race(10_000, |t, seed| {
        create(t, "/a/x", seed);
        create(t, "/a/t", seed);
        t.renameat2(AT_FDCWD, "/a/t", AT_FDCWD, "/a/x", RenameFlags::empty())
            .unwrap_or_else(|e| panic!("seed {seed}: rename /a/t /a/x: {e:?}"));
        unlink(t, "/a/x", seed);
    });
    println!("link against rename: {checks} checks, {links} links made");
}

/// Runs `step` until it says yes, trying again (yielding) while it says `EBUSY`: something is
/// mounted on the name it works on.
fn until_not_busy(crew: &Crew, what: &str, seed: u64, mut step: impl FnMut() -> uvfs::Result<()>) {
    let mut busy = 0u64;
    loop {
        match step() {
            Ok(()) => return,
            Err(Errno::EBUSY) if busy < 1_000_000 && !crew.stopped() => {
                busy += 1;
                thread::yield_now();
            }
            Err(e) => panic!("seed {seed}: {what}: {e:?}"),
        }
    }
}

/// One task bind-mounts `/src` onto `/a/x` and unmounts it, over and over; another runs
/// `round` (which takes the name `/a/x` away and gives it back, waiting while something is
/// mounted there) `ROUNDS` times. Linux (`do_lock_mount()` checks `cant_mount()` under the
/// mountpoint's inode lock; `vfs_unlink()` and `vfs_rename()` test for a mountpoint under the
/// locks of the non-directories they change): a mount lands only on a name that stays until
/// it is unmounted, so every mount made is unmounted by its own path. Returns the mounts made
/// and the checks.
fn mount_race(round: fn(&Task, &Crew, u64)) -> (u64, u64) {
    const ROUNDS: u64 = 10_000;
    let seed = seed();
    let (mounts, checks) = run(move |crew| {
        let vfs = Vfs::new();
        let setup = vfs.task(Cred::root());
        mkdir(&setup, "/a");
        create(&setup, "/src", seed);
        let (maker, mounter) = (vfs.task(Cred::root()), vfs.task(Cred::root()));
        thread::scope(|s| {
            let m = s.spawn(move || {
                let _g = crew.enlist();
                let mut done = 0u64;
                if !crew.start_line(2) {
                    return done;
                }
                while done < ROUNDS && !crew.stopped() {
                    round(&maker, crew, seed);
                    done += 1;
                }
                done
            });
            let u = s.spawn(move || {
                let _g = crew.enlist();
                let (mut mounts, mut checks) = (0u64, 0u64);
                if !crew.start_line(2) {
                    return (mounts, checks);
                }
                while checks < ROUNDS && !crew.stopped() {
                    let src = Some(b"/src".as_slice());
                    match mounter.mount(src, "/a/x", None, MountFlags::BIND, None) {
                        Ok(()) => {
                            mounter
                                .umount2("/a/x", UmountFlags::empty())
                                .unwrap_or_else(|e| {
                                    panic!("seed {seed}: a mount made on /a/x is gone: {e:?}")
                                });
                            mounts += 1;
                        }
                        Err(Errno::ENOENT) => {}
                        Err(e) => panic!("seed {seed}: bind /src /a/x: {e:?}"),
                    }
                    checks += 1;
                }
                (mounts, checks)
            });
            assert_eq!(join(m), ROUNDS, "seed {seed}: every round made");
            join(u)
        })
    });
    assert_eq!(checks, ROUNDS, "every mount checked");
    (mounts, checks)
}

/// The name goes by `unlink` and comes back by a create.
#[test]
#[cfg_attr(
    any(loom, feature = "shuttle"),
    ignore = "skipped: uvfs built with loom/shuttle primitives, which work only inside a model"
)]
fn a_bind_mount_never_lands_on_a_name_being_unlinked() {
    let (mounts, checks) = mount_race(|t, crew, seed| {
        create(t, "/a/x", seed);
        until_not_busy(crew, "unlink /a/x", seed, || {
            t.unlinkat(AT_FDCWD, "/a/x", AtFlags::empty())
        });
    });
    println!("bind mount against unlink: {checks} checks, {mounts} mounts made");
}

/// The file goes by a rename of another over it (`/a/t` onto `/a/x`, which makes the name
/// again at once).
#[test]
#[cfg_attr(
    any(loom, feature = "shuttle"),
    ignore = "skipped: uvfs built with loom/shuttle primitives, which work only inside a model"
)]
fn a_bind_mount_never_lands_on_a_file_being_renamed_over() {
    let (mounts, checks) = mount_race(|t, crew, seed| {
        create(t, "/a/t", seed);
        until_not_busy(crew, "rename /a/t /a/x", seed, || {
            t.renameat2(AT_FDCWD, "/a/t", AT_FDCWD, "/a/x", RenameFlags::empty())
        });
    });
    println!("bind mount against rename over: {checks} checks, {mounts} mounts made");
}

/// Two tasks bind-mount `/src` onto `/a/x` and unmount `/a/x`, over and over, at once. Linux
/// (`do_lock_mount()` looks for a mount there again under the mountpoint's lock and goes up to
/// it): two mounts on one name stack. An unmount takes off whichever is on top, and may say
/// EBUSY (the other task's walk holds that mount for a moment) or EINVAL (the other task
/// took it off first), a mount ENOENT (the mount it would go on top of is going): so the
/// mounts made equal the unmounts made, counting those that empty the name at the end, and
/// then `/a/x` is the file it was and can be unlinked.
#[test]
#[cfg_attr(
    any(loom, feature = "shuttle"),
    ignore = "skipped: uvfs built with loom/shuttle primitives, which work only inside a model"
)]
fn two_bind_mounts_on_one_name_at_once_stack() {
    const ROUNDS: u64 = 3_000;
    let seed = seed();
    let (tries, mounts, umounts) = run(move |crew| {
        let vfs = Vfs::new();
        let setup = vfs.task(Cred::root());
        mkdir(&setup, "/a");
        create(&setup, "/src", seed);
        create(&setup, "/a/x", seed);
        let ino_before = setup.stat("/a/x").expect("stat").ino;
        let mounters = [vfs.task(Cred::root()), vfs.task(Cred::root())];
        let counts: Vec<(u64, u64, u64)> = thread::scope(|s| {
            let hs: Vec<_> = mounters
                .into_iter()
                .map(|t| {
                    s.spawn(move || {
                        let _g = crew.enlist();
                        let (mut tries, mut mounts, mut umounts) = (0u64, 0u64, 0u64);
                        if !crew.start_line(2) {
                            return (tries, mounts, umounts);
                        }
                        while tries < ROUNDS && !crew.stopped() {
                            let src = Some(b"/src".as_slice());
                            match t.mount(src, "/a/x", None, MountFlags::BIND, None) {
                                Ok(()) => mounts += 1,
                                Err(Errno::ENOENT) => {}
                                Err(e) => panic!("seed {seed}: bind /src /a/x: {e:?}"),
                            }
                            // EBUSY is tried again a while, so that the stack stays low.
                            for _ in 0..1000 {
                                match t.umount2("/a/x", UmountFlags::empty()) {
                                    Ok(()) => umounts += 1,
                                    Err(Errno::EBUSY) if !crew.stopped() => {
                                        thread::yield_now();
                                        continue;
                                    }
                                    Err(Errno::EBUSY | Errno::EINVAL) => {}
                                    Err(e) => panic!("seed {seed}: umount /a/x: {e:?}"),
                                }
                                break;
                            }
                            tries += 1;
                        }
                        (tries, mounts, umounts)
                    })
                })
                .collect();
            hs.into_iter().map(join).collect()
        });
        let mut left = 0u64;
        while setup.umount2("/a/x", UmountFlags::empty()).is_ok() {
            left += 1;
        }
        println!("two mounters: {left} mounts left stacked at the end");
        assert_eq!(
            setup.stat("/a/x").expect("stat").ino,
            ino_before,
            "seed {seed}"
        );
        setup
            .unlinkat(AT_FDCWD, "/a/x", AtFlags::empty())
            .unwrap_or_else(|e| panic!("seed {seed}: unlink /a/x with nothing mounted: {e:?}"));
        let sum = |f: fn(&(u64, u64, u64)) -> u64| counts.iter().map(f).sum::<u64>();
        (sum(|c| c.0), sum(|c| c.1), sum(|c| c.2) + left)
    });
    assert_eq!(tries, 2 * ROUNDS, "seed {seed}: every round counted");
    assert_eq!(
        mounts, umounts,
        "seed {seed}: every mount made was unmounted"
    );
    assert!(mounts > 0, "seed {seed}: mounts were made");
}

/// Where the mount whose root holds a file named `marker` is, searched from `/` down to
/// depth 4 (every place the crossing moves below can put it), or `None`.
fn find_marker(t: &Task, marker: &str) -> Option<String> {
    let mut todo = vec![String::new()];
    while let Some(dir) = todo.pop() {
        if t.stat(format!("{dir}/{marker}")).is_ok() {
            return Some(dir);
        }
        if dir.matches('/').count() < 4 {
            for sub in ["a", "b", "x", "y"] {
                let p = format!("{dir}/{sub}");
                if t.stat(&p).is_ok_and(|st| st.mode & 0o170000 == 0o040000) {
                    todo.push(p);
                }
            }
        }
    }
    None
}

/// Two tmpfs mounts, A at `/a` (holding a directory `y`) and B at `/b` (holding `x`); one task
/// moves A to `/b/x` and back, the other B to `/a/y` and back, at once. Linux
/// (`do_move_mount()`'s checks run under `namespace_sem`, held to the graft): a move under the
/// mount being moved is ELOOP, so the two can never put A under B and B under A; a move whose
/// source or target went says EINVAL or ENOENT. So each mount stays reachable from `/`, and
/// no call hangs (a cycle would make every later look up the tree loop).
#[test]
#[cfg_attr(
    any(loom, feature = "shuttle"),
    ignore = "skipped: uvfs built with loom/shuttle primitives, which work only inside a model"
)]
fn two_crossing_moves_never_make_a_cycle() {
    const ROUNDS: u64 = 3_000;
    let seed = seed();
    let (moves, a_at, b_at) = run(move |crew| {
        let vfs = Vfs::new();
        let setup = vfs.task(Cred::root());
        for (dir, inner, marker) in [("/a", "/a/y", "/a/isA"), ("/b", "/b/x", "/b/isB")] {
            mkdir(&setup, dir);
            setup
                .mount(None, dir, Some("tmpfs"), MountFlags::empty(), None)
                .expect("mount tmpfs");
            mkdir(&setup, inner);
            create(&setup, marker, seed);
        }
        let movers = [
            (vfs.task(Cred::root()), "/a", "/b/x"),
            (vfs.task(Cred::root()), "/b", "/a/y"),
        ];
        let moves: u64 = thread::scope(|s| {
            let hs: Vec<_> = movers
                .into_iter()
                .map(|(t, home, away)| {
                    s.spawn(move || {
                        let _g = crew.enlist();
                        let mut moves = 0u64;
                        if !crew.start_line(2) {
                            return moves;
                        }
                        for round in 0..2 * ROUNDS {
                            if crew.stopped() {
                                break;
                            }
                            let (from, to) = if round % 2 == 0 {
                                (home, away)
                            } else {
                                (away, home)
                            };
                            let src = Some(from.as_bytes());
                            match t.mount(src, to, None, MountFlags::MOVE, None) {
                                Ok(()) => moves += 1,
                                Err(Errno::EINVAL | Errno::ENOENT | Errno::ELOOP) => {}
                                Err(e) => panic!("seed {seed}: move {from} {to}: {e:?}"),
                            }
                        }
                        moves
                    })
                })
                .collect();
            hs.into_iter().map(join).sum()
        });
        (
            moves,
            find_marker(&setup, "isA"),
            find_marker(&setup, "isB"),
        )
    });
    assert!(moves > 0, "seed {seed}: some moves were made");
    assert!(
        a_at.is_some() && b_at.is_some(),
        "seed {seed}: after {moves} moves, A is at {a_at:?} and B at {b_at:?}: both must be \
         reachable from /"
    );
}

/// One task mounts a tmpfs at `/m`, makes `/m/t` and lazily unmounts `/m`, over and over;
/// another bind-mounts the directory `/src` onto `/m/t` at once. Linux (`do_lock_mount()`
/// checks `is_mounted()` under `namespace_sem`): a bind onto a mount an unmount just took out
/// says ENOENT, and the mount it would have made is freed; one that lands is taken out with
/// `/m`'s tree and freed when that goes. So at the end, with `/src` removed, the root
/// filesystem has every inode back: no mount is left holding `/src`.
#[test]
#[cfg_attr(
    any(loom, feature = "shuttle"),
    ignore = "skipped: uvfs built with loom/shuttle primitives, which work only inside a model"
)]
fn a_bind_onto_a_mount_being_unmounted_leaves_nothing_behind() {
    const ROUNDS: u64 = 3_000;
    let seed = seed();
    let (binds, free_before, free_after) = run(move |crew| {
        let vfs = Vfs::new();
        let setup = vfs.task(Cred::root());
        mkdir(&setup, "/m");
        let free_before = setup.statfs("/").expect("statfs").ffree;
        mkdir(&setup, "/src");
        let (mounter, binder) = (vfs.task(Cred::root()), vfs.task(Cred::root()));
        let binds = thread::scope(|s| {
            s.spawn(move || {
                let _g = crew.enlist();
                if !crew.start_line(2) {
                    return;
                }
                for _ in 0..ROUNDS {
                    if crew.stopped() {
                        break;
                    }
                    mounter
                        .mount(None, "/m", Some("tmpfs"), MountFlags::empty(), None)
                        .unwrap_or_else(|e| panic!("seed {seed}: mount /m: {e:?}"));
                    mkdir(&mounter, "/m/t");
                    mounter
                        .umount2("/m", UmountFlags::DETACH)
                        .unwrap_or_else(|e| panic!("seed {seed}: umount -l /m: {e:?}"));
                }
            });
            let b = s.spawn(move || {
                let _g = crew.enlist();
                let mut binds = 0u64;
                if !crew.start_line(2) {
                    return binds;
                }
                for _ in 0..ROUNDS {
                    if crew.stopped() {
                        break;
                    }
                    let src = Some(b"/src".as_slice());
                    match binder.mount(src, "/m/t", None, MountFlags::BIND, None) {
                        Ok(()) => binds += 1,
                        Err(Errno::ENOENT) => {}
                        Err(e) => panic!("seed {seed}: bind /src /m/t: {e:?}"),
                    }
                }
                binds
            });
            join(b)
        });
        setup
            .unlinkat(AT_FDCWD, "/src", AtFlags::REMOVEDIR)
            .unwrap_or_else(|e| panic!("seed {seed}: rmdir /src: {e:?}"));
        (binds, free_before, setup.statfs("/").expect("statfs").ffree)
    });
    println!("bind onto a mount being unmounted: {binds} binds made");
    assert_eq!(
        free_after, free_before,
        "seed {seed}: every inode given back"
    );
}

/// Two directories hold the same two files under other names (`/d1/a` and `/d2/d` are links
/// of X, `/d1/b` and `/d2/c` of Y); one task swaps `/d1/a` and `/d1/b` (`RENAME_EXCHANGE`),
/// another `/d2/c` and `/d2/d`, over and over. Two renames in two directories share no
/// directory lock, yet each locks both inodes X and Y; Linux (`lock_two_nondirectories()`)
/// takes two non-directories in address order, so that the two never wait for each other in
/// a cycle, whichever end each rename has X at. So every exchange succeeds and none hangs (a
/// deadlock fails the test at the harness's deadline), and at the end each name is still a
/// link of X or Y, each inode with its two links.
#[test]
#[cfg_attr(
    any(loom, feature = "shuttle"),
    ignore = "skipped: uvfs built with loom/shuttle primitives, which work only inside a model"
)]
fn two_exchanges_of_the_same_two_files_in_two_directories_never_deadlock() {
    const ROUNDS: u64 = 50_000;
    let seed = seed();
    let (swaps, inos, pair) = run(move |crew| {
        let vfs = Vfs::new();
        let setup = vfs.task(Cred::root());
        for dir in ["/d1", "/d2"] {
            setup.mkdirat(AT_FDCWD, dir, 0o755).expect("mkdir");
        }
        create(&setup, "/d1/a", seed);
        create(&setup, "/d1/b", seed);
        for (from, to) in [("/d1/a", "/d2/d"), ("/d1/b", "/d2/c")] {
            setup
                .linkat(AT_FDCWD, from, AT_FDCWD, to, AtFlags::empty())
                .expect("link");
        }
        let ino = |p: &str| setup.stat(p).expect("stat").ino;
        let pair = [ino("/d1/a"), ino("/d1/b")];
        let swappers = [
            (vfs.task(Cred::root()), "/d1/a", "/d1/b"),
            (vfs.task(Cred::root()), "/d2/c", "/d2/d"),
        ];
        let swaps: u64 = thread::scope(|s| {
            let hs: Vec<_> = swappers
                .into_iter()
                .map(|(t, x, y)| {
                    s.spawn(move || {
                        let _g = crew.enlist();
                        let mut swaps = 0u64;
                        if !crew.start_line(2) {
                            return swaps;
                        }
                        while swaps < ROUNDS && !crew.stopped() {
                            t.renameat2(AT_FDCWD, x, AT_FDCWD, y, RenameFlags::EXCHANGE)
                                .unwrap_or_else(|e| panic!("seed {seed}: exchange {x} {y}: {e:?}"));
                            swaps += 1;
                        }
                        swaps
                    })
                })
                .collect();
            hs.into_iter().map(join).sum()
        });
        let inos: Vec<(u64, u64)> = ["/d1/a", "/d1/b", "/d2/c", "/d2/d"]
            .into_iter()
            .map(|p| {
                let st = setup.stat(p).expect("stat");
                (st.ino, st.nlink)
            })
            .collect();
        (swaps, inos, pair)
    });
    assert_eq!(swaps, 2 * ROUNDS, "seed {seed}: every exchange made");
    let mut seen: Vec<u64> = inos.iter().map(|&(i, _)| i).collect();
    seen.sort_unstable();
    let mut want = vec![pair[0], pair[0], pair[1], pair[1]];
    want.sort_unstable();
    assert_eq!(
        seen, want,
        "seed {seed}: each name a link of X or Y, two each"
    );
    assert!(
        inos.iter().all(|&(_, n)| n == 2),
        "seed {seed}: every inode has its two links: {inos:?}"
    );
}

/// Two tasks add and remove names of the same inodes in two directories at once, while each
/// also fills its own directory past the entry array's compaction and empties it again. tmpfs
/// finds an entry through its inode (the node's slot names one entry of one directory; the
/// other names of a hard-linked inode are in their directory's `multi`), so the slot of an
/// inode passes between directories as names come and go, and is renumbered by compactions
/// while the other directory reads it. Oracle: the names each task made (a naive model):
/// every link and unlink of a name that exists succeeds, and at the end each directory lists
/// exactly its names, each file's link count is its names' count, and every name unlinks.
/// Fails if an entry is not found where its name is (an unlink that leaves a name listed, a
/// wrong link count) or if a slot's checks fail (debug builds).
#[test]
#[cfg_attr(
    any(loom, feature = "shuttle"),
    ignore = "skipped: uvfs built with loom/shuttle primitives, which work only inside a model"
)]
fn names_of_one_inode_come_and_go_in_two_directories_at_once() {
    const FILES: u64 = 16;
    const ROUNDS: u64 = 20_000;
    let seed = seed();
    let checks = run(move |crew| {
        let vfs = Vfs::new();
        let setup = vfs.task(Cred::root());
        for d in ["/a", "/b", "/c"] {
            mkdir(&setup, d);
        }
        // Each file's first name, in /c, goes: its slot is then free for whichever directory
        // adds a name next. /a/i stays as the name the others are linked from.
        for i in 0..FILES {
            create(&setup, &format!("/c/{i}"), seed);
            setup
                .linkat(
                    AT_FDCWD,
                    format!("/c/{i}"),
                    AT_FDCWD,
                    format!("/a/{i}"),
                    AtFlags::empty(),
                )
                .expect("link /c/i /a/i");
            unlink(&setup, &format!("/c/{i}"), seed);
        }
        let tasks = [vfs.task(Cred::root()), vfs.task(Cred::root())];
        let counts = thread::scope(|s| {
            let handles: Vec<_> = tasks
                .into_iter()
                .enumerate()
                .map(|(me, t)| {
                    s.spawn(move || {
                        let _g = crew.enlist();
                        let mut rng = Rng::new(seed ^ (me as u64 + 1));
                        let mut checks = 0u64;
                        if !crew.start_line(2) {
                            return checks;
                        }
                        // Task 0 adds names in /a beside /a/i, task 1 in /b.
                        let dir = ["/a", "/b"][me];
                        for round in 0..ROUNDS {
                            if crew.stopped() {
                                break;
                            }
                            let i = rng.below(FILES);
                            let name = format!("{dir}/{i}.{me}");
                            t.linkat(
                                AT_FDCWD,
                                format!("/a/{i}"),
                                AT_FDCWD,
                                &name,
                                AtFlags::empty(),
                            )
                            .unwrap_or_else(|e| panic!("seed {seed}: link {name}: {e:?}"));
                            let st = t.stat(&name).expect("the new name");
                            assert!(st.nlink >= 2, "seed {seed}: {name} has /a/{i} too");
                            unlink(&t, &name, seed);
                            checks += 1;
                            // Now and then, 80 more names and their removal: the array grows and
                            // is compacted, renumbering the slots of the names it holds.
                            if round % 100 == 0 {
                                for k in 0..80 {
                                    create(&t, &format!("{dir}/fill{me}.{k}"), seed);
                                }
                                for k in 0..80 {
                                    unlink(&t, &format!("{dir}/fill{me}.{k}"), seed);
                                }
                                checks += 1;
                            }
                        }
                        checks
                    })
                })
                .collect();
            handles.into_iter().map(join).sum::<u64>()
        });
        let mut want: Vec<Vec<u8>> = (0..FILES).map(|i| i.to_string().into_bytes()).collect();
        want.sort();
        let names = |d: &str| -> Vec<Vec<u8>> {
            let mut v: Vec<Vec<u8>> = list(&setup, d, 4096)
                .into_iter()
                .filter(|n| n != b"." && n != b"..")
                .collect();
            v.sort();
            v
        };
        assert_eq!(names("/a"), want, "seed {seed}: /a holds its names only");
        assert_eq!(
            names("/b"),
            Vec::<Vec<u8>>::new(),
            "seed {seed}: /b is empty"
        );
        for i in 0..FILES {
            let st = setup.stat(format!("/a/{i}")).expect("/a/i");
            assert_eq!(st.nlink, 1, "seed {seed}: /a/{i} is the only name left");
            unlink(&setup, &format!("/a/{i}"), seed);
        }
        for d in ["/a", "/b", "/c"] {
            setup
                .unlinkat(AT_FDCWD, d, AtFlags::REMOVEDIR)
                .unwrap_or_else(|e| panic!("seed {seed}: rmdir {d}: {e:?}"));
        }
        counts + FILES + 1
    });
    assert_eq!(
        checks,
        2 * (ROUNDS + ROUNDS / 100) + FILES + 1,
        "every round of both tasks and the end state checked"
    );
}
