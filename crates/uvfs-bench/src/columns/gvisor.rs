//! gVisor: the same work on the Sentry's VFS with its tmpfs, run in process by a Go driver.
//!
//! The driver (`crates/uvfs-bench/gvisor/`, Go module `uvfs.dev/gvisor-driver`, gVisor pinned in
//! its `go.mod`) is built once into `target/uvfs-gvisor-driver/` and rebuilt only when its
//! sources are newer than the binary. For each configuration `setup` starts one driver process
//! in `--serve` mode: it builds the VFS, the tmpfs and the files, prints `{"ready": true}`, then
//! answers each operation count written to its stdin with one `{"elapsed_ns": N}` line, measured
//! inside the driver from the common start of its goroutines. Process start-up and VFS setup are
//! never timed, and the process stays warm across the runner's iterations like the in-process
//! columns do.
//!
//! For `find` the driver builds a tree per walker (`--files`, `--dirs`), walks each once before
//! `ready`, and a count on stdin is whole walks per walker (the runner's entries divided by the
//! tree's; `gvisor/find.go`); the driver checks every walk's entry count itself and exits with
//! the counts if one is short.
//!
//! For `write1-watch` the driver runs `write1` with `--watch SCENARIO`: it places the scenario's
//! watch with gVisor's own inotify and checks it by the events one write makes before `ready`
//! (`gvisor/watch.go`); gVisor has no fanotify, so the column skips `mount`. The driver process
//! is handled by [`super::served`], shared with the `uvfs-nonotify` column.
//!
//! `uvfs bench memory` starts the same driver in its `--workload memory` mode
//! (`gvisor/memory.go`, `memory/runner.rs`).
//!
//! Without `go` the column reports "skipped: go not installed" for every configuration; if the
//! build fails, "skipped: driver build failed: ...".

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use anyhow::{anyhow, bail, Context};

use super::served::Session;
use crate::column::{Column, Support};

/// Why the gVisor column skips the pipe workloads. Its package could make the pipes in
/// process (`pipefs.NewConnectedPipeFDs` over a disconnected pipefs mount, or
/// `pipe.NewVFSPipe(...).ReaderWriterPair`), but its `Read` and `Write` return
/// `ErrWouldBlock` and leave the wait to the sentry's task (`waiter.Entry` on the file's
/// queue), which the driver does not have: it would need a wait loop of its own for each
/// blocked call, and the `messaging` harness in Go.
pub const GVISOR_PIPES_SKIPPED: &str = "skipped: the driver has no pipe workloads yet (gVisor's pipes block through the sentry's task waiter, which the driver would have to provide)";
use crate::params::{Params, Sharing, Workload};
use crate::watch::Watch;

/// Why the gVisor column skips the `mount` scenario of `write1-watch`.
pub const GVISOR_MOUNT_SKIPPED: &str = "skipped: gVisor has no fanotify";

/// Why the gVisor column skips `sysfs-open-read`.
pub const GVISOR_SYSFS_SKIPPED: &str =
    "skipped: gVisor's sysfs is not driven here (the driver mounts its tmpfs only)";

/// The Go module that provides the VFS, as named in the driver's `go.mod`.
const GVISOR_MODULE: &str = "gvisor.dev/gvisor";

/// File name of the driver binary under `target/uvfs-gvisor-driver/`.
const DRIVER_NAME: &str = "uvfs-gvisor-driver";

/// gVisor's Sentry VFS and tmpfs, driven in process by a Go program.
pub struct Gvisor {
    /// The built driver, or why the column is skipped.
    driver: Result<PathBuf, String>,
    /// The driver process serving the current configuration, and that configuration.
    session: Option<(Params, Session)>,
}

impl Gvisor {
    /// Finds `go` and builds the driver if it is missing or older than its sources, reporting
    /// progress through `status`. Never fails: a missing `go` or a failed build makes
    /// [`Column::supports`] say "skipped: why" (the full build error goes to stderr).
    pub fn prepare(status: &mut dyn FnMut(&str)) -> Gvisor {
        let binary = target_dir().join(DRIVER_NAME).join(DRIVER_NAME);
        Self::prepare_with(find_go(), &binary, status)
    }

