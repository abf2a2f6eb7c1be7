//! `uvfs`: the command-line front of uvfs. `uvfs bench` runs the benchmark suite; `uvfs bench
//! scale` its will-it-scale testcases alone; `uvfs bench memory` the bytes per empty file;
//! `uvfs import`/`export` move trees through tar; `uvfs watch` shows inotify's events.

mod output;
mod tree_cmd;
mod userns;
mod values;
mod watch_cmd;

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context};
use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::{Args, Parser, Subcommand};
use indicatif::{ProgressBar, ProgressDrawTarget};

use uvfs_bench::column::Column;
use uvfs_bench::columns::gvisor::Gvisor;
use uvfs_bench::columns::host::Host;
use uvfs_bench::columns::nonotify::{self, NoNotify};
use uvfs_bench::columns::uvfs::{Design, Uvfs};
use uvfs_bench::columns::vfs_crate::VfsCrate;
use uvfs_bench::memory::probe::probe_main;
use uvfs_bench::memory::report as memory_report;
use uvfs_bench::memory::runner::{run_memory, MemoryOptions, MemoryResult, ProbeCommand};
use uvfs_bench::memory::Size;
use uvfs_bench::params::{MessagingGrid, Workload};
use uvfs_bench::runner::{run, Options};
use uvfs_bench::scale::host::HostScale;
use uvfs_bench::scale::report as scale_report;
use uvfs_bench::scale::runner::{run_scale, ScaleOptions, ScaleResult};
use uvfs_bench::scale::testcase::Testcase;
use uvfs_bench::scale::uvfs::UvfsScale;
use uvfs_bench::scale::{parse_copies, Mode, ScaleColumn, DEFAULT_COPIES};
use uvfs_bench::watch::Watch;
use uvfs_bench::{report, svg};

use output::{check_svg_dir, BadValue, JsonFile};
use userns::HostPrivilege;
use values::{
    ColumnArg, ModeArg, ProbeColumnArg, ScaleColumnArg, TestcaseArg, WatchArg, WorkloadArg,
};

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
// Parsed once per process: the size of the bench arguments costs nothing.
#[allow(clippy::large_enum_variant)]
enum Command {
    /// Run the benchmark suite: each workload on the host kernel, uvfs, uvfs "vanilla", the
    /// `vfs` crate and gVisor's VFS, interleaved, with mmtests-style tables.
    ///
    /// Without root, the run enters a user and mount namespace of its own (as `unshare -Urm`
    /// does) to mount the host column's private tmpfs; where the kernel refuses, or
    /// UVFS_BENCH_NO_USERNS is set, the host column runs in a plain directory under $TMPDIR
    /// and is named "host (not tmpfs)".
    Bench(BenchArgs),
    /// Archive a host directory through a uvfs tree: DIR into the tar ARCHIVE, keeping holes,
    /// hard links, xattrs, owners and nanosecond times.
    Import(tree_cmd::ImportArgs),
    /// Extract a tar ARCHIVE through a uvfs tree into the host directory DIR: entries with
    /// `..` are refused, nothing existing is replaced.
    Export(tree_cmd::ExportArgs),
    /// Show what uvfs's inotify reports: copy a host directory into a uvfs tree (--from),
    /// watch PATHs of it, run the operations given after `--` (or in --ops FILE) and print
    /// each event as `inotifywait -m` does: `PATH EVENT[,EVENT] [NAME]`.
    ///
    /// Operations, one per argument or line (TEXT: the rest of it): create PATH, write PATH
    /// TEXT, append PATH TEXT, read PATH, chmod MODE PATH, mkdir PATH, rmdir PATH, remove
    /// PATH, rename FROM TO, link FROM TO, symlink TARGET PATH.
    Watch(watch_cmd::WatchArgs),
}

