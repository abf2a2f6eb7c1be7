//! `splice`, `tee` and `sendfile`: data moved between pipes, and between a pipe or file and a
//! file, without passing through the caller. Linux: fs/splice.c (`do_splice()`,
//! `splice_pipe_to_pipe()`, `link_pipe()`, `splice_file_to_pipe()`,
//! `iter_file_splice_write()`, `splice_direct_to_actor()`), fs/read_write.c (`do_sendfile()`).
//!
//! The pipe side is [`Pipe`]'s (fs/pipefs/pipe.rs); here are the checks in Linux's order, the
//! file positions and the timestamps. A file end is a regular file (tmpfs's `splice_read`
//! and `splice_write`); any other file that is not a pipe refuses with `EINVAL`, as a file
//! without those methods does on Linux.
//!
//! # Timestamps
//! A file written gets mtime and ctime as a write does; a file read gets its atime as a read
//! does, even when it read nothing at its end (Linux: `file_accessed()` in
//! `shmem_file_splice_read()`). Pipes, anonymous or FIFOs, get no timestamp work from a
//! splice or tee: Linux's splice paths do not touch the pipe inode's times.

use std::sync::Arc;

use super::rw::{verify_area, write_remove_privs, MAX_RW_COUNT};
use crate::abi::{Errno, FileType, OpenFlags, Result, SpliceFlags, Whence, PAGE_SIZE};
use crate::fs::pipefs::{self, pipe::Pipe};
use crate::vfs::atime::touch_atime;
use crate::vfs::locks::{Interrupt, Wait};
use crate::vfs::notify;
use crate::vfs::ops::WritePos;
use crate::vfs::{FileDescription, Task};

/// Buffers of the pipe Linux's `sendfile` between two files moves data through
/// (`PIPE_DEF_BUFFERS`): it reads at most this many pages at a time.
const DIRECT_BUFFERS: usize = 16;

/// The pipe of a pipe or FIFO file (Linux: `get_pipe_info()`).
fn pipe_of(file: &FileDescription) -> Option<&Arc<Pipe>> {
    pipefs::pipe_file(file).map(|pf| pf.pipe())
}

/// Linux: `fdget()`, which does not return `O_PATH` files.
fn not_path(file: &FileDescription) -> Result<()> {
    if file.fmode().path_only {
        return Err(Errno::EBADF);
    }
    Ok(())
}

/// `rw_verify_area()`: a count past `ssize_t`, a negative offset or an end past `loff_t`.
fn verify(pos: i64, count: usize) -> Result<u64> {
    if isize::try_from(count).is_err() {
        return Err(Errno::EINVAL);
    }
    verify_area(pos, count)
}

/// Whether the file has `splice_read`/`splice_write` (Linux: tmpfs regular files do).
fn check_spliceable(file: &FileDescription) -> Result<()> {
    if file.inode().file_type() != FileType::Regular {
        return Err(Errno::EINVAL);
    }
    Ok(())
}

fn wait_of(nonblock: bool, intr: Option<&Interrupt>) -> Wait<'_> {
    if nonblock {
        Wait::No
    } else {
        Wait::Yes(intr)
    }
}

