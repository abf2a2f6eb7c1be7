//! pipefs: anonymous pipes, and the pipes of open FIFOs. Linux: fs/pipe.c.
//!
//! An anonymous pipe's inode is a pseudo inode with no name, on one internal pipefs
//! superblock mounted nowhere (Linux: `pipe_mnt`, `get_pipe_inode()`): mode `S_IFIFO | 0600`,
//! owned by its creator. Its two files ([`Task::pipe2`](crate::Task::pipe2)) share one
//! `Pipe`.
//!
//! A FIFO is an inode of any filesystem (`mknodat` with `S_IFIFO`); its pipe lives, while any
//! file of it is open or an opener waits, in a side table keyed by the inode's address (Linux:
//! `inode->i_pipe`), and goes, with any data left in it, when the last one closes.
//!
//! # Timestamps
//! Anonymous pipes do no timestamp work at all: no clock read, no attribute write (Linux
//! 2025, "pipe: don't update {a,c,m}time for anonymous pipes"). A FIFO's read updates its atime
//! under the mount's atime rules and its write stamps mtime and ctime, when they moved bytes
//! (Linux: `fifo_pipe_read()`, `fifo_pipe_write()`).
//!
//! [`set_vanilla_pipe_times`] brings back, for anonymous pipes, the work pre-2025 Linux did,
//! for `uvfs bench messaging`'s "vanilla" column; it is off unless a benchmark turns it on.
//!
//! # Signals
//! uvfs has no signals: a write that finds no reader records a pending `SIGPIPE` on the task,
//! which [`Task::take_sigpipe`](crate::Task::take_sigpipe) reads and clears.

pub(crate) mod pipe;

use std::any::Any;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;

use self::pipe::{FifoEnd, Pipe};
use super::pseudo::PseudoFs;
use crate::abi::{AccessMode, Errno, FileType, OpenFlags, PollEvents, Result, Whence, PAGE_SIZE};
use crate::vfs::atime::touch_atime;
use crate::vfs::locks::Wait;
use crate::vfs::ops::{FileOps, WritePos};
use crate::vfs::poll::PollTable;
use crate::vfs::{Dentry, FileDescription, Inode, Task, VfsPath};

/// pipefs's `f_type` (Linux: `PIPEFS_MAGIC`).
const PIPEFS_MAGIC: i64 = 0x5049_5045;

/// Default of [`pipe_max_size`]: 1 MiB (Linux: `/proc/sys/fs/pipe-max-size`).
pub const PIPE_MAX_SIZE_DEFAULT: usize = 1 << 20;

static PIPE_MAX_SIZE: AtomicUsize = AtomicUsize::new(PIPE_MAX_SIZE_DEFAULT);

/// The largest capacity `F_SETPIPE_SZ` grants without `CAP_SYS_RESOURCE`, in bytes, for
/// the whole process (Linux: `/proc/sys/fs/pipe-max-size`).
pub fn pipe_max_size() -> usize {
    PIPE_MAX_SIZE.load(Ordering::Relaxed)
}

/// Sets [`pipe_max_size`]; rounded as `F_SETPIPE_SZ` rounds (Linux: `proc_dopipe_max_size()`).
///
/// # Errors
/// `EINVAL` above 2^31 bytes.
pub fn set_pipe_max_size(bytes: usize) -> Result<()> {
    let r = round_pipe_size(bytes).ok_or(Errno::EINVAL)?;
    PIPE_MAX_SIZE.store(r, Ordering::Relaxed);
    Ok(())
}

/// A capacity rounded up to a power-of-two number of pages, at least one page; `None` above
/// 2^31 bytes (Linux: `round_pipe_size()`).
pub(crate) fn round_pipe_size(size: usize) -> Option<usize> {
    if size > 1 << 31 {
        return None;
    }
    if size < PAGE_SIZE as usize {
        return Some(PAGE_SIZE as usize);
    }
    Some(size.next_power_of_two())
}

/// Whether anonymous pipes stamp their times as Linux did before 2025: off unless
/// [`set_vanilla_pipe_times`] turns it on.
static VANILLA_PIPE_TIMES: AtomicBool = AtomicBool::new(false);

