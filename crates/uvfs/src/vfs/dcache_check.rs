//! Model checks of the production dcache: the lock-free lookup (`ChildTable::find`,
//! `Dentry::lookup_fast`, `namei::fast::walk_cached`) against the production updates
//! (`Dentry::d_instantiate`, `d_delete`, `d_move`, `d_exchange`, and the table's resize), and
//! `stat`'s attribute snapshot (`Inode::stat`, the read side of `SeqLock`) against
//! `Inode::write_attrs` and attribute writers against each other, with the atomics, locks and published cells of `crate::sync` replaced by loom's
//! (`--cfg loom`) or shuttle's (`--features shuttle`). Nothing here is a model of the code:
//! every scenario calls the functions the path walk calls.
//!
//! What loom checks: every interleaving within `LOOM_MAX_PREEMPTIONS` (2 in CI) and every
//! outcome the C11 memory model allows. The scenarios are small (a writer running one to three updates, a reader running one or
//! two lookups):
//! without a preemption bound loom also exhausts them, in under a second (15 to 1,500
//! executions per scenario). Node, bucket-array and dentry contents are loom-tracked
//! write-once cells (`sync::cell::Frozen`), so a publication too weak for a reader to see what
//! it reached fails with "causality violation". What shuttle checks: thousands of seeded random
//! and PCT schedules of the same scenarios, every atomic sequentially consistent.
//!
//! The property checked is the one the walk relies on (docs/locking.md, "The lock-free path
//! walk"): a lock-free lookup of `dir/name` returns a child that was `dir/name` at some moment
//! of the call, or `Miss` (the walk then takes the locked lookup); once an update of
//! `dir/name` has completed before the lookup starts, the lookup never returns what the update
//! replaced; a child present throughout is always found, also across a resize; and a stat
//! sees the attributes of one write section, never a mix.
//!
//! What is not checked: memory reclamation (`seize` cannot run in a model; retired memory is
//! freed only after each scenario, see `sync::rcu`), and the locked lookup (`lookup_slow`),
//! whose inode lock is not behind the facade; `tests/concurrency.rs` covers it.
//!
//! Run: `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test -p uvfs --lib --release
//! dcache_check` (its own target dir, as in `.ci/run`), and
//! `cargo test -p uvfs --features shuttle --lib --release dcache_check`.

use std::sync::Arc;

use super::cred::Cred;
use super::dcache::{hash_len, hash_seed, MIN_SLOTS};
use super::dentry::{Cached, Dentry};
use super::namei::fast::walk_cached;
use super::namei::FollowLast;
use super::test_fixture::Fixture;
use crate::abi::FileType;
use crate::sync::atomic::Ordering;
use crate::sync::model::{check, thread, AtomicBool};
use crate::sync::rcu;

/// The production lookup of one component: what `Walker::lookup_one` and `step_cached` call.
fn lookup(dir: &Dentry, name: &[u8]) -> Option<Arc<Dentry>> {
    let guard = rcu::read();
    match dir.lookup_fast(hash_len(hash_seed(), name), name, &guard) {
        Cached::Hit(d) => Some(d.clone()),
        Cached::Miss => None,
    }
}

fn same(a: &Option<Arc<Dentry>>, b: &Arc<Dentry>) -> bool {
    a.as_ref().is_some_and(|a| Arc::ptr_eq(a, b))
}

/// Runs `update` on another thread and, on this one, reads whether it has completed and then
/// looks up `dir/name`: `(completed before the lookup, what the lookup returned)`.
fn race(
    update: impl FnOnce() + Send + 'static,
    dir: &Arc<Dentry>,
    name: &'static [u8],
) -> (bool, Option<Arc<Dentry>>) {
    let done = Arc::new(AtomicBool::new(false));
    let writer = {
        let done = done.clone();
        thread::spawn(move || {
            update();
            done.store(true, Ordering::Release);
        })
    };
    let completed = done.load(Ordering::Acquire);
    let got = lookup(dir, name);
    writer.join().expect("the update panicked");
    (completed, got)
}

