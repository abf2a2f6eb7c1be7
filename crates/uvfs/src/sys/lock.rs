//! Advisory locks: `flock(2)` and the record-lock commands of `fcntl(2)`. Linux: fs/locks.c
//! (`SYSCALL_DEFINE2(flock)`, `fcntl_getlk()`, `fcntl_setlk()`). The lock state and its
//! rules are in `vfs::locks`.

use std::sync::Arc;

use crate::abi::{Errno, Flock, FlockOp, LockCmd, Result, Whence, F_RDLCK, F_UNLCK, F_WRLCK};
use crate::vfs::file::FileDescription;
use crate::vfs::locks::posix::{Kind, Owner, OFFSET_MAX};
use crate::vfs::locks::{self, InterruptHandle, RangeRequest, Wait};
use crate::vfs::Task;

/// # Advisory locks
///
/// `flock`, `fcntl_lock` (`F_GETLK`, `F_SETLK`, `F_SETLKW` and the `F_OFD_*` commands), and
/// the embedder's interrupt of a blocked lock call.
impl Task {
    /// `flock(2)`: a shared or exclusive lock owned by the open file description, shared by
    /// its `dup`s and by forked tasks, released by `LOCK_UN` through any of them or when the
    /// description's last fd closes. Changing the type of a held lock releases it first, as
    /// Linux does: a `LOCK_NB` conversion that fails leaves no lock.
    ///
    /// # Errors
    /// `EINVAL` for an operation other than one of `LOCK_SH`, `LOCK_EX`, `LOCK_UN` (with or
    /// without `LOCK_NB`; checked before the fd); `EBADF` for a closed or `O_PATH` fd, or a
    /// lock on a file opened for neither reading nor writing; `EWOULDBLOCK` with `LOCK_NB`
    /// on a conflict; `EINTR` if interrupted while waiting ([`Task::interrupt_handle`]).
    /// A request with `LOCK_MAND` does nothing and succeeds (Linux since 5.15).
    pub fn flock(&self, fd: i32, op: FlockOp) -> Result<()> {
        if op.contains(FlockOp::MAND) {
            return Ok(());
        }
        let rest = op - FlockOp::NB;
        let kind = if rest == FlockOp::SH {
            Some(Kind::Read)
        } else if rest == FlockOp::EX {
            Some(Kind::Write)
        } else if rest == FlockOp::UN {
            None
        } else {
            return Err(Errno::EINVAL);
        };
        let file = self.fget(fd)?.into_owned();
        self.flock_file(&file, kind, op.contains(FlockOp::NB))
    }

    /// `flock` on an open file, after the operation's check (`kind` `None`: `LOCK_UN`;
    /// `nonblocking`: `LOCK_NB`). For [`Task::flock`] and `uvfs::fs::File::lock`.
    pub(crate) fn flock_file(
        &self,
        file: &Arc<FileDescription>,
        kind: Option<Kind>,
        nonblocking: bool,
    ) -> Result<()> {
        let mode = file.fmode();
        if mode.path_only || (kind.is_some() && !mode.read && !mode.write) {
            return Err(Errno::EBADF);
        }
        let wait = if nonblocking {
            Wait::No
        } else {
            Wait::Yes(self.interrupt.get().map(|i| &**i))
        };
        locks::flock(file.inode(), file_key(file), kind, wait)
    }

