//! The watch scenarios' calls on uvfs: `Task::inotify_init1`, `inotify_add_watch`, `read`,
//! `fionread`; and the switch of the vanilla hooks, held for one run.

use anyhow::anyhow;
use uvfs::abi::{
    FanotifyEvent, OpenFlags, AT_FDCWD, FAN_CLASS_NOTIF, FAN_CLOEXEC, FAN_MARK_ADD, FAN_MARK_MOUNT,
    FAN_MODIFY, IN_CLOEXEC,
};
use uvfs::Task;

use crate::watch::{NotifySys, Poke, UNRELATED_FILE, WATCH_DIR, WRITTEN_FILE};

fn errno(e: uvfs::Errno) -> anyhow::Error {
    anyhow!("uvfs: {e:?} ({e})")
}

/// The watch scenarios' calls on uvfs, through `task` (paths relative to its root).
pub struct UvfsNotify {
    task: Task,
}

impl UvfsNotify {
    /// The calls through `task`: a task sharing the fd table of the tasks that run the
    /// workload.
    pub fn new(task: Task) -> UvfsNotify {
        UvfsNotify { task }
    }
}

impl NotifySys for UvfsNotify {
    type Fd = i32;
    type Thread = Task;

    fn inotify_init(&self) -> anyhow::Result<i32> {
        self.task.inotify_init1(IN_CLOEXEC).map_err(errno)
    }

    fn add_watch(&self, fd: &i32, path: &str, mask: u32) -> anyhow::Result<i32> {
        self.task
            .inotify_add_watch(*fd, format!("/{path}"), mask)
            .map_err(errno)
    }

    fn fanotify_mount_mark(&self) -> anyhow::Result<i32> {
        let t = &self.task;
        let fd = t
            .fanotify_init(FAN_CLOEXEC | FAN_CLASS_NOTIF, 0)
            .map_err(errno)?;
        let dir = format!("/{WATCH_DIR}");
        t.fanotify_mark(
            fd,
            FAN_MARK_ADD | FAN_MARK_MOUNT,
            FAN_MODIFY,
            AT_FDCWD,
            Some(dir.as_bytes()),
        )
        .map_err(errno)?;
        Ok(fd)
    }

    fn fanotify_events(&self, fd: &i32) -> anyhow::Result<Vec<u64>> {
        let t = &self.task;
        let mut masks = Vec::new();
        let mut buf = vec![0u8; 4096];
        while self.queued(fd)? > 0 {
            let n = t.read(*fd, &mut buf).map_err(errno)?;
            for e in FanotifyEvent::parse_all(&buf[..n]) {
                if e.fd >= 0 {
                    t.close(e.fd).map_err(errno)?;
                }
                masks.push(e.mask);
            }
        }
        Ok(masks)
    }

    fn queued(&self, fd: &i32) -> anyhow::Result<usize> {
        let n = self.task.fionread(*fd).map_err(errno)?;
        Ok(usize::try_from(n)?)
    }

    fn thread(&self) -> Task {
        self.task.clone_thread()
    }

    fn read(t: &Task, fd: &i32, buf: &mut [u8]) -> anyhow::Result<usize> {
        t.read(*fd, buf).map_err(errno)
    }

    fn poke(&self, poke: Poke) -> anyhow::Result<()> {
        let (path, flags) = match poke {
            Poke::WriteWritten => (WRITTEN_FILE, OpenFlags::WRONLY),
            Poke::WriteUnrelated => (UNRELATED_FILE, OpenFlags::WRONLY),
            Poke::ReadWritten => (WRITTEN_FILE, OpenFlags::RDONLY),
        };
        let t = &self.task;
        let f = t
            .openat(AT_FDCWD, format!("/{path}"), flags, 0)
            .map_err(errno)?;
        let mut b = [b'p'];
        let done = if poke == Poke::ReadWritten {
            t.pread(f, &mut b, 0)
        } else {
            t.pwrite(f, &b, 0)
        };
        let closed = t.close(f);
        done.map_err(errno)?;
        closed.map_err(errno)
    }

    fn close(&self, fd: i32) -> anyhow::Result<()> {
        self.task.close(fd).map_err(errno)
    }
}

/// The vanilla hooks ([`uvfs::vfs::notify::set_vanilla_hooks`]) on while this lives: a run of
/// a column whose design has them turns them on for its run only, and they go off again even
/// when the run fails.
pub struct VanillaHooks(());

impl VanillaHooks {
    /// Turns the vanilla hooks on.
    pub fn on() -> VanillaHooks {
        uvfs::vfs::notify::set_vanilla_hooks(true);
        VanillaHooks(())
    }
}

impl Drop for VanillaHooks {
    fn drop(&mut self) {
        uvfs::vfs::notify::set_vanilla_hooks(false);
    }
}
