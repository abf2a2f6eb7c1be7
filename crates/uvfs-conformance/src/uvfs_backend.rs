//! [`UvfsBackend`]: runs ops on a uvfs [`Task`] through its syscall-shaped API.

use std::io::{IoSlice, IoSliceMut};
use std::panic::{self, AssertUnwindSafe};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread;
use std::time::Duration;

use uvfs::abi::{
    AtFlags, EfdFlags, EpollEvent, EpollOp, FallocFlags, FcntlCmd, FdFlags, MountFlags, OpenFlags,
    OpenHow, PollEvents, PollFd, RenameFlags, Stat, StatFs, StatmountMask, Statx, StatxMask,
    Timespec, UmountFlags, Whence, XattrFlags, AT_FDCWD, PATH_MAX,
};
use uvfs::sys::EP_MAX_EVENTS;
use uvfs::{Errno, Task, Vfs};

use crate::backend::{run_case, Backend, CaseRun, Fds};
use crate::host::ListDir;
use crate::op::{Fcntl, FlockArg, LockCmd, Op, TaskStart, Time, XattrTarget};
use crate::outcome::{
    decode_dirents, decode_fanotify, decode_inotify, Bytes, Dev, DirId, DirentRec, FanotifyFile,
    FdRec, Listing, Outcome, SnapshotRec, StatFsRec, StatRec, StatxRec, Ts, Value,
};
use crate::parse::Case;
use crate::snapshot::{observe_tree, Observe, XATTR_BUF};

mod cred;
mod sysfs;

/// A uvfs namespace whose root is a tmpfs with the case's options, the case's tasks in it
/// (task 1 starts as root at the namespace root), and a separate root task that observes
/// `snapshot`s.
pub struct UvfsBackend {
    /// Task N at index N - 1.
    tasks: Vec<Option<Task>>,
    current: usize,
    observer: Task,
}

impl UvfsBackend {
    /// A fresh namespace with `Vfs::with_root_options(mount)`.
    ///
    /// # Errors
    /// The errno number uvfs gives for bad options.
    pub fn new(mount: Option<&str>) -> Result<UvfsBackend, i32> {
        let vfs = Vfs::with_root_options(mount).map_err(Errno::raw)?;
        vfs.register_filesystem(Arc::new(sysfs::LazySysfs::default()))
            .expect("a fresh namespace has no type named sysfs");
        let first = vfs.task(cred::root_cred());
        // The host's helper runs each case with both limits at `NOFILE` (a case's fd
        // numbers, and what raising the hard limit without `CAP_SYS_RESOURCE` meets, must be
        // the same on both sides); uvfs's own table starts at `NR_OPEN` hard.
        let nofile = crate::host::sandbox::NOFILE as u32;
        first
            .set_nofile_rlimit(nofile, nofile)
            .expect("lowering a fresh table's limits is always allowed");
        Ok(UvfsBackend {
            tasks: vec![Some(first)],
            current: 0,
            observer: vfs.task(uvfs::Cred::root()),
        })
    }

    fn task(&self) -> &Task {
        self.tasks[self.current]
            .as_ref()
            .expect("the parser only switches to tasks that exist")
    }

    fn task_no(&self, id: u32) -> Option<&Task> {
        self.tasks.get(id as usize - 1).and_then(Option::as_ref)
    }

    /// `task N`, `task N fork`, `task N thread`.
    fn switch_task(&mut self, id: u32, start: Option<TaskStart>) -> Outcome {
        let slot = id as usize - 1;
        if let Some(start) = start {
            let new = match start {
                TaskStart::Fork => self.task().fork(),
                TaskStart::Thread => self.task().clone_thread(),
            };
            if self.tasks.len() <= slot {
                self.tasks.resize_with(slot + 1, || None);
            }
            self.tasks[slot] = Some(new);
        }
        if self.tasks.get(slot).is_none_or(Option::is_none) {
            return Outcome::Errno(libc::ESRCH);
        }
        self.current = slot;
        Outcome::Ok(Value::Unit)
    }

    /// Whether `op` would change a sysfs node or superblock in the current task's view
    /// ([`crate::sysfs_guard`]): the random generator draws again rather than make a call
    /// the host refuses.
    pub(crate) fn changes_sysfs(&self, op: &Op, fds: &Fds) -> bool {
        crate::sysfs_guard::changes_sysfs(op, fds, &mut TaskProbe(self.task()))
    }

    /// Whether `path` from `dirfd` (followed; the file open at `dirfd`, or the cwd, for an
    /// empty one) names a file on a sysfs in the current task's view.
    pub(crate) fn on_sysfs_at(&self, dirfd: i32, path: &[u8]) -> bool {
        use crate::sysfs_guard::SysfsProbe;
        let mut probe = TaskProbe(self.task());
        match (path.is_empty(), dirfd) {
            (true, AT_FDCWD) => probe.at_on_sysfs(AT_FDCWD, b".", true),
            (true, _) => probe.fd_on_sysfs(dirfd),
            (false, _) => probe.at_on_sysfs(dirfd, path, true),
        }
    }

