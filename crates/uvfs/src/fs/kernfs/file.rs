//! Open kernfs files: attributes served from a per-open buffer (Linux: `seq_file` under
//! `kernfs_fop_read_iter()`), binary attributes read and written at their offsets
//! (`kernfs_file_read_iter()`), and directories listed in hash order
//! (`kernfs_fop_readdir()`).

use std::sync::Arc;

use super::node::{Kind, Node};
use super::KernfsNode;
use crate::abi::{Errno, PollEvents, Result, Whence, PAGE_SIZE};
use crate::vfs::file::FileDescription;
use crate::vfs::ops::{generic_llseek, DirEntry, FileOps, WritePos};
use crate::vfs::poll::{PollTable, WaitQueue, WaitSource, Waker};

/// The largest write an attribute's `store` is given; longer writes are cut (Linux:
/// `kernfs_fop_write_iter()` without `atomic_write_len`).
const MAX_WRITE: usize = PAGE_SIZE as usize;

/// The node of an open kernfs file. Files keep no handle of their own: the file's inode is
/// the node, so an open takes no reference on it beyond what the VFS holds for every open
/// (one that many threads opening one attribute do not share: `vfs::pin`).
fn node_of(file: &FileDescription) -> &Node {
    Node::of(file.inode()).expect("a kernfs file's inode is a kernfs node")
}

/// An open attribute.
pub(crate) struct AttrFile {
    /// Protects: the buffer and the event count this open last read. Order: a leaf but for
    /// the attribute's callbacks, which run under it (Linux: `kernfs_open_file::mutex`).
    state: parking_lot::Mutex<AttrState>,
}

struct AttrState {
    /// What `show` gave at the last read from offset 0 (or the first read).
    buf: Option<Vec<u8>>,
    /// The node's event count when `buf` was made (or when the file was opened).
    event: u64,
}

impl AttrFile {
    /// An open of `node`. Its event count starts below any the node has (Linux: an open file's
    /// `event` is 0 and an open node's starts at 1, `kernfs_get_open_node()`), so a poll before
    /// the first read reports `POLLERR | POLLPRI`.
    pub(crate) fn new() -> AttrFile {
        AttrFile {
            state: parking_lot::Mutex::new(AttrState {
                buf: None,
                event: 0,
            }),
        }
    }
}

impl FileOps for AttrFile {
    fn reads_touch_atime(&self) -> bool {
        false
    }

    fn read(&self, file: &FileDescription, buf: &mut [u8], pos: u64) -> Result<usize> {
        let node = node_of(file);
        let Kind::Attr(attr) = &node.kind else {
            return Err(Errno::EINVAL);
        };
        // A read of nothing shows nothing and copies no event count (Linux: `seq_read_iter()`
        // returns 0 for an empty buffer first).
        if buf.is_empty() {
            return Ok(0);
        }
        let mut st = self.state.lock();
        // A read from offset 0 shows the attribute again (Linux: `seq_read_iter()` restarts
        // at position 0); others are served from what the last show gave.
        if pos == 0 || st.buf.is_none() {
            // The last show's buffer is shown into again (its allocation kept); a failed show
            // leaves none, as Linux's `seq_read_iter()` leaves its buffer empty.
            let mut out = st.buf.take().unwrap_or_default();
            out.clear();
            let event = node.with_active(|| {
                let event = node.event.load(std::sync::atomic::Ordering::Acquire);
                attr.show(&mut out)?;
                Ok(event)
            })?;
            st.buf = Some(out);
            st.event = event;
        }
        let shown = st.buf.as_deref().unwrap_or_default();
        let at = usize::try_from(pos).unwrap_or(usize::MAX);
        if at >= shown.len() {
            // The end: Linux asks the node for its next record, which a removed node refuses.
            node.with_active(|| Ok(()))?;
            return Ok(0);
        }
        let n = buf.len().min(shown.len() - at);
        buf[..n].copy_from_slice(&shown[at..at + n]);
        Ok(n)
    }

    fn write(&self, file: &FileDescription, buf: &[u8], pos: WritePos) -> Result<(usize, u64)> {
        let node = node_of(file);
        let Kind::Attr(attr) = &node.kind else {
            return Err(Errno::EINVAL);
        };
        let at = match pos {
            WritePos::At(p) => p,
            WritePos::Append => file.inode().size(),
        };
        let data = &buf[..buf.len().min(MAX_WRITE)];
        let _st = self.state.lock();
        let n = node.with_active(|| {
            if data.is_empty() {
                return Ok(0);
            }
            attr.store(data)
        })?;
        let n = n.min(data.len());
        Ok((n, at + n as u64))
    }

