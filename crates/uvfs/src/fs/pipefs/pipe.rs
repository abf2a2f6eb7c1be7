//! The pipe itself: a ring of page-sized buffers, the counts of its readers and writers, and
//! the waits of blocked reads, writes and FIFO opens. Linux: `struct pipe_inode_info`,
//! `anon_pipe_read()`, `anon_pipe_write()`, `pipe_resize_ring()`, `fifo_open()` in fs/pipe.c.
//!
//! # Atomicity
//! A write copies under [`Pipe::state`] and drops it only to wait for room, when the ring is
//! full. A write of at most `PIPE_BUF` bytes either merges whole into the last buffer or goes
//! whole into one new buffer, so it never waits half-copied and never interleaves with another
//! writer's bytes. Larger writes fill page after page and may interleave at a wait.

use std::cell::Cell;
use std::collections::VecDeque;
use std::sync::Arc;

use crate::abi::{Errno, PollEvents, Result, PAGE_SIZE};
use crate::sync::lock::{Mutex, MutexGuard};
use crate::vfs::locks::{Interrupt, Wait, WaitingOn};
use crate::vfs::poll::{park_on, Parker, PollTable, WaitList, WaitSource, Waker};

const PAGE: usize = PAGE_SIZE as usize;

/// Buffers of a new pipe (Linux: `PIPE_DEF_BUFFERS`): 64 KiB.
pub(crate) const PIPE_DEF_BUFFERS: usize = 16;

/// One buffer of the ring (Linux: `struct pipe_buffer`).
struct Buf {
    page: Box<[u8]>,
    off: usize,
    len: usize,
    /// Written by an `O_DIRECT` writer: a packet, read whole or its rest discarded, never
    /// merged with (Linux: `PIPE_BUF_FLAG_PACKET`; the others have `PIPE_BUF_FLAG_CAN_MERGE`).
    packet: bool,
    /// A write may append to it (Linux: `PIPE_BUF_FLAG_CAN_MERGE`): a plain write's buffer;
    /// not a packet, nor a buffer that `splice` read from a file or copied, or `tee` made.
    can_merge: bool,
}

/// Everything [`Pipe::state`] protects.
struct PipeState {
    bufs: VecDeque<Buf>,
    /// One freed page kept for the next write (Linux: `tmp_page`). Keeping up to a ring's
    /// worth measured no faster in `pipe-bulk` (3.7-4.3 GB/s either way, fast state) and
    /// would hold 64 KiB in an idle pipe.
    spare: Vec<Box<[u8]>>,
    /// Buffers the ring may hold (Linux: `max_usage`).
    max_usage: usize,
    /// Bytes held.
    bytes: usize,
    readers: u32,
    writers: u32,
    /// Opens of each kind so far: a FIFO opener waits for the other kind's count to move
    /// (Linux: `r_counter`, `w_counter`).
    r_counter: u32,
    w_counter: u32,
    /// Blocked readers and FIFO openers (Linux: `rd_wait`'s sleepers).
    rd_wait: WaitList,
    /// Blocked writers (Linux: `wr_wait`'s sleepers).
    wr_wait: WaitList,
    /// `poll` and epoll registrations of files open for reading (Linux: `rd_wait`'s poll
    /// entries) and of files open for writing (`wr_wait`'s). A FIFO open for both is on both;
    /// a wake-up of one side reaches only that side's pollers, so a keyless one (a splice's)
    /// is no event for a poller of the other end.
    rd_pollers: WaitList,
    wr_pollers: WaitList,
}

/// A pipe: the buffer of an anonymous pipe or of an open FIFO.
pub(crate) struct Pipe {
    /// Protects: the ring, every count and the wait lists.
    /// Order: after the FIFO table; before an epoll's state (its wakers) and
    /// `Interrupt::waiting_on` (a leaf).
    state: Mutex<PipeState>,
}

impl WaitSource for Pipe {
    fn remove_waiter(&self, w: &Arc<dyn Waker>) {
        let mut st = self.state.lock();
        st.rd_pollers.remove(w);
        st.wr_pollers.remove(w);
    }
}

