//! Safe wrappers over the raw Linux system calls the host oracle makes.
//!
//! Every call goes through `syscall(2)` rather than a libc wrapper, so nothing in user space
//! checks, rewrites or emulates an argument before the kernel sees it (glibc's `utimensat`
//! rejects a null path, its `fchmodat` emulates `AT_SYMLINK_NOFOLLOW`, its `getcwd` allocates).
//! Fds are raw numbers on purpose: cases pass bad ones (`-1`, `99`) and must get the kernel's
//! answer. Each wrapper takes Rust buffers and passes their pointers and lengths together, so
//! the kernel never writes outside memory it was given.

use std::io::{IoSlice, IoSliceMut};

use libc::c_long;

/// A path or name as the kernel reads it: the bytes with a NUL appended. An interior NUL is
/// kept, so the kernel sees the string up to it, as a C caller passing that buffer would.
#[derive(Clone, Debug)]
pub struct CPath(Vec<u8>);

impl CPath {
    /// Copies `bytes` and appends the terminating NUL.
    pub fn new(bytes: &[u8]) -> CPath {
        let mut v = Vec::with_capacity(bytes.len() + 1);
        v.extend_from_slice(bytes);
        v.push(0);
        CPath(v)
    }

    fn ptr(&self) -> c_long {
        self.0.as_ptr() as c_long
    }
}

/// A call's result: the kernel's return value or its errno.
pub type SysResult = Result<i64, i32>;

fn opt_ptr(p: Option<&CPath>) -> c_long {
    p.map_or(0, CPath::ptr)
}

/// The raw system call.
///
/// # Safety
/// Every pointer in `args` must be valid for the reads and writes syscall `nr` makes through
/// it, with the lengths passed beside it.
unsafe fn raw(nr: c_long, args: [c_long; 6]) -> SysResult {
    // SAFETY: the caller vouches for the pointers; the other arguments are plain integers the
    // kernel validates.
    let r = unsafe { libc::syscall(nr, args[0], args[1], args[2], args[3], args[4], args[5]) };
    if r == -1 {
        Err(std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO))
    } else {
        Ok(r)
    }
}

/// Pads the arguments of one call to the six registers, converting each with `as c_long`.
macro_rules! args {
    ($($a:expr),* $(,)?) => {{
        let mut a = [0 as c_long; 6];
        let v = [$($a as c_long),*];
        a[..v.len()].copy_from_slice(&v);
        a
    }};
}

