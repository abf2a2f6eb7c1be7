//! Core workloads, each run on uvfs in this process and, in the same criterion group, on the
//! host kernel doing the same calls through rustix on a private tmpfs mounted for the run.
//!
//! `cargo bench -p uvfs --bench core` prints the machine, criterion's groups, then a ratio table
//! that this file measures itself: interleaved rounds of uvfs and host timing loops, median of
//! each (criterion's numbers are not read back). `cargo test --all-targets` runs every workload
//! once (criterion's test mode) and the table with tiny counts: a smoke pass, not a measurement.
//!
//! What every uvfs number leaves out relative to the host: the system call itself (entry and
//! exit, speculation mitigations), copying the path in (`getname()`) and results out
//! (`copy_to_user`), LSM hooks and audit. Each [`Workload`] says what else differs. The host
//! walks relative to a directory fd on its tmpfs (as deep as the uvfs path from `/`).
//!
//! "vanilla" is uvfs without the fast path the workload exercises, where the public API can
//! select it: pread/pwrite through a shared fd table (the locked lookup and reference count
//! that the task's fd cache skips).

use std::ffi::CStr;
use std::hint::black_box;
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::sync::Barrier;
use std::thread;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput};
use rustix::fs::{AtFlags as HostAtFlags, Mode, OFlags};
use rustix::mount::{MountFlags, UnmountFlags};
use uvfs::abi::{AtFlags, OpenFlags, AT_FDCWD};
use uvfs::{Cred, Task, Vfs};

/// Directories above the depth-8 file (`/a/b/c/d/e/f/g`), then the file `h`.
const DEPTH8_DIRS: [&str; 7] = ["a", "b", "c", "d", "e", "f", "g"];
const UVFS_DEPTH1: &[u8] = b"/f";
const UVFS_DEPTH8: &[u8] = b"/a/b/c/d/e/f/g/h";
const UVFS_RW: &[u8] = b"/rw";
const HOST_DEPTH1: &CStr = c"f";
const HOST_DEPTH8: &CStr = c"a/b/c/d/e/f/g/h";
const HOST_RW: &CStr = c"rw";
/// Bytes `open_read_close` reads (the size of the file at depth 1).
const SMALL_FILE_BYTES: usize = 32;
/// Speedup of two threads over one that the project aims for on `stat_depth8`.
const TWO_THREAD_TARGET: f64 = 1.8;

/// One single-threaded workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Workload {
    /// 1-byte pwrite at offset 0 of one file. Host also does: freeze protection
    /// (`sb_start_write`), `i_rwsem`, the page cache folio lookup, fsnotify's modify hook.
    /// uvfs: the task's fd cache, one lock of the file's pages, a coarse-clock timestamp.
    Pwrite1,
    /// 1-byte pread at offset 0. Host also does: `filemap_read()` and its folio lookup and
    /// reference, fsnotify's access hook. Both check relatime.
    Pread1,
    /// stat of `/f`, warm cache. Host also does: `getname()`, a reference on the final
    /// dentry and mount (`legitimize` at the end of the RCU walk), `security_inode_getattr()`.
    StatDepth1,
    /// stat of `/a/b/c/d/e/f/g/h`, warm cache: as [`Workload::StatDepth1`], 8 components.
    StatDepth8,
    /// open O_RDONLY, read 32 bytes, close, of `/f`. Host also does: `struct file` allocation
    /// from a slab with a credentials reference, `do_dentry_open()`, and `__fput()` deferred to
    /// task work on close. uvfs allocates its file description on the heap.
    OpenReadClose,
}

impl Workload {
    const ALL: [Workload; 5] = [
        Workload::Pwrite1,
        Workload::Pread1,
        Workload::StatDepth1,
        Workload::StatDepth8,
        Workload::OpenReadClose,
    ];

    fn name(self) -> &'static str {
        match self {
            Workload::Pwrite1 => "pwrite1",
            Workload::Pread1 => "pread1",
            Workload::StatDepth1 => "stat_depth1",
            Workload::StatDepth8 => "stat_depth8",
            Workload::OpenReadClose => "open_read_close",
        }
    }

    /// The host/uvfs time ratio the project aims for.
    fn target_ratio(self) -> f64 {
        match self {
            Workload::StatDepth8 => 6.0,
            _ => 10.0,
        }
    }
}

#[path = "support/run_mode.rs"]
mod run_mode;
use run_mode::RunMode;

