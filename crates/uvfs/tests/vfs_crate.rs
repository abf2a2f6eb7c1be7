//! `uvfs::vfs_crate::UvfsFS`, the `vfs` crate's `FileSystem` over uvfs.
//!
//! Oracles: the `vfs` crate's own conformance suites (`vfs::test_vfs!` and
//! `vfs::test_vfs_readonly!`, feature `export-test-macros`), run here unchanged on a fresh
//! uvfs tree per test; its `MemoryFS` and `PhysicalFS` (on the host), which must give the
//! same answers as uvfs to the same `VfsPath` code; and Linux's rule for what the suites do
//! not ask (open(2) `O_APPEND`, rename(2) `EXDEV`, utimensat(2), path_resolution(7)).

use std::io::{Read, Seek, SeekFrom, Write};
use std::time::{Duration, SystemTime};

use uvfs::abi::MountFlags;
use uvfs::fs::{errno, Fs};
use uvfs::vfs_crate::UvfsFS;
use uvfs::{Cred, Errno};
use vfs::error::VfsErrorKind;
use vfs::{FileSystem, MemoryFS, PhysicalFS, VfsError, VfsFileType, VfsPath, VfsResult};

/// The `vfs` crate's read-write suite, each test on a fresh tree.
// Reason: the lint is about the `vfs` crate's code in the expansion, run unchanged.
#[allow(clippy::useless_vec)]
mod suite {
    use super::*;
    vfs::test_vfs!(UvfsFS::new());
}

/// The tree `vfs::test_vfs_readonly!` reads: the one the `vfs` crate keeps in
/// test/test_directory, made in a fresh uvfs tree.
fn readonly_fixture() -> UvfsFS {
    let fs = Fs::new();
    for d in ["/a/x/y/z", "/a.txt.dir", "/c"] {
        fs.create_dir_all(d).expect("mkdir -p");
    }
    for (f, data) in [
        ("/a.txt", "a"),
        ("/b.txt", "b"),
        ("/a/d.txt", "d"),
        ("/a.txt.dir/g.txt", "g"),
        ("/c/e.txt", "e"),
    ] {
        fs.write(f, data).expect("write");
    }
    UvfsFS::from_fs(fs)
}

/// The `vfs` crate's read-only suite on that tree.
// Reason: as for `suite`.
#[allow(clippy::useless_vec)]
mod readonly_suite {
    use super::*;
    vfs::test_vfs_readonly!(readonly_fixture());
}

fn errno_in(e: &VfsError) -> Option<Errno> {
    match e.kind() {
        VfsErrorKind::IoError(io) => errno(io),
        _ => None,
    }
}

/// What one program written against `VfsPath` sees, step by step; run on `MemoryFS`,
/// `PhysicalFS` and uvfs with only the root's line changed.
fn everyday(root: VfsPath) -> VfsResult<Vec<String>> {
    let mut seen = Vec::new();
    root.join("src/bin")?.create_dir_all()?;
    write!(root.join("src/main.rs")?.create_file()?, "fn main() {{}}")?;
    write!(root.join("src/bin/tool.rs")?.create_file()?, "// tool")?;
    writeln!(root.join("log")?.create_file()?, "one")?;
    writeln!(root.join("log")?.append_file()?, "two")?;
    seen.push(root.join("log")?.read_to_string()?);
    let mut all: Vec<String> = root
        .walk_dir()?
        .map(|p| p.map(|p| p.as_str().to_string()))
        .collect::<VfsResult<_>>()?;
    all.sort();
    seen.push(all.join(" "));
    for p in ["src", "src/main.rs", "log", "nope"] {
        let p = root.join(p)?;
        seen.push(format!("{} {} {}", p.as_str(), p.exists()?, p.is_dir()?));
        if let Ok(m) = p.metadata() {
            seen.push(format!("{:?} {}", m.file_type, m.len));
        }
    }
    root.join("src/main.rs")?
        .copy_file(&root.join("main.bak")?)?;
    seen.push(format!(
        "copied, source kept: {}",
        root.join("src/main.rs")?.exists()?
    ));
    root.join("src")?.move_dir(&root.join("code")?)?;
    root.join("log")?.move_file(&root.join("code/log")?)?;
    let mut top: Vec<String> = root.read_dir()?.map(|p| p.filename()).collect();
    top.sort();
    seen.push(top.join(" "));
    seen.push(root.join("main.bak")?.read_to_string()?);
    // Failures: only that they fail and whether the file was missing, since the two
    // backends word the other kinds differently (see docs/divergences.md).
    let missing = |r: VfsResult<()>| match r {
        Ok(()) => "ok".to_string(),
        Err(e) => format!(
            "err not-found={}",
            matches!(e.kind(), VfsErrorKind::FileNotFound)
        ),
    };
    seen.push(missing(root.join("code")?.remove_dir()));
    seen.push(missing(root.join("gone")?.remove_file()));
    seen.push(missing(root.join("gone")?.open_file().map(drop)));
    seen.push(missing(root.join("gone")?.append_file().map(drop)));
    seen.push(missing(root.join("a/b")?.create_file().map(drop)));
    seen.push(missing(
        root.join("main.bak")?.copy_file(&root.join("code/log")?),
    ));
    root.join("code")?.remove_dir_all()?;
    seen.push(format!("{}", root.join("code")?.exists()?));
    Ok(seen)
}

