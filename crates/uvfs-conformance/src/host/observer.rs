//! The observer: the process that enters the sandbox, forks the actors (one per task, see
//! `host::actor`), drives them step by step and answers `snapshot` itself, as root with
//! every capability, at the namespace root, whatever the acting task did to its own
//! credentials, root and cwd. It writes one [`HostLine`] per step to [`RESULT_FD`].

use std::io::Write;
use std::time::Duration;

use super::channel::{recv, send};
use super::fence::FenceMode;
use super::proc::{self, Forked};
use super::protocol::{Command, HostLine, Reply};
use super::sandbox::{self, RawFdWriter, ACTOR_SOCK_BASE, OBSERVER_SOCK_BASE, RESULT_FD};
use super::sys::{self, CPath, XattrAt};
use super::{listdir_with, stat_fields, ListDir, AT_FDCWD};
use crate::backend::{run_case, Backend, Fds};
use crate::op::{Op, MAX_TASKS};
use crate::outcome::{DirentRec, FdRec, Outcome, SnapshotRec, StatRec, Value};
use crate::parse::Case;
use crate::snapshot::{observe_tree, Observe, XATTR_BUF};

/// How long one op may take before the case counts as hung (a FIFO opened for reading with
/// no writer blocks for ever on Linux).
pub const STEP_TIMEOUT: Duration = Duration::from_secs(10);

/// Result lines are written in chunks of this size (and when the case ends).
const RESULT_BUFFER: usize = 1 << 16;

const O_SNAPSHOT_DIR: i32 = 0o200000 | 0o400000 | 0o1000000 | 0o2000000;
const AT_SYMLINK_NOFOLLOW: i32 = 0x100;
const PATH_MAX: usize = 4096;

/// Runs `case` in a fresh sandbox and writes its result lines to [`RESULT_FD`]; call in a
/// process prepared by [`sandbox::prepare_process`]. Ends with a `done` or `aborted` line.
///
/// # Errors
/// A message when the environment refuses the sandbox (not root, no mount namespaces).
pub fn run_case_in_sandbox(case: &Case) -> Result<(), String> {
    let mut out = std::io::BufWriter::with_capacity(RESULT_BUFFER, RawFdWriter(RESULT_FD));
    let end = run_steps(case, &mut out)?;
    emit(&mut out, &end);
    out.flush().map_err(|e| format!("writing results: {e}"))
}

/// Writes one result line (a lost one shows as a missing step on the reader's side).
fn emit(out: &mut impl Write, line: &HostLine) {
    let _ = serde_json::to_writer(&mut *out, line);
    let _ = out.write_all(b"\n");
}

/// Enters the sandbox, runs the case, leaves; the case's last line.
fn run_steps(case: &Case, out: &mut impl Write) -> Result<HostLine, String> {
    let root = sandbox::enter(case.mount.as_deref())?;
    let root_ok = matches!(root, Outcome::Ok(_));
    emit(
        out,
        &HostLine::Step {
            step: 0,
            outcome: root,
        },
    );
    if !root_ok {
        sandbox::leave()?;
        return Ok(HostLine::Done);
    }
    let aborted = match Driver::start(case) {
        Err(e) => Some(e),
        Ok(mut driver) => {
            let mut last_snapshot: Option<Outcome> = None;
            run_case(&mut driver, case, |step, o| {
                if matches!(o, Outcome::Ok(Value::Snapshot(_))) {
                    if last_snapshot.as_ref() == Some(o) {
                        emit(out, &HostLine::SameSnapshot { step });
                        return;
                    }
                    last_snapshot = Some(o.clone());
                }
                emit(
                    out,
                    &HostLine::Step {
                        step,
                        outcome: o.clone(),
                    },
                )
            });
            driver.stop()
        }
    };
    sandbox::leave()?;
    Ok(aborted.map_or(HostLine::Done, HostLine::Aborted))
}

/// The observer's side of a running case: a [`Backend`] that hands ops to the current task's
/// actor and runs `task N` switches and `snapshot`s itself.
struct Driver {
    /// Whether task N (index N - 1) exists.
    tasks: [bool; MAX_TASKS as usize],
    current: u32,
    /// The process group of every actor process.
    actors: i32,
    /// Set by the first mount op: every later op may drop a detached mount's last reference.
    mounted: bool,
    /// The `fstat`s the last op's task sent with its outcome (its task, then name, fd and
    /// result per bound fd), for the snapshot right after it.
    fstats: Option<(u32, Vec<FstatOf>)>,
    /// Steps of the case that are snapshots (index: step - 1).
    snapshots: Vec<bool>,
    aborted: Option<String>,
}

