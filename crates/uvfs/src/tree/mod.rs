//! Trees in and out: copy a host directory into a uvfs tree and back ([`import`], [`export`]),
//! tar archives in and out ([`import_tar`], [`export_tar`], feature `tar`), and
//! [`Vfs::snapshot`](crate::Vfs::snapshot), an independent copy of a whole [`Vfs`](crate::Vfs).
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use uvfs::{tree, Cred, Vfs};
//!
//! let host = std::env::temp_dir().join(format!("uvfs-tree-doc-{}", std::process::id()));
//! std::fs::create_dir_all(host.join("sub"))?;
//! std::fs::write(host.join("sub/hello"), b"hi")?;
//!
//! let vfs = Vfs::new();
//! let task = vfs.task(Cred::root());
//! let report = tree::import(&task, &host, "/data", &tree::Options::default())?;
//! assert_eq!((report.files, report.dirs), (1, 2));
//! assert_eq!(task.stat("/data/sub/hello")?.size, 2);
//!
//! let back = host.with_extension("out");
//! tree::export(&task, "/data", &back, &tree::Options::default())?;
//! assert_eq!(std::fs::read(back.join("sub/hello"))?, b"hi");
//! # std::fs::remove_dir_all(&host)?;
//! # std::fs::remove_dir_all(&back)?;
//! # Ok(())
//! # }
//! ```
//!
//! # What a copy keeps
//! Every copy walks the source with directory fds (`openat` relative to the parent's fd, never
//! a full path), so paths longer than `PATH_MAX` inside the tree are copied; names are bytes
//! (not UTF-8, newlines, leading dashes, 255 bytes). It keeps:
//! - the type: directories, regular files, symbolic links (copied as links, never followed),
//!   FIFOs, sockets and device nodes (`mknodat`; a refusal, e.g. `EPERM` for a device without
//!   `CAP_MKNOD`, is reported in [`Report::skipped`], not an error);
//! - hard links: a second name of an inode already copied (same source device and inode
//!   number) becomes a `linkat` of the first copy, so link groups come out as link groups;
//! - contents, sparse: the data segments are found with `SEEK_DATA`/`SEEK_HOLE` (all of the
//!   file is one segment where the source refuses them with `EINVAL`), only they are written,
//!   and the file is then truncated to its size, so holes stay holes;
//! - the permission bits with set-user-ID, set-group-ID and sticky (set after the owner: a
//!   `chown` clears set-id bits, as Linux does);
//! - the owner and group, as [`Owners`] says (by default when the copier may `chown`);
//! - extended attributes, as [`Xattrs`] says: each one the destination refuses with `EPERM`,
//!   `EOPNOTSUPP` or `EACCES` (say `trusted.*` without `CAP_SYS_ADMIN`, `user.*` on a symlink)
//!   is reported in [`Report::skipped`];
//! - atime and mtime to the nanosecond (`utimensat`), set last: after the contents, owner,
//!   xattrs and mode of a file, and for a directory after all of its children (post-order),
//!   whose creation changes the directory's times. A ctime cannot be set by any call: the
//!   copy's ctime is the time of the copy.
//!
//! Reading the source changes no atime of a file or directory: they are opened with
//! `O_NOATIME` where the caller may (owner or `CAP_FOWNER`), without it where not. A symlink's
//! is another matter: `readlinkat` sets it (Linux has no way to read a link without that,
//! short of a `noatime` mount), so after a copy the source's symlinks have the copy's time
//! as their atime, while the copies have the atime they had before (the walk `lstat`s first).
//!
//! # The destination
//! `dest` is created as a directory if it does not exist (its parent must); if it exists it
//! must be a directory (else `ENOTDIR`), and the tree's entries are added to it: a name that
//! exists already is `EEXIST`, nothing is ever replaced. Either way the destination root takes
//! the source root's mode, owner, xattrs and times, as `cp -a src/. dest` does.
//!
//! # Errors
//! The first failure stops the copy and is returned as an [`Error`]: the operation, the path
//! (the side's root joined with the entry's path in the tree) and the `io::Error` with the
//! errno (`raw_os_error`); what was copied until then stays. Bad input gives Linux's errno:
//! a missing source `ENOENT`, a source or destination that is not a directory `ENOTDIR`, a
//! full size-limited tmpfs `ENOSPC`.
//!
//! # Cost and limits
//! One pass: each entry is `lstat`ed once and each data byte read and written once, with a
//! constant number of calls per entry and per data segment; hard links are found in a map
//! keyed by (device, inode) that forgets an inode once all of its links were seen. No lookup
//! by path and no path rebuilt per entry, except a hard link's target, resolved from the
//! destination root (one call, or one `openat` per level past `PATH_MAX`).
//!
//! The walk keeps one open directory per level on each side: a tree deeper than about half of
//! the fd limit fails with `EMFILE`. Files are read once; one that changes during the copy is
//! copied as it was read. The calls are made by a fork of the given task (`Task::fork`: same
//! credentials, root and cwd), so its fds never appear in the caller's table.
//!
//! # Tar archives (feature `tar`)
//!
//! ## The format written
//!
//! GNU headers (long names and link targets as GNU `L`/`K` entries, large ids in base-256),
//! each entry preceded by a PAX extended header (`x`) carrying what a GNU header cannot:
//! `mtime` and `atime` to the nanosecond, and `SCHILY.xattr.<name>` for each extended
//! attribute (GNU tar's and bsdtar's key). A file with holes is a GNU sparse entry (`S`, the
//! old GNU sparse format, with extension headers past four segments) holding only its data
//! segments. Entry paths are relative to the exported directory, which is itself the entry
//! `./`. Hard links are `1` entries naming the first path. Sockets cannot be archived: they are
//! reported in [`Report::skipped`] as [`SkipReason::Socket`].
//!
//! ## What an import keeps
//!
//! Mode bits (set-id and sticky included), owners (as [`Owners`] says), mtime,
//! atime (from PAX `atime`; the mtime when the archive has none), `SCHILY.xattr.*`, symlinks,
//! hard links, FIFOs and devices (as `mknodat` allows), and holes: the data of a GNU sparse
//! entry is written page by page, skipping pages of zeros (the `tar` crate reads a sparse
//! entry as one stream with its holes as zeros), so a page of zeros stored as data in the
//! archive also becomes a hole. Leading `/` and `./` are dropped from entry paths; an entry
//! with a `..` component, or a hard link whose target has one, is not extracted
//! ([`SkipReason::UnsafePath`]); nor does an entry lead out through a symlink the archive
//! made: the directories of entry paths and of hard-link targets are opened one by one with
//! `O_NOFOLLOW` (a symlink there is `ELOOP` or `ENOTDIR`). A directory missing from the
//! archive but needed by an entry is made with mode 0755; directories get their attributes
//! after all entries (their entries change their times). An archive without a `./` entry
//! leaves a destination it created with mode 0755. As with [`import`], nothing is replaced: an
//! entry whose name exists is `EEXIST`, except a directory, which takes the entry's attributes.