#[derive(Args)]
#[command(args_conflicts_with_subcommands = true)]
struct BenchArgs {
    #[command(subcommand)]
    group: Option<BenchGroup>,
    /// Workloads to run, by name or comma-separated (default: all, then the scale testcases
    /// and the memory workload).
    #[arg(value_enum, value_delimiter = ',', allow_negative_numbers = true)]
    workloads: Vec<WorkloadArg>,
    /// Tiny counts: a smoke pass of every workload (seconds, not a measurement).
    #[arg(long)]
    quick: bool,
    /// Samples per configuration and column, 2 to 1000 (default 10; 2 with --quick).
    #[arg(long, value_name = "N", value_parser = values::iterations, allow_negative_numbers = true)]
    iterations: Option<usize>,
    /// Thread counts of the multi-thread workloads, comma-separated, 1 to 1024 (each thread
    /// reserves a 2 MiB stack) (default: 1 and the CPUs; sysfs-open-read 1,2,4,16,96, 1,2,16
    /// with --quick, and always 1; find always runs 1 and 2 walkers).
    #[arg(long, value_name = "N,...", value_delimiter = ',', value_parser = values::threads, allow_negative_numbers = true)]
    threads: Option<Vec<usize>>,
    /// Columns to run, comma-separated (default: all). With no workload named, host and uvfs
    /// also pick the scale testcases' columns, and the memory workload is left out.
    #[arg(long, value_enum, value_name = "COLUMN,...", value_delimiter = ',')]
    columns: Option<Vec<ColumnArg>>,
    /// Group counts of `messaging`, comma-separated, 1 to 25 (40 threads each) (default
    /// 1,2,4,8; 1,2 with --quick).
    #[arg(long, value_name = "N,...", value_delimiter = ',', value_parser = values::groups, allow_negative_numbers = true)]
    groups: Option<Vec<usize>>,
    /// Loops of `messaging` (perf's -l), 1 to 10000: the messages each sender writes to each
    /// receiver (default 100, perf's; 10 with --quick; 10000 for perf's long run).
    #[arg(long, value_name = "N", value_parser = values::loops, allow_negative_numbers = true)]
    loops: Option<u64>,
    /// Watch scenarios of `write1-watch`, comma-separated (default: all).
    #[arg(long, value_enum, value_name = "SCENARIO,...", value_delimiter = ',')]
    watch: Option<Vec<WatchArg>>,
    /// Write every sample as JSON lines to FILE (missing directories are created).
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Write one SVG chart per workload into DIR (created if missing).
    #[arg(long, value_name = "DIR")]
    svg: Option<PathBuf>,
}

#[derive(Subcommand)]
enum BenchGroup {
    /// The file-system testcases of will-it-scale: each loop on 1, 2, 4 and 16 copies at once,
    /// as threads (one fd table) and as processes (a table each), host and uvfs side by side.
    Scale(ScaleArgs),
    /// Bytes per empty file: 1M empty files in 1000 directories on the host kernel (slab
    /// growth; root only), uvfs (RSS growth), the `vfs` crate and gVisor, each in a fresh
    /// process.
    Memory(MemoryArgs),
    /// One column of `uvfs bench memory`, in this process: prints one JSON line.
    #[command(hide = true)]
    MemoryProbe(MemoryProbeArgs),
    /// The uvfs column of one configuration, in this process, for the `uvfs-nonotify` column
    /// of the suite: a ready line, then one round per operation count on stdin.
    #[command(hide = true)]
    ServeUvfs(ServeUvfsArgs),
}

#[derive(Args)]
struct ServeUvfsArgs {
    /// The configuration, as the suite's JSON writes it.
    #[arg(long)]
    params: String,
}

#[derive(Args)]
struct MemoryArgs {
    /// 20,000 files in 20 directories instead of 1,000,000 in 1000.
    #[arg(long)]
    quick: bool,
    /// Files to create, 1000 to a directory, 1 to 10000000 (about 1 KB of memory each)
    /// (default 1000000; 20000 with --quick).
    #[arg(long, value_name = "N", value_parser = values::files, allow_negative_numbers = true)]
    files: Option<u64>,
    /// Write each column's result as JSON lines to FILE (missing directories are created).
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
}

#[derive(Args)]
struct MemoryProbeArgs {
    /// The column to measure.
    #[arg(value_enum)]
    column: ProbeColumnArg,
    /// Files to create, 1 to 10000000.
    #[arg(long, value_parser = values::files, allow_negative_numbers = true)]
    files: u64,
    /// Directories to spread them over, 1 to the files.
    #[arg(long, value_parser = values::dirs, allow_negative_numbers = true)]
    dirs: u64,
}

