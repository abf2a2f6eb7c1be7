//! Randomised schedule testing, with shuttle, of the dcache hit validation protocol on the
//! real [`uvfs::sync::SeqCount`] (with the `shuttle` feature its atomics are shuttle's). The
//! model is in `seqcount_model/mod.rs`.
//!
//! What it shows: over a few thousand seeded random schedules (and as many PCT schedules,
//! which find any bug of depth 3 with known probability), no interleaving of a rename's write
//! section with a reader's validation lets the reader accept a torn or stale identity.
//! Shuttle runs every atomic as sequentially consistent, so this checks the protocol's logic
//! (odd/even counts, `expect_seq` recorded inside the write section, the final `read_retry`),
//! not its memory orderings: that is `loom_seqcount.rs`'s job. It reaches longer schedules
//! than loom's preemption bound allows. The last test shows the check can fail.
//!
//! Run: `cargo test -p uvfs --features shuttle --test shuttle_seqcount --release`
#![cfg(feature = "shuttle")]

mod rt {
    pub use shuttle::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
    pub use shuttle::sync::Arc;
    pub use shuttle::thread;
}
mod seqcount_model;

use seqcount_model::Validate;

/// Random schedules per test.
const SCHEDULES: usize = 4000;
/// PCT bug depth: the number of scheduling decisions a failure may need.
const PCT_DEPTH: usize = 3;
const SEED: u64 = 0x5eed_c0de;

#[test]
fn reader_never_accepts_a_torn_or_stale_identity() {
    shuttle::check_random_with_seed(
        || seqcount_model::one_rename_one_reader(Validate::ReadRetry),
        SEED,
        SCHEDULES,
    );
    shuttle::check_pct(
        || seqcount_model::one_rename_one_reader(Validate::ReadRetry),
        SCHEDULES,
        PCT_DEPTH,
    );
}

#[test]
fn two_renames_two_readers_accept_only_validated_identities() {
    shuttle::check_random_with_seed(seqcount_model::two_renames_two_readers, SEED, SCHEDULES);
    shuttle::check_pct(
        seqcount_model::two_renames_two_readers,
        SCHEDULES,
        PCT_DEPTH,
    );
}

#[test]
#[should_panic(expected = "torn or stale identity accepted")]
fn model_catches_a_reader_that_skips_read_retry() {
    shuttle::check_random_with_seed(
        || seqcount_model::one_rename_one_reader(Validate::Skip),
        SEED,
        SCHEDULES,
    );
}
