//! Seeded, bounded concurrency tests of open files, through the public `sys` API: an open for
//! writing against a remount read-only, and the fds of a table two tasks share against a
//! thread that closes and grows it (and, single-threaded, each fd of a shared table reading its
//! own file through the lock-free path). The rules are those of `tests/concurrency.rs` (the same
//! harness): every check counted and every count asserted, no sleeps, every loop bounded, a
//! panic on any thread fails the test, a hang is declared after a deadline; seed
//! `UVFS_STRESS_SEED`. Split from `tests/concurrency.rs` to keep files short.

#[path = "concurrency/harness.rs"]
#[allow(dead_code)]
// Reason: the harness is shared with tests/concurrency.rs, which uses all of it.
mod harness;

use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;

use harness::*;
use uvfs::abi::{Errno, OpenFlags, RenameFlags, AT_FDCWD};
use uvfs::{Cred, Task, Vfs};

/// One task remounts a bind mount and then its filesystem read-only and back, over and over,
/// while two others open a file there for writing. Linux (`mnt_get_write_access()` against
/// `mnt_make_readonly()` and `sb_prepare_remount_readonly()`): an open for writing either
/// fails with EROFS or is counted before any remount read-only can succeed, so while a file
/// is open for writing through the mount, neither the mount nor the filesystem is read-only
/// (`fstatfs` of the open file never says `ST_RDONLY`), and a remount read-only meanwhile says
/// EBUSY.
#[test]
#[cfg_attr(
    any(loom, feature = "shuttle"),
    ignore = "skipped: uvfs built with loom/shuttle primitives, which work only inside a model"
)]
fn an_open_for_writing_and_a_remount_read_only_never_both_succeed() {
    use uvfs::abi::{st_flags, MountFlags};
    const ROUNDS: u64 = 40_000;
    /// Opens each writer tries at least, while the remounts go on.
    const MIN_TRIES: u64 = 20_000;
    /// Most remounts, in case the two outcomes never meet (the assertions then fail).
    const MAX_ROUNDS: u64 = 2_000_000;
    const WRITERS: u64 = 2;
    let seed = seed();
    let (remounts, counts) = run(move |crew| {
        let vfs = Vfs::new();
        let setup = vfs.task(Cred::root());
        mkdir(&setup, "/d");
        mkdir(&setup, "/m");
        setup
            .mount(None, "/d", Some("tmpfs"), MountFlags::empty(), None)
            .expect("mount a tmpfs on /d");
        let fd = setup
            .openat(
                AT_FDCWD,
                "/d/f",
                OpenFlags::CREAT | OpenFlags::WRONLY,
                0o600,
            )
            .expect("create /d/f");
        setup.close(fd).expect("close");
        setup
            .mount(Some(b"/d".as_slice()), "/m", None, MountFlags::BIND, None)
            .expect("bind /d on /m");
        let done = AtomicBool::new(false);
        let refused = std::sync::atomic::AtomicU64::new(0);
        let tries: Vec<std::sync::atomic::AtomicU64> = (0..WRITERS)
            .map(|_| std::sync::atomic::AtomicU64::new(0))
            .collect();
        let remounter = vfs.task(Cred::root());
        let writers: Vec<Task> = (0..WRITERS).map(|_| vfs.task(Cred::root())).collect();
        thread::scope(|s| {
            let (done, tries, refused) = (&done, &tries, &refused);
            let r = s.spawn(move || {
                let _g = crew.enlist();
                let t = remounter;
                // (remounts that made it read-only, remounts refused with EBUSY)
                let (mut made, mut busy) = (0u64, 0u64);
                if !crew.start_line(1 + WRITERS) {
                    return (made, busy);
                }
                // At least ROUNDS remounts, and on until every writer has tried enough opens,
                // a remount has made the mount read-only and an open has met that.
                let mut i = 0u64;
                while i < MAX_ROUNDS
                    && (i < ROUNDS
                        || made == 0
                        || refused.load(Ordering::SeqCst) == 0
                        || tries.iter().any(|n| n.load(Ordering::SeqCst) < MIN_TRIES))
                {
                    if crew.stopped() {
                        break;
                    }
                    let (ro, rw) = if i.is_multiple_of(2) {
                        (
                            MountFlags::REMOUNT | MountFlags::BIND | MountFlags::RDONLY,
                            MountFlags::REMOUNT | MountFlags::BIND,
                        )
                    } else {
                        (
                            MountFlags::REMOUNT | MountFlags::RDONLY,
                            MountFlags::REMOUNT,
                        )
                    };
                    match t.mount(None, "/m", None, ro, None) {
                        Ok(()) => {
                            made += 1;
                            t.mount(None, "/m", None, rw, None).unwrap_or_else(|e| {
                                panic!("seed {seed}: remount #{i} writable: {e:?}")
                            });
                        }
                        Err(Errno::EBUSY) => busy += 1,
                        Err(e) => panic!("seed {seed}: remount #{i} read-only: {e:?}"),
                    }
                    i += 1;
                }
                done.store(true, Ordering::SeqCst);
                (made, busy)
            });
            let ws: Vec<_> = writers
                .into_iter()
                .zip(tries.iter())
                .map(|(t, tried)| {
                    s.spawn(move || {
                        let _g = crew.enlist();
                        // (opens checked while open, opens refused with EROFS)
                        let (mut open, mut erofs) = (0u64, 0u64);
                        crew.start_line(1 + WRITERS);
                        while !done.load(Ordering::SeqCst) && !crew.stopped() {
                            tried.fetch_add(1, Ordering::SeqCst);
                            match t.openat(AT_FDCWD, "/m/f", OpenFlags::WRONLY, 0) {
                                Ok(fd) => {
                                    let st = t.fstatfs(fd).expect("fstatfs of an open file");
                                    assert_eq!(
                                        st.flags & st_flags::RDONLY,
                                        0,
                                        "seed {seed}: a file open for writing on a read-only mount"
                                    );
                                    t.close(fd).expect("close");
                                    open += 1;
                                }
                                Err(Errno::EROFS) => {
                                    erofs += 1;
                                    refused.fetch_add(1, Ordering::SeqCst);
                                }
                                Err(e) => panic!("seed {seed}: open for writing: {e:?}"),
                            }
                        }
                        (open, erofs)
                    })
                })
                .collect();
            (join(r), ws.into_iter().map(join).collect::<Vec<_>>())
        })
    });
    println!("an_open_for_writing_and_a_remount: remounts (read-only, busy) {remounts:?}, writers (open, erofs) {counts:?}");
    assert!(remounts.0 + remounts.1 >= ROUNDS, "remount rounds checked");
    assert!(remounts.0 > 0, "no remount read-only succeeded");
    for (open, erofs) in &counts {
        assert!(open + erofs >= MIN_TRIES, "opens tried by a writer");
    }
    let (opened, refused) = counts.iter().fold((0, 0), |a, c| (a.0 + c.0, a.1 + c.1));
    assert!(opened > 0, "no open for writing was checked");
    // Opens met the read-only state: the race was run, not just its two sides apart.
    assert!(refused > 0, "no open met a read-only mount");
}

