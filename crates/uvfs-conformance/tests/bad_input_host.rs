//! The bad-input storm's errno table, checked against the host kernel: the same seeded calls
//! as `crates/uvfs/tests/bad_input.rs` (tests/storm there), run through raw system calls on a
//! private tmpfs by a thread that entered its own mount namespace (`host::sandbox::enter`,
//! `unshare(CLONE_NEWNS)` for that thread only) and then dropped to uid 1000. Every hostile
//! call must fail with the errno the table gives, every well-formed call must succeed (or,
//! on a scratch name, fail with an errno that depends on earlier calls).
//!
//! Needs root (the sandbox mounts); without it the test says "skipped" and passes, unless `CI`
//! is set, where it fails.

#[path = "../../uvfs/tests/storm/mod.rs"]
mod storm;

use std::collections::BTreeMap;
use std::io::{IoSlice, IoSliceMut};

use storm::{Call, DirArg, Exec, FdArg, Hostile, NewFd, Obj, Op, Setup, XAt};
use uvfs::Errno;
use uvfs_conformance::host::sandbox;
use uvfs_conformance::host::sys::{self, CPath, OpenHow, SysResult, XattrAt};

const AT_FDCWD: i32 = -100;
/// The fd `dup2`/`dup3` target (free in this process).
const SCRATCH_FD: i32 = 900;
const RLIMIT_NOFILE: u32 = 7;

/// The host side of the storm.
struct OnHost {
    fds: BTreeMap<Obj, i32>,
    nofile: (u64, u64),
}

fn c(p: &[u8]) -> CPath {
    CPath::new(p)
}

fn errno(e: i32) -> Errno {
    Errno::from_raw(e).expect("a kernel errno")
}

fn unit(r: SysResult) -> Result<(), Errno> {
    r.map(drop).map_err(errno)
}

impl OnHost {
    fn fd(&self, a: &FdArg) -> i32 {
        match a {
            FdArg::Obj(o) => self.fds[o],
            FdArg::Bad(n) => *n,
            FdArg::Fresh => unreachable!("close makes its own fresh fd"),
        }
    }

    fn dirfd(&self, a: &DirArg) -> i32 {
        match a {
            DirArg::Cwd => AT_FDCWD,
            DirArg::Fd(f) => self.fd(f),
        }
    }

    fn closing(r: SysResult) -> Result<(), Errno> {
        let fd = r.map_err(errno)?;
        sys::close(fd as i32).expect("close the fd the call made");
        Ok(())
    }

    fn xat<'a>(&self, at: &XAt, path: &'a Option<CPath>) -> XattrAt<'a> {
        match (at, path) {
            (XAt::Path(_), Some(p)) => XattrAt::Path(p),
            (XAt::Link(_), Some(p)) => XattrAt::Link(p),
            (XAt::Fd(f), _) => XattrAt::File(self.fd(f)),
            _ => unreachable!("a path target has its path"),
        }
    }
}

fn xpath(at: &XAt) -> Option<CPath> {
    match at {
        XAt::Path(p) | XAt::Link(p) => Some(c(p)),
        XAt::Fd(_) => None,
    }
}

impl Exec for OnHost {
    fn setup(&mut self, step: Setup) {
        match step {
            Setup::Mkdir(p, mode) => sys::mkdirat(AT_FDCWD, &c(p), mode).map(drop),
            Setup::Create(p, mode, data) => {
                let flags = libc::O_CREAT | libc::O_EXCL | libc::O_WRONLY;
                let fd = sys::openat(AT_FDCWD, &c(p), flags, mode).expect("create") as i32;
                assert_eq!(sys::write(fd, data), Ok(data.len() as i64));
                sys::close(fd).map(drop)
            }
            Setup::Chown(p, u, g) => sys::fchownat(AT_FDCWD, &c(p), u, g, 0).map(drop),
            Setup::Symlink(t, p) => sys::symlinkat(&c(t), AT_FDCWD, &c(p)).map(drop),
            Setup::Mount(p, opts) => {
                let tmpfs = c(b"tmpfs");
                sys::mount(Some(&tmpfs), &c(p), Some(&tmpfs), 0, Some(&c(opts))).map(drop)
            }
            Setup::Xattr(p, name, value) => {
                let path = c(p);
                sys::setxattr(XattrAt::Path(&path), &c(name), value, 0).map(drop)
            }
            Setup::Fill(p) => {
                let fd = sys::openat(AT_FDCWD, &c(p), libc::O_WRONLY, 0).expect("open") as i32;
                let page = [b'F'; 4096];
                let mut off = 0i64;
                loop {
                    match sys::pwrite(fd, &page, off) {
                        Ok(n) => off += n,
                        Err(e) => {
                            assert_eq!(e, libc::ENOSPC, "filling the blocks");
                            break;
                        }
                    }
                }
                sys::close(fd).expect("close");
                let dir = &p[..p.iter().rposition(|&b| b == b'/').expect("a parent")];
                for i in 0.. {
                    let mut name = dir.to_vec();
                    name.extend_from_slice(format!("/x{i}").as_bytes());
                    if let Err(e) = sys::mkdirat(AT_FDCWD, &c(&name), 0o755) {
                        assert_eq!(e, libc::ENOSPC, "filling the inodes");
                        break;
                    }
                }
                Ok(())
            }
            Setup::BecomeUser => sys::setresgid(1000, 1000, 1000)
                .and_then(|_| sys::setresuid(1000, 1000, 1000))
                .and_then(|_| sys::chdir(&c(b"/d")))
                .map(drop),
        }
        .unwrap_or_else(|e| panic!("setup {step:?}: {:?}", errno(e)));
    }