/// unlink: a lookup racing `d_delete` returns the victim or misses; once the unlink has
/// completed it misses.
fn unlink_scenario() {
    let f = Fixture::new();
    let d = f.root();
    let x = d.d_instantiate(b"x", f.inode(FileType::Regular));
    let (completed, got) = race(
        {
            let (d, x) = (d.clone(), x.clone());
            move || d.d_delete(b"x", &x)
        },
        &d,
        b"x",
    );
    assert!(got.is_none() || same(&got, &x), "lookup of x: {got:?}");
    assert!(
        !(completed && got.is_some()),
        "a lookup that started after the unlink completed found the victim"
    );
    assert!(lookup(&d, b"x").is_none(), "x is gone once unlinked");
    assert!(x.is_dead());
}

/// create over a cached negative entry (`d_instantiate`): the lookup returns the negative
/// entry, misses, or returns the new child; once the create has completed, the new child.
fn create_scenario() {
    let f = Fixture::new();
    let d = f.root();
    let neg = d.d_add(b"x", None);
    assert!(neg.inode().is_none());
    let inode = f.inode(FileType::Regular);
    let (completed, got) = race(
        {
            let d = d.clone();
            move || {
                d.d_instantiate(b"x", inode);
            }
        },
        &d,
        b"x",
    );
    let now = lookup(&d, b"x").expect("the created child is cached");
    assert!(now.inode().is_some(), "cached child is positive");
    assert!(
        got.is_none() || same(&got, &neg) || same(&got, &now),
        "lookup of x: {got:?}"
    );
    if completed {
        assert!(
            same(&got, &now),
            "a lookup that started after the create completed returned {got:?}"
        );
    }
}

/// rename `d/x` to `e/y`, `e` a directory with nothing cached yet (`d_move`; the insert
/// publishes `e`'s first bucket array): `d/x` is the child or missing, `e/y` the child or
/// missing; once the rename has completed, `d/x` misses and `e/y` is the child.
fn rename_scenario() {
    let f = Fixture::new();
    let root = f.root();
    let d = root.d_instantiate(b"d", f.inode(FileType::Directory));
    let e = root.d_instantiate(b"e", f.inode(FileType::Directory));
    let x = d.d_instantiate(b"x", f.inode(FileType::Regular));
    let done = Arc::new(AtomicBool::new(false));
    let writer = {
        let (d, e, x, done) = (d.clone(), e.clone(), x.clone(), done.clone());
        thread::spawn(move || {
            d.d_move(b"x", &x, &e, b"y");
            done.store(true, Ordering::Release);
        })
    };
    let completed = done.load(Ordering::Acquire);
    let at_x = lookup(&d, b"x");
    let at_y = lookup(&e, b"y");
    writer.join().expect("the rename panicked");
    assert!(at_x.is_none() || same(&at_x, &x), "d/x: {at_x:?}");
    assert!(at_y.is_none() || same(&at_y, &x), "e/y: {at_y:?}");
    if completed {
        assert!(at_x.is_none(), "d/x after the rename: {at_x:?}");
        assert!(same(&at_y, &x), "e/y after the rename: {at_y:?}");
    }
    assert!(lookup(&d, b"x").is_none());
    assert!(same(&lookup(&e, b"y"), &x));
}

/// `RENAME_EXCHANGE` of `d/a` and `d/b` (`d_exchange`): `d/a` is `a`, `b`, or missing; once
/// the exchange has completed, `b`.
fn exchange_scenario() {
    let f = Fixture::new();
    let d = f.root();
    let a = d.d_instantiate(b"a", f.inode(FileType::Regular));
    let b = d.d_instantiate(b"b", f.inode(FileType::Regular));
    let (completed, got) = race(
        {
            let (d, a, b) = (d.clone(), a.clone(), b.clone());
            move || d.d_exchange(b"a", &a, &d, b"b", &b)
        },
        &d,
        b"a",
    );
    assert!(
        got.is_none() || same(&got, &a) || same(&got, &b),
        "d/a: {got:?}"
    );
    if completed {
        assert!(same(&got, &b), "d/a after the exchange: {got:?}");
    }
    assert!(same(&lookup(&d, b"a"), &b) && same(&lookup(&d, b"b"), &a));
}

/// Names of the resize scenario: `RESIZE_AT` children fill the first bucket array to the point
/// where one more insert copies every node into a larger one.
const RESIZE_AT: usize = 2 * MIN_SLOTS;

