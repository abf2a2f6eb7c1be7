//! Credential calls: the `set*id` family, `setfsuid`/`setfsgid`, `setgroups`/`getgroups`,
//! `getresuid`/`getresgid`, `capget`/`capset`. Linux: kernel/sys.c, kernel/groups.c,
//! kernel/capability.c, and the capability rules of security/commoncap.c
//! (`cap_task_fix_setuid()`, `cap_emulate_setxuid()`, `cap_capset()`).
//!
//! Each call builds the new credentials from a copy of the old ones and installs them only when
//! every check passed, as Linux's `prepare_creds()`/`commit_creds()` do; a call Linux ends
//! without committing (a `setresuid` that changes nothing, a refused `setfsuid`) keeps the
//! credentials' identity, which `linkat(AT_EMPTY_PATH)` compares.
//!
//! Ids are the values of the initial user namespace: every `u32` but `u32::MAX` is a valid id,
//! and `u32::MAX` (`(uid_t)-1`) is `None` for the calls where -1 means "unchanged".

use crate::abi::{Errno, Result, NGROUPS_MAX};
use crate::vfs::cred::{Capabilities, Cred};
use crate::vfs::Task;

/// `(uid_t)-1`: not a valid id (Linux: `INVALID_UID`, what `make_kuid()` maps -1 to).
const INVALID_ID: u32 = u32::MAX;

/// The three capability sets `capget` reports and `capset` sets.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct CapSets {
    /// The effective set.
    pub effective: Capabilities,
    /// The permitted set.
    pub permitted: Capabilities,
    /// The inheritable set.
    pub inheritable: Capabilities,
}

/// `EINVAL` if any id given is `(uid_t)-1` (Linux: the `uid_valid()` checks).
fn check_ids(ids: &[Option<u32>]) -> Result<()> {
    if ids.contains(&Some(INVALID_ID)) {
        return Err(Errno::EINVAL);
    }
    Ok(())
}

/// True if `id` is given and is none of `old` (Linux: the `ruid_new`/`euid_new`/`suid_new`
/// tests of `__sys_setresuid()`): changing to it needs the capability.
fn is_new(id: Option<u32>, old: [u32; 3]) -> bool {
    id.is_some_and(|v| !old.contains(&v))
}

/// Follows a change of the real, effective or saved uid with the capability sets (Linux:
/// `cap_emulate_setxuid()`): leaving uid 0 in all three clears the permitted and effective
/// sets; an euid leaving 0 clears the effective set; an euid becoming 0 makes it the
/// permitted set. The fsuid is not looked at, even when it changes with the euid.
fn emulate_setxuid(new: &mut Cred, old: &Cred) {
    let had_root = old.uid == 0 || old.euid == 0 || old.suid == 0;
    let has_root = new.uid == 0 || new.euid == 0 || new.suid == 0;
    if had_root && !has_root {
        new.permitted = Capabilities::empty();
        new.caps = Capabilities::empty();
    }
    if old.euid == 0 && new.euid != 0 {
        new.caps = Capabilities::empty();
    }
    if old.euid != 0 && new.euid == 0 {
        new.caps = new.permitted;
    }
}

/// Follows an fsuid change made by `setfsuid` with the effective set (Linux: the
/// `LSM_SETID_FS` case of `cap_task_fix_setuid()`): leaving fsuid 0 drops
/// [`Capabilities::FS_MASK`], coming back raises those of them that are permitted.
fn fix_setfsuid(new: &mut Cred, old: &Cred) {
    if old.fsuid == 0 && new.fsuid != 0 {
        new.caps.remove(Capabilities::FS_MASK);
    }
    if old.fsuid != 0 && new.fsuid == 0 {
        new.caps |= new.permitted & Capabilities::FS_MASK;
    }
}

/// # Process state: credentials
///
/// The `set*id` and `get*id` family, `setgroups`, `setfs[ug]id`, `capget`, `capset`, with
/// Linux's permission rules.
impl Task {
    /// `getresuid`: the real, effective and saved user ids.
    pub fn getresuid(&self) -> (u32, u32, u32) {
        let c = self.cred.borrow();
        (c.uid, c.euid, c.suid)
    }

