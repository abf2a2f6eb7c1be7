//! Stress of kernfs removal against open and read: reader threads open, read and close
//! attributes of a mounted `Kernfs` through a `Task` while a remover thread adds and removes
//! directories of attributes, over and over. Oracle: the invariants of Linux's active
//! references (`kernfs_get_active()`, `kernfs_drain()`), checked on every call:
//!
//! - a read gives exactly the value of the node the path named when it was opened (each
//!   value encodes its directory, attribute and generation), or fails with `ENOENT` (the name
//!   was gone at open) or `ENODEV` (removed while open); never another node's value, never
//!   another errno;
//! - when `remove()` of a generation returns, no `show` of it is running (each generation
//!   counts its shows in progress), and none starts afterwards: every show checks its
//!   generation's "removal returned" flag, and the count of shows of each removed
//!   generation, taken when its removal returned, is the same at the end.
//!
//! Every check is counted and the counts asserted; the run is bounded by a count of
//! generations and a deadline (it fails, never hangs, if the removals stall); a panic on
//! any thread stops the others and fails the test.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use uvfs::abi::{OpenFlags, AT_FDCWD};
use uvfs::fs::kernfs::{show, Kernfs, KernfsNode};
use uvfs::{Cred, Errno, Task, Vfs};

/// Directories the remover cycles through, and attributes in each.
const DIRS: u64 = 3;
const ATTRS: u64 = 4;
/// Reader threads.
const READERS: usize = 3;
/// Generations (add, then remove, of one directory) the remover runs at least.
const MIN_GENERATIONS: u64 = 3000;
/// Reads of a value each reader makes at least.
const MIN_VALUES: usize = 1000;
/// The run stops at this deadline whatever the counts; the test then fails if a minimum
/// was not reached.
const DEADLINE: Duration = Duration::from_secs(30);

/// One generation of one directory: whether its removal has returned, and its shows.
#[derive(Default)]
struct Generation {
    removal_returned: AtomicBool,
    shows: AtomicUsize,
    /// Shows between their start and their end.
    running: AtomicUsize,
    /// Shows that found `removal_returned` set: must stay 0.
    late_shows: AtomicUsize,
}

/// What every thread shares.
struct Shared {
    stop: AtomicBool,
    /// Of each directory, the generation whose add has begun, and the one whose add has
    /// completed: a read of a file opened after `added` was `g0`, whose value was read before
    /// `adding` was `g1`, has a generation in `g0..=g1`.
    adding: [AtomicU64; DIRS as usize],
    added: [AtomicU64; DIRS as usize],
    /// Every generation, and its show count when its removal returned.
    generations: Mutex<Vec<(Arc<Generation>, usize)>>,
    /// Removals that returned while a show of theirs was running: must stay 0.
    running_at_return: AtomicUsize,
}

/// Sets `stop` when dropped by a panicking thread, so the others end too.
struct StopOnPanic<'a>(&'a AtomicBool);

impl Drop for StopOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.store(true, Ordering::SeqCst);
        }
    }
}

fn value(dir: u64, attr: u64, generation: u64) -> Vec<u8> {
    format!("d{dir} a{attr} g{generation}\n").into_bytes()
}

/// Parses what [`value`] made: `(dir, attr, generation)`.
fn parse(v: &[u8]) -> Option<(u64, u64, u64)> {
    let s = std::str::from_utf8(v).ok()?.strip_suffix('\n')?;
    let mut it = s.split(' ');
    let d = it.next()?.strip_prefix('d')?.parse().ok()?;
    let a = it.next()?.strip_prefix('a')?.parse().ok()?;
    let g = it.next()?.strip_prefix('g')?.parse().ok()?;
    it.next().is_none().then_some((d, a, g))
}

/// Adds directory `d<dir>` of generation `generation` with its attributes.
fn add(root: &KernfsNode, dir: u64, generation: u64, state: &Arc<Generation>) -> KernfsNode {
    let node = root
        .create_dir(format!("d{dir}"), 0o755)
        .expect("the name is free: its previous generation was removed");
    for attr in 0..ATTRS {
        let state = state.clone();
        node.create_file(
            format!("a{attr}"),
            0o444,
            show(move |out| {
                state.running.fetch_add(1, Ordering::SeqCst);
                state.shows.fetch_add(1, Ordering::SeqCst);
                if state.removal_returned.load(Ordering::SeqCst) {
                    state.late_shows.fetch_add(1, Ordering::SeqCst);
                }
                // Widen the window in which a removal finds this show running.
                std::thread::yield_now();
                out.extend_from_slice(&value(dir, attr, generation));
                state.running.fetch_sub(1, Ordering::SeqCst);
            }),
        )
        .expect("a fresh directory");
    }
    node
}