#[test]
fn the_same_vfspath_code_sees_the_same_on_memoryfs_physicalfs_and_uvfs() {
    let memory = everyday(MemoryFS::new().into()).expect("on MemoryFS");
    let uvfs = everyday(UvfsFS::new().into()).expect("on uvfs");
    assert_eq!(memory, uvfs);
    // And on the host's filesystem through `PhysicalFS`, in a directory of its own.
    let host_dir = std::env::temp_dir().join(format!("uvfs-vfs-crate-{}", std::process::id()));
    std::fs::create_dir(&host_dir).expect("a fresh host directory");
    let host = everyday(PhysicalFS::new(&host_dir).into());
    std::fs::remove_dir_all(&host_dir).expect("clean up");
    assert_eq!(host.expect("on PhysicalFS"), uvfs);
    // The program looked at something: the append, the walk, the failures.
    assert_eq!(memory[0], "one\ntwo\n");
    assert_eq!(memory.len(), 19, "{memory:#?}");
}

/// `append_file` is `O_APPEND`: a write goes to the end even after a seek back (open(2)).
#[test]
fn append_file_writes_at_the_end_after_a_seek() {
    let root: VfsPath = UvfsFS::new().into();
    let p = root.join("f").unwrap();
    p.create_file().unwrap().write_all(b"abc").unwrap();
    let mut f = p.append_file().unwrap();
    f.seek(SeekFrom::Start(0)).unwrap();
    f.write_all(b"de").unwrap();
    drop(f);
    assert_eq!(p.read_to_string().unwrap(), "abcde");
}

/// The `io::Error` of `uvfs::fs` stays inside: the errno Linux gives, and a message that
/// names the operation.
#[test]
fn errors_keep_the_errno_linux_gives() {
    let root: VfsPath = UvfsFS::new().into();
    root.join("d/e").unwrap().create_dir_all().unwrap();
    root.join("f").unwrap().create_file().unwrap();
    let e = root.join("d").unwrap().remove_dir().unwrap_err();
    assert_eq!(errno_in(&e), Some(Errno::ENOTEMPTY), "{e}");
    assert!(e.to_string().contains("failed to remove directory"), "{e}");
    let e = root.join("d").unwrap().remove_file().unwrap_err();
    assert_eq!(errno_in(&e), Some(Errno::EISDIR), "{e}");
    let e = root.join("f").unwrap().remove_dir().unwrap_err();
    assert_eq!(errno_in(&e), Some(Errno::ENOTDIR), "{e}");
    let e = root.join("nope").unwrap().read_dir().map(drop).unwrap_err();
    assert!(matches!(e.kind(), VfsErrorKind::FileNotFound), "{e}");
    let e = root.join("f").unwrap().read_dir().map(drop).unwrap_err();
    assert_eq!(errno_in(&e), Some(Errno::ENOTDIR), "{e}");
    // `stat` of "/f/x" is `ENOTDIR`: nothing can be there, so it does not exist.
    assert!(!root.join("f/x").unwrap().exists().unwrap());
    // The trait's own kinds where it has them.
    let fs = UvfsFS::new();
    fs.create_dir("/d").unwrap();
    fs.create_file("/f").unwrap();
    assert!(matches!(
        fs.create_dir("/d").unwrap_err().kind(),
        VfsErrorKind::DirectoryExists
    ));
    assert!(matches!(
        fs.create_dir("/f").unwrap_err().kind(),
        VfsErrorKind::FileExists
    ));
    assert!(matches!(
        fs.metadata("/nope").unwrap_err().kind(),
        VfsErrorKind::FileNotFound
    ));
    assert!(matches!(
        fs.metadata("/a\0b").unwrap_err().kind(),
        VfsErrorKind::InvalidPath
    ));
}