    /// `getresgid`: the real, effective and saved group ids.
    pub fn getresgid(&self) -> (u32, u32, u32) {
        let c = self.cred.borrow();
        (c.gid, c.egid, c.sgid)
    }

    /// `setresuid`: sets the real, effective and saved uids (`None` keeps one); the fsuid
    /// follows the euid. Without `CAP_SETUID` each new id must be one of the current real,
    /// effective or saved uids. The capability sets follow as `cap_emulate_setxuid()` says
    /// (Linux: `__sys_setresuid()`).
    ///
    /// # Errors
    /// `EINVAL` for an id of `u32::MAX`; `EPERM` for an id the caller may not take.
    pub fn setresuid(&self, ruid: Option<u32>, euid: Option<u32>, suid: Option<u32>) -> Result<()> {
        check_ids(&[ruid, euid, suid])?;
        let old = self.cred();
        let same = |id: Option<u32>, cur: u32| id.is_none_or(|v| v == cur);
        if same(ruid, old.uid)
            && same(euid, old.euid)
            && same(euid, old.fsuid)
            && same(suid, old.suid)
        {
            return Ok(());
        }
        let ids = [old.uid, old.euid, old.suid];
        if (is_new(ruid, ids) || is_new(euid, ids) || is_new(suid, ids))
            && !old.capable(Capabilities::SETUID)
        {
            return Err(Errno::EPERM);
        }
        let mut new = old.clone();
        new.uid = ruid.unwrap_or(old.uid);
        new.euid = euid.unwrap_or(old.euid);
        new.suid = suid.unwrap_or(old.suid);
        new.fsuid = new.euid;
        emulate_setxuid(&mut new, &old);
        self.commit_cred(new);
        Ok(())
    }

    /// `setresgid`: sets the real, effective and saved gids (`None` keeps one); the fsgid
    /// follows the egid. Without `CAP_SETGID` each new id must be one of the current real,
    /// effective or saved gids (Linux: `__sys_setresgid()`).
    ///
    /// # Errors
    /// `EINVAL` for an id of `u32::MAX`; `EPERM` for an id the caller may not take.
    pub fn setresgid(&self, rgid: Option<u32>, egid: Option<u32>, sgid: Option<u32>) -> Result<()> {
        check_ids(&[rgid, egid, sgid])?;
        let old = self.cred();
        let same = |id: Option<u32>, cur: u32| id.is_none_or(|v| v == cur);
        if same(rgid, old.gid)
            && same(egid, old.egid)
            && same(egid, old.fsgid)
            && same(sgid, old.sgid)
        {
            return Ok(());
        }
        let ids = [old.gid, old.egid, old.sgid];
        if (is_new(rgid, ids) || is_new(egid, ids) || is_new(sgid, ids))
            && !old.capable(Capabilities::SETGID)
        {
            return Err(Errno::EPERM);
        }
        let mut new = old.clone();
        new.gid = rgid.unwrap_or(old.gid);
        new.egid = egid.unwrap_or(old.egid);
        new.sgid = sgid.unwrap_or(old.sgid);
        new.fsgid = new.egid;
        self.commit_cred(new);
        Ok(())
    }

    /// `setreuid`: sets the real and effective uids (`None` keeps one). Without `CAP_SETUID`
    /// the real uid may become the current real or effective uid, the effective uid the
    /// current real, effective or saved uid. Setting the real uid, or an euid other than the
    /// old real uid, also sets the saved uid to the new euid; the fsuid follows the euid
    /// (Linux: `__sys_setreuid()`).
    ///
    /// # Errors
    /// `EINVAL` for an id of `u32::MAX`; `EPERM` for an id the caller may not take.
    pub fn setreuid(&self, ruid: Option<u32>, euid: Option<u32>) -> Result<()> {
        check_ids(&[ruid, euid])?;
        let old = self.cred();
        let capable = old.capable(Capabilities::SETUID);
        if is_new(ruid, [old.uid, old.euid, old.euid]) && !capable {
            return Err(Errno::EPERM);
        }
        if is_new(euid, [old.uid, old.euid, old.suid]) && !capable {
            return Err(Errno::EPERM);
        }
        let mut new = old.clone();
        new.uid = ruid.unwrap_or(old.uid);
        new.euid = euid.unwrap_or(old.euid);
        if ruid.is_some() || euid.is_some_and(|e| e != old.uid) {
            new.suid = new.euid;
        }
        new.fsuid = new.euid;
        emulate_setxuid(&mut new, &old);
        self.commit_cred(new);
        Ok(())
    }