    fn llseek(&self, file: &FileDescription, offset: i64, whence: Whence, cur: u64) -> Result<u64> {
        // Linux: `kernfs_fop_llseek()` takes an active reference around
        // `generic_file_llseek()` (the attribute's size is a page).
        node_of(file).with_active(|| seek(file, offset, whence, cur))
    }

    fn poll(&self, file: &FileDescription, pt: Option<&mut PollTable<'_>>) -> PollEvents {
        poll_attribute(file, pt, || self.state.lock().event)
    }

    fn can_poll(&self) -> bool {
        true
    }

    fn can_pwrite(&self, file: &FileDescription) -> bool {
        // Linux: `seq_open()` clears `FMODE_PWRITE`; `kernfs_fop_open()` gives it back to a
        // file open for writing.
        file.fmode().write
    }

    fn can_odirect(&self) -> bool {
        false
    }
}

/// The node whose queue a poller registered on.
struct PollSource(KernfsNode);

impl WaitSource for PollSource {
    fn remove_waiter(&self, w: &Arc<dyn Waker>) {
        if let Some(q) = Node::of(&self.0.inode).and_then(|n| n.poll.get()) {
            q.remove(w);
        }
    }
}

/// The readiness of an open attribute, text or binary (Linux: `kernfs_fop_poll()` with
/// `kernfs_generic_poll()`): a change notified since this open last read (`seen` gives the
/// node's event count it read then), or a removed node, is `POLLERR | POLLPRI` beside the
/// usual readiness.
fn poll_attribute(
    file: &FileDescription,
    pt: Option<&mut PollTable<'_>>,
    seen: impl FnOnce() -> u64,
) -> PollEvents {
    let node = node_of(file);
    if let Some(pt) = pt {
        let q = node.poll.get_or_init(|| Box::new(WaitQueue::new()));
        let source = KernfsNode {
            inode: file.inode().clone(),
        };
        q.register(pt, Arc::new(PollSource(source)));
    }
    let seen = seen();
    if !node.is_active() || node.event.load(std::sync::atomic::Ordering::Acquire) != seen {
        PollEvents::DEFAULT | PollEvents::ERR | PollEvents::PRI
    } else {
        PollEvents::DEFAULT
    }
}

/// An open binary attribute.
#[derive(Default)]
pub(crate) struct BinFile {
    /// The node's event count at this open's last read (Linux: `kernfs_open_file::event`,
    /// copied by `kernfs_file_read_iter()`); 0 before the first, below any node's count.
    event: std::sync::atomic::AtomicU64,
}

impl FileOps for BinFile {
    fn reads_touch_atime(&self) -> bool {
        false
    }

    fn read(&self, file: &FileDescription, buf: &mut [u8], pos: u64) -> Result<usize> {
        let node = node_of(file);
        let Kind::Bin(attr) = &node.kind else {
            return Err(Errno::EINVAL);
        };
        node.with_active(|| {
            // Linux: `kernfs_file_read_iter()` copies the node's event count for poll, then
            // `sysfs_kf_bin_read()` reads at most the attribute's size (0: no limit), a page
            // per call.
            let ordering = std::sync::atomic::Ordering::Acquire;
            self.event.store(
                node.event.load(ordering),
                std::sync::atomic::Ordering::Relaxed,
            );
            let mut count = buf.len().min(MAX_WRITE);
            let size = attr.size();
            if size > 0 {
                if pos >= size {
                    return Ok(0);
                }
                count = count.min(usize::try_from(size - pos).unwrap_or(usize::MAX));
            }
            if count == 0 {
                return Ok(0);
            }
            let n = attr.read(&mut buf[..count], pos)?;
            Ok(n.min(count))
        })
    }

    fn write(&self, file: &FileDescription, buf: &[u8], pos: WritePos) -> Result<(usize, u64)> {
        let node = node_of(file);
        let Kind::Bin(attr) = &node.kind else {
            return Err(Errno::EINVAL);
        };
        let at = match pos {
            WritePos::At(p) => p,
            WritePos::Append => file.inode().size(),
        };
        let n = node.with_active(|| {
            // Linux: `sysfs_kf_bin_write()`: `EFBIG` at or past the size.
            let mut count = buf.len().min(MAX_WRITE);
            let size = attr.size();
            if size > 0 {
                if at >= size {
                    return Err(Errno::EFBIG);
                }
                count = count.min(usize::try_from(size - at).unwrap_or(usize::MAX));
            }
            if count == 0 {
                return Ok(0);
            }
            Ok(attr.write(&buf[..count], at)?.min(count))
        })?;
        Ok((n, at + n as u64))
    }