/// The view's credentials hold: another user meets Linux's permission checks.
#[test]
fn a_view_as_another_user_gets_eacces() {
    let fs = Fs::new();
    fs.create_dir("/root-only").unwrap();
    fs.set_permissions("/root-only", uvfs::fs::Permissions::from_mode(0o700))
        .unwrap();
    let user: VfsPath = UvfsFS::from_fs(fs.as_user(Cred::user(1000, 1000, &[]))).into();
    let e = user
        .join("root-only/x")
        .unwrap()
        .create_file()
        .map(drop)
        .unwrap_err();
    // `VfsPath::create_file` asks `exists` of the parent first: `stat` of it is allowed,
    // the create inside is not.
    assert_eq!(errno_in(&e), Some(Errno::EACCES), "{e}");
    let e = user
        .join("root-only")
        .unwrap()
        .read_dir()
        .map(drop)
        .unwrap_err();
    assert_eq!(errno_in(&e), Some(Errno::EACCES), "{e}");
    let e = user.join("x/y").unwrap();
    assert!(!e.exists().unwrap());
    let e = user
        .join("root-only/x")
        .unwrap()
        .exists()
        .expect_err("search permission is missing, so existence is unknown");
    assert_eq!(errno_in(&e), Some(Errno::EACCES), "{e}");
}

/// The `vfs` root is the view's root: `..` stops there (path_resolution(7)).
#[test]
fn a_chrooted_view_cannot_be_left() {
    let fs = Fs::new();
    fs.create_dir("/jail").unwrap();
    fs.write("/secret", "s").unwrap();
    fs.write("/jail/inside", "i").unwrap();
    let jail = UvfsFS::from_fs(fs.chroot("/jail").unwrap());
    assert!(jail.exists("/inside").unwrap());
    assert!(!jail.exists("/../secret").unwrap());
    assert!(!jail.exists("/secret").unwrap());
    let mut names: Vec<String> = jail.read_dir("").unwrap().collect();
    names.sort();
    assert_eq!(names, ["inside"]);
}

/// `rename` across a mount is `EXDEV`; the backend says `NotSupported`, and `VfsPath` then
/// copies and removes, so a move into a mounted tmpfs still works.
#[test]
fn a_move_across_a_mount_falls_back_to_copying() {
    let fs = Fs::new();
    fs.create_dir("/mnt").unwrap();
    fs.task()
        .mount(None, "/mnt", Some("tmpfs"), MountFlags::empty(), None)
        .expect("mount tmpfs");
    assert_eq!(
        errno(&fs.rename("/mnt", "/x").unwrap_err()),
        Some(Errno::EBUSY)
    );
    fs.write("/f", "data").unwrap();
    fs.create_dir_all("/d/e").unwrap();
    fs.write("/d/e/g", "deep").unwrap();
    let backend = UvfsFS::from_fs(fs.clone());
    assert!(matches!(
        backend.move_file("/f", "/mnt/f").unwrap_err().kind(),
        VfsErrorKind::NotSupported
    ));
    let root: VfsPath = backend.into();
    root.join("f")
        .unwrap()
        .move_file(&root.join("mnt/f").unwrap())
        .unwrap();
    root.join("d")
        .unwrap()
        .move_dir(&root.join("mnt/d").unwrap())
        .unwrap();
    assert_eq!(fs.read_to_string("/mnt/f").unwrap(), "data");
    assert_eq!(fs.read_to_string("/mnt/d/e/g").unwrap(), "deep");
    assert!(!fs.exists("/f").unwrap());
    assert!(!fs.exists("/d").unwrap());
}

