//! The host kernel's scale column: the testcases' loops as real system calls on a private
//! tmpfs, its copies threads of this process (threads mode) or forked processes (processes
//! mode).

use std::ffi::CStr;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use rustix::fs::{openat, unlinkat, AtFlags, FallocateFlags, Mode as FileMode, OFlags, SeekFrom};

use super::board::{Board, CopyEnd, Fail};
use super::calls::{Calls, LockKind, OpenKind};
use super::host_sys::{
    fork_echo, ino_of_raw_fd, run_processes, setlkw_byte0, wait_child, HostPollSet, SharedBoard,
};
use super::spawn::{self, Spawn};
use super::threads::run_threads;
use super::{Config, Mode, Run, ScaleColumn};
use crate::column::{Support, HOST, HOST_IN_DIR};
use crate::private_tmpfs::{Backing, PrivateTmpfs};

/// Fds this process may hold beyond what a testcase's copies hold (the progress bar, the
/// test harness, the tmpfs's directory).
const FD_SLACK: usize = 64;

/// The host kernel on a tmpfs mounted for the run.
pub struct HostScale {
    tmpfs: PrivateTmpfs,
}

impl HostScale {
    /// Mounts a private tmpfs under the system temporary directory, as the seed workloads'
    /// host column does; if that is impossible (not root and no user namespace), works in a
    /// plain directory there and is named [`HOST_IN_DIR`].
    pub fn new() -> HostScale {
        // One mount per column, even with several in one process (the tests make several).
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        HostScale {
            tmpfs: PrivateTmpfs::mount_or_dir(&format!(
                "uvfs-bench-scale-{}-{n}",
                std::process::id()
            )),
        }
    }

    /// The directory the testcases' paths are relative to (for tests to inspect).
    pub fn dir_path(&self) -> &Path {
        self.tmpfs.path()
    }
}

impl Default for HostScale {
    fn default() -> Self {
        Self::new()
    }
}

/// Copies are threads of this process sharing its fd table, or forked processes with a table
/// each; the wall time of a run whose copies record no end runs until all were reaped.
impl Spawn for HostScale {
    type Calls<'a> = HostCalls<'a>;

    fn empty(&mut self) -> anyhow::Result<()> {
        self.tmpfs.clear()
    }

    fn spawn(
        &self,
        mode: Mode,
        copies: usize,
        body: &(dyn Fn(&HostCalls<'_>, usize, &Board) + Sync),
    ) -> anyhow::Result<(Duration, Vec<CopyEnd>)> {
        let calls = HostCalls {
            dir: self.tmpfs.dir()?,
            mode,
        };
        match mode {
            Mode::Threads => {
                let board = Box::<Board>::default();
                let d = run_threads(&board, vec![(); copies], |copy, ()| {
                    body(&calls, copy, &board)
                })?;
                Ok((
                    board.window(copies).map_or(d, |(window, _)| window),
                    board.ends(copies),
                ))
            }
            Mode::Processes => {
                let board = SharedBoard::new()?;
                let d = run_processes(&board, copies, &|copy| body(&calls, copy, &board))?;
                Ok((
                    board.window(copies).map_or(d, |(window, _)| window),
                    board.ends(copies),
                ))
            }
        }
    }
}

/// The testcases' calls as real system calls relative to the tmpfs's directory fd. Nothing in
/// here allocates: it runs in forked children too.
pub struct HostCalls<'a> {
    dir: BorrowedFd<'a>,
    /// Decides what a `context_switch1` partner is: a thread or a forked process.
    mode: Mode,
}

/// A running `context_switch1` partner on the host.
pub enum HostEcho {
    /// A thread of this process (threads mode).
    Thread(std::thread::JoinHandle<Result<(), Fail>>),
    /// A process forked from the copy (processes mode).
    Process(i32),
}

fn errno(e: rustix::io::Errno) -> Fail {
    Fail::Errno(e.raw_os_error())
}

/// A threads-mode `context_switch1` partner on the host: echoes 1 byte at a time from `from`
/// to `to` until `from` reaches its end, then writes its count (as `calls::echo_loop` does);
/// both are closed when it returns.
fn host_echo(from: &OwnedFd, to: &OwnedFd) -> Result<(), Fail> {
    let mut b = [0u8; 1];
    let mut echoed = 0u64;
    loop {
        if rustix::io::read(from, &mut b).map_err(errno)? == 0 {
            break;
        }
        if rustix::io::write(to, &b).map_err(errno)? != 1 {
            return Err(Fail::Short(0));
        }
        echoed += 1;
    }
    let count = echoed.to_ne_bytes();
    match rustix::io::write(to, &count).map_err(errno)? {
        8 => Ok(()),
        n => Err(Fail::Short(n)),
    }
}

impl Calls for HostCalls<'_> {
    type Fd = OwnedFd;
    type Echo = HostEcho;
    type PollSet = HostPollSet;

