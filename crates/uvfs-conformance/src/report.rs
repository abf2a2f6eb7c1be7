//! Comparing the two sides of a case, the expected-divergences file, and the summary the
//! differential test prints.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::Path;

use crate::backend::CaseRun;
use crate::normalise::Normaliser;
use crate::parse::Case;

/// Longest outcome text shown in a diff before it is cut.
const SHOWN_CHARS: usize = 400;
/// Most differing lines of a multi-line outcome (a snapshot) shown in a diff.
const SHOWN_LINES: usize = 12;

/// One step whose normalised outcomes differ.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StepDiff {
    /// Step number: 0 is the root mount, 1 the first op.
    pub step: usize,
    /// Line of the op in the case file (the `case` line for the root mount).
    pub line: usize,
    /// The op as written.
    pub text: String,
    /// Normalised uvfs outcome.
    pub uvfs: String,
    /// Normalised host outcome.
    pub host: String,
}

/// The normalised outcomes of one run of `case`, padded to `steps` with why the rest is
/// missing.
pub fn normalised(case: &Case, run: &CaseRun, steps: usize) -> Vec<String> {
    let mut n = Normaliser::new(case.timing);
    let mut out = Vec::with_capacity(run.outcomes.len());
    for o in &run.outcomes {
        out.push(n.outcome(o));
    }
    let missing = match &run.aborted {
        Some(why) => format!("(not run: {why})"),
        None => "(not run)".to_string(),
    };
    out.resize(steps.max(out.len()), missing);
    out
}

fn step_text(case: &Case, i: usize) -> (usize, String) {
    match i {
        0 => (case.mount_line, case.mount_text()),
        _ => case
            .steps
            .get(i - 1)
            .map_or((case.line, "(past the last op)".into()), |s| {
                let text = if s.text.is_empty() {
                    s.to_string()
                } else {
                    s.text.clone()
                };
                (s.line, text)
            }),
    }
}

/// Normalises both runs and returns the steps that differ, in order.
pub fn compare(case: &Case, uvfs: &CaseRun, host: &CaseRun) -> Vec<StepDiff> {
    let steps = case.steps.len() + 1;
    let (u, h) = (normalised(case, uvfs, steps), normalised(case, host, steps));
    let mut diffs = Vec::new();
    for i in 0..steps.max(u.len()).max(h.len()) {
        if u.get(i) == h.get(i) {
            continue;
        }
        let (line, text) = step_text(case, i);
        let none = String::from("(nothing)");
        diffs.push(StepDiff {
            step: i,
            line,
            text,
            uvfs: u.get(i).unwrap_or(&none).clone(),
            host: h.get(i).unwrap_or(&none).clone(),
        });
    }
    diffs
}

/// What `expected-divergences.txt` says about one case.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Expectation {
    /// `case_name: reason`: the case as a whole diverges.
    Case(String),
    /// `case_name@N: reason` lines: these steps (0 the root mount, 1 the first op) diverge,
    /// every other step must match.
    Steps(BTreeMap<usize, String>),
}

/// `expected-divergences.txt`: `case_name: reason` and `case_name@STEP: reason` lines, `#`
/// comments.
///
/// # Errors
/// An unreadable file, a line without `: reason`, a bad step number, a case or step listed
/// twice, or a case listed both whole and by step.
pub fn load_expectations(path: &Path) -> Result<BTreeMap<String, Expectation>, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    parse_expectations(&text).map_err(|(line, e)| format!("{}:{line}: {e}", path.display()))
}

/// The text of an expectations file; errors carry their 1-based line.
///
/// # Errors
/// As [`load_expectations`].
pub fn parse_expectations(text: &str) -> Result<BTreeMap<String, Expectation>, (usize, String)> {
    let mut out: BTreeMap<String, Expectation> = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let at = |e: String| (i + 1, e);
        let (key, reason) = line
            .split_once(':')
            .ok_or_else(|| at("expected `case_name: reason` or `case_name@STEP: reason`".into()))?;
        let (key, reason) = (key.trim(), reason.trim().to_string());
        if reason.is_empty() {
            return Err(at(format!("{key} needs a reason")));
        }
        let (name, step) = match key.split_once('@') {
            None => (key, None),
            Some((n, s)) => {
                let step = s
                    .parse::<usize>()
                    .map_err(|_| at(format!("`{s}` is not a step number")))?;
                (n, Some(step))
            }
        };
        match (out.get_mut(name), step) {
            (None, None) => {
                out.insert(name.to_string(), Expectation::Case(reason));
            }
            (None, Some(s)) => {
                out.insert(
                    name.to_string(),
                    Expectation::Steps(BTreeMap::from([(s, reason)])),
                );
            }
            (Some(Expectation::Steps(steps)), Some(s)) => {
                if steps.insert(s, reason).is_some() {
                    return Err(at(format!("{name}@{s} listed twice")));
                }
            }
            (Some(_), _) => {
                return Err(at(format!(
                    "{name} listed twice (a case is listed whole or by steps, not both)"
                )))
            }
        }
    }
    Ok(out)
}

