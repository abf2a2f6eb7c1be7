//! `uvfs bench scale` end to end on the host and uvfs columns, in both modes.
//!
//! Oracles: what the iterations each copy reports of its testcase's loop imply for the files,
//! the fd positions and the bytes read (the will-it-scale loop descriptions), and that one copy
//! ran the whole quota of N, checked on both sides after a run; the fd-table probe for sharing
//! (threads: one table; processes: a table each); the structure of a quick run's result. No
//! timing is asserted. The host side needs root for its tmpfs; without it these tests say
//! "skipped: why" and count it.

use std::collections::BTreeSet;

use indicatif::ProgressBar;
use uvfs::abi::{Dirent, OpenFlags, AT_FDCWD};
use uvfs_bench::column::Support;
use uvfs_bench::scale::board::{CopyEnd, Fail};
use uvfs_bench::scale::host::HostScale;
use uvfs_bench::scale::report::{rows_of, scale_table};
use uvfs_bench::scale::runner::{run_scale, ScaleOptions};
use uvfs_bench::scale::testcase::{
    fill_byte, write_byte, Testcase, NOT_YET, PAGE_BYTES, SHARED_NAME, WALK_BYTES,
};
use uvfs_bench::scale::uvfs::UvfsScale;
use uvfs_bench::scale::{Config, Mode, ScaleColumn};

/// Iterations per copy: more than a 1 MiB walk (256 pages), so the rewinds happen.
const N: u64 = 300;
const PAGE: usize = PAGE_BYTES as usize;

/// Reads a column's files after a run.
trait Inspect {
    fn contents(&self, path: &str) -> Option<Vec<u8>>;
    fn names(&self, dir: &str) -> BTreeSet<String>;
}

struct HostView<'a>(&'a HostScale);

impl Inspect for HostView<'_> {
    fn contents(&self, path: &str) -> Option<Vec<u8>> {
        std::fs::read(self.0.dir_path().join(path)).ok()
    }
    fn names(&self, dir: &str) -> BTreeSet<String> {
        std::fs::read_dir(self.0.dir_path().join(dir))
            .expect("list")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect()
    }
}

struct UvfsView<'a>(&'a UvfsScale);

impl Inspect for UvfsView<'_> {
    fn contents(&self, path: &str) -> Option<Vec<u8>> {
        let t = self.0.task();
        let fd = t.openat(AT_FDCWD, path, OpenFlags::RDONLY, 0).ok()?;
        let size = t.fstat(fd).expect("fstat").size as usize;
        let mut buf = vec![0u8; size];
        let mut done = 0;
        while done < size {
            let n = t.pread(fd, &mut buf[done..], done as i64).expect("pread");
            assert!(n > 0, "short file {path}");
            done += n;
        }
        t.close(fd).expect("close");
        Some(buf)
    }
    fn names(&self, dir: &str) -> BTreeSet<String> {
        let t = self.0.task();
        let fd = t
            .openat(AT_FDCWD, dir, OpenFlags::RDONLY | OpenFlags::DIRECTORY, 0)
            .expect("open dir");
        let mut out = BTreeSet::new();
        let mut buf = vec![0u8; 1 << 16];
        loop {
            let n = t.getdents64(fd, &mut buf).expect("getdents64");
            if n == 0 {
                break;
            }
            for d in Dirent::parse(&buf[..n]) {
                let name = String::from_utf8(d.name).expect("utf-8");
                if name != "." && name != ".." {
                    out.insert(name);
                }
            }
        }
        t.close(fd).expect("close");
        out
    }
}

fn host_or_skip(skips: &mut Vec<String>) -> Option<HostScale> {
    let h = HostScale::new();
    let probe = Config {
        testcase: Testcase::Open1,
        mode: Mode::Threads,
        copies: 1,
    };
    match h.supports(&probe) {
        Support::Yes => Some(h),
        Support::No(why) => {
            println!("host column {why}");
            skips.push(why);
            None
        }
    }
}

