//! Copies as threads of this process: the host's threads mode, and both uvfs modes (uvfs runs
//! in process; its "processes" are tasks with a table each, run on threads).

use std::time::{Duration, Instant};

use anyhow::{anyhow, bail};

use super::board::Board;

/// Runs `body(copy, item)` on one thread per item of `per_copy`, all at once: waits until every
/// copy is set up (at the board's gate), starts them together and joins them. Returns the time
/// from the start until the last thread was joined.
///
/// # Errors
/// The copies did not all reach the gate, or one panicked.
pub fn run_threads<T: Send>(
    board: &Board,
    per_copy: Vec<T>,
    body: impl Fn(usize, T) + Sync,
) -> anyhow::Result<Duration> {
    let copies = per_copy.len();
    let body = &body;
    std::thread::scope(|s| {
        let handles: Vec<_> = per_copy
            .into_iter()
            .enumerate()
            .map(|(copy, item)| s.spawn(move || body(copy, item)))
            .collect();
        let ready = board.wait_ready(copies);
        let start = Instant::now();
        if ready {
            board.start();
        } else {
            board.abort();
        }
        let mut panicked = 0;
        for h in handles {
            if h.join().is_err() {
                panicked += 1;
            }
        }
        let elapsed = start.elapsed();
        if panicked > 0 {
            return Err(anyhow!("{panicked} copies panicked"));
        }
        if !ready {
            bail!("the copies did not all reach the start");
        }
        Ok(elapsed)
    })
}
