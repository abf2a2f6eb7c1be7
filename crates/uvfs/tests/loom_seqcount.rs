//! Model check, with loom, of the dcache hit validation protocol on the real
//! [`uvfs::sync::SeqCount`] (under `--cfg loom` its atomics and fences are loom's). The model
//! is in `seqcount_model/mod.rs`.
//!
//! What it proves: for every interleaving and every outcome of the C11 memory model that loom
//! explores within `LOOM_MAX_PREEMPTIONS` (2 in CI) with at most three threads, a reader
//! never accepts a torn identity (one field from before a rename, one from after) nor a stale
//! one (fields that do not belong to the node it validated against). This covers the fence
//! placement of `write_begin` (`Release` after the odd store) and `read_retry` (`Acquire`
//! before the reload), and `expect_seq` being the count the write section ends with. The last
//! test shows the model can fail: loom catches a reader that skips `read_retry`.
//!
//! What it does not prove: the chain walk and reclamation of `ChildTable`, or anything beyond
//! the preemption bound.
//!
//! Run: `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test -p uvfs --test loom_seqcount --release`
#![cfg(loom)]

mod rt {
    pub use loom::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
    pub use loom::sync::Arc;
    pub use loom::thread;
}
mod seqcount_model;

use seqcount_model::Validate;

#[test]
fn reader_never_accepts_a_torn_or_stale_identity() {
    loom::model(|| seqcount_model::one_rename_one_reader(Validate::ReadRetry));
}

#[test]
fn two_renames_two_readers_accept_only_validated_identities() {
    loom::model(seqcount_model::two_renames_two_readers);
}

#[test]
#[should_panic(expected = "torn or stale identity accepted")]
fn model_catches_a_reader_that_skips_read_retry() {
    loom::model(|| seqcount_model::one_rename_one_reader(Validate::Skip));
}
