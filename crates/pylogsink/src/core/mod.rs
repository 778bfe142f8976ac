//! The core: each thread's state, the log function's path, and what waits.
//!
//! A record that passed the filter comes in through [`emit`]: its thread's
//! state ([`thread`]) says which call it joins, [`route`](crate::dest::route)
//! says where it goes, and it is written to fd 2, kept in the call's
//! [`shared`] state, or queued ([`queue`], or the records' queue for
//! `logging`). The [`registry`] of every thread's shared state lets the
//! exit flush and the [`crash`] handler find what still waits. Python is
//! not known here: the Python edge (`call`) reads and writes this state
//! with the GIL held.

#[cfg(unix)]
pub(crate) mod capture;
#[cfg(windows)]
#[path = "capture/windows.rs"]
pub(crate) mod capture;
pub(crate) mod crash;
pub(crate) mod emit;
pub(crate) mod errors;
pub(crate) mod fork;
pub(crate) mod live;
pub(crate) mod queue;
pub(crate) mod registry;
pub(crate) mod shared;
pub(crate) mod stats;
#[cfg(test)]
pub(crate) mod testing;
pub(crate) mod thread;
pub(crate) mod worker;

pub use errors::ERRORS_CAP;
pub use stats::Stats;
pub use thread::error_message;
pub use worker::{detach_thread, Call, CallHandle};

use crate::dest::fd;

/// The counts since the process started.
///
/// ```
/// use pylogsink::Level;
///
/// let before = pylogsink::stats();
/// pylogsink::emit(Level::Error, "my_runtime", file!(), line!(), b"counted");
/// let after = pylogsink::stats();
/// assert_eq!(after.emitted, before.emitted + 1);
/// assert_eq!(after.by_level[Level::Error as usize], before.by_level[Level::Error as usize] + 1);
/// ```
pub fn stats() -> Stats {
    let by_level = registry::emitted();
    Stats {
        emitted: by_level.iter().sum(),
        by_level,
        left_out: stats::left_out(),
        failed_bytes: fd::failed_bytes(),
        python_wakes: stats::python_wakes(),
    }
}
