//! Bad input gets Linux's errno, never a panic, and nothing already stored is lost.
//! Oracle: the errno Linux documents for each case (the conformance suite compares the same
//! cases with the host kernel); for the storm, the table in tests/storm, which
//! `crates/uvfs-conformance/tests/bad_input_host.rs` checks against the host kernel.

mod storm;

use std::io::{IoSlice, IoSliceMut};

use uvfs::abi::*;
use uvfs::{Cred, Errno, Task, Vfs};

fn setup() -> (Vfs, Task, i32) {
    let vfs = Vfs::new();
    let t = vfs.task(Cred::root());
    t.mkdirat(AT_FDCWD, "/d", 0o755).expect("mkdir");
    let fd = t
        .openat(
            AT_FDCWD,
            "/d/keep",
            OpenFlags::CREAT | OpenFlags::RDWR,
            0o644,
        )
        .expect("create");
    assert_eq!(t.write(fd, b"precious").expect("write"), 8);
    (vfs, t, fd)
}

fn assert_kept(t: &Task) {
    let fd = t
        .openat(AT_FDCWD, "/d/keep", OpenFlags::RDONLY, 0)
        .expect("still there");
    let mut b = [0u8; 16];
    let n = t.read(fd, &mut b).expect("read");
    assert_eq!(&b[..n], b"precious");
    t.close(fd).expect("close");
}

#[test]
fn malformed_paths_get_linux_errnos() {
    let (_v, t, _) = setup();
    let long_name = vec![b'a'; NAME_MAX + 1];
    let mut long_path = b"/d/".to_vec();
    long_path.extend(std::iter::repeat_n(b'x', PATH_MAX));
    let ok_name = vec![b'b'; NAME_MAX];
    let mut p = b"/d/".to_vec();
    p.extend_from_slice(&long_name);
    assert_eq!(
        t.openat(AT_FDCWD, &p, OpenFlags::CREAT | OpenFlags::WRONLY, 0o644),
        Err(Errno::ENAMETOOLONG)
    );
    assert_eq!(t.mkdirat(AT_FDCWD, &p, 0o755), Err(Errno::ENAMETOOLONG));
    assert_eq!(t.stat(&p), Err(Errno::ENAMETOOLONG));
    assert_eq!(t.stat(&long_path), Err(Errno::ENAMETOOLONG));
    assert_eq!(t.stat(""), Err(Errno::ENOENT));
    assert_eq!(
        t.openat(AT_FDCWD, "", OpenFlags::RDONLY, 0),
        Err(Errno::ENOENT)
    );
    assert_eq!(t.stat("/d/a\0b"), Err(Errno::EINVAL));
    assert_eq!(t.mkdirat(AT_FDCWD, "/d/nul\0", 0o755), Err(Errno::EINVAL));
    let mut q = b"/d/".to_vec();
    q.extend_from_slice(&ok_name);
    t.mkdirat(AT_FDCWD, &q, 0o755)
        .expect("NAME_MAX bytes is allowed");
    assert_eq!(t.mkdirat(AT_FDCWD, "/", 0o755), Err(Errno::EEXIST));
    assert_eq!(
        t.unlinkat(AT_FDCWD, "/d/.", AtFlags::empty()),
        Err(Errno::EISDIR)
    );
    assert_eq!(
        t.unlinkat(AT_FDCWD, "/d/.", AtFlags::REMOVEDIR),
        Err(Errno::EINVAL)
    );
    assert_eq!(
        t.unlinkat(AT_FDCWD, "/d/keep/", AtFlags::empty()),
        Err(Errno::ENOTDIR)
    );
    assert_eq!(t.stat("/d/keep/x"), Err(Errno::ENOTDIR));
    assert_eq!(t.symlinkat("", AT_FDCWD, "/d/l"), Err(Errno::ENOENT));
    assert_kept(&t);
}

