//! Case files: `case NAME` ... `end` blocks of op lines (CASES.md, "Files").

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use crate::lex::{tokenize, Token};
use crate::op::Op;

/// One op line of a case.
///
/// Equality compares what runs (the op and its binding), not where the line came from.
#[derive(Clone, Debug, Eq)]
pub struct Step {
    /// 1-based line number in the case file (0 for a step built in code).
    pub line: usize,
    /// The line as written, comment and surrounding blanks removed, for reports.
    pub text: String,
    /// The parsed operation.
    pub op: Op,
    /// `=> NAME`: the fd variable the result is bound to.
    pub bind: Option<String>,
}

impl PartialEq for Step {
    fn eq(&self, other: &Step) -> bool {
        self.op == other.op && self.bind == other.bind
    }
}

impl Step {
    /// A step built in code (by a generator): no source line; its text is the printed op.
    pub fn new(op: Op, bind: Option<String>) -> Step {
        let mut s = Step {
            line: 0,
            text: String::new(),
            op,
            bind,
        };
        s.text = s.to_string();
        s
    }
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
///
/// Equality compares what runs (name, root mount options, timing and steps), not where the
/// case came from: printing a case and parsing the text gives back an equal case.
#[derive(Clone, Debug, Eq)]
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

impl PartialEq for Case {
    fn eq(&self, other: &Case) -> bool {
        self.name == other.name
            && self.mount == other.mount
            && self.timing == other.timing
            && self.steps == other.steps
    }
}

impl Case {
    /// An empty case built in code (by a generator), default root mount and timing; add steps
    /// with [`Step::new`] and check it with [`Case::check`] before running it.
    pub fn new(name: impl Into<String>) -> Case {
        Case {
            name: name.into(),
            file: PathBuf::new(),
            line: 0,
            mount: None,
            mount_line: 0,
            timing: Timing::Ticked,
            steps: Vec::new(),
        }
    }

    /// Checks what the parser checks beyond each line's syntax: every `$NAME` is bound by an
    /// earlier step, only fd-returning ops bind, task numbers exist before they are switched
    /// to and not before they are made, and a task whose credentials came from `as` does not
    /// say `as` again.
    ///
    /// # Errors
    /// `step N: message` for the first bad step (1-based).
    pub fn check(&self) -> Result<(), String> {
        if !valid_name(self.name.as_bytes()) {
            return Err(format!("case name `{}` is not [a-z0-9_]+", self.name));
        }
        let mut c = Checker::default();
        for (i, s) in self.steps.iter().enumerate() {
            c.step(s).map_err(|e| format!("step {}: {e}", i + 1))?;
        }
        Ok(())
    }

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
    let mut checker = Checker::default();
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
                checker = Checker::default();
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
                let step = parse_step(&toks, line, raw).map_err(at)?;
                checker.step(&step).map_err(at)?;
                c.steps.push(step);
            }
        }
    }
    if let Some(c) = cur {
        return Err(format!("{}: case {} has no `end`", file.display(), c.name));
    }
    Ok(cases)
}

/// The semantic state of a case up to some step: bound names and tasks.
#[derive(Debug)]
struct Checker {
    bound: HashSet<String>,
    /// Existing tasks, and whether each one's credentials came from `as` (its own or its
    /// parent's): the host cannot take them back.
    tasks: HashMap<u32, bool>,
    current: u32,
}

impl Default for Checker {
    fn default() -> Self {
        Checker {
            bound: HashSet::new(),
            tasks: HashMap::from([(1, false)]),
            current: 1,
        }
    }
}

impl Checker {
    fn step(&mut self, step: &Step) -> Result<(), String> {
        if let Some(v) = step
            .op
            .fd_vars()
            .into_iter()
            .find(|v| !self.bound.contains(*v))
        {
            return Err(format!("${v} is not bound by an earlier `=> {v}`"));
        }
        if let Some(names) = &step.bind {
            for name in names.split(' ') {
                if !valid_name(name.as_bytes()) {
                    return Err(format!("bad variable name `{name}` after =>"));
                }
                self.bound.insert(name.to_string());
            }
            if !step.op.returns_fd() {
                return Err("the op does not return an fd to bind".into());
            }
        }
        match &step.op {
            Op::As { .. } => {
                let dropped = self
                    .tasks
                    .get_mut(&self.current)
                    .expect("current task exists");
                if *dropped {
                    return Err(
                        "this task already left root with `as`: the host cannot regain it".into(),
                    );
                }
                *dropped = true;
            }
            Op::Task { id, start: None } => {
                if !self.tasks.contains_key(id) {
                    return Err(format!(
                        "task {id} does not exist: make it with `task {id} fork|thread`"
                    ));
                }
                self.current = *id;
            }
            Op::Task { id, start: Some(_) } => {
                if self.tasks.contains_key(id) {
                    return Err(format!("task {id} exists already"));
                }
                let dropped = self.tasks[&self.current];
                self.tasks.insert(*id, dropped);
                self.current = *id;
            }
            _ => {}
        }
        Ok(())
    }
}