/// What readers saw, summed over all of them.
#[derive(Default)]
struct Seen {
    values: AtomicUsize,
    enoent: AtomicUsize,
    enodev: AtomicUsize,
    /// Second reads of an open file (from 0 again): same value or `ENODEV`.
    rereads: AtomicUsize,
    checks: AtomicUsize,
}

fn reader(task: Task, shared: &Shared, seen: &Seen, seed: u64) {
    let _guard = StopOnPanic(&shared.stop);
    let mut rng = seed | 1;
    let mut next = || {
        // xorshift64
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    while !shared.stop.load(Ordering::SeqCst) {
        let (dir, attr) = (next() % DIRS, next() % ATTRS);
        let path = format!("/k/d{dir}/a{attr}");
        let added_before_open = shared.added[dir as usize].load(Ordering::SeqCst);
        let fd = match task.openat(AT_FDCWD, &path, OpenFlags::RDONLY, 0) {
            Ok(fd) => fd,
            Err(Errno::ENOENT) => {
                seen.enoent.fetch_add(1, Ordering::Relaxed);
                seen.checks.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            // The open's own active reference found the node removed after the lookup.
            Err(Errno::ENODEV) => {
                seen.enodev.fetch_add(1, Ordering::Relaxed);
                seen.checks.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            Err(e) => panic!("open {path}: {e:?}"),
        };
        let mut buf = [0u8; 64];
        // Read in two pieces: the second is served from the open's buffer, or ENODEV.
        let first = task.read(fd, &mut buf[..5]);
        let got = first.and_then(|n| {
            let m = task.read(fd, &mut buf[n..])?;
            Ok(n + m)
        });
        match got {
            Ok(n) => {
                let (d, a, g) = parse(&buf[..n])
                    .unwrap_or_else(|| panic!("{path}: not a value: {:?}", &buf[..n]));
                assert_eq!((d, a), (dir, attr), "{path} read another node's value");
                let adding_after_read = shared.adding[dir as usize].load(Ordering::SeqCst);
                assert!(
                    (added_before_open..=adding_after_read).contains(&g),
                    "{path} read generation {g}, not one live while it was open \
                     ({added_before_open}..={adding_after_read})"
                );
                seen.values.fetch_add(1, Ordering::Relaxed);
                // Again from 0: the same node's value, or ENODEV once it is removed.
                if next() % 4 == 0 {
                    std::thread::yield_now();
                    match task.pread(fd, &mut buf, 0) {
                        Ok(n2) => assert_eq!(parse(&buf[..n2]), Some((d, a, g)), "{path}"),
                        Err(Errno::ENODEV) => {
                            seen.enodev.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(e) => panic!("pread {path}: {e:?}"),
                    }
                    seen.rereads.fetch_add(1, Ordering::Relaxed);
                    seen.checks.fetch_add(1, Ordering::Relaxed);
                }
            }
            Err(Errno::ENODEV) => {
                seen.enodev.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) => panic!("read {path}: {e:?}"),
        }
        seen.checks.fetch_add(1, Ordering::Relaxed);
        task.close(fd).expect("close");
    }
}

/// One remover: for each generation, removes one directory (the oldest) and adds it again.
fn remover(root: &KernfsNode, shared: &Shared, seen: &Seen, start: Instant) -> u64 {
    let _guard = StopOnPanic(&shared.stop);
    let mut live: Vec<(KernfsNode, Arc<Generation>)> = Vec::new();
    let mut generation = 0;
    for dir in 0..DIRS {
        let state = Arc::new(Generation::default());
        shared.adding[dir as usize].store(generation, Ordering::SeqCst);
        live.push((add(root, dir, generation, &state), state));
        shared.added[dir as usize].store(generation, Ordering::SeqCst);
        generation += 1;
    }
    loop {
        let enough = generation >= MIN_GENERATIONS
            && seen.enodev.load(Ordering::Relaxed) > 0
            && seen.enoent.load(Ordering::Relaxed) > 0
            && seen.values.load(Ordering::Relaxed) >= MIN_VALUES * READERS;
        if enough || start.elapsed() > DEADLINE || shared.stop.load(Ordering::SeqCst) {
            break;
        }
        let dir = generation % DIRS;
        let (node, state) = &live[dir as usize];
        node.remove();
        if state.running.load(Ordering::SeqCst) != 0 {
            shared.running_at_return.fetch_add(1, Ordering::SeqCst);
        }
        state.removal_returned.store(true, Ordering::SeqCst);
        let shows_at_return = state.shows.load(Ordering::SeqCst);
        shared
            .generations
            .lock()
            .expect("generations")
            .push((state.clone(), shows_at_return));
        // Let readers find the name missing for a moment.
        std::thread::yield_now();
        let state = Arc::new(Generation::default());
        shared.adding[dir as usize].store(generation, Ordering::SeqCst);
        let node = add(root, dir, generation, &state);
        shared.added[dir as usize].store(generation, Ordering::SeqCst);
        live[dir as usize] = (node, state);
        generation += 1;
    }
    shared.stop.store(true, Ordering::SeqCst);
    generation
}

#[test]
fn open_and_read_race_add_and_remove_of_directories() {
    let tree = Kernfs::new("kfs", 0x6b66);
    let vfs = Vfs::new();
    let task = vfs.task(Cred::root());
    task.mkdirat(AT_FDCWD, "/k", 0o755).expect("mkdir");
    tree.mount(&task, "/k").expect("mount");
    let shared = Shared {
        stop: AtomicBool::new(false),
        adding: Default::default(),
        added: Default::default(),
        generations: Mutex::new(Vec::new()),
        running_at_return: AtomicUsize::new(0),
    };
    let seen = Seen::default();
    let start = Instant::now();
    let generations = std::thread::scope(|s| {
        let readers: Vec<_> = (0..READERS)
            .map(|i| {
                let task = task.clone_thread();
                let (shared, seen) = (&shared, &seen);
                s.spawn(move || reader(task, shared, seen, 0x9e37_79b9_7f4a_7c15 ^ i as u64))
            })
            .collect();
        let remover = s.spawn(|| remover(tree.root(), &shared, &seen, start));
        let generations = remover.join();
        for r in readers {
            r.join().expect("a reader panicked");
        }
        generations.expect("the remover panicked")
    });
    let took = start.elapsed();

    let (values, enoent, enodev, rereads, checks) = (
        seen.values.load(Ordering::SeqCst),
        seen.enoent.load(Ordering::SeqCst),
        seen.enodev.load(Ordering::SeqCst),
        seen.rereads.load(Ordering::SeqCst),
        seen.checks.load(Ordering::SeqCst),
    );
    println!(
        "{generations} generations in {took:?}: {values} values, {enoent} ENOENT, {enodev} \
         ENODEV, {rereads} rereads, {checks} checks"
    );
    // Every removed generation: no show after its removal returned, then or since.
    let removed = shared.generations.lock().expect("generations");
    let mut late = 0;
    for (state, shows_at_return) in removed.iter() {
        late += state.late_shows.load(Ordering::SeqCst);
        assert_eq!(
            state.shows.load(Ordering::SeqCst),
            *shows_at_return,
            "a show ran after its node's removal returned"
        );
    }
    assert_eq!(late, 0, "shows that saw their removal returned");
    assert_eq!(
        shared.running_at_return.load(Ordering::SeqCst),
        0,
        "removals that returned while a show of theirs ran"
    );
    assert_eq!(
        removed.len() as u64,
        generations - DIRS,
        "one record per removal"
    );
    assert!(
        generations >= MIN_GENERATIONS,
        "only {generations} generations before the deadline"
    );
    assert!(values >= MIN_VALUES * READERS, "only {values} values read");
    assert!(enoent > 0, "no open found a name gone");
    assert!(enodev > 0, "no read found its node removed");
    assert!(
        checks >= values + enoent,
        "every outcome counted as a check"
    );
}