#[derive(Args)]
struct ScaleArgs {
    /// Testcases to run, by name or comma-separated (default: all).
    #[arg(value_enum, value_delimiter = ',', allow_negative_numbers = true)]
    testcases: Vec<TestcaseArg>,
    /// Copy counts, comma-separated, 1 to 256 (default 1,2,4,16; 1 is always run: the
    /// speed-ups divide by it).
    #[arg(long, value_name = "N,...", value_delimiter = ',', value_parser = values::copies, allow_negative_numbers = true)]
    copies: Option<Vec<usize>>,
    /// threads (one shared fd table), processes (a table per copy) or both (default).
    #[arg(long, value_enum, value_name = "MODE")]
    mode: Option<ModeArg>,
    /// Columns to run, comma-separated (default: both).
    #[arg(long, value_enum, value_name = "COLUMN,...", value_delimiter = ',')]
    columns: Option<Vec<ScaleColumnArg>>,
    /// Tiny counts: a smoke pass (seconds, not a measurement).
    #[arg(long)]
    quick: bool,
    /// Samples per configuration and column, 2 to 1000 (default 10; 2 with --quick).
    #[arg(long, value_name = "N", value_parser = values::iterations, allow_negative_numbers = true)]
    iterations: Option<usize>,
    /// Write every sample as JSON lines to FILE (missing directories are created).
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
///
/// [`alloc::Allocator`] passes requests aligned to at most 16 bytes, nearly all, to `mi_malloc`
/// instead, which every block of mimalloc satisfies (std's `System` does the same with
/// `malloc`): about 20 instructions less per allocation than `mi_malloc_aligned`'s checks
/// (callgrind: create-unlink's five allocations, 5,728 instructions to 5,640).
#[global_allocator]
static ALLOCATOR: alloc::Allocator = alloc::Allocator;

/// The binary's global allocator (above).
mod alloc {
    #![allow(unsafe_code)] // Reason: a global allocator is an unsafe trait.

    /// mimalloc, through `mi_malloc` where the alignment allows (above).
    pub(crate) struct Allocator;

    /// Whether every `mi_malloc` block of `layout`'s size has its alignment: one of at most
    /// [`MI_MAX_ALIGN_SIZE`] and at most the size (std's `System` asks the same of `malloc`).
    #[inline]
    fn small_alignment(layout: std::alloc::Layout) -> bool {
        layout.align() <= MI_MAX_ALIGN_SIZE && layout.align() <= layout.size()
    }

    /// The alignment every `mi_malloc` block of at least this size has (mimalloc's
    /// `MI_MAX_ALIGN_SIZE` on 64-bit targets); a smaller block is aligned to the largest
    /// power of two that divides its size class.
    const MI_MAX_ALIGN_SIZE: usize = 16;

    // SAFETY: each call passes the request to mimalloc: `mi_malloc` where the alignment is one
    // every block of that size has, `MiMalloc`'s aligned call otherwise; `mi_free` frees both.
    unsafe impl std::alloc::GlobalAlloc for Allocator {
        #[inline]
        unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
            if small_alignment(layout) {
                // SAFETY: any size may be asked for; the block is aligned (above).
                unsafe { libmimalloc_sys::mi_malloc(layout.size()).cast() }
            } else {
                // SAFETY: the caller's contract, passed on.
                unsafe { mimalloc::MiMalloc.alloc(layout) }
            }
        }

        #[inline]
        unsafe fn alloc_zeroed(&self, layout: std::alloc::Layout) -> *mut u8 {
            if small_alignment(layout) {
                // SAFETY: as in `alloc`.
                unsafe { libmimalloc_sys::mi_zalloc(layout.size()).cast() }
            } else {
                // SAFETY: the caller's contract, passed on.
                unsafe { mimalloc::MiMalloc.alloc_zeroed(layout) }
            }
        }

        #[inline]
        unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
            // SAFETY: the caller's contract, passed on (mimalloc frees every block with
            // `mi_free`).
            unsafe { mimalloc::MiMalloc.dealloc(ptr, layout) }
        }

        #[inline]
        unsafe fn realloc(
            &self,
            ptr: *mut u8,
            layout: std::alloc::Layout,
            new_size: usize,
        ) -> *mut u8 {
            if small_alignment(layout) {
                // SAFETY: `ptr` is a mimalloc block (the caller's contract); the new block keeps
                // the alignment (above).
                unsafe { libmimalloc_sys::mi_realloc(ptr.cast(), new_size).cast() }
            } else {
                // SAFETY: the caller's contract, passed on.
                unsafe { mimalloc::MiMalloc.realloc(ptr, layout, new_size) }
            }
        }
    }
}

