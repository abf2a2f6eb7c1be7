//! Case files: `case NAME` ... `end` blocks of op lines (CASES.md, "Files").

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use crate::lex::{tokenize, Token};
use crate::op::Op;

/// One op line of a case.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    /// 1-based line number in the case file.
    pub line: usize,
    /// The line as written, comment and surrounding blanks removed, for reports.
    pub text: String,
    /// The parsed operation.
    pub op: Op,
    /// `=> NAME`: the fd variable the result is bound to.
    pub bind: Option<String>,
}

/// How a case's ops are paced against the coarse clock that stamps inodes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Timing {
    /// Each op starts on a fresh tick of the coarse realtime clock, so every timestamp an op
    /// sets is later than every timestamp earlier ops set, on both sides (the default).
    #[default]
    Ticked,
    /// Ops run back to back (`timing burst`): for cases about what happens within one tick
    /// (fine-grained stamps after an observation, timestamps that must never go backwards).
    Burst,
}

/// One case: a root tmpfs and a sequence of ops.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Case {
    /// Unique name, `[a-z0-9_]+`.
    pub name: String,
    /// The file the case came from.
    pub file: PathBuf,
    /// Line of `case NAME`.
    pub line: usize,
    /// Options of the root tmpfs (`mount OPTIONS` before the first op), if any.
    pub mount: Option<String>,
    /// Line of `mount OPTIONS`, or of `case NAME` without one: where step 0 is reported.
    pub mount_line: usize,
    /// `timing burst|ticked` before the first op; ticked by default.
    pub timing: Timing,
    /// The ops in order.
    pub steps: Vec<Step>,
}

impl Case {
    /// How the root tmpfs is mounted, as shown in reports for the outcome before the first op.
    pub fn mount_text(&self) -> String {
        match &self.mount {
            Some(o) => format!("(root) mount tmpfs -o {o}"),
            None => "(root) mount tmpfs".to_string(),
        }
    }
}

/// Parses the text of one case file.
///
/// # Errors
/// `file:line: message` for the first malformed line.
pub fn parse_cases(text: &str, file: &Path) -> Result<Vec<Case>, String> {
    let mut cases = Vec::new();
    let mut cur: Option<Case> = None;
    for (idx, raw) in text.lines().enumerate() {
        let line = idx + 1;
        let at = |msg: String| format!("{}:{line}: {msg}", file.display());
        let toks = tokenize(raw).map_err(at)?;
        let Some(first) = toks.first() else { continue };
        let word = first.text();
        match (word.as_str(), cur.as_mut()) {
            ("case", None) => {
                let name = match &toks[1..] {
                    [n] if valid_name(&n.bytes) => n.text(),
                    _ => return Err(at("`case` takes one name of [a-z0-9_]+".into())),
                };
                cur = Some(Case {
                    name,
                    file: file.to_path_buf(),
                    line,
                    mount: None,
                    mount_line: line,
                    timing: Timing::Ticked,
                    steps: Vec::new(),
                });
            }
            ("case", Some(c)) => {
                return Err(at(format!("`case` inside case {} (missing `end`)", c.name)))
            }
            ("end", Some(_)) => {
                if toks.len() != 1 {
                    return Err(at("`end` takes no arguments".into()));
                }
                cases.extend(cur.take());
            }
            (_, None) => return Err(at(format!("`{word}` outside a case"))),
            ("mount", Some(c)) if toks.len() == 2 && c.steps.is_empty() && c.mount.is_none() => {
                c.mount = Some(toks[1].text());
                c.mount_line = line;
            }
            ("timing", Some(c)) if c.steps.is_empty() => {
                c.timing = match &toks[1..] {
                    [t] if t.bytes == b"burst" => Timing::Burst,
                    [t] if t.bytes == b"ticked" => Timing::Ticked,
                    _ => return Err(at("`timing` takes `burst` or `ticked`".into())),
                };
            }
            (_, Some(c)) => {
                let (step, vars) = parse_step(&toks, line, raw).map_err(at)?;
                let bound = |v: &String| c.steps.iter().any(|s| s.bind.as_ref() == Some(v));
                if let Some(v) = vars.iter().find(|v| !bound(v)) {
                    return Err(at(format!("${v} is not bound by an earlier `=> {v}`")));
                }
                if matches!(step.op, Op::As { .. })
                    && c.steps.iter().any(|s| matches!(s.op, Op::As { .. }))
                {
                    return Err(at(
                        "a case has one `as`: the host cannot regain root after it".into(),
                    ));
                }
                c.steps.push(step);
            }
        }
    }
    if let Some(c) = cur {
        return Err(format!("{}: case {} has no `end`", file.display(), c.name));
    }
    Ok(cases)
}