#[test]
fn bad_fds_get_ebadf() {
    let (_v, t, fd) = setup();
    let mut b = [0u8; 4];
    for bad in [-1, -100, 999, 1 << 20, i32::MAX] {
        assert_eq!(t.read(bad, &mut b), Err(Errno::EBADF));
        assert_eq!(t.pwrite(bad, b"x", 0), Err(Errno::EBADF));
        assert_eq!(t.close(bad), Err(Errno::EBADF));
        assert_eq!(t.fstat(bad), Err(Errno::EBADF));
        assert_eq!(t.dup(bad), Err(Errno::EBADF));
        assert_eq!(t.getdents64(bad, &mut [0u8; 64]), Err(Errno::EBADF));
        assert_eq!(t.lseek(bad, 0, Whence::SET), Err(Errno::EBADF));
        assert_eq!(t.fsync(bad), Err(Errno::EBADF));
    }
    assert_eq!(t.dup2(fd, -1), Err(Errno::EBADF));
    assert_eq!(t.dup3(fd, fd, OpenFlags::CLOEXEC), Err(Errno::EINVAL));
    assert_eq!(t.dup3(fd, fd + 1, OpenFlags::APPEND), Err(Errno::EINVAL));
    // A relative path from a non-directory fd.
    assert_eq!(t.openat(fd, "x", OpenFlags::RDONLY, 0), Err(Errno::ENOTDIR));
    // The wrong kind of fd for the call.
    let dir = t
        .openat(AT_FDCWD, "/d", OpenFlags::DIRECTORY, 0)
        .expect("open dir");
    assert_eq!(t.read(dir, &mut b), Err(Errno::EISDIR));
    assert_eq!(t.write(dir, b"x"), Err(Errno::EBADF));
    assert_eq!(t.getdents64(fd, &mut [0u8; 64]), Err(Errno::ENOTDIR));
    assert_eq!(t.getdents64(dir, &mut [0u8; 8]), Err(Errno::EINVAL));
    let path = t
        .openat(AT_FDCWD, "/d/keep", OpenFlags::PATH, 0)
        .expect("O_PATH");
    assert_eq!(t.read(path, &mut b), Err(Errno::EBADF));
    assert_eq!(t.ftruncate(path, 0), Err(Errno::EBADF));
    assert_eq!(t.fchmod(path, 0o600), Err(Errno::EBADF));
    assert!(t.fstat(path).is_ok());
    let ro = t
        .openat(AT_FDCWD, "/d/keep", OpenFlags::RDONLY, 0)
        .expect("ro");
    assert_eq!(t.write(ro, b"x"), Err(Errno::EBADF));
    assert_eq!(t.ftruncate(ro, 0), Err(Errno::EINVAL));
    assert_eq!(
        t.fallocate(ro, FallocFlags::empty(), 0, 10),
        Err(Errno::EBADF)
    );
    assert_kept(&t);
}

#[test]
fn bad_offsets_and_lengths_get_einval_or_efbig() {
    let (_v, t, fd) = setup();
    let mut b = [0u8; 4];
    assert_eq!(t.pread(fd, &mut b, -1), Err(Errno::EINVAL));
    assert_eq!(t.pwrite(fd, b"x", -1), Err(Errno::EINVAL));
    assert_eq!(t.pwrite(fd, b"xy", i64::MAX), Err(Errno::EINVAL));
    // The last byte below the largest offset can be written; one more overflows the offset.
    assert_eq!(t.pwrite(fd, b"xy", i64::MAX - 1), Err(Errno::EINVAL));
    assert_eq!(t.pwrite(fd, b"x", i64::MAX - 1), Ok(1));
    assert_eq!(t.fstat(fd).expect("fstat").size, i64::MAX);
    assert_eq!(t.ftruncate(fd, 8), Ok(()));
    assert_eq!(t.lseek(fd, -1, Whence::SET), Err(Errno::EINVAL));
    assert_eq!(t.lseek(fd, 0, Whence(99)), Err(Errno::EINVAL));
    assert_eq!(t.lseek(fd, 100, Whence::DATA), Err(Errno::ENXIO));
    assert_eq!(t.ftruncate(fd, -1), Err(Errno::EINVAL));
    assert_eq!(t.truncate("/d/keep", -5), Err(Errno::EINVAL));
    assert_eq!(
        t.fallocate(fd, FallocFlags::empty(), -1, 10),
        Err(Errno::EINVAL)
    );
    assert_eq!(
        t.fallocate(fd, FallocFlags::empty(), 0, 0),
        Err(Errno::EINVAL)
    );
    assert_eq!(
        t.fallocate(fd, FallocFlags::PUNCH_HOLE, 0, 10),
        Err(Errno::EOPNOTSUPP)
    );
    assert_eq!(
        t.fallocate(fd, FallocFlags::empty(), i64::MAX, 10),
        Err(Errno::EFBIG)
    );
    let many: Vec<IoSlice<'_>> = (0..IOV_MAX + 1).map(|_| IoSlice::new(b"x")).collect();
    assert_eq!(t.writev(fd, &many), Err(Errno::EINVAL));
    let mut bufs = [[0u8; 1]; 2];
    let mut iov: Vec<IoSliceMut<'_>> = bufs.iter_mut().map(|b| IoSliceMut::new(b)).collect();
    assert!(t.preadv(fd, &mut iov, 0).is_ok());
    assert_eq!(
        t.utimensat(
            AT_FDCWD,
            Some(b"/d/keep"),
            Some([Timespec::new(0, 1_000_000_000), Timespec::new(0, 0)]),
            AtFlags::empty()
        ),
        Err(Errno::EINVAL)
    );
    assert_kept(&t);
}