/// Two threads of one task (a shared fd table, so `FdTable::get` without the lock and the
/// epoch-deferred weak references): the writer replaces and closes fd 10 (dup2 of a new open
/// of `/b` or `/c`, close), and duplicates `/a`'s fd to fds that grow the table; the reader
/// reads through `/a`'s fd, open throughout (always `a`), through fd 10 (`b`, `c` or `EBADF`,
/// never another file's byte) and through the grown fd (`a` or `EBADF`). Closes free their
/// weak references in reclamation batches while the reader runs, so a reference freed too
/// early reads freed memory. At each checkpoint fd 10 is exactly what the writer left.
#[test]
#[cfg_attr(
    any(loom, feature = "shuttle"),
    ignore = "skipped: uvfs built with loom/shuttle primitives, which work only inside a model"
)]
fn fds_of_a_shared_table_name_their_files_while_another_thread_closes_and_grows() {
    const OPS: u64 = 200_000;
    const CHECKPOINTS: u64 = 200;
    const X: i32 = 10;
    let seed = seed();
    let counts = run(move |crew| {
        let vfs = Vfs::new();
        let setup = vfs.task(Cred::root());
        for (path, byte) in [("/a", b"a"), ("/b", b"b"), ("/c", b"c")] {
            let fd = setup
                .openat(AT_FDCWD, path, OpenFlags::CREAT | OpenFlags::WRONLY, 0o644)
                .expect("create");
            assert_eq!(setup.write(fd, byte), Ok(1));
            setup.close(fd).expect("close");
        }
        let writer = vfs.task(Cred::root());
        let fd_a = writer
            .openat(AT_FDCWD, "/a", OpenFlags::RDONLY, 0)
            .expect("open /a");
        let reader = writer.clone_thread();
        // What fd X holds at a checkpoint: None (closed) or its file's byte.
        let points: Checkpoints<Option<u8>> = Checkpoints::new(1, None);
        let done = AtomicBool::new(false);
        // The fd the writer last grew the table with (the reader reads it too).
        let grown = std::sync::atomic::AtomicI32::new(-1);
        thread::scope(|s| {
            let (points, done, grown) = (&points, &done, &grown);
            let w = s.spawn(move || {
                let _g = crew.enlist();
                let t = writer;
                let mut rng = Rng::new(seed);
                let mut x: Option<u8> = None;
                let mut growths = 0u64;
                let per_checkpoint = OPS / CHECKPOINTS;
                for i in 0..OPS {
                    if crew.stopped() {
                        break;
                    }
                    match rng.next() % 4 {
                        0 | 1 => {
                            let (path, byte) = if rng.next().is_multiple_of(2) {
                                ("/b", b'b')
                            } else {
                                ("/c", b'c')
                            };
                            let fd = t
                                .openat(AT_FDCWD, path, OpenFlags::RDONLY, 0)
                                .expect("open");
                            assert_eq!(t.dup2(fd, X), Ok(X));
                            t.close(fd).expect("close the opened fd");
                            x = Some(byte);
                        }
                        2 => {
                            let r = t.close(X);
                            assert_eq!(r.is_ok(), x.is_some(), "seed {seed}: close of fd {X}");
                            x = None;
                        }
                        _ => {
                            // An fd at 64, 128, 256 or 512: the first dup past each grows the
                            // published array; later ones replace its slot.
                            let min = 64 << (rng.next() % 4);
                            let old = grown.swap(-1, Ordering::SeqCst);
                            if old >= 0 {
                                t.close(old).expect("close the grown fd");
                            }
                            let fd = t
                                .fcntl(fd_a, uvfs::abi::FcntlCmd::DupFd(min))
                                .expect("dup to a high fd");
                            grown.store(fd, Ordering::SeqCst);
                            growths += 1;
                        }
                    }
                    if (i + 1) % per_checkpoint == 0 && !points.hold(crew, x) {
                        break;
                    }
                }
                done.store(true, Ordering::SeqCst);
                growths
            });
            let r = s.spawn(move || {
                let _g = crew.enlist();
                let t = reader;
                let mut counts = Counts::default();
                let mut seen = 0u64;
                let mut buf = [0u8; 1];
                let mut byte_of = |fd: i32| t.pread(fd, &mut buf, 0).map(|_| buf[0]);
                while !done.load(Ordering::SeqCst) && !crew.stopped() {
                    counts.round();
                    assert_eq!(byte_of(fd_a), Ok(b'a'), "seed {seed}: fd of /a");
                    let got = byte_of(X);
                    assert!(
                        matches!(got, Ok(b'b' | b'c') | Err(Errno::EBADF)),
                        "seed {seed}: fd {X} read {got:?}"
                    );
                    let g = grown.load(Ordering::SeqCst);
                    if g >= 0 {
                        let got = byte_of(g);
                        assert!(
                            matches!(got, Ok(b'a') | Err(Errno::EBADF)),
                            "seed {seed}: grown fd {g} read {got:?}"
                        );
                    }
                    if let Some(want) = points.pending(&mut seen) {
                        let got = byte_of(X);
                        match want {
                            Some(b) => {
                                assert_eq!(got, Ok(b), "seed {seed}: fd {X} at checkpoint {seen}")
                            }
                            None => assert_eq!(
                                got,
                                Err(Errno::EBADF),
                                "seed {seed}: fd {X} at checkpoint {seen}"
                            ),
                        }
                        counts.exact += 1;
                        points.ack();
                    }
                }
                counts
            });
            (join(w), join(r))
        })
    });
    let (growths, reader) = counts;
    println!("fds_of_a_shared_table: growing dups {growths}, reader {reader:?}");
    assert_eq!(reader.exact, CHECKPOINTS, "every checkpoint checked");
    assert!(
        reader.rounds > 0 && growths > 0,
        "the reader read and the table grew"
    );
}

