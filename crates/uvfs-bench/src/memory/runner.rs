//! Runs the memory workload: one fresh probe process per column, one after the other (never
//! two at once, so their pages and the host's slab growth do not overlap), and collects their
//! lines into a [`MemoryResult`].

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use anyhow::{anyhow, bail};
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;
use serde_json::json;

use super::{MemoryColumn, Probe, Size};
use crate::machine::Machine;

/// How much of a failed probe's stderr an error keeps.
const STDERR_TAIL_BYTES: usize = 4096;

/// How to start the probe process of the host, uvfs and vfs-crate columns: `program args...
/// COLUMN --files N --dirs D` must run [`super::probe::probe_main`] (the `uvfs` binary's
/// hidden `bench memory-probe`).
#[derive(Clone, Debug)]
pub struct ProbeCommand {
    /// The executable.
    pub program: PathBuf,
    /// Arguments before the column's name.
    pub args: Vec<OsString>,
}

/// What to run.
#[derive(Clone, Debug)]
pub struct MemoryOptions {
    /// Files and directories.
    pub size: Size,
    /// The Rust columns' probe.
    pub probe: ProbeCommand,
    /// The gVisor driver, or why the column is skipped ("skipped: ...").
    pub gvisor_driver: Result<PathBuf, String>,
}

/// One column's result.
#[derive(Clone, Debug, Serialize)]
pub struct MemoryColumnResult {
    /// Column name.
    pub column: &'static str,
    /// What the headline figure is.
    pub measured_as: &'static str,
    /// Why it did not run, if it did not.
    pub skipped: Option<String>,
    /// The error that stopped it, if any.
    pub error: Option<String>,
    /// The headline: bytes per file.
    pub bytes_per_file: Option<f64>,
    /// Everything the probe printed.
    pub probe: Option<Probe>,
}

/// Everything a memory run produced.
#[derive(Clone, Debug, Serialize)]
pub struct MemoryResult {
    /// The machine.
    pub machine: Machine,
    /// Files and directories every column created.
    pub size: Size,
    /// One entry per column, in [`MemoryColumn::ALL`] order.
    pub columns: Vec<MemoryColumnResult>,
    /// What each column measures.
    pub notes: Vec<&'static str>,
    /// True if any column failed.
    pub failed: bool,
}

impl MemoryResult {
    /// The result of the column named `name`.
    pub fn column(&self, name: &str) -> Option<&MemoryColumnResult> {
        self.columns.iter().find(|c| c.column == name)
    }
}

/// The command that probes `column`, or why it is skipped.
fn command_for(opts: &MemoryOptions, column: MemoryColumn) -> Result<Command, String> {
    let size = [
        "--files".to_string(),
        opts.size.files.to_string(),
        "--dirs".to_string(),
        opts.size.dirs.to_string(),
    ];
    let mut cmd = match column {
        MemoryColumn::Gvisor => {
            let mut cmd = Command::new(opts.gvisor_driver.as_ref().map_err(Clone::clone)?);
            cmd.args(["--workload", "memory"]);
            cmd
        }
        _ => {
            let mut cmd = Command::new(&opts.probe.program);
            cmd.args(&opts.probe.args).arg(column.name());
            cmd
        }
    };
    cmd.args(size)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    Ok(cmd)
}

/// The probe line of a finished probe process.
fn parse_output(out: &Output, size: Size) -> anyhow::Result<Probe> {
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        let from = out.stderr.len().saturating_sub(STDERR_TAIL_BYTES);
        let tail = String::from_utf8_lossy(&out.stderr[from..]);
        bail!("probe exited with {}: {}", out.status, tail.trim());
    }
    let line = stdout
        .lines()
        .rfind(|l| !l.trim().is_empty())
        .ok_or_else(|| anyhow!("probe printed nothing"))?;
    let probe: Probe =
        serde_json::from_str(line).map_err(|e| anyhow!("probe printed {line:?}: {e}"))?;
    if (probe.files, probe.dirs) != (size.files, size.dirs) {
        bail!(
            "probe created {} files in {} directories, not {} in {}",
            probe.files,
            probe.dirs,
            size.files,
            size.dirs
        );
    }
    Ok(probe)
}

/// Runs `column`'s probe process and makes its result.
fn run_column(opts: &MemoryOptions, column: MemoryColumn) -> MemoryColumnResult {
    let mut r = MemoryColumnResult {
        column: column.name(),
        measured_as: column.measured_as(),
        skipped: None,
        error: None,
        bytes_per_file: None,
        probe: None,
    };
    let mut cmd = match command_for(opts, column) {
        Ok(cmd) => cmd,
        Err(why) => {
            r.skipped = Some(why);
            return r;
        }
    };
    let probe = cmd
        .output()
        .map_err(|e| anyhow!("starting {:?}: {e}", cmd.get_program()))
        .and_then(|out| parse_output(&out, opts.size));
    match probe {
        Err(e) => r.error = Some(format!("{e:#}")),
        Ok(p) if p.skipped.is_some() => {
            r.skipped.clone_from(&p.skipped);
            r.probe = Some(p);
        }
        Ok(p) => {
            match column.headline_bytes(&p) {
                Some(bytes) => r.bytes_per_file = Some(bytes as f64 / opts.size.files as f64),
                None => r.error = Some(format!("the probe printed no {}", column.measured_as())),
            }
            r.probe = Some(p);
        }
    }
    r
}

/// Runs every column's probe, writing each result to `json` as it comes.
///
/// # Errors
/// Only for failures to write `json`; a failing column is recorded in the result.
pub fn run_memory(
    opts: &MemoryOptions,
    progress: &ProgressBar,
    mut json: Option<&mut dyn Write>,
) -> anyhow::Result<MemoryResult> {
    let machine = Machine::read();
    if let Some(j) = json.as_deref_mut() {
        writeln!(j, "{}", json!({"type": "machine", "machine": machine}))?;
    }
    progress.set_position(0);
    progress.set_length(MemoryColumn::ALL.len() as u64);
    progress.set_style(
        ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let mut columns = Vec::new();
    for column in MemoryColumn::ALL {
        progress.set_message(format!(
            "memory: {} creates {} files",
            column.name(),
            opts.size.files
        ));
        let r = run_column(opts, column);
        if let Some(j) = json.as_deref_mut() {
            writeln!(
                j,
                "{}",
                json!({"type": "memory-column", "size": opts.size, "result": r})
            )?;
        }
        columns.push(r);
        progress.inc(1);
    }
    let failed = columns.iter().any(|c| c.error.is_some());
    let result = MemoryResult {
        machine,
        size: opts.size,
        columns,
        notes: MemoryColumn::ALL.iter().map(|c| c.note()).collect(),
        failed,
    };
    if let Some(j) = json {
        writeln!(j, "{}", json!({"type": "memory-summary", "result": result}))?;
    }
    Ok(result)
}
