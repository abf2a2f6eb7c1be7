//! How a scale column starts its copies, and the run and the probe written once over it: the
//! two columns differ only in what a copy is and which [`Calls`] it makes.

use std::ffi::CString;
use std::time::Duration;

use super::board::{Board, CopyEnd, MAX_PROBE_COPIES};
use super::calls::{probe_copy, run_copy, Calls, CopyWork};
use super::{check_ends, Config, Mode, Run};

/// A column's way of running copies at once. (`'static`: the columns own what they run on, and
/// `spawn`'s `body` names `Self`.)
pub(crate) trait Spawn: 'static {
    /// The calls one copy makes.
    type Calls<'a>: Calls;

    /// Empties the column's filesystem.
    ///
    /// # Errors
    /// What was there could not be removed.
    fn empty(&mut self) -> anyhow::Result<()>;

    /// Runs `body(calls, copy, board)` on `copies` copies in `mode`. Returns the time from the
    /// common start until the first copy completed its quota ([`Board::window`]; the wall time
    /// until all copies were joined or reaped if no copy did, as in the probe), and every
    /// copy's report.
    ///
    /// # Errors
    /// The copies could not be started.
    fn spawn(
        &self,
        mode: Mode,
        copies: usize,
        body: &(dyn Fn(&Self::Calls<'_>, usize, &Board) + Sync),
    ) -> anyhow::Result<(Duration, Vec<CopyEnd>)>;
}

/// [`ScaleColumn::run`](super::ScaleColumn::run) of the column `name`: `cfg`'s testcase on
/// each of its copies, until one has run `ops` iterations.
///
/// # Errors
/// A copy failed (which one and why), or the copies could not be started.
pub(crate) fn run<S: Spawn>(name: &str, s: &S, cfg: &Config, ops: u64) -> anyhow::Result<Run> {
    let paths: Vec<CString> = (0..cfg.copies).map(|c| cfg.testcase.c_path(c)).collect();
    let (elapsed, ends) = s.spawn(cfg.mode, cfg.copies, &|calls, copy, board| {
        if let Some(path) = paths.get(copy) {
            let w = CopyWork {
                testcase: cfg.testcase,
                copy,
                path,
                ops,
            };
            run_copy(calls, &w, board);
        }
    })?;
    check_ends(name, cfg, &ends)?;
    Ok(Run {
        elapsed,
        ops: ends.iter().map(|e| e.done).sum(),
        ends,
    })
}

/// [`ScaleColumn::probe`](super::ScaleColumn::probe): empties the column's filesystem and
/// runs the fd-table probe on `copies` copies in `mode`; each copy's report.
///
/// # Errors
/// More than [`MAX_PROBE_COPIES`] copies, the filesystem could not be emptied, or the copies
/// could not be started.
pub(crate) fn probe<S: Spawn>(
    s: &mut S,
    mode: Mode,
    copies: usize,
) -> anyhow::Result<Vec<CopyEnd>> {
    anyhow::ensure!(
        copies <= MAX_PROBE_COPIES,
        "at most {MAX_PROBE_COPIES} copies"
    );
    s.empty()?;
    let paths: Vec<CString> = (0..copies)
        .map(|c| CString::new(format!("probe{c}")).expect("no NUL"))
        .collect();
    let (_, ends) = s.spawn(mode, copies, &|calls, copy, board| {
        if let Some(path) = paths.get(copy) {
            probe_copy(calls, copy, copies, path, board);
        }
    })?;
    Ok(ends)
}