/// Waits once on the `which` list (see [`park_on`]).
fn wait_on<'m, 'i>(
    m: &'m Mutex<PipeState>,
    st: &mut MutexGuard<'m, PipeState>,
    intr: Option<&'i Interrupt>,
    waiting: &mut Option<(Arc<Parker>, WaitingOn<'i>)>,
    which: Side,
) -> Result<()> {
    match which {
        Side::Read => park_on(m, st, |s| &mut s.rd_wait, intr, waiting),
        Side::Write => park_on(m, st, |s| &mut s.wr_wait, intr, waiting),
    }
}

#[derive(Clone, Copy)]
enum Side {
    Read,
    Write,
}

/// How a FIFO is opened (Linux: the `FMODE_READ`/`FMODE_WRITE` cases of `fifo_open()`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FifoEnd {
    Read,
    Write,
    Both,
}

impl Pipe {
    /// An empty pipe of [`PIPE_DEF_BUFFERS`] buffers with no reader or writer yet.
    pub(crate) fn new() -> Arc<Pipe> {
        Arc::new(Pipe {
            state: Mutex::new(PipeState {
                bufs: VecDeque::new(),
                spare: Vec::new(),
                max_usage: PIPE_DEF_BUFFERS,
                bytes: 0,
                readers: 0,
                writers: 0,
                r_counter: 0,
                w_counter: 0,
                rd_wait: WaitList::new(),
                wr_wait: WaitList::new(),
                rd_pollers: WaitList::new(),
                wr_pollers: WaitList::new(),
            }),
        })
    }

    /// An anonymous pipe with its one reader and one writer, each counted as an open (Linux:
    /// `get_pipe_inode()`), so that its read end, whose hang-up mark is 0, reports `POLLHUP`
    /// once the writer is gone.
    pub(crate) fn new_anon() -> Arc<Pipe> {
        let p = Pipe::new();
        {
            let mut st = p.state.lock();
            st.readers = 1;
            st.writers = 1;
            // As after one open of each kind, so that a reader's `POLLHUP` test (writer count
            // moved since its open) holds once the writer goes (Linux: `get_pipe_inode()`).
            st.r_counter = 1;
            st.w_counter = 1;
        }
        p
    }

    /// Reads what is there, up to `buf.len()` bytes; waits (with [`Wait::Yes`]) only while
    /// the pipe is empty and has a writer, never for more once it got something. A packet
    /// buffer ends the read, its unread rest discarded. 0 at end of file (empty, no writer).
    ///
    /// # Errors
    /// `EAGAIN` (empty, a writer, [`Wait::No`]); `EINTR` (interrupted before any byte).
    pub(crate) fn read(self: &Arc<Self>, buf: &mut [u8], wait: Wait<'_>) -> Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        let mut st = self.state.lock();
        let mut waiting = None;
        loop {
            if !st.bufs.is_empty() {
                let (n, was_full) = st.take_into(buf);
                // Only a read that freed a buffer of a full ring can wake a writer: writers
                // wait only when it is full (Linux: `wake_writer` in `anon_pipe_read()`).
                if was_full {
                    st.wake_writers(PollEvents::OUT | PollEvents::WRNORM);
                }
                return Ok(n);
            }
            if st.writers == 0 {
                return Ok(0);
            }
            match wait {
                Wait::No => return Err(Errno::EAGAIN),
                Wait::Yes(intr) => wait_on(&self.state, &mut st, intr, &mut waiting, Side::Read)?,
            }
        }
    }

