//! uvfs, and uvfs "vanilla": the design a workload's fast path replaced.

use std::time::Duration;

use anyhow::{anyhow, bail};
use uvfs::abi::{AtFlags, OpenFlags, AT_FDCWD};
use uvfs::fs::sysfs::Sysfs;
use uvfs::vfs::WalkMode;
use uvfs::{Cred, Task, Vfs};

use super::host::{timed_threads, READ_BYTES, SMALL_FILE_BYTES};
use super::uvfs_notify::{UvfsNotify, VanillaHooks};
use crate::column::{Column, Support};
use crate::find::{
    dirent64_names, EntryKind, Tree, TreePath, WalkCount, DIR_PERMISSIONS, FILE_PERMISSIONS,
    GETDENTS_BUF_BYTES,
};
use crate::params::{walk_components, Params, Sharing, Workload};
use crate::pipes::{self, PipeSys};
use crate::sysfs::{
    mount_on_uvfs, uvfs_open_read_close, vanilla_locking_on, Backing, Cpus, Reads, VanillaLocking,
};
use crate::watch::{Placed, Watch, WatchState, Watcher, UNRELATED_FILE, WATCH_DIR, WRITTEN_FILE};

/// Which uvfs design a column runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Design {
    /// uvfs as it is.
    Current,
    /// The design the fast path replaced: the locked walk with a reference per component for
    /// path workloads (Linux ref-walk), and the locked, reference-counted fd lookup of a shared
    /// table for `write1`/`read1` (Linux `fdget()` on a shared table), the notification
    /// hooks of before 2015 for `write1-watch` ([`uvfs::vfs::notify::set_vanilla_hooks`]:
    /// every hook enters the mark read side and walks the empty mark lists), and pipes that
    /// stamp times as before 2025 for the pipe workloads.
    Vanilla,
    /// uvfs with the notification hooks of before 2015 and nothing else changed, for `write1`
    /// and `messaging` (seeds 001 and 000), where [`Design::Vanilla`] is another design.
    VanillaNotify,
    /// Not a design: uvfs with `sysfs-open-read`'s files on a tmpfs mounted at `/sys`, the
    /// reference for its sysfs columns ([`crate::sysfs`]). Runs that workload only.
    TmpfsReference,
}

impl Design {
    /// Whether a run of `p` in this design has the vanilla notification hooks on.
    pub fn vanilla_hooks(self, p: &Params) -> bool {
        match self {
            Design::Current | Design::TmpfsReference => false,
            Design::Vanilla => p.workload == Workload::Write1Watch,
            Design::VanillaNotify => true,
        }
    }

    /// Whether a run of `p` in this design has the pre-5.15 kernfs locking on
    /// ([`VanillaLocking`]).
    fn vanilla_kernfs(self, p: &Params) -> bool {
        self == Design::Vanilla && p.workload == Workload::SysfsOpenRead
    }
}

/// Why `uvfs-tmpfs` skips a workload.
const TMPFS_REFERENCE_ONLY: &str = "skipped: sysfs-open-read's reference only";

/// Why `uvfs-vanilla-notify` skips a workload.
const VANILLA_NOTIFY_ONLY: &str = "skipped: run on write1 and messaging only";

/// Why `uvfs-vanilla-notify` skips `write1-watch`.
const VANILLA_NOTIFY_IS_VANILLA: &str = "skipped: uvfs-vanilla has these hooks here";

/// uvfs called in process, one task per thread.
pub struct Uvfs {
    design: Design,
    vfs: Vfs,
    /// The task of thread 0; the others are made with `clone_thread` (a shared fd table, as
    /// the host's threads share theirs).
    task: Task,
    /// Sibling kept alive to make the fd table shared (vanilla `write1`/`read1`).
    sibling: Option<Task>,
    fd: i32,
    names: Vec<String>,
    /// The watch of a `write1-watch` configuration, and the calls it was placed with.
    watch: Placed<UvfsNotify>,
    /// The sysfs mounted at `/sys` for `sysfs-open-read`, kept while it is mounted.
    sysfs: Option<Sysfs>,
    /// The files of a `sysfs-open-read` configuration and the checks of their reads.
    reads: Option<Reads>,
}