    /// Whether the directory `path` from `dirfd` (the file open at `dirfd` for `None`) is a
    /// sysfs directory with subdirectories: a listing of the host's shows the machine's
    /// entries (CASES.md, "sysfs").
    pub(crate) fn sysfs_dir_with_subdirs(&self, dirfd: i32, path: Option<&[u8]>) -> bool {
        let t = self.task();
        let st = match path {
            None => t.fstat(dirfd),
            Some(p) => t.fstatat(dirfd, p, AtFlags::empty()),
        };
        let on = match path {
            None => self.fd_on_sysfs(dirfd),
            Some(p) => self.on_sysfs_at(dirfd, p),
        };
        on && st.is_ok_and(|s| s.mode & 0o170000 == 0o040000 && s.nlink > 2)
    }

    /// Whether the file open at `fd` in the current task is on a sysfs.
    pub(crate) fn fd_on_sysfs(&self, fd: i32) -> bool {
        use crate::sysfs_guard::SysfsProbe;
        TaskProbe(self.task()).fd_on_sysfs(fd)
    }

    /// What a `snapshot` op would give now, without bound fds.
    #[cfg(test)]
    pub(crate) fn snapshot_now(&self) -> Value {
        self.snapshot(&Fds::default())
    }

    /// The bound fds' `fstat`s first, then the walk, as on the host (`host::observer`).
    fn snapshot(&self, fds: &Fds) -> Value {
        let fds = fds
            .bound()
            .filter_map(|b| {
                let stat = match self.task_no(b.task)?.fstat(b.fd) {
                    Err(Errno::EBADF) => return None,
                    r => r.map(stat_fields).map_err(Errno::raw),
                };
                Some(FdRec {
                    name: b.name.clone(),
                    fd: b.fd,
                    task: b.task,
                    stat,
                })
            })
            .collect();
        let entries = observe_tree(&mut Observer {
            task: &self.observer,
            buf: vec![0u8; XATTR_BUF],
        });
        Value::Snapshot(SnapshotRec { entries, fds })
    }
}

/// [`crate::sysfs_guard::SysfsProbe`] through a task's calls.
struct TaskProbe<'a>(&'a Task);

impl crate::sysfs_guard::SysfsProbe for TaskProbe<'_> {
    fn fd_on_sysfs(&mut self, fd: i32) -> bool {
        self.0
            .fstatfs(fd)
            .is_ok_and(|s| s.f_type == crate::sysfs_guard::SYSFS_MAGIC)
    }

    fn at_on_sysfs(&mut self, dirfd: i32, path: &[u8], follow: bool) -> bool {
        let mut flags = OpenFlags::PATH | OpenFlags::CLOEXEC;
        if !follow {
            flags |= OpenFlags::NOFOLLOW;
        }
        match self.0.openat(dirfd, path, flags, 0) {
            Ok(fd) => {
                let on = self.fd_on_sysfs(fd);
                let _ = self.0.close(fd);
                on
            }
            // No fd to ask with (a sequence that lowered `RLIMIT_NOFILE`): it may be, so the
            // generator draws another call (the host's guard asks the file's device then).
            Err(Errno::EMFILE | Errno::ENFILE) => true,
            Err(_) => false,
        }
    }
}

/// The snapshot calls made by the observer task.
struct Observer<'a> {
    task: &'a Task,
    /// Scratch space for xattr names and values.
    buf: Vec<u8>,
}

impl Observe for Observer<'_> {
    fn lstat(&mut self, path: &[u8]) -> Result<StatRec, i32> {
        self.task
            .fstatat(AT_FDCWD, path, AtFlags::SYMLINK_NOFOLLOW)
            .map(stat_fields)
            .map_err(Errno::raw)
    }

    fn readlink(&mut self, path: &[u8]) -> Result<Vec<u8>, i32> {
        let mut buf = vec![0u8; PATH_MAX];
        let n = self
            .task
            .readlinkat(AT_FDCWD, path, &mut buf)
            .map_err(Errno::raw)?;
        buf.truncate(n);
        Ok(buf)
    }

    fn llistxattr(&mut self, path: &[u8], size: usize) -> Result<Vec<u8>, i32> {
        let n = self
            .task
            .llistxattr(path, &mut self.buf[..size])
            .map_err(Errno::raw)?;
        Ok(self.buf[..n].to_vec())
    }

    fn lgetxattr(&mut self, path: &[u8], name: &[u8], size: usize) -> Result<Vec<u8>, i32> {
        let n = self
            .task
            .lgetxattr(path, name, &mut self.buf[..size])
            .map_err(Errno::raw)?;
        Ok(self.buf[..n].to_vec())
    }

    fn list_dir(&mut self, path: &[u8]) -> Result<Vec<DirentRec>, i32> {
        let flags =
            OpenFlags::DIRECTORY | OpenFlags::NOFOLLOW | OpenFlags::NOATIME | OpenFlags::CLOEXEC;
        listdir_with(self.task, path, flags, ListDir::EntriesOnly)
            .map(|l| l.entries)
            .map_err(Errno::raw)
    }

    fn fs_type(&mut self, path: &[u8]) -> Result<i64, i32> {
        self.task.statfs(path).map(|s| s.f_type).map_err(Errno::raw)
    }
}

