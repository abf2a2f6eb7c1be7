//! `ReadDir` and `DirEntry`: a directory listing as an iterator.

use std::collections::VecDeque;
use std::ffi::{OsStr, OsString};
use std::io;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::error::{error, Context};
use super::handle::Inner;
use super::metadata::{FileType, Metadata};
use super::path_bytes;
use crate::abi::{AtFlags, AT_FDCWD};
use crate::sys::At;
use crate::vfs::FileDescription;

/// Entries taken from the directory per call into the filesystem.
const BATCH: usize = 64;

/// The entries of a directory, as `std::fs::ReadDir`: `.` and `..` left out, in the
/// filesystem's order, each read once even while the directory changes (Linux's
/// `getdents64` guarantee).
pub struct ReadDir {
    fs: Arc<Inner>,
    dir: Arc<FileDescription>,
    root: Arc<PathBuf>,
    pending: VecDeque<(Vec<u8>, u64, u8)>,
    done: bool,
}

impl ReadDir {
    pub(crate) fn open(fs: &Arc<Inner>, path: &Path) -> io::Result<ReadDir> {
        use crate::abi::OpenFlags as O;
        let flags = O::RDONLY | O::DIRECTORY | O::CLOEXEC;
        let dir = fs
            .task()
            .openat_file(AT_FDCWD, path_bytes(path), flags, 0)
            .at("open directory", path)?;
        Ok(ReadDir {
            fs: fs.clone(),
            dir,
            root: Arc::new(path.to_path_buf()),
            pending: VecDeque::new(),
            done: false,
        })
    }

    /// Takes the next batch of entries; marks the end when the directory gives none.
    fn fill(&mut self) -> io::Result<()> {
        let pending = &mut self.pending;
        let mut taken = 0usize;
        let r = self.fs.task().iterate_dir(&self.dir, &mut |e| {
            if taken == BATCH {
                return false;
            }
            taken += 1;
            if e.name != b"." && e.name != b".." {
                pending.push_back((e.name.to_vec(), e.ino, e.d_type));
            }
            true
        });
        if let Err(e) = r {
            self.done = true;
            return Err(error("read directory", &self.root, e));
        }
        if taken == 0 {
            self.done = true;
        }
        Ok(())
    }
}

impl Iterator for ReadDir {
    type Item = io::Result<DirEntry>;

    fn next(&mut self) -> Option<io::Result<DirEntry>> {
        while self.pending.is_empty() {
            if self.done {
                return None;
            }
            if let Err(e) = self.fill() {
                return Some(Err(e));
            }
        }
        let (name, ino, d_type) = self.pending.pop_front()?;
        Some(Ok(DirEntry {
            fs: self.fs.clone(),
            dir: self.dir.clone(),
            root: self.root.clone(),
            name: OsString::from_vec(name),
            ino,
            d_type,
        }))
    }
}

impl std::fmt::Debug for ReadDir {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("ReadDir").field(&self.root).finish()
    }
}

/// One entry of a [`ReadDir`], as `std::fs::DirEntry`.
pub struct DirEntry {
    fs: Arc<Inner>,
    /// The listed directory, open: `metadata` looks the name up in it, as `fstatat(dirfd,
    /// name)` does, so a rename of the directory after the listing does not matter.
    dir: Arc<FileDescription>,
    root: Arc<PathBuf>,
    name: OsString,
    ino: u64,
    d_type: u8,
}

impl DirEntry {
    /// The directory's path joined with the entry's name.
    pub fn path(&self) -> PathBuf {
        self.root.join(&self.name)
    }
    /// The entry's name.
    pub fn file_name(&self) -> OsString {
        self.name.clone()
    }
    /// The entry's name, borrowed.
    pub fn name(&self) -> &OsStr {
        &self.name
    }
    /// The inode number the listing gave.
    pub fn ino(&self) -> u64 {
        self.ino
    }
    /// The type, from the listing (no `stat`), or from `lstat` when the listing did not say
    /// (`DT_UNKNOWN`). A symlink is a symlink: nothing is followed.
    ///
    /// # Errors
    /// `lstat`'s, when it is needed and the entry has gone.
    pub fn file_type(&self) -> io::Result<FileType> {
        let t = FileType::from_dtype(self.d_type);
        if t.kind().is_some() {
            return Ok(t);
        }
        self.metadata().map(|m| m.file_type())
    }
    /// `lstat` of the entry (a symlink's own metadata, as `std`'s `DirEntry::metadata`), by
    /// its name in the listed directory (`fstatat(dirfd, name, AT_SYMLINK_NOFOLLOW)`).
    ///
    /// # Errors
    /// `ENOENT` if the entry was removed since the listing.
    pub fn metadata(&self) -> io::Result<Metadata> {
        self.fs
            .task()
            .fstatat_at(
                At::File(&self.dir),
                self.name.as_bytes(),
                AtFlags::SYMLINK_NOFOLLOW,
                Metadata::of,
            )
            .map_err(|e| error("stat", &self.path(), e))
    }
}

impl std::fmt::Debug for DirEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("DirEntry").field(&self.path()).finish()
    }
}
