//! Parsing an op line's arguments into an [`Op`].

use super::{
    EpollArg, Fcntl, Fd, FlockArg, LockCmd, Offset, Op, TaskStart, Time, XattrTarget, MAX_TASKS,
};
use crate::lex::Token;
use crate::names;

/// Default buffer size of `readlink`, `getxattr`, `listxattr`, `getdents` and `getcwd`.
const DEFAULT_BUF: usize = 4096;

impl Op {
    /// Whether the op returns an fd that `=> NAME` may bind.
    pub fn returns_fd(&self) -> bool {
        matches!(
            self,
            Op::Open { .. }
                | Op::Openat { .. }
                | Op::Openat2 { .. }
                | Op::Dup { .. }
                | Op::Dup2 { .. }
                | Op::Dup3 { .. }
                | Op::Fcntl { .. }
                | Op::Pipe2 { .. }
                | Op::EpollCreate1 { .. }
                | Op::Eventfd2 { .. }
                | Op::InotifyInit1 { .. }
                | Op::FanotifyInit { .. }
        )
    }

    /// Parses `word args...`; returns the op and the `$NAME` variables it reads.
    ///
    /// # Errors
    /// A message for an unknown op, a missing, extra or malformed argument.
    pub fn parse(word: &str, args: &[Token]) -> Result<(Op, Vec<String>), String> {
        if let Some(cred) = super::CredOp::parse(word, args) {
            return Ok((Op::Cred(cred?), Vec::new()));
        }
        let mut a = Args {
            toks: args,
            i: 0,
            vars: Vec::new(),
        };
        let cwd = || Fd::Raw(-100);
        let op = match word {
            "open" => Op::Open {
                path: a.path()?,
                flags: a.int()?,
                mode: a.opt_int(0)?,
            },
            "openat" => Op::Openat {
                dirfd: a.fd()?,
                path: a.path()?,
                flags: a.int()?,
                mode: a.opt_int(0)?,
            },
            "openat2" => Op::Openat2 {
                dirfd: a.fd()?,
                path: a.path()?,
                flags: a.int()? as u64,
                mode: a.int()? as u64,
                resolve: a.int()? as u64,
            },
            "close" => Op::Close { fd: a.fd()? },
            "read" => Op::Read {
                fd: a.fd()?,
                count: a.count()?,
            },
            "pread" => Op::Pread {
                fd: a.fd()?,
                count: a.count()?,
                off: a.int()?,
            },
            "write" => Op::Write {
                fd: a.fd()?,
                data: a.data()?,
            },
            "pwrite" => Op::Pwrite {
                fd: a.fd()?,
                data: a.data()?,
                off: a.int()?,
            },
            "readv" => Op::Readv {
                fd: a.fd()?,
                counts: a.opt_counts()?,
            },
            "writev" => {
                let fd = a.fd()?;
                let mut bufs = Vec::new();
                while a.more() {
                    bufs.push(a.data()?);
                }
                Op::Writev { fd, bufs }
            }
            "preadv" => {
                let fd = a.fd()?;
                let counts = if a.remaining() > 1 {
                    a.counts()?
                } else {
                    Vec::new()
                };
                Op::Preadv {
                    fd,
                    counts,
                    off: a.int()?,
                }
            }
            "pwritev" => {
                let fd = a.fd()?;
                let mut bufs = Vec::new();
                while a.remaining() > 1 {
                    bufs.push(a.data()?);
                }
                Op::Pwritev {
                    fd,
                    bufs,
                    off: a.int()?,
                }
            }
            "lseek" => Op::Lseek {
                fd: a.fd()?,
                off: a.offset()?,
                whence: a.int()?,
            },
            "truncate" => Op::Truncate {
                path: a.path()?,
                len: a.int()?,
            },
            "ftruncate" => Op::Ftruncate {
                fd: a.fd()?,
                len: a.int()?,
            },
            "fallocate" => Op::Fallocate {
                fd: a.fd()?,
                mode: a.int()?,
                off: a.int()?,
                len: a.int()?,
            },
            "fsync" => Op::Fsync { fd: a.fd()? },
            "flock" => Op::Flock {
                fd: a.fd()?,
                op: a.int()?,
            },
            "getpid" => Op::Getpid,
            "pipe2" => Op::Pipe2 { flags: a.int()? },
            "fionread" => Op::Fionread { fd: a.fd()? },
            "poll" => {
                let mut fds = Vec::new();
                let mut events = Vec::new();
                while a.remaining() > 1 {
                    let (fd, ev) = a.poll_fd()?;
                    fds.push(fd);
                    events.push(ev);
                }
                Op::Poll {
                    fds,
                    events,
                    timeout_ms: a.int()?,
                }
            }
            "epoll_create1" => Op::EpollCreate1 { flags: a.int()? },
            "epoll_ctl" => Op::EpollCtl {
                epfd: a.fd()?,
                op: a.int()?,
                fd: a.fd()?,
                event: if a.dash() {
                    None
                } else {
                    Some(EpollArg {
                        events: a.int()?,
                        data: a.int()? as u64,
                    })
                },
            },
            "epoll_wait" => Op::EpollWait {
                epfd: a.fd()?,
                maxevents: a.int()?,
                timeout_ms: a.int()?,
            },
            "eventfd2" => Op::Eventfd2 {
                initval: a.int()?,
                flags: a.int()?,
            },
            "inotify_init1" => Op::InotifyInit1 { flags: a.int()? },
            "inotify_add_watch" => Op::InotifyAddWatch {
                fd: a.fd()?,
                path: a.path()?,
                mask: a.int()?,
            },
            "inotify_rm_watch" => Op::InotifyRmWatch {
                fd: a.fd()?,
                wd: a.int()?,
            },
            "inotify_read" => Op::InotifyRead {
                fd: a.fd()?,
                bufsize: a.opt_count(DEFAULT_BUF)?,
            },
            "fanotify_init" => Op::FanotifyInit {
                flags: a.int()?,
                event_f_flags: a.int()?,
            },
            "fanotify_mark" => Op::FanotifyMark {
                fd: a.fd()?,
                flags: a.int()?,
                mask: a.int()?,
                dirfd: a.fd()?,
                path: a.nullable()?,
            },
            "fanotify_read" => {
                let fd = a.fd()?;
                let bufsize = a.opt_count(DEFAULT_BUF)?;
                let keep = match a.more() {
                    false => false,
                    true => match a.word()?.as_str() {
                        "keep" => true,
                        w => return Err(format!("`{w}` is not `keep`")),
                    },
                };
                Op::FanotifyRead { fd, bufsize, keep }
            }
            "splice" => Op::Splice {
                fd_in: a.fd()?,
                off_in: a.opt_offset()?,
                fd_out: a.fd()?,
                off_out: a.opt_offset()?,
                len: a.int()? as u64,
                flags: a.int()?,
            },
            "tee" => Op::Tee {
                fd_in: a.fd()?,
                fd_out: a.fd()?,
                len: a.int()? as u64,
                flags: a.int()?,
            },
            "sendfile" => Op::Sendfile {
                out_fd: a.fd()?,
                in_fd: a.fd()?,
                off: a.opt_offset()?,
                count: a.int()? as u64,
            },
            "fdatasync" => Op::Fdatasync { fd: a.fd()? },
            "dup" => Op::Dup { fd: a.fd()? },
            "dup2" => Op::Dup2 {
                fd: a.fd()?,
                newfd: a.fd()?,
            },
            "dup3" => Op::Dup3 {
                fd: a.fd()?,
                newfd: a.fd()?,
                flags: a.int()?,
            },
            "fcntl" => {
                let fd = a.fd()?;
                let cmd = match a.word()?.as_str() {
                    "F_DUPFD" => Fcntl::DupFd(a.int()? as i32),
                    "F_DUPFD_CLOEXEC" => Fcntl::DupFdCloexec(a.int()? as i32),
                    "F_GETFD" => Fcntl::GetFd,
                    "F_SETFD" => Fcntl::SetFd(a.int()? as i32),
                    "F_GETFL" => Fcntl::GetFl,
                    "F_SETFL" => Fcntl::SetFl(a.int()? as i32),
                    "F_SETPIPE_SZ" => Fcntl::SetPipeSz(a.int()?),
                    "F_GETPIPE_SZ" => Fcntl::GetPipeSz,
                    other => match LockCmd::ALL.iter().find(|(_, n)| *n == other) {
                        Some(&(lock, _)) => Fcntl::Lock(
                            lock,
                            FlockArg {
                                l_type: a.int()?,
                                whence: a.int()?,
                                start: a.int()?,
                                len: a.int()?,
                                pid: a.opt_int(0)?,
                            },
                        ),
                        None => return Err(format!("unknown fcntl command {other}")),
                    },
                };
                Op::Fcntl { fd, cmd }
            }
            "mkdir" => Op::Mkdirat {
                dirfd: cwd(),
                path: a.path()?,
                mode: a.int()?,
            },
            "mkdirat" => Op::Mkdirat {
                dirfd: a.fd()?,
                path: a.path()?,
                mode: a.int()?,
            },
            "mknod" => Op::Mknod {
                path: a.path()?,
                mode: a.int()?,
                dev: a.int()? as u64,
            },
            "unlink" => Op::Unlinkat {
                dirfd: cwd(),
                path: a.path()?,
                flags: 0,
            },
            "rmdir" => Op::Unlinkat {
                dirfd: cwd(),
                path: a.path()?,
                flags: 0x200,
            },
            "unlinkat" => Op::Unlinkat {
                dirfd: a.fd()?,
                path: a.path()?,
                flags: a.int()?,
            },
            "rename" => Op::Renameat2 {
                olddirfd: cwd(),
                old: a.path()?,
                newdirfd: cwd(),
                new: a.path()?,
                flags: a.opt_int(0)?,
            },
            "renameat2" => Op::Renameat2 {
                olddirfd: a.fd()?,
                old: a.path()?,
                newdirfd: a.fd()?,
                new: a.path()?,
                flags: a.int()?,
            },
            "link" => Op::Linkat {
                olddirfd: cwd(),
                old: a.path()?,
                newdirfd: cwd(),
                new: a.path()?,
                flags: 0,
            },
            "linkat" => Op::Linkat {
                olddirfd: a.fd()?,
                old: a.path()?,
                newdirfd: a.fd()?,
                new: a.path()?,
                flags: a.int()?,
            },
            "symlink" => Op::Symlink {
                target: a.path()?,
                path: a.path()?,
            },
            "readlink" => Op::Readlinkat {
                dirfd: cwd(),
                path: a.path()?,
                count: a.opt_count(DEFAULT_BUF)?,
            },
            "readlinkat" => Op::Readlinkat {
                dirfd: a.fd()?,
                path: a.path()?,
                count: a.count()?,
            },
            "stat" => Op::Fstatat {
                dirfd: cwd(),
                path: a.path()?,
                flags: 0,
            },
            "lstat" => Op::Fstatat {
                dirfd: cwd(),
                path: a.path()?,
                flags: 0x100,
            },
            "fstat" => Op::Fstat { fd: a.fd()? },
            "fstatat" => Op::Fstatat {
                dirfd: a.fd()?,
                path: a.path()?,
                flags: a.int()?,
            },
            "statx" => Op::Statx {
                dirfd: a.fd()?,
                path: a.path()?,
                flags: a.int()?,
                mask: a.int()?,
            },
            "chmod" => Op::Fchmodat {
                dirfd: cwd(),
                path: a.path()?,
                mode: a.int()?,
                flags: 0,
            },
            "fchmod" => Op::Fchmod {
                fd: a.fd()?,
                mode: a.int()?,
            },
            "fchmodat" => Op::Fchmodat {
                dirfd: a.fd()?,
                path: a.path()?,
                mode: a.int()?,
                flags: a.int()?,
            },
            "chown" => Op::Fchownat {
                dirfd: cwd(),
                path: a.path()?,
                uid: a.int()?,
                gid: a.int()?,
                flags: 0,
            },
            "lchown" => Op::Fchownat {
                dirfd: cwd(),
                path: a.path()?,
                uid: a.int()?,
                gid: a.int()?,
                flags: 0x100,
            },
            "fchown" => Op::Fchown {
                fd: a.fd()?,
                uid: a.int()?,
                gid: a.int()?,
            },
            "fchownat" => Op::Fchownat {
                dirfd: a.fd()?,
                path: a.path()?,
                uid: a.int()?,
                gid: a.int()?,
                flags: a.int()?,
            },
            "utimens" => Op::Utimensat {
                dirfd: cwd(),
                path: Some(a.path()?),
                times: Some([a.time()?, a.time()?]),
                flags: a.opt_int(0)?,
            },
            "utimens_now" => Op::Utimensat {
                dirfd: cwd(),
                path: Some(a.path()?),
                times: None,
                flags: 0,
            },
            "futimens" => Op::Utimensat {
                dirfd: a.fd()?,
                path: None,
                times: Some([a.time()?, a.time()?]),
                flags: 0,
            },
            "utimensat" => {
                let dirfd = a.fd()?;
                let path = a.nullable()?;
                let times = if a.remaining() > 2 {
                    Some([a.time()?, a.time()?])
                } else {
                    let dash = a.word()?;
                    if dash != "-" {
                        return Err(format!("times are ATIME MTIME or -, not {dash}"));
                    }
                    None
                };
                Op::Utimensat {
                    dirfd,
                    path,
                    times,
                    flags: a.int()?,
                }
            }
            "access" => Op::Faccessat2 {
                dirfd: cwd(),
                path: a.path()?,
                mode: a.int()?,
                flags: a.opt_int(0)?,
            },
            "faccessat2" => Op::Faccessat2 {
                dirfd: a.fd()?,
                path: a.path()?,
                mode: a.int()?,
                flags: a.int()?,
            },
            "getdents" => Op::Getdents {
                fd: a.fd()?,
                bufsize: a.opt_count(DEFAULT_BUF)?,
            },
            "listdir" => Op::Listdir { path: a.path()? },
            "chdir" => Op::Chdir { path: a.path()? },
            "fchdir" => Op::Fchdir { fd: a.fd()? },
            "getcwd" => Op::Getcwd {
                size: a.opt_count(DEFAULT_BUF)?,
            },
            "chroot" => Op::Chroot { path: a.path()? },
            "umask" => Op::Umask { mask: a.int()? },
            "setxattr" | "lsetxattr" | "fsetxattr" => Op::Setxattr {
                target: a.xattr_target(word)?,
                name: a.path()?,
                value: a.data()?,
                flags: a.opt_int(0)?,
            },
            "getxattr" | "lgetxattr" | "fgetxattr" => Op::Getxattr {
                target: a.xattr_target(word)?,
                name: a.path()?,
                size: a.opt_count(DEFAULT_BUF)?,
            },
            "listxattr" | "llistxattr" | "flistxattr" => Op::Listxattr {
                target: a.xattr_target(word)?,
                size: a.opt_count(DEFAULT_BUF)?,
            },
            "removexattr" | "lremovexattr" | "fremovexattr" => Op::Removexattr {
                target: a.xattr_target(word)?,
                name: a.path()?,
            },
            "statfs" => Op::Statfs { path: a.path()? },
            "fstatfs" => Op::Fstatfs { fd: a.fd()? },
            "statmount" => Op::Statmount { path: a.path()? },
            "mount" => Op::Mount {
                src: a.nullable()?,
                target: a.path()?,
                fstype: a.nullable()?.map(utf8).transpose()?,
                flags: a.int()? as u64,
                data: a.nullable()?.map(utf8).transpose()?,
            },
            "umount2" => Op::Umount2 {
                target: a.path()?,
                flags: a.int()?,
            },
            "setrlimit_nofile" => Op::SetrlimitNofile {
                limit: a.int()? as u64,
            },
            "as" => {
                let uid = a.int()? as u32;
                let gid = a.int()? as u32;
                let groups = if a.more() {
                    a.list()?.into_iter().map(|g| g as u32).collect()
                } else {
                    Vec::new()
                };
                Op::As { uid, gid, groups }
            }
            "task" => {
                let id = a.int()?;
                let id = u32::try_from(id)
                    .ok()
                    .filter(|i| (1..=MAX_TASKS).contains(i))
                    .ok_or_else(|| format!("task numbers are 1 to {MAX_TASKS}, not {id}"))?;
                let start = if a.more() {
                    Some(match a.word()?.as_str() {
                        "fork" => TaskStart::Fork,
                        "thread" => TaskStart::Thread,
                        other => return Err(format!("`task N` takes fork or thread, not {other}")),
                    })
                } else {
                    None
                };
                Op::Task { id, start }
            }
            "snapshot" => Op::Snapshot,
            other => return Err(format!("unknown op `{other}`")),
        };
        a.done()?;
        Ok((op, a.vars))
    }
}