/// Opens `path` with `flags`, reads it with `getdents64` (4096-byte buffers) until 0, closes.
fn listdir_with(t: &Task, path: &[u8], flags: OpenFlags, what: ListDir) -> uvfs::Result<Listing> {
    let fd = t.openat(AT_FDCWD, path, flags, 0)?;
    let mut all = Listing {
        dir: match what {
            ListDir::WithIdentity => dir_id(t, fd),
            ListDir::EntriesOnly => None,
        },
        entries: Vec::new(),
    };
    let r = loop {
        match getdents(t, fd, 4096) {
            Ok(v) if v.is_empty() => break Ok(()),
            Ok(v) => all.entries.extend(v),
            Err(e) => break Err(e),
        }
    };
    let closed = t.close(fd);
    r.and(closed)?;
    Ok(all)
}

fn getdents(t: &Task, fd: i32, bufsize: usize) -> uvfs::Result<Vec<DirentRec>> {
    let mut buf = vec![0u8; bufsize];
    let n = t.getdents64(fd, &mut buf)?;
    Ok(decode_dirents(&buf[..n]))
}

/// The directory open at `fd`, from a `statx` that asks for no timestamp.
fn dir_id(t: &Task, fd: i32) -> Option<DirId> {
    let s = t.statx(fd, b"", AtFlags::EMPTY_PATH, StatxMask::INO).ok()?;
    Some(DirId {
        dev: Dev {
            major: s.dev_major,
            minor: s.dev_minor,
        },
        ino: s.ino,
    })
}

/// `fcntl` with a record-lock command on uvfs: `F_GETLK`'s answer, or success.
fn uvfs_lock(t: &uvfs::Task, fd: i32, cmd: LockCmd, l: FlockArg) -> Outcome {
    let c = match cmd {
        LockCmd::GetLk => uvfs::abi::LockCmd::GetLk,
        LockCmd::SetLk => uvfs::abi::LockCmd::SetLk,
        LockCmd::SetLkW => uvfs::abi::LockCmd::SetLkW,
        LockCmd::OfdGetLk => uvfs::abi::LockCmd::OfdGetLk,
        LockCmd::OfdSetLk => uvfs::abi::LockCmd::OfdSetLk,
        LockCmd::OfdSetLkW => uvfs::abi::LockCmd::OfdSetLkW,
    };
    let mut fl = uvfs::abi::Flock {
        l_type: l.l_type as i16,
        l_whence: l.whence as i16,
        l_start: l.start,
        l_len: l.len,
        l_pid: l.pid as i32,
    };
    match t.fcntl_lock(fd, c, &mut fl) {
        Err(e) => Outcome::Errno(e.raw()),
        Ok(()) if cmd.is_get() => Outcome::Ok(Value::Flock {
            l_type: fl.l_type,
            whence: fl.l_whence,
            start: fl.l_start,
            len: fl.l_len,
            pid: fl.l_pid,
        }),
        Ok(()) => Outcome::Ok(Value::Unit),
    }
}

fn unit(r: uvfs::Result<()>) -> Outcome {
    done(r.map(|()| Value::Unit))
}

fn int<T: TryInto<i64>>(r: uvfs::Result<T>) -> Outcome {
    done(r.map(|v| Value::Int(v.try_into().unwrap_or(i64::MAX))))
}

fn done(r: uvfs::Result<Value>) -> Outcome {
    match r {
        Ok(v) => Outcome::Ok(v),
        Err(e) => Outcome::Errno(e.raw()),
    }
}

/// Runs a call that fills a buffer of `size` bytes and returns how many it used.
fn filled(
    size: usize,
    wrap: fn(Vec<u8>) -> Value,
    f: impl FnOnce(&mut [u8]) -> uvfs::Result<usize>,
) -> Outcome {
    let mut buf = vec![0u8; size];
    done(f(&mut buf).map(|n| {
        buf.truncate(n);
        wrap(buf)
    }))
}

fn bytes(b: Vec<u8>) -> Value {
    Value::Bytes(Bytes(b))
}

fn xattr_list(b: Vec<u8>) -> Value {
    Value::XattrList(Bytes(b))
}

fn inotify(b: Vec<u8>) -> Value {
    Value::Inotify(decode_inotify(&b))
}

/// Whether `fd` is an inotify instance.
fn is_inotify(t: &Task, fd: i32) -> bool {
    t.anon_inode_name(fd).is_ok_and(|n| n == Some("inotify"))
}

