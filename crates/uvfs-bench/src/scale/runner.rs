//! Runs the scale suite: every configuration on both columns, the columns alternating sample
//! by sample (host uvfs host uvfs …) so that machine drift hits them alike, as the seed
//! workloads' runner does, and the copy counts of one testcase and mode taking their samples
//! in turn too (1 2 4 16 1 2 4 16 …), so that drift hits the speed-ups alike.

use std::io::Write;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;
use serde_json::json;

use super::testcase::{NotYet, Testcase, NOT_YET};
use super::{Config, Mode, ScaleColumn};
use crate::column::Support;
use crate::machine::{cache_line_round_trip, LineSample, Machine};
use crate::stats::Summary;

/// What to run.
#[derive(Clone, Debug)]
pub struct ScaleOptions {
    /// Testcases, in order.
    pub testcases: Vec<Testcase>,
    /// Modes, in order.
    pub modes: Vec<Mode>,
    /// Copy counts, ascending, starting at 1.
    pub copies: Vec<usize>,
    /// Samples per configuration and column.
    pub iterations: usize,
    /// Target wall time of one sample.
    pub sample_time: Duration,
}

impl ScaleOptions {
    /// Every testcase, both modes, `copies` copies; sample length and count for a smoke pass
    /// (`quick`) or a measurement.
    pub fn new(
        testcases: Vec<Testcase>,
        modes: Vec<Mode>,
        copies: Vec<usize>,
        quick: bool,
    ) -> Self {
        ScaleOptions {
            testcases,
            modes,
            copies,
            iterations: if quick { 2 } else { 10 },
            sample_time: if quick {
                Duration::from_millis(2)
            } else {
                Duration::from_millis(50)
            },
        }
    }

    /// The configurations, in run order: testcase, then mode, then copies.
    pub fn configs(&self) -> Vec<Config> {
        let mut v = Vec::new();
        for &testcase in &self.testcases {
            for &mode in &self.modes {
                for &copies in &self.copies {
                    v.push(Config {
                        testcase,
                        mode,
                        copies,
                    });
                }
            }
        }
        v
    }
}

/// One column's results for one configuration.
#[derive(Clone, Debug, Serialize)]
pub struct ScaleColumnResult {
    /// Column name.
    pub column: &'static str,
    /// Why it did not run, if it did not.
    pub skipped: Option<String>,
    /// The error that stopped it, if any.
    pub error: Option<String>,
    /// Iterations per copy in each sample.
    pub ops_per_copy: u64,
    /// Operations per second summed over the copies, one per sample.
    pub samples: Vec<f64>,
    /// Summary of `samples`.
    pub summary: Option<Summary>,
}

/// Results of one configuration.
#[derive(Clone, Debug, Serialize)]
pub struct ScaleRow {
    /// The configuration.
    pub config: Config,
    /// One entry per column, in column order.
    pub columns: Vec<ScaleColumnResult>,
}

/// Everything a scale run produced.
#[derive(Clone, Debug, Serialize)]
pub struct ScaleResult {
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
    /// One row per configuration, in run order.
    pub rows: Vec<ScaleRow>,
    /// The will-it-scale testcases not run, and what they wait for.
    pub not_yet: Vec<NotYet>,
    /// True if any column failed on any configuration.
    pub failed: bool,
}

