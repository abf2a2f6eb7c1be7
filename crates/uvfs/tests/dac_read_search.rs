//! A task whose only capability is `CAP_DAC_READ_SEARCH` reads what it may not read and searches
//! and lists what it may not search, and writes nothing it could not write without it.
//! Oracle: capabilities(7), `CAP_DAC_READ_SEARCH`: "Bypass file read permission checks and
//! directory read and execute permission checks"; Linux: `generic_permission()` in
//! fs/namei.c, which grants it for reads of any file and for reads and searches of
//! directories, never for writes or for executing a file.

use uvfs::abi::{Access, AtFlags, OpenFlags, RenameFlags, AT_FDCWD};
use uvfs::{Capabilities, Cred, Errno, Task, Vfs};

/// uid 1000 with `CAP_DAC_READ_SEARCH` and nothing else, built by hand (a `set_cred` from root
/// would be the same; `Vfs::task` takes it as given).
fn reader() -> Cred {
    let mut c = Cred::user(1000, 1000, &[]);
    c.caps = Capabilities::DAC_READ_SEARCH;
    c
}

/// Root's files, all mode 0000: `/f` (holding "secret"), `/dir` with `/dir/g` (holding "deep").
fn tree() -> Vfs {
    let vfs = Vfs::new();
    let root = vfs.task(Cred::root());
    root.mkdirat(AT_FDCWD, "/dir", 0o755).expect("mkdir");
    for (path, data) in [("/f", &b"secret"[..]), ("/dir/g", b"deep")] {
        let fd = root
            .openat(AT_FDCWD, path, OpenFlags::CREAT | OpenFlags::WRONLY, 0o644)
            .expect("create");
        root.write(fd, data).expect("write");
        root.close(fd).expect("close");
        root.fchmodat(AT_FDCWD, path, 0, AtFlags::empty())
            .expect("chmod 0000");
    }
    root.fchmodat(AT_FDCWD, "/dir", 0, AtFlags::empty())
        .expect("chmod 0000");
    vfs
}

fn read_all(t: &Task, path: &str) -> Result<Vec<u8>, Errno> {
    let fd = t.openat(AT_FDCWD, path, OpenFlags::RDONLY, 0)?;
    let mut b = [0u8; 64];
    let n = t.read(fd, &mut b)?;
    t.close(fd)?;
    Ok(b[..n].to_vec())
}

fn names(t: &Task, dir: &str) -> Result<Vec<String>, Errno> {
    let fd = t.openat(AT_FDCWD, dir, OpenFlags::RDONLY | OpenFlags::DIRECTORY, 0)?;
    let mut buf = [0u8; 4096];
    let n = t.getdents64(fd, &mut buf)?;
    t.close(fd)?;
    let mut out: Vec<String> = uvfs::abi::Dirent::parse(&buf[..n])
        .into_iter()
        .map(|d| String::from_utf8_lossy(&d.name).into_owned())
        .filter(|n| n != "." && n != "..")
        .collect();
    out.sort();
    Ok(out)
}

#[test]
fn dac_read_search_reads_a_0000_file() {
    let vfs = tree();
    let t = vfs.task(reader());
    assert_eq!(read_all(&t, "/f"), Ok(b"secret".to_vec()));
    assert_eq!(
        t.faccessat2(AT_FDCWD, "/f", Access::READ, AtFlags::EACCESS),
        Ok(())
    );
    // Without the capability the same user is refused: the capability is what grants it.
    let plain = vfs.task(Cred::user(1000, 1000, &[]));
    assert_eq!(read_all(&plain, "/f"), Err(Errno::EACCES));
}

#[test]
fn dac_read_search_searches_and_lists_a_0000_directory() {
    let vfs = tree();
    let t = vfs.task(reader());
    assert_eq!(names(&t, "/dir"), Ok(vec!["g".to_string()]));
    assert_eq!(t.stat("/dir/g").expect("search /dir").size, 4);
    assert_eq!(read_all(&t, "/dir/g"), Ok(b"deep".to_vec()));
    t.chdir("/dir").expect("chdir needs search only");
    assert_eq!(read_all(&t, "g"), Ok(b"deep".to_vec()));
    let plain = vfs.task(Cred::user(1000, 1000, &[]));
    assert_eq!(names(&plain, "/dir"), Err(Errno::EACCES));
    assert_eq!(plain.stat("/dir/g"), Err(Errno::EACCES));
}

#[test]
fn dac_read_search_writes_nothing() {
    let vfs = tree();
    let t = vfs.task(reader());
    for flags in [
        OpenFlags::WRONLY,
        OpenFlags::RDWR,
        OpenFlags::RDONLY | OpenFlags::TRUNC,
    ] {
        assert_eq!(t.openat(AT_FDCWD, "/f", flags, 0), Err(Errno::EACCES));
    }
    assert_eq!(t.truncate("/f", 0), Err(Errno::EACCES));
    assert_eq!(
        t.faccessat2(AT_FDCWD, "/f", Access::WRITE, AtFlags::EACCESS),
        Err(Errno::EACCES)
    );
    assert_eq!(
        t.faccessat2(AT_FDCWD, "/f", Access::EXEC, AtFlags::EACCESS),
        Err(Errno::EACCES),
        "no execute permission on a file"
    );
    assert_eq!(t.mkdirat(AT_FDCWD, "/dir/new", 0o755), Err(Errno::EACCES));
    assert_eq!(
        t.unlinkat(AT_FDCWD, "/dir/g", AtFlags::empty()),
        Err(Errno::EACCES)
    );
    assert_eq!(
        t.renameat2(AT_FDCWD, "/dir/g", AT_FDCWD, "/dir/h", RenameFlags::empty()),
        Err(Errno::EACCES)
    );
    assert_eq!(read_all(&t, "/f"), Ok(b"secret".to_vec()), "still intact");
}
