//! The watch scenarios' calls as real system calls: inotify through rustix, fanotify through
//! libc's `fanotify_init`/`fanotify_mark` (rustix has no fanotify), on the host column's
//! private tmpfs.

use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::path::PathBuf;
use std::sync::OnceLock;

use anyhow::{bail, Context};
use rustix::fs::inotify::{self, CreateFlags, WatchFlags};
use rustix::fs::{openat, Mode, OFlags};
use rustix::io::{pread, pwrite};

use crate::column::Support;
use crate::watch::{NotifySys, Poke, UNRELATED_FILE, WRITTEN_FILE};

/// Bytes of the buffer fanotify events are read into.
const FANOTIFY_BUF_BYTES: usize = 4096;

/// Bytes of `struct fanotify_event_metadata`, the smallest event.
const FANOTIFY_METADATA_BYTES: usize = 24;

/// The watch scenarios' calls on the host, in the tmpfs whose mountpoint is `root`.
pub struct HostNotify {
    /// The mountpoint: inotify_add_watch takes a path.
    root: PathBuf,
    /// The tmpfs's root directory.
    dir: OwnedFd,
}

impl HostNotify {
    /// The calls on the tmpfs mounted at `root`, whose root directory `dir` is.
    pub fn new(root: PathBuf, dir: OwnedFd) -> HostNotify {
        HostNotify { root, dir }
    }
}

/// `fanotify_init(FAN_CLASS_NOTIF | FAN_CLOEXEC, O_RDONLY | O_CLOEXEC)`.
#[allow(unsafe_code)] // Reason: libc's fanotify_init is an extern function.
fn fanotify_init() -> rustix::io::Result<OwnedFd> {
    // SAFETY: plain integer arguments; no memory is passed.
    let fd = unsafe {
        libc::fanotify_init(
            libc::FAN_CLASS_NOTIF | libc::FAN_CLOEXEC,
            (libc::O_RDONLY | libc::O_CLOEXEC) as libc::c_uint,
        )
    };
    if fd < 0 {
        return Err(rustix::io::Errno::from_raw_os_error(
            std::io::Error::last_os_error().raw_os_error().unwrap_or(0),
        ));
    }
    // SAFETY: `fd` was just returned by fanotify_init and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `fanotify_mark(fd, FAN_MARK_ADD | FAN_MARK_MOUNT, FAN_MODIFY, dir, NULL)`: the mount that
/// `dir` is on.
#[allow(unsafe_code)] // Reason: libc's fanotify_mark is an extern function.
fn fanotify_mark_mount(fd: &OwnedFd, dir: &OwnedFd) -> rustix::io::Result<()> {
    // SAFETY: both fds are open for the call; a NULL path makes the kernel use `dir` itself.
    let r = unsafe {
        libc::fanotify_mark(
            fd.as_raw_fd(),
            libc::FAN_MARK_ADD | libc::FAN_MARK_MOUNT,
            libc::FAN_MODIFY,
            dir.as_raw_fd(),
            std::ptr::null(),
        )
    };
    if r < 0 {
        return Err(rustix::io::Errno::from_raw_os_error(
            std::io::Error::last_os_error().raw_os_error().unwrap_or(0),
        ));
    }
    Ok(())
}

/// Takes ownership of the fd an fanotify event carries, so that it is closed.
#[allow(unsafe_code)] // Reason: the event's fd is a raw integer the kernel opened for us.
fn own_event_fd(fd: i32) -> OwnedFd {
    // SAFETY: the kernel installed `fd` in this process for the event just read; nothing
    // else knows it.
    unsafe { OwnedFd::from_raw_fd(fd) }
}

/// Whether the host can make fanotify instances (`CAP_SYS_ADMIN`), asked once.
pub fn fanotify_support() -> Support {
    static SUPPORT: OnceLock<Support> = OnceLock::new();
    SUPPORT
        .get_or_init(|| match fanotify_init() {
            Ok(_) => Support::Yes,
            Err(e) => Support::No(format!(
                "skipped: fanotify_init failed ({e}): it needs CAP_SYS_ADMIN"
            )),
        })
        .clone()
}

impl NotifySys for HostNotify {
    type Fd = OwnedFd;
    type Thread = ();

    fn inotify_init(&self) -> anyhow::Result<OwnedFd> {
        inotify::init(CreateFlags::CLOEXEC).context("inotify_init1")
    }

    fn add_watch(&self, fd: &OwnedFd, path: &str, mask: u32) -> anyhow::Result<i32> {
        inotify::add_watch(fd, self.root.join(path), WatchFlags::from_bits_retain(mask))
            .with_context(|| format!("inotify_add_watch {path}"))
    }

    fn fanotify_mount_mark(&self) -> anyhow::Result<OwnedFd> {
        let fd = fanotify_init().context("fanotify_init")?;
        fanotify_mark_mount(&fd, &self.dir).context("fanotify_mark FAN_MARK_MOUNT")?;
        Ok(fd)
    }

    fn fanotify_events(&self, fd: &OwnedFd) -> anyhow::Result<Vec<u64>> {
        let mut masks = Vec::new();
        let mut buf = vec![0u8; FANOTIFY_BUF_BYTES];
        while self.queued(fd)? > 0 {
            let n = rustix::io::read(fd, &mut buf)?;
            let mut b = &buf[..n];
            while b.len() >= FANOTIFY_METADATA_BYTES {
                let len = u32::from_ne_bytes(b[0..4].try_into().expect("4 bytes")) as usize;
                let mask = u64::from_ne_bytes(b[8..16].try_into().expect("8 bytes"));
                let event_fd = i32::from_ne_bytes(b[16..20].try_into().expect("4 bytes"));
                if event_fd >= 0 {
                    drop(own_event_fd(event_fd));
                }
                masks.push(mask);
                if len < FANOTIFY_METADATA_BYTES || len > b.len() {
                    bail!("an fanotify event of {len} bytes in a read of {n}");
                }
                b = &b[len..];
            }
        }
        Ok(masks)
    }

    fn queued(&self, fd: &OwnedFd) -> anyhow::Result<usize> {
        Ok(usize::try_from(rustix::io::ioctl_fionread(fd)?)?)
    }

    fn thread(&self) {}

    fn read(_: &(), fd: &OwnedFd, buf: &mut [u8]) -> anyhow::Result<usize> {
        Ok(rustix::io::read(fd, buf)?)
    }

    fn poke(&self, poke: Poke) -> anyhow::Result<()> {
        let (path, flags) = match poke {
            Poke::WriteWritten => (WRITTEN_FILE, OFlags::WRONLY),
            Poke::WriteUnrelated => (UNRELATED_FILE, OFlags::WRONLY),
            Poke::ReadWritten => (WRITTEN_FILE, OFlags::RDONLY),
        };
        let f = openat(
            self.dir.as_fd(),
            path,
            flags | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        let mut b = [b'p'];
        if poke == Poke::ReadWritten {
            pread(&f, &mut b, 0)?;
        } else {
            pwrite(&f, &b, 0)?;
        }
        Ok(())
    }

    fn close(&self, fd: OwnedFd) -> anyhow::Result<()> {
        drop(fd);
        Ok(())
    }
}