    /// `fcntl(2)` with a record-lock command: `F_GETLK`/`F_OFD_GETLK` fill `flock` with the
    /// first conflicting lock (its range from `SEEK_SET`, `l_len` 0 for "to the end", `l_pid`
    /// the holder's [`Task::lock_pid`] or `-1` for an OFD lock) or set `l_type` to `F_UNLCK`
    /// and leave the rest; the set commands take, change or release the lock over the range
    /// and leave `flock` as it was.
    ///
    /// POSIX locks (`F_SETLK`, `F_SETLKW`) belong to this task's fd table, shared with its
    /// [`Task::clone_thread`] threads and not with [`Task::fork`]ed tasks, and any close of
    /// any fd of the same inode through that table releases them all. OFD locks (`F_OFD_*`)
    /// belong to the open file description and go when it does. The two kinds conflict with
    /// each other, not with `flock` locks. An owner's locks split and merge: its state is
    /// per byte, and taking a range replaces whatever the owner held there.
    ///
    /// # Errors
    /// In Linux's order: `EBADF` for a closed or `O_PATH` fd; `EINVAL` for `F_GETLK` with a
    /// type other than `F_RDLCK`/`F_WRLCK`; `EINVAL` for a bad `l_whence`, a start before
    /// byte 0 or a negative length reaching before it; `EOVERFLOW` for a range past the
    /// largest offset; `EINVAL` for a bad `l_type`; `EBADF` for a set of `F_RDLCK` on a file
    /// not open for reading or `F_WRLCK` on one not open for writing; `EINVAL` for an
    /// `F_OFD_*` command with `l_pid` not 0; then `EAGAIN` (`F_SETLK` on a conflict),
    /// `EDEADLK` (`F_SETLKW` that would wait in a cycle of POSIX waiters) and `EINTR`
    /// (interrupted while waiting, [`Task::interrupt_handle`]).
    pub fn fcntl_lock(&self, fd: i32, cmd: LockCmd, flock: &mut Flock) -> Result<()> {
        let file = self.fget(fd)?.into_owned();
        if file.fmode().path_only {
            return Err(Errno::EBADF);
        }
        if cmd == LockCmd::GetLk && flock.l_type != F_RDLCK && flock.l_type != F_WRLCK {
            return Err(Errno::EINVAL);
        }
        let (start, end) = range_of(&file, flock)?;
        let kind = match flock.l_type {
            F_RDLCK => Some(Kind::Read),
            F_WRLCK => Some(Kind::Write),
            F_UNLCK => None,
            _ => return Err(Errno::EINVAL),
        };
        let ofd = matches!(
            cmd,
            LockCmd::OfdGetLk | LockCmd::OfdSetLk | LockCmd::OfdSetLkW
        );
        let set = !matches!(cmd, LockCmd::GetLk | LockCmd::OfdGetLk);
        if set {
            let mode = file.fmode();
            if (kind == Some(Kind::Read) && !mode.read)
                || (kind == Some(Kind::Write) && !mode.write)
            {
                return Err(Errno::EBADF);
            }
        }
        if ofd && flock.l_pid != 0 {
            return Err(Errno::EINVAL);
        }
        let req = RangeRequest {
            owner: if ofd {
                Owner::File(file_key(&file))
            } else {
                Owner::Files(self.files.id())
            },
            pid: if ofd { -1 } else { self.lock_pid() },
            kind,
            start,
            end,
        };
        if !set {
            match locks::posix_test(file.inode(), req) {
                None => flock.l_type = F_UNLCK,
                Some(l) => {
                    *flock = Flock {
                        l_type: if l.kind == Kind::Read {
                            F_RDLCK
                        } else {
                            F_WRLCK
                        },
                        l_whence: Whence::SET.0 as i16,
                        l_start: l.start,
                        l_len: if l.end == OFFSET_MAX {
                            0
                        } else {
                            l.end - l.start + 1
                        },
                        l_pid: l.pid,
                    }
                }
            }
            return Ok(());
        }
        let wait = if matches!(cmd, LockCmd::SetLkW | LockCmd::OfdSetLkW) {
            Wait::Yes(self.interrupt.get().map(|i| &**i))
        } else {
            Wait::No
        };
        locks::posix_lock(file.inode(), req, wait)?;
        // A close of the fd that raced with the lock may have run its release before the
        // lock was in: if the fd no longer names this file, take the lock back out (Linux:
        // the `files_lookup_fd_locked()` check at the end of `fcntl_setlk()`).
        if !ofd && kind.is_some() && !self.files.get(fd).is_ok_and(|f| Arc::ptr_eq(&f, &file)) {
            let undo = RangeRequest { kind: None, ..req };
            locks::posix_lock(file.inode(), undo, Wait::No)
                .expect("an unlock neither conflicts nor waits");
            return Err(Errno::EBADF);
        }
        Ok(())
    }

    /// What `F_GETLK` reports as the `l_pid` of this task's POSIX locks. uvfs has no process
    /// ids: it is the identity of the task's fd table (the lock owner), which its
    /// [`Task::clone_thread`] threads share, as Linux reports the owner's thread-group id;
    /// a [`Task::fork`]ed task gets a new one. Positive (1 to `i32::MAX`, wrapping after
    /// that many tables).
    pub fn lock_pid(&self) -> i32 {
        ((self.files.id() - 1) % i32::MAX as u64 + 1) as i32
    }

    /// A handle that makes this task's blocked call (a lock call, a pipe or FIFO read,
    /// write or open, `splice`, `tee`, `poll`, `epoll_wait`, an eventfd read or write) return
    /// `EINTR`, for the embedder's signal delivery. See
    /// [`InterruptHandle::interrupt`]. Made on the first call; a task that never asks for
    /// one cannot be interrupted and pays nothing for it.
    pub fn interrupt_handle(&self) -> InterruptHandle {
        InterruptHandle(
            self.interrupt
                .get_or_init(|| Arc::new(locks::Interrupt::new()))
                .clone(),
        )
    }

    /// Tasks waiting for a lock of the inode of `fd`: for tests that must know that a waiter
    /// is in place before they go on.
    ///
    /// # Errors
    /// `EBADF`.
    #[doc(hidden)]
    pub fn lock_waiters(&self, fd: i32) -> Result<u32> {
        Ok(locks::waiters(self.fget(fd)?.inode()))
    }

    /// Clears an interrupt that no wait has consumed; true if there was one.
    pub fn take_interrupt(&self) -> bool {
        self.interrupt.get().is_some_and(|i| i.take())
    }
}

/// The key of an open file description as a lock owner: its address, stable while it lives.
fn file_key(file: &Arc<FileDescription>) -> usize {
    Arc::as_ptr(file) as usize
}

/// The byte range `start..=end` of a `struct flock` (Linux: `flock64_to_posix_lock()`).
///
/// # Errors
/// `EINVAL` for a bad `l_whence` or a range that starts before byte 0; `EOVERFLOW` past
/// the largest offset.
fn range_of(file: &FileDescription, fl: &Flock) -> Result<(i64, i64)> {
    let base: i64 = match fl.l_whence {
        0 => 0,
        1 => i64::try_from(*file.pos.lock()).map_err(|_| Errno::EOVERFLOW)?,
        2 => i64::try_from(file.inode().size()).map_err(|_| Errno::EOVERFLOW)?,
        _ => return Err(Errno::EINVAL),
    };
    let start = base.checked_add(fl.l_start).ok_or(Errno::EOVERFLOW)?;
    if start < 0 {
        return Err(Errno::EINVAL);
    }
    if fl.l_len > 0 {
        let end = start.checked_add(fl.l_len - 1).ok_or(Errno::EOVERFLOW)?;
        Ok((start, end))
    } else if fl.l_len < 0 {
        // Bytes `start + l_len ..= start - 1`.
        match start.checked_add(fl.l_len) {
            Some(s) if s >= 0 => Ok((s, start - 1)),
            _ => Err(Errno::EINVAL),
        }
    } else {
        Ok((start, OFFSET_MAX))
    }
}
