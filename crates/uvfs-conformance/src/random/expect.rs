//! Deliberate differences the random tester may meet: each a predicate on the first divergent
//! step, listed with its reason in `expected-divergences.txt` as `random.NAME: reason`
//! (docs/divergences.md has the full story of each).

use std::collections::BTreeMap;

use crate::op::Op;
use crate::outcome::Outcome;
use crate::parse::Case;

const ENXIO: i32 = 6;
const S_IFMT: i64 = 0o170000;
const S_IFIFO: i64 = 0o010000;

/// One class of expected divergence.
pub struct Class {
    /// `random.NAME` in the expectations file.
    pub name: &'static str,
    /// True if the step diverged in this class's way.
    pub matches: fn(case: &Case, op: &Op, uvfs: &Outcome, host: &Outcome) -> bool,
}

/// Every class. A class whose line is missing from the expectations file is an error, and so
/// is a `random.` line without a class.
pub const CLASSES: &[Class] = &[Class {
    name: "fifo_open",
    matches: fifo_open,
}];

/// FIFOs can be made but not opened until pipes exist: uvfs says `ENXIO` where the host opens
/// one (the generator only opens FIFOs in modes that cannot block).
fn fifo_open(case: &Case, op: &Op, uvfs: &Outcome, host: &Outcome) -> bool {
    let opens = matches!(op, Op::Open { .. } | Op::Openat { .. } | Op::Openat2 { .. });
    let makes_fifo = case
        .steps
        .iter()
        .any(|s| matches!(s.op, Op::Mknod { mode, .. } if mode & S_IFMT == S_IFIFO));
    opens && makes_fifo && *uvfs == Outcome::Errno(ENXIO) && matches!(host, Outcome::Ok(_))
}

/// The class that explains step `step` (1-based) of `case`, if one does.
pub fn classify(case: &Case, step: usize, uvfs: &Outcome, host: &Outcome) -> Option<&'static str> {
    let op = &case.steps.get(step.checked_sub(1)?)?.op;
    CLASSES
        .iter()
        .find(|c| (c.matches)(case, op, uvfs, host))
        .map(|c| c.name)
}

/// The prefix of random classes in the expectations file.
pub const PREFIX: &str = "random.";

/// Checks that every class has a line in `expected` and every `random.` line a class.
///
/// # Errors
/// The names missing on either side.
pub fn check_listed<V>(expected: &BTreeMap<String, V>) -> Result<(), String> {
    let mut errors = Vec::new();
    for c in CLASSES {
        if !expected.contains_key(&format!("{PREFIX}{}", c.name)) {
            errors.push(format!(
                "class {} has no `{PREFIX}{}: reason` line in expected-divergences.txt",
                c.name, c.name
            ));
        }
    }
    for name in expected.keys().filter_map(|k| k.strip_prefix(PREFIX)) {
        if !CLASSES.iter().any(|c| c.name == name) {
            errors.push(format!(
                "expected-divergences.txt lists {PREFIX}{name}, which is no class"
            ));
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("\n"))
    }
}