#[test]
fn bad_flags_get_einval() {
    let (_v, t, _) = setup();
    assert_eq!(
        t.unlinkat(AT_FDCWD, "/d/keep", AtFlags::SYMLINK_FOLLOW),
        Err(Errno::EINVAL)
    );
    assert_eq!(
        t.renameat2(
            AT_FDCWD,
            "/d/keep",
            AT_FDCWD,
            "/d/k2",
            RenameFlags::from_bits_retain(0x80)
        ),
        Err(Errno::EINVAL)
    );
    assert_eq!(
        t.renameat2(
            AT_FDCWD,
            "/d/keep",
            AT_FDCWD,
            "/d/k2",
            RenameFlags::EXCHANGE | RenameFlags::NOREPLACE
        ),
        Err(Errno::EINVAL)
    );
    assert_eq!(
        t.linkat(AT_FDCWD, "/d/keep", AT_FDCWD, "/d/k2", AtFlags::REMOVEDIR),
        Err(Errno::EINVAL)
    );
    assert_eq!(
        t.fstatat(AT_FDCWD, "/d/keep", AtFlags::REMOVEDIR),
        Err(Errno::EINVAL)
    );
    assert_eq!(
        t.faccessat2(
            AT_FDCWD,
            "/d/keep",
            uvfs::abi::Access::from_bits_retain(8),
            AtFlags::empty()
        ),
        Err(Errno::EINVAL)
    );
    assert_eq!(
        t.statx(AT_FDCWD, "/d/keep", AtFlags::empty(), StatxMask::RESERVED),
        Err(Errno::EINVAL)
    );
    let how = OpenHow {
        flags: 1 << 40,
        mode: 0,
        resolve: 0,
    };
    assert_eq!(t.openat2(AT_FDCWD, "/d/keep", &how), Err(Errno::EINVAL));
    let how = OpenHow {
        flags: 0,
        mode: 0o644,
        resolve: 0,
    };
    assert_eq!(t.openat2(AT_FDCWD, "/d/keep", &how), Err(Errno::EINVAL));
    let how = OpenHow {
        flags: 0,
        mode: 0,
        resolve: 1 << 10,
    };
    assert_eq!(t.openat2(AT_FDCWD, "/d/keep", &how), Err(Errno::EINVAL));
    assert_eq!(
        t.setxattr("/d/keep", "user.a", b"v", XattrFlags::from_bits_retain(4)),
        Err(Errno::EINVAL)
    );
    assert_eq!(
        t.setxattr("/d/keep", "", b"v", XattrFlags::empty()),
        Err(Errno::ERANGE)
    );
    assert_eq!(
        t.setxattr("/d/keep", "bogus.a", b"v", XattrFlags::empty()),
        Err(Errno::EOPNOTSUPP)
    );
    assert_eq!(
        t.umount2("/d", UmountFlags::from_bits_retain(0x100)),
        Err(Errno::EINVAL)
    );
    assert_eq!(
        t.mknodat(AT_FDCWD, "/d/n", 0o170000 | 0o644, 0),
        Err(Errno::EINVAL)
    );
    assert_eq!(
        t.mknodat(AT_FDCWD, "/d/n", FileType::Directory.mode_bits() | 0o644, 0),
        Err(Errno::EPERM)
    );
    assert_kept(&t);
}

