//! `uvfs::fs::pipefs::set_vanilla_pipe_times`: anonymous pipes do no timestamp work by default
//! (Linux since 2025); with the switch on, a read moves the atime and a write mtime and ctime,
//! as pre-2025 Linux did on its strictatime `pipe_mnt`. Its own test binary: the switch is
//! process-wide.
//!
//! Oracle: pre-2025 Linux `pipe_read()` → `file_accessed()` and `pipe_write()` →
//! `file_update_time()`, on a mount without relatime: every read or write in a new tick of the
//! coarse clock stamps.

use std::time::Duration;

use uvfs::abi::{OpenFlags, Stat};
use uvfs::{Cred, Task, Vfs};

/// Longer than a tick of the coarse clock (at most 10 ms at HZ=100).
const TICK: Duration = Duration::from_millis(25);

fn round(t: &Task, r: i32, w: i32) -> (Stat, Stat) {
    let before = t.fstat(r).expect("fstat");
    std::thread::sleep(TICK);
    assert_eq!(t.write(w, b"x").expect("write"), 1);
    let mut b = [0u8; 1];
    assert_eq!(t.read(r, &mut b).expect("read"), 1);
    (before, t.fstat(r).expect("fstat"))
}

#[test]
fn anonymous_pipe_times_move_only_with_the_vanilla_switch() {
    let vfs = Vfs::new();
    let t = vfs.task(Cred::root());
    let [r, w] = t.pipe2(OpenFlags::empty()).expect("pipe2");
    assert!(!uvfs::fs::pipefs::vanilla_pipe_times(), "off by default");
    let (before, after) = round(&t, r, w);
    assert_eq!(
        (after.atime, after.mtime, after.ctime),
        (before.atime, before.mtime, before.ctime),
        "no timestamp work by default"
    );
    uvfs::fs::pipefs::set_vanilla_pipe_times(true);
    let (before, after) = round(&t, r, w);
    uvfs::fs::pipefs::set_vanilla_pipe_times(false);
    assert!(after.atime > before.atime, "a read stamps the atime");
    assert!(after.mtime > before.mtime, "a write stamps the mtime");
    assert!(after.ctime > before.ctime, "and the ctime");
    // A read alone stamps only the atime; a write alone mtime and ctime.
    uvfs::fs::pipefs::set_vanilla_pipe_times(true);
    let s0 = t.fstat(r).expect("fstat");
    std::thread::sleep(TICK);
    t.write(w, b"y").expect("write");
    let s1 = t.fstat(r).expect("fstat");
    std::thread::sleep(TICK);
    let mut b = [0u8; 1];
    t.read(r, &mut b).expect("read");
    let s2 = t.fstat(r).expect("fstat");
    uvfs::fs::pipefs::set_vanilla_pipe_times(false);
    assert_eq!(s1.atime, s0.atime, "a write leaves the atime");
    assert!(s1.mtime > s0.mtime && s1.ctime > s0.ctime);
    assert!(s2.atime > s1.atime, "a read stamps the atime");
    assert_eq!(
        (s2.mtime, s2.ctime),
        (s1.mtime, s1.ctime),
        "and leaves the rest"
    );
    // Off again: nothing moves.
    let (before, after) = round(&t, r, w);
    assert_eq!(
        (after.atime, after.mtime),
        (before.atime, before.mtime),
        "off again"
    );
}
