//! The watch scenarios of `write1-watch` (seeds 000 and 001: what a 1-byte write pays for
//! notification in each state of its file's watches), written once over [`NotifySys`] so that
//! the host kernel and uvfs place the same watches on the same layout and are checked alike.
//!
//! Layout, relative to a column's root: a directory `w`, the written file `w/f` (the loop
//! writes 1 byte at offset 0 of it), and an unrelated file `u` beside `w`.
//!
//! Each scenario's setup checks that its watch is really in place before the clock runs
//! ([`Watcher::place`]): one 1-byte write of `w/f`, then the queue must hold exactly the events
//! the scenario expects (none where nothing watched matches); the scenarios whose watch does
//! not match a write of `w/f` then poke their watched object and must see its one event. Linux
//! merges an event identical to the queue's tail (`inotify_merge()` in
//! fs/notify/inotify/inotify_fsnotify.c), so an undrained queue keeps one event however many
//! writes match.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, ensure, Context};
use serde::{Deserialize, Serialize};
use uvfs::abi::{InotifyEvent, IN_ACCESS, IN_MODIFY};

/// The watched directory, parent of the written file.
pub const WATCH_DIR: &str = "w";
/// The written file's name in [`WATCH_DIR`].
pub const WRITTEN_NAME: &str = "f";
/// The written file.
pub const WRITTEN_FILE: &str = "w/f";
/// The unrelated file: same filesystem, another directory than the written file's.
pub const UNRELATED_FILE: &str = "u";

/// `FAN_MODIFY`: the fanotify mask bit of a modification (include/uapi/linux/fanotify.h).
pub const FAN_MODIFY: u64 = 0x0000_0002;

/// Bytes of the buffer the draining reader and the checks read events into: many events.
const EVENT_BUF_BYTES: usize = 4096;

/// What is watched while `write1-watch` runs.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord,
)]
#[serde(rename_all = "kebab-case")]
pub enum Watch {
    /// Nothing: the unwatched fast path (`write1`'s state).
    #[default]
    None,
    /// An inotify watch on [`UNRELATED_FILE`] for `IN_MODIFY`: the filesystem is watched,
    /// the written file and its parent are not.
    Unrelated,
    /// The parent directory watched for `IN_ACCESS` only: Linux sets the parent-watched flag on
    /// its children (`IN_ACCESS` is one of `FS_EVENTS_POSS_ON_CHILD`, where `IN_CREATE` is not
    /// and would leave the flag clear), yet no event matches a write.
    ParentOther,
    /// The parent directory watched for `IN_MODIFY`: every write makes an event for the
    /// parent's watch, named `f`; nobody reads them (identical events merge).
    Parent,
    /// The file itself watched for `IN_MODIFY`, with a thread reading the queue as it fills.
    #[serde(rename = "self")]
    SelfDrained,
    /// The file itself watched for `IN_MODIFY`, nobody reading (identical events merge, so the
    /// queue holds one).
    SelfUndrained,
    /// A fanotify `FAN_MODIFY` mark on the mount (`FAN_MARK_MOUNT`), nobody reading.
    Mount,
}

impl Watch {
    /// Every scenario, in table order.
    pub const ALL: [Watch; 7] = [
        Watch::None,
        Watch::Unrelated,
        Watch::ParentOther,
        Watch::Parent,
        Watch::SelfDrained,
        Watch::SelfUndrained,
        Watch::Mount,
    ];

    /// The name used on the command line (`--watch`) and in the tables.
    pub fn name(self) -> &'static str {
        match self {
            Watch::None => "none",
            Watch::Unrelated => "unrelated",
            Watch::ParentOther => "parent-other",
            Watch::Parent => "parent",
            Watch::SelfDrained => "self",
            Watch::SelfUndrained => "self-undrained",
            Watch::Mount => "mount",
        }
    }

    /// The scenario named `s`.
    pub fn from_name(s: &str) -> Option<Watch> {
        Self::ALL.into_iter().find(|w| w.name() == s)
    }

    /// The inotify watch of the scenario: the watched path and mask.
    pub fn inotify(self) -> Option<(&'static str, u32)> {
        match self {
            Watch::None | Watch::Mount => None,
            Watch::Unrelated => Some((UNRELATED_FILE, IN_MODIFY)),
            Watch::ParentOther => Some((WATCH_DIR, IN_ACCESS)),
            Watch::Parent => Some((WATCH_DIR, IN_MODIFY)),
            Watch::SelfDrained | Watch::SelfUndrained => Some((WRITTEN_FILE, IN_MODIFY)),
        }
    }

    /// The event one write of [`WRITTEN_FILE`] makes on the scenario's inotify watch, with its
    /// name: `None` where the watch does not match a write.
    fn write_event(self) -> Option<(u32, &'static str)> {
        match self {
            Watch::Parent => Some((IN_MODIFY, WRITTEN_NAME)),
            Watch::SelfDrained | Watch::SelfUndrained => Some((IN_MODIFY, "")),
            _ => None,
        }
    }
}

