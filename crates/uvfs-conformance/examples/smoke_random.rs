//! Runs random sequences on uvfs alone and counts outcomes: a quick check for panics and hangs.
use std::time::{Duration, Instant};
use uvfs_conformance::random::gen::{generate, Shape};
use uvfs_conformance::{run_on_uvfs, Outcome};
fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1000);
    let t = Instant::now();
    let (mut ok, mut err, mut aborted) = (0, 0, 0);
    let mut errnos = std::collections::BTreeMap::new();
    for seed in 0..n {
        let mut case = generate(
            seed,
            Shape {
                ops: 120,
                ticked_one_in: 0,
            },
        );
        case.timing = uvfs_conformance::parse::Timing::Burst;

        let run = run_on_uvfs(&case, Duration::from_secs(10));
        if let Some(why) = &run.aborted {
            aborted += 1;
            println!("seed {seed}: {why}");
        }
        for o in &run.outcomes {
            match o {
                Outcome::Ok(_) => ok += 1,
                Outcome::Errno(e) => {
                    err += 1;
                    *errnos.entry(*e).or_insert(0) += 1;
                }
            }
        }
    }
    println!(
        "{n} seeds in {:?}: ok {ok} err {err} aborted {aborted}",
        t.elapsed()
    );
    println!("{errnos:?}");
}
