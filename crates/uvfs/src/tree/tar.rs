//! Tar archives in and out of a uvfs tree, with the `tar` crate (feature `tar`); the format
//! and what an import keeps are described in the module documentation of `tree`.

use std::io::{self, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use tar::{Archive, Builder, EntryType, GnuExtSparseHeader, Header};

use super::error::{Error, Result};
use super::fsops::{At, Fs, Meta, Xattr};
use super::uv::{Uv, UvFd};
use super::walk::{self, rel_path, Contents, Entry, FsSink, Sink};
use super::{Options, Owners, Report, SkipReason, Skipped};
use crate::abi::{FileType, Timespec};
use crate::vfs::Task;

/// The tar key of an extended attribute.
const XATTR_KEY: &str = "SCHILY.xattr.";
/// The page size holes are found at when a sparse entry is read back.
const HOLE_PAGE_BYTES: u64 = 4096;
/// The tar block size.
const BLOCK_BYTES: u64 = 512;

/// Writes the uvfs tree at `src` (a path of `task`) as a tar archive to `writer` (see the
/// [module documentation](super#tar-archives-feature-tar) for the format), and finishes the archive.
///
/// # Errors
/// The first failure, as [`export`](super::export); a failed write to `writer` is reported
/// with the op `"write"` and the entry's path.
pub fn export_tar(
    task: &Task,
    src: impl AsRef<[u8]>,
    writer: impl Write,
    opts: &Options,
) -> Result<Report> {
    let src = Uv::new(task, src.as_ref());
    let mut sink = TarSink {
        b: Builder::new(writer),
    };
    let report = walk::walk(&src, &mut sink, opts)?;
    sink.b
        .finish()
        .map_err(|e| Error::new("write", PathBuf::from("."), e))?;
    Ok(report)
}

/// Makes the entries of the tar archive read from `reader` in the uvfs tree at `dest` (a path
/// of `task`, created if missing; see the [module documentation](super#tar-archives-feature-tar)).
///
/// # Errors
/// The first failure, as [`import`](super::import); an archive the `tar` crate cannot read
/// gives its `io::Error` (often without an errno) with the op `"read"`.
pub fn import_tar(
    task: &Task,
    reader: impl Read,
    dest: impl AsRef<[u8]>,
    opts: &Options,
) -> Result<Report> {
    let fs = Uv::new(task, dest.as_ref());
    let owners = match opts.owners {
        Owners::Auto => fs.may_chown(),
        Owners::Preserve => true,
        Owners::Ignore => false,
    };
    let mut sink = FsSink::new(&fs, owners);
    let mut report = Report::default();
    let root_meta = Meta {
        kind: FileType::Directory,
        perm: 0o755,
        uid: 0,
        gid: 0,
        size: 0,
        atime: Timespec::default(),
        mtime: Timespec::default(),
        dev: 0,
        ino: 0,
        nlink: 1,
        rdev: 0,
    };
    let root = sink.root(
        &Entry {
            name: b"",
            rel: b"",
            meta: &root_meta,
            xattrs: &[],
        },
        &mut report,
    )?;
    report.dirs += 1;
    let mut cursor = Cursor {
        names: Vec::new(),
        fds: Vec::new(),
    };
    // Directories' attributes, applied after all entries, deepest last seen first.
    let mut dirs: Vec<(Vec<u8>, Meta, Vec<Xattr>)> = Vec::new();
    let mut root_attrs: Option<(Meta, Vec<Xattr>)> = None;
    let mut archive = Archive::new(reader);
    let read_err = |e: io::Error| Error::new("read", fs.display(b""), e);
    for entry in archive.entries().map_err(read_err)? {
        let mut entry = entry.map_err(read_err)?;
        let Some(rel) = clean_path(&entry.path_bytes()) else {
            report.skipped.push(Skipped {
                path: rel_path(&entry.path_bytes()),
                reason: SkipReason::UnsafePath,
            });
            continue;
        };
        let (meta, xattrs) = entry_meta(&mut entry, opts).map_err(|e| read_err_at(&fs, &rel, e))?;
        let ty = entry.header().entry_type();
        if rel.is_empty() {
            if ty.is_dir() {
                root_attrs = Some((meta, xattrs));
            }
            continue;
        }
        let (parent_rel, name) = match rel.iter().rposition(|&b| b == b'/') {
            Some(i) => (&rel[..i], &rel[i + 1..]),
            None => (&b""[..], &rel[..]),
        };
        let parent = cursor
            .open(&fs, &root, parent_rel, &mut report)
            .map_err(|e| Error::new("mkdirat", fs.display(parent_rel), e))?;
        let e = Entry {
            name,
            rel: &rel,
            meta: &meta,
            xattrs: &xattrs,
        };
        if ty.is_dir() {
            match fs.mkdir(parent, name, 0o700) {
                Ok(()) => report.dirs += 1,
                // Made earlier as a missing parent, or listed twice: it gets these attributes.
                Err(x) if x.raw_os_error() == Some(crate::abi::Errno::EEXIST.raw()) => {}
                Err(x) => return Err(Error::new("mkdirat", fs.display(&rel), x)),
            }
            dirs.push((rel.clone(), meta, xattrs));
        } else if ty.is_hard_link() {
            let target = entry.link_name_bytes().unwrap_or_default();
            match clean_path(&target) {
                Some(first) if !first.is_empty() => {
                    // Not `sink.hard_link`: the archive names the target, and a symlink it made
                    // must not lead the link out of the tree.
                    walk::link_beneath(&fs, &root, &first, parent, name)
                        .map_err(|x| Error::new("linkat", fs.display(&rel), x))?;
                    report.hard_links += 1;
                }
                _ => report.skipped.push(Skipped {
                    path: rel_path(&rel),
                    reason: SkipReason::UnsafePath,
                }),
            }
        } else if ty.is_symlink() {
            let target = entry.link_name_bytes().unwrap_or_default().into_owned();
            sink.symlink(parent, &e, &target, &mut report)?;
            report.symlinks += 1;
        } else if ty.is_file() || ty.is_contiguous() || ty.is_gnu_sparse() {
            let size = entry.size();
            let mut contents = TarContents {
                entry: &mut entry,
                segs: if size > 0 {
                    vec![(0, size)]
                } else {
                    Vec::new()
                },
                pos: 0,
                sparse: ty.is_gnu_sparse(),
            };
            let written = sink.file(parent, &e, &mut contents, &mut report)?;
            report.files += 1;
            report.bytes += written;
            report.hole_bytes += size - written;
        } else if ty.is_fifo() || ty.is_character_special() || ty.is_block_special() {
            if sink.special(parent, &e, &mut report)? {
                report.specials += 1;
            }
        } else {
            report.skipped.push(Skipped {
                path: rel_path(&rel),
                reason: SkipReason::TarEntryType(ty.as_byte()),
            });
        }
    }
    drop(cursor);
    // Deepest first: an archive lists a directory before what it holds.
    let mut cursor = Cursor {
        names: Vec::new(),
        fds: Vec::new(),
    };
    for (rel, meta, xattrs) in dirs.iter().rev() {
        let dir = cursor
            .open(&fs, &root, rel, &mut report)
            .map_err(|e| Error::new("openat", fs.display(rel), e))?;
        let name = rel.rsplit(|&b| b == b'/').next().unwrap_or(rel);
        let e = Entry {
            name,
            rel,
            meta,
            xattrs,
        };
        sink.apply(At::Fd(dir), &e, &mut report)?;
    }
    drop(cursor);
    let (meta, xattrs) = match root_attrs {
        Some(a) => a,
        None => {
            fs.chmod(At::Fd(&root), 0o755)
                .map_err(|e| Error::new("fchmod", fs.display(b""), e))?;
            return Ok(report);
        }
    };
    let e = Entry {
        name: b"",
        rel: b"",
        meta: &meta,
        xattrs: &xattrs,
    };
    sink.apply(At::Fd(&root), &e, &mut report)?;
    Ok(report)
}

fn read_err_at(fs: &Uv, rel: &[u8], e: io::Error) -> Error {
    Error::new("read", fs.display(rel), e)
}

/// An entry path without leading `/`, `.` components or empty ones; `None` if it has `..`.
fn clean_path(p: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(p.len());
    for c in p.split(|&b| b == b'/') {
        match c {
            b"" | b"." => {}
            b".." => return None,
            c => {
                if !out.is_empty() {
                    out.push(b'/');
                }
                out.extend_from_slice(c);
            }
        }
    }
    Some(out)
}

/// The open directories from the root down to the last parent used, so that entries listed
/// in tree order each cost one `openat` at most.
struct Cursor {
    names: Vec<Vec<u8>>,
    fds: Vec<UvFd>,
}

impl Cursor {
    /// The directory at `rel` (empty: `root`), made with mode 0755 where missing.
    fn open<'a>(
        &'a mut self,
        fs: &Uv,
        root: &'a UvFd,
        rel: &[u8],
        report: &mut Report,
    ) -> io::Result<&'a UvFd> {
        let comps: Vec<&[u8]> = rel
            .split(|&b| b == b'/')
            .filter(|c| !c.is_empty())
            .collect();
        let keep = self
            .names
            .iter()
            .zip(&comps)
            .take_while(|(a, b)| a.as_slice() == **b)
            .count();
        self.names.truncate(keep);
        self.fds.truncate(keep);
        for c in &comps[keep..] {
            let parent = self.fds.last().unwrap_or(root);
            let fd = match fs.open_read(parent, c, FileType::Directory) {
                Ok(fd) => fd,
                Err(e) if e.raw_os_error() == Some(crate::abi::Errno::ENOENT.raw()) => {
                    fs.mkdir(parent, c, 0o755)?;
                    report.dirs += 1;
                    fs.open_read(parent, c, FileType::Directory)?
                }
                Err(e) => return Err(e),
            };
            self.names.push(c.to_vec());
            self.fds.push(fd);
        }
        Ok(self.fds.last().unwrap_or(root))
    }
}