/// The uvfs side: one namespace with the fixture tree, and the tasks that call it.
struct UvfsSide {
    vfs: Vfs,
    task: Task,
    /// `/rw` open read-write in `task` (unshared fd table: the fd cache applies).
    rw_fd: i32,
    /// A task whose fd table is shared with `_sibling`, so every fd lookup takes the table.
    shared: Task,
    _sibling: Task,
    /// `/rw` open read-write in `shared`.
    shared_rw_fd: i32,
}

impl UvfsSide {
    fn new() -> UvfsSide {
        let vfs = Vfs::new();
        let task = vfs.task(Cred::root());
        let mut dir = Vec::new();
        for d in DEPTH8_DIRS {
            dir.extend_from_slice(b"/");
            dir.extend_from_slice(d.as_bytes());
            task.mkdirat(AT_FDCWD, &dir, 0o755).expect("uvfs mkdir");
        }
        let mk = |path: &[u8], len: usize| {
            let fd = task
                .openat(AT_FDCWD, path, OpenFlags::CREAT | OpenFlags::WRONLY, 0o644)
                .expect("uvfs create");
            task.pwrite(fd, &vec![b'x'; len], 0).expect("uvfs fill");
            task.close(fd).expect("uvfs close");
        };
        mk(UVFS_DEPTH1, SMALL_FILE_BYTES);
        mk(UVFS_DEPTH8, SMALL_FILE_BYTES);
        mk(UVFS_RW, 1);
        let rw_fd = task
            .openat(AT_FDCWD, UVFS_RW, OpenFlags::RDWR, 0)
            .expect("uvfs open rw");
        let shared = vfs.task(Cred::root());
        let shared_rw_fd = shared
            .openat(AT_FDCWD, UVFS_RW, OpenFlags::RDWR, 0)
            .expect("uvfs open rw");
        let sibling = shared.clone_thread();
        UvfsSide {
            vfs,
            task,
            rw_fd,
            shared,
            _sibling: sibling,
            shared_rw_fd,
        }
    }

    #[inline]
    fn pwrite1(&self, task: &Task, fd: i32) {
        black_box(task.pwrite(fd, black_box(b"y"), 0).expect("uvfs pwrite"));
    }

    #[inline]
    fn pread1(&self, task: &Task, fd: i32) {
        let mut b = [0u8; 1];
        black_box(task.pread(fd, &mut b, 0).expect("uvfs pread"));
        black_box(b);
    }

    #[inline]
    fn stat(task: &Task, path: &[u8]) {
        black_box(
            task.fstatat(AT_FDCWD, black_box(path), AtFlags::empty())
                .expect("uvfs stat"),
        );
    }

    #[inline]
    fn open_read_close(&self) {
        let t = &self.task;
        let fd = t
            .openat(AT_FDCWD, black_box(UVFS_DEPTH1), OpenFlags::RDONLY, 0)
            .expect("uvfs open");
        let mut b = [0u8; SMALL_FILE_BYTES];
        black_box(t.read(fd, &mut b).expect("uvfs read"));
        t.close(fd).expect("uvfs close");
        black_box(b);
    }

    /// Checks once that every workload does what its name says.
    fn check(&self) {
        let t = &self.task;
        assert_eq!(t.pwrite(self.rw_fd, b"y", 0), Ok(1));
        let mut b = [0u8; 1];
        assert_eq!(t.pread(self.rw_fd, &mut b, 0), Ok(1));
        assert_eq!(
            t.stat(UVFS_DEPTH1).map(|s| s.size),
            Ok(SMALL_FILE_BYTES as i64)
        );
        assert_eq!(
            t.stat(UVFS_DEPTH8).map(|s| s.size),
            Ok(SMALL_FILE_BYTES as i64)
        );
        let fd = t
            .openat(AT_FDCWD, UVFS_DEPTH1, OpenFlags::RDONLY, 0)
            .expect("uvfs open");
        let mut b = [0u8; SMALL_FILE_BYTES];
        assert_eq!(t.read(fd, &mut b), Ok(SMALL_FILE_BYTES));
        assert_eq!(t.close(fd), Ok(()));
    }
}

/// A tmpfs mounted on a fresh directory under the temp dir; unmounted and removed on drop.
struct HostTmpfs {
    dir: PathBuf,
}

