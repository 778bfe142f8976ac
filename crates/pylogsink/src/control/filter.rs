//! The filter: which records are logged at all.
//!
//! What gets logged is the choice of the extension's users, as with
//! env_logger's `RUST_LOG`: they set directives in an environment variable
//! the extension names, or change them at run time from Python. The
//! directives are env_logger's own syntax, parsed and matched by the
//! `env_filter` crate that env_logger uses:
//!
//! - a bare level (`warn`) sets the level for every target;
//! - `target=level` sets it for a target and everything under it
//!   (`ureq=debug` covers `ureq::stream`); the longest matching target wins;
//! - a bare target (`ureq`) turns on everything under it;
//! - levels are `off`, `error`, `warn`, `info`, `debug` and `trace`, in any
//!   case.
//!
//! pylogsink filters by target and level only: env_logger's `/pattern`
//! message filter would mean formatting every record to match it, and is
//! refused.
//!
//! A record the filter drops costs one atomic load and a compare: the most
//! verbose level of any directive and whether any directive names a target
//! live in one byte. Only where a directive names a target, and the record
//! is verbose enough for some directive, are the directives themselves
//! consulted, through a copy that each thread keeps until the filter
//! changes, so no lock is taken there either.
//!
//! A [`Level::Fatal`](crate::Level::Fatal) line always passes: an abort
//! follows, and the line explains it.

use crate::record::{lock, HeldForFork, Level};
use log::LevelFilter;
use std::cell::RefCell;
use std::ffi::OsStr;
use std::fmt;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

/// The filter in force before anything else is set, and where the
/// builder's default is not changed.
///
/// ```
/// assert_eq!(pylogsink::DEFAULT_FILTER, "warn");
/// ```
pub const DEFAULT_FILTER: &str = "warn";

/// A filter that was refused: it names the directive at fault.
///
/// ```
/// let err = pylogsink::set_filter("info,ureq=loud").unwrap_err();
/// assert_eq!(err.directive(), "ureq=loud");
/// assert!(err.to_string().contains("ureq=loud"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilterError {
    spec: String,
    directive: String,
    reason: String,
}

impl FilterError {
    /// The directive that was refused, as it was written.
    ///
    /// Shown in the [`FilterError`] example.
    pub fn directive(&self) -> &str {
        &self.directive
    }
}

impl fmt::Display for FilterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.directive == self.spec {
            write!(f, "bad log filter {:?}: {}", self.spec, self.reason)
        } else {
            write!(
                f,
                "bad log filter directive {:?} in {:?}: {}",
                self.directive, self.spec, self.reason
            )
        }
    }
}

impl std::error::Error for FilterError {}

/// A directive that was refused, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Rejected {
    pub directive: String,
    pub reason: String,
}

/// A parsed filter.
#[derive(Debug)]
pub(crate) struct Directives {
    filter: env_filter::Filter,
    /// The directives in force, as written, joined with commas.
    spec: String,
    /// Whether some directive names a target, so that a record's target
    /// matters and not only its level.
    by_target: bool,
}

impl Directives {
    /// The directives, as written, joined with commas.
    pub(crate) fn spec(&self) -> &str {
        &self.spec
    }

    /// The most verbose level that any directive lets through.
    fn max(&self) -> LevelFilter {
        self.filter.filter()
    }

    fn enabled(&self, level: log::Level, target: &str) -> bool {
        let metadata = log::Metadata::builder().level(level).target(target).build();
        self.filter.enabled(&metadata)
    }
}

/// Parses `spec` directive by directive. Returns the valid directives, if
/// any, and those that were refused.
pub(crate) fn parse(spec: &str) -> (Option<Directives>, Vec<Rejected>) {
    let mut rejected = Vec::new();
    let (spec, pattern) = match spec.split_once('/') {
        Some((directives, pattern)) => (directives, Some(pattern)),
        None => (spec, None),
    };
    if let Some(pattern) = pattern {
        rejected.push(Rejected {
            directive: format!("/{pattern}"),
            reason: "message patterns are not supported; filter by target and level".into(),
        });
    }
    let mut builder = env_filter::Builder::new();
    let mut valid = Vec::new();
    let mut by_target = false;
    for directive in spec.split(',').map(str::trim).filter(|d| !d.is_empty()) {
        match builder.try_parse(directive) {
            Ok(_) => {
                by_target |= directive.parse::<LevelFilter>().is_err();
                valid.push(directive);
            }
            Err(err) => rejected.push(Rejected {
                directive: directive.to_owned(),
                reason: reason(&err),
            }),
        }
    }
    if valid.is_empty() {
        return (None, rejected);
    }
    let directives = Directives {
        filter: builder.build(),
        spec: valid.join(","),
        by_target,
    };
    (Some(directives), rejected)
}

