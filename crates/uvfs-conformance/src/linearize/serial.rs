//! The oracle: every history a serial execution of a plan can produce.
//!
//! Each interleaving of the thread lists that keeps every thread's program order is run, one
//! step at a time, on a fresh [`Vfs`] built with the same initial tree, and its history is
//! recorded. A concurrent history is linearizable exactly when it is one of these. A step is
//! what Linux makes atomic: every operation here is one step (it looks its names up under the
//! locks of the directories it changes, and the plan keeps path walks off moving
//! directories), except `link`, which is two ([`super::plan::Op::serial_steps`]).
//!
//! Serial uvfs is itself the reference here, not the host kernel: the differential suite
//! checks uvfs's serial behaviour against Linux call by call, so this checker only has to
//! ask whether the concurrent behaviour is some serial behaviour. The outcomes are computed
//! once per seed and shared by all its concurrent runs, so checking a run is one hash lookup.
//! Each interleaving is replayed from the start: a `Vfs` cannot be copied, so a prefix shared
//! by many interleavings cannot be run once and forked (at most
//! [`super::plan::MAX_INTERLEAVINGS`] short runs per seed).

use std::collections::HashMap;

use uvfs::{Cred, Vfs};

use super::exec::{build, run_step, snapshot, Carry, InitialInodes};
use super::history::History;
use super::plan::Plan;

/// A serial order that produces a history.
#[derive(Clone, Debug)]
pub struct Explanation {
    /// The thread of each step, in order.
    pub order: Vec<u8>,
    /// True if the order runs whole threads one after another (no interleaving).
    pub whole_threads: bool,
}

/// The histories of every serial order of one plan.
pub struct SerialOutcomes {
    /// Each distinct history with the first order that produced it; an order running whole
    /// threads one after another is preferred.
    pub histories: HashMap<History, Explanation>,
    /// The number of orders run.
    pub orders: u64,
    /// The initial inodes of the last run (their names are the same in every run).
    pub(crate) initial: InitialInodes,
}

impl SerialOutcomes {
    /// Runs every serial order of `plan`.
    pub fn of(plan: &Plan) -> SerialOutcomes {
        let lens = plan.steps();
        let mut histories: HashMap<History, Explanation> = HashMap::new();
        let mut orders = 0u64;
        let mut initial = None;
        for_each_order(
            &lens,
            &mut Vec::new(),
            &mut vec![0; lens.len()],
            &mut |order| {
                orders += 1;
                let (init, h) = run_serial(plan, order);
                initial.get_or_insert(init);
                let switches = order.windows(2).filter(|w| w[0] != w[1]).count();
                let e = Explanation {
                    order: order.to_vec(),
                    whole_threads: switches + 1 == lens.len(),
                };
                histories
                    .entry(h)
                    .and_modify(|old| {
                        if e.whole_threads && !old.whole_threads {
                            *old = e.clone();
                        }
                    })
                    .or_insert(e);
            },
        );
        SerialOutcomes {
            histories,
            orders,
            initial: initial.expect("a plan has at least one order"),
        }
    }
}

/// Calls `f` with every sequence holding `lens[t]` copies of each thread number `t`.
fn for_each_order(
    lens: &[usize],
    order: &mut Vec<u8>,
    used: &mut Vec<usize>,
    f: &mut impl FnMut(&[u8]),
) {
    if order.len() == lens.iter().sum::<usize>() {
        f(order);
        return;
    }
    for t in 0..lens.len() {
        if used[t] < lens[t] {
            used[t] += 1;
            order.push(t as u8);
            for_each_order(lens, order, used, f);
            order.pop();
            used[t] -= 1;
        }
    }
}

/// Runs `plan`'s steps serially in `order` (one task per thread, as in the concurrent runs).
fn run_serial(plan: &Plan, order: &[u8]) -> (InitialInodes, History) {
    let vfs = Vfs::new();
    let initial = build(&vfs, plan);
    let tasks: Vec<_> = plan
        .threads
        .iter()
        .map(|_| vfs.task(Cred::root()))
        .collect();
    let mut results: Vec<Vec<_>> = plan.threads.iter().map(|_| Vec::new()).collect();
    let mut step = vec![0usize; plan.threads.len()];
    let mut carry: Vec<Carry> = plan.threads.iter().map(|_| Carry::default()).collect();
    for &t in order {
        let t = usize::from(t);
        let op = &plan.threads[t][results[t].len()];
        match run_step(&tasks[t], op, step[t], &mut carry[t]) {
            Some(r) => {
                results[t].push(r);
                step[t] = 0;
            }
            None => step[t] += 1,
        }
    }
    drop(tasks);
    let h = History::new(&initial, results, snapshot(&vfs));
    (initial, h)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_order_is_enumerated_once() {
        let mut seen = std::collections::HashSet::new();
        for_each_order(&[2, 3, 1], &mut Vec::new(), &mut vec![0; 3], &mut |o| {
            assert!(seen.insert(o.to_vec()), "{o:?} twice");
        });
        assert_eq!(seen.len(), 60);
    }
}
