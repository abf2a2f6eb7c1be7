//! `statmount(2)`: the request mask, the mount attribute bits and the fixed part of
//! `struct statmount` (Linux: include/uapi/linux/mount.h).

use bitflags::bitflags;

bitflags! {
    /// What `statmount` is asked for and what it filled in (`STATMOUNT_*`).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
    pub struct StatmountMask: u64 {
        /// The superblock's device, magic and flags.
        #[doc(alias = "STATMOUNT_SB_BASIC")] const SB_BASIC = 0x1;
        /// The mount's ids, attributes and propagation.
        #[doc(alias = "STATMOUNT_MNT_BASIC")] const MNT_BASIC = 0x2;
        /// The mount propagation comes from (a string group of Linux's; never filled here).
        #[doc(alias = "STATMOUNT_PROPAGATE_FROM")] const PROPAGATE_FROM = 0x4;
        /// The mount's root in its filesystem (a string; never filled here).
        #[doc(alias = "STATMOUNT_MNT_ROOT")] const MNT_ROOT = 0x8;
        /// The mountpoint (a string; never filled here).
        #[doc(alias = "STATMOUNT_MNT_POINT")] const MNT_POINT = 0x10;
        /// The filesystem type's name (a string; never filled here).
        #[doc(alias = "STATMOUNT_FS_TYPE")] const FS_TYPE = 0x20;
        /// The namespace's id (never filled here).
        #[doc(alias = "STATMOUNT_MNT_NS_ID")] const MNT_NS_ID = 0x40;
    }
}

bitflags! {
    /// A mount's attributes as `mount_setattr(2)` and `statmount(2)` spell them
    /// (`MOUNT_ATTR_*`). The atime mode is a 3-bit field (`MOUNT_ATTR__ATIME`) whose value 0
    /// is relatime (`MOUNT_ATTR_RELATIME`), so relatime has no bit here.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
    pub struct MountAttr: u64 {
        /// Read-only mount.
        #[doc(alias = "MOUNT_ATTR_RDONLY")] const RDONLY = 0x1;
        /// Set-id bits ignored.
        #[doc(alias = "MOUNT_ATTR_NOSUID")] const NOSUID = 0x2;
        /// Devices cannot be opened.
        #[doc(alias = "MOUNT_ATTR_NODEV")] const NODEV = 0x4;
        /// Nothing can be executed.
        #[doc(alias = "MOUNT_ATTR_NOEXEC")] const NOEXEC = 0x8;
        /// atime mode noatime.
        #[doc(alias = "MOUNT_ATTR_NOATIME")] const NOATIME = 0x10;
        /// atime mode strictatime.
        #[doc(alias = "MOUNT_ATTR_STRICTATIME")] const STRICTATIME = 0x20;
        /// Directory atimes are not updated.
        #[doc(alias = "MOUNT_ATTR_NODIRATIME")] const NODIRATIME = 0x80;
        /// An idmapped mount.
        #[doc(alias = "MOUNT_ATTR_IDMAP")] const IDMAP = 0x10_0000;
        /// Symbolic links are not followed.
        #[doc(alias = "MOUNT_ATTR_NOSYMFOLLOW")] const NOSYMFOLLOW = 0x20_0000;
    }
}

/// The numeric fields of `struct statmount` (its strings are not filled by uvfs). A field
/// whose group is not in `mask` is zero.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Statmount {
    /// The groups filled in.
    pub mask: StatmountMask,
    /// Major of the filesystem's device.
    pub sb_dev_major: u32,
    /// Minor of the filesystem's device.
    pub sb_dev_minor: u32,
    /// Filesystem magic (`TMPFS_MAGIC`, ...).
    pub sb_magic: u64,
    /// `SB_RDONLY`, `SB_SYNCHRONOUS`, `SB_DIRSYNC`, `SB_LAZYTIME` of the superblock.
    pub sb_flags: u32,
    /// The mount's id.
    pub mnt_id: u64,
    /// The parent mount's id (the mount's own for a namespace root).
    pub mnt_parent_id: u64,
    /// The mount's id as `/proc/self/mountinfo` shows it.
    pub mnt_id_old: u32,
    /// The parent's id as `/proc/self/mountinfo` shows it.
    pub mnt_parent_id_old: u32,
    /// The mount's attributes.
    pub mnt_attr: MountAttr,
    /// `MS_SHARED`, `MS_SLAVE`, `MS_PRIVATE`, `MS_UNBINDABLE`.
    pub mnt_propagation: u64,
    /// The shared peer group (0: not shared).
    pub mnt_peer_group: u64,
    /// The peer group this mount receives propagation from (0: not a slave).
    pub mnt_master: u64,
}
