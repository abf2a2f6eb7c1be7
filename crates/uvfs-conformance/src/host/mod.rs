//! [`HostBackend`]: the oracle. Runs ops as real system calls in the helper process, which
//! [`sandbox::enter`] has put in a private mount namespace chrooted into a fresh tmpfs.

// Allowed here only: raw credential system calls take pointers to id and capability buffers.
mod actor;
mod channel;
#[allow(unsafe_code)]
pub mod cred;
pub mod fence;
pub mod guard;
pub mod observer;
// Allowed here only: fork, poll, waitpid and friends take raw pointers (see the module doc).
#[allow(unsafe_code)]
pub mod proc;
pub mod protocol;
pub mod sandbox;
pub mod serve;
// Allowed here only: raw system calls take raw fds and buffer pointers (see the module doc).
#[allow(unsafe_code)]
pub mod sys;

use std::io::{IoSlice, IoSliceMut};

use crate::backend::{Backend, Fds};
use crate::op::{Fcntl, FlockArg, LockCmd, Op, XattrTarget};
use crate::outcome::{
    decode_dirents, decode_fanotify, decode_inotify, Bytes, Dev, DirId, DirentRec, FanotifyFile,
    Listing, Outcome, StatFsRec, StatRec, StatxRec, Ts, Value,
};
use sys::{CPath, SysResult, XattrAt};

/// The calling process, already inside the sandbox, as a backend. Its credentials, cwd, root,
/// umask and fd table are the process's own.
#[derive(Debug, Default)]
pub struct HostBackend;

pub(crate) const AT_FDCWD: i32 = -100;
const F_DUPFD: i32 = 0;
const F_GETFD: i32 = 1;
const F_SETFD: i32 = 2;
const F_GETFL: i32 = 3;
const F_SETFL: i32 = 4;
const F_DUPFD_CLOEXEC: i32 = 1030;
const O_DIRECTORY_CLOEXEC: i32 = 0o200000 | 0o2000000;
const RLIMIT_NOFILE: u32 = 7;

/// `openat2`'s `RESOLVE_BENEATH`, `RESOLVE_IN_ROOT` and `RESOLVE_CACHED`: the flags
/// with which Linux may say EAGAIN because of what other tasks did meanwhile.
const RESOLVE_MAY_RETRY: u64 = 0x08 | 0x10 | 0x20;
/// How often an `openat2` with one of `RESOLVE_MAY_RETRY` that said EAGAIN is made again:
/// at once, then after a pause of `RESOLVE_PAUSE` (a mount or unmount elsewhere on the machine
/// can keep `mount_lock` moving for longer than twenty back-to-back tries: seed 741141 of the
/// long run on 8b77271 said EAGAIN 21 times while test suites mounted beside it, and replays
/// clean).
const RESOLVE_RETRIES: usize = 20;
/// `RESOLVE_CACHED`, and `O_TMPFILE` (with its `O_DIRECTORY` bit).
const RESOLVE_CACHED: u64 = 0x20;
const O_TMPFILE: i32 = 0o20200000;
/// Retries made before the pauses start.
const RESOLVE_QUICK_RETRIES: usize = 15;
const RESOLVE_PAUSE: std::time::Duration = std::time::Duration::from_millis(2);

/// `fcntl` with a record-lock command: `F_GETLK`'s answer, or success.
fn host_lock(fd: i32, cmd: LockCmd, l: FlockArg) -> Outcome {
    let c = match cmd {
        LockCmd::GetLk => libc::F_GETLK,
        LockCmd::SetLk => libc::F_SETLK,
        LockCmd::SetLkW => libc::F_SETLKW,
        LockCmd::OfdGetLk => libc::F_OFD_GETLK,
        LockCmd::OfdSetLk => libc::F_OFD_SETLK,
        LockCmd::OfdSetLkW => libc::F_OFD_SETLKW,
    };
    // Each value cast to its C type, as a C caller's assignment would.
    let mut fl = libc::flock {
        l_type: l.l_type as i16,
        l_whence: l.whence as i16,
        l_start: l.start,
        l_len: l.len,
        l_pid: l.pid as i32,
    };
    match sys::fcntl_lock(fd, c, &mut fl) {
        Err(e) => Outcome::Errno(e),
        Ok(_) if cmd.is_get() => Outcome::Ok(Value::Flock {
            l_type: fl.l_type,
            whence: fl.l_whence,
            start: fl.l_start,
            len: fl.l_len,
            pid: fl.l_pid,
        }),
        Ok(_) => Outcome::Ok(Value::Unit),
    }
}

