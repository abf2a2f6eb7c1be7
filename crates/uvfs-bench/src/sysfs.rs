//! `sysfs-open-read`: seed 004's experiment. Every thread opens
//! `/sys/devices/system/cpu/cpu0/topology/core_id` read-only, reads it (up to [`READ_BYTES`]),
//! closes it, in a loop; on 1, 2, 4, 16 and 96 threads ([`THREADS`]; more threads than CPUs on
//! purpose: a global lock collapses when its holder is preempted).
//!
//! On a 96-core machine the seed measured 2.5 µs per open+read+close on one thread and 540 µs
//! on 96, because every path step into kernfs took `kernfs_mutex` in `kernfs_iop_permission()`
//! and `kernfs_dop_revalidate()` (fs/kernfs/inode.c, fs/kernfs/dir.c before 5.15).
//!
//! # Columns
//! - `host`: the host kernel's own sysfs file through real system calls (`openat`, `read`,
//!   `close`), the threads of this process, each with an fd table of its own
//!   (`unshare(CLONE_FILES)` at its start). Skipped, with the reason, where the host has no
//!   such file.
//! - `uvfs`: a [`Sysfs::with_cpu_topology`] mounted at `/sys` of a fresh namespace; each thread
//!   its own task made with `Task::fork`, an fd table of its own as the host's threads have.
//!   Every thread's table of its own, on both sides: threads that share one table write its
//!   free-fd state on every open and close (POSIX's lowest-free-fd rule; Linux's
//!   `files_struct::file_lock`, uvfs's `FdTable::inner`, docs/locking.md), a shared write
//!   that is not kernfs's, and that on uvfs's shorter operation is most of two threads' cost
//!   (issue 7: `uvfs bench scale open1` in threads mode).
//! - `uvfs-vanilla`: the same, as Linux before 5.15 did it: [`uvfs::fs::kernfs::set_vanilla_locking`]
//!   on for this column's runs only ([`VanillaLocking`]): every walk step onto a kernfs node
//!   takes one global mutex twice, around a copy of the node's attributes into its inode
//!   (`kernfs_iop_permission()`'s `kernfs_refresh_inode()`) and around its revalidation
//!   (`kernfs_dop_revalidate()`); and its tasks walk in uvfs's ref-walk
//!   (`WalkMode::Ref`: a reference per component), since that kernfs refused RCU-walk. A uvfs
//!   run whose switch is not as its design says fails instead of measuring the other design.
//! - `uvfs-tmpfs`: the reference: a uvfs tmpfs mounted at `/sys` of a fresh namespace holding
//!   the same paths with the same contents: the same depth, crossing one mount as `/sys` does.
//!
//! # Same file and file per thread
//! "Same file" (`shared` in the tables): every thread reads cpu0's `core_id`. "File per thread"
//! (`per-thread`): thread `i` reads cpu(`i` mod the CPUs)'s `core_id`. A host has exactly one
//! `cpuN` directory per CPU, so beyond that many threads the files are shared, round-robin (on
//! a 2-CPU machine 96 threads are 48 on each file). Another topology attribute per thread
//! (`physical_package_id`, `thread_siblings_list`, ...) would give more distinct files, but
//! each a different `show` callback and a different length, so the per-thread rows would no
//! longer be the same work as the shared rows; the seed's experiment is `core_id`.
//!
//! # Checks
//! Every read is compared with the value the host's file has (the `core_id` of that CPU, such
//! as `"0\n"`; on a host without `/sys`, `N\n` for CPU `N`, what the uvfs demo tree makes up
//! there), so that a wrong read fails the run instead of being timed; each column counts its
//! checks and a run whose count is not threads × operations fails. A file of the same contents
//! as the right one (another CPU with the same `core_id`) cannot be told from it this way.
//!
//! # Timing
//! As the suite's other multi-thread workloads: each thread runs a calibrated number of rounds
//! and a sample is the time from the first thread's start to the last one's end; ns/op is per
//! thread, and the aggregate table gives operations per second of all threads with the
//! speed-up over one thread. Fixed counts cannot hang with 96 threads on 2 CPUs; the tail in
//! which fewer threads than CPUs are left is in the sample (the `scale` suite's window
//! excludes it; this runner has no such window).
//!
//! # Left out
//! The uvfs columns make no system call and copy nothing to user memory; the host column
//! does both.

