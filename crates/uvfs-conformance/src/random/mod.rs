//! The random differential tester: seeded sequences of system calls ([`gen`]) run on uvfs and on
//! the host kernel, compared op by op with the same normaliser as the hand-written cases; a
//! divergence is minimised ([`minimise`]) and printed as a case ready for `cases/`.
//!
//! Every generated op is followed by a `snapshot` of the whole tree (see CASES.md), so a
//! divergence in any object's state shows at the op that caused it, not later.
//!
//! Known, deliberate differences are *classes* ([`expect::CLASSES`]): a predicate on the first
//! divergent step, each listed with its reason in `expected-divergences.txt` as
//! `random.NAME: reason`. A sequence stops being compared at its first divergence, expected or
//! not (the two sides' states differ from there on).

pub mod cli;
pub mod driver;
pub mod expect;
pub mod gen;
pub mod minimise;
pub mod rng;
pub mod signature;

use crate::backend::CaseRun;
use crate::parse::Case;
use crate::report::{compare, StepDiff};

/// The verdict on one sequence.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SeedVerdict {
    /// Every step matched.
    Match,
    /// The first divergent step is a listed deliberate difference.
    Expected {
        /// The class's name (`random.NAME` in the expectations file).
        class: &'static str,
        /// The step (1-based op number) where it diverged.
        step: usize,
    },
    /// The first divergent step is not explained.
    Diverged {
        /// The step where it diverged (0: the root mount).
        step: usize,
        /// The two normalised outcomes there.
        diff: StepDiff,
        /// What kind of divergence ([`signature::signature`]).
        signature: String,
    },
}

/// Compares the two runs of `case` and judges the first divergent step.
pub fn judge(case: &Case, uvfs: &CaseRun, host: &CaseRun) -> SeedVerdict {
    let diffs = compare(case, uvfs, host);
    let Some(first) = diffs.into_iter().next() else {
        return SeedVerdict::Match;
    };
    let step = first.step;
    let signature = signature::signature(case, step, &first, uvfs, host);
    if step > 0 {
        if let (Some(u), Some(h)) = (uvfs.outcomes.get(step), host.outcomes.get(step)) {
            if let Some(class) = expect::classify(case, step, u, h, &first, &signature) {
                return SeedVerdict::Expected { class, step };
            }
        }
    }
    SeedVerdict::Diverged {
        step,
        diff: first,
        signature,
    }
}
