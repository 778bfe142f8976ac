//! Where records end up: text on fd 2, or Python's `logging`.
//!
//! Python libraries are expected to log through `logging`, so that the
//! application decides with handlers, levels, formatters, pytest's
//! `caplog` and `--log-level`. Handing a record to `logging` runs Python
//! code, so it can only happen where the thread holds the GIL and no
//! native lock: the return of the outermost call, or a Python thread of
//! pylogsink's own for records logged outside any call. Until then the record waits, structured, in the
//! same places text lines wait.

use std::sync::atomic::{AtomicBool, Ordering};

/// Where records go.
///
/// ```
/// use pylogsink::Destination;
///
/// assert_eq!(Destination::default(), Destination::Stderr);
/// assert_eq!(Destination::parse("logging"), Some(Destination::Logging));
/// assert_eq!(Destination::Logging.name(), "logging");
/// assert_eq!(Destination::parse("syslog"), None);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Destination {
    /// Text records on fd 2, or through a replaced `sys.stderr`, by the
    /// routing rules.
    #[default]
    Stderr,
    /// `logging.LogRecord`s handed to `logging.getLogger(target).handle`.
    /// Fatal lines still go to fd 2 as text.
    Logging,
}

impl Destination {
    /// Parses `"stderr"` or `"logging"`.
    ///
    /// Shown in the [`Destination`] example.
    pub fn parse(name: &str) -> Option<Destination> {
        match name {
            "stderr" => Some(Destination::Stderr),
            "logging" => Some(Destination::Logging),
            _ => None,
        }
    }

    /// The name [`parse`](Destination::parse) reads.
    ///
    /// Shown in the [`Destination`] example.
    pub fn name(self) -> &'static str {
        match self {
            Destination::Stderr => "stderr",
            Destination::Logging => "logging",
        }
    }
}

static LOGGING: AtomicBool = AtomicBool::new(false);

/// Records where records go. It takes effect at
/// [`changed`](super::changed).
pub(crate) fn store(destination: Destination) {
    LOGGING.store(destination == Destination::Logging, Ordering::Relaxed);
}

/// Where records go now.
///
/// Shown in the [`set_destination`](crate::set_destination) example.
pub fn destination() -> Destination {
    if to_logging() {
        Destination::Logging
    } else {
        Destination::Stderr
    }
}

/// Whether records go to `logging`: one load.
#[inline]
pub(crate) fn to_logging() -> bool {
    LOGGING.load(Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for d in [Destination::Stderr, Destination::Logging] {
            assert_eq!(Destination::parse(d.name()), Some(d));
        }
        assert_eq!(Destination::parse("syslog"), None);
        assert_eq!(Destination::parse("Logging"), None);
    }
}
