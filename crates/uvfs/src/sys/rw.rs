//! `read`, `write`, `pread`, `pwrite`, the vectored forms, `lseek`, `fsync`, `fallocate`.
//! Linux: fs/read_write.c (`vfs_read()`, `vfs_write()`, `rw_verify_area()`), fs/open.c
//! (`vfs_fallocate()`), fs/sync.c.

use std::io::{IoSlice, IoSliceMut};

use crate::abi::{
    Errno, FallocFlags, FileType, OpenFlags, Result, Whence, IOV_MAX, S_ISGID, S_ISUID,
};
use crate::vfs::atime::touch_atime;
use crate::vfs::inode::SetAttr;
use crate::vfs::ops::WritePos;
use crate::vfs::permission::should_remove_suid;
use crate::vfs::{FileDescription, Task};

/// Largest count one read or write moves (Linux: `MAX_RW_COUNT`, `INT_MAX` rounded down to a page).
const MAX_RW_COUNT: usize = (i32::MAX as usize) & !4095;

/// Checks an explicit offset and count (Linux: `rw_verify_area()`).
#[inline]
fn verify_area(pos: i64, count: usize) -> Result<u64> {
    if pos < 0 || pos.checked_add(count as i64).is_none() {
        return Err(Errno::EINVAL);
    }
    Ok(pos as u64)
}

