//! Error precedence of `preadv`/`pwritev`, which the conformance case language cannot write
//! yet (issue 6). Oracle: the host kernel (Linux 6.18 on tmpfs), run once with the same calls
//! from a C program; its answers are the expectations below. The `readv`/`writev` forms of the
//! same rules are conformance cases in `found.cases`.

use std::io::{IoSlice, IoSliceMut};

use uvfs::abi::*;
use uvfs::{Cred, Errno, Task, Vfs};

const NEAR_MAX: i64 = i64::MAX - 1;

fn setup() -> (Vfs, Task) {
    let vfs = Vfs::new();
    let t = vfs.task(Cred::root());
    t.mkdirat(AT_FDCWD, "/d", 0o755).expect("mkdir");
    (vfs, t)
}

#[test]
fn preadv_on_directory_checks_range_before_eisdir() {
    let (_v, t) = setup();
    let d = t
        .openat(AT_FDCWD, "/d", OpenFlags::RDONLY | OpenFlags::DIRECTORY, 0)
        .expect("open dir");
    let mut b = [0u8; 14];
    let mut none = [0u8; 0];
    assert_eq!(
        t.preadv(d, &mut [IoSliceMut::new(&mut b)], NEAR_MAX),
        Err(Errno::EINVAL)
    );
    assert_eq!(
        t.preadv(d, &mut [IoSliceMut::new(&mut b)], 0),
        Err(Errno::EISDIR)
    );
    assert_eq!(t.preadv(d, &mut [IoSliceMut::new(&mut none)], 0), Ok(0));
    assert_eq!(
        t.preadv(d, &mut [IoSliceMut::new(&mut none)], -1),
        Err(Errno::EINVAL)
    );
    let mut ones = vec![[0u8; 1]; IOV_MAX + 1];
    let mut iov: Vec<IoSliceMut<'_>> = ones.iter_mut().map(|b| IoSliceMut::new(b)).collect();
    assert_eq!(t.preadv(d, &mut iov, 0), Err(Errno::EINVAL));
}

#[test]
fn pwritev_with_append_checks_the_offset_range() {
    let (_v, t) = setup();
    let f = t
        .openat(
            AT_FDCWD,
            "/d/f",
            OpenFlags::CREAT | OpenFlags::RDWR | OpenFlags::APPEND,
            0o644,
        )
        .expect("create");
    assert_eq!(
        t.pwritev(f, &[IoSlice::new(b"abc")], NEAR_MAX),
        Err(Errno::EINVAL)
    );
    assert_eq!(t.pwritev(f, &[IoSlice::new(b"a")], NEAR_MAX), Ok(1));
    assert_eq!(t.pwritev(f, &[IoSlice::new(b"")], -1), Err(Errno::EINVAL));
    let ones = vec![[b'x'; 1]; IOV_MAX + 1];
    let iov: Vec<IoSlice<'_>> = ones.iter().map(|b| IoSlice::new(b)).collect();
    assert_eq!(t.pwritev(f, &iov, 0), Err(Errno::EINVAL));
    assert_eq!(
        t.fstat(f).expect("fstat").size,
        1,
        "appended once, at the end"
    );
    assert_eq!(
        t.lseek(f, 0, Whence::CUR),
        Ok(0),
        "pwritev keeps the position"
    );
}

#[test]
fn vectored_calls_check_the_fd_before_the_vector() {
    let (_v, t) = setup();
    t.openat(
        AT_FDCWD,
        "/d/f",
        OpenFlags::CREAT | OpenFlags::WRONLY,
        0o644,
    )
    .expect("create");
    let wo = t
        .openat(AT_FDCWD, "/d/f", OpenFlags::WRONLY, 0)
        .expect("open");
    let p = t
        .openat(AT_FDCWD, "/d/f", OpenFlags::PATH, 0)
        .expect("O_PATH");
    let mut ones = vec![[0u8; 1]; IOV_MAX + 1];
    let mut iov: Vec<IoSliceMut<'_>> = ones.iter_mut().map(|b| IoSliceMut::new(b)).collect();
    assert_eq!(t.preadv(wo, &mut iov, 0), Err(Errno::EBADF));
    let mut none = [0u8; 0];
    assert_eq!(
        t.preadv(wo, &mut [IoSliceMut::new(&mut none)], 0),
        Err(Errno::EBADF)
    );
    assert_eq!(
        t.preadv(p, &mut [IoSliceMut::new(&mut none)], -1),
        Err(Errno::EINVAL),
        "a negative offset comes before the fd"
    );
    assert_eq!(t.pwritev(p, &[IoSlice::new(b"")], 0), Err(Errno::EBADF));
    assert_eq!(
        t.preadv(99, &mut [IoSliceMut::new(&mut none)], -1),
        Err(Errno::EINVAL)
    );
}
