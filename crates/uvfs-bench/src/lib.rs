//! `uvfs bench`: the benchmark suite that runs each seed experiment's workload on the host
//! kernel, on uvfs, on uvfs "vanilla" and on the peers, interleaved in one run, and reports the
//! results the way the seeds do (mmtests-style tables beside the host kernel).

pub mod calibrate;
pub mod column;
pub mod columns;
pub mod find;
pub mod machine;
pub mod memory;
pub mod params;
pub mod pipes;
mod private_tmpfs;
pub mod report;
pub mod runner;
pub mod scale;
pub mod stats;
pub mod svg;
pub mod sysfs;
pub mod watch;