impl Driver {
    /// Opens one socket pair per possible task and forks task 1.
    fn start(case: &Case) -> Result<Driver, String> {
        proc::become_subreaper().map_err(|e| format!("PR_SET_CHILD_SUBREAPER: errno {e}"))?;
        proc::stay_on_this_cpu();
        for n in 1..=MAX_TASKS as i32 {
            let (a, b) = proc::socketpair().map_err(|e| format!("socketpair: errno {e}"))?;
            for (from, to) in [(a, OBSERVER_SOCK_BASE + n), (b, ACTOR_SOCK_BASE + n)] {
                sys::dup2(from, to).map_err(|e| format!("dup2: errno {e}"))?;
                let _ = sys::close(from);
            }
            proc::set_receive_timeout(OBSERVER_SOCK_BASE + n, STEP_TIMEOUT)
                .map_err(|e| format!("SO_RCVTIMEO: errno {e}"))?;
        }
        let close_range = |first: i32, last: i32| {
            let _ = sys::close_range(first as u32, last as u32, 0);
        };
        let last = MAX_TASKS as i32;
        match proc::fork().map_err(|e| format!("fork: errno {e}"))? {
            Forked::Child => {
                proc::die_with_parent();
                proc::own_process_group(0);
                close_range(OBSERVER_SOCK_BASE + 1, OBSERVER_SOCK_BASE + last);
                let _ = sys::close(RESULT_FD);
                let _ = sys::close(sandbox::HOST_NS_FD);
                super::actor::serve(case, 1)
            }
            Forked::Parent(pid) => {
                proc::own_process_group(pid);
                close_range(ACTOR_SOCK_BASE + 1, ACTOR_SOCK_BASE + last);
                let mut tasks = [false; MAX_TASKS as usize];
                tasks[0] = true;
                Ok(Driver {
                    tasks,
                    current: 1,
                    actors: pid,
                    mounted: false,
                    fstats: None,
                    snapshots: case
                        .steps
                        .iter()
                        .map(|s| matches!(s.op, Op::Snapshot))
                        .collect(),
                    aborted: None,
                })
            }
        }
    }

    /// Kills every actor and waits for all of them; returns why the case stopped early, if it
    /// did.
    fn stop(self) -> Option<String> {
        let _fence = super::fence::hold(FenceMode::Exclusive);
        proc::kill_group(self.actors);
        while proc::wait_any().is_some() {}
        self.aborted
    }

    fn call(&mut self, task: u32, cmd: &Command) -> Option<Reply> {
        let sock = OBSERVER_SOCK_BASE + task as i32;
        let r = send(sock, cmd).and_then(|()| recv::<Reply>(sock));
        match r {
            Ok(reply) => Some(reply),
            Err(e) => {
                let secs = STEP_TIMEOUT.as_secs();
                self.aborted = Some(format!("task {task}: {e} (the limit is {secs} s)"));
                None
            }
        }
    }

    /// The bound fds' `fstat`s come first, then the walk: an actor sends them with the
    /// outcome of the op before the snapshot (a round trip saved), before the observer's
    /// `readlink`s touch any symlink's atime, so both sides stat the fds first (CASES.md).
    fn snapshot(&mut self, fds: &Fds) -> Option<Value> {
        let mut stats: Vec<(&str, i32, u32, Result<StatRec, i32>)> = Vec::new();
        for task in 1..=MAX_TASKS {
            let mine: Vec<_> = fds.bound().filter(|b| b.task == task).collect();
            if mine.is_empty() || !self.tasks[task as usize - 1] {
                continue;
            }
            let cached = self.fstats.take().filter(|(t, got)| {
                *t == task
                    && got.len() == mine.len()
                    && got
                        .iter()
                        .zip(&mine)
                        .all(|(g, b)| g.0 == b.name && g.1 == b.fd)
            });
            let got = match cached {
                Some((_, got)) => got.into_iter().map(|g| g.2).collect(),
                None => {
                    let list = mine.iter().map(|b| b.fd).collect();
                    let Reply::Fstats(got) = self.call(task, &Command::Fstat(list))? else {
                        self.aborted =
                            Some(format!("task {task} answered fstat with something else"));
                        return None;
                    };
                    got
                }
            };
            for (b, st) in mine.iter().zip(got) {
                stats.push((&b.name, b.fd, task, st));
            }
        }
        let entries = observe_tree(&mut HostObserver {
            buf: vec![0u8; XATTR_BUF],
        });
        let fds = fds
            .bound()
            .filter_map(|b| {
                let (_, fd, task, st) = stats.iter().find(|s| s.0 == b.name)?;
                (*st != Err(libc::EBADF)).then(|| FdRec {
                    name: b.name.clone(),
                    fd: *fd,
                    task: *task,
                    stat: st.clone(),
                })
            })
            .collect();
        Some(Value::Snapshot(SnapshotRec { entries, fds }))
    }