/// Parses the command line, refusing bad input before anything runs (exit status 2, as
/// clap's), then runs the command (exit status 1 if it failed).
/// Restores the default action of `SIGPIPE` (the Rust runtime ignores it), so that
/// `uvfs bench | head` ends the way other command-line tools do, quietly, instead of
/// panicking in `println!` on a closed pipe.
#[allow(unsafe_code)] // Reason: `signal(2)` has no safe wrapper in the crates this tool uses.
fn default_sigpipe() {
    // SAFETY: called first thing in `main`, before any thread starts; `SIG_DFL` is a valid
    // disposition for SIGPIPE and no handler of ours is replaced.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

fn main() -> ExitCode {
    default_sigpipe();
    uvfs_bench::memory::heap::set_global_allocator_is_system(false);
    let cli = Cli::try_parse().unwrap_or_else(|e| exit_refused(&e));
    let result = match cli.command {
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
        }) => probe(p),
        Command::Bench(BenchArgs {
            group: Some(BenchGroup::ServeUvfs(s)),
            ..
        }) => serve_uvfs(&s),
        Command::Bench(a) => bench(a),
        Command::Import(a) => tree_cmd::import(a),
        Command::Export(a) => tree_cmd::export(a),
        Command::Watch(a) => watch_cmd::watch(a),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => match e.downcast_ref::<BadValue>() {
            Some(bad) => {
                eprintln!("error: {bad}\n\n{MORE}");
                ExitCode::from(USAGE_EXIT)
            }
            None => {
                eprintln!("Error: {e:?}");
                ExitCode::FAILURE
            }
        },
    }
}

/// The exit status of a refused command line, clap's.
const USAGE_EXIT: u8 = 2;

/// The line after a refusal, clap's.
const MORE: &str = "For more information, try '--help'.";

/// Prints clap's refusal `e` and exits. A value that is not one of a list is refused on one
/// line naming the flag, the value, the accepted values and clap's suggestion, where clap
/// puts the list and the suggestion on lines of their own; every other refusal's first line
/// already names the flag and what it accepts (the value parsers of `values` say it).
fn exit_refused(e: &clap::Error) -> ! {
    if e.kind() != ErrorKind::InvalidValue {
        e.exit();
    }
    let string = |kind| match e.get(kind) {
        Some(ContextValue::String(s)) => Some(s.clone()),
        Some(ContextValue::Strings(v)) if !v.is_empty() => Some(v.join(", ")),
        _ => None,
    };
    let flag = string(ContextKind::InvalidArg).unwrap_or_default();
    let value = string(ContextKind::InvalidValue).unwrap_or_default();
    let mut line = if value.is_empty() {
        format!("error: a value is required for '{flag}' but none was supplied")
    } else {
        format!("error: invalid value '{value}' for '{flag}'")
    };
    match string(ContextKind::ValidValue) {
        Some(valid) => line.push_str(&format!(": takes {valid}")),
        None => {
            if let Some(help) = help_of(&flag) {
                line.push_str(&format!(": {help}"));
            }
        }
    }
    if let Some(similar) = string(ContextKind::SuggestedValue) {
        line.push_str(&format!(" (did you mean '{similar}'?)"));
    }
    eprintln!("{line}\n\n{MORE}");
    std::process::exit(USAGE_EXIT.into());
}

/// The help line of the option clap shows as `flag` (`--iterations <N>`): what it accepts.
/// clap does not say which subcommand's option it was; the first found breadth-first is
/// taken (the options of one name accept the same values in every subcommand).
fn help_of(flag: &str) -> Option<String> {
    let long = flag.strip_prefix("--")?.split(' ').next()?;
    let mut commands = std::collections::VecDeque::from([<Cli as clap::CommandFactory>::command()]);
    while let Some(c) = commands.pop_front() {
        if let Some(a) = c.get_arguments().find(|a| a.get_long() == Some(long)) {
            let help = a.get_help()?.to_string();
            return Some(help.split_whitespace().collect::<Vec<_>>().join(" "));
        }
        commands.extend(c.get_subcommands().cloned());
    }
    None
}

/// A refusal of `value` for `flag`, found after parsing.
fn bad_value(flag: &'static str, value: impl std::fmt::Display, why: String) -> BadValue {
    BadValue {
        flag,
        value: value.to_string(),
        why,
    }
}

