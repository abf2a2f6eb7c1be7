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
use uvfs::abi::{AtFlags, Errno, OpenFlags, RenameFlags, AT_FDCWD};
use uvfs::{Cred, Vfs};

/// One task creates `/a/x` and unlinks it, over and over; another links `/a/x` to `/b/y` and
/// unlinks `/b/y` whenever the link was made. Linux (`vfs_link()` and `vfs_unlink()` both hold
/// the inode's lock): a link either finds the file (and the file then lives on under `/b/y`
/// with one link) or says `ENOENT`; it never makes a name for an inode whose last unlink
/// already released it. So at the end, with every name gone, the filesystem's free inode
/// count is what it was before (a revived inode keeps the charge of the link that revived it).
#[test]
#[cfg_attr(
    any(loom, feature = "shuttle"),
    ignore = "skipped: uvfs built with loom/shuttle primitives, which work only inside a model"
)]
fn a_link_racing_the_last_unlink_never_revives_a_released_inode() {
    const ROUNDS: u64 = 20_000;
    let seed = seed();
    let (checks, linked) = run(move |crew| {
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
                for _ in 0..ROUNDS {
                    if crew.stopped() {
                        break;
                    }
                    let flags = OpenFlags::CREAT | OpenFlags::EXCL | OpenFlags::WRONLY;
                    let fd = maker
                        .openat(AT_FDCWD, "/a/x", flags, 0o644)
                        .unwrap_or_else(|e| panic!("seed {seed}: create /a/x: {e:?}"));
                    maker.close(fd).expect("close");
                    maker
                        .unlinkat(AT_FDCWD, "/a/x", AtFlags::empty())
                        .unwrap_or_else(|e| panic!("seed {seed}: unlink /a/x: {e:?}"));
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
                for _ in 0..ROUNDS {
                    if crew.stopped() {
                        break;
                    }
                    let follow = if rng.below(2) == 0 {
                        AtFlags::empty()
                    } else {
                        AtFlags::SYMLINK_FOLLOW
                    };
                    match linker.linkat(AT_FDCWD, "/a/x", AT_FDCWD, "/b/y", follow) {
                        Ok(()) => {
                            let st = linker.stat("/b/y").expect("the new link");
                            assert!(
                                st.nlink >= 1,
                                "seed {seed}: a made link has a count: {}",
                                st.nlink
                            );
                            linker
                                .unlinkat(AT_FDCWD, "/b/y", AtFlags::empty())
                                .expect("unlink /b/y");
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
        assert_eq!(made, ROUNDS, "seed {seed}: every create and unlink made");
        let free_after = setup.statfs("/").expect("statfs").ffree;
        assert_eq!(
            free_after, free_before,
            "seed {seed}: with every name gone every inode is free ({links} links made)"
        );
        (checks + 1, links)
    });
    println!("link against unlink: {checks} checks, {linked} links made");
    assert_eq!(checks, ROUNDS + 1, "every link and the end state checked");
}

/// As [`a_link_racing_the_last_unlink_never_revives_a_released_inode`], with the last name
/// going by a rename over it: one task makes `/a/x` and `/a/t` and renames `/a/t` over `/a/x`
/// (the old `/a/x`'s inode loses its last link), then unlinks `/a/x`; the other links `/a/x`
/// to `/b/y` and unlinks `/b/y`. Linux's `vfs_rename()` holds the replaced inode's lock.
#[test]
#[cfg_attr(
    any(loom, feature = "shuttle"),
    ignore = "skipped: uvfs built with loom/shuttle primitives, which work only inside a model"
)]
fn a_link_racing_a_rename_over_its_source_never_revives_a_released_inode() {
    const ROUNDS: u64 = 10_000;
    let seed = seed();
    let (checks, linked) = run(move |crew| {
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
                let flags = OpenFlags::CREAT | OpenFlags::EXCL | OpenFlags::WRONLY;
                for _ in 0..ROUNDS {
                    if crew.stopped() {
                        break;
                    }
                    for path in ["/a/x", "/a/t"] {
                        let fd = maker
                            .openat(AT_FDCWD, path, flags, 0o644)
                            .unwrap_or_else(|e| panic!("seed {seed}: create {path}: {e:?}"));
                        maker.close(fd).expect("close");
                    }
                    maker
                        .renameat2(AT_FDCWD, "/a/t", AT_FDCWD, "/a/x", RenameFlags::empty())
                        .unwrap_or_else(|e| panic!("seed {seed}: rename /a/t /a/x: {e:?}"));
                    maker
                        .unlinkat(AT_FDCWD, "/a/x", AtFlags::empty())
                        .unwrap_or_else(|e| panic!("seed {seed}: unlink /a/x: {e:?}"));
                    made += 1;
                }
                made
            });
            let l = s.spawn(move || {
                let _g = crew.enlist();
                let (mut links, mut checks) = (0u64, 0u64);
                if !crew.start_line(2) {
                    return (links, checks);
                }
                for _ in 0..ROUNDS * 2 {
                    if crew.stopped() {
                        break;
                    }
                    match linker.linkat(AT_FDCWD, "/a/x", AT_FDCWD, "/b/y", AtFlags::empty()) {
                        Ok(()) => {
                            linker
                                .unlinkat(AT_FDCWD, "/b/y", AtFlags::empty())
                                .expect("unlink /b/y");
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
        assert_eq!(made, ROUNDS, "seed {seed}: every round made");
        let free_after = setup.statfs("/").expect("statfs").ffree;
        assert_eq!(
            free_after, free_before,
            "seed {seed}: with every name gone every inode is free ({links} links made)"
        );
        (checks + 1, links)
    });
    println!("link against rename: {checks} checks, {linked} links made");
    assert_eq!(
        checks,
        2 * ROUNDS + 1,
        "every link and the end state checked"
    );
}
