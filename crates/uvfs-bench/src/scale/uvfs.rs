//! uvfs's scale column: the testcases' loops through `Task` calls on a fresh `Vfs` per
//! configuration, one task per copy, each on its own thread: tasks made with
//! `Task::clone_thread` (threads mode: one shared fd table) or `Task::fork` (processes mode:
//! a table each).

use std::ffi::CStr;
use std::time::Duration;

use uvfs::abi::AtFlags;
use uvfs::abi::{
    EfdFlags, FallocFlags, Flock, LockCmd, OpenFlags, PollEvents, PollFd, Whence, AT_FDCWD,
    F_UNLCK, F_WRLCK,
};
use uvfs::{Cred, Task, Vfs};

use super::board::{Board, CopyEnd, Fail};
use super::calls::{echo_loop, Calls, LockKind, OpenKind};
use super::spawn::{self, Spawn};
use super::testcase::POLL2_FDS;
use super::threads::run_threads;
use super::{Config, Mode, Run, ScaleColumn};
use crate::column::Support;

/// Fds a run may hold beyond what its testcase's copies hold.
const FD_SLACK: usize = 64;

/// uvfs in process.
pub struct UvfsScale {
    vfs: Vfs,
    /// The task the copies are made from; its cwd is the root, which the testcases' relative
    /// paths start from. It holds no fd while copies run.
    task: Task,
}

fn anyhow_errno(e: uvfs::Errno) -> anyhow::Error {
    anyhow::anyhow!("uvfs: {e:?} ({e})")
}

impl UvfsScale {
    /// A fresh namespace with a tmpfs root.
    pub fn new() -> UvfsScale {
        let vfs = Vfs::new();
        let task = vfs.task(Cred::root());
        UvfsScale { vfs, task }
    }

    /// The task the copies are made from (for tests to inspect the files after a run).
    pub fn task(&self) -> &Task {
        &self.task
    }
}

impl Default for UvfsScale {
    fn default() -> Self {
        Self::new()
    }
}

/// Copies are tasks, one thread each; the wall time of a run whose copies record no end runs
/// until all were joined.
impl Spawn for UvfsScale {
    type Calls<'a> = UvfsCalls<'a>;

    /// A fresh namespace, with an empty tmpfs root.
    fn empty(&mut self) -> anyhow::Result<()> {
        self.vfs = Vfs::new();
        self.task = self.vfs.task(Cred::root());
        Ok(())
    }

    fn spawn(
        &self,
        mode: Mode,
        copies: usize,
        body: &(dyn Fn(&UvfsCalls<'_>, usize, &Board) + Sync),
    ) -> anyhow::Result<(Duration, Vec<CopyEnd>)> {
        let tasks: Vec<Task> = (0..copies)
            .map(|_| match mode {
                Mode::Threads => self.task.clone_thread(),
                Mode::Processes => self.task.fork(),
            })
            .collect();
        let board = Box::<Board>::default();
        let d = run_threads(&board, tasks, |copy, task| {
            body(&UvfsCalls { task: &task, mode }, copy, &board)
        })?;
        Ok((
            board.window(copies).map_or(d, |(window, _)| window),
            board.ends(copies),
        ))
    }
}

/// The testcases' calls on one uvfs task.
pub struct UvfsCalls<'a> {
    task: &'a Task,
    /// Decides what a `context_switch1` partner is: a task sharing the copy's fd table
    /// (`Task::clone_thread`) or one with a copy of it (`Task::fork`).
    mode: Mode,
}

/// A running `context_switch1` partner: its task's thread.
pub type UvfsEcho = std::thread::JoinHandle<Result<(), Fail>>;

fn errno(e: uvfs::Errno) -> Fail {
    Fail::Errno(e.raw())
}

fn offset(o: u64) -> i64 {
    i64::try_from(o).unwrap_or(i64::MAX)
}

/// The `pollfd` array of `poll1`/`poll2` on uvfs.
pub struct UvfsPollSet {
    fds: [PollFd; POLL2_FDS],
    len: usize,
}

impl Default for UvfsPollSet {
    fn default() -> Self {
        UvfsPollSet {
            fds: [PollFd::new(-1, PollEvents::empty()); POLL2_FDS],
            len: 0,
        }
    }
}

impl Calls for UvfsCalls<'_> {
    type Fd = i32;
    type Echo = UvfsEcho;
    type PollSet = UvfsPollSet;

