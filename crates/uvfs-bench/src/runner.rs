//! Runs the suite: every configuration on every column, interleaved (A B C A B C …) so that
//! machine drift hits all columns alike.

use std::io::Write;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;
use serde_json::json;

use crate::column::{Column, Support};
use crate::find::Tree;
use crate::machine::{cache_line_round_trip, LineSample, Machine};
use crate::params::{grid, MessagingGrid, Params, Workload};
use crate::stats::Summary;
use crate::watch::Watch;

/// What to run.
#[derive(Clone, Debug)]
pub struct Options {
    /// Workloads, in order.
    pub workloads: Vec<Workload>,
    /// Tiny counts: a smoke pass.
    pub quick: bool,
    /// Samples per configuration and column.
    pub iterations: usize,
    /// Thread counts of multi-thread workloads.
    pub threads: Vec<usize>,
    /// Thread counts of `sysfs-open-read` ([`crate::sysfs::thread_counts`]).
    pub sysfs_threads: Vec<usize>,
    /// Group counts and loops of `messaging`.
    pub messaging: MessagingGrid,
    /// The watch scenarios of `write1-watch`, in order.
    pub watches: Vec<Watch>,
}

impl Options {
    /// A smoke pass of `workloads` (`--quick`, 2 samples) on `threads` threads (`sysfs-open-read`
    /// too), `messaging`'s quick grid and every watch scenario.
    pub fn smoke(workloads: Vec<Workload>, threads: Vec<usize>) -> Options {
        Options {
            workloads,
            quick: true,
            iterations: 2,
            sysfs_threads: threads.clone(),
            threads,
            messaging: MessagingGrid::default_for(true),
            watches: Watch::ALL.to_vec(),
        }
    }

    /// The thread counts of `w`.
    fn threads_of(&self, w: Workload) -> &[usize] {
        match w {
            Workload::SysfsOpenRead => &self.sysfs_threads,
            _ => &self.threads,
        }
    }

    /// Target wall time of one sample.
    fn sample_time(&self) -> Duration {
        if self.quick {
            Duration::from_millis(2)
        } else {
            Duration::from_millis(80)
        }
    }
}

/// One column's results for one configuration.
#[derive(Clone, Debug, Serialize)]
pub struct ColumnResult {
    /// Column name.
    pub column: &'static str,
    /// Why it did not run, if it did not.
    pub skipped: Option<String>,
    /// The error that stopped it, if any.
    pub error: Option<String>,
    /// ns per operation per thread, one per iteration.
    pub samples: Vec<f64>,
    /// Operations per thread in each sample.
    pub ops: u64,
    /// Summary of `samples`.
    pub summary: Option<Summary>,
}

/// Results of one configuration.
#[derive(Clone, Debug, Serialize)]
pub struct ConfigResult {
    /// The configuration.
    pub params: Params,
    /// One entry per column, in column order.
    pub columns: Vec<ColumnResult>,
}

/// Resource use of one column over the whole run.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Duration3 {
    /// User CPU seconds (this process and the children it waited for).
    pub user_s: f64,
    /// System CPU seconds.
    pub system_s: f64,
    /// Wall seconds.
    pub elapsed_s: f64,
}

/// Everything a run produced.
#[derive(Clone, Debug, Serialize)]
pub struct RunResult {
    /// The machine.
    pub machine: Machine,
    /// Cache-line round trip before the run.
    pub line_before: LineSample,
    /// Cache-line round trip after the run.
    pub line_after: LineSample,
    /// Column names in table order.
    pub column_names: Vec<&'static str>,
    /// What each column leaves out.
    pub notes: Vec<&'static str>,
    /// Per workload, its configurations.
    pub workloads: Vec<(Workload, Vec<ConfigResult>)>,
    /// Per column, its resource use.
    pub durations: Vec<(&'static str, Duration3)>,
    /// True if any column failed on any configuration.
    pub failed: bool,
}

/// User and system CPU seconds of a process (`self` or a pid) and its waited-for children,
/// from `/proc/<pid>/stat` (`utime`, `stime`, `cutime`, `cstime`, in clock ticks).
fn cpu_times_of(pid: Option<u32>) -> (f64, f64) {
    let file = match pid {
        Some(p) => format!("/proc/{p}/stat"),
        None => "/proc/self/stat".to_string(),
    };
    let Ok(stat) = std::fs::read_to_string(file) else {
        return (0.0, 0.0);
    };
    // Fields after the parenthesised command name; utime is field 14 of the whole line.
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<f64> = rest
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0.0))
        .collect();
    let hz = rustix::param::clock_ticks_per_second() as f64;
    let g = |i: usize| f.get(i).copied().unwrap_or(0.0) / hz;
    // `rest` starts at field 3 (state): utime = 14 -> index 11.
    (g(11) + g(13), g(12) + g(14))
}