/// The verdict on one case.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Every step matched.
    Match,
    /// It diverged where it is listed to (the reasons).
    ExpectedDivergence(String),
    /// It diverged at these steps, which are not listed.
    Diverged(Vec<StepDiff>),
    /// It is listed (the reasons) but matched there: the expectation is stale.
    Stale(String),
}

/// Decides a case's verdict from its diffs and its expectation, if any. With a per-step
/// expectation, only the listed steps are excused: a divergence at another step fails, and
/// so does a listed step that matched.
pub fn verdict(diffs: Vec<StepDiff>, expected: Option<&Expectation>) -> Verdict {
    match expected {
        None if diffs.is_empty() => Verdict::Match,
        None => Verdict::Diverged(diffs),
        Some(Expectation::Case(r)) if diffs.is_empty() => Verdict::Stale(r.clone()),
        Some(Expectation::Case(r)) => Verdict::ExpectedDivergence(r.clone()),
        Some(Expectation::Steps(steps)) => {
            let unexcused: Vec<StepDiff> = diffs
                .iter()
                .filter(|d| !steps.contains_key(&d.step))
                .cloned()
                .collect();
            if !unexcused.is_empty() {
                return Verdict::Diverged(unexcused);
            }
            let stale: Vec<String> = steps
                .iter()
                .filter(|(s, _)| !diffs.iter().any(|d| d.step == **s))
                .map(|(s, r)| format!("step {s}: {r}"))
                .collect();
            if stale.is_empty() {
                let why: Vec<String> = steps
                    .iter()
                    .map(|(s, r)| format!("step {s}: {r}"))
                    .collect();
                Verdict::ExpectedDivergence(why.join("; "))
            } else {
                Verdict::Stale(stale.join("; "))
            }
        }
    }
}

fn cut(s: &str) -> String {
    match s.char_indices().nth(SHOWN_CHARS) {
        Some((i, _)) => format!("{}... ({} chars in all)", &s[..i], s.chars().count()),
        None => s.to_string(),
    }
}

/// A readable report of one divergent case.
pub fn render_divergence(case: &Case, diffs: &[StepDiff]) -> String {
    render_diffs(
        &format!("DIVERGED {}", case.name),
        case,
        diffs,
        ["uvfs", "host"],
    )
}

/// A readable report of one case whose outcomes changed between two runs of the same side.
pub fn render_instability(side: &str, case: &Case, diffs: &[StepDiff]) -> String {
    let title = format!(
        "UNSTABLE {} on {side} (its outcomes depend on timing)",
        case.name
    );
    render_diffs(&title, case, diffs, ["run 1", "rerun"])
}

/// Both outcomes; for multi-line ones (snapshots) the first line and the lines that differ.
fn render_pair(s: &mut String, a: &str, b: &str, labels: [&str; 2]) {
    if !a.contains('\n') && !b.contains('\n') {
        writeln!(s, "    {}: {}", labels[0], cut(a)).expect("String writes succeed");
        writeln!(s, "    {}: {}", labels[1], cut(b)).expect("String writes succeed");
        return;
    }
    let (la, lb): (Vec<&str>, Vec<&str>) = (a.lines().collect(), b.lines().collect());
    let mut shown = 0;
    for i in 0..la.len().max(lb.len()) {
        let (x, y) = (la.get(i).copied(), lb.get(i).copied());
        if x == y && i > 0 {
            continue;
        }
        if shown == SHOWN_LINES {
            writeln!(s, "    ... (more lines differ)").expect("String writes succeed");
            break;
        }
        shown += 1;
        for (label, line) in labels.iter().zip([x, y]) {
            let line = line.map_or("(no line)".to_string(), |l| cut(l.trim_start()));
            writeln!(s, "    {label}: {line}").expect("String writes succeed");
        }
    }
}

fn render_diffs(title: &str, case: &Case, diffs: &[StepDiff], labels: [&str; 2]) -> String {
    let mut s = format!("{title} ({}:{})\n", case.file.display(), case.line);
    for d in diffs {
        writeln!(s, "  step {} (line {}): {}", d.step, d.line, d.text)
            .expect("String writes succeed");
        render_pair(&mut s, &d.uvfs, &d.host, labels);
    }
    s
}

/// Every step of a case with both sides' normalised outcomes (for `UVFS_CONFORMANCE_VERBOSE`).
pub fn render_steps(case: &Case, uvfs: &CaseRun, host: &CaseRun) -> String {
    let steps = case.steps.len() + 1;
    let (u, h) = (normalised(case, uvfs, steps), normalised(case, host, steps));
    let mut s = format!(
        "case {} ({}:{})\n",
        case.name,
        case.file.display(),
        case.line
    );
    for i in 0..steps {
        let (_, text) = step_text(case, i);
        let mark = if u[i] == h[i] { "  " } else { "!=" };
        writeln!(
            s,
            "{mark} {i}: {text}\n     uvfs: {}\n     host: {}",
            u[i].replace("\n  ", "\n           "),
            h[i].replace("\n  ", "\n           ")
        )
        .expect("String writes succeed");
    }
    s
}