    fn open(&self, path: &CStr, kind: OpenKind) -> Result<i32, Fail> {
        let flags = match kind {
            OpenKind::ReadWrite => OpenFlags::RDWR,
            OpenKind::CreateReadWrite => OpenFlags::RDWR | OpenFlags::CREAT,
        };
        self.task
            .openat(AT_FDCWD, path.to_bytes(), flags, 0o600)
            .map_err(errno)
    }

    fn close(&self, fd: i32) -> Result<(), Fail> {
        self.task.close(fd).map_err(errno)
    }

    fn dup(&self, fd: &i32) -> Result<i32, Fail> {
        self.task.dup(*fd).map_err(errno)
    }

    fn unlink(&self, path: &CStr) -> Result<(), Fail> {
        self.task
            .unlinkat(AT_FDCWD, path.to_bytes(), AtFlags::empty())
            .map_err(errno)
    }

    fn rewind(&self, fd: &i32) -> Result<(), Fail> {
        self.task
            .lseek(*fd, 0, Whence::SET)
            .map(|_| ())
            .map_err(errno)
    }

    fn position(&self, fd: &i32) -> Result<u64, Fail> {
        self.task
            .lseek(*fd, 0, Whence::CUR)
            .map(|p| u64::try_from(p).unwrap_or(0))
            .map_err(errno)
    }

    fn pread(&self, fd: &i32, buf: &mut [u8], at: u64) -> Result<usize, Fail> {
        self.task.pread(*fd, buf, offset(at)).map_err(errno)
    }

    fn pwrite(&self, fd: &i32, buf: &[u8], at: u64) -> Result<usize, Fail> {
        self.task.pwrite(*fd, buf, offset(at)).map_err(errno)
    }

    fn read(&self, fd: &i32, buf: &mut [u8]) -> Result<usize, Fail> {
        self.task.read(*fd, buf).map_err(errno)
    }

    fn write(&self, fd: &i32, buf: &[u8]) -> Result<usize, Fail> {
        self.task.write(*fd, buf).map_err(errno)
    }

    fn fallocate(&self, fd: &i32, at: u64, len: u64) -> Result<(), Fail> {
        self.task
            .fallocate(*fd, FallocFlags::empty(), offset(at), offset(len))
            .map_err(errno)
    }

    fn ftruncate(&self, fd: &i32, len: u64) -> Result<(), Fail> {
        self.task.ftruncate(*fd, offset(len)).map_err(errno)
    }

    fn raw(&self, fd: &i32) -> i32 {
        *fd
    }

    fn ino_of_raw(&self, fd: i32) -> Result<u64, Fail> {
        self.task.fstat(fd).map(|st| st.ino).map_err(errno)
    }

    fn pid(&self) -> u32 {
        std::process::id()
    }

    fn pipe(&self) -> Result<(i32, i32), Fail> {
        let [r, w] = self.task.pipe2(OpenFlags::empty()).map_err(errno)?;
        Ok((r, w))
    }

    fn lock(&self, fd: &i32, kind: LockKind) -> Result<(), Fail> {
        let l_type = match kind {
            LockKind::Write => F_WRLCK,
            LockKind::Unlock => F_UNLCK,
        };
        let mut fl = Flock::new(l_type, 0, 1);
        self.task
            .fcntl_lock(*fd, LockCmd::SetLkW, &mut fl)
            .map_err(errno)
    }

