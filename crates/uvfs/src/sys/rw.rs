//! `read`, `write`, `pread`, `pwrite`, the vectored forms, `lseek`, `fsync`, `fallocate`.
//! Linux: fs/read_write.c (`vfs_read()`, `vfs_write()`, `rw_verify_area()`), fs/open.c
//! (`vfs_fallocate()`), fs/sync.c.

use std::io::{IoSlice, IoSliceMut};

use crate::abi::{
    Errno, FallocFlags, FileType, OpenFlags, Result, Whence, IOV_MAX, MAX_LFS_FILESIZE, S_IALLUGO,
    S_ISGID, S_ISUID,
};
use crate::vfs::atime::touch_atime_read;
use crate::vfs::inode::SetAttr;
use crate::vfs::notify;
use crate::vfs::ops::WritePos;
use crate::vfs::permission::should_remove_suid;
use crate::vfs::{FileDescription, Task};

/// Largest count one read or write moves (Linux: `MAX_RW_COUNT`, `INT_MAX` rounded down to a page).
pub(super) const MAX_RW_COUNT: usize = (i32::MAX as usize) & !4095;

/// Checks an offset and the count asked for (Linux: `rw_verify_area()`).
#[inline]
pub(super) fn verify_area(pos: i64, count: usize) -> Result<u64> {
    if pos < 0 || pos.checked_add(count as i64).is_none() {
        return Err(Errno::EINVAL);
    }
    Ok(pos as u64)
}

/// Linux: the `FMODE_READ` check of `vfs_read()` and `vfs_readv()`.
#[inline]
fn check_readable(file: &FileDescription) -> Result<()> {
    if !file.fmode().read {
        return Err(Errno::EBADF);
    }
    Ok(())
}

/// A directory's read method refuses (Linux: `generic_read_dir()`), after `rw_verify_area()`.
#[inline]
fn check_not_dir(file: &FileDescription) -> Result<()> {
    if file.inode().is_dir() {
        return Err(Errno::EISDIR);
    }
    Ok(())
}

/// A file without read and write methods (an epoll file) refuses vectored reads and writes,
/// even empty ones (Linux: `FMODE_CAN_READ`/`FMODE_CAN_WRITE` in `vfs_readv()`/`vfs_writev()`,
/// before the vector is looked at).
#[inline]
fn check_anon_io(file: &FileDescription) -> Result<()> {
    if file.inode().file_type() == FileType::Anon && !crate::fs::anon::has_io(file) {
        return Err(Errno::EINVAL);
    }
    Ok(())
}

/// Pipes, FIFOs and anonymous-inode files have no offsets ([`FileDescription::has_pread`]):
/// `ESPIPE` for `pread` and `pwrite`, before the access
/// mode (Linux: `ksys_pread64()` tests `FMODE_PREAD` before `vfs_read()`); an `O_PATH` fd
/// is refused first (`fdget()`).
#[inline]
fn check_no_pread(file: &FileDescription) -> Result<()> {
    if !file.has_pread() {
        if file.fmode().path_only {
            return Err(Errno::EBADF);
        }
        return Err(Errno::ESPIPE);
    }
    Ok(())
}

/// [`check_no_pread`] for `pwrite`: also `ESPIPE` for a file that takes no positional write
/// ([`FileOps::can_pwrite`](crate::vfs::ops::FileOps::can_pwrite)).
#[inline]
fn check_no_pwrite(file: &FileDescription) -> Result<()> {
    check_no_pread(file)?;
    if !file.ops().can_pwrite(file) {
        return Err(Errno::ESPIPE);
    }
    Ok(())
}

#[inline]
fn check_writable(file: &FileDescription) -> Result<()> {
    if !file.fmode().write {
        return Err(Errno::EBADF);
    }
    Ok(())
}

