//! Tables on stdout, the way mmtests compares kernels: per configuration Min, Amean and Max of
//! ns per operation, each column's percent difference from the host column, and `*` where the
//! 95% confidence intervals do not overlap; then the Duration table and the machine record.

use comfy_table::presets::UTF8_FULL_CONDENSED;
use comfy_table::{Cell, CellAlignment, Table};

use crate::column::is_host;
use crate::columns::nonotify::NONOTIFY;
use crate::machine::LineSample;
use crate::params::{Workload, BULK_WRITE_BYTES, MESSAGE_BYTES, MESSAGING_FDS};
use crate::runner::{ConfigResult, RunResult};
use crate::stats::Summary;
use crate::sysfs::{attr_path, READ_BYTES};

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
        if let Some(row) = uvfs_vs_row(cr) {
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

/// `+1.23% *`: the time difference of `a` from `b`, `*` where their 95% confidence intervals
/// do not overlap.
fn pct_marked(a: &Summary, b: &Summary) -> String {
    format!(
        "{:+.2}%{}",
        a.pct_vs(b),
        if a.differs_from(b) { " *" } else { "  " }
    )
}

/// The row "uvfs vs x" of the workloads the notification columns run (`write1`,
/// `write1-watch`, `read1`): uvfs's time difference from each other uvfs column's, marked
/// as [`pct_marked`]. Against `uvfs-nonotify` it is what the unwatched hooks cost.
fn uvfs_vs_row(cr: &ConfigResult) -> Option<Vec<Cell>> {
    if !matches!(
        cr.params.workload,
        Workload::Write1 | Workload::Write1Watch | Workload::Read1
    ) {
        return None;
    }
    let uvfs = cr
        .columns
        .iter()
        .find(|c| c.column == "uvfs")
        .and_then(|c| c.summary.as_ref())?;
    let mut row = vec![Cell::new(format!("uvfs vs x {}", cr.params.label()))];
    for c in &cr.columns {
        let text = match &c.summary {
            Some(s) if c.column.starts_with("uvfs-") => pct_marked(uvfs, s),
            _ => "-".to_string(),
        };
        row.push(Cell::new(text).set_alignment(CellAlignment::Right));
    }
    Some(row)
}

/// Operations per second summed over the threads (threads × 10⁹ / mean ns per operation per
/// thread) for each configuration of a multi-thread workload, and in parentheses the speed-up
/// over the one-thread configuration of the same column; `heading` names the operations
/// (`entries/s (all walkers)` for `find`).
pub fn aggregate_table(heading: &str, names: &[&'static str], configs: &[ConfigResult]) -> Table {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    let mut h = vec![heading.to_string()];
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

/// The seed-style table of `messaging`: per group count, each column's mean time of a run in
/// seconds (with its difference from the host's, `*` where the 95% intervals do not overlap),
/// then uvfs-vanilla's difference from uvfs, marked the same way: the seed's experiment, the
/// pre-2025 timestamp work on anonymous pipes against none. With those columns in the run,
/// uvfs-vanilla-notify's difference from uvfs (the pre-2015 notification hooks, seed 000) and
/// uvfs's from uvfs-nonotify (what the unwatched hooks cost).
pub fn messaging_table(names: &[&'static str], configs: &[ConfigResult]) -> Table {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    let mut h = vec!["seconds".to_string()];
    h.extend(names.iter().map(|s| s.to_string()));
    h.push("vanilla vs uvfs".to_string());
    // (heading, the column compared, whether uvfs is the first term)
    let extra: Vec<(&str, &str, bool)> = [
        ("vanilla-notify vs uvfs", "uvfs-vanilla-notify", false),
        ("uvfs vs nonotify", NONOTIFY, true),
    ]
    .into_iter()
    .filter(|(_, name, _)| names.contains(name))
    .collect();
    h.extend(extra.iter().map(|(heading, _, _)| heading.to_string()));
    t.set_header(h);
    let secs = |s: &Summary| s.amean / 1e9;
    for cr in configs {
        let groups = cr.params.messaging.map_or(0, |m| m.groups);
        let summary_of = |name: &str| {
            cr.columns
                .iter()
                .find(|c| c.column == name)
                .and_then(|c| c.summary.as_ref())
        };
        let host = cr
            .columns
            .iter()
            .find(|c| is_host(c.column))
            .and_then(|c| c.summary.as_ref());
        let mut row = vec![Cell::new(format!("Amean {groups}"))];
        for c in &cr.columns {
            let text = match (&c.summary, &c.skipped, &c.error) {
                (Some(s), _, _) => match host {
                    Some(h) if !is_host(c.column) => format!(
                        "{:.4} {}({:+.2}%)",
                        secs(s),
                        if s.differs_from(h) { "*" } else { " " },
                        s.pct_vs(h)
                    ),
                    _ => format!("{:.4}", secs(s)),
                },
                (None, Some(why), _) => why.clone(),
                (None, _, Some(e)) => format!("FAILED: {e}"),
                _ => "-".to_string(),
            };
            row.push(Cell::new(text).set_alignment(CellAlignment::Right));
        }
        let diff = match (summary_of("uvfs-vanilla"), summary_of("uvfs")) {
            (Some(v), Some(u)) => pct_marked(v, u),
            _ => "-".to_string(),
        };
        row.push(Cell::new(diff).set_alignment(CellAlignment::Right));
        for &(_, name, uvfs_first) in &extra {
            let diff = match (summary_of(name), summary_of("uvfs")) {
                (Some(x), Some(u)) if uvfs_first => pct_marked(u, x),
                (Some(x), Some(u)) => pct_marked(x, u),
                _ => "-".to_string(),
            };
            row.push(Cell::new(diff).set_alignment(CellAlignment::Right));
        }
        t.add_row(row);
    }
    t
}

/// GB/s of `pipe-bulk` per column (64 KiB per op over the mean ns per op).
fn bulk_line(names: &[&'static str], configs: &[ConfigResult]) -> String {
    let mut parts = Vec::new();
    for cr in configs {
        for (c, name) in cr.columns.iter().zip(names) {
            if let Some(s) = &c.summary {
                parts.push(format!(
                    "{name} {:.2} GB/s",
                    BULK_WRITE_BYTES as f64 / s.amean
                ));
            }
        }
    }
    format!("throughput (64 KiB per write): {}", parts.join(", "))
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
        match w {
            Workload::Messaging => {
                let loops = configs
                    .first()
                    .and_then(|c| c.params.messaging)
                    .map_or(0, |m| m.loops);
                println!(
                    "perf bench sched messaging --pipe, thread mode: per group {MESSAGING_FDS} senders each writing {loops} x {MESSAGE_BYTES}-byte messages to each of {MESSAGING_FDS} receivers; seconds from the start to the last receiver done (Amean <groups>)"
                );
                println!("{}", messaging_table(&r.column_names, configs));
                println!("* in \"... vs ...\": the 95% confidence intervals of the two columns do not overlap");
            }
            Workload::PipePingpong => {
                println!("a 1-byte round trip between two threads over two pipes; ns/op is ns per round trip");
                println!("{}", workload_table(&r.column_names, configs));
            }
            Workload::PipeBulk => {
                println!("64 KiB writes streamed from one thread to another through one pipe; ns/op is ns per 64 KiB");
                println!("{}", workload_table(&r.column_names, configs));
                println!("{}", bulk_line(&r.column_names, configs));
            }
            Workload::Write1Watch => {
                println!("write1 (1-byte pwrite at offset 0 of w/f) with a watch placed and checked first: none; unrelated (u watched for IN_MODIFY); parent-other (w watched for IN_ACCESS: the parent-watched flag set, no event); parent (w watched for IN_MODIFY); self (w/f watched for IN_MODIFY, a thread draining the queue); self-undrained (no reader: identical events merge); mount (a fanotify FAN_MODIFY mount mark)");
                println!("{}", workload_table(&r.column_names, configs));
                println!("uvfs vs x: uvfs's time difference from that column's (* where the 95% intervals do not overlap)");
            }
            Workload::SysfsOpenRead => {
                println!(
                    "seed 004: open(O_RDONLY), read {READ_BYTES} bytes, close of {} (shared: every thread; per-thread: thread i reads cpu(i mod the CPUs)'s, shared beyond that); ns/op is per thread",
                    attr_path(0)
                );
                println!("{}", workload_table(&r.column_names, configs));
            }
            Workload::Write1 | Workload::Read1 => {
                println!("{}", workload_table(&r.column_names, configs));
                println!("uvfs vs x: uvfs's time difference from that column's (* where the 95% intervals do not overlap)");
            }
            _ => println!("{}", workload_table(&r.column_names, configs)),
        }
        match w {
            Workload::Find => println!(
                "{}",
                aggregate_table("entries/s (all walkers)", &r.column_names, configs)
            ),
            Workload::SysfsOpenRead => println!(
                "{}",
                aggregate_table("ops/s (all threads)", &r.column_names, configs)
            ),
            _ => {}
        }
        if configs
            .iter()
            .any(|c| c.params.threads > 1 || w.uses_pipes())
        {
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