    fn start_echo(&self, from: i32, to: i32, keep: [&i32; 2]) -> Result<UvfsEcho, Fail> {
        let partner = match self.mode {
            Mode::Threads => self.task.clone_thread(),
            Mode::Processes => {
                let p = self.task.fork();
                // Each side keeps its own ends in its own table.
                for fd in keep {
                    p.close(*fd).map_err(errno)?;
                }
                self.task.close(from).map_err(errno)?;
                self.task.close(to).map_err(errno)?;
                p
            }
        };
        std::thread::Builder::new()
            .spawn(move || {
                let calls = UvfsCalls {
                    task: &partner,
                    mode: Mode::Threads,
                };
                let r = echo_loop(&calls, &from, &to);
                let closed = partner.close(from).and(partner.close(to)).map_err(errno);
                r.and(closed)
            })
            .map_err(|e| Fail::Errno(e.raw_os_error().unwrap_or(libc::EAGAIN)))
    }

    fn poll_add(&self, set: &mut UvfsPollSet, fd: &i32) {
        if let Some(p) = set.fds.get_mut(set.len) {
            *p = PollFd::new(*fd, PollEvents::OUT);
            set.len += 1;
        }
    }

    fn poll(&self, set: &mut UvfsPollSet) -> Result<usize, Fail> {
        self.task
            .poll(&mut set.fds[..set.len], Some(Duration::ZERO))
            .map_err(errno)
    }

    fn eventfd(&self) -> Result<i32, Fail> {
        self.task.eventfd2(0, EfdFlags::empty()).map_err(errno)
    }

    fn join_echo(&self, echo: UvfsEcho) -> Result<(), Fail> {
        echo.join().unwrap_or(Err(Fail::Silent))
    }
}

impl ScaleColumn for UvfsScale {
    fn name(&self) -> &'static str {
        "uvfs"
    }

    fn supports(&self, _cfg: &Config) -> Support {
        Support::Yes
    }

    fn setup(&mut self, cfg: &Config) -> anyhow::Result<()> {
        // A fresh namespace per configuration, so every one starts from an empty tmpfs.
        self.empty()?;
        let t = &self.task;
        // Room for poll2's fds in one table (the copies' tasks inherit the limit).
        let need = u32::try_from(cfg.testcase.fds_held(cfg.copies) + FD_SLACK).unwrap_or(u32::MAX);
        if t.nofile_rlimit().0 < need {
            t.set_nofile_rlimit(need, need.max(t.nofile_rlimit().1))
                .map_err(anyhow_errno)?;
        }
        let plan = cfg.testcase.plan(cfg.copies);
        for d in &plan.dirs {
            t.mkdirat(AT_FDCWD, d, 0o755).map_err(anyhow_errno)?;
        }
        for f in &plan.files {
            let fd = t
                .openat(AT_FDCWD, &f.path, OpenFlags::CREAT | OpenFlags::RDWR, 0o644)
                .map_err(anyhow_errno)?;
            let data = f.contents();
            let mut done = 0;
            while done < data.len() {
                done += t
                    .pwrite(fd, &data[done..], offset(done as u64))
                    .map_err(anyhow_errno)?;
            }
            t.close(fd).map_err(anyhow_errno)?;
        }
        Ok(())
    }

    fn run(&mut self, cfg: &Config, ops: u64) -> anyhow::Result<Run> {
        spawn::run(self.name(), self, cfg, ops)
    }

    fn probe(&mut self, mode: Mode, copies: usize) -> anyhow::Result<Vec<CopyEnd>> {
        spawn::probe(self, mode, copies)
    }

    fn teardown(&mut self) {
        let _ = self.empty();
    }

    fn note(&self) -> &'static str {
        "uvfs: in process, no syscall boundary or user copies; threads mode: tasks of Task::clone_thread (one fd table); processes mode: tasks of Task::fork (a table each), all on threads"
    }
}