/// Each fd of a table two tasks share reads its own file through the table's lock-free
/// path, after its first read published it: the fds beside the table's lock (0 to 3) and
/// those in its published array, and again after every other fd was closed and a new file
/// opened at it. Oracle: the byte each file was written with (POSIX: an fd names the file the
/// call that returned it opened, until it is closed). Single-threaded: the reads of the
/// second task go through `FdTable::get`, as any task's do on a shared table.
#[test]
#[cfg_attr(
    any(loom, feature = "shuttle"),
    ignore = "skipped: uvfs built with loom/shuttle primitives, which work only inside a model"
)]
fn each_fd_of_a_shared_table_reads_its_own_file() {
    const FILES: u8 = 12;
    let vfs = Vfs::new();
    let t = vfs.task(Cred::root());
    let other = t.clone_thread();
    let open = |name: String, byte: u8| {
        let fd = t
            .openat(AT_FDCWD, &name, OpenFlags::CREAT | OpenFlags::RDWR, 0o644)
            .expect("create");
        assert_eq!(t.write(fd, &[byte]), Ok(1));
        fd
    };
    let mut fds: Vec<(i32, u8)> = (0..FILES)
        .map(|i| (open(format!("/f{i}"), b'a' + i), b'a' + i))
        .collect();
    let mut checks = 0;
    let mut check_all = |fds: &[(i32, u8)]| {
        for _ in 0..3 {
            for &(fd, byte) in fds {
                let mut buf = [0u8; 1];
                assert_eq!(other.pread(fd, &mut buf, 0), Ok(1), "fd {fd}");
                assert_eq!(buf[0], byte, "fd {fd}");
                checks += 1;
            }
        }
    };
    check_all(&fds);
    for (fd, _) in fds.iter().step_by(2) {
        t.close(*fd).expect("close");
    }
    for (i, e) in fds.iter_mut().enumerate().step_by(2) {
        let byte = b'A' + i as u8;
        let fd = open(format!("/g{i}"), byte);
        assert_eq!(fd, e.0, "the lowest free fd");
        *e = (fd, byte);
    }
    check_all(&fds);
    assert_eq!(checks, 2 * 3 * usize::from(FILES));
}