#[test]
fn exhausted_limits_get_emfile_and_enospc_and_keep_data() {
    let vfs = Vfs::with_root_options(Some("size=16k,nr_inodes=8")).expect("options");
    let t = vfs.task(Cred::root());
    let fd = t
        .openat(AT_FDCWD, "/keep", OpenFlags::CREAT | OpenFlags::RDWR, 0o644)
        .expect("create");
    t.write(fd, b"precious").expect("write");
    let big = vec![7u8; 64 * 1024];
    // 4 pages fit; the first page is taken by "precious": the write is short, not failed.
    let n = t.pwrite(fd, &big, 4096).expect("short write");
    assert_eq!(n, 3 * 4096);
    assert_eq!(t.pwrite(fd, &big, 64 * 1024), Err(Errno::ENOSPC));
    let mut b = [0u8; 8];
    t.pread(fd, &mut b, 0).expect("read");
    assert_eq!(&b, b"precious");
    let mut made = 0;
    for i in 0..20 {
        match t.mkdirat(AT_FDCWD, format!("/d{i}"), 0o755) {
            Ok(()) => made += 1,
            Err(e) => {
                assert_eq!(e, Errno::ENOSPC);
                break;
            }
        }
    }
    assert_eq!(made, 6, "8 inodes: root, keep and six more");
    t.set_nofile_limit(3).expect("limit");
    let _a = t.dup(fd).expect("fd 1");
    let _b = t.dup(fd).expect("fd 2");
    assert_eq!(t.dup(fd), Err(Errno::EMFILE));
    assert_eq!(
        t.openat(AT_FDCWD, "/keep", OpenFlags::RDONLY, 0),
        Err(Errno::EMFILE)
    );
    assert_eq!(t.fcntl(fd, FcntlCmd::DupFd(3)), Err(Errno::EINVAL));
}

/// The bad-input storm (tests/storm): 30,000 seeded calls of every family of the `Task` API,
/// mostly well-formed, 60 % with one hostile field; each must end with the errno Linux
/// returns for that field (the table `crates/uvfs-conformance/tests/bad_input_host.rs`
/// checks on the host kernel), or succeed. After the storm the protected file keeps its
/// bytes, mode and owner, and the storm task has exactly the fds it opened before.
#[test]
fn bad_input_storm_reaches_deep_and_gets_linux_errnos() {
    let mut u = storm::on_uvfs::OnUvfs::new();
    storm::prepare(&mut u);
    let mut stable: Vec<i32> = u.fds.values().copied().collect();
    stable.sort_unstable();
    assert_eq!(u.open_fds(), stable, "the storm task's files");
    let tally = storm::run(&mut u, storm::SEED, storm::CALLS);
    print!("{}", tally.report("bad-input storm on uvfs"));
    assert!(
        tally.wrong.is_empty(),
        "{} of {} calls had the wrong outcome; the first:\n{}",
        tally.wrong.len(),
        tally.ran,
        tally.wrong[..tally.wrong.len().min(40)].join("\n")
    );
    assert_eq!(tally.ran, storm::CALLS);
    assert_eq!(
        tally.by_family.len(),
        storm::FAMILIES,
        "every call family ran"
    );
    for h in storm::Hostile::ALL {
        assert!(
            tally.by_hostile.contains_key(&format!("{h:?}")),
            "no call had a {h:?} field"
        );
    }
    assert!(
        tally.past_lookup() * 2 > tally.ran,
        "most calls get past their argument checks and lookups"
    );
    assert!(
        tally.stage(storm::Stage::End) * 10 > tally.ran * 3,
        "over 30 % of the calls are well-formed and run to the end"
    );
    let mut b = [0u8; 16];
    let fd = u
        .root
        .openat(AT_FDCWD, storm::KEEP, OpenFlags::RDONLY, 0)
        .expect("open the protected file");
    let n = u.root.read(fd, &mut b).expect("read");
    assert_eq!(&b[..n], storm::KEEP_DATA);
    let st = u.root.stat(storm::KEEP).expect("stat");
    assert_eq!((st.mode, st.uid, st.gid), (storm::KEEP_MODE, 0, 0));
    assert_eq!(u.open_fds(), stable, "no fd leaked, none lost");
}