/// `RESIZE_AT` names, two in each bucket of a first bucket array (the hash seed is per
/// process, so the names are picked at run time), so that every chain takes part in a resize.
fn names_filling_every_slot() -> Vec<Vec<u8>> {
    let mut per_slot = [0usize; MIN_SLOTS];
    (0..)
        .map(|i| format!("n{i}").into_bytes())
        .filter(|n| {
            let s = hash_len(hash_seed(), n) as usize % MIN_SLOTS;
            per_slot[s] += 1;
            per_slot[s] <= RESIZE_AT / MIN_SLOTS
        })
        .take(RESIZE_AT)
        .collect()
}

/// Two names in the same bucket of a first bucket array (the hash seed is per process).
fn colliding_names() -> (Vec<u8>, Vec<u8>) {
    let slot = |n: &[u8]| hash_len(hash_seed(), n) as usize % MIN_SLOTS;
    let first = b"c0".to_vec();
    let second = (1..)
        .map(|i| format!("c{i}").into_bytes())
        .find(|n| slot(n) == slot(&first))
        .expect("some name shares the bucket");
    (first, second)
}

/// Create `m`, create `n` in the same bucket (its node links to `m`'s), unlink `n` (the
/// bucket then points at `m`'s node again): a lookup of `m` returns `m` or misses, and once
/// the three have completed, returns `m`.
fn unlink_neighbour_scenario() {
    let f = Fixture::new();
    let d = f.root();
    d.d_instantiate(b"other", f.inode(FileType::Regular));
    let (m, n) = colliding_names();
    let (im, in_) = (f.inode(FileType::Regular), f.inode(FileType::Regular));
    let done = Arc::new(AtomicBool::new(false));
    let writer = {
        let (d, m, n, done) = (d.clone(), m.clone(), n.clone(), done.clone());
        thread::spawn(move || {
            let dm = d.d_instantiate(&m, im);
            let dn = d.d_instantiate(&n, in_);
            d.d_delete(&n, &dn);
            done.store(true, Ordering::Release);
            dm
        })
    };
    let completed = done.load(Ordering::Acquire);
    let got = lookup(&d, &m);
    let dm = writer.join().expect("the updates panicked");
    assert!(got.is_none() || same(&got, &dm), "m: {got:?}");
    if completed {
        assert!(same(&got, &dm), "m after its create: {got:?}");
    }
    assert!(same(&lookup(&d, &m), &dm) && lookup(&d, &n).is_none());
}

/// A create that resizes the table, then an unlink in the new array: a child present
/// throughout is found whichever array the lookup reads, the new child only once created, and
/// the unlinked one is never returned once the unlink has completed.
fn resize_scenario() {
    let f = Fixture::new();
    let d = f.root();
    let names = names_filling_every_slot();
    let kids: Vec<Arc<Dentry>> = names
        .iter()
        .map(|n| d.d_instantiate(n, f.inode(FileType::Regular)))
        .collect();
    let inode = f.inode(FileType::Regular);
    let done = Arc::new(AtomicBool::new(false));
    let writer = {
        let (d, victim, victim_name, done) =
            (d.clone(), kids[1].clone(), names[1].clone(), done.clone());
        thread::spawn(move || {
            d.d_instantiate(b"new", inode);
            d.d_delete(&victim_name, &victim);
            done.store(true, Ordering::Release);
        })
    };
    let completed = done.load(Ordering::Acquire);
    let stable = lookup(&d, &names[0]);
    let victim = lookup(&d, &names[1]);
    writer.join().expect("the update panicked");
    assert!(
        same(&stable, &kids[0]),
        "{:?}, present throughout: {stable:?}",
        String::from_utf8_lossy(&names[0])
    );
    assert!(
        victim.is_none() || same(&victim, &kids[1]),
        "the victim: {victim:?}"
    );
    if completed {
        assert!(victim.is_none(), "the victim after its unlink: {victim:?}");
    }
    assert!(lookup(&d, b"new").is_some_and(|n| n.inode().is_some()));
    for (n, k) in names.iter().zip(&kids).skip(2) {
        assert!(same(&lookup(&d, n), k));
    }
}