impl Uvfs {
    /// A fresh namespace with a tmpfs root.
    pub fn new(design: Design) -> Uvfs {
        let vfs = Vfs::new();
        let task = vfs.task(Cred::root());
        Uvfs {
            design,
            vfs,
            task,
            sibling: None,
            fd: -1,
            names: Vec::new(),
            watch: Placed::default(),
            sysfs: None,
            reads: None,
        }
    }

    /// The reads checked so far in the current `sysfs-open-read` configuration (0 without
    /// one).
    pub fn sysfs_checks(&self) -> u64 {
        self.reads.as_ref().map_or(0, Reads::checks)
    }

    /// What the watch of the current `write1-watch` configuration has seen so far (nothing
    /// without one).
    ///
    /// # Errors
    /// `fionread` failed.
    pub fn watch_state(&self) -> anyhow::Result<WatchState> {
        self.watch.state()
    }

    /// Waits until the draining thread of the current configuration's watch has read at
    /// least `events` events or `timeout` has passed; the count it has read (0 without one).
    pub fn wait_drained(&self, events: u64, timeout: std::time::Duration) -> u64 {
        self.watch.wait_drained(events, timeout)
    }

    /// Removes the watch of a `write1-watch` configuration, if any.
    fn remove_watch(&mut self) -> anyhow::Result<()> {
        self.watch.remove()
    }

    /// The main task of a configuration of `p`: ref-walk in the vanilla design (for
    /// `sysfs-open-read` with the kernfs global mutex too: Linux's kernfs before 5.15).
    fn task_for_design(&self, p: &Params) -> Task {
        let _ = p;
        let t = self.vfs.task(Cred::root());
        if self.design == Design::Vanilla {
            t.set_walk_mode(WalkMode::Ref);
        }
        t
    }
}

fn errno(e: uvfs::Errno) -> anyhow::Error {
    anyhow!("uvfs: {e:?} ({e})")
}

/// Builds walker `walker`'s `find` tree under `/`.
fn build_tree(t: &Task, tree: &Tree, walker: usize) -> anyhow::Result<()> {
    let root = format!("/{}", Tree::root(walker));
    t.mkdirat(AT_FDCWD, &root, DIR_PERMISSIONS).map_err(errno)?;
    let root_fd = t
        .openat(AT_FDCWD, &root, OpenFlags::RDONLY | OpenFlags::DIRECTORY, 0)
        .map_err(errno)?;
    let built = tree.paths().try_for_each(|p| match p {
        TreePath::Dir(d) => t.mkdirat(root_fd, &d, DIR_PERMISSIONS),
        TreePath::File(f) => t
            .openat(
                root_fd,
                &f,
                OpenFlags::CREAT | OpenFlags::EXCL | OpenFlags::WRONLY,
                FILE_PERMISSIONS,
            )
            .and_then(|fd| t.close(fd)),
    });
    t.close(root_fd).map_err(errno)?;
    built.map_err(errno)
}

/// `find`'s walk of directory `name` of `parent` (see [`crate::find`]): `getdents64` into
/// `buf`, `fstatat(AT_SYMLINK_NOFOLLOW)` of each entry, then the subdirectories; each stat
/// counted in `count`.
fn uvfs_walk(
    t: &Task,
    parent: i32,
    name: &[u8],
    buf: &mut [u8],
    count: &mut WalkCount,
) -> uvfs::Result<()> {
    let fd = t.openat(parent, name, OpenFlags::RDONLY | OpenFlags::DIRECTORY, 0)?;
    let listed = (|| {
        let mut subdirs: Vec<Vec<u8>> = Vec::new();
        loop {
            let n = t.getdents64(fd, buf)?;
            if n == 0 {
                break;
            }
            for name in dirent64_names(&buf[..n]) {
                let st = t.fstatat(fd, name, AtFlags::SYMLINK_NOFOLLOW)?;
                if count.add_mode(st.mode) == EntryKind::Directory {
                    subdirs.push(name.to_vec());
                }
            }
        }
        subdirs
            .iter()
            .try_for_each(|d| uvfs_walk(t, fd, d, buf, count))
    })();
    let closed = t.close(fd);
    listed.and(closed)
}

