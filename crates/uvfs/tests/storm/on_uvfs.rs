//! The storm on uvfs: each [`Op`] through the public `Task` API.

use std::collections::BTreeMap;
use std::io::{IoSlice, IoSliceMut};

use uvfs::abi::{
    AtFlags, FallocFlags, FcntlCmd, MountFlags, OpenFlags, OpenHow, RenameFlags, StatxMask,
    Timespec, UmountFlags, Whence, XattrFlags, AT_FDCWD,
};
use uvfs::{Cred, Errno, Result, Task, Vfs};

use super::{Call, DirArg, Exec, FdArg, NewFd, Obj, Op, Setup, XAt};

/// The fd `dup2`/`dup3` target ([`NewFd::Scratch`]).
const SCRATCH_FD: i32 = 60;
/// The default open file limit the storm task restores.
const NOFILE: u32 = 1024;

/// uvfs with the storm's tree: root builds it, the storm task (uid 1000) calls.
pub struct OnUvfs {
    pub vfs: Vfs,
    pub root: Task,
    /// The storm task, once [`Setup::BecomeUser`] ran.
    pub user: Option<Task>,
    pub fds: BTreeMap<Obj, i32>,
}

impl OnUvfs {
    pub fn new() -> OnUvfs {
        let vfs = Vfs::new();
        let root = vfs.task(Cred::root());
        root.umask(0);
        OnUvfs {
            vfs,
            root,
            user: None,
            fds: BTreeMap::new(),
        }
    }

    /// The task that runs setup steps and calls: the storm task once it exists.
    pub fn task(&self) -> &Task {
        self.user.as_ref().unwrap_or(&self.root)
    }

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

    /// The fds open in the storm task (of the first 128).
    pub fn open_fds(&self) -> Vec<i32> {
        (0..128)
            .filter(|&fd| self.task().fcntl(fd, FcntlCmd::GetFd).is_ok())
            .collect()
    }

    fn closing(&self, r: Result<i32>) -> Result<()> {
        let fd = r?;
        self.task().close(fd).expect("close the fd the call made");
        Ok(())
    }
}

impl Default for OnUvfs {
    fn default() -> Self {
        Self::new()
    }
}

impl Exec for OnUvfs {
    fn setup(&mut self, step: Setup) {
        let t = self.task();
        match step {
            Setup::Mkdir(p, mode) => t.mkdirat(AT_FDCWD, p, mode).expect("mkdir"),
            Setup::Create(p, mode, data) => {
                let fd = t
                    .openat(
                        AT_FDCWD,
                        p,
                        OpenFlags::CREAT | OpenFlags::EXCL | OpenFlags::WRONLY,
                        mode,
                    )
                    .expect("create");
                assert_eq!(t.write(fd, data), Ok(data.len()));
                t.close(fd).expect("close");
            }
            Setup::Chown(p, u, g) => t
                .fchownat(AT_FDCWD, p, Some(u), Some(g), AtFlags::empty())
                .expect("chown"),
            Setup::Symlink(target, p) => t.symlinkat(target, AT_FDCWD, p).expect("symlink"),
            Setup::Mount(p, opts) => {
                let opts = std::str::from_utf8(opts).expect("utf-8 options");
                t.mount(None, p, Some("tmpfs"), MountFlags::empty(), Some(opts))
                    .expect("mount")
            }
            Setup::Xattr(p, name, value) => t
                .setxattr(p, name, value, XattrFlags::empty())
                .expect("setxattr"),
            Setup::Fill(p) => {
                let fd = t
                    .openat(AT_FDCWD, p, OpenFlags::WRONLY, 0)
                    .expect("open to fill");
                let page = [b'F'; 4096];
                let mut off = 0i64;
                loop {
                    match t.pwrite(fd, &page, off) {
                        Ok(n) => off += n as i64,
                        Err(e) => {
                            assert_eq!(e, Errno::ENOSPC, "filling the blocks");
                            break;
                        }
                    }
                }
                t.close(fd).expect("close");
                let dir = &p[..p.iter().rposition(|&b| b == b'/').expect("a parent")];
                for i in 0.. {
                    let mut name = dir.to_vec();
                    name.extend_from_slice(format!("/x{i}").as_bytes());
                    match t.mkdirat(AT_FDCWD, &name, 0o755) {
                        Ok(()) => {}
                        Err(e) => {
                            assert_eq!(e, Errno::ENOSPC, "filling the inodes");
                            break;
                        }
                    }
                }
            }
            Setup::BecomeUser => {
                let u = self.root.fork();
                u.set_cred(Cred::user(1000, 1000, &[]));
                u.chdir("/d").expect("chdir /d");
                self.user = Some(u);
            }
        }
    }