/// The whole cached walk (`walk_cached`, what `stat` runs) of `a/f` while `a` is renamed to
/// `b` and a new `a` without `f` is created: the walk returns the file or gives up (the caller
/// then takes the general walk); once both have completed, it gives up.
fn walk_scenario() {
    let f = Fixture::new();
    let root = f.root();
    let a = root.d_instantiate(b"a", f.inode(FileType::Directory));
    let file = a.d_instantiate(b"f", f.inode(FileType::Regular));
    let new_a = f.inode(FileType::Directory);
    let done = Arc::new(AtomicBool::new(false));
    let writer = {
        let (root, a, done) = (root.clone(), a.clone(), done.clone());
        thread::spawn(move || {
            root.d_move(b"a", &a, &root, b"b");
            root.d_instantiate(b"a", new_a);
            done.store(true, Ordering::Release);
        })
    };
    let completed = done.load(Ordering::Acquire);
    let got = {
        let guard = rcu::read();
        walk_cached(
            &guard,
            &Cred::root(),
            hash_seed(),
            &root,
            &root,
            b"a/f",
            FollowLast::Yes,
        )
        .cloned()
    };
    writer.join().expect("the renames panicked");
    assert!(got.is_none() || same(&got, &file), "a/f: {got:?}");
    if completed {
        assert!(got.is_none(), "a/f after a was replaced: {got:?}");
    }
}

/// `stat` of a cached path as `Task::stat_cached` does it (`walk_cached`, then
/// `Inode::stat`, the read side of `Inode::attr`) while a write section changes size and
/// blocks together (`Inode::write_attrs`, as a write that allocates a page does): the stat
/// sees both old or both new; once the write has completed, both new.
fn stat_scenario() {
    let f = Fixture::new();
    let root = f.root();
    let file = root.d_instantiate(b"f", f.inode(FileType::Regular));
    let inode = file.inode().expect("positive").clone();
    let done = Arc::new(AtomicBool::new(false));
    let writer = {
        let (inode, done) = (inode.clone(), done.clone());
        thread::spawn(move || {
            inode.write_attrs(|w| {
                w.set_size(4096);
                w.set_blocks(8);
            });
            done.store(true, Ordering::Release);
        })
    };
    let completed = done.load(Ordering::Acquire);
    let st = {
        let guard = rcu::read();
        let d = walk_cached(
            &guard,
            &Cred::root(),
            hash_seed(),
            &root,
            &root,
            b"f",
            FollowLast::Yes,
        )
        .expect("f is cached and nothing renames it");
        d.inode().expect("positive").stat()
    };
    writer.join().expect("the write panicked");
    let got = (st.size, st.blocks);
    assert!(got == (0, 0) || got == (4096, 8), "torn stat: {got:?}");
    if completed {
        assert_eq!(got, (4096, 8), "stat after the write completed");
    }
}

/// Two attribute writers (`Inode::write_attrs`, whose lock is the sequence count's odd
/// value) each add a link with a load and a store, while a flag of the same word changes:
/// neither link is lost, nor the flag, so the sections excluded each other and the flag's
/// update left the count alone.
fn writers_scenario() {
    let f = Fixture::new();
    let inode = f.inode(FileType::Regular);
    let before = inode.nlink();
    let writer = {
        let inode = inode.clone();
        thread::spawn(move || inode.write_attrs(|w| w.add_nlink(1)))
    };
    inode.set_linkable(true);
    inode.write_attrs(|w| w.add_nlink(1));
    writer.join().expect("the writer panicked");
    assert_eq!(
        inode.nlink(),
        before + 2,
        "a write section's update was lost"
    );
    assert!(
        inode.is_linkable(),
        "a flag set beside the sections was lost"
    );
    assert!(inode.attrs(false).nlink == before + 2);
}

#[test]
fn dcache_check_attribute_writers_exclude_each_other() {
    check(writers_scenario);
}

#[test]
fn dcache_check_stat_of_a_cached_path_is_one_snapshot() {
    check(stat_scenario);
}

#[test]
fn dcache_check_lookup_never_returns_an_unlinked_child_after_the_unlink() {
    check(unlink_scenario);
}

#[test]
fn dcache_check_lookup_sees_a_create_over_a_negative_entry() {
    check(create_scenario);
}

#[test]
fn dcache_check_lookup_follows_a_rename_into_an_empty_directory() {
    check(rename_scenario);
}

#[test]
fn dcache_check_lookup_follows_an_exchange() {
    check(exchange_scenario);
}

#[test]
fn dcache_check_unlink_keeps_the_rest_of_the_bucket() {
    check(unlink_neighbour_scenario);
}

#[test]
fn dcache_check_resize_keeps_every_child_visible() {
    check(resize_scenario);
}

#[test]
fn dcache_check_cached_walk_follows_a_replaced_directory() {
    check(walk_scenario);
}