mod error;
mod fsops;
mod host;
mod snapshot;
#[cfg(feature = "tar")]
mod tar;
mod uv;
mod walk;

use std::path::{Path, PathBuf};

pub use error::{Error, Result};

use crate::vfs::Task;

/// Whether a copy sets the owner and group of what it creates.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Owners {
    /// Preserve them when the copier may give files away: on uvfs, a task with `CAP_CHOWN`;
    /// on the host, an effective user ID of 0 (as tar does). Otherwise the copies belong to
    /// the copier.
    #[default]
    Auto,
    /// Always preserve them; a `chown` the destination refuses is an error (`EPERM`).
    Preserve,
    /// Never: the copies belong to the copier.
    Ignore,
}

/// Which extended attributes a copy carries.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Xattrs {
    /// Every attribute the source lists (`user.*`, and `trusted.*`/`security.*` where the
    /// source shows them); each one the destination refuses goes to [`Report::skipped`].
    #[default]
    All,
    /// None.
    Ignore,
}

/// Whether a copy descends into directories on other filesystems than the source root's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Mounts {
    /// Descend into mounts below the source root, copying their contents as part of the tree.
    #[default]
    Cross,
    /// Stay on the source root's filesystem (`cp -x`, `tar --one-file-system`): a mount point
    /// is copied as an empty directory and reported in [`Report::skipped`].
    OneFilesystem,
}

