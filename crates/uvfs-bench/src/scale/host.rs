//! The host kernel's scale column: the testcases' loops as real system calls on a private
//! tmpfs, its copies threads of this process (threads mode) or forked processes (processes
//! mode).

use std::ffi::{CStr, CString};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use anyhow::{anyhow, Context};
use rustix::fs::{
    openat, unlinkat, AtFlags, FallocateFlags, Mode as FileMode, OFlags, SeekFrom, CWD,
};
use rustix::mount::{mount, unmount, MountFlags, UnmountFlags};

use super::board::{Board, CopyEnd, Fail, MAX_PROBE_COPIES};
use super::calls::{probe_copy, run_copy, Calls, CopyWork, OpenKind};
use super::host_sys::{ino_of_raw_fd, run_processes, SharedBoard};
use super::threads::run_threads;
use super::{check_ends, Config, Mode, Run, ScaleColumn};
use crate::column::Support;

/// The host kernel on a tmpfs mounted for the run.
pub struct HostScale {
    mountpoint: PathBuf,
    dir: Option<OwnedFd>,
    skipped: Option<String>,
}

impl HostScale {
    /// Mounts a private tmpfs under the system temporary directory, as the seed workloads'
    /// host column does. If that is impossible (not root), every configuration says
    /// "skipped: why".
    pub fn new() -> HostScale {
        // One mount per column, even with several in one process (the tests make several).
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let mountpoint =
            std::env::temp_dir().join(format!("uvfs-bench-scale-{}-{n}", std::process::id()));
        let mut h = HostScale {
            mountpoint,
            dir: None,
            skipped: None,
        };
        if let Err(e) = h.mount() {
            h.skipped = Some(format!("skipped: cannot mount a private tmpfs ({e:#})"));
        }
        h
    }

    fn mount(&mut self) -> anyhow::Result<()> {
        std::fs::create_dir_all(&self.mountpoint)?;
        mount(
            "none",
            &self.mountpoint,
            "tmpfs",
            MountFlags::NOSUID | MountFlags::NODEV,
            Some(c"mode=0755"),
        )
        .context("mount -t tmpfs")?;
        let dir = openat(
            CWD,
            &self.mountpoint,
            OFlags::DIRECTORY | OFlags::RDONLY,
            FileMode::empty(),
        )?;
        self.dir = Some(dir);
        Ok(())
    }

    /// The directory the testcases' paths are relative to (for tests to inspect).
    pub fn dir_path(&self) -> &Path {
        &self.mountpoint
    }

    fn dir(&self) -> anyhow::Result<BorrowedFd<'_>> {
        self.dir
            .as_ref()
            .map(AsFd::as_fd)
            .ok_or_else(|| anyhow!("host tmpfs not mounted"))
    }

    /// Empties the tmpfs.
    fn clear(&self) -> anyhow::Result<()> {
        for entry in std::fs::read_dir(&self.mountpoint)? {
            let p = entry?.path();
            if p.is_dir() {
                std::fs::remove_dir_all(&p)?;
            } else {
                std::fs::remove_file(&p)?;
            }
        }
        Ok(())
    }

    /// Runs `body(calls, copy, board)` on `copies` copies in `mode`: threads of this process
    /// sharing its fd table, or forked processes with a table each. Returns the time from the
    /// common start until the last copy's loop ended ([`Board::span`]; the wall time until all
    /// were reaped if a copy recorded no end, as the probe's do), and every copy's report.
    fn spawn(
        &self,
        mode: Mode,
        copies: usize,
        body: &(dyn Fn(&HostCalls<'_>, usize, &Board) + Sync),
    ) -> anyhow::Result<(Duration, Vec<CopyEnd>)> {
        let calls = HostCalls { dir: self.dir()? };
        match mode {
            Mode::Threads => {
                let board = Box::<Board>::default();
                let d = run_threads(&board, vec![(); copies], |copy, ()| {
                    body(&calls, copy, &board)
                })?;
                Ok((board.span(copies).unwrap_or(d), board.ends(copies)))
            }
            Mode::Processes => {
                let board = SharedBoard::new()?;
                let d = run_processes(&board, copies, &|copy| body(&calls, copy, &board))?;
                Ok((board.span(copies).unwrap_or(d), board.ends(copies)))
            }
        }
    }
}

impl Default for HostScale {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for HostScale {
    fn drop(&mut self) {
        if self.dir.take().is_some() {
            let _ = unmount(&self.mountpoint, UnmountFlags::DETACH);
        }
        let _ = std::fs::remove_dir(&self.mountpoint);
    }
}

/// The testcases' calls as real system calls relative to the tmpfs's directory fd. Nothing in
/// here allocates: it runs in forked children too.
pub struct HostCalls<'a> {
    dir: BorrowedFd<'a>,
}

fn errno(e: rustix::io::Errno) -> Fail {
    Fail::Errno(e.raw_os_error())
}

impl Calls for HostCalls<'_> {
    type Fd = OwnedFd;

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
}

impl ScaleColumn for HostScale {
    fn name(&self) -> &'static str {
        "host"
    }

    fn supports(&self, _cfg: &Config) -> Support {
        match &self.skipped {
            Some(why) => Support::No(why.clone()),
            None => Support::Yes,
        }
    }

    fn setup(&mut self, cfg: &Config) -> anyhow::Result<()> {
        self.clear()?;
        let plan = cfg.testcase.plan(cfg.copies);
        for d in &plan.dirs {
            std::fs::create_dir(self.mountpoint.join(d))?;
        }
        for f in &plan.files {
            std::fs::write(self.mountpoint.join(&f.path), f.contents())?;
        }
        Ok(())
    }

    fn run(&mut self, cfg: &Config, ops: u64) -> anyhow::Result<Run> {
        let paths: Vec<CString> = (0..cfg.copies).map(|c| cfg.testcase.c_path(c)).collect();
        let (elapsed, ends) = self.spawn(cfg.mode, cfg.copies, &|calls, copy, board| {
            if let Some(path) = paths.get(copy) {
                let w = CopyWork {
                    testcase: cfg.testcase,
                    copy,
                    path,
                    ops,
                };
                run_copy(calls, &w, board);
            }
        })?;
        check_ends(self.name(), cfg, &ends)?;
        Ok(Run { elapsed, ends })
    }

    fn probe(&mut self, mode: Mode, copies: usize) -> anyhow::Result<Vec<CopyEnd>> {
        anyhow::ensure!(
            copies <= MAX_PROBE_COPIES,
            "at most {MAX_PROBE_COPIES} copies"
        );
        self.clear()?;
        let paths: Vec<CString> = (0..copies)
            .map(|c| CString::new(format!("probe{c}")).expect("no NUL"))
            .collect();
        let (_, ends) = self.spawn(mode, copies, &|calls, copy, board| {
            if let Some(path) = paths.get(copy) {
                probe_copy(calls, copy, copies, path, board);
            }
        })?;
        self.clear()?;
        Ok(ends)
    }

    fn teardown(&mut self) {
        let _ = self.clear();
    }

    fn note(&self) -> &'static str {
        "host: real system calls on a private tmpfs; threads mode: threads of this process; processes mode: forked processes"
    }
}