fn parse_step(toks: &[Token], line: usize, raw: &str) -> Result<(Step, Vec<String>), String> {
    let (toks, bind) = match toks {
        [rest @ .., arrow, name] if !arrow.quoted && arrow.bytes == b"=>" => {
            if !valid_name(&name.bytes) {
                return Err(format!("bad variable name `{}` after =>", name.text()));
            }
            (rest, Some(name.text()))
        }
        _ => (toks, None),
    };
    let word = toks[0].text();
    let (op, vars) = Op::parse(&word, &toks[1..]).map_err(|e| format!("{word}: {e}"))?;
    if bind.is_some() && !op.returns_fd() {
        return Err(format!("`{word}` does not return an fd to bind"));
    }
    Ok((
        Step {
            line,
            text: strip_comment(raw),
            op,
            bind,
        },
        vars,
    ))
}

fn valid_name(b: &[u8]) -> bool {
    !b.is_empty()
        && b.iter()
            .all(|&c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'_')
}

/// The line without its trailing comment (a `#` outside quotes).
fn strip_comment(raw: &str) -> String {
    let mut quoted = false;
    let mut escaped = false;
    for (i, c) in raw.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if quoted => escaped = true,
            '"' => quoted = !quoted,
            '#' if !quoted => return raw[..i].trim().to_string(),
            _ => {}
        }
    }
    raw.trim().to_string()
}

/// Parses every `*.cases` file of `dir`, sorted by file name, and checks that case names are
/// unique across them.
///
/// # Errors
/// An unreadable directory or file, a parse error, or a duplicate name.
pub fn load_dir(dir: &Path) -> Result<Vec<Case>, String> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "cases"))
        .collect();
    files.sort();
    let mut all = Vec::new();
    let mut seen = HashSet::new();
    for f in files {
        for c in load_file(&f)? {
            if !seen.insert(c.name.clone()) {
                return Err(format!(
                    "{}:{}: duplicate case name {}",
                    f.display(),
                    c.line,
                    c.name
                ));
            }
            all.push(c);
        }
    }
    Ok(all)
}

/// Parses one case file.
///
/// # Errors
/// An unreadable file or a parse error.
pub fn load_file(file: &Path) -> Result<Vec<Case>, String> {
    let text = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
    parse_cases(&text, file)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = r#"
# a comment
case open_then_write
mount size=1m,nr_inodes=64
timing burst
mkdir /d 0755
open /d/f O_CREAT|O_WRONLY 0644 => f   # bind
write $f "a # not a comment"
mount - /d tmpfs 0 -
end
"#;

    #[test]
    fn parses_header_steps_and_bindings() {
        let cases = parse_cases(SAMPLE, Path::new("t.cases")).expect("valid");
        assert_eq!(cases.len(), 1);
        let c = &cases[0];
        assert_eq!(c.name, "open_then_write");
        assert_eq!(c.mount.as_deref(), Some("size=1m,nr_inodes=64"));
        assert_eq!(c.timing, Timing::Burst);
        assert_eq!(c.steps.len(), 4);
        assert_eq!(c.steps[1].bind.as_deref(), Some("f"));
        assert_eq!(c.steps[1].text, "open /d/f O_CREAT|O_WRONLY 0644 => f");
        assert_eq!(c.steps[2].text, r#"write $f "a # not a comment""#);
        assert!(matches!(c.steps[3].op, Op::Mount { .. }));
    }

    #[test]
    fn structural_errors_name_the_line() {
        let e = parse_cases("case a\nclose 3\n", Path::new("x.cases")).expect_err("no end");
        assert!(e.contains("no `end`"), "{e}");
        let e = parse_cases("case a\nmkdir /d 0755 => d\nend\n", Path::new("x.cases"))
            .expect_err("bind");
        assert!(e.starts_with("x.cases:2:"), "{e}");
        assert!(parse_cases("close 3\n", Path::new("x.cases")).is_err());
        let e =
            parse_cases("case a\nas 1 1\nas 2 2\nend\n", Path::new("x.cases")).expect_err("two as");
        assert!(e.contains("one `as`"), "{e}");
        let e = parse_cases("case a\nclose $g\nend\n", Path::new("x.cases")).expect_err("unbound");
        assert!(e.contains("$g is not bound"), "{e}");
        assert!(parse_cases("case Bad\nend\n", Path::new("x.cases")).is_err());
    }
}
