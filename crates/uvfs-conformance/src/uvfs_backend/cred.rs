//! The credential ops ([`CredOp`]) and `as` on a uvfs [`Task`], and the credentials the
//! backend's root task starts with.

use uvfs::sys::CapSets;
use uvfs::{Capabilities, Cred, Task};

use crate::op::cred::{CapMasks, CredOp, CredValue};
use crate::outcome::{Outcome, Value};

/// `(uid_t)-1` as "unchanged".
fn keep(id: u32) -> Option<u32> {
    (id != u32::MAX).then_some(id)
}

fn masks(s: CapSets) -> CapMasks {
    CapMasks {
        effective: s.effective.bits(),
        permitted: s.permitted.bits(),
        inheritable: s.inheritable.bits(),
    }
}

/// Bits past `CAP_LAST_CAP` dropped, as `capset` does.
fn sets(m: CapMasks) -> CapSets {
    CapSets {
        effective: Capabilities::from_bits_truncate(m.effective),
        permitted: Capabilities::from_bits_truncate(m.permitted),
        inheritable: Capabilities::from_bits_truncate(m.inheritable),
    }
}

fn unit(r: uvfs::Result<()>) -> Outcome {
    match r {
        Ok(()) => Outcome::Ok(Value::Unit),
        Err(e) => Outcome::Errno(e.raw()),
    }
}

/// Runs `op` on `t`.
pub(super) fn run(t: &Task, op: &CredOp) -> Outcome {
    let ids = |(r, e, s): (u32, u32, u32)| Outcome::Ok(Value::Cred(CredValue::Ids([r, e, s])));
    match op {
        CredOp::Setresuid { ruid, euid, suid } => {
            unit(t.setresuid(keep(*ruid), keep(*euid), keep(*suid)))
        }
        CredOp::Setresgid { rgid, egid, sgid } => {
            unit(t.setresgid(keep(*rgid), keep(*egid), keep(*sgid)))
        }
        CredOp::Setreuid { ruid, euid } => unit(t.setreuid(keep(*ruid), keep(*euid))),
        CredOp::Setregid { rgid, egid } => unit(t.setregid(keep(*rgid), keep(*egid))),
        CredOp::Setuid { uid } => unit(t.setuid(*uid)),
        CredOp::Setgid { gid } => unit(t.setgid(*gid)),
        CredOp::Setfsuid { uid } => Outcome::Ok(Value::Int(i64::from(t.setfsuid(*uid)))),
        CredOp::Setfsgid { gid } => Outcome::Ok(Value::Int(i64::from(t.setfsgid(*gid)))),
        CredOp::Getresuid => ids(t.getresuid()),
        CredOp::Getresgid => ids(t.getresgid()),
        CredOp::Setgroups { groups } => unit(t.setgroups(groups)),
        CredOp::Getgroups { size } => {
            let mut buf = vec![0u32; *size];
            match t.getgroups(&mut buf) {
                Ok(n) if *size == 0 => Outcome::Ok(Value::Int(n as i64)),
                Ok(n) => {
                    buf.truncate(n);
                    Outcome::Ok(Value::Cred(CredValue::Groups(buf)))
                }
                Err(e) => Outcome::Errno(e.raw()),
            }
        }
        CredOp::Capget => Outcome::Ok(Value::Cred(CredValue::Caps(masks(t.capget())))),
        CredOp::Capset(m) => unit(t.capset(sets(*m))),
        CredOp::CapChange { cap, which, raise } => {
            let now = masks(t.capget());
            unit(t.capset(sets(now.changed(*cap, *which, *raise))))
        }
    }
}

/// `as UID GID GROUPS`, with the calls the host makes (`crate::host::become_user`).
pub(super) fn become_user(t: &Task, uid: u32, gid: u32, groups: &[u32]) -> uvfs::Result<()> {
    t.setgroups(groups)?;
    t.setresgid(Some(gid), Some(gid), Some(gid))?;
    t.setresuid(Some(uid), Some(uid), Some(uid))
}

/// One `CapXxx:` line of /proc/self/status.
fn status_caps(status: &str, key: &str) -> Option<Capabilities> {
    let line = status.lines().find_map(|l| l.strip_prefix(key))?;
    let bits = u64::from_str_radix(line.trim(), 16).ok()?;
    Some(Capabilities::from_bits_truncate(bits))
}

/// The credentials of the backend's root task: [`Cred::root`] with the capability sets a root
/// process started by this one has, which is what the host helper runs with. `execve` as root
/// makes the permitted and effective sets the bounding set plus the inheritable set (Linux:
/// `cap_bprm_creds_from_file()`), so a bounding set without, say, `CAP_SYS_RESOURCE` (as in
/// some containers) takes it from both sides. Plain [`Cred::root`] if /proc is unreadable.
pub(super) fn root_cred() -> Cred {
    let mut c = Cred::root();
    let Ok(status) = std::fs::read_to_string("/proc/self/status") else {
        return c;
    };
    if let (Some(inh), Some(bnd)) = (
        status_caps(&status, "CapInh:"),
        status_caps(&status, "CapBnd:"),
    ) {
        c.bounding = bnd;
        c.inheritable = inh;
        c.permitted = bnd | inh;
        c.caps = c.permitted;
    }
    c
}