/// # Splice
///
/// `splice`, `tee`, `sendfile`.
impl Task {
    /// `splice(2)`: moves up to `len` bytes from `fd_in` to `fd_out`, one of which is a pipe
    /// or FIFO: pipe to pipe, file to pipe, pipe to file. A file end reads or writes at
    /// `*off` and advances it, leaving the file position, or at the file position and
    /// advances that when `off` is `None`. `SPLICE_F_NONBLOCK`, or `O_NONBLOCK` on a pipe
    /// end, makes the pipe side fail with `EAGAIN` instead of waiting; otherwise it waits
    /// for data or room, interruptibly (nothing is half-moved beyond the count returned).
    /// A pipe end with no writer and no data is end of file (0); one with no reader is
    /// `EPIPE`, with a pending `SIGPIPE` ([`Task::take_sigpipe`]).
    ///
    /// # Errors
    /// In Linux's order: 0 for `len` 0 before anything; `EINVAL` (unknown flag); `EBADF`
    /// (bad fd, `O_PATH`); `ESPIPE` (an offset for a pipe end); `EBADF` (`fd_in` not open
    /// for reading or `fd_out` for writing); `EINVAL` (the same pipe at both ends; neither
    /// end a pipe; an output file with `O_APPEND`; a negative or overflowing offset; a file
    /// end that is not a regular file); `EPIPE`; `EAGAIN`; `EINTR`; the file's write errors
    /// (`EFBIG`, `ENOSPC`) when nothing was written.
    ///
    /// # Examples
    /// ```
    /// use uvfs::abi::{OpenFlags, SpliceFlags, AT_FDCWD};
    /// use uvfs::{Cred, Vfs};
    ///
    /// let task = Vfs::new().task(Cred::root());
    /// let f = task.openat(AT_FDCWD, "/f", OpenFlags::CREAT | OpenFlags::RDWR, 0o644)?;
    /// task.write(f, b"hello world")?;
    /// let [r, w] = task.pipe2(OpenFlags::empty())?;
    /// let mut off = 6;
    /// assert_eq!(task.splice(f, Some(&mut off), w, None, 100, SpliceFlags::empty())?, 5);
    /// assert_eq!(off, 11);
    /// let mut buf = [0u8; 8];
    /// assert_eq!(task.read(r, &mut buf)?, 5);
    /// assert_eq!(&buf[..5], b"world");
    /// # Ok::<(), uvfs::Errno>(())
    /// ```
    pub fn splice(
        &self,
        fd_in: i32,
        off_in: Option<&mut i64>,
        fd_out: i32,
        off_out: Option<&mut i64>,
        len: usize,
        flags: SpliceFlags,
    ) -> Result<usize> {
        if len == 0 {
            return Ok(0);
        }
        if !SpliceFlags::all().contains(flags) {
            return Err(Errno::EINVAL);
        }
        let fin = self.fget(fd_in)?;
        not_path(&fin)?;
        let fout = self.fget(fd_out)?;
        not_path(&fout)?;
        let ipipe = pipe_of(&fin);
        let opipe = pipe_of(&fout);
        // Linux: `__do_splice()` refuses an offset for a pipe before `do_splice()` looks at
        // the access modes.
        if (ipipe.is_some() && off_in.is_some()) || (opipe.is_some() && off_out.is_some()) {
            return Err(Errno::ESPIPE);
        }
        if !fin.fmode().read || !fout.fmode().write {
            return Err(Errno::EBADF);
        }
        let nonblock = flags.contains(SpliceFlags::NONBLOCK);
        let intr = self.interrupt.get().map(|i| &**i);
        let n = match (ipipe, opipe) {
            (Some(i), Some(o)) => {
                if Arc::ptr_eq(i, o) {
                    return Err(Errno::EINVAL);
                }
                let nb = nonblock || (fin.flags() | fout.flags()).contains(OpenFlags::NONBLOCK);
                i.splice_to_pipe(o, len, wait_of(nb, intr), &self.sigpipe)
            }
            (Some(i), None) => {
                let nb = nonblock || fin.flags().contains(OpenFlags::NONBLOCK);
                self.splice_pipe_to_file(i, &fout, off_out, len, wait_of(nb, intr))
            }
            (None, Some(o)) => {
                let nb = nonblock || fout.flags().contains(OpenFlags::NONBLOCK);
                self.splice_file_to_pipe(&fin, o, off_in, len, wait_of(nb, intr))
            }
            (None, None) => Err(Errno::EINVAL),
        }?;
        // Linux: `do_splice()` ends with the output's modify, then the input's access.
        if n > 0 {
            notify::modify(&fout);
            notify::access(&fin);
        }
        Ok(n)
    }