/// Runs `opts` on `columns`, writing every sample to `json` as it is taken.
///
/// # Errors
/// Only for failures to write `json`; a failing column is recorded in the result.
pub fn run(
    opts: &Options,
    columns: &mut [Box<dyn Column>],
    progress: &ProgressBar,
    mut json: Option<&mut dyn Write>,
) -> anyhow::Result<RunResult> {
    let machine = Machine::read();
    progress.set_message("measuring the cache-line round trip");
    let line_before = cache_line_round_trip();
    if let Some(j) = json.as_deref_mut() {
        writeln!(
            j,
            "{}",
            json!({"type": "machine", "machine": machine, "line_before": line_before})
        )?;
    }
    let configs: Vec<Params> = opts
        .workloads
        .iter()
        .flat_map(|&w| {
            grid(
                w,
                opts.threads_of(w),
                Tree::default_for(opts.quick),
                &opts.messaging,
                &opts.watches,
            )
        })
        .collect();
    let steps = configs.len() as u64 * columns.len() as u64 * (opts.iterations as u64 + 1);
    progress.set_length(steps);
    progress.set_style(
        ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let mut durations: Vec<Duration3> = vec![Duration3::default(); columns.len()];
    let mut failed = false;
    let mut results: Vec<(Workload, Vec<ConfigResult>)> = Vec::new();
    for p in &configs {
        let mut col_results: Vec<ColumnResult> = Vec::new();
        let mut ops = vec![0u64; columns.len()];
        // Set up and calibrate every column, untimed in the results.
        for (ci, c) in columns.iter_mut().enumerate() {
            progress.set_message(format!(
                "{} {} {} (setup)",
                p.workload.name(),
                p.label(),
                c.name()
            ));
            let mut r = ColumnResult {
                column: c.name(),
                skipped: None,
                error: None,
                samples: Vec::new(),
                ops: 0,
                summary: None,
            };
            match c.supports(p) {
                Support::No(why) => r.skipped = Some(why),
                Support::Yes => match c
                    .setup(p)
                    .and_then(|()| calibrate(c.as_mut(), p, opts.sample_time()))
                {
                    Ok(n) => ops[ci] = n,
                    Err(e) => {
                        r.error = Some(format!("{e:#}"));
                        failed = true;
                    }
                },
            }
            r.ops = ops[ci];
            progress.inc(1);
            col_results.push(r);
        }
        // Interleaved iterations.
        for it in 0..opts.iterations {
            for (ci, c) in columns.iter_mut().enumerate() {
                let r = &mut col_results[ci];
                if r.skipped.is_some() || r.error.is_some() {
                    progress.inc(1);
                    continue;
                }
                progress.set_message(format!(
                    "{} {} {} ({}/{})",
                    p.workload.name(),
                    p.label(),
                    c.name(),
                    it + 1,
                    opts.iterations
                ));
                let helper = c.helper_pid();
                let (u0, s0) = cpu_times_of(None);
                let (hu0, hs0) = helper.map_or((0.0, 0.0), |h| cpu_times_of(Some(h)));
                let w0 = Instant::now();
                let res = c.run(p, ops[ci]);
                let (hu1, hs1) = helper.map_or((0.0, 0.0), |h| cpu_times_of(Some(h)));
                let (u1, s1) = cpu_times_of(None);
                durations[ci].user_s += hu1 - hu0;
                durations[ci].system_s += hs1 - hs0;
                durations[ci].user_s += u1 - u0;
                durations[ci].system_s += s1 - s0;
                durations[ci].elapsed_s += w0.elapsed().as_secs_f64();
                match res {
                    Ok(d) => {
                        let ns = d.as_nanos() as f64 / ops[ci] as f64;
                        r.samples.push(ns);
                        if let Some(j) = json.as_deref_mut() {
                            let line = json!({"type": "sample", "workload": p.workload, "params": p, "column": c.name(),
                                "iteration": it, "ops_per_thread": ops[ci], "threads": p.threads,
                                "elapsed_ns": d.as_nanos() as u64, "ns_per_op": ns});
                            writeln!(j, "{line}")?;
                        }
                    }
                    Err(e) => {
                        r.error = Some(format!("{e:#}"));
                        failed = true;
                    }
                }
                progress.inc(1);
            }
        }
        for (ci, c) in columns.iter_mut().enumerate() {
            c.teardown();
            let r = &mut col_results[ci];
            if !r.samples.is_empty() {
                r.summary = Some(Summary::of(&r.samples));
            }
        }
        let cr = ConfigResult {
            params: *p,
            columns: col_results,
        };
        match results.last_mut() {
            Some((w, v)) if *w == p.workload => v.push(cr),
            _ => results.push((p.workload, vec![cr])),
        }
    }
    progress.set_message("measuring the cache-line round trip");
    let line_after = cache_line_round_trip();
    let column_names = columns.iter().map(|c| c.name()).collect();
    let notes = columns.iter().map(|c| c.note()).collect();
    let durations = columns.iter().map(|c| c.name()).zip(durations).collect();
    let result = RunResult {
        machine,
        line_before,
        line_after,
        column_names,
        notes,
        workloads: results,
        durations,
        failed,
    };
    if let Some(j) = json {
        writeln!(j, "{}", json!({"type": "summary", "result": result}))?;
    }
    Ok(result)
}

/// Picks an operation count that makes one sample last about `target`: a multiple of
/// [`Params::ops_granule`] (whole walks for `find`), at least one granule
/// ([`crate::calibrate::iterations`]). A configuration of fixed work ([`Params::fixed_ops`]:
/// a `messaging` run) gets its count after one untimed warm-up run.
fn calibrate(c: &mut dyn Column, p: &Params, target: Duration) -> anyhow::Result<u64> {
    if let Some(ops) = p.fixed_ops() {
        c.run(p, ops)?;
        return Ok(ops);
    }
    crate::calibrate::iterations(target, p.ops_granule(), |ops| c.run(p, ops))
}
