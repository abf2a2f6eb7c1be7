//! The host's processes mode: copies in forked children, meeting on a [`Board`] in a shared
//! anonymous mapping.
//!
//! # Why fork is safe here
//! The benchmark process has other threads (the progress bar's ticker, test harness threads),
//! so a forked child holds a copy of memory in which some lock may be held by a thread that
//! does not exist there. The child therefore runs only code that takes no lock of this program
//! and allocates nothing: the loop of `calls.rs` over raw system calls (rustix, with paths and
//! data prepared by the parent before the fork, buffers on the stack), plain atomic stores to
//! the shared board, and `_exit`, which runs no exit handler and flushes no buffer of the
//! parent's. It asks the kernel to kill it if the forking thread goes away (`PR_SET_PDEATHSIG`).
//! The alternative, re-executing the `uvfs` binary as a hidden helper, would not run from the
//! bench crate's own tests and would measure an exec'd program rather than a fork of this one,
//! which is what will-it-scale's processes mode is.

use std::ops::Deref;
use std::ptr::NonNull;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail};

use super::board::Board;
use super::testcase::POLL2_FDS;

/// A [`Board`] in a `MAP_SHARED | MAP_ANONYMOUS` mapping: forked children write to the same
/// memory the parent reads.
pub struct SharedBoard {
    ptr: NonNull<Board>,
}

impl SharedBoard {
    /// Maps a zeroed board (every field of a board is an atomic, valid when zero).
    ///
    /// # Errors
    /// `mmap` failed.
    pub fn new() -> anyhow::Result<SharedBoard> {
        // SAFETY: a fresh anonymous mapping at an address the kernel chooses; no existing
        // memory is touched. The result is checked against MAP_FAILED.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                size_of::<Board>(),
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            bail!(
                "mmap of the shared board: {}",
                std::io::Error::last_os_error()
            );
        }
        let ptr = NonNull::new(p.cast::<Board>()).ok_or_else(|| anyhow!("mmap returned null"))?;
        Ok(SharedBoard { ptr })
    }
}

impl Deref for SharedBoard {
    type Target = Board;
    fn deref(&self) -> &Board {
        // SAFETY: the mapping is page-aligned (more than a Board's alignment), as large as a
        // Board, zero-filled by the kernel (a valid Board: atomics only), lives until drop,
        // and is only ever accessed through shared references to atomics.
        unsafe { self.ptr.as_ref() }
    }
}

impl Drop for SharedBoard {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping `new` made; no reference to it outlives `self`.
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), size_of::<Board>()) };
    }
}

/// Runs `body(copy)` in `copies` forked children at once: forks them all, waits until each is
/// set up (at the board's gate), starts them together and waits for every one to exit. Returns
/// the time from the start until the last child was reaped.
///
/// `body` runs in the child and must keep to what a child of a multi-threaded process may do
/// (see the module doc): the testcase loops of `calls.rs`.
///
/// # Errors
/// A fork failed, the children did not reach the gate, or one did not exit with status 0.
pub fn run_processes(
    board: &SharedBoard,
    copies: usize,
    body: &dyn Fn(usize),
) -> anyhow::Result<Duration> {
    let mut pids: Vec<libc::pid_t> = Vec::with_capacity(copies);
    for copy in 0..copies {
        // SAFETY: fork has no memory-safety precondition. The child runs only `body`, which
        // keeps to raw system calls and atomic stores (module doc), then `_exit`s.
        match unsafe { libc::fork() } {
            -1 => {
                let e = std::io::Error::last_os_error();
                board.abort();
                reap(&pids);
                bail!("fork of copy {copy}: {e}");
            }
            0 => {
                // SAFETY: prctl with integer arguments only.
                unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) };
                body(copy);
                // SAFETY: _exit has no precondition and does not return.
                unsafe { libc::_exit(0) };
            }
            pid => pids.push(pid),
        }
    }
    if !board.wait_ready(copies) {
        board.abort();
        for &pid in &pids {
            // SAFETY: kill with integer arguments; `pid` is our child, not yet reaped.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        reap(&pids);
        bail!("the forked copies did not all reach the start");
    }
    let start = Instant::now();
    board.start();
    let statuses = reap(&pids);
    let elapsed = start.elapsed();
    for (copy, status) in statuses.into_iter().enumerate() {
        if status != Some(0) {
            bail!("forked copy {copy} ended abnormally (wait status {status:?})");
        }
    }
    Ok(elapsed)
}

/// Waits for every child in `pids`; each one's exit code (`None` if it was killed or could
/// not be waited for).
fn reap(pids: &[libc::pid_t]) -> Vec<Option<i32>> {
    pids.iter()
        .map(|&pid| loop {
            let mut status = 0;
            // SAFETY: `status` is a writable int; `pid` is our child.
            let r = unsafe { libc::waitpid(pid, &mut status, 0) };
            if r == -1 {
                if std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                    continue;
                }
                break None;
            }
            break libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
        })
        .collect()
}

