//! The host kernel: the same work through real system calls on a private tmpfs.

use std::ffi::{CStr, CString};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::Barrier;
use std::time::{Duration, Instant};

use anyhow::anyhow;
use rustix::fs::{mkdirat, openat, statat, unlinkat, AtFlags, Mode, OFlags, RawDir};
use rustix::io::{pread, pwrite, read};

use super::host_notify::{fanotify_support, HostNotify};
use crate::column::{Column, Support, HOST, HOST_IN_DIR};
use crate::find::{
    EntryKind, Tree, TreePath, WalkCount, DIR_PERMISSIONS, FILE_PERMISSIONS, GETDENTS_BUF_BYTES,
};
use crate::params::{walk_components, Params, Sharing, Workload};
use crate::pipes::{self, PipeSys};
use crate::private_tmpfs::{Backing, PrivateTmpfs};
use crate::sysfs::{self, Cpus, Reads};
use crate::watch::{Placed, Watch, WatchState, Watcher, UNRELATED_FILE, WATCH_DIR, WRITTEN_FILE};

/// Bytes in the small file that `read1` and `open-read-close` read.
pub const SMALL_FILE_BYTES: usize = 64;
/// Bytes `open-read-close` reads.
pub const READ_BYTES: usize = 32;

/// The host kernel on a tmpfs mounted for the run.
pub struct Host {
    tmpfs: PrivateTmpfs,
    /// Per-configuration state: the open file of write1/read1, the targets of the others.
    file: Option<OwnedFd>,
    names: Vec<CString>,
    /// The watch of a `write1-watch` configuration, and the calls it was placed with.
    watch: Placed<HostNotify>,
    /// The host's sysfs files of a `sysfs-open-read` configuration.
    sysfs: Option<Reads>,
}

impl Host {
    /// Mounts a private tmpfs under the system temporary directory. If that is impossible (not
    /// root and no user namespace), the column works in a plain directory there and is named
    /// [`HOST_IN_DIR`].
    pub fn new() -> Host {
        Host {
            tmpfs: PrivateTmpfs::mount_or_dir(&format!("uvfs-bench-host-{}", std::process::id())),
            file: None,
            names: Vec::new(),
            watch: Placed::default(),
            sysfs: None,
        }
    }

    /// What the watch of the current `write1-watch` configuration has seen so far (nothing
    /// without one).
    ///
    /// # Errors
    /// `FIONREAD` failed.
    pub fn watch_state(&self) -> anyhow::Result<WatchState> {
        self.watch.state()
    }

    /// Waits until the draining thread of the current configuration's watch has read at
    /// least `events` events or `timeout` has passed; the count it has read (0 without one).
    pub fn wait_drained(&self, events: u64, timeout: std::time::Duration) -> u64 {
        self.watch.wait_drained(events, timeout)
    }

    /// The reads checked so far in the current `sysfs-open-read` configuration (0 without
    /// one).
    pub fn sysfs_checks(&self) -> u64 {
        self.sysfs.as_ref().map_or(0, Reads::checks)
    }

    /// Removes the watch of a `write1-watch` configuration, if any.
    fn remove_watch(&mut self) -> anyhow::Result<()> {
        self.watch.remove()
    }

    fn clear(&mut self) -> anyhow::Result<()> {
        let removed = self.remove_watch();
        self.file = None;
        self.names.clear();
        self.sysfs = None;
        // Start every configuration from an empty tmpfs (if there is one: sysfs-open-read
        // runs without).
        if self.tmpfs.support() == Support::Yes {
            self.tmpfs.clear()?;
        }
        removed
    }
}

impl Default for Host {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        // Close the file and the watch before the tmpfs is unmounted.
        let _ = self.remove_watch();
        self.file = None;
    }
}

fn cstr(s: &str) -> CString {
    CString::new(s).expect("bench names have no NUL")
}