impl HostTmpfs {
    fn mount() -> Result<HostTmpfs, String> {
        let dir = std::env::temp_dir().join(format!("uvfs-bench-{}", std::process::id()));
        std::fs::create_dir(&dir).map_err(|e| format!("mkdir {}: {e}", dir.display()))?;
        if let Err(e) = rustix::mount::mount(
            "uvfs-bench",
            &dir,
            "tmpfs",
            MountFlags::empty(),
            c"size=16m,mode=755",
        ) {
            let _ = std::fs::remove_dir(&dir);
            return Err(format!("mount -t tmpfs on {}: {e}", dir.display()));
        }
        Ok(HostTmpfs { dir })
    }
}

impl Drop for HostTmpfs {
    fn drop(&mut self) {
        // Lazy: a thread that panicked may still hold an fd on it.
        if let Err(e) = rustix::mount::unmount(&self.dir, UnmountFlags::DETACH) {
            eprintln!("umount {}: {e}", self.dir.display());
            return;
        }
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// The host side: the same tree on a private tmpfs, reached through a directory fd.
struct HostSide {
    root: OwnedFd,
    rw: OwnedFd,
    /// Declared last: dropped after the fds above.
    _mount: HostTmpfs,
}

impl HostSide {
    /// The host side, or why it cannot run here.
    fn new() -> Result<HostSide, String> {
        let mount = HostTmpfs::mount()?;
        let io = |what: &str, e: rustix::io::Errno| format!("{what}: {e}");
        let root = rustix::fs::open(
            &mount.dir,
            OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| io("open tmpfs root", e))?;
        let mut dir = String::new();
        for d in DEPTH8_DIRS {
            if !dir.is_empty() {
                dir.push('/');
            }
            dir.push_str(d);
            rustix::fs::mkdirat(&root, dir.as_str(), Mode::from_raw_mode(0o755))
                .map_err(|e| io("mkdir", e))?;
        }
        let mk = |path: &CStr, len: usize| -> Result<(), String> {
            let fd = rustix::fs::openat(
                &root,
                path,
                OFlags::CREATE | OFlags::WRONLY | OFlags::CLOEXEC,
                Mode::from_raw_mode(0o644),
            )
            .map_err(|e| io("create", e))?;
            rustix::io::pwrite(&fd, &vec![b'x'; len], 0).map_err(|e| io("fill", e))?;
            Ok(())
        };
        mk(HOST_DEPTH1, SMALL_FILE_BYTES)?;
        mk(HOST_DEPTH8, SMALL_FILE_BYTES)?;
        mk(HOST_RW, 1)?;
        let rw = rustix::fs::openat(&root, HOST_RW, OFlags::RDWR, Mode::empty())
            .map_err(|e| io("open rw", e))?;
        Ok(HostSide {
            root,
            rw,
            _mount: mount,
        })
    }

    #[inline]
    fn pwrite1(&self) {
        black_box(rustix::io::pwrite(&self.rw, black_box(b"y"), 0).expect("host pwrite"));
    }

    #[inline]
    fn pread1(&self) {
        let mut b = [0u8; 1];
        black_box(rustix::io::pread(&self.rw, &mut b, 0).expect("host pread"));
        black_box(b);
    }

    #[inline]
    fn stat(&self, path: &CStr) {
        black_box(
            rustix::fs::statat(&self.root, black_box(path), HostAtFlags::empty())
                .expect("host stat"),
        );
    }

    #[inline]
    fn open_read_close(&self) {
        let fd = rustix::fs::openat(
            &self.root,
            black_box(HOST_DEPTH1),
            OFlags::RDONLY,
            Mode::empty(),
        )
        .expect("host open");
        let mut b = [0u8; SMALL_FILE_BYTES];
        black_box(rustix::io::read(&fd, &mut b).expect("host read"));
        drop(fd);
        black_box(b);
    }

    /// Checks once that every workload does what its name says.
    fn check(&self) {
        assert_eq!(rustix::io::pwrite(&self.rw, b"y", 0), Ok(1));
        let mut b = [0u8; 1];
        assert_eq!(rustix::io::pread(&self.rw, &mut b, 0), Ok(1));
        for p in [HOST_DEPTH1, HOST_DEPTH8] {
            assert_eq!(
                rustix::fs::statat(&self.root, p, HostAtFlags::empty()).map(|s| s.st_size),
                Ok(SMALL_FILE_BYTES as i64)
            );
        }
        let fd = rustix::fs::openat(&self.root, HOST_DEPTH1, OFlags::RDONLY, Mode::empty())
            .expect("host open");
        let mut b = [0u8; SMALL_FILE_BYTES];
        assert_eq!(rustix::io::read(&fd, &mut b), Ok(SMALL_FILE_BYTES));
    }
}

/// Something done with each workload: benchmarked by criterion, or timed for the ratio table.
trait Visit {
    /// `uvfs`, `vanilla` (uvfs without the fast path, where selectable) and `host` each run
    /// the workload once per call.
    fn workload(
        &mut self,
        w: Workload,
        uvfs: impl FnMut(),
        vanilla: Option<impl FnMut()>,
        host: Option<impl FnMut()>,
    );
}

/// Calls `v` with every workload's operations.
fn each_workload(u: &UvfsSide, h: Option<&HostSide>, v: &mut impl Visit) {
    let none = None::<fn()>;
    for w in Workload::ALL {
        match w {
            Workload::Pwrite1 => v.workload(
                w,
                || u.pwrite1(&u.task, u.rw_fd),
                Some(|| u.pwrite1(&u.shared, u.shared_rw_fd)),
                h.map(|h| || h.pwrite1()),
            ),
            Workload::Pread1 => v.workload(
                w,
                || u.pread1(&u.task, u.rw_fd),
                Some(|| u.pread1(&u.shared, u.shared_rw_fd)),
                h.map(|h| || h.pread1()),
            ),
            Workload::StatDepth1 => v.workload(
                w,
                || UvfsSide::stat(&u.task, UVFS_DEPTH1),
                none,
                h.map(|h| || h.stat(HOST_DEPTH1)),
            ),
            Workload::StatDepth8 => v.workload(
                w,
                || UvfsSide::stat(&u.task, UVFS_DEPTH8),
                none,
                h.map(|h| || h.stat(HOST_DEPTH8)),
            ),
            Workload::OpenReadClose => v.workload(
                w,
                || u.open_read_close(),
                none,
                h.map(|h| || h.open_read_close()),
            ),
        }
    }
}

/// Runs `iters` calls of `op` on each of two threads released together by a barrier; returns
/// the wall time from the first thread's start to the last one's end. `make` builds each
/// thread's context (a task) before the barrier.
fn run_pair<T>(iters: u64, make: impl Fn() -> T + Sync, op: impl Fn(&T) + Sync) -> Duration {
    let barrier = Barrier::new(2);
    let spans: Vec<(Instant, Instant)> = thread::scope(|s| {
        let run = || {
            let ctx = make();
            op(&ctx);
            barrier.wait();
            let start = Instant::now();
            for _ in 0..iters {
                op(&ctx);
            }
            (start, Instant::now())
        };
        let a = s.spawn(run);
        let b = s.spawn(run);
        vec![
            a.join().expect("bench thread"),
            b.join().expect("bench thread"),
        ]
    });
    let start = spans.iter().map(|s| s.0).min().expect("two spans");
    let end = spans.iter().map(|s| s.1).max().expect("two spans");
    end - start
}

/// `stat_depth8` on two uvfs tasks (each its own `Task`).
fn uvfs_pair(u: &UvfsSide, iters: u64) -> Duration {
    let vfs = &u.vfs;
    run_pair(
        iters,
        || vfs.task(Cred::root()),
        |t: &Task| UvfsSide::stat(t, UVFS_DEPTH8),
    )
}

/// `stat_depth8` on two OS threads against the host.
fn host_pair(h: &HostSide, iters: u64) -> Duration {
    run_pair(iters, || (), |_: &()| h.stat(HOST_DEPTH8))
}

struct CriterionVisit<'c> {
    c: &'c mut Criterion,
}

impl Visit for CriterionVisit<'_> {
    fn workload(
        &mut self,
        w: Workload,
        mut uvfs: impl FnMut(),
        vanilla: Option<impl FnMut()>,
        host: Option<impl FnMut()>,
    ) {
        let mut g = self.c.benchmark_group(w.name());
        g.throughput(Throughput::Elements(1));
        g.bench_function("uvfs", |b| b.iter(&mut uvfs));
        if let Some(mut v) = vanilla {
            g.bench_function("uvfs-vanilla", |b| b.iter(&mut v));
        }
        if let Some(mut h) = host {
            g.bench_function("host", |b| b.iter(&mut h));
        }
        g.finish();
    }
}

