//! The lock-free walk and the locked walk it falls back to agree on every path.
//! Oracle: the locked walk (`WalkMode::Ref`, Linux ref-walk), which takes every component
//! through the directory lock; forcing it also forces every fallback the fast path has.

use uvfs::abi::{AtFlags, MountFlags, OpenFlags, AT_FDCWD};
use uvfs::vfs::WalkMode;
use uvfs::{Cred, Vfs};

#[test]
fn cached_walk_and_locked_walk_give_the_same_answers() {
    let vfs = Vfs::new();
    let t = vfs.task(Cred::root());
    for d in ["/a", "/a/b", "/a/b/c", "/m", "/locked"] {
        t.mkdirat(AT_FDCWD, d, 0o755).expect("mkdir");
    }
    t.fchmodat(AT_FDCWD, "/locked", 0o700, AtFlags::empty())
        .expect("chmod");
    let fd = t
        .openat(
            AT_FDCWD,
            "/a/b/c/f",
            OpenFlags::CREAT | OpenFlags::WRONLY,
            0o644,
        )
        .expect("create");
    t.close(fd).expect("close");
    t.symlinkat("b/c", AT_FDCWD, "/a/lc").expect("symlink");
    t.symlinkat("/a/b/c/f", AT_FDCWD, "/abs").expect("symlink");
    t.symlinkat("loop", AT_FDCWD, "/loop").expect("symlink");
    t.mount(None, "/m", Some("tmpfs"), MountFlags::empty(), None)
        .expect("mount");
    t.mkdirat(AT_FDCWD, "/m/inner", 0o755)
        .expect("mkdir in mount");
    let paths: &[&[u8]] = &[
        b"/a/b/c/f",
        b"/a/b/c/f/",
        b"/a/b/c",
        b"/a/b/c/",
        b"/a//b///c/f",
        b"/a/./b/../b/c/f",
        b"/a/lc/f",
        b"/a/lc",
        b"/abs",
        b"/loop",
        b"/missing",
        b"/a/missing/f",
        b"/a/b/c/f/x",
        b"/m/inner",
        b"/m/inner/..",
        b"/m/../a",
        b"/..",
        b"/../../a",
        b"a/b/c/f",
        b"",
        b"/locked/x",
        b"/a/b/c/f\0",
        b"/a/b/c/\xff",
    ];
    let user = vfs.task(Cred::user(1000, 1000, &[]));
    for task in [&t, &user] {
        for &p in paths {
            for flags in [AtFlags::empty(), AtFlags::SYMLINK_NOFOLLOW] {
                task.set_walk_mode(WalkMode::Rcu);
                let fast = task
                    .fstatat(AT_FDCWD, p, flags)
                    .map(|s| (s.ino, s.mode, s.nlink, s.size));
                let fast_open = task
                    .openat(AT_FDCWD, p, OpenFlags::PATH, 0)
                    .map(|fd| task.close(fd));
                task.set_walk_mode(WalkMode::Ref);
                let locked = task
                    .fstatat(AT_FDCWD, p, flags)
                    .map(|s| (s.ino, s.mode, s.nlink, s.size));
                let locked_open = task
                    .openat(AT_FDCWD, p, OpenFlags::PATH, 0)
                    .map(|fd| task.close(fd));
                assert_eq!(
                    fast,
                    locked,
                    "fstatat {:?} {flags:?}",
                    String::from_utf8_lossy(p)
                );
                assert_eq!(
                    fast_open.is_ok(),
                    locked_open.is_ok(),
                    "open {:?}",
                    String::from_utf8_lossy(p)
                );
            }
        }
    }
}