fn utf8(b: Vec<u8>) -> Result<String, String> {
    String::from_utf8(b).map_err(|_| "mount type and data must be UTF-8".to_string())
}

/// A cursor over the arguments of one op.
struct Args<'a> {
    toks: &'a [Token],
    i: usize,
    /// The `$NAME` variables read so far.
    vars: Vec<String>,
}

impl Args<'_> {
    fn more(&self) -> bool {
        self.i < self.toks.len()
    }

    fn remaining(&self) -> usize {
        self.toks.len() - self.i
    }

    fn next(&mut self) -> Result<&Token, String> {
        let t = self.toks.get(self.i).ok_or("missing argument")?;
        self.i += 1;
        Ok(t)
    }

    fn done(&self) -> Result<(), String> {
        match self.toks.get(self.i) {
            None => Ok(()),
            Some(t) => Err(format!("unexpected argument `{}`", t.text())),
        }
    }

    fn word(&mut self) -> Result<String, String> {
        Ok(self.next()?.text())
    }

    fn path(&mut self) -> Result<Vec<u8>, String> {
        Ok(self.next()?.bytes.clone())
    }

    /// A path, or `None` for `-`.
    fn nullable(&mut self) -> Result<Option<Vec<u8>>, String> {
        let t = self.next()?;
        Ok(if !t.quoted && t.bytes == b"-" {
            None
        } else {
            Some(t.bytes.clone())
        })
    }

    fn int(&mut self) -> Result<i64, String> {
        value(&self.word()?)
    }

    fn opt_int(&mut self, default: i64) -> Result<i64, String> {
        if self.more() {
            self.int()
        } else {
            Ok(default)
        }
    }

    fn count(&mut self) -> Result<usize, String> {
        let v = self.int()?;
        usize::try_from(v).map_err(|_| format!("count {v} is negative"))
    }

    fn opt_count(&mut self, default: usize) -> Result<usize, String> {
        if self.more() {
            self.count()
        } else {
            Ok(default)
        }
    }

    /// `A,B,C`: a comma-separated list of numbers.
    fn list(&mut self) -> Result<Vec<i64>, String> {
        self.word()?.split(',').map(value).collect()
    }

    /// `A,B,C`: buffer sizes (a negative one is an error, as for a single count).
    fn counts(&mut self) -> Result<Vec<usize>, String> {
        self.list()?
            .into_iter()
            .map(|v| usize::try_from(v).map_err(|_| format!("count {v} is negative")))
            .collect()
    }

    /// Buffer sizes, or none when the line ends here (an empty vector).
    fn opt_counts(&mut self) -> Result<Vec<usize>, String> {
        if self.more() {
            self.counts()
        } else {
            Ok(Vec::new())
        }
    }

    /// A number, or `-` for a null offset pointer (`splice`, `sendfile`).
    fn opt_offset(&mut self) -> Result<Option<i64>, String> {
        let w = self.word()?;
        if w == "-" {
            return Ok(None);
        }
        value(&w).map(Some)
    }

    /// A number, or `@NAME` / `@ NAME` (NAME a bare word or a quoted string).
    fn offset(&mut self) -> Result<Offset, String> {
        let t = self.next()?;
        if t.quoted || t.bytes.first() != Some(&b'@') {
            return Ok(Offset::Raw(value(&t.text())?));
        }
        if t.bytes.len() > 1 {
            return Ok(Offset::AfterEntry(t.bytes[1..].to_vec()));
        }
        Ok(Offset::AfterEntry(self.path()?))
    }

    /// An unquoted `-` (a null argument), taken if it is next.
    fn dash(&mut self) -> bool {
        let dash = self
            .toks
            .get(self.i)
            .is_some_and(|t| !t.quoted && t.bytes == b"-");
        if dash {
            self.i += 1;
        }
        dash
    }

    /// `FD=EVENTS` of `poll`.
    fn poll_fd(&mut self) -> Result<(Fd, i64), String> {
        let w = self.word()?;
        let (fd, events) = w
            .split_once('=')
            .ok_or_else(|| format!("`{w}` is not FD=EVENTS"))?;
        Ok((self.fd_word(fd)?, value(events)?))
    }

    fn fd(&mut self) -> Result<Fd, String> {
        let w = self.word()?;
        self.fd_word(&w)
    }

    fn fd_word(&mut self, w: &str) -> Result<Fd, String> {
        match w.strip_prefix('$') {
            Some(name) if !name.is_empty() => {
                self.vars.push(name.to_string());
                Ok(Fd::Var(name.to_string()))
            }
            Some(_) => Err("`$` needs a name".into()),
            None => Ok(Fd::Raw(value(w)? as i32)),
        }
    }

    fn data(&mut self) -> Result<Vec<u8>, String> {
        let t = self.next()?;
        if t.quoted {
            return Ok(t.bytes.clone());
        }
        let w = t.text();
        let (kind, n) = w
            .split_once(':')
            .ok_or_else(|| format!("data `{w}` must be quoted, zeros:N or pattern:N"))?;
        if kind == "u64" {
            // Eight bytes in the machine's order: an eventfd's counter value.
            return Ok((value(n)? as u64).to_ne_bytes().to_vec());
        }
        let n: usize = n.parse().map_err(|_| format!("bad length in `{w}`"))?;
        match kind {
            "zeros" => Ok(vec![0; n]),
            "pattern" => Ok((0..n).map(|i| (i % 251) as u8).collect()),
            _ => Err(format!("data `{w}` must be quoted, zeros:N or pattern:N")),
        }
    }

    fn time(&mut self) -> Result<Time, String> {
        let w = self.word()?;
        match w.as_str() {
            "NOW" => Ok(Time {
                sec: 0,
                nsec: Time::UTIME_NOW,
            }),
            "OMIT" => Ok(Time {
                sec: 0,
                nsec: Time::UTIME_OMIT,
            }),
            _ => {
                let (s, ns) = w.split_once('.').unwrap_or((&w, "0"));
                Ok(Time {
                    sec: value(s)?,
                    nsec: value(ns)?,
                })
            }
        }
    }

    fn xattr_target(&mut self, word: &str) -> Result<XattrTarget, String> {
        // The prefix is what precedes the call's own name: `listxattr` starts with an `l` but
        // is the following call, `llistxattr` the non-following one.
        let base = ["setxattr", "getxattr", "listxattr", "removexattr"]
            .into_iter()
            .find(|b| word.ends_with(b))
            .unwrap_or(word);
        Ok(match &word[..word.len() - base.len()] {
            "l" => XattrTarget::Link(self.path()?),
            "f" => XattrTarget::File(self.fd()?),
            _ => XattrTarget::Path(self.path()?),
        })
    }
}