/// Times: `utimensat` sets one and leaves the other; the birth time is read, never set.
#[test]
fn times_are_set_one_at_a_time_and_birth_time_is_read_only() {
    let fs = UvfsFS::new();
    drop(fs.create_file("/f").unwrap());
    let t1 = SystemTime::UNIX_EPOCH + Duration::new(1_000_000_000, 123_456_789);
    let t2 = SystemTime::UNIX_EPOCH - Duration::new(5, 250_000_000);
    fs.set_modification_time("/f", t1).unwrap();
    fs.set_access_time("/f", t2).unwrap();
    let m = fs.metadata("/f").unwrap();
    assert_eq!((m.modified, m.accessed), (Some(t1), Some(t2)));
    let born = m.created.expect("tmpfs keeps a birth time");
    assert!(born > t1);
    assert!(matches!(
        fs.set_creation_time("/f", t1).unwrap_err().kind(),
        VfsErrorKind::NotSupported
    ));
}

/// A directory's `len` is 0 (the trait's convention) though tmpfs gives it a size; a file's
/// is `st_size`, sparse or not.
#[test]
fn metadata_len_is_the_file_size_and_zero_for_directories() {
    let fs = UvfsFS::new();
    fs.create_dir("/d").unwrap();
    for i in 0..3 {
        drop(fs.create_file(&format!("/d/{i}")).unwrap());
    }
    assert_ne!(fs.fs().metadata("/d").unwrap().len(), 0);
    let m = fs.metadata("/d").unwrap();
    assert_eq!((m.file_type, m.len), (VfsFileType::Directory, 0));
    let f = fs.fs().create("/sparse").unwrap();
    f.set_len(1 << 20).unwrap();
    let m = fs.metadata("/sparse").unwrap();
    assert_eq!((m.file_type, m.len), (VfsFileType::File, 1 << 20));
}

/// Symlinks, which the `vfs` crate cannot name, are followed as `stat` and `open` follow
/// them; a dangling one does not exist.
#[test]
fn symlinks_are_followed() {
    let fs = Fs::new();
    fs.create_dir("/real").unwrap();
    fs.write("/real/f", "via link").unwrap();
    fs.symlink("/real", "/link").unwrap();
    fs.symlink("/nowhere", "/dangling").unwrap();
    let root: VfsPath = UvfsFS::from_fs(fs).into();
    assert!(root.join("link").unwrap().is_dir().unwrap());
    assert_eq!(
        root.join("link/f").unwrap().read_to_string().unwrap(),
        "via link"
    );
    assert!(!root.join("dangling").unwrap().exists().unwrap());
}

/// A name that is not UTF-8 (made through `uvfs::fs`) cannot be a `vfs` path: listing its
/// directory fails with `InvalidData` rather than panicking or hiding the name.
#[test]
fn a_name_that_is_not_utf8_fails_the_listing() {
    use std::os::unix::ffi::OsStrExt;
    let fs = Fs::new();
    fs.create_dir("/d").unwrap();
    fs.write("/d/ok", "").unwrap();
    fs.write(
        std::path::Path::new("/d").join(std::ffi::OsStr::from_bytes(b"bad\xff")),
        "",
    )
    .unwrap();
    let backend = UvfsFS::from_fs(fs);
    let Err(e) = backend.read_dir("/d") else {
        panic!("listing a directory with a non-UTF-8 name must fail")
    };
    match e.kind() {
        VfsErrorKind::IoError(io) => assert_eq!(io.kind(), std::io::ErrorKind::InvalidData),
        other => panic!("{other:?}"),
    }
}

/// A read of a directory opened with `open_file` is `EISDIR`, as read(2) says.
#[test]
fn reading_a_directory_is_eisdir() {
    let fs = UvfsFS::new();
    fs.create_dir("/d").unwrap();
    let mut f = fs
        .open_file("/d")
        .expect("open(O_RDONLY) of a directory succeeds");
    let e = f.read(&mut [0u8; 8]).unwrap_err();
    assert_eq!(errno(&e), Some(Errno::EISDIR));
}
