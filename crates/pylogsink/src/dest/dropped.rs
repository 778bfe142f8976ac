//! Lines and records left out of a full buffer, counted the moment they
//! leave it.
//!
//! A note in their place says how many were left out, but it is written
//! only when the buffer is: later, or, for fd 2 that takes nothing, not for
//! a long time. The count in `stats()["left_out"]` must tell a user that
//! lines are going now, so it grows here, where they go, not where the
//! note is written.

use std::sync::atomic::{AtomicU64, Ordering};

/// Lines dropped so far, process-wide: added to by whoever drops one, read
/// for the stats.
static DROPPED: AtomicU64 = AtomicU64::new(0);

/// Counts `n` lines or records that just left a full buffer. An atomic
/// add: signal-safe.
#[inline]
pub(crate) fn count(n: u64) {
    if n > 0 {
        DROPPED.fetch_add(n, Ordering::Relaxed);
    }
}

/// Lines and records left out so far, in all buffers.
pub(crate) fn total() -> u64 {
    DROPPED.load(Ordering::Relaxed)
}
