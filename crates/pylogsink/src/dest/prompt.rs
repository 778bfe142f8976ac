//! Asking the thread that holds the GIL to take what waits for Python at
//! its next safe point.
//!
//! Why: a line logged outside any call (a native thread nobody attached,
//! a C library's callback) can reach a replaced `sys.stderr` or `logging`
//! only through Python. pylogsink's own Python thread takes it some
//! milliseconds later, but a Python thread writing the same line would
//! have written it at once: after `thread.join()`, or when a C library's
//! call raised, the line is there. So the first line (or record) of a
//! burst asks Python, without the GIL and without blocking, to take what
//! waits at the next point where that is safe; the Python edge registers
//! how ([`set_asker`]: CPython's pending calls) and says when the answer
//! runs ([`answering`], [`answer_ends`]). One request is in flight at a
//! time: the lines after the first cost one load each until it is
//! answered.
//!
//! The answer runs on the main thread, in the middle of whatever it does.
//! A burst that ended (a thread joined) is handed over whole; but native
//! threads that log without pause while the main thread runs Python would
//! have it hand over all the time. So while lines keep arriving, answers
//! follow each other for at most [`SHARE`], and then none is asked for as
//! long again ([`next`]): the main thread spends at most about half its
//! time there, as with a Python thread that logs as much, and pylogsink's
//! own thread, woken with the first line, delivers meanwhile.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// How long answers may follow each other while lines keep arriving:
/// CPython's switch interval, for which a Python thread may hold the GIL.
pub(crate) const SHARE: Duration = Duration::from_millis(5);

/// How the Python edge asks; set once, at init.
static ASKER: OnceLock<fn()> = OnceLock::new();

/// A request is in flight: asked, not yet answered.
static ASKED: AtomicBool = AtomicBool::new(false);

/// An answer is running.
static ANSWERING: AtomicBool = AtomicBool::new(false);

/// A line arrived since the answer began.
static ARRIVED: AtomicBool = AtomicBool::new(false);

/// When the answers that follow each other began ([`now`]); 0: none.
static CHAIN_SINCE: AtomicU64 = AtomicU64::new(0);

/// No request is made before this ([`now`]).
static QUIET_UNTIL: AtomicU64 = AtomicU64::new(0);

/// Sets how to ask (the Python edge, at init).
pub(crate) fn set_asker(asker: fn()) {
    let _ = ASKER.set(asker);
}

/// Asks for what waits to be taken at the next safe point, unless a
/// request is in flight. Any thread, with or without the GIL; never blocks
/// for long.
#[inline]
pub(crate) fn ask() {
    if ASKED.load(SeqCst) || ASKED.swap(true, SeqCst) {
        return;
    }
    ARRIVED.store(true, SeqCst);
    if ANSWERING.load(SeqCst) {
        // The answer under way asks again as it ends.
        return;
    }
    if now() < QUIET_UNTIL.load(SeqCst) {
        return answered();
    }
    match ASKER.get() {
        Some(asker) => asker(),
        None => answered(),
    }
}

/// The request could not be made (or, in a forked child, was the
/// parent's): the next line asks again.
#[inline]
pub(crate) fn answered() {
    ASKED.store(false, SeqCst);
}

/// The answer runs now: lines that arrive from here on are for the next.
pub(crate) fn answering() {
    ANSWERING.store(true, SeqCst);
    ARRIVED.store(false, SeqCst);
    ASKED.store(false, SeqCst);
    let _ = CHAIN_SINCE.compare_exchange(0, now().max(1), SeqCst, SeqCst);
}

/// The answer ended: asks again for what arrived meanwhile, or, past the
/// share, leaves it to pylogsink's thread for as long.
pub(crate) fn answer_ends() {
    ANSWERING.store(false, SeqCst);
    let arrived = ARRIVED.swap(false, SeqCst);
    match next(CHAIN_SINCE.load(SeqCst), now(), arrived) {
        Next::Done => CHAIN_SINCE.store(0, SeqCst),
        Next::AskAgain => {
            answered();
            ask();
        }
        Next::Quiet(until) => {
            CHAIN_SINCE.store(0, SeqCst);
            QUIET_UNTIL.store(until, SeqCst);
            answered();
        }
    }
}

/// What follows an answer.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Next {
    /// Nothing arrived meanwhile.
    Done,
    /// Lines arrived, within the share: another answer.
    AskAgain,
    /// Lines arrived past the share: no request until then.
    Quiet(u64),
}

/// [`Next`] for an answer that ends at `now`, in a row of answers that
/// began at `chain_since` (nanoseconds), lines having `arrived` or not.
pub(crate) fn next(chain_since: u64, now: u64, arrived: bool) -> Next {
    let spent = now.saturating_sub(chain_since);
    if !arrived {
        Next::Done
    } else if spent < SHARE.as_nanos() as u64 {
        Next::AskAgain
    } else {
        Next::Quiet(now + spent)
    }
}

/// Nanoseconds since the first time this was asked: a monotonic clock.
fn now() -> u64 {
    static START: OnceLock<Instant> = OnceLock::new();
    let since = START.get_or_init(Instant::now).elapsed();
    u64::try_from(since.as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn an_answer_with_nothing_arrived_ends_the_row() {
        assert_eq!(next(1, 100 * MS, false), Next::Done);
    }

    #[test]
    fn lines_that_arrived_within_the_share_get_another_answer() {
        assert_eq!(next(10 * MS, 10 * MS + 100, true), Next::AskAgain);
        assert_eq!(next(10 * MS, 14 * MS, true), Next::AskAgain);
    }

    #[test]
    fn past_the_share_none_is_asked_for_as_long_again() {
        assert_eq!(next(10 * MS, 15 * MS, true), Next::Quiet(20 * MS));
        assert_eq!(next(10 * MS, 1010 * MS, true), Next::Quiet(2010 * MS));
    }

    #[test]
    fn one_request_per_burst_until_it_is_answered() {
        // No asker in unit tests: a request cannot be made, so none stays
        // in flight.
        ask();
        assert!(!ASKED.load(SeqCst));
        ASKED.store(true, SeqCst);
        ask();
        assert!(ASKED.load(SeqCst), "a request in flight stays the only one");
        answered();
        assert!(!ASKED.load(SeqCst));
    }
}
