//! Printing cases back as case-language text (CASES.md): `impl Display` for [`Case`],
//! [`Step`] and [`Op`]. Parsing the printed text gives back an equal case, for every op and
//! every argument value: short forms (`stat`, `rmdir`, `rename`) where the op has one, flags
//! as symbolic names with a hex remainder, modes in octal, bytes as bare words when that is
//! unambiguous and as quoted strings with escapes otherwise, data as `zeros:N`/`pattern:N`
//! where it is one.

use std::fmt::{self, Display, Formatter, Write};

use crate::names::{self, Flags};
use crate::op::{Fcntl, Fd, Offset, Op, TaskStart, Time, XattrTarget};
use crate::parse::{Case, Step, Timing};

const AT_FDCWD: i32 = -100;
const AT_SYMLINK_NOFOLLOW: i64 = 0x100;
const AT_REMOVEDIR: i64 = 0x200;
/// Default buffer size the parser fills in when an optional size is left out.
const DEFAULT_BUF: usize = 4096;

/// Runs of one byte at least this long are printed as `{rep:N:X}`.
const RUN_SHOWN_AS_REP: usize = 16;

/// Bytes as a double-quoted string with `\n`, `\t`, `\\`, `\"`, `\0` and `\xNN` escapes, and
/// long runs of one byte as `{rep:N:X}` as in case files. `{` and `}` are escaped (`\x7b`,
/// `\x7d`), so the text reads back exactly.
pub fn quote(b: &[u8]) -> String {
    let mut s = String::with_capacity(b.len() + 2);
    s.push('"');
    let mut i = 0;
    while i < b.len() {
        let run = b[i..].iter().take_while(|&&c| c == b[i]).count();
        if run >= RUN_SHOWN_AS_REP {
            write!(s, "{{rep:{run}:").expect("String writes succeed");
            push_escaped(&mut s, b[i]);
            s.push('}');
            i += run;
        } else {
            push_escaped(&mut s, b[i]);
            i += 1;
        }
    }
    s.push('"');
    s
}

fn push_escaped(s: &mut String, c: u8) {
    match c {
        b'\n' => s.push_str("\\n"),
        b'\t' => s.push_str("\\t"),
        b'\\' => s.push_str("\\\\"),
        b'"' => s.push_str("\\\""),
        0 => s.push_str("\\0"),
        b'{' | b'}' => write!(s, "\\x{c:02x}").expect("String writes succeed"),
        0x20..=0x7e => s.push(c as char),
        _ => write!(s, "\\x{c:02x}").expect("String writes succeed"),
    }
}

/// A path, name or string argument: a bare word when the tokenizer reads it back as exactly
/// these bytes and no parser could take it for something else (`-`, `=>`, `@NAME`, `$NAME`),
/// else [`quote`].
pub fn word(b: &[u8]) -> String {
    let safe = |c: &u8| c.is_ascii_alphanumeric() || b"._/+,:=@%^~-".contains(c);
    let first_ok = b
        .first()
        .is_some_and(|c| c.is_ascii_alphanumeric() || b"._/".contains(c));
    let long_run = b
        .windows(RUN_SHOWN_AS_REP)
        .any(|w| w.iter().all(|&c| c == w[0]));
    if first_ok && !long_run && b.iter().all(safe) {
        String::from_utf8(b.to_vec()).expect("safe bytes are ASCII")
    } else {
        quote(b)
    }
}

/// A data argument: `zeros:N`, `pattern:N` or a quoted string.
fn data(b: &[u8]) -> String {
    if b.len() > 1 && b.iter().all(|&c| c == 0) {
        return format!("zeros:{}", b.len());
    }
    if b.len() > 1 && b.iter().enumerate().all(|(i, &c)| c == (i % 251) as u8) {
        return format!("pattern:{}", b.len());
    }
    // Eight bytes that are not text: an eventfd counter value.
    if let Ok(v) = <[u8; 8]>::try_from(b) {
        if !b.iter().all(|c| (0x20..=0x7e).contains(c)) {
            return format!("u64:{:#x}", u64::from_ne_bytes(v));
        }
    }
    quote(b)
}

/// A nullable argument: `-` for none.
fn nullable(b: Option<&[u8]>) -> String {
    b.map_or_else(|| "-".to_string(), word)
}

fn fd(f: &Fd) -> String {
    match f {
        Fd::Var(name) => format!("${name}"),
        Fd::Raw(AT_FDCWD) => "AT_FDCWD".to_string(),
        Fd::Raw(n) => n.to_string(),
    }
}

fn time(t: &Time) -> String {
    match (t.sec, t.nsec) {
        (0, Time::UTIME_NOW) => "NOW".to_string(),
        (0, Time::UTIME_OMIT) => "OMIT".to_string(),
        (s, 0) => s.to_string(),
        (s, n) => format!("{s}.{n}"),
    }
}