/// The attributes of an archive entry, with its PAX times and xattrs.
fn entry_meta<R: Read>(
    e: &mut tar::Entry<'_, R>,
    opts: &Options,
) -> io::Result<(Meta, Vec<Xattr>)> {
    let h = e.header();
    let ty = h.entry_type();
    let kind = if ty.is_dir() {
        FileType::Directory
    } else if ty.is_symlink() {
        FileType::Symlink
    } else if ty.is_fifo() {
        FileType::Fifo
    } else if ty.is_character_special() {
        FileType::CharDevice
    } else if ty.is_block_special() {
        FileType::BlockDevice
    } else {
        FileType::Regular
    };
    let major = h.device_major().ok().flatten().unwrap_or(0);
    let minor = h.device_minor().ok().flatten().unwrap_or(0);
    let mtime = Timespec::new(h.mtime().unwrap_or(0) as i64, 0);
    let mut meta = Meta {
        kind,
        perm: h.mode()? & 0o7777,
        uid: h.uid()? as u32,
        gid: h.gid()? as u32,
        size: e.size(),
        atime: mtime,
        mtime,
        dev: 0,
        ino: 0,
        nlink: 1,
        rdev: rustix::fs::makedev(major, minor),
    };
    let mut xattrs = Vec::new();
    let mut atime = None;
    if let Some(pax) = e.pax_extensions()? {
        for ext in pax {
            let ext = ext?;
            let key = ext.key_bytes();
            if key == b"mtime" {
                meta.mtime = parse_time(ext.value_bytes()).unwrap_or(meta.mtime);
            } else if key == b"atime" {
                atime = parse_time(ext.value_bytes());
            } else if let Some(name) = key.strip_prefix(XATTR_KEY.as_bytes()) {
                if opts.xattrs == super::Xattrs::All {
                    xattrs.push(Xattr {
                        name: name.to_vec(),
                        value: ext.value_bytes().to_vec(),
                    });
                }
            }
        }
    }
    meta.atime = atime.unwrap_or(meta.mtime);
    Ok((meta, xattrs))
}

