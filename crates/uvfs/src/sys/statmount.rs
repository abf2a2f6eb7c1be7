//! `statmount(2)`: what a mount and its filesystem are (Linux: `statmount()`,
//! `statmount_sb_basic()`, `statmount_mnt_basic()` and `mnt_to_attr_flags()` in
//! fs/namespace.c).

use super::dir::path_of;
use crate::abi::{
    dev_split, Errno, MountAttr, MountFlags, Result, Statmount, StatmountMask, TMPFS_MAGIC,
};
use crate::vfs::cred::Capabilities;
use crate::vfs::mount::{MntFlags, Mount};
use crate::vfs::{Task, VfsPath};

/// A mount's flags as `MOUNT_ATTR_*` bits (Linux: `mnt_to_attr_flags()`): the atime mode is
/// noatime, else relatime (no bit), else strictatime.
fn mount_attr(flags: MntFlags) -> MountAttr {
    let mut a = MountAttr::empty();
    for (m, attr) in [
        (MntFlags::RDONLY, MountAttr::RDONLY),
        (MntFlags::NOSUID, MountAttr::NOSUID),
        (MntFlags::NODEV, MountAttr::NODEV),
        (MntFlags::NOEXEC, MountAttr::NOEXEC),
        (MntFlags::NODIRATIME, MountAttr::NODIRATIME),
        (MntFlags::NOSYMFOLLOW, MountAttr::NOSYMFOLLOW),
    ] {
        if flags.contains(m) {
            a |= attr;
        }
    }
    if flags.contains(MntFlags::NOATIME) {
        a |= MountAttr::NOATIME;
    } else if !flags.contains(MntFlags::RELATIME) {
        a |= MountAttr::STRICTATIME;
    }
    a
}

/// The mount's own id and its parent's (its own for a namespace root or a detached mount).
fn ids(m: &Mount) -> (u64, u64) {
    let parent = m.parent().map_or(m.id(), |(p, _)| p.id());
    (m.id(), parent)
}

/// # Mount information
impl Task {
    /// `statmount(2)` of the mount whose id is `mnt_id` (statx's `stx_mnt_id`) in this task's
    /// namespace, for the groups of `mask` uvfs fills: [`StatmountMask::SB_BASIC`] (the
    /// superblock's flags include `SB_LAZYTIME`, which `statfs` does not report) and
    /// [`StatmountMask::MNT_BASIC`]. The string groups and the namespace id are left out of
    /// the answer's `mask`, which says what was filled, as Linux's does for what it cannot
    /// give. Every mount is private (docs/divergences.md), so the propagation is
    /// `MS_PRIVATE`. uvfs's one mount id serves as both the unique and the old id.
    ///
    /// # Errors
    /// `EINVAL` for non-zero `flags`; `ENOENT` if no mount of the namespace's tree has that
    /// id; `EPERM` for a mount whose root is outside the task's root (a chroot below it)
    /// without `CAP_SYS_ADMIN`.
    pub fn statmount(&self, mnt_id: u64, mask: StatmountMask, flags: u32) -> Result<Statmount> {
        if flags != 0 {
            return Err(Errno::EINVAL);
        }
        let m = self.ns.find_mount(mnt_id).ok_or(Errno::ENOENT)?;
        // Linux (`do_statmount()`): a mount whose root the task's root cannot reach (a
        // chroot below it) is shown only with `CAP_SYS_ADMIN`.
        let at_root = VfsPath {
            mnt: m.clone(),
            dentry: m.root().clone(),
        };
        if !path_of(&at_root, &self.fs.borrow().root).1
            && !self.cred.borrow().capable(Capabilities::SYS_ADMIN)
        {
            return Err(Errno::EPERM);
        }
        let mut s = Statmount::default();
        if mask.contains(StatmountMask::SB_BASIC) {
            let sb = m.sb();
            (s.sb_dev_major, s.sb_dev_minor) = dev_split(sb.dev());
            s.sb_magic = sb
                .ops()
                .statfs(sb)
                .map_or(TMPFS_MAGIC as u64, |f| f.f_type as u64);
            s.sb_flags = sb.flags();
            s.mask |= StatmountMask::SB_BASIC;
        }
        if mask.contains(StatmountMask::MNT_BASIC) {
            let (id, parent) = ids(&m);
            (s.mnt_id, s.mnt_parent_id) = (id, parent);
            (s.mnt_id_old, s.mnt_parent_id_old) = (id as u32, parent as u32);
            s.mnt_attr = mount_attr(m.flags());
            s.mnt_propagation = MountFlags::PRIVATE.bits();
            s.mask |= StatmountMask::MNT_BASIC;
        }
        Ok(s)
    }
}
