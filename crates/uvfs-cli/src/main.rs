//! `uvfs`: the command-line front of uvfs. `uvfs bench` runs the benchmark suite; `uvfs bench
//! scale` its will-it-scale testcases alone; `uvfs bench memory` the bytes per empty file.

use std::ffi::OsString;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use clap::{Args, Parser, Subcommand};
use indicatif::{ProgressBar, ProgressDrawTarget};

use uvfs_bench::column::Column;
use uvfs_bench::columns::gvisor::Gvisor;
use uvfs_bench::columns::host::Host;
use uvfs_bench::columns::uvfs::{Design, Uvfs};
use uvfs_bench::columns::vfs_crate::VfsCrate;
use uvfs_bench::memory::probe::probe_main;
use uvfs_bench::memory::report as memory_report;
use uvfs_bench::memory::runner::{run_memory, MemoryOptions, MemoryResult, ProbeCommand};
use uvfs_bench::memory::Size;
use uvfs_bench::params::Workload;
use uvfs_bench::runner::{run, Options};
use uvfs_bench::scale::host::HostScale;
use uvfs_bench::scale::report as scale_report;
use uvfs_bench::scale::runner::{run_scale, ScaleOptions, ScaleResult};
use uvfs_bench::scale::testcase::Testcase;
use uvfs_bench::scale::uvfs::UvfsScale;
use uvfs_bench::scale::{
    parse_copies, parse_mode, parse_testcases, Mode, ScaleColumn, DEFAULT_COPIES,
};
use uvfs_bench::{report, svg};

#[derive(Parser)]
#[command(
    name = "uvfs",
    version,
    about = "uvfs: an embeddable VFS with Linux semantics"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the benchmark suite: each workload on the host kernel, uvfs, uvfs "vanilla", the
    /// `vfs` crate and gVisor's VFS, interleaved, with mmtests-style tables.
    Bench(BenchArgs),
}

#[derive(Args)]
#[command(args_conflicts_with_subcommands = true)]
struct BenchArgs {
    #[command(subcommand)]
    group: Option<BenchGroup>,
    /// Workloads to run (default: all, then the scale testcases): write1, read1,
    /// open-read-close, stat-walk, create-unlink, find.
    workloads: Vec<String>,
    /// Tiny counts: a smoke pass of every workload (seconds, not a measurement).
    #[arg(long)]
    quick: bool,
    /// Samples per configuration and column (default 10; 2 with --quick).
    #[arg(long)]
    iterations: Option<usize>,
    /// Thread counts of the multi-thread workloads, comma-separated (default: 1 and the CPUs;
    /// find always runs 1 and 2 walkers).
    #[arg(long, value_delimiter = ',')]
    threads: Option<Vec<usize>>,
    /// Write every sample as JSON lines to FILE.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Write one SVG chart per workload into DIR.
    #[arg(long, value_name = "DIR")]
    svg: Option<PathBuf>,
}

#[derive(Subcommand)]
enum BenchGroup {
    /// The file-system testcases of will-it-scale: each loop on 1, 2, 4 and 16 copies at once,
    /// as threads (one fd table) and as processes (a table each), host and uvfs side by side.
    Scale(ScaleArgs),
    /// Bytes per empty file: 1M empty files in 1000 directories on the host kernel (slab
    /// growth), uvfs (RSS growth), the `vfs` crate and gVisor, each in a fresh process.
    Memory(MemoryArgs),
    /// One column of `uvfs bench memory`, in this process: prints one JSON line.
    #[command(hide = true)]
    MemoryProbe(MemoryProbeArgs),
}

#[derive(Args)]
struct MemoryArgs {
    /// 20,000 files in 20 directories instead of 1,000,000 in 1000.
    #[arg(long)]
    quick: bool,
    /// Files to create, 1000 to a directory (default 1000000; 20000 with --quick).
    #[arg(long, value_name = "N")]
    files: Option<u64>,
    /// Write each column's result as JSON lines to FILE.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
}

