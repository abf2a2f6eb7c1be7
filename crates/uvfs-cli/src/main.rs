//! `uvfs`: the command-line front of uvfs. `uvfs bench` runs the benchmark suite.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;

use anyhow::{bail, Context};
use clap::{Args, Parser, Subcommand};
use indicatif::{ProgressBar, ProgressDrawTarget};

use uvfs_bench::column::Column;
use uvfs_bench::columns::gvisor::Gvisor;
use uvfs_bench::columns::host::Host;
use uvfs_bench::columns::uvfs::{Design, Uvfs};
use uvfs_bench::columns::vfs_crate::VfsCrate;
use uvfs_bench::params::Workload;
use uvfs_bench::runner::{run, Options};
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
struct BenchArgs {
    /// Workloads to run (default: all): write1, read1, open-read-close, stat-walk, create-unlink.
    workloads: Vec<String>,
    /// Tiny counts: a smoke pass of every workload (seconds, not a measurement).
    #[arg(long)]
    quick: bool,
    /// Samples per configuration and column (default 10; 2 with --quick).
    #[arg(long)]
    iterations: Option<usize>,
    /// Thread counts of the multi-thread workloads, comma-separated (default: 1 and the CPUs).
    #[arg(long, value_delimiter = ',')]
    threads: Option<Vec<usize>>,
    /// Write every sample as JSON lines to FILE.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Write one SVG chart per workload into DIR.
    #[arg(long, value_name = "DIR")]
    svg: Option<PathBuf>,
}

fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Bench(a) => bench(a),
    }
}

fn bench(a: BenchArgs) -> anyhow::Result<()> {
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

    let progress = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
    progress.enable_steady_tick(std::time::Duration::from_millis(200));
    let gvisor = Gvisor::prepare(&mut |m: &str| progress.set_message(m.to_string()));
    let mut columns: Vec<Box<dyn Column>> = vec![
        Box::new(Host::new()),
        Box::new(Uvfs::new(Design::Current)),
        Box::new(Uvfs::new(Design::Vanilla)),
        Box::new(VfsCrate::new()),
        Box::new(gvisor),
    ];
    let mut json_out = match &a.json {
        Some(p) => Some(BufWriter::new(
            File::create(p).with_context(|| format!("creating {}", p.display()))?,
        )),
        None => None,
    };
    let result = run(
        &opts,
        &mut columns,
        &progress,
        json_out.as_mut().map(|w| w as &mut dyn Write),
    )?;
    progress.finish_and_clear();
    if let Some(mut w) = json_out {
        w.flush()?;
    }
    report::print(&result);
    if let Some(dir) = &a.svg {
        for p in svg::write_all(&result, dir)? {
            println!("wrote {}", p.display());
        }
    }
    if let Some(p) = &a.json {
        println!("wrote {}", p.display());
    }
    if result.failed {
        bail!("a workload failed");
    }
    Ok(())
}
