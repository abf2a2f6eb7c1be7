//! `uvfs import` and `uvfs export`: a host directory into a tar archive, and an archive out to
//! a host directory, each through a fresh in-memory uvfs tree (`uvfs::tree`). The archive
//! keeps what `uvfs::tree` keeps (holes as GNU sparse entries, xattrs and nanosecond times in
//! PAX headers, hard links, owners); extraction refuses entries with `..` and never replaces
//! an existing name.

use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;
use uvfs::tree::{self, Options, Report};
use uvfs::{Cred, Vfs};

use crate::output::BadValue;

/// Where the tree sits inside the in-memory tree.
const TREE: &str = "/tree";

#[derive(Args)]
pub struct ImportArgs {
    /// The host directory to archive.
    #[arg(value_name = "DIR")]
    source: PathBuf,
    /// The tar archive to write (`-`: standard output). Refused if it exists.
    #[arg(value_name = "ARCHIVE")]
    archive: PathBuf,
}

#[derive(Args)]
pub struct ExportArgs {
    /// The tar archive to read (`-`: standard input).
    #[arg(value_name = "ARCHIVE")]
    archive: PathBuf,
    /// The host directory to extract into: created if missing (its parent must exist);
    /// entries that exist already are refused, never replaced.
    #[arg(value_name = "DIR")]
    dest: PathBuf,
}

fn bad(flag: &'static str, path: &Path, why: impl Into<String>) -> anyhow::Error {
    BadValue {
        flag,
        value: path.display().to_string(),
        why: why.into(),
    }
    .into()
}

fn is_stdio(p: &Path) -> bool {
    p.as_os_str() == "-"
}

/// Prints what a copy did, and what it left out, on standard error.
fn summary(what: &str, r: &Report) {
    eprintln!(
        "{what}: {} files, {} directories, {} symlinks, {} special files, {} hard links, {} bytes (+{} bytes of holes), {} xattrs",
        r.files, r.dirs, r.symlinks, r.specials, r.hard_links, r.bytes, r.hole_bytes, r.xattrs
    );
    for s in &r.skipped {
        eprintln!("left out: {s:?}");
    }
}

/// `uvfs import DIR ARCHIVE`.
pub fn import(a: ImportArgs) -> anyhow::Result<()> {
    if !a.source.is_dir() {
        return Err(bad("<DIR>", &a.source, "not a directory"));
    }
    // The archive's path is checked before anything is read, and made only once the tree is
    // read, so that a source that cannot be read leaves no empty archive behind.
    if !is_stdio(&a.archive) {
        if a.archive.symlink_metadata().is_ok() {
            return Err(bad("<ARCHIVE>", &a.archive, "exists already"));
        }
        match a.archive.parent() {
            Some(p) if !p.as_os_str().is_empty() && !p.is_dir() => {
                return Err(bad(
                    "<ARCHIVE>",
                    &a.archive,
                    "its parent is not a directory",
                ));
            }
            _ => {}
        }
    }
    let vfs = Vfs::new();
    let task = vfs.task(Cred::root());
    let opts = Options::default();
    let r = tree::import(&task, &a.source, TREE, &opts)
        .with_context(|| format!("reading {}", a.source.display()))?;
    summary("read", &r);
    let out: Box<dyn Write> = if is_stdio(&a.archive) {
        Box::new(io::stdout().lock())
    } else {
        let f = File::options()
            .write(true)
            .create_new(true)
            .open(&a.archive)
            .map_err(|e| bad("<ARCHIVE>", &a.archive, format!("cannot create it: {e}")))?;
        Box::new(f)
    };
    let mut w = BufWriter::new(out);
    let written = tree::export_tar(&task, TREE, &mut w, &opts)
        .map_err(anyhow::Error::from)
        .and_then(|r| w.flush().map(|()| r).map_err(anyhow::Error::from));
    match written {
        Ok(r) => summary("archived", &r),
        Err(e) => {
            drop(w);
            if !is_stdio(&a.archive) {
                let _ = std::fs::remove_file(&a.archive);
            }
            return Err(e.context(format!("writing {}", a.archive.display())));
        }
    }
    Ok(())
}

/// `uvfs export ARCHIVE DIR`.
pub fn export(a: ExportArgs) -> anyhow::Result<()> {
    let input: Box<dyn Read> = if is_stdio(&a.archive) {
        Box::new(io::stdin().lock())
    } else {
        let f = File::open(&a.archive)
            .map_err(|e| bad("<ARCHIVE>", &a.archive, format!("cannot open it: {e}")))?;
        Box::new(f)
    };
    match a.dest.parent() {
        Some(p) if !p.as_os_str().is_empty() && !p.is_dir() => {
            return Err(bad("<DIR>", &a.dest, "its parent is not a directory"));
        }
        _ => {}
    }
    if a.dest.exists() && !a.dest.is_dir() {
        return Err(bad("<DIR>", &a.dest, "not a directory"));
    }
    let vfs = Vfs::new();
    let task = vfs.task(Cred::root());
    let opts = Options::default();
    let r = tree::import_tar(&task, BufReader::new(input), TREE, &opts)
        .with_context(|| format!("reading {}", a.archive.display()))?;
    summary("read", &r);
    let r = tree::export(&task, TREE, &a.dest, &opts)
        .with_context(|| format!("writing {}", a.dest.display()))?;
    summary("extracted", &r);
    Ok(())
}