fn list<T: Display>(v: &[T]) -> String {
    v.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

fn f(kind: Flags, v: i64) -> String {
    names::flags_text(kind, v)
}

fn fu(kind: Flags, v: u64) -> String {
    names::flags_text(kind, v as i64)
}

fn cwd(d: &Fd) -> bool {
    *d == Fd::Raw(AT_FDCWD)
}

/// Writes `word arg arg ...`.
/// An offset pointer argument: the number, or `-` for null.
fn opt_off(o: &Option<i64>) -> String {
    o.map_or_else(|| "-".to_string(), |v| v.to_string())
}

fn line(out: &mut Formatter<'_>, op: &str, args: &[String]) -> fmt::Result {
    out.write_str(op)?;
    for a in args {
        write!(out, " {a}")?;
    }
    Ok(())
}

fn xattr_op(kind: &str, t: &XattrTarget) -> (String, String) {
    match t {
        XattrTarget::Path(p) => (kind.to_string(), word(p)),
        XattrTarget::Link(p) => (format!("l{kind}"), word(p)),
        XattrTarget::File(d) => (format!("f{kind}"), fd(d)),
    }
}

impl Display for Op {
    fn fmt(&self, out: &mut Formatter<'_>) -> fmt::Result {
        use Flags::*;
        let w = |b: &Vec<u8>| word(b);
        let n = |v: &dyn Display| v.to_string();
        match self {
            Op::Open { path, flags, mode } => {
                let mut a = vec![w(path), f(Open, *flags)];
                if *mode != 0 {
                    a.push(f(Mode, *mode));
                }
                line(out, "open", &a)
            }
            Op::Openat {
                dirfd,
                path,
                flags,
                mode,
            } => {
                let mut a = vec![fd(dirfd), w(path), f(Open, *flags)];
                if *mode != 0 {
                    a.push(f(Mode, *mode));
                }
                line(out, "openat", &a)
            }
            Op::Openat2 {
                dirfd,
                path,
                flags,
                mode,
                resolve,
            } => line(
                out,
                "openat2",
                &[
                    fd(dirfd),
                    w(path),
                    fu(Open, *flags),
                    fu(Mode, *mode),
                    fu(Resolve, *resolve),
                ],
            ),
            Op::Close { fd: d } => line(out, "close", &[fd(d)]),
            Op::Read { fd: d, count } => line(out, "read", &[fd(d), n(count)]),
            Op::Pread { fd: d, count, off } => line(out, "pread", &[fd(d), n(count), n(off)]),
            Op::Write { fd: d, data: b } => line(out, "write", &[fd(d), data(b)]),
            Op::Pwrite {
                fd: d,
                data: b,
                off,
            } => line(out, "pwrite", &[fd(d), data(b), n(off)]),
            Op::Readv { fd: d, counts } => {
                let mut a = vec![fd(d)];
                if !counts.is_empty() {
                    a.push(list(counts));
                }
                line(out, "readv", &a)
            }
            Op::Writev { fd: d, bufs } => {
                let mut a = vec![fd(d)];
                a.extend(bufs.iter().map(|b| data(b)));
                line(out, "writev", &a)
            }
            Op::Preadv { fd: d, counts, off } => {
                let mut a = vec![fd(d)];
                if !counts.is_empty() {
                    a.push(list(counts));
                }
                a.push(n(off));
                line(out, "preadv", &a)
            }
            Op::Pwritev { fd: d, bufs, off } => {
                let mut a = vec![fd(d)];
                a.extend(bufs.iter().map(|b| data(b)));
                a.push(n(off));
                line(out, "pwritev", &a)
            }
            Op::Lseek { fd: d, off, whence } => {
                let off = match off {
                    Offset::Raw(v) => v.to_string(),
                    Offset::AfterEntry(name) => match word(name) {
                        bare if !bare.starts_with('"') => format!("@{bare}"),
                        quoted => format!("@ {quoted}"),
                    },
                };
                line(out, "lseek", &[fd(d), off, f(Whence, *whence)])
            }
            Op::Truncate { path, len } => line(out, "truncate", &[w(path), n(len)]),
            Op::Ftruncate { fd: d, len } => line(out, "ftruncate", &[fd(d), n(len)]),
            Op::Fallocate {
                fd: d,
                mode,
                off,
                len,
            } => line(out, "fallocate", &[fd(d), f(Falloc, *mode), n(off), n(len)]),
            Op::Fsync { fd: d } => line(out, "fsync", &[fd(d)]),
            Op::Flock { fd: d, op } => line(out, "flock", &[fd(d), f(Flock, *op)]),
            Op::Getpid => line(out, "getpid", &[]),
            Op::Pipe2 { flags } => line(out, "pipe2", &[f(OpenBits, *flags)]),
            Op::Fionread { fd: d } => line(out, "fionread", &[fd(d)]),
            Op::Poll {
                fds,
                events,
                timeout_ms,
            } => {
                let mut a: Vec<String> = fds
                    .iter()
                    .zip(events)
                    .map(|(d, e)| format!("{}={}", fd(d), f(Poll, *e)))
                    .collect();
                a.push(n(timeout_ms));
                line(out, "poll", &a)
            }
            Op::EpollCreate1 { flags } => line(out, "epoll_create1", &[f(EpollCreate, *flags)]),
            Op::EpollCtl {
                epfd,
                op,
                fd: d,
                event,
            } => {
                let mut a = vec![fd(epfd), f(EpollOp, *op), fd(d)];
                match event {
                    None => a.push("-".into()),
                    Some(e) => {
                        a.push(f(Epoll, e.events));
                        a.push(format!("{:#x}", e.data));
                    }
                }
                line(out, "epoll_ctl", &a)
            }
            Op::EpollWait {
                epfd,
                maxevents,
                timeout_ms,
            } => line(out, "epoll_wait", &[fd(epfd), n(maxevents), n(timeout_ms)]),
            Op::Eventfd2 { initval, flags } => line(out, "eventfd2", &[n(initval), f(Efd, *flags)]),
            Op::InotifyInit1 { flags } => line(out, "inotify_init1", &[f(InotifyInit, *flags)]),
            Op::InotifyAddWatch { fd: d, path, mask } => line(
                out,
                "inotify_add_watch",
                &[fd(d), w(path), f(Inotify, *mask)],
            ),
            Op::InotifyRmWatch { fd: d, wd } => line(out, "inotify_rm_watch", &[fd(d), n(wd)]),
            Op::InotifyRead { fd: d, bufsize } => {
                let mut a = vec![fd(d)];
                if *bufsize != DEFAULT_BUF {
                    a.push(bufsize.to_string());
                }
                line(out, "inotify_read", &a)
            }
            Op::FanotifyInit {
                flags,
                event_f_flags,
            } => line(
                out,
                "fanotify_init",
                &[f(FanotifyInit, *flags), f(Open, *event_f_flags)],
            ),
            Op::FanotifyMark {
                fd: d,
                flags,
                mask,
                dirfd,
                path,
            } => line(
                out,
                "fanotify_mark",
                &[
                    fd(d),
                    f(FanotifyMark, *flags),
                    f(Fanotify, *mask),
                    fd(dirfd),
                    nullable(path.as_deref()),
                ],
            ),
            Op::FanotifyRead {
                fd: d,
                bufsize,
                keep,
            } => {
                let mut a = vec![fd(d)];
                if *bufsize != DEFAULT_BUF || *keep {
                    a.push(bufsize.to_string());
                }
                if *keep {
                    a.push("keep".to_string());
                }
                line(out, "fanotify_read", &a)
            }
            Op::Splice {
                fd_in,
                off_in,
                fd_out,
                off_out,
                len,
                flags,
            } => line(
                out,
                "splice",
                &[
                    fd(fd_in),
                    opt_off(off_in),
                    fd(fd_out),
                    opt_off(off_out),
                    len.to_string(),
                    f(Splice, *flags),
                ],
            ),
            Op::Tee {
                fd_in,
                fd_out,
                len,
                flags,
            } => line(
                out,
                "tee",
                &[fd(fd_in), fd(fd_out), len.to_string(), f(Splice, *flags)],
            ),
            Op::Sendfile {
                out_fd,
                in_fd,
                off,
                count,
            } => line(
                out,
                "sendfile",
                &[fd(out_fd), fd(in_fd), opt_off(off), count.to_string()],
            ),
            Op::Fdatasync { fd: d } => line(out, "fdatasync", &[fd(d)]),
            Op::Dup { fd: d } => line(out, "dup", &[fd(d)]),
            Op::Dup2 { fd: d, newfd } => line(out, "dup2", &[fd(d), fd(newfd)]),
            Op::Dup3 {
                fd: d,
                newfd,
                flags,
            } => line(out, "dup3", &[fd(d), fd(newfd), f(OpenBits, *flags)]),
            Op::Fcntl { fd: d, cmd } => {
                let (c, arg) = match *cmd {
                    Fcntl::DupFd(m) => ("F_DUPFD", Some(m.to_string())),
                    Fcntl::DupFdCloexec(m) => ("F_DUPFD_CLOEXEC", Some(m.to_string())),
                    Fcntl::GetFd => ("F_GETFD", None),
                    Fcntl::SetFd(v) => ("F_SETFD", Some(f(FdFlags, i64::from(v)))),
                    Fcntl::GetFl => ("F_GETFL", None),
                    Fcntl::SetFl(v) => ("F_SETFL", Some(f(OpenBits, i64::from(v)))),
                    Fcntl::SetPipeSz(v) => ("F_SETPIPE_SZ", Some(v.to_string())),
                    Fcntl::GetPipeSz => ("F_GETPIPE_SZ", None),
                    Fcntl::Lock(c, l) => {
                        let mut s = format!(
                            "{} {} {} {}",
                            f(LockType, l.l_type),
                            f(Whence, l.whence),
                            l.start,
                            l.len
                        );
                        if l.pid != 0 {
                            s.push_str(&format!(" {}", l.pid));
                        }
                        (c.name(), Some(s))
                    }
                };
                let mut a = vec![fd(d), c.to_string()];
                a.extend(arg);
                line(out, "fcntl", &a)
            }
            Op::Mkdirat { dirfd, path, mode } if cwd(dirfd) => {
                line(out, "mkdir", &[w(path), f(Mode, *mode)])
            }
            Op::Mkdirat { dirfd, path, mode } => {
                line(out, "mkdirat", &[fd(dirfd), w(path), f(Mode, *mode)])
            }
            Op::Mknod { path, mode, dev } => line(
                out,
                "mknod",
                &[w(path), f(FileMode, *mode), format!("{dev:#x}")],
            ),
            Op::Unlinkat {
                dirfd,
                path,
                flags: 0,
            } if cwd(dirfd) => line(out, "unlink", &[w(path)]),
            Op::Unlinkat {
                dirfd,
                path,
                flags: AT_REMOVEDIR,
            } if cwd(dirfd) => line(out, "rmdir", &[w(path)]),
            Op::Unlinkat { dirfd, path, flags } => {
                line(out, "unlinkat", &[fd(dirfd), w(path), f(At, *flags)])
            }
            Op::Renameat2 {
                olddirfd,
                old,
                newdirfd,
                new,
                flags,
            } if cwd(olddirfd) && cwd(newdirfd) => {
                let mut a = vec![w(old), w(new)];
                if *flags != 0 {
                    a.push(f(Rename, *flags));
                }
                line(out, "rename", &a)
            }
            Op::Renameat2 {
                olddirfd,
                old,
                newdirfd,
                new,
                flags,
            } => line(
                out,
                "renameat2",
                &[
                    fd(olddirfd),
                    w(old),
                    fd(newdirfd),
                    w(new),
                    f(Rename, *flags),
                ],
            ),
            Op::Linkat {
                olddirfd,
                old,
                newdirfd,
                new,
                flags: 0,
            } if cwd(olddirfd) && cwd(newdirfd) => line(out, "link", &[w(old), w(new)]),
            Op::Linkat {
                olddirfd,
                old,
                newdirfd,
                new,
                flags,
            } => line(
                out,
                "linkat",
                &[fd(olddirfd), w(old), fd(newdirfd), w(new), f(At, *flags)],
            ),
            Op::Symlink { target, path } => line(out, "symlink", &[w(target), w(path)]),
            Op::Readlinkat { dirfd, path, count } if cwd(dirfd) => {
                let mut a = vec![w(path)];
                if *count != DEFAULT_BUF {
                    a.push(n(count));
                }
                line(out, "readlink", &a)
            }
            Op::Readlinkat { dirfd, path, count } => {
                line(out, "readlinkat", &[fd(dirfd), w(path), n(count)])
            }
            Op::Fstatat {
                dirfd,
                path,
                flags: 0,
            } if cwd(dirfd) => line(out, "stat", &[w(path)]),
            Op::Fstatat {
                dirfd,
                path,
                flags: AT_SYMLINK_NOFOLLOW,
            } if cwd(dirfd) => line(out, "lstat", &[w(path)]),
            Op::Fstatat { dirfd, path, flags } => {
                line(out, "fstatat", &[fd(dirfd), w(path), f(At, *flags)])
            }
            Op::Fstat { fd: d } => line(out, "fstat", &[fd(d)]),
            Op::Statx {
                dirfd,
                path,
                flags,
                mask,
            } => line(
                out,
                "statx",
                &[fd(dirfd), w(path), f(At, *flags), f(StatxMask, *mask)],
            ),
            Op::Fchmodat {
                dirfd,
                path,
                mode,
                flags: 0,
            } if cwd(dirfd) => line(out, "chmod", &[w(path), f(Mode, *mode)]),
            Op::Fchmodat {
                dirfd,
                path,
                mode,
                flags,
            } => line(
                out,
                "fchmodat",
                &[fd(dirfd), w(path), f(Mode, *mode), f(At, *flags)],
            ),
            Op::Fchmod { fd: d, mode } => line(out, "fchmod", &[fd(d), f(Mode, *mode)]),
            Op::Fchownat {
                dirfd,
                path,
                uid,
                gid,
                flags,
            } if cwd(dirfd) && (*flags == 0 || *flags == AT_SYMLINK_NOFOLLOW) => {
                let name = if *flags == 0 { "chown" } else { "lchown" };
                line(out, name, &[w(path), n(uid), n(gid)])
            }
            Op::Fchownat {
                dirfd,
                path,
                uid,
                gid,
                flags,
            } => line(
                out,
                "fchownat",
                &[fd(dirfd), w(path), n(uid), n(gid), f(At, *flags)],
            ),
            Op::Fchown { fd: d, uid, gid } => line(out, "fchown", &[fd(d), n(uid), n(gid)]),
            Op::Utimensat {
                dirfd,
                path: Some(p),
                times: Some([a, m]),
                flags,
            } if cwd(dirfd) => {
                let mut args = vec![w(p), time(a), time(m)];
                if *flags != 0 {
                    args.push(f(At, *flags));
                }
                line(out, "utimens", &args)
            }
            Op::Utimensat {
                dirfd,
                path: Some(p),
                times: None,
                flags: 0,
            } if cwd(dirfd) => line(out, "utimens_now", &[w(p)]),
            Op::Utimensat {
                dirfd,
                path: None,
                times: Some([a, m]),
                flags: 0,
            } => line(out, "futimens", &[fd(dirfd), time(a), time(m)]),
            Op::Utimensat {
                dirfd,
                path,
                times,
                flags,
            } => {
                let mut args = vec![fd(dirfd), nullable(path.as_deref())];
                match times {
                    Some([a, m]) => args.extend([time(a), time(m)]),
                    None => args.push("-".to_string()),
                }
                args.push(f(At, *flags));
                line(out, "utimensat", &args)
            }
            Op::Faccessat2 {
                dirfd,
                path,
                mode,
                flags,
            } if cwd(dirfd) => {
                let mut a = vec![w(path), f(Access, *mode)];
                if *flags != 0 {
                    a.push(f(AtAccess, *flags));
                }
                line(out, "access", &a)
            }
            Op::Faccessat2 {
                dirfd,
                path,
                mode,
                flags,
            } => line(
                out,
                "faccessat2",
                &[fd(dirfd), w(path), f(Access, *mode), f(AtAccess, *flags)],
            ),
            Op::Getdents { fd: d, bufsize } => {
                let mut a = vec![fd(d)];
                if *bufsize != DEFAULT_BUF {
                    a.push(n(bufsize));
                }
                line(out, "getdents", &a)
            }
            Op::Listdir { path } => line(out, "listdir", &[w(path)]),
            Op::Chdir { path } => line(out, "chdir", &[w(path)]),
            Op::Fchdir { fd: d } => line(out, "fchdir", &[fd(d)]),
            Op::Getcwd { size } => {
                let a: Vec<String> = if *size == DEFAULT_BUF {
                    Vec::new()
                } else {
                    vec![n(size)]
                };
                line(out, "getcwd", &a)
            }
            Op::Chroot { path } => line(out, "chroot", &[w(path)]),
            Op::Umask { mask } => line(out, "umask", &[f(Mode, *mask)]),
            Op::Setxattr {
                target,
                name,
                value,
                flags,
            } => {
                let (op, t) = xattr_op("setxattr", target);
                let mut a = vec![t, w(name), data(value)];
                if *flags != 0 {
                    a.push(f(Xattr, *flags));
                }
                line(out, &op, &a)
            }
            Op::Getxattr { target, name, size } => {
                let (op, t) = xattr_op("getxattr", target);
                let mut a = vec![t, w(name)];
                if *size != DEFAULT_BUF {
                    a.push(n(size));
                }
                line(out, &op, &a)
            }
            Op::Listxattr { target, size } => {
                let (op, t) = xattr_op("listxattr", target);
                let mut a = vec![t];
                if *size != DEFAULT_BUF {
                    a.push(n(size));
                }
                line(out, &op, &a)
            }
            Op::Removexattr { target, name } => {
                let (op, t) = xattr_op("removexattr", target);
                line(out, &op, &[t, w(name)])
            }
            Op::Statfs { path } => line(out, "statfs", &[w(path)]),
            Op::Fstatfs { fd: d } => line(out, "fstatfs", &[fd(d)]),
            Op::Statmount { path } => line(out, "statmount", &[w(path)]),
            Op::Mount {
                src,
                target,
                fstype,
                flags,
                data: d,
            } => line(
                out,
                "mount",
                &[
                    nullable(src.as_deref()),
                    w(target),
                    nullable(fstype.as_deref().map(str::as_bytes)),
                    fu(Mount, *flags),
                    nullable(d.as_deref().map(str::as_bytes)),
                ],
            ),
            Op::Umount2 { target, flags } => line(out, "umount2", &[w(target), f(Umount, *flags)]),
            Op::SetrlimitNofile { limit } => line(out, "setrlimit_nofile", &[n(limit)]),
            Op::As { uid, gid, groups } => {
                let mut a = vec![n(uid), n(gid)];
                if !groups.is_empty() {
                    a.push(list(groups));
                }
                line(out, "as", &a)
            }
            Op::Task { id, start } => {
                let mut a = vec![n(id)];
                match start {
                    Some(TaskStart::Fork) => a.push("fork".into()),
                    Some(TaskStart::Thread) => a.push("thread".into()),
                    None => {}
                }
                line(out, "task", &a)
            }
            Op::Snapshot => out.write_str("snapshot"),
            Op::Cred(c) => write!(out, "{c}"),
        }
    }
}

impl Display for Step {
    fn fmt(&self, out: &mut Formatter<'_>) -> fmt::Result {
        write!(out, "{}", self.op)?;
        if let Some(name) = &self.bind {
            write!(out, " => {name}")?;
        }
        Ok(())
    }
}

impl Display for Case {
    fn fmt(&self, out: &mut Formatter<'_>) -> fmt::Result {
        writeln!(out, "case {}", self.name)?;
        if let Some(m) = &self.mount {
            writeln!(out, "mount {}", word(m.as_bytes()))?;
        }
        if self.timing == Timing::Burst {
            writeln!(out, "timing burst")?;
        }
        for s in &self.steps {
            writeln!(out, "{s}")?;
        }
        writeln!(out, "end")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lex::tokenize;
    use crate::parse::parse_cases;
    use std::path::Path;

    fn reparse(op: &Op) -> Op {
        let text = op.to_string();
        let toks = tokenize(&text).unwrap_or_else(|e| panic!("{text}: {e}"));
        let (back, _) =
            Op::parse(&toks[0].text(), &toks[1..]).unwrap_or_else(|e| panic!("{text}: {e}"));
        back
    }

    #[test]
    fn every_case_file_round_trips() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("cases");
        let cases = crate::parse::load_dir(&dir).expect("the cases parse");
        assert!(cases.len() > 100, "{} cases", cases.len());
        let mut steps = 0;
        for c in &cases {
            let text = c.to_string();
            let back = parse_cases(&text, Path::new("printed.cases"))
                .unwrap_or_else(|e| panic!("{}: {e}\n{text}", c.name));
            assert_eq!(back.len(), 1, "{text}");
            assert_eq!(back[0], *c, "{text}");
            // Printing is stable: the printed text prints as itself.
            assert_eq!(back[0].to_string(), text);
            steps += c.steps.len();
        }
        assert!(steps > 1000, "{steps} steps");
    }

    fn hostile_bytes() -> Vec<Vec<u8>> {
        vec![
            Vec::new(),
            b"-".to_vec(),
            b"=>".to_vec(),
            b"@x".to_vec(),
            b"$f".to_vec(),
            b"#".to_vec(),
            b"a b".to_vec(),
            b"\"".to_vec(),
            b"\\".to_vec(),
            b"{rep:3:a}".to_vec(),
            b"}".repeat(20),
            b"{".repeat(20),
            b":".repeat(17),
            vec![0; 3],
            (0..=255u8).collect(),
            b"/d/\n\t\r\x7f\xff".to_vec(),
            b"0755".to_vec(),
            b"NOW".to_vec(),
            b"O_RDONLY".to_vec(),
        ]
    }

    #[test]
    fn hostile_bytes_round_trip_in_every_byte_argument() {
        for b in hostile_bytes() {
            let ops = [
                Op::Open {
                    path: b.clone(),
                    flags: 0,
                    mode: 0,
                },
                Op::Symlink {
                    target: b.clone(),
                    path: b.clone(),
                },
                Op::Write {
                    fd: Fd::Var("f".into()),
                    data: b.clone(),
                },
                Op::Pwritev {
                    fd: Fd::Raw(3),
                    bufs: vec![b.clone(), b.clone()],
                    off: -1,
                },
                Op::Setxattr {
                    target: XattrTarget::Link(b.clone()),
                    name: b.clone(),
                    value: b.clone(),
                    flags: 3,
                },
                Op::Lseek {
                    fd: Fd::Raw(0),
                    off: Offset::AfterEntry(b.clone()),
                    whence: 0,
                },
                Op::Mount {
                    src: Some(b.clone()),
                    target: b.clone(),
                    fstype: String::from_utf8(b.clone()).ok(),
                    flags: u64::MAX,
                    data: Some("-".into()),
                },
                Op::Utimensat {
                    dirfd: Fd::Raw(5),
                    path: Some(b.clone()),
                    times: None,
                    flags: 0x1100,
                },
            ];
            for op in ops {
                assert_eq!(reparse(&op), op, "{op}");
            }
        }
    }

    #[test]
    fn extreme_numbers_flags_and_times_round_trip() {
        let t = |sec, nsec| Time { sec, nsec };
        let ops = [
            Op::Open {
                path: b"/a".to_vec(),
                flags: i64::MIN,
                mode: -1,
            },
            Op::Openat {
                dirfd: Fd::Raw(i32::MIN),
                path: b"a".to_vec(),
                flags: 0o20200000 | 0o4010000 | 0o2 | (1 << 40),
                mode: 0o7777,
            },
            Op::Openat2 {
                dirfd: Fd::Raw(-1),
                path: b"".to_vec(),
                flags: u64::MAX,
                mode: 1 << 63,
                resolve: 0x3f | (1 << 50),
            },
            Op::Pread {
                fd: Fd::Raw(1),
                count: 0,
                off: i64::MAX,
            },
            Op::Preadv {
                fd: Fd::Raw(1),
                counts: vec![],
                off: i64::MIN,
            },
            Op::Poll {
                fds: vec![Fd::Raw(-1), Fd::Var("f".into()), Fd::Raw(i32::MIN)],
                events: vec![0, 0x7fff | (1 << 40), -1],
                timeout_ms: i64::MIN,
            },
            Op::Poll {
                fds: vec![],
                events: vec![],
                timeout_ms: 0,
            },
            Op::EpollCtl {
                epfd: Fd::Raw(-1),
                op: i64::MIN,
                fd: Fd::Var("e".into()),
                event: Some(crate::op::EpollArg {
                    events: (1 << 31) | (1 << 30) | 0x2fff,
                    data: u64::MAX,
                }),
            },
            Op::EpollCtl {
                epfd: Fd::Raw(3),
                op: 2,
                fd: Fd::Raw(4),
                event: None,
            },
            Op::EpollWait {
                epfd: Fd::Raw(3),
                maxevents: -1,
                timeout_ms: i64::MAX,
            },
            Op::Eventfd2 {
                initval: i64::MIN,
                flags: 0o6004001 | (1 << 33),
            },
            Op::EpollCreate1 { flags: -1 },
            Op::InotifyInit1 {
                flags: 0o4000 | 0o2000000 | 1,
            },
            Op::InotifyAddWatch {
                fd: Fd::Var("i".into()),
                path: b"/d/f".to_vec(),
                mask: 0x8000_0000 | 0x4000_0000 | 0x1000 | 0xfff,
            },
            Op::InotifyAddWatch {
                fd: Fd::Raw(-1),
                path: b"".to_vec(),
                mask: -1,
            },
            Op::InotifyRmWatch {
                fd: Fd::Raw(3),
                wd: i64::MIN,
            },
            Op::InotifyRead {
                fd: Fd::Var("i".into()),
                bufsize: 0,
            },
            Op::FanotifyInit {
                flags: 0x2 | 0x1 | 0x10 | 0x4000_0000,
                event_f_flags: 0o2 | 0o4000,
            },
            Op::FanotifyInit {
                flags: 0,
                event_f_flags: 0,
            },
            Op::FanotifyMark {
                fd: Fd::Var("g".into()),
                flags: 0x1 | 0x10 | 0x8000,
                mask: 0x4000_0000 | 0x20 | (1 << 40),
                dirfd: Fd::Raw(-100),
                path: Some(b"/d/f".to_vec()),
            },
            Op::FanotifyMark {
                fd: Fd::Raw(-1),
                flags: -1,
                mask: -1,
                dirfd: Fd::Var("d".into()),
                path: None,
            },
            Op::FanotifyMark {
                fd: Fd::Raw(3),
                flags: 0x80,
                mask: 0,
                dirfd: Fd::Raw(3),
                path: Some(b"-".to_vec()),
            },
            Op::FanotifyRead {
                fd: Fd::Var("g".into()),
                bufsize: 23,
                keep: false,
            },
            Op::FanotifyRead {
                fd: Fd::Var("g".into()),
                bufsize: DEFAULT_BUF,
                keep: false,
            },
            Op::FanotifyRead {
                fd: Fd::Var("g".into()),
                bufsize: DEFAULT_BUF,
                keep: true,
            },
            Op::InotifyRead {
                fd: Fd::Var("i".into()),
                bufsize: DEFAULT_BUF,
            },
            Op::Write {
                fd: Fd::Raw(3),
                data: u64::MAX.to_ne_bytes().to_vec(),
            },
            Op::Write {
                fd: Fd::Raw(3),
                data: 7u64.to_ne_bytes().to_vec(),
            },
            Op::Preadv {
                fd: Fd::Raw(1),
                counts: vec![0, 5, 4096],
                off: 3,
            },
            Op::Readv {
                fd: Fd::Raw(1),
                counts: vec![],
            },
            Op::Lseek {
                fd: Fd::Raw(1),
                off: Offset::Raw(i64::MIN),
                whence: 17,
            },
            Op::Mknod {
                path: b"/n".to_vec(),
                mode: 0o140755,
                dev: u64::MAX,
            },
            Op::Mknod {
                path: b"/n".to_vec(),
                mode: 0o170000 | 0o4000,
                dev: 0x103,
            },
            Op::Fcntl {
                fd: Fd::Raw(0),
                cmd: Fcntl::SetFl(-1),
            },
            Op::Fcntl {
                fd: Fd::Raw(0),
                cmd: Fcntl::SetFd(3),
            },
            Op::Unlinkat {
                dirfd: Fd::Raw(AT_FDCWD),
                path: b"x".to_vec(),
                flags: 0x201,
            },
            Op::Utimensat {
                dirfd: Fd::Raw(AT_FDCWD),
                path: Some(b"x".to_vec()),
                times: Some([t(-5, 3), t(0, -1)]),
                flags: 0,
            },
            Op::Utimensat {
                dirfd: Fd::Raw(AT_FDCWD),
                path: None,
                times: Some([t(7, Time::UTIME_NOW), t(0, Time::UTIME_OMIT)]),
                flags: 0,
            },
            Op::Utimensat {
                dirfd: Fd::Raw(AT_FDCWD),
                path: None,
                times: None,
                flags: -1,
            },
            Op::Fchownat {
                dirfd: Fd::Raw(AT_FDCWD),
                path: b"x".to_vec(),
                uid: -1,
                gid: i64::MAX,
                flags: 0x100,
            },
            Op::Faccessat2 {
                dirfd: Fd::Raw(AT_FDCWD),
                path: b"x".to_vec(),
                mode: 7,
                flags: 0x200,
            },
            Op::Statx {
                dirfd: Fd::Raw(AT_FDCWD),
                path: b"x".to_vec(),
                flags: 0x6000,
                mask: 0x8000_0fff,
            },
            Op::Renameat2 {
                olddirfd: Fd::Raw(AT_FDCWD),
                old: b"a".to_vec(),
                newdirfd: Fd::Var("d".into()),
                new: b"b".to_vec(),
                flags: 7,
            },
            Op::Umask { mask: -1 },
            Op::SetrlimitNofile { limit: u64::MAX },
            Op::As {
                uid: u32::MAX,
                gid: 0,
                groups: vec![1, u32::MAX],
            },
            Op::Task {
                id: 3,
                start: Some(TaskStart::Thread),
            },
            Op::Task { id: 2, start: None },
            Op::Snapshot,
            Op::Umount2 {
                target: b"/m".to_vec(),
                flags: 0xf,
            },
            Op::Fallocate {
                fd: Fd::Raw(0),
                mode: 0x7f,
                off: -1,
                len: 0,
            },
            Op::Getxattr {
                target: XattrTarget::File(Fd::Raw(3)),
                name: b"user.x".to_vec(),
                size: 0,
            },
        ];
        for op in ops {
            assert_eq!(reparse(&op), op, "{op}");
        }
    }

    #[test]
    fn flags_print_as_names_with_a_remainder() {
        let op = Op::Open {
            path: b"/d/f".to_vec(),
            flags: 0o100 | 0o1 | 0o2000000,
            mode: 0o644,
        };
        assert_eq!(op.to_string(), "open /d/f O_WRONLY|O_CREAT|O_CLOEXEC 0644");
        let op = Op::Mknod {
            path: b"/p".to_vec(),
            mode: 0o10644,
            dev: 0,
        };
        assert_eq!(op.to_string(), "mknod /p S_IFIFO|0644 0x0");
        let op = Op::Renameat2 {
            olddirfd: Fd::Raw(AT_FDCWD),
            old: b"a".to_vec(),
            newdirfd: Fd::Raw(AT_FDCWD),
            new: b"b c".to_vec(),
            flags: 2 | 8,
        };
        assert_eq!(op.to_string(), "rename a \"b c\" RENAME_EXCHANGE|0x8");
    }

    #[test]
    fn quoting_escapes_and_folds_long_runs() {
        assert_eq!(quote(b"a\n\0\xff\"{"), r#""a\n\0\xff\"\x7b""#);
        let mut data = vec![0u8; 20];
        data.extend_from_slice(b"xy");
        assert_eq!(quote(&data), r#""{rep:20:\0}xy""#);
        assert_eq!(quote(&[b'z'; 15]), format!("\"{}\"", "z".repeat(15)));
        assert_eq!(quote(&[b'}'; 16]), r#""{rep:16:\x7d}""#);
    }
}
