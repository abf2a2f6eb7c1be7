//! Running a storm: the [`Exec`] sides implement, and the tally of what happened.

use std::collections::BTreeMap;

use uvfs::Errno;

use super::{generate, Call, Expect, Op, Setup, Stage, SETUP};

/// What runs the calls: uvfs, or the host kernel.
pub trait Exec {
    /// Runs one step of [`SETUP`].
    fn setup(&mut self, step: Setup);
    /// Opens the [`Obj`] files, in [`Obj::ALL`]'s order.
    fn open_objs(&mut self);
    /// Runs one call: `Ok` or its errno. Fds the call makes are closed before it returns.
    fn run(&mut self, op: &Op) -> Result<(), Errno>;
    /// Lowers the open file limit to the lowest free fd (`true`), or restores it (`false`).
    fn exhaust_fds(&mut self, on: bool);
    /// Why this side cannot run `call` as the kernel would see it, if it cannot.
    fn skip(&self, call: &Call) -> Option<&'static str>;
}

/// Builds the tree and opens the files the storm uses.
pub fn prepare(exec: &mut impl Exec) {
    for step in SETUP {
        exec.setup(*step);
    }
    exec.open_objs();
}

/// What a storm did.
#[derive(Debug, Default)]
pub struct Tally {
    pub ran: usize,
    pub by_stage: BTreeMap<Stage, usize>,
    pub by_result: BTreeMap<String, usize>,
    pub by_hostile: BTreeMap<String, usize>,
    pub by_family: BTreeMap<&'static str, usize>,
    pub skipped: BTreeMap<&'static str, usize>,
    /// Calls whose outcome was not the expected one.
    pub wrong: Vec<String>,
}

impl Tally {
    /// Calls that got past their argument checks and their fd and path lookups.
    pub fn past_lookup(&self) -> usize {
        self.by_stage
            .iter()
            .filter(|(s, _)| s.past_lookup())
            .map(|(_, n)| n)
            .sum()
    }

    pub fn stage(&self, s: Stage) -> usize {
        self.by_stage.get(&s).copied().unwrap_or(0)
    }

    /// A readable summary.
    pub fn report(&self, side: &str) -> String {
        let pct = |n: usize| 100.0 * n as f64 / self.ran.max(1) as f64;
        let mut out = format!(
            "{side}: {} calls ran, {} families; {} ({:.1} %) got past the argument checks and \
             the fd and path lookups; {} wrong\n",
            self.ran,
            self.by_family.len(),
            self.past_lookup(),
            pct(self.past_lookup()),
            self.wrong.len()
        );
        out += "  stopped at:";
        for (s, n) in &self.by_stage {
            out += &format!(" {s:?} {n} ({:.1} %),", pct(*n));
        }
        out += "\n  hostile field:";
        for (h, n) in &self.by_hostile {
            out += &format!(" {h} {n},");
        }
        out += "\n  outcome:";
        for (e, n) in &self.by_result {
            out += &format!(" {e} {n},");
        }
        if !self.skipped.is_empty() {
            out += "\n  skipped:";
            for (why, n) in &self.skipped {
                out += &format!(" {n} ({why}),");
            }
        }
        out.push('\n');
        out
    }
}

/// Runs `n` generated calls from `seed` and checks each outcome against its expectation.
pub fn run(exec: &mut impl Exec, seed: u64, n: usize) -> Tally {
    let mut t = Tally::default();
    for (i, call) in generate(seed, n).enumerate() {
        if let Some(why) = exec.skip(&call) {
            *t.skipped.entry(why).or_default() += 1;
            continue;
        }
        if call.exhaust_fds {
            exec.exhaust_fds(true);
        }
        let got = exec.run(&call.op);
        if call.exhaust_fds {
            exec.exhaust_fds(false);
        }
        t.ran += 1;
        *t.by_stage.entry(call.stage()).or_default() += 1;
        *t.by_family.entry(call.op.name()).or_default() += 1;
        let h = call
            .hostile
            .map_or("none".to_string(), |h| format!("{h:?}"));
        *t.by_hostile.entry(h).or_default() += 1;
        let r = match got {
            Ok(()) => "ok".to_string(),
            Err(e) => format!("{e:?}"),
        };
        *t.by_result.entry(r).or_default() += 1;
        let right = match (&call.expect, got) {
            (Expect::Fails(e, _), Err(g)) => *e == g,
            (Expect::Fails(..), Ok(())) => false,
            (Expect::Succeeds(_), Ok(())) => true,
            (Expect::Succeeds(state), Err(g)) => state.contains(&g),
        };
        if !right {
            t.wrong.push(format!("call #{i}: {call}: got {got:?}"));
        }
    }
    t
}
