//! Runs a budget of seeds on both sides with a pool of workers, judges each sequence, and
//! minimises the divergences it finds.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::gen::{generate, Shape};
use super::minimise::minimise;
use super::{judge, SeedVerdict};
use crate::backend::CaseRun;
use crate::op::Op;
use crate::outcome::Outcome;
use crate::parse::Case;
use crate::report::StepDiff;
use crate::uvfs_backend::run_on_uvfs;

/// How long one sequence may take on uvfs before it counts as hung.
const UVFS_TIMEOUT: Duration = Duration::from_secs(20);

/// The host side of a worker: runs a case on the kernel (in a sandbox) and reports its
/// outcomes, step 0 (the root mount) first.
pub trait HostSide {
    /// Runs `case` on the host kernel.
    fn run(&mut self, case: &Case) -> CaseRun;
}

/// What to run.
#[derive(Clone, Debug)]
pub struct Budget {
    /// The first seed.
    pub start: u64,
    /// How many seeds at most.
    pub seeds: u64,
    /// Stop starting new seeds after this long, if set.
    pub time: Option<Duration>,
    /// Workers, each with its own host side.
    pub workers: usize,
    /// The shape of each sequence.
    pub shape: Shape,
    /// At most this many distinct divergences are minimised (each costs hundreds of runs).
    pub minimise: usize,
    /// Runs of both sides one minimisation may spend.
    pub minimise_runs: usize,
}

/// A divergence: the seed, where it diverged, and the smallest case that still diverges.
#[derive(Clone, Debug)]
pub struct Found {
    /// The seed.
    pub seed: u64,
    /// Its first divergent step (1-based; 0 is the root mount).
    pub step: usize,
    /// The outcomes there.
    pub diff: StepDiff,
    /// What kind of divergence, for grouping: op name and both outcomes.
    pub signature: String,
    /// The minimised case, if this divergence was minimised.
    pub minimised: Option<Case>,
}

/// What a run did.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// Seeds run to the end.
    pub seeds: u64,
    /// Ops run on each side (snapshots included).
    pub ops: u64,
    /// Ops (snapshots excluded) that succeeded on the host.
    pub ops_ok: u64,
    /// Ops (snapshots excluded) run.
    pub ops_real: u64,
    /// Sequences that matched to the end.
    pub matched: u64,
    /// Sequences that met an expected divergence (and stopped there, or went on for a
    /// `Then::Continue` class), by class.
    pub expected: BTreeMap<&'static str, u64>,
    /// Sequences that diverged unexpectedly.
    pub diverged: Vec<Found>,
    /// Sequences run in ticked timing.
    pub ticked: u64,
    /// Wall time.
    pub elapsed: Duration,
}

/// Runs both sides of `case`.
fn run_both(case: &Case, host: &mut dyn HostSide) -> (CaseRun, CaseRun) {
    let t = Instant::now();
    let u = run_on_uvfs(case, UVFS_TIMEOUT);
    let t2 = Instant::now();
    let h = host.run(case);
    if std::env::var_os("UVFS_RANDOM_TIMES").is_some() {
        eprintln!("uvfs {:?} host {:?}", t2 - t, t2.elapsed());
    }
    (u, h)
}

/// Runs the budget with `make_host()` giving each worker its host side, and reports.
pub fn run<H: HostSide>(budget: &Budget, make_host: impl Fn() -> H + Sync) -> Report {
    let start = Instant::now();
    let next = AtomicU64::new(0);
    let report = Mutex::new(Report::default());
    let minimised_signatures = Mutex::new(Vec::<String>::new());
    std::thread::scope(|s| {
        for _ in 0..budget.workers.max(1) {
            s.spawn(|| {
                let mut host = make_host();
                loop {
                    if budget.time.is_some_and(|t| start.elapsed() >= t) {
                        break;
                    }
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= budget.seeds {
                        break;
                    }
                    let seed = budget.start + i;
                    let case = generate(seed, budget.shape);
                    let (u, h) = run_both(&case, &mut host);
                    let verdict = judge(&case, &u, &h);
                    let mut found = None;
                    if let SeedVerdict::Diverged {
                        step,
                        diff,
                        signature,
                    } = &verdict
                    {
                        let sig = signature.clone();
                        let fresh = {
                            let mut seen = minimised_signatures.lock().expect("not poisoned");
                            let fresh = !seen.contains(&sig) && seen.len() < budget.minimise;
                            if fresh {
                                seen.push(sig.clone());
                            }
                            fresh
                        };
                        let minimised = fresh.then(|| {
                            // Keep the same divergence: a shorter case that diverges
                            // otherwise is another bug.
                            minimise(&case, budget.minimise_runs, |c| {
                                let (u, h) = run_both(c, &mut host);
                                match judge(c, &u, &h) {
                                    SeedVerdict::Diverged { signature, .. } => signature == sig,
                                    _ => false,
                                }
                            })
                        });
                        found = Some(Found {
                            seed,
                            step: *step,
                            diff: diff.clone(),
                            signature: sig,
                            minimised,
                        });
                    }
                    let mut r = report.lock().expect("not poisoned");
                    r.seeds += 1;
                    r.ops += u.outcomes.len().saturating_sub(1) as u64;
                    for (step, o) in case.steps.iter().zip(h.outcomes.iter().skip(1)) {
                        if !is_observation(&step.op) {
                            r.ops_real += 1;
                            r.ops_ok += u64::from(matches!(o, Outcome::Ok(_)));
                        }
                    }
                    if case.timing == crate::parse::Timing::Ticked {
                        r.ticked += 1;
                    }
                    match verdict {
                        SeedVerdict::Match => r.matched += 1,
                        SeedVerdict::Expected { class, .. } => {
                            *r.expected.entry(class).or_default() += 1
                        }
                        SeedVerdict::Diverged { .. } => r.diverged.extend(found),
                    }
                }
            });
        }
    });
    let mut r = report.into_inner().expect("not poisoned");
    r.diverged.sort_by_key(|f| f.seed);
    r.elapsed = start.elapsed();
    r
}

/// Ops the tester adds to observe state, not to change it.
fn is_observation(op: &Op) -> bool {
    matches!(op, Op::Snapshot)
}

impl HostSide for crate::host::serve::HostServer {
    fn run(&mut self, case: &Case) -> CaseRun {
        crate::host::serve::HostServer::run(self, case)
    }
}