/// A PAX time, `[-]seconds[.fraction]`.
fn parse_time(v: &[u8]) -> Option<Timespec> {
    let s = std::str::from_utf8(v).ok()?;
    let (neg, s) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s),
    };
    let (sec, frac) = s.split_once('.').unwrap_or((s, ""));
    let sec: i64 = sec.parse().ok()?;
    let mut nsec: i64 = 0;
    for (i, c) in frac.bytes().take(9).enumerate() {
        if !c.is_ascii_digit() {
            return None;
        }
        nsec += i64::from(c - b'0') * 10i64.pow(8 - i as u32);
    }
    let total = i128::from(sec) * 1_000_000_000 + i128::from(nsec);
    let total = if neg { -total } else { total };
    Some(Timespec::new(
        total.div_euclid(1_000_000_000) as i64,
        total.rem_euclid(1_000_000_000) as i64,
    ))
}

/// A PAX time with nanoseconds.
fn format_time(t: Timespec) -> String {
    let total = i128::from(t.sec) * 1_000_000_000 + i128::from(t.nsec);
    let sign = if total < 0 { "-" } else { "" };
    let a = total.unsigned_abs();
    format!("{sign}{}.{:09}", a / 1_000_000_000, a % 1_000_000_000)
}

/// The contents of a file entry: one stream read in order.
struct TarContents<'a, 'b, R: Read> {
    entry: &'a mut tar::Entry<'b, R>,
    segs: Vec<(u64, u64)>,
    pos: u64,
    sparse: bool,
}