fn criterion_groups(c: &mut Criterion, u: &UvfsSide, h: Option<&HostSide>) {
    each_workload(u, h, &mut CriterionVisit { c });
    let mut g = c.benchmark_group("stat_depth8_2threads");
    g.throughput(Throughput::Elements(1));
    g.bench_function("uvfs/1thread", |b| {
        b.iter(|| UvfsSide::stat(&u.task, UVFS_DEPTH8))
    });
    if let Some(h) = h {
        g.bench_function("host/1thread", |b| b.iter(|| h.stat(HOST_DEPTH8)));
    }
    g.throughput(Throughput::Elements(2));
    g.bench_function("uvfs/2threads", |b| {
        b.iter_custom(|iters| uvfs_pair(u, iters))
    });
    if let Some(h) = h {
        g.bench_function("host/2threads", |b| {
            b.iter_custom(|iters| host_pair(h, iters))
        });
    }
    g.finish();
}

/// Loop sizes of the ratio table.
#[derive(Clone, Copy)]
struct Timing {
    /// Interleaved rounds; the table shows each side's median.
    rounds: usize,
    /// Smallest duration of one timed loop (calibrated per operation).
    min_loop: Duration,
}

impl Timing {
    fn for_mode(mode: RunMode) -> Timing {
        match mode {
            RunMode::Measure => Timing {
                rounds: 21,
                min_loop: Duration::from_millis(3),
            },
            RunMode::Smoke => Timing {
                rounds: 1,
                min_loop: Duration::ZERO,
            },
        }
    }