/// `fstat(fd).st_ino` of a raw fd number that may not be open in this process (the probe
/// looks up another copy's fd number in its own table); the errno if it is not.
pub fn ino_of_raw_fd(fd: i32) -> Result<u64, i32> {
    // SAFETY: an all-zero `struct stat` is a valid value of the plain-integer struct.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `st` is a live, writable struct stat; fstat on a closed or foreign fd number
    // fails with EBADF and touches nothing.
    let r = unsafe { libc::fstat(fd, &mut st) };
    if r == 0 {
        Ok(st.st_ino)
    } else {
        Err(std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO))
    }
}

/// `fcntl(fd, F_SETLKW)` of byte 0 (`l_type` `F_WRLCK` or `F_UNLCK`), retried on `EINTR`; the
/// errno if it fails. Allocates nothing: it runs in forked copies.
pub fn setlkw_byte0(fd: i32, l_type: i16) -> Result<(), i32> {
    // SAFETY: an all-zero `struct flock` is a valid value of the plain-integer struct.
    let mut fl: libc::flock = unsafe { std::mem::zeroed() };
    fl.l_type = l_type;
    fl.l_whence = libc::SEEK_SET as i16;
    fl.l_start = 0;
    fl.l_len = 1;
    loop {
        // SAFETY: `fl` is a live, initialised struct flock that F_SETLKW only reads; a bad fd
        // fails with EBADF.
        let r = unsafe { libc::fcntl(fd, libc::F_SETLKW, &fl) };
        if r == 0 {
            return Ok(());
        }
        let e = std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO);
        if e != libc::EINTR {
            return Err(e);
        }
    }
}

/// Forks `context_switch1`'s partner process from a forked copy: the child closes `close` (the
/// copy's ends), echoes 1 byte at a time from `from` to `to` until `from` reaches its end,
/// writes the count of bytes it echoed (8 bytes, native order, as `calls::echo_loop` does)
/// and `_exit`s with 0, or 1 if a call failed. Only raw system calls run in the child (module
/// doc); the parent gets the child's pid.
pub fn fork_echo(from: i32, to: i32, close: [i32; 2]) -> Result<i32, i32> {
    // SAFETY: fork has no memory-safety precondition. The child runs only raw system calls
    // on integer fds and a stack byte, then `_exit`s.
    match unsafe { libc::fork() } {
        -1 => Err(std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO)),
        0 => {
            // SAFETY: prctl and close with integer arguments only.
            unsafe {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
                libc::close(close[0]);
                libc::close(close[1]);
            }
            let mut b = 0u8;
            let mut echoed = 0u64;
            let status = loop {
                // SAFETY: reads at most 1 byte into the live stack byte `b`.
                let n = unsafe { libc::read(from, std::ptr::from_mut(&mut b).cast(), 1) };
                if n == 0 {
                    let count = echoed.to_ne_bytes();
                    // SAFETY: writes the 8 bytes of the live stack array `count`.
                    let w = unsafe { libc::write(to, count.as_ptr().cast(), count.len()) };
                    break if w == 8 { 0 } else { 1 };
                }
                if n < 0 {
                    if std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                        continue;
                    }
                    break 1;
                }
                // SAFETY: writes the 1 byte of the live stack byte `b`.
                if unsafe { libc::write(to, std::ptr::from_ref(&b).cast(), 1) } != 1 {
                    break 1;
                }
                echoed += 1;
            };
            // SAFETY: _exit has no precondition and does not return.
            unsafe { libc::_exit(status) }
        }
        pid => Ok(pid),
    }
}

/// Waits for the child `pid`; `Ok` if it exited with 0, else the errno of the wait or `EIO`.
/// Allocates nothing: it runs in forked copies.
pub fn wait_child(pid: i32) -> Result<(), i32> {
    loop {
        let mut status = 0;
        // SAFETY: `status` is a writable int; `pid` is our child.
        let r = unsafe { libc::waitpid(pid, &mut status, 0) };
        if r == -1 {
            let e = std::io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EIO);
            if e == libc::EINTR {
                continue;
            }
            return Err(e);
        }
        return if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0 {
            Ok(())
        } else {
            Err(libc::EIO)
        };
    }
}

/// The `pollfd` array of `poll1`/`poll2` on the host, on the stack: it is built before the
/// loop, as will-it-scale builds its own, and used from forked copies.
pub struct HostPollSet {
    fds: [libc::pollfd; POLL2_FDS],
    len: usize,
}

impl Default for HostPollSet {
    fn default() -> Self {
        HostPollSet {
            fds: [libc::pollfd {
                fd: -1,
                events: 0,
                revents: 0,
            }; POLL2_FDS],
            len: 0,
        }
    }
}

impl HostPollSet {
    /// Adds `fd`, asking for `POLLOUT` (ignored past [`POLL2_FDS`]).
    pub fn add(&mut self, fd: i32) {
        if let Some(p) = self.fds.get_mut(self.len) {
            *p = libc::pollfd {
                fd,
                events: libc::POLLOUT,
                revents: 0,
            };
            self.len += 1;
        }
    }

    /// `poll(fds, len, 0)`: the number of fds with an event, or the errno.
    pub fn poll_now(&mut self) -> Result<usize, i32> {
        // SAFETY: `fds[..len]` are initialised pollfds in a live array that poll may write
        // `revents` of; `len` is at most the array's length.
        let r = unsafe { libc::poll(self.fds.as_mut_ptr(), self.len as libc::nfds_t, 0) };
        usize::try_from(r).map_err(|_| {
            std::io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EIO)
        })
    }
}
