//! Process plumbing of the host side: fork, sockets between the observer and its actors,
//! waiting with a timeout, reaping, signals. Thin wrappers over libc, each with the one
//! reason it is safe.

use std::time::Duration;

/// A `SOCK_STREAM` Unix socket pair; both ends are blocking.
pub fn socketpair() -> Result<(i32, i32), i32> {
    let mut fds = [0i32; 2];
    // SAFETY: `fds` is a writable array of two ints, as socketpair(2) requires.
    let r = unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_STREAM, 0, fds.as_mut_ptr()) };
    if r == 0 {
        Ok((fds[0], fds[1]))
    } else {
        Err(errno())
    }
}

/// An anonymous in-memory file (`memfd_create`), for a case process's results: writing to
/// it wakes nobody up, and the server reads it once the case process has exited.
pub fn memfd() -> Result<i32, i32> {
    // SAFETY: the name is a NUL-terminated literal; the flags are plain integers.
    let fd = unsafe { libc::memfd_create(c"uvfs-case-results".as_ptr(), libc::MFD_CLOEXEC) };
    if fd >= 0 {
        Ok(fd)
    } else {
        Err(errno())
    }
}

fn errno() -> i32 {
    std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

/// Which side of a [`fork`] the caller is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Forked {
    /// In the parent, with the child's pid.
    Parent(i32),
    /// In the child.
    Child,
}

/// `fork()` through glibc, which keeps its allocator usable in the child of a multi-threaded
/// process (its other threads do not exist there; the host side's idle threads hold no lock
/// while they wait in `read`).
pub fn fork() -> Result<Forked, i32> {
    // SAFETY: fork has no memory-safety preconditions; the child continues with a copy of
    // this thread only, and the callers run only code that needs no other thread.
    match unsafe { libc::fork() } {
        -1 => Err(errno()),
        0 => Ok(Forked::Child),
        pid => Ok(Forked::Parent(pid)),
    }
}

/// Ignores `SIGPIPE`, so that a write to a pipe with no reader fails with `EPIPE` instead of
/// killing the actor (Rust's runtime ignores it already at start; this says so where it
/// matters, and holds for an actor whatever its parent did). Forked actors inherit it.
pub fn ignore_sigpipe() {
    // SAFETY: setting a signal's disposition to SIG_IGN installs no handler code.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
}

/// Ends the whole process (every thread) at once, without unwinding or exit handlers.
pub fn exit_now(code: i32) -> ! {
    // SAFETY: _exit has no preconditions and does not return.
    unsafe { libc::_exit(code) }
}

/// Makes reads from socket `fd` fail with `EAGAIN` after `timeout` without data
/// (`SO_RCVTIMEO`).
pub fn set_receive_timeout(fd: i32, timeout: Duration) -> Result<(), i32> {
    let tv = libc::timeval {
        tv_sec: timeout.as_secs() as libc::time_t,
        tv_usec: timeout.subsec_micros() as libc::suseconds_t,
    };
    // SAFETY: `tv` is a live timeval and its size is passed with it.
    let r = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_RCVTIMEO,
            (&tv as *const libc::timeval).cast(),
            size_of::<libc::timeval>() as libc::socklen_t,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(errno())
    }
}

/// Keeps this process (and what it forks later) on the CPU it runs on now, so that the
/// observer and its actors, which only ever run one at a time, hand over to each other
/// without a cross-CPU wakeup.
pub fn stay_on_this_cpu() {
    // SAFETY: sched_getcpu has no arguments.
    let cpu = unsafe { libc::sched_getcpu() };
    if cpu < 0 {
        return;
    }
    // SAFETY: an all-zero cpu_set_t is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `cpu` is a CPU number the kernel gave, below CPU_SETSIZE.
    unsafe { libc::CPU_SET(cpu as usize, &mut set) };
    // SAFETY: `set` is a live cpu_set_t and its size is passed with it.
    unsafe { libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &set) };
}

/// Makes this process the reaper of its orphaned descendants (`PR_SET_CHILD_SUBREAPER`), so
/// that every actor process of a case can be waited for.
pub fn become_subreaper() -> Result<(), i32> {
    // SAFETY: prctl with integer arguments only.
    match unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) } {
        0 => Ok(()),
        _ => Err(errno()),
    }
}

/// Asks the kernel to kill this process when the thread that forked it exits
/// (`PR_SET_PDEATHSIG`), so that no actor outlives its observer.
pub fn die_with_parent() {
    // SAFETY: prctl with integer arguments only.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) };
}

/// Puts process `pid` (0: the caller) in a process group of its own.
pub fn own_process_group(pid: i32) {
    // SAFETY: setpgid with integer arguments only; failure (the child already exec'd or
    // exited) is harmless here.
    unsafe { libc::setpgid(pid, pid) };
}

/// Sends `SIGKILL` to every process of group `pgid`.
pub fn kill_group(pgid: i32) {
    // SAFETY: kill with integer arguments only.
    unsafe { libc::kill(-pgid, libc::SIGKILL) };
}

/// Waits for any child; `None` when there is none left.
pub fn wait_any() -> Option<(i32, i32)> {
    let mut status = 0;
    loop {
        // SAFETY: `status` is a writable int.
        let pid = unsafe { libc::waitpid(-1, &mut status, 0) };
        match pid {
            -1 if errno() == libc::EINTR => continue,
            -1 => return None,
            pid => return Some((pid, status)),
        }
    }
}

/// Waits for child `pid`; its wait status.
pub fn wait_for(pid: i32) -> Option<i32> {
    let mut status = 0;
    loop {
        // SAFETY: `status` is a writable int.
        let r = unsafe { libc::waitpid(pid, &mut status, 0) };
        match r {
            -1 if errno() == libc::EINTR => continue,
            -1 => return None,
            _ => return Some(status),
        }
    }
}

/// A wait status as text: `exit status N` or `killed by signal N`.
pub fn status_text(status: i32) -> String {
    if libc::WIFEXITED(status) {
        format!("exit status {}", libc::WEXITSTATUS(status))
    } else if libc::WIFSIGNALED(status) {
        format!("killed by signal {}", libc::WTERMSIG(status))
    } else {
        format!("wait status {status:#x}")
    }
}

/// Whether a wait status is a clean `exit(0)`.
pub fn exited_cleanly(status: i32) -> bool {
    libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0
}
