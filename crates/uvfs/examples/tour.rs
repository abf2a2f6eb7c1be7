//! A short tour of uvfs: builds a tree, writes, reads, links, renames, lists and stats,
//! printing each step. Run with `cargo run --release -p uvfs --example tour`.

use uvfs::abi::{AtFlags, Dirent, OpenFlags, RenameFlags, AT_FDCWD};
use uvfs::{Cred, Vfs};

fn main() -> Result<(), uvfs::Errno> {
    let vfs = Vfs::new();
    let t = vfs.task(Cred::root());

    t.mkdirat(AT_FDCWD, "/srv", 0o755)?;
    t.mkdirat(AT_FDCWD, "/srv/data", 0o750)?;
    println!("mkdir /srv/data");

    let fd = t.openat(
        AT_FDCWD,
        "/srv/data/notes.txt",
        OpenFlags::CREAT | OpenFlags::RDWR,
        0o644,
    )?;
    let n = t.write(fd, b"hello from uvfs\n")?;
    println!("write {n} bytes to /srv/data/notes.txt (fd {fd})");

    let mut buf = [0u8; 64];
    let n = t.pread(fd, &mut buf, 0)?;
    print!("pread {n} bytes: {}", String::from_utf8_lossy(&buf[..n]));
    t.close(fd)?;

    t.linkat(
        AT_FDCWD,
        "/srv/data/notes.txt",
        AT_FDCWD,
        "/srv/notes-link",
        AtFlags::empty(),
    )?;
    t.symlinkat("data/notes.txt", AT_FDCWD, "/srv/latest")?;
    println!("link /srv/notes-link, symlink /srv/latest -> data/notes.txt");

    t.renameat2(
        AT_FDCWD,
        "/srv/data/notes.txt",
        AT_FDCWD,
        "/srv/data/journal.txt",
        RenameFlags::empty(),
    )?;
    println!("rename notes.txt -> journal.txt");
    match t.stat("/srv/latest") {
        Err(e) => println!("stat /srv/latest: {e:?} (the symlink now dangles)"),
        Ok(s) => println!("stat /srv/latest: size {}", s.size),
    }

    let dir = t.openat(AT_FDCWD, "/srv", OpenFlags::DIRECTORY, 0)?;
    let mut dbuf = [0u8; 4096];
    let n = t.getdents64(dir, &mut dbuf)?;
    let names: Vec<String> = Dirent::parse(&dbuf[..n])
        .iter()
        .map(|d| String::from_utf8_lossy(&d.name).into_owned())
        .collect();
    println!("getdents /srv: {names:?}");
    t.close(dir)?;

    let st = t.stat("/srv/notes-link")?;
    println!(
        "stat /srv/notes-link: ino {} nlink {} size {} mode {:o}",
        st.ino, st.nlink, st.size, st.mode
    );
    let st = t.lstat("/srv/latest")?;
    println!("lstat /srv/latest: mode {:o} size {}", st.mode, st.size);
    Ok(())
}
