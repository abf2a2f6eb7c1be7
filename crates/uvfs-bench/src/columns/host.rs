//! The host kernel: the same work through real system calls on a private tmpfs.

use std::ffi::CString;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::Barrier;
use std::time::{Duration, Instant};

use anyhow::anyhow;
use rustix::fs::{openat, statat, unlinkat, AtFlags, Mode, OFlags};
use rustix::io::{pread, pwrite, read};

use crate::column::{Column, Support};
use crate::params::{walk_components, Params, Sharing, Workload};
use crate::private_tmpfs::PrivateTmpfs;

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
}

impl Host {
    /// Mounts a private tmpfs under the system temporary directory. If that is impossible (not
    /// root), the column reports "skipped: why" for every configuration.
    pub fn new() -> Host {
        Host {
            tmpfs: PrivateTmpfs::mount(&format!("uvfs-bench-host-{}", std::process::id())),
            file: None,
            names: Vec::new(),
        }
    }

    fn clear(&mut self) -> anyhow::Result<()> {
        self.file = None;
        self.names.clear();
        // Start every configuration from an empty tmpfs.
        self.tmpfs.clear()
    }
}

impl Default for Host {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        // Close the file before the tmpfs is unmounted.
        self.file = None;
    }
}

fn cstr(s: &str) -> CString {
    CString::new(s).expect("bench names have no NUL")
}

/// Runs `f(thread_index)` on `threads` threads started together; returns the wall time.
pub fn timed_threads(
    threads: usize,
    f: impl Fn(usize) -> anyhow::Result<()> + Sync,
) -> anyhow::Result<Duration> {
    let barrier = Barrier::new(threads + 1);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|i| {
                let (b, f) = (&barrier, &f);
                s.spawn(move || {
                    b.wait();
                    f(i)
                })
            })
            .collect();
        barrier.wait();
        let start = Instant::now();
        let mut result = Ok(());
        for h in handles {
            match h.join() {
                Ok(r) => result = result.and(r),
                Err(_) => result = Err(anyhow!("a benchmark thread panicked")),
            }
        }
        result.map(|()| start.elapsed())
    })
}

impl Column for Host {
    fn name(&self) -> &'static str {
        "host"
    }

    fn supports(&self, _p: &Params) -> Support {
        self.tmpfs.support()
    }

    fn setup(&mut self, p: &Params) -> anyhow::Result<()> {
        self.clear()?;
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
        }
        Ok(())
    }

    fn run(&mut self, p: &Params, ops: u64) -> anyhow::Result<Duration> {
        let dir = self.tmpfs.dir()?;
        match p.workload {
            Workload::Write1 => {
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
        }
    }

    fn teardown(&mut self) {
        let _ = self.clear();
    }

    fn note(&self) -> &'static str {
        "host: real system calls on a private tmpfs (paths relative to its directory fd); threads share the process's fd table"
    }
}