    /// The pipe-to-file half of [`Task::splice`] (Linux: the `ipipe` branch of
    /// `do_splice()`, then `iter_file_splice_write()`). The position is read before and
    /// stored after, as Linux does without `f_pos_lock`.
    fn splice_pipe_to_file(
        &self,
        pipe: &Arc<Pipe>,
        out: &FileDescription,
        off_out: Option<&mut i64>,
        len: usize,
        wait: Wait<'_>,
    ) -> Result<usize> {
        let start = match &off_out {
            // Linux: an offset needs `FMODE_PWRITE`, which anonymous-inode files lack.
            Some(_) if !out.has_pread() => return Err(Errno::EINVAL),
            Some(o) => **o,
            None => *out.pos.lock() as i64,
        };
        if out.flags().contains(OpenFlags::APPEND) {
            return Err(Errno::EINVAL);
        }
        let mut at = verify(start, len)?;
        check_spliceable(out)?;
        let r = pipe.splice_out(len, wait, |buf| {
            let (n, _) = write_remove_privs(self, out, buf, WritePos::At(at))?;
            at += n as u64;
            Ok(n)
        });
        match off_out {
            Some(o) => *o = at as i64,
            None => *out.pos.lock() = at,
        }
        r
    }

    /// The file-to-pipe half of [`Task::splice`] (Linux: the `opipe` branch of
    /// `do_splice()`, then `splice_file_to_pipe()`).
    fn splice_file_to_pipe(
        &self,
        file: &FileDescription,
        pipe: &Arc<Pipe>,
        off_in: Option<&mut i64>,
        len: usize,
        wait: Wait<'_>,
    ) -> Result<usize> {
        let start = match &off_in {
            // Linux: an offset needs `FMODE_PREAD`, which anonymous-inode files lack.
            Some(_) if !file.has_pread() => return Err(Errno::EINVAL),
            Some(o) => **o,
            None => *file.pos.lock() as i64,
        };
        let at = verify(start, len)?;
        let n = self.file_to_pipe(file, pipe, at, len, wait)?;
        let end = at + n as u64;
        match off_in {
            Some(o) => *o = end as i64,
            None => *file.pos.lock() = end,
        }
        Ok(n)
    }

    /// Reads `file` at `at` into `pipe` (Linux: `splice_file_to_pipe()` with
    /// `shmem_file_splice_read()`), then its atime as a read's.
    fn file_to_pipe(
        &self,
        file: &FileDescription,
        pipe: &Arc<Pipe>,
        at: u64,
        len: usize,
        wait: Wait<'_>,
    ) -> Result<usize> {
        let mut accessed = false;
        let n = pipe.splice_in(len.min(MAX_RW_COUNT), at, wait, &self.sigpipe, |buf| {
            check_spliceable(file)?;
            let n = file.ops().read(file, buf, at)?;
            accessed = true;
            Ok(n)
        })?;
        if accessed {
            crate::vfs::atime::touch_atime_read(file);
        }
        Ok(n)
    }

    /// `tee(2)`: copies up to `len` bytes from the pipe `fd_in` to the pipe `fd_out` without
    /// consuming them (a later read or splice of `fd_in` gets them again). Waits for data
    /// and room as [`Task::splice`] does; 0 when `fd_in` is empty and has no writer.
    ///
    /// # Errors
    /// In Linux's order: `EINVAL` (unknown flag), then 0 for `len` 0; `EBADF` (bad fd,
    /// `O_PATH`, `fd_in` not open for reading or `fd_out` for writing); `EINVAL` (either is
    /// not a pipe, or both are one pipe); `EAGAIN`; `EPIPE`; `EINTR`.
    pub fn tee(&self, fd_in: i32, fd_out: i32, len: usize, flags: SpliceFlags) -> Result<usize> {
        if !SpliceFlags::all().contains(flags) {
            return Err(Errno::EINVAL);
        }
        if len == 0 {
            return Ok(0);
        }
        let fin = self.fget(fd_in)?;
        not_path(&fin)?;
        let fout = self.fget(fd_out)?;
        not_path(&fout)?;
        if !fin.fmode().read || !fout.fmode().write {
            return Err(Errno::EBADF);
        }
        let (Some(i), Some(o)) = (pipe_of(&fin), pipe_of(&fout)) else {
            return Err(Errno::EINVAL);
        };
        if Arc::ptr_eq(i, o) {
            return Err(Errno::EINVAL);
        }
        let nb = flags.contains(SpliceFlags::NONBLOCK)
            || (fin.flags() | fout.flags()).contains(OpenFlags::NONBLOCK);
        let intr = self.interrupt.get().map(|i| &**i);
        let n = i.tee(o, len, wait_of(nb, intr), &self.sigpipe)?;
        if n > 0 {
            notify::access(&fin);
            notify::modify(&fout);
        }
        Ok(n)
    }