/// Enters a user namespace if the host column runs and the process is not root (see
/// `userns`); says on stderr when the host column will not be on a tmpfs. Call before any
/// thread starts.
fn prepare_host(host_runs: bool) {
    if !host_runs {
        return;
    }
    if let HostPrivilege::Unprivileged(why) = userns::enter() {
        eprintln!(
            "host column: no private tmpfs without root ({why}): it runs in a plain directory, as \"host (not tmpfs)\""
        );
    }
}

fn serve_uvfs(s: &ServeUvfsArgs) -> anyhow::Result<()> {
    let p = serde_json::from_str(&s.params).context("--params")?;
    nonotify::serve(&p, std::io::stdin().lock(), std::io::stdout().lock())
}

fn probe(p: MemoryProbeArgs) -> anyhow::Result<()> {
    if p.dirs > p.files {
        return Err(bad_value(
            "--dirs <DIRS>",
            p.dirs,
            format!("takes at most --files directories ({})", p.files),
        )
        .into());
    }
    probe_main(p.column.0.name(), p.files, p.dirs)
}

/// The scale options of `s`, checked.
fn scale_options(s: &ScaleArgs) -> anyhow::Result<ScaleOptions> {
    let mut testcases = Vec::new();
    for t in &s.testcases {
        match *t {
            TestcaseArg::Run(t) if !testcases.contains(&t) => testcases.push(t),
            TestcaseArg::Run(_) => {}
            TestcaseArg::NotYet(n) => {
                return Err(bad_value(
                    "[TESTCASES]...",
                    n.name,
                    format!(
                        "not yet runnable: it needs {}, which uvfs does not have",
                        n.needs
                    ),
                )
                .into())
            }
        }
    }
    if testcases.is_empty() {
        testcases = Testcase::ALL.to_vec();
    }
    let copies = parse_copies(s.copies.as_deref()).map_err(anyhow::Error::msg)?;
    let modes = s.mode.unwrap_or(ModeArg::Both).modes();
    let mut opts = ScaleOptions::new(testcases, modes, copies, s.quick);
    if let Some(n) = s.iterations {
        opts.iterations = n;
    }
    Ok(opts)
}

/// The scale columns chosen.
fn scale_columns(chosen: &[ScaleColumnArg]) -> Vec<Box<dyn ScaleColumn>> {
    chosen
        .iter()
        .map(|c| -> Box<dyn ScaleColumn> {
            match c {
                ScaleColumnArg::Host => Box::new(HostScale::new()),
                ScaleColumnArg::Uvfs => Box::new(UvfsScale::new()),
            }
        })
        .collect()
}

/// A progress bar on stderr that ticks while samples are taken.
fn progress_bar() -> ProgressBar {
    let progress = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
    progress.enable_steady_tick(std::time::Duration::from_millis(200));
    progress
}

/// Runs `run` with the writer of `json` (if given), then clears `progress` and flushes the
/// file; `run`'s result. A failure names the file: the runners fail only writing it.
fn with_json<T>(
    json: Option<&mut JsonFile>,
    progress: &ProgressBar,
    run: impl FnOnce(Option<&mut dyn Write>) -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    let result = match json {
        None => run(None)?,
        Some(j) => {
            let path = j.path().display().to_string();
            let result = run(Some(j.writer())).with_context(|| format!("writing {path}"))?;
            j.flush()?;
            result
        }
    };
    progress.finish_and_clear();
    Ok(result)
}

/// Runs the scale testcases of `opts` on `columns`, with a progress bar.
fn run_scale_columns(
    opts: &ScaleOptions,
    columns: &[ScaleColumnArg],
    json: Option<&mut JsonFile>,
) -> anyhow::Result<ScaleResult> {
    let progress = progress_bar();
    with_json(json, &progress, |json_out| {
        run_scale(opts, &mut scale_columns(columns), &progress, json_out)
    })
}

/// Opens `--json`'s file, if given.
fn json_file(json: Option<&Path>) -> anyhow::Result<Option<JsonFile>> {
    Ok(json.map(JsonFile::create).transpose()?)
}

fn scale(s: ScaleArgs) -> anyhow::Result<()> {
    let opts = scale_options(&s)?;
    let columns = values::selected(s.columns.as_deref(), &ScaleColumnArg::ALL);
    let mut json = json_file(s.json.as_deref())?;
    prepare_host(columns.contains(&ScaleColumnArg::Host));
    let result = run_scale_columns(&opts, &columns, json.as_mut())?;
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
    json: Option<&mut JsonFile>,
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
    let mut json = json_file(m.json.as_deref())?;
    let progress = progress_bar();
    let gvisor = Gvisor::prepare(&mut |s: &str| progress.set_message(s.to_string()));
    let result = run_memory_columns(size, driver_of(&gvisor), &progress, json.as_mut())?;
    memory_report::print(&result);
    if let Some(p) = &m.json {
        println!("wrote {}", p.display());
    }
    if result.failed {
        bail!("a memory column failed");
    }
    Ok(())
}