impl<R: Read> Contents for TarContents<'_, '_, R> {
    fn segments(&self) -> &[(u64, u64)] {
        &self.segs
    }

    fn read_at(&mut self, buf: &mut [u8], off: u64) -> io::Result<usize> {
        if off != self.pos {
            return Err(io::Error::from_raw_os_error(
                crate::abi::Errno::ESPIPE.raw(),
            ));
        }
        let n = self.entry.read(buf)?;
        self.pos += n as u64;
        Ok(n)
    }

    fn zero_pages_are_holes(&self) -> Option<u64> {
        self.sparse.then_some(HOLE_PAGE_BYTES)
    }
}

/// A tar archive as the destination of a walk.
struct TarSink<W: Write> {
    b: Builder<W>,
}

/// A PAX record, `"<len> <key>=<value>\n"`, where `<len>` counts the whole record.
fn pax_record(out: &mut Vec<u8>, key: &[u8], value: &[u8]) {
    let rest = key.len() + value.len() + 3;
    let mut len = rest + 1;
    while len != rest + len.to_string().len() {
        len = rest + len.to_string().len();
    }
    out.extend_from_slice(len.to_string().as_bytes());
    out.push(b' ');
    out.extend_from_slice(key);
    out.push(b'=');
    out.extend_from_slice(value);
    out.push(b'\n');
}

/// The entry's path in the archive: `./` for the root, a trailing `/` for directories.
fn tar_path(e: &Entry<'_>) -> PathBuf {
    let mut p = if e.rel.is_empty() {
        b".".to_vec()
    } else {
        e.rel.to_vec()
    };
    if e.meta.kind == FileType::Directory {
        p.push(b'/');
    }
    PathBuf::from(std::ffi::OsStr::from_bytes(&p))
}

impl<W: Write> TarSink<W> {
    fn err(e: &Entry<'_>, x: io::Error) -> Error {
        Error::new("write", rel_path(e.rel), x)
    }