    /// `sendfile(2)`: copies up to `count` bytes from the file `in_fd`, at `*offset` (which
    /// advances; the file position stays) or at its position (which advances), to `out_fd`:
    /// a pipe or FIFO (as a splice from the file, waiting for room unless `out_fd` has
    /// `O_NONBLOCK`), or a regular file at its position, which advances. At most
    /// `MAX_RW_COUNT` bytes. Between two files it runs until `count`, the end of `in_fd` or
    /// a short write.
    ///
    /// # Errors
    /// In Linux's order: `EBADF` (`in_fd` bad, `O_PATH` or not open for reading); `ESPIPE`
    /// (an offset and `in_fd` a pipe); `EINVAL` (negative or overflowing offset or count);
    /// `EBADF` (`out_fd` bad or not open for writing); to a pipe: `EPIPE`, `EAGAIN`,
    /// `EINTR`, then `EINVAL` for an `in_fd` that is not a regular file; to a file:
    /// `EINVAL` (the output's position, `O_APPEND`, an `in_fd` that is a pipe or not a
    /// regular file, an output that is not a regular file), the write's errors when
    /// nothing was written.
    pub fn sendfile(
        &self,
        out_fd: i32,
        in_fd: i32,
        offset: Option<&mut i64>,
        count: usize,
    ) -> Result<usize> {
        let fin = self.fget(in_fd)?;
        not_path(&fin)?;
        if !fin.fmode().read {
            return Err(Errno::EBADF);
        }
        let ipipe = pipe_of(&fin).is_some();
        let start = match &offset {
            Some(o) => {
                // Linux: `FMODE_PREAD` (pipes and anonymous-inode files lack it).
                if !fin.has_pread() {
                    return Err(Errno::ESPIPE);
                }
                **o
            }
            None => *fin.pos.lock() as i64,
        };
        let mut pos = verify(start, count)?;
        let mut count = count.min(MAX_RW_COUNT);
        let fout = self.fget(out_fd)?;
        not_path(&fout)?;
        if !fout.fmode().write {
            return Err(Errno::EBADF);
        }
        // Linux: `do_sendfile()` bounds the copy by the smaller `s_maxbytes` of the two
        // files' superblocks (sendfile64's `max` of 0), before it looks at the output's kind.
        let max = fin.inode().sb().ops().max_bytes();
        let max = max.min(fout.inode().sb().ops().max_bytes());
        if pos + count as u64 > max {
            if pos >= max {
                return Err(Errno::EOVERFLOW);
            }
            count = (max - pos) as usize;
        }
        let n = if let Some(o) = pipe_of(&fout) {
            let nb = fout.flags().contains(OpenFlags::NONBLOCK);
            let intr = self.interrupt.get().map(|i| &**i);
            let n = self.file_to_pipe(&fin, o, pos, count, wait_of(nb, intr))?;
            pos += n as u64;
            n
        } else {
            let out_pos = *fout.pos.lock();
            verify(out_pos as i64, count)?;
            if fout.flags().contains(OpenFlags::APPEND) {
                return Err(Errno::EINVAL);
            }
            // Linux: `splice_direct_to_actor()` wants a seekable input.
            if ipipe {
                return Err(Errno::EINVAL);
            }
            let (n, in_end, out_end) = self.sendfile_direct(&fin, pos, &fout, out_pos, count)?;
            if n > 0 {
                *fout.pos.lock() = out_end;
            }
            pos = in_end;
            n
        };
        if n > 0 {
            match offset {
                Some(o) => *o = pos as i64,
                None => *fin.pos.lock() = pos,
            }
            // Linux: `do_sendfile()`'s events, after the copy's own (`sendfile_direct`).
            notify::access(&fin);
            notify::modify(&fout);
        }
        Ok(n)
    }