fn parse_step(toks: &[Token], line: usize, raw: &str) -> Result<Step, String> {
    let (toks, bind) = match toks {
        // `pipe2 FLAGS => r w`: two names, joined by a space in `Step::bind`.
        [rest @ .., arrow, r, w] if !arrow.quoted && arrow.bytes == b"=>" => {
            if !valid_name(&r.bytes) || !valid_name(&w.bytes) {
                return Err(format!(
                    "bad variable names `{} {}` after =>",
                    r.text(),
                    w.text()
                ));
            }
            (rest, Some(format!("{} {}", r.text(), w.text())))
        }
        [rest @ .., arrow, name] if !arrow.quoted && arrow.bytes == b"=>" => {
            if !valid_name(&name.bytes) {
                return Err(format!("bad variable name `{}` after =>", name.text()));
            }
            (rest, Some(name.text()))
        }
        _ => (toks, None),
    };
    let word = toks[0].text();
    let (op, _) = Op::parse(&word, &toks[1..]).map_err(|e| format!("{word}: {e}"))?;
    if bind.is_some() && !op.returns_fd() {
        return Err(format!("`{word}` does not return an fd to bind"));
    }
    if let Some(b) = &bind {
        if b.contains(' ') != matches!(op, Op::Pipe2 { .. }) {
            let want = if b.contains(' ') {
                "one name"
            } else {
                "two names"
            };
            return Err(format!("`{word}` binds {want}"));
        }
    }
    Ok(Step {
        line,
        text: strip_comment(raw),
        op,
        bind,
    })
}

/// Whether `b` is a valid case or variable name: `[a-z0-9_]+`.
pub fn valid_name(b: &[u8]) -> bool {
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
    fn pipe2_binds_two_names_and_prints_back() {
        let text = "case p\npipe2 O_NONBLOCK => r w\nwrite $w \"x\"\nread $r 1\nend\n";
        let cases = parse_cases(text, Path::new("p.cases")).expect("valid");
        let c = &cases[0];
        assert_eq!(c.steps[0].bind.as_deref(), Some("r w"));
        assert_eq!(c.steps[0].to_string(), "pipe2 O_NONBLOCK => r w");
        let again = parse_cases(&c.to_string(), Path::new("p.cases")).expect("reparses");
        assert_eq!(again[0], *c);
        for bad in [
            "case p\npipe2 0 => r\nend\n",
            "case p\nopen /f O_RDONLY => a b\nend\n",
            "case p\npipe2 0 => r W\nend\n",
        ] {
            assert!(parse_cases(bad, Path::new("p.cases")).is_err(), "{bad}");
        }
        let mut fds = crate::backend::Fds::default();
        fds.bind(
            "r w",
            &crate::outcome::Outcome::Ok(crate::outcome::Value::FdPair(3, 4)),
            1,
        );
        let get = |fds: &crate::backend::Fds, n: &str| fds.get(&crate::op::Fd::Var(n.into()));
        assert_eq!((get(&fds, "r"), get(&fds, "w")), (3, 4));
        fds.bind("r w", &crate::outcome::Outcome::Errno(24), 1);
        assert_eq!((get(&fds, "r"), get(&fds, "w")), (-1, -1));
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
        assert!(e.contains("cannot regain"), "{e}");
        let e = parse_cases("case a\nclose $g\nend\n", Path::new("x.cases")).expect_err("unbound");
        assert!(e.contains("$g is not bound"), "{e}");
        assert!(parse_cases("case Bad\nend\n", Path::new("x.cases")).is_err());
    }

    #[test]
    fn tasks_exist_before_they_are_used_and_keep_their_as() {
        let ok = "case a\nopen /f O_RDONLY => f\ntask 2 fork\nclose $f\nas 1 1\ntask 3 thread\n\
                  task 1\nas 2 2\ntask 3\nend\n";
        let cases = parse_cases(ok, Path::new("x.cases")).expect("valid");
        assert_eq!(cases[0].check(), Ok(()));
        let bad = |text: &str| {
            parse_cases(&format!("case a\n{text}\nend\n"), Path::new("x.cases")).expect_err(text)
        };
        assert!(bad("task 2").contains("task 2 does not exist"));
        assert!(bad("task 1 fork").contains("task 1 exists already"));
        assert!(bad("task 2 thread\ntask 2 fork").contains("exists already"));
        assert!(bad("task 9 fork").contains("1 to 8"));
        assert!(bad("task 0").contains("1 to 8"));
        assert!(bad("task 2 spawn").contains("fork or thread"));
        // A task made from one that left root with `as` cannot `as` either.
        assert!(bad("as 1 1\ntask 2 fork\nas 2 2").contains("cannot regain"));
        // Case::check finds the same in a case built in code.
        let mut c = Case::new("built");
        c.steps
            .push(Step::new(Op::Task { id: 4, start: None }, None));
        assert_eq!(
            c.check(),
            Err("step 1: task 4 does not exist: make it with `task 4 fork|thread`".into())
        );
        let mut c = Case::new("built");
        c.steps.push(Step::new(Op::Snapshot, Some("s".into())));
        assert!(c.check().unwrap_err().contains("does not return an fd"));
        assert!(parse_cases("case Bad\nend\n", Path::new("x.cases")).is_err());
    }
}
