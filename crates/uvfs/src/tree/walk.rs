//! The copy: a walk of the source with directory fds, and the destinations it feeds (a
//! directory tree on either side, [`FsSink`]; a tar archive, `tar.rs`).
//!
//! The walk is iterative (a stack of open directories, one per level), so a deep tree costs
//! heap, not stack. Each entry is `lstat`ed once; a name whose inode was seen before (same
//! source device and inode, more than one link) becomes a hard link to the first copy, found
//! in a map that forgets an inode once all of its links were seen. The cost is one pass over
//! the entries and the data: no lookups by path, no path rebuilt per entry (the walk keeps the
//! current directory's path in the tree in one buffer, for hard-link targets and errors).

use std::collections::HashMap;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use super::error::{Error, Result};
use super::fsops::{At, Fs, Meta, Root, Seek, Xattr};
use super::{Mounts, Options, Owners, Report, SkipReason, Skipped, Xattrs};
use crate::abi::{Errno, FileType, PATH_MAX};

/// An entry as a destination is given it.
pub(super) struct Entry<'a> {
    /// The last component (empty for the root).
    pub name: &'a [u8],
    /// The path in the tree, relative to its root (empty for the root).
    pub rel: &'a [u8],
    pub meta: &'a Meta,
    pub xattrs: &'a [Xattr],
}

/// A regular file's contents: the data segments (offset, length), in order, and a way to
/// read them. Between and after the segments, up to `meta.size`, are holes.
pub(super) trait Contents {
    fn segments(&self) -> &[(u64, u64)];
    fn read_at(&mut self, buf: &mut [u8], off: u64) -> io::Result<usize>;
    /// `Some(page)` when the segments are not known and pages of zeros (of `page` bytes,
    /// aligned) are to be taken as holes: a tar sparse entry, read back as one stream.
    fn zero_pages_are_holes(&self) -> Option<u64> {
        None
    }
}