use std::ffi::{CStr, CString};
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{anyhow, bail, ensure};
use uvfs::abi::{OpenFlags, AT_FDCWD};
use uvfs::fs::sysfs::Sysfs;
use uvfs::Task;

use crate::column::Support;
use crate::params::{Params, Sharing, Workload};
use crate::watch::Watch;

/// Thread counts of the workload unless `--threads` gives others (the seed's 96 included).
pub const THREADS: [usize; 5] = [1, 2, 4, 16, 96];

/// Thread counts of a smoke pass (`--quick`): no 96.
pub const QUICK_THREADS: [usize; 3] = [1, 2, 16];

/// Bytes one read asks for: a `core_id` is a few.
pub const READ_BYTES: usize = 64;

/// The directory of the CPUs, on the host and in every uvfs column.
pub const CPU_DIR: &str = "/sys/devices/system/cpu";

/// The mount point of the uvfs columns' filesystem, as `/sys` is the host's.
const MOUNT_POINT: &str = "/sys";

/// The attribute read, under `cpuN`.
const ATTR: &str = "topology/core_id";

/// The thread counts to run: `explicit` (`--threads`) or [`THREADS`] ([`QUICK_THREADS`] for a
/// smoke pass), sorted, without repeats, with 1 added (the speed-ups divide by it).
pub fn thread_counts(explicit: Option<&[usize]>, quick: bool) -> Vec<usize> {
    let default: &[usize] = if quick { &QUICK_THREADS } else { &THREADS };
    let mut v = explicit.unwrap_or(default).to_vec();
    v.push(1);
    v.sort_unstable();
    v.dedup();
    v
}

/// The configuration of `threads` threads reading in `sharing`.
pub fn params(threads: usize, sharing: Sharing) -> Params {
    Params {
        workload: Workload::SysfsOpenRead,
        threads,
        depth: 1,
        sharing,
        tree: None,
        messaging: None,
        watch: Watch::None,
    }
}

/// The path of CPU `cpu`'s `core_id`.
pub fn attr_path(cpu: usize) -> String {
    format!("{CPU_DIR}/cpu{cpu}/{ATTR}")
}

/// Whether the host column can run the workload: cpu0's `core_id` is there to read.
pub fn host_support() -> Support {
    let path = attr_path(0);
    match std::fs::read(&path) {
        Ok(_) => Support::Yes,
        Err(e) => Support::No(format!("skipped: no {path} on this host ({e})")),
    }
}

/// The CPUs whose `core_id` the workload reads, ascending, and each one's value.
#[derive(Clone, Debug)]
pub struct Cpus(Vec<(usize, Vec<u8>)>);

impl Cpus {
    /// The host's: every `cpuN` of [`CPU_DIR`] with a readable `core_id`. Where there is none,
    /// one per available thread with `core_id` `N`, the values
    /// [`Sysfs::add_cpu_topology`] makes up on such a host.
    pub fn read() -> Cpus {
        let mut cpus: Vec<(usize, Vec<u8>)> = std::fs::read_dir(CPU_DIR)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| {
                let n = e.file_name().to_str()?.strip_prefix("cpu")?.parse().ok()?;
                Some((n, std::fs::read(attr_path(n)).ok()?))
            })
            .collect();
        if cpus.is_empty() {
            let n = std::thread::available_parallelism().map_or(1, |n| n.get());
            cpus = (0..n).map(|c| (c, format!("{c}\n").into_bytes())).collect();
        }
        cpus.sort_unstable();
        Cpus(cpus)
    }

    /// Thread `thread`'s CPU and value in a configuration of `sharing`: the first CPU (cpu0)
    /// for every thread, or CPU `thread` mod the CPUs.
    fn of_thread(&self, thread: usize, sharing: Sharing) -> &(usize, Vec<u8>) {
        let i = match sharing {
            Sharing::Shared => 0,
            Sharing::PerThread => thread % self.0.len(),
        };
        &self.0[i]
    }
}

/// One thread's file and what a read of it must give.
#[derive(Clone, Debug)]
struct Target {
    path: CString,
    expected: Vec<u8>,
}

/// The files of one configuration, one per thread, and the checks made of their reads.
#[derive(Debug)]
pub struct Reads {
    targets: Vec<Target>,
    /// Reads compared with their expected value, over every run of the configuration.
    checks: AtomicU64,
    /// The current run's window (see [`Reads::begin_run`]).
    window: Window,
}