    /// Writes `buf` (see the module's atomicity rules); waits (with [`Wait::Yes`]) while the
    /// ring is full and has a reader. Sets `sigpipe` whenever it finds no reader.
    ///
    /// # Errors
    /// `EPIPE` (no reader, nothing written); `EAGAIN` (full, [`Wait::No`], nothing written);
    /// `EINTR` (interrupted before any byte). With some bytes written these give the count.
    pub(crate) fn write(
        self: &Arc<Self>,
        buf: &[u8],
        wait: Wait<'_>,
        packet: bool,
        sigpipe: &Cell<bool>,
    ) -> Result<usize> {
        // A null write succeeds, reader or not (Linux: before the `readers` test).
        if buf.is_empty() {
            return Ok(0);
        }
        let mut st = self.state.lock();
        let mut waiting = None;
        let mut ret = 0;
        if st.readers == 0 {
            sigpipe.set(true);
            return Err(Errno::EPIPE);
        }
        // The part past whole pages merges into the last buffer when it fits there whole.
        let chars = buf.len() & (PAGE - 1);
        if chars != 0 && !packet {
            if let Some(last) = st.bufs.back_mut() {
                if last.can_merge && last.off + last.len + chars <= PAGE {
                    let at = last.off + last.len;
                    last.page[at..at + chars].copy_from_slice(&buf[..chars]);
                    last.len += chars;
                    st.bytes += chars;
                    ret = chars;
                }
            }
        }
        let mut result = Ok(());
        loop {
            if ret == buf.len() {
                break;
            }
            if st.readers == 0 {
                sigpipe.set(true);
                if ret == 0 {
                    result = Err(Errno::EPIPE);
                }
                break;
            }
            if st.bufs.len() < st.max_usage {
                let n = (buf.len() - ret).min(PAGE);
                let mut page = st.new_page();
                page[..n].copy_from_slice(&buf[ret..ret + n]);
                st.bufs.push_back(Buf {
                    page,
                    off: 0,
                    len: n,
                    packet,
                    can_merge: !packet,
                });
                st.bytes += n;
                ret += n;
                continue;
            }
            // Full: let blocked readers take what this write has added before waiting.
            if ret > 0 {
                st.wake_readers(PollEvents::IN | PollEvents::RDNORM);
            }
            match wait {
                Wait::No => {
                    if ret == 0 {
                        result = Err(Errno::EAGAIN);
                    }
                    break;
                }
                Wait::Yes(intr) => {
                    if let Err(e) = wait_on(&self.state, &mut st, intr, &mut waiting, Side::Write) {
                        if ret == 0 {
                            result = Err(e);
                        }
                        break;
                    }
                }
            }
        }
        // Every write that moved bytes wakes pollers, not only one into an empty pipe: an
        // edge-triggered epoll waiter expects an event per write (Linux: `anon_pipe_write()`'s
        // `was_empty || pipe->poll_usage`).
        if ret > 0 {
            st.wake_readers(PollEvents::IN | PollEvents::RDNORM);
        }
        result.map(|()| ret)
    }

    /// Bytes held (`FIONREAD`).
    pub(crate) fn bytes(&self) -> usize {
        self.state.lock().bytes
    }

    /// The capacity in bytes (`F_GETPIPE_SZ`).
    pub(crate) fn size_bytes(&self) -> usize {
        self.state.lock().max_usage * PAGE
    }

    /// Sets the capacity to `nr_slots` buffers (Linux: `pipe_resize_ring()`).
    ///
    /// Every resize, even a shrink or the same size, wakes the write side without a key, as
    /// `pipe_resize_ring()` ends with `wake_up_interruptible(&pipe->wr_wait)`: an
    /// edge-triggered epoll watcher of the write end sees a new edge (seed 250860).
    ///
    /// # Errors
    /// `EBUSY` if the ring holds more buffers than that.
    pub(crate) fn set_slots(&self, nr_slots: usize) -> Result<()> {
        let mut st = self.state.lock();
        if nr_slots < st.bufs.len() {
            return Err(Errno::EBUSY);
        }
        st.max_usage = nr_slots;
        st.wake_writers(PollEvents::empty());
        Ok(())
    }

    /// Drops one reader and or writer (a close); wakes the other side when its last partner
    /// went (Linux: `pipe_release()`).
    pub(crate) fn release(&self, read: bool, write: bool) {
        let mut st = self.state.lock();
        if read {
            st.readers -= 1;
        }
        if write {
            st.writers -= 1;
        }
        // Linux: `pipe_release()` wakes both queues when either count reaches zero.
        if (read && st.readers == 0) || (write && st.writers == 0) {
            st.wake_all_hangup();
        }
    }

    /// True once no reader or writer is left: a FIFO's pipe then goes, its data with it.
    pub(crate) fn is_unused(&self) -> bool {
        let st = self.state.lock();
        st.readers == 0 && st.writers == 0
    }