/// Checks what a run of `tc` on `copies` copies with a quota of `N` iterations left behind,
/// from the iterations each copy reports: one copy ran all `N` and stopped the others, each of
/// which ran at most as many (perhaps none, if it never got a CPU before). Returns the checks
/// made.
fn check_work(side: &str, tc: Testcase, copies: usize, ends: &[CopyEnd], v: &dyn Inspect) -> usize {
    let mut checks = 0;
    let ctx = |what: &str| format!("{side} {} copies={copies}: {what}", tc.name());
    assert_eq!(ends.len(), copies, "{}", ctx("one report per copy"));
    let done: Vec<u64> = ends.iter().map(|e| e.done).collect();
    assert!(
        done.iter().max() == Some(&N) && done.iter().all(|&d| d <= N),
        "{}",
        ctx(&format!(
            "iterations {done:?}: one copy runs the quota, none more"
        ))
    );
    checks += 1;
    let plan = tc.plan(copies);
    let planned = |path: &str| {
        plan.files
            .iter()
            .find(|f| f.path == path)
            .map(|f| f.contents())
            .unwrap_or_else(|| panic!("{}", ctx(&format!("{path} not planned"))))
    };
    for (i, e) in ends.iter().enumerate() {
        let n = e.done;
        assert_eq!(e.status, Ok(()), "{}", ctx(&format!("copy {i} status")));
        let want_pos = match tc {
            Testcase::Open1
            | Testcase::Open2
            | Testcase::Open3
            | Testcase::Unlink1
            | Testcase::Unlink2
            | Testcase::Pipe1
            | Testcase::ContextSwitch1
            | Testcase::Eventfd1 => None,
            Testcase::Read1 | Testcase::Read2 | Testcase::Write1 => {
                Some((n * PAGE_BYTES) % WALK_BYTES)
            }
            Testcase::Readseek1 | Testcase::Writeseek1 => Some(PAGE_BYTES.min(n * PAGE_BYTES)),
            _ => Some(0),
        };
        assert_eq!(
            e.position,
            want_pos,
            "{}",
            ctx(&format!("copy {i} position"))
        );
        let last_page = (n.saturating_sub(1) % (WALK_BYTES / PAGE_BYTES)) as usize;
        let want_byte = match tc {
            Testcase::Pread1 | Testcase::Pread3 | Testcase::Read1 | Testcase::Readseek1 => {
                Some(fill_byte(i))
            }
            Testcase::Pread2 => Some(fill_byte(0)),
            Testcase::Read2 => Some(fill_byte(last_page)),
            // The byte the copy wrote came back through its pipe (or its partner).
            Testcase::Pipe1 | Testcase::ContextSwitch1 => Some(write_byte(i)),
            // The eventfd's counter: 1 written, 1 read back.
            Testcase::Eventfd1 => Some(1),
            _ => None,
        }
        // A copy that read nothing still has its zeroed buffer.
        .map(|b| if n == 0 { 0 } else { b });
        assert_eq!(
            e.last_byte,
            want_byte,
            "{}",
            ctx(&format!("copy {i} bytes read"))
        );
        checks += 3;
    }
    let all = |bytes: &[u8], b: u8| bytes.iter().all(|&x| x == b);
    let file = |p: &str| {
        v.contents(p)
            .unwrap_or_else(|| panic!("{}", ctx(&format!("{p} missing"))))
    };
    match tc {
        Testcase::Unlink1
        | Testcase::Dup1
        | Testcase::Pipe1
        | Testcase::ContextSwitch1
        | Testcase::Eventfd1 => {
            assert!(v.names(".").is_empty(), "{}", ctx("directory not empty"));
            checks += 1;
        }
        Testcase::Unlink2 => {
            let dirs: BTreeSet<String> = (0..copies).map(|i| format!("d{i}")).collect();
            assert_eq!(v.names("."), dirs, "{}", ctx("top level"));
            for d in &dirs {
                assert!(v.names(d).is_empty(), "{}", ctx(&format!("{d} not empty")));
                checks += 1;
            }
        }
        Testcase::Pwrite1 | Testcase::Writeseek1 => {
            for (i, &n) in done.iter().enumerate() {
                let path = format!("f{i}");
                let c = file(&path);
                assert_eq!(c.len(), PAGE, "{}", ctx("size"));
                if n == 0 {
                    assert_eq!(c, planned(&path), "{}", ctx(&format!("{path} untouched")));
                } else {
                    assert!(
                        all(&c, write_byte(i)),
                        "{}",
                        ctx(&format!("{path} contents"))
                    );
                }
                checks += 2;
            }
        }
        Testcase::Write1 => {
            for (i, &n) in done.iter().enumerate() {
                let c = file(&format!("f{i}"));
                let want = n.min(WALK_BYTES / PAGE_BYTES) * PAGE_BYTES;
                assert_eq!(c.len() as u64, want, "{}", ctx("size"));
                assert!(all(&c, write_byte(i)), "{}", ctx(&format!("f{i} contents")));
                checks += 2;
            }
        }
        Testcase::Fallocate1 => {
            for (i, &n) in done.iter().enumerate() {
                let c = file(&format!("f{i}"));
                let want = (n % (WALK_BYTES / PAGE_BYTES)) * PAGE_BYTES;
                assert_eq!(c.len() as u64, want, "{}", ctx("size"));
                assert!(all(&c, 0), "{}", ctx("fallocated bytes are zero"));
                checks += 2;
            }
        }
        Testcase::Pwrite2 => {
            let c = file(SHARED_NAME);
            assert_eq!(c.len(), PAGE, "{}", ctx("size"));
            let writers: Vec<u8> = (0..copies).map(write_byte).collect();
            assert!(
                c.iter().all(|b| writers.contains(b)),
                "{}",
                ctx("shared page holds what the copies wrote")
            );
            checks += 2;
        }
        Testcase::Pwrite3 => {
            let c = file(SHARED_NAME);
            assert_eq!(c.len(), PAGE * copies, "{}", ctx("size"));
            for (k, page) in c.chunks(PAGE).enumerate() {
                let want = if done[k] == 0 {
                    fill_byte(k)
                } else {
                    write_byte(k)
                };
                assert!(all(page, want), "{}", ctx(&format!("page {k}")));
                checks += 1;
            }
        }
        _ => {
            // Read-only and open-only loops leave the planned files as they were.
            for f in tc.plan(copies).files {
                assert_eq!(
                    v.contents(&f.path),
                    Some(f.contents()),
                    "{}",
                    ctx(&format!("{} unchanged", f.path))
                );
                checks += 1;
            }
        }
    }
    checks
}