/// Runs `f(thread_index)` on `threads` threads started together; returns the wall time from
/// the first thread's start to the last thread's end.
///
/// Each thread reads the clock itself as it leaves the barrier and as it finishes. The main
/// thread's clock read after the barrier would race with the workers: on a 2-vCPU VM it was
/// sometimes descheduled there until a worker had nearly finished, and a sample of a 1-byte
/// write loop came out at 0.9 ns per write.
pub fn timed_threads(
    threads: usize,
    f: impl Fn(usize) -> anyhow::Result<()> + Sync,
) -> anyhow::Result<Duration> {
    let barrier = Barrier::new(threads);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|i| {
                let (b, f) = (&barrier, &f);
                s.spawn(move || {
                    b.wait();
                    let start = Instant::now();
                    let r = f(i);
                    (start, Instant::now(), r)
                })
            })
            .collect();
        let mut result = Ok(());
        let mut span: Option<(Instant, Instant)> = None;
        for h in handles {
            match h.join() {
                Ok((start, end, r)) => {
                    result = result.and(r);
                    span = Some(span.map_or((start, end), |(s0, e0)| (s0.min(start), e0.max(end))));
                }
                Err(_) => result = Err(anyhow!("a benchmark thread panicked")),
            }
        }
        let (start, end) = span.ok_or_else(|| anyhow!("no benchmark thread"))?;
        result.map(|()| end - start)
    })
}

/// Builds walker `walker`'s `find` tree under `dir`.
fn build_tree(dir: BorrowedFd<'_>, tree: &Tree, walker: usize) -> anyhow::Result<()> {
    let root = Tree::root(walker);
    mkdirat(dir, root.as_str(), Mode::from_raw_mode(DIR_PERMISSIONS))?;
    let root = openat(
        dir,
        root.as_str(),
        OFlags::RDONLY | OFlags::DIRECTORY,
        Mode::empty(),
    )?;
    for p in tree.paths() {
        match p {
            TreePath::Dir(d) => mkdirat(&root, d.as_str(), Mode::from_raw_mode(DIR_PERMISSIONS))?,
            TreePath::File(f) => drop(openat(
                &root,
                f.as_str(),
                OFlags::CREATE | OFlags::EXCL | OFlags::WRONLY,
                Mode::from_raw_mode(FILE_PERMISSIONS),
            )?),
        }
    }
    Ok(())
}