/// A run's sampling window, as `uvfs bench scale` and will-it-scale sample: every thread
/// stops at the first thread's end of its quota, so that a sample covers only time in which
/// every thread ran (a fixed quota per thread also timed the tail, where fewer threads than
/// CPUs were left running).
#[derive(Debug, Default)]
struct Window {
    stop: std::sync::atomic::AtomicBool,
    /// Rounds done by every thread in this run.
    done: AtomicU64,
    /// The earliest thread start and the first quota's end.
    start: std::sync::Mutex<Option<std::time::Instant>>,
    first_end: std::sync::Mutex<Option<std::time::Instant>>,
}

impl Reads {
    /// The targets of `p`'s threads on `cpus`.
    pub fn new(cpus: &Cpus, p: &Params) -> Reads {
        let targets = (0..p.threads)
            .map(|i| {
                let (cpu, value) = cpus.of_thread(i, p.sharing);
                Target {
                    path: CString::new(attr_path(*cpu)).expect("no NUL in a sysfs path"),
                    expected: value.clone(),
                }
            })
            .collect();
        Reads {
            targets,
            checks: AtomicU64::new(0),
            window: Window::default(),
        }
    }

    /// Starts a run: a fresh window.
    pub fn begin_run(&self) {
        self.window.stop.store(false, Ordering::SeqCst);
        self.window.done.store(0, Ordering::SeqCst);
        *self.window.start.lock().expect("not poisoned") = None;
        *self.window.first_end.lock().expect("not poisoned") = None;
    }

    /// Ends a run of `threads` threads of `ops` rounds each, which began when
    /// [`Reads::checks`] was `before`: checks that every round done was checked, and returns
    /// the run's duration scaled to `threads × ops` rounds at the rate measured inside the
    /// window (the rounds every thread did until the first finished its quota, over that
    /// time), which the runner divides by `ops` as for any run.
    ///
    /// # Errors
    /// No round done, or a count of checks other than the rounds done.
    pub fn end_run(
        &self,
        before: u64,
        threads: usize,
        ops: u64,
    ) -> anyhow::Result<std::time::Duration> {
        let done = self.window.done.load(Ordering::SeqCst);
        let got = self.checks() - before;
        ensure!(got == done, "{got} reads checked, not the {done} done");
        ensure!(done > 0, "no round done");
        let start = self
            .window
            .start
            .lock()
            .expect("not poisoned")
            .ok_or_else(|| anyhow!("no start"))?;
        let end = self
            .window
            .first_end
            .lock()
            .expect("not poisoned")
            .ok_or_else(|| anyhow!("no thread finished its quota"))?;
        let span = end.saturating_duration_since(start);
        Ok(span.mul_f64((threads as u64 * ops) as f64 / done as f64))
    }

    /// The reads checked so far.
    pub fn checks(&self) -> u64 {
        self.checks.load(Ordering::Relaxed)
    }

    /// Thread `thread`'s loop: `ops` rounds of `open_read_close(path, buf)` (open read-only,
    /// one read into `buf`, close; the bytes read), each read compared with the file's value;
    /// the checks are counted when the loop ends.
    ///
    /// # Errors
    /// A failed call, or a read that gave other bytes than the file's value.
    pub fn thread(
        &self,
        thread: usize,
        ops: u64,
        mut open_read_close: impl FnMut(&CStr, &mut [u8]) -> anyhow::Result<usize>,
    ) -> anyhow::Result<()> {
        let t = self
            .targets
            .get(thread)
            .ok_or_else(|| anyhow!("no file for thread {thread}"))?;
        let mut buf = [0u8; READ_BYTES];
        let mut checked = 0u64;
        {
            let now = std::time::Instant::now();
            let mut st = self.window.start.lock().expect("not poisoned");
            if st.is_none_or(|s| now < s) {
                *st = Some(now);
            }
        }
        for _ in 0..ops {
            if self.window.stop.load(Ordering::Relaxed) {
                break;
            }
            let n = open_read_close(&t.path, &mut buf)?;
            let got = &buf[..n.min(READ_BYTES)];
            if got != t.expected.as_slice() {
                bail!(
                    "thread {thread} read {:?} from {:?}, expected {:?}",
                    String::from_utf8_lossy(got),
                    t.path,
                    String::from_utf8_lossy(&t.expected)
                );
            }
            checked += 1;
        }
        if checked == ops {
            let now = std::time::Instant::now();
            self.window.stop.store(true, Ordering::SeqCst);
            let mut end = self.window.first_end.lock().expect("not poisoned");
            if end.is_none_or(|e| now < e) {
                *end = Some(now);
            }
        }
        self.window.done.fetch_add(checked, Ordering::SeqCst);
        self.checks.fetch_add(checked, Ordering::Relaxed);
        Ok(())
    }
}

