//! The filter: which records are logged at all.
//!
//! What gets logged is the choice of the extension's users, as with
//! env_logger's `RUST_LOG`: they set directives in an environment variable
//! the extension names, or change them at run time from Python. The
//! directives are env_logger's own syntax, each parsed by the `env_filter`
//! crate that env_logger uses, and matched as `env_filter` matches them:
//!
//! - a bare level (`warn`) sets the level for every target;
//! - `target=level` sets it for every target that starts with `target`
//!   (`ureq=debug` covers `ureq::stream`, and `ureq_proto` too, as in
//!   env_logger); the longest matching target wins;
//! - a bare target (`ureq`) turns on everything under it;
//! - levels are `off`, `error`, `warn`, `info`, `debug` and `trace`, in any
//!   case;
//! - of two directives for the same target, the last wins.
//!
//! pylogsink filters by target and level only: env_logger's `/pattern`
//! message filter would mean formatting every record to match it, and is
//! refused.
//!
//! A filter names at most [`MAX_TARGETS`] targets; one that names more is
//! refused whole. Parsing costs n log n in the filter's length at most
//! (`env_filter`'s own builder looks for each new directive's target among
//! those before it, which took 25 s for a megabyte of directives).
//!
//! A record the filter drops costs one atomic load and a compare: the most
//! verbose level of any directive and whether any directive names a target
//! live in one byte. Only where a directive names a target, and the record
//! is verbose enough for some directive, are the directives themselves
//! consulted, through a copy that each thread keeps until the filter
//! changes, so no lock is taken there either. That lookup walks a trie of
//! the targets: it costs the length of the record's target, however many
//! directives there are (`env_filter` tries its directives one by one).
//!
//! A [`Level::Fatal`](crate::Level::Fatal) line always passes: an abort
//! follows, and the line explains it.

use crate::record::{lock, HeldForFork, Level};
use log::LevelFilter;
use std::cell::RefCell;
use std::collections::hash_map::{Entry, HashMap};
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

/// The most targets a filter may name (each counted once, however many
/// directives name it). A filter that names more is refused whole: a
/// [`FilterError`] through an API, and ignored with a warning in the
/// environment variable.
pub(crate) const MAX_TARGETS: usize = 1000;

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
            write!(
                f,
                "bad log filter {}: {}",
                shown(&self.spec),
                plain(&self.reason)
            )
        } else {
            write!(
                f,
                "bad log filter directive {} in {}: {}",
                shown(&self.directive),
                shown(&self.spec),
                plain(&self.reason)
            )
        }
    }
}

/// `text` quoted for a message: whole where it is short, else its start
/// and its length, so that a megabyte of directives does not make a
/// megabyte of message.
fn shown(text: &str) -> String {
    const LONG: usize = 200;
    if text.len() <= LONG {
        return format!("{text:?}");
    }
    let mut end = LONG / 2;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{:?}... ({} bytes)", &text[..end], text.len())
}

