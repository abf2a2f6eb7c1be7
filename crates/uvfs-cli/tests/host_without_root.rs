//! The host column runs without root: in a user and mount namespace of the process's own where
//! the kernel allows one (named `host`, on a private tmpfs), else in a plain directory (named
//! `host (not tmpfs)`). Run as `nobody` through `setpriv` when the tests run as root, as they
//! do here; as the user itself otherwise. Oracle: the columns' names and samples in the JSON
//! output, and whether util-linux's `unshare -Urm` may mount a tmpfs as the same user.

use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The uid and gid the run takes when the tests run as root: `nobody`'s.
const NOBODY: &str = "65534";

/// Whether this process runs as root (`/proc/self/status`'s effective uid).
fn is_root() -> bool {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|ids| ids.split_whitespace().nth(1))
        == Some("0")
}

/// `program ARGS` as an unprivileged user: through `setpriv` as `nobody` when root; `None`
/// (with the reason printed) if that is impossible.
fn unprivileged(program: &str, args: &[&str], envs: &[(&str, &str)]) -> Option<Output> {
    let mut c = if is_root() {
        let mut c = Command::new("setpriv");
        c.args([
            "--reuid",
            NOBODY,
            "--regid",
            NOBODY,
            "--clear-groups",
            "--",
            program,
        ]);
        c
    } else {
        Command::new(program)
    };
    c.args(args)
        .env("RUST_BACKTRACE", "0")
        .env_remove("UVFS_BENCH_NO_USERNS")
        .envs(envs.iter().copied());
    match c.output() {
        Ok(o) => Some(o),
        Err(e) => {
            eprintln!("skipped: cannot run {program} unprivileged: {e}");
            None
        }
    }
}

/// Whether `unshare -Urm` lets the unprivileged user mount a tmpfs (`None`: no `unshare`).
fn user_namespaces_work() -> Option<bool> {
    let o = unprivileged(
        "unshare",
        &["-Urm", "sh", "-c", "mount -t tmpfs none /mnt"],
        &[],
    )?;
    Some(o.status.success())
}

/// A JSON file the unprivileged run may create: in a fresh world-writable directory.
struct JsonOut(PathBuf);

impl JsonOut {
    fn new(tag: &str) -> JsonOut {
        // The tests run in parallel: one directory per call.
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("uvfs-cli-noroot-{tag}-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let mut perms = std::fs::metadata(&dir).expect("stat").permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o777);
        std::fs::set_permissions(&dir, perms).expect("chmod");
        JsonOut(dir.join("out.json"))
    }

    fn path(&self) -> &str {
        self.0.to_str().expect("utf-8")
    }

    /// The JSON lines written.
    fn lines(&self) -> Vec<serde_json::Value> {
        std::fs::read_to_string(&self.0)
            .expect("json written")
            .lines()
            .map(|l| serde_json::from_str(l).expect("a JSON line"))
            .collect()
    }
}

impl Drop for JsonOut {
    fn drop(&mut self) {
        if let Some(dir) = self.0.parent() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// Runs write1 (host and uvfs columns) and scale's lseek1 (host, processes mode: forked
/// copies) unprivileged with `envs`; returns the host column's name in each, after checking
/// that it measured.
fn host_names(envs: &[(&str, &str)]) -> Option<(String, String)> {
    let bin = env!("CARGO_BIN_EXE_uvfs");
    let json = JsonOut::new("bench");
    let args = [
        "bench",
        "--quick",
        "--columns",
        "host,uvfs",
        "--json",
        json.path(),
        "write1",
    ];
    let o = unprivileged(bin, &args, envs)?;
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{args:?}: {err}");
    let lines = json.lines();
    let summary = lines
        .iter()
        .find(|l| l["type"] == "summary")
        .expect("a summary");
    let host = &summary["result"]["workloads"][0][1][0]["columns"][0];
    assert!(host["skipped"].is_null(), "{host}");
    assert_eq!(host["samples"].as_array().map(Vec::len), Some(2), "{host}");
    let bench_name = host["column"].as_str().expect("a name").to_string();
    // The table compares uvfs with the host column, whichever its name.
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("host/x threads=1"), "{out}");

    let json = JsonOut::new("scale");
    let args = [
        "bench",
        "scale",
        "--quick",
        "--columns",
        "host",
        "--mode",
        "processes",
        "--copies",
        "2",
        "--json",
        json.path(),
        "lseek1",
    ];
    let o = unprivileged(bin, &args, envs)?;
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{args:?}: {err}");
    let samples: Vec<_> = json
        .lines()
        .into_iter()
        .filter(|l| l["type"] == "scale-sample")
        .collect();
    // copies {1, 2} x 2 samples.
    assert_eq!(samples.len(), 4, "{samples:?}");
    let scale_name = samples[0]["column"].as_str().expect("a name").to_string();
    Some((bench_name, scale_name))
}

#[test]
fn host_column_runs_without_root_in_a_user_namespace_where_allowed() {
    let Some(userns) = user_namespaces_work() else {
        return;
    };
    let Some((bench, scale)) = host_names(&[]) else {
        return;
    };
    let want = if userns { "host" } else { "host (not tmpfs)" };
    assert_eq!((bench.as_str(), scale.as_str()), (want, want));
}

#[test]
fn host_column_falls_back_to_a_plain_directory_labelled_not_tmpfs() {
    let Some((bench, scale)) = host_names(&[("UVFS_BENCH_NO_USERNS", "1")]) else {
        return;
    };
    assert_eq!(
        (bench.as_str(), scale.as_str()),
        ("host (not tmpfs)", "host (not tmpfs)")
    );
}