/// Makes anonymous pipes do the timestamp work Linux did before 2025 ("pipe: don't update
/// {a,c,m}time for anonymous pipes"), for the whole process: a read that moved bytes updates the
/// atime (`pipe_read()` → `file_accessed()` → `touch_atime()`), a write that moved bytes stamps
/// mtime and ctime (`pipe_write()` → `file_update_time()`). `pipe_mnt` is a `kern_mount()`,
/// whose mount flags have no `MNT_RELATIME`, so the strictatime rule applied: every read in a
/// new tick of the coarse clock wrote the atime. The internal pipefs mount here has no atime
/// flags either, so the same rule applies: a coarse clock read, the compare, and on a new tick
/// the stores under the inode's attribute lock (uvfs's counterpart of Linux's
/// `generic_update_time()` and `__mark_inode_dirty()`, which returned early for pipe inodes,
/// born `I_DIRTY`).
///
/// For `uvfs bench`'s "vanilla" column only: never on by default, and not an API.
#[doc(hidden)]
pub fn set_vanilla_pipe_times(on: bool) {
    VANILLA_PIPE_TIMES.store(on, Ordering::Relaxed);
}

/// Whether [`set_vanilla_pipe_times`] turned the pre-2025 timestamp work on.
#[doc(hidden)]
pub fn vanilla_pipe_times() -> bool {
    VANILLA_PIPE_TIMES.load(Ordering::Relaxed)
}

/// Whether a read or write of a pipe of `kind` does timestamp work.
#[inline]
fn stamps_times(kind: Kind) -> bool {
    kind == Kind::Fifo || VANILLA_PIPE_TIMES.load(Ordering::Relaxed)
}

/// The internal pipefs instance, mounted nowhere (Linux: `pipe_mnt`): no atime flags
/// (strictatime, as Linux's `kern_mount()`), but anonymous pipes do no timestamp work unless
/// [`set_vanilla_pipe_times`] asks.
fn pipefs() -> &'static PseudoFs {
    static FS: OnceLock<PseudoFs> = OnceLock::new();
    FS.get_or_init(|| PseudoFs::new("pipefs", PIPEFS_MAGIC, false))
}

/// Whose pipe a file is: which decides the timestamp work.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Anon,
    Fifo,
}

/// The file operations of a pipe's or FIFO's open file.
pub(crate) struct PipeFile {
    pipe: Arc<Pipe>,
    kind: Kind,
    read: bool,
    write: bool,
    /// A FIFO file's opener is counted as a reader and or writer (its rendezvous
    /// succeeded). Always true for an anonymous pipe's files.
    joined: AtomicBool,
    /// The pipe's writer count below which this reader sees no `POLLHUP` (see
    /// [`Pipe::poll`]); 0 but for a FIFO opened read-only and non-blocking with no writer.
    hup_from: AtomicU32,
}

impl PipeFile {
    /// The pipe.
    pub(crate) fn pipe(&self) -> &Arc<Pipe> {
        &self.pipe
    }
}

impl FileOps for PipeFile {
    fn read(&self, file: &FileDescription, buf: &mut [u8], _pos: u64) -> Result<usize> {
        read_pipe(self, file, buf, None)
    }

    fn write(&self, file: &FileDescription, buf: &[u8], _pos: WritePos) -> Result<(usize, u64)> {
        let sigpipe = std::cell::Cell::new(false);
        write_pipe(self, file, buf, None, &sigpipe).map(|n| (n, 0))
    }

    fn llseek(&self, _: &FileDescription, _: i64, _: Whence, _: u64) -> Result<u64> {
        Err(Errno::ESPIPE)
    }

    fn fsync(&self, _file: &FileDescription) -> Result<()> {
        Err(Errno::EINVAL)
    }

    fn can_poll(&self) -> bool {
        true
    }

    fn poll(&self, _file: &FileDescription, pt: Option<&mut PollTable<'_>>) -> PollEvents {
        let hup_from = self.hup_from.load(Ordering::Relaxed);
        self.pipe.poll(self.read, self.write, hup_from, pt)
    }

    fn as_any(&self) -> Option<&dyn Any> {
        Some(self)
    }

    fn release(&self, file: &FileDescription) {
        match self.kind {
            Kind::Anon => self.pipe.release(self.read, self.write),
            Kind::Fifo => {
                let inode = file.inode();
                if self.joined.load(Ordering::Relaxed) {
                    fifo_put(inode, &self.pipe, self.read, self.write);
                } else {
                    fifo_put(inode, &self.pipe, false, false);
                }
                inode.ops().unhold(inode);
            }
        }
    }
}