#[test]
fn every_testcase_loop_does_its_work_on_both_sides_in_both_modes() {
    let mut skips = Vec::new();
    let mut host = host_or_skip(&mut skips);
    let mut uvfs = UvfsScale::new();
    let mut checks = 0;
    let mut runs = 0;
    for tc in Testcase::ALL {
        for mode in Mode::ALL {
            let cfg = Config {
                testcase: tc,
                mode,
                copies: 3,
            };
            if let Some(h) = host.as_mut() {
                h.setup(&cfg).expect("host setup");
                let run = h.run(&cfg, N).expect("host run");
                checks += check_work("host", tc, cfg.copies, &run.ends, &HostView(h));
                h.teardown();
                runs += 1;
            }
            uvfs.setup(&cfg).expect("uvfs setup");
            let run = uvfs.run(&cfg, N).expect("uvfs run");
            checks += check_work("uvfs", tc, cfg.copies, &run.ends, &UvfsView(&uvfs));
            uvfs.teardown();
            runs += 1;
        }
    }
    let sides = if host.is_some() { 2 } else { 1 };
    assert_eq!(runs, Testcase::ALL.len() * 2 * sides);
    println!("{runs} runs, {checks} checks, {} skipped", skips.len());
    // Per side: 27 testcases x 2 modes x (the iterations, and 3 copies x 3: status, position,
    // bytes read), plus the file checks of each testcase (counted by hand from check_work: 57
    // per mode, and 1 each for pipe1, context_switch1 and eventfd1 (nothing left in the
    // directory), 3 for lock1, 1 for lock2, 3 for poll1 and 3 for poll2 (files unchanged)).
    assert_eq!(
        checks,
        (27 * 2 * (1 + 3 * 3) + 2 * (57 + 1 + 1 + 1 + 3 + 1 + 3 + 3)) * sides,
        "{checks} checks"
    );
}