    /// [`Gvisor::prepare`] with `go` (if any) building the driver into `binary`.
    fn prepare_with(go: Option<PathBuf>, binary: &Path, status: &mut dyn FnMut(&str)) -> Gvisor {
        let driver = match go {
            None => Err("skipped: go not installed".to_string()),
            Some(go) => build_driver(&go, binary, status).map_err(|e| {
                eprintln!("gvisor column: driver build failed:\n{e}");
                let first = e
                    .lines()
                    .map(str::trim)
                    .find(|l| !l.is_empty())
                    .unwrap_or("unknown error");
                format!("skipped: driver build failed: {first}")
            }),
        };
        Gvisor {
            driver,
            session: None,
        }
    }

    /// The built driver, or why the column is skipped ("skipped: ...").
    pub fn driver_binary(&self) -> Result<&Path, &str> {
        self.driver.as_deref().map_err(String::as_str)
    }

    fn driver(&self) -> anyhow::Result<&Path> {
        self.driver
            .as_deref()
            .map_err(|why| anyhow!("gvisor column {why}"))
    }
}

impl Column for Gvisor {
    fn name(&self) -> &'static str {
        "gvisor"
    }

    fn helper_pid(&self) -> Option<u32> {
        self.session.as_ref().map(|(_, s)| s.pid())
    }

    fn supports(&self, p: &Params) -> Support {
        match &self.driver {
            Ok(_) if p.workload.uses_pipes() => Support::No(GVISOR_PIPES_SKIPPED.into()),
            Ok(_) if p.watch == Watch::Mount => Support::No(GVISOR_MOUNT_SKIPPED.into()),
            Ok(_) if p.workload == Workload::SysfsOpenRead => {
                Support::No(GVISOR_SYSFS_SKIPPED.into())
            }
            Ok(_) => Support::Yes,
            Err(why) => Support::No(why.clone()),
        }
    }

    fn setup(&mut self, p: &Params) -> anyhow::Result<()> {
        self.session = None;
        let session = start_session(self.driver()?, p)?;
        self.session = Some((*p, session));
        Ok(())
    }

    fn run(&mut self, p: &Params, ops: u64) -> anyhow::Result<Duration> {
        if self.session.as_ref().is_none_or(|(sp, _)| sp != p) {
            self.setup(p)?;
        }
        let count = driver_count(p, ops)?;
        super::served::round_or_forget(&mut self.session, count)
    }

    fn teardown(&mut self) {
        self.session = None;
    }

    fn note(&self) -> &'static str {
        "gVisor's Sentry VFS + tmpfs (Go, its own locks, refcounts and GC) called in process: \
         no syscall boundary, no copy to or from user memory, no fd table"
    }
}

/// Starts the driver for `p` and waits until its VFS and files are set up.
fn start_session(driver: &Path, p: &Params) -> anyhow::Result<Session> {
    let sharing = match p.sharing {
        Sharing::Shared => "shared",
        Sharing::PerThread => "per-thread",
    };
    let tree_args = match p.tree {
        Some(t) => vec![
            "--files".to_string(),
            t.files.to_string(),
            "--dirs".to_string(),
            t.dirs.to_string(),
        ],
        None => Vec::new(),
    };
    // `write1-watch` is the driver's `write1` with a watch placed first.
    let workload = match p.workload {
        Workload::Write1Watch => Workload::Write1,
        w => w,
    };
    let mut cmd = Command::new(driver);
    cmd.args([
        "--workload",
        workload.name(),
        "--sharing",
        sharing,
        "--serve",
    ])
    .args([
        "--threads",
        &p.threads.to_string(),
        "--depth",
        &p.depth.to_string(),
        "--watch",
        p.watch.name(),
    ])
    .args(tree_args);
    let mut s = Session::start(cmd, format!("gVisor driver ({})", p.label()))?;
    let line = s.read_line().context("gVisor driver setup")?;
    if line.trim() != r#"{"ready": true}"# {
        bail!("gVisor driver setup: unexpected line {line:?}");
    }
    Ok(s)
}

/// The count a driver round takes for `ops` operations: whole walks for `find`.
fn driver_count(p: &Params, ops: u64) -> anyhow::Result<u64> {
    match p.tree {
        Some(tree) => tree.walks(ops),
        None => Ok(ops),
    }
}