/// Something done to the layout to make a watch fire, outside the timed loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Poke {
    /// A 1-byte `pwrite` at offset 0 of [`WRITTEN_FILE`].
    WriteWritten,
    /// A 1-byte `pwrite` at offset 0 of [`UNRELATED_FILE`].
    WriteUnrelated,
    /// A 1-byte `pread` at offset 0 of [`WRITTEN_FILE`].
    ReadWritten,
}

/// The notification calls the scenarios make, on one implementation.
pub trait NotifySys {
    /// An open inotify (or fanotify) instance.
    type Fd: Send + Sync + 'static;
    /// What the draining thread calls through (uvfs: its task; the host: nothing).
    type Thread: Send + 'static;

    /// `inotify_init1(0)`: a blocking instance.
    ///
    /// # Errors
    /// The call failed.
    fn inotify_init(&self) -> anyhow::Result<Self::Fd>;

    /// `inotify_add_watch(fd, path, mask)`, `path` relative to the column's root.
    ///
    /// # Errors
    /// The call failed.
    fn add_watch(&self, fd: &Self::Fd, path: &str, mask: u32) -> anyhow::Result<i32>;

    /// A fanotify instance of class `FAN_CLASS_NOTIF` with a `FAN_MODIFY` mark on the mount
    /// of the column's root.
    ///
    /// # Errors
    /// The implementation has no fanotify, or the calls failed.
    fn fanotify_mount_mark(&self) -> anyhow::Result<Self::Fd>;

    /// The masks of the fanotify events queued on `fd`, read without blocking (the event fds
    /// closed).
    ///
    /// # Errors
    /// The calls failed.
    fn fanotify_events(&self, fd: &Self::Fd) -> anyhow::Result<Vec<u64>>;

    /// `ioctl(fd, FIONREAD)`: bytes queued.
    ///
    /// # Errors
    /// The call failed.
    fn queued(&self, fd: &Self::Fd) -> anyhow::Result<usize>;

    /// A caller for the draining thread.
    fn thread(&self) -> Self::Thread;

    /// `read(fd, buf)` through thread `t`'s caller; blocks while the queue is empty.
    ///
    /// # Errors
    /// The call failed.
    fn read(t: &Self::Thread, fd: &Self::Fd, buf: &mut [u8]) -> anyhow::Result<usize>;

    /// Does `poke` (opening and closing the file by its path).
    ///
    /// # Errors
    /// A call failed.
    fn poke(&self, poke: Poke) -> anyhow::Result<()>;

    /// `close(fd)`.
    ///
    /// # Errors
    /// The call failed.
    fn close(&self, fd: Self::Fd) -> anyhow::Result<()>;
}

/// What a placed watch has seen so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WatchState {
    /// Bytes queued on the instance (`FIONREAD`); 0 without one.
    pub queued_bytes: usize,
    /// Events the draining thread has read ([`Watch::SelfDrained`]); 0 for the others.
    pub drained_events: u64,
}

/// The count of events a drainer has read, and its changes.
#[derive(Default)]
struct Drained {
    /// Protects: the count. Order: leaf.
    count: Mutex<u64>,
    /// Signalled after each read that added events.
    grew: Condvar,
}