#[inline]
fn check_readable(file: &FileDescription) -> Result<()> {
    if !file.fmode().read {
        return Err(Errno::EBADF);
    }
    if file.inode().is_dir() {
        return Err(Errno::EISDIR);
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

/// Clears set-user-ID and set-group-ID before a write by a caller without `CAP_FSETID`
/// (Linux: `file_remove_privs()`, `should_remove_suid()`).
///
/// # Fast path
/// One relaxed load of the mode when no set-id bit is set.
#[inline]
fn remove_privs(task: &Task, file: &FileDescription) -> Result<()> {
    let inode = file.inode();
    let mode = inode.mode();
    if mode & (S_ISUID | S_ISGID) == 0 {
        return Ok(());
    }
    remove_privs_slow(task, file)
}

#[cold]
fn remove_privs_slow(task: &Task, file: &FileDescription) -> Result<()> {
    let inode = file.inode();
    let kill = should_remove_suid(&task.cred.borrow(), inode);
    if kill == 0 {
        return Ok(());
    }
    let _g = inode.lock.write();
    let attr = SetAttr {
        perm: Some(inode.mode() & !kill & 0o7777),
        ctime: true,
        ..SetAttr::default()
    };
    inode.ops().setattr(inode, &attr)
}

impl Task {
    /// `read(2)` at the file position.
    ///
    /// # Errors
    /// `EBADF` (not open for reading, `O_PATH`), `EISDIR`, `EINVAL`.
    pub fn read(&self, fd: i32, buf: &mut [u8]) -> Result<usize> {
        let file = self.fget(fd)?;
        check_readable(&file)?;
        let len = buf.len().min(MAX_RW_COUNT);
        let mut pos = file.pos.lock();
        verify_area(*pos as i64, len)?;
        let n = file.ops().read(&file, &mut buf[..len], *pos)?;
        *pos += n as u64;
        drop(pos);
        touch_atime(&file);
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
        check_readable(&file)?;
        let len = buf.len().min(MAX_RW_COUNT);
        let pos = verify_area(offset, len)?;
        let n = file.ops().read(&file, &mut buf[..len], pos)?;
        touch_atime(&file);
        Ok(n)
    }

    /// `write(2)` at the file position (at the end with `O_APPEND`).
    ///
    /// # Errors
    /// `EBADF`, `EINVAL`, `EFBIG`, `ENOSPC`.
    pub fn write(&self, fd: i32, buf: &[u8]) -> Result<usize> {
        let file = self.fget(fd)?;
        check_writable(&file)?;
        let len = buf.len().min(MAX_RW_COUNT);
        let mut pos = file.pos.lock();
        let at = if file.flags().contains(OpenFlags::APPEND) {
            WritePos::Append
        } else {
            WritePos::At(verify_area(*pos as i64, len)?)
        };
        if len != 0 {
            remove_privs(self, &file)?;
        }
        let (n, end) = file.ops().write(&file, &buf[..len], at)?;
        *pos = end;
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
        check_writable(&file)?;
        let len = buf.len().min(MAX_RW_COUNT);
        let pos = verify_area(offset, len)?;
        let at = if file.flags().contains(OpenFlags::APPEND) {
            WritePos::Append
        } else {
            WritePos::At(pos)
        };
        if len != 0 {
            remove_privs(self, &file)?;
        }
        file.ops().write(&file, &buf[..len], at).map(|(n, _)| n)
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

    fn vectored_read(
        &self,
        fd: i32,
        iov: &mut [IoSliceMut<'_>],
        offset: Option<i64>,
    ) -> Result<usize> {
        let total = iov_total(iov.iter().map(|b| b.len()), iov.len())?;
        if total == 0 {
            // Linux: `vfs_readv()` checks the fd, then returns 0 for an empty vector without
            // reading (so no atime update).
            let file = self.fget(fd)?;
            check_readable(&file)?;
            return Ok(0);
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

    fn vectored_write(&self, fd: i32, iov: &[IoSlice<'_>], offset: Option<i64>) -> Result<usize> {
        let total = iov_total(iov.iter().map(|b| b.len()), iov.len())?;
        if total == 0 {
            let file = self.fget(fd)?;
            check_writable(&file)?;
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

    /// `lseek(2)`.
    ///
    /// # Errors
    /// `EBADF`, `EINVAL` for a bad origin or a negative result, `ENXIO` for `SEEK_DATA`/
    /// `SEEK_HOLE` at or past the end.
    pub fn lseek(&self, fd: i32, offset: i64, whence: Whence) -> Result<i64> {
        let file = self.fget(fd)?;
        if file.fmode().path_only {
            return Err(Errno::EBADF);
        }
        if whence.0 > Whence::HOLE.0 {
            return Err(Errno::EINVAL);
        }
        let mut pos = file.pos.lock();
        let new = file.ops().llseek(&file, offset, whence, *pos)?;
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
        if file.fmode().path_only {
            return Err(Errno::EBADF);
        }
        file.ops().fsync(&file)
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
    /// In Linux's order: `EBADF` (closed fd), `EINVAL` (offset < 0, len <= 0), `EOPNOTSUPP` (unknown or unsupported
    /// modes; `PUNCH_HOLE` without `KEEP_SIZE`), `EBADF` (not open for writing), `ESPIPE`
    /// (FIFO), `EISDIR`, `ENODEV` (not a regular file), `EFBIG` (end past the largest offset),
    /// `ENOSPC` (nothing allocated).
    pub fn fallocate(&self, fd: i32, mode: FallocFlags, offset: i64, len: i64) -> Result<()> {
        let file = self.fget(fd)?;
        if offset < 0 || len <= 0 {
            return Err(Errno::EINVAL);
        }
        if !FallocFlags::all().contains(mode) {
            return Err(Errno::EOPNOTSUPP);
        }
        if mode.contains(FallocFlags::PUNCH_HOLE) && mode.contains(FallocFlags::ZERO_RANGE) {
            return Err(Errno::EOPNOTSUPP);
        }
        if mode.contains(FallocFlags::PUNCH_HOLE) && !mode.contains(FallocFlags::KEEP_SIZE) {
            return Err(Errno::EOPNOTSUPP);
        }
        if mode.intersects(FallocFlags::COLLAPSE_RANGE | FallocFlags::INSERT_RANGE)
            && mode != FallocFlags::COLLAPSE_RANGE
            && mode != FallocFlags::INSERT_RANGE
        {
            return Err(Errno::EINVAL);
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
        remove_privs(self, &file)?;
        file.ops().fallocate(&file, mode, offset as u64, len as u64)
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