/// Writes `buf` at `at`, clearing set-user-ID and set-group-ID first when something is
/// written by a writer without `CAP_FSETID` (Linux: `file_remove_privs()` in
/// `shmem_file_write_iter()`).
///
/// # Fast path
/// One relaxed load of the mode when no set-id bit is set; then straight to the filesystem.
#[inline]
pub(super) fn write_remove_privs(
    task: &Task,
    file: &FileDescription,
    buf: &[u8],
    at: WritePos,
) -> Result<(usize, u64)> {
    if !buf.is_empty() && file.inode().mode() & (S_ISUID | S_ISGID) != 0 {
        return write_remove_privs_slow(task, file, buf, at);
    }
    file.ops().write(file, buf, at)
}

/// Linux removes privileges only once the write checks passed (`generic_write_checks()`
/// before `file_remove_privs()`), so a write refused with `EFBIG` leaves the bits. The inode
/// lock is held from the check to the end of the write, as Linux holds `i_rwsem`, so that no
/// truncate or mode change comes in between.
#[cold]
fn write_remove_privs_slow(
    task: &Task,
    file: &FileDescription,
    buf: &[u8],
    at: WritePos,
) -> Result<(usize, u64)> {
    let inode = file.inode();
    let _g = inode.lock.write();
    let kill = should_remove_suid(&task.cred.borrow(), inode);
    if kill != 0 {
        let start = match at {
            WritePos::At(p) => p,
            WritePos::Append => inode.size(),
        };
        if start >= MAX_LFS_FILESIZE as u64 {
            return Err(Errno::EFBIG);
        }
        clear_setid(file, kill)?;
    }
    file.ops().write(file, buf, at)
}

/// `fallocate` on a file with a set-id bit: the bits go once the allocation succeeded (Linux:
/// `file_modified()` at the end of `shmem_fallocate()`, under `i_rwsem`), so an `ENOSPC`
/// leaves them.
#[cold]
fn fallocate_remove_privs(
    task: &Task,
    file: &FileDescription,
    mode: FallocFlags,
    offset: u64,
    len: u64,
) -> Result<()> {
    let inode = file.inode();
    let _g = inode.lock.write();
    file.ops().fallocate(file, mode, offset, len)?;
    let kill = should_remove_suid(&task.cred.borrow(), inode);
    clear_setid(file, kill)
}

/// Clears the set-id bits `kill` (from [`should_remove_suid`]) with the inode lock held. No
/// stamp of its own: the write or allocation it comes with stamps mtime and ctime together
/// (Linux: `__remove_privs()` asks `notify_change()` for `ATTR_KILL_S*ID` without
/// `ATTR_CTIME`, and `file_modified()` then calls `file_update_time()`), so a clock tick
/// between the two never leaves a ctime after the mtime.
fn clear_setid(file: &FileDescription, kill: u32) -> Result<()> {
    if kill == 0 {
        return Ok(());
    }
    let inode = file.inode();
    let attr = SetAttr {
        perm: Some(inode.mode() & !kill & S_IALLUGO),
        ..SetAttr::default()
    };
    inode.ops().setattr(inode, &attr)?;
    notify::change(&file.path().dentry, inode, &attr);
    Ok(())
}

/// # Files: read and write
///
/// `read`, `write`, the positioned and vectored forms, `lseek`, `fsync`, `fallocate`.
impl Task {
    /// `read(2)` at the file position.
    ///
    /// # Errors
    /// `EBADF` (not open for reading, `O_PATH`), `EISDIR`, `EINVAL`.
    pub fn read(&self, fd: i32, buf: &mut [u8]) -> Result<usize> {
        let file = self.fget(fd)?;
        self.read_file(&file, buf, file.pos_unshared())
    }

    /// [`Task::read`] of an open file held without an fd (`uvfs::fs::File`), or through one;
    /// `unshared`: the position may move without its lock ([`crate::vfs::file::FilePos::take`]).
    #[inline]
    pub(crate) fn read_file(
        &self,
        file: &FileDescription,
        buf: &mut [u8],
        unshared: bool,
    ) -> Result<usize> {
        if notify::any_watched() {
            return self.read_file_notified(file, buf, unshared);
        }
        self.read_file_inner(file, buf, unshared)
    }

