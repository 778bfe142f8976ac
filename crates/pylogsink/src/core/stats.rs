//! Counts that let a test check that nothing was lost.
//!
//! Every record that passes the filter is counted by level, on its own
//! thread, without a shared write; every line a full buffer leaves out is
//! counted as it leaves ([`dropped`]). The sum over live threads is made
//! by [`stats`](crate::stats).

use crate::dest::dropped;
use crate::record::Level;
use std::sync::atomic::{AtomicU64, Ordering};

/// Counts that let a test check that nothing was lost.
///
/// Shown in the [`stats`](crate::stats) example.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Records that passed the filter (records it drops are not counted:
    /// counting them would cost more than dropping them).
    pub emitted: u64,
    /// [`emitted`](Stats::emitted) by level, indexed by `Level as usize`
    /// (Trace first, Fatal last).
    pub by_level: [u64; 6],
    /// Lines and records left out of a full buffer, counted as they left
    /// it; a note stands in their place where the buffer is written.
    pub left_out: u64,
    /// Bytes dropped because fd 2 itself failed (closed, no reader).
    pub failed_bytes: u64,
    /// Times pylogsink's Python thread (the `logging` destination's)
    /// took the GIL: each takes it from the rest of the process, so it
    /// does only when something waits for Python.
    pub python_wakes: u64,
}

/// Records emitted, by level, by threads that have ended or that emitted
/// while their thread-local state was gone.
pub(crate) static EMITTED_ELSEWHERE: PerLevel = PerLevel::new();
/// Times pylogsink's Python thread took the GIL.
static PYTHON_WAKES: AtomicU64 = AtomicU64::new(0);

/// Counts one more time pylogsink's Python thread took the GIL.
pub(crate) fn count_python_wake() {
    PYTHON_WAKES.fetch_add(1, Ordering::Relaxed);
}

/// Times pylogsink's Python thread took the GIL so far.
pub(crate) fn python_wakes() -> u64 {
    PYTHON_WAKES.load(Ordering::Relaxed)
}

/// Lines and records left out so far.
pub(crate) fn left_out() -> u64 {
    dropped::total()
}

/// A count per level.
pub(crate) struct PerLevel([AtomicU64; 6]);

impl PerLevel {
    pub(crate) const fn new() -> PerLevel {
        PerLevel([const { AtomicU64::new(0) }; 6])
    }

    pub(crate) fn add(&self, level: Level, n: u64) {
        self.0[level as usize].fetch_add(n, Ordering::Relaxed);
    }

    pub(crate) fn get(&self) -> [u64; 6] {
        self.0.each_ref().map(|n| n.load(Ordering::Relaxed))
    }

    /// Counts one record of `level` where only one thread writes the
    /// counts (a thread's own): a load and a store will do.
    #[inline]
    pub(crate) fn add_one_unshared(&self, level: Level) {
        let n = &self.0[level as usize];
        n.store(n.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    }

    /// Takes every count out, leaving zeros.
    pub(crate) fn take(&self) -> [u64; 6] {
        self.0.each_ref().map(|n| n.swap(0, Ordering::Relaxed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_level_counts_add_and_take() {
        let counts = PerLevel::new();
        counts.add(Level::Warn, 2);
        counts.add_one_unshared(Level::Warn);
        counts.add_one_unshared(Level::Trace);
        assert_eq!(counts.get(), [1, 0, 0, 3, 0, 0]);
        assert_eq!(counts.take(), [1, 0, 0, 3, 0, 0]);
        assert_eq!(counts.get(), [0; 6]);
    }
}