/// `find`'s walk of directory `name` of `parent` (see [`crate::find`]): `getdents64` into
/// `buf`, `fstatat(AT_SYMLINK_NOFOLLOW)` of each entry, then the subdirectories; each stat
/// counted in `count`.
fn host_walk(
    parent: BorrowedFd<'_>,
    name: &CStr,
    buf: &mut [MaybeUninit<u8>],
    count: &mut WalkCount,
) -> anyhow::Result<()> {
    let fd = openat(
        parent,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    let mut subdirs: Vec<CString> = Vec::new();
    let mut listing = RawDir::new(fd.as_fd(), buf);
    while let Some(entry) = listing.next() {
        let entry = entry?;
        let name = entry.file_name();
        if name == c"." || name == c".." {
            continue;
        }
        let st = statat(&fd, name, AtFlags::SYMLINK_NOFOLLOW)?;
        if count.add_mode(st.st_mode) == EntryKind::Directory {
            subdirs.push(name.to_owned());
        }
    }
    for d in &subdirs {
        host_walk(fd.as_fd(), d, buf, count)?;
    }
    Ok(())
}

/// `walks` walks of walker `walker`'s tree under `dir`, checked.
fn host_find(dir: BorrowedFd<'_>, tree: &Tree, walker: usize, walks: u64) -> anyhow::Result<()> {
    let root = cstr(&Tree::root(walker));
    let mut buf = vec![MaybeUninit::<u8>::uninit(); GETDENTS_BUF_BYTES];
    let mut count = WalkCount::default();
    for _ in 0..walks {
        host_walk(dir, &root, &mut buf, &mut count)?;
    }
    count.check(tree, walks, walker)
}

impl Column for Host {
    fn name(&self) -> &'static str {
        match self.tmpfs.backing() {
            Backing::Tmpfs => HOST,
            Backing::PlainDir => HOST_IN_DIR,
        }
    }

    fn supports(&self, p: &Params) -> Support {
        if p.workload == Workload::SysfsOpenRead {
            // The host's own /sys, not the private tmpfs.
            return sysfs::host_support();
        }
        match self.tmpfs.support() {
            // A mount mark on the plain directory's file system would see every other
            // process's writes there.
            Support::Yes
                if p.watch == Watch::Mount && self.tmpfs.backing() == Backing::PlainDir =>
            {
                Support::No("skipped: no private tmpfs to mark".into())
            }
            Support::Yes if p.watch == Watch::Mount => fanotify_support(),
            s => s,
        }
    }

    fn setup(&mut self, p: &Params) -> anyhow::Result<()> {
        self.clear()?;
        if p.workload == Workload::SysfsOpenRead {
            self.sysfs = Some(Reads::new(&Cpus::read(), p));
            return Ok(());
        }
        let dir = self.tmpfs.dir()?.try_clone_to_owned()?;
        let data = [7u8; SMALL_FILE_BYTES];
        let mk = |name: &CString| -> anyhow::Result<OwnedFd> {
            let fd = openat(
                &dir,
                name.as_c_str(),
                OFlags::CREATE | OFlags::RDWR,
                Mode::from_raw_mode(0o644),
            )?;
            pwrite(&fd, &data, 0)?;
            Ok(fd)
        };
        match p.workload {
            Workload::Write1 | Workload::Read1 => {
                self.file = Some(mk(&cstr("f"))?);
            }
            Workload::Write1Watch => {
                mkdirat(&dir, WATCH_DIR, Mode::from_raw_mode(DIR_PERMISSIONS))?;
                drop(mk(&cstr(UNRELATED_FILE))?);
                self.file = Some(mk(&cstr(WRITTEN_FILE))?);
                let sys = HostNotify::new(self.tmpfs.path().to_path_buf(), dir.try_clone()?);
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
                    let name = cstr(&format!("f{i}"));
                    mk(&name)?;
                    self.names.push(name);
                }
            }
            Workload::StatWalk => {
                let comps = walk_components(p.depth);
                let mut path = String::new();
                for c in &comps[..comps.len() - 1] {
                    path.push_str(c);
                    rustix::fs::mkdirat(&dir, path.as_str(), Mode::from_raw_mode(0o755))?;
                    path.push('/');
                }
                path.push_str(comps.last().expect("a file"));
                mk(&cstr(&path))?;
                self.names.push(cstr(&path));
            }
            Workload::CreateUnlink => {
                for i in 0..p.threads {
                    let d = if p.sharing == Sharing::PerThread {
                        format!("d{i}/")
                    } else {
                        "d0/".to_string()
                    };
                    if i == 0 || p.sharing == Sharing::PerThread {
                        rustix::fs::mkdirat(&dir, &d[..d.len() - 1], Mode::from_raw_mode(0o755))?;
                    }
                    self.names.push(cstr(&format!("{d}t{i}")));
                }
            }
            Workload::Find => {
                let tree = p.find_tree()?;
                for walker in 0..p.threads {
                    build_tree(dir.as_fd(), &tree, walker)?;
                    // The warm-up walk, checked.
                    host_find(dir.as_fd(), &tree, walker, 1)?;
                }
            }
            // Each run makes its own pipes.
            Workload::Messaging | Workload::PipePingpong | Workload::PipeBulk => {}
            Workload::SysfsOpenRead => {}
        }
        Ok(())
    }

    fn run(&mut self, p: &Params, ops: u64) -> anyhow::Result<Duration> {
        if p.workload == Workload::SysfsOpenRead {
            let reads = self
                .sysfs
                .as_ref()
                .ok_or_else(|| anyhow!("no sysfs files"))?;
            let before = reads.checks();
            reads.begin_run();
            timed_threads(p.threads, |i| {
                sysfs::host_own_fd_table()?;
                reads.thread(i, ops, sysfs::host_open_read_close)
            })?;
            return reads.end_run(before, p.threads, ops);
        }
        let dir = self.tmpfs.dir()?;
        match p.workload {
            Workload::Write1 | Workload::Write1Watch => {
                let fd = self.file.as_ref().ok_or_else(|| anyhow!("no file"))?;
                timed_threads(1, |_| {
                    for _ in 0..ops {
                        pwrite(fd, b"x", 0)?;
                    }
                    Ok(())
                })
            }
            Workload::Read1 => {
                let fd = self.file.as_ref().ok_or_else(|| anyhow!("no file"))?;
                timed_threads(1, |_| {
                    let mut b = [0u8; 1];
                    for _ in 0..ops {
                        pread(fd, &mut b, 0)?;
                    }
                    Ok(())
                })
            }
            Workload::OpenReadClose => {
                let names = &self.names;
                timed_threads(p.threads, |i| {
                    let name = &names[i % names.len()];
                    let mut b = [0u8; READ_BYTES];
                    for _ in 0..ops {
                        let fd =
                            openat(dir.as_fd(), name.as_c_str(), OFlags::RDONLY, Mode::empty())?;
                        read(&fd, &mut b)?;
                        drop(fd);
                    }
                    Ok(())
                })
            }
            Workload::StatWalk => {
                let name = &self.names[0];
                timed_threads(p.threads, |_| {
                    for _ in 0..ops {
                        statat(dir.as_fd(), name.as_c_str(), AtFlags::empty())?;
                    }
                    Ok(())
                })
            }
            Workload::CreateUnlink => {
                let names = &self.names;
                timed_threads(p.threads, |i| {
                    let name = names[i].as_c_str();
                    for _ in 0..ops {
                        let fd = openat(
                            dir.as_fd(),
                            name,
                            OFlags::CREATE | OFlags::EXCL | OFlags::WRONLY,
                            Mode::from_raw_mode(0o644),
                        )?;
                        drop(fd);
                        unlinkat(dir.as_fd(), name, AtFlags::empty())?;
                    }
                    Ok(())
                })
            }
            Workload::Find => {
                let tree = p.find_tree()?;
                let walks = tree.walks(ops)?;
                timed_threads(p.threads, |walker| host_find(dir, &tree, walker, walks))
            }
            Workload::Messaging => pipes::messaging(&HostPipes, p.messaging_size()?),
            Workload::PipePingpong => pipes::pingpong(&HostPipes, ops),
            Workload::PipeBulk => pipes::bulk(&HostPipes, ops),
            Workload::SysfsOpenRead => Err(anyhow!("sysfs-open-read is run above")),
        }
    }

    fn teardown(&mut self) {
        let _ = self.clear();
    }

    fn note(&self) -> &'static str {
        match self.tmpfs.backing() {
            Backing::Tmpfs => "host: real system calls on a private tmpfs (paths relative to its directory fd); sysfs-open-read: on the host's own /sys, each thread with an fd table of its own (unshare(CLONE_FILES)); other threads (find: walkers) share the process's fd table",
            Backing::PlainDir => "host (not tmpfs): real system calls in a plain directory under the system temporary directory, on whatever file system that is, because no private tmpfs could be mounted (not root and no user namespace); sysfs-open-read: on the host's own /sys, each thread with an fd table of its own (unshare(CLONE_FILES)); other threads (find: walkers) share the process's fd table",
        }
    }
}

