//! How many iterations one sample runs: both runners (the seed workloads' and the scale
//! suite's) calibrate each column on each configuration with [`iterations`].

use std::time::Duration;

/// Most iterations a growing run tries before it scales whatever it measured.
const GROW_CAP: u64 = 1 << 26;

/// Picks an iteration count, a multiple of `granule`, that makes one `run` last about
/// `target`; the runs it takes are the warm-up. The count grows eightfold from 16 until a run
/// lasts `target / 4`, is scaled to `target`, and the scaled count is run once more: if that
/// run is shorter than `target / 4`, the run that fixed the count was slowed by something
/// other than its iterations (the first run of a configuration pays for cold caches and lazy
/// set-up; a thread may wait for a CPU), and growing goes on from the scaled count. Without
/// the check, a stall of a few milliseconds in a run of 16 iterations fixed a count of 56
/// for every sample of unlink1's first configuration: samples of 70 µs that measured the
/// threads' start, at 0.4x the rate of the loop itself.
///
/// # Errors
/// The first error of `run`.
pub fn iterations<E>(
    target: Duration,
    granule: u64,
    mut run: impl FnMut(u64) -> Result<Duration, E>,
) -> Result<u64, E> {
    let granule = granule.max(1);
    let scale = |ops: u64, d: Duration| {
        let scaled = (ops as f64 * target.as_secs_f64() / d.as_secs_f64().max(1e-9)) as u64;
        scaled.clamp(8, 1 << 28).next_multiple_of(granule)
    };
    let mut ops = 16u64.next_multiple_of(granule);
    loop {
        let d = run(ops)?;
        if d < target / 4 && ops < GROW_CAP {
            ops *= 8;
            continue;
        }
        let scaled = scale(ops, d);
        let check = run(scaled)?;
        if check >= target / 4 || scaled >= GROW_CAP {
            return Ok(scale(scaled, check));
        }
        ops = scaled.max(ops.saturating_mul(2));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TARGET: Duration = Duration::from_millis(50);

    /// A run of `ops` iterations at `ns_per_op`, plus `stall` on the runs `stalled` picks.
    fn fake(
        ns_per_op: u64,
        stall: Duration,
        stalled: impl Fn(usize) -> bool,
    ) -> impl FnMut(u64) -> Result<Duration, ()> {
        let mut n = 0;
        move |ops| {
            n += 1;
            let d = Duration::from_nanos(ops * ns_per_op);
            Ok(if stalled(n) { d + stall } else { d })
        }
    }

    #[test]
    fn a_steady_loop_gets_the_count_that_fills_the_target() {
        let ops = iterations(TARGET, 1, fake(500, Duration::ZERO, |_| false)).unwrap();
        assert_eq!(ops, 100_000, "50 ms at 500 ns");
    }

    /// The unlink1 case: a 13 ms stall on the first run of 16 iterations.
    #[test]
    fn a_stalled_first_run_does_not_fix_the_count() {
        let ops = iterations(TARGET, 1, fake(500, Duration::from_millis(13), |n| n == 1)).unwrap();
        assert!(
            (90_000..=110_000).contains(&ops),
            "about 100,000 iterations, not the ~60 the stall alone would give: {ops}"
        );
    }

    #[test]
    fn counts_are_whole_granules_and_errors_pass_through() {
        let ops = iterations(TARGET, 1000, fake(700, Duration::ZERO, |_| false)).unwrap();
        assert_eq!(ops % 1000, 0);
        assert!((70_000..=72_000).contains(&ops), "{ops}");
        let e = iterations(TARGET, 1, |_| Err::<Duration, &str>("no"));
        assert_eq!(e, Err("no"));
    }

    /// A loop so slow that even 16 iterations overshoot is scaled down, never below 8.
    #[test]
    fn a_slow_loop_is_scaled_down() {
        let ops = iterations(TARGET, 1, fake(10_000_000, Duration::ZERO, |_| false)).unwrap();
        assert_eq!(ops, 8);
    }
}