/// Pinned dentries (`vfs::pin`): two readers open one name over and over, each keeping an
/// older fd of it open (so every open finds the dentry held twice and goes through its pin),
/// while a writer replaces the file under that name by renaming a new one over it (each
/// rename kills the old dentry, which takes its pin out while files still hold it). POSIX
/// (rename(2) is atomic, an open file keeps its inode): every open finds a whole generation,
/// never an older one than the last it saw, and an fd kept open reads the generation it was
/// opened on whatever was renamed over its name since.
#[test]
#[cfg_attr(
    any(loom, feature = "shuttle"),
    ignore = "skipped: uvfs built with loom/shuttle primitives, which work only inside a model"
)]
fn opens_through_a_pin_see_whole_generations_while_the_name_is_replaced() {
    const GENERATIONS: u64 = 3_000;
    const READERS: u64 = 2;
    let seed = seed();
    let content = |g: u64| format!("generation {g:08}\n");
    let counts = run(move |crew| {
        let vfs = Vfs::new();
        let writer = vfs.task(Cred::root());
        let put = |t: &Task, g: u64| {
            let fd = t
                .openat(
                    AT_FDCWD,
                    "/new",
                    OpenFlags::CREAT | OpenFlags::WRONLY | OpenFlags::TRUNC,
                    0o644,
                )
                .expect("create /new");
            assert_eq!(t.write(fd, content(g).as_bytes()), Ok(content(g).len()));
            t.close(fd).expect("close");
            t.renameat2(AT_FDCWD, "/new", AT_FDCWD, "/f", RenameFlags::empty())
                .expect("rename over /f");
        };
        put(&writer, 0);
        let done = AtomicBool::new(false);
        let readers: Vec<Task> = (0..READERS).map(|_| vfs.task(Cred::root())).collect();
        thread::scope(|s| {
            let done = &done;
            let w = s.spawn(move || {
                let _g = crew.enlist();
                crew.start_line(1 + READERS);
                for g in 1..=GENERATIONS {
                    if crew.stopped() {
                        break;
                    }
                    put(&writer, g);
                }
                done.store(true, Ordering::SeqCst);
            });
            let rs: Vec<_> = readers
                .into_iter()
                .map(|t| {
                    s.spawn(move || {
                        let _g = crew.enlist();
                        crew.start_line(1 + READERS);
                        let read_gen = |fd: i32| -> u64 {
                            let mut buf = [0u8; 64];
                            let n = t.pread(fd, &mut buf, 0).expect("pread");
                            let text = std::str::from_utf8(&buf[..n]).expect("utf-8");
                            let g = text
                                .strip_prefix("generation ")
                                .and_then(|r| r.trim_end().parse::<u64>().ok())
                                .unwrap_or_else(|| panic!("seed {seed}: torn read {text:?}"));
                            assert_eq!(text, content(g), "seed {seed}: a whole generation");
                            g
                        };
                        // (opens checked, kept fds checked)
                        let (mut opens, mut kept_checks) = (0u64, 0u64);
                        let mut last = 0u64;
                        let mut kept: Option<(i32, u64)> = None;
                        while !crew.stopped() {
                            let finished = done.load(Ordering::SeqCst);
                            let fd = t
                                .openat(AT_FDCWD, "/f", OpenFlags::RDONLY, 0)
                                .expect("open /f");
                            let g = read_gen(fd);
                            assert!(g >= last, "seed {seed}: generation {g} after {last}");
                            last = g;
                            opens += 1;
                            if let Some((k, kg)) = kept {
                                assert_eq!(read_gen(k), kg, "seed {seed}: a kept fd's generation");
                                kept_checks += 1;
                                if opens % 16 == 0 {
                                    t.close(k).expect("close kept");
                                    kept = Some((fd, g));
                                } else {
                                    t.close(fd).expect("close");
                                }
                            } else {
                                kept = Some((fd, g));
                            }
                            if finished {
                                break;
                            }
                        }
                        if let Some((k, _)) = kept {
                            t.close(k).expect("close kept");
                        }
                        (opens, kept_checks, last)
                    })
                })
                .collect();
            join(w);
            rs.into_iter().map(join).collect::<Vec<_>>()
        })
    });
    println!("opens_through_a_pin: readers (opens, kept checks, last generation) {counts:?}");
    for (opens, kept_checks, last) in &counts {
        assert!(
            *opens > 0 && *kept_checks + 1 >= *opens,
            "every open but the first checked a kept fd"
        );
        assert_eq!(
            *last, GENERATIONS,
            "each reader's last open saw the last generation"
        );
    }
}