    /// Iterations for which one loop of `time(iters)` lasts at least `min_loop`.
    fn calibrate(self, mut time: impl FnMut(u64) -> Duration) -> u64 {
        let mut iters = 8;
        while time(iters) < self.min_loop {
            iters *= 2;
        }
        iters
    }
}

/// Times `iters` calls of `op`.
fn time_loop(iters: u64, op: &mut impl FnMut()) -> Duration {
    let start = Instant::now();
    for _ in 0..iters {
        op();
    }
    start.elapsed()
}

fn ns_per_op(d: Duration, ops: u64) -> f64 {
    d.as_nanos() as f64 / ops as f64
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The median ns/op of each of several operations timed in interleaved rounds, so that noise
/// from the other tenants of the machine hits every column alike.
fn interleaved(t: Timing, ops: &mut [&mut dyn FnMut(u64) -> Duration]) -> Vec<f64> {
    let iters: Vec<u64> = ops.iter_mut().map(|op| t.calibrate(op)).collect();
    let mut samples = vec![Vec::with_capacity(t.rounds); ops.len()];
    for _ in 0..t.rounds {
        for (i, op) in ops.iter_mut().enumerate() {
            samples[i].push(ns_per_op(op(iters[i]), iters[i]));
        }
    }
    samples.into_iter().map(median).collect()
}

/// One line of the ratio table.
struct Row {
    name: &'static str,
    uvfs_ns: f64,
    vanilla_ns: Option<f64>,
    host_ns: Option<f64>,
    target: f64,
}

struct RatioVisit {
    timing: Timing,
    rows: Vec<Row>,
}

impl Visit for RatioVisit {
    fn workload(
        &mut self,
        w: Workload,
        mut uvfs: impl FnMut(),
        vanilla: Option<impl FnMut()>,
        host: Option<impl FnMut()>,
    ) {
        let mut u = |n| time_loop(n, &mut uvfs);
        let mut ops: Vec<&mut dyn FnMut(u64) -> Duration> = vec![&mut u];
        let mut v = vanilla.map(|mut f| move |n| time_loop(n, &mut f));
        let mut h = host.map(|mut f| move |n| time_loop(n, &mut f));
        let (has_vanilla, has_host) = (v.is_some(), h.is_some());
        if let Some(v) = v.as_mut() {
            ops.push(v);
        }
        if let Some(h) = h.as_mut() {
            ops.push(h);
        }
        let m = interleaved(self.timing, &mut ops);
        self.rows.push(Row {
            name: w.name(),
            uvfs_ns: m[0],
            vanilla_ns: has_vanilla.then(|| m[1]),
            host_ns: has_host.then(|| m[m.len() - 1]),
            target: w.target_ratio(),
        });
    }
}

fn fmt_ns(v: Option<f64>) -> String {
    v.map_or_else(|| "-".to_string(), |v| format!("{v:.1}"))
}

fn verdict(mode: RunMode, got: Option<f64>, target: f64) -> &'static str {
    match got {
        _ if mode == RunMode::Smoke => "not measured",
        None => "no host",
        Some(r) if r >= target => "meets",
        Some(_) => "MISSES",
    }
}