    /// [`Task::read_file`] once something is watched: the read, then its event (see
    /// [`notify::any_watched`]: the gate is read before the call, so that the unwatched path
    /// keeps nothing live across the filesystem's read for the hook).
    #[inline(never)]
    fn read_file_notified(
        &self,
        file: &FileDescription,
        buf: &mut [u8],
        unshared: bool,
    ) -> Result<usize> {
        let n = self.read_file_inner(file, buf, unshared)?;
        Ok(notify::accessed(file, n))
    }

    #[inline(always)]
    fn read_file_inner(
        &self,
        file: &FileDescription,
        buf: &mut [u8],
        unshared: bool,
    ) -> Result<usize> {
        check_readable(file)?;
        // Pipes and FIFOs have no position and may block (Linux: `FMODE_STREAM` files).
        match file.inode().file_type() {
            FileType::Fifo => {
                let len = buf.len().min(MAX_RW_COUNT);
                return crate::fs::pipefs::read(self, file, &mut buf[..len]);
            }
            // eventfd and epoll files: no position, may block.
            FileType::Anon => return crate::fs::anon::read(self, file, buf),
            _ => {}
        }
        let mut pos = file.pos.take(unshared);
        verify_area(*pos as i64, buf.len())?;
        check_not_dir(file)?;
        let len = buf.len().min(MAX_RW_COUNT);
        let n = file.ops().read(file, &mut buf[..len], *pos)?;
        *pos += n as u64;
        drop(pos);
        touch_atime_read(file);
        Ok(n)
    }

    /// `pread(2)`: reads at `offset` without moving the file position.
    ///
    /// # Errors
    /// `EBADF`, `EISDIR`, `EINVAL` for a negative or overflowing offset.
    ///
    /// # Fast path
    /// With an unshared fd table: no lock or reference count for the fd, one shared lock of
    /// the file's pages, and an atime check that writes only when relatime asks.
    #[inline]
    pub fn pread(&self, fd: i32, buf: &mut [u8], offset: i64) -> Result<usize> {
        // Linux: `ksys_pread64()` refuses a negative offset before it looks at the fd.
        if offset < 0 {
            return Err(Errno::EINVAL);
        }
        let file = self.fget(fd)?;
        self.pread_file(&file, buf, offset)
    }

    /// [`Task::pread`] of an open file held without an fd.
    #[inline]
    pub(crate) fn pread_file(
        &self,
        file: &FileDescription,
        buf: &mut [u8],
        offset: i64,
    ) -> Result<usize> {
        if notify::any_watched() {
            return self.pread_file_notified(file, buf, offset);
        }
        self.pread_file_inner(file, buf, offset)
    }

    /// [`Task::pread_file`] once something is watched (as [`Task::read_file`]).
    #[inline(never)]
    fn pread_file_notified(
        &self,
        file: &FileDescription,
        buf: &mut [u8],
        offset: i64,
    ) -> Result<usize> {
        let n = self.pread_file_inner(file, buf, offset)?;
        Ok(notify::accessed(file, n))
    }

    #[inline(always)]
    fn pread_file_inner(
        &self,
        file: &FileDescription,
        buf: &mut [u8],
        offset: i64,
    ) -> Result<usize> {
        check_no_pread(file)?;
        check_readable(file)?;
        let pos = verify_area(offset, buf.len())?;
        check_not_dir(file)?;
        let len = buf.len().min(MAX_RW_COUNT);
        let n = file.ops().read(file, &mut buf[..len], pos)?;
        touch_atime_read(file);
        Ok(n)
    }

    /// `write(2)` at the file position (at the end with `O_APPEND`).
    ///
    /// # Errors
    /// `EBADF`, `EINVAL`, `EFBIG`, `ENOSPC`.
    pub fn write(&self, fd: i32, buf: &[u8]) -> Result<usize> {
        let file = self.fget(fd)?;
        self.write_file(&file, buf, file.pos_unshared())
    }

