//! tmpfs directories: entries with stable offsets, `readdir`, `rename`.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use parking_lot::RwLock;

use super::{Node, BOGO_DIRENT_SIZE};
use crate::abi::{Errno, RenameFlags, Result, Whence};
use crate::vfs::inode::{Inode, Stamp};
use crate::vfs::ops::{DirEntry, FileOps, NewInode};
use crate::vfs::FileDescription;

/// Offset of the first real entry; 0 and 1 are `.` and `..`.
const FIRST_OFFSET: u64 = 2;
/// Offset given to a directory's first entry; later entries get smaller ones.
const NEWEST_START: u64 = 1 << 62;

struct Entry {
    name: Box<[u8]>,
    ino: u64,
    d_type: u8,
}

#[derive(Default)]
struct Entries {
    by_name: HashMap<Box<[u8]>, (u64, Arc<Inode>)>,
    by_off: BTreeMap<u64, Entry>,
    next_off: u64,
    /// An offset taken for a name that is added later: a rename's whiteout, which Linux creates
    /// before it moves the source (`shmem_whiteout()` in `shmem_rename2()`).
    reserved: Option<(Box<[u8]>, u64)>,
}

impl Entries {
    fn take_off(&mut self) -> u64 {
        let off = if self.next_off == 0 {
            NEWEST_START
        } else {
            self.next_off
        };
        self.next_off = off - 1;
        off
    }
}

/// The entries of a tmpfs directory.
///
/// Each entry gets the next offset of a counter that only shrinks, and a listing walks offsets
/// upward, so entries come newest first (as Linux 6.18 tmpfs lists them) and a `getdents64`
/// cursor (the offset after the last entry returned) never returns an entry twice and never
/// skips one that existed for the whole listing, whatever is created or removed meanwhile; an
/// entry created during a listing gets an offset below the cursor and is not returned by it
/// (Linux: `simple_offset_add()` in fs/libfs.c).
#[derive(Default)]
pub(crate) struct DirData {
    /// Protects: the entry maps. Taken under the VFS inode lock for changes; shared by readdir
    /// and lookup. Order: after the directory's inode lock; innermost.
    inner: RwLock<Entries>,
}

impl DirData {
    pub(crate) fn get(&self, name: &[u8]) -> Option<Arc<Inode>> {
        self.inner.read().by_name.get(name).map(|(_, i)| i.clone())
    }

    /// Adds an entry at a new offset, or at the one reserved for its name.
    pub(crate) fn add(&self, name: &[u8], inode: Arc<Inode>) {
        let mut e = self.inner.write();
        // A reservation waits for its name (the whiteout, added under the same inode lock).
        let off = match e.reserved.take() {
            Some((n, off)) if *n == *name => off,
            r => {
                e.reserved = r;
                e.take_off()
            }
        };
        e.by_off.insert(
            off,
            Entry {
                name: name.into(),
                ino: inode.ino(),
                d_type: inode.file_type().dirent_type(),
            },
        );
        e.by_name.insert(name.into(), (off, inode));
    }

    pub(crate) fn remove(&self, name: &[u8]) -> Option<Arc<Inode>> {
        let mut e = self.inner.write();
        let (off, inode) = e.by_name.remove(name)?;
        e.by_off.remove(&off);
        Some(inode)
    }

    /// Takes a new offset now for `name`, added later.
    pub(super) fn reserve(&self, name: &[u8]) {
        let mut e = self.inner.write();
        let off = e.take_off();
        e.reserved = Some((name.into(), off));
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.inner.read().by_name.is_empty()
    }
}

/// An open tmpfs directory.
pub(crate) struct DirFile;

