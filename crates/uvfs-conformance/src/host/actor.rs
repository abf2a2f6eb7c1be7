//! The actors: the processes and threads that run a case's ops on the host, one per task.
//!
//! Task 1 is the main thread of a process the observer forks after entering the sandbox.
//! `task N fork` forks the current task's thread (a process with a copy of its fd table, its
//! credentials, cwd, root and umask); `task N thread` spawns a thread in the current task's
//! process (the same fd table and, as every Linux thread, the same `fs_struct`: cwd, root and
//! umask; a copy of the spawning thread's credentials, which raw `setres[ug]id`/`setgroups`
//! then change for that thread only). Each task serves its own socket at
//! `ACTOR_SOCK_BASE + N`, inherited by every actor, which the observer opened before the
//! first fork.

use super::channel::{recv, send};
use super::fence;
use super::proc::{self, Forked};
use super::protocol::{Command, Reply};
use super::sandbox::ACTOR_SOCK_BASE;
use super::{stat_fields, sys, HostBackend};
use crate::backend::Backend;
use crate::op::{Op, TaskStart};
use crate::outcome::{Outcome, Value};
use crate::parse::Case;

/// Serves task `id` until its socket closes, then ends the whole process.
pub fn serve(case: &Case, id: u32) -> ! {
    // A case's `write` to a pipe whose readers are gone compares `EPIPE`; the signal would
    // kill the actor.
    proc::ignore_sigpipe();
    serve_task(case, id);
    proc::exit_now(0)
}

/// The loop of one task: read a command, carry it out, answer.
fn serve_task(case: &Case, id: u32) {
    let sock = ACTOR_SOCK_BASE + id as i32;
    let mut backend = HostBackend;
    while let Ok(cmd) = recv::<Command>(sock) {
        let reply = match cmd {
            Command::Fstat(list) => Reply::Fstats(
                list.into_iter()
                    .map(|fd| sys::fstat(fd).map(stat_fields))
                    .collect(),
            ),
            Command::Run {
                step,
                fds,
                fence: mode,
                then_fstat,
            } => {
                let op = &case.steps[step - 1].op;
                let outcome = {
                    let _held = fence::hold(mode);
                    match op {
                        Op::Task {
                            id: new,
                            start: Some(start),
                        } => start_task(case, *new, *start),
                        _ => backend.run(step, op, &fds),
                    }
                };
                if then_fstat {
                    // The bindings as `run_case` will make them after this op.
                    let mut after = fds;
                    if let Some(name) = &case.steps[step - 1].bind {
                        after.bind(name, &outcome, id);
                    }
                    let stats = after
                        .bound()
                        .filter(|b| b.task == id)
                        .map(|b| (b.name.clone(), b.fd, sys::fstat(b.fd).map(stat_fields)))
                        .collect();
                    Reply::OutcomeAndFstats(outcome, stats)
                } else {
                    Reply::Outcome(outcome)
                }
            }
        };
        if send(sock, &reply).is_err() {
            return;
        }
    }
}

/// Makes task `id` from the calling thread's task.
fn start_task(case: &Case, id: u32, start: TaskStart) -> Outcome {
    match start {
        TaskStart::Fork => match proc::fork() {
            Err(e) => Outcome::Errno(e),
            Ok(Forked::Child) => {
                proc::die_with_parent();
                serve(case, id)
            }
            Ok(Forked::Parent(_)) => Outcome::Ok(Value::Unit),
        },
        TaskStart::Thread => {
            let case = case.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("task {id}"))
                .spawn(move || serve_task(&case, id));
            match spawned {
                Ok(_) => Outcome::Ok(Value::Unit),
                Err(e) => Outcome::Errno(e.raw_os_error().unwrap_or(libc::EAGAIN)),
            }
        }
    }
}