/// Runs `opts` on `columns`, writing every sample to `json` as it is taken.
///
/// # Errors
/// Only for failures to write `json`; a failing column is recorded in the result.
pub fn run_scale(
    opts: &ScaleOptions,
    columns: &mut [Box<dyn ScaleColumn>],
    progress: &ProgressBar,
    mut json: Option<&mut dyn Write>,
) -> anyhow::Result<ScaleResult> {
    let machine = Machine::read();
    progress.set_message("measuring the cache-line round trip");
    let line_before = cache_line_round_trip();
    if let Some(j) = json.as_deref_mut() {
        let line = json!({"type": "machine", "machine": machine, "line_before": line_before});
        writeln!(j, "{line}")?;
    }
    let configs = opts.configs();
    let steps = configs.len() as u64 * columns.len() as u64 * (opts.iterations as u64 + 1);
    progress.set_position(0);
    progress.set_length(steps);
    progress.set_style(
        ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let mut failed = false;
    let mut rows = Vec::new();
    // One group per testcase and mode: its copy counts share one setup and take their
    // samples in turn, so that the speed-ups (ratios between copy counts) are measured under
    // the same drift of the machine as the columns' ratio is.
    for group in configs.chunk_by(|a, b| a.testcase == b.testcase && a.mode == b.mode) {
        // `results[k][c]`: column `c` on the group's `k`th copy count.
        let mut results: Vec<Vec<ScaleColumnResult>> = group
            .iter()
            .map(|_| {
                columns
                    .iter()
                    .map(|c| ScaleColumnResult {
                        column: c.name(),
                        skipped: None,
                        error: None,
                        ops_per_copy: 0,
                        samples: Vec::new(),
                        summary: None,
                    })
                    .collect()
            })
            .collect();
        // Set up every column once, for the largest copy count (a plan for fewer copies is
        // part of it: each copy uses only its own files, and the limits fit the most copies),
        // and calibrate each copy count (the warm-up), untimed in the results.
        for (ci, c) in columns.iter_mut().enumerate() {
            let supported: Vec<bool> = group
                .iter()
                .zip(results.iter_mut())
                .map(|(cfg, rs)| match c.supports(cfg) {
                    Support::No(why) => {
                        rs[ci].skipped = Some(why);
                        false
                    }
                    Support::Yes => true,
                })
                .collect();
            if !supported.contains(&true) {
                progress.inc(group.len() as u64);
                continue;
            }
            // The largest copy count this column runs (a column may refuse the largest).
            let largest = group
                .iter()
                .zip(&supported)
                .filter(|(_, ok)| **ok)
                .map(|(cfg, _)| *cfg)
                .max_by_key(|c| c.copies)
                .expect("one copy count is supported (checked above)");
            progress.set_message(format!(
                "scale {} {} {} (setup)",
                largest.testcase.name(),
                largest.mode.name(),
                c.name()
            ));
            let set_up = c.setup(&largest);
            for ((cfg, rs), ok) in group.iter().zip(results.iter_mut()).zip(&supported) {
                progress.inc(1);
                if !ok {
                    continue;
                }
                match set_up
                    .as_ref()
                    .map_err(|e| anyhow::anyhow!("{e:#}"))
                    .and_then(|()| calibrate(c.as_mut(), cfg, opts.sample_time))
                {
                    Ok(n) => rs[ci].ops_per_copy = n,
                    Err(e) => {
                        rs[ci].error = Some(format!("{e:#}"));
                        failed = true;
                    }
                }
            }
        }
        // Interleaved samples: copy counts in turn, and within each the columns in turn.
        for it in 0..opts.iterations {
            for (cfg, rs) in group.iter().zip(results.iter_mut()) {
                for (c, r) in columns.iter_mut().zip(rs.iter_mut()) {
                    progress.inc(1);
                    if r.skipped.is_some() || r.error.is_some() {
                        continue;
                    }
                    progress.set_message(format!(
                        "scale {} {} copies={} {} ({}/{})",
                        cfg.testcase.name(),
                        cfg.mode.name(),
                        cfg.copies,
                        c.name(),
                        it + 1,
                        opts.iterations
                    ));
                    match c.run(cfg, r.ops_per_copy) {
                        Ok(run) => {
                            let ops_per_s = run.ops as f64 / run.elapsed.as_secs_f64().max(1e-9);
                            r.samples.push(ops_per_s);
                            if let Some(j) = json.as_deref_mut() {
                                let line = json!({"type": "scale-sample",
                                    "testcase": cfg.testcase, "mode": cfg.mode,
                                    "copies": cfg.copies, "column": c.name(), "iteration": it,
                                    "ops_per_copy": r.ops_per_copy, "ops": run.ops,
                                    "elapsed_ns": run.elapsed.as_nanos() as u64,
                                    "ops_per_s": ops_per_s});
                                writeln!(j, "{line}")?;
                            }
                        }
                        Err(e) => {
                            r.error = Some(format!("{e:#}"));
                            failed = true;
                        }
                    }
                }
            }
        }
        for c in columns.iter_mut() {
            c.teardown();
        }
        for (cfg, mut rs) in group.iter().zip(results) {
            for r in &mut rs {
                if !r.samples.is_empty() {
                    r.summary = Some(Summary::of(&r.samples));
                }
            }
            rows.push(ScaleRow {
                config: *cfg,
                columns: rs,
            });
        }
    }
    progress.set_message("measuring the cache-line round trip");
    let line_after = cache_line_round_trip();
    let result = ScaleResult {
        machine,
        line_before,
        line_after,
        column_names: columns.iter().map(|c| c.name()).collect(),
        notes: columns.iter().map(|c| c.note()).collect(),
        rows,
        not_yet: NOT_YET.to_vec(),
        failed,
    };
    if let Some(j) = json {
        writeln!(j, "{}", json!({"type": "scale-summary", "result": result}))?;
    }
    Ok(result)
}

/// Picks an iteration count per copy that makes one sample last about `target`
/// ([`crate::calibrate::iterations`]); the runs it takes are the warm-up.
fn calibrate(c: &mut dyn ScaleColumn, cfg: &Config, target: Duration) -> anyhow::Result<u64> {
    crate::calibrate::iterations(target, 1, |ops| c.run(cfg, ops).map(|r| r.elapsed))
}