/// Where a walk puts what it reads. The walk calls `root` first, then for each entry one of
/// the other calls with the entry's parent; `finish_dir` after all of a directory's entries.
pub(super) trait Sink {
    type Dir;
    fn root(&mut self, e: &Entry<'_>, report: &mut Report) -> Result<Self::Dir>;
    fn mkdir(
        &mut self,
        parent: &Self::Dir,
        e: &Entry<'_>,
        report: &mut Report,
    ) -> Result<Self::Dir>;
    fn finish_dir(&mut self, dir: Self::Dir, e: &Entry<'_>, report: &mut Report) -> Result<()>;
    /// A regular file; returns the bytes of data stored (the rest of its size is holes).
    fn file(
        &mut self,
        parent: &Self::Dir,
        e: &Entry<'_>,
        data: &mut dyn Contents,
        report: &mut Report,
    ) -> Result<u64>;
    fn symlink(
        &mut self,
        parent: &Self::Dir,
        e: &Entry<'_>,
        target: &[u8],
        report: &mut Report,
    ) -> Result<()>;
    /// A FIFO, socket or device; `Ok(false)` when it was left out (and reported).
    fn special(&mut self, parent: &Self::Dir, e: &Entry<'_>, report: &mut Report) -> Result<bool>;
    /// A second name of the entry first copied at `first` (a path in the tree).
    fn hard_link(
        &mut self,
        parent: &Self::Dir,
        e: &Entry<'_>,
        first: &[u8],
        report: &mut Report,
    ) -> Result<()>;
}

/// Appends `name` to the path in the tree `rel`; returns the length to truncate back to.
pub(super) fn push_name(rel: &mut Vec<u8>, name: &[u8]) -> usize {
    let len = rel.len();
    if !rel.is_empty() {
        rel.push(b'/');
    }
    rel.extend_from_slice(name);
    len
}

/// A path in the tree as a `PathBuf` (bytes kept as they are).
pub(super) fn rel_path(rel: &[u8]) -> PathBuf {
    PathBuf::from(std::ffi::OsStr::from_bytes(rel))
}

/// Copies the tree of `src` to `dst`.
pub(super) fn copy<S: Fs, D: Fs>(src: &S, dst: &D, opts: &Options) -> Result<Report> {
    let owners = match opts.owners {
        Owners::Auto => dst.may_chown(),
        Owners::Preserve => true,
        Owners::Ignore => false,
    };
    walk(src, &mut FsSink::new(dst, owners), opts)
}

/// One open directory of the walk.
struct Frame<F, D> {
    src: F,
    dst: D,
    names: std::vec::IntoIter<Vec<u8>>,
    meta: Meta,
    xattrs: Vec<Xattr>,
    /// Length of the walk's path buffer without this directory's name.
    parent_len: usize,
    name_start: usize,
}

/// Walks the tree of `src` into `sink`.
pub(super) fn walk<S: Fs, K: Sink>(src: &S, sink: &mut K, opts: &Options) -> Result<Report> {
    let mut report = Report::default();
    let mut rel: Vec<u8> = Vec::new();
    let err = |op: &'static str, rel: &[u8], e: io::Error| Error::new(op, src.display(rel), e);
    let root = src
        .open_root(Root::Existing)
        .map_err(|e| err("openat", b"", e))?;
    let meta = src.stat(At::Fd(&root)).map_err(|e| err("fstat", b"", e))?;
    let xattrs = read_xattrs(src, At::Fd(&root), opts).map_err(|e| err("listxattr", b"", e))?;
    let entry = Entry {
        name: b"",
        rel: b"",
        meta: &meta,
        xattrs: &xattrs,
    };
    let dst_root = sink.root(&entry, &mut report)?;
    report.dirs += 1;
    let names = src.read_dir(&root).map_err(|e| err("getdents64", b"", e))?;
    let mut stack = vec![Frame {
        src: root,
        dst: dst_root,
        names: names.into_iter(),
        meta,
        xattrs,
        parent_len: 0,
        name_start: 0,
    }];
    // Inodes with links not yet seen: (device, inode) -> (first path, links left).
    let mut links: HashMap<(u64, u64), (Vec<u8>, u64)> = HashMap::new();
    while let Some(top) = stack.last_mut() {
        let Some(name) = top.names.next() else {
            let f = stack.pop().expect("the loop saw a top frame");
            let e = Entry {
                name: &rel[f.name_start..],
                rel: &rel,
                meta: &f.meta,
                xattrs: &f.xattrs,
            };
            sink.finish_dir(f.dst, &e, &mut report)?;
            rel.truncate(f.parent_len);
            continue;
        };
        let parent_len = push_name(&mut rel, &name);
        let meta = src
            .stat(At::Name(&top.src, &name))
            .map_err(|e| err("fstatat", &rel, e))?;
        let key = (meta.dev, meta.ino);
        if meta.kind != FileType::Directory && meta.nlink > 1 {
            if let Some((first, left)) = links.get_mut(&key) {
                let e = Entry {
                    name: &name,
                    rel: &rel,
                    meta: &meta,
                    xattrs: &[],
                };
                sink.hard_link(&top.dst, &e, first, &mut report)?;
                report.hard_links += 1;
                *left -= 1;
                if *left == 0 {
                    links.remove(&key);
                }
                rel.truncate(parent_len);
                continue;
            }
        }
        let made = copy_entry(src, sink, top, &name, &rel, &meta, opts, &mut report)?;
        match made {
            Made::Dir(o) => {
                let o = *o;
                stack.push(Frame {
                    src: o.src,
                    dst: o.dst,
                    names: o.names.into_iter(),
                    meta,
                    xattrs: o.xattrs,
                    parent_len,
                    name_start: rel.len() - name.len(),
                });
                continue;
            }
            Made::MountPoint(d, xattrs) => {
                let e = Entry {
                    name: &name,
                    rel: &rel,
                    meta: &meta,
                    xattrs: &xattrs,
                };
                report.skipped.push(Skipped {
                    path: rel_path(&rel),
                    reason: SkipReason::MountPoint,
                });
                sink.finish_dir(d, &e, &mut report)?;
            }
            Made::Linkable => {
                if meta.nlink > 1 {
                    links.insert(key, (rel.clone(), meta.nlink - 1));
                }
            }
            Made::Nothing => {}
        }
        rel.truncate(parent_len);
    }
    Ok(report)
}

/// A directory made and opened on both sides, with its names and xattrs.
struct Opened<F, D> {
    src: F,
    dst: D,
    names: Vec<Vec<u8>>,
    xattrs: Vec<Xattr>,
}

/// What `copy_entry` made.
enum Made<F, D> {
    /// A directory to descend into.
    Dir(Box<Opened<F, D>>),
    /// A directory on another filesystem, made empty, to be finished at once.
    MountPoint(D, Vec<Xattr>),
    /// A non-directory that later names may link to.
    Linkable,
    /// Nothing (left out, and reported).
    Nothing,
}

#[allow(clippy::too_many_arguments)]
fn copy_entry<S: Fs, K: Sink>(
    src: &S,
    sink: &mut K,
    top: &Frame<S::Fd, K::Dir>,
    name: &[u8],
    rel: &[u8],
    meta: &Meta,
    opts: &Options,
    report: &mut Report,
) -> Result<Made<S::Fd, K::Dir>> {
    let err = |op: &'static str, e: io::Error| Error::new(op, src.display(rel), e);
    match meta.kind {
        FileType::Directory => {
            let fd = src
                .open_read(&top.src, name, FileType::Directory)
                .map_err(|e| err("openat", e))?;
            let xattrs = read_xattrs(src, At::Fd(&fd), opts).map_err(|e| err("listxattr", e))?;
            let e = Entry {
                name,
                rel,
                meta,
                xattrs: &xattrs,
            };
            let d = sink.mkdir(&top.dst, &e, report)?;
            report.dirs += 1;
            if opts.mounts == Mounts::OneFilesystem && meta.dev != top.meta.dev {
                return Ok(Made::MountPoint(d, xattrs));
            }
            let names = src.read_dir(&fd).map_err(|e| err("getdents64", e))?;
            Ok(Made::Dir(Box::new(Opened {
                src: fd,
                dst: d,
                names,
                xattrs,
            })))
        }
        FileType::Regular => {
            let fd = src
                .open_read(&top.src, name, FileType::Regular)
                .map_err(|e| err("openat", e))?;
            let xattrs = read_xattrs(src, At::Fd(&fd), opts).map_err(|e| err("listxattr", e))?;
            let segs = segments(src, &fd, meta.size).map_err(|e| err("lseek", e))?;
            let mut contents = SrcContents {
                fs: src,
                fd: &fd,
                segs,
            };
            let e = Entry {
                name,
                rel,
                meta,
                xattrs: &xattrs,
            };
            let data = sink.file(&top.dst, &e, &mut contents, report)?;
            report.files += 1;
            report.bytes += data;
            report.hole_bytes += meta.size - data;
            Ok(Made::Linkable)
        }
        FileType::Symlink => {
            let target = src
                .readlink(&top.src, name)
                .map_err(|e| err("readlinkat", e))?;
            let xattrs = read_xattrs(src, At::Name(&top.src, name), opts)
                .map_err(|e| err("llistxattr", e))?;
            let e = Entry {
                name,
                rel,
                meta,
                xattrs: &xattrs,
            };
            sink.symlink(&top.dst, &e, &target, report)?;
            report.symlinks += 1;
            Ok(Made::Linkable)
        }
        _ => {
            let xattrs = read_xattrs(src, At::Name(&top.src, name), opts)
                .map_err(|e| err("llistxattr", e))?;
            let e = Entry {
                name,
                rel,
                meta,
                xattrs: &xattrs,
            };
            if sink.special(&top.dst, &e, report)? {
                report.specials += 1;
                Ok(Made::Linkable)
            } else {
                Ok(Made::Nothing)
            }
        }
    }
}

/// The data segments of a file of `size` bytes, found with `SEEK_DATA`/`SEEK_HOLE`; the
/// whole file when the source refuses them (`EINVAL`).
pub(super) fn segments<S: Fs>(src: &S, fd: &S::Fd, size: u64) -> io::Result<Vec<(u64, u64)>> {
    let mut out = Vec::new();
    let mut off = 0;
    while off < size {
        let data = match src.seek(fd, off, Seek::Data) {
            Ok(Some(d)) => d,
            Ok(None) => break,
            Err(e) if off == 0 && e.raw_os_error() == Some(Errno::EINVAL.raw()) => {
                return Ok(vec![(0, size)]);
            }
            Err(e) => return Err(e),
        };
        if data >= size {
            break;
        }
        let hole = src.seek(fd, data, Seek::Hole)?.unwrap_or(size).min(size);
        if hole <= data {
            // The file changed under the walk: take the rest as data.
            out.push((data, size - data));
            break;
        }
        out.push((data, hole - data));
        off = hole;
    }
    Ok(out)
}

/// The extended attributes of an entry, as `opts` asks; a source that has none
/// (`EOPNOTSUPP`) gives none, and one removed since the listing (`ENODATA`) is left out.
fn read_xattrs<S: Fs>(src: &S, at: At<'_, S::Fd>, opts: &Options) -> io::Result<Vec<Xattr>> {
    if opts.xattrs == Xattrs::Ignore {
        return Ok(Vec::new());
    }
    let names = match src.list_xattrs(at) {
        Ok(n) => n,
        Err(e) if e.raw_os_error() == Some(Errno::EOPNOTSUPP.raw()) => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut out = Vec::with_capacity(names.len());
    for name in names {
        match src.get_xattr(at, &name) {
            Ok(value) => out.push(Xattr { name, value }),
            Err(e) if e.raw_os_error() == Some(Errno::ENODATA.raw()) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(out)
}

struct SrcContents<'a, S: Fs> {
    fs: &'a S,
    fd: &'a S::Fd,
    segs: Vec<(u64, u64)>,
}

impl<S: Fs> Contents for SrcContents<'_, S> {
    fn segments(&self) -> &[(u64, u64)] {
        &self.segs
    }
    fn read_at(&mut self, buf: &mut [u8], off: u64) -> io::Result<usize> {
        self.fs.pread(self.fd, buf, off)
    }
}

/// The size of the copy buffer.
const COPY_CHUNK_BYTES: usize = 128 * 1024;

/// Reads each data segment of `data` in chunks and hands them to `write(chunk, offset)`.
/// A source that ends early (the file shrank) ends the copy of that file.
pub(super) fn for_each_chunk(
    data: &mut dyn Contents,
    buf: &mut Vec<u8>,
    mut write: impl FnMut(&[u8], u64) -> io::Result<()>,
) -> std::result::Result<(), (&'static str, io::Error)> {
    buf.resize(COPY_CHUNK_BYTES, 0);
    let segs = data.segments().to_vec();
    for (start, len) in segs {
        let end = start + len;
        let mut off = start;
        while off < end {
            let want = ((end - off) as usize).min(buf.len());
            let n = data
                .read_at(&mut buf[..want], off)
                .map_err(|e| ("pread", e))?;
            if n == 0 {
                return Ok(());
            }
            write(&buf[..n], off).map_err(|e| ("pwrite", e))?;
            off += n as u64;
        }
    }
    Ok(())
}

/// A directory tree on either side as a destination.
pub(super) struct FsSink<'a, D: Fs> {
    fs: &'a D,
    /// The destination root, for the targets of hard links.
    root: Option<D::Fd>,
    owners: bool,
    buf: Vec<u8>,
}

/// Whether a refusal to set an attribute or make a node is reported rather than an error.
fn refused(e: &io::Error) -> Option<i32> {
    let n = e.raw_os_error()?;
    [
        Errno::EPERM,
        Errno::EOPNOTSUPP,
        Errno::EACCES,
        Errno::EINVAL,
    ]
    .iter()
    .any(|x| x.raw() == n)
    .then_some(n)
}

impl<'a, D: Fs> FsSink<'a, D> {
    /// A sink into `fs`, setting owners if `owners`.
    pub(super) fn new(fs: &'a D, owners: bool) -> FsSink<'a, D> {
        FsSink {
            fs,
            root: None,
            owners,
            buf: Vec::new(),
        }
    }

    fn err(&self, op: &'static str, rel: &[u8], e: io::Error) -> Error {
        Error::new(op, self.fs.display(rel), e)
    }

    /// Owner, extended attributes, mode, times, in that order: `chown` clears set-id bits and
    /// `security.capability`, and every other call changes no time but the ctime.
    pub(super) fn apply(
        &self,
        at: At<'_, D::Fd>,
        e: &Entry<'_>,
        report: &mut Report,
    ) -> Result<()> {
        if self.owners {
            self.fs
                .chown(at, e.meta.uid, e.meta.gid)
                .map_err(|x| self.err("fchownat", e.rel, x))?;
        }
        for x in e.xattrs {
            match self.fs.set_xattr(at, &x.name, &x.value) {
                Ok(()) => report.xattrs += 1,
                Err(err) => match refused(&err) {
                    Some(errno) => report.skipped.push(Skipped {
                        path: rel_path(e.rel),
                        reason: SkipReason::Xattr {
                            name: x.name.clone(),
                            errno,
                        },
                    }),
                    None => return Err(self.err("setxattr", e.rel, err)),
                },
            }
        }
        if e.meta.kind != FileType::Symlink {
            self.fs
                .chmod(at, e.meta.perm)
                .map_err(|x| self.err("fchmodat", e.rel, x))?;
        }
        self.fs
            .utimens(at, e.meta.atime, e.meta.mtime)
            .map_err(|x| self.err("utimensat", e.rel, x))
    }
}

impl<D: Fs> Sink for FsSink<'_, D> {
    type Dir = D::Fd;

    fn root(&mut self, _e: &Entry<'_>, _report: &mut Report) -> Result<D::Fd> {
        let open = || self.fs.open_root(Root::CreateMissing);
        let a = open().map_err(|x| self.err("openat", b"", x))?;
        let b = open().map_err(|x| self.err("openat", b"", x))?;
        self.root = Some(b);
        Ok(a)
    }

    fn mkdir(&mut self, parent: &D::Fd, e: &Entry<'_>, _report: &mut Report) -> Result<D::Fd> {
        self.fs
            .mkdir(parent, e.name, 0o700)
            .map_err(|x| self.err("mkdirat", e.rel, x))?;
        self.fs
            .open_read(parent, e.name, FileType::Directory)
            .map_err(|x| self.err("openat", e.rel, x))
    }

    fn finish_dir(&mut self, dir: D::Fd, e: &Entry<'_>, report: &mut Report) -> Result<()> {
        self.apply(At::Fd(&dir), e, report)
    }

    fn file(
        &mut self,
        parent: &D::Fd,
        e: &Entry<'_>,
        data: &mut dyn Contents,
        report: &mut Report,
    ) -> Result<u64> {
        let fd = self
            .fs
            .create_file(parent, e.name)
            .map_err(|x| self.err("openat", e.rel, x))?;
        let fs = self.fs;
        let page = data.zero_pages_are_holes();
        let mut written = 0u64;
        for_each_chunk(data, &mut self.buf, |chunk, off| {
            match page {
                Some(p) => {
                    // Page by page, aligned to the file's pages; pages of zeros are holes.
                    let mut at = 0;
                    while at < chunk.len() {
                        let abs = off + at as u64;
                        let next = ((abs / p + 1) * p - off) as usize;
                        let part = &chunk[at..next.min(chunk.len())];
                        if part.iter().any(|&b| b != 0) {
                            write_all(fs, &fd, part, abs)?;
                            written += part.len() as u64;
                        }
                        at += part.len();
                    }
                    Ok(())
                }
                None => {
                    written += chunk.len() as u64;
                    write_all(fs, &fd, chunk, off)
                }
            }
        })
        .map_err(|(op, x)| self.err(op, e.rel, x))?;
        self.fs
            .ftruncate(&fd, e.meta.size)
            .map_err(|x| self.err("ftruncate", e.rel, x))?;
        self.apply(At::Fd(&fd), e, report)?;
        Ok(written)
    }

    fn symlink(
        &mut self,
        parent: &D::Fd,
        e: &Entry<'_>,
        target: &[u8],
        report: &mut Report,
    ) -> Result<()> {
        self.fs
            .symlink(target, parent, e.name)
            .map_err(|x| self.err("symlinkat", e.rel, x))?;
        self.apply(At::Name(parent, e.name), e, report)
    }

    fn special(&mut self, parent: &D::Fd, e: &Entry<'_>, report: &mut Report) -> Result<bool> {
        let mode = e.meta.kind.mode_bits() | 0o600;
        if let Err(x) = self.fs.mknod(parent, e.name, mode, e.meta.rdev) {
            return match refused(&x) {
                Some(errno) => {
                    report.skipped.push(Skipped {
                        path: rel_path(e.rel),
                        reason: SkipReason::Node(errno),
                    });
                    Ok(false)
                }
                None => Err(self.err("mknodat", e.rel, x)),
            };
        }
        self.apply(At::Name(parent, e.name), e, report)?;
        Ok(true)
    }

    fn hard_link(
        &mut self,
        parent: &D::Fd,
        e: &Entry<'_>,
        first: &[u8],
        _report: &mut Report,
    ) -> Result<()> {
        let root = self.root.as_ref().expect("root() ran before any entry");
        let r = if first.len() < PATH_MAX {
            self.fs.link(root, first, parent, e.name)
        } else {
            // Too long for one call: open the directories of `first` one by one.
            link_beneath(self.fs, root, first, parent, e.name)
        };
        r.map_err(|x| self.err("linkat", e.rel, x))
    }
}

/// `pwrite` of all of `chunk` at `off`.
fn write_all<D: Fs>(fs: &D, fd: &D::Fd, mut chunk: &[u8], mut off: u64) -> io::Result<()> {
    while !chunk.is_empty() {
        let n = fs.pwrite(fd, chunk, off)?;
        if n == 0 {
            return Err(io::Error::from_raw_os_error(Errno::ENOSPC.raw()));
        }
        chunk = &chunk[n..];
        off += n as u64;
    }
    Ok(())
}

/// `linkat` of `first`, a path in the tree below `root`, one directory at a time, each opened
/// with `O_NOFOLLOW`: for a path longer than `PATH_MAX`, and for a target named by an archive,
/// which must not reach out of the tree through a symlink.
pub(super) fn link_beneath<D: Fs>(
    fs: &D,
    root: &D::Fd,
    first: &[u8],
    parent: &D::Fd,
    name: &[u8],
) -> io::Result<()> {
    let (dirs, last) = match first.iter().rposition(|&b| b == b'/') {
        Some(i) => (&first[..i], &first[i + 1..]),
        None => (&b""[..], first),
    };
    let mut cur: Option<D::Fd> = None;
    for c in dirs.split(|&b| b == b'/').filter(|c| !c.is_empty()) {
        let next = fs.open_read(cur.as_ref().unwrap_or(root), c, FileType::Directory)?;
        cur = Some(next);
    }
    fs.link(cur.as_ref().unwrap_or(root), last, parent, name)
}