/// Runs the probe on `col` and checks the fd-table sharing `mode` promises; returns the checks.
fn check_sharing(col: &mut dyn ScaleColumn, mode: Mode, copies: usize) -> usize {
    let name = col.name();
    let ends = col.probe(mode, copies).expect("probe");
    assert_eq!(ends.len(), copies);
    let mut checks = 0;
    let everyone = (1u64 << copies) - 1;
    for (i, e) in ends.iter().enumerate() {
        assert_eq!(e.status, Ok(()), "{name} {mode:?} copy {i}");
        let want = match mode {
            Mode::Threads => everyone & !(1 << i),
            Mode::Processes => 0,
        };
        assert_eq!(
            e.seen, want,
            "{name} {mode:?}: copy {i} saw the others' fds {:#b}, expected {want:#b}",
            e.seen
        );
        checks += 2;
    }
    let fds: BTreeSet<i32> = ends.iter().map(|e| e.fd).collect();
    let inos: BTreeSet<u64> = ends.iter().map(|e| e.ino).collect();
    assert_eq!(inos.len(), copies, "{name} {mode:?}: a file each");
    match (name, mode) {
        // One table: every copy's fd has its own number.
        (_, Mode::Threads) => assert_eq!(fds.len(), copies, "{name} threads: fd numbers {fds:?}"),
        // A table each, copied from the same task: the copies got the same lowest free fd. (Not
        // asserted on the host: other tests' threads open and close fds between the forks.)
        ("uvfs", Mode::Processes) => assert_eq!(fds.len(), 1, "uvfs processes: {fds:?}"),
        _ => {}
    }
    checks += 2;
    let pids: BTreeSet<u32> = ends.iter().map(|e| e.pid).collect();
    let me = std::process::id();
    match (name, mode) {
        ("host", Mode::Processes) => {
            assert_eq!(
                pids.len(),
                copies,
                "host processes: a process each {pids:?}"
            );
            assert!(!pids.contains(&me), "host processes: not this process");
        }
        _ => assert_eq!(
            pids,
            BTreeSet::from([me]),
            "{name} {mode:?}: in this process"
        ),
    }
    checks + 1
}

#[test]
fn threads_share_one_fd_table_and_processes_have_one_each() {
    let mut skips = Vec::new();
    let mut columns: Vec<Box<dyn ScaleColumn>> = vec![Box::new(UvfsScale::new())];
    if let Some(h) = host_or_skip(&mut skips) {
        columns.push(Box::new(h));
    }
    let mut checks = 0;
    for col in &mut columns {
        for mode in Mode::ALL {
            for copies in [2, 4] {
                checks += check_sharing(col.as_mut(), mode, copies);
            }
        }
    }
    // Per column: 2 modes x (2 + 4 copies) x 2 + 2 modes x 2 counts x 3.
    let per_column = 2 * 6 * 2 + 2 * 2 * 3;
    println!("{checks} sharing checks, {} skipped", skips.len());
    assert_eq!(checks, per_column * columns.len());
}

#[test]
fn a_failing_copy_is_reported_with_its_errno() {
    // lseek1 needs its own file; without setup there is none, and the copies say ENOENT.
    let mut uvfs = UvfsScale::new();
    let cfg = Config {
        testcase: Testcase::Lseek1,
        mode: Mode::Processes,
        copies: 2,
    };
    let e = uvfs.run(&cfg, 4).expect_err("no files");
    let msg = format!("{e:#}");
    assert!(msg.contains("copy 0") && msg.contains("errno 2"), "{msg}");
    assert_eq!(
        Fail::Errno(2).to_string(),
        format!("errno 2 ({})", std::io::Error::from_raw_os_error(2))
    );
}

