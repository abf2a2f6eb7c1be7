//! `Vfs::snapshot`: an independent copy of a whole namespace's root filesystem.

use super::walk;
use super::{uv::Uv, Mounts, Options, Owners, SkipReason, Xattrs};
use crate::abi::{Errno, Result};
use crate::sys::Vfs;
use crate::vfs::{Cred, MntFlags, Mount, MountNamespace, Task};

impl Vfs {
    /// A new `Vfs` whose root tmpfs holds a copy of this one's root filesystem: an
    /// independent copy (changes to either are not seen in the other), for test isolation.
    ///
    /// The copy keeps what [`tree::import`](crate::tree::import) keeps: types, contents with
    /// their holes, hard links as links, modes with set-id and sticky bits, owners, atimes and
    /// mtimes to the nanosecond, and every extended attribute (`trusted.*` and `security.*`
    /// too: the copy runs as root with every capability). Taking it changes nothing in this
    /// `Vfs`, not even an atime. Not kept: inode numbers, ctimes
    /// (the copy's are the time of the copy), open files, cwds and fds of this `Vfs`'s tasks.
    /// The new root tmpfs gets the old one's `size=` and `nr_inodes=` limits when it has them
    /// (`statfs`).
    ///
    /// Only the root filesystem is copied: mounts below it (`Task::mount`) are not, and their
    /// mountpoints are copied as the directories they cover in the root filesystem (the walk
    /// runs in a namespace of its own whose root is a second mount of the root filesystem and
    /// that has no submounts). The walk reads each entry and each data byte once: its time
    /// is proportional to the entries plus the data, with no lookup by path.
    ///
    /// A tree being changed during the snapshot is copied as the walk finds it, entry by entry.
    ///
    /// ```
    /// use uvfs::abi::{OpenFlags, AT_FDCWD};
    /// use uvfs::{Cred, Vfs};
    ///
    /// let vfs = Vfs::new();
    /// let task = vfs.task(Cred::root());
    /// task.mkdirat(AT_FDCWD, "/d", 0o755).unwrap();
    /// let copy = vfs.snapshot().unwrap();
    /// task.unlinkat(AT_FDCWD, "/d", uvfs::abi::AtFlags::REMOVEDIR).unwrap();
    /// assert!(copy.task(Cred::root()).stat("/d").is_ok());
    /// ```
    ///
    /// # Errors
    /// What a call of the copy returns (say `ENOSPC` if a file holds more than the limits let
    /// a new tmpfs hold), or the errno of anything the new tmpfs refused to hold as it was;
    /// never a partial `Vfs`.
    pub fn snapshot(&self) -> Result<Vfs> {
        let root = self.namespace().root();
        // A second mount of the root filesystem, without submounts and `noatime`: reading a
        // symlink changes its atime (there is no O_NOATIME for readlink), and the original
        // must not see the snapshot being taken.
        let flags = root.flags() | MntFlags::NOATIME;
        let walk_root = Mount::new(root.sb().clone(), root.root().clone(), flags);
        let src_task = Task::new(MountNamespace::new(walk_root), Cred::root());
        let st = src_task.statfs("/")?;
        let mut limits = Vec::new();
        if st.blocks != 0 {
            limits.push(format!("size={}", st.blocks * st.bsize as u64));
        }
        if st.files != 0 {
            limits.push(format!("nr_inodes={}", st.files));
        }
        let new = if limits.is_empty() {
            Vfs::new()
        } else {
            Vfs::with_root_options(Some(&limits.join(",")))?
        };
        let src = Uv::with_task(src_task, b"/");
        let dst = Uv::with_task(new.task(Cred::root()), b"/");
        let opts = Options {
            owners: Owners::Preserve,
            xattrs: Xattrs::All,
            mounts: Mounts::OneFilesystem,
        };
        let report = walk::copy(&src, &dst, &opts).map_err(|e| {
            e.raw_os_error()
                .and_then(Errno::from_raw)
                .unwrap_or(Errno::EIO)
        })?;
        // Root with every capability, in a namespace without submounts, is refused nothing;
        // should a filesystem refuse something all the same, the copy is not a snapshot.
        match report.skipped.first().map(|s| &s.reason) {
            None => Ok(new),
            Some(SkipReason::Node(e) | SkipReason::Xattr { errno: e, .. }) => {
                Err(Errno::from_raw(*e).unwrap_or(Errno::EIO))
            }
            Some(_) => Err(Errno::EIO),
        }
    }
}
