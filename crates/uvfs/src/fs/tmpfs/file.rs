//! tmpfs regular files: sparse pages, read, write, truncate, `SEEK_DATA`/`SEEK_HOLE`,
//! `fallocate`.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use super::{CountersRef, Node};
use crate::abi::{Errno, FallocFlags, Result, Whence, BLOCK_UNIT, MAX_LFS_FILESIZE, PAGE_SIZE};
use crate::sync::biased::BiasedRwLock;
use crate::vfs::inode::Inode;
use crate::vfs::ops::{generic_llseek, FileOps, WritePos};
use crate::vfs::FileDescription;

const PAGE: usize = PAGE_SIZE as usize;
const BLOCKS_PER_PAGE: u64 = PAGE_SIZE / BLOCK_UNIT;

type Page = Box<[u8; PAGE]>;

fn zeroed_page() -> Page {
    vec![0u8; PAGE]
        .into_boxed_slice()
        .try_into()
        .expect("a PAGE-long slice converts to a PAGE array")
}

/// Page map of a file. A missing page is a hole; a page allocated by `fallocate` and never
/// written is "unwritten": it holds zeros, counts as allocated, and reads as a hole to
/// `SEEK_DATA`/`SEEK_HOLE` (Linux: a shmem folio that is not uptodate).
///
/// A page counted as allocated may have no memory yet (`None`): it holds zeros. `fallocate`
/// counts its pages against the instance's blocks without allocating or zeroing memory (Linux
/// allocates the folios but leaves them uncleared, `SGP_FALLOC` taking `SGP_WRITE`'s
/// shortcut), and the first write to such a page makes it. What the calls report is the
/// same; only the process's memory use differs.
#[derive(Default)]
pub(crate) struct Pages {
    map: BTreeMap<u64, Option<Page>>,
    unwritten: BTreeSet<u64>,
}

impl Pages {
    fn is_data(&self, idx: u64) -> bool {
        self.map.contains_key(&idx) && !self.unwritten.contains(&idx)
    }
}

/// The pages of a tmpfs file. Aligned to a cache-line pair, as Linux aligns its inode and
/// file caches (`SLAB_HWCACHE_ALIGN`): the page map's lock is written by every write, and the
/// data of two files made one after the other would otherwise share a line, so that two
/// threads writing their own files would bounce it (`pwrite1` in processes mode: 1.46x on two
/// threads, issue 7). Only a file that has had data has one.
#[repr(align(128))]
pub(crate) struct RegData {
    /// The instance's space accounting, reached from here so that I/O on an open file
    /// touches nothing shared with other files (an `Arc` clone per open would be).
    counters: CountersRef,
    /// Protects: the page map and, with the attribute lock, `size` and `blocks` of the inode
    /// (Linux: `i_rwsem` of a shmem file). Shared for reads, exclusive for writes and resizes.
    /// Order: after the inode lock and `FileDescription::pos`; before the attribute lock.
    /// Read-biased: readers on different threads write different lines while no writer
    /// comes (Linux's page cache reads take no lock).
    pages: BiasedRwLock<Pages>,
}

impl RegData {
    pub(crate) fn new(counters: CountersRef) -> RegData {
        RegData {
            counters,
            pages: BiasedRwLock::default(),
        }
    }

    /// Drops every page; returns how many there were.
    pub(crate) fn release_all(&self) -> u64 {
        let mut p = self.pages.write();
        let n = p.map.len() as u64;
        p.map.clear();
        p.unwritten.clear();
        n
    }

    /// Sets the size to `new`. Unless the file grows, every page past the new end goes, those
    /// `fallocate(FALLOC_FL_KEEP_SIZE)` put past the old end included, and the tail of the last
    /// page is zeroed (Linux: `shmem_setattr()` calls `shmem_truncate_range()` for a size that
    /// shrinks or stays). Returns whether to stamp mtime and ctime.
    pub(crate) fn resize(&self, inode: &Inode, new: u64) -> Result<bool> {
        let counters = &*self.counters;
        let mut pages = self.pages.write();
        let old = inode.size();
        let had = pages.map.len() as u64;
        if new <= old {
            let first_dropped = new.div_ceil(PAGE_SIZE);
            let dropped = pages.map.split_off(&first_dropped);
            pages.unwritten.split_off(&first_dropped);
            counters.free_blocks(dropped.len() as u64);
            let tail = (new % PAGE_SIZE) as usize;
            if tail != 0 {
                if let Some(Some(p)) = pages.map.get_mut(&(new / PAGE_SIZE)) {
                    p[tail..].fill(0);
                }
            }
        }
        let n = pages.map.len() as u64;
        if new != old || n != had {
            inode.write_attrs(|w| {
                w.set_size(new);
                w.set_blocks(n * BLOCKS_PER_PAGE);
            });
        }
        // Stamp when the size changes, or when a shrink or same-size truncate meets allocated
        // pages (Linux: `shmem_setattr()` calls `shmem_truncate_range()`, which stamps, when
        // the inode has pages).
        Ok(new != old || had > 0)
    }
}