    /// [`Task::write`] to an open file held without an fd, or through one; `unshared` as in
    /// [`Task::read_file`].
    #[inline]
    pub(crate) fn write_file(
        &self,
        file: &FileDescription,
        buf: &[u8],
        unshared: bool,
    ) -> Result<usize> {
        if notify::any_watched() {
            return self.write_file_notified(file, buf, unshared);
        }
        self.write_file_inner(file, buf, unshared)
    }

    /// [`Task::write_file`] once something is watched (as [`Task::read_file`]).
    #[inline(never)]
    fn write_file_notified(
        &self,
        file: &FileDescription,
        buf: &[u8],
        unshared: bool,
    ) -> Result<usize> {
        let n = self.write_file_inner(file, buf, unshared)?;
        Ok(notify::modified(file, n))
    }

    #[inline(always)]
    fn write_file_inner(
        &self,
        file: &FileDescription,
        buf: &[u8],
        unshared: bool,
    ) -> Result<usize> {
        check_writable(file)?;
        match file.inode().file_type() {
            FileType::Fifo => {
                let len = buf.len().min(MAX_RW_COUNT);
                return crate::fs::pipefs::write(self, file, &buf[..len]);
            }
            FileType::Anon => return crate::fs::anon::write(self, file, buf),
            _ => {}
        }
        let mut pos = file.pos.take(unshared);
        // The position is checked even with O_APPEND, where the write then goes to the end.
        let at = verify_area(*pos as i64, buf.len())?;
        let at = if file.flags().contains(OpenFlags::APPEND) {
            WritePos::Append
        } else {
            WritePos::At(at)
        };
        let len = buf.len().min(MAX_RW_COUNT);
        let (n, end) = write_remove_privs(self, file, &buf[..len], at)?;
        // Linux moves the position only when something was written (`new_sync_write()`), so
        // an empty write with O_APPEND leaves it where it was.
        if n != 0 {
            *pos = end;
        }
        Ok(n)
    }

    /// `pwrite(2)`: writes at `offset` without moving the file position. As on Linux, a file
    /// opened with `O_APPEND` is appended to whatever the offset.
    ///
    /// # Errors
    /// `EBADF`, `EINVAL` for a negative or overflowing offset, `EFBIG`, `ENOSPC`.
    ///
    /// # Fast path
    /// With an unshared fd table: no lock or reference count for the fd, one exclusive lock of
    /// the file's pages, one relaxed load for set-id bits, and a timestamp write only when the
    /// coarse clock ticked since the last one.
    #[inline]
    pub fn pwrite(&self, fd: i32, buf: &[u8], offset: i64) -> Result<usize> {
        if offset < 0 {
            return Err(Errno::EINVAL);
        }
        let file = self.fget(fd)?;
        self.pwrite_file(&file, buf, offset)
    }

    /// [`Task::pwrite`] to an open file held without an fd.
    #[inline]
    pub(crate) fn pwrite_file(
        &self,
        file: &FileDescription,
        buf: &[u8],
        offset: i64,
    ) -> Result<usize> {
        if notify::any_watched() {
            return self.pwrite_file_notified(file, buf, offset);
        }
        self.pwrite_file_inner(file, buf, offset)
    }

    /// [`Task::pwrite_file`] once something is watched (as [`Task::read_file`]).
    #[inline(never)]
    fn pwrite_file_notified(
        &self,
        file: &FileDescription,
        buf: &[u8],
        offset: i64,
    ) -> Result<usize> {
        let n = self.pwrite_file_inner(file, buf, offset)?;
        Ok(notify::modified(file, n))
    }

    #[inline(always)]
    fn pwrite_file_inner(&self, file: &FileDescription, buf: &[u8], offset: i64) -> Result<usize> {
        check_no_pwrite(file)?;
        check_writable(file)?;
        let pos = verify_area(offset, buf.len())?;
        let at = if file.flags().contains(OpenFlags::APPEND) {
            WritePos::Append
        } else {
            WritePos::At(pos)
        };
        let len = buf.len().min(MAX_RW_COUNT);
        write_remove_privs(self, file, &buf[..len], at).map(|(n, _)| n)
    }

