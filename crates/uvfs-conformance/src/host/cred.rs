//! The credential ops ([`CredOp`]) on the host: raw system calls through `syscall(2)`.
//!
//! Linux keeps credentials per thread, and the kernel's `set*id`, `setgroups` and `capset`
//! change only the calling thread's; glibc's wrappers of the `set*id` calls signal every other
//! thread of the process to make the same change (POSIX's per-process semantics). The raw calls
//! used here act on the calling thread as the kernel defines them, which is what uvfs's
//! per-[`Task`](uvfs::Task) calls mirror. The helper process has a single thread, so the two
//! agree anyway; `as` (`super::become_user`) uses the same raw calls.

use libc::c_long;

use super::sys::{self, SysResult};
use crate::op::cred::{CapMasks, CredOp, CredValue, CAPABILITY_VERSION_3};
use crate::outcome::{Outcome, Value};

/// `struct __user_cap_header_struct`.
#[repr(C)]
struct CapHeader {
    version: u32,
    pid: i32,
}

/// `struct __user_cap_data_struct`; version 3 takes two, low and high 32 bits of each set.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

fn result(r: c_long) -> SysResult {
    if r == -1 {
        Err(std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO))
    } else {
        Ok(r)
    }
}

/// A call whose arguments are all integers.
fn ints(nr: c_long, a: [u32; 3]) -> SysResult {
    // SAFETY: no argument is a pointer; the kernel reads three integers (ignoring the unused
    // ones).
    result(unsafe {
        libc::syscall(
            nr,
            c_long::from(a[0]),
            c_long::from(a[1]),
            c_long::from(a[2]),
        )
    })
}

/// `getresuid(2)`/`getresgid(2)` (`nr`): the three ids.
fn getres(nr: c_long) -> Result<[u32; 3], i32> {
    let mut ids = [0u32; 3];
    let [r, e, s] = &mut ids;
    // SAFETY: each pointer is a live, writable `u32` (`uid_t`/`gid_t`), distinct from the
    // others.
    result(unsafe { libc::syscall(nr, r as *mut u32, e as *mut u32, s as *mut u32) })?;
    Ok(ids)
}

/// `getgroups(2)` with a buffer of `size` groups.
fn getgroups(size: usize) -> Result<Value, i32> {
    let mut buf = vec![0u32; size];
    let n = c_long::from(i32::try_from(size).unwrap_or(i32::MAX));
    // SAFETY: `buf` holds `size` writable `gid_t`s and the kernel writes at most `n <= size`.
    let got = result(unsafe { libc::syscall(libc::SYS_getgroups, n, buf.as_mut_ptr()) })?;
    if size == 0 {
        return Ok(Value::Int(got));
    }
    buf.truncate(usize::try_from(got).unwrap_or(0));
    Ok(Value::Cred(CredValue::Groups(buf)))
}

fn header() -> CapHeader {
    CapHeader {
        version: CAPABILITY_VERSION_3,
        pid: 0,
    }
}

/// `capget(2)` on the calling thread.
fn capget() -> Result<CapMasks, i32> {
    let mut h = header();
    let mut d = [CapData::default(); 2];
    // SAFETY: `h` is a readable and writable header (the kernel writes its preferred version
    // back on a mismatch); `d` holds the two data structs version 3 writes.
    result(unsafe { libc::syscall(libc::SYS_capget, &mut h as *mut CapHeader, d.as_mut_ptr()) })?;
    let join = |lo: u32, hi: u32| u64::from(lo) | (u64::from(hi) << 32);
    Ok(CapMasks {
        effective: join(d[0].effective, d[1].effective),
        permitted: join(d[0].permitted, d[1].permitted),
        inheritable: join(d[0].inheritable, d[1].inheritable),
    })
}

/// `capset(2)` on the calling thread.
fn capset(m: CapMasks) -> SysResult {
    let mut h = header();
    let split = |v: u64, half: u32| (v >> (32 * half)) as u32;
    let d: [CapData; 2] = [0, 1].map(|half| CapData {
        effective: split(m.effective, half),
        permitted: split(m.permitted, half),
        inheritable: split(m.inheritable, half),
    });
    // SAFETY: `h` is a live header and `d` the two data structs version 3 reads.
    result(unsafe { libc::syscall(libc::SYS_capset, &mut h as *mut CapHeader, d.as_ptr()) })
}

fn unit(r: SysResult) -> Outcome {
    match r {
        Ok(_) => Outcome::Ok(Value::Unit),
        Err(e) => Outcome::Errno(e),
    }
}

fn done(r: Result<Value, i32>) -> Outcome {
    match r {
        Ok(v) => Outcome::Ok(v),
        Err(e) => Outcome::Errno(e),
    }
}

/// Runs `op` on the calling thread.
pub fn run(op: &CredOp) -> Outcome {
    let ids = |r: Result<[u32; 3], i32>| done(r.map(|i| Value::Cred(CredValue::Ids(i))));
    match op {
        CredOp::Setresuid { ruid, euid, suid } => {
            unit(ints(libc::SYS_setresuid, [*ruid, *euid, *suid]))
        }
        CredOp::Setresgid { rgid, egid, sgid } => {
            unit(ints(libc::SYS_setresgid, [*rgid, *egid, *sgid]))
        }
        CredOp::Setreuid { ruid, euid } => unit(ints(libc::SYS_setreuid, [*ruid, *euid, 0])),
        CredOp::Setregid { rgid, egid } => unit(ints(libc::SYS_setregid, [*rgid, *egid, 0])),
        CredOp::Setuid { uid } => unit(ints(libc::SYS_setuid, [*uid, 0, 0])),
        CredOp::Setgid { gid } => unit(ints(libc::SYS_setgid, [*gid, 0, 0])),
        CredOp::Setfsuid { uid } => done(ints(libc::SYS_setfsuid, [*uid, 0, 0]).map(Value::Int)),
        CredOp::Setfsgid { gid } => done(ints(libc::SYS_setfsgid, [*gid, 0, 0]).map(Value::Int)),
        CredOp::Getresuid => ids(getres(libc::SYS_getresuid)),
        CredOp::Getresgid => ids(getres(libc::SYS_getresgid)),
        CredOp::Setgroups { groups } => unit(sys::setgroups(groups)),
        CredOp::Getgroups { size } => done(getgroups(*size)),
        CredOp::Capget => done(capget().map(|m| Value::Cred(CredValue::Caps(m)))),
        CredOp::Capset(m) => unit(capset(*m)),
        CredOp::CapChange { cap, which, raise } => {
            unit(capget().and_then(|m| capset(m.changed(*cap, *which, *raise))))
        }
    }
}
