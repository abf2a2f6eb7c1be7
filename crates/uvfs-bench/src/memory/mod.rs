//! `uvfs bench memory`: how many bytes an empty file costs, on the host kernel, uvfs, the `vfs`
//! crate and gVisor.
//!
//! Every column creates the same N empty files in N/1000 directories (file `i` is
//! `d<i*dirs/N>/f<i>`, 1000 to a directory; default N = 1,000,000, `--quick` 20,000), each as
//! `mkdir` of the directories then `open(O_CREAT|O_WRONLY, 0644)` + `close` per file, after one
//! warm-up file that is not counted. Each column runs in a **fresh process** (the `uvfs` binary
//! re-executed with the hidden `uvfs bench memory-probe COLUMN`, or the gVisor driver), so one
//! column's heap and the bench's own memory never count for another. The child measures just
//! before the first `mkdir` and just after the last `close`, and prints one JSON line
//! ([`Probe`]); the parent turns it into bytes per file ([`runner`], [`report`]).
//!
//! What each column's headline figure is ([`MemoryColumn::measured_as`]):
//! - **host**: the growth of the kernel's slab caches that a tmpfs create allocates from
//!   ([`slab::COUNTED_CACHES`]: `dentry`, `shmem_inode_cache`, `lsm_inode_cache`, `maple_node`,
//!   `radix_tree_node`), active objects × object size from `/proc/slabinfo`, on a private tmpfs
//!   (root needed: mount and slabinfo). Objects, not slab pages: a cache's free objects in
//!   existing slabs absorb growth without a new page, so page growth undercounts (it is shown
//!   beside). Other caches that grew by at least one object per 100 files are listed, not
//!   counted (they may be other activity on the machine, which also adds noise to the counted
//!   ones).
//! - **uvfs**: the resident set size's growth (`/proc/self/statm`) over the creation through the
//!   public API (`Vfs::new()`, `task(Cred::root())`, `mkdirat`, `openat`, `close`); glibc's
//!   heap in use (`mallinfo2`) beside it.
//! - **vfs-crate**: the same for `vfs::MemoryFS` (`create_dir`, `create_file` + drop).
//! - **gvisor**: the Go heap's live bytes (`runtime.MemStats.HeapAlloc` after a blocking
//!   `runtime.GC()`), not the RSS: a Go process's RSS also holds the garbage the collector lets
//!   accumulate before its next cycle, which is not the file system's cost. RSS beside it.

pub mod heap;
pub mod probe;
pub mod report;
pub mod runner;
pub mod slab;

use serde::{Deserialize, Serialize};

use slab::CacheGrowth;

/// Files per directory of the workload (the issue's 1M files in 1000 directories).
pub const FILES_PER_DIR: u64 = 1000;

/// Files of a full run.
pub const DEFAULT_FILES: u64 = 1_000_000;

/// Files of a `--quick` run.
pub const QUICK_FILES: u64 = 20_000;

/// How many empty files a run creates, in how many directories.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Size {
    /// Empty files.
    pub files: u64,
    /// Directories they are spread over (file `i` goes to `i * dirs / files`).
    pub dirs: u64,
}

impl Size {
    /// `files` in [`FILES_PER_DIR`]-file directories (the last one may hold fewer).
    ///
    /// # Errors
    /// A message if `files` is zero.
    pub fn with_files(files: u64) -> Result<Size, String> {
        if files == 0 {
            return Err("--files takes a positive count, not 0".into());
        }
        Ok(Size {
            files,
            dirs: files.div_ceil(FILES_PER_DIR),
        })
    }

    /// The size of a full run, or of a `--quick` one.
    pub fn default_for(quick: bool) -> Size {
        let files = if quick { QUICK_FILES } else { DEFAULT_FILES };
        Size::with_files(files).expect("the defaults are positive")
    }

    /// Checks a size given on the command line of a probe.
    ///
    /// # Errors
    /// A message if a count is zero or there are more directories than files.
    pub fn checked(files: u64, dirs: u64) -> Result<Size, String> {
        if files == 0 || dirs == 0 || dirs > files {
            return Err(format!(
                "--files and --dirs take positive counts with no more directories than files, not {files} and {dirs}"
            ));
        }
        Ok(Size { files, dirs })
    }

    /// The directory file `i` goes in.
    pub fn dir_of(&self, i: u64) -> u64 {
        i * self.dirs / self.files
    }
}

/// A column of the memory table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum MemoryColumn {
    /// The host kernel's slab growth on a private tmpfs.
    Host,
    /// uvfs through its public API.
    Uvfs,
    /// The `vfs` crate's MemoryFS.
    VfsCrate,
    /// gVisor's Sentry VFS and tmpfs, in the Go driver.
    Gvisor,
}

impl MemoryColumn {
    /// Every column, in table order.
    pub const ALL: [MemoryColumn; 4] = [
        MemoryColumn::Host,
        MemoryColumn::Uvfs,
        MemoryColumn::VfsCrate,
        MemoryColumn::Gvisor,
    ];

