//! The helper's serve mode (`uvfs-conformance-host --serve`), for throughput, and
//! [`HostServer`], its client.
//!
//! The client writes cases to the server's stdin, each as a decimal byte count, a newline and
//! the case's text (`case NAME` ... `end`, as [`Case`]'s `Display` prints it). For each case
//! the server forks a process that prepares itself ([`sandbox::prepare_process`]), enters a
//! fresh sandbox and runs the case ([`observer::run_case_in_sandbox`]): its own private mount
//! namespace and tmpfs, its own actors. The server relays that process's [`HostLine`]s to its
//! stdout; every case's lines end with one `done` or `aborted` line (the server writes the
//! `aborted` line itself when the case process died without one).

use std::io::{self, BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use super::observer;
use super::proc::{self, Forked};
use super::protocol::{read_host_output, HostLine};
use super::sandbox::{self, RawFdWriter, RESULT_FD};
use super::sys;
use crate::backend::CaseRun;
use crate::parse::{parse_cases, Case};

/// Name of the helper binary.
pub const HELPER_NAME: &str = "uvfs-conformance-host";

/// Runs the server loop on stdin and stdout until stdin ends.
///
/// # Errors
/// A message if stdin or stdout fail.
pub fn serve_loop() -> Result<(), String> {
    let mut input = BufReader::new(io::stdin().lock());
    let mut output = io::stdout().lock();
    loop {
        let mut header = String::new();
        if input.read_line(&mut header).map_err(|e| e.to_string())? == 0 {
            return Ok(());
        }
        let len: usize = header
            .trim()
            .parse()
            .map_err(|_| format!("bad frame header {header:?}"))?;
        let mut text = vec![0u8; len];
        input.read_exact(&mut text).map_err(|e| e.to_string())?;
        let lines = match parse_one(&text) {
            Ok(case) => run_forked(&case),
            Err(e) => HostLine::Aborted(e).to_line().into_bytes(),
        };
        output.write_all(&lines).map_err(|e| e.to_string())?;
        output.flush().map_err(|e| e.to_string())?;
    }
}

fn parse_one(text: &[u8]) -> Result<Case, String> {
    let text = std::str::from_utf8(text).map_err(|_| "the case text is not UTF-8".to_string())?;
    let mut cases = parse_cases(text, Path::new("(served)"))?;
    match cases.len() {
        1 => Ok(cases.remove(0)),
        n => Err(format!("a frame holds one case, not {n}")),
    }
}

/// Runs `case` in a forked process and returns its result lines, ending with `done` or
/// `aborted`.
fn run_forked(case: &Case) -> Vec<u8> {
    let fail = |why: String| HostLine::Aborted(why).to_line().into_bytes();
    let results = match proc::memfd() {
        Ok(fd) => fd,
        Err(e) => return fail(format!("memfd_create: errno {e}")),
    };
    match proc::fork() {
        Err(e) => {
            let _ = sys::close(results);
            fail(format!("fork: errno {e}"))
        }
        Ok(Forked::Child) => {
            let result = std::panic::catch_unwind(|| {
                sandbox::prepare_process(results)?;
                observer::run_case_in_sandbox(case)
            });
            let why = match result {
                Ok(Ok(())) => proc::exit_now(0),
                Ok(Err(e)) => e,
                Err(_) => "the case process panicked".to_string(),
            };
            let _ = RawFdWriter(RESULT_FD).write_all(HostLine::Aborted(why).to_line().as_bytes());
            proc::exit_now(1)
        }
        Ok(Forked::Parent(pid)) => {
            let status = proc::wait_for(pid);
            let mut out = Vec::new();
            let mut buf = vec![0u8; 1 << 16];
            let mut off = 0;
            while let Ok(n) = sys::pread(results, &mut buf, off) {
                if n == 0 {
                    break;
                }
                out.extend_from_slice(&buf[..n as usize]);
                off += n;
            }
            let _ = sys::close(results);
            let finished = out.split(|&c| c == b'\n').rev().nth(1).is_some_and(|last| {
                matches!(
                    serde_json::from_slice::<HostLine>(last),
                    Ok(HostLine::Done | HostLine::Aborted(_))
                )
            });
            if !finished {
                if out.last().is_some_and(|&c| c != b'\n') {
                    out.push(b'\n');
                }
                let how = status.map_or("vanished".to_string(), proc::status_text);
                out.extend(fail(format!("the case process ended early ({how})")));
            }
            out
        }
    }
}

/// Where the helper binary is: next to the running executable, or one directory up (a test
/// binary runs from `target/debug/deps`).
pub fn find_helper() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let dir = exe.parent()?;
    [dir.join(HELPER_NAME), dir.parent()?.join(HELPER_NAME)]
        .into_iter()
        .find(|p| p.is_file())
}

