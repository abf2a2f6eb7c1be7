//! Measures the host server's throughput on the shape of case the random tester sends: 120
//! ops over a small name space in burst timing, a `snapshot` after every op. Prints the time
//! per case on the host (through `HostServer`) and on uvfs, next to each other.
//!
//! `cargo run --release -p uvfs-conformance --example serve_throughput [CASES]` (as root).

use std::time::{Duration, Instant};

use uvfs_conformance::op::{Fd, Offset};
use uvfs_conformance::parse::Timing;
use uvfs_conformance::{run_on_uvfs, Case, HostServer, Op, Step};

/// A deterministic 120-op case over names a..d in / and /d, with a snapshot after each op.
fn case(seed: u64) -> Case {
    let mut c = Case::new(format!("throughput_{seed}"));
    c.timing = Timing::Burst;
    let mut x = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let mut next = |n: u64| {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (x >> 33) % n
    };
    let names = [
        b"/a".to_vec(),
        b"/b".to_vec(),
        b"/d/c".to_vec(),
        b"/d/a".to_vec(),
    ];
    c.steps.push(Step::new(
        Op::Mkdirat {
            dirfd: Fd::Raw(-100),
            path: b"/d".to_vec(),
            mode: 0o755,
        },
        None,
    ));
    c.steps.push(Step::new(Op::Snapshot, None));
    for _ in 0..119 {
        let p = names[next(4) as usize].clone();
        let q = names[next(4) as usize].clone();
        let op = match next(8) {
            0 => Op::Open {
                path: p,
                flags: 0o102,
                mode: 0o644,
            },
            1 => Op::Unlinkat {
                dirfd: Fd::Raw(-100),
                path: p,
                flags: 0,
            },
            2 => Op::Renameat2 {
                olddirfd: Fd::Raw(-100),
                old: p,
                newdirfd: Fd::Raw(-100),
                new: q,
                flags: 0,
            },
            3 => Op::Symlink { target: q, path: p },
            4 => Op::Fchmodat {
                dirfd: Fd::Raw(-100),
                path: p,
                mode: 0o600,
                flags: 0,
            },
            5 => Op::Truncate { path: p, len: 7 },
            6 => Op::Lseek {
                fd: Fd::Raw(0),
                off: Offset::Raw(3),
                whence: 0,
            },
            _ => Op::Pwrite {
                fd: Fd::Raw(next(3) as i32),
                data: b"data".to_vec(),
                off: next(10) as i64,
            },
        };
        c.steps.push(Step::new(op, None));
        c.steps.push(Step::new(Op::Snapshot, None));
    }
    c.check().expect("the generated case is well-formed");
    c
}

/// CPU time (user + system) of this process and of its reaped children, from
/// `/proc/self/stat` (in clock ticks of 10 ms).
fn cpu() -> (Duration, Duration) {
    let stat = std::fs::read_to_string("/proc/self/stat").expect("/proc is mounted");
    // The fields after the command name (which ends with the last `)`), from field 3 on.
    let f: Vec<u64> = stat[stat.rfind(')').expect("a stat line") + 2..]
        .split(' ')
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    let tick = |t: u64| Duration::from_millis(t * 10);
    (tick(f[11] + f[12]), tick(f[13] + f[14]))
}

/// Runs `cases` on a fresh server: wall time, CPU time of this process (reading the results)
/// and CPU time of the server and everything it forked (the host side proper).
fn time_host(cases: &[Case]) -> (Duration, Duration, Duration) {
    let mut server = HostServer::spawn().expect("the host helper starts (run as root)");
    let (self0, kids0) = cpu();
    let start = Instant::now();
    for c in cases {
        let run = server.run(c);
        assert!(run.aborted.is_none(), "{}: {:?}", c.name, run.aborted);
        assert_eq!(run.outcomes.len(), c.steps.len() + 1);
    }
    let wall = start.elapsed();
    drop(server);
    let (self1, kids1) = cpu();
    (wall, self1 - self0, kids1 - kids0)
}

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(100);
    let per = |d: Duration| d.as_secs_f64() * 1000.0 / n as f64;
    let full: Vec<Case> = (0..n).map(case).collect();
    let empty: Vec<Case> = full.iter().map(|c| Case::new(c.name.clone())).collect();
    let ops_only: Vec<Case> = full
        .iter()
        .map(|c| {
            let mut c = c.clone();
            c.steps.retain(|s| s.op != Op::Snapshot);
            c
        })
        .collect();
    println!(
        "{n} cases; per case: wall ms / CPU ms of the host helper processes / CPU ms reading results"
    );
    let only = std::env::var("ONLY").ok();
    for (name, cases) in [
        ("no ops (sandbox setup and teardown)", &empty),
        ("120 ops", &ops_only),
        ("120 ops, a snapshot after each", &full),
    ] {
        if only.as_deref().is_some_and(|o| !name.starts_with(o)) {
            continue;
        }
        let (wall, me, host) = time_host(cases);
        println!(
            "  host {name:40} {:6.2} / {:6.2} / {:5.2}",
            per(wall),
            per(host),
            per(me)
        );
    }
    let (me0, _) = cpu();
    let start = Instant::now();
    for c in &full {
        let run = run_on_uvfs(c, Duration::from_secs(10));
        assert!(run.aborted.is_none(), "{}: {:?}", c.name, run.aborted);
    }
    let (me1, _) = cpu();
    println!(
        "  uvfs {:40} {:6.2} / {:6.2} (in process)",
        "120 ops, a snapshot after each",
        per(start.elapsed()),
        per(me1 - me0)
    );
}