/// `walks` walks of walker `walker`'s tree under `/`, checked.
fn uvfs_find(t: &Task, tree: &Tree, walker: usize, walks: u64) -> anyhow::Result<()> {
    let root = format!("/{}", Tree::root(walker));
    let mut buf = vec![0u8; GETDENTS_BUF_BYTES];
    let mut count = WalkCount::default();
    for _ in 0..walks {
        uvfs_walk(t, AT_FDCWD, root.as_bytes(), &mut buf, &mut count).map_err(errno)?;
    }
    count.check(tree, walks, walker)
}

impl Uvfs {
    /// `find`: each walker its own task (`Task::fork`: its own fd table), forked before the
    /// clock starts.
    fn run_find(&self, p: &Params, ops: u64) -> anyhow::Result<Duration> {
        let tree = p.find_tree()?;
        let walks = tree.walks(ops)?;
        let tasks: Vec<std::sync::Mutex<Option<Task>>> = (0..p.threads)
            .map(|_| std::sync::Mutex::new(Some(self.task.fork())))
            .collect();
        timed_threads(p.threads, |walker| {
            let t = tasks[walker]
                .lock()
                .expect("not poisoned")
                .take()
                .expect("one task per walker");
            uvfs_find(&t, &tree, walker, walks)
        })
    }
}

impl Uvfs {
    /// The pipe workloads, each thread a task sharing the main task's fd table (perf's
    /// thread mode shares one); "vanilla" with anonymous pipes stamping their times as Linux
    /// did before 2025 ([`uvfs::fs::pipefs::set_vanilla_pipe_times`]) for this run only.
    fn run_pipes(&self, p: &Params, ops: u64) -> anyhow::Result<Duration> {
        let sys = UvfsPipes {
            task: &self.task,
            design: self.design,
        };
        let vanilla = self.design == Design::Vanilla;
        if vanilla {
            uvfs::fs::pipefs::set_vanilla_pipe_times(true);
        }
        let r = match p.workload {
            Workload::Messaging => pipes::messaging(&sys, p.messaging_size()?),
            Workload::PipePingpong => pipes::pingpong(&sys, ops),
            _ => pipes::bulk(&sys, ops),
        };
        if vanilla {
            uvfs::fs::pipefs::set_vanilla_pipe_times(false);
        }
        r
    }
}

/// The pipe workloads' calls on uvfs: `Task::pipe2`, `read`, `write`, `fionread`, each thread
/// through its own task made with `Task::clone_thread`.
pub struct UvfsPipes<'a> {
    /// The task the threads' tasks are cloned from; it makes the pipes.
    pub task: &'a Task,
    /// The design the pipes must have: `pipe` refuses to make one of the other (a vanilla
    /// run whose switch is off would measure uvfs twice).
    pub design: Design,
}

impl PipeSys for UvfsPipes<'_> {
    type Fd = i32;
    type Thread = Task;

    fn pipe(&self) -> anyhow::Result<(i32, i32)> {
        let vanilla = uvfs::fs::pipefs::vanilla_pipe_times();
        if vanilla != (self.design == Design::Vanilla) {
            bail!(
                "uvfs: a {:?} run with pre-2025 pipe times {}",
                self.design,
                if vanilla { "on" } else { "off" }
            );
        }
        let [r, w] = self.task.pipe2(OpenFlags::empty()).map_err(errno)?;
        Ok((r, w))
    }

    fn thread(&self) -> Task {
        self.task.clone_thread()
    }

    #[inline]
    fn read(t: &Task, fd: &i32, buf: &mut [u8]) -> anyhow::Result<usize> {
        t.read(*fd, buf).map_err(errno)
    }

    #[inline]
    fn write(t: &Task, fd: &i32, buf: &[u8]) -> anyhow::Result<usize> {
        t.write(*fd, buf).map_err(errno)
    }

    fn unread(&self, fd: &i32) -> anyhow::Result<usize> {
        let n = self.task.fionread(*fd).map_err(errno)?;
        Ok(usize::try_from(n)?)
    }

    fn close(&self, fd: i32) -> anyhow::Result<()> {
        self.task.close(fd).map_err(errno)
    }
}