    fn open(&self, path: &CStr, kind: OpenKind) -> Result<OwnedFd, Fail> {
        let flags = match kind {
            OpenKind::ReadWrite => OFlags::RDWR,
            OpenKind::CreateReadWrite => OFlags::RDWR | OFlags::CREATE,
        };
        openat(self.dir, path, flags, FileMode::from_raw_mode(0o600)).map_err(errno)
    }

    fn close(&self, fd: OwnedFd) -> Result<(), Fail> {
        // close(2) reports no error rustix passes on; the kernel frees the fd regardless.
        drop(fd);
        Ok(())
    }

    fn dup(&self, fd: &OwnedFd) -> Result<OwnedFd, Fail> {
        rustix::io::dup(fd).map_err(errno)
    }

    fn unlink(&self, path: &CStr) -> Result<(), Fail> {
        unlinkat(self.dir, path, AtFlags::empty()).map_err(errno)
    }

    fn rewind(&self, fd: &OwnedFd) -> Result<(), Fail> {
        rustix::fs::seek(fd, SeekFrom::Start(0))
            .map(|_| ())
            .map_err(errno)
    }

    fn position(&self, fd: &OwnedFd) -> Result<u64, Fail> {
        rustix::fs::seek(fd, SeekFrom::Current(0)).map_err(errno)
    }

    fn pread(&self, fd: &OwnedFd, buf: &mut [u8], offset: u64) -> Result<usize, Fail> {
        rustix::io::pread(fd, buf, offset).map_err(errno)
    }

    fn pwrite(&self, fd: &OwnedFd, buf: &[u8], offset: u64) -> Result<usize, Fail> {
        rustix::io::pwrite(fd, buf, offset).map_err(errno)
    }

    fn read(&self, fd: &OwnedFd, buf: &mut [u8]) -> Result<usize, Fail> {
        rustix::io::read(fd, buf).map_err(errno)
    }

    fn write(&self, fd: &OwnedFd, buf: &[u8]) -> Result<usize, Fail> {
        rustix::io::write(fd, buf).map_err(errno)
    }

    fn fallocate(&self, fd: &OwnedFd, offset: u64, len: u64) -> Result<(), Fail> {
        rustix::fs::fallocate(fd, FallocateFlags::empty(), offset, len).map_err(errno)
    }

    fn ftruncate(&self, fd: &OwnedFd, len: u64) -> Result<(), Fail> {
        rustix::fs::ftruncate(fd, len).map_err(errno)
    }

    fn raw(&self, fd: &OwnedFd) -> i32 {
        fd.as_raw_fd()
    }

    fn ino_of_raw(&self, fd: i32) -> Result<u64, Fail> {
        ino_of_raw_fd(fd).map_err(Fail::Errno)
    }

    fn pid(&self) -> u32 {
        rustix::process::getpid().as_raw_nonzero().get() as u32
    }

    fn pipe(&self) -> Result<(OwnedFd, OwnedFd), Fail> {
        rustix::pipe::pipe_with(rustix::pipe::PipeFlags::empty()).map_err(errno)
    }

    fn lock(&self, fd: &OwnedFd, kind: LockKind) -> Result<(), Fail> {
        let l_type = match kind {
            LockKind::Write => libc::F_WRLCK,
            LockKind::Unlock => libc::F_UNLCK,
        };
        setlkw_byte0(fd.as_raw_fd(), l_type as i16).map_err(Fail::Errno)
    }

