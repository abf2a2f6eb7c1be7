//! The dcache hit validation protocol as a model over the real [`uvfs::sync::SeqCount`],
//! shared by the loom (`loom_seqcount.rs`) and shuttle (`shuttle_seqcount.rs`) tests. Each
//! includes it with a `rt` module naming its runtime's atomics, `Arc` and `thread`.
//!
//! A dentry's identity (parent id, name id) is two `AtomicU32`s stored `Relaxed` inside a write
//! section of the dentry's sequence count, as `Dentry::d_move` changes `name` and `parent`. A
//! published dcache node records the count the dentry had when the node was published
//! (`expect_seq`); a rename publishes the new node inside its write section with `expect_seq`
//! = the count the section ends with, as `d_move` does. A reader loads the current node,
//! checks `seq.raw() == node.expect_seq` (`Dentry::lookup_fast`), reads both fields `Relaxed`,
//! and accepts them only if `read_retry(node.expect_seq)` is false.
//!
//! Not modelled: the chain walk and memory reclamation of `ChildTable` (nodes are fixed slots
//! here, published by one `Release` store of an index).

use super::rt::{thread, Arc, AtomicU32, AtomicUsize, Ordering};
use uvfs::sync::SeqCount;

/// (parent id, name id) of each generation of the dentry: generation `g` is current after `g`
/// renames.
pub const IDENTITY: [(u32, u32); 3] = [(10, 100), (11, 101), (12, 102)];

/// The message of a failed check, matched by the tests that expect one.
pub const TORN: &str = "torn or stale identity accepted";

/// A dcache node: immutable once published.
struct Node {
    generation: usize,
    expect_seq: AtomicU32,
}

/// One dentry, the node that currently names it, and the nodes of later generations.
pub struct Model {
    seq: SeqCount,
    parent: AtomicU32,
    name: AtomicU32,
    /// Index into `nodes` of the published node (a `Release` store publishes it).
    current: AtomicUsize,
    nodes: [Node; 3],
}

/// Whether the reader ends with `read_retry` (the protocol) or skips it (a broken reader).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Validate {
    ReadRetry,
    Skip,
}

impl Model {
    pub fn new() -> Model {
        let (p, n) = IDENTITY[0];
        Model {
            seq: SeqCount::new(0),
            parent: AtomicU32::new(p),
            name: AtomicU32::new(n),
            current: AtomicUsize::new(0),
            nodes: [0, 1, 2].map(|generation| Node {
                generation,
                expect_seq: AtomicU32::new(0),
            }),
        }
    }

    /// `Dentry::d_move`: enter the write section, change both fields, publish the node of
    /// generation `to` recording the count the section will end with, leave the section. The
    /// caller is the only writer (in uvfs, the directory inode locks serialise renames).
    pub fn rename(&self, to: usize) {
        self.seq.write_begin();
        let (p, n) = IDENTITY[to];
        self.parent.store(p, Ordering::Relaxed);
        self.name.store(n, Ordering::Relaxed);
        let expect = self.seq.raw().wrapping_add(1);
        // Written before publication, never after: the node is immutable once published.
        self.nodes[to].expect_seq.store(expect, Ordering::Relaxed);
        self.current.store(to, Ordering::Release);
        let end = self.seq.write_end();
        assert_eq!(end, expect, "write_end returns the count the node recorded");
    }

    /// The reader of a dcache hit: `Some((generation, identity))` if it accepts one through
    /// the node of `generation`, `None` on a miss (the walk falls back to the locked lookup).
    pub fn lookup(&self, validate: Validate) -> Option<(usize, (u32, u32))> {
        let node = &self.nodes[self.current.load(Ordering::Acquire)];
        let expect = node.expect_seq.load(Ordering::Relaxed);
        if self.seq.raw() != expect {
            return None;
        }
        let pair = (
            self.parent.load(Ordering::Relaxed),
            self.name.load(Ordering::Relaxed),
        );
        if validate == Validate::ReadRetry && self.seq.read_retry(expect) {
            return None;
        }
        Some((node.generation, pair))
    }

    /// Looks up and checks that whatever was accepted is the identity of the node validated.
    pub fn lookup_checked(&self, validate: Validate) {
        if let Some((generation, pair)) = self.lookup(validate) {
            assert_eq!(
                pair, IDENTITY[generation],
                "{TORN} through node {generation}"
            );
        }
    }
}

/// One rename against one reader; afterwards the new node validates.
pub fn one_rename_one_reader(validate: Validate) {
    let m = Arc::new(Model::new());
    let w = {
        let m = m.clone();
        thread::spawn(move || m.rename(1))
    };
    m.lookup_checked(validate);
    w.join().expect("writer");
    assert_eq!(m.lookup(Validate::ReadRetry), Some((1, IDENTITY[1])));
}

/// Two renames in a row against two readers (three threads): a reader holding the node of
/// generation 0 or 1 never accepts generation 2's fields, and the count never comes back to a
/// value a stale node recorded.
pub fn two_renames_two_readers() {
    let m = Arc::new(Model::new());
    let w = {
        let m = m.clone();
        thread::spawn(move || {
            m.rename(1);
            m.rename(2);
        })
    };
    let r = {
        let m = m.clone();
        thread::spawn(move || m.lookup_checked(Validate::ReadRetry))
    };
    m.lookup_checked(Validate::ReadRetry);
    w.join().expect("writer");
    r.join().expect("reader");
    assert_eq!(m.lookup(Validate::ReadRetry), Some((2, IDENTITY[2])));
}