/// What a uvfs column mounts at `/sys`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backing {
    /// [`Sysfs::with_cpu_topology`] (`uvfs`, `uvfs-vanilla`).
    Sysfs,
    /// A tmpfs holding the same `core_id` files (`uvfs-tmpfs`).
    Tmpfs,
}

fn errno(what: &str, e: uvfs::Errno) -> anyhow::Error {
    anyhow!("uvfs: {what}: {e:?} ({e})")
}

/// Mounts `backing` at `/sys` in `task`'s namespace (a fresh one: `/sys` is made first) and,
/// for a tmpfs, writes `cpus`' `core_id` files into it. Returns the sysfs instance, for the
/// column to keep while it is mounted.
///
/// # Errors
/// Any failed call.
pub fn mount_on_uvfs(task: &Task, backing: Backing, cpus: &Cpus) -> anyhow::Result<Option<Sysfs>> {
    task.mkdirat(AT_FDCWD, MOUNT_POINT, 0o555)
        .map_err(|e| errno("mkdir /sys", e))?;
    match backing {
        Backing::Sysfs => {
            let sysfs = Sysfs::with_cpu_topology();
            sysfs
                .mount(task, MOUNT_POINT)
                .map_err(|e| errno("mount sysfs", e))?;
            Ok(Some(sysfs))
        }
        Backing::Tmpfs => {
            task.mount(
                Some(&b"tmpfs"[..]),
                MOUNT_POINT,
                Some("tmpfs"),
                Default::default(),
                None,
            )
            .map_err(|e| errno("mount tmpfs", e))?;
            for (cpu, value) in &cpus.0 {
                let file = attr_path(*cpu);
                // Every directory below the mount point, as sysfs has them.
                let dir = format!("{CPU_DIR}/cpu{cpu}/topology");
                let mut at = MOUNT_POINT.to_string();
                for comp in dir[MOUNT_POINT.len()..]
                    .split('/')
                    .filter(|c| !c.is_empty())
                {
                    at = format!("{at}/{comp}");
                    match task.mkdirat(AT_FDCWD, &at, 0o755) {
                        Ok(()) | Err(uvfs::Errno::EEXIST) => {}
                        Err(e) => return Err(errno(&format!("mkdir {at}"), e)),
                    }
                }
                let fd = task
                    .openat(
                        AT_FDCWD,
                        &file,
                        OpenFlags::CREAT | OpenFlags::EXCL | OpenFlags::WRONLY,
                        0o444,
                    )
                    .map_err(|e| errno(&format!("create {file}"), e))?;
                let written = task.write(fd, value);
                task.close(fd).map_err(|e| errno("close", e))?;
                let n = written.map_err(|e| errno(&format!("write {file}"), e))?;
                ensure!(n == value.len(), "short write of {file}");
            }
            Ok(None)
        }
    }
}

/// One round on uvfs: open `path` read-only, read once into `buf`, close.
///
/// # Errors
/// A failed call.
pub fn uvfs_open_read_close(task: &Task, path: &CStr, buf: &mut [u8]) -> anyhow::Result<usize> {
    let path = path.to_bytes();
    let fd = task
        .openat(AT_FDCWD, path, OpenFlags::RDONLY, 0)
        .map_err(|e| errno("open", e))?;
    let read = task.read(fd, buf);
    task.close(fd).map_err(|e| errno("close", e))?;
    read.map_err(|e| errno("read", e))
}

/// Gives the calling thread an fd table of its own (`unshare(CLONE_FILES)`), as each uvfs
/// thread of this workload has.
///
/// # Errors
/// The kernel's refusal.
pub fn host_own_fd_table() -> anyhow::Result<()> {
    #[allow(unsafe_code)]
    // Reason: libc's unshare is an extern function; CLONE_FILES only copies this thread's fd
    // table, whose fds stay open and owned as they were.
    // SAFETY: no memory is passed; the call changes only which table this thread's fds are in.
    let r = unsafe { libc::unshare(libc::CLONE_FILES) };
    if r != 0 {
        return Err(std::io::Error::last_os_error().into());
    }
    Ok(())
}

