//! How many iterations one sample runs: both runners (the seed workloads' and the scale
//! suite's) calibrate each column on each configuration with [`iterations`].

use std::time::Duration;

/// Most iterations a growing run tries before it scales whatever it measured.
const GROW_CAP: u64 = 1 << 26;

/// How many times the count is checked by running it before it is taken as it stands.
const MAX_CHECKS: usize = 6;

/// Picks an iteration count, a multiple of `granule`, that makes one `run` last about
/// `target`; the runs it takes are the warm-up. The count grows eightfold from 16 until a run
/// lasts `target / 4`; then it is scaled to `target` from the last run and run again, until a
/// run of the scaled count lasts between `target / 2` and `2 * target` (at most
/// [`MAX_CHECKS`] runs). One run does not decide: the first runs of a configuration pay for
/// what later ones do not (a write walking a new file allocates its pages; cold caches, lazy
/// set-up; a thread waiting for a CPU), and a count scaled from such a run is far too small.
/// Without the checks, unlink1's first configuration got 56 iterations (samples of 70 µs
/// that measured the threads' start, at 0.4x the loop's rate) and write1 on 16 copies 688
/// (samples of 2 ms at 0.4x).
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
    let mut d = run(ops)?;
    while d < target / 4 && ops < GROW_CAP {
        ops *= 8;
        d = run(ops)?;
    }
    let mut count = scale(ops, d);
    for _ in 0..MAX_CHECKS {
        let d = run(count)?;
        let next = scale(count, d);
        if d >= target / 2 && d <= target * 2 {
            return Ok(next);
        }
        count = next;
    }
    Ok(count)
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

    /// A costly start: the first 4096 iterations of the configuration (a file's pages being
    /// allocated) cost 20 times the rest.
    #[test]
    fn a_costly_start_does_not_fix_the_count() {
        let mut done = 0u64;
        let ops = iterations(TARGET, 1, |ops: u64| {
            let cold = ops.min(4096u64.saturating_sub(done));
            done += ops;
            Ok::<_, ()>(Duration::from_nanos(cold * 10_000 + (ops - cold) * 500))
        })
        .unwrap();
        assert!((90_000..=110_000).contains(&ops), "about 100,000: {ops}");
    }

    /// The write1 case in a whole `uvfs bench` run: the check of the count was slowed too
    /// (15 ms on a 50 ms target), so one check is not enough either.
    #[test]
    fn a_stalled_check_does_not_fix_the_count() {
        let stall = Duration::from_millis(15);
        let ops = iterations(TARGET, 1, fake(500, stall, |n| n <= 2)).unwrap();
        assert!((90_000..=110_000).contains(&ops), "about 100,000: {ops}");
    }

    /// A loop so slow that even 16 iterations overshoot is scaled down, never below 8.
    #[test]
    fn a_slow_loop_is_scaled_down() {
        let ops = iterations(TARGET, 1, fake(10_000_000, Duration::ZERO, |_| false)).unwrap();
        assert_eq!(ops, 8);
    }
}
