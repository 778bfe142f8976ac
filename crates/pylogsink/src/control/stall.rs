//! The stall wait: how long a line waits for room on fd 2.
//!
//! fd 2 may be a pipe that a Python thread drains, or a terminal nobody
//! reads. The log function never waits longer than this for room; a line
//! that finds none is kept (in a call) or queued (outside any call), and
//! later lines check again without waiting.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// The stall wait in microseconds: set by [`set_stall_wait`], read by every
/// write that may find no room.
static STALL_WAIT_MICROS: AtomicU64 = AtomicU64::new(100_000);

/// How long a line waits for room on fd 2 before it is kept or queued.
///
/// Shown in the [`set_stall_wait`] example.
pub fn stall_wait() -> Duration {
    Duration::from_micros(STALL_WAIT_MICROS.load(Ordering::Relaxed))
}

/// Sets the stall wait (100 ms unless changed).
///
/// ```
/// use std::time::Duration;
///
/// pylogsink::set_stall_wait(Duration::from_millis(20));
/// assert_eq!(pylogsink::stall_wait(), Duration::from_millis(20));
/// ```
pub fn set_stall_wait(wait: Duration) {
    let micros = u64::try_from(wait.as_micros()).unwrap_or(u64::MAX);
    STALL_WAIT_MICROS.store(micros, Ordering::Relaxed);
}

/// How long the exit flush waits for room on fd 2: ten stall waits, at
/// least one second. The process is ending, so nothing else waits on it,
/// but a reader that never comes back must not hold the exit for good.
pub(crate) fn exit_wait() -> Duration {
    (stall_wait() * 10).max(Duration::from_secs(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stall_wait_round_trips() {
        let _serial = crate::record::serial();
        let before = stall_wait();
        set_stall_wait(Duration::from_millis(7));
        assert_eq!(stall_wait(), Duration::from_millis(7));
        assert_eq!(exit_wait(), Duration::from_secs(1));
        set_stall_wait(Duration::from_millis(300));
        assert_eq!(exit_wait(), Duration::from_secs(3));
        set_stall_wait(before);
    }
}
