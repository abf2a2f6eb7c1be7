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
    let mut first_expected = None;
    for diff in compare(case, uvfs, host) {
        let step = diff.step;
        let signature = signature::signature(case, step, &diff, uvfs, host);
        let class = match (uvfs.outcomes.get(step), host.outcomes.get(step)) {
            (Some(u), Some(h)) if step > 0 => expect::classify(case, step, u, h, &diff, &signature),
            _ => None,
        };
        match class {
            Some((class, expect::Then::Continue)) => {
                first_expected.get_or_insert(SeedVerdict::Expected { class, step });
            }
            Some((class, expect::Then::Stop)) => {
                return first_expected.unwrap_or(SeedVerdict::Expected { class, step });
            }
            None => {
                return SeedVerdict::Diverged {
                    step,
                    diff,
                    signature,
                }
            }
        }
    }
    first_expected.unwrap_or(SeedVerdict::Match)
}

#[cfg(test)]
mod tests {
    use super::gen::{generate, Shape};
    use super::*;
    use crate::op::Op;
    use crate::outcome::{Outcome, Value};

    const ENXIO: i32 = 6;
    const EACCES: i32 = 13;

    /// Both sides answer every step with `ok 0`, except what `change` makes of uvfs's.
    fn runs(case: &Case, change: impl Fn(usize, &mut Outcome)) -> (CaseRun, CaseRun) {
        let host = CaseRun {
            outcomes: vec![Outcome::Ok(Value::Int(0)); case.steps.len() + 1],
            aborted: None,
        };
        let mut uvfs = host.clone();
        for (i, o) in uvfs.outcomes.iter_mut().enumerate() {
            change(i, o);
        }
        (uvfs, host)
    }

    #[test]
    fn the_first_divergent_step_is_judged_with_its_signature() {
        let case = generate(3, Shape::default());
        let (u, h) = runs(&case, |i, o| {
            if i == 7 || i == 9 {
                *o = Outcome::Errno(EACCES);
            }
        });
        match judge(&case, &u, &h) {
            SeedVerdict::Diverged {
                step, signature, ..
            } => {
                assert_eq!(step, 7);
                let op = signature::op_name(&case.steps[6].op);
                assert_eq!(signature, format!("{op}: uvfs EACCES host ok"));
            }
            v => panic!("{v:?}"),
        }
        let (u, h) = runs(&case, |_, _| {});
        assert_eq!(judge(&case, &u, &h), SeedVerdict::Match);
    }

    #[test]
    fn a_listed_class_explains_its_divergence_and_nothing_else() {
        // A seed with a `SEEK_DATA` or `SEEK_HOLE` seek, and a step that is not one.
        let seek = |op: &Op| matches!(op, Op::Lseek { whence, .. } if *whence == 3 || *whence == 4);
        let (case, seek_step, other_step) = (0..500)
            .find_map(|seed| {
                let case = generate(seed, Shape::default());
                let at = case.steps.iter().position(|s| seek(&s.op))?;
                let other = case.steps.iter().position(|s| !seek(&s.op))?;
                Some((case, at + 1, other + 1))
            })
            .expect("some seed in 500 seeks for data or a hole");
        // Linux's overflow near the largest offset (class linux_seek_hole_data_overflow).
        let overflow = |step: usize| {
            let (mut u, mut h) = runs(&case, |_, _| {});
            u.outcomes[step] = Outcome::Ok(Value::Int(i64::MAX - 5));
            h.outcomes[step] = Outcome::Errno(ENXIO);
            judge(&case, &u, &h)
        };
        assert_eq!(
            overflow(seek_step),
            SeedVerdict::Expected {
                class: "linux_seek_hole_data_overflow",
                step: seek_step
            }
        );
        // The same outcomes from another op are not that class.
        assert!(matches!(overflow(other_step), SeedVerdict::Diverged { .. }));
    }
}