fn ratio_table(mode: RunMode, u: &UvfsSide, h: Option<&HostSide>) {
    let timing = Timing::for_mode(mode);
    let mut rv = RatioVisit {
        timing,
        rows: Vec::new(),
    };
    each_workload(u, h, &mut rv);
    println!();
    match mode {
        RunMode::Measure => println!(
            "ratio table: median of {} interleaved rounds, each loop >= {:?}",
            timing.rounds, timing.min_loop
        ),
        RunMode::Smoke => println!("ratio table: smoke pass, one tiny round: not a measurement"),
    }
    println!(
        "{:<16} {:>11} {:>11} {:>15} {:>10} {:>7}  verdict",
        "workload", "host ns/op", "uvfs ns/op", "vanilla ns/op", "host/uvfs", "target"
    );
    for r in &rv.rows {
        let ratio = r.host_ns.map(|hn| hn / r.uvfs_ns);
        println!(
            "{:<16} {:>11} {:>11.1} {:>15} {:>10} {:>6.0}x  {}",
            r.name,
            fmt_ns(r.host_ns),
            r.uvfs_ns,
            fmt_ns(r.vanilla_ns),
            ratio.map_or_else(|| "-".to_string(), |x| format!("{x:.1}x")),
            r.target,
            verdict(mode, ratio, r.target),
        );
    }
    println!(
        "vanilla: uvfs through a shared fd table (locked fd lookup and reference count per call)"
    );

    // Two threads against one, interleaved the same way. ns/op of the pair is wall time over
    // the operations of both threads.
    let mut u1 = |n| time_loop(n, &mut || UvfsSide::stat(&u.task, UVFS_DEPTH8));
    let mut u2 = |n| uvfs_pair(u, n) / 2;
    let mut ops: Vec<&mut dyn FnMut(u64) -> Duration> = vec![&mut u1, &mut u2];
    let mut h1 = h.map(|h| move |n| time_loop(n, &mut || h.stat(HOST_DEPTH8)));
    let mut h2 = h.map(|h| move |n| host_pair(h, n) / 2);
    if let (Some(h1), Some(h2)) = (h1.as_mut(), h2.as_mut()) {
        ops.push(h1);
        ops.push(h2);
    }
    let m = interleaved(timing, &mut ops);
    println!();
    println!("stat_depth8_2threads: two threads stat the same path, each its own task");
    println!(
        "{:<6} {:>14} {:>17} {:>9} {:>7}  verdict",
        "side", "1 thread ns/op", "2 threads ns/op", "speedup", "target"
    );
    let line = |side: &str, one: f64, two: f64| {
        let speedup = one / two;
        println!(
            "{:<6} {:>14.1} {:>17.1} {:>8.2}x {:>6.1}x  {}",
            side,
            one,
            two,
            speedup,
            TWO_THREAD_TARGET,
            verdict(mode, Some(speedup), TWO_THREAD_TARGET)
        );
    };
    line("uvfs", m[0], m[1]);
    if m.len() == 4 {
        line("host", m[2], m[3]);
        println!("host/uvfs at 2 threads: {:.1}x", m[3] / m[1]);
    }
}

/// Prints what the numbers were measured on.
fn print_machine() {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_else(|| "unknown".to_string());
    let cores = thread::available_parallelism().map_or(0, |n| n.get());
    let u = rustix::system::uname();
    let rustc =
        std::process::Command::new(std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into()))
            .arg("--version")
            .output()
            .ok()
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .map_or_else(|| "unknown".to_string(), |s| s.trim().to_string());
    println!(
        "machine: cpu {cpu}; {cores} cores; kernel {} {}; {rustc}",
        u.sysname().to_string_lossy(),
        u.release().to_string_lossy()
    );
}

fn main() {
    if cfg!(any(loom, feature = "shuttle")) {
        println!("benchmarks skipped: uvfs built with loom/shuttle atomics, which work only inside a model");
        return;
    }
    let mode = RunMode::from_args();
    print_machine();
    let u = UvfsSide::new();
    u.check();
    let host = match HostSide::new() {
        Ok(h) => {
            h.check();
            Some(h)
        }
        Err(why) => {
            println!("host column skipped: {why}");
            None
        }
    };
    let mut c = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(40)
        .configure_from_args();
    criterion_groups(&mut c, &u, host.as_ref());
    c.final_summary();
    ratio_table(mode, &u, host.as_ref());
}