    /// The open rendezvous of a FIFO (Linux: `fifo_open()`): a reader waits for a writer and
    /// a writer for a reader, unless `nonblock`; a reader and writer at once never waits. On
    /// success the opener is counted as a reader and or writer; a reader opened non-blocking
    /// with no writer gets the writer count from which it sees `POLLHUP` (see [`Pipe::poll`]).
    ///
    /// # Errors
    /// `ENXIO` (write-only, `nonblock`, no reader); `EINTR` (interrupted while waiting; the
    /// opener is not counted).
    pub(crate) fn fifo_open(
        self: &Arc<Self>,
        end: FifoEnd,
        nonblock: bool,
        intr: Option<&Interrupt>,
    ) -> Result<Option<u32>> {
        let mut st = self.state.lock();
        let mut waiting = None;
        let mut hup_from = None;
        match end {
            FifoEnd::Read => {
                st.r_counter = st.r_counter.wrapping_add(1);
                st.readers += 1;
                if st.readers == 1 {
                    self.wake_partner(&st);
                }
                if st.writers == 0 && nonblock {
                    hup_from = Some(st.w_counter);
                }
                if st.writers == 0 && !nonblock {
                    self.wait_for_partner(&mut st, intr, &mut waiting, true)?;
                }
            }
            FifoEnd::Write => {
                if nonblock && st.readers == 0 {
                    return Err(Errno::ENXIO);
                }
                st.w_counter = st.w_counter.wrapping_add(1);
                st.writers += 1;
                if st.writers == 1 {
                    self.wake_partner(&st);
                }
                if st.readers == 0 {
                    self.wait_for_partner(&mut st, intr, &mut waiting, false)?;
                }
            }
            FifoEnd::Both => {
                st.readers += 1;
                st.writers += 1;
                st.r_counter = st.r_counter.wrapping_add(1);
                st.w_counter = st.w_counter.wrapping_add(1);
                if st.readers == 1 || st.writers == 1 {
                    self.wake_partner(&st);
                }
            }
        }
        Ok(hup_from)
    }

    /// A FIFO opener's wait for the other side (Linux: `wait_for_partner()`): a reader
    /// until the writers' open counter moves, a writer until the readers'. If the wait is
    /// interrupted, the opener's own count is taken back, waking the other side if it was
    /// the last.
    fn wait_for_partner<'m, 'i>(
        &'m self,
        st: &mut MutexGuard<'m, PipeState>,
        intr: Option<&'i Interrupt>,
        waiting: &mut Option<(Arc<Parker>, WaitingOn<'i>)>,
        reader: bool,
    ) -> Result<()> {
        let other = |s: &PipeState| if reader { s.w_counter } else { s.r_counter };
        let cur = other(st);
        while cur == other(st) {
            if let Err(e) = wait_on(&self.state, st, intr, waiting, Side::Read) {
                let left = if reader {
                    st.readers -= 1;
                    st.readers
                } else {
                    st.writers -= 1;
                    st.writers
                };
                if left == 0 {
                    st.wake_all_hangup();
                }
                return Err(e);
            }
        }
        Ok(())
    }

    /// Wakes FIFO openers waiting for the other side (Linux: `wake_up_partner()`, which
    /// wakes `rd_wait` with no key: its pollers too).
    fn wake_partner(&self, st: &PipeState) {
        st.wake_readers(PollEvents::empty());
    }

    /// Readers and FIFO openers waiting on the pipe, writers waiting for room: for tests
    /// that must know a waiter is in place.
    pub(crate) fn waiters(&self) -> u32 {
        let st = self.state.lock();
        (st.rd_wait.len() + st.wr_wait.len()) as u32
    }

    /// Pollers registered on the pipe: for tests that must know a poller is in place.
    pub(crate) fn pollers(&self) -> u32 {
        let st = self.state.lock();
        (st.rd_pollers.len() + st.wr_pollers.len()) as u32
    }

    /// Readiness of a file of this pipe open for `read` and or `write`; with `pt`, registers
    /// its poller first (Linux: `pipe_poll()`). `hup_from` is the writer count before which a
    /// reader sees no hang-up (a FIFO opened `O_RDONLY | O_NONBLOCK` with no writer: no
    /// `POLLHUP` until a writer has come; Linux: `filp->f_pipe`).
    pub(crate) fn poll(
        self: &Arc<Self>,
        read: bool,
        write: bool,
        hup_from: u32,
        pt: Option<&mut PollTable<'_>>,
    ) -> PollEvents {
        let mut st = self.state.lock();
        if let Some(pt) = pt {
            // Linux: `pipe_poll()` waits on `rd_wait` for `FMODE_READ`, on `wr_wait` for
            // `FMODE_WRITE`.
            if read {
                pt.register(&mut st.rd_pollers, self.clone());
            }
            if write {
                pt.register(&mut st.wr_pollers, self.clone());
            }
        }
        let mut mask = PollEvents::empty();
        if read {
            if !st.bufs.is_empty() {
                mask |= PollEvents::IN | PollEvents::RDNORM;
            }
            if st.writers == 0 && st.w_counter != hup_from {
                mask |= PollEvents::HUP;
            }
        }
        if write {
            if st.bufs.len() < st.max_usage {
                mask |= PollEvents::OUT | PollEvents::WRNORM;
            }
            if st.readers == 0 {
                mask |= PollEvents::ERR;
            }
        }
        mask
    }
}

impl PipeState {
    /// A page for a new buffer: a spare one, or a new one.
    #[inline]
    fn new_page(&mut self) -> Box<[u8]> {
        self.spare
            .pop()
            .unwrap_or_else(|| vec![0u8; PAGE].into_boxed_slice())
    }