/// The pipe workloads' calls as real system calls: `pipe2`, `read`, `write`, `FIONREAD`.
pub struct HostPipes;

impl PipeSys for HostPipes {
    type Fd = OwnedFd;
    type Thread = ();

    fn pipe(&self) -> anyhow::Result<(OwnedFd, OwnedFd)> {
        Ok(rustix::pipe::pipe_with(rustix::pipe::PipeFlags::empty())?)
    }

    fn thread(&self) {}

    #[inline]
    fn read(_: &(), fd: &OwnedFd, buf: &mut [u8]) -> anyhow::Result<usize> {
        Ok(read(fd, buf)?)
    }

    #[inline]
    fn write(_: &(), fd: &OwnedFd, buf: &[u8]) -> anyhow::Result<usize> {
        Ok(rustix::io::write(fd, buf)?)
    }

    fn unread(&self, fd: &OwnedFd) -> anyhow::Result<usize> {
        Ok(usize::try_from(rustix::io::ioctl_fionread(fd)?)?)
    }

    fn close(&self, fd: OwnedFd) -> anyhow::Result<()> {
        // close(2) reports nothing rustix passes on; the kernel frees the fd regardless.
        drop(fd);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The host walks two trees whole; a file removed behind one walker's back makes the
    /// next sample an error naming that walker and its count (oracle: the tree as built).
    #[test]
    fn find_walks_whole_trees_and_fails_on_a_short_walk() {
        let p = Params {
            workload: Workload::Find,
            threads: 2,
            depth: 1,
            sharing: Sharing::PerThread,
            tree: Some(Tree::default_for(true)),
            messaging: None,
            watch: Watch::None,
        };
        let tree = p.find_tree().expect("a find configuration");
        let mut host = Host::new();
        if let Support::No(why) = host.supports(&p) {
            eprintln!("{why}");
            return;
        }
        host.setup(&p).expect("setup");
        let d = host.run(&p, 2 * tree.entries()).expect("two whole walks");
        assert!(d > Duration::ZERO);
        unlinkat(
            host.tmpfs.dir().expect("mounted"),
            "w1/d0/f0",
            AtFlags::empty(),
        )
        .expect("unlink");
        let e = host.run(&p, tree.entries()).expect_err("walker 1 is short");
        assert!(
            format!("{e:#}").contains("walker 1 stat'ed 1999 files, 10 directories"),
            "{e:#}"
        );
        host.teardown();
    }
}
