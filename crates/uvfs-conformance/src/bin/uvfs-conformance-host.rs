//! Runs one conformance case on the host kernel and writes one JSON line per step to fd 1023.
//!
//! Usage: `uvfs-conformance-host CASE_FILE CASE_NAME`, or `uvfs-conformance-host --probe` to
//! check that the sandbox can be set up. Must run as root (mount namespaces, tmpfs mounts,
//! `chroot`). The process stays single-threaded: `as` changes credentials with raw
//! `setres[ug]id`, which act on the calling thread only. Exit status: 0 when the case ran (its
//! outcomes, errors included, are on fd 1023), 77 when the environment refused the sandbox, 2
//! for a bad command line or case file.

use std::io::Write;
use std::path::Path;
use std::process::exit;

use uvfs_conformance::host::protocol::{HostLine, EXIT_ENV_REFUSED, EXIT_USAGE};
use uvfs_conformance::host::sandbox::{self, RawFdWriter, DIAG_FD, RESULT_FD};
use uvfs_conformance::{load_file, run_case, HostBackend, Outcome};

fn fail(code: i32, msg: &str) -> ! {
    let _ = writeln!(RawFdWriter(DIAG_FD), "uvfs-conformance-host: {msg}");
    exit(code)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Err(e) = sandbox::prepare_process() {
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
    let case = match args.as_slice() {
        [probe] if probe == "--probe" => None,
        [file, name] => {
            let cases = load_file(Path::new(file)).unwrap_or_else(|e| fail(EXIT_USAGE, &e));
            let case = cases.into_iter().find(|c| c.name == *name);
            Some(case.unwrap_or_else(|| fail(EXIT_USAGE, &format!("no case {name} in {file}"))))
        }
        _ => fail(
            EXIT_USAGE,
            "usage: uvfs-conformance-host CASE_FILE CASE_NAME | --probe",
        ),
    };
    let root = sandbox::enter(case.as_ref().and_then(|c| c.mount.as_deref()))
        .unwrap_or_else(|e| fail(EXIT_ENV_REFUSED, &e));
    let Some(case) = case else {
        match root {
            Outcome::Ok(_) => exit(0),
            Outcome::Errno(e) => fail(
                EXIT_ENV_REFUSED,
                &format!("mounting a tmpfs failed with errno {e}"),
            ),
        }
    };
    let mut out = RawFdWriter(RESULT_FD);
    let mut emit = |line: HostLine| {
        if let Err(e) = out.write_all(line.to_line().as_bytes()) {
            fail(EXIT_USAGE, &format!("writing results: {e}"));
        }
    };
    let root_ok = matches!(root, Outcome::Ok(_));
    emit(HostLine::Step {
        step: 0,
        outcome: root,
    });
    if root_ok {
        run_case(&mut HostBackend, &case, |step, o| {
            emit(HostLine::Step {
                step,
                outcome: o.clone(),
            })
        });
    }
    emit(HostLine::Done);
}
