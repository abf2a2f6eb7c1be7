//! The machine record printed with every result: CPU, cores, kernel, compiler, and the
//! cross-CPU cache-line round trip that moves every multi-thread number on this VM.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use serde::Serialize;

/// Round trips measured per cache-line sample.
const PINGPONG_ROUNDS: u64 = 50_000;
/// Below this the VM is in its fast state (about 130 ns), above in its slow one (about 470 ns).
const FAST_STATE_LIMIT_NS: f64 = 300.0;

/// What the run was measured on.
#[derive(Clone, Debug, Serialize)]
pub struct Machine {
    /// CPU model name.
    pub cpu: String,
    /// Logical CPUs available.
    pub cores: usize,
    /// Kernel release.
    pub kernel: String,
    /// Compiler that built the suite.
    pub rustc: String,
}

impl Machine {
    /// Reads the record from the running system.
    pub fn read() -> Machine {
        let cpu = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("model name"))
                    .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
            })
            .unwrap_or_else(|| "unknown".into());
        let u = rustix::system::uname();
        Machine {
            cpu,
            cores: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
            kernel: u.release().to_string_lossy().into_owned(),
            rustc: env!("UVFS_BENCH_RUSTC").to_string(),
        }
    }
}

/// The VM's cache-line state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum LineState {
    /// About 130 ns per round trip.
    Fast,
    /// About 470 ns per round trip.
    Slow,
    /// Only one CPU: not measurable.
    Unmeasured,
}

/// One measurement of the cross-CPU round trip.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct LineSample {
    /// Nanoseconds per round trip (`0` when unmeasured).
    pub round_trip_ns: f64,
    /// The state it indicates.
    pub state: LineState,
}

impl LineSample {
    /// "132 ns (fast state)".
    pub fn describe(&self) -> String {
        match self.state {
            LineState::Unmeasured => "not measured (one CPU)".into(),
            LineState::Fast => format!("{:.0} ns (fast state)", self.round_trip_ns),
            LineState::Slow => format!("{:.0} ns (slow state)", self.round_trip_ns),
        }
    }
}

/// Pins the calling thread to `cpu` (best effort: a refusal leaves it unpinned).
pub(crate) fn pin(cpu: usize) {
    let mut set = rustix::thread::CpuSet::new();
    set.set(cpu);
    let _ = rustix::thread::sched_setaffinity(None, &set);
}

/// Two threads pinned to CPUs 0 and 1 pass one cache line back and forth; returns the mean
/// round trip.
pub fn cache_line_round_trip() -> LineSample {
    if std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        < 2
    {
        return LineSample {
            round_trip_ns: 0.0,
            state: LineState::Unmeasured,
        };
    }
    let line = AtomicU64::new(0);
    let elapsed = std::thread::scope(|s| {
        s.spawn(|| {
            pin(1);
            for i in 0..PINGPONG_ROUNDS {
                while line.load(Ordering::Acquire) != 2 * i + 1 {
                    std::hint::spin_loop();
                }
                line.store(2 * i + 2, Ordering::Release);
            }
        });
        let h = s.spawn(|| {
            pin(0);
            let start = Instant::now();
            for i in 0..PINGPONG_ROUNDS {
                line.store(2 * i + 1, Ordering::Release);
                while line.load(Ordering::Acquire) != 2 * i + 2 {
                    std::hint::spin_loop();
                }
            }
            start.elapsed()
        });
        h.join().expect("ping-pong thread")
    });
    let ns = elapsed.as_nanos() as f64 / PINGPONG_ROUNDS as f64;
    let state = if ns < FAST_STATE_LIMIT_NS {
        LineState::Fast
    } else {
        LineState::Slow
    };
    LineSample {
        round_trip_ns: ns,
        state,
    }
}