#[derive(Args)]
struct MemoryProbeArgs {
    /// host, uvfs or vfs-crate.
    column: String,
    #[arg(long)]
    files: u64,
    #[arg(long)]
    dirs: u64,
}

#[derive(Args)]
struct ScaleArgs {
    /// Testcases to run (default: all): open1 open2 open3 unlink1 unlink2 dup1 lseek1 lseek2
    /// pread1 pread2 pread3 pwrite1 pwrite2 pwrite3 read1 read2 write1 readseek1 writeseek1
    /// fallocate1.
    testcases: Vec<String>,
    /// Copy counts, comma-separated, 1 to 256 (default 1,2,4,16; 1 is always run: the
    /// speed-ups divide by it).
    #[arg(long, value_delimiter = ',')]
    copies: Option<Vec<usize>>,
    /// threads (one shared fd table), processes (a table per copy) or both.
    #[arg(long, value_name = "MODE")]
    mode: Option<String>,
    /// Tiny counts: a smoke pass (seconds, not a measurement).
    #[arg(long)]
    quick: bool,
    /// Samples per configuration and column (default 5; 2 with --quick).
    #[arg(long)]
    iterations: Option<usize>,
    /// Write every sample as JSON lines to FILE.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
}

/// The `uvfs` binary allocates with mimalloc, not glibc's malloc: with two or more threads
/// creating and removing files, glibc's arenas make a free on one thread of memory allocated
/// on another slow (and `fallocate1`'s page churn sometimes collapses), and its 8-byte chunk
/// headers cost memory. The library forces no allocator; README ("Allocator") says what an
/// embedder gains by choosing the same.
///
/// mimalloc 2 (the crate's `v2` feature), not 3: `MiMalloc` passes every request to
/// `mi_malloc_aligned`, and mimalloc 3 serves an 8-byte-aligned request whose size is not a
/// power of two, once its size class has no free block at hand, by over-allocating size +
/// alignment - 1 bytes, a block of the next class up (`mi_malloc_is_naturally_aligned` in
/// its src/alloc-aligned.c lacks mimalloc 2's "alignment at most 16" case): a 160-byte inode
/// took a 192-byte block, 32 of the 363 bytes an empty file cost. See the test below.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> anyhow::Result<()> {
    uvfs_bench::memory::heap::set_global_allocator_is_system(false);
    match Cli::parse().command {
        Command::Bench(BenchArgs {
            group: Some(BenchGroup::Scale(s)),
            ..
        }) => scale(s),
        Command::Bench(BenchArgs {
            group: Some(BenchGroup::Memory(m)),
            ..
        }) => memory(m),
        Command::Bench(BenchArgs {
            group: Some(BenchGroup::MemoryProbe(p)),
            ..
        }) => probe_main(&p.column, p.files, p.dirs),
        Command::Bench(a) => bench(a),
    }
}

/// The scale options of `s`, checked.
fn scale_options(s: &ScaleArgs) -> anyhow::Result<ScaleOptions> {
    let testcases = parse_testcases(&s.testcases).map_err(anyhow::Error::msg)?;
    let copies = parse_copies(s.copies.as_deref()).map_err(anyhow::Error::msg)?;
    let modes = parse_mode(s.mode.as_deref()).map_err(anyhow::Error::msg)?;
    if s.iterations == Some(0) {
        bail!("--iterations takes a positive count");
    }
    let mut opts = ScaleOptions::new(testcases, modes, copies, s.quick);
    if let Some(n) = s.iterations {
        opts.iterations = n;
    }
    Ok(opts)
}

/// The scale columns: the host kernel and uvfs.
fn scale_columns() -> Vec<Box<dyn ScaleColumn>> {
    vec![Box::new(HostScale::new()), Box::new(UvfsScale::new())]
}

/// A progress bar on stderr that ticks while samples are taken.
fn progress_bar() -> ProgressBar {
    let progress = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
    progress.enable_steady_tick(std::time::Duration::from_millis(200));
    progress
}

