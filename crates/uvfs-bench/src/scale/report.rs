//! The scale tables: one per testcase and mode, a row per copy count, for every column its
//! operations per second summed over the copies (mean of the samples, with the 95% confidence
//! interval), its speed-up over one copy and its linear line (one copy's rate × copies), then
//! each column's rate over the host's (`*` where the intervals do not overlap).

use comfy_table::presets::UTF8_FULL_CONDENSED;
use comfy_table::{Cell, CellAlignment, Table};

use super::runner::{ScaleResult, ScaleRow};
use super::testcase::Testcase;
use super::Mode;
use crate::column::is_host;
use crate::report::line_state;
use crate::stats::Summary;

/// `1234567.0` -> `1.23M`.
pub fn si(v: f64) -> String {
    let (d, unit) = if v >= 1e9 {
        (1e9, "G")
    } else if v >= 1e6 {
        (1e6, "M")
    } else if v >= 1e3 {
        (1e3, "k")
    } else {
        (1.0, "")
    };
    format!("{:.2}{unit}", v / d)
}

/// The host column's summary in `row`.
fn host_summary(row: &ScaleRow) -> Option<&Summary> {
    row.columns
        .iter()
        .find(|c| is_host(c.column))
        .and_then(|c| c.summary.as_ref())
}

/// Renders the table of one testcase in one mode from its rows (copy counts ascending).
pub fn scale_table(names: &[&'static str], rows: &[&ScaleRow]) -> Table {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    let mut header = vec!["copies".to_string()];
    for n in names {
        header.push(format!("{n} ops/s"));
        header.push(format!("{n} speed-up"));
        header.push(format!("{n} linear"));
    }
    for n in names.iter().filter(|n| !is_host(n)) {
        header.push(format!("{n}/host"));
    }
    t.set_header(header);
    let one = rows.iter().find(|r| r.config.copies == 1);
    for row in rows {
        let mut cells = vec![Cell::new(row.config.copies)];
        for (ci, c) in row.columns.iter().enumerate() {
            let base = one.and_then(|o| o.columns.get(ci)).and_then(|o| o.summary);
            match (&c.summary, &c.skipped, &c.error) {
                (Some(s), _, _) => {
                    let pct = if s.amean > 0.0 {
                        s.ci95 / s.amean * 100.0
                    } else {
                        0.0
                    };
                    cells.push(Cell::new(format!("{} ±{pct:.0}%", si(s.amean))));
                    match base {
                        Some(b) => {
                            cells.push(Cell::new(format!("{:.2}x", s.amean / b.amean)));
                            cells.push(Cell::new(si(b.amean * row.config.copies as f64)));
                        }
                        None => cells.extend([Cell::new("-"), Cell::new("-")]),
                    }
                }
                (None, Some(why), _) => {
                    cells.push(Cell::new(why));
                    cells.extend([Cell::new("-"), Cell::new("-")]);
                }
                (None, _, Some(e)) => {
                    cells.push(Cell::new(format!("FAILED: {e}")));
                    cells.extend([Cell::new("-"), Cell::new("-")]);
                }
                _ => cells.extend([Cell::new("-"), Cell::new("-"), Cell::new("-")]),
            }
        }
        let host = host_summary(row);
        for c in row.columns.iter().filter(|c| !is_host(c.column)) {
            let text = match (&c.summary, host) {
                (Some(s), Some(h)) => {
                    let mark = if s.differs_from(h) { "*" } else { "" };
                    format!("{:.2}x{mark}", s.amean / h.amean)
                }
                _ => "-".into(),
            };
            cells.push(Cell::new(text));
        }
        let cells: Vec<Cell> = cells
            .into_iter()
            .map(|c| c.set_alignment(CellAlignment::Right))
            .collect();
        t.add_row(cells);
    }
    t
}

/// The rows of one testcase in one mode.
pub fn rows_of(r: &ScaleResult, testcase: Testcase, mode: Mode) -> Vec<&ScaleRow> {
    r.rows
        .iter()
        .filter(|row| row.config.testcase == testcase && row.config.mode == mode)
        .collect()
}

/// Prints every table, the machine record, the cross-CPU state, the testcases not yet run and
/// the column notes.
pub fn print(r: &ScaleResult) {
    println!(
        "scale (will-it-scale testcases) — machine: {} | {} CPUs | Linux {} | {}",
        r.machine.cpu, r.machine.cores, r.machine.kernel, r.machine.rustc
    );
    println!();
    let mut seen: Vec<(Testcase, Mode)> = Vec::new();
    for row in &r.rows {
        let key = (row.config.testcase, row.config.mode);
        if seen.contains(&key) {
            continue;
        }
        seen.push(key);
        println!(
            "{} ({}) — {}",
            key.0.name(),
            key.1.describe(),
            key.0.describe()
        );
        println!(
            "{}",
            scale_table(&r.column_names, &rows_of(r, key.0, key.1))
        );
        println!();
    }
    println!("{}", line_state(&r.line_before, &r.line_after));
    println!("ops/s: operations per second summed over the copies (mean of the samples ±95% confidence interval); speed-up: over the same column's one copy; linear: one copy's rate x copies; uvfs/host: uvfs's rate over the host's, * where the 95% confidence intervals do not overlap.");
    if let Some(l) = super::testcase::not_yet_line() {
        println!("{l}");
    }
    for n in &r.notes {
        println!("- {n}");
    }
    if r.failed {
        println!("FAILED: at least one column errored (see the tables)");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn si_units() {
        assert_eq!(si(999.0), "999.00");
        assert_eq!(si(1234.0), "1.23k");
        assert_eq!(si(2_500_000.0), "2.50M");
        assert_eq!(si(3e9), "3.00G");
    }
}
