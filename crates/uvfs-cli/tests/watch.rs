//! `uvfs watch`: a host directory copied into a uvfs tree, paths of it watched, operations
//! run, each event printed as `inotifywait -m` prints it (`%w %e %f`). Oracle: inotify(7) for
//! which events an operation gives (the event streams themselves are compared with the host
//! kernel by the conformance suite), inotifywait(1)'s output format, exit status 2 with one
//! line naming the argument for bad input, 1 for an operation that fails; never a panic.

use std::path::PathBuf;
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

/// A fresh host directory on /dev/shm, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(tag: &str) -> Scratch {
        let p = PathBuf::from(format!(
            "/dev/shm/uvfs-cli-watch-{tag}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(p.join("docs")).unwrap();
        std::fs::write(p.join("docs/readme"), "hello").unwrap();
        Scratch(p)
    }

    fn path(&self) -> &str {
        self.0.to_str().expect("an ASCII path")
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs `args`, expects success, and returns stdout.
fn ran(args: &[&str]) -> String {
    let o = uvfs(args);
    assert!(
        o.status.success(),
        "{args:?} failed: {}{}",
        text(&o.stdout),
        text(&o.stderr)
    );
    text(&o.stdout)
}

/// Runs `args`, expects exit status `code` without a panic, and returns (stdout, stderr).
fn failed(args: &[&str], code: i32) -> (String, String) {
    let o = uvfs(args);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(code), "{args:?}: {err}");
    assert!(!err.contains("panicked"), "{args:?} panicked: {err}");
    (text(&o.stdout), err)
}

#[test]
fn each_event_is_printed_as_inotifywait_prints_it() {
    let src = Scratch::new("all");
    let out = ran(&[
        "watch",
        "--from",
        src.path(),
        "/",
        "/docs",
        "/docs/readme",
        "--",
        "create /docs/new",
        "write /docs/new two words",
        "read /docs/readme",
        "rename /docs/new /old",
        "mkdir /sub",
        "remove /docs/readme",
    ]);
    // As the host kernel orders them (checked with real inotify on a host tmpfs): an unlinked
    // file's last reference goes inside `d_delete`, so its DELETE_SELF and IGNORED come
    // before its directory's DELETE.
    let want = "\
/docs/ CREATE new
/docs/ OPEN new
/docs/ CLOSE_WRITE,CLOSE new
/docs/ OPEN new
/docs/ MODIFY new
/docs/ CLOSE_WRITE,CLOSE new
/docs/ OPEN readme
/docs/readme OPEN
/docs/ ACCESS readme
/docs/readme ACCESS
/docs/ CLOSE_NOWRITE,CLOSE readme
/docs/readme CLOSE_NOWRITE,CLOSE
/docs/ MOVED_FROM new
/ MOVED_TO old
/ CREATE,ISDIR sub
/docs/readme ATTRIB
/docs/readme DELETE_SELF
/docs/readme IGNORED
/docs/ DELETE readme
";
    assert_eq!(out, want);
}

#[test]
fn event_names_filter_and_an_ops_file_with_comments() {
    let src = Scratch::new("filter");
    let ops = src.0.join("ops.txt");
    std::fs::write(
        &ops,
        "# make and drop a directory\n\nmkdir /docs/d\n  rmdir /docs/d\nappend /docs/log one\nsymlink readme /docs/link\nlink /docs/readme /docs/hard\nchmod 600 /docs/hard\nremove /docs/link\n",
    )
    .unwrap();
    let out = ran(&[
        "watch",
        "--from",
        src.path(),
        "-e",
        "create,delete",
        "--event",
        "attrib",
        "--ops",
        ops.to_str().unwrap(),
        "/docs/",
        "--",
        "create /docs/last",
    ]);
    let want = "\
/docs/ CREATE,ISDIR d
/docs/ DELETE,ISDIR d
/docs/ CREATE log
/docs/ CREATE link
/docs/ CREATE hard
/docs/ ATTRIB hard
/docs/ DELETE link
/docs/ CREATE last
";
    assert_eq!(out, want);
}

#[test]
fn an_empty_tree_is_watched_without_from() {
    let out = ran(&["watch", "-e", "create", "/", "--", "create /x"]);
    assert_eq!(out, "/ CREATE x\n");
}

#[test]
fn bad_input_is_refused_with_one_line_naming_it() {
    let src = Scratch::new("bad");
    let (_, e) = failed(&["watch", "/", "--", "frob /x"], 2);
    assert!(
        e.starts_with("error: invalid value 'frob /x' for '[OP]...': unknown operation 'frob'"),
        "{e}"
    );
    let (_, e) = failed(&["watch", "/", "--", "rename /x"], 2);
    assert!(e.contains("'rename' takes two paths"), "{e}");
    let (_, e) = failed(&["watch", "/", "--", "chmod 999 /x"], 2);
    assert!(e.contains("octal mode"), "{e}");
    let (_, e) = failed(&["watch", "-e", "creat", "/"], 2);
    assert!(e.contains("invalid value 'creat'"), "{e}");
    assert!(
        e.contains("close_write") && e.contains("delete_self"),
        "{e}"
    );
    let (_, e) = failed(&["watch"], 2);
    assert!(e.contains("PATH"), "{e}");
    let missing = src.0.join("missing");
    let (_, e) = failed(&["watch", "--from", missing.to_str().unwrap(), "/"], 2);
    assert!(e.contains("'--from <DIR>': not a directory"), "{e}");
    let (_, e) = failed(&["watch", "--ops", missing.to_str().unwrap(), "/"], 2);
    assert!(e.contains("'--ops <FILE>': cannot open it"), "{e}");
    let ops = src.0.join("ops.txt");
    std::fs::write(&ops, "create /a\n# fine\nmkdir\n").unwrap();
    let (_, e) = failed(&["watch", "--ops", ops.to_str().unwrap(), "/"], 2);
    assert!(e.contains("line 3: 'mkdir' takes one path"), "{e}");
}

#[test]
fn a_failing_operation_stops_the_run_after_printing_what_came_before() {
    let (out, e) = failed(
        &[
            "watch",
            "/",
            "--",
            "mkdir /d",
            "remove /nope",
            "mkdir /never",
        ],
        1,
    );
    assert_eq!(out, "/ CREATE,ISDIR d\n");
    assert!(e.contains("operation 'remove /nope'"), "{e}");
    assert!(e.contains("failed to remove file \"/nope\""), "{e}");
    // A watched path that is not there names it.
    let (out, e) = failed(&["watch", "/", "/nope", "--", "mkdir /d"], 1);
    assert_eq!(out, "");
    assert!(e.contains("failed to watch \"/nope\""), "{e}");
}