/// Copies a few bytes inline (a 1-byte `copy_from_slice` is a library call).
#[inline(always)]
fn copy_small(dst: &mut [u8], src: &[u8]) {
    if dst.len() <= 16 {
        for (d, s) in dst.iter_mut().zip(src) {
            *d = *s;
        }
    } else {
        dst.copy_from_slice(src);
    }
}

/// An open tmpfs regular file. It holds nothing of its own: its pages are its inode's, found
/// through the node at each call, so an open allocates nothing for it (a box of a copy of
/// the pages' `Arc` cost an allocation, a free and two reference count updates per open and
/// close, about 150 instructions of open-read-close's 2,450, callgrind).
pub(crate) struct RegFile;

impl RegFile {
    /// The file's tmpfs node.
    #[allow(unsafe_code)] // Reason: the node is found without a down-cast (`ops_unchecked`).
    #[inline]
    fn node(file: &FileDescription) -> &Node {
        // SAFETY: a `RegFile` is made only by `Node::open`, for a file of that node's inode,
        // and a file's inode never changes.
        unsafe { file.inode().ops_unchecked::<Node>() }
    }

    /// The file's pages if it has any yet. A file without them is empty: every call that
    /// gives a file a size or a page makes them first.
    #[inline]
    fn data_if_made(file: &FileDescription) -> Option<&Arc<RegData>> {
        Self::node(file).reg_data_if_made()
    }

    /// The file's pages, made now if it has none.
    #[inline]
    fn data(file: &FileDescription) -> Result<&Arc<RegData>> {
        let inode = file.inode();
        Self::node(file).reg_data(inode).ok_or(Errno::EINVAL)
    }
}

impl FileOps for RegFile {
    #[inline]
    fn read(&self, file: &FileDescription, buf: &mut [u8], pos: u64) -> Result<usize> {
        let inode = file.inode();
        let Some(data) = Self::data_if_made(file) else {
            return Ok(0);
        };
        let pages = data.pages.read();
        let size = inode.size();
        if pos >= size {
            return Ok(0);
        }
        let n = (buf.len() as u64).min(size - pos) as usize;
        let mut done = 0;
        while done < n {
            let off = pos + done as u64;
            let in_page = (off % PAGE_SIZE) as usize;
            let chunk = (PAGE - in_page).min(n - done);
            let dst = &mut buf[done..done + chunk];
            match pages.map.get(&(off / PAGE_SIZE)) {
                Some(Some(p)) => copy_small(dst, &p[in_page..in_page + chunk]),
                Some(None) | None => dst.fill(0),
            }
            done += chunk;
        }
        Ok(n)
    }

    #[inline]
    fn write(&self, file: &FileDescription, buf: &[u8], pos: WritePos) -> Result<(usize, u64)> {
        let inode = file.inode();
        if buf.is_empty() {
            // Nothing is written, so nothing is made; the end is read under the lock writers
            // of the size hold, if there is one yet.
            let _pages = Self::data_if_made(file).map(|d| d.pages.read());
            let start = match pos {
                WritePos::At(p) => p,
                WritePos::Append => inode.size(),
            };
            return Ok((0, start));
        }
        let data = Self::data(file)?;
        let mut pages = data.pages.write();
        let start = match pos {
            WritePos::At(p) => p,
            WritePos::Append => inode.size(),
        };
        if start >= MAX_LFS_FILESIZE as u64 {
            return Err(Errno::EFBIG);
        }
        // Times change before the copy, so even a write that finds no space stamps them
        // (Linux: `file_modified()` in `shmem_file_write_iter()`).
        inode.update_mtime_ctime();
        let len = (buf.len() as u64).min(MAX_LFS_FILESIZE as u64 - start) as usize;
        let mut done = 0;
        let mut new_pages = 0u64;
        while done < len {
            let off = start + done as u64;
            let in_page = (off % PAGE_SIZE) as usize;
            let chunk = (PAGE - in_page).min(len - done);
            let idx = off / PAGE_SIZE;
            let p = &mut *pages;
            let page = match p.map.entry(idx) {
                std::collections::btree_map::Entry::Occupied(e) => {
                    if !p.unwritten.is_empty() {
                        p.unwritten.remove(&idx);
                    }
                    e.into_mut().get_or_insert_with(zeroed_page)
                }
                std::collections::btree_map::Entry::Vacant(e) => {
                    if data.counters.alloc_blocks(1).is_err() {
                        break;
                    }
                    new_pages += 1;
                    e.insert(Some(zeroed_page()))
                        .get_or_insert_with(zeroed_page)
                }
            };
            copy_small(
                &mut page[in_page..in_page + chunk],
                &buf[done..done + chunk],
            );
            done += chunk;
        }
        if done == 0 {
            return Err(Errno::ENOSPC);
        }
        let end = start + done as u64;
        if end > inode.size() || new_pages != 0 {
            let n = pages.map.len() as u64;
            inode.write_attrs(|w| {
                if end > inode.size() {
                    w.set_size(end);
                }
                w.set_blocks(n * BLOCKS_PER_PAGE);
            });
        }
        Ok((done, end))
    }

