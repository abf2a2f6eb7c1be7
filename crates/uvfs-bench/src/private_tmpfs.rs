//! The private tmpfs the host columns (the seed workloads' and the scale testcases') run their
//! system calls on: mounted under the system temporary directory for the column's life.
//!
//! Mounting needs `CAP_SYS_ADMIN` in the mount namespace's user namespace: root, or a process
//! that entered its own user and mount namespaces (`uvfs bench` does that when not root, as
//! `unshare -Urm` does). Where neither is possible, the seed workloads' and the scale
//! testcases' host columns fall back to a plain directory there
//! ([`PrivateTmpfs::mount_or_dir`]) and say so in their name ([`crate::column::HOST_IN_DIR`]).

use std::ffi::CStr;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};

use anyhow::{anyhow, Context};
use rustix::fs::{openat, Mode, OFlags, CWD};
use rustix::mount::{mount, unmount, MountFlags, UnmountFlags};

use crate::column::Support;

/// What the host column's directory is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Backing {
    /// A tmpfs mounted for the column.
    Tmpfs,
    /// A plain directory under the system temporary directory, on whatever file system that
    /// is: no tmpfs could be mounted.
    PlainDir,
}

/// A tmpfs mounted for one column; unmounted (lazily) and its mountpoint removed on drop.
pub(crate) struct PrivateTmpfs {
    mountpoint: PathBuf,
    /// The mounted tmpfs's root (or the plain directory), opened as a directory; `None` if
    /// neither could be had.
    dir: Option<OwnedFd>,
    /// What `dir` is.
    backing: Backing,
    /// Why it could not be mounted, as the column's configurations say it.
    skipped: Option<String>,
}

impl PrivateTmpfs {
    /// Mounts a tmpfs at `name` under the system temporary directory. If that is impossible
    /// (not root), [`support`](Self::support) says "skipped: why".
    pub(crate) fn mount(name: &str) -> PrivateTmpfs {
        Self::mount_with(name, c"mode=0755")
    }

    /// [`mount`](Self::mount) with the tmpfs mount options `options`.
    pub(crate) fn mount_with(name: &str, options: &CStr) -> PrivateTmpfs {
        let mut t = PrivateTmpfs {
            mountpoint: std::env::temp_dir().join(name),
            dir: None,
            backing: Backing::Tmpfs,
            skipped: None,
        };
        if let Err(e) = t.try_mount(options) {
            t.skipped = Some(format!("skipped: cannot mount a private tmpfs ({e:#})"));
        }
        t
    }

    /// [`mount`](Self::mount), or where no tmpfs can be mounted (not root and no user
    /// namespace), a plain directory at `name` under the system temporary directory
    /// ([`Backing::PlainDir`]); skipped only if that cannot be made either.
    pub(crate) fn mount_or_dir(name: &str) -> PrivateTmpfs {
        let mut t = Self::mount(name);
        if t.skipped.is_none() {
            return t;
        }
        match openat(
            CWD,
            &t.mountpoint,
            OFlags::DIRECTORY | OFlags::RDONLY,
            Mode::empty(),
        ) {
            Ok(dir) => {
                t.dir = Some(dir);
                t.backing = Backing::PlainDir;
                t.skipped = None;
            }
            Err(e) => {
                t.skipped = Some(format!(
                    "skipped: cannot mount a private tmpfs nor open {} ({e})",
                    t.mountpoint.display()
                ));
            }
        }
        t
    }

    /// What the column's directory is.
    pub(crate) fn backing(&self) -> Backing {
        self.backing
    }

    fn try_mount(&mut self, options: &CStr) -> anyhow::Result<()> {
        std::fs::create_dir_all(&self.mountpoint)?;
        mount(
            "none",
            &self.mountpoint,
            "tmpfs",
            MountFlags::NOSUID | MountFlags::NODEV,
            Some(options),
        )
        .context("mount -t tmpfs")?;
        let dir = openat(
            CWD,
            &self.mountpoint,
            OFlags::DIRECTORY | OFlags::RDONLY,
            Mode::empty(),
        )?;
        self.dir = Some(dir);
        Ok(())
    }

    /// Whether the column can run: yes if the tmpfs is mounted, else why not.
    pub(crate) fn support(&self) -> Support {
        match &self.skipped {
            Some(why) => Support::No(why.clone()),
            None => Support::Yes,
        }
    }

    /// The mountpoint.
    pub(crate) fn path(&self) -> &Path {
        &self.mountpoint
    }

    /// The tmpfs's root directory, which the columns' paths are relative to.
    pub(crate) fn dir(&self) -> anyhow::Result<BorrowedFd<'_>> {
        self.dir
            .as_ref()
            .map(AsFd::as_fd)
            .ok_or_else(|| anyhow!("host tmpfs not mounted"))
    }

    /// Removes everything in the tmpfs.
    pub(crate) fn clear(&self) -> anyhow::Result<()> {
        for entry in std::fs::read_dir(&self.mountpoint)? {
            let p = entry?.path();
            if p.is_dir() {
                std::fs::remove_dir_all(&p)?;
            } else {
                std::fs::remove_file(&p)?;
            }
        }
        Ok(())
    }
}

impl Drop for PrivateTmpfs {
    fn drop(&mut self) {
        if self.dir.take().is_some() {
            match self.backing {
                Backing::Tmpfs => {
                    let _ = unmount(&self.mountpoint, UnmountFlags::DETACH);
                }
                Backing::PlainDir => {
                    let _ = self.clear();
                }
            }
        }
        let _ = std::fs::remove_dir(&self.mountpoint);
    }
}