impl Column for Uvfs {
    fn name(&self) -> &'static str {
        match self.design {
            Design::Current => "uvfs",
            Design::Vanilla => "uvfs-vanilla",
            Design::VanillaNotify => "uvfs-vanilla-notify",
            Design::TmpfsReference => "uvfs-tmpfs",
        }
    }

    fn supports(&self, p: &Params) -> Support {
        if !uvfs::vfs::notify::COMPILED && (p.watch != Watch::None || self.design.vanilla_hooks(p))
        {
            return Support::No("skipped: built without notification".into());
        }
        match (self.design, p.workload) {
            (Design::TmpfsReference, Workload::SysfsOpenRead) => Support::Yes,
            (Design::TmpfsReference, _) => Support::No(TMPFS_REFERENCE_ONLY.into()),
            (Design::Vanilla, Workload::CreateUnlink) => {
                Support::No("no vanilla design for this workload yet".into())
            }
            (Design::VanillaNotify, Workload::Write1 | Workload::Messaging) => Support::Yes,
            (Design::VanillaNotify, Workload::Write1Watch) => {
                Support::No(VANILLA_NOTIFY_IS_VANILLA.into())
            }
            (Design::VanillaNotify, _) => Support::No(VANILLA_NOTIFY_ONLY.into()),
            _ => Support::Yes,
        }
    }

    fn setup(&mut self, p: &Params) -> anyhow::Result<()> {
        // A fresh namespace per configuration, so every one starts from an empty tmpfs.
        self.remove_watch()?;
        self.vfs = Vfs::new();
        self.task = self.task_for_design(p);
        self.sibling = None;
        self.names.clear();
        self.sysfs = None;
        self.reads = None;
        let t = &self.task;
        let data = [7u8; SMALL_FILE_BYTES];
        let mk = |path: &str| -> anyhow::Result<i32> {
            let fd = t
                .openat(AT_FDCWD, path, OpenFlags::CREAT | OpenFlags::RDWR, 0o644)
                .map_err(errno)?;
            t.pwrite(fd, &data, 0).map_err(errno)?;
            Ok(fd)
        };
        match p.workload {
            Workload::Write1 | Workload::Read1 => {
                self.fd = mk("/f")?;
                if self.design == Design::Vanilla {
                    self.sibling = Some(t.clone_thread());
                }
            }
            Workload::Write1Watch => {
                t.mkdirat(AT_FDCWD, format!("/{WATCH_DIR}"), 0o755)
                    .map_err(errno)?;
                let u = mk(&format!("/{UNRELATED_FILE}"))?;
                t.close(u).map_err(errno)?;
                self.fd = mk(&format!("/{WRITTEN_FILE}"))?;
                let sys = UvfsNotify::new(t.clone_thread());
                let w = Watcher::place(&sys, p.watch)?;
                self.watch.set(sys, w);
            }
            Workload::OpenReadClose => {
                let n = if p.sharing == Sharing::PerThread {
                    p.threads
                } else {
                    1
                };
                for i in 0..n {
                    let name = format!("/f{i}");
                    let fd = mk(&name)?;
                    t.close(fd).map_err(errno)?;
                    self.names.push(name);
                }
            }
            Workload::StatWalk => {
                let comps = walk_components(p.depth);
                let mut path = String::new();
                for c in &comps[..comps.len() - 1] {
                    path.push('/');
                    path.push_str(c);
                    t.mkdirat(AT_FDCWD, &path, 0o755).map_err(errno)?;
                }
                path.push('/');
                path.push_str(comps.last().expect("a file"));
                let fd = mk(&path)?;
                t.close(fd).map_err(errno)?;
                self.names.push(path);
            }
            Workload::CreateUnlink => {
                for i in 0..p.threads {
                    let d = if p.sharing == Sharing::PerThread {
                        format!("/d{i}")
                    } else {
                        "/d0".to_string()
                    };
                    if i == 0 || p.sharing == Sharing::PerThread {
                        t.mkdirat(AT_FDCWD, &d, 0o755).map_err(errno)?;
                    }
                    self.names.push(format!("{d}/t{i}"));
                }
            }
            Workload::Find => {
                let tree = p.find_tree()?;
                for walker in 0..p.threads {
                    build_tree(t, &tree, walker)?;
                    // The warm-up walk, checked.
                    uvfs_find(t, &tree, walker, 1)?;
                }
            }
            // Each run makes its own pipes.
            Workload::Messaging | Workload::PipePingpong | Workload::PipeBulk => {}
            Workload::SysfsOpenRead => {
                let backing = match self.design {
                    Design::TmpfsReference => Backing::Tmpfs,
                    _ => Backing::Sysfs,
                };
                let cpus = Cpus::read();
                self.sysfs = mount_on_uvfs(t, backing, &cpus)?;
                self.reads = Some(Reads::new(&cpus, p));
            }
        }
        Ok(())
    }

    fn run(&mut self, p: &Params, ops: u64) -> anyhow::Result<Duration> {
        // The vanilla hooks for this run only, off again when it returns.
        let _hooks = self.design.vanilla_hooks(p).then(VanillaHooks::on);
        // And the pre-5.15 kernfs locking; a run whose switch is not as its design says would
        // measure the other design.
        let _locking = self.design.vanilla_kernfs(p).then(VanillaLocking::on);
        if p.workload == Workload::SysfsOpenRead
            && vanilla_locking_on() != self.design.vanilla_kernfs(p)
        {
            bail!(
                "{}: a run with the pre-5.15 kernfs locking {}",
                self.name(),
                if vanilla_locking_on() { "on" } else { "off" }
            );
        }
        if p.workload == Workload::Find {
            return self.run_find(p, ops);
        }
        if p.workload.uses_pipes() {
            return self.run_pipes(p, ops);
        }
        let threads = p.threads;
        // Thread 0 uses the main task; the others clones sharing its fd table (built before
        // the clock starts, moved into their threads), or for `sysfs-open-read` forks with
        // tables of their own, as the host's threads have there (`crate::sysfs`).
        let clones: Vec<std::sync::Mutex<Option<Task>>> = (1..threads)
            .map(|_| {
                std::sync::Mutex::new(Some(if p.workload == Workload::SysfsOpenRead {
                    self.task.fork()
                } else {
                    self.task.clone_thread()
                }))
            })
            .collect();
        let main = std::sync::Mutex::new(Some(std::mem::replace(
            &mut self.task,
            self.vfs.task(Cred::root()),
        )));
        let take = |i: usize| -> Task {
            let slot = if i == 0 { &main } else { &clones[i - 1] };
            slot.lock()
                .expect("not poisoned")
                .take()
                .expect("one task per thread")
        };
        let fd = self.fd;
        let names = &self.names;
        let reads = self.reads.as_ref();
        let checked_before = self.sysfs_checks();
        if let Some(reads) = reads.filter(|_| p.workload == Workload::SysfsOpenRead) {
            reads.begin_run();
        }
        let r = timed_threads(threads, |i| {
            let t = take(i);
            let r = (|| -> anyhow::Result<()> {
                match p.workload {
                    Workload::Write1 | Workload::Write1Watch => {
                        for _ in 0..ops {
                            t.pwrite(fd, b"x", 0).map_err(errno)?;
                        }
                    }
                    Workload::Read1 => {
                        let mut b = [0u8; 1];
                        for _ in 0..ops {
                            t.pread(fd, &mut b, 0).map_err(errno)?;
                        }
                    }
                    Workload::OpenReadClose => {
                        let name = &names[i % names.len()];
                        let mut b = [0u8; READ_BYTES];
                        for _ in 0..ops {
                            let f = t
                                .openat(AT_FDCWD, name, OpenFlags::RDONLY, 0)
                                .map_err(errno)?;
                            t.read(f, &mut b).map_err(errno)?;
                            t.close(f).map_err(errno)?;
                        }
                    }
                    Workload::StatWalk => {
                        let name = &names[0];
                        for _ in 0..ops {
                            t.fstatat(AT_FDCWD, name, AtFlags::empty()).map_err(errno)?;
                        }
                    }
                    Workload::SysfsOpenRead => {
                        let reads = reads.ok_or_else(|| anyhow!("no sysfs files"))?;
                        reads.thread(i, ops, |path, buf| uvfs_open_read_close(&t, path, buf))?;
                    }
                    Workload::Find => return Err(anyhow!("find is run by run_find")),
                    Workload::Messaging | Workload::PipePingpong | Workload::PipeBulk => {
                        return Err(anyhow!("pipe workloads are run by run_pipes"))
                    }
                    Workload::CreateUnlink => {
                        let name = &names[i];
                        for _ in 0..ops {
                            let f = t
                                .openat(
                                    AT_FDCWD,
                                    name,
                                    OpenFlags::CREAT | OpenFlags::EXCL | OpenFlags::WRONLY,
                                    0o644,
                                )
                                .map_err(errno)?;
                            t.close(f).map_err(errno)?;
                            t.unlinkat(AT_FDCWD, name, AtFlags::empty())
                                .map_err(errno)?;
                        }
                    }
                }
                Ok(())
            })();
            if i == 0 {
                *main.lock().expect("not poisoned") = Some(t);
            }
            r
        });
        self.task = main
            .into_inner()
            .expect("not poisoned")
            .ok_or_else(|| anyhow!("main task lost"))?;
        if let (Ok(_), Some(reads), Workload::SysfsOpenRead) = (&r, &self.reads, p.workload) {
            return reads.end_run(checked_before, threads, ops);
        }
        r
    }

    fn teardown(&mut self) {
        if let Err(e) = self.remove_watch() {
            eprintln!("{}: removing the watch: {e:#}", self.name());
        }
        self.sibling = None;
        self.names.clear();
        self.reads = None;
        self.sysfs = None;
    }

    fn note(&self) -> &'static str {
        match self.design {
            Design::Current => {
                "uvfs: in process, no syscall boundary or user copies; threads are tasks sharing one fd table, as the host's threads do (find: each walker its own task, Task::fork); pipe workloads: anonymous pipes do no timestamp work (Linux since 2025); sysfs-open-read: uvfs's sysfs (the host's cpu topology) mounted at /sys, each thread a task with an fd table of its own (Task::fork), as the host's threads there"
            }
            Design::Vanilla => {
                "uvfs-vanilla: uvfs with the replaced design — locked walk with a reference per component (ref-walk); write1/read1 through a shared fd table; write1-watch with the notification hooks of Linux before 2015 (every hook enters the mark read side and walks the empty mark lists); pipe workloads with anonymous pipes stamping atime on reads and mtime/ctime on writes as Linux did before 2025 (strictatime, as on pipe_mnt); sysfs-open-read: Linux's kernfs before 5.15: ref-walk, and one global mutex taken twice at every kernfs component (kernfs_iop_permission around kernfs_refresh_inode, kernfs_dop_revalidate)"
            }
            Design::TmpfsReference => {
                "uvfs-tmpfs: sysfs-open-read only, the same /sys/devices/system/cpu/cpuN/topology/core_id paths and contents on a uvfs tmpfs mounted at /sys (the reference: uvfs's tmpfs walk and open)"
            }
            Design::VanillaNotify => {
                "uvfs-vanilla-notify: uvfs with only the notification hooks of Linux before 2015 (every hook enters the mark read side and walks the empty mark lists), on write1 and messaging"
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn find_params(walkers: usize) -> Params {
        Params {
            workload: Workload::Find,
            threads: walkers,
            depth: 1,
            sharing: Sharing::PerThread,
            tree: Some(Tree::default_for(true)),
            messaging: None,
            watch: Watch::None,
        }
    }

    /// Both designs walk two trees whole; a file removed behind one walker's back makes the
    /// next sample an error naming that walker and its count (oracle: the tree as built).
    #[test]
    fn find_walks_whole_trees_and_fails_on_a_short_walk() {
        for design in [Design::Current, Design::Vanilla] {
            let p = find_params(2);
            let tree = p.find_tree().expect("a find configuration");
            let mut col = Uvfs::new(design);
            col.setup(&p).expect("setup");
            let d = col.run(&p, 2 * tree.entries()).expect("two whole walks");
            assert!(d > Duration::ZERO);
            col.task
                .unlinkat(AT_FDCWD, "/w1/d0/f0", AtFlags::empty())
                .expect("unlink");
            let e = col.run(&p, tree.entries()).expect_err("walker 1 is short");
            assert!(
                format!("{e:#}").contains("walker 1 stat'ed 1999 files, 10 directories"),
                "{design:?}: {e:#}"
            );
            col.run(&p, tree.entries() - 1)
                .expect_err("not a whole walk");
            col.teardown();
        }
    }
}