/// `env_filter`'s message without its generic prefix.
fn reason(err: &env_filter::ParseError) -> String {
    let text = err.to_string();
    match text.strip_prefix("error parsing logger filter: ") {
        Some(rest) => rest.to_owned(),
        None => text,
    }
}

/// Parses a filter given through an API: every directive must be valid.
pub(crate) fn parse_strict(spec: &str) -> Result<Directives, FilterError> {
    let error = |directive: &str, reason: &str| FilterError {
        spec: spec.to_owned(),
        directive: directive.to_owned(),
        reason: reason.to_owned(),
    };
    match parse(spec) {
        (_, rejected) if !rejected.is_empty() => {
            let first = &rejected[0];
            Err(error(&first.directive, &first.reason))
        }
        (Some(directives), _) => Ok(directives),
        (None, _) => Err(error(
            spec,
            "no directive: give a level such as \"warn\", or \"off\"",
        )),
    }
}

/// The users' directives from the environment variable `var`, whose value
/// is `value`: `None` where it is unset, empty or entirely invalid, and
/// then `default_spec` stays in force. The second value is a warning to
/// log when some of it was ignored.
pub(crate) fn from_env(
    var: &str,
    value: Option<&OsStr>,
    default_spec: &str,
) -> (Option<Directives>, Option<String>) {
    let Some(value) = value else {
        return (None, None);
    };
    let Some(value) = value.to_str() else {
        let warning = format!(
            "{var} is not valid UTF-8 and was ignored; the filter in force is {default_spec:?}"
        );
        return (None, Some(warning));
    };
    if value.trim().is_empty() {
        return (None, None);
    }
    let (directives, rejected) = parse(value);
    let warning = (!rejected.is_empty()).then(|| {
        let ignored: Vec<String> = rejected
            .iter()
            .map(|r| format!("{:?} ({})", r.directive, r.reason))
            .collect();
        let in_force = directives.as_ref().map_or(default_spec, |d| &d.spec);
        format!(
            "{var}: ignored {}; the filter in force is {in_force:?}",
            ignored.join(", "),
        )
    });
    (directives, warning)
}

/// The quick check in one byte: the most verbose level let through (a
/// `LevelFilter` as a number, 0 for `Off` to 5 for `Trace`), plus
/// [`BY_TARGET`] when a directive names a target.
static QUICK: AtomicU8 = AtomicU8::new(LevelFilter::Warn as u8);
const BY_TARGET: u8 = 0x10;
const MAX_MASK: u8 = 0x0f;

/// The filter in force; `None` until one is set ([`DEFAULT_FILTER`]).
static CURRENT: Mutex<Option<Arc<Directives>>> = Mutex::new(None);
/// Changes whenever the filter does, so that threads know to refresh
/// their copy.
static GENERATION: AtomicU64 = AtomicU64::new(0);

thread_local! {
    static COPY: RefCell<Option<(u64, Arc<Directives>)>> = const { RefCell::new(None) };
}

/// Whether a record of `level` from `target` is logged.
#[inline]
pub(crate) fn enabled(level: Level, target: &str) -> bool {
    if level == Level::Fatal {
        return true;
    }
    let quick = QUICK.load(Ordering::Acquire);
    let level = level.to_log();
    if level as u8 > quick & MAX_MASK {
        return false;
    }
    quick & BY_TARGET == 0 || enabled_by_target(level, target)
}

/// The directives' own answer, through this thread's copy of them.
#[cold]
fn enabled_by_target(level: log::Level, target: &str) -> bool {
    let generation = GENERATION.load(Ordering::Acquire);
    let answer = COPY.try_with(|copy| {
        let mut copy = copy.try_borrow_mut().ok()?;
        if copy.as_ref().map(|(g, _)| *g) != Some(generation) {
            *copy = Some((generation, current()?));
        }
        copy.as_ref().map(|(_, d)| d.enabled(level, target))
    });
    match answer {
        Ok(Some(answer)) => answer,
        // Thread teardown, or a filter check from inside a filter check.
        _ => current().is_none_or(|d| d.enabled(level, target)),
    }
}

