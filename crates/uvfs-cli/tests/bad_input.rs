//! Bad input to every flag and argument of every `uvfs bench` subcommand is refused before
//! anything runs, with one line that names the flag and what it accepts; nothing panics.
//! Oracle: the exit status (2, clap's for a refused command line), stderr's shape, and an
//! empty stdout (a run prints its tables there).
//!
//! "One line" means: stderr's first line is `error: invalid value 'V' for 'FLAG': takes ...`
//! (or `error: a value is required for 'FLAG' ...: <what it accepts>`), and every other line
//! is blank or clap's `For more information, try '--help'.`. clap's own layout puts a list of
//! accepted names and its suggestion on lines of their own; `uvfs` folds them into the first.

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Longer than any refusal takes by far; a value that is wrongly accepted starts a run, which
/// each case keeps short (`--quick`, one cheap column and workload), so that a missed refusal
/// fails on its exit status rather than here.
const DEADLINE: Duration = Duration::from_secs(120);

/// Runs `uvfs ARGS`, killed at [`DEADLINE`].
fn uvfs(args: &[&str]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_uvfs"))
        .args(args)
        .env("RUST_BACKTRACE", "0")
        .env_remove("UVFS_BENCH_NO_USERNS")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run uvfs");
    let start = Instant::now();
    while child.try_wait().expect("wait for uvfs").is_none() {
        if start.elapsed() > DEADLINE {
            let _ = child.kill();
            panic!("{args:?} still ran after {DEADLINE:?}: the refusal came too late");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("uvfs output")
}

/// Asserts that `args` is refused with one line naming `flag` and containing `accepts`.
fn refused(args: &[&str], flag: &str, accepts: &str) {
    let o = uvfs(args);
    let err = String::from_utf8_lossy(&o.stderr);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}{out}");
    assert!(!err.contains("panicked"), "{args:?} panicked: {err}");
    assert!(out.is_empty(), "{args:?} ran: {out}");
    let mut lines = err.lines();
    let first = lines.next().unwrap_or_default();
    assert!(first.starts_with("error: "), "{args:?}: {err}");
    assert!(
        first.contains(&format!("'{flag}")),
        "{args:?}: the first line names {flag}: {err}"
    );
    assert!(
        first.contains(accepts),
        "{args:?}: the first line says {accepts:?}: {err}"
    );
    for l in lines {
        assert!(
            l.is_empty() || l == "For more information, try '--help'.",
            "{args:?}: more than one line: {l:?} in\n{err}"
        );
    }
}

/// A file, to be used as a directory in paths.
struct TempFile(PathBuf);

impl TempFile {
    fn new(tag: &str) -> TempFile {
        let p = std::env::temp_dir().join(format!("uvfs-cli-bad-{tag}-{}", std::process::id()));
        std::fs::write(&p, "not a directory").expect("temp file");
        TempFile(p)
    }

    /// `self/rest`, a path whose parent is this file.
    fn under(&self, rest: &str) -> String {
        self.0.join(rest).to_str().expect("utf-8").to_string()
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Counts: 0, 1 (for samples), negative, past the bound, past u64, not a number, missing.
const ITERATIONS: &str = "takes a sample count from 2 to 1000";

#[test]
fn bench_refuses_bad_counts() {
    let cheap = ["--quick", "--columns", "uvfs", "write1"];
    for bad in ["0", "1", "-1", "1001", "99999999999999999999999", "ten", ""] {
        let args = [&["bench", "--iterations", bad][..], &cheap].concat();
        refused(&args, "--iterations <N>", ITERATIONS);
    }
    refused(&["bench", "--iterations"], "--iterations <N>", "2 to 1000");
    for bad in [
        "0",
        "-1",
        "1025",
        "100000",
        "1,x",
        "2,0",
        "99999999999999999999999",
        "",
    ] {
        let args = [&["bench", "--threads", bad][..], &cheap].concat();
        refused(
            &args,
            "--threads <N,...>",
            "takes thread counts from 1 to 1024",
        );
    }
    refused(&["bench", "--threads"], "--threads <N,...>", "1 to 1024");
}

#[test]
fn bench_refuses_unknown_names_and_lists_the_valid_ones() {
    let workloads =
        "takes write1, write1-watch, read1, open-read-close, stat-walk, create-unlink, find";
    refused(&["bench", "write9"], "[WORKLOADS]...", workloads);
    refused(
        &["bench", "--quick", "write9"],
        "[WORKLOADS]...",
        "did you mean 'write1'?",
    );
    refused(&["bench", "write1,nope"], "[WORKLOADS]...", workloads);
    refused(&["bench", "-1"], "[WORKLOADS]...", workloads);
    let columns =
        "takes host, uvfs, uvfs-nonotify, uvfs-vanilla, uvfs-vanilla-notify, uvfs-tmpfs, vfs-crate, gvisor";
    for bad in ["hots", "uvfs,gVisor", "", "0"] {
        refused(
            &["bench", "--quick", "--columns", bad, "write1"],
            "--columns <COLUMN,...>",
            columns,
        );
    }
    refused(
        &["bench", "--columns", "hots"],
        "--columns <COLUMN,...>",
        "did you mean 'host'?",
    );
    refused(&["bench", "--columns"], "--columns <COLUMN,...>", columns);
    let watches = "takes none, unrelated, parent-other, parent, self, self-undrained, mount";
    refused(
        &["bench", "--quick", "--watch", "parnet", "write1-watch"],
        "--watch <SCENARIO,...>",
        watches,
    );
    refused(
        &["bench", "--watch", "parnet"],
        "--watch <SCENARIO,...>",
        "did you mean 'parent'?",
    );
    // A scenario without the workload that has scenarios.
    refused(
        &["bench", "--quick", "--watch", "parent", "write1"],
        "--watch <SCENARIO,...>",
        "picks the scenarios of the write1-watch workload",
    );
}

#[test]
fn bench_refuses_unwritable_output_paths_before_the_run() {
    let file = TempFile::new("bench");
    let cheap = ["--quick", "--columns", "uvfs", "write1"];
    let file_path = file.0.to_str().expect("utf-8").to_string();
    let dir_path = std::env::temp_dir().to_str().expect("utf-8").to_string();
    let nested = file.under("a/b");
    for (bad, why) in [
        ("/proc/nope/x.json", "cannot create /proc/nope"),
        (&file.under("x.json"), "is not a directory"),
        (&nested, "is not a directory"),
        (&dir_path, "cannot create it"),
    ] {
        let args = [&["bench", "--json", bad][..], &cheap].concat();
        refused(&args, "--json <FILE>", why);
        assert!(
            refused_names(&args, bad),
            "{args:?}: the message names the path"
        );
    }
    for (bad, why) in [
        ("/proc/nope/svg", "cannot create /proc/nope/svg"),
        (&file.under("svg"), "is not a directory"),
        (&file_path, "is not a directory"),
    ] {
        let args = [&["bench", "--svg", bad][..], &cheap].concat();
        refused(&args, "--svg <DIR>", why);
        assert!(refused_names(&args, bad), "{args:?}");
    }
    refused(&["bench", "--json"], "--json <FILE>", "JSON lines to FILE");
    refused(&["bench", "--svg"], "--svg <DIR>", "SVG chart");
}

/// Whether the refusal of `args` names `path`.
fn refused_names(args: &[&str], path: &str) -> bool {
    String::from_utf8_lossy(&uvfs(args).stderr).contains(path)
}

#[test]
fn scale_refuses_bad_input() {
    let cheap = [
        "--quick",
        "--columns",
        "uvfs",
        "--mode",
        "threads",
        "--copies",
        "2",
    ];
    let testcases = "takes open1, open2, open3, unlink1";
    for bad in ["open9", "lseek1,nope", "LSEEK1", "-1"] {
        let args = [&["bench", "scale", bad][..], &cheap].concat();
        refused(&args, "[TESTCASES]...", testcases);
    }
    refused(
        &["bench", "scale", "opne1"],
        "[TESTCASES]...",
        "did you mean 'open1'?",
    );
    for bad in [
        "0",
        "-1",
        "257",
        "100000",
        "2,x",
        "99999999999999999999999",
        "",
    ] {
        refused(
            &["bench", "scale", "--copies", bad, "lseek1"],
            "--copies <N,...>",
            "takes copy counts from 1 to 256",
        );
    }
    for bad in ["fibers", "", "Both", "1"] {
        refused(
            &["bench", "scale", "--mode", bad, "lseek1"],
            "--mode <MODE>",
            "takes threads, processes, both",
        );
    }
    for bad in ["gvisor", "uvfs-vanilla", "x", ""] {
        refused(
            &["bench", "scale", "--columns", bad, "lseek1"],
            "--columns <COLUMN,...>",
            "takes host, uvfs",
        );
    }
    for bad in ["0", "1", "-5", "1001", "many"] {
        let args = [
            &["bench", "scale", "--iterations", bad, "lseek1"][..],
            &cheap,
        ]
        .concat();
        refused(&args, "--iterations <N>", ITERATIONS);
    }
    let file = TempFile::new("scale");
    for bad in ["/proc/nope/x.json", &file.under("x.json")] {
        let args = [&["bench", "scale", "--json", bad, "lseek1"][..], &cheap].concat();
        refused(&args, "--json <FILE>", bad);
    }
    for flag in ["--copies", "--mode", "--columns", "--iterations", "--json"] {
        let o = uvfs(&["bench", "scale", flag]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{flag}: {err}");
        assert!(
            err.starts_with(&format!("error: a value is required for '{flag} ")),
            "{err}"
        );
    }
}

#[test]
fn memory_refuses_bad_input() {
    for bad in ["0", "-1", "10000001", "99999999999999999999999", "1e6", ""] {
        refused(
            &["bench", "memory", "--files", bad],
            "--files <N>",
            "takes a file count from 1 to 10000000",
        );
    }
    let file = TempFile::new("memory");
    for bad in ["/proc/nope/x.json", &file.under("x.json")] {
        refused(
            &["bench", "memory", "--quick", "--json", bad],
            "--json <FILE>",
            bad,
        );
    }
    // The hidden probe of one column.
    let probe = |column: &str, files: &str, dirs: &str| {
        [
            "bench",
            "memory-probe",
            column,
            "--files",
            files,
            "--dirs",
            dirs,
        ]
        .map(str::to_string)
        .to_vec()
    };
    let run = |v: Vec<String>, flag: &str, accepts: &str| {
        let args: Vec<&str> = v.iter().map(String::as_str).collect();
        refused(&args, flag, accepts);
    };
    for bad in ["gvisor", "HOST", ""] {
        run(
            probe(bad, "10", "1"),
            "<COLUMN>",
            "takes host, uvfs, vfs-crate",
        );
    }
    for bad in ["0", "-1", "10000001", "x"] {
        run(probe("uvfs", bad, "1"), "--files <FILES>", "1 to 10000000");
        run(probe("uvfs", "10", bad), "--dirs <DIRS>", "1 to 10000000");
    }
    run(
        probe("uvfs", "10", "11"),
        "--dirs <DIRS>",
        "at most --files directories",
    );
}

/// Flags that take no value, and flags no subcommand has: clap's refusal, which names the
/// flag on its first line; no panic, nothing run.
#[test]
fn unknown_flags_and_values_for_switches_are_refused() {
    for args in [
        &["bench", "--quick=yes", "write1"][..],
        &["bench", "scale", "--quick=1"],
        &["bench", "memory", "--quick=no"],
        &["bench", "--iteration", "2"],
        &["bench", "scale", "--copy", "2"],
        &["bench", "memory", "--file", "2"],
        &["bench", "--quick", "scale"],
    ] {
        let o = uvfs(args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(o.stdout.is_empty(), "{args:?} ran");
        let first = err.lines().next().unwrap_or_default();
        assert!(first.starts_with("error: "), "{args:?}: {err}");
        let named = args[1..]
            .iter()
            .filter(|a| a.starts_with("--") || **a == "scale")
            .any(|a| first.contains(a.split('=').next().unwrap_or(a)));
        assert!(named, "{args:?}: the first line names the flag: {err}");
    }
}