    /// The name in tables, in JSON and on the probe's command line.
    pub fn name(self) -> &'static str {
        match self {
            MemoryColumn::Host => "host",
            MemoryColumn::Uvfs => "uvfs",
            MemoryColumn::VfsCrate => "vfs-crate",
            MemoryColumn::Gvisor => "gvisor",
        }
    }

    /// The column named `s`.
    pub fn from_name(s: &str) -> Option<MemoryColumn> {
        Self::ALL.into_iter().find(|c| c.name() == s)
    }

    /// What its headline figure is.
    pub fn measured_as(self) -> &'static str {
        match self {
            MemoryColumn::Host => "slab objects",
            MemoryColumn::Uvfs | MemoryColumn::VfsCrate => "RSS",
            MemoryColumn::Gvisor => "Go heap live",
        }
    }

    /// The headline figure of `probe`, in bytes over all files.
    pub fn headline_bytes(self, probe: &Probe) -> Option<i64> {
        match self {
            MemoryColumn::Host => probe.slab_object_bytes(),
            MemoryColumn::Uvfs | MemoryColumn::VfsCrate => probe.rss_delta_bytes,
            MemoryColumn::Gvisor => probe.heap_alloc_delta_bytes,
        }
    }

    /// One line under the table: what the column measures and leaves out.
    pub fn note(self) -> &'static str {
        match self {
            MemoryColumn::Host => {
                "host: growth of /proc/slabinfo active objects x object size of the caches named above, on a private tmpfs, around the creation only (other activity on the machine adds noise); slab pages: the same caches' slabs, which undercount when free objects in existing slabs absorb the growth"
            }
            MemoryColumn::Uvfs => {
                "uvfs: growth of a fresh process's RSS over the creation through the public API (Vfs::new, task, mkdirat, openat(O_CREAT|O_WRONLY), close); heap: glibc malloc's bytes in use (mallinfo2 uordblks + hblkhd), shown only where the program allocates with glibc's malloc (the uvfs binary uses mimalloc)"
            }
            MemoryColumn::VfsCrate => {
                "vfs-crate: MemoryFS create_dir, create_file + drop: whole paths as keys of one map, no inode metadata; RSS and glibc heap as for uvfs"
            }
            MemoryColumn::Gvisor => {
                "gvisor: Sentry VFS + tmpfs in the Go driver; Go heap live: runtime.MemStats.HeapAlloc after runtime.GC() (RSS also holds uncollected garbage and the GC's headroom)"
            }
        }
    }
}

/// What a probe process prints: its memory's growth over the creation, totals over all files.
/// Fields a column does not measure are absent (`None`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Probe {
    /// Files created.
    pub files: u64,
    /// Directories created.
    pub dirs: u64,
    /// Why the column could not measure ("skipped: ..."), if it could not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
    /// Resident set size growth (`/proc/self/statm`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rss_delta_bytes: Option<i64>,
    /// glibc malloc's bytes in use growth (`mallinfo2`: `uordblks + hblkhd`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heap_delta_bytes: Option<i64>,
    /// Go: `runtime.MemStats.HeapAlloc` growth, both read after `runtime.GC()`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heap_alloc_delta_bytes: Option<i64>,
    /// Go: live heap objects' growth (`HeapObjects`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heap_objects_delta: Option<i64>,
    /// Go: `runtime.MemStats.Sys` growth (what the runtime obtained from the OS).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sys_delta_bytes: Option<i64>,
    /// Host: every counted cache, and every other cache that grew noticeably.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slab: Option<Vec<CacheGrowth>>,
}

impl Probe {
    /// A probe that could not measure, and why.
    pub fn skipped(size: Size, why: String) -> Probe {
        Probe {
            files: size.files,
            dirs: size.dirs,
            skipped: Some(why),
            ..Probe::default()
        }
    }

    /// The counted caches' object bytes, summed.
    pub fn slab_object_bytes(&self) -> Option<i64> {
        self.slab.as_ref().map(|caches| {
            caches
                .iter()
                .filter(|c| c.counted)
                .map(|c| c.object_bytes)
                .sum()
        })
    }

    /// The counted caches' slab pages, in bytes, summed.
    pub fn slab_page_bytes(&self) -> Option<i64> {
        self.slab.as_ref().map(|caches| {
            caches
                .iter()
                .filter(|c| c.counted)
                .map(|c| c.slab_bytes)
                .sum()
        })
    }

    /// `bytes` over the files.
    pub fn per_file(&self, bytes: Option<i64>) -> Option<f64> {
        bytes.map(|b| b as f64 / self.files.max(1) as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_put_a_thousand_files_in_a_directory() {
        assert_eq!(
            Size::default_for(false),
            Size {
                files: 1_000_000,
                dirs: 1000
            }
        );
        assert_eq!(
            Size::default_for(true),
            Size {
                files: 20_000,
                dirs: 20
            }
        );
        let odd = Size::with_files(2500).expect("positive");
        assert_eq!(odd.dirs, 3);
        // Every directory gets files, in order, and the last file lands in the last one.
        let per_dir: Vec<usize> = (0..odd.dirs)
            .map(|d| (0..odd.files).filter(|&i| odd.dir_of(i) == d).count())
            .collect();
        assert_eq!(per_dir, [834, 833, 833]);
        assert!(Size::with_files(0).is_err());
        assert!(Size::checked(10, 11).is_err());
        assert!(Size::checked(10, 0).is_err());
    }

    #[test]
    fn a_go_probe_line_parses_and_picks_the_heap() {
        let line = r#"{"files": 4, "dirs": 1, "heap_alloc_delta_bytes": 4000, "heap_objects_delta": 12, "sys_delta_bytes": 8192, "rss_delta_bytes": 12288}"#;
        let p: Probe = serde_json::from_str(line).expect("parses");
        assert_eq!(p.skipped, None);
        assert_eq!(MemoryColumn::Gvisor.headline_bytes(&p), Some(4000));
        assert_eq!(p.per_file(p.rss_delta_bytes), Some(3072.0));
        assert_eq!(MemoryColumn::Host.headline_bytes(&p), None);
    }
}
