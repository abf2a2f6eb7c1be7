//! The signature of a divergence: the op, and how the two sides differ there, short enough to
//! group the seeds that meet the same bug and to keep a minimisation on that bug.

use crate::backend::CaseRun;
use crate::op::Op;
use crate::outcome::Outcome;
use crate::parse::Case;
use crate::report::StepDiff;

/// A short name of a divergence: the op's name and both outcomes, for grouping.
pub fn signature(
    case: &Case,
    step: usize,
    diff: &StepDiff,
    uvfs: &CaseRun,
    host: &CaseRun,
) -> String {
    let name = |o: Option<&Outcome>| match o {
        Some(Outcome::Errno(e)) => crate::names::errno_display(*e),
        Some(Outcome::Ok(_)) => "ok".to_string(),
        None => "none".to_string(),
    };
    let op = match step {
        0 => "mount".to_string(),
        _ => case
            .steps
            .get(step - 1)
            .map_or("?".into(), |s| op_name(&s.op)),
    };
    if op == "snapshot" && step >= 2 {
        // Name the op that made the states differ, and what differs.
        let before = op_name(&case.steps[step - 2].op);
        return format!("{before} then snapshot: {}", first_difference(diff));
    }
    format!(
        "{op}: uvfs {} host {}",
        name(uvfs.outcomes.get(step)),
        name(host.outcomes.get(step))
    )
}

/// The first field that differs between two normalised snapshots: `mode`, `listing`, ...
fn first_difference(diff: &StepDiff) -> String {
    let (u, h) = (diff.uvfs.lines(), diff.host.lines());
    for (a, b) in u.zip(h) {
        if a == b {
            continue;
        }
        let (wa, wb): (Vec<&str>, Vec<&str>) = (
            a.split_whitespace().collect(),
            b.split_whitespace().collect(),
        );
        if wa.first() != wb.first() {
            // Another name, or the same names in another order.
            return "names".to_string();
        }
        for (x, y) in wa.iter().zip(&wb) {
            if x != y {
                return x.split('=').next().unwrap_or(x).to_string();
            }
        }
        return "length".to_string();
    }
    "length".to_string()
}

/// The op's variant name, lower case.
pub fn op_name(op: &Op) -> String {
    let dbg = format!("{op:?}");
    dbg.split([' ', '{', '('])
        .next()
        .unwrap_or("")
        .to_ascii_lowercase()
}
