//! uvfs, and uvfs "vanilla": the design a workload's fast path replaced.

use std::time::Duration;

use anyhow::anyhow;
use uvfs::abi::{AtFlags, OpenFlags, AT_FDCWD};
use uvfs::vfs::WalkMode;
use uvfs::{Cred, Task, Vfs};

use super::host::{timed_threads, READ_BYTES, SMALL_FILE_BYTES};
use crate::column::{Column, Support};
use crate::params::{walk_components, Params, Sharing, Workload};

/// Which uvfs design a column runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Design {
    /// uvfs as it is.
    Current,
    /// The design the fast path replaced: the locked walk with a reference per component for
    /// path workloads (Linux ref-walk), and the locked, reference-counted fd lookup of a shared
    /// table for `write1`/`read1` (Linux `fdget()` on a shared table).
    Vanilla,
}

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
        }
    }

    fn task_for_design(&self) -> Task {
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

impl Column for Uvfs {
    fn name(&self) -> &'static str {
        match self.design {
            Design::Current => "uvfs",
            Design::Vanilla => "uvfs-vanilla",
        }
    }

    fn supports(&self, p: &Params) -> Support {
        match (self.design, p.workload) {
            (Design::Vanilla, Workload::CreateUnlink) => {
                Support::No("no vanilla design for this workload yet".into())
            }
            _ => Support::Yes,
        }
    }

    fn setup(&mut self, p: &Params) -> anyhow::Result<()> {
        // A fresh namespace per configuration, so every one starts from an empty tmpfs.
        self.vfs = Vfs::new();
        self.task = self.task_for_design();
        self.sibling = None;
        self.names.clear();
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
        }
        Ok(())
    }

    fn run(&mut self, p: &Params, ops: u64) -> anyhow::Result<Duration> {
        let threads = p.threads;
        // Thread 0 uses the main task; the others clones sharing its fd table (built before
        // the clock starts, moved into their threads).
        let clones: Vec<std::sync::Mutex<Option<Task>>> = (1..threads)
            .map(|_| std::sync::Mutex::new(Some(self.task.clone_thread())))
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
        let r = timed_threads(threads, |i| {
            let t = take(i);
            let r = (|| -> anyhow::Result<()> {
                match p.workload {
                    Workload::Write1 => {
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
        r
    }

    fn teardown(&mut self) {
        self.sibling = None;
        self.names.clear();
    }

    fn note(&self) -> &'static str {
        match self.design {
            Design::Current => {
                "uvfs: in process, no syscall boundary or user copies; threads are tasks sharing one fd table, as the host's threads do"
            }
            Design::Vanilla => {
                "uvfs-vanilla: uvfs with the replaced design — locked walk with a reference per component (ref-walk); write1/read1 through a shared fd table"
            }
        }
    }
}
