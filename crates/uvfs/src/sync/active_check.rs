//! Model checks of the production active references (`sync::active`: `Registration::enter`,
//! the guard's drop, `deactivate`, `Domain::drain`) with the atomics and the spin-wait of
//! `crate::sync` replaced by loom's (`--cfg loom`) or shuttle's (`--features shuttle`). A
//! reader thread runs a "callback" of an object under an active reference while a remover
//! deactivates the object and drains it, as `kernfs::KernfsNode::remove` does.
//!
//! The property checked is kernfs's removal guarantee (docs/locking.md, "kernfs"): no callback
//! body runs after `drain` returned (the body asserts that the remover's "removal returned"
//! flag is not set, at its start and at its end), and a callback that passed the check is
//! waited for (the remover, after `drain`, sees what the body wrote; a relaxed write, so
//! under loom only a happens-before edge from the body makes it visible). A callback that
//! removes its own object does not wait for itself, and still waits for another thread's;
//! two callbacks on two threads that both remove their object both return.
//!
//! Each scenario counts its executions and their outcomes (callback ran, refused, drain found
//! it running) and asserts that the model reached each of them, so that a scenario whose
//! schedules never race cannot pass.
//!
//! What loom checks: every interleaving within `LOOM_MAX_PREEMPTIONS` and the C11 outcomes
//! loom models. Loom treats `SeqCst` loads and stores as `AcqRel`, but does not let a `SeqCst`
//! load read a `SeqCst` store older than another `SeqCst` store of the same word; a word's
//! initial value (`new`) is not such a store, so each scenario stores the initial zeros of the
//! flag word and of the reader's slots with `SeqCst` before its threads start (what C11 gives
//! the initialisation by itself). Without that, loom reports the correct handshake as broken.
//! What shuttle checks: seeded random and PCT schedules, every atomic sequentially consistent
//! (so it cannot see a too-weak ordering). Not checked: the domain's list lock
//! (std's `Mutex`, outside the models) and the rule that a thread registering after a drain's
//! snapshot sees the flags; here every registration is made before the threads race.
//!
//! Run: as `dcache_check`, with `active_check` as the filter.

use std::sync::atomic::AtomicUsize as StdCount;
use std::sync::Arc;

use super::active::{deactivate, Domain, Refused, Registration};
use super::atomic::{AtomicU32, Ordering};
use super::model::{check, thread, AtomicBool};

/// The key of the object removed in each scenario (its "address").
const KEY: usize = 0x40;
/// The key of an unrelated object.
const OTHER: usize = 0x80;

fn count(c: &StdCount) {
    c.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

fn read(c: &StdCount) -> usize {
    c.load(std::sync::atomic::Ordering::Relaxed)
}

/// A registration whose slots start from a `SeqCst` store of zero (see the module docs).
fn register(domain: &Domain) -> Registration {
    let r = domain.register();
    for slot in r.slots() {
        slot.store(0, Ordering::SeqCst);
    }
    r
}

/// A live object's flag word, its zero stored with `SeqCst`.
fn live_flags() -> Arc<AtomicU32> {
    let flags = Arc::new(AtomicU32::new(0));
    flags.store(0, Ordering::SeqCst);
    flags
}

/// What a callback run by [`run_callback`] did.
#[derive(Debug, PartialEq, Eq)]
enum Ran {
    Body,
    Refused,
}

/// Enters `key` (nested inside an active reference on [`OTHER`] if `nested`) and runs a
/// callback body that asserts `removed` is unset at its start and end and sets `done`.
fn run_callback(
    reg: &Registration,
    flags: &AtomicU32,
    other_flags: &AtomicU32,
    nested: bool,
    removed: &AtomicBool,
    done: &AtomicBool,
) -> Ran {
    let _outer = nested.then(|| {
        reg.enter(OTHER, other_flags)
            .expect("OTHER is never removed")
    });
    match reg.enter(KEY, flags) {
        Ok(active) => {
            assert!(
                !removed.load(Ordering::SeqCst),
                "a callback body started after drain returned"
            );
            done.store(true, Ordering::Relaxed);
            assert!(
                !removed.load(Ordering::SeqCst),
                "a callback body was running when drain returned"
            );
            drop(active);
            Ran::Body
        }
        Err(Refused::Gone) => Ran::Refused,
        Err(Refused::TooDeep) => panic!("two callbacks fit in a thread's slots"),
    }
}

/// The outcomes one scenario reached, over all its executions.
struct Outcomes {
    executions: StdCount,
    ran: StdCount,
    refused: StdCount,
    /// Executions whose drain found the callback running and waited for it.
    waited: StdCount,
}

impl Outcomes {
    const fn new() -> Outcomes {
        Outcomes {
            executions: StdCount::new(0),
            ran: StdCount::new(0),
            refused: StdCount::new(0),
            waited: StdCount::new(0),
        }
    }

    /// Asserts that the model reached a run, a refusal and a wait, and that every execution
    /// ended in a run or a refusal.
    fn assert_all_reached(&self, name: &str) {
        let (e, r, f, w) = (
            read(&self.executions),
            read(&self.ran),
            read(&self.refused),
            read(&self.waited),
        );
        eprintln!("{name}: {e} executions: callback ran {r}, refused {f}, drain waited {w}");
        assert_eq!(e, r + f, "every execution ran or refused the callback");
        assert!(r > 0, "no execution ran the callback");
        assert!(f > 0, "no execution refused the callback");
        assert!(w > 0, "no execution's drain found the callback running");
    }
}

/// One reader against one remover (see the module docs); `nested` puts the reader's active
/// reference in its second slot.
fn reader_against_remover(nested: bool, outcomes: &'static Outcomes) {
    let domain = Arc::new(Domain::new());
    let flags = live_flags();
    let other_flags = live_flags();
    let removed = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicBool::new(false));
    let reg = register(&domain);
    let remover_reg = register(&domain);
    let reader = {
        let (flags, other_flags, removed, done) = (
            flags.clone(),
            other_flags.clone(),
            removed.clone(),
            done.clone(),
        );
        thread::spawn(move || run_callback(&reg, &flags, &other_flags, nested, &removed, &done))
    };
    assert!(deactivate(&flags), "the first deactivation");
    let waits = domain.drain(Some(&remover_reg), &|k| k == KEY);
    let saw_done = done.load(Ordering::Relaxed);
    removed.store(true, Ordering::SeqCst);
    let ran = reader.join().expect("the reader panicked");
    count(&outcomes.executions);
    if waits > 0 {
        count(&outcomes.waited);
    }
    match ran {
        Ran::Body => {
            count(&outcomes.ran);
            assert!(
                saw_done,
                "drain returned before a callback that passed the check had finished"
            );
        }
        Ran::Refused => {
            count(&outcomes.refused);
            assert!(!saw_done, "a refused callback ran");
        }
    }
}