/// Counts of a whole run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// Cases compared.
    pub compared: usize,
    /// Cases whose every step matched.
    pub matched: usize,
    /// Listed cases that diverged where listed.
    pub expected: usize,
    /// Cases that diverged where they are not listed to.
    pub diverged: usize,
    /// Listed cases or steps that matched, and listed names that are no case.
    pub stale: usize,
    /// Cases whose outcomes changed between repeated runs of one side.
    pub unstable: usize,
}

impl Summary {
    /// Adds one verdict.
    pub fn add(&mut self, v: &Verdict) {
        self.compared += 1;
        match v {
            Verdict::Match => self.matched += 1,
            Verdict::ExpectedDivergence(_) => self.expected += 1,
            Verdict::Diverged(_) => self.diverged += 1,
            Verdict::Stale(_) => self.stale += 1,
        }
    }

    /// Cases that count as passed: matched, or diverged as expected.
    pub fn passed(&self) -> usize {
        self.matched + self.expected
    }

    /// Cases that count as failed: unexpected divergences, stale expectations and unstable
    /// cases.
    pub fn failed(&self) -> usize {
        self.diverged + self.stale + self.unstable
    }

    /// The closing lines: the differential summary and `N passed, M failed`.
    pub fn render(&self) -> String {
        let mut extra = format!("{} expected", self.expected);
        if self.stale > 0 {
            write!(extra, ", {} stale expectations", self.stale).expect("String writes succeed");
        }
        if self.unstable > 0 {
            write!(extra, ", {} unstable", self.unstable).expect("String writes succeed");
        }
        format!(
            "differential: {} cases compared with the host kernel, {} diverged outside \
             expected-divergences.txt ({extra})\n{} passed, {} failed\n",
            self.compared,
            self.diverged,
            self.passed(),
            self.failed()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn diff(step: usize) -> StepDiff {
        StepDiff {
            step,
            line: step + 2,
            text: "x".into(),
            uvfs: "ok".into(),
            host: "ENOENT".into(),
        }
    }

    #[test]
    fn verdicts_follow_the_expectation_table() {
        let d = vec![diff(3)];
        let r = Expectation::Case("why".into());
        assert_eq!(verdict(vec![], None), Verdict::Match);
        assert_eq!(verdict(vec![], Some(&r)), Verdict::Stale("why".into()));
        assert_eq!(
            verdict(d.clone(), Some(&r)),
            Verdict::ExpectedDivergence("why".into())
        );
        assert_eq!(verdict(d.clone(), None), Verdict::Diverged(d));
    }

    #[test]
    fn a_step_expectation_excuses_that_step_only() {
        let e =
            parse_expectations("# c\ncase_a@3: why three\ncase_a@5: why five\n").expect("valid");
        let steps = &e["case_a"];
        assert_eq!(
            verdict(vec![diff(3), diff(5)], Some(steps)),
            Verdict::ExpectedDivergence("step 3: why three; step 5: why five".into())
        );
        // A divergence at another step fails, even with the listed ones present.
        assert_eq!(
            verdict(vec![diff(3), diff(4), diff(5)], Some(steps)),
            Verdict::Diverged(vec![diff(4)])
        );
        // A listed step that matched is stale.
        assert_eq!(
            verdict(vec![diff(3)], Some(steps)),
            Verdict::Stale("step 5: why five".into())
        );
        assert_eq!(
            verdict(vec![], Some(steps)),
            Verdict::Stale("step 3: why three; step 5: why five".into())
        );
    }

    #[test]
    fn malformed_expectations_name_their_line() {
        assert_eq!(parse_expectations("a b\n").unwrap_err().0, 1);
        assert!(parse_expectations("a@x: r\n")
            .unwrap_err()
            .1
            .contains("step number"));
        assert!(parse_expectations("a: r\na@2: r\n")
            .unwrap_err()
            .1
            .contains("listed twice"));
        assert!(parse_expectations("a@2: r\na@2: s\n")
            .unwrap_err()
            .1
            .contains("listed twice"));
        assert!(parse_expectations("a@2: r\na: s\n").is_err());
        assert!(parse_expectations("a:\n")
            .unwrap_err()
            .1
            .contains("needs a reason"));
    }

    #[test]
    fn summary_counts_stale_as_failed() {
        let mut s = Summary::default();
        s.add(&Verdict::Match);
        s.add(&Verdict::ExpectedDivergence("r".into()));
        s.add(&Verdict::Stale("r".into()));
        assert_eq!((s.passed(), s.failed()), (2, 1));
        let text = s.render();
        assert!(
            text.contains(
                "0 diverged outside expected-divergences.txt (1 expected, 1 stale expectations)"
            ),
            "{text}"
        );
        assert!(text.ends_with("\n2 passed, 1 failed\n"), "{text}");
    }

    #[test]
    fn multi_line_outcomes_show_the_differing_lines() {
        let mut s = String::new();
        render_pair(
            &mut s,
            "snap 2\n  a 1\n  b 2",
            "snap 2\n  a 1\n  b 3",
            ["u", "h"],
        );
        assert_eq!(s, "    u: snap 2\n    h: snap 2\n    u: b 2\n    h: b 3\n");
    }
}