    /// `readv(2)`.
    ///
    /// # Errors
    /// `EINVAL` for more than `IOV_MAX` buffers or a total past `ssize_t`; as [`Task::read`].
    pub fn readv(&self, fd: i32, iov: &mut [IoSliceMut<'_>]) -> Result<usize> {
        self.vectored_read(fd, iov, None)
    }

    /// `preadv(2)`.
    ///
    /// # Errors
    /// As [`Task::readv`] and [`Task::pread`].
    pub fn preadv(&self, fd: i32, iov: &mut [IoSliceMut<'_>], offset: i64) -> Result<usize> {
        self.vectored_read(fd, iov, Some(offset))
    }

    /// `writev(2)`: the buffers are written as one write.
    ///
    /// # Errors
    /// As [`Task::readv`] and [`Task::write`].
    pub fn writev(&self, fd: i32, iov: &[IoSlice<'_>]) -> Result<usize> {
        self.vectored_write(fd, iov, None)
    }

    /// `pwritev(2)`.
    ///
    /// # Errors
    /// As [`Task::writev`] and [`Task::pwrite`].
    pub fn pwritev(&self, fd: i32, iov: &[IoSlice<'_>], offset: i64) -> Result<usize> {
        self.vectored_write(fd, iov, Some(offset))
    }

    /// Linux's order (`do_readv()`, `do_preadv()`, `vfs_readv()`): a negative offset, the fd
    /// and its access mode, the vector, then an empty vector reads nothing, not even a
    /// directory; the rest is [`Task::read`] or [`Task::pread`] on one buffer.
    fn vectored_read(
        &self,
        fd: i32,
        iov: &mut [IoSliceMut<'_>],
        offset: Option<i64>,
    ) -> Result<usize> {
        let n = self.vectored_read_inner(fd, iov, offset)?;
        // Linux's `vfs_readv()` notifies any result that is not an error, an empty read or
        // vector too (a read of bytes was notified by `read`/`pread` below).
        if n == 0 && notify::any_watched() {
            if let Ok(file) = self.fget(fd) {
                notify::access(&file);
            }
        }
        Ok(n)
    }

    fn vectored_read_inner(
        &self,
        fd: i32,
        iov: &mut [IoSliceMut<'_>],
        offset: Option<i64>,
    ) -> Result<usize> {
        if offset.is_some_and(|o| o < 0) {
            return Err(Errno::EINVAL);
        }
        let looped = {
            let file = self.fget(fd)?;
            if offset.is_some() {
                check_no_pread(&file)?;
            }
            check_readable(&file)?;
            check_anon_io(&file)?;
            crate::fs::inotify::inotify_of(&file).is_some()
                || crate::fs::fanotify::fanotify_of(&file).is_some()
        };
        let total = iov_total(iov.iter().map(|b| b.len()), iov.len())?;
        if total == 0 {
            return Ok(0);
        }
        if looped {
            return self.read_each(fd, iov);
        }
        let mut tmp = vec![0u8; total];
        let n = match offset {
            Some(off) => self.pread(fd, &mut tmp, off)?,
            None => self.read(fd, &mut tmp)?,
        };
        let mut done = 0;
        for b in iov.iter_mut() {
            if done == n {
                break;
            }
            let k = b.len().min(n - done);
            b[..k].copy_from_slice(&tmp[done..done + k]);
            done += k;
        }
        Ok(n)
    }

    /// `readv` of a file whose read takes one buffer (an inotify or fanotify group: Linux's
    /// `inotify_read()` and `fanotify_read()` are `read`, not `read_iter`): one read per
    /// buffer, stopping at the first error or at a buffer not filled; the bytes read, or the
    /// error if none were (Linux: `do_loop_readv_writev()`). The first buffer is read even if
    /// it is empty; an empty one after it is passed over, as `iov_iter_advance()` past a filled
    /// buffer skips the empty ones that follow it.
    fn read_each(&self, fd: i32, iov: &mut [IoSliceMut<'_>]) -> Result<usize> {
        let mut done = 0;
        for (k, b) in iov.iter_mut().enumerate() {
            if k > 0 && b.is_empty() {
                continue;
            }
            match self.read(fd, b) {
                Err(e) if done == 0 => return Err(e),
                Err(_) => break,
                Ok(n) => {
                    done += n;
                    if n != b.len() {
                        break;
                    }
                }
            }
        }
        Ok(done)
    }

    /// As [`Task::vectored_read`] (Linux: `vfs_writev()`).
    fn vectored_write(&self, fd: i32, iov: &[IoSlice<'_>], offset: Option<i64>) -> Result<usize> {
        if offset.is_some_and(|o| o < 0) {
            return Err(Errno::EINVAL);
        }
        {
            let file = self.fget(fd)?;
            if offset.is_some() {
                check_no_pwrite(&file)?;
            }
            check_writable(&file)?;
            check_anon_io(&file)?;
            if file.inode().file_type() == FileType::Anon && offset.is_none() {
                let total = iov_total(iov.iter().map(|b| b.len()), iov.len())?;
                if total == 0 {
                    return Ok(0);
                }
                return self.write_each(fd, iov);
            }
        }
        let total = iov_total(iov.iter().map(|b| b.len()), iov.len())?;
        if total == 0 {
            return Ok(0);
        }
        let mut tmp = Vec::with_capacity(total);
        for b in iov {
            tmp.extend_from_slice(b);
        }
        match offset {
            Some(off) => self.pwrite(fd, &tmp, off),
            None => self.write(fd, &tmp),
        }
    }

    /// `writev` of a file whose write takes one buffer as a whole (an eventfd: Linux's
    /// `eventfd_write()` is a `write`, not a `write_iter`): one write per buffer, stopping at
    /// the first error or short write; the bytes written, or the error if none were (Linux:
    /// `do_loop_readv_writev()`). Empty buffers after a whole one are skipped, as the kernel's
    /// iterator does; an empty first one is written (and refused).
    fn write_each(&self, fd: i32, iov: &[IoSlice<'_>]) -> Result<usize> {
        let mut done = 0;
        let mut advanced = false;
        for b in iov {
            if b.is_empty() && advanced {
                continue;
            }
            match self.write(fd, b) {
                Err(e) if done == 0 => return Err(e),
                Err(_) => break,
                Ok(n) => {
                    done += n;
                    advanced = true;
                    if n != b.len() {
                        break;
                    }
                }
            }
        }
        Ok(done)
    }

    /// `lseek(2)`.
    ///
    /// # Errors
    /// `EBADF`, `EINVAL` for a bad origin or a negative result, `ENXIO` for `SEEK_DATA`/
    /// `SEEK_HOLE` at or past the end.
    pub fn lseek(&self, fd: i32, offset: i64, whence: Whence) -> Result<i64> {
        let file = self.fget(fd)?;
        self.lseek_file(&file, offset, whence, file.pos_unshared())
    }

    /// [`Task::lseek`] of an open file held without an fd; `unshared`: the position may move
    /// without its lock ([`crate::vfs::file::FilePos::take`]).
    pub(crate) fn lseek_file(
        &self,
        file: &FileDescription,
        offset: i64,
        whence: Whence,
        unshared: bool,
    ) -> Result<i64> {
        if file.fmode().path_only {
            return Err(Errno::EBADF);
        }
        if whence.0 > Whence::HOLE.0 {
            return Err(Errno::EINVAL);
        }
        let mut pos = file.pos.take(unshared);
        let new = file.ops().llseek(file, offset, whence, *pos)?;
        let new_i = i64::try_from(new).map_err(|_| Errno::EOVERFLOW)?;
        *pos = new;
        Ok(new_i)
    }

    /// `fsync(2)`.
    ///
    /// # Errors
    /// `EBADF`.
    pub fn fsync(&self, fd: i32) -> Result<()> {
        let file = self.fget(fd)?;
        self.fsync_file(&file)
    }

    /// [`Task::fsync`] of an open file held without an fd.
    pub(crate) fn fsync_file(&self, file: &FileDescription) -> Result<()> {
        if file.fmode().path_only {
            return Err(Errno::EBADF);
        }
        file.ops().fsync(file)
    }

    /// `fdatasync(2)`.
    ///
    /// # Errors
    /// `EBADF`.
    pub fn fdatasync(&self, fd: i32) -> Result<()> {
        self.fsync(fd)
    }

    /// `fallocate(2)`: mode 0 and `KEEP_SIZE` allocate, `PUNCH_HOLE|KEEP_SIZE` deallocates.
    ///
    /// # Errors
    /// In Linux's order: `EBADF` (closed or `O_PATH` fd), `EINVAL` (offset < 0, len <= 0), `EOPNOTSUPP` (unknown or unsupported
    /// modes; `PUNCH_HOLE` without `KEEP_SIZE`), `EBADF` (not open for writing), `ESPIPE`
    /// (FIFO), `EISDIR`, `ENODEV` (not a regular file), `EFBIG` (end past the largest offset),
    /// `ENOSPC` (nothing allocated).
    pub fn fallocate(&self, fd: i32, mode: FallocFlags, offset: i64, len: i64) -> Result<()> {
        let file = self.fget(fd)?;
        // Linux: `fdget()` does not return O_PATH files, so they fail before any argument.
        if file.fmode().path_only {
            return Err(Errno::EBADF);
        }
        if offset < 0 || len <= 0 {
            return Err(Errno::EINVAL);
        }
        // Exactly one mode, `KEEP_SIZE` only where it means something; all before the fd's
        // access mode (Linux: `vfs_fallocate()`).
        let modes = FallocFlags::all() - FallocFlags::KEEP_SIZE - FallocFlags::NO_HIDE_STALE;
        if !(modes | FallocFlags::KEEP_SIZE).contains(mode) {
            return Err(Errno::EOPNOTSUPP);
        }
        let keep = mode.contains(FallocFlags::KEEP_SIZE);
        let one = mode & modes;
        let ok = if one.is_empty()
            || one == FallocFlags::UNSHARE_RANGE
            || one == FallocFlags::ZERO_RANGE
        {
            true
        } else if one == FallocFlags::PUNCH_HOLE {
            keep
        } else if one == FallocFlags::COLLAPSE_RANGE
            || one == FallocFlags::INSERT_RANGE
            || one == FallocFlags::WRITE_ZEROES
        {
            !keep
        } else {
            false
        };
        if !ok {
            return Err(Errno::EOPNOTSUPP);
        }
        if !file.fmode().write {
            return Err(Errno::EBADF);
        }
        let ft = file.inode().file_type();
        match ft {
            FileType::Fifo => return Err(Errno::ESPIPE),
            FileType::Directory => return Err(Errno::EISDIR),
            FileType::Regular | FileType::BlockDevice => {}
            _ => return Err(Errno::ENODEV),
        }
        // The end must fit below `MAX_LFS_FILESIZE` (`i64::MAX`): only overflow can exceed it.
        offset.checked_add(len).ok_or(Errno::EFBIG)?;
        if !(mode - FallocFlags::KEEP_SIZE - FallocFlags::PUNCH_HOLE).is_empty() {
            return Err(Errno::EOPNOTSUPP);
        }
        if file.inode().mode() & (S_ISUID | S_ISGID) != 0 {
            fallocate_remove_privs(self, &file, mode, offset as u64, len as u64)?;
        } else {
            file.ops()
                .fallocate(&file, mode, offset as u64, len as u64)?;
        }
        notify::modify(&file);
        Ok(())
    }
}

fn iov_total(lens: impl Iterator<Item = usize>, count: usize) -> Result<usize> {
    if count > IOV_MAX {
        return Err(Errno::EINVAL);
    }
    let mut total: usize = 0;
    for l in lens {
        total = total
            .checked_add(l)
            .filter(|&t| t <= isize::MAX as usize)
            .ok_or(Errno::EINVAL)?;
    }
    Ok(total.min(MAX_RW_COUNT))
}
