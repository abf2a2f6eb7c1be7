//! `uvfs-nonotify`: uvfs built without its `notify` cargo feature, so that every notification
//! hook is compiled out, beside uvfs with them: the suite's direct measure of what the
//! unwatched hooks cost (seeds 000 and 001 want it within 1%).
//!
//! Cargo features unify within one build, so the column cannot live in this process: it runs
//! a child process of the same `uvfs` binary built with `--no-default-features` into a target
//! directory of its own, `target/uvfs-nonotify/release/uvfs` (`scripts/build-nonotify.sh`
//! builds both binaries, this one last; `UVFS_BENCH_NONOTIFY` names another). The child is
//! this binary's hidden `uvfs bench serve-uvfs --params JSON`: it runs the uvfs column of one
//! configuration in its own process ([`serve`]) and answers operation counts with rounds, as
//! the gVisor driver does ([`super::served`]). Its ready line says whether notification is
//! compiled into it; one that has it is refused, so the column never measures uvfs twice.
//!
//! The column is skipped, saying why, when the binary is missing or older than the binary
//! running the suite (rebuild with the script): `uvfs bench --quick` never builds it.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::SystemTime;

use anyhow::{bail, ensure, Context};
use serde::{Deserialize, Serialize};

use super::gvisor::target_dir;
use super::served::{Round, Session};
use super::uvfs::{Design, Uvfs};
use crate::column::{Column, Support};
use crate::params::{Params, Workload};
use crate::watch::Watch;

/// The column's name.
pub const NONOTIFY: &str = "uvfs-nonotify";

/// The script that builds the child binary.
pub const BUILD_SCRIPT: &str = "scripts/build-nonotify.sh";

/// The environment variable that names the child binary instead of the default place.
pub const BINARY_ENV: &str = "UVFS_BENCH_NONOTIFY";

/// The child binary's default place: `target/uvfs-nonotify/release/uvfs`.
pub fn default_binary() -> PathBuf {
    target_dir().join("uvfs-nonotify/release/uvfs")
}

/// The child's first line.
#[derive(Serialize, Deserialize)]
pub struct Ready {
    /// Always true: set up.
    pub ready: bool,
    /// Whether notification is compiled into the child ([`uvfs::vfs::notify::COMPILED`]).
    pub notify: bool,
}

/// uvfs without notification, in a child process.
pub struct NoNotify {
    /// The child binary, or why the column is skipped.
    binary: Result<PathBuf, String>,
    /// The child serving the current configuration, and that configuration.
    session: Option<(Params, Session)>,
}

fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

impl NoNotify {
    /// The column with the child binary of [`BINARY_ENV`], else [`default_binary`]; skipped if
    /// it is missing or older than `reference` (the binary running the suite), since it would
    /// measure other sources than the uvfs column's.
    pub fn find(reference: Option<&Path>) -> NoNotify {
        let binary = std::env::var_os(BINARY_ENV).map_or_else(default_binary, PathBuf::from);
        let checked = match (modified(&binary), reference.and_then(modified)) {
            (None, _) => Err(format!("skipped: not built ({BUILD_SCRIPT})")),
            (Some(child), Some(me)) if child < me => Err(format!(
                "skipped: older than this binary (rerun {BUILD_SCRIPT})"
            )),
            _ => Ok(binary),
        };
        NoNotify {
            binary: checked,
            session: None,
        }
    }

    /// The column with the child binary `binary`, unchecked (tests).
    pub fn with_binary(binary: PathBuf) -> NoNotify {
        NoNotify {
            binary: Ok(binary),
            session: None,
        }
    }
}

/// Starts the child for `p` and waits until it is set up; a child with notification compiled
/// in is refused.
fn start_session(binary: &Path, p: &Params) -> anyhow::Result<Session> {
    let mut cmd = Command::new(binary);
    cmd.args([
        "bench",
        "serve-uvfs",
        "--params",
        &serde_json::to_string(p)?,
    ]);
    let label = format!("{NONOTIFY} child {} ({})", binary.display(), p.label());
    let mut s = Session::start(cmd, label)?;
    let line = s.read_line().context("uvfs-nonotify child setup")?;
    let ready: Ready = serde_json::from_str(&line)
        .with_context(|| format!("uvfs-nonotify child setup: unexpected line {line:?}"))?;
    ensure!(
        ready.ready,
        "uvfs-nonotify child setup: not ready: {line:?}"
    );
    if ready.notify {
        bail!(
            "{} has notification compiled in: it is not a --no-default-features build (rebuild it with {BUILD_SCRIPT})",
            binary.display()
        );
    }
    Ok(s)
}

impl Column for NoNotify {
    fn name(&self) -> &'static str {
        NONOTIFY
    }

    fn helper_pid(&self) -> Option<u32> {
        self.session.as_ref().map(|(_, s)| s.pid())
    }

    fn supports(&self, p: &Params) -> Support {
        if let Err(why) = &self.binary {
            return Support::No(why.clone());
        }
        match p.workload {
            Workload::Write1 | Workload::Read1 | Workload::Messaging => Support::Yes,
            Workload::Write1Watch if p.watch == Watch::None => Support::Yes,
            Workload::Write1Watch => Support::No("skipped: no notification to watch with".into()),
            _ => Support::No("skipped: run on write1, read1 and messaging only".into()),
        }
    }

    fn setup(&mut self, p: &Params) -> anyhow::Result<()> {
        self.session = None;
        let binary = self
            .binary
            .as_deref()
            .map_err(|why| anyhow::anyhow!("{NONOTIFY} {why}"))?;
        self.session = Some((*p, start_session(binary, p)?));
        Ok(())
    }

    fn run(&mut self, p: &Params, ops: u64) -> anyhow::Result<std::time::Duration> {
        if self.session.as_ref().is_none_or(|(sp, _)| sp != p) {
            self.setup(p)?;
        }
        super::served::round_or_forget(&mut self.session, ops)
    }

    fn teardown(&mut self) {
        self.session = None;
    }

    fn note(&self) -> &'static str {
        "uvfs-nonotify: uvfs built without its notify feature (every notification hook compiled out; scripts/build-nonotify.sh), the uvfs column run in a child process of that build"
    }
}

/// The child's side: runs the uvfs column (its current design) on `p` in this process: sets
/// up, prints a [`Ready`] line to `out`, then answers each operation count read from `input`
/// with one [`Round`] line, until the end of `input`.
///
/// # Errors
/// The configuration is not one the column runs, a run failed, or `out` did.
pub fn serve(p: &Params, input: impl BufRead, mut out: impl Write) -> anyhow::Result<()> {
    let mut col = Uvfs::new(Design::Current);
    if let Support::No(why) = col.supports(p) {
        bail!(
            "uvfs does not run {} {}: {why}",
            p.workload.name(),
            p.label()
        );
    }
    col.setup(p)?;
    let ready = Ready {
        ready: true,
        notify: uvfs::vfs::notify::COMPILED,
    };
    writeln!(out, "{}", serde_json::to_string(&ready)?)?;
    out.flush()?;
    for line in input.lines() {
        let line = line?;
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let ops: u64 = line
            .parse()
            .with_context(|| format!("bad operation count {line:?} on stdin"))?;
        let d = col.run(p, ops)?;
        let round = Round {
            elapsed_ns: u64::try_from(d.as_nanos())?,
        };
        writeln!(out, "{}", serde_json::to_string(&round)?)?;
        out.flush()?;
    }
    col.teardown();
    Ok(())
}
