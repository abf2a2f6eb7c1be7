//! Credentials of a task: ids, supplementary groups and capabilities. Linux: `struct cred`.

use bitflags::bitflags;
use std::sync::Arc;

bitflags! {
    /// Capabilities that the VFS consults (`CAP_*`, as bit numbers of the Linux set).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
    pub struct Capabilities: u64 {
        /// `CAP_CHOWN`: change owner and group freely.
        const CHOWN = 1 << 0;
        /// `CAP_DAC_OVERRIDE`: bypass read/write/execute permission checks.
        const DAC_OVERRIDE = 1 << 1;
        /// `CAP_DAC_READ_SEARCH`: bypass read and directory search checks.
        const DAC_READ_SEARCH = 1 << 2;
        /// `CAP_FOWNER`: act as the owner of any file.
        const FOWNER = 1 << 3;
        /// `CAP_FSETID`: keep set-id bits; set set-group-ID without group membership.
        const FSETID = 1 << 4;
        /// `CAP_SETGID`.
        const SETGID = 1 << 6;
        /// `CAP_SETUID`.
        const SETUID = 1 << 7;
        /// `CAP_LINUX_IMMUTABLE`.
        const LINUX_IMMUTABLE = 1 << 9;
        /// `CAP_SYS_CHROOT`: call `chroot`.
        const SYS_CHROOT = 1 << 18;
        /// `CAP_SYS_ADMIN`: mount, `trusted.*` xattrs.
        const SYS_ADMIN = 1 << 21;
        /// `CAP_SYS_RESOURCE`.
        const SYS_RESOURCE = 1 << 24;
        /// `CAP_MKNOD`: create device nodes.
        const MKNOD = 1 << 27;
    }
}

impl Capabilities {
    /// The capabilities Linux drops when the fsuid changes from 0 to non-zero (`CAP_FS_MASK`).
    pub const FS_MASK: Capabilities = Capabilities::CHOWN
        .union(Capabilities::DAC_OVERRIDE)
        .union(Capabilities::DAC_READ_SEARCH)
        .union(Capabilities::FOWNER)
        .union(Capabilities::FSETID)
        .union(Capabilities::LINUX_IMMUTABLE)
        .union(Capabilities::MKNOD);
}

/// The credentials a VFS operation runs with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cred {
    /// Real user id.
    pub uid: u32,
    /// Real group id.
    pub gid: u32,
    /// Effective user id.
    pub euid: u32,
    /// Effective group id.
    pub egid: u32,
    /// Filesystem user id: owner of new files, subject of permission checks.
    pub fsuid: u32,
    /// Filesystem group id.
    pub fsgid: u32,
    /// Supplementary groups.
    pub groups: Arc<[u32]>,
    /// Effective capabilities.
    pub caps: Capabilities,
}

impl Cred {
    /// Root with every capability.
    pub fn root() -> Self {
        Cred {
            uid: 0,
            gid: 0,
            euid: 0,
            egid: 0,
            fsuid: 0,
            fsgid: 0,
            groups: Arc::from(Vec::new()),
            caps: Capabilities::all(),
        }
    }

    /// An unprivileged user: no capabilities.
    pub fn user(uid: u32, gid: u32, groups: &[u32]) -> Self {
        Cred {
            uid,
            gid,
            euid: uid,
            egid: gid,
            fsuid: uid,
            fsgid: gid,
            groups: Arc::from(groups.to_vec()),
            caps: Capabilities::empty(),
        }
    }

    /// True if the credentials hold `cap`.
    #[inline]
    pub fn capable(&self, cap: Capabilities) -> bool {
        self.caps.contains(cap)
    }

    /// True if `gid` is the fsgid or a supplementary group (Linux: `in_group_p()`).
    pub fn in_group(&self, gid: u32) -> bool {
        self.fsgid == gid || self.groups.contains(&gid)
    }
}