impl Drained {
    fn lock(&self) -> std::sync::MutexGuard<'_, u64> {
        self.count.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The thread that drains a [`Watch::SelfDrained`] queue.
struct Drainer {
    stop: Arc<AtomicBool>,
    events: Arc<Drained>,
    handle: JoinHandle<anyhow::Result<()>>,
}

/// A column's watch of its current `write1-watch` configuration, with the calls it was placed
/// with; empty without one.
pub struct Placed<S: NotifySys>(Option<(S, Watcher<S>)>);

impl<S: NotifySys> Default for Placed<S> {
    fn default() -> Self {
        Placed(None)
    }
}

impl<S: NotifySys> Placed<S> {
    /// Holds `w`, placed through `sys`.
    pub fn set(&mut self, sys: S, w: Watcher<S>) {
        self.0 = Some((sys, w));
    }

    /// What the watch has seen so far (nothing without one).
    ///
    /// # Errors
    /// The queue's byte count could not be read.
    pub fn state(&self) -> anyhow::Result<WatchState> {
        match &self.0 {
            Some((sys, w)) => w.state(sys),
            None => Ok(WatchState::default()),
        }
    }

    /// Waits until the draining thread has read at least `events` events or `timeout` has
    /// passed; the count it has read (0 without one).
    pub fn wait_drained(&self, events: u64, timeout: std::time::Duration) -> u64 {
        self.0
            .as_ref()
            .map_or(0, |(_, w)| w.wait_drained(events, timeout))
    }

    /// Removes the watch, if any.
    ///
    /// # Errors
    /// The removal failed.
    pub fn remove(&mut self) -> anyhow::Result<()> {
        match self.0.take() {
            Some((sys, mut w)) => w.remove(&sys),
            None => Ok(()),
        }
    }
}

/// A scenario's watch, placed and checked; [`Watcher::remove`] takes it away.
pub struct Watcher<S: NotifySys> {
    watch: Watch,
    fd: Option<Arc<S::Fd>>,
    drainer: Option<Drainer>,
}

/// The inotify events queued on `fd`, read only if some are queued (so never blocking).
fn queued_events<S: NotifySys>(
    sys: &S,
    t: &S::Thread,
    fd: &S::Fd,
) -> anyhow::Result<Vec<InotifyEvent>> {
    let mut out = Vec::new();
    let mut buf = vec![0u8; EVENT_BUF_BYTES];
    while sys.queued(fd)? > 0 {
        let n = S::read(t, fd, &mut buf)?;
        ensure!(n > 0, "an inotify read returned nothing with events queued");
        out.extend(InotifyEvent::parse_all(&buf[..n]));
    }
    Ok(out)
}

impl<S: NotifySys> Watcher<S> {
    /// Places `watch`'s watch on the layout (which must exist), checks that it is in place
    /// (see the module doc), and for [`Watch::SelfDrained`] starts the draining thread.
    ///
    /// # Errors
    /// A call failed, or the events seen were not the scenario's.
    pub fn place(sys: &S, watch: Watch) -> anyhow::Result<Watcher<S>> {
        let mut w = Watcher {
            watch,
            fd: None,
            drainer: None,
        };
        let placed = w.place_checked(sys);
        if let Err(e) = placed {
            let _ = w.remove(sys);
            return Err(e.context(format!("placing the {} watch", watch.name())));
        }
        Ok(w)
    }

    fn place_checked(&mut self, sys: &S) -> anyhow::Result<()> {
        if self.watch == Watch::Mount {
            let fd = sys.fanotify_mount_mark()?;
            self.fd = Some(Arc::new(fd));
            let fd = self.fd.as_deref().expect("just set");
            sys.poke(Poke::WriteWritten)?;
            let masks = sys.fanotify_events(fd)?;
            ensure!(
                masks.len() == 1 && masks[0] & FAN_MODIFY != 0,
                "one write of {WRITTEN_FILE} gave the fanotify events {masks:#x?}, not one FAN_MODIFY"
            );
            return Ok(());
        }
        let Some((path, mask)) = self.watch.inotify() else {
            return Ok(());
        };
        let fd = sys.inotify_init()?;
        self.fd = Some(Arc::new(fd));
        let fd = self.fd.as_deref().expect("just set");
        let wd = sys.add_watch(fd, path, mask)?;
        let t = sys.thread();
        sys.poke(Poke::WriteWritten)?;
        let got = queued_events(sys, &t, fd)?;
        let want: Vec<InotifyEvent> = self
            .watch
            .write_event()
            .map(|(mask, name)| InotifyEvent {
                wd,
                mask,
                cookie: 0,
                name: name.as_bytes().to_vec(),
            })
            .into_iter()
            .collect();
        ensure!(
            got == want,
            "one write of {WRITTEN_FILE} gave {got:?}, not {want:?}"
        );
        let poke = match self.watch {
            Watch::Unrelated => Some((Poke::WriteUnrelated, IN_MODIFY, "")),
            Watch::ParentOther => Some((Poke::ReadWritten, IN_ACCESS, WRITTEN_NAME)),
            _ => None,
        };
        if let Some((poke, mask, name)) = poke {
            sys.poke(poke)?;
            let got = queued_events(sys, &t, fd)?;
            let want = vec![InotifyEvent {
                wd,
                mask,
                cookie: 0,
                name: name.as_bytes().to_vec(),
            }];
            ensure!(got == want, "{poke:?} gave {got:?}, not {want:?}");
        }
        if self.watch == Watch::SelfDrained {
            self.drainer = Some(start_drainer::<S>(
                sys.thread(),
                Arc::clone(self.fd.as_ref().expect("just set")),
                wd,
            )?);
        }
        Ok(())
    }

