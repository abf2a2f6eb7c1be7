//! Credentials of a task: ids, supplementary groups and capability sets. Linux: `struct cred`.
//!
//! The calls that change them are in `sys/cred.rs`; permission checks read only the effective
//! set ([`Cred::caps`]) and the fs ids, as Linux's `capable()` and `inode_permission()` do.

use bitflags::bitflags;
use std::sync::Arc;

bitflags! {
    /// A capability set: bit `n` is capability `n` of `linux/capability.h` (`CAP_CHOWN` is bit
    /// 0, `CAP_CHECKPOINT_RESTORE` bit 40). [`Capabilities::all`] is every capability Linux
    /// knows (`CAP_VALID_MASK`).
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
        /// `CAP_KILL`.
        const KILL = 1 << 5;
        /// `CAP_SETGID`: set any gid, fsgid or supplementary groups.
        const SETGID = 1 << 6;
        /// `CAP_SETUID`: set any uid or fsuid.
        const SETUID = 1 << 7;
        /// `CAP_SETPCAP`: raise inheritable capabilities beyond the permitted set.
        const SETPCAP = 1 << 8;
        /// `CAP_LINUX_IMMUTABLE`.
        const LINUX_IMMUTABLE = 1 << 9;
        /// `CAP_NET_BIND_SERVICE`.
        const NET_BIND_SERVICE = 1 << 10;
        /// `CAP_NET_BROADCAST`.
        const NET_BROADCAST = 1 << 11;
        /// `CAP_NET_ADMIN`.
        const NET_ADMIN = 1 << 12;
        /// `CAP_NET_RAW`.
        const NET_RAW = 1 << 13;
        /// `CAP_IPC_LOCK`.
        const IPC_LOCK = 1 << 14;
        /// `CAP_IPC_OWNER`.
        const IPC_OWNER = 1 << 15;
        /// `CAP_SYS_MODULE`.
        const SYS_MODULE = 1 << 16;
        /// `CAP_SYS_RAWIO`.
        const SYS_RAWIO = 1 << 17;
        /// `CAP_SYS_CHROOT`: call `chroot`.
        const SYS_CHROOT = 1 << 18;
        /// `CAP_SYS_PTRACE`.
        const SYS_PTRACE = 1 << 19;
        /// `CAP_SYS_PACCT`.
        const SYS_PACCT = 1 << 20;
        /// `CAP_SYS_ADMIN`: mount, `trusted.*` xattrs.
        const SYS_ADMIN = 1 << 21;
        /// `CAP_SYS_BOOT`.
        const SYS_BOOT = 1 << 22;
        /// `CAP_SYS_NICE`.
        const SYS_NICE = 1 << 23;
        /// `CAP_SYS_RESOURCE`.
        const SYS_RESOURCE = 1 << 24;
        /// `CAP_SYS_TIME`.
        const SYS_TIME = 1 << 25;
        /// `CAP_SYS_TTY_CONFIG`.
        const SYS_TTY_CONFIG = 1 << 26;
        /// `CAP_MKNOD`: create device nodes.
        const MKNOD = 1 << 27;
        /// `CAP_LEASE`.
        const LEASE = 1 << 28;
        /// `CAP_AUDIT_WRITE`.
        const AUDIT_WRITE = 1 << 29;
        /// `CAP_AUDIT_CONTROL`.
        const AUDIT_CONTROL = 1 << 30;
        /// `CAP_SETFCAP`.
        const SETFCAP = 1 << 31;
        /// `CAP_MAC_OVERRIDE`.
        const MAC_OVERRIDE = 1 << 32;
        /// `CAP_MAC_ADMIN`.
        const MAC_ADMIN = 1 << 33;
        /// `CAP_SYSLOG`.
        const SYSLOG = 1 << 34;
        /// `CAP_WAKE_ALARM`.
        const WAKE_ALARM = 1 << 35;
        /// `CAP_BLOCK_SUSPEND`.
        const BLOCK_SUSPEND = 1 << 36;
        /// `CAP_AUDIT_READ`.
        const AUDIT_READ = 1 << 37;
        /// `CAP_PERFMON`.
        const PERFMON = 1 << 38;
        /// `CAP_BPF`.
        const BPF = 1 << 39;
        /// `CAP_CHECKPOINT_RESTORE`.
        const CHECKPOINT_RESTORE = 1 << 40;
    }
}

impl Capabilities {
    /// The highest capability number (`CAP_LAST_CAP`).
    pub const LAST_CAP: u32 = 40;