impl FileOps for DirFile {
    fn readdir(
        &self,
        file: &FileDescription,
        pos: &mut u64,
        sink: &mut dyn FnMut(DirEntry<'_>) -> bool,
    ) -> Result<()> {
        let inode = file.inode();
        let node = Node::of(inode).ok_or(Errno::ENOTDIR)?;
        let d = node.dir()?;
        if *pos == 0 {
            if !sink(DirEntry {
                name: b".",
                ino: inode.ino(),
                d_type: 4,
                next_pos: 1,
            }) {
                return Ok(());
            }
            *pos = 1;
        }
        if *pos == 1 {
            let pino = file
                .path()
                .dentry
                .parent()
                .and_then(|p| p.inode().map(|i| i.ino()))
                .unwrap_or(inode.ino());
            if !sink(DirEntry {
                name: b"..",
                ino: pino,
                d_type: 4,
                next_pos: FIRST_OFFSET,
            }) {
                return Ok(());
            }
            *pos = FIRST_OFFSET;
        }
        let e = d.inner.read();
        for (&off, ent) in e.by_off.range(*pos..) {
            if !sink(DirEntry {
                name: &ent.name,
                ino: ent.ino,
                d_type: ent.d_type,
                next_pos: off + 1,
            }) {
                return Ok(());
            }
            *pos = off + 1;
        }
        Ok(())
    }

    fn llseek(
        &self,
        _file: &FileDescription,
        offset: i64,
        whence: Whence,
        cur: u64,
    ) -> Result<u64> {
        let new = match whence {
            Whence::SET => offset,
            Whence::CUR => i64::try_from(cur)
                .map_err(|_| Errno::EINVAL)?
                .checked_add(offset)
                .ok_or(Errno::EINVAL)?,
            _ => return Err(Errno::EINVAL),
        };
        if new < 0 {
            return Err(Errno::EINVAL);
        }
        Ok(new as u64)
    }

    fn release(&self, file: &FileDescription) {
        if let Some(n) = Node::of(file.inode()) {
            n.closed(file.inode());
        }
    }
}

/// Renames an entry; the VFS checked everything that does not depend on tmpfs.
pub(super) fn rename(
    old_node: &Node,
    old_dir: &Inode,
    old_name: &[u8],
    new_dir: &Inode,
    new_name: &[u8],
    flags: RenameFlags,
    whiteout: Option<&NewInode<'_>>,
) -> Result<Option<Arc<Inode>>> {
    let new_node = Node::of(new_dir).ok_or(Errno::EXDEV)?;
    let od = old_node.dir()?;
    let nd = new_node.dir()?;
    let same_dir = std::ptr::eq(old_dir, new_dir);
    let src = od.get(old_name).ok_or(Errno::ENOENT)?;
    // Linux: `simple_rename_timestamp()` in fs/libfs.c stamps the old directory, the new one,
    // the moved inode and the replaced one, each with its own `inode_set_ctime_current()`.
    let stamp_dirs = |old_delta: i32, new_delta: i32, old_size: i64, new_size: i64| {
        let now = old_dir.current_time();
        old_dir.write_attrs(|w| {
            w.add_nlink(old_delta);
            w.set_size(old_dir.size().saturating_add_signed(old_size));
            w.set_mtime(now);
            w.set_ctime(now);
        });
        if !same_dir {
            let now = new_dir.current_time();
            new_dir.write_attrs(|w| {
                w.add_nlink(new_delta);
                w.set_size(new_dir.size().saturating_add_signed(new_size));
                w.set_mtime(now);
                w.set_ctime(now);
            });
        }
    };
    let bogo = BOGO_DIRENT_SIZE as i64;
    if flags.contains(RenameFlags::EXCHANGE) {
        let tgt = nd.get(new_name).ok_or(Errno::ENOENT)?;
        od.remove(old_name);
        nd.remove(new_name);
        od.add(old_name, tgt.clone());
        nd.add(new_name, src.clone());
        let (mut o, mut n) = (0, 0);
        if !same_dir {
            if src.is_dir() {
                o -= 1;
                n += 1;
            }
            if tgt.is_dir() {
                n -= 1;
                o += 1;
            }
        }
        stamp_dirs(o, n, 0, 0);
        src.touch_ctime(Stamp::Ctime);
        tgt.touch_ctime(Stamp::Ctime);
        return Ok(None);
    }
    let (mut o, mut n, mut nsize) = (0, 0, bogo);
    let tgt = nd.get(new_name);
    if let Some(tgt) = &tgt {
        if Arc::ptr_eq(tgt, &src) {
            return Ok(None);
        }
        if let Some(tn) = Node::of(tgt) {
            if let Ok(td) = tn.dir() {
                if !td.is_empty() {
                    return Err(Errno::ENOTEMPTY);
                }
            }
        }
    }
    // The whiteout comes first: if it cannot be made (no inode left), nothing has moved
    // (Linux: `shmem_whiteout()` before `simple_offset_rename()` in `shmem_rename2()`).
    let whiteout = match whiteout {
        Some(new) if flags.contains(RenameFlags::WHITEOUT) => {
            Some(old_node.make_whiteout(old_dir, old_name, new)?)
        }
        _ => None,
    };
    let mut replaced = None;
    if let Some(tgt) = tgt {
        nd.remove(new_name);
        nsize -= bogo;
        // The replaced inode is unlinked first: stamped, and the new directory takes its
        // stamp (Linux: `shmem_rename2()` calls `shmem_unlink()`).
        let now = tgt.current_time();
        if tgt.is_dir() {
            n -= 1;
            tgt.write_attrs(|w| {
                w.set_nlink(0);
                w.set_ctime(now);
            });
        } else {
            if tgt.nlink() > 1 {
                old_node.counters.free_inode();
            }
            tgt.write_attrs(|w| {
                w.add_nlink(-1);
                w.set_ctime(now);
            });
        }
        new_dir.write_attrs(|w| {
            w.set_mtime(now);
            w.set_ctime(now);
        });
        new_dir.clear_ctime_queried();
        if let Some(tn) = Node::of(&tgt) {
            tn.maybe_release(&tgt);
        }
        replaced = Some(tgt);
    }
    od.remove(old_name);
    // The moved entry is the newest; the whiteout, made first, comes after it.
    nd.add(new_name, src.clone());
    if let Some(w) = &whiteout {
        od.add(old_name, w.clone());
    }
    if src.is_dir() && !same_dir {
        o -= 1;
        n += 1;
    }
    if same_dir {
        stamp_dirs(o + n, 0, nsize - bogo, 0);
    } else {
        stamp_dirs(o, n, -bogo, nsize);
    }
    src.touch_ctime(Stamp::Ctime);
    if let Some(tgt) = replaced {
        tgt.touch_ctime(Stamp::Ctime);
    }
    Ok(whiteout)
}
