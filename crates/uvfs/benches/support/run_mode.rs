//! How a benchmark binary was started: `cargo bench` measures, every other way (`cargo test
//! --benches`, `--test`, `--list`, criterion's `--profile-time`) runs each workload once.

/// How this process was started.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunMode {
    /// `cargo bench`: measure.
    Measure,
    /// `cargo test --benches`, `cargo bench -- --test`, `--list`: run once, measure nothing.
    Smoke,
}

impl RunMode {
    pub fn from_args() -> RunMode {
        let args: Vec<String> = std::env::args().collect();
        let has = |flag: &str| args.iter().any(|a| a == flag);
        if has("--bench")
            && !has("--test")
            && !has("--list")
            && !args.iter().any(|a| a.starts_with("--profile-time"))
        {
            RunMode::Measure
        } else {
            RunMode::Smoke
        }
    }
}
