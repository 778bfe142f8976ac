//! Severity of a record.
//!
//! pylogsink needs its own level type because the `log` crate stops at
//! `Error`, while native runtimes also log `Fatal` lines right before they
//! abort, and those must be routed differently (see the routing table in the crate's documentation).

use std::fmt;

/// How severe a record is, from least to most.
///
/// ```
/// use pylogsink::Level;
///
/// assert!(Level::Fatal > Level::Error);
/// assert_eq!(Level::parse("WARNING"), Some(Level::Warn));
/// assert_eq!(Level::Info.name(), "INFO ");
/// assert_eq!(Level::Info.to_string(), "INFO");
/// assert_eq!(Level::Fatal.to_log(), log::Level::Error);
/// assert_eq!(Level::from(log::Level::Debug), Level::Debug);
/// assert_eq!(Level::ALL.len(), 6);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// The finest detail: every step, for whoever traces the native code.
    Trace,
    /// Detail for whoever debugs the native code.
    Debug,
    /// Normal progress.
    Info,
    /// Something unexpected that the code recovered from.
    Warn,
    /// An operation failed; these lines are also collected for the
    /// exception the call raises.
    Error,
    /// The process is about to abort: the line and everything kept before
    /// it go straight to fd 2.
    Fatal,
}

impl Level {
    /// The fixed-width name written in each record.
    ///
    /// Shown in the [`Level`] example.
    pub const fn name(self) -> &'static str {
        match self {
            Level::Trace => "TRACE",
            Level::Debug => "DEBUG",
            Level::Info => "INFO ",
            Level::Warn => "WARN ",
            Level::Error => "ERROR",
            Level::Fatal => "FATAL",
        }
    }

    /// Parses a level name, case-insensitively (`"warning"` is accepted too).
    ///
    /// Shown in the [`Level`] example.
    pub fn parse(name: &str) -> Option<Level> {
        match name.to_ascii_lowercase().as_str() {
            "trace" => Some(Level::Trace),
            "debug" => Some(Level::Debug),
            "info" => Some(Level::Info),
            "warn" | "warning" => Some(Level::Warn),
            "error" => Some(Level::Error),
            "fatal" | "critical" => Some(Level::Fatal),
            _ => None,
        }
    }
}

impl From<log::Level> for Level {
    fn from(level: log::Level) -> Level {
        match level {
            log::Level::Trace => Level::Trace,
            log::Level::Debug => Level::Debug,
            log::Level::Info => Level::Info,
            log::Level::Warn => Level::Warn,
            log::Level::Error => Level::Error,
        }
    }
}

impl Level {
    /// The `log` level this one is filtered as: Fatal counts as Error.
    ///
    /// Shown in the [`Level`] example.
    pub const fn to_log(self) -> log::Level {
        match self {
            Level::Trace => log::Level::Trace,
            Level::Debug => log::Level::Debug,
            Level::Info => log::Level::Info,
            Level::Warn => log::Level::Warn,
            Level::Error | Level::Fatal => log::Level::Error,
        }
    }

    /// Every level, from least to most severe.
    ///
    /// Shown in the [`Level`] example.
    pub const ALL: [Level; 6] = [
        Level::Trace,
        Level::Debug,
        Level::Info,
        Level::Warn,
        Level::Error,
        Level::Fatal,
    ];
}

impl Level {
    /// Python's number for the level (`logging.DEBUG` is 10); TRACE is 5,
    /// below DEBUG, and Fatal is `logging.CRITICAL`.
    pub(crate) const fn python_levelno(self) -> i32 {
        match self {
            Level::Trace => 5,
            Level::Debug => 10,
            Level::Info => 20,
            Level::Warn => 30,
            Level::Error => 40,
            Level::Fatal => 50,
        }
    }
}

#[cfg(feature = "tracing")]
impl From<&tracing_core::Level> for Level {
    fn from(level: &tracing_core::Level) -> Level {
        match *level {
            tracing_core::Level::TRACE => Level::Trace,
            tracing_core::Level::DEBUG => Level::Debug,
            tracing_core::Level::INFO => Level::Info,
            tracing_core::Level::WARN => Level::Warn,
            _ => Level::Error,
        }
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name().trim_end())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_have_one_width() {
        for level in Level::ALL {
            assert_eq!(level.name().len(), 5);
            assert_eq!(Level::parse(&level.to_string()), Some(level));
        }
    }

    #[test]
    fn parse_rejects_unknown_names() {
        assert_eq!(Level::parse("loud"), None);
        assert_eq!(Level::parse("WARNING"), Some(Level::Warn));
    }

    #[test]
    fn order_is_severity() {
        assert!(Level::Trace < Level::Debug && Level::Debug < Level::Info);
        assert!(Level::Error < Level::Fatal);
        assert!(Level::ALL.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn python_numbers_are_loggings() {
        let numbers: Vec<i32> = Level::ALL.into_iter().map(Level::python_levelno).collect();
        assert_eq!(numbers, [5, 10, 20, 30, 40, 50]);
    }

    #[cfg(feature = "tracing")]
    #[test]
    fn tracing_levels_map_one_to_one() {
        for (t, l) in [
            (tracing_core::Level::TRACE, Level::Trace),
            (tracing_core::Level::DEBUG, Level::Debug),
            (tracing_core::Level::INFO, Level::Info),
            (tracing_core::Level::WARN, Level::Warn),
            (tracing_core::Level::ERROR, Level::Error),
        ] {
            assert_eq!(Level::from(&t), l);
        }
    }

    #[test]
    fn trace_is_its_own_level() {
        assert_eq!(Level::from(log::Level::Trace), Level::Trace);
        assert_eq!(Level::Trace.name(), "TRACE");
        for level in log::Level::iter() {
            assert_eq!(Level::from(level).to_log(), level);
        }
    }
}