/// How a copy is made: [`Options::default`] preserves everything it may; set fields on it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Options {
    /// Owners and groups.
    pub owners: Owners,
    /// Extended attributes.
    pub xattrs: Xattrs,
    /// Mounts below the source root.
    pub mounts: Mounts,
}

/// Why an entry, or part of one, was not copied.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SkipReason {
    /// A socket, which a tar archive cannot hold.
    Socket,
    /// The destination refused to create the node (FIFO, socket, device) with this errno;
    /// `EPERM` for a device without `CAP_MKNOD`.
    Node(i32),
    /// The destination refused this extended attribute with this errno.
    Xattr {
        /// The attribute's name.
        name: Vec<u8>,
        /// `EPERM`, `EOPNOTSUPP` or `EACCES`.
        errno: i32,
    },
    /// A directory on another filesystem, not descended into ([`Mounts::OneFilesystem`]).
    MountPoint,
    /// A tar entry whose path leaves the destination (`..`, or a link target that does).
    UnsafePath,
    /// A tar entry of a type that has no file (a GNU volume label, an unknown type byte).
    TarEntryType(u8),
}

/// One entry, or part of one, that a copy left out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skipped {
    /// The entry's path in the tree, relative to the tree's root (`""` for the root).
    pub path: PathBuf,
    /// Why.
    pub reason: SkipReason,
}

/// What a copy did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Report {
    /// Regular files written (the first name of each; later names count in `hard_links`).
    pub files: u64,
    /// Directories, the root included.
    pub dirs: u64,
    /// Symbolic links.
    pub symlinks: u64,
    /// FIFOs, sockets and device nodes.
    pub specials: u64,
    /// Names made with `linkat` to an entry already copied.
    pub hard_links: u64,
    /// Bytes of file data written.
    pub bytes: u64,
    /// Bytes of holes not written (file sizes less the data segments).
    pub hole_bytes: u64,
    /// Extended attributes set.
    pub xattrs: u64,
    /// What was left out, and why.
    pub skipped: Vec<Skipped>,
}

/// Copies the host directory `host_src` into the uvfs tree at `dest` (a path of `task`).
///
/// See the [module documentation](self) for what is kept and what `dest` may be.
///
/// # Errors
/// As the module documentation says: the first failure, with the operation and the path.
pub fn import(
    task: &Task,
    host_src: impl AsRef<Path>,
    dest: impl AsRef<[u8]>,
    opts: &Options,
) -> Result<Report> {
    let src = host::Host::new(host_src.as_ref().to_path_buf());
    let dst = uv::Uv::new(task, dest.as_ref());
    walk::copy(&src, &dst, opts)
}

/// Copies the uvfs tree at `src` (a path of `task`) to the host directory `host_dest`.
///
/// See the [module documentation](self) for what is kept and what `host_dest` may be.
///
/// # Errors
/// As the module documentation says: the first failure, with the operation and the path.
pub fn export(
    task: &Task,
    src: impl AsRef<[u8]>,
    host_dest: impl AsRef<Path>,
    opts: &Options,
) -> Result<Report> {
    let src = uv::Uv::new(task, src.as_ref());
    let dst = host::Host::new(host_dest.as_ref().to_path_buf());
    walk::copy(&src, &dst, opts)
}

#[cfg(feature = "tar")]
pub use self::tar::{export_tar, import_tar};
