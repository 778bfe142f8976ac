//! Control: what is logged, and where it goes.
//!
//! The settings live here, each in its own file: the filter's directives
//! (the builder's default and the users' choice), the destination, Python's
//! logger levels as the native side sees them, and the stall wait. Others
//! cache what follows from them: the `log` crate keeps a maximum level that
//! its macros compare against before calling pylogsink at all, and
//! `tracing` keeps an interest per call site. So every setter here ends in
//! [`changed`], the one place that recomputes what is cached, and no
//! setting can leave another's cache stale, whatever order they come in.
//! Nothing here calls up into the layers that use the settings.

pub(crate) mod destination;
pub(crate) mod filter;
pub(crate) mod pylevels;
pub(crate) mod stall;

pub use destination::{destination, Destination};
pub use filter::{filter, FilterError, DEFAULT_FILTER};
pub use stall::{set_stall_wait, stall_wait};

pub(crate) use destination::{of_record, to_logging};

use crate::record::Level;
use log::LevelFilter;
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether a record of `level` from `target` would be logged: the
/// directives let it through and, with the `logging` destination, some
/// Python logger may take it. Fatal lines always are. A level compare, and
/// the target's directives: for code that formats its messages itself (a
/// C library's `printf`-style callback), so that it formats only what is
/// logged.
///
/// ```
/// use pylogsink::Level;
/// assert!(pylogsink::enabled(Level::Fatal, "any::target"));
/// ```
#[inline]
pub fn enabled(level: Level, target: &str) -> bool {
    filter::enabled(level, target)
        && (of_record(level) == Destination::Stderr || pylevels::may_take(level, target))
}

/// Sets the filter at run time, from directives in env_logger's syntax
/// (`"warn,myruntime=debug,ureq::pool=off"`). They are the users' choice,
/// and stay in force whatever the destination.
///
/// A bad directive is an error that names it, and the filter in force
/// stays as it was.
///
/// ```
/// pylogsink::set_filter("info,ureq=warn").unwrap();
/// assert_eq!(pylogsink::filter(), "info,ureq=warn");
///
/// let err = pylogsink::set_filter("info,ureq=loud").unwrap_err();
/// assert_eq!(err.directive(), "ureq=loud");
/// assert_eq!(pylogsink::filter(), "info,ureq=warn");
/// ```
pub fn set_filter(spec: &str) -> Result<(), FilterError> {
    filter::set_users(Some(filter::parse_strict(spec)?));
    changed();
    Ok(())
}

/// Gives up the users' directives: the filter goes back to what the
/// extension's author chose, the builder's default filter with
/// [`Destination::Stderr`] and Python's logger levels with
/// [`Destination::Logging`].
///
/// ```
/// pylogsink::set_filter("debug").unwrap();
/// pylogsink::reset_filter();
/// assert_eq!(pylogsink::filter(), "warn"); // the builder's default
/// ```
pub fn reset_filter() {
    filter::set_users(None);
    changed();
}

/// Sets where records go from now on. Records already waiting go where
/// they were meant to go.
///
/// With [`Destination::Logging`], the filter in force is the one the
/// users set (the environment variable or `set_filter`); the builder's
/// default filter applies to [`Destination::Stderr`] only, so that Python's
/// logger levels decide.
///
/// ```
/// use pylogsink::Destination;
///
/// pylogsink::set_destination(Destination::Logging);
/// assert_eq!(pylogsink::destination(), Destination::Logging);
/// pylogsink::set_destination(Destination::Stderr);
/// ```
pub fn set_destination(destination: Destination) {
    destination::store(destination);
    changed();
}

/// Python's logging configuration changed (`logging` told us, with the
/// GIL held): its levels are forgotten until read again.
pub(crate) fn python_levels_changed() {
    pylevels::forget();
    changed();
}

/// Python's levels were read in `epoch`: the lowest level set on any
/// logger and `logging.disable`'s give `floor`.
pub(crate) fn python_levels_read(floor: i32, epoch: u64) {
    if pylevels::reset(floor, epoch) {
        changed();
    }
}

/// Set by the builder once pylogsink is the `log` crate's logger: only then
/// is `log::max_level` ours to set.
static OWNS_LOG_MAX_LEVEL: AtomicBool = AtomicBool::new(false);

/// pylogsink is the `log` crate's logger: from now on [`changed`] sets
/// `log::max_level`.
pub(crate) fn own_log_max_level() {
    OWNS_LOG_MAX_LEVEL.store(true, Ordering::Release);
}