    fn fence_for(&self, op: &Op) -> FenceMode {
        if self.mounted || matches!(op, Op::Mount { .. } | Op::Umount2 { .. }) {
            FenceMode::Exclusive
        } else {
            FenceMode::Shared
        }
    }
}

/// A bound fd's name, number and `fstat`, as an actor sends it with an outcome.
type FstatOf = (String, i32, Result<StatRec, i32>);

/// An outcome for a step the case does not get to run.
fn lost() -> Outcome {
    Outcome::Errno(libc::EIO)
}

impl Backend for Driver {
    fn run(&mut self, step: usize, op: &Op, fds: &Fds) -> Outcome {
        if self.aborted.is_some() {
            return lost();
        }
        let fstats = self.fstats.take();
        match op {
            Op::Snapshot => {
                self.fstats = fstats;
                return self.snapshot(fds).map_or_else(lost, Outcome::Ok);
            }
            Op::Task { id, start: None } => {
                if !self.tasks[*id as usize - 1] {
                    return Outcome::Errno(libc::ESRCH);
                }
                self.current = *id;
                return Outcome::Ok(Value::Unit);
            }
            _ => {}
        }
        let cmd = Command::Run {
            step,
            fds: fds.clone(),
            fence: self.fence_for(op),
            then_fstat: self.snapshots.get(step).copied().unwrap_or(false),
        };
        self.mounted |= matches!(op, Op::Mount { .. } | Op::Umount2 { .. });
        let outcome = match self.call(self.current, &cmd) {
            Some(Reply::Outcome(o)) => o,
            Some(Reply::OutcomeAndFstats(o, stats)) => {
                self.fstats = Some((self.current, stats));
                o
            }
            Some(_) => {
                self.aborted = Some(format!("step {step}: the actor answered out of turn"));
                return lost();
            }
            None => return lost(),
        };
        if let (Op::Task { id, start: Some(_) }, Outcome::Ok(_)) = (op, &outcome) {
            self.tasks[*id as usize - 1] = true;
            self.current = *id;
        }
        outcome
    }

    fn aborted(&self) -> Option<String> {
        self.aborted.clone()
    }
}

/// The snapshot calls, made by the observer process itself.
struct HostObserver {
    /// Scratch space for xattr names and values.
    buf: Vec<u8>,
}

impl Observe for HostObserver {
    fn lstat(&mut self, path: &[u8]) -> Result<StatRec, i32> {
        sys::fstatat(AT_FDCWD, &CPath::new(path), AT_SYMLINK_NOFOLLOW).map(stat_fields)
    }

    fn readlink(&mut self, path: &[u8]) -> Result<Vec<u8>, i32> {
        let mut buf = vec![0u8; PATH_MAX];
        let n = sys::readlinkat(AT_FDCWD, &CPath::new(path), &mut buf)?;
        buf.truncate(n as usize);
        Ok(buf)
    }

    fn llistxattr(&mut self, path: &[u8], size: usize) -> Result<Vec<u8>, i32> {
        let p = CPath::new(path);
        let n = sys::listxattr(XattrAt::Link(&p), &mut self.buf[..size])?;
        Ok(self.buf[..n as usize].to_vec())
    }

    fn lgetxattr(&mut self, path: &[u8], name: &[u8], size: usize) -> Result<Vec<u8>, i32> {
        let p = CPath::new(path);
        let n = sys::getxattr(XattrAt::Link(&p), &CPath::new(name), &mut self.buf[..size])?;
        Ok(self.buf[..n as usize].to_vec())
    }

    fn list_dir(&mut self, path: &[u8]) -> Result<Vec<DirentRec>, i32> {
        listdir_with(path, O_SNAPSHOT_DIR, ListDir::EntriesOnly).map(|l| l.entries)
    }

    fn fs_type(&mut self, path: &[u8]) -> Result<i64, i32> {
        sys::statfs(&CPath::new(path)).map(|s| s.f_type)
    }
}