/// The pipe of an open pipe or FIFO file.
#[inline]
pub(crate) fn pipe_file(file: &FileDescription) -> Option<&PipeFile> {
    file.ops().as_any()?.downcast_ref::<PipeFile>()
}

fn wait_of<'a>(file: &FileDescription, intr: Option<&'a crate::vfs::locks::Interrupt>) -> Wait<'a> {
    if file.flags().contains(OpenFlags::NONBLOCK) {
        Wait::No
    } else {
        Wait::Yes(intr)
    }
}

fn read_pipe(
    pf: &PipeFile,
    file: &FileDescription,
    buf: &mut [u8],
    intr: Option<&crate::vfs::locks::Interrupt>,
) -> Result<usize> {
    let n = pf.pipe.read(buf, wait_of(file, intr))?;
    if n > 0 && stamps_times(pf.kind) {
        touch_atime(file);
    }
    Ok(n)
}

fn write_pipe(
    pf: &PipeFile,
    file: &FileDescription,
    buf: &[u8],
    intr: Option<&crate::vfs::locks::Interrupt>,
    sigpipe: &std::cell::Cell<bool>,
) -> Result<usize> {
    let packet = file.flags().contains(OpenFlags::DIRECT);
    let n = pf.pipe.write(buf, wait_of(file, intr), packet, sigpipe)?;
    if n > 0 && stamps_times(pf.kind) && !file.path().mnt.is_rdonly() {
        file.inode().update_mtime_ctime();
    }
    Ok(n)
}

/// `read` of a pipe or FIFO file for `task` (interruptible through its interrupt).
///
/// # Errors
/// `EINVAL` for a FIFO file not opened through pipefs; as [`Pipe::read`].
pub(crate) fn read(task: &Task, file: &FileDescription, buf: &mut [u8]) -> Result<usize> {
    let pf = pipe_file(file).ok_or(Errno::EINVAL)?;
    read_pipe(pf, file, buf, task.interrupt.get().map(|i| &**i))
}

/// `write` of a pipe or FIFO file for `task`; a missing reader records `SIGPIPE` on it.
///
/// # Errors
/// `EINVAL` for a FIFO file not opened through pipefs; as [`Pipe::write`].
pub(crate) fn write(task: &Task, file: &FileDescription, buf: &[u8]) -> Result<usize> {
    let pf = pipe_file(file).ok_or(Errno::EINVAL)?;
    write_pipe(
        pf,
        file,
        buf,
        task.interrupt.get().map(|i| &**i),
        &task.sigpipe,
    )
}

/// The two open files of a new anonymous pipe, read end first (Linux: `create_pipe_files()`).
pub(crate) fn create_pipe_files(
    uid: u32,
    gid: u32,
    flags: OpenFlags,
    opener_cred: u64,
) -> Result<[Arc<FileDescription>; 2]> {
    let fs = pipefs();
    let inode = fs.inode(FileType::Fifo, 0o600, uid, gid);
    let path = VfsPath {
        mnt: fs.mnt.clone(),
        dentry: Dentry::new_root(inode.clone()),
    };
    let pipe = Pipe::new_anon();
    // `O_DIRECT` only on the write end: it decides how writes are packed, and a read takes
    // packets by the buffers' own mark (Linux: `create_pipe_files()`).
    let end = |acc: OpenFlags, read: bool| {
        let status = if read {
            flags & OpenFlags::NONBLOCK
        } else {
            flags & (OpenFlags::NONBLOCK | OpenFlags::DIRECT)
        };
        FileDescription::new(
            path.clone(),
            inode.clone(),
            acc | status,
            Box::new(PipeFile {
                pipe: pipe.clone(),
                kind: Kind::Anon,
                read,
                write: !read,
                joined: AtomicBool::new(true),
                hup_from: AtomicU32::new(0),
            }),
            opener_cred,
        )
    };
    let r = end(OpenFlags::RDONLY, true)?;
    let w = end(OpenFlags::WRONLY, false)?;
    Ok([r, w])
}

/// Shards of the FIFO table.
const SHARDS: usize = 16;