/// What event fd `efd` is open on (`fstat`, `F_GETFL`); closes it, as a reader of a fanotify
/// group must, unless `keep`.
fn fanotify_file(t: &Task, efd: i32, keep: bool) -> Result<FanotifyFile, i32> {
    let st = t.fstat(efd);
    let flags = t
        .fcntl(efd, FcntlCmd::GetFl)
        .map_or_else(|e| -i64::from(e.raw()), i64::from);
    if !keep {
        let _ = t.close(efd);
    }
    st.map(|s| FanotifyFile {
        dev: dev(s.dev),
        ino: s.ino,
        mode: s.mode,
        flags,
    })
    .map_err(Errno::raw)
}

/// `(uid_t)-1` means "leave unchanged".
fn id(v: i64) -> Option<u32> {
    let v = v as u32;
    (v != u32::MAX).then_some(v)
}

fn ts(t: Timespec) -> Ts {
    Ts {
        sec: t.sec,
        nsec: t.nsec,
    }
}

fn dev(d: u64) -> Dev {
    Dev {
        major: libc::major(d),
        minor: libc::minor(d),
    }
}

fn stat_rec(s: Stat) -> Value {
    Value::Stat(stat_fields(s))
}

fn stat_fields(s: Stat) -> StatRec {
    StatRec {
        dev: dev(s.dev),
        ino: s.ino,
        nlink: s.nlink,
        mode: s.mode,
        uid: s.uid,
        gid: s.gid,
        rdev: dev(s.rdev),
        size: s.size,
        blksize: s.blksize,
        blocks: s.blocks,
        atime: ts(s.atime),
        mtime: ts(s.mtime),
        ctime: ts(s.ctime),
    }
}

fn statx_rec(s: Statx) -> Value {
    Value::Statx(StatxRec {
        mask: s.mask,
        blksize: s.blksize,
        attributes: s.attributes,
        nlink: s.nlink,
        uid: s.uid,
        gid: s.gid,
        mode: s.mode,
        ino: s.ino,
        size: s.size,
        blocks: s.blocks,
        attributes_mask: s.attributes_mask,
        atime: ts(s.atime),
        btime: ts(s.btime),
        ctime: ts(s.ctime),
        mtime: ts(s.mtime),
        rdev: Dev {
            major: s.rdev_major,
            minor: s.rdev_minor,
        },
        dev: Dev {
            major: s.dev_major,
            minor: s.dev_minor,
        },
        mnt_id: s.mnt_id,
    })
}

/// `statx(PATH, STATX_MNT_ID_UNIQUE)`, then `statmount` of that mount.
fn statmount(t: &Task, path: &[u8]) -> uvfs::Result<Value> {
    let st = t.statx(AT_FDCWD, path, AtFlags::empty(), StatxMask::MNT_ID_UNIQUE)?;
    let s = t.statmount(
        st.mnt_id,
        StatmountMask::SB_BASIC | StatmountMask::MNT_BASIC,
        0,
    )?;
    Ok(Value::Statmount {
        sb_flags: s.sb_flags,
        mnt_attr: s.mnt_attr.bits(),
        propagation: s.mnt_propagation,
    })
}

fn statfs_rec(s: StatFs) -> Value {
    Value::StatFs(StatFsRec {
        fs_type: s.f_type,
        bsize: s.bsize,
        blocks: s.blocks,
        bfree: s.bfree,
        bavail: s.bavail,
        files: s.files,
        ffree: s.ffree,
        namelen: s.namelen,
        frsize: s.frsize,
        flags: s.flags,
    })
}

/// A `poll`/`epoll_wait` timeout in milliseconds: negative waits for ever.
fn timeout(ms: i64) -> Option<Duration> {
    u64::try_from(ms as i32).ok().map(Duration::from_millis)
}

fn times(t: [Time; 2]) -> [Timespec; 2] {
    t.map(|t| Timespec::new(t.sec, t.nsec))
}

impl UvfsBackend {
    fn xattr(&self, op: &Op, fds: &Fds) -> Outcome {
        let t = self.task();
        match op {
            Op::Setxattr {
                target,
                name,
                value,
                flags,
            } => {
                let f = XattrFlags::from_bits_retain(*flags as u32);
                unit(match target {
                    XattrTarget::Path(p) => t.setxattr(p, name, value, f),
                    XattrTarget::Link(p) => t.lsetxattr(p, name, value, f),
                    XattrTarget::File(fd) => t.fsetxattr(fds.get(fd), name, value, f),
                })
            }
            Op::Getxattr { target, name, size } => match size {
                0 => int(self.getxattr(target, name, &mut [], fds)),
                _ => filled(*size, bytes, |b| self.getxattr(target, name, b, fds)),
            },
            Op::Listxattr { target, size } => {
                let list = |b: &mut [u8]| match target {
                    XattrTarget::Path(p) => t.listxattr(p, b),
                    XattrTarget::Link(p) => t.llistxattr(p, b),
                    XattrTarget::File(fd) => t.flistxattr(fds.get(fd), b),
                };
                match size {
                    0 => int(list(&mut [])),
                    _ => filled(*size, xattr_list, list),
                }
            }
            Op::Removexattr { target, name } => unit(match target {
                XattrTarget::Path(p) => t.removexattr(p, name),
                XattrTarget::Link(p) => t.lremovexattr(p, name),
                XattrTarget::File(fd) => t.fremovexattr(fds.get(fd), name),
            }),
            _ => unreachable!("xattr() is only called for xattr ops"),
        }
    }