/// A callback that started before its object was deactivated is waited for, and none starts
/// after `drain` returned.
#[test]
fn active_check_no_callback_runs_after_drain_returns() {
    static OUTCOMES: Outcomes = Outcomes::new();
    check(|| reader_against_remover(false, &OUTCOMES));
    OUTCOMES.assert_all_reached("active_check_no_callback_runs_after_drain_returns");
}

/// The same with the reader's active reference in its second slot (a callback nested in
/// another object's): the drain looks at every slot of every thread.
#[test]
fn active_check_a_nested_callback_is_waited_for() {
    static OUTCOMES: Outcomes = Outcomes::new();
    check(|| reader_against_remover(true, &OUTCOMES));
    OUTCOMES.assert_all_reached("active_check_a_nested_callback_is_waited_for");
}

/// A callback that removes its own object (Linux: `kernfs_remove_self()`) returns from the
/// drain although its own active reference is held, and the drain still waits for another
/// thread's callback of the object, which never runs after the drain returned.
#[test]
fn active_check_a_callback_removing_its_own_object_waits_for_others_only() {
    static OUTCOMES: Outcomes = Outcomes::new();
    static SELF_REMOVALS: StdCount = StdCount::new(0);
    check(|| {
        let domain = Arc::new(Domain::new());
        let flags = live_flags();
        let other_flags = live_flags();
        let removed = Arc::new(AtomicBool::new(false));
        let done = Arc::new(AtomicBool::new(false));
        let self_reg = register(&domain);
        let reg = register(&domain);
        let remover = {
            let (domain, flags, removed, done) =
                (domain.clone(), flags.clone(), removed.clone(), done.clone());
            thread::spawn(move || {
                // The self-removing callback: entered before anyone deactivates.
                let _own = self_reg.enter(KEY, &flags).expect("nobody removed it yet");
                assert!(deactivate(&flags), "the first deactivation");
                let waits = domain.drain(Some(&self_reg), &|k| k == KEY);
                let saw_done = done.load(Ordering::Relaxed);
                removed.store(true, Ordering::SeqCst);
                (waits, saw_done)
            })
        };
        let ran = run_callback(&reg, &flags, &other_flags, false, &removed, &done);
        let (waits, saw_done) = remover.join().expect("the self-removing callback panicked");
        count(&SELF_REMOVALS);
        count(&OUTCOMES.executions);
        if waits > 0 {
            count(&OUTCOMES.waited);
        }
        match ran {
            Ran::Body => {
                count(&OUTCOMES.ran);
                assert!(saw_done, "drain returned before another callback finished");
            }
            Ran::Refused => {
                count(&OUTCOMES.refused);
                assert!(!saw_done, "a refused callback ran");
            }
        }
    });
    assert_eq!(
        read(&SELF_REMOVALS),
        read(&OUTCOMES.executions),
        "every self-removal returned"
    );
    OUTCOMES.assert_all_reached(
        "active_check_a_callback_removing_its_own_object_waits_for_others_only",
    );
}

/// Two callbacks of one object on two threads that each remove it (Linux: competing
/// `kernfs_remove_self()`): each drain gives up its own thread's slot before waiting, so
/// neither waits for the other and both return.
#[test]
fn active_check_two_callbacks_removing_their_object_both_return() {
    static EXECUTIONS: StdCount = StdCount::new(0);
    static BOTH_REMOVED: StdCount = StdCount::new(0);
    check(|| {
        let domain = Arc::new(Domain::new());
        let flags = live_flags();
        let (reg, other_reg) = (register(&domain), register(&domain));
        let other = {
            let (domain, flags) = (domain.clone(), flags.clone());
            thread::spawn(move || remove_self(&domain, &other_reg, &flags))
        };
        let mine = remove_self(&domain, &reg, &flags);
        let theirs = other.join().expect("the other self-removal panicked");
        count(&EXECUTIONS);
        if mine && theirs {
            count(&BOTH_REMOVED);
        }
    });
    let (e, b) = (read(&EXECUTIONS), read(&BOTH_REMOVED));
    eprintln!("active_check_two_callbacks_removing_their_object_both_return: {e} executions, both removed in {b}");
    assert!(b > 0, "no execution had both callbacks remove the object");
}

/// A callback of [`KEY`] that deactivates and drains its own object; false if it was refused.
fn remove_self(domain: &Domain, reg: &Registration, flags: &AtomicU32) -> bool {
    match reg.enter(KEY, flags) {
        Ok(_active) => {
            deactivate(flags);
            domain.drain(Some(reg), &|k| k == KEY);
            true
        }
        Err(_) => false,
    }
}
