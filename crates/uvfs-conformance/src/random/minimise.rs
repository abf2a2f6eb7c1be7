//! Delta debugging of a divergent sequence down to the fewest ops that still diverge
//! (Zeller and Hildebrandt, "Simplifying and isolating failure-inducing input", 2002: `ddmin`),
//! followed by a one-at-a-time pass so the result is 1-minimal: removing any single op makes
//! the divergence go away.

use std::collections::HashSet;

use crate::op::{Fd, Op};
use crate::parse::{Case, Step};

/// The smallest sub-sequence of `case`'s steps for which `diverges` still holds, found with
/// at most `budget` calls of `diverges`. `diverges(case)` must hold on entry.
pub fn minimise(case: &Case, budget: usize, mut diverges: impl FnMut(&Case) -> bool) -> Case {
    let calls = std::cell::Cell::new(0usize);
    let mut test = |steps: &[Step]| {
        calls.set(calls.get() + 1);
        diverges(&with_steps(case, steps))
    };
    let mut steps = case.steps.clone();
    let mut chunks = 2;
    while steps.len() >= 2 && calls.get() < budget {
        let size = steps.len().div_ceil(chunks);
        let mut reduced = false;
        // Try each complement: the sequence without one chunk.
        let mut start = 0;
        while start < steps.len() && calls.get() < budget {
            let end = (start + size).min(steps.len());
            let candidate: Vec<Step> = steps[..start]
                .iter()
                .chain(&steps[end..])
                .cloned()
                .collect();
            if !candidate.is_empty() && test(&candidate) {
                steps = candidate;
                chunks = (chunks - 1).max(2);
                reduced = true;
                break;
            }
            start = end;
        }
        if !reduced {
            if chunks >= steps.len() {
                break;
            }
            chunks = (chunks * 2).min(steps.len());
        }
    }
    // 1-minimal: no single op can go.
    let mut i = 0;
    while i < steps.len() && steps.len() > 1 && calls.get() < budget {
        let mut candidate = steps.clone();
        candidate.remove(i);
        if test(&candidate) {
            steps = candidate;
        } else {
            i += 1;
        }
    }
    with_steps(case, &steps)
}

/// `case` with `steps`, fd names that no remaining step binds replaced by `-1` (what the
/// runner passes for a failed binding), and steps renumbered.
pub fn with_steps(case: &Case, steps: &[Step]) -> Case {
    let mut bound = HashSet::new();
    let steps = steps
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let mut s = s.clone();
            unbind_unknown(&mut s.op, &bound);
            if let Some(names) = &s.bind {
                bound.extend(names.split(' ').map(str::to_string));
            }
            s.line = i + 1;
            s.text = s.op.to_string();
            s
        })
        .collect();
    Case {
        steps,
        ..case.clone()
    }
}

fn unbind_unknown(op: &mut Op, bound: &HashSet<String>) {
    let fix = |fd: &mut Fd| {
        if let Fd::Var(name) = fd {
            if !bound.contains(name) {
                *fd = Fd::Raw(-1);
            }
        }
    };
    op.fd_args_mut().into_iter().for_each(fix);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::random::gen::{generate, Shape};

    fn ops_of(case: &Case) -> Vec<Op> {
        case.steps.iter().map(|s| s.op.clone()).collect()
    }

    #[test]
    fn finds_the_two_ops_that_together_diverge() {
        let case = generate(5, Shape::default());
        // Two ops that name no fd variable, so removing other steps leaves them as they are.
        let plain: Vec<Op> = ops_of(&case)
            .into_iter()
            .filter(|op| op.fd_vars().is_empty())
            .collect();
        let (a, b) = (plain[10].clone(), plain[plain.len() - 10].clone());
        let both = |c: &Case| {
            let ops = ops_of(c);
            let ia = ops.iter().position(|o| *o == a);
            let ib = ops.iter().rposition(|o| *o == b);
            matches!((ia, ib), (Some(x), Some(y)) if x < y)
        };
        assert!(both(&case));
        let mut calls = 0;
        let min = minimise(&case, 10_000, |c| {
            calls += 1;
            both(c)
        });
        assert!(both(&min));
        assert_eq!(min.steps.len(), 2, "{:?}", ops_of(&min));
        assert!(calls < 400, "{calls} calls");
    }

    #[test]
    fn dangling_fd_names_become_bad_fds() {
        let case = generate(9, Shape::default());
        let first_use = case
            .steps
            .iter()
            .position(|s| !s.op.fd_vars().is_empty())
            .expect("a sequence of 120 ops uses a bound fd");
        let trimmed = with_steps(&case, &case.steps[first_use..first_use + 1]);
        let op = &trimmed.steps[0].op;
        assert!(op.fd_vars().is_empty(), "{op:?}");
        assert_eq!(trimmed.steps[0].line, 1);
    }

    #[test]
    fn respects_its_budget() {
        let case = generate(11, Shape::default());
        let mut calls = 0;
        let min = minimise(&case, 25, |_| {
            calls += 1;
            true
        });
        assert!(calls <= 25);
        assert!(!min.steps.is_empty());
    }
}
