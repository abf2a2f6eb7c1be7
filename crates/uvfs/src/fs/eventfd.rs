//! eventfd: a 64-bit counter as a file. Linux: fs/eventfd.c (`eventfd_read()`,
//! `eventfd_write()`, `eventfd_poll()`).
//!
//! A read takes the whole count (or 1 with `EFD_SEMAPHORE`) and waits while it is 0; a write
//! adds its 8-byte value (exactly 8 bytes) and waits while the sum would reach `u64::MAX`.

use std::any::Any;
use std::sync::Arc;

use super::anon::AnonIo;
use crate::abi::{Errno, PollEvents, Result};
use crate::sync::lock::Mutex;
use crate::vfs::locks::Interrupt;
use crate::vfs::ops::FileOps;
use crate::vfs::poll::{park_on, PollTable, WaitList, WaitSource, Waker};
use crate::vfs::FileDescription;

struct State {
    count: u64,
    /// Blocked readers and writers, and pollers (Linux: the one `wqh`).
    wait: WaitList,
}

/// The counter an eventfd's files share.
pub(crate) struct Counter {
    /// Protects: the count and the wait list. Order: before an epoll's state (its wakers)
    /// and `Interrupt::waiting_on`.
    state: Mutex<State>,
}

impl WaitSource for Counter {
    fn remove_waiter(&self, w: &Arc<dyn Waker>) {
        self.state.lock().wait.remove(w);
    }
}

/// The file operations of an eventfd file.
pub(crate) struct EventFd {
    ctr: Arc<Counter>,
    semaphore: bool,
}

impl EventFd {
    /// An eventfd starting at `initval`.
    pub(crate) fn new(initval: u32, semaphore: bool) -> EventFd {
        EventFd {
            ctr: Arc::new(Counter {
                state: Mutex::new(State {
                    count: u64::from(initval),
                    wait: WaitList::new(),
                }),
            }),
            semaphore,
        }
    }
}

impl EventFd {
    /// Blocked readers and writers and pollers: for tests that must know a waiter is in
    /// place.
    pub(crate) fn waiters(&self) -> u32 {
        self.ctr.state.lock().wait.len() as u32
    }
}

impl AnonIo for EventFd {
    fn read(&self, buf: &mut [u8], nonblock: bool, intr: Option<&Interrupt>) -> Result<usize> {
        if buf.len() < 8 {
            return Err(Errno::EINVAL);
        }
        let mut st = self.ctr.state.lock();
        let mut waiting = None;
        while st.count == 0 {
            if nonblock {
                return Err(Errno::EAGAIN);
            }
            park_on(
                &self.ctr.state,
                &mut st,
                |s| &mut s.wait,
                intr,
                &mut waiting,
            )?;
        }
        let v = if self.semaphore { 1 } else { st.count };
        st.count -= v;
        st.wait.wake(PollEvents::OUT);
        drop(st);
        buf[..8].copy_from_slice(&v.to_ne_bytes());
        Ok(8)
    }

    fn write(&self, buf: &[u8], nonblock: bool, intr: Option<&Interrupt>) -> Result<usize> {
        // Exactly eight bytes (Linux: `eventfd_write()`); a read takes any buffer of eight or
        // more.
        let v = u64::from_ne_bytes(buf.try_into().map_err(|_| Errno::EINVAL)?);
        if v == u64::MAX {
            return Err(Errno::EINVAL);
        }
        let mut st = self.ctr.state.lock();
        let mut waiting = None;
        while u64::MAX - st.count <= v {
            if nonblock {
                return Err(Errno::EAGAIN);
            }
            park_on(
                &self.ctr.state,
                &mut st,
                |s| &mut s.wait,
                intr,
                &mut waiting,
            )?;
        }
        st.count += v;
        st.wait.wake(PollEvents::IN);
        Ok(8)
    }
}

impl FileOps for EventFd {
    super::anon::anon_stream_ops!();

    fn poll(&self, _file: &FileDescription, pt: Option<&mut PollTable<'_>>) -> PollEvents {
        let mut st = self.ctr.state.lock();
        if let Some(pt) = pt {
            pt.register(&mut st.wait, self.ctr.clone());
        }
        let mut mask = PollEvents::empty();
        if st.count > 0 {
            mask |= PollEvents::IN;
        }
        if st.count == u64::MAX {
            mask |= PollEvents::ERR;
        }
        if u64::MAX - 1 > st.count {
            mask |= PollEvents::OUT;
        }
        mask
    }

    fn as_any(&self) -> Option<&dyn Any> {
        Some(self)
    }
}
