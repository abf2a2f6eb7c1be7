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

/// One step whose normalised outcomes differ.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StepDiff {
    /// Line of the op in the case file (the `case` line for the root mount).
    pub line: usize,
    /// The op as written.
    pub text: String,
    /// Normalised uvfs outcome.
    pub uvfs: String,
    /// Normalised host outcome.
    pub host: String,
}

fn normalised(run: &CaseRun, steps: usize) -> Vec<String> {
    let mut n = Normaliser::new();
    let mut out: Vec<String> = run.outcomes.iter().map(|o| n.outcome(o)).collect();
    let missing = match &run.aborted {
        Some(why) => format!("(not run: {why})"),
        None => "(not run)".to_string(),
    };
    out.resize(steps.max(out.len()), missing);
    out
}

/// Normalises both runs and returns the steps that differ, in order.
pub fn compare(case: &Case, uvfs: &CaseRun, host: &CaseRun) -> Vec<StepDiff> {
    let steps = case.steps.len() + 1;
    let (u, h) = (normalised(uvfs, steps), normalised(host, steps));
    let mut diffs = Vec::new();
    for i in 0..steps.max(u.len()).max(h.len()) {
        if u.get(i) == h.get(i) {
            continue;
        }
        let (line, text) = match i {
            0 => (case.mount_line, case.mount_text()),
            _ => case
                .steps
                .get(i - 1)
                .map_or((case.line, "(past the last op)".into()), |s| {
                    (s.line, s.text.clone())
                }),
        };
        let none = String::from("(nothing)");
        diffs.push(StepDiff {
            line,
            text,
            uvfs: u.get(i).unwrap_or(&none).clone(),
            host: h.get(i).unwrap_or(&none).clone(),
        });
    }
    diffs
}

/// `expected-divergences.txt`: `case_name: reason` lines, `#` comments.
///
/// # Errors
/// An unreadable file, a line without `: reason`, or a case listed twice.
pub fn load_expectations(path: &Path) -> Result<BTreeMap<String, String>, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    let mut out = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let at = format!("{}:{}", path.display(), i + 1);
        let (name, reason) = line
            .split_once(':')
            .ok_or_else(|| format!("{at}: expected `case_name: reason`"))?;
        let (name, reason) = (name.trim(), reason.trim());
        if reason.is_empty() {
            return Err(format!("{at}: {name} needs a reason"));
        }
        if out.insert(name.to_string(), reason.to_string()).is_some() {
            return Err(format!("{at}: {name} listed twice"));
        }
    }
    Ok(out)
}

/// The verdict on one case.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Every step matched.
    Match,
    /// It diverged and is listed with this reason.
    ExpectedDivergence(String),
    /// It diverged and is not listed.
    Diverged(Vec<StepDiff>),
    /// It is listed (with this reason) but matched: the expectation is stale.
    Stale(String),
}

/// Decides a case's verdict from its diffs and its expectation, if any.
pub fn verdict(diffs: Vec<StepDiff>, expected: Option<&String>) -> Verdict {
    match (diffs.is_empty(), expected) {
        (true, None) => Verdict::Match,
        (true, Some(r)) => Verdict::Stale(r.clone()),
        (false, Some(r)) => Verdict::ExpectedDivergence(r.clone()),
        (false, None) => Verdict::Diverged(diffs),
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

fn render_diffs(title: &str, case: &Case, diffs: &[StepDiff], labels: [&str; 2]) -> String {
    let mut s = format!("{title} ({}:{})\n", case.file.display(), case.line);
    for d in diffs {
        writeln!(s, "  line {}: {}", d.line, d.text).expect("String writes succeed");
        writeln!(s, "    {}: {}", labels[0], cut(&d.uvfs)).expect("String writes succeed");
        writeln!(s, "    {}: {}", labels[1], cut(&d.host)).expect("String writes succeed");
    }
    s
}

/// Every step of a case with both sides' normalised outcomes (for `UVFS_CONFORMANCE_VERBOSE`).
pub fn render_steps(case: &Case, uvfs: &CaseRun, host: &CaseRun) -> String {
    let steps = case.steps.len() + 1;
    let (u, h) = (normalised(uvfs, steps), normalised(host, steps));
    let mut s = format!(
        "case {} ({}:{})\n",
        case.name,
        case.file.display(),
        case.line
    );
    for i in 0..steps {
        let text = if i == 0 {
            case.mount_text()
        } else {
            case.steps[i - 1].text.clone()
        };
        let mark = if u[i] == h[i] { "  " } else { "!=" };
        writeln!(
            s,
            "{mark} {text}\n     uvfs: {}\n     host: {}",
            cut(&u[i]),
            cut(&h[i])
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
    /// Listed cases that diverged.
    pub expected: usize,
    /// Unlisted cases that diverged.
    pub diverged: usize,
    /// Listed cases that matched, and listed names that are no case.
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

    #[test]
    fn verdicts_follow_the_expectation_table() {
        let d = vec![StepDiff {
            line: 3,
            text: "x".into(),
            uvfs: "ok".into(),
            host: "ENOENT".into(),
        }];
        let r = String::from("why");
        assert_eq!(verdict(vec![], None), Verdict::Match);
        assert_eq!(verdict(vec![], Some(&r)), Verdict::Stale(r.clone()));
        assert_eq!(
            verdict(d.clone(), Some(&r)),
            Verdict::ExpectedDivergence(r.clone())
        );
        assert_eq!(verdict(d.clone(), None), Verdict::Diverged(d));
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
}