    fn open_objs(&mut self) {
        for o in Obj::ALL {
            let (path, flags) = o.open();
            let fd = sys::openat(AT_FDCWD, &c(path), flags.bits() as i32, 0)
                .unwrap_or_else(|e| panic!("open {o:?}: {:?}", errno(e)));
            self.fds.insert(o, fd as i32);
        }
        sys::umask(0o022).expect("umask");
    }

    fn run(&mut self, op: &Op) -> Result<(), Errno> {
        match op {
            Op::Openat {
                dir,
                path,
                flags,
                mode,
            } => Self::closing(sys::openat(self.dirfd(dir), &c(path), *flags as i32, *mode)),
            Op::Openat2 {
                dir,
                path,
                flags,
                mode,
                resolve,
            } => {
                let how = OpenHow {
                    flags: *flags,
                    mode: *mode,
                    resolve: *resolve,
                };
                Self::closing(sys::openat2(self.dirfd(dir), &c(path), &how))
            }
            Op::Close { fd: FdArg::Fresh } => {
                let fd = sys::dup(self.fds[&Obj::FileRo]).expect("a fresh fd");
                unit(sys::close(fd as i32))
            }
            Op::Close { fd } => unit(sys::close(self.fd(fd))),
            Op::Read { fd, len } => unit(sys::read(self.fd(fd), &mut vec![0; *len])),
            Op::Pread { fd, len, off } => unit(sys::pread(self.fd(fd), &mut vec![0; *len], *off)),
            Op::Readv {
                fd,
                iovs,
                off: None,
            } => {
                let mut bufs = vec![[0u8; 4]; *iovs];
                let mut iov: Vec<IoSliceMut<'_>> =
                    bufs.iter_mut().map(|b| IoSliceMut::new(b)).collect();
                unit(sys::readv(self.fd(fd), &mut iov))
            }
            Op::Write { fd, len } => unit(sys::write(self.fd(fd), &vec![b'w'; *len])),
            Op::Pwrite { fd, len, off } => unit(sys::pwrite(self.fd(fd), &vec![b'w'; *len], *off)),
            Op::Writev {
                fd,
                iovs,
                off: None,
            } => {
                let bufs = vec![*b"wxyz"; *iovs];
                let iov: Vec<IoSlice<'_>> = bufs.iter().map(|b| IoSlice::new(b)).collect();
                unit(sys::writev(self.fd(fd), &iov))
            }
            Op::Readv { .. } | Op::Writev { .. } => unreachable!("skipped"),
            Op::Lseek { fd, off, whence } => unit(sys::lseek(self.fd(fd), *off, *whence)),
            Op::Fsync { fd } => unit(sys::fsync(self.fd(fd))),
            Op::Fdatasync { fd } => unit(sys::fdatasync(self.fd(fd))),
            Op::Fallocate { fd, mode, off, len } => {
                unit(sys::fallocate(self.fd(fd), *mode as i32, *off, *len))
            }
            Op::Ftruncate { fd, len } => unit(sys::ftruncate(self.fd(fd), *len)),
            Op::Truncate { path, len } => unit(sys::truncate(&c(path), *len)),
            Op::Dup { fd } => Self::closing(sys::dup(self.fd(fd))),
            Op::Dup2 { fd, new } => {
                let n = match new {
                    NewFd::Scratch => SCRATCH_FD,
                    NewFd::Bad(n) => *n,
                };
                Self::closing(sys::dup2(self.fd(fd), n))
            }
            Op::Dup3 {
                fd,
                new,
                flags,
                same,
            } => {
                let old = self.fd(fd);
                let n = match (new, same) {
                    (_, true) => old,
                    (NewFd::Scratch, false) => SCRATCH_FD,
                    (NewFd::Bad(n), false) => *n,
                };
                let r = sys::dup3(old, n, *flags as i32);
                if *same {
                    unit(r)
                } else {
                    Self::closing(r)
                }
            }
            Op::DupFd { fd, min } => Self::closing(sys::fcntl(
                self.fd(fd),
                libc::F_DUPFD_CLOEXEC,
                i64::from(*min),
            )),
            Op::GetFl { fd } => unit(sys::fcntl(self.fd(fd), libc::F_GETFL, 0)),
            Op::SetFl { fd, flags } => {
                unit(sys::fcntl(self.fd(fd), libc::F_SETFL, i64::from(*flags)))
            }
            Op::Mkdirat { dir, path, mode } => unit(sys::mkdirat(self.dirfd(dir), &c(path), *mode)),
            Op::Mknodat {
                dir,
                path,
                mode,
                dev,
            } => unit(sys::mknodat(self.dirfd(dir), &c(path), *mode, *dev)),
            Op::Symlinkat { target, dir, path } => {
                unit(sys::symlinkat(&c(target), self.dirfd(dir), &c(path)))
            }
            Op::Linkat {
                odir,
                old,
                ndir,
                new,
                flags,
            } => unit(sys::linkat(
                self.dirfd(odir),
                &c(old),
                self.dirfd(ndir),
                &c(new),
                *flags as i32,
            )),
            Op::Unlinkat { dir, path, flags } => {
                unit(sys::unlinkat(self.dirfd(dir), &c(path), *flags as i32))
            }
            Op::Renameat2 {
                odir,
                old,
                ndir,
                new,
                flags,
            } => unit(sys::renameat2(
                self.dirfd(odir),
                &c(old),
                self.dirfd(ndir),
                &c(new),
                *flags,
            )),
            Op::Readlinkat { dir, path, size } => unit(sys::readlinkat(
                self.dirfd(dir),
                &c(path),
                &mut vec![0; *size],
            )),
            Op::Fstatat { dir, path, flags } => {
                sys::fstatat(self.dirfd(dir), &c(path), *flags as i32)
                    .map(drop)
                    .map_err(errno)
            }
            Op::Fstat { fd } => sys::fstat(self.fd(fd)).map(drop).map_err(errno),
            Op::Statx {
                dir,
                path,
                flags,
                mask,
            } => sys::statx(self.dirfd(dir), &c(path), *flags as i32, *mask)
                .map(drop)
                .map_err(errno),
            Op::Statfs { path } => sys::statfs(&c(path)).map(drop).map_err(errno),
            Op::Fstatfs { fd } => sys::fstatfs(self.fd(fd)).map(drop).map_err(errno),
            Op::Fchmodat {
                dir,
                path,
                mode,
                flags,
            } => unit(sys::fchmodat2(self.dirfd(dir), &c(path), *mode, *flags)),
            Op::Fchmod { fd, mode } => unit(sys::fchmod(self.fd(fd), *mode)),
            Op::Fchownat {
                dir,
                path,
                uid,
                gid,
                flags,
            } => unit(sys::fchownat(
                self.dirfd(dir),
                &c(path),
                uid.unwrap_or(u32::MAX),
                gid.unwrap_or(u32::MAX),
                *flags as i32,
            )),
            Op::Fchown { fd, uid, gid } => unit(sys::fchown(
                self.fd(fd),
                uid.unwrap_or(u32::MAX),
                gid.unwrap_or(u32::MAX),
            )),
            Op::Utimensat {
                dir,
                path,
                times,
                flags,
            } => {
                let ts = times.map(|(s, ns)| libc::timespec {
                    tv_sec: s,
                    tv_nsec: ns,
                });
                let path = path.as_deref().map(c);
                unit(sys::utimensat(
                    self.dirfd(dir),
                    path.as_ref(),
                    Some(&ts),
                    *flags as i32,
                ))
            }
            Op::Faccessat2 {
                dir,
                path,
                mode,
                flags,
            } => unit(sys::faccessat2(
                self.dirfd(dir),
                &c(path),
                *mode as i32,
                *flags as i32,
            )),
            Op::Getdents { fd, size } => {
                let fd = self.fd(fd);
                let _ = sys::lseek(fd, 0, 0);
                unit(sys::getdents64(fd, &mut vec![0; *size]))
            }
            Op::Chdir { path } => unit(sys::chdir(&c(path))),
            Op::Fchdir { fd } => unit(sys::fchdir(self.fd(fd))),
            Op::Chroot { path } => unit(sys::chroot(&c(path))),
            Op::Umask { mask } => unit(sys::umask(*mask)),
            Op::Getcwd { size } => unit(sys::getcwd(&mut vec![0; *size])),
            Op::Setxattr {
                at,
                name,
                len,
                flags,
            } => {
                let p = xpath(at);
                unit(sys::setxattr(
                    self.xat(at, &p),
                    &c(name),
                    &vec![b'v'; *len],
                    *flags as i32,
                ))
            }
            Op::Getxattr { at, name, size } => {
                let p = xpath(at);
                unit(sys::getxattr(
                    self.xat(at, &p),
                    &c(name),
                    &mut vec![0; *size],
                ))
            }
            Op::Listxattr { at, size } => {
                let p = xpath(at);
                unit(sys::listxattr(self.xat(at, &p), &mut vec![0; *size]))
            }
            Op::Removexattr { at, name } => match (at, xpath(at)) {
                (XAt::Path(_), Some(p)) => unit(sys::removexattr(&p, &c(name))),
                (XAt::Link(_), Some(p)) => unit(sys::lremovexattr(&p, &c(name))),
                (XAt::Fd(f), _) => unit(sys::fremovexattr(self.fd(f), &c(name))),
                _ => unreachable!("a path target has its path"),
            },
            Op::Mount { target, flags } => {
                let tmpfs = c(b"tmpfs");
                unit(sys::mount(
                    Some(&c(b"none")),
                    &c(target),
                    Some(&tmpfs),
                    *flags,
                    None,
                ))
            }
            Op::Umount2 { target, flags } => unit(sys::umount2(&c(target), *flags as i32)),
        }
    }