/// `go` from `PATH`, else the official install location.
fn find_go() -> Option<PathBuf> {
    ["go", "/usr/local/go/bin/go"]
        .into_iter()
        .map(PathBuf::from)
        .find(|go| {
            Command::new(go)
                .arg("version")
                .output()
                .is_ok_and(|o| o.status.success())
        })
}

/// The driver's Go sources.
fn source_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("gvisor")
}

/// The workspace's `target/` (or `CARGO_TARGET_DIR`), where the driver binary goes.
pub(crate) fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target"),
    }
}

fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

/// Whether `binary` exists and is at least as new as every file in `sources`.
fn up_to_date(binary: &Path, sources: &Path) -> Result<bool, String> {
    let Some(built) = modified(binary) else {
        return Ok(false);
    };
    let entries =
        std::fs::read_dir(sources).map_err(|e| format!("reading {}: {e}", sources.display()))?;
    for entry in entries {
        let path = entry.map_err(|e| e.to_string())?.path();
        if modified(&path).is_some_and(|m| m > built) {
            return Ok(false);
        }
    }
    Ok(true)
}

/// `go` with the driver's sources as working directory; never fetches another toolchain.
fn go_command(go: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(go);
    cmd.args(args)
        .current_dir(source_dir())
        .env("GOTOOLCHAIN", "local");
    cmd
}