    fn start_echo(
        &self,
        from: OwnedFd,
        to: OwnedFd,
        keep: [&OwnedFd; 2],
    ) -> Result<HostEcho, Fail> {
        match self.mode {
            Mode::Threads => std::thread::Builder::new()
                .spawn(move || host_echo(&from, &to))
                .map(HostEcho::Thread)
                .map_err(|e| Fail::Errno(e.raw_os_error().unwrap_or(libc::EAGAIN))),
            Mode::Processes => {
                let pid = fork_echo(
                    from.as_raw_fd(),
                    to.as_raw_fd(),
                    [keep[0].as_raw_fd(), keep[1].as_raw_fd()],
                )
                .map_err(Fail::Errno)?;
                // The partner's ends are its own now.
                drop(from);
                drop(to);
                Ok(HostEcho::Process(pid))
            }
        }
    }

    fn poll_add(&self, set: &mut HostPollSet, fd: &OwnedFd) {
        set.add(fd.as_raw_fd());
    }

    fn poll(&self, set: &mut HostPollSet) -> Result<usize, Fail> {
        set.poll_now().map_err(Fail::Errno)
    }

    fn eventfd(&self) -> Result<OwnedFd, Fail> {
        rustix::event::eventfd(0, rustix::event::EventfdFlags::empty()).map_err(errno)
    }

    fn join_echo(&self, echo: HostEcho) -> Result<(), Fail> {
        match echo {
            HostEcho::Thread(h) => h.join().unwrap_or(Err(Fail::Silent)),
            HostEcho::Process(pid) => wait_child(pid).map_err(Fail::Errno),
        }
    }
}

impl ScaleColumn for HostScale {
    fn name(&self) -> &'static str {
        match self.tmpfs.backing() {
            Backing::Tmpfs => HOST,
            Backing::PlainDir => HOST_IN_DIR,
        }
    }

    fn supports(&self, cfg: &Config) -> Support {
        // Room for poll2's fds: the soft limit is raised to the hard one if needed (setup);
        // beyond the hard one the configuration cannot run.
        let need = (cfg.testcase.fds_held(cfg.copies) + FD_SLACK) as u64;
        let hard = rustix::process::getrlimit(rustix::process::Resource::Nofile)
            .maximum
            .unwrap_or(u64::MAX);
        if need > hard {
            return Support::No(format!(
                "skipped: needs {need} fds, above RLIMIT_NOFILE's hard limit {hard}"
            ));
        }
        self.tmpfs.support()
    }

    fn setup(&mut self, cfg: &Config) -> anyhow::Result<()> {
        self.empty()?;
        let need = (cfg.testcase.fds_held(cfg.copies) + FD_SLACK) as u64;
        let mut lim = rustix::process::getrlimit(rustix::process::Resource::Nofile);
        if lim.current.is_some_and(|soft| soft < need) {
            lim.current = lim.maximum;
            rustix::process::setrlimit(rustix::process::Resource::Nofile, lim)?;
        }
        let root = self.tmpfs.path();
        let plan = cfg.testcase.plan(cfg.copies);
        for d in &plan.dirs {
            std::fs::create_dir(root.join(d))?;
        }
        for f in &plan.files {
            std::fs::write(root.join(&f.path), f.contents())?;
        }
        Ok(())
    }

    fn run(&mut self, cfg: &Config, ops: u64) -> anyhow::Result<Run> {
        spawn::run(self.name(), self, cfg, ops)
    }

    fn probe(&mut self, mode: Mode, copies: usize) -> anyhow::Result<Vec<CopyEnd>> {
        let ends = spawn::probe(self, mode, copies)?;
        self.empty()?;
        Ok(ends)
    }

    fn teardown(&mut self) {
        let _ = self.empty();
    }

    fn note(&self) -> &'static str {
        match self.tmpfs.backing() {
            Backing::Tmpfs => "host: real system calls on a private tmpfs; threads mode: threads of this process; processes mode: forked processes",
            Backing::PlainDir => "host (not tmpfs): real system calls in a plain directory under the system temporary directory, on whatever file system that is, because no private tmpfs could be mounted (not root and no user namespace); threads mode: threads of this process; processes mode: forked processes",
        }
    }
}
