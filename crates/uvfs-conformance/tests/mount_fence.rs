//! The mount fence makes the host's answer to a 40-symlink walk independent of mounts made by
//! the suite's other helpers (src/host/fence.rs says why it was not). Oracle: Linux resolves a
//! chain of exactly 40 symlinks (`MAXSYMLINKS`), so every `stat` of the chain's end succeeds.
//!
//! One host server stats the end of a 40-link chain over and over while another mounts and
//! unmounts tmpfs in its own sandbox as fast as it can. Without the fence about one such
//! `stat` in a few dozen fails with `ELOOP`. Needs root (says `skipped: why` otherwise).

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread;

use uvfs_conformance::op::Fd;
use uvfs_conformance::parse::Timing;
use uvfs_conformance::{Case, HostServer, Op, Outcome, Step, Value};

const HELPER: &str = env!("CARGO_BIN_EXE_uvfs-conformance-host");
const ROUNDS: usize = 40;
const STATS_PER_ROUND: usize = 25;
const AT_FDCWD: Fd = Fd::Raw(-100);

fn chain_case() -> Case {
    let mut c = Case::new("fence_chain");
    c.timing = Timing::Burst;
    c.steps.push(Step::new(
        Op::Open {
            path: b"/f".to_vec(),
            flags: 0o101,
            mode: 0o644,
        },
        None,
    ));
    c.steps.push(Step::new(
        Op::Symlink {
            target: b"f".to_vec(),
            path: b"/c1".to_vec(),
        },
        None,
    ));
    for i in 2..=40 {
        c.steps.push(Step::new(
            Op::Symlink {
                target: format!("c{}", i - 1).into_bytes(),
                path: format!("/c{i}").into_bytes(),
            },
            None,
        ));
    }
    for _ in 0..STATS_PER_ROUND {
        c.steps.push(Step::new(
            Op::Fstatat {
                dirfd: AT_FDCWD,
                path: b"/c40".to_vec(),
                flags: 0,
            },
            None,
        ));
    }
    c
}

fn mount_case() -> Case {
    let mut c = Case::new("fence_mounter");
    c.timing = Timing::Burst;
    c.steps.push(Step::new(
        Op::Mkdirat {
            dirfd: AT_FDCWD,
            path: b"/m".to_vec(),
            mode: 0o755,
        },
        None,
    ));
    for _ in 0..30 {
        c.steps.push(Step::new(
            Op::Mount {
                src: Some(b"tmpfs".to_vec()),
                target: b"/m".to_vec(),
                fstype: Some("tmpfs".into()),
                flags: 0,
                data: None,
            },
            None,
        ));
        c.steps.push(Step::new(
            Op::Umount2 {
                target: b"/m".to_vec(),
                flags: 0,
            },
            None,
        ));
    }
    c
}

#[test]
fn forty_link_walks_resolve_while_other_helpers_mount() {
    let is_root = std::fs::read_to_string("/proc/self/status")
        .map(|s| s.lines().any(|l| l.starts_with("Uid:\t0\t")))
        .unwrap_or(false);
    if !is_root {
        println!("skipped: the host sandbox needs root");
        return;
    }
    let (chain, mounter) = (chain_case(), mount_case());
    let first_stat = chain.steps.len() - STATS_PER_ROUND + 1;
    let done = AtomicBool::new(false);
    let mount_rounds = AtomicUsize::new(0);
    let (checked, eloop) = thread::scope(|s| {
        s.spawn(|| {
            let mut server = HostServer::spawn_at(Path::new(HELPER)).expect("helper starts");
            while !done.load(Ordering::Relaxed) {
                let run = server.run(&mounter);
                assert!(run.aborted.is_none(), "{:?}", run.aborted);
                assert!(
                    run.outcomes.iter().all(|o| matches!(o, Outcome::Ok(_))),
                    "the mounter's mounts work: {:?}",
                    run.outcomes
                );
                mount_rounds.fetch_add(1, Ordering::Relaxed);
            }
        });
        let walker = s.spawn(|| {
            let result = std::panic::catch_unwind(|| {
                let mut server = HostServer::spawn_at(Path::new(HELPER)).expect("helper starts");
                let (mut checked, mut eloop) = (0, 0);
                for _ in 0..ROUNDS {
                    let run = server.run(&chain);
                    assert!(run.aborted.is_none(), "{:?}", run.aborted);
                    for o in &run.outcomes[first_stat..] {
                        checked += 1;
                        match o {
                            Outcome::Ok(Value::Stat(_)) => {}
                            Outcome::Errno(libc::ELOOP) => eloop += 1,
                            other => panic!("stat /c40: {other:?}"),
                        }
                    }
                }
                (checked, eloop)
            });
            done.store(true, Ordering::Relaxed);
            result.unwrap_or_else(|p| std::panic::resume_unwind(p))
        });
        walker.join().expect("the walker does not panic")
    });
    let mounts = mount_rounds.load(Ordering::Relaxed);
    println!("{checked} stats of a 40-link chain beside {mounts} mounting cases: {eloop} ELOOP");
    assert_eq!(checked, ROUNDS * STATS_PER_ROUND);
    assert!(mounts > 0, "the mounter ran beside the walker");
    assert_eq!(eloop, 0, "a mount elsewhere cut a 40-link walk short");
}
