//! What `uvfs::fs` costs over the syscall-shaped calls it wraps, with `std::fs` on the host's
//! tmpfs (/dev/shm) beside both: stat, open+read+close and a 1-byte positioned write.
//!
//! `cargo bench -p uvfs --bench fs_layer` prints criterion's groups, then a table measured
//! here: interleaved rounds of the three sides, median of each, and the layer's overhead over
//! the raw call (the project's target: under 10%). `cargo test --all-targets` runs each
//! operation once and the table with tiny counts: a smoke pass, not a measurement.
//!
//! The raw side is one `Task` with an unshared fd table (its fd cache applies); the layer's
//! side is one `Fs`, called from the same thread (its per-thread task is made on the first
//! call, before timing).

use std::hint::black_box;
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput};
use uvfs::abi::{AtFlags, OpenFlags, AT_FDCWD};
use uvfs::fs::Fs;
use uvfs::{Cred, Task, Vfs};

/// The stat'ed and read file, two components deep.
const FILE: &str = "/d/f";
/// The written file.
const RW: &str = "/d/rw";
/// Bytes open+read+close reads.
const READ: usize = 32;
/// The overhead over the raw call the project aims to stay under.
const TARGET: f64 = 0.10;

#[path = "support/run_mode.rs"]
mod run_mode;
use run_mode::RunMode;

struct Sides {
    task: Task,
    rw_fd: i32,
    fs: Fs,
    rw: uvfs::fs::File,
    host_dir: PathBuf,
    host_rw: std::fs::File,
}

impl Sides {
    fn new() -> Sides {
        let vfs = Vfs::new();
        let task = vfs.task(Cred::root());
        let fs = Fs::from_vfs(&vfs, Cred::root());
        fs.create_dir("/d").expect("mkdir");
        fs.write(FILE, [7u8; READ]).expect("write");
        fs.write(RW, b"x").expect("write");
        let rw_fd = task
            .openat(AT_FDCWD, RW, OpenFlags::RDWR, 0)
            .expect("open rw");
        let rw = fs
            .open_with(RW, uvfs::fs::OpenOptions::new().read(true).write(true))
            .expect("open rw");
        let host_dir = PathBuf::from(format!("/dev/shm/uvfs-fs-layer-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&host_dir);
        std::fs::create_dir_all(host_dir.join("d")).expect("host mkdir");
        std::fs::write(host_dir.join("d/f"), [7u8; READ]).expect("host write");
        let host_rw = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(host_dir.join("d/rw"))
            .expect("host open");
        Sides {
            task,
            rw_fd,
            fs,
            rw,
            host_dir,
            host_rw,
        }
    }

    fn raw_stat(&self) {
        black_box(
            self.task
                .fstatat(AT_FDCWD, FILE, AtFlags::empty())
                .expect("stat"),
        );
    }
    fn fs_stat(&self) {
        black_box(self.fs.metadata(FILE).expect("stat"));
    }
    fn host_stat(&self) {
        black_box(std::fs::metadata(self.host_dir.join("d/f")).expect("stat"));
    }

    fn raw_orc(&self) {
        let mut buf = [0u8; READ];
        let fd = self
            .task
            .openat(AT_FDCWD, FILE, OpenFlags::RDONLY | OpenFlags::CLOEXEC, 0)
            .expect("open");
        assert_eq!(self.task.read(fd, &mut buf).expect("read"), READ);
        self.task.close(fd).expect("close");
    }
    fn fs_orc(&self) {
        let mut buf = [0u8; READ];
        let mut f = self.fs.open(FILE).expect("open");
        assert_eq!(f.read(&mut buf).expect("read"), READ);
    }
    fn host_orc(&self) {
        let mut buf = [0u8; READ];
        let mut f = std::fs::File::open(self.host_dir.join("d/f")).expect("open");
        assert_eq!(f.read(&mut buf).expect("read"), READ);
    }

    fn raw_write(&self) {
        assert_eq!(self.task.pwrite(self.rw_fd, b"x", 0).expect("pwrite"), 1);
    }
    fn fs_write(&self) {
        assert_eq!(self.rw.write_at(b"x", 0).expect("write_at"), 1);
    }
    fn host_write(&self) {
        assert_eq!(self.host_rw.write_at(b"x", 0).expect("write_at"), 1);
    }
}

impl Drop for Sides {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.host_dir);
    }
}

