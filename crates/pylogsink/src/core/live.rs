//! Live delivery: what a call in progress keeps for Python (its records
//! for `logging`, its lines for a replaced `sys.stderr`), handed over
//! before the call returns.
//!
//! A call that releases the GIL and logs for minutes (a training loop, a
//! load) would otherwise show nothing until it returns, then everything at
//! once: in a notebook, no progress at all. pylogsink's delivery thread
//! (`call::live`) takes what waits in calls in progress and hands it over
//! while the calls run. Three rules keep that safe and in order:
//!
//! - The delivery thread takes with the GIL held. A call's thread holds the
//!   GIL from the moment its call ends until its return has delivered, so
//!   no call is taken from once its return began, and the GIL orders the
//!   mark below between the two threads.
//! - A call whose records were taken is marked ([`Shared::live`]) until
//!   they are handed over; its return waits for the mark to clear, with
//!   the GIL released, before it delivers the rest.
//! - At most [`BATCH`] records are taken from a call at a time, so that
//!   the wait stays short even with a slow handler; the wait is bounded
//!   all the same ([`WAIT_AT_RETURN`]), for a handler that blocks on what
//!   the returning thread holds.

use super::registry::live_threads;
use super::shared::Shared;
use crate::dest::pending::Batch;
use crate::dest::{Sink, Taken};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The most records taken from one call at a time.
pub(crate) const BATCH: usize = 100;

/// The longest a call's return waits for the records the delivery thread
/// took from it.
pub(crate) const WAIT_AT_RETURN: Duration = Duration::from_secs(1);

/// What was taken from a call in progress.
pub(crate) struct LiveBatch {
    /// The state of the thread whose call it is.
    pub(crate) shared: Arc<Shared>,
    /// Which of that thread's calls.
    pub(crate) call: u64,
    /// Its lines for a replaced `sys.stderr`, with the note for any left
    /// out before (empty if none).
    pub(crate) lines: Taken,
    /// Its records, oldest first, with the note for any left out before.
    pub(crate) batch: Batch,
}

/// Whether `shared`'s call is in progress with something to hand over.
fn has_some(shared: &Shared) -> bool {
    shared.call.load(Ordering::Acquire) != 0
        && (shared.pending_any.load(Ordering::Relaxed) || lines_waiting(shared))
}

/// Whether lines for a replaced `sys.stderr` wait in `shared`'s call.
fn lines_waiting(shared: &Shared) -> bool {
    shared.sink() == Sink::Replaced && shared.kept_any.load(Ordering::Relaxed)
}

/// The calls in progress: each thread's state with its call's number.
pub(crate) fn calls_in_progress() -> Vec<(Arc<Shared>, u64)> {
    live_threads()
        .into_iter()
        .filter_map(|shared| {
            let call = shared.call.load(Ordering::Acquire);
            (call != 0).then_some((shared, call))
        })
        .collect()
}

/// Whether one of the calls `before` ([`calls_in_progress`]) is still in
/// progress and has something waiting: a long call, whose lines should
/// not wait for its return. A call that returned meanwhile handed over
/// its own.
pub(crate) fn still_waiting(before: &[(Arc<Shared>, u64)]) -> bool {
    before
        .iter()
        .any(|(shared, call)| shared.call.load(Ordering::Acquire) == *call && has_some(shared))
}

/// Takes from each call in progress the lines it keeps for a replaced
/// `sys.stderr` and up to [`BATCH`] of its records, and marks the call
/// until [`handed_over`].
///
/// For implementors: the caller holds the GIL (see the module doc).
pub(crate) fn take_from_calls() -> Vec<LiveBatch> {
    let mut taken = Vec::new();
    for shared in live_threads() {
        if !has_some(&shared) {
            continue;
        }
        let Some((call, lines, batch)) = take_from(&shared) else {
            continue;
        };
        if lines.text.is_empty() && batch.is_empty() {
            continue;
        }
        shared.live.store(true, Ordering::Release);
        taken.push(LiveBatch {
            shared,
            call,
            lines,
            batch,
        });
    }
    taken
}

/// Takes what waits in `shared`'s call, if it is in progress.
fn take_from(shared: &Shared) -> Option<(u64, Taken, Batch)> {
    // The order of the locks is the one `Shared::end` takes them in.
    let mut kept = shared.kept.lock().ok()?;
    let mut pending = shared.pending.lock().ok()?;
    let call = shared.call.load(Ordering::Acquire);
    if call == 0 {
        return None;
    }
    let lines = if lines_waiting(shared) {
        shared.kept_any.store(false, Ordering::Relaxed);
        kept.take()
    } else {
        Taken::default()
    };
    let batch = pending.take_oldest(BATCH);
    if pending.is_empty() {
        shared.pending_any.store(false, Ordering::Relaxed);
    }
    Some((call, lines, batch))
}

/// The records taken from `shared`'s call were handed over.
pub(crate) fn handed_over(shared: &Shared) {
    shared.live.store(false, Ordering::Release);
}

/// At a call's return: waits, at most [`WAIT_AT_RETURN`], until the records
/// the delivery thread took from it were handed over. The caller has
/// released the GIL. True if they were.
pub(crate) fn wait_handed_over(shared: &Shared) -> bool {
    let deadline = Instant::now() + WAIT_AT_RETURN;
    while shared.live.load(Ordering::Acquire) {
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::testing::pending_records as records;
    use crate::core::thread::THREAD;

    #[test]
    fn takes_from_a_call_in_progress_oldest_first_and_marks_it() {
        let shared = THREAD.with(|t| {
            t.enter(|| true, || -1);
            Arc::clone(&t.shared)
        });
        for record in records(BATCH + 5) {
            shared.keep_pending(record, None);
        }
        let ours = |all: Vec<LiveBatch>| all.into_iter().find(|b| Arc::ptr_eq(&b.shared, &shared));
        let first = ours(take_from_calls()).expect("the call's records");
        assert_eq!(first.batch.records.len(), BATCH);
        assert!(shared.live.load(Ordering::Relaxed));
        assert!(
            shared.pending_any.load(Ordering::Relaxed),
            "five still wait"
        );
        handed_over(&shared);
        assert!(wait_handed_over(&shared));
        let second = ours(take_from_calls()).expect("the rest");
        assert_eq!(second.batch.records.len(), 5);
        assert_eq!(
            second.batch.records[0].message,
            records(BATCH + 5)[BATCH].message
        );
        handed_over(&shared);
        THREAD.with(|t| t.leave());
        assert!(ours(take_from_calls()).is_none());
    }

    #[test]
    fn nothing_is_taken_from_a_call_that_ended() {
        let shared = THREAD.with(|t| {
            t.enter(|| true, || -1);
            Arc::clone(&t.shared)
        });
        for record in records(3) {
            shared.keep_pending(record, None);
        }
        THREAD.with(|t| t.leave());
        let taken = take_from_calls();
        assert!(taken.iter().all(|b| !Arc::ptr_eq(&b.shared, &shared)));
        assert!(!shared.live.load(Ordering::Relaxed));
        assert_eq!(THREAD.with(|t| t.take_pending()).records.len(), 3);
    }
}