    /// Copies from `fin` at `pos` to `fout` at `out_pos`, a pipe's worth at a time (Linux:
    /// `splice_direct_to_actor()` through the task's private pipe): each round reads what
    /// [`DIRECT_BUFFERS`] pipe buffers hold and writes it; a short write ends the copy.
    /// Returns the count and both ends; touches `fin`'s atime whatever happened, as Linux's
    /// `file_accessed()` at its end does.
    fn sendfile_direct(
        &self,
        fin: &FileDescription,
        mut pos: u64,
        fout: &FileDescription,
        mut out_pos: u64,
        count: usize,
    ) -> Result<(usize, u64, u64)> {
        const PAGE: usize = PAGE_SIZE as usize;
        let page = PAGE as u64;
        let mut left = count;
        let mut bytes = 0;
        let mut err = None;
        let mut buf = Vec::new();
        // Linux moves page references through its internal pipe, a pipe's worth at a time,
        // and copies from them when it writes: a file sent into itself further on reads what
        // the same call wrote into a page it had data in (the copy runs forward, repeating
        // the bytes between the two positions), while a hole's reference is the zero page,
        // taken before the writes (tmpfs's `shmem_file_splice_read()`), and stays zeros; the
        // batch ends at the size the file had when it was read. Reading data pages at most
        // that distance at a time, and the holes found at the batch's start as zeros, gives
        // the same bytes with copies.
        let same_inode = std::ptr::eq(Arc::as_ptr(fin.inode()), Arc::as_ptr(fout.inode()));
        'batches: while left > 0 {
            let mut batch = left.min(DIRECT_BUFFERS * PAGE - (pos % page) as usize);
            // An `O_DIRECT` input is read into a private buffer instead (Linux:
            // `copy_splice_read()`): a snapshot of the batch, nothing repeats within it.
            let forward = same_inode && out_pos > pos && !fin.flags().contains(OpenFlags::DIRECT);
            let holes = if forward {
                let size = fin.inode().size();
                if pos >= size {
                    break;
                }
                batch = batch.min(usize::try_from(size - pos).unwrap_or(usize::MAX));
                self.holes_of(fin, pos, pos + batch as u64)
            } else {
                Vec::new()
            };
            let (first_page, end) = (pos / page, pos + batch as u64);
            while pos < end {
                let mut step = (end - pos) as usize;
                let mut hole = false;
                if forward {
                    step = step.min(((pos / page + 1) * page - pos) as usize);
                    hole = holes[(pos / page - first_page) as usize];
                    if !hole {
                        step = step.min(usize::try_from(out_pos - pos).unwrap_or(usize::MAX));
                    }
                }
                buf.resize(step, 0);
                let read = if hole {
                    buf.fill(0);
                    step
                } else {
                    let r = check_spliceable(fin).and_then(|()| fin.ops().read(fin, &mut buf, pos));
                    match r {
                        Ok(0) => break 'batches,
                        Ok(n) => n,
                        Err(e) => {
                            err = Some(e);
                            break 'batches;
                        }
                    }
                };
                let w = check_spliceable(fout).and_then(|()| {
                    write_remove_privs(self, fout, &buf[..read], WritePos::At(out_pos))
                });
                let w = match w {
                    Ok((0, _)) => break 'batches,
                    Ok((w, _)) => w,
                    Err(e) => {
                        err = Some(e);
                        break 'batches;
                    }
                };
                bytes += w;
                left -= w;
                pos += w as u64;
                out_pos += w as u64;
                if w < read {
                    break 'batches;
                }
            }
        }
        touch_atime(fin);
        match err {
            Some(e) if bytes == 0 => Err(e),
            _ => Ok((bytes, pos, out_pos)),
        }
    }

    /// For each page of `[from, to)` of `file`, whether it is a hole now (`SEEK_DATA` from
    /// its start finds no data in it).
    fn holes_of(&self, file: &FileDescription, from: u64, to: u64) -> Vec<bool> {
        let page = PAGE_SIZE;
        (from / page..to.div_ceil(page))
            .map(|k| {
                let start = k * page;
                match file.ops().llseek(file, start as i64, Whence::DATA, 0) {
                    Ok(data) => data >= start + page,
                    Err(Errno::ENXIO) => true,
                    Err(_) => false,
                }
            })
            .collect()
    }
}