/// A reason for a message, which may quote the input: control characters
/// escaped (a terminal that shows the message runs none), and cut where
/// it is long, as [`shown`] cuts.
fn plain(text: &str) -> String {
    const LONG: usize = 200;
    let mut out = String::new();
    for (at, c) in text.char_indices() {
        if text.len() > LONG && at >= LONG / 2 {
            out.push_str(&format!("... ({} bytes)", text.len()));
            break;
        }
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
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
    targets: Targets,
    /// The most verbose level that any directive lets through.
    max: LevelFilter,
    /// The directives in force, as written, joined with commas.
    spec: String,
    /// Whether some directive names a target, so that a record's target
    /// matters and not only its level; or the level for every target is
    /// not `max` (`=trace,warn`: env_filter counts the empty target's
    /// level in `max`, though the bare level's, given after, decides).
    by_target: bool,
}

impl Directives {
    /// The directives, as written, joined with commas.
    pub(crate) fn spec(&self) -> &str {
        &self.spec
    }

    fn enabled(&self, level: log::Level, target: &str) -> bool {
        self.targets.level(target).is_some_and(|max| level <= max)
    }
}

/// The directives' levels, each target once, looked up as `env_filter`
/// does: the longest target that the record's target starts with (bytes,
/// not `::` segments) decides, else the directive for every target.
///
/// The targets are a radix trie: each node holds the bytes that all the
/// targets under it share beyond its parent's, the level of the target
/// that ends there, if any, and its children by their first byte. A lookup
/// walks the record's target down from the root, one node per point where
/// the targets part, keeping the last level it passed: it costs the length
/// of the record's target at most, however many targets there are.
#[derive(Debug)]
struct Targets {
    /// The nodes, the root first; none where no directive names a target.
    nodes: Vec<Node>,
    /// The nodes' bytes, one node's after another.
    bytes: Vec<u8>,
    /// For each node, in the range [`Node::children`]: its children's
    /// first bytes, sorted, and in `children` the same places, the
    /// children's indices in `nodes`.
    first_bytes: Vec<u8>,
    children: Vec<u32>,
    /// The level for a target no named directive matches: a bare level's,
    /// or the empty target's (`=debug`), whichever `env_filter` keeps.
    /// `None`: such a record is not logged.
    everywhere: Option<LevelFilter>,
}

/// A node of [`Targets`].
#[derive(Debug, Clone, Copy)]
struct Node {
    /// Its range in [`Targets::bytes`].
    bytes: (u32, u32),
    /// The level of the target that ends here.
    level: Option<LevelFilter>,
    /// Its range in [`Targets::first_bytes`] and [`Targets::children`].
    children: (u32, u32),
}

impl Targets {
    /// The trie of `levels`, each target's level: n log n in the number of
    /// targets to sort them, then linear in their bytes.
    fn new(levels: HashMap<&str, LevelFilter>, everywhere: Option<LevelFilter>) -> Targets {
        let mut sorted: Vec<(&[u8], LevelFilter)> =
            levels.into_iter().map(|(t, l)| (t.as_bytes(), l)).collect();
        sorted.sort_unstable_by(|a, b| a.0.cmp(b.0));
        let mut targets = Targets {
            nodes: Vec::new(),
            bytes: Vec::new(),
            first_bytes: Vec::new(),
            children: Vec::new(),
            everywhere,
        };
        if !sorted.is_empty() {
            targets.add(&sorted, 0);
        }
        targets
    }

    /// Adds the node for `sorted`, targets that all share their first
    /// `depth` bytes and go beyond them, and the nodes under it. Returns
    /// its index.
    fn add(&mut self, sorted: &[(&[u8], LevelFilter)], depth: usize) -> u32 {
        let (first, last) = (sorted[0].0, sorted[sorted.len() - 1].0);
        // Sorted: what the first and the last share, all do.
        let shared = first.iter().zip(last).take_while(|(a, b)| a == b).count();
        let mut rest = sorted;
        let mut level = None;
        if first.len() == shared {
            level = Some(sorted[0].1);
            rest = &sorted[1..];
        }
        let index = self.nodes.len() as u32;
        let start = self.bytes.len() as u32;
        self.bytes.extend_from_slice(&first[depth..shared]);
        // The children's places first, so that they are side by side.
        let mut groups = Vec::new();
        while let Some(&(target, _)) = rest.first() {
            let byte = target[shared];
            let end = rest.partition_point(|(t, _)| t[shared] == byte);
            groups.push((byte, &rest[..end]));
            rest = &rest[end..];
        }
        let children = self.children.len() as u32;
        self.first_bytes.extend(groups.iter().map(|(byte, _)| byte));
        self.children.extend(groups.iter().map(|_| 0));
        self.nodes.push(Node {
            bytes: (start, self.bytes.len() as u32),
            level,
            children: (children, self.children.len() as u32),
        });
        for (i, (_, group)) in groups.into_iter().enumerate() {
            let child = self.add(group, shared);
            self.children[children as usize + i] = child;
        }
        index
    }

    /// The level of the longest target that `target` starts with, else
    /// [`Targets::everywhere`].
    fn level(&self, target: &str) -> Option<LevelFilter> {
        let mut found = self.everywhere;
        let Some(mut node) = self.nodes.first() else {
            return found;
        };
        let mut rest = target.as_bytes();
        loop {
            let (start, end) = node.bytes;
            let Some(after) = rest.strip_prefix(&self.bytes[start as usize..end as usize]) else {
                return found;
            };
            found = node.level.or(found);
            let Some(next) = after.first() else {
                return found;
            };
            let (start, end) = (node.children.0 as usize, node.children.1 as usize);
            let Ok(i) = self.first_bytes[start..end].binary_search(next) else {
                return found;
            };
            node = &self.nodes[self.children[start + i] as usize];
            rest = after;
        }
    }
}

/// One directive, checked by `env_filter`: the target it names (`None`
/// for a bare level) and its level, or `env_filter`'s error.
fn directive(text: &str) -> Result<(Option<&str>, LevelFilter), env_filter::ParseError> {
    let mut builder = env_filter::Builder::new();
    builder.try_parse(text)?;
    let level = builder.build().filter();
    // As env_filter's parser splits it: a bare word that is a level is
    // one, any other bare word is a target, and `target=` means every
    // level.
    let target = match text.split_once('=') {
        Some((target, _)) => Some(target),
        None if text.parse::<LevelFilter>().is_ok() => None,
        None => Some(text),
    };
    Ok((target, level))
}

/// Parses `spec` directive by directive. Returns the valid directives, if
/// any, and those that were refused. A filter that names more than
/// [`MAX_TARGETS`] targets is refused whole: no directives, and the
/// directive that names one too many is the last refused.
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
    let mut valid = Vec::new();
    let mut levels: HashMap<&str, LevelFilter> = HashMap::new();
    // The bare level and the empty target's, each with the number of its
    // first directive: env_filter's builder keeps a directive where the
    // first for its target was, and sorts them stably by the target's
    // length, so of these two the one first given later wins.
    let mut bare: Option<(usize, LevelFilter)> = None;
    let mut empty: Option<(usize, LevelFilter)> = None;
    for (n, text) in spec
        .split(',')
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .enumerate()
    {
        let (target, level) = match directive(text) {
            Ok(parsed) => parsed,
            Err(err) => {
                rejected.push(Rejected {
                    directive: text.to_owned(),
                    reason: reason(&err),
                });
                continue;
            }
        };
        valid.push(text);
        let everywhere = match target {
            None => &mut bare,
            Some("") => &mut empty,
            Some(target) => {
                let count = levels.len();
                match levels.entry(target) {
                    Entry::Occupied(mut entry) => {
                        entry.insert(level);
                    }
                    Entry::Vacant(_) if count == MAX_TARGETS => {
                        rejected.push(Rejected {
                            directive: text.to_owned(),
                            reason: format!(
                                "it names target {}: a filter names at most {MAX_TARGETS} \
                                 targets, and one that names more is refused whole",
                                MAX_TARGETS + 1
                            ),
                        });
                        return (None, rejected);
                    }
                    Entry::Vacant(entry) => {
                        entry.insert(level);
                    }
                }
                continue;
            }
        };
        let first = everywhere.map_or(n, |(first, _)| first);
        *everywhere = Some((first, level));
    }
    if valid.is_empty() {
        return (None, rejected);
    }
    let everywhere = match (bare, empty) {
        (Some(a), Some(b)) => Some(a.max(b).1),
        (a, b) => a.or(b).map(|(_, level)| level),
    };
    // As env_filter's: the most verbose of all, the one of the bare level
    // and the empty target's that no record reaches included.
    let max = levels
        .values()
        .copied()
        .chain([bare, empty].into_iter().flatten().map(|(_, level)| level))
        .max()
        .unwrap_or(LevelFilter::Off);
    let directives = Directives {
        by_target: !levels.is_empty() || everywhere != Some(max),
        targets: Targets::new(levels, everywhere),
        max,
        spec: valid.join(","),
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
    let quick = chosen.max as u8 | if chosen.by_target { BY_TARGET } else { 0 };
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
        assert_eq!(d.max, LevelFilter::Warn);
        assert!(logs(&d, log::Level::Warn, "anything"));
        assert!(!logs(&d, log::Level::Info, "anything"));
    }

    #[test]
    fn the_longest_matching_target_wins() {
        let d = strict("warn,ureq=debug,ureq::pool=off");
        assert!(d.by_target);
        assert_eq!(d.max, LevelFilter::Debug);
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
        assert_eq!(strict("TRACE").max, LevelFilter::Trace);
        assert_eq!(strict("Off").max, LevelFilter::Off);
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

        #[cfg(unix)]
        {
            use std::os::unix::ffi::OsStrExt;
            let (users, warning) = from_env(var, Some(OsStr::from_bytes(b"info\xff")), "warn");
            assert!(users.is_none());
            assert!(warning.expect("a warning").contains("not valid UTF-8"));
        }
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

    /// env_filter's own filter for `spec`: the reference.
    fn reference(spec: &str) -> env_filter::Filter {
        let mut builder = env_filter::Builder::new();
        builder
            .try_parse(spec)
            .unwrap_or_else(|e| panic!("{spec:?}: {e}"));
        builder.build()
    }

    /// Checks that `d` answers as env_filter's `reference` for `target`, at
    /// every level, and that the quick check may skip the lookup where no
    /// directive names a target.
    fn agrees(spec: &str, d: &Directives, reference: &env_filter::Filter, target: &str) {
        for level in log::Level::iter() {
            let metadata = log::Metadata::builder().level(level).target(target).build();
            let expected = reference.enabled(&metadata);
            assert_eq!(
                logs(d, level, target),
                expected,
                "{spec:?} {level} {target:?}"
            );
            if !d.by_target {
                assert_eq!(level <= d.max, expected, "{spec:?} {level} {target:?}");
            }
        }
    }

    /// A small deterministic generator (splitmix64).
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        }

        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }

        fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
            items[self.below(items.len())]
        }

        /// A target of up to `pieces` pieces that are often prefixes of
        /// one another, at `::` and elsewhere.
        fn target(&mut self, pieces: usize) -> String {
            const PIECES: [&str; 9] = ["a", "b", "ab", "::", "a::b", "::b", "_", "A", "\u{e9}"];
            (0..self.below(pieces + 1))
                .map(|_| self.pick(&PIECES))
                .collect()
        }
    }

    #[test]
    fn the_lookup_agrees_with_env_filter_on_random_filters() {
        const LEVELS: [&str; 9] = [
            "off", "error", "warn", "info", "debug", "trace", "OFF", "Warn", "TRACE",
        ];
        let mut rng = Rng(0x5eed);
        let mut checked = 0;
        for round in 0..3000 {
            let count = 1 + rng.below(if round % 10 == 0 { 80 } else { 8 });
            let directives: Vec<String> = (0..count)
                .map(|_| {
                    let target = rng.target(3);
                    let level = rng.pick(&LEVELS);
                    match rng.below(8) {
                        0 => level.to_owned(),
                        1 => target,
                        2 => format!("{target}="),
                        3 => format!("={level}"),
                        4 => format!("{target} = {level}"),
                        _ => format!("{target}={level}"),
                    }
                })
                .collect();
            let spec = directives.join(",");
            let Some(d) = parse(&spec).0 else {
                assert!(directives.iter().all(|d| d.trim().is_empty()), "{spec:?}");
                continue;
            };
            let reference = reference(&spec);
            assert_eq!(d.max, reference.filter(), "{spec:?}");
            let mut targets: Vec<String> = (0..40).map(|_| rng.target(5)).collect();
            for directive in &directives {
                let named = directive.split('=').next().unwrap_or_default().trim();
                targets.push(named.to_owned());
                targets.push(format!("{named}{}", rng.target(2)));
            }
            for target in &targets {
                agrees(&spec, &d, &reference, target);
            }
            checked += 1;
        }
        assert!(checked > 2500, "{checked}");
    }

    #[test]
    fn the_longest_target_the_record_starts_with_wins() {
        let spec = "a=error,a::b=off,a::b::c=trace,ab=debug,a::c=info,b=warn";
        let d = strict(spec);
        let reference = reference(spec);
        for (target, level) in [
            ("a::b::cd", Some(LevelFilter::Trace)),
            ("a::bx", Some(LevelFilter::Off)),
            ("a::b::d", Some(LevelFilter::Off)),
            ("a::d", Some(LevelFilter::Error)),
            ("a::c::d", Some(LevelFilter::Info)),
            ("abc", Some(LevelFilter::Debug)),
            ("a", Some(LevelFilter::Error)),
            ("", None),
            ("c", None),
            ("B", None),
        ] {
            assert_eq!(d.targets.level(target), level, "{target:?}");
            agrees(spec, &d, &reference, target);
        }
    }

    #[test]
    fn of_a_bare_level_and_the_empty_target_the_one_first_given_later_wins() {
        for spec in [
            "=debug,warn,=info",
            "warn,=debug,warn=",
            "info,=error",
            "=error,info",
            "=trace",
            "a=debug,=off,a=info,error",
        ] {
            let d = strict(spec);
            let reference = reference(spec);
            assert_eq!(d.max, reference.filter(), "{spec}");
            for target in ["", "a", "a::b", "warn", "b"] {
                agrees(spec, &d, &reference, target);
            }
        }
    }

    /// How many targets the trie holds.
    fn named_targets(d: &Directives) -> usize {
        d.targets.nodes.iter().filter(|n| n.level.is_some()).count()
    }

    /// `n` directives, each for a target of its own, at `level`.
    fn named(n: usize, level: &str) -> String {
        let directives: Vec<String> = (0..n).map(|i| format!("t{i}={level}")).collect();
        directives.join(",")
    }

    #[test]
    fn a_filter_names_at_most_max_targets() {
        let spec = format!(
            "warn,{},{}",
            named(MAX_TARGETS, "debug"),
            named(MAX_TARGETS, "trace")
        );
        let d = strict(&spec);
        assert_eq!(named_targets(&d), MAX_TARGETS);
        assert!(logs(&d, log::Level::Trace, "t7::x"));
        assert!(!logs(&d, log::Level::Info, "u"));

        let spec = format!("warn,{}", named(MAX_TARGETS + 1, "debug"));
        let err = parse_strict(&spec).unwrap_err();
        assert_eq!(err.directive(), "t1000=debug");
        let text = err.to_string();
        assert!(text.contains("at most 1000 targets"), "{text}");
        assert!(text.contains("\"t1000=debug\""), "{text}");
        assert!(text.contains(&format!("({} bytes)", spec.len())), "{text}");
        assert!(text.len() < 400, "{text}");

        let (users, warning) = from_env("MY_RUNTIME_LOG", Some(OsStr::new(&spec)), "warn");
        assert!(users.is_none());
        let warning = warning.expect("a warning");
        assert!(warning.starts_with("MY_RUNTIME_LOG: "), "{warning}");
        assert!(warning.contains("at most 1000 targets"), "{warning}");
        assert!(
            warning.ends_with("the filter in force is \"warn\""),
            "{warning}"
        );
    }

    #[test]
    fn a_megabyte_of_directives_is_refused_or_parsed() {
        let distinct: Vec<String> = (0..150_000).map(|i| format!("x{i}")).collect();
        let distinct = distinct.join(",");
        assert!(distinct.len() > 1 << 20);
        assert_eq!(parse_strict(&distinct).unwrap_err().directive(), "x1000");

        let mut repeated = String::from("warn");
        while repeated.len() < 1 << 20 {
            repeated += ",";
            repeated += &named(MAX_TARGETS, "error");
        }
        repeated += ",";
        repeated += &named(MAX_TARGETS, "debug");
        let d = strict(&repeated);
        assert_eq!(d.spec, repeated);
        assert_eq!(named_targets(&d), MAX_TARGETS);
        assert_eq!(d.max, LevelFilter::Debug);
        assert!(logs(&d, log::Level::Debug, "t999::x"));
        assert!(!logs(&d, log::Level::Trace, "t999::x"));
        assert!(!logs(&d, log::Level::Info, "other"));
    }

    #[test]
    fn a_reason_quoting_the_input_is_escaped_and_cut() {
        assert_eq!(
            plain("invalid logging spec 'loud'"),
            "invalid logging spec 'loud'"
        );
        assert_eq!(plain("spec '\x1b[2J\x07'"), "spec '\\u{1b}[2J\\u{7}'");
        let long = plain(&"y".repeat(1_000_000));
        assert!(long.ends_with("... (1000000 bytes)"), "{long}");
        assert!(long.len() < 130, "{long}");
    }

    #[test]
    fn a_long_filter_is_shortened_in_messages() {
        assert_eq!(shown("warn"), "\"warn\"");
        let long = "\u{e9}".repeat(300);
        let text = shown(&long);
        assert!(text.ends_with("... (600 bytes)"), "{text}");
        assert!(text.len() < 120, "{text}");
    }
}