/// The pipes of FIFOs that are open or being opened, by inode address, with the count of
/// their files and waiting openers (Linux: `inode->i_pipe` and `pipe->files` under
/// `inode->i_lock`).
/// Protects: the map of its shard and the counts. Order: leaf (no pipe lock is taken under
/// it, nor it under one).
static FIFOS: [Mutex<FifoMap>; SHARDS] = [const { Mutex::new(BTreeMap::new()) }; SHARDS];

/// A shard of the FIFO table: inode address to its pipe and count of files and openers.
type FifoMap = BTreeMap<usize, (Arc<Pipe>, u32)>;

fn fifo_shard(inode: &Inode) -> (usize, &'static Mutex<FifoMap>) {
    let key = std::ptr::from_ref(inode) as usize;
    (key, &FIFOS[(key >> 5) % SHARDS])
}

/// The FIFO's pipe, made if it has none, counted for one more file or opener.
fn fifo_get(inode: &Inode) -> Arc<Pipe> {
    let (key, shard) = fifo_shard(inode);
    let mut map = shard.lock();
    let e = map.entry(key).or_insert_with(|| (Pipe::new(), 0));
    e.1 += 1;
    e.0.clone()
}

/// Gives back what [`fifo_get`] and a successful open took; the pipe goes with its last file
/// (Linux: `put_pipe_info()`).
fn fifo_put(inode: &Inode, pipe: &Arc<Pipe>, read: bool, write: bool) {
    pipe.release(read, write);
    let (key, shard) = fifo_shard(inode);
    let gone = {
        let mut map = shard.lock();
        let e = map.get_mut(&key).expect("an open FIFO is in the table");
        e.1 -= 1;
        if e.1 == 0 {
            debug_assert!(e.0.is_unused());
            map.remove(&key)
        } else {
            None
        }
    };
    // The pipe and its buffers are freed outside the table's lock.
    drop(gone);
}

/// The file operations of the FIFO `inode` opened with `flags`, its pipe counted for one
/// more opener but the opener not yet a reader or writer: [`fifo_rendezvous`] does that.
///
/// # Errors
/// `EINVAL` for neither reading nor writing (Linux: `fifo_open()`).
pub(crate) fn fifo_prepare(inode: &Arc<Inode>, flags: OpenFlags) -> Result<Box<dyn FileOps>> {
    let end = match flags.access() {
        AccessMode::ReadOnly => FifoEnd::Read,
        AccessMode::WriteOnly => FifoEnd::Write,
        AccessMode::ReadWrite => FifoEnd::Both,
        AccessMode::Neither => return Err(Errno::EINVAL),
    };
    let pipe = fifo_get(inode);
    inode.ops().hold(inode);
    Ok(Box::new(PipeFile {
        pipe,
        kind: Kind::Fifo,
        read: end != FifoEnd::Write,
        write: end != FifoEnd::Read,
        joined: AtomicBool::new(false),
        hup_from: AtomicU32::new(0),
    }))
}

/// The open rendezvous of a FIFO file from [`fifo_prepare`] (Linux: `fifo_open()`): waits
/// for the other side unless the file has `O_NONBLOCK` or is open for both; interruptible
/// through `task`'s interrupt. On an error the file is dropped by the caller.
///
/// # Errors
/// `ENXIO` (write-only, non-blocking, no reader); `EINTR`.
pub(crate) fn fifo_rendezvous(task: &Task, file: &FileDescription) -> Result<()> {
    let pf = pipe_file(file).ok_or(Errno::ENXIO)?;
    let end = match (pf.read, pf.write) {
        (true, false) => FifoEnd::Read,
        (false, true) => FifoEnd::Write,
        _ => FifoEnd::Both,
    };
    let nonblock = file.flags().contains(OpenFlags::NONBLOCK);
    if let Some(w) = pf
        .pipe
        .fifo_open(end, nonblock, task.interrupt.get().map(|i| &**i))?
    {
        pf.hup_from.store(w, Ordering::Relaxed);
    }
    pf.joined.store(true, Ordering::Relaxed);
    Ok(())
}

/// Openers and blocked readers and writers of the FIFO `inode`'s pipe, if it has one: for
/// tests that must know a waiter is in place.
pub(crate) fn fifo_waiters(inode: &Inode) -> u32 {
    let (key, shard) = fifo_shard(inode);
    let pipe = shard.lock().get(&key).map(|e| e.0.clone());
    pipe.map_or(0, |p| p.waiters())
}