    fn exhaust_fds(&mut self, on: bool) {
        let soft = if on {
            let lowest = sys::dup(self.fds[&Obj::FileRo]).expect("a free fd");
            sys::close(lowest as i32).expect("close");
            lowest as u64
        } else {
            self.nofile.0
        };
        sys::setrlimit(RLIMIT_NOFILE, soft, self.nofile.1).expect("setrlimit");
    }

    fn skip(&self, call: &Call) -> Option<&'static str> {
        if call.hostile == Some(Hostile::Nul) {
            return Some(
                "a NUL inside a path or name: the kernel reads a C string and stops at it \
                 (uvfs refuses it, docs/divergences.md)",
            );
        }
        match call.op {
            Op::Readv { off: Some(_), .. } | Op::Writev { off: Some(_), .. } => Some(
                "preadv/pwritev: no raw wrapper in uvfs-conformance's host layer (pread/pwrite \
                 check the same rw_verify_area())",
            ),
            _ => None,
        }
    }
}

/// The storm on the host kernel, in a thread with its own mount namespace and credentials.
fn storm_on_host() -> Result<storm::Tally, String> {
    sandbox::enter(None)?;
    sys::umask(0).expect("umask");
    let nofile = rustix::process::getrlimit(rustix::process::Resource::Nofile);
    let mut h = OnHost {
        fds: BTreeMap::new(),
        nofile: (
            nofile.current.unwrap_or(u64::MAX),
            nofile.maximum.unwrap_or(u64::MAX),
        ),
    };
    storm::prepare(&mut h);
    assert!(
        h.fds.values().all(|&fd| fd < 700),
        "the storm's bad fd numbers must not be open here"
    );
    Ok(storm::run(&mut h, storm::SEED, storm::CALLS))
}

#[test]
fn bad_input_storm_errnos_match_the_host_kernel() {
    if !rustix::process::geteuid().is_root() {
        let why = "skipped: the host side needs root to mount its private tmpfs";
        assert!(std::env::var_os("CI").is_none(), "{why} (CI is set)");
        println!("bad-input storm on the host: {why}");
        return;
    }
    let tally = std::thread::spawn(storm_on_host)
        .join()
        .expect("the host storm must not panic")
        .expect("the sandbox");
    print!("{}", tally.report("bad-input storm on the host kernel"));
    assert!(
        tally.wrong.is_empty(),
        "{} of {} calls: the table disagrees with the host kernel; the first:\n{}",
        tally.wrong.len(),
        tally.ran,
        tally.wrong[..tally.wrong.len().min(40)].join("\n")
    );
    let skipped: usize = tally.skipped.values().sum();
    assert_eq!(tally.ran + skipped, storm::CALLS);
    assert!(
        tally.ran * 10 > storm::CALLS * 9,
        "over 90 % of the calls checked on the host"
    );
    assert_eq!(
        tally.by_family.len(),
        storm::FAMILIES - 2,
        "every family but preadv and pwritev"
    );
}