/// A running `uvfs-conformance-host --serve`: runs cases on the host kernel, one fresh
/// sandbox each.
///
/// ```no_run
/// # use uvfs_conformance::{HostServer, load_file};
/// let mut server = HostServer::spawn().expect("the helper starts");
/// let case = &load_file("cases/io.cases".as_ref()).unwrap()[0];
/// let run = server.run(case);
/// assert!(run.aborted.is_none());
/// ```
pub struct HostServer {
    helper: PathBuf,
    fencing: Fencing,
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

/// How a server's cases hold the mount fence ([`super::fence`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fencing {
    /// Every op: shared, or exclusive if it may mount. For hand-written cases.
    Full,
    /// Only what may mount, exclusive (`--unfenced-walks`, [`super::fence::unfence_walks`]):
    /// for the random tester, whose walks are never near the symlink limit.
    MountsOnly,
}

impl HostServer {
    /// Starts the helper found by [`find_helper`], fencing every op.
    ///
    /// # Errors
    /// No helper binary found, or it does not start.
    pub fn spawn() -> io::Result<HostServer> {
        let helper = find_helper().ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::NotFound,
                format!("no {HELPER_NAME} next to the running executable"),
            )
        })?;
        Self::spawn_with(&helper, Fencing::Full)
    }

    /// Starts the helper at `helper`, fencing every op.
    ///
    /// # Errors
    /// It does not start.
    pub fn spawn_at(helper: &Path) -> io::Result<HostServer> {
        Self::spawn_with(helper, Fencing::Full)
    }

    /// Starts the helper at `helper` with `fencing`.
    ///
    /// # Errors
    /// It does not start.
    pub fn spawn_with(helper: &Path, fencing: Fencing) -> io::Result<HostServer> {
        let mut command = Command::new(helper);
        command.arg("--serve");
        if fencing == Fencing::MountsOnly {
            command.arg("--unfenced-walks");
        }
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()?;
        let stdin = child.stdin.take().expect("piped");
        let stdout = BufReader::new(child.stdout.take().expect("piped"));
        Ok(HostServer {
            helper: helper.to_path_buf(),
            fencing,
            child,
            stdin,
            stdout,
        })
    }

    /// Runs `case` on the host; restarts the server once if it died.
    pub fn run(&mut self, case: &Case) -> CaseRun {
        match self.try_run(case) {
            Ok(run) => run,
            Err(first) => match Self::spawn_with(&self.helper, self.fencing) {
                Err(e) => aborted(format!("{first}; restarting the host server: {e}")),
                Ok(fresh) => {
                    *self = fresh;
                    self.try_run(case).unwrap_or_else(aborted)
                }
            },
        }
    }

    fn try_run(&mut self, case: &Case) -> Result<CaseRun, String> {
        let text = case.to_string();
        let io = |e: io::Error| format!("host server: {e}");
        write!(self.stdin, "{}\n{text}", text.len()).map_err(io)?;
        self.stdin.flush().map_err(io)?;
        let mut lines = Vec::new();
        loop {
            let mut line = String::new();
            if self.stdout.read_line(&mut line).map_err(io)? == 0 {
                return Err("the host server exited".into());
            }
            let end = matches!(
                serde_json::from_str::<HostLine>(&line),
                Ok(HostLine::Done | HostLine::Aborted(_))
            );
            lines.push(line);
            if end {
                return Ok(read_host_output(lines.concat().as_bytes()));
            }
        }
    }
}

fn aborted(why: String) -> CaseRun {
    CaseRun {
        outcomes: Vec::new(),
        aborted: Some(why),
    }
}

impl Drop for HostServer {
    fn drop(&mut self) {
        // Between cases the server only waits for the next frame.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Checks that the helper at `helper` can set up its sandbox here.
///
/// # Errors
/// Why not: the helper is missing, the environment refuses the sandbox (not root), or the
/// probe failed otherwise.
pub fn probe(helper: &Path) -> Result<(), String> {
    let out = Command::new(helper)
        .arg("--probe")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot start {}: {e}", helper.display()))?;
    if out.status.success() {
        return Ok(());
    }
    let why = String::from_utf8_lossy(&out.stderr).trim().to_string();
    match out.status.code() {
        Some(super::protocol::EXIT_ENV_REFUSED) => Err(format!(
            "the host sandbox is refused here (needs root): {why}"
        )),
        _ => Err(format!(
            "the host helper failed its probe ({}): {why}",
            out.status
        )),
    }
}