/// Runs `cmd`; its stderr (or how it failed to start) is the error.
fn run_go(cmd: &mut Command) -> Result<(), String> {
    let out = cmd.output().map_err(|e| format!("cannot run go: {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    // `go` reports each module it fetches before the error itself.
    let error: Vec<&str> = stderr
        .lines()
        .filter(|l| !l.starts_with("go: downloading "))
        .collect();
    Err(if error.is_empty() {
        format!("go exited with {}", out.status)
    } else {
        error.join("\n")
    })
}

/// Builds the driver into `binary` unless it is up to date; `binary` again.
fn build_driver(go: &Path, binary: &Path, status: &mut dyn FnMut(&str)) -> Result<PathBuf, String> {
    // One build at a time in this process (parallel tests); the others then find it up to date.
    static BUILD: Mutex<()> = Mutex::new(());
    let _building = BUILD.lock().unwrap_or_else(|e| e.into_inner());
    if up_to_date(binary, &source_dir())? {
        return Ok(binary.to_path_buf());
    }
    // Already in the module cache? Ask without touching the network first.
    if run_go(go_command(go, &["mod", "download", GVISOR_MODULE]).env("GOPROXY", "off")).is_err() {
        status("downloading gvisor.dev/gvisor");
        run_go(&mut go_command(go, &["mod", "download", GVISOR_MODULE]))?;
    }
    status("compiling gVisor driver (first use, ~40 s)");
    let out_dir = binary
        .parent()
        .expect("the driver binary is a file in a directory");
    std::fs::create_dir_all(out_dir).map_err(|e| format!("creating {}: {e}", out_dir.display()))?;
    // Build beside the binary and rename, so a concurrent run never sees half a file (builds in
    // this process are serialised by `BUILD`; the pid separates processes).
    let partial = out_dir.join(format!("{DRIVER_NAME}.{}.partial", std::process::id()));
    let partial_arg = partial
        .to_str()
        .ok_or_else(|| format!("non-UTF-8 path {}", partial.display()))?;
    run_go(&mut go_command(
        go,
        &["build", "-buildvcs=false", "-o", partial_arg, "."],
    ))?;
    std::fs::rename(&partial, binary)
        .map_err(|e| format!("installing {}: {e}", binary.display()))?;
    Ok(binary.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(workload: Workload, depth: usize) -> Params {
        Params {
            workload,
            threads: 1,
            depth,
            sharing: Sharing::Shared,
            tree: None,
            messaging: None,
            watch: Watch::None,
        }
    }

    /// Oracle: the driver's own clock; only that it measured something is checked.
    #[test]
    fn driver_times_write1_and_stat_walk() {
        let mut g = Gvisor::prepare(&mut |s| eprintln!("gvisor: {s}"));
        let write1 = params(Workload::Write1, 1);
        if find_go().is_none() {
            eprintln!("skipped: go not installed");
            assert_eq!(
                g.supports(&write1),
                Support::No("skipped: go not installed".into())
            );
            return;
        }
        assert_eq!(
            g.supports(&write1),
            Support::Yes,
            "driver build failed (see stderr)"
        );
        for p in [write1, params(Workload::StatWalk, 2)] {
            g.setup(&p).expect("driver setup");
            let d = g.run(&p, 1000).expect("driver run");
            assert!(d > Duration::ZERO, "{}: zero duration", p.label());
            g.teardown();
        }
    }

    /// Oracle: the driver's own entry-count check (it exits on a short walk) and clock.
    #[test]
    fn driver_walks_find_trees_in_whole_walks() {
        let mut g = Gvisor::prepare(&mut |s| eprintln!("gvisor: {s}"));
        if let Support::No(why) = g.supports(&params(Workload::Find, 1)) {
            eprintln!("{why}");
            return;
        }
        let tree = crate::find::Tree::default_for(true);
        let p = Params {
            threads: 2,
            sharing: Sharing::PerThread,
            tree: Some(tree),
            ..params(Workload::Find, 1)
        };
        g.setup(&p).expect("driver setup");
        let d = g.run(&p, 2 * tree.entries()).expect("two whole walks");
        assert!(d > Duration::ZERO);
        let e = g.run(&p, tree.entries() + 1).expect_err("not a whole walk");
        assert!(
            format!("{e}").contains("not a whole number of walks"),
            "{e}"
        );
        g.teardown();
    }

    #[test]
    fn missing_go_skips_every_configuration() {
        let binary = Path::new("/nonexistent/uvfs-gvisor-driver");
        let g = Gvisor::prepare_with(None, binary, &mut |s| panic!("no build without go: {s:?}"));
        for w in Workload::ALL {
            assert_eq!(
                g.supports(&params(w, 1)),
                Support::No("skipped: go not installed".into())
            );
        }
    }

    /// Oracle: a stand-in `go` that fails like a compile error after fetching a module.
    #[test]
    fn build_failure_skips_with_the_first_error_line() {
        let dir = std::env::temp_dir().join(format!("uvfs-gvisor-fake-go-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let fake_go = dir.join("go");
        std::fs::write(
            &fake_go,
            "#!/bin/sh\necho 'go: downloading gvisor.dev/gvisor v0' >&2\n\
             echo './main.go:1:1: boom' >&2\necho 'second line' >&2\nexit 1\n",
        )
        .expect("write fake go");
        std::fs::set_permissions(
            &fake_go,
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )
        .expect("chmod fake go");
        // Another test thread that forks while the script is open for writing lends the open
        // to its child until the child execs, and running the script meanwhile fails with
        // ETXTBSY: that is the test's race, not the build's, so the build is tried again.
        let (g, statuses) = (0..100)
            .map(|_| {
                let mut statuses = Vec::new();
                let g = Gvisor::prepare_with(
                    Some(fake_go.clone()),
                    &dir.join("out/driver"),
                    &mut |s| statuses.push(s.to_string()),
                );
                (g, statuses)
            })
            .find(|(g, _)| {
                let busy = matches!(g.supports(&params(Workload::Read1, 1)),
                    Support::No(ref why) if why.contains("Text file busy"));
                if busy {
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
                !busy
            })
            .expect("the fake go ran within 100 tries");
        std::fs::remove_dir_all(&dir).expect("remove temp dir");
        assert_eq!(statuses, ["downloading gvisor.dev/gvisor"]);
        assert_eq!(
            g.supports(&params(Workload::Read1, 1)),
            Support::No("skipped: driver build failed: ./main.go:1:1: boom".into())
        );
    }

    #[test]
    fn driver_failure_reports_its_stderr() {
        let g = Gvisor::prepare(&mut |_| {});
        let Ok(driver) = g.driver() else {
            eprintln!("skipped: no driver ({:?})", g.driver);
            return;
        };
        let mut s = start_session(driver, &params(Workload::Write1, 1)).expect("driver setup");
        // A count the driver cannot parse makes it exit with a message.
        s.write_line("not-a-number").expect("write to driver");
        let e = s.read_line().expect_err("driver must exit");
        assert!(format!("{e}").contains("bad operation count"), "{e}");
    }
}