fn current() -> Option<Arc<Directives>> {
    lock(&CURRENT).clone()
}

/// The builder's default directives (`None`: [`DEFAULT_FILTER`]).
static DEFAULT: Mutex<Option<Arc<Directives>>> = Mutex::new(None);
/// The users' directives, once they set some.
static USERS: Mutex<Option<Arc<Directives>>> = Mutex::new(None);
/// "trace": in force for the `logging` destination where the users set
/// nothing, so that Python's logger levels decide.
static EVERYTHING: Mutex<Option<Arc<Directives>>> = Mutex::new(None);

/// Which of the directives chosen is in force: the users', wherever they
/// set some; else, with the `logging` destination, `everything`, so that
/// Python's logger levels decide; else the builder's default.
pub(crate) fn in_force<T>(users: Option<T>, default: T, everything: T, to_logging: bool) -> T {
    match (users, to_logging) {
        (Some(users), _) => users,
        (None, true) => everything,
        (None, false) => default,
    }
}

/// Sets the builder's default. It takes effect at [`apply`].
pub(crate) fn set_default(directives: Directives) {
    *lock(&DEFAULT) = Some(Arc::new(directives));
}

/// Sets the users' directives (`None`: they set none). It takes effect at
/// [`apply`].
pub(crate) fn set_users(directives: Option<Directives>) {
    *lock(&USERS) = directives.map(Arc::new);
}

/// Puts the directives that [`in_force`] picks in force, if they are not
/// already: each thread's copy is refreshed only when they change.
pub(crate) fn apply(to_logging: bool) {
    let parsed = |spec: &str| Arc::new(parse_strict(spec).expect("a valid filter"));
    let default = lock(&DEFAULT)
        .get_or_insert_with(|| parsed(DEFAULT_FILTER))
        .clone();
    let everything = lock(&EVERYTHING)
        .get_or_insert_with(|| parsed("trace"))
        .clone();
    let users = lock(&USERS).clone();
    let chosen = in_force(users, default, everything, to_logging);
    let mut current = lock(&CURRENT);
    if current.as_ref().is_some_and(|c| Arc::ptr_eq(c, &chosen)) {
        return;
    }
    let quick = chosen.max() as u8 | if chosen.by_target { BY_TARGET } else { 0 };
    *current = Some(chosen);
    GENERATION.fetch_add(1, Ordering::AcqRel);
    QUICK.store(quick, Ordering::Release);
}

/// The filter's locks, held across a fork.
pub(crate) fn hold_for_fork() -> Vec<HeldForFork> {
    [&CURRENT, &DEFAULT, &USERS, &EVERYTHING]
        .into_iter()
        .map(crate::record::hold_for_fork)
        .collect()
}

/// The most verbose level the directives in force let through.
pub(crate) fn max_level() -> LevelFilter {
    match QUICK.load(Ordering::Relaxed) & MAX_MASK {
        0 => LevelFilter::Off,
        1 => LevelFilter::Error,
        2 => LevelFilter::Warn,
        3 => LevelFilter::Info,
        4 => LevelFilter::Debug,
        _ => LevelFilter::Trace,
    }
}