    fn llseek(&self, file: &FileDescription, offset: i64, whence: Whence, cur: u64) -> Result<u64> {
        if whence != Whence::DATA && whence != Whence::HOLE {
            return generic_llseek(file.inode().size(), offset, whence, cur);
        }
        if offset < 0 {
            return Err(Errno::ENXIO);
        }
        // No pages: the size is 0 and every offset is past the end.
        let pages = Self::data_if_made(file).ok_or(Errno::ENXIO)?.pages.read();
        let size = file.inode().size();
        let off = offset as u64;
        if off >= size {
            return Err(Errno::ENXIO);
        }
        let first = off / PAGE_SIZE;
        if whence == Whence::DATA {
            let found = pages
                .map
                .range(first..)
                .map(|(&k, _)| k)
                .find(|&k| pages.is_data(k));
            match found {
                Some(idx) if idx * PAGE_SIZE < size => Ok(off.max(idx * PAGE_SIZE)),
                _ => Err(Errno::ENXIO),
            }
        } else {
            let mut idx = first;
            while idx * PAGE_SIZE < size && pages.is_data(idx) {
                idx += 1;
            }
            Ok(off.max(idx * PAGE_SIZE).min(size))
        }
    }

    fn fallocate(
        &self,
        file: &FileDescription,
        mode: FallocFlags,
        offset: u64,
        len: u64,
    ) -> Result<()> {
        let inode = file.inode();
        let data = Self::data(file)?;
        let counters = &data.counters;
        let mut pages = data.pages.write();
        let end = offset + len;
        if mode.contains(FallocFlags::PUNCH_HOLE) {
            let first_full = offset.div_ceil(PAGE_SIZE);
            let last_full = end / PAGE_SIZE;
            let doomed: Vec<u64> = pages
                .map
                .range(first_full..last_full.max(first_full))
                .map(|(&k, _)| k)
                .collect();
            for k in &doomed {
                pages.map.remove(k);
                pages.unwritten.remove(k);
            }
            counters.free_blocks(doomed.len() as u64);
            // Partial pages at either end are zeroed, not freed.
            let (head, tail) = (offset / PAGE_SIZE, end / PAGE_SIZE);
            let mut zero = |idx: u64, from: u64, to: u64| {
                if from < to {
                    if let Some(Some(p)) = pages.map.get_mut(&idx) {
                        p[from as usize..to as usize].fill(0);
                    }
                }
            };
            if head == tail {
                zero(head, offset % PAGE_SIZE, end % PAGE_SIZE);
            } else {
                zero(
                    head,
                    offset % PAGE_SIZE,
                    if offset.is_multiple_of(PAGE_SIZE) {
                        0
                    } else {
                        PAGE_SIZE
                    },
                );
                zero(tail, 0, end % PAGE_SIZE);
            }
        } else {
            let first = offset / PAGE_SIZE;
            let last = end.div_ceil(PAGE_SIZE);
            // Count before collecting: a request far past the size limit must fail with ENOSPC
            // without first listing every page it names.
            let present = pages.map.range(first..last).count() as u64;
            let max_blocks = counters.block_max();
            // A range larger than the whole instance fails before any page (Linux:
            // `shmem_fallocate()`, "avoid a swapstorm").
            if max_blocks != 0 && last - first > max_blocks {
                return Err(Errno::ENOSPC);
            }
            if let Err(e) = counters.alloc_blocks(last - first - present) {
                // Linux goes page by page and fails at the first page it cannot allocate; the
                // pages it added are removed again, but the ones an earlier call preallocated,
                // which it initialised on the way, stay data.
                let (_, mut room) = counters.block_room();
                for i in first..last {
                    if pages.map.contains_key(&i) {
                        pages.unwritten.remove(&i);
                    } else if room == 0 {
                        break;
                    } else {
                        room -= 1;
                    }
                }
                return Err(e);
            }
            let missing: Vec<u64> = (first..last)
                .filter(|i| !pages.map.contains_key(i))
                .collect();
            // A page preallocated by an earlier call is initialised now and becomes data (Linux:
            // `shmem_get_folio_gfp()` with `SGP_FALLOC` on a fallocated folio).
            for i in first..last {
                pages.unwritten.remove(&i);
            }
            for i in missing {
                pages.map.insert(i, None);
                pages.unwritten.insert(i);
            }
        }
        let n = pages.map.len() as u64;
        let grow = !mode.contains(FallocFlags::KEEP_SIZE) && end > inode.size();
        inode.write_attrs(|w| {
            if grow {
                w.set_size(end);
            }
            w.set_blocks(n * BLOCKS_PER_PAGE);
        });
        drop(pages);
        inode.update_mtime_ctime();
        Ok(())
    }

    fn release(&self, file: &FileDescription) {
        if let Some(n) = Node::of(file.inode()) {
            n.drop_hold(file.inode());
        }
    }
}