    /// The PAX header with the entry's times and xattrs, then a GNU header with the rest.
    fn start(&mut self, e: &Entry<'_>, ty: EntryType) -> Result<Header> {
        let mut records = Vec::new();
        pax_record(&mut records, b"mtime", format_time(e.meta.mtime).as_bytes());
        pax_record(&mut records, b"atime", format_time(e.meta.atime).as_bytes());
        for x in e.xattrs {
            let mut key = XATTR_KEY.as_bytes().to_vec();
            key.extend_from_slice(&x.name);
            pax_record(&mut records, &key, &x.value);
        }
        let mut ph = Header::new_ustar();
        ph.set_entry_type(EntryType::XHeader);
        ph.set_size(records.len() as u64);
        ph.set_mode(0o644);
        ph.set_path("././@PaxHeader").map_err(|x| Self::err(e, x))?;
        ph.set_cksum();
        self.b
            .append(&ph, records.as_slice())
            .map_err(|x| Self::err(e, x))?;
        let mut h = Header::new_gnu();
        h.set_entry_type(ty);
        h.set_mode(e.meta.perm);
        h.set_uid(u64::from(e.meta.uid));
        h.set_gid(u64::from(e.meta.gid));
        h.set_mtime(e.meta.mtime.sec.max(0) as u64);
        h.set_size(0);
        Ok(h)
    }
}

impl<W: Write> Sink for TarSink<W> {
    type Dir = ();

    fn root(&mut self, e: &Entry<'_>, r: &mut Report) -> Result<()> {
        self.mkdir(&(), e, r)
    }

    fn mkdir(&mut self, _parent: &(), e: &Entry<'_>, _r: &mut Report) -> Result<()> {
        let mut h = self.start(e, EntryType::Directory)?;
        self.b
            .append_data(&mut h, tar_path(e), io::empty())
            .map_err(|x| Self::err(e, x))
    }

    fn finish_dir(&mut self, _dir: (), _e: &Entry<'_>, _r: &mut Report) -> Result<()> {
        Ok(())
    }

    fn file(
        &mut self,
        _parent: &(),
        e: &Entry<'_>,
        data: &mut dyn Contents,
        _r: &mut Report,
    ) -> Result<u64> {
        let segs = data.segments().to_vec();
        let size = e.meta.size;
        let on_disk: u64 = segs.iter().map(|s| s.1).sum();
        // The tar crate reads a sparse entry back only if every segment but the last is a
        // whole number of blocks (Linux's data segments are whole pages).
        let aligned = segs
            .iter()
            .rev()
            .skip(1)
            .all(|s| s.1 % BLOCK_BYTES == 0 && s.0 % BLOCK_BYTES == 0);
        let sparse = on_disk < size && aligned;
        let mut h = self.start(
            e,
            if sparse {
                EntryType::GNUSparse
            } else {
                EntryType::Regular
            },
        )?;
        let mut map = segs.clone();
        let mut ext_blocks = Vec::new();
        if sparse {
            // A hole at the end is a last segment of no data at the file's size.
            if map.last().is_none_or(|s| s.0 + s.1 < size) {
                map.push((size, 0));
            }
            let gnu = h.as_gnu_mut().expect("a GNU header");
            gnu.set_real_size(size);
            for (s, slot) in map.iter().zip(gnu.sparse.iter_mut()) {
                slot.set_offset(s.0);
                slot.set_length(s.1);
            }
            gnu.set_is_extended(map.len() > gnu.sparse.len());
            let rest: Vec<_> = map.iter().skip(gnu.sparse.len()).collect();
            let chunks: Vec<_> = rest.chunks(21).collect();
            for (i, chunk) in chunks.iter().enumerate() {
                let mut ext = GnuExtSparseHeader::new();
                for (s, slot) in chunk.iter().zip(ext.sparse.iter_mut()) {
                    slot.set_offset(s.0);
                    slot.set_length(s.1);
                }
                ext.set_is_extended(i + 1 < chunks.len());
                ext_blocks.extend_from_slice(ext.as_bytes());
            }
            h.set_size(on_disk);
        } else {
            h.set_size(size);
        }
        // The stream: extension headers, then the data segments (all of the file if not
        // sparse: holes as zeros).
        let mut body = Body {
            ext: io::Cursor::new(ext_blocks),
            data,
            segs,
            size,
            idx: 0,
            off: 0,
            sparse,
        };
        self.b
            .append_data(&mut h, tar_path(e), &mut body)
            .map_err(|x| Self::err(e, x))?;
        Ok(on_disk)
    }