#[test]
fn quick_scale_run_covers_every_testcase_and_mode_and_writes_outputs() {
    let mut skips = Vec::new();
    let mut columns: Vec<Box<dyn ScaleColumn>> = Vec::new();
    if let Some(h) = host_or_skip(&mut skips) {
        columns.push(Box::new(h));
    }
    columns.push(Box::new(UvfsScale::new()));
    let mut opts = ScaleOptions::new(Testcase::ALL.to_vec(), Mode::ALL.to_vec(), vec![1, 2], true);
    opts.iterations = 1;
    opts.sample_time = std::time::Duration::from_micros(500);
    let mut json = Vec::new();
    let r = run_scale(&opts, &mut columns, &ProgressBar::hidden(), Some(&mut json)).expect("run");
    assert!(!r.failed, "no column may fail: {:#?}", r.rows);
    assert_eq!(r.rows.len(), Testcase::ALL.len() * 2 * 2);
    let mut samples = 0;
    for row in &r.rows {
        for c in &row.columns {
            assert!(c.error.is_none(), "{} failed: {:?}", c.column, c.error);
            assert_eq!(c.samples.len(), 1);
            assert!(c.samples.iter().all(|&s| s > 0.0));
            samples += c.samples.len();
        }
    }
    assert_eq!(samples, r.rows.len() * columns.len());
    let text = String::from_utf8(json).expect("utf-8");
    assert!(text
        .lines()
        .next()
        .is_some_and(|l| l.contains("\"machine\"")));
    assert_eq!(
        text.lines()
            .filter(|l| l.contains("\"type\":\"scale-sample\""))
            .count(),
        samples
    );
    assert!(text
        .lines()
        .last()
        .is_some_and(|l| l.contains("scale-summary")));
    assert_eq!(r.not_yet.len(), NOT_YET.len());
    let t = scale_table(
        &r.column_names,
        &rows_of(&r, Testcase::Pread3, Mode::Processes),
    )
    .to_string();
    assert!(
        t.contains("uvfs speed-up") && t.contains("uvfs linear") && t.contains("uvfs/host"),
        "{t}"
    );
    println!(
        "{} rows, {samples} samples, {} skipped",
        r.rows.len(),
        skips.len()
    );
}

/// The copy counts of one testcase and mode take their samples in turn (1 2 4 1 2 4 ...), so
/// that a drift of the machine during the run moves every copy count's figures alike and the
/// speed-ups stay comparable; the files every count needs are there from one setup. Oracle: the
/// order of the samples in the JSON lines, and a complete row per copy count.
#[test]
fn the_copy_counts_of_a_testcase_take_their_samples_in_turn() {
    let mut columns: Vec<Box<dyn ScaleColumn>> = vec![Box::new(UvfsScale::new())];
    let mut opts = ScaleOptions::new(
        vec![Testcase::Open2, Testcase::Pread3],
        vec![Mode::Processes],
        vec![1, 2, 4],
        true,
    );
    opts.iterations = 3;
    opts.sample_time = std::time::Duration::from_micros(500);
    let mut json = Vec::new();
    let r = run_scale(&opts, &mut columns, &ProgressBar::hidden(), Some(&mut json)).expect("run");
    assert!(!r.failed, "no column may fail: {:#?}", r.rows);
    let order: Vec<(String, u64)> = String::from_utf8(json)
        .expect("utf-8")
        .lines()
        .filter(|l| l.contains("\"type\":\"scale-sample\""))
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("json");
            (
                v["testcase"].as_str().expect("testcase").to_string(),
                v["copies"].as_u64().expect("copies"),
            )
        })
        .collect();
    let mut want = Vec::new();
    for t in ["open2", "pread3"] {
        for _ in 0..3 {
            want.extend([1, 2, 4].map(|c| (t.to_string(), c)));
        }
    }
    assert_eq!(order, want);
    assert_eq!(r.rows.len(), 6);
    for row in &r.rows {
        assert_eq!(row.columns[0].samples.len(), 3, "{:?}", row.config);
    }
}

/// Oracle: Linux's default fd limit (1024) is below what 16 copies of poll2 hold in one table
/// (2048 fds); each column makes room for them, so the run completes with every copy's status
/// clean.
#[test]
fn poll2_on_sixteen_copies_of_one_table_fits_in_the_fd_limit() {
    let cfg = Config {
        testcase: Testcase::Poll2,
        mode: Mode::Threads,
        copies: 16,
    };
    let mut skips = Vec::new();
    let mut cols: Vec<Box<dyn ScaleColumn>> = vec![Box::new(UvfsScale::new())];
    if let Some(h) = host_or_skip(&mut skips) {
        cols.push(Box::new(h));
    }
    for col in &mut cols {
        if let Support::No(why) = col.supports(&cfg) {
            println!("{} {why}", col.name());
            continue;
        }
        col.setup(&cfg).expect("setup");
        let run = col
            .run(&cfg, 20)
            .unwrap_or_else(|e| panic!("{}: {e:#}", col.name()));
        assert!(
            run.ends.iter().all(|e| e.status == Ok(())),
            "{}",
            col.name()
        );
        col.teardown();
    }
}