/// The directives in force, joined with commas.
///
/// ```
/// pylogsink::set_filter("info, ureq=off").unwrap();
/// assert_eq!(pylogsink::filter(), "info,ureq=off");
/// ```
pub fn filter() -> String {
    match current() {
        Some(directives) => directives.spec.clone(),
        None => DEFAULT_FILTER.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strict(spec: &str) -> Directives {
        parse_strict(spec).unwrap_or_else(|e| panic!("{e}"))
    }

    fn logs(d: &Directives, level: log::Level, target: &str) -> bool {
        d.enabled(level, target)
    }

    #[test]
    fn a_bare_level_is_for_every_target() {
        let d = strict("warn");
        assert!(!d.by_target);
        assert_eq!(d.max(), LevelFilter::Warn);
        assert!(logs(&d, log::Level::Warn, "anything"));
        assert!(!logs(&d, log::Level::Info, "anything"));
    }

    #[test]
    fn the_longest_matching_target_wins() {
        let d = strict("warn,ureq=debug,ureq::pool=off");
        assert!(d.by_target);
        assert_eq!(d.max(), LevelFilter::Debug);
        assert!(logs(&d, log::Level::Debug, "ureq::stream"));
        assert!(!logs(&d, log::Level::Trace, "ureq::stream"));
        assert!(!logs(&d, log::Level::Error, "ureq::pool"));
        assert!(!logs(&d, log::Level::Info, "myruntime"));
        assert!(logs(&d, log::Level::Warn, "myruntime"));
    }

    #[test]
    fn a_bare_target_turns_everything_under_it_on() {
        let d = strict("ureq");
        assert!(logs(&d, log::Level::Trace, "ureq::unit"));
        assert!(!logs(&d, log::Level::Error, "other"));
    }

    #[test]
    fn levels_in_any_case_and_off() {
        assert_eq!(strict("TRACE").max(), LevelFilter::Trace);
        assert_eq!(strict("Off").max(), LevelFilter::Off);
        assert!(!logs(&strict("off"), log::Level::Error, "x"));
    }

    #[test]
    fn a_bad_directive_is_named() {
        let err = parse_strict("warn, ureq=loud ,x=debug").unwrap_err();
        assert_eq!(err.directive(), "ureq=loud");
        let text = err.to_string();
        assert!(text.contains("\"ureq=loud\""), "{text}");
        assert!(text.contains("loud"), "{text}");
        assert_eq!(parse_strict("a=b=c").unwrap_err().directive(), "a=b=c");
    }

    #[test]
    fn message_patterns_and_empty_filters_are_refused() {
        assert_eq!(
            parse_strict("warn/connect").unwrap_err().directive(),
            "/connect"
        );
        assert!(parse_strict("").is_err());
        assert!(parse_strict(" , ").is_err());
    }

    #[test]
    fn valid_parts_are_kept_in_lenient_parsing() {
        let (d, rejected) = parse("debug,x=loud,y=trace");
        let d = d.expect("valid parts");
        assert_eq!(d.spec, "debug,y=trace");
        assert_eq!(rejected.len(), 1);
        assert_eq!(rejected[0].directive, "x=loud");
        let (d, rejected) = parse("x=loud");
        assert!(d.is_none());
        assert_eq!(rejected.len(), 1);
    }

    #[test]
    fn the_environment_falls_back_to_the_default() {
        let var = "MY_RUNTIME_LOG";
        let env = |value: Option<&str>| {
            let (users, warning) = from_env(var, value.map(OsStr::new), "warn");
            (users.map(|d| d.spec), warning)
        };
        assert_eq!(env(None), (None, None));
        assert_eq!(env(Some("  ")), (None, None));

        let (users, warning) = env(Some("ureq=loud"));
        assert_eq!(users, None);
        let warning = warning.expect("a warning");
        assert!(
            warning.contains("ureq=loud") && warning.contains(var),
            "{warning}"
        );
        assert!(
            warning.ends_with("the filter in force is \"warn\""),
            "{warning}"
        );

        let (users, warning) = env(Some("info,ureq=loud"));
        assert_eq!(users.as_deref(), Some("info"));
        assert!(warning.expect("a warning").ends_with("is \"info\""));

        use std::os::unix::ffi::OsStrExt;
        let (users, warning) = from_env(var, Some(OsStr::from_bytes(b"info\xff")), "warn");
        assert!(users.is_none());
        assert!(warning.expect("a warning").contains("not valid UTF-8"));
    }

    #[test]
    fn the_users_choice_wins_and_logging_lets_python_decide() {
        for (users, to_logging, expected) in [
            (None, false, "default"),
            (None, true, "everything"),
            (Some("users"), false, "users"),
            (Some("users"), true, "users"),
        ] {
            assert_eq!(
                in_force(users, "default", "everything", to_logging),
                expected,
                "{users:?} {to_logging}"
            );
        }
    }

    #[test]
    fn the_quick_check_and_the_directives_agree() {
        let _serial = crate::record::serial();
        for spec in [
            "warn",
            "warn,ureq=debug,ureq::pool=off",
            "off",
            "trace,a=off",
        ] {
            set_users(Some(strict(spec)));
            apply(false);
            let reference = strict(spec);
            for level in Level::ALL {
                for target in ["ureq", "ureq::pool", "ureq::stream", "a", "b"] {
                    let expected =
                        level == Level::Fatal || logs(&reference, level.to_log(), target);
                    assert_eq!(enabled(level, target), expected, "{spec} {level} {target}");
                }
            }
        }
        assert_eq!(filter(), "trace,a=off");
        assert!(enabled(Level::Fatal, "any"));
        set_users(None);
        apply(false);
    }
}