    /// The capabilities that follow the fsuid: dropped from the effective set when the fsuid
    /// changes from 0 to non-zero, raised again from the permitted set when it changes back
    /// (Linux: `CAP_FS_SET`, used by `cap_task_fix_setuid()` in security/commoncap.c).
    pub const FS_MASK: Capabilities = Capabilities::CHOWN
        .union(Capabilities::DAC_OVERRIDE)
        .union(Capabilities::DAC_READ_SEARCH)
        .union(Capabilities::FOWNER)
        .union(Capabilities::FSETID)
        .union(Capabilities::LINUX_IMMUTABLE)
        .union(Capabilities::MKNOD)
        .union(Capabilities::MAC_OVERRIDE);

    /// The set holding capability number `cap`, or `None` past [`Capabilities::LAST_CAP`].
    pub fn from_number(cap: u32) -> Option<Capabilities> {
        (cap <= Self::LAST_CAP).then(|| Capabilities::from_bits_retain(1 << cap))
    }
}

/// The credentials a VFS operation runs with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cred {
    /// Real user id.
    pub uid: u32,
    /// Real group id.
    pub gid: u32,
    /// Saved set-user-ID.
    pub suid: u32,
    /// Saved set-group-ID.
    pub sgid: u32,
    /// Effective user id.
    pub euid: u32,
    /// Effective group id.
    pub egid: u32,
    /// Filesystem user id: owner of new files, subject of permission checks.
    pub fsuid: u32,
    /// Filesystem group id.
    pub fsgid: u32,
    /// Supplementary groups, sorted (Linux keeps them sorted for `in_group_p()`).
    pub groups: Arc<[u32]>,
    /// Effective capabilities: the set every permission check consults (Linux:
    /// `cap_effective`).
    pub caps: Capabilities,
    /// Permitted capabilities: the limit of the effective set (`cap_permitted`).
    pub permitted: Capabilities,
    /// Inheritable capabilities (`cap_inheritable`); uvfs has no `execve`, so they only take
    /// part in `capset`'s rules.
    pub inheritable: Capabilities,
    /// Bounding set (`cap_bset`): limits what `capset` may add to the inheritable set.
    pub bounding: Capabilities,
}

impl Cred {
    /// Root as Linux's init runs: every id 0, no supplementary groups, every capability
    /// effective, permitted and in the bounding set, none inheritable.
    pub fn root() -> Self {
        Cred {
            uid: 0,
            gid: 0,
            suid: 0,
            sgid: 0,
            euid: 0,
            egid: 0,
            fsuid: 0,
            fsgid: 0,
            groups: Arc::from(Vec::new()),
            caps: Capabilities::all(),
            permitted: Capabilities::all(),
            inheritable: Capabilities::empty(),
            bounding: Capabilities::all(),
        }
    }

    /// An unprivileged user: real, effective, saved and fs ids `uid`/`gid`, the given
    /// supplementary groups, no capabilities (a full bounding set, as a login session has).
    pub fn user(uid: u32, gid: u32, groups: &[u32]) -> Self {
        let mut groups = groups.to_vec();
        groups.sort_unstable();
        Cred {
            uid,
            gid,
            suid: uid,
            sgid: gid,
            euid: uid,
            egid: gid,
            fsuid: uid,
            fsgid: gid,
            groups: Arc::from(groups),
            caps: Capabilities::empty(),
            permitted: Capabilities::empty(),
            inheritable: Capabilities::empty(),
            bounding: Capabilities::all(),
        }
    }

    /// True if the credentials hold `cap` in the effective set (Linux: `capable()`).
    #[inline]
    pub fn capable(&self, cap: Capabilities) -> bool {
        self.caps.contains(cap)
    }

    /// True if `gid` is the fsgid or a supplementary group (Linux: `in_group_p()`).
    pub fn in_group(&self, gid: u32) -> bool {
        self.fsgid == gid || self.groups.contains(&gid)
    }

    /// The credentials `access()` checks with (Linux: `access_override_creds()`): fs ids set
    /// to the real ids, and the effective capabilities of a real-root caller replaced by its
    /// permitted set, cleared for anyone else.
    pub fn access_override(&self) -> Cred {
        let mut c = self.clone();
        c.fsuid = c.uid;
        c.fsgid = c.gid;
        c.caps = if c.uid == 0 {
            c.permitted
        } else {
            Capabilities::empty()
        };
        c
    }
}