    /// Keeps the page of a buffer that was emptied for the next write, if none is kept.
    #[inline]
    fn free_page(&mut self, page: Box<[u8]>) {
        if self.spare.is_empty() {
            self.spare.push(page);
        }
    }

    /// Wakes blocked readers and FIFO openers, and the read side's pollers interested in
    /// `key` (Linux: a wake-up of `rd_wait`).
    #[inline]
    fn wake_readers(&self, key: PollEvents) {
        self.rd_wait.wake(key);
        self.rd_pollers.wake(key);
    }

    /// Wakes blocked writers, and the write side's pollers interested in `key` (Linux: a
    /// wake-up of `wr_wait`).
    #[inline]
    fn wake_writers(&self, key: PollEvents) {
        self.wr_wait.wake(key);
        self.wr_pollers.wake(key);
    }

    /// Wakes everyone: a side's last file went (Linux: `pipe_release()` wakes each queue with
    /// its side's events, `ERR` and `HUP`).
    fn wake_all_hangup(&self) {
        let gone = PollEvents::ERR | PollEvents::HUP;
        self.wake_readers(PollEvents::IN | PollEvents::RDNORM | gone);
        self.wake_writers(PollEvents::OUT | PollEvents::WRNORM | gone);
    }

    /// Copies from the front of the ring into `buf`: across buffers until `buf` is full or the
    /// ring empty, or one packet. Returns the count and whether a buffer was freed from a
    /// full ring (which may wake a writer).
    fn take_into(&mut self, buf: &mut [u8]) -> (usize, bool) {
        let mut ret = 0;
        let mut freed = false;
        while ret < buf.len() {
            let Some(b) = self.bufs.front_mut() else {
                break;
            };
            let n = (buf.len() - ret).min(b.len);
            buf[ret..ret + n].copy_from_slice(&b.page[b.off..b.off + n]);
            ret += n;
            let packet = b.packet;
            // A packet goes whole: what did not fit in `buf` is discarded (Linux:
            // `is_packetized()` in `anon_pipe_read()`).
            let used = if packet { b.len } else { n };
            b.off += used;
            b.len -= used;
            self.bytes -= used;
            if b.len == 0 {
                freed |= self.bufs.len() >= self.max_usage;
                let b = self.bufs.pop_front().expect("the front buffer is there");
                self.free_page(b.page);
            }
            if packet {
                break;
            }
        }
        (ret, freed)
    }
}

impl std::fmt::Debug for Pipe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let st = self.state.lock();
        f.debug_struct("Pipe")
            .field("bytes", &st.bytes)
            .field("readers", &st.readers)
            .field("writers", &st.writers)
            .finish()
    }
}

