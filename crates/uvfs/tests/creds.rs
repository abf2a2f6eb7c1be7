//! The credential calls through the public API, without root or a host kernel.
//! Oracle: Linux's answers to the same sequences, pinned against the host by
//! `crates/uvfs-conformance/cases/creds.cases` (the case each test follows is named).

use uvfs::abi::{Errno, OpenFlags, AT_FDCWD};
use uvfs::sys::CapSets;
use uvfs::{Capabilities, Cred, Vfs};

const ALL: Capabilities = Capabilities::all();

#[test]
fn root_has_every_capability_up_to_cap_last_cap() {
    let t = Vfs::new().task(Cred::root());
    assert_eq!(ALL.bits(), (1 << (Capabilities::LAST_CAP + 1)) - 1);
    assert_eq!(
        t.capget(),
        CapSets {
            effective: ALL,
            permitted: ALL,
            inheritable: Capabilities::empty(),
        }
    );
    assert_eq!(Capabilities::from_number(41), None);
    assert_eq!(Capabilities::from_number(4), Some(Capabilities::FSETID));
}

/// creds_leaving_root_in_all_three_uids_clears_permitted_and_effective
#[test]
fn leaving_root_in_all_three_uids_clears_permitted_and_effective() {
    let t = Vfs::new().task(Cred::root());
    t.setresuid(Some(1000), Some(1000), Some(0))
        .expect("root may");
    let s = t.capget();
    assert_eq!((s.effective, s.permitted), (Capabilities::empty(), ALL));
    t.setresuid(None, Some(0), None).expect("saved uid is 0");
    assert_eq!(
        t.capget().effective,
        ALL,
        "euid 0 again: effective = permitted"
    );
    t.setresuid(Some(1000), Some(1000), Some(1000))
        .expect("root may");
    let s = t.capget();
    assert_eq!(
        (s.effective, s.permitted),
        (Capabilities::empty(), Capabilities::empty())
    );
    assert_eq!(t.setresuid(None, Some(0), None), Err(Errno::EPERM));
    assert_eq!(t.getresuid(), (1000, 1000, 1000));
}

/// creds_fsuid_leaving_zero_drops_fs_caps_and_returning_raises_permitted_ones and
/// creds_setresuid_resets_fsuid_without_raising_fs_caps
#[test]
fn fsuid_moves_the_fs_capabilities_and_setresuid_does_not_bring_them_back() {
    let t = Vfs::new().task(Cred::root());
    assert_eq!(t.setfsuid(1000), 0);
    assert_eq!(t.capget().effective, ALL - Capabilities::FS_MASK);
    assert!(Capabilities::FS_MASK.contains(Capabilities::MAC_OVERRIDE | Capabilities::MKNOD));
    assert_eq!(t.setfsuid(0), 1000);
    assert_eq!(t.capget().effective, ALL);
    t.setfsuid(1000);
    t.setresuid(None, Some(0), None)
        .expect("euid 0 is no change");
    assert_eq!(t.setfsuid(u32::MAX), 0, "the fsuid followed the euid");
    assert_eq!(t.capget().effective, ALL - Capabilities::FS_MASK);
}

/// creds_capset_may_shrink_but_never_grow_permitted and
/// creds_capset_inheritable_needs_permitted_or_cap_setpcap
#[test]
fn capset_only_shrinks_permitted_and_caps_inheritable() {
    let t = Vfs::new().task(Cred::root());
    let chown = Capabilities::CHOWN;
    let set = |e, p, i| {
        t.capset(CapSets {
            effective: e,
            permitted: p,
            inheritable: i,
        })
    };
    let none = Capabilities::empty();
    set(chown, chown | Capabilities::KILL, none).expect("shrinks");
    assert_eq!(set(chown, ALL, none), Err(Errno::EPERM), "permitted grows");
    assert_eq!(
        set(Capabilities::FOWNER, chown, none),
        Err(Errno::EPERM),
        "effective outside permitted"
    );
    assert_eq!(
        set(none, chown, Capabilities::SYS_ADMIN),
        Err(Errno::EPERM),
        "inheritable outside permitted without CAP_SETPCAP"
    );
    set(none, chown, chown).expect("inheritable within permitted");
    assert_eq!(t.capget().inheritable, chown);
}

/// creds_setgroups_sorts_and_getgroups_checks_the_size and
/// creds_setgroups_needs_cap_setgid_before_its_size_check
#[test]
fn setgroups_sorts_checks_and_needs_cap_setgid() {
    let t = Vfs::new().task(Cred::root());
    t.setgroups(&[30, 10, 20]).expect("root may");
    let mut buf = [0u32; 3];
    assert_eq!(t.getgroups(&mut buf), Ok(3));
    assert_eq!(buf, [10, 20, 30]);
    assert_eq!(t.getgroups(&mut []), Ok(3));
    assert_eq!(t.getgroups(&mut [0u32; 2]), Err(Errno::EINVAL));
    let many: Vec<u32> = (1..=65537).collect();
    assert_eq!(t.setgroups(&many), Err(Errno::EINVAL));
    assert_eq!(t.setgroups(&[1, u32::MAX]), Err(Errno::EINVAL));
    let user = Vfs::new().task(Cred::user(1000, 1000, &[]));
    assert_eq!(user.setgroups(&many), Err(Errno::EPERM));
}

/// creds_fsuid_owns_new_files_and_is_checked_instead_of_euid
#[test]
fn fsuid_and_fsgid_own_new_files() {
    let vfs = Vfs::new();
    let t = vfs.task(Cred::root());
    t.setfsuid(1000);
    t.setfsgid(2000);
    let fd = t
        .openat(AT_FDCWD, "/f", OpenFlags::CREAT | OpenFlags::WRONLY, 0o600)
        .expect("create");
    let st = t.fstat(fd).expect("fstat");
    assert_eq!((st.uid, st.gid), (1000, 2000));
    assert_eq!(t.getresuid(), (0, 0, 0));
}