/// One round on the host: `openat(AT_FDCWD, path, O_RDONLY)`, one `read` into `buf`, `close`.
///
/// # Errors
/// A failed call.
pub fn host_open_read_close(path: &CStr, buf: &mut [u8]) -> anyhow::Result<usize> {
    let fd = rustix::fs::openat(
        rustix::fs::CWD,
        path,
        rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )?;
    Ok(rustix::io::read(&fd, buf)?)
}

/// Whether the vanilla kernfs locking is on ([`uvfs::fs::kernfs::vanilla_locking`]).
pub fn vanilla_locking_on() -> bool {
    uvfs::fs::kernfs::vanilla_locking()
}

/// The vanilla kernfs locking ([`uvfs::fs::kernfs::set_vanilla_locking`]) on while this lives:
/// `uvfs-vanilla` turns it on for its runs of this workload only, and it goes off again when
/// the run returns, fails or panics.
pub struct VanillaLocking(());

impl VanillaLocking {
    /// Turns the vanilla locking on.
    pub fn on() -> VanillaLocking {
        uvfs::fs::kernfs::set_vanilla_locking(true);
        VanillaLocking(())
    }
}

impl Drop for VanillaLocking {
    fn drop(&mut self) {
        uvfs::fs::kernfs::set_vanilla_locking(false);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_counts_default_to_the_seeds_and_always_run_one() {
        assert_eq!(thread_counts(None, false), [1, 2, 4, 16, 96]);
        assert_eq!(thread_counts(None, true), [1, 2, 16]);
        assert_eq!(thread_counts(Some(&[8, 2, 8]), false), [1, 2, 8]);
    }

    /// Oracle: the made-up values of a three-CPU machine. Shared: cpu0 for everyone; per
    /// thread: round-robin over the CPUs.
    #[test]
    fn threads_get_cpu0_or_their_cpu_round_robin() {
        let cpus = Cpus((0..3).map(|c| (c, format!("{c}\n").into_bytes())).collect());
        let shared = Reads::new(&cpus, &params(4, Sharing::Shared));
        assert!(shared
            .targets
            .iter()
            .all(|t| t.path.to_bytes() == attr_path(0).as_bytes() && t.expected == b"0\n"));
        let per = Reads::new(&cpus, &params(4, Sharing::PerThread));
        let got: Vec<_> = per.targets.iter().map(|t| t.expected.clone()).collect();
        assert_eq!(got, [b"0\n", b"1\n", b"2\n", b"0\n"]);
        assert_eq!(per.targets[3].path.to_bytes(), attr_path(0).as_bytes());
    }

    /// A read of other bytes fails the thread and is not counted; good reads are.
    #[test]
    fn a_wrong_read_fails_and_good_reads_are_counted() {
        let cpus = Cpus(vec![(0, b"0\n".to_vec())]);
        let reads = Reads::new(&cpus, &params(1, Sharing::Shared));
        let fill = |bytes: &'static [u8]| {
            move |_: &CStr, buf: &mut [u8]| {
                buf[..bytes.len()].copy_from_slice(bytes);
                Ok(bytes.len())
            }
        };
        reads.begin_run();
        reads.thread(0, 5, fill(b"0\n")).expect("right value");
        assert_eq!(reads.checks(), 5);
        let d = reads.end_run(0, 1, 5).expect("5 of 5");
        // The window's rate: a run whose threads did half their rounds counts double time.
        assert!(d > std::time::Duration::ZERO);
        // A finished quota stopped the window: a further call without a new run does nothing.
        reads
            .thread(0, 5, fill(b"1\n"))
            .expect("stopped before any read");
        assert_eq!(reads.checks(), 5);
        reads.begin_run();
        let e = reads.thread(0, 5, fill(b"1\n")).expect_err("wrong value");
        assert!(format!("{e}").contains("expected \"0\\n\""), "{e}");
        assert!(reads.thread(1, 1, fill(b"0\n")).is_err(), "no thread 1");
        assert_eq!(reads.checks(), 5);
        assert!(reads.end_run(0, 1, 5).is_err(), "no round done in this run");
    }

    #[test]
    fn vanilla_locking_is_on_only_while_its_guard_lives() {
        assert!(!vanilla_locking_on());
        let g = VanillaLocking::on();
        assert!(vanilla_locking_on());
        drop(g);
        assert!(!vanilla_locking_on());
    }
}