    /// `setregid`: as [`Task::setreuid`] for the real, effective, saved and fs gids, with
    /// `CAP_SETGID` (Linux: `__sys_setregid()`).
    ///
    /// # Errors
    /// `EINVAL` for an id of `u32::MAX`; `EPERM` for an id the caller may not take.
    pub fn setregid(&self, rgid: Option<u32>, egid: Option<u32>) -> Result<()> {
        check_ids(&[rgid, egid])?;
        let old = self.cred();
        let capable = old.capable(Capabilities::SETGID);
        if is_new(rgid, [old.gid, old.egid, old.egid]) && !capable {
            return Err(Errno::EPERM);
        }
        if is_new(egid, [old.gid, old.egid, old.sgid]) && !capable {
            return Err(Errno::EPERM);
        }
        let mut new = old.clone();
        new.gid = rgid.unwrap_or(old.gid);
        new.egid = egid.unwrap_or(old.egid);
        if rgid.is_some() || egid.is_some_and(|e| e != old.gid) {
            new.sgid = new.egid;
        }
        new.fsgid = new.egid;
        self.commit_cred(new);
        Ok(())
    }

    /// `setuid`: with `CAP_SETUID` sets the real, effective, saved and fs uids; without it only
    /// the effective and fs uids, to the real or saved uid (Linux: `__sys_setuid()`). The
    /// capability sets follow as for [`Task::setresuid`].
    ///
    /// # Errors
    /// `EINVAL` for `u32::MAX`; `EPERM` for an id the caller may not take.
    pub fn setuid(&self, uid: u32) -> Result<()> {
        check_ids(&[Some(uid)])?;
        let old = self.cred();
        let mut new = old.clone();
        if old.capable(Capabilities::SETUID) {
            new.uid = uid;
            new.suid = uid;
        } else if uid != old.uid && uid != old.suid {
            return Err(Errno::EPERM);
        }
        new.euid = uid;
        new.fsuid = uid;
        emulate_setxuid(&mut new, &old);
        self.commit_cred(new);
        Ok(())
    }

    /// `setgid`: with `CAP_SETGID` sets the real, effective, saved and fs gids; without it only
    /// the effective and fs gids, to the real or saved gid (Linux: `__sys_setgid()`).
    ///
    /// # Errors
    /// `EINVAL` for `u32::MAX`; `EPERM` for an id the caller may not take.
    pub fn setgid(&self, gid: u32) -> Result<()> {
        check_ids(&[Some(gid)])?;
        let old = self.cred();
        let mut new = old.clone();
        if old.capable(Capabilities::SETGID) {
            new.gid = gid;
            new.sgid = gid;
        } else if gid != old.gid && gid != old.sgid {
            return Err(Errno::EPERM);
        }
        new.egid = gid;
        new.fsgid = gid;
        self.commit_cred(new);
        Ok(())
    }

    /// `setfsuid`: sets the fsuid to `uid` if it is the real, effective, saved or current fs
    /// uid, or the caller has `CAP_SETUID`; otherwise changes nothing. Leaving fsuid 0 drops
    /// the filesystem capabilities from the effective set, returning to 0 raises the permitted
    /// ones (Linux: `__sys_setfsuid()`). Never fails: returns the fsuid before the call, so
    /// `setfsuid(u32::MAX)` reads it.
    pub fn setfsuid(&self, uid: u32) -> u32 {
        let old = self.cred();
        let allowed = [old.uid, old.euid, old.suid, old.fsuid].contains(&uid)
            || old.capable(Capabilities::SETUID);
        if uid != INVALID_ID && allowed && uid != old.fsuid {
            let mut new = old.clone();
            new.fsuid = uid;
            fix_setfsuid(&mut new, &old);
            self.commit_cred(new);
        }
        old.fsuid
    }