    fn llseek(&self, file: &FileDescription, offset: i64, whence: Whence, cur: u64) -> Result<u64> {
        node_of(file).with_active(|| seek(file, offset, whence, cur))
    }

    fn poll(&self, file: &FileDescription, pt: Option<&mut PollTable<'_>>) -> PollEvents {
        poll_attribute(file, pt, || {
            self.event.load(std::sync::atomic::Ordering::Relaxed)
        })
    }

    fn can_poll(&self) -> bool {
        true
    }

    fn can_pwrite(&self, file: &FileDescription) -> bool {
        // Linux: `kernfs_fop_open()` calls `seq_open()` for every attribute, binary ones
        // too, which clears `FMODE_PWRITE`, and gives it back to a file open for writing.
        file.fmode().write
    }

    fn can_odirect(&self) -> bool {
        false
    }
}

/// The largest file position of a kernfs file (Linux: kernfs's superblock keeps the default
/// `s_maxbytes`, `MAX_NON_LFS`).
pub(crate) const MAX_BYTES: u64 = i32::MAX as u64;

/// `generic_file_llseek()` within [`MAX_BYTES`]: a position past it is `EINVAL`.
fn seek(file: &FileDescription, offset: i64, whence: Whence, cur: u64) -> Result<u64> {
    let at = generic_llseek(file.inode().size(), offset, whence, cur)?;
    if at > MAX_BYTES {
        return Err(Errno::EINVAL);
    }
    Ok(at)
}

/// An open directory.
pub(crate) struct DirFile;

/// The position after the last entry (Linux: `INT_MAX` in `kernfs_fop_readdir()`).
const END: u64 = i32::MAX as u64;

impl FileOps for DirFile {
    fn readdir(
        &self,
        file: &FileDescription,
        pos: &mut u64,
        sink: &mut dyn FnMut(DirEntry<'_>) -> bool,
    ) -> Result<()> {
        let node = node_of(file);
        let Kind::Dir { children, .. } = &node.kind else {
            return Err(Errno::ENOTDIR);
        };
        let me = file.inode();
        // The entries from where a listing at `pos` resumes on, in hash order, removed ones
        // left out. A position that is no entry's hash resumes where Linux's search of its
        // tree by hash ends, which may be the entry before it (`kernfs_dir_pos()`).
        let from = (*pos).max(2);
        let entries: Vec<(u32, Box<[u8]>, Arc<crate::vfs::Inode>)> = if from >= END {
            Vec::new()
        } else {
            children
                .read()
                .resume_at(from as u32)
                .filter(|(_, i)| Node::of(i).is_some_and(Node::is_active))
                .map(|((h, n), i)| (*h, n.clone(), i.clone()))
                .collect()
        };
        let first = entries.first().map_or(END, |e| u64::from(e.0));
        if *pos == 0 {
            let dot = DirEntry {
                name: b".",
                ino: me.ino(),
                d_type: crate::abi::FileType::Directory.dirent_type(),
                next_pos: 1,
            };
            if !sink(dot) {
                return Ok(());
            }
            *pos = 1;
        }
        if *pos == 1 {
            let up = node
                .parent
                .as_ref()
                .and_then(std::sync::Weak::upgrade)
                .map_or(me.ino(), |p| p.ino());
            let dotdot = DirEntry {
                name: b"..",
                ino: up,
                d_type: crate::abi::FileType::Directory.dirent_type(),
                next_pos: first,
            };
            if !sink(dotdot) {
                return Ok(());
            }
            *pos = first;
        }
        for (k, (_, name, inode)) in entries.iter().enumerate() {
            let next = entries.get(k + 1).map_or(END, |e| u64::from(e.0));
            let e = DirEntry {
                name,
                ino: inode.ino(),
                d_type: inode.file_type().dirent_type(),
                next_pos: next,
            };
            // Linux's `kernfs_fop_readdir()` moves the position to the entry before it emits
            // it, so a call whose buffer cannot take it still leaves the position there.
            *pos = u64::from(entries[k].0);
            if !sink(e) {
                return Ok(());
            }
            *pos = next;
        }
        *pos = END;
        Ok(())
    }

    fn fsync(&self, _file: &FileDescription) -> Result<()> {
        // Linux: kernfs directories have no `fsync` (`vfs_fsync_range()`).
        Err(Errno::EINVAL)
    }

    fn llseek(&self, file: &FileDescription, offset: i64, whence: Whence, cur: u64) -> Result<u64> {
        seek(file, offset, whence, cur)
    }
}
