//! A ctime copied from another inode's stamp replaces an observed one: the directory an
//! unlink stamps with the victim's new ctime forgets that its old ctime was read, so its next
//! change in the same clock tick takes the coarse stamp again, not a fine-grained one (Linux:
//! `inode_set_ctime_to_ts()` clears `I_CTIME_QUERIED`; `shmem_unlink()` gives the directory the
//! victim's stamp). Whether a change falls in the same tick is up to the clock, so the check is
//! made only on attempts where the coarse clock did not move, and the test asserts that it made
//! at least one. Its own binary: a fine-grained stamp taken by another test in the process
//! would raise the stamp floor and move this test's coarse stamps.
//!
//! Oracle: Linux's multigrain timestamps (fs/inode.c, `inode_set_ctime_current()` and
//! `inode_set_ctime_to_ts()`); inside one tick the host cannot be compared reliably, so this is
//! a uvfs-only test.

use rustix::time::{clock_gettime, ClockId};
use uvfs::abi::{AtFlags, OpenFlags, AT_FDCWD};
use uvfs::{Cred, Vfs};

#[test]
fn a_directory_given_the_victims_stamp_takes_a_coarse_stamp_again_in_the_same_tick() {
    const ATTEMPTS: u32 = 200;
    let vfs = Vfs::new();
    let t = vfs.task(Cred::root());
    let mut checked = 0;
    for i in 0..ATTEMPTS {
        let d = format!("/d{i}");
        t.mkdirat(AT_FDCWD, &d, 0o755).expect("mkdir");
        let a = format!("{d}/a");
        let flags = OpenFlags::CREAT | OpenFlags::EXCL | OpenFlags::RDWR;
        let fd = t.openat(AT_FDCWD, &a, flags, 0o644).expect("create a");
        let tick = clock_gettime(ClockId::RealtimeCoarse);
        // Observe the directory's ctime, then unlink: the directory takes the victim's stamp.
        t.stat(&d).expect("stat d");
        t.unlinkat(AT_FDCWD, &a, AtFlags::empty())
            .expect("unlink a");
        // The next change of the directory, in the same tick if the clock allows.
        let b = t
            .openat(AT_FDCWD, format!("{d}/b"), flags, 0o644)
            .expect("create b");
        let same_tick = clock_gettime(ClockId::RealtimeCoarse) == tick;
        let victim = t.fstat(fd).expect("fstat a").ctime;
        let dir = t.stat(&d).expect("stat d").ctime;
        t.close(fd).expect("close");
        t.close(b).expect("close");
        if same_tick {
            assert_eq!(
                dir, victim,
                "attempt {i}: the create after the unlink, in the same tick, gave the directory a \
                 new ctime (a fine-grained stamp: the copied stamp did not clear the observation)"
            );
            checked += 1;
        }
    }
    assert!(
        checked > 0,
        "no attempt fell within one clock tick ({ATTEMPTS} tried)"
    );
}
