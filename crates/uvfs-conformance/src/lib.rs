//! Differential conformance for uvfs: each case (CASES.md) runs on uvfs in process and on the
//! host kernel in a sandboxed helper process; both sides' outcomes are normalised and compared.
//! The host kernel is the oracle: cases carry no expected values.
//!
//! Map: [`lex`] and [`parse`] read case files into [`Op`]s and [`mod@print`] writes them back;
//! [`backend`] runs them on a [`Backend`]: [`UvfsBackend`], or on the host the observer of
//! [`host::observer`] that hands ops to one actor per task running [`HostBackend`] (raw
//! system calls, inside the sandbox of [`host::sandbox`]), in the `uvfs-conformance-host`
//! binary, one case at a time or served ([`HostServer`]); [`snapshot`] is the walk both sides'
//! `snapshot` op makes; [`sysfs_guard`] says which calls would change the machine's sysfs
//! (the host refuses them); [`outcome`] is what a call returned; [`normalise`] and [`report`]
//! compare and summarise. `tests/differential.rs` ties them together.

pub mod backend;
pub mod host;
pub mod lex;
pub mod linearize;
pub mod names;
pub mod normalise;
pub mod op;
pub mod outcome;
pub mod parse;
pub mod print;
pub mod random;
pub mod report;
pub mod snapshot;
pub mod sysfs_guard;
pub mod uvfs_backend;

pub use backend::{run_case, Backend, CaseRun, Fds};
pub use host::serve::{Fencing, HostServer};
pub use host::HostBackend;
pub use op::Op;
pub use outcome::{Outcome, Value};
pub use parse::{load_dir, load_file, Case, Step};
pub use uvfs_backend::{run_on_uvfs, UvfsBackend};