fn unit(r: SysResult) -> Outcome {
    done(r.map(|_| Value::Unit))
}

fn int(r: SysResult) -> Outcome {
    done(r.map(Value::Int))
}

fn done(r: Result<Value, i32>) -> Outcome {
    match r {
        Ok(v) => Outcome::Ok(v),
        Err(e) => Outcome::Errno(e),
    }
}

/// Runs a call that fills a buffer of `size` bytes and returns how many it used.
fn filled(
    size: usize,
    wrap: fn(Vec<u8>) -> Value,
    f: impl FnOnce(&mut [u8]) -> SysResult,
) -> Outcome {
    let mut buf = vec![0u8; size];
    done(f(&mut buf).map(|n| {
        buf.truncate(usize::try_from(n).unwrap_or(0));
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

/// Whether `fd` is a fanotify group: a file on the anonymous inode, open for reading and
/// writing, that answers `FIONREAD` (an eventfd says `ENOTTY`, an epoll `EINVAL`).
fn is_fanotify(fd: i32) -> bool {
    sys::fstat(fd).is_ok_and(|st| st.st_mode & libc::S_IFMT == 0)
        && sys::fcntl(fd, F_GETFL, 0).is_ok_and(|fl| fl as i32 & libc::O_ACCMODE == libc::O_RDWR)
        && sys::fionread(fd).is_ok()
}

/// Whether `fd` is an inotify instance: the only file on the anonymous inode (no file type
/// bits) opened read-only (the sandbox has no /proc to ask).
fn is_inotify(fd: i32) -> bool {
    sys::fstat(fd).is_ok_and(|st| st.st_mode & libc::S_IFMT == 0)
        && sys::fcntl(fd, F_GETFL, 0).is_ok_and(|fl| fl as i32 & libc::O_ACCMODE == libc::O_RDONLY)
}

/// A fanotify read's bytes decoded, each event's fd `fstat`ed, its flags taken and closed
/// unless `keep`.
fn fanotify(b: &[u8], keep: bool) -> Value {
    Value::Fanotify(decode_fanotify(b, |efd| {
        let st = sys::fstat(efd);
        let flags = sys::fcntl(efd, libc::F_GETFL, 0).unwrap_or_else(|e| -i64::from(e));
        if !keep {
            let _ = sys::close(efd);
        }
        st.map(|s| FanotifyFile {
            dev: dev(s.st_dev),
            ino: s.st_ino,
            mode: s.st_mode,
            flags,
        })
    }))
}

fn dev(d: u64) -> Dev {
    Dev {
        major: libc::major(d),
        minor: libc::minor(d),
    }
}

/// The mounts of the sandbox's namespace, as `(mount ID, device)`, from its `mountinfo` (read
/// through [`sandbox::PROC_FD`]); `None` if it cannot be read (the fd table is full, say). A
/// new mount is the one whose ID was not there before: found this way, not by looking its
/// target up again, which after the mount may lead elsewhere (`mount none b/b/b` with
/// `b/b -> ..` and `/b` the new root's mountpoint).
fn mounts() -> Option<Vec<(u64, Dev)>> {
    const O_RDONLY_CLOEXEC: i32 = 0o2000000;
    // The copy opened with the sandbox, read from offset 0 (`seq_file` makes the text again);
    // else a fresh open.
    let read_all = |fd: i32| -> Option<Vec<u8>> {
        let mut text = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            match sys::pread(fd, &mut buf, text.len() as i64) {
                Ok(0) => return Some(text),
                Ok(n) => text.extend_from_slice(&buf[..n as usize]),
                Err(_) => return None,
            }
        }
    };
    let text = match read_all(sandbox::MOUNTINFO_FD) {
        Some(t) => t,
        None => {
            let fd = sys::openat(
                sandbox::PROC_FD,
                &CPath::new(b"mountinfo"),
                O_RDONLY_CLOEXEC,
                0,
            )
            .ok()? as i32;
            let t = read_all(fd);
            let _ = sys::close(fd);
            t?
        }
    };
    // `ID PARENT MAJOR:MINOR ROOT MOUNTPOINT ...`
    let text = String::from_utf8_lossy(&text);
    text.lines()
        .map(|l| {
            let mut f = l.split(' ');
            let id = f.next()?.parse().ok()?;
            let (major, minor) = f.nth(1)?.split_once(':')?;
            Some((
                id,
                Dev {
                    major: major.parse().ok()?,
                    minor: minor.parse().ok()?,
                },
            ))
        })
        .collect()
}

fn stat_rec(s: libc::stat) -> Value {
    Value::Stat(stat_fields(s))
}

/// `struct stat` as compared.
pub fn stat_fields(s: libc::stat) -> StatRec {
    StatRec {
        dev: dev(s.st_dev),
        ino: s.st_ino,
        nlink: s.st_nlink,
        mode: s.st_mode,
        uid: s.st_uid,
        gid: s.st_gid,
        rdev: dev(s.st_rdev),
        size: s.st_size,
        blksize: s.st_blksize,
        blocks: s.st_blocks,
        atime: Ts {
            sec: s.st_atime,
            nsec: s.st_atime_nsec,
        },
        mtime: Ts {
            sec: s.st_mtime,
            nsec: s.st_mtime_nsec,
        },
        ctime: Ts {
            sec: s.st_ctime,
            nsec: s.st_ctime_nsec,
        },
    }
}

fn statx_ts(t: libc::statx_timestamp) -> Ts {
    Ts {
        sec: t.tv_sec,
        nsec: i64::from(t.tv_nsec),
    }
}

fn statx_rec(s: libc::statx) -> Value {
    Value::Statx(StatxRec {
        mask: s.stx_mask,
        blksize: s.stx_blksize,
        attributes: s.stx_attributes,
        nlink: s.stx_nlink,
        uid: s.stx_uid,
        gid: s.stx_gid,
        mode: s.stx_mode,
        ino: s.stx_ino,
        size: s.stx_size,
        blocks: s.stx_blocks,
        attributes_mask: s.stx_attributes_mask,
        atime: statx_ts(s.stx_atime),
        btime: statx_ts(s.stx_btime),
        ctime: statx_ts(s.stx_ctime),
        mtime: statx_ts(s.stx_mtime),
        rdev: Dev {
            major: s.stx_rdev_major,
            minor: s.stx_rdev_minor,
        },
        dev: Dev {
            major: s.stx_dev_major,
            minor: s.stx_dev_minor,
        },
        mnt_id: s.stx_mnt_id,
    })
}

fn statfs_rec(s: sys::StatFs) -> Value {
    Value::StatFs(StatFsRec {
        fs_type: s.f_type,
        bsize: s.f_bsize,
        blocks: s.f_blocks,
        bfree: s.f_bfree,
        bavail: s.f_bavail,
        files: s.f_files,
        ffree: s.f_ffree,
        namelen: s.f_namelen,
        frsize: s.f_frsize,
        flags: s.f_flags,
    })
}

/// One `getdents64` call.
pub fn getdents(fd: i32, bufsize: usize) -> Result<Vec<DirentRec>, i32> {
    let mut buf = vec![0u8; bufsize];
    let n = sys::getdents64(fd, &mut buf)?;
    Ok(decode_dirents(&buf[..usize::try_from(n).unwrap_or(0)]))
}

/// The directory open at `fd`, from a `statx` that asks for no timestamp.
fn dir_id(fd: i32) -> Option<DirId> {
    const AT_EMPTY_PATH: i32 = 0x1000;
    const STATX_INO: u32 = 0x100;
    let s = sys::statx(fd, &CPath::new(b""), AT_EMPTY_PATH, STATX_INO).ok()?;
    Some(DirId {
        dev: Dev {
            major: s.stx_dev_major,
            minor: s.stx_dev_minor,
        },
        ino: s.stx_ino,
    })
}

/// What a listing records besides the entries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ListDir {
    /// The directory's identity too (a `statx` that observes no timestamp).
    WithIdentity,
    /// The entries only (a snapshot knows the directory already).
    EntriesOnly,
}

/// Opens `path` with `flags`, reads it with `getdents64` (4096-byte buffers) until 0, closes.
pub fn listdir_with(path: &[u8], flags: i32, what: ListDir) -> Result<Listing, i32> {
    let fd = sys::openat(AT_FDCWD, &CPath::new(path), flags, 0)? as i32;
    let mut all = Listing {
        dir: match what {
            ListDir::WithIdentity => dir_id(fd),
            ListDir::EntriesOnly => None,
        },
        entries: Vec::new(),
    };
    let r = loop {
        match getdents(fd, 4096) {
            Ok(v) if v.is_empty() => break Ok(()),
            Ok(v) => all.entries.extend(v),
            Err(e) => break Err(e),
        }
    };
    let closed = sys::close(fd).map(|_| ());
    r.and(closed)?;
    Ok(all)
}

/// Becomes `uid`/`gid` with `groups` as `as` does: groups first, then gids, then uids (which
/// clears the capabilities when leaving uid 0).
pub fn become_user(uid: u32, gid: u32, groups: &[u32]) -> SysResult {
    sys::setgroups(groups)?;
    sys::setresgid(gid, gid, gid)?;
    sys::setresuid(uid, uid, uid)
}

fn xattr(op: &Op, fds: &Fds) -> Outcome {
    let with = |target: &XattrTarget, f: &mut dyn FnMut(XattrAt<'_>) -> Outcome| match target {
        XattrTarget::Path(p) => f(XattrAt::Path(&CPath::new(p))),
        XattrTarget::Link(p) => f(XattrAt::Link(&CPath::new(p))),
        XattrTarget::File(fd) => f(XattrAt::File(fds.get(fd))),
    };
    match op {
        Op::Setxattr {
            target,
            name,
            value,
            flags,
        } => with(target, &mut |at| {
            unit(sys::setxattr(at, &CPath::new(name), value, *flags as i32))
        }),
        Op::Getxattr { target, name, size } => with(target, &mut |at| match size {
            0 => int(sys::getxattr(at, &CPath::new(name), &mut [])),
            _ => filled(*size, bytes, |b| sys::getxattr(at, &CPath::new(name), b)),
        }),
        Op::Listxattr { target, size } => with(target, &mut |at| match size {
            0 => int(sys::listxattr(at, &mut [])),
            _ => filled(*size, xattr_list, |b| sys::listxattr(at, b)),
        }),
        Op::Removexattr { target, name } => {
            let name = CPath::new(name);
            match target {
                XattrTarget::Path(p) => unit(sys::removexattr(&CPath::new(p), &name)),
                XattrTarget::Link(p) => unit(sys::lremovexattr(&CPath::new(p), &name)),
                XattrTarget::File(fd) => unit(sys::fremovexattr(fds.get(fd), &name)),
            }
        }
        _ => unreachable!("xattr() is only called for xattr ops"),
    }
}

impl Backend for HostBackend {
    fn run(&mut self, _step: usize, op: &Op, fds: &Fds) -> Outcome {
        let fd = |f| fds.get(f);
        let p = |b: &Vec<u8>| CPath::new(b);
        if guard::refuses(op, fds) {
            return Outcome::Errno(guard::REFUSED);
        }
        match op {
            Op::Open { path, flags, mode } => {
                int(sys::openat(AT_FDCWD, &p(path), *flags as i32, *mode as u32))
            }
            Op::Openat {
                dirfd,
                path,
                flags,
                mode,
            } => int(sys::openat(
                fd(dirfd),
                &p(path),
                *flags as i32,
                *mode as u32,
            )),
            Op::Openat2 {
                dirfd,
                path,
                flags,
                mode,
                resolve,
            } => {
                let how = sys::OpenHow {
                    flags: *flags,
                    mode: *mode,
                    resolve: *resolve,
                };
                let path = p(path);
                let mut r = sys::openat2(fd(dirfd), &path, &how);
                // `RESOLVE_CACHED` fails with EAGAIN wherever the RCU-walk gives up, and it also
                // gives up when a seqcount Linux keeps for the whole machine moved during the
                // walk (`mount_lock` on any mount, `rename_lock` under `..`). A scoped walk
                // (`RESOLVE_BENEATH`, `RESOLVE_IN_ROOT`) says EAGAIN at `..` when either moved,
                // even in ref-walk (`handle_dots()`). Other cases and workers mount and rename
                // all the time. Such a failure changes nothing, so the call is made again; an
                // EAGAIN the tree itself causes comes back every time (and costs 10 ms of pauses).
                // Linux refuses these before any walk (`build_open_flags()`): no retry helps.
                let refused_unwalked = *resolve & RESOLVE_CACHED != 0
                    && *flags & (libc::O_CREAT | libc::O_TRUNC | O_TMPFILE) as u64 != 0;
                for k in 0..RESOLVE_RETRIES {
                    if *resolve & RESOLVE_MAY_RETRY == 0
                        || r != Err(libc::EAGAIN)
                        || refused_unwalked
                    {
                        break;
                    }
                    if k >= RESOLVE_QUICK_RETRIES {
                        std::thread::sleep(RESOLVE_PAUSE);
                    }
                    r = sys::openat2(fd(dirfd), &path, &how);
                }
                int(r)
            }
            Op::Close { fd: f } => unit(sys::close(fd(f))),
            // A read of an inotify instance prints its events (cookies normalised), as
            // `inotify_read` does: its raw bytes carry the host's global cookie counter.
            Op::Read { fd: f, count } => {
                let wrap = if is_inotify(fd(f)) { inotify } else { bytes };
                filled(*count, wrap, |b| sys::read(fd(f), b))
            }
            Op::Pread { fd: f, count, off } => {
                filled(*count, bytes, |b| sys::pread(fd(f), b, *off))
            }
            Op::Write { fd: f, data } => int(sys::write(fd(f), data)),
            Op::Pwrite { fd: f, data, off } => int(sys::pwrite(fd(f), data, *off)),
            Op::Readv { fd: f, counts } => {
                let mut bufs: Vec<Vec<u8>> = counts.iter().map(|&c| vec![0u8; c]).collect();
                let mut iov: Vec<IoSliceMut<'_>> =
                    bufs.iter_mut().map(|b| IoSliceMut::new(b)).collect();
                let r = sys::readv(fd(f), &mut iov);
                let wrap = if is_inotify(fd(f)) { inotify } else { bytes };
                done(r.map(|n| wrap(bufs.concat().into_iter().take(n as usize).collect())))
            }
            Op::Writev { fd: f, bufs } => {
                let iov: Vec<IoSlice<'_>> = bufs.iter().map(|b| IoSlice::new(b)).collect();
                int(sys::writev(fd(f), &iov))
            }
            Op::Preadv { fd: f, counts, off } => {
                let mut bufs: Vec<Vec<u8>> = counts.iter().map(|&c| vec![0u8; c]).collect();
                let mut iov: Vec<IoSliceMut<'_>> =
                    bufs.iter_mut().map(|b| IoSliceMut::new(b)).collect();
                let r = sys::preadv(fd(f), &mut iov, *off);
                done(r.map(|n| bytes(bufs.concat().into_iter().take(n as usize).collect())))
            }
            Op::Pwritev { fd: f, bufs, off } => {
                let iov: Vec<IoSlice<'_>> = bufs.iter().map(|b| IoSlice::new(b)).collect();
                int(sys::pwritev(fd(f), &iov, *off))
            }
            Op::Lseek { fd: f, off, whence } => {
                int(sys::lseek(fd(f), fds.offset(off), *whence as u32))
            }
            Op::Truncate { path, len } => unit(sys::truncate(&p(path), *len)),
            Op::Ftruncate { fd: f, len } => unit(sys::ftruncate(fd(f), *len)),
            Op::Fallocate {
                fd: f,
                mode,
                off,
                len,
            } => unit(sys::fallocate(fd(f), *mode as i32, *off, *len)),
            Op::Fsync { fd: f } => unit(sys::fsync(fd(f))),
            Op::Fdatasync { fd: f } => unit(sys::fdatasync(fd(f))),
            Op::Dup { fd: f } => int(sys::dup(fd(f))),
            Op::Dup2 { fd: f, newfd } => int(sys::dup2(fd(f), fd(newfd))),
            Op::Dup3 {
                fd: f,
                newfd,
                flags,
            } => int(sys::dup3(fd(f), fd(newfd), *flags as i32)),
            Op::Fcntl { fd: f, cmd } => {
                let (cmd, arg) = match *cmd {
                    Fcntl::DupFd(min) => (F_DUPFD, min),
                    Fcntl::DupFdCloexec(min) => (F_DUPFD_CLOEXEC, min),
                    Fcntl::GetFd => (F_GETFD, 0),
                    Fcntl::SetFd(v) => (F_SETFD, v),
                    Fcntl::GetFl => (F_GETFL, 0),
                    Fcntl::SetFl(v) => (F_SETFL, v),
                    Fcntl::SetPipeSz(v) => {
                        return int(sys::fcntl(fd(f), libc::F_SETPIPE_SZ, i64::from(v as u32)))
                    }
                    Fcntl::GetPipeSz => (libc::F_GETPIPE_SZ, 0),
                    Fcntl::Lock(c, l) => return host_lock(fd(f), c, l),
                };
                int(sys::fcntl(fd(f), cmd, i64::from(arg)))
            }
            Op::Flock { fd: f, op } => unit(sys::flock(fd(f), *op as u32)),
            Op::Getpid => done(sys::getpid().map(|p| Value::Pid(p as i32))),
            Op::Pipe2 { flags } => {
                done(sys::pipe2(*flags as i32).map(|[r, w]| Value::FdPair(r, w)))
            }
            Op::Fionread { fd: f } => int(sys::fionread(fd(f))),
            Op::Poll {
                fds: pfds,
                events,
                timeout_ms,
            } => {
                let mut p: Vec<libc::pollfd> = pfds
                    .iter()
                    .zip(events)
                    .map(|(f, &e)| libc::pollfd {
                        fd: fd(f),
                        events: e as i16,
                        revents: 0,
                    })
                    .collect();
                let r = sys::poll(&mut p, *timeout_ms as i32);
                done(r.map(|count| Value::Poll {
                    count,
                    revents: p.iter().map(|p| p.revents as u16).collect(),
                }))
            }
            Op::EpollCreate1 { flags } => int(sys::epoll_create1(*flags as i32)),
            Op::EpollCtl {
                epfd,
                op,
                fd: f,
                event,
            } => {
                let mut ev = event.map(|e| libc::epoll_event {
                    events: e.events as u32,
                    u64: e.data,
                });
                unit(sys::epoll_ctl(fd(epfd), *op as i32, fd(f), ev.as_mut()))
            }
            Op::EpollWait {
                epfd,
                maxevents,
                timeout_ms,
            } => {
                let max = *maxevents as i32;
                let room = if (1..=sys::EP_MAX_EVENTS).contains(&max) {
                    max as usize
                } else {
                    0
                };
                let mut out = vec![libc::epoll_event { events: 0, u64: 0 }; room];
                let r = sys::epoll_wait(fd(epfd), &mut out, max, *timeout_ms as i32);
                done(r.map(|n| {
                    Value::EpollEvents(
                        out[..n as usize]
                            .iter()
                            .map(|e| {
                                let (events, data) = (e.events, e.u64);
                                (events, data)
                            })
                            .collect(),
                    )
                }))
            }
            Op::Eventfd2 { initval, flags } => int(sys::eventfd2(*initval as u32, *flags as i32)),
            Op::InotifyInit1 { flags } => int(sys::inotify_init1(*flags as i32)),
            Op::InotifyAddWatch { fd: f, path, mask } => {
                int(sys::inotify_add_watch(fd(f), &p(path), *mask as u32))
            }
            Op::InotifyRmWatch { fd: f, wd } => unit(sys::inotify_rm_watch(fd(f), *wd as i32)),
            Op::FanotifyInit {
                flags,
                event_f_flags,
            } => int(sys::fanotify_init(*flags as u32, *event_f_flags as u32)),
            Op::FanotifyMark {
                fd: f,
                flags,
                mask,
                dirfd,
                path,
            } => unit(sys::fanotify_mark(
                fd(f),
                *flags as u32,
                *mask as u64,
                fd(dirfd),
                path.as_ref().map(p).as_ref(),
            )),
            Op::FanotifyRead {
                fd: f,
                bufsize,
                keep,
            } => {
                let mut buf = vec![0u8; *bufsize];
                // A read of an inotify instance here prints its events, as a plain read's.
                let of_inotify = is_inotify(fd(f));
                done(sys::read(fd(f), &mut buf).map(|n| {
                    buf.truncate(usize::try_from(n).unwrap_or(0));
                    if of_inotify {
                        inotify(buf)
                    } else {
                        fanotify(&buf, *keep)
                    }
                }))
            }
            // An `inotify_read` of a fanotify group prints its events, as `fanotify_read`
            // does (their fds closed, no pid).
            Op::InotifyRead { fd: f, bufsize } if is_fanotify(fd(f)) => {
                let mut buf = vec![0u8; *bufsize];
                done(sys::read(fd(f), &mut buf).map(|n| {
                    buf.truncate(usize::try_from(n).unwrap_or(0));
                    fanotify(&buf, false)
                }))
            }
            Op::InotifyRead { fd: f, bufsize } => {
                filled(*bufsize, inotify, |b| sys::read(fd(f), b))
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
                let r = sys::splice(
                    fd(fd_in),
                    a.as_mut(),
                    fd(fd_out),
                    b.as_mut(),
                    *len,
                    *flags as u32,
                );
                done(r.map(|n| Value::Moved {
                    count: n,
                    off_in: a,
                    off_out: b,
                }))
            }
            Op::Tee {
                fd_in,
                fd_out,
                len,
                flags,
            } => int(sys::tee(fd(fd_in), fd(fd_out), *len, *flags as u32)),
            Op::Sendfile {
                out_fd,
                in_fd,
                off,
                count,
            } => {
                let mut o = *off;
                let r = sys::sendfile(fd(out_fd), fd(in_fd), o.as_mut(), *count);
                done(r.map(|n| Value::Moved {
                    count: n,
                    off_in: o,
                    off_out: None,
                }))
            }
            Op::Mkdirat { dirfd, path, mode } => {
                unit(sys::mkdirat(fd(dirfd), &p(path), *mode as u32))
            }
            Op::Mknod { path, mode, dev } => {
                unit(sys::mknodat(AT_FDCWD, &p(path), *mode as u32, *dev))
            }
            Op::Unlinkat { dirfd, path, flags } => {
                unit(sys::unlinkat(fd(dirfd), &p(path), *flags as i32))
            }
            Op::Renameat2 {
                olddirfd,
                old,
                newdirfd,
                new,
                flags,
            } => unit(sys::renameat2(
                fd(olddirfd),
                &p(old),
                fd(newdirfd),
                &p(new),
                *flags as u32,
            )),
            Op::Linkat {
                olddirfd,
                old,
                newdirfd,
                new,
                flags,
            } => unit(sys::linkat(
                fd(olddirfd),
                &p(old),
                fd(newdirfd),
                &p(new),
                *flags as i32,
            )),
            Op::Symlink { target, path } => unit(sys::symlinkat(&p(target), AT_FDCWD, &p(path))),
            Op::Readlinkat { dirfd, path, count } => {
                filled(*count, bytes, |b| sys::readlinkat(fd(dirfd), &p(path), b))
            }
            Op::Fstatat { dirfd, path, flags } => {
                done(sys::fstatat(fd(dirfd), &p(path), *flags as i32).map(stat_rec))
            }
            Op::Fstat { fd: f } => done(sys::fstat(fd(f)).map(stat_rec)),
            Op::Statx {
                dirfd,
                path,
                flags,
                mask,
            } => done(sys::statx(fd(dirfd), &p(path), *flags as i32, *mask as u32).map(statx_rec)),
            Op::Fchmodat {
                dirfd,
                path,
                mode,
                flags,
            } => unit(sys::fchmodat2(
                fd(dirfd),
                &p(path),
                *mode as u32,
                *flags as u32,
            )),
            Op::Fchmod { fd: f, mode } => unit(sys::fchmod(fd(f), *mode as u32)),
            Op::Fchownat {
                dirfd,
                path,
                uid,
                gid,
                flags,
            } => unit(sys::fchownat(
                fd(dirfd),
                &p(path),
                *uid as u32,
                *gid as u32,
                *flags as i32,
            )),
            Op::Fchown { fd: f, uid, gid } => unit(sys::fchown(fd(f), *uid as u32, *gid as u32)),
            Op::Utimensat {
                dirfd,
                path,
                times,
                flags,
            } => {
                let ts = times.map(|t| {
                    t.map(|t| libc::timespec {
                        tv_sec: t.sec,
                        tv_nsec: t.nsec,
                    })
                });
                unit(sys::utimensat(
                    fd(dirfd),
                    path.as_ref().map(p).as_ref(),
                    ts.as_ref(),
                    *flags as i32,
                ))
            }
            Op::Faccessat2 {
                dirfd,
                path,
                mode,
                flags,
            } => unit(sys::faccessat2(
                fd(dirfd),
                &p(path),
                *mode as i32,
                *flags as i32,
            )),
            Op::Getdents { fd: f, bufsize } => done(getdents(fd(f), *bufsize).map(|entries| {
                Value::Dirents(Listing {
                    dir: dir_id(fd(f)),
                    entries,
                })
            })),
            Op::Listdir { path } => done(
                listdir_with(path, O_DIRECTORY_CLOEXEC, ListDir::WithIdentity).map(Value::Dirents),
            ),
            Op::Chdir { path } => unit(sys::chdir(&p(path))),
            Op::Fchdir { fd: f } => unit(sys::fchdir(fd(f))),
            Op::Getcwd { size } => filled(*size, bytes, sys::getcwd),
            Op::Chroot { path } => unit(sys::chroot(&p(path))),
            Op::Umask { mask } => int(sys::umask(*mask as u32)),
            Op::Setxattr { .. }
            | Op::Getxattr { .. }
            | Op::Listxattr { .. }
            | Op::Removexattr { .. } => xattr(op, fds),
            Op::Statfs { path } => done(sys::statfs(&p(path)).map(statfs_rec)),
            Op::Fstatfs { fd: f } => done(sys::fstatfs(fd(f)).map(statfs_rec)),
            Op::Statmount { path } => done(sys::statmount_of(&p(path)).map(|s| Value::Statmount {
                sb_flags: s.sb_flags,
                mnt_attr: s.mnt_attr,
                propagation: s.mnt_propagation,
            })),
            Op::Mount {
                src,
                target,
                fstype,
                flags,
                data,
            } => {
                let src = src.as_ref().map(p);
                let sysfs = fstype.as_deref() == Some("sysfs");
                let fstype = fstype.as_ref().map(|s| CPath::new(s.as_bytes()));
                let data = data.as_ref().map(|s| CPath::new(s.as_bytes()));
                let target = p(target);
                let new_fs = op.new_fs_target().is_some();
                let before = mounts();
                let r = sys::mount(
                    src.as_ref(),
                    &target,
                    fstype.as_ref(),
                    *flags,
                    data.as_ref(),
                );
                match r {
                    Ok(_) => {
                        let new: Vec<(u64, Dev)> = match (before, mounts()) {
                            (Some(before), Some(after)) => after
                                .into_iter()
                                .filter(|m| !before.iter().any(|b| b.0 == m.0))
                                .collect(),
                            _ => Vec::new(),
                        };
                        Outcome::Ok(Value::Mounted {
                            dev: new.first().map(|m| m.1).filter(|_| new_fs),
                            ids: new.iter().map(|m| m.0).collect(),
                            machine_stamps: new_fs && sysfs,
                        })
                    }
                    r => unit(r),
                }
            }
            Op::Umount2 { target, flags } => unit(sys::umount2(&p(target), *flags as i32)),
            Op::SetrlimitNofile { limit } => unit(sys::setrlimit(RLIMIT_NOFILE, *limit, *limit)),
            Op::As { uid, gid, groups } => unit(become_user(*uid, *gid, groups)),
            Op::Cred(c) => cred::run(c),
            Op::Task { .. } | Op::Snapshot => {
                unreachable!("the observer and the actor loop run task and snapshot")
            }
        }
    }
}
