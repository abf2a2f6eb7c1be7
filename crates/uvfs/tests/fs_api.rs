//! `uvfs::fs` beyond what `std::fs` on the host can be compared with (tests/fs_std.rs does
//! that): views with other credentials, roots and working directories, threads, `File`'s own
//! rules, error messages. The oracle is Linux's rule for each (path_resolution(7), chroot(2),
//! open(2), dup(2)), as the syscall-shaped calls under the layer already implement and the
//! differential suite checks.

use std::collections::BTreeSet;
use std::io::{ErrorKind, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use uvfs::abi::{Access, AT_FDCWD};
use uvfs::fs::{errno, Fs, OpenOptions, Permissions};
use uvfs::{Cred, Errno};

fn errno_of<T: std::fmt::Debug>(r: std::io::Result<T>) -> Errno {
    errno(&r.expect_err("the call must fail")).expect("an errno")
}

#[test]
fn another_user_meets_linux_permission_checks() {
    let fs = Fs::new();
    fs.create_dir_all("/home/u").unwrap();
    fs.chown("/home/u", Some(1000), Some(1000)).unwrap();
    fs.write("/secret", "root only").unwrap();
    fs.set_permissions("/secret", Permissions::from_mode(0o600))
        .unwrap();
    let user = fs.as_user(Cred::user(1000, 1000, &[]));

    assert_eq!(errno_of(user.read("/secret")), Errno::EACCES);
    assert_eq!(
        user.read("/secret").unwrap_err().kind(),
        ErrorKind::PermissionDenied
    );
    assert!(!user.access("/secret", Access::READ).unwrap());
    assert!(fs.access("/secret", Access::READ).unwrap());
    // A fresh tree's root is a tmpfs root: 1777, as Linux mounts tmpfs.
    assert_eq!(fs.metadata("/").unwrap().mode() & 0o7777, 0o1777);
    user.create_dir("/x").unwrap();
    assert_eq!(errno_of(user.create_dir("/home/x")), Errno::EACCES);
    assert_eq!(
        errno_of(user.set_permissions("/secret", Permissions::from_mode(0o644))),
        Errno::EPERM
    );
    assert_eq!(errno_of(user.chroot("/home")), Errno::EPERM);

    user.write("/home/u/mine", "hi").unwrap();
    let m = fs.metadata("/home/u/mine").unwrap();
    assert_eq!((m.uid(), m.gid(), m.mode() & 0o777), (1000, 1000, 0o644));
    assert_eq!(user.cred().fsuid, 1000);
}

#[test]
fn a_chrooted_view_cannot_leave_its_root() {
    let fs = Fs::new();
    fs.create_dir_all("/jail/in").unwrap();
    fs.write("/outside", "x").unwrap();
    fs.symlink("/outside", "/jail/in/abs").unwrap();
    fs.symlink("../../../outside", "/jail/in/rel").unwrap();
    let j = fs.chroot("/jail").unwrap();
    assert!(j.exists("/in").unwrap());
    assert!(!j.exists("/outside").unwrap());
    // `..` at the root is the root; symlinks resolve inside.
    assert_eq!(j.canonicalize("/in/../../..").unwrap(), Path::new("/"));
    assert_eq!(errno_of(j.metadata("/in/abs")), Errno::ENOENT);
    assert_eq!(errno_of(j.metadata("/in/rel")), Errno::ENOENT);
    let names: Vec<_> = j
        .read_dir("/..")
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["in"]);
    assert_eq!(j.current_dir().unwrap(), Path::new("/"));
    assert_eq!(errno_of(fs.chroot("/outside")), Errno::ENOTDIR);
}