type Op = fn(&Sides);

/// Each operation: name, raw call, `uvfs::fs`, host `std::fs`.
const OPS: [(&str, Op, Op, Op); 3] = [
    ("stat", Sides::raw_stat, Sides::fs_stat, Sides::host_stat),
    (
        "open_read_close",
        Sides::raw_orc,
        Sides::fs_orc,
        Sides::host_orc,
    ),
    (
        "write",
        Sides::raw_write,
        Sides::fs_write,
        Sides::host_write,
    ),
];

fn time_loop(s: &Sides, op: Op, iters: u64) -> Duration {
    let start = Instant::now();
    for _ in 0..iters {
        op(s);
    }
    start.elapsed()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn table(mode: RunMode, s: &Sides) {
    let (rounds, min_loop) = match mode {
        RunMode::Measure => (31, Duration::from_millis(3)),
        RunMode::Smoke => (1, Duration::ZERO),
    };
    println!();
    match mode {
        RunMode::Measure => println!(
            "uvfs::fs overhead: median of {rounds} interleaved rounds, each loop >= {min_loop:?}"
        ),
        RunMode::Smoke => {
            println!("uvfs::fs overhead: smoke pass, one tiny round: not a measurement")
        }
    }
    println!(
        "{:<16} {:>14} {:>15} {:>9} {:>7}  {:>17}  verdict",
        "operation", "Task ns/op", "uvfs::fs ns/op", "overhead", "target", "host std::fs ns/op"
    );
    for (name, raw, layer, host) in OPS {
        let sides = [raw, layer, host];
        let iters: Vec<u64> = sides
            .iter()
            .map(|&op| {
                let mut n = 8;
                while time_loop(s, op, n) < min_loop {
                    n *= 2;
                }
                n
            })
            .collect();
        let mut samples = vec![Vec::new(); 3];
        for _ in 0..rounds {
            for (i, &op) in sides.iter().enumerate() {
                let d = time_loop(s, op, iters[i]);
                samples[i].push(d.as_nanos() as f64 / iters[i] as f64);
            }
        }
        let m: Vec<f64> = samples.into_iter().map(median).collect();
        let overhead = m[1] / m[0] - 1.0;
        let verdict = match mode {
            RunMode::Smoke => "not measured",
            RunMode::Measure if overhead < TARGET => "meets",
            RunMode::Measure => "MISSES",
        };
        println!(
            "{:<16} {:>14.1} {:>15.1} {:>8.1}% {:>6.0}%  {:>17.1}  {verdict}",
            name,
            m[0],
            m[1],
            overhead * 100.0,
            TARGET * 100.0,
            m[2]
        );
    }
}

fn main() {
    if cfg!(any(loom, feature = "shuttle")) {
        println!("benchmarks skipped: uvfs built with loom/shuttle atomics");
        return;
    }
    let mode = RunMode::from_args();
    let s = Sides::new();
    for (_, raw, layer, host) in OPS {
        raw(&s);
        layer(&s);
        host(&s);
    }
    let mut c = Criterion::default()
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1))
        .sample_size(30)
        .configure_from_args();
    for (name, raw, layer, host) in OPS {
        let mut g = c.benchmark_group(format!("fs_layer/{name}"));
        g.throughput(Throughput::Elements(1));
        g.bench_function("task", |b| b.iter(|| raw(&s)));
        g.bench_function("uvfs::fs", |b| b.iter(|| layer(&s)));
        g.bench_function("host-std-fs", |b| b.iter(|| host(&s)));
        g.finish();
    }
    c.final_summary();
    table(mode, &s);
}