    fn getxattr(
        &self,
        target: &XattrTarget,
        name: &[u8],
        buf: &mut [u8],
        fds: &Fds,
    ) -> uvfs::Result<usize> {
        match target {
            XattrTarget::Path(p) => self.task().getxattr(p, name, buf),
            XattrTarget::Link(p) => self.task().lgetxattr(p, name, buf),
            XattrTarget::File(fd) => self.task().fgetxattr(fds.get(fd), name, buf),
        }
    }
}

impl Backend for UvfsBackend {
    fn run(&mut self, _step: usize, op: &Op, fds: &Fds) -> Outcome {
        match op {
            Op::Task { id, start } => return self.switch_task(*id, *start),
            Op::Snapshot => return Outcome::Ok(self.snapshot(fds)),
            _ => {}
        }
        let t = self.task();
        let fd = |f| fds.get(f);
        let at = |f: &i64| AtFlags::from_bits_retain(*f as u32);
        match op {
            Op::Open { path, flags, mode } => int(t.openat(
                AT_FDCWD,
                path,
                OpenFlags::from_bits_retain(*flags as u32),
                *mode as u32,
            )),
            Op::Openat {
                dirfd,
                path,
                flags,
                mode,
            } => int(t.openat(
                fd(dirfd),
                path,
                OpenFlags::from_bits_retain(*flags as u32),
                *mode as u32,
            )),
            Op::Openat2 {
                dirfd,
                path,
                flags,
                mode,
                resolve,
            } => int(t.openat2(
                fd(dirfd),
                path,
                &OpenHow {
                    flags: *flags,
                    mode: *mode,
                    resolve: *resolve,
                },
            )),
            Op::Close { fd: f } => unit(t.close(fd(f))),
            // As the host's: a read of an inotify instance prints its events.
            Op::Read { fd: f, count } => {
                let wrap = if is_inotify(t, fd(f)) { inotify } else { bytes };
                filled(*count, wrap, |b| t.read(fd(f), b))
            }
            Op::Pread { fd: f, count, off } => filled(*count, bytes, |b| t.pread(fd(f), b, *off)),
            Op::Write { fd: f, data } => int(t.write(fd(f), data)),
            Op::Pwrite { fd: f, data, off } => int(t.pwrite(fd(f), data, *off)),
            Op::Readv { fd: f, counts } => {
                let mut bufs: Vec<Vec<u8>> = counts.iter().map(|&c| vec![0u8; c]).collect();
                let mut iov: Vec<IoSliceMut<'_>> =
                    bufs.iter_mut().map(|b| IoSliceMut::new(b)).collect();
                let r = t.readv(fd(f), &mut iov);
                let wrap = if is_inotify(t, fd(f)) { inotify } else { bytes };
                done(r.map(|n| wrap(bufs.concat().into_iter().take(n).collect())))
            }
            Op::Writev { fd: f, bufs } => {
                let iov: Vec<IoSlice<'_>> = bufs.iter().map(|b| IoSlice::new(b)).collect();
                int(t.writev(fd(f), &iov))
            }
            Op::Preadv { fd: f, counts, off } => {
                let mut bufs: Vec<Vec<u8>> = counts.iter().map(|&c| vec![0u8; c]).collect();
                let mut iov: Vec<IoSliceMut<'_>> =
                    bufs.iter_mut().map(|b| IoSliceMut::new(b)).collect();
                let r = t.preadv(fd(f), &mut iov, *off);
                done(r.map(|n| bytes(bufs.concat().into_iter().take(n).collect())))
            }
            Op::Pwritev { fd: f, bufs, off } => {
                let iov: Vec<IoSlice<'_>> = bufs.iter().map(|b| IoSlice::new(b)).collect();
                int(t.pwritev(fd(f), &iov, *off))
            }
            Op::Lseek { fd: f, off, whence } => {
                int(t.lseek(fd(f), fds.offset(off), Whence(*whence as u32)))
            }
            Op::Truncate { path, len } => unit(t.truncate(path, *len)),
            Op::Ftruncate { fd: f, len } => unit(t.ftruncate(fd(f), *len)),
            Op::Fallocate {
                fd: f,
                mode,
                off,
                len,
            } => unit(t.fallocate(
                fd(f),
                FallocFlags::from_bits_retain(*mode as u32),
                *off,
                *len,
            )),
            Op::Fsync { fd: f } => unit(t.fsync(fd(f))),
            Op::Fdatasync { fd: f } => unit(t.fdatasync(fd(f))),
            Op::Dup { fd: f } => int(t.dup(fd(f))),
            Op::Dup2 { fd: f, newfd } => int(t.dup2(fd(f), fd(newfd))),
            Op::Dup3 {
                fd: f,
                newfd,
                flags,
            } => int(t.dup3(fd(f), fd(newfd), OpenFlags::from_bits_retain(*flags as u32))),
            Op::Fcntl { fd: f, cmd } => {
                let cmd = match *cmd {
                    Fcntl::DupFd(min) => FcntlCmd::DupFd(min),
                    Fcntl::DupFdCloexec(min) => FcntlCmd::DupFdCloexec(min),
                    Fcntl::GetFd => FcntlCmd::GetFd,
                    Fcntl::SetFd(v) => FcntlCmd::SetFd(FdFlags::from_bits_retain(v as u32)),
                    Fcntl::GetFl => FcntlCmd::GetFl,
                    Fcntl::SetFl(v) => FcntlCmd::SetFl(OpenFlags::from_bits_retain(v as u32)),
                    Fcntl::SetPipeSz(v) => FcntlCmd::SetPipeSz(v as u32),
                    Fcntl::GetPipeSz => FcntlCmd::GetPipeSz,
                    Fcntl::Lock(c, l) => return uvfs_lock(t, fd(f), c, l),
                };
                int(t.fcntl(fd(f), cmd))
            }
            Op::Flock { fd: f, op } => {
                unit(t.flock(fd(f), uvfs::abi::FlockOp::from_bits_retain(*op as u32)))
            }
            Op::Getpid => Outcome::Ok(Value::Pid(t.lock_pid())),
            Op::Pipe2 { flags } => done(
                t.pipe2(OpenFlags::from_bits_retain(*flags as u32))
                    .map(|[r, w]| Value::FdPair(r, w)),
            ),
            Op::Fionread { fd: f } => int(t.fionread(fd(f))),
            Op::Poll {
                fds: pfds,
                events,
                timeout_ms,
            } => {
                let mut p: Vec<PollFd> = pfds
                    .iter()
                    .zip(events)
                    .map(|(f, &e)| {
                        // `events` is a `short` in `struct pollfd`.
                        PollFd::new(fd(f), PollEvents::from_bits_retain(u32::from(e as u16)))
                    })
                    .collect();
                let r = t.poll(&mut p, timeout(*timeout_ms));
                done(r.map(|count| Value::Poll {
                    count: count as i64,
                    revents: p.iter().map(|p| p.revents.bits() as u16).collect(),
                }))
            }
            Op::EpollCreate1 { flags } => int(t.epoll_create1(*flags as u32)),
            Op::EpollCtl {
                epfd,
                op,
                fd: f,
                event,
            } => {
                let ev = event.map(|e| {
                    EpollEvent::new(PollEvents::from_bits_retain(e.events as u32), e.data)
                });
                // The typed call for the three operations, the raw one for other numbers.
                unit(match EpollOp::from_raw(*op as i32) {
                    Ok(o) => t.epoll_ctl(fd(epfd), o, fd(f), ev),
                    Err(_) => t.epoll_ctl_raw(fd(epfd), *op as i32, fd(f), ev),
                })
            }
            Op::EpollWait {
                epfd,
                maxevents,
                timeout_ms,
            } => {
                // A count uvfs's slice cannot carry (below 1, or above `EP_MAX_EVENTS`, which
                // no slice here could be long enough for) is passed as an empty slice: uvfs
                // refuses that as Linux refuses the count, with `EINVAL`, before any fd check.
                let max = *maxevents as i32;
                let room = usize::try_from(max)
                    .ok()
                    .filter(|&n| n <= EP_MAX_EVENTS)
                    .unwrap_or(0);
                let mut out = vec![EpollEvent::default(); room];
                let r = t.epoll_wait(fd(epfd), &mut out, timeout(*timeout_ms));
                done(r.map(|n| {
                    Value::EpollEvents(out[..n].iter().map(|e| (e.events.bits(), e.data)).collect())
                }))
            }
            Op::Eventfd2 { initval, flags } => {
                int(t.eventfd2(*initval as u32, EfdFlags::from_bits_retain(*flags as u32)))
            }
            Op::InotifyInit1 { flags } => int(t.inotify_init1(*flags as u32)),
            Op::InotifyAddWatch { fd: f, path, mask } => {
                int(t.inotify_add_watch(fd(f), path, *mask as u32))
            }
            Op::InotifyRmWatch { fd: f, wd } => unit(t.inotify_rm_watch(fd(f), *wd as i32)),
            // As the host's: an `inotify_read` of a fanotify group prints its events.
            Op::InotifyRead { fd: f, bufsize }
                if t.anon_inode_name(fd(f))
                    .is_ok_and(|n| n == Some("[fanotify]")) =>
            {
                let mut buf = vec![0u8; *bufsize];
                done(t.read(fd(f), &mut buf).map(|n| {
                    buf.truncate(n);
                    Value::Fanotify(decode_fanotify(&buf, |efd| fanotify_file(t, efd, false)))
                }))
            }
            Op::InotifyRead { fd: f, bufsize } => filled(*bufsize, inotify, |b| t.read(fd(f), b)),
            Op::FanotifyInit {
                flags,
                event_f_flags,
            } => int(t.fanotify_init(*flags as u32, *event_f_flags as u32)),
            Op::FanotifyMark {
                fd: f,
                flags,
                mask,
                dirfd,
                path,
            } => unit(t.fanotify_mark(
                fd(f),
                *flags as u32,
                *mask as u64,
                fd(dirfd),
                path.as_deref(),
            )),
            Op::FanotifyRead {
                fd: f,
                bufsize,
                keep,
            } => {
                let mut buf = vec![0u8; *bufsize];
                let of_inotify = is_inotify(t, fd(f));
                done(t.read(fd(f), &mut buf).map(|n| {
                    buf.truncate(n);
                    if of_inotify {
                        inotify(buf)
                    } else {
                        Value::Fanotify(decode_fanotify(&buf, |efd| fanotify_file(t, efd, *keep)))
                    }
                }))
            }
            Op::Splice {
                fd_in,
                off_in,
                fd_out,
                off_out,
                len,
                flags,
            } => {
                let (mut a, mut b) = (*off_in, *off_out);
                let r = t.splice(
                    fd(fd_in),
                    a.as_mut(),
                    fd(fd_out),
                    b.as_mut(),
                    *len as usize,
                    uvfs::abi::SpliceFlags::from_bits_retain(*flags as u32),
                );
                done(r.map(|n| Value::Moved {
                    count: n as i64,
                    off_in: a,
                    off_out: b,
                }))
            }
            Op::Tee {
                fd_in,
                fd_out,
                len,
                flags,
            } => int(t.tee(
                fd(fd_in),
                fd(fd_out),
                *len as usize,
                uvfs::abi::SpliceFlags::from_bits_retain(*flags as u32),
            )),
            Op::Sendfile {
                out_fd,
                in_fd,
                off,
                count,
            } => {
                let mut o = *off;
                let r = t.sendfile(fd(out_fd), fd(in_fd), o.as_mut(), *count as usize);
                done(r.map(|n| Value::Moved {
                    count: n as i64,
                    off_in: o,
                    off_out: None,
                }))
            }
            Op::Mkdirat { dirfd, path, mode } => unit(t.mkdirat(fd(dirfd), path, *mode as u32)),
            Op::Mknod { path, mode, dev } => unit(t.mknodat(AT_FDCWD, path, *mode as u32, *dev)),
            Op::Unlinkat { dirfd, path, flags } => unit(t.unlinkat(fd(dirfd), path, at(flags))),
            Op::Renameat2 {
                olddirfd,
                old,
                newdirfd,
                new,
                flags,
            } => unit(t.renameat2(
                fd(olddirfd),
                old,
                fd(newdirfd),
                new,
                RenameFlags::from_bits_retain(*flags as u32),
            )),
            Op::Linkat {
                olddirfd,
                old,
                newdirfd,
                new,
                flags,
            } => unit(t.linkat(fd(olddirfd), old, fd(newdirfd), new, at(flags))),
            Op::Symlink { target, path } => unit(t.symlinkat(target, AT_FDCWD, path)),
            Op::Readlinkat { dirfd, path, count } => {
                filled(*count, bytes, |b| t.readlinkat(fd(dirfd), path, b))
            }
            Op::Fstatat { dirfd, path, flags } => {
                done(t.fstatat(fd(dirfd), path, at(flags)).map(stat_rec))
            }
            Op::Fstat { fd: f } => done(t.fstat(fd(f)).map(stat_rec)),
            Op::Statx {
                dirfd,
                path,
                flags,
                mask,
            } => done(
                t.statx(
                    fd(dirfd),
                    path,
                    at(flags),
                    StatxMask::from_bits_retain(*mask as u32),
                )
                .map(statx_rec),
            ),
            Op::Fchmodat {
                dirfd,
                path,
                mode,
                flags,
            } => unit(t.fchmodat(fd(dirfd), path, *mode as u32, at(flags))),
            Op::Fchmod { fd: f, mode } => unit(t.fchmod(fd(f), *mode as u32)),
            Op::Fchownat {
                dirfd,
                path,
                uid,
                gid,
                flags,
            } => unit(t.fchownat(fd(dirfd), path, id(*uid), id(*gid), at(flags))),
            Op::Fchown { fd: f, uid, gid } => unit(t.fchown(fd(f), id(*uid), id(*gid))),
            Op::Utimensat {
                dirfd,
                path,
                times: tm,
                flags,
            } => unit(t.utimensat(fd(dirfd), path.as_deref(), tm.map(times), at(flags))),
            Op::Faccessat2 {
                dirfd,
                path,
                mode,
                flags,
            } => unit(t.faccessat2(
                fd(dirfd),
                path,
                uvfs::abi::Access::from_bits_retain(*mode as u32),
                at(flags),
            )),
            Op::Getdents { fd: f, bufsize } => done(getdents(t, fd(f), *bufsize).map(|entries| {
                Value::Dirents(Listing {
                    dir: dir_id(t, fd(f)),
                    entries,
                })
            })),
            Op::Listdir { path } => done(
                listdir_with(
                    t,
                    path,
                    OpenFlags::DIRECTORY | OpenFlags::CLOEXEC,
                    ListDir::WithIdentity,
                )
                .map(Value::Dirents),
            ),
            Op::Chdir { path } => unit(t.chdir(path)),
            Op::Fchdir { fd: f } => unit(t.fchdir(fd(f))),
            Op::Getcwd { size } => filled(*size, bytes, |b| t.getcwd(b)),
            Op::Chroot { path } => unit(t.chroot(path)),
            Op::Umask { mask } => Outcome::Ok(Value::Int(i64::from(t.umask(*mask as u32)))),
            Op::Setxattr { .. }
            | Op::Getxattr { .. }
            | Op::Listxattr { .. }
            | Op::Removexattr { .. } => self.xattr(op, fds),
            Op::Statfs { path } => done(t.statfs(path).map(statfs_rec)),
            Op::Fstatfs { fd: f } => done(t.fstatfs(fd(f)).map(statfs_rec)),
            Op::Statmount { path } => done(statmount(t, path)),
            Op::Mount {
                src,
                target,
                fstype,
                flags,
                data,
            } => {
                let r = t.mount(
                    src.as_deref(),
                    target,
                    fstype.as_deref(),
                    MountFlags::from_bits_retain(*flags),
                    data.as_deref(),
                );
                // uvfs never gives a device number or a mount ID twice, so it has no labels
                // to forget; but a new sysfs mount names its device, whose stamps the
                // normaliser must leave alone as it does the host's (`machine_stamps`).
                let sysfs = fstype.as_deref() == Some("sysfs") && op.new_fs_target().is_some();
                match r {
                    Ok(()) => Outcome::Ok(Value::Mounted {
                        dev: if sysfs {
                            t.fstatat(AT_FDCWD, target, AtFlags::empty())
                                .ok()
                                .map(|s| stat_fields(s).dev)
                        } else {
                            None
                        },
                        ids: Vec::new(),
                        machine_stamps: sysfs,
                    }),
                    r => unit(r),
                }
            }
            Op::Umount2 { target, flags } => {
                unit(t.umount2(target, UmountFlags::from_bits_retain(*flags as u32)))
            }
            Op::SetrlimitNofile { limit } => {
                unit(t.set_nofile_limit(u32::try_from(*limit).unwrap_or(u32::MAX)))
            }
            Op::As { uid, gid, groups } => unit(cred::become_user(t, *uid, *gid, groups)),
            Op::Cred(c) => cred::run(t, c),
            Op::Task { .. } | Op::Snapshot => unreachable!("handled above"),
        }
    }
}