/// Defines a wrapper whose arguments are all integers or `CPath`s (read-only, NUL-terminated).
macro_rules! call {
    ($(#[$m:meta])* $name:ident($($p:ident: $t:ty),*) => $nr:ident($($a:expr),*)) => {
        $(#[$m])*
        pub fn $name($($p: $t),*) -> SysResult {
            // SAFETY: the only pointers passed are `CPath`s, NUL-terminated and alive for the
            // call; the kernel only reads them.
            unsafe { raw(libc::$nr, args!($($a),*)) }
        }
    };
}

call!(/// `openat(2)`.
    openat(dirfd: i32, path: &CPath, flags: i32, mode: u32) => SYS_openat(dirfd, path.ptr(), flags, mode));
call!(/// `close(2)`.
    close(fd: i32) => SYS_close(fd));
call!(/// `lseek(2)`.
    lseek(fd: i32, off: i64, whence: u32) => SYS_lseek(fd, off, whence));
call!(/// `truncate(2)`.
    truncate(path: &CPath, len: i64) => SYS_truncate(path.ptr(), len));
call!(/// `ftruncate(2)`.
    ftruncate(fd: i32, len: i64) => SYS_ftruncate(fd, len));
call!(/// `fallocate(2)`.
    fallocate(fd: i32, mode: i32, off: i64, len: i64) => SYS_fallocate(fd, mode, off, len));
call!(/// `fsync(2)`.
    fsync(fd: i32) => SYS_fsync(fd));
call!(/// `fdatasync(2)`.
    fdatasync(fd: i32) => SYS_fdatasync(fd));
call!(/// `dup(2)`.
    dup(fd: i32) => SYS_dup(fd));
call!(/// `dup2(2)`.
    dup2(fd: i32, newfd: i32) => SYS_dup2(fd, newfd));
call!(/// `dup3(2)`.
    dup3(fd: i32, newfd: i32, flags: i32) => SYS_dup3(fd, newfd, flags));
call!(/// `fcntl(2)` with an integer argument.
    fcntl(fd: i32, cmd: i32, arg: i64) => SYS_fcntl(fd, cmd, arg));
call!(/// `mkdirat(2)`.
    mkdirat(dirfd: i32, path: &CPath, mode: u32) => SYS_mkdirat(dirfd, path.ptr(), mode));
call!(/// `mknodat(2)`; the kernel reads `dev` as an `unsigned int` in its own encoding.
    mknodat(dirfd: i32, path: &CPath, mode: u32, dev: u64) => SYS_mknodat(dirfd, path.ptr(), mode, dev));
call!(/// `unlinkat(2)`.
    unlinkat(dirfd: i32, path: &CPath, flags: i32) => SYS_unlinkat(dirfd, path.ptr(), flags));
call!(/// `renameat2(2)`.
    renameat2(olddirfd: i32, old: &CPath, newdirfd: i32, new: &CPath, flags: u32)
        => SYS_renameat2(olddirfd, old.ptr(), newdirfd, new.ptr(), flags));
call!(/// `linkat(2)`.
    linkat(olddirfd: i32, old: &CPath, newdirfd: i32, new: &CPath, flags: i32)
        => SYS_linkat(olddirfd, old.ptr(), newdirfd, new.ptr(), flags));
call!(/// `symlinkat(2)`.
    symlinkat(target: &CPath, newdirfd: i32, path: &CPath) => SYS_symlinkat(target.ptr(), newdirfd, path.ptr()));
call!(/// `fchmodat2(2)`.
    fchmodat2(dirfd: i32, path: &CPath, mode: u32, flags: u32) => SYS_fchmodat2(dirfd, path.ptr(), mode, flags));
call!(/// `fchmod(2)`.
    fchmod(fd: i32, mode: u32) => SYS_fchmod(fd, mode));
call!(/// `fchownat(2)`.
    fchownat(dirfd: i32, path: &CPath, uid: u32, gid: u32, flags: i32) => SYS_fchownat(dirfd, path.ptr(), uid, gid, flags));
call!(/// `fchown(2)`.
    fchown(fd: i32, uid: u32, gid: u32) => SYS_fchown(fd, uid, gid));
call!(/// `faccessat2(2)`.
    faccessat2(dirfd: i32, path: &CPath, mode: i32, flags: i32) => SYS_faccessat2(dirfd, path.ptr(), mode, flags));
call!(/// `chdir(2)`.
    chdir(path: &CPath) => SYS_chdir(path.ptr()));
call!(/// `fchdir(2)`.
    fchdir(fd: i32) => SYS_fchdir(fd));
call!(/// `chroot(2)`.
    chroot(path: &CPath) => SYS_chroot(path.ptr()));
call!(/// `umask(2)`.
    umask(mask: u32) => SYS_umask(mask));
call!(/// `removexattr(2)`.
    removexattr(path: &CPath, name: &CPath) => SYS_removexattr(path.ptr(), name.ptr()));
call!(/// `lremovexattr(2)`.
    lremovexattr(path: &CPath, name: &CPath) => SYS_lremovexattr(path.ptr(), name.ptr()));
call!(/// `fremovexattr(2)`.
    fremovexattr(fd: i32, name: &CPath) => SYS_fremovexattr(fd, name.ptr()));
call!(/// `umount2(2)`.
    umount2(target: &CPath, flags: i32) => SYS_umount2(target.ptr(), flags));
call!(/// `pivot_root(2)`.
    pivot_root(new_root: &CPath, put_old: &CPath) => SYS_pivot_root(new_root.ptr(), put_old.ptr()));
call!(/// `unshare(2)`.
    unshare(flags: i32) => SYS_unshare(flags));
call!(/// `close_range(2)`.
    close_range(first: u32, last: u32, flags: u32) => SYS_close_range(first, last, flags));
call!(/// `setresuid(2)` for the calling thread (the helper has one).
    setresuid(r: u32, e: u32, s: u32) => SYS_setresuid(r, e, s));
call!(/// `setresgid(2)` for the calling thread (the helper has one).
    setresgid(r: u32, e: u32, s: u32) => SYS_setresgid(r, e, s));
/// `fcntl(fd, F_OFD_SETLKW, ..)` on the one byte at `byte`: `kind` is `F_RDLCK`, `F_WRLCK` or
/// `F_UNLCK`. Waits for a conflicting lock to go.
pub fn ofd_lock_byte(fd: i32, byte: i64, kind: i16) -> SysResult {
    let mut lock = libc::flock {
        l_type: kind,
        l_whence: libc::SEEK_SET as i16,
        l_start: byte,
        l_len: 1,
        l_pid: 0,
    };
    // SAFETY: `lock` is a live `struct flock` for the call; the kernel reads it (and writes
    // it only for F_OFD_GETLK, not used here).
    unsafe {
        raw(
            libc::SYS_fcntl,
            args!(fd, libc::F_OFD_SETLKW, &mut lock as *mut libc::flock),
        )
    }
}
/// `fcntl(2)` with a record-lock command and its `struct flock`, which the kernel reads and,
/// for `F_GETLK`/`F_OFD_GETLK`, fills in.
pub fn fcntl_lock(fd: i32, cmd: i32, lock: &mut libc::flock) -> SysResult {
    // SAFETY: `lock` is a live, exclusively borrowed `struct flock` for the call.
    unsafe { raw(libc::SYS_fcntl, args!(fd, cmd, lock as *mut libc::flock)) }
}
call!(/// `flock(2)`.
    flock(fd: i32, op: u32) => SYS_flock(fd, op));
/// `pipe2(2)`: the read end and the write end.
pub fn pipe2(flags: i32) -> Result<[i32; 2], i32> {
    let mut fds = [-1i32; 2];
    // SAFETY: `fds` is a live array of two `int`s the kernel fills in.
    unsafe { raw(libc::SYS_pipe2, args!(fds.as_mut_ptr(), flags)) }?;
    Ok(fds)
}
fn off_ptr(o: Option<&mut i64>) -> *mut i64 {
    o.map_or(std::ptr::null_mut(), |p| p as *mut i64)
}
/// `splice(2)`; a `None` offset is a null pointer, a given one is updated by the kernel.
pub fn splice(
    fd_in: i32,
    off_in: Option<&mut i64>,
    fd_out: i32,
    off_out: Option<&mut i64>,
    len: u64,
    flags: u32,
) -> SysResult {
    let (a, b) = (off_ptr(off_in), off_ptr(off_out));
    // SAFETY: each offset pointer is null or a live, exclusively borrowed `loff_t`.
    unsafe { raw(libc::SYS_splice, args!(fd_in, a, fd_out, b, len, flags)) }
}
call!(/// `tee(2)`.
    tee(fd_in: i32, fd_out: i32, len: u64, flags: u32) => SYS_tee(fd_in, fd_out, len, flags));
/// `sendfile(2)` (x86-64's is `sendfile64`); a `None` offset is a null pointer.
pub fn sendfile(out_fd: i32, in_fd: i32, off: Option<&mut i64>, count: u64) -> SysResult {
    let o = off_ptr(off);
    // SAFETY: the offset pointer is null or a live, exclusively borrowed `loff_t`.
    unsafe { raw(libc::SYS_sendfile, args!(out_fd, in_fd, o, count)) }
}
/// `ioctl(fd, FIONREAD)`: the count the kernel stores.
pub fn fionread(fd: i32) -> SysResult {
    let mut n: libc::c_int = 0;
    // SAFETY: `n` is a live `int` the kernel writes.
    unsafe {
        raw(
            libc::SYS_ioctl,
            args!(fd, libc::FIONREAD, &mut n as *mut libc::c_int),
        )
    }?;
    Ok(i64::from(n))
}
call!(/// `getpid(2)`: the process (thread group) id.
    getpid() => SYS_getpid());
call!(/// `setns(2)`.
    setns(fd: i32, nstype: i32) => SYS_setns(fd, nstype));
call!(/// `alarm(2)`: the kernel kills the process with `SIGALRM` after `secs` seconds.
    alarm(secs: u32) => SYS_alarm(secs));

/// `mount(2)`; `None` passes a null pointer.
pub fn mount(
    src: Option<&CPath>,
    target: &CPath,
    fstype: Option<&CPath>,
    flags: u64,
    data: Option<&CPath>,
) -> SysResult {
    // SAFETY: every pointer is a live NUL-terminated `CPath` or null; for tmpfs and bind mounts
    // the kernel reads `data` as a string up to its NUL.
    unsafe {
        raw(
            libc::SYS_mount,
            args!(
                opt_ptr(src),
                target.ptr(),
                opt_ptr(fstype),
                flags,
                opt_ptr(data)
            ),
        )
    }
}

/// `read(2)` into `buf`.
pub fn read(fd: i32, buf: &mut [u8]) -> SysResult {
    // SAFETY: `buf` is writable for `buf.len()` bytes.
    unsafe { raw(libc::SYS_read, args!(fd, buf.as_mut_ptr(), buf.len())) }
}

/// `pread64(2)` into `buf`.
pub fn pread(fd: i32, buf: &mut [u8], off: i64) -> SysResult {
    // SAFETY: `buf` is writable for `buf.len()` bytes.
    unsafe {
        raw(
            libc::SYS_pread64,
            args!(fd, buf.as_mut_ptr(), buf.len(), off),
        )
    }
}

/// `write(2)` from `buf`.
pub fn write(fd: i32, buf: &[u8]) -> SysResult {
    // SAFETY: `buf` is readable for `buf.len()` bytes.
    unsafe { raw(libc::SYS_write, args!(fd, buf.as_ptr(), buf.len())) }
}

/// `pwrite64(2)` from `buf`.
pub fn pwrite(fd: i32, buf: &[u8], off: i64) -> SysResult {
    // SAFETY: `buf` is readable for `buf.len()` bytes.
    unsafe { raw(libc::SYS_pwrite64, args!(fd, buf.as_ptr(), buf.len(), off)) }
}

/// `readv(2)`.
pub fn readv(fd: i32, iov: &mut [IoSliceMut<'_>]) -> SysResult {
    // SAFETY: `IoSliceMut` is ABI-compatible with `struct iovec` on Unix (std guarantees it),
    // and each one describes a live writable buffer.
    unsafe { raw(libc::SYS_readv, args!(fd, iov.as_mut_ptr(), iov.len())) }
}

/// `writev(2)`.
pub fn writev(fd: i32, iov: &[IoSlice<'_>]) -> SysResult {
    // SAFETY: `IoSlice` is ABI-compatible with `struct iovec` on Unix (std guarantees it), and
    // each one describes a live readable buffer.
    unsafe { raw(libc::SYS_writev, args!(fd, iov.as_ptr(), iov.len())) }
}

/// `preadv(2)`; the kernel takes the offset split in two registers, of which x86-64 uses the
/// low one only.
pub fn preadv(fd: i32, iov: &mut [IoSliceMut<'_>], off: i64) -> SysResult {
    // SAFETY: as `readv`.
    unsafe {
        raw(
            libc::SYS_preadv,
            args!(fd, iov.as_mut_ptr(), iov.len(), off, 0),
        )
    }
}

/// `pwritev(2)`; the offset as for [`preadv`].
pub fn pwritev(fd: i32, iov: &[IoSlice<'_>], off: i64) -> SysResult {
    // SAFETY: as `writev`.
    unsafe {
        raw(
            libc::SYS_pwritev,
            args!(fd, iov.as_ptr(), iov.len(), off, 0),
        )
    }
}

/// `struct open_how` of `openat2(2)`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct OpenHow {
    /// `O_*` flags.
    pub flags: u64,
    /// Creation mode.
    pub mode: u64,
    /// `RESOLVE_*` flags.
    pub resolve: u64,
}

/// `openat2(2)`.
pub fn openat2(dirfd: i32, path: &CPath, how: &OpenHow) -> SysResult {
    // SAFETY: `how` is a live `struct open_how` of the size passed; the kernel only reads it.
    unsafe {
        raw(
            libc::SYS_openat2,
            args!(
                dirfd,
                path.ptr(),
                how as *const OpenHow,
                size_of::<OpenHow>()
            ),
        )
    }
}

/// `readlinkat(2)` into `buf`.
pub fn readlinkat(dirfd: i32, path: &CPath, buf: &mut [u8]) -> SysResult {
    // SAFETY: `buf` is writable for `buf.len()` bytes.
    unsafe {
        raw(
            libc::SYS_readlinkat,
            args!(dirfd, path.ptr(), buf.as_mut_ptr(), buf.len()),
        )
    }
}

/// `newfstatat(2)`.
pub fn fstatat(dirfd: i32, path: &CPath, flags: i32) -> Result<libc::stat, i32> {
    // SAFETY: `struct stat` is plain integers, for which all-zero bytes are a valid value.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `st` is a writable `struct stat`, the size the kernel writes for x86-64.
    unsafe {
        raw(
            libc::SYS_newfstatat,
            args!(dirfd, path.ptr(), &mut st as *mut libc::stat, flags),
        )
    }
    .map(|_| st)
}

/// `fstat(2)`.
pub fn fstat(fd: i32) -> Result<libc::stat, i32> {
    // SAFETY: `struct stat` is plain integers, for which all-zero bytes are a valid value.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `st` is a writable `struct stat`.
    unsafe { raw(libc::SYS_fstat, args!(fd, &mut st as *mut libc::stat)) }.map(|_| st)
}

/// `statx(2)`.
pub fn statx(dirfd: i32, path: &CPath, flags: i32, mask: u32) -> Result<libc::statx, i32> {
    // SAFETY: `struct statx` is plain integers, for which all-zero bytes are a valid value.
    let mut st: libc::statx = unsafe { std::mem::zeroed() };
    // SAFETY: `st` is a writable `struct statx` (256 bytes, the size the kernel writes).
    unsafe {
        raw(
            libc::SYS_statx,
            args!(dirfd, path.ptr(), flags, mask, &mut st as *mut libc::statx),
        )
    }
    .map(|_| st)
}

/// `SYS_statmount` on x86-64 (libc 0.2 may not name it).
const SYS_STATMOUNT: c_long = 457;
/// `STATX_MNT_ID_UNIQUE`.
const STATX_MNT_ID_UNIQUE: u32 = 0x4000;

/// The kernel's `struct mnt_id_req`, first version (`MNT_ID_REQ_SIZE_VER0`, 24 bytes).
#[repr(C)]
struct MntIdReq {
    size: u32,
    spare: u32,
    mnt_id: u64,
    param: u64,
}

/// The fixed part of the kernel's `struct statmount` (include/uapi/linux/mount.h), with its
/// spare words: 512 bytes, no strings asked.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
#[allow(missing_docs)] // The fields are the kernel's.
pub struct Statmount {
    pub size: u32,
    pub spare1: u32,
    pub mask: u64,
    pub sb_dev_major: u32,
    pub sb_dev_minor: u32,
    pub sb_magic: u64,
    pub sb_flags: u32,
    pub fs_type: u32,
    pub mnt_id: u64,
    pub mnt_parent_id: u64,
    pub mnt_id_old: u32,
    pub mnt_parent_id_old: u32,
    pub mnt_attr: u64,
    pub mnt_propagation: u64,
    pub mnt_peer_group: u64,
    pub mnt_master: u64,
    pub propagate_from: u64,
    pub mnt_root: u32,
    pub mnt_point: u32,
    pub mnt_ns_id: u64,
    pub spare2: [u64; 49],
}

/// `statx(AT_FDCWD, path, 0, STATX_MNT_ID_UNIQUE)`, then `statmount(2)` of that mount for
/// `STATMOUNT_SB_BASIC | STATMOUNT_MNT_BASIC`.
pub fn statmount_of(path: &CPath) -> Result<Statmount, i32> {
    let st = statx(libc::AT_FDCWD, path, 0, STATX_MNT_ID_UNIQUE)?;
    let req = MntIdReq {
        size: std::mem::size_of::<MntIdReq>() as u32,
        spare: 0,
        mnt_id: st.stx_mnt_id,
        param: 0x1 | 0x2,
    };
    // SAFETY: `struct statmount` is plain integers, for which all-zero bytes are valid.
    let mut sm: Statmount = unsafe { std::mem::zeroed() };
    // SAFETY: `req` is a readable `struct mnt_id_req` of the size it states; `sm` is a
    // writable buffer of the size passed, which the kernel writes no further than.
    unsafe {
        raw(
            SYS_STATMOUNT,
            args!(
                &req as *const MntIdReq,
                &mut sm as *mut Statmount,
                std::mem::size_of::<Statmount>(),
                0
            ),
        )
    }
    .map(|_| sm)
}

/// The kernel's `struct statfs` on x86-64 (libc's hides `f_flags` in its spare words).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
#[allow(missing_docs)] // The fields are the kernel's.
pub struct StatFs {
    pub f_type: i64,
    pub f_bsize: i64,
    pub f_blocks: u64,
    pub f_bfree: u64,
    pub f_bavail: u64,
    pub f_files: u64,
    pub f_ffree: u64,
    pub f_fsid: [i32; 2],
    pub f_namelen: i64,
    pub f_frsize: i64,
    pub f_flags: i64,
    pub f_spare: [i64; 4],
}

/// `statfs(2)`.
pub fn statfs(path: &CPath) -> Result<StatFs, i32> {
    let mut st = StatFs::default();
    // SAFETY: `st` is a writable `struct statfs` of the kernel's layout.
    unsafe { raw(libc::SYS_statfs, args!(path.ptr(), &mut st as *mut StatFs)) }.map(|_| st)
}

/// `fstatfs(2)`.
pub fn fstatfs(fd: i32) -> Result<StatFs, i32> {
    let mut st = StatFs::default();
    // SAFETY: `st` is a writable `struct statfs` of the kernel's layout.
    unsafe { raw(libc::SYS_fstatfs, args!(fd, &mut st as *mut StatFs)) }.map(|_| st)
}

/// `utimensat(2)`; `path == None` passes a null path (the fd itself), `times == None` a null
/// times pointer (both now).
pub fn utimensat(
    dirfd: i32,
    path: Option<&CPath>,
    times: Option<&[libc::timespec; 2]>,
    flags: i32,
) -> SysResult {
    let t = times.map_or(std::ptr::null(), |t| t.as_ptr());
    // SAFETY: `t` is null or two live `struct timespec`s, which the kernel only reads.
    unsafe { raw(libc::SYS_utimensat, args!(dirfd, opt_ptr(path), t, flags)) }
}

/// `getdents64(2)` into `buf`.
pub fn getdents64(fd: i32, buf: &mut [u8]) -> SysResult {
    // SAFETY: `buf` is writable for `buf.len()` bytes.
    unsafe { raw(libc::SYS_getdents64, args!(fd, buf.as_mut_ptr(), buf.len())) }
}

/// `getcwd(2)` (the system call: returns the length including the NUL).
pub fn getcwd(buf: &mut [u8]) -> SysResult {
    // SAFETY: `buf` is writable for `buf.len()` bytes.
    unsafe { raw(libc::SYS_getcwd, args!(buf.as_mut_ptr(), buf.len())) }
}

/// Where an xattr call points: a path that is followed, one that is not, or an fd.
#[derive(Clone, Copy, Debug)]
pub enum XattrAt<'a> {
    /// `*xattr`.
    Path(&'a CPath),
    /// `l*xattr`.
    Link(&'a CPath),
    /// `f*xattr`.
    File(i32),
}

impl XattrAt<'_> {
    fn pick(self, path: c_long, link: c_long, file: c_long) -> (c_long, c_long) {
        match self {
            XattrAt::Path(p) => (path, p.ptr()),
            XattrAt::Link(p) => (link, p.ptr()),
            XattrAt::File(fd) => (file, fd as c_long),
        }
    }
}

/// `setxattr(2)`, `lsetxattr(2)` or `fsetxattr(2)`.
pub fn setxattr(at: XattrAt<'_>, name: &CPath, value: &[u8], flags: i32) -> SysResult {
    let (nr, first) = at.pick(libc::SYS_setxattr, libc::SYS_lsetxattr, libc::SYS_fsetxattr);
    // SAFETY: `value` is readable for `value.len()` bytes; `name` and a path are `CPath`s.
    unsafe {
        raw(
            nr,
            args!(first, name.ptr(), value.as_ptr(), value.len(), flags),
        )
    }
}

/// `getxattr(2)`, `lgetxattr(2)` or `fgetxattr(2)` into `buf` (empty: ask the size).
pub fn getxattr(at: XattrAt<'_>, name: &CPath, buf: &mut [u8]) -> SysResult {
    let (nr, first) = at.pick(libc::SYS_getxattr, libc::SYS_lgetxattr, libc::SYS_fgetxattr);
    // SAFETY: `buf` is writable for `buf.len()` bytes; `name` and a path are `CPath`s.
    unsafe { raw(nr, args!(first, name.ptr(), buf.as_mut_ptr(), buf.len())) }
}

/// `listxattr(2)`, `llistxattr(2)` or `flistxattr(2)` into `buf` (empty: ask the size).
pub fn listxattr(at: XattrAt<'_>, buf: &mut [u8]) -> SysResult {
    let (nr, first) = at.pick(
        libc::SYS_listxattr,
        libc::SYS_llistxattr,
        libc::SYS_flistxattr,
    );
    // SAFETY: `buf` is writable for `buf.len()` bytes; a path is a `CPath`.
    unsafe { raw(nr, args!(first, buf.as_mut_ptr(), buf.len())) }
}

/// `prlimit64(2)` on the calling process: sets `resource`'s soft and hard limits.
pub fn setrlimit(resource: u32, soft: u64, hard: u64) -> SysResult {
    let lim = libc::rlimit64 {
        rlim_cur: soft,
        rlim_max: hard,
    };
    // SAFETY: `lim` is a live `struct rlimit64` the kernel reads; the old-limit pointer is null.
    unsafe {
        raw(
            libc::SYS_prlimit64,
            args!(0, resource, &lim as *const libc::rlimit64, 0),
        )
    }
}

/// `setgroups(2)` for the calling thread (the helper has one).
pub fn setgroups(groups: &[u32]) -> SysResult {
    // SAFETY: `groups` is readable for `groups.len()` `gid_t`s.
    unsafe { raw(libc::SYS_setgroups, args!(groups.len(), groups.as_ptr())) }
}

/// `poll(2)` over `fds` (the kernel fills in each `revents`).
pub fn poll(fds: &mut [libc::pollfd], timeout_ms: i32) -> SysResult {
    // SAFETY: `fds` is a live, writable array of `fds.len()` `struct pollfd`s.
    unsafe {
        raw(
            libc::SYS_poll,
            args!(fds.as_mut_ptr(), fds.len(), timeout_ms),
        )
    }
}

call!(/// `epoll_create1(2)`.
    epoll_create1(flags: i32) => SYS_epoll_create1(flags));
call!(/// `inotify_init1(2)`.
    inotify_init1(flags: i32) => SYS_inotify_init1(flags));
call!(/// `inotify_add_watch(2)`.
    inotify_add_watch(fd: i32, path: &CPath, mask: u32) => SYS_inotify_add_watch(fd, path.ptr(), mask));
call!(/// `inotify_rm_watch(2)`.
    inotify_rm_watch(fd: i32, wd: i32) => SYS_inotify_rm_watch(fd, wd));
call!(/// `fanotify_init(2)`.
    fanotify_init(flags: u32, event_f_flags: u32) => SYS_fanotify_init(flags, event_f_flags));
call!(/// `fanotify_mark(2)` (x86-64 passes the 64-bit mask in one register); a null path for
    /// `None`.
    fanotify_mark(fd: i32, flags: u32, mask: u64, dirfd: i32, path: Option<&CPath>) =>
        SYS_fanotify_mark(fd, flags, mask, dirfd, opt_ptr(path)));
call!(/// `eventfd2(2)`.
    eventfd2(initval: u32, flags: i32) => SYS_eventfd2(initval, flags));

/// `epoll_ctl(2)`; `event == None` passes a null pointer.
pub fn epoll_ctl(epfd: i32, op: i32, fd: i32, event: Option<&mut libc::epoll_event>) -> SysResult {
    let ev = event.map_or(std::ptr::null_mut(), |e| e as *mut libc::epoll_event);
    // SAFETY: `ev` is null or a live `struct epoll_event`, which the kernel only reads.
    unsafe { raw(libc::SYS_epoll_ctl, args!(epfd, op, fd, ev)) }
}

/// The most events one `epoll_wait` may ask for (Linux: `EP_MAX_EVENTS`).
pub const EP_MAX_EVENTS: i32 = i32::MAX / 12;

/// `epoll_wait(2)` into `events`, passing `maxevents` as the count (which may be invalid: the
/// kernel refuses a count below 1 or above [`EP_MAX_EVENTS`] before it writes anything).
///
/// # Panics
/// If `maxevents` is valid and `events` is shorter.
pub fn epoll_wait(
    epfd: i32,
    events: &mut [libc::epoll_event],
    maxevents: i32,
    timeout_ms: i32,
) -> SysResult {
    if (1..=EP_MAX_EVENTS).contains(&maxevents) {
        assert!(events.len() >= maxevents as usize, "room for maxevents");
    }
    // SAFETY: `events` is writable for `events.len()` entries, and the kernel writes at most
    // `maxevents` of them (checked above to fit) or none.
    unsafe {
        raw(
            libc::SYS_epoll_wait,
            args!(epfd, events.as_mut_ptr(), maxevents, timeout_ms),
        )
    }
}
