//! One read moves at most `MAX_RW_COUNT` bytes, `INT_MAX` rounded down to a page: 2,147,479,552
//! (Linux: `rw_verify_area()` caps the count, include/linux/fs.h). A read of 2 GiB from a
//! sparse 3 GiB file returns that many bytes.
//!
//! Oracle: the kernel's constant and `read(2)`'s NOTES ("On Linux, read() (and similar system
//! calls) will transfer at most 0x7ffff000 (2,147,479,552) bytes"). The case language cannot
//! carry a 2 GiB buffer to the host, so this is not a differential case. The buffer is 2 GiB of
//! memory, touched once (the hole's zeros are written into it).

use uvfs::abi::{OpenFlags, AT_FDCWD};
use uvfs::{Cred, Vfs};

/// `read(2)`'s documented limit.
const MAX_RW_COUNT: usize = 0x7fff_f000;

#[test]
fn a_read_moves_at_most_max_rw_count_bytes() {
    let vfs = Vfs::new();
    let t = vfs.task(Cred::root());
    let fd = t
        .openat(AT_FDCWD, "/f", OpenFlags::CREAT | OpenFlags::RDWR, 0o644)
        .expect("create");
    t.ftruncate(fd, 3 << 30).expect("a sparse 3 GiB file");
    let mut buf = vec![0u8; 1 << 31];
    assert_eq!(t.pread(fd, &mut buf, 0), Ok(MAX_RW_COUNT), "pread");
    // What is past the cap comes with the next call. (`read`, `write` and the vectored calls
    // share the cap; one 2 GiB transfer is what this test can afford.)
    assert_eq!(t.pread(fd, &mut buf[..4096], MAX_RW_COUNT as i64), Ok(4096));
    assert_eq!(t.close(fd), Ok(()));
}
