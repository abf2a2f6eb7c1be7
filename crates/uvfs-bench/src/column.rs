//! A column of the result tables: one implementation doing a workload.

use std::time::Duration;

use crate::params::Params;

/// The host kernel's column: real system calls on a private tmpfs.
pub const HOST: &str = "host";

/// The host kernel's column when no tmpfs could be mounted for it (not root and no user
/// namespace): real system calls in a plain directory under the system temporary directory,
/// on whatever file system that is. The tables compare the other columns with it as with
/// [`HOST`]; the name keeps its figures apart from a tmpfs's in the JSON.
pub const HOST_IN_DIR: &str = "host (not tmpfs)";

/// Whether `name` is a host column's: the one the tables compare the others with.
pub fn is_host(name: &str) -> bool {
    name == HOST || name == HOST_IN_DIR
}

/// Whether a column runs a configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Support {
    /// It runs.
    Yes,
    /// It does not; the reason is printed in the table (never a silent gap).
    No(String),
}

/// One implementation of the workloads: the host kernel, uvfs, uvfs "vanilla", a peer.
///
/// The runner calls `setup` once per configuration (untimed), then `run` once per iteration
/// in interleaved order with the other columns, then `teardown`.
pub trait Column: Send {
    /// Column name: `host`, `uvfs`, `uvfs-vanilla`, `vfs-crate`, `gvisor`.
    fn name(&self) -> &'static str;

    /// Whether this column runs `p`, or why not.
    fn supports(&self, p: &Params) -> Support;

    /// Builds what `p` needs (files, directories, handles). Untimed.
    ///
    /// # Errors
    /// Any failure of the implementation under test; the run reports it and fails.
    fn setup(&mut self, p: &Params) -> anyhow::Result<()>;

    /// Runs `ops` operations on each of `p.threads` threads, started together, and returns the
    /// wall time from the common start until the last thread finished.
    ///
    /// # Errors
    /// Any failed operation.
    fn run(&mut self, p: &Params, ops: u64) -> anyhow::Result<Duration>;

    /// Removes what `setup` built.
    fn teardown(&mut self) {}

    /// A helper process doing this column's work, whose CPU time the Duration table adds.
    fn helper_pid(&self) -> Option<u32> {
        None
    }

    /// A one-line description of what this column leaves out or adds compared with the host
    /// syscall path, printed under the tables.
    fn note(&self) -> &'static str;
}