/// The most verbose level that can be logged now: what the directives let
/// through and, with the `logging` destination, what some Python logger
/// may take.
pub(crate) fn max_level() -> LevelFilter {
    max_level_of(filter::max_level(), to_logging(), pylevels::floor())
}

/// [`max_level`] from the directives' most verbose level, the destination
/// and Python's floor (no logger takes a level number below it).
pub(crate) fn max_level_of(directives: LevelFilter, to_logging: bool, floor: i32) -> LevelFilter {
    if !to_logging {
        return directives;
    }
    let python = LevelFilter::iter()
        .filter(|l| {
            l.to_level()
                .is_none_or(|l| Level::from(l).python_levelno() >= floor)
        })
        .last()
        .unwrap_or(LevelFilter::Off);
    directives.min(python)
}

/// A setting changed: puts the directives that the settings pick in force,
/// then recomputes what others cache: `log::max_level` (where pylogsink is
/// the logger) and tracing's interest in each call site.
pub(crate) fn changed() {
    filter::apply(to_logging());
    if OWNS_LOG_MAX_LEVEL.load(Ordering::Acquire) {
        log::set_max_level(max_level());
    }
    #[cfg(feature = "tracing")]
    tracing_core::callsite::rebuild_interest_cache();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_max_level_is_the_directives_and_pythons_floor() {
        use LevelFilter::*;
        for directives in [Off, Error, Warn, Info, Debug, Trace] {
            assert_eq!(max_level_of(directives, false, 50), directives);
        }
        assert_eq!(max_level_of(Trace, true, 0), Trace);
        assert_eq!(max_level_of(Trace, true, 5), Trace);
        assert_eq!(max_level_of(Trace, true, 6), Debug);
        assert_eq!(max_level_of(Trace, true, 20), Info);
        assert_eq!(max_level_of(Info, true, 10), Info);
        assert_eq!(max_level_of(Trace, true, 31), Error);
        assert_eq!(max_level_of(Trace, true, 41), Off);
    }

    /// Every order of the settings leaves the filter and `log::max_level`
    /// as the last settings say.
    #[test]
    fn settings_never_strand_each_other() {
        let _serial = crate::record::serial();
        #[derive(Clone, Copy, Debug)]
        enum Step {
            Users(&'static str),
            ToLogging,
            ToStderr,
            PythonFloor(i32),
        }
        let steps = [
            Step::Users("info"),
            Step::ToLogging,
            Step::ToStderr,
            Step::PythonFloor(30),
            Step::Users("debug"),
        ];
        own_log_max_level();
        let mut orders = 0;
        for order in permutations(&steps) {
            // The builder's default, and nothing else chosen.
            filter::set_default(filter::parse_strict("warn").unwrap());
            filter::set_users(None);
            destination::store(Destination::Stderr);
            python_levels_read(0, pylevels::epoch());
            changed();
            let (mut users, mut logging, mut floor) = (None, false, 0);
            for step in &order {
                match *step {
                    Step::Users(spec) => {
                        set_filter(spec).unwrap();
                        users = Some(spec);
                    }
                    Step::ToLogging => {
                        set_destination(Destination::Logging);
                        logging = true;
                    }
                    Step::ToStderr => {
                        set_destination(Destination::Stderr);
                        logging = false;
                    }
                    Step::PythonFloor(n) => {
                        python_levels_read(n, pylevels::epoch());
                        floor = n;
                    }
                }
            }
            let spec = filter::in_force(users, "warn", "trace", logging);
            let directives: LevelFilter = spec.parse().unwrap();
            let expected = max_level_of(directives, logging, floor);
            assert_eq!(filter(), spec, "{order:?}");
            assert_eq!(log::max_level(), expected, "{order:?}");
            for level in [Level::Debug, Level::Info, Level::Warn] {
                let python = !logging || level.python_levelno() >= floor;
                assert_eq!(
                    enabled(level, "rt"),
                    level.to_log() <= directives && python,
                    "{order:?} {level}"
                );
            }
            orders += 1;
        }
        assert_eq!(orders, 120);
        filter::set_users(None);
        destination::store(Destination::Stderr);
        python_levels_read(0, pylevels::epoch());
        changed();
    }

    /// Every order of `steps`.
    fn permutations<T: Copy>(steps: &[T]) -> Vec<Vec<T>> {
        if steps.len() <= 1 {
            return vec![steps.to_vec()];
        }
        let mut all = Vec::new();
        for (i, &first) in steps.iter().enumerate() {
            let mut rest = steps.to_vec();
            rest.remove(i);
            for mut order in permutations(&rest) {
                order.insert(0, first);
                all.push(order);
            }
        }
        all
    }
}