    /// `setfsgid`: as [`Task::setfsuid`] for the fsgid, with `CAP_SETGID` and no capability
    /// change (Linux: `__sys_setfsgid()`). Returns the fsgid before the call.
    pub fn setfsgid(&self, gid: u32) -> u32 {
        let old = self.cred();
        let allowed = [old.gid, old.egid, old.sgid, old.fsgid].contains(&gid)
            || old.capable(Capabilities::SETGID);
        if gid != INVALID_ID && allowed && gid != old.fsgid {
            let mut new = old.clone();
            new.fsgid = gid;
            self.commit_cred(new);
        }
        old.fsgid
    }

    /// `setgroups`: replaces the supplementary groups, which are kept sorted (Linux:
    /// `setgroups()` in kernel/groups.c).
    ///
    /// # Errors
    /// `EPERM` without `CAP_SETGID`; then `EINVAL` for more than [`NGROUPS_MAX`] groups or a
    /// group of `u32::MAX`.
    pub fn setgroups(&self, groups: &[u32]) -> Result<()> {
        let old = self.cred();
        if !old.capable(Capabilities::SETGID) {
            return Err(Errno::EPERM);
        }
        if groups.len() > NGROUPS_MAX || groups.contains(&INVALID_ID) {
            return Err(Errno::EINVAL);
        }
        let mut sorted = groups.to_vec();
        sorted.sort_unstable();
        let mut new = old;
        new.groups = sorted.into();
        self.commit_cred(new);
        Ok(())
    }

    /// `getgroups`: the number of supplementary groups; unless `list` is empty, also copies
    /// them into it, in ascending order (Linux: `getgroups()` in kernel/groups.c).
    ///
    /// # Errors
    /// `EINVAL` if `list` is not empty but too short for all of them.
    pub fn getgroups(&self, list: &mut [u32]) -> Result<usize> {
        let c = self.cred.borrow();
        let n = c.groups.len();
        if !list.is_empty() {
            if n > list.len() {
                return Err(Errno::EINVAL);
            }
            list[..n].copy_from_slice(&c.groups);
        }
        Ok(n)
    }

    /// `capget` on the calling task: its effective, permitted and inheritable sets.
    pub fn capget(&self) -> CapSets {
        let c = self.cred.borrow();
        CapSets {
            effective: c.caps,
            permitted: c.permitted,
            inheritable: c.inheritable,
        }
    }

    /// `capset` on the calling task (Linux: `capset()` in kernel/capability.c and
    /// `cap_capset()`): the permitted set may only shrink, the effective set must lie within
    /// the new permitted set, and the inheritable set may only gain capabilities of the old
    /// permitted set (any, with `CAP_SETPCAP` effective) that are also in the bounding set.
    /// Build the sets with [`Capabilities::from_bits_truncate`] to drop unknown bits as the
    /// kernel does.
    ///
    /// # Errors
    /// `EPERM` for a set the rules above refuse.
    pub fn capset(&self, sets: CapSets) -> Result<()> {
        let old = self.cred();
        if !old.capable(Capabilities::SETPCAP)
            && !(old.inheritable | old.permitted).contains(sets.inheritable)
        {
            return Err(Errno::EPERM);
        }
        if !(old.inheritable | old.bounding).contains(sets.inheritable)
            || !old.permitted.contains(sets.permitted)
            || !sets.permitted.contains(sets.effective)
        {
            return Err(Errno::EPERM);
        }
        let mut new = old;
        new.caps = sets.effective;
        new.permitted = sets.permitted;
        new.inheritable = sets.inheritable;
        self.commit_cred(new);
        Ok(())
    }
}
