//! The files a run writes (`--json FILE`, `--svg DIR`), opened or checked before the run, so
//! that a path that cannot be written is refused at once and not after the whole run; every
//! error names the flag and the path.
//!
//! Both flags create missing directories (`--json` its file's parent, `--svg` the directory
//! itself), as `mkdir -p` does; a path whose existing part is not a directory is refused.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::Context;

/// A refusal of a command-line value: which flag, which value, why.
#[derive(Debug)]
pub struct BadValue {
    /// The flag as clap shows it: `--json <FILE>`.
    pub flag: &'static str,
    /// The value given.
    pub value: String,
    /// Why it is refused.
    pub why: String,
}

impl std::fmt::Display for BadValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "invalid value '{}' for '{}': {}",
            self.value, self.flag, self.why
        )
    }
}

impl std::error::Error for BadValue {}

/// Creates the missing directories of `dir`, after checking that its nearest existing
/// ancestor is a directory (else the error says which one is not).
fn create_dirs(dir: &Path) -> Result<(), String> {
    if let Some(existing) = dir.ancestors().find(|a| a.exists()) {
        if !existing.is_dir() {
            return Err(format!("{} is not a directory", existing.display()));
        }
    }
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))
}

/// A `--json FILE`: created (or truncated) before the run; the run's samples go to it.
pub struct JsonFile {
    path: PathBuf,
    out: BufWriter<File>,
}

impl JsonFile {
    /// Creates `path` (and its missing parent directories).
    ///
    /// # Errors
    /// The path cannot be created: the message names `--json` and the path.
    pub fn create(path: &Path) -> Result<JsonFile, BadValue> {
        let bad = |why: String| BadValue {
            flag: "--json <FILE>",
            value: path.display().to_string(),
            why,
        };
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            create_dirs(parent).map_err(bad)?;
        }
        let file = File::create(path).map_err(|e| bad(format!("cannot create it: {e}")))?;
        Ok(JsonFile {
            path: path.to_path_buf(),
            out: BufWriter::new(file),
        })
    }

    /// The path given.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The writer the runners write JSON lines to.
    pub fn writer(&mut self) -> &mut dyn Write {
        &mut self.out
    }

    /// Flushes what the run wrote.
    ///
    /// # Errors
    /// The write failed (a full disk); the message names the path.
    pub fn flush(&mut self) -> anyhow::Result<()> {
        self.out
            .flush()
            .with_context(|| format!("writing {}", self.path.display()))
    }
}

/// Checks that `DIR/<name>.svg` can be written for each of `names`: creates `dir` (and its
/// missing parents) and each file, empty; the charts replace them after the run.
///
/// # Errors
/// A directory or file cannot be created: the message names `--svg` and the path.
pub fn check_svg_dir<'a>(
    dir: &Path,
    names: impl IntoIterator<Item = &'a str>,
) -> Result<(), BadValue> {
    let bad = |why: String| BadValue {
        flag: "--svg <DIR>",
        value: dir.display().to_string(),
        why,
    };
    create_dirs(dir).map_err(bad)?;
    for name in names {
        let p = dir.join(format!("{name}.svg"));
        File::create(&p).map_err(|e| bad(format!("cannot create {}: {e}", p.display())))?;
    }
    Ok(())
}
