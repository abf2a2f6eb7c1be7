//! The `uvfs` binary's command line: `uvfs bench scale` refuses bad input with a message (never
//! a panic) and runs a smoke pass; the seed workloads' command keeps its shape. Oracle: exit
//! status and output text.

use std::process::{Command, Output};

fn uvfs(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_uvfs"))
        .args(args)
        .env("RUST_BACKTRACE", "0")
        .output()
        .expect("run uvfs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Runs `args`, expects failure without a panic, and returns stderr.
fn refused(args: &[&str]) -> String {
    let o = uvfs(args);
    let err = text(&o.stderr);
    assert!(
        !o.status.success(),
        "{args:?} succeeded: {}",
        text(&o.stdout)
    );
    assert!(!err.contains("panicked"), "{args:?} panicked: {err}");
    err
}

#[test]
fn scale_refuses_bad_input_with_a_message() {
    let e = refused(&["bench", "scale", "open9"]);
    assert!(e.contains("unknown testcase \"open9\""), "{e}");
    for t in ["open1", "unlink2", "pread3", "fallocate1"] {
        assert!(e.contains(t), "the valid testcases are listed: {e}");
    }
    let e = refused(&["bench", "scale", "pipe1"]);
    assert!(e.contains("not yet") && e.contains("pipes"), "{e}");
    let e = refused(&["bench", "scale", "--copies", "0"]);
    assert!(
        e.contains("--copies takes counts from 1 to 256, not 0"),
        "{e}"
    );
    let e = refused(&["bench", "scale", "--copies", "2,100000"]);
    assert!(e.contains("not 100000"), "{e}");
    let e = refused(&["bench", "scale", "--copies", "99999999999999999999999"]);
    assert!(e.contains("--copies"), "{e}");
    let e = refused(&["bench", "scale", "--copies", "-1"]);
    assert!(e.contains("--copies") || e.contains("-1"), "{e}");
    let e = refused(&["bench", "scale", "--mode", "fibers"]);
    assert!(e.contains("threads, processes or both"), "{e}");
    let e = refused(&["bench", "scale", "--iterations", "0", "lseek1"]);
    assert!(e.contains("--iterations"), "{e}");
    // The seed workloads' command is unchanged.
    let e = refused(&["bench", "write9"]);
    assert!(e.contains("unknown workload \"write9\""), "{e}");
}

#[test]
fn scale_smoke_pass_prints_tables_and_json() {
    let json = std::env::temp_dir().join(format!("uvfs-cli-scale-{}.json", std::process::id()));
    let o = uvfs(&[
        "bench",
        "scale",
        "--quick",
        "--copies",
        "2",
        "--iterations",
        "1",
        "--json",
        json.to_str().expect("utf-8 temp path"),
        "lseek1",
        "unlink1",
    ]);
    let out = text(&o.stdout);
    assert!(o.status.success(), "{out}\n{}", text(&o.stderr));
    for want in [
        "lseek1 (threads: one shared fd table)",
        "lseek1 (processes: one fd table per copy)",
        "unlink1 (threads",
        "uvfs speed-up",
        "host linear",
        "cache-line round trip between CPUs",
        "not yet: pipe1, context_switch1 (needs pipes)",
        "eventfd1 (needs eventfd)",
    ] {
        assert!(out.contains(want), "missing {want:?} in:\n{out}");
    }
    let j = std::fs::read_to_string(&json).expect("json written");
    std::fs::remove_file(&json).expect("cleanup");
    // 2 testcases x 2 modes x copies {1, 2} x 2 columns x 1 sample (fewer if the host column
    // is skipped without root: then it says so in the table).
    let samples = j.lines().filter(|l| l.contains("\"scale-sample\"")).count();
    let host_skipped = out.contains("skipped: cannot mount");
    assert_eq!(samples, if host_skipped { 8 } else { 16 }, "{j}");
}

#[test]
fn bench_help_lists_the_scale_group() {
    let o = uvfs(&["bench", "--help"]);
    let out = text(&o.stdout);
    assert!(o.status.success());
    assert!(
        out.contains("scale") && out.contains("will-it-scale"),
        "{out}"
    );
}
