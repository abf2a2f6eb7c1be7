//! The probe process of the host, uvfs and vfs-crate columns (`uvfs bench memory-probe
//! COLUMN`): creates the files in this process and measures its own growth around the
//! creation. The gVisor column's probe is the Go driver (`gvisor/memory.go`).
//!
//! Each probe builds what it needs (the `Vfs`, the `MemoryFS`, the tmpfs mount) and one warm-up
//! directory and file, then reads its memory, creates the files, and reads it again. Paths are
//! written into one reused buffer, so the probe's own allocations are not in the difference.

use std::ffi::CStr;
use std::fmt::Write as _;
use std::hint::black_box;

use anyhow::{anyhow, bail, Context};
use rustix::fs::{mkdirat, openat, Mode, OFlags};
use uvfs::abi::{OpenFlags, AT_FDCWD};
use uvfs::{Cred, Vfs};
use vfs::{FileSystem, MemoryFS};

use super::heap::{malloc_in_use_bytes, rss_bytes};
use super::slab::{growth, SlabInfo};
use super::{MemoryColumn, Probe, Size};
use crate::column::Support;
use crate::private_tmpfs::PrivateTmpfs;

/// Mount options of the host's tmpfs: no inode limit (the default is half the RAM's pages,
/// fewer than a million on a small machine).
const HOST_TMPFS_OPTIONS: &CStr = c"mode=0755,nr_inodes=0";

/// The process's memory at one moment.
#[derive(Clone, Copy)]
struct Reading {
    rss: i64,
    heap: Option<i64>,
}

impl Reading {
    fn take() -> anyhow::Result<Reading> {
        Ok(Reading {
            rss: rss_bytes()?,
            heap: malloc_in_use_bytes(),
        })
    }

    /// The probe of the growth from `self` to `after`.
    fn growth_to(self, after: Reading, size: Size) -> Probe {
        Probe {
            files: size.files,
            dirs: size.dirs,
            rss_delta_bytes: Some(after.rss - self.rss),
            heap_delta_bytes: self.heap.zip(after.heap).map(|(b, a)| a - b),
            ..Probe::default()
        }
    }
}

/// Writes `d<dir>` into `buf` (cleared first), behind `prefix`.
fn dir_path(buf: &mut String, prefix: &str, dir: u64) {
    buf.clear();
    let _ = write!(buf, "{prefix}d{dir}");
}

/// Writes `d<dir>/f<i>` into `buf` (cleared first), behind `prefix`.
fn file_path(buf: &mut String, prefix: &str, size: Size, i: u64) {
    buf.clear();
    let _ = write!(buf, "{prefix}d{}/f{i}", size.dir_of(i));
}

/// Runs the probe of `column` (host, uvfs or vfs-crate) in this process.
///
/// # Errors
/// A failed create, or a column this function does not probe (gVisor's is the Go driver).
/// A host that cannot mount a tmpfs or read `/proc/slabinfo` is a skipped probe, not an error.
pub fn probe(column: MemoryColumn, size: Size) -> anyhow::Result<Probe> {
    match column {
        MemoryColumn::Host => probe_host(size),
        MemoryColumn::Uvfs => probe_uvfs(size),
        MemoryColumn::VfsCrate => probe_vfs_crate(size),
        MemoryColumn::Gvisor => bail!("the gvisor column's probe is the Go driver"),
    }
}

fn uvfs_errno<'a>(what: &'a str, path: &'a str) -> impl FnOnce(uvfs::Errno) -> anyhow::Error + 'a {
    move |e| anyhow!("uvfs: {what} {path}: {e:?} ({e})")
}

fn probe_uvfs(size: Size) -> anyhow::Result<Probe> {
    let vfs = Vfs::new();
    let t = vfs.task(Cred::root());
    let mut path = String::with_capacity(64);
    let create = |path: &str| -> anyhow::Result<()> {
        let fd = t
            .openat(AT_FDCWD, path, OpenFlags::CREAT | OpenFlags::WRONLY, 0o644)
            .map_err(uvfs_errno("openat", path))?;
        t.close(fd).map_err(uvfs_errno("close", path))
    };
    t.mkdirat(AT_FDCWD, "/warm", 0o755)
        .map_err(uvfs_errno("mkdirat", "/warm"))?;
    create("/warm/x")?;
    let before = Reading::take()?;
    for d in 0..size.dirs {
        dir_path(&mut path, "/", d);
        t.mkdirat(AT_FDCWD, &path, 0o755)
            .map_err(uvfs_errno("mkdirat", &path))?;
    }
    for i in 0..size.files {
        file_path(&mut path, "/", size, i);
        create(&path)?;
    }
    let after = Reading::take()?;
    black_box(&vfs);
    Ok(before.growth_to(after, size))
}