    fn symlink(
        &mut self,
        _parent: &(),
        e: &Entry<'_>,
        target: &[u8],
        _r: &mut Report,
    ) -> Result<()> {
        let mut h = self.start(e, EntryType::Symlink)?;
        // The tar crate's `set_link_name` normalises a path ("a//b/" becomes "a/b"): a target
        // that fits the header goes in literally; a longer one goes in a GNU `K` entry, which
        // the crate writes literally.
        if target.len() < h.as_old().linkname.len() {
            h.set_link_name_literal(target)
                .map_err(|x| Self::err(e, x))?;
            self.b.append_data(&mut h, tar_path(e), io::empty())
        } else {
            self.b.append_link(
                &mut h,
                tar_path(e),
                Path::new(std::ffi::OsStr::from_bytes(target)),
            )
        }
        .map_err(|x| Self::err(e, x))
    }

    fn special(&mut self, _parent: &(), e: &Entry<'_>, r: &mut Report) -> Result<bool> {
        let ty = match e.meta.kind {
            FileType::Fifo => EntryType::Fifo,
            FileType::CharDevice => EntryType::Char,
            FileType::BlockDevice => EntryType::Block,
            _ => {
                r.skipped.push(Skipped {
                    path: rel_path(e.rel),
                    reason: SkipReason::Socket,
                });
                return Ok(false);
            }
        };
        let mut h = self.start(e, ty)?;
        let rdev = e.meta.rdev;
        h.set_device_major(rustix::fs::major(rdev))
            .and_then(|()| h.set_device_minor(rustix::fs::minor(rdev)))
            .map_err(|x| Self::err(e, x))?;
        self.b
            .append_data(&mut h, tar_path(e), io::empty())
            .map_err(|x| Self::err(e, x))?;
        Ok(true)
    }

    fn hard_link(
        &mut self,
        _parent: &(),
        e: &Entry<'_>,
        first: &[u8],
        _r: &mut Report,
    ) -> Result<()> {
        let mut h = self.start(e, EntryType::Link)?;
        self.b
            .append_link(
                &mut h,
                tar_path(e),
                Path::new(std::ffi::OsStr::from_bytes(first)),
            )
            .map_err(|x| Self::err(e, x))
    }
}

/// The data of a file entry as one stream: sparse extension headers, then the data segments,
/// with the holes between them as zeros unless the entry is sparse.
struct Body<'a> {
    ext: io::Cursor<Vec<u8>>,
    data: &'a mut dyn Contents,
    segs: Vec<(u64, u64)>,
    size: u64,
    idx: usize,
    off: u64,
    sparse: bool,
}

