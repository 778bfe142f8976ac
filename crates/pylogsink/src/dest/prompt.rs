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
//! how ([`set_asker`]: CPython's pending calls) and clears the request
//! when it runs ([`answered`]). One request is in flight at a time: the
//! lines after the first cost one load each until it is answered.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

/// How the Python edge asks; set once, at init.
static ASKER: OnceLock<fn()> = OnceLock::new();

/// A request is in flight: asked, not yet answered.
static ASKED: AtomicBool = AtomicBool::new(false);

/// Sets how to ask (the Python edge, at init).
pub(crate) fn set_asker(asker: fn()) {
    let _ = ASKER.set(asker);
}

/// Asks for what waits to be taken at the next safe point, unless a
/// request is in flight. Any thread, with or without the GIL; never blocks
/// for long.
#[inline]
pub(crate) fn ask() {
    if ASKED.load(Ordering::Acquire) || ASKED.swap(true, Ordering::AcqRel) {
        return;
    }
    match ASKER.get() {
        Some(asker) => asker(),
        None => answered(),
    }
}

/// The request was answered (it runs now), or could not be made: the
/// next line asks again.
#[inline]
pub(crate) fn answered() {
    ASKED.store(false, Ordering::Release);
}

/// Whether a request is in flight.
#[cfg(test)]
fn asked() -> bool {
    ASKED.load(Ordering::Acquire)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_request_per_burst_until_it_is_answered() {
        // No asker in unit tests: a request cannot be made, so none stays
        // in flight.
        ask();
        assert!(!asked());
        ASKED.store(true, Ordering::Release);
        ask();
        assert!(asked(), "a request in flight stays the only one");
        answered();
        assert!(!asked());
    }
}