#[test]
fn relative_paths_resolve_from_the_views_working_directory() {
    let fs = Fs::new();
    fs.create_dir_all("/w/sub").unwrap();
    let w = fs.with_current_dir("/w").unwrap();
    w.write("sub/f", "rel").unwrap();
    assert_eq!(fs.read_to_string("/w/sub/f").unwrap(), "rel");
    assert_eq!(w.current_dir().unwrap(), Path::new("/w"));
    assert_eq!(fs.current_dir().unwrap(), Path::new("/"));
    assert_eq!(
        w.canonicalize("sub/../sub/f").unwrap(),
        Path::new("/w/sub/f")
    );
    // A clone is the same view.
    assert_eq!(w.clone().read_to_string("sub/f").unwrap(), "rel");
    // The umask applies to what a view creates.
    let tight = fs.with_umask(0o077);
    tight.write("/w/private", "").unwrap();
    tight.create_dir("/w/pdir").unwrap();
    assert_eq!(fs.metadata("/w/private").unwrap().mode() & 0o777, 0o600);
    assert_eq!(fs.metadata("/w/pdir").unwrap().mode() & 0o777, 0o700);
    assert_eq!(errno_of(fs.with_current_dir("/w/private")), Errno::ENOTDIR);
}

#[test]
fn threads_share_one_view_and_files_move_between_them() {
    const THREADS: usize = 4;
    const FILES: usize = 50;
    let fs = Fs::new();
    fs.create_dir("/t").unwrap();
    let checked: usize = std::thread::scope(|s| {
        let handles: Vec<_> = (0..THREADS)
            .map(|t| {
                let fs = &fs;
                s.spawn(move || {
                    let mut n = 0;
                    for i in 0..FILES {
                        let p = format!("/t/{t}-{i}");
                        fs.write(&p, p.as_bytes()).unwrap();
                        assert_eq!(fs.read(&p).unwrap(), p.as_bytes());
                        n += 1;
                    }
                    n
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).sum()
    });
    assert_eq!(checked, THREADS * FILES);
    assert_eq!(fs.read_dir("/t").unwrap().count(), THREADS * FILES);

    // A file opened on one thread is used on another, with the view's credentials there.
    let mut f = fs.create("/t/moved").unwrap();
    f.write_all(b"from main ").unwrap();
    let f = std::thread::spawn(move || {
        f.write_all(b"and from a thread").unwrap();
        f
    })
    .join()
    .unwrap();
    drop(f);
    assert_eq!(
        fs.read_to_string("/t/moved").unwrap(),
        "from main and from a thread"
    );
}

#[test]
fn a_file_follows_open_and_dup_rules() {
    let fs = Fs::new();
    fs.write("/f", "0123456789").unwrap();
    let mut a = fs.open("/f").unwrap();
    let mut b = a.try_clone().unwrap();
    let mut buf = [0u8; 4];
    a.read_exact(&mut buf).unwrap();
    // One description, one position (dup(2)).
    b.read_exact(&mut buf).unwrap();
    assert_eq!(&buf, b"4567");
    assert_eq!(a.stream_position().unwrap(), 8);
    // pread leaves the position alone.
    assert_eq!(a.read_at(&mut buf, 1).unwrap(), 4);
    assert_eq!(&buf, b"1234");
    assert_eq!(a.seek(SeekFrom::Current(1)).unwrap(), 9);
    assert_eq!(errno_of(a.seek(SeekFrom::Current(-10))), Errno::EINVAL);
    assert_eq!(errno_of(a.read_at(&mut buf, u64::MAX)), Errno::EINVAL);
    // Opened for reading only: writing is EBADF, and the message names the file.
    let e = (&a).write(b"x").unwrap_err();
    assert_eq!(errno(&e), Some(Errno::EBADF));
    assert!(e.to_string().contains("\"/f\""), "{e}");
    assert_eq!(errno_of(a.set_len(0)), Errno::EINVAL);

    // A file outlives its name, and says so in errors.
    let w = OpenOptions::new()
        .read(true)
        .write(true)
        .open(&fs, "/f")
        .unwrap();
    fs.remove_file("/f").unwrap();
    w.write_all_at(b"still here", 0).unwrap();
    let mut s = String::new();
    (&w).read_to_string(&mut s).unwrap();
    assert_eq!(s, "still here");
    assert_eq!(w.metadata().unwrap().nlink(), 0);
    let e = (&a).write(b"x").unwrap_err();
    assert!(e.to_string().contains("(deleted)"), "{e}");

    // A file takes no fd: far more than RLIMIT_NOFILE's default stay open at once.
    let many: Vec<_> = (0..2000)
        .map(|i| fs.create(format!("/n{i}")).unwrap())
        .collect();
    assert_eq!(many.len(), 2000);

    // Into a task's fd table, for the syscall-shaped calls.
    fs.write("/g", "via fd").unwrap();
    let g = fs.open("/g").unwrap();
    let task = fs.task();
    let fd = g.install(&task).unwrap();
    let mut raw = [0u8; 6];
    assert_eq!(task.pread(fd, &mut raw, 0).unwrap(), 6);
    assert_eq!(&raw, b"via fd");
    task.close(fd).unwrap();
    assert_eq!(g.read_at(&mut raw, 0).unwrap(), 6);
    assert!(task
        .fstatat(AT_FDCWD, "/g", uvfs::abi::AtFlags::empty())
        .is_ok());
}

#[test]
fn errors_name_the_operation_and_the_paths_and_keep_the_errno() {
    let fs = Fs::new();
    let e = fs.read("/nope").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound);
    assert_eq!(errno(&e), Some(Errno::ENOENT));
    assert_eq!(
        e.to_string(),
        "failed to open file \"/nope\": No such file or directory (os error 2)"
    );
    let inner = e
        .get_ref()
        .unwrap()
        .downcast_ref::<uvfs::fs::Error>()
        .unwrap();
    assert_eq!(
        (inner.op(), inner.path()),
        ("open file", Path::new("/nope"))
    );
    let src = std::error::Error::source(inner).unwrap();
    let os = src.downcast_ref::<std::io::Error>().unwrap();
    assert_eq!(os.raw_os_error(), Some(2));

    fs.write("/a", "").unwrap();
    let e = fs.rename("/a", "/missing/b").unwrap_err();
    assert_eq!(
        e.to_string(),
        "failed to rename \"/a\" to \"/missing/b\": No such file or directory (os error 2)"
    );
    // Plain OS errors work with the helper too.
    assert_eq!(
        errno(&std::io::Error::from_raw_os_error(13)),
        Some(Errno::EACCES)
    );
    assert_eq!(errno(&std::io::Error::other("not an os error")), None);
    // Bad names get Linux's errno, never a panic.
    assert_eq!(errno_of(fs.write("/a\0b", "")), Errno::EINVAL);
    let long = format!("/{}", "n".repeat(256));
    assert_eq!(errno_of(fs.write(&long, "")), Errno::ENAMETOOLONG);
    assert_eq!(errno_of(fs.create_dir("")), Errno::ENOENT);
}

#[test]
fn times_before_the_epoch_and_with_nanoseconds_round_trip() {
    let fs = Fs::new();
    fs.write("/t", "").unwrap();
    let before = SystemTime::UNIX_EPOCH - Duration::new(86_400, 250_000_000);
    let later = SystemTime::UNIX_EPOCH + Duration::new(1_700_000_000, 123_456_789);
    fs.set_times("/t", Some(before), Some(later)).unwrap();
    let m = fs.metadata("/t").unwrap();
    assert_eq!(m.accessed().unwrap(), before);
    assert_eq!(m.modified().unwrap(), later);
    assert_eq!(m.atime().sec, -86_401);
    assert_eq!(m.atime().nsec, 750_000_000);
    // Only the access time.
    fs.set_times("/t", Some(later), None).unwrap();
    let m2 = fs.metadata("/t").unwrap();
    assert_eq!(
        (m2.accessed().unwrap(), m2.modified().unwrap()),
        (later, later)
    );
    assert!(m2.created().unwrap() <= SystemTime::now());
}

#[test]
fn a_listing_returns_each_unchanged_entry_once_while_the_directory_changes() {
    let fs = Fs::new();
    fs.create_dir("/d").unwrap();
    let all: BTreeSet<String> = (0..300).map(|i| format!("e{i}")).collect();
    for n in &all {
        fs.write(format!("/d/{n}"), "").unwrap();
    }
    let mut seen = Vec::new();
    for (k, e) in fs.read_dir("/d").unwrap().enumerate() {
        let name = e.unwrap().file_name().into_string().unwrap();
        // Remove what was listed, add names that may or may not show up.
        fs.remove_file(format!("/d/{name}")).unwrap();
        if k % 10 == 0 {
            fs.write(format!("/d/new{k}"), "").unwrap();
        }
        seen.push(name);
    }
    let old: Vec<_> = seen.iter().filter(|n| all.contains(*n)).cloned().collect();
    let unique: BTreeSet<_> = old.iter().cloned().collect();
    assert_eq!(old.len(), unique.len(), "an entry listed twice");
    assert_eq!(unique, all, "an unchanged entry missed");
}

#[test]
fn extended_attributes_set_read_list_and_remove() {
    let fs = Fs::new();
    fs.write("/x", "").unwrap();
    assert_eq!(fs.get_xattr("/x", "user.a").unwrap(), None);
    fs.set_xattr("/x", "user.a", b"1").unwrap();
    fs.set_xattr("/x", "user.b", &[0u8; 300]).unwrap();
    assert_eq!(fs.get_xattr("/x", "user.a").unwrap().unwrap(), b"1");
    assert_eq!(fs.get_xattr("/x", "user.b").unwrap().unwrap().len(), 300);
    let mut names = fs.list_xattr("/x").unwrap();
    names.sort();
    assert_eq!(names, ["user.a", "user.b"]);
    fs.remove_xattr("/x", "user.a").unwrap();
    assert_eq!(errno_of(fs.remove_xattr("/x", "user.a")), Errno::ENODATA);
    assert_eq!(
        errno_of(fs.set_xattr("/x", "bogus.a", b"")),
        Errno::EOPNOTSUPP
    );
    let user = fs.as_user(Cred::user(1000, 1000, &[]));
    assert_eq!(
        errno_of(user.set_xattr("/x", "trusted.t", b"")),
        Errno::EPERM
    );
}

#[test]
fn remove_dir_all_takes_deep_trees_and_leaves_symlinked_ones() {
    let fs = Fs::new();
    // Deeper than PATH_MAX: removal works from directory fds.
    let mut p = PathBuf::from("/deep");
    fs.create_dir(&p).unwrap();
    let keep = fs.with_current_dir("/deep").unwrap();
    let mut cur = keep;
    for _ in 0..40 {
        let name = "d".repeat(200);
        cur.create_dir(&name).unwrap();
        cur.write("f", "").unwrap();
        cur = cur.with_current_dir(&name).unwrap();
        p.push(&name);
    }
    assert!(p.as_os_str().len() > uvfs::abi::PATH_MAX);
    fs.create_dir_all("/kept/inside").unwrap();
    fs.symlink("/kept", "/deep/link").unwrap();
    fs.remove_dir_all("/deep").unwrap();
    assert!(!fs.exists("/deep").unwrap());
    assert!(fs.exists("/kept/inside").unwrap());
    fs.symlink("/kept", "/lnk").unwrap();
    fs.remove_dir_all("/lnk").unwrap();
    assert!(fs.exists("/kept/inside").unwrap());
    assert_eq!(errno_of(fs.remove_dir_all("/nope")), Errno::ENOENT);
}

#[test]
fn access_custom_flags_huge_reads_and_wide_removals_keep_linux_and_std_rules() {
    let fs = Fs::new();
    fs.write("/f", "x").unwrap();
    // access: only EACCES (and EROFS) are "no"; a missing path is an error (access(2)).
    assert_eq!(errno_of(fs.access("/nope", Access::READ)), Errno::ENOENT);
    assert_eq!(errno_of(fs.access("/f/x", Access::READ)), Errno::ENOTDIR);
    assert!(fs.access("/f", Access::empty()).unwrap());
    // custom_flags cannot change the access mode (std: "the access mode bits are ignored").
    let f = OpenOptions::new()
        .read(true)
        .custom_flags(uvfs::abi::OpenFlags::RDWR)
        .open(&fs, "/f")
        .unwrap();
    assert_eq!(errno_of((&f).write(b"y")), Errno::EBADF);
    // A size the heap cannot hold is OutOfMemory, as std says, not an abort.
    fs.create("/huge").unwrap().set_len(1 << 50).unwrap();
    let e = fs.read("/huge").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::OutOfMemory);
    // More directories than the fd limit: remove_dir_all closes what it opens.
    for i in 0..1100 {
        fs.create_dir_all(format!("/wide/d{i}/e")).unwrap();
    }
    fs.remove_dir_all("/wide").unwrap();
    assert!(!fs.exists("/wide").unwrap());
}