    /// What the watch has seen so far.
    ///
    /// # Errors
    /// `FIONREAD` failed.
    pub fn state(&self, sys: &S) -> anyhow::Result<WatchState> {
        Ok(WatchState {
            queued_bytes: match &self.fd {
                Some(fd) => sys.queued(fd)?,
                None => 0,
            },
            drained_events: self.drainer.as_ref().map_or(0, |d| *d.events.lock()),
        })
    }

    /// Waits until the draining thread has read at least `events` events or `timeout` has
    /// passed, and returns the count it has read (0 without a drainer). The drainer reads on
    /// its own thread, which may not have run yet when a short run of writes ends.
    pub fn wait_drained(&self, events: u64, timeout: Duration) -> u64 {
        let Some(d) = &self.drainer else {
            return 0;
        };
        let deadline = Instant::now() + timeout;
        let mut count = d.events.lock();
        while *count < events {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            count = d
                .events
                .grew
                .wait_timeout(count, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        *count
    }

    /// Stops the draining thread (waking it with one more write), and closes the instance.
    ///
    /// # Errors
    /// The draining thread failed, or a call did.
    pub fn remove(&mut self, sys: &S) -> anyhow::Result<()> {
        let mut result = Ok(());
        if let Some(d) = self.drainer.take() {
            d.stop.store(true, Ordering::Relaxed);
            // A write of the file queues an event (or finds one queued), so a blocked read
            // returns and sees the stop flag.
            result = sys.poke(Poke::WriteWritten);
            let joined = d
                .handle
                .join()
                .map_err(|_| anyhow!("the draining thread panicked"))
                .and_then(|r| r);
            result = result.and(joined);
        }
        if let Some(fd) = self.fd.take() {
            let fd = Arc::try_unwrap(fd)
                .map_err(|_| anyhow!("the instance is still shared after the drainer ended"))?;
            result = result.and(sys.close(fd));
        }
        result
    }
}

/// Starts the thread that reads watch `wd`'s events from `fd` until stopped, counting them;
/// an event of another kind is its error.
fn start_drainer<S: NotifySys>(t: S::Thread, fd: Arc<S::Fd>, wd: i32) -> anyhow::Result<Drainer> {
    let stop = Arc::new(AtomicBool::new(false));
    let events = Arc::new(Drained::default());
    let (stop2, events2) = (Arc::clone(&stop), Arc::clone(&events));
    let handle = std::thread::Builder::new()
        .name("inotify-drainer".into())
        .spawn(move || {
            let mut buf = vec![0u8; EVENT_BUF_BYTES];
            while !stop2.load(Ordering::Relaxed) {
                let n = S::read(&t, &fd, &mut buf)?;
                let read = InotifyEvent::parse_all(&buf[..n]);
                if let Some(e) = read.iter().find(|e| e.wd != wd || e.mask != IN_MODIFY) {
                    bail!("the drainer read {e:?}, not an IN_MODIFY of watch {wd}");
                }
                *events2.lock() += read.len() as u64;
                events2.grew.notify_all();
            }
            Ok(())
        })
        .context("starting the draining thread")?;
    Ok(Drainer {
        stop,
        events,
        handle,
    })
}
