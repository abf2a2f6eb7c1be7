//! Runs conformance cases on the host kernel.
//!
//! Usage:
//! - `uvfs-conformance-host CASE_FILE CASE_NAME`: runs one case and writes one JSON line per
//!   step to stdout (moved to fd 1023), then `done` or `aborted`;
//! - `uvfs-conformance-host --serve [--unfenced-walks]`: reads cases from stdin (a byte count,
//!   a newline, the case text) and answers each with its lines on stdout, one fresh sandbox
//!   per case (`uvfs_conformance::host::serve`); `--unfenced-walks` runs ops that do not
//!   mount without the mount fence (`uvfs_conformance::host::fence::unfence_walks`);
//! - `uvfs-conformance-host --probe`: checks that the sandbox can be set up.
//!
//! Must run as root (mount namespaces, tmpfs mounts, `chroot`). Exit status: 0 when the case
//! ran (its outcomes, errors included, are on stdout), 77 when the environment refused the
//! sandbox, 2 for a bad command line or case file.

use std::io::Write;
use std::path::Path;
use std::process::exit;

use uvfs_conformance::host::observer::run_case_in_sandbox;
use uvfs_conformance::host::protocol::{EXIT_ENV_REFUSED, EXIT_USAGE};
use uvfs_conformance::host::sandbox::{self, RawFdWriter, DIAG_FD};
use uvfs_conformance::host::serve::serve_loop;
use uvfs_conformance::{load_file, Outcome};

fn fail(code: i32, msg: &str) -> ! {
    let _ = writeln!(RawFdWriter(DIAG_FD), "uvfs-conformance-host: {msg}");
    exit(code)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if matches!(args.as_slice(), [a] | [a, _] if a == "--serve") {
        match args.get(1).map(String::as_str) {
            None => {}
            Some("--unfenced-walks") => uvfs_conformance::host::fence::unfence_walks(),
            Some(other) => {
                eprintln!("uvfs-conformance-host: unknown serve option {other}");
                exit(EXIT_USAGE);
            }
        }
        if let Err(e) = serve_loop() {
            eprintln!("uvfs-conformance-host: {e}");
            exit(EXIT_USAGE);
        }
        return;
    }
    if let Err(e) = sandbox::prepare_process(1) {
        eprintln!("uvfs-conformance-host: {e}");
        exit(EXIT_ENV_REFUSED);
    }
    // fds 0-2 now belong to the case: nothing may print to stdout or stderr from here on.
    std::panic::set_hook(Box::new(|info| {
        let _ = writeln!(
            RawFdWriter(DIAG_FD),
            "uvfs-conformance-host panicked: {info}"
        );
    }));
    match args.as_slice() {
        [probe] if probe == "--probe" => {
            let root = sandbox::enter(None).unwrap_or_else(|e| fail(EXIT_ENV_REFUSED, &e));
            sandbox::leave().unwrap_or_else(|e| fail(EXIT_ENV_REFUSED, &e));
            match root {
                Outcome::Ok(_) => exit(0),
                Outcome::Errno(e) => fail(
                    EXIT_ENV_REFUSED,
                    &format!("mounting a tmpfs failed with errno {e}"),
                ),
            }
        }
        [file, name] => {
            let cases = load_file(Path::new(file)).unwrap_or_else(|e| fail(EXIT_USAGE, &e));
            let case = cases.into_iter().find(|c| c.name == *name);
            let case =
                case.unwrap_or_else(|| fail(EXIT_USAGE, &format!("no case {name} in {file}")));
            if let Err(e) = run_case_in_sandbox(&case) {
                fail(EXIT_ENV_REFUSED, &e);
            }
        }
        _ => fail(
            EXIT_USAGE,
            "usage: uvfs-conformance-host CASE_FILE CASE_NAME | --serve [--unfenced-walks] | --probe",
        ),
    }
}