impl Read for Body<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.ext.read(buf)?;
        if n > 0 || buf.is_empty() {
            return Ok(n);
        }
        loop {
            let Some(&(start, len)) = self.segs.get(self.idx) else {
                // After the last segment: the trailing hole, unless sparse.
                if self.sparse || self.off >= self.size {
                    return Ok(0);
                }
                let n = ((self.size - self.off) as usize).min(buf.len());
                buf[..n].fill(0);
                self.off += n as u64;
                return Ok(n);
            };
            let end = start + len;
            if self.off >= end {
                self.idx += 1;
                continue;
            }
            if self.off < start {
                if self.sparse {
                    self.off = start;
                } else {
                    let n = ((start - self.off) as usize).min(buf.len());
                    buf[..n].fill(0);
                    self.off += n as u64;
                    return Ok(n);
                }
            }
            let want = ((end - self.off) as usize).min(buf.len());
            let mut n = self.data.read_at(&mut buf[..want], self.off)?;
            if n == 0 {
                // The file shrank: the archive needs the bytes its header promised.
                buf[..want].fill(0);
                n = want;
            }
            self.off += n as u64;
            return Ok(n);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pax_record_counts_its_own_length_across_a_digit_boundary() {
        // Oracle: POSIX pax, "extended header": the length is the record's decimal byte count,
        // itself included.
        for vlen in 0..200 {
            let mut out = Vec::new();
            pax_record(&mut out, b"k", &vec![b'v'; vlen]);
            let sp = out.iter().position(|&b| b == b' ').expect("a space");
            let len: usize = std::str::from_utf8(&out[..sp])
                .expect("digits")
                .parse()
                .expect("a number");
            assert_eq!(len, out.len(), "value of {vlen} bytes");
        }
    }

    #[test]
    fn pax_times_round_trip_before_and_after_1970() {
        for t in [
            Timespec::new(0, 0),
            Timespec::new(1_100_000_000, 987_654_321),
            Timespec::new(-1, 999_999_999),
            Timespec::new(-1_000_000, 500_000_001),
            Timespec::new(-2, 0),
        ] {
            let s = format_time(t);
            assert_eq!(parse_time(s.as_bytes()), Some(t), "{s}");
        }
        assert_eq!(format_time(Timespec::new(-1, 500_000_000)), "-0.500000000");
        assert_eq!(parse_time(b"12"), Some(Timespec::new(12, 0)));
        assert_eq!(parse_time(b"1.5"), Some(Timespec::new(1, 500_000_000)));
        assert_eq!(parse_time(b"x"), None);
    }

    #[test]
    fn entry_paths_lose_dots_and_slashes_and_refuse_dotdot() {
        assert_eq!(clean_path(b"./a//b/./c/"), Some(b"a/b/c".to_vec()));
        assert_eq!(clean_path(b"/abs"), Some(b"abs".to_vec()));
        assert_eq!(clean_path(b"./"), Some(Vec::new()));
        assert_eq!(clean_path(b"a/../b"), None);
        assert_eq!(clean_path(b"a/..b"), Some(b"a/..b".to_vec()));
    }

    /// Contents from memory, with given segments.
    struct Mem(Vec<u8>, Vec<(u64, u64)>);

    impl Contents for Mem {
        fn segments(&self) -> &[(u64, u64)] {
            &self.1
        }
        fn read_at(&mut self, buf: &mut [u8], off: u64) -> io::Result<usize> {
            let rest = &self.0[off as usize..];
            let n = rest.len().min(buf.len());
            buf[..n].copy_from_slice(&rest[..n]);
            Ok(n)
        }
    }

    #[test]
    fn a_body_that_is_not_sparse_reads_holes_as_zeros_and_one_that_is_skips_them() {
        let file: Vec<u8> = (0..20u8).map(|b| b + 1).collect();
        let segs = vec![(3, 4), (10, 2)];
        let read = |sparse: bool| {
            let mut mem = Mem(file.clone(), segs.clone());
            let mut body = Body {
                ext: io::Cursor::new(Vec::new()),
                data: &mut mem,
                segs: segs.clone(),
                size: 20,
                idx: 0,
                off: 0,
                sparse,
            };
            let mut out = Vec::new();
            let mut buf = [0u8; 3];
            loop {
                let n = body.read(&mut buf).expect("read");
                if n == 0 {
                    return out;
                }
                out.extend_from_slice(&buf[..n]);
            }
        };
        let mut full = vec![0u8; 20];
        full[3..7].copy_from_slice(&file[3..7]);
        full[10..12].copy_from_slice(&file[10..12]);
        assert_eq!(read(false), full);
        assert_eq!(read(true), [&file[3..7], &file[10..12]].concat());
    }
}
