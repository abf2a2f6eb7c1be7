//! Tables on stdout, the way mmtests compares kernels: per configuration Min, Amean and Max of
//! ns per operation, each column's percent difference from the host column, and `*` where the
//! 95% confidence intervals do not overlap; then the Duration table and the machine record.

use comfy_table::presets::UTF8_FULL_CONDENSED;
use comfy_table::{Cell, CellAlignment, Table};

use crate::column::is_host;
use crate::machine::LineSample;
use crate::params::Workload;
use crate::runner::{ConfigResult, RunResult};
use crate::stats::Summary;

fn header(names: &[&'static str]) -> Vec<String> {
    let mut h = vec!["ns/op".to_string()];
    h.extend(names.iter().map(|s| s.to_string()));
    h
}

/// The value of one statistic of one column in a row.
fn cell(value: f64, s: &Summary, host: Option<&Summary>, is_host: bool, with_pct: bool) -> String {
    let mut t = format!("{value:.1}");
    if let (Some(h), false, true) = (host, is_host, with_pct) {
        let mark = if s.differs_from(h) { "*" } else { " " };
        t = format!("{t} {mark}({:+.2}%)", s.pct_vs(h));
    }
    t
}

/// Renders one workload's table.
pub fn workload_table(names: &[&'static str], configs: &[ConfigResult]) -> Table {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    t.set_header(header(names));
    for cr in configs {
        let host = cr
            .columns
            .iter()
            .find(|c| is_host(c.column))
            .and_then(|c| c.summary.as_ref());
        for (stat, pick) in [("Min", 0usize), ("Amean", 1), ("Max", 2)] {
            let mut row = vec![Cell::new(format!("{stat} {}", cr.params.label()))];
            for c in &cr.columns {
                let text = match (&c.summary, &c.skipped, &c.error) {
                    (Some(s), _, _) => {
                        let v = [s.min, s.amean, s.max][pick];
                        cell(v, s, host, is_host(c.column), pick == 1)
                    }
                    (None, Some(why), _) if pick == 1 => why.clone(),
                    (None, _, Some(e)) if pick == 1 => format!("FAILED: {e}"),
                    _ => "-".to_string(),
                };
                row.push(Cell::new(text).set_alignment(CellAlignment::Right));
            }
            t.add_row(row);
        }
        if let Some(h) = host {
            let mut row = vec![Cell::new(format!("host/x {}", cr.params.label()))];
            for c in &cr.columns {
                let text = match &c.summary {
                    Some(s) if !is_host(c.column) => format!("{:.1}x", h.amean / s.amean),
                    _ => "-".to_string(),
                };
                row.push(Cell::new(text).set_alignment(CellAlignment::Right));
            }
            t.add_row(row);
        }
    }
    t
}

/// Entries per second summed over the walkers (walkers × 10⁹ / mean ns per entry per
/// walker) for each configuration of a multi-walker workload, and in parentheses the speed-up
/// over the one-walker configuration of the same column.
pub fn aggregate_table(names: &[&'static str], configs: &[ConfigResult]) -> Table {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    let mut h = vec!["entries/s (all walkers)".to_string()];
    h.extend(names.iter().map(|s| s.to_string()));
    t.set_header(h);
    let rate = |cr: &ConfigResult, ci: usize| {
        cr.columns[ci]
            .summary
            .as_ref()
            .map(|s| cr.params.threads as f64 * 1e9 / s.amean)
    };
    let one = configs.iter().find(|c| c.params.threads == 1);
    for cr in configs {
        let mut row = vec![Cell::new(cr.params.label())];
        for ci in 0..cr.columns.len() {
            let text = match (rate(cr, ci), one.and_then(|o| rate(o, ci))) {
                (Some(r), Some(r1)) if cr.params.threads > 1 => {
                    format!("{} ({:.2}x)", si(r), r / r1)
                }
                (Some(r), _) => si(r),
                (None, _) => "-".to_string(),
            };
            row.push(Cell::new(text).set_alignment(CellAlignment::Right));
        }
        t.add_row(row);
    }
    t
}

/// `1234567.0` as `1.23M`.
fn si(x: f64) -> String {
    if x >= 1e9 {
        format!("{:.2}G", x / 1e9)
    } else if x >= 1e6 {
        format!("{:.2}M", x / 1e6)
    } else if x >= 1e3 {
        format!("{:.2}k", x / 1e3)
    } else {
        format!("{x:.1}")
    }
}

/// Prints every table, the Duration table, the machine record and the column notes.
pub fn print(r: &RunResult) {
    println!(
        "machine: {} | {} CPUs | Linux {} | {}",
        r.machine.cpu, r.machine.cores, r.machine.kernel, r.machine.rustc
    );
    println!();
    for (w, configs) in &r.workloads {
        println!("{}", w.name());
        if *w == Workload::Find {
            if let Some(t) = configs.first().and_then(|c| c.params.tree) {
                println!(
                    "a warm walk of {} files in {} directories per walker (getdents64, then fstatat(AT_SYMLINK_NOFOLLOW) of every entry); ns/op is ns per entry per walker",
                    t.files, t.dirs
                );
            }
        }
        println!("{}", workload_table(&r.column_names, configs));
        if *w == Workload::Find {
            println!("{}", aggregate_table(&r.column_names, configs));
        }
        if configs.iter().any(|c| c.params.threads > 1) {
            println!("{}", line_state_line(r));
        }
        println!();
    }
    let mut d = Table::new();
    d.load_preset(UTF8_FULL_CONDENSED);
    d.set_header(header(&r.column_names).into_iter().map(|h| {
        if h == "ns/op" {
            "Duration".into()
        } else {
            h
        }
    }));
    for (label, pick) in [("User (s)", 0usize), ("System (s)", 1), ("Elapsed (s)", 2)] {
        let mut row = vec![label.to_string()];
        for (_, t) in &r.durations {
            row.push(format!("{:.2}", [t.user_s, t.system_s, t.elapsed_s][pick]));
        }
        d.add_row(row);
    }
    println!("{d}");
    println!();
    println!("{}", line_state_line(r));
    println!("* the 95% confidence intervals of this column and the host's do not overlap; (+x%) is the time difference from the host.");
    for n in &r.notes {
        println!("- {n}");
    }
    if r.failed {
        println!("FAILED: at least one column errored (see the tables)");
    }
}

/// "cache-line round trip: 132 ns (fast state) before, 129 ns (fast state) after".
pub fn line_state_line(r: &RunResult) -> String {
    line_state(&r.line_before, &r.line_after)
}

/// The cross-CPU state line of any run, from its samples before and after.
pub fn line_state(before: &LineSample, after: &LineSample) -> String {
    let changed = if before.state != after.state {
        " — the VM changed state during the run: multi-thread results straddle both"
    } else {
        ""
    };
    format!(
        "cache-line round trip between CPUs: {} before, {} after{changed}",
        before.describe(),
        after.describe()
    )
}
