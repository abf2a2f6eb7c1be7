//! `dup`, `dup2`, `dup3`, `fcntl`. Linux: fs/file.c (`ksys_dup3()`), fs/fcntl.c.

use crate::abi::{Errno, FcntlCmd, FdFlags, FileType, OpenFlags, Result};
use crate::vfs::permission::owner_or_capable;
use crate::vfs::Task;

/// # fds
///
/// `dup`, `dup2`, `dup3`, `fcntl`.
impl Task {
    /// `dup(2)`: the lowest free fd, sharing the open file; `FD_CLOEXEC` clear.
    ///
    /// # Errors
    /// `EBADF`, `EMFILE`.
    pub fn dup(&self, fd: i32) -> Result<i32> {
        self.files.dup(fd)
    }

    /// `dup2(2)`: `newfd` becomes a copy of `oldfd`, closing what was there.
    ///
    /// # Errors
    /// `EBADF` for a closed `oldfd` or an out-of-range `newfd`.
    pub fn dup2(&self, oldfd: i32, newfd: i32) -> Result<i32> {
        if oldfd == newfd {
            self.files.get(oldfd)?;
            return Ok(newfd);
        }
        self.dup_to(oldfd, newfd, false)
    }

    /// `dup3(2)`: as [`Task::dup2`] with `O_CLOEXEC` allowed and `oldfd == newfd` refused.
    ///
    /// # Errors
    /// `EINVAL` for flags other than `O_CLOEXEC` or equal fds; `EBADF`.
    pub fn dup3(&self, oldfd: i32, newfd: i32, flags: OpenFlags) -> Result<i32> {
        if !(flags - OpenFlags::CLOEXEC).is_empty() {
            return Err(Errno::EINVAL);
        }
        if oldfd == newfd {
            return Err(Errno::EINVAL);
        }
        self.dup_to(oldfd, newfd, flags.contains(OpenFlags::CLOEXEC))
    }

    fn dup_to(&self, oldfd: i32, newfd: i32, cloexec: bool) -> Result<i32> {
        if newfd < 0 || newfd as u32 >= self.files.limit() {
            return Err(Errno::EBADF);
        }
        let file = self.files.get(oldfd)?;
        self.fd_cache_evict(newfd);
        let old = self.files.install_at(newfd, file, cloexec)?;
        if let Some(old) = &old {
            // The replaced fd is closed (Linux: `do_dup2()` → `filp_close()`).
            crate::vfs::locks::remove_posix(old, self.files.id());
        }
        drop(old);
        Ok(newfd)
    }

    /// `fcntl(2)` for the fd, status-flag and pipe-size commands.
    ///
    /// # Errors
    /// `EBADF`; `EINVAL` for a `F_DUPFD` minimum out of range; `EPERM` setting `O_NOATIME` on
    /// a file the caller does not own; `EMFILE`. The pipe-size commands: `EBADF` for a file
    /// that is not a pipe or FIFO, `EINVAL` for a size above 2^31, `EPERM` above
    /// [`pipe_max_size`](crate::fs::pipefs::pipe_max_size) without `CAP_SYS_RESOURCE`,
    /// `EBUSY` below what the pipe holds.
    pub fn fcntl(&self, fd: i32, cmd: FcntlCmd) -> Result<i32> {
        let file = self.files.get(fd)?;
        match cmd {
            FcntlCmd::DupFd(min) | FcntlCmd::DupFdCloexec(min) => {
                if min < 0 || min as u32 >= self.files.limit() {
                    return Err(Errno::EINVAL);
                }
                self.files
                    .install(file, matches!(cmd, FcntlCmd::DupFdCloexec(_)), min)
            }
            FcntlCmd::GetFd => Ok(if self.files.cloexec(fd)? {
                FdFlags::CLOEXEC.bits() as i32
            } else {
                0
            }),
            FcntlCmd::SetFd(f) => {
                self.files.set_cloexec(fd, f.contains(FdFlags::CLOEXEC))?;
                Ok(0)
            }
            FcntlCmd::GetFl => Ok(file.flags().bits() as i32),
            FcntlCmd::SetFl(f) => {
                if file.fmode().path_only {
                    return Err(Errno::EBADF);
                }
                if f.contains(OpenFlags::NOATIME)
                    && !file.flags().contains(OpenFlags::NOATIME)
                    && !owner_or_capable(&self.cred.borrow(), file.inode())
                {
                    return Err(Errno::EPERM);
                }
                // Only files that can do direct I/O take `O_DIRECT`: on tmpfs regular files, and
                // pipes (packet mode) (Linux: `setfl()`, `FMODE_CAN_ODIRECT`).
                if f.contains(OpenFlags::DIRECT)
                    && (!matches!(file.inode().file_type(), FileType::Regular | FileType::Fifo)
                        || !file.ops().can_odirect())
                {
                    return Err(Errno::EINVAL);
                }
                // A pipe's and an inotify instance's `fasync` keep `O_ASYNC` (Linux:
                // `pipe_fasync()`, `fsnotify_fasync()`, through `fasync_helper()`); uvfs has
                // no signals, so no `SIGIO` follows (docs/divergences.md). Other files have no
                // `fasync` and drop it.
                let fasync = crate::fs::pipefs::pipe_file(&file).is_some()
                    || crate::fs::inotify::inotify_of(&file).is_some();
                file.set_status_flags(f, fasync);
                Ok(0)
            }
            FcntlCmd::SetPipeSz(size) => self.set_pipe_size(&file, size),
            FcntlCmd::GetPipeSz => {
                let pf = crate::fs::pipefs::pipe_file(&file).ok_or(Errno::EBADF)?;
                Ok(pf.pipe().size_bytes() as i32)
            }
        }
    }
}