    fn open_objs(&mut self) {
        for o in Obj::ALL {
            let (path, flags) = o.open();
            let fd = self
                .task()
                .openat(AT_FDCWD, path, flags, 0)
                .unwrap_or_else(|e| panic!("open {o:?}: {e:?}"));
            self.fds.insert(o, fd);
        }
        self.task().umask(0o022);
    }

    fn run(&mut self, op: &Op) -> Result<()> {
        let t = self.task();
        let flags = |f: u32| AtFlags::from_bits_retain(f);
        match op {
            Op::Openat {
                dir,
                path,
                flags,
                mode,
            } => self.closing(t.openat(
                self.dirfd(dir),
                path,
                OpenFlags::from_bits_retain(*flags),
                *mode,
            )),
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
                self.closing(t.openat2(self.dirfd(dir), path, &how))
            }
            Op::Close { fd: FdArg::Fresh } => {
                let fd = t.dup(self.fds[&Obj::FileRo]).expect("a fresh fd");
                t.close(fd)
            }
            Op::Close { fd } => t.close(self.fd(fd)),
            Op::Read { fd, len } => t.read(self.fd(fd), &mut vec![0; *len]).map(drop),
            Op::Pread { fd, len, off } => t.pread(self.fd(fd), &mut vec![0; *len], *off).map(drop),
            Op::Readv { fd, iovs, off } => {
                let mut bufs = vec![[0u8; 4]; *iovs];
                let mut iov: Vec<IoSliceMut<'_>> =
                    bufs.iter_mut().map(|b| IoSliceMut::new(b)).collect();
                match off {
                    Some(off) => t.preadv(self.fd(fd), &mut iov, *off),
                    None => t.readv(self.fd(fd), &mut iov),
                }
                .map(drop)
            }
            Op::Write { fd, len } => t.write(self.fd(fd), &vec![b'w'; *len]).map(drop),
            Op::Pwrite { fd, len, off } => t.pwrite(self.fd(fd), &vec![b'w'; *len], *off).map(drop),
            Op::Writev { fd, iovs, off } => {
                let bufs = vec![*b"wxyz"; *iovs];
                let iov: Vec<IoSlice<'_>> = bufs.iter().map(|b| IoSlice::new(b)).collect();
                match off {
                    Some(off) => t.pwritev(self.fd(fd), &iov, *off),
                    None => t.writev(self.fd(fd), &iov),
                }
                .map(drop)
            }
            Op::Lseek { fd, off, whence } => t.lseek(self.fd(fd), *off, Whence(*whence)).map(drop),
            Op::Fsync { fd } => t.fsync(self.fd(fd)),
            Op::Fdatasync { fd } => t.fdatasync(self.fd(fd)),
            Op::Fallocate { fd, mode, off, len } => t.fallocate(
                self.fd(fd),
                FallocFlags::from_bits_retain(*mode),
                *off,
                *len,
            ),
            Op::Ftruncate { fd, len } => t.ftruncate(self.fd(fd), *len),
            Op::Truncate { path, len } => t.truncate(path, *len),
            Op::Dup { fd } => self.closing(t.dup(self.fd(fd))),
            Op::Dup2 { fd, new } => {
                let n = match new {
                    NewFd::Scratch => SCRATCH_FD,
                    NewFd::Bad(n) => *n,
                };
                self.closing(t.dup2(self.fd(fd), n))
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
                let r = t.dup3(old, n, OpenFlags::from_bits_retain(*flags));
                if *same {
                    r.map(drop)
                } else {
                    self.closing(r)
                }
            }
            Op::DupFd { fd, min } => {
                self.closing(t.fcntl(self.fd(fd), FcntlCmd::DupFdCloexec(*min)))
            }
            Op::GetFl { fd } => t.fcntl(self.fd(fd), FcntlCmd::GetFl).map(drop),
            Op::SetFl { fd, flags } => t
                .fcntl(
                    self.fd(fd),
                    FcntlCmd::SetFl(OpenFlags::from_bits_retain(*flags)),
                )
                .map(drop),
            Op::Mkdirat { dir, path, mode } => t.mkdirat(self.dirfd(dir), path, *mode),
            Op::Mknodat {
                dir,
                path,
                mode,
                dev,
            } => t.mknodat(self.dirfd(dir), path, *mode, *dev),
            Op::Symlinkat { target, dir, path } => t.symlinkat(target, self.dirfd(dir), path),
            Op::Linkat {
                odir,
                old,
                ndir,
                new,
                flags: f,
            } => t.linkat(self.dirfd(odir), old, self.dirfd(ndir), new, flags(*f)),
            Op::Unlinkat {
                dir,
                path,
                flags: f,
            } => t.unlinkat(self.dirfd(dir), path, flags(*f)),
            Op::Renameat2 {
                odir,
                old,
                ndir,
                new,
                flags: f,
            } => t.renameat2(
                self.dirfd(odir),
                old,
                self.dirfd(ndir),
                new,
                RenameFlags::from_bits_retain(*f),
            ),
            Op::Readlinkat { dir, path, size } => t
                .readlinkat(self.dirfd(dir), path, &mut vec![0; *size])
                .map(drop),
            Op::Fstatat {
                dir,
                path,
                flags: f,
            } => t.fstatat(self.dirfd(dir), path, flags(*f)).map(drop),
            Op::Fstat { fd } => t.fstat(self.fd(fd)).map(drop),
            Op::Statx {
                dir,
                path,
                flags: f,
                mask,
            } => t
                .statx(
                    self.dirfd(dir),
                    path,
                    flags(*f),
                    StatxMask::from_bits_retain(*mask),
                )
                .map(drop),
            Op::Statfs { path } => t.statfs(path).map(drop),
            Op::Fstatfs { fd } => t.fstatfs(self.fd(fd)).map(drop),
            Op::Fchmodat {
                dir,
                path,
                mode,
                flags: f,
            } => t.fchmodat(self.dirfd(dir), path, *mode, flags(*f)),
            Op::Fchmod { fd, mode } => t.fchmod(self.fd(fd), *mode),
            Op::Fchownat {
                dir,
                path,
                uid,
                gid,
                flags: f,
            } => t.fchownat(self.dirfd(dir), path, *uid, *gid, flags(*f)),
            Op::Fchown { fd, uid, gid } => t.fchown(self.fd(fd), *uid, *gid),
            Op::Utimensat {
                dir,
                path,
                times,
                flags: f,
            } => {
                let ts = times.map(|(s, ns)| Timespec::new(s, ns));
                t.utimensat(self.dirfd(dir), path.as_deref(), Some(ts), flags(*f))
            }
            Op::Faccessat2 {
                dir,
                path,
                mode,
                flags: f,
            } => t.faccessat2(
                self.dirfd(dir),
                path,
                uvfs::abi::Access::from_bits_retain(*mode),
                flags(*f),
            ),
            Op::Getdents { fd, size } => {
                let fd = self.fd(fd);
                let _ = t.lseek(fd, 0, Whence::SET);
                t.getdents64(fd, &mut vec![0; *size]).map(drop)
            }
            Op::Chdir { path } => t.chdir(path),
            Op::Fchdir { fd } => t.fchdir(self.fd(fd)),
            Op::Chroot { path } => t.chroot(path),
            Op::Umask { mask } => {
                t.umask(*mask);
                Ok(())
            }
            Op::Getcwd { size } => t.getcwd(&mut vec![0; *size]).map(drop),
            Op::Setxattr {
                at,
                name,
                len,
                flags: f,
            } => {
                let v = vec![b'v'; *len];
                let f = XattrFlags::from_bits_retain(*f);
                match at {
                    XAt::Path(p) => t.setxattr(p, name, &v, f),
                    XAt::Link(p) => t.lsetxattr(p, name, &v, f),
                    XAt::Fd(fd) => t.fsetxattr(self.fd(fd), name, &v, f),
                }
            }
            Op::Getxattr { at, name, size } => {
                let mut b = vec![0; *size];
                match at {
                    XAt::Path(p) => t.getxattr(p, name, &mut b),
                    XAt::Link(p) => t.lgetxattr(p, name, &mut b),
                    XAt::Fd(fd) => t.fgetxattr(self.fd(fd), name, &mut b),
                }
                .map(drop)
            }
            Op::Listxattr { at, size } => {
                let mut b = vec![0; *size];
                match at {
                    XAt::Path(p) => t.listxattr(p, &mut b),
                    XAt::Link(p) => t.llistxattr(p, &mut b),
                    XAt::Fd(fd) => t.flistxattr(self.fd(fd), &mut b),
                }
                .map(drop)
            }
            Op::Removexattr { at, name } => match at {
                XAt::Path(p) => t.removexattr(p, name),
                XAt::Link(p) => t.lremovexattr(p, name),
                XAt::Fd(fd) => t.fremovexattr(self.fd(fd), name),
            },
            Op::Mount { target, flags: f } => t.mount(
                Some(b"none"),
                target,
                Some("tmpfs"),
                MountFlags::from_bits_retain(*f),
                None,
            ),
            Op::Umount2 { target, flags: f } => {
                t.umount2(target, UmountFlags::from_bits_retain(*f))
            }
        }
    }

    fn exhaust_fds(&mut self, on: bool) {
        let t = self.task();
        let limit = if on {
            let lowest = t.dup(self.fds[&Obj::FileRo]).expect("a free fd");
            t.close(lowest).expect("close");
            lowest as u32
        } else {
            NOFILE
        };
        // The soft limit only, as the host's side sets it (the hard one stays).
        let hard = t.nofile_rlimit().1;
        t.set_nofile_rlimit(limit, hard).expect("set the fd limit");
    }

    fn skip(&self, _call: &Call) -> Option<&'static str> {
        None
    }
}
