//! One generator per call family: well-formed arguments, and the family's hostile variants with
//! the errno Linux returns for each given an otherwise valid call. Each family cites where Linux
//! makes its checks; the order only matters for which stage a failure is counted at, since a
//! call has one hostile field.

use super::*;

mod attr;
mod dir;
mod fd;
mod namespace;
mod open;
mod rw;
mod xattr;

pub(super) fn openat_op(dir: DirArg, path: Vec<u8>, flags: OpenFlags, mode: u32) -> Op {
    Op::Openat {
        dir,
        path,
        flags: flags.bits(),
        mode,
    }
}

pub(super) fn at_op(dir: DirArg, path: Vec<u8>, flags: AtFlags) -> Op {
    Op::Fstatat {
        dir,
        path,
        flags: flags.bits(),
    }
}

pub(super) fn d(o: Obj) -> DirArg {
    DirArg::Fd(FdArg::Obj(o))
}

pub(super) fn fd(o: Obj) -> FdArg {
    FdArg::Obj(o)
}

pub(super) fn p(s: &[u8]) -> Vec<u8> {
    s.to_vec()
}

impl Gen {
    pub(super) fn family(&mut self, n: u64, h: bool) -> Call {
        match n {
            0 => self.openat(h),
            1 => self.openat2(h),
            2 => self.close(h),
            3 => self.read(h, None),
            4 => self.read(h, Some(())),
            5 => self.readv(h, false),
            6 => self.readv(h, true),
            7 => self.write(h, false),
            8 => self.write(h, true),
            9 => self.writev(h, false),
            10 => self.writev(h, true),
            11 => self.lseek(h),
            12 => self.fsync(h, false),
            13 => self.fsync(h, true),
            14 => self.fallocate(h),
            15 => self.ftruncate(h),
            16 => self.truncate(h),
            17 => self.dup(h),
            18 => self.dup2(h),
            19 => self.dup3(h),
            20 => self.dupfd(h),
            21 => self.getfl(h),
            22 => self.setfl(h),
            23 => self.mkdirat(h),
            24 => self.mknodat(h),
            25 => self.symlinkat(h),
            26 => self.linkat(h),
            27 => self.unlinkat(h),
            28 => self.renameat2(h),
            29 => self.readlinkat(h),
            30 => self.fstatat(h),
            31 => self.fstat(h),
            32 => self.statx(h),
            33 => self.statfs(h),
            34 => self.fstatfs(h),
            35 => self.fchmodat(h),
            36 => self.fchmod(h),
            37 => self.fchownat(h),
            38 => self.fchown(h),
            39 => self.utimensat(h),
            40 => self.faccessat2(h),
            41 => self.getdents(h),
            42 => self.chdir(h),
            43 => self.fchdir(h),
            44 => self.chroot(h),
            45 => ok(Op::Umask { mask: 0o022 }),
            46 => self.getcwd(h),
            47 => self.setxattr(h),
            48 => self.getxattr(h),
            49 => self.listxattr(h),
            50 => self.removexattr(h),
            51 => self.mount(h),
            52 => self.umount2(h),
            _ => unreachable!("FAMILIES is {FAMILIES}"),
        }
    }

    /// A bad fd, or one of `wrong` (an open fd of the wrong kind) with its errno and stage.
    pub(super) fn hostile_fd(&mut self, wrong: &[(Obj, Errno, Stage)]) -> Bad<FdArg> {
        if wrong.is_empty() || self.r.chance(50) {
            return self.bad_fd();
        }
        let (o, e, s) = self.r.pick(wrong);
        bad(fd(o), Hostile::WrongFd, e, s)
    }
}