/// The file a run writes its samples to as JSON lines.
#[derive(Clone, Copy)]
enum JsonOut<'a> {
    /// A new file (or an existing one truncated).
    Create(&'a Path),
    /// The end of a file an earlier run of this command wrote.
    Append(&'a Path),
}

/// Runs `run` with `json` open (if given), then clears `progress` and flushes the file;
/// `run`'s result.
fn with_json<T>(
    json: Option<JsonOut<'_>>,
    progress: &ProgressBar,
    run: impl FnOnce(Option<&mut dyn Write>) -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    let mut json_out = match json {
        None => None,
        Some(JsonOut::Create(p)) => Some(BufWriter::new(
            File::create(p).with_context(|| format!("creating {}", p.display()))?,
        )),
        Some(JsonOut::Append(p)) => Some(BufWriter::new(
            std::fs::OpenOptions::new()
                .append(true)
                .open(p)
                .with_context(|| format!("appending to {}", p.display()))?,
        )),
    };
    let result = run(json_out.as_mut().map(|w| w as &mut dyn Write))?;
    progress.finish_and_clear();
    if let Some(mut w) = json_out {
        w.flush()?;
    }
    Ok(result)
}

/// Runs the scale testcases of `opts` on the scale columns, with a progress bar.
fn run_scale_columns(
    opts: &ScaleOptions,
    json: Option<JsonOut<'_>>,
) -> anyhow::Result<ScaleResult> {
    let progress = progress_bar();
    with_json(json, &progress, |json_out| {
        run_scale(opts, &mut scale_columns(), &progress, json_out)
    })
}

fn scale(s: ScaleArgs) -> anyhow::Result<()> {
    let opts = scale_options(&s)?;
    let json = s.json.as_deref().map(JsonOut::Create);
    let result = run_scale_columns(&opts, json)?;
    scale_report::print(&result);
    if let Some(p) = &s.json {
        println!("wrote {}", p.display());
    }
    if result.failed {
        bail!("a scale testcase failed");
    }
    Ok(())
}

/// The memory workload's probe: this binary's hidden `bench memory-probe`.
fn memory_probe_command() -> anyhow::Result<ProbeCommand> {
    Ok(ProbeCommand {
        program: std::env::current_exe().context("finding the uvfs binary to run its probes")?,
        args: vec![OsString::from("bench"), OsString::from("memory-probe")],
    })
}

/// Runs the memory workload of `size`, with a progress bar.
fn run_memory_columns(
    size: Size,
    gvisor_driver: Result<PathBuf, String>,
    progress: &ProgressBar,
    json: Option<JsonOut<'_>>,
) -> anyhow::Result<MemoryResult> {
    let opts = MemoryOptions {
        size,
        probe: memory_probe_command()?,
        gvisor_driver,
    };
    with_json(json, progress, |json_out| {
        run_memory(&opts, progress, json_out)
    })
}

/// The gVisor driver of `gvisor`, or why there is none.
fn driver_of(gvisor: &Gvisor) -> Result<PathBuf, String> {
    gvisor
        .driver_binary()
        .map(Path::to_path_buf)
        .map_err(str::to_string)
}

fn memory(m: MemoryArgs) -> anyhow::Result<()> {
    let size = match m.files {
        Some(n) => Size::with_files(n).map_err(anyhow::Error::msg)?,
        None => Size::default_for(m.quick),
    };
    let progress = progress_bar();
    let gvisor = Gvisor::prepare(&mut |s: &str| progress.set_message(s.to_string()));
    let json = m.json.as_deref().map(JsonOut::Create);
    let result = run_memory_columns(size, driver_of(&gvisor), &progress, json)?;
    memory_report::print(&result);
    if let Some(p) = &m.json {
        println!("wrote {}", p.display());
    }
    if result.failed {
        bail!("a memory column failed");
    }
    Ok(())
}

fn bench(a: BenchArgs) -> anyhow::Result<()> {
    // With no workload named, the scale testcases follow the seed workloads, with shorter
    // samples than `uvfs bench scale` takes (3 per configuration, 40 ms each), then the memory
    // workload.
    let with_scale = a.workloads.is_empty();
    let workloads = if a.workloads.is_empty() {
        Workload::ALL.to_vec()
    } else {
        a.workloads
            .iter()
            .map(|w| Workload::from_name(w).with_context(|| format!("unknown workload {w:?}")))
            .collect::<anyhow::Result<Vec<_>>>()?
    };
    let cpus = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .max(2);
    let mut threads = a.threads.unwrap_or_else(|| vec![1, cpus]);
    threads.sort_unstable();
    threads.dedup();
    if threads.contains(&0) {
        bail!("--threads takes positive counts");
    }
    let opts = Options {
        workloads,
        quick: a.quick,
        iterations: a.iterations.unwrap_or(if a.quick { 2 } else { 10 }).max(1),
        threads,
    };

    let progress = progress_bar();
    let gvisor = Gvisor::prepare(&mut |m: &str| progress.set_message(m.to_string()));
    let gvisor_driver = driver_of(&gvisor);
    let mut columns: Vec<Box<dyn Column>> = vec![
        Box::new(Host::new()),
        Box::new(Uvfs::new(Design::Current)),
        Box::new(Uvfs::new(Design::Vanilla)),
        Box::new(VfsCrate::new()),
        Box::new(gvisor),
    ];
    let json = a.json.as_deref().map(JsonOut::Create);
    let result = with_json(json, &progress, |json_out| {
        run(&opts, &mut columns, &progress, json_out)
    })?;
    report::print(&result);
    if let Some(dir) = &a.svg {
        for p in svg::write_all(&result, dir)? {
            println!("wrote {}", p.display());
        }
    }
    let mut scale_failed = false;
    if with_scale {
        let mut sopts = ScaleOptions::new(
            Testcase::ALL.to_vec(),
            Mode::ALL.to_vec(),
            DEFAULT_COPIES.to_vec(),
            a.quick,
        );
        if !a.quick {
            sopts.iterations = 3;
            sopts.sample_time = std::time::Duration::from_millis(40);
        }
        if let Some(n) = a.iterations {
            sopts.iterations = n.max(1);
        }
        let json = a.json.as_deref().map(JsonOut::Append);
        let sresult = run_scale_columns(&sopts, json)?;
        println!();
        scale_report::print(&sresult);
        scale_failed = sresult.failed;
    }
    let mut memory_failed = false;
    if with_scale {
        let json = a.json.as_deref().map(JsonOut::Append);
        let mresult = run_memory_columns(
            Size::default_for(a.quick),
            gvisor_driver,
            &progress_bar(),
            json,
        )?;
        println!();
        memory_report::print(&mresult);
        memory_failed = mresult.failed;
    }
    if let Some(p) = &a.json {
        println!("wrote {}", p.display());
    }
    if result.failed || scale_failed || memory_failed {
        bail!("a workload failed");
    }
    Ok(())
}

#[cfg(test)]
#[allow(unsafe_code)] // Reason: the test allocates through `GlobalAlloc` and asks mimalloc for block sizes.
mod tests {
    use std::alloc::{alloc, dealloc, Layout};

    use super::ALLOCATOR;

    /// Blocks of an inode's layout (`Arc<Inode>`: 160 bytes, 8-aligned) come from the
    /// 160-byte class, through page after page of it: many more than one page holds, since
    /// mimalloc 3 rounded them up only once a page was full.
    #[test]
    fn an_inode_sized_block_is_not_rounded_up_to_the_next_class() {
        let layout = Layout::from_size_align(160, 8).expect("a valid layout");
        let mut blocks = Vec::new();
        for _ in 0..5000 {
            // SAFETY: the layout's size is not zero.
            let block = unsafe { alloc(layout) };
            assert!(!block.is_null());
            // SAFETY: `block` was just allocated by the global allocator, `ALLOCATOR`.
            let usable = unsafe { ALLOCATOR.usable_size(block) };
            assert_eq!(usable, 160, "block {} of 5000", blocks.len());
            blocks.push(block);
        }
        assert_eq!(blocks.len(), 5000);
        for block in blocks {
            // SAFETY: allocated above with `layout`, freed once.
            unsafe { dealloc(block, layout) };
        }
    }
}