/// Parses `A|B|C` where each part is a symbolic constant or a number (decimal, `0o17`, `017`,
/// `0x1f`, negative allowed).
///
/// # Errors
/// A message naming the part that is neither.
pub fn value(word: &str) -> Result<i64, String> {
    let mut acc = 0i64;
    for part in word.split('|') {
        acc |= names::constant(part)
            .or_else(|| number(part))
            .ok_or_else(|| format!("`{part}` is not a number or a known constant"))?;
    }
    Ok(acc)
}

fn number(s: &str) -> Option<i64> {
    let (neg, digits) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s),
    };
    let v = if let Some(h) = digits.strip_prefix("0x") {
        u64::from_str_radix(h, 16).ok()? as i64
    } else if let Some(o) = digits.strip_prefix("0o") {
        u64::from_str_radix(o, 8).ok()? as i64
    } else if digits.len() > 1 && digits.starts_with('0') {
        u64::from_str_radix(&digits[1..], 8).ok()? as i64
    } else {
        digits.parse::<u64>().ok()? as i64
    };
    Some(if neg { v.wrapping_neg() } else { v })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lex::tokenize;

    fn op(line: &str) -> Result<Op, String> {
        let t = tokenize(line).expect("tokens");
        Op::parse(&t[0].text(), &t[1..]).map(|(op, _)| op)
    }

    #[test]
    fn xattr_calls_name_their_target_by_prefix() {
        for base in [
            "setxattr /a user.x \"v\"",
            "getxattr /a user.x",
            "listxattr /a",
            "removexattr /a user.x",
        ] {
            let target = |line: &str| match op(line).expect(line) {
                Op::Setxattr { target, .. }
                | Op::Getxattr { target, .. }
                | Op::Listxattr { target, .. }
                | Op::Removexattr { target, .. } => target,
                other => panic!("{line}: {other:?}"),
            };
            assert_eq!(target(base), XattrTarget::Path(b"/a".to_vec()), "{base}");
            assert_eq!(
                target(&format!("l{base}")),
                XattrTarget::Link(b"/a".to_vec()),
                "l{base}"
            );
            let f = format!("f{}", base.replacen("/a", "$f", 1));
            assert_eq!(target(&f), XattrTarget::File(Fd::Var("f".into())), "{f}");
        }
    }

    #[test]
    fn numbers_take_every_base_and_flags_combine() {
        assert_eq!(value("0755"), Ok(0o755));
        assert_eq!(value("0o755"), Ok(0o755));
        assert_eq!(value("0x1f"), Ok(31));
        assert_eq!(value("-1"), Ok(-1));
        assert_eq!(value("O_CREAT|O_WRONLY|0x8000"), Ok(0o100 | 1 | 0x8000));
        assert!(value("O_BOGUS").is_err());
    }

    #[test]
    fn ops_parse_with_defaults_and_reject_extra_arguments() {
        assert_eq!(
            op("open /a O_RDONLY"),
            Ok(Op::Open {
                path: b"/a".to_vec(),
                flags: 0,
                mode: 0
            })
        );
        assert_eq!(
            op("write $f pattern:3"),
            Ok(Op::Write {
                fd: Fd::Var("f".into()),
                data: vec![0, 1, 2]
            })
        );
        assert_eq!(
            op("readlink /l"),
            Ok(Op::Readlinkat {
                dirfd: Fd::Raw(-100),
                path: b"/l".to_vec(),
                count: 4096
            })
        );
        assert!(op("close $f 3").is_err());
        assert!(op("read $f -1").is_err());
        assert!(op("write $f bare").is_err());
    }

    #[test]
    fn times_and_null_arguments() {
        let t = op("utimens /a NOW 5.7").expect("parses");
        assert!(matches!(
            t,
            Op::Utimensat {
                times: Some([
                    Time {
                        nsec: Time::UTIME_NOW,
                        ..
                    },
                    Time { sec: 5, nsec: 7 }
                ]),
                ..
            }
        ));
        let m = op("mount - /m tmpfs 0 -").expect("parses");
        assert!(matches!(
            m,
            Op::Mount {
                src: None,
                fstype: Some(_),
                data: None,
                ..
            }
        ));
    }
}