/// Splice, tee and sendfile: buffers moved between pipes, or between a pipe and a file.
/// Linux: fs/splice.c.
///
/// # Locking
/// Two pipes are locked in address order (Linux: `pipe_double_lock()`), never while waiting:
/// a wait is on one pipe at a time ([`Pipe::prep_read`], [`Pipe::prep_write`]), and the move
/// under both locks retries from the waits when it could make no progress (Linux:
/// `splice_pipe_to_pipe()`). A pipe's state is held across the file's read or write of a
/// splice to or from a file, as Linux holds `pipe->mutex` across `->splice_read` and
/// `->write_iter`, so that nothing else reads or writes the pipe in between (docs/locking.md).
///
/// # Wake-ups
/// Keyless, as Linux's `wakeup_pipe_readers()` and `wakeup_pipe_writers()` are: every poller
/// of the list is woken.
impl Pipe {
    /// Waits until the pipe holds data or has no writer (Linux: `ipipe_prep()`).
    ///
    /// # Errors
    /// `EAGAIN` (empty with a writer, [`Wait::No`]); `EINTR`.
    pub(crate) fn prep_read(self: &Arc<Self>, wait: Wait<'_>) -> Result<()> {
        let mut st = self.state.lock();
        let mut waiting = None;
        while st.bufs.is_empty() && st.writers > 0 {
            match wait {
                Wait::No => return Err(Errno::EAGAIN),
                Wait::Yes(intr) => wait_on(&self.state, &mut st, intr, &mut waiting, Side::Read)?,
            }
        }
        Ok(())
    }

    /// Waits until the ring has a free buffer (Linux: `opipe_prep()`): a full pipe with no
    /// reader is `EPIPE` (and `sigpipe` set); one that is not full passes, reader or not.
    ///
    /// # Errors
    /// `EPIPE`; `EAGAIN` (full, [`Wait::No`]); `EINTR`.
    pub(crate) fn prep_write(self: &Arc<Self>, wait: Wait<'_>, sigpipe: &Cell<bool>) -> Result<()> {
        let mut st = self.state.lock();
        let mut waiting = None;
        while st.bufs.len() >= st.max_usage {
            if st.readers == 0 {
                sigpipe.set(true);
                return Err(Errno::EPIPE);
            }
            match wait {
                Wait::No => return Err(Errno::EAGAIN),
                Wait::Yes(intr) => wait_on(&self.state, &mut st, intr, &mut waiting, Side::Write)?,
            }
        }
        Ok(())
    }

