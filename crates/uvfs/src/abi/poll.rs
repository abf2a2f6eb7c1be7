//! Readiness: `poll(2)`'s events and `struct pollfd`, `epoll(7)`'s `struct epoll_event` and
//! `epoll_ctl(2)`'s operations, `eventfd(2)`'s flags.

use bitflags::bitflags;

use super::Errno;

bitflags! {
    /// Readiness events (`POLL*`; the same bits as `EPOLL*`), with the `EPOLL*` input flags.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
    pub struct PollEvents: u32 {
        /// `POLLIN`: there is data to read (or end of file).
        #[doc(alias = "POLLIN")] const IN = 0x001;
        /// `POLLPRI`: exceptional condition.
        #[doc(alias = "POLLPRI")] const PRI = 0x002;
        /// `POLLOUT`: a write would not block.
        #[doc(alias = "POLLOUT")] const OUT = 0x004;
        /// `POLLERR`: error condition (always reported; the write end of a pipe with no
        /// reader).
        #[doc(alias = "POLLERR")] const ERR = 0x008;
        /// `POLLHUP`: hang up (always reported; the read end of a pipe with no writer).
        #[doc(alias = "POLLHUP")] const HUP = 0x010;
        /// `POLLNVAL`: the fd is not open (`poll` only).
        #[doc(alias = "POLLNVAL")] const NVAL = 0x020;
        /// `POLLRDNORM`.
        #[doc(alias = "POLLRDNORM")] const RDNORM = 0x040;
        /// `POLLRDBAND`.
        #[doc(alias = "POLLRDBAND")] const RDBAND = 0x080;
        /// `POLLWRNORM`.
        #[doc(alias = "POLLWRNORM")] const WRNORM = 0x100;
        /// `POLLWRBAND`.
        #[doc(alias = "POLLWRBAND")] const WRBAND = 0x200;
        /// `POLLMSG`.
        #[doc(alias = "POLLMSG")] const MSG = 0x400;
        /// `POLLRDHUP`: the peer shut its writing half (sockets; never set by uvfs's files).
        #[doc(alias = "POLLRDHUP")] const RDHUP = 0x2000;
        /// `EPOLLEXCLUSIVE`: wake one of the epoll instances waiting with this flag.
        #[doc(alias = "EPOLLEXCLUSIVE")] const EXCLUSIVE = 1 << 28;
        /// `EPOLLWAKEUP`: keep the system awake (no meaning in uvfs; accepted and ignored,
        /// as Linux does without `CAP_BLOCK_SUSPEND`).
        #[doc(alias = "EPOLLWAKEUP")] const WAKEUP = 1 << 29;
        /// `EPOLLONESHOT`: report once, then disable until `EPOLL_CTL_MOD`.
        #[doc(alias = "EPOLLONESHOT")] const ONESHOT = 1 << 30;
        /// `EPOLLET`: edge-triggered.
        #[doc(alias = "EPOLLET")] const ET = 1 << 31;
    }
}

impl PollEvents {
    /// What a file with no `poll` method reports: readable and writable (Linux:
    /// `DEFAULT_POLLMASK`).
    pub const DEFAULT: PollEvents = PollEvents::IN
        .union(PollEvents::OUT)
        .union(PollEvents::RDNORM)
        .union(PollEvents::WRNORM);
    /// The input-only flags of an epoll registration (Linux: `EP_PRIVATE_BITS`).
    pub const EPOLL_INPUT: PollEvents = PollEvents::EXCLUSIVE
        .union(PollEvents::WAKEUP)
        .union(PollEvents::ONESHOT)
        .union(PollEvents::ET);
}

/// `struct pollfd`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PollFd {
    /// The fd; a negative one is skipped (its `revents` set to empty).
    pub fd: i32,
    /// The events asked for (`POLLERR`, `POLLHUP` and `POLLNVAL` are reported anyway).
    pub events: PollEvents,
    /// The events that happened, filled in by [`Task::poll`](crate::Task::poll).
    pub revents: PollEvents,
}

impl PollFd {
    /// A `pollfd` for `fd` asking for `events`.
    pub fn new(fd: i32, events: PollEvents) -> PollFd {
        PollFd {
            fd,
            events,
            revents: PollEvents::empty(),
        }
    }
}

/// `struct epoll_event`: the events and the caller's data for one registration.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EpollEvent {
    /// Asked for (in `epoll_ctl`) or ready (from `epoll_wait`).
    pub events: PollEvents,
    /// The caller's word, given back with each event.
    pub data: u64,
}

impl EpollEvent {
    /// An event of `events` with `data`.
    pub fn new(events: PollEvents, data: u64) -> EpollEvent {
        EpollEvent { events, data }
    }
}

/// `epoll_ctl(2)`'s operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EpollOp {
    /// `EPOLL_CTL_ADD`.
    #[doc(alias = "EPOLL_CTL_ADD")]
    Add,
    /// `EPOLL_CTL_DEL`.
    #[doc(alias = "EPOLL_CTL_DEL")]
    Del,
    /// `EPOLL_CTL_MOD`.
    #[doc(alias = "EPOLL_CTL_MOD")]
    Mod,
}

impl EpollOp {
    /// The operation of a raw `op` argument (1, 2, 3).
    ///
    /// # Errors
    /// `EINVAL` for any other value, as `epoll_ctl(2)`.
    pub fn from_raw(op: i32) -> Result<EpollOp, Errno> {
        match op {
            1 => Ok(EpollOp::Add),
            2 => Ok(EpollOp::Del),
            3 => Ok(EpollOp::Mod),
            _ => Err(Errno::EINVAL),
        }
    }
}

bitflags! {
    /// `eventfd2(2)` flags (`EFD_*`).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
    pub struct EfdFlags: u32 {
        /// `EFD_SEMAPHORE`: a read takes 1, not the whole count.
        #[doc(alias = "EFD_SEMAPHORE")] const SEMAPHORE = 1;
        /// `EFD_CLOEXEC` (`O_CLOEXEC`).
        #[doc(alias = "EFD_CLOEXEC")] const CLOEXEC = 0o2000000;
        /// `EFD_NONBLOCK` (`O_NONBLOCK`).
        #[doc(alias = "EFD_NONBLOCK")] const NONBLOCK = 0o4000;
    }
}

/// `EPOLL_CLOEXEC`, the one flag of `epoll_create1(2)`.
pub const EPOLL_CLOEXEC: u32 = 0o2000000;
