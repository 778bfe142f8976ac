//! Where records end up: text on fd 2, or Python's `logging`.
//!
//! Python libraries are expected to log through `logging`, so that the
//! application decides with handlers, levels, formatters, pytest's
//! `caplog` and `--log-level`. Handing a record to `logging` runs Python
//! code, so it can only happen where the thread holds the GIL and no
//! native lock: the return of the outermost call, or a Python thread of
//! pylogsink's own for records logged outside any call. Until then the
//! record waits, structured, in the same places text lines wait.
//!
//! [`of_record`] is the one place that decides where a record goes; the
//! front ends' path (`core::emit`) and [`enabled`](crate::enabled) ask it.
//! A new destination starts here, with a variant of [`Destination`].

use crate::record::Level;
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

/// The destination in force: set by [`store`] (from `set_destination` and
/// the builder, which then call `changed`), read on every record.
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

/// Whether the `logging` destination is in force: one load.
#[inline]
pub(crate) fn to_logging() -> bool {
    LOGGING.load(Ordering::Relaxed)
}

/// Where a record of `level` goes now: the one place that decides it.
/// Fatal lines go to fd 2 as text whatever the destination, so that the
/// lines that explain a crash never wait for Python.
#[inline(always)]
pub(crate) fn of_record(level: Level) -> Destination {
    of_level(level, destination())
}

/// [`of_record`], the destination in force being `chosen`.
#[inline(always)]
fn of_level(level: Level, chosen: Destination) -> Destination {
    if level == Level::Fatal {
        Destination::Stderr
    } else {
        chosen
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_record_goes_where_chosen_but_fatal_lines_go_to_fd_2() {
        for chosen in [Destination::Stderr, Destination::Logging] {
            for level in [Level::Trace, Level::Info, Level::Warn, Level::Error] {
                assert_eq!(of_level(level, chosen), chosen);
            }
            assert_eq!(of_level(Level::Fatal, chosen), Destination::Stderr);
        }
    }

    #[test]
    fn names_round_trip() {
        for d in [Destination::Stderr, Destination::Logging] {
            assert_eq!(Destination::parse(d.name()), Some(d));
        }
        assert_eq!(Destination::parse("syslog"), None);
        assert_eq!(Destination::parse("Logging"), None);
    }
}