/// The columns of `chosen` (in table order); gVisor's is `gvisor`, prepared by the caller
/// (left out if `None`).
fn bench_columns(chosen: &[ColumnArg], mut gvisor: Option<Gvisor>) -> Vec<Box<dyn Column>> {
    chosen
        .iter()
        .filter_map(|c| -> Option<Box<dyn Column>> {
            Some(match c {
                ColumnArg::Host => Box::new(Host::new()),
                ColumnArg::Uvfs => Box::new(Uvfs::new(Design::Current)),
                ColumnArg::UvfsVanilla => Box::new(Uvfs::new(Design::Vanilla)),
                ColumnArg::UvfsVanillaNotify => Box::new(Uvfs::new(Design::VanillaNotify)),
                ColumnArg::UvfsTmpfs => Box::new(Uvfs::new(Design::TmpfsReference)),
                ColumnArg::UvfsNonotify => {
                    Box::new(NoNotify::find(std::env::current_exe().ok().as_deref()))
                }
                ColumnArg::VfsCrate => Box::new(VfsCrate::new()),
                ColumnArg::Gvisor => Box::new(gvisor.take()?),
            })
        })
        .collect()
}

fn bench(a: BenchArgs) -> anyhow::Result<()> {
    // With no workload named, the scale testcases follow the seed workloads, with shorter
    // samples than `uvfs bench scale` takes (3 per configuration, 40 ms each), then the memory
    // workload (left out when --columns picks columns: its columns are not selectable).
    let with_scale = a.workloads.is_empty();
    let with_memory = with_scale && a.columns.is_none();
    let mut workloads: Vec<Workload> = Vec::new();
    for w in &a.workloads {
        if !workloads.contains(&w.0) {
            workloads.push(w.0);
        }
    }
    if workloads.is_empty() {
        workloads = Workload::ALL.to_vec();
    }
    if let Some(w) = &a.watch {
        if !workloads.contains(&Workload::Write1Watch) {
            let names: Vec<&str> = w.iter().map(|x| x.0.name()).collect();
            return Err(bad_value(
                "--watch <SCENARIO,...>",
                names.join(","),
                "picks the scenarios of the write1-watch workload, which is not run".into(),
            )
            .into());
        }
    }
    let columns = values::selected(a.columns.as_deref(), &ColumnArg::ALL);
    let scale_cols: Vec<ScaleColumnArg> = columns.iter().filter_map(|c| c.scale()).collect();
    let cpus = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .max(2);
    let mut threads = a.threads.clone().unwrap_or_else(|| vec![1, cpus]);
    threads.sort_unstable();
    threads.dedup();
    let mut messaging = MessagingGrid::default_for(a.quick);
    if let Some(g) = &a.groups {
        let mut g = g.clone();
        g.sort_unstable();
        g.dedup();
        messaging.groups = g;
    }
    if let Some(l) = a.loops {
        messaging.loops = l;
    }
    let opts = Options {
        workloads,
        quick: a.quick,
        iterations: a.iterations.unwrap_or(if a.quick { 2 } else { 10 }),
        sysfs_threads: uvfs_bench::sysfs::thread_counts(a.threads.as_deref(), a.quick),
        threads,
        messaging,
        watches: a.watch.as_ref().map_or_else(
            || Watch::ALL.to_vec(),
            |w| {
                let mut v: Vec<Watch> = Vec::new();
                for x in w {
                    if !v.contains(&x.0) {
                        v.push(x.0);
                    }
                }
                v
            },
        ),
    };
    let mut json = json_file(a.json.as_deref())?;
    if let Some(dir) = &a.svg {
        check_svg_dir(dir, opts.workloads.iter().map(|w| w.name()))?;
    }
    prepare_host(columns.contains(&ColumnArg::Host));

    let progress = progress_bar();
    let gvisor = (columns.contains(&ColumnArg::Gvisor) || with_memory)
        .then(|| Gvisor::prepare(&mut |m: &str| progress.set_message(m.to_string())));
    let gvisor_driver = gvisor.as_ref().map(driver_of);
    let gvisor = gvisor.filter(|_| columns.contains(&ColumnArg::Gvisor));
    let mut bench_cols = bench_columns(&columns, gvisor);
    let result = with_json(json.as_mut(), &progress, |json_out| {
        run(&opts, &mut bench_cols, &progress, json_out)
    })?;
    report::print(&result);
    if let Some(dir) = &a.svg {
        let written = svg::write_all(&result, dir)
            .with_context(|| format!("writing SVG charts into {}", dir.display()))?;
        for p in written {
            println!("wrote {}", p.display());
        }
    }
    let mut scale_failed = false;
    if with_scale && !scale_cols.is_empty() {
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
            sopts.iterations = n;
        }
        let sresult = run_scale_columns(&sopts, &scale_cols, json.as_mut())?;
        println!();
        scale_report::print(&sresult);
        scale_failed = sresult.failed;
    }
    let mut memory_failed = false;
    if with_memory {
        let driver = gvisor_driver.unwrap_or_else(|| Err("skipped: not prepared".into()));
        let mresult = run_memory_columns(
            Size::default_for(a.quick),
            driver,
            &progress_bar(),
            json.as_mut(),
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
    use std::alloc::{alloc, dealloc, GlobalAlloc, Layout};

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
            // SAFETY: `block` was just allocated by the global allocator, `ALLOCATOR`, from
            // mimalloc.
            let usable = unsafe { mimalloc::MiMalloc.usable_size(block) };
            assert_eq!(usable, 160, "block {} of 5000", blocks.len());
            blocks.push(block);
        }
        assert_eq!(blocks.len(), 5000);
        for block in blocks {
            // SAFETY: allocated above with `layout`, freed once.
            unsafe { dealloc(block, layout) };
        }
    }

    /// Every block the global allocator gives is aligned as its layout asks, whether it took
    /// `mi_malloc` or mimalloc's aligned call, allocated, zeroed or grown, including layouts
    /// whose size is not a multiple of their alignment; and a zeroed block is zeroed. Many
    /// blocks of each layout, so that a block aligned by luck does not hide one that is not.
    #[test]
    fn every_block_has_its_alignment() {
        let mut checked = 0;
        for align in [1, 2, 4, 8, 16, 32, 64, 128, 4096] {
            for size in [1usize, 3, 8, 12, 16, 24, 40, 100, 128, 160, 1000, 5000] {
                let layout = Layout::from_size_align(size, align).expect("a valid layout");
                let grown_layout = Layout::from_size_align(size * 3, align).expect("valid");
                let mut blocks = Vec::new();
                for _ in 0..16 {
                    // SAFETY: the layout's size is not zero.
                    let block = unsafe { ALLOCATOR.alloc(layout) };
                    assert!(!block.is_null());
                    assert_eq!(block as usize % align, 0, "alloc {size}/{align}");
                    // SAFETY: `block` holds `size` bytes.
                    unsafe { block.write_bytes(0xa5, size) };
                    // SAFETY: `block` was allocated with `layout`; the new size is not zero.
                    let grown = unsafe { ALLOCATOR.realloc(block, layout, size * 3) };
                    assert!(!grown.is_null());
                    assert_eq!(grown as usize % align, 0, "realloc {size}/{align}");
                    // SAFETY: the first `size` bytes were kept.
                    let kept = unsafe { std::slice::from_raw_parts(grown, size) };
                    assert!(kept.iter().all(|&b| b == 0xa5));
                    // SAFETY: as above.
                    let zeroed = unsafe { ALLOCATOR.alloc_zeroed(layout) };
                    assert!(!zeroed.is_null());
                    assert_eq!(zeroed as usize % align, 0, "alloc_zeroed {size}/{align}");
                    // SAFETY: `zeroed` holds `size` bytes.
                    let bytes = unsafe { std::slice::from_raw_parts(zeroed, size) };
                    assert!(bytes.iter().all(|&b| b == 0));
                    blocks.push((grown, grown_layout));
                    blocks.push((zeroed, layout));
                    checked += 1;
                }
                for (block, layout) in blocks {
                    // SAFETY: allocated above with `layout`, freed once.
                    unsafe { ALLOCATOR.dealloc(block, layout) };
                }
            }
        }
        assert_eq!(checked, 9 * 12 * 16);
    }
}
