//! Text on its way through a Python stream.
//!
//! A replaced `sys.stderr` (pytest's capture, a notebook, a program's own
//! stream) is written by Python code, which may take its time: a stream
//! that sends its text over the network, or waits on a lock. Lines taken
//! out of their buffer for such a write are in no buffer while it runs.
//! The process may end meanwhile: at exit, pylogsink's thread is given a
//! bounded time and then left behind, and a crash stops everything. So
//! each write registers a copy of its text here until it returns; the
//! exit writes what is still here to fd 2 ([`take_over`]), the crash
//! handler too ([`visit`]).

use crate::record::{lock, lock_at_crash, HeldForFork};
use std::sync::{Arc, Mutex};

/// One write's text; `None` once the write returned or the exit took the
/// text over.
type Flight = Mutex<Option<Vec<u8>>>;

/// Every write through Python under way: registered by the writer, taken
/// over by the exit.
static FLIGHTS: Mutex<Vec<Arc<Flight>>> = Mutex::new(Vec::new());

/// A write in flight until [`InFlight::landed`] or drop.
pub(crate) struct InFlight(Arc<Flight>);

/// Registers a copy of `text` for the time its write runs.
pub(crate) fn start(text: &[u8]) -> InFlight {
    let flight = Arc::new(Mutex::new(Some(text.to_vec())));
    lock(&FLIGHTS).push(Arc::clone(&flight));
    InFlight(flight)
}

impl InFlight {
    /// The write returned: its text reached the stream (or the stream
    /// refused it, and the writer handles that).
    pub(crate) fn landed(self) {}
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let text = lock(&self.0).take();
        let mut flights = lock(&FLIGHTS);
        let ours = flights.iter().position(|f| Arc::ptr_eq(f, &self.0));
        let _ours = ours.map(|i| flights.swap_remove(i));
        drop(flights);
        drop(text);
    }
}

/// Takes the text of every write still in flight, for the exit to write
/// to fd 2: a write that returns later finds nothing left to take.
pub(crate) fn take_over() -> Vec<Vec<u8>> {
    let flights = lock(&FLIGHTS);
    flights.iter().filter_map(|f| lock(f).take()).collect()
}

/// Hands the text of each write in flight to `f`, from a signal handler
/// (see [`lock_at_crash`]): nothing is allocated or freed. With `forget`
/// (a process that may live on), each text is let go of (leaked: freeing
/// is not async-signal-safe), so that it is not written twice. Returns how
/// many locks stayed held.
pub(crate) fn visit(f: &mut dyn FnMut(&[u8]), forget: bool) -> usize {
    let Some(flights) = lock_at_crash(&FLIGHTS) else {
        return 1;
    };
    let mut busy = 0;
    for flight in flights.iter() {
        match lock_at_crash(flight) {
            Some(mut text) => {
                text.as_deref().into_iter().for_each(&mut *f);
                if forget {
                    std::mem::forget(text.take());
                }
            }
            None => busy += 1,
        }
    }
    busy
}

/// The lock, held across a fork. The child has no write under way: what
/// was in flight is the parent's.
pub(crate) fn hold_for_fork() -> HeldForFork {
    crate::record::lock::hold_for_fork_leaving_in_child(&FLIGHTS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_that_returns_leaves_nothing_and_one_in_flight_is_taken_over_once() {
        let _serial = crate::record::serial();
        start(b"landed\n").landed();
        let stuck = start(b"stuck\n");
        let mut seen = Vec::new();
        visit(&mut |text| seen.push(text.to_vec()), false);
        assert_eq!(seen, [b"stuck\n".to_vec()]);
        assert_eq!(take_over(), [b"stuck\n".to_vec()]);
        assert!(take_over().is_empty());
        drop(stuck);
        assert!(lock(&FLIGHTS).is_empty());
    }
}