fn probe_vfs_crate(size: Size) -> anyhow::Result<Probe> {
    let fs = MemoryFS::new();
    let mut path = String::with_capacity(64);
    let create = |path: &str| -> anyhow::Result<()> {
        // The handle's drop publishes the (empty) file, as close does.
        drop(
            fs.create_file(path)
                .with_context(|| format!("create_file {path}"))?,
        );
        Ok(())
    };
    fs.create_dir("/warm").context("create_dir /warm")?;
    create("/warm/x")?;
    let before = Reading::take()?;
    for d in 0..size.dirs {
        dir_path(&mut path, "/", d);
        fs.create_dir(&path)
            .with_context(|| format!("create_dir {path}"))?;
    }
    for i in 0..size.files {
        file_path(&mut path, "/", size, i);
        create(&path)?;
    }
    let after = Reading::take()?;
    black_box(&fs);
    Ok(before.growth_to(after, size))
}

fn probe_host(size: Size) -> anyhow::Result<Probe> {
    let tmpfs = PrivateTmpfs::mount_with(
        &format!("uvfs-bench-memory-{}", std::process::id()),
        HOST_TMPFS_OPTIONS,
    );
    if let Support::No(why) = tmpfs.support() {
        return Ok(Probe::skipped(size, why));
    }
    if let Err(e) = SlabInfo::read() {
        return Ok(Probe::skipped(
            size,
            format!("skipped: cannot read /proc/slabinfo, root needed ({e:#})"),
        ));
    }
    let dir = tmpfs.dir()?;
    // Paths relative to the tmpfs's directory fd, NUL-terminated in the reused buffer.
    let mut path = String::with_capacity(64);
    let mkdir = |path: &mut String| -> anyhow::Result<()> {
        path.push('\0');
        let c = CStr::from_bytes_with_nul(path.as_bytes()).expect("one NUL, at the end");
        mkdirat(dir, c, Mode::from_raw_mode(0o755)).with_context(|| format!("mkdir {c:?}"))?;
        Ok(())
    };
    let create = |path: &mut String| -> anyhow::Result<()> {
        path.push('\0');
        let c = CStr::from_bytes_with_nul(path.as_bytes()).expect("one NUL, at the end");
        let fd = openat(
            dir,
            c,
            OFlags::CREATE | OFlags::WRONLY | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o644),
        )
        .with_context(|| format!("create {c:?}"))?;
        drop(fd);
        Ok(())
    };
    path.push_str("warm");
    mkdir(&mut path)?;
    path.clear();
    path.push_str("warm/x");
    create(&mut path)?;
    let before = SlabInfo::read()?;
    for d in 0..size.dirs {
        dir_path(&mut path, "", d);
        mkdir(&mut path)?;
    }
    for i in 0..size.files {
        file_path(&mut path, "", size, i);
        create(&mut path)?;
    }
    let after = SlabInfo::read()?;
    let page_bytes = rustix::param::page_size() as u64;
    Ok(Probe {
        files: size.files,
        dirs: size.dirs,
        slab: Some(growth(&before, &after, size.files, page_bytes)),
        ..Probe::default()
    })
}

/// The probe sub-command: runs the probe of the column named `column` and prints its JSON line
/// on stdout.
///
/// # Errors
/// An unknown column, a bad size, a failed probe.
pub fn probe_main(column: &str, files: u64, dirs: u64) -> anyhow::Result<()> {
    let column = MemoryColumn::from_name(column)
        .filter(|c| *c != MemoryColumn::Gvisor)
        .ok_or_else(|| anyhow!("unknown memory probe {column:?}: host, uvfs or vfs-crate"))?;
    let size = Size::checked(files, dirs).map_err(anyhow::Error::msg)?;
    let p = probe(column, size)?;
    println!("{}", serde_json::to_string(&p)?);
    Ok(())
}