/// Runs `case` on a fresh uvfs namespace in a thread of its own: step 0 is the root mount. A
/// panic stops the run and becomes its `aborted` reason; so does not finishing in `timeout`
/// (the thread is then left behind, stuck, until the process exits).
pub fn run_on_uvfs(case: &Case, timeout: Duration) -> CaseRun {
    let outcomes = Arc::new(Mutex::new(Vec::new()));
    let (tx, rx) = mpsc::channel();
    let (shared, case_copy) = (outcomes.clone(), case.clone());
    let spawned = thread::Builder::new()
        .name(format!("uvfs {}", case.name))
        .spawn(move || {
            let push = |o: &Outcome| {
                shared
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(o.clone())
            };
            let result = panic::catch_unwind(AssertUnwindSafe(|| {
                match UvfsBackend::new(case_copy.mount.as_deref()) {
                    Ok(mut backend) => {
                        push(&Outcome::Ok(Value::Unit));
                        run_case(&mut backend, &case_copy, |_, o| push(o));
                    }
                    Err(e) => push(&Outcome::Errno(e)),
                }
            }));
            let _ = tx.send(
                result
                    .err()
                    .map(|p| format!("uvfs panicked: {}", panic_message(&*p))),
            );
        });
    let aborted = match spawned {
        Err(e) => Some(format!("could not start the uvfs thread: {e}")),
        Ok(_) => match rx.recv_timeout(timeout) {
            Ok(panicked) => panicked,
            Err(RecvTimeoutError::Timeout) => Some(format!(
                "uvfs did not finish within {} s (a hang?)",
                timeout.as_secs()
            )),
            Err(RecvTimeoutError::Disconnected) => {
                Some("uvfs panicked while tearing the case down".into())
            }
        },
    };
    let outcomes = outcomes
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    let finished = aborted.is_none()
        && (outcomes.len() == case.steps.len() + 1
            || matches!(outcomes.first(), Some(Outcome::Errno(_))));
    CaseRun {
        aborted: if finished {
            None
        } else {
            aborted.or(Some("uvfs stopped early".into()))
        },
        outcomes,
    }
}

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(non-string payload)".into())
}
