//! A column served by a child process: the gVisor driver, and this binary built without
//! notification (`uvfs-nonotify`). The child sets up one configuration, prints one ready line,
//! then answers each operation count written to its stdin with one `{"elapsed_ns": N}` line,
//! measured inside the child; process start-up and setup are never timed, and the child stays
//! warm across the runner's iterations like the in-process columns do.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{anyhow, Context};
use serde::{Deserialize, Serialize};

/// How much of the child's stderr is kept for error messages.
const STDERR_TAIL_BYTES: usize = 16 * 1024;

/// One `{"elapsed_ns": N}` line of a child.
#[derive(Serialize, Deserialize)]
pub struct Round {
    /// Wall time of the round, measured in the child.
    pub elapsed_ns: u64,
}

/// A child process serving one configuration.
pub(crate) struct Session {
    /// Names the child and its configuration in errors.
    label: String,
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    /// The last [`STDERR_TAIL_BYTES`] of the child's stderr, filled by `drain`.
    stderr: Arc<Mutex<Vec<u8>>>,
    drain: Option<JoinHandle<()>>,
}

impl Session {
    /// Starts `cmd` with piped stdin, stdout and stderr; `label` names it in errors. The
    /// caller reads and checks its ready line ([`Session::read_line`]).
    pub(crate) fn start(mut cmd: Command, label: String) -> anyhow::Result<Session> {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| format!("starting {label}"))?;
        let stdin = child.stdin.take().expect("stdin was piped");
        let stdout = BufReader::new(child.stdout.take().expect("stdout was piped"));
        let mut err_pipe = child.stderr.take().expect("stderr was piped");
        let stderr = Arc::new(Mutex::new(Vec::new()));
        // The child may log warnings at any time; drain them so it never blocks on a full pipe.
        let tail = Arc::clone(&stderr);
        let drain = std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n @ 1..) = err_pipe.read(&mut buf) {
                let mut t = tail.lock().unwrap_or_else(|e| e.into_inner());
                t.extend_from_slice(&buf[..n]);
                let excess = t.len().saturating_sub(STDERR_TAIL_BYTES);
                t.drain(..excess);
            }
        });
        Ok(Session {
            label,
            child,
            stdin,
            stdout,
            stderr,
            drain: Some(drain),
        })
    }

    /// The child's process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Writes `line` (and a newline) to the child's stdin.
    ///
    /// # Errors
    /// The child stopped reading; the error has its exit status and stderr.
    pub(crate) fn write_line(&mut self, line: &str) -> anyhow::Result<()> {
        writeln!(self.stdin, "{line}")
            .and_then(|()| self.stdin.flush())
            .map_err(|e| self.failure(&format!("writing to the child: {e}")))
    }

    /// Has the child run `count` operations and returns its measured wall time.
    ///
    /// # Errors
    /// The child failed or printed something else than a round.
    pub(crate) fn round(&mut self, count: u64) -> anyhow::Result<Duration> {
        self.write_line(&count.to_string())?;
        let line = self.read_line()?;
        let round: Round = serde_json::from_str(&line)
            .with_context(|| format!("{} printed {line:?}", self.label))?;
        Ok(Duration::from_nanos(round.elapsed_ns))
    }

    /// The child's next stdout line; its exit (with its stderr) is the error if there is none.
    ///
    /// # Errors
    /// The child exited or its stdout failed.
    pub(crate) fn read_line(&mut self) -> anyhow::Result<String> {
        let mut line = String::new();
        match self.stdout.read_line(&mut line) {
            Ok(0) => Err(self.failure("it exited")),
            Ok(_) => Ok(line),
            Err(e) => Err(self.failure(&format!("reading from it: {e}"))),
        }
    }

    /// An error for a child that stopped answering: `what`, its exit status and its stderr.
    fn failure(&mut self, what: &str) -> anyhow::Error {
        let status = match self.child.wait() {
            Ok(s) => s.to_string(),
            Err(e) => format!("unknown status ({e})"),
        };
        if let Some(drain) = self.drain.take() {
            // The child has exited, so its stderr is at EOF and the drain thread ends.
            let _ = drain.join();
        }
        let tail = self.stderr.lock().unwrap_or_else(|e| e.into_inner());
        anyhow!(
            "{}: {what}, {status}: {}",
            self.label,
            String::from_utf8_lossy(&tail).trim()
        )
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        // The child keeps no state worth a clean exit; killing never hangs on a stuck one.
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(drain) = self.drain.take() {
            let _ = drain.join();
        }
    }
}

/// Runs one round of `count` on the session of `slot` (made by the column's setup), and
/// forgets the session if the round failed: a child that failed once is not trusted for the
/// next iteration.
pub(crate) fn round_or_forget(
    slot: &mut Option<(crate::params::Params, Session)>,
    count: u64,
) -> anyhow::Result<std::time::Duration> {
    let (_, session) = slot
        .as_mut()
        .expect("setup either succeeded or returned early");
    let result = session.round(count);
    if result.is_err() {
        *slot = None;
    }
    result
}
