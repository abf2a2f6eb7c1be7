//! `preadv` and `pwritev` work at their offset and leave the file offset alone.
//! Oracle: pwritev(2) (readv.2): "preadv() and pwritev() ... the offset argument specifies the
//! file offset at which the input or output operation is to be performed ... The file offset
//! is not changed by these system calls"; pwrite(2), BUGS: with `O_APPEND`, Linux appends
//! whatever the offset. Checked on this project's host (Linux 6.18 tmpfs) with the raw
//! syscalls: the same bytes, offsets and `EINVAL` for offset -1.

use std::io::{IoSlice, IoSliceMut};

use uvfs::abi::{OpenFlags, Whence, AT_FDCWD};
use uvfs::{Cred, Errno, Task, Vfs};

fn file(t: &Task, flags: OpenFlags) -> i32 {
    t.openat(AT_FDCWD, "/f", OpenFlags::CREAT | flags, 0o644)
        .expect("open")
}

fn contents(t: &Task) -> Vec<u8> {
    let fd = t
        .openat(AT_FDCWD, "/f", OpenFlags::RDONLY, 0)
        .expect("open");
    let mut b = vec![0u8; 64];
    let n = t.pread(fd, &mut b, 0).expect("pread");
    t.close(fd).expect("close");
    b.truncate(n);
    b
}

#[test]
fn pwritev_writes_at_its_offset_and_keeps_the_file_offset() {
    let vfs = Vfs::new();
    let t = vfs.task(Cred::root());
    let fd = file(&t, OpenFlags::RDWR);
    assert_eq!(t.write(fd, b"0123456789"), Ok(10));
    assert_eq!(t.lseek(fd, 2, Whence::SET), Ok(2));
    let n = t.pwritev(fd, &[IoSlice::new(b"ab"), IoSlice::new(b"cd")], 20);
    assert_eq!(n, Ok(4));
    assert_eq!(t.lseek(fd, 0, Whence::CUR), Ok(2), "file offset untouched");
    let mut want = b"0123456789".to_vec();
    want.resize(20, 0);
    want.extend_from_slice(b"abcd");
    assert_eq!(contents(&t), want);
    // Over existing bytes, at offset 0: the data lands there, the offset still stays.
    assert_eq!(t.pwritev(fd, &[IoSlice::new(b"XY")], 0), Ok(2));
    assert_eq!(&contents(&t)[..4], b"XY23");
    let mut b = [0u8; 2];
    assert_eq!(t.read(fd, &mut b), Ok(2));
    assert_eq!(&b, b"23", "the next read starts at the unmoved offset");
    assert_eq!(t.pwritev(fd, &[IoSlice::new(b"x")], -1), Err(Errno::EINVAL));
}

#[test]
fn preadv_reads_at_its_offset_and_keeps_the_file_offset() {
    let vfs = Vfs::new();
    let t = vfs.task(Cred::root());
    let fd = file(&t, OpenFlags::RDWR);
    assert_eq!(t.pwrite(fd, b"abcd", 20), Ok(4));
    assert_eq!(t.pwrite(fd, b"0123456789", 0), Ok(10));
    assert_eq!(t.lseek(fd, 2, Whence::SET), Ok(2));
    let (mut a, mut b) = ([0u8; 3], [9u8; 2]);
    let n = t.preadv(
        fd,
        &mut [IoSliceMut::new(&mut a), IoSliceMut::new(&mut b)],
        20,
    );
    assert_eq!(n, Ok(4));
    assert_eq!((&a, &b[..1]), (b"abc", &b"d"[..]));
    assert_eq!(b[1], 9, "nothing read past the end");
    assert_eq!(t.lseek(fd, 0, Whence::CUR), Ok(2), "file offset untouched");
    let mut c = [0u8; 3];
    assert_eq!(t.preadv(fd, &mut [IoSliceMut::new(&mut c)], 5), Ok(3));
    assert_eq!(&c, b"567");
    assert_eq!(t.read(fd, &mut c), Ok(3));
    assert_eq!(&c, b"234", "the next read starts at the unmoved offset");
    assert_eq!(
        t.preadv(fd, &mut [IoSliceMut::new(&mut c)], -1),
        Err(Errno::EINVAL)
    );
}

#[test]
fn pwritev_on_an_append_file_appends_and_keeps_the_file_offset() {
    let vfs = Vfs::new();
    let t = vfs.task(Cred::root());
    let fd = file(&t, OpenFlags::RDWR);
    assert_eq!(t.write(fd, b"0123"), Ok(4));
    let ap = file(&t, OpenFlags::RDWR | OpenFlags::APPEND);
    assert_eq!(t.lseek(ap, 1, Whence::SET), Ok(1));
    assert_eq!(t.pwritev(ap, &[IoSlice::new(b"Z")], 0), Ok(1));
    assert_eq!(contents(&t), b"0123Z");
    assert_eq!(t.lseek(ap, 0, Whence::CUR), Ok(1));
}