    /// Locks `self` and `other` (distinct pipes) in address order; returns their guards in
    /// argument order (Linux: `pipe_double_lock()`).
    fn lock_two<'a>(
        &'a self,
        other: &'a Pipe,
    ) -> (MutexGuard<'a, PipeState>, MutexGuard<'a, PipeState>) {
        debug_assert!(!std::ptr::eq(self, other), "two distinct pipes");
        if (self as *const Pipe) < (other as *const Pipe) {
            let a = self.state.lock();
            (a, other.state.lock())
        } else {
            let b = other.state.lock();
            (self.state.lock(), b)
        }
    }

    /// Moves up to `len` bytes from the front of this pipe to the end of `out` (Linux:
    /// `splice_pipe_to_pipe()`): whole buffers move as they are (a packet stays a packet,
    /// a mergeable buffer stays mergeable); a buffer split by `len` leaves its rest here
    /// and goes as an unmergeable copy. 0 at end of file (empty, no writer).
    ///
    /// # Errors
    /// `EPIPE` (`out` has no reader; `sigpipe` set); `EAGAIN` ([`Wait::No`], nothing to move
    /// or no room); `EINTR`. With some bytes moved, the count.
    pub(crate) fn splice_to_pipe(
        self: &Arc<Self>,
        out: &Arc<Pipe>,
        len: usize,
        wait: Wait<'_>,
        sigpipe: &Cell<bool>,
    ) -> Result<usize> {
        loop {
            self.prep_read(wait)?;
            out.prep_write(wait, sigpipe)?;
            let (mut i, mut o) = self.lock_two(out);
            let mut ret = 0;
            let mut left = len;
            let mut freed = false;
            let mut result = Ok(());
            let mut retry = false;
            loop {
                if o.readers == 0 {
                    sigpipe.set(true);
                    if ret == 0 {
                        result = Err(Errno::EPIPE);
                    }
                    break;
                }
                if i.bufs.is_empty() && i.writers == 0 {
                    break;
                }
                if i.bufs.is_empty() || o.bufs.len() >= o.max_usage {
                    if ret > 0 {
                        break;
                    }
                    match wait {
                        Wait::No => result = Err(Errno::EAGAIN),
                        // Raced with another reader or writer: 0 would mean end of file.
                        Wait::Yes(_) => retry = true,
                    }
                    break;
                }
                let front = i.bufs.front_mut().expect("not empty");
                let n;
                if left >= front.len {
                    let b = i.bufs.pop_front().expect("not empty");
                    n = b.len;
                    freed = true;
                    o.bufs.push_back(b);
                } else {
                    n = left;
                    let mut page = o.new_page();
                    page[..n].copy_from_slice(&front.page[front.off..front.off + n]);
                    let packet = front.packet;
                    front.off += n;
                    front.len -= n;
                    o.bufs.push_back(Buf {
                        page,
                        off: 0,
                        len: n,
                        packet,
                        can_merge: false,
                    });
                }
                i.bytes -= n;
                o.bytes += n;
                ret += n;
                left -= n;
                if left == 0 {
                    break;
                }
            }
            if ret > 0 {
                o.wake_readers(PollEvents::empty());
            }
            if freed {
                i.wake_writers(PollEvents::empty());
            }
            drop((i, o));
            if !retry {
                return result.map(|()| ret);
            }
        }
    }

    /// Copies up to `len` bytes from the front of this pipe to the end of `out`, consuming
    /// nothing (Linux: `link_pipe()` after `ipipe_prep()` and `opipe_prep()`): one new
    /// unmergeable buffer per buffer read, a packet staying a packet. 0 at end of file.
    ///
    /// # Errors
    /// As [`Pipe::splice_to_pipe`].
    pub(crate) fn tee(
        self: &Arc<Self>,
        out: &Arc<Pipe>,
        len: usize,
        wait: Wait<'_>,
        sigpipe: &Cell<bool>,
    ) -> Result<usize> {
        self.prep_read(wait)?;
        out.prep_write(wait, sigpipe)?;
        let (i, mut o) = self.lock_two(out);
        let mut ret = 0;
        let mut left = len;
        let mut k = 0;
        let mut result = Ok(());
        loop {
            if o.readers == 0 {
                sigpipe.set(true);
                if ret == 0 {
                    result = Err(Errno::EPIPE);
                }
                break;
            }
            if k >= i.bufs.len() || o.bufs.len() >= o.max_usage {
                break;
            }
            let b = &i.bufs[k];
            let n = b.len.min(left);
            let mut page = o.new_page();
            page[..n].copy_from_slice(&b.page[b.off..b.off + n]);
            let packet = b.packet;
            o.bufs.push_back(Buf {
                page,
                off: 0,
                len: n,
                packet,
                can_merge: false,
            });
            o.bytes += n;
            ret += n;
            left -= n;
            k += 1;
            if left == 0 {
                break;
            }
        }
        if ret > 0 {
            o.wake_readers(PollEvents::empty());
        }
        result.map(|()| ret)
    }

    /// Feeds up to `len` bytes from the front of the pipe to `write`, consuming what it took
    /// (Linux: `iter_file_splice_write()`): waits (with [`Wait::Yes`]) only while the pipe is
    /// empty, has a writer and nothing was taken yet; packet bounds do not matter here. The
    /// pipe stays locked across `write`. 0 at end of file.
    ///
    /// # Errors
    /// `EAGAIN` ([`Wait::No`], empty with a writer); `EINTR`; `write`'s error when nothing
    /// was written. With some bytes written, the count.
    pub(crate) fn splice_out(
        self: &Arc<Self>,
        len: usize,
        wait: Wait<'_>,
        mut write: impl FnMut(&[u8]) -> Result<usize>,
    ) -> Result<usize> {
        let mut st = self.state.lock();
        let mut waiting = None;
        let mut ret = 0;
        let mut left = len;
        let mut need_wakeup = false;
        let mut result = Ok(());
        let mut tmp = Vec::new();
        while left > 0 {
            // Linux: `splice_from_pipe_next()`.
            if st.bufs.is_empty() {
                if st.writers == 0 || ret > 0 {
                    break;
                }
                match wait {
                    Wait::No => {
                        result = Err(Errno::EAGAIN);
                        break;
                    }
                    Wait::Yes(intr) => {
                        if need_wakeup {
                            st.wake_writers(PollEvents::empty());
                            need_wakeup = false;
                        }
                        if let Err(e) =
                            wait_on(&self.state, &mut st, intr, &mut waiting, Side::Read)
                        {
                            result = Err(e);
                            break;
                        }
                        continue;
                    }
                }
            }
            tmp.clear();
            for b in st.bufs.iter() {
                let n = b.len.min(left - tmp.len());
                tmp.extend_from_slice(&b.page[b.off..b.off + n]);
                if tmp.len() == left {
                    break;
                }
            }
            let n = match write(&tmp) {
                Ok(0) => break,
                Ok(n) => n.min(tmp.len()),
                Err(e) => {
                    if ret == 0 {
                        result = Err(e);
                    }
                    break;
                }
            };
            let mut eat = n;
            while eat > 0 {
                let b = st.bufs.front_mut().expect("written bytes are in the ring");
                let k = b.len.min(eat);
                b.off += k;
                b.len -= k;
                eat -= k;
                if b.len == 0 {
                    let b = st.bufs.pop_front().expect("the front buffer is there");
                    st.free_page(b.page);
                    need_wakeup = true;
                }
            }
            st.bytes -= n;
            ret += n;
            left -= n;
        }
        if need_wakeup {
            st.wake_writers(PollEvents::empty());
        }
        if ret > 0 {
            return Ok(ret);
        }
        result.map(|()| 0)
    }

    /// Appends up to `len` bytes that `read` gives, read from a file at `pos` (Linux:
    /// `splice_file_to_pipe()`: `wait_for_space()`, then `->splice_read`): first waits
    /// (with [`Wait::Yes`]) for a free buffer; then asks `read` for at most what the free
    /// buffers hold and cuts what it gave at the file's page bounds, one unmergeable buffer
    /// each. With `len` 0, `read` is not called. The pipe stays locked across `read`.
    ///
    /// # Errors
    /// `EPIPE` (no reader; `sigpipe` set); `EAGAIN` (full, [`Wait::No`]); `EINTR`; `read`'s.
    pub(crate) fn splice_in(
        self: &Arc<Self>,
        len: usize,
        pos: u64,
        wait: Wait<'_>,
        sigpipe: &Cell<bool>,
        read: impl FnOnce(&mut [u8]) -> Result<usize>,
    ) -> Result<usize> {
        let mut st = self.state.lock();
        let mut waiting = None;
        loop {
            if st.readers == 0 {
                sigpipe.set(true);
                return Err(Errno::EPIPE);
            }
            if st.bufs.len() < st.max_usage {
                break;
            }
            match wait {
                Wait::No => return Err(Errno::EAGAIN),
                Wait::Yes(intr) => wait_on(&self.state, &mut st, intr, &mut waiting, Side::Write)?,
            }
        }
        if len == 0 {
            return Ok(0);
        }
        let free = st.max_usage - st.bufs.len();
        // The first buffer ends at the file's page bound, so `free` buffers hold this much.
        let room = free * PAGE - (pos % PAGE as u64) as usize;
        let mut tmp = vec![0u8; len.min(room)];
        let n = read(&mut tmp)?;
        let mut done = 0;
        let mut at = pos;
        while done < n {
            let k = (PAGE - (at % PAGE as u64) as usize).min(n - done);
            let mut page = st.new_page();
            page[..k].copy_from_slice(&tmp[done..done + k]);
            st.bufs.push_back(Buf {
                page,
                off: 0,
                len: k,
                packet: false,
                can_merge: false,
            });
            done += k;
            at += k as u64;
        }
        st.bytes += n;
        if n > 0 {
            st.wake_readers(PollEvents::empty());
        }
        Ok(n)
    }
}
