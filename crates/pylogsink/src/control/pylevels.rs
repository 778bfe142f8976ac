//! Python's logger levels, as the native side sees them.
//!
//! With the `logging` destination, a record that Python's logger for its
//! target would not take should cost no more than one the directives drop.
//! But the log function cannot ask Python. So the levels are read where the
//! GIL is held (at a call's entry, and when records are delivered) and kept
//! here for the log function:
//!
//! - a floor: no logger takes a record below the lowest level set on any
//!   logger (or at or below `logging.disable`'s), so a record under it is
//!   dropped with one compare;
//! - per target, the lowest level its logger takes, learnt when its first
//!   record is delivered. A target not seen yet passes, and its logger
//!   decides at delivery.
//!
//! Both are dropped the moment Python's logging configuration changes
//! (`setLevel`, `caplog.set_level`, `logging.disable`, `basicConfig`,
//! `dictConfig`): `logging` then clears the level cache of every logger,
//! and one logger's cache is pylogsink's (the `logging` delivery in the
//! Python edge), which calls [`forget`] through
//! [`python_levels_changed`](super::python_levels_changed).
//! Until the levels are read again (at the next outermost call, or by
//! pylogsink's Python thread, which the change wakes), every record
//! passes here and its logger decides at delivery.

use crate::record::{lock, HeldForFork, Level};
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// No logger takes a record whose level number is below this.
static FLOOR: AtomicI32 = AtomicI32::new(0);

type Targets = HashMap<Box<str>, i32>;

/// The lowest level number each known target's logger takes.
static TARGETS: Mutex<Option<Arc<Targets>>> = Mutex::new(None);
/// Bumped at each change of [`TARGETS`]: each thread's copy is current
/// while its generation is this one.
static GENERATION: AtomicU64 = AtomicU64::new(0);

thread_local! {
    static COPY: RefCell<Copy> = const { RefCell::new(Copy::new()) };
}

/// A thread's copy of the known targets, and the last answer it gave: a
/// thread tends to log from one target at a time, and comparing its name
/// costs less than hashing it.
struct Copy {
    generation: u64,
    targets: Option<Arc<Targets>>,
    /// The last target asked about (`last_len` bytes; 0 for none) and
    /// its answer. Kept inline, so that a lookup never allocates.
    last: [u8; LAST_MAX],
    last_len: usize,
    last_answer: Option<i32>,
}

/// The longest target name the last-answer cache holds.
const LAST_MAX: usize = 96;

impl Copy {
    const fn new() -> Copy {
        Copy {
            generation: u64::MAX,
            targets: None,
            last: [0; LAST_MAX],
            last_len: 0,
            last_answer: None,
        }
    }

    fn lookup(&mut self, generation: u64, target: &str) -> Option<i32> {
        if self.generation != generation {
            *self = Copy::new();
            self.generation = generation;
            self.targets = current();
        }
        let name = target.as_bytes();
        if self.last_len == name.len() && self.last_len > 0 && &self.last[..name.len()] == name {
            return self.last_answer;
        }
        let answer = self.targets.as_ref()?.get(target).copied();
        if !name.is_empty() && name.len() <= LAST_MAX {
            self.last[..name.len()].copy_from_slice(name);
            self.last_len = name.len();
            self.last_answer = answer;
        }
        answer
    }
}

/// Whether Python's logger for `target` may take a record of `level`.
#[inline]
pub(crate) fn may_take(level: Level, target: &str) -> bool {
    let n = level.python_levelno();
    if n < FLOOR.load(Ordering::Relaxed) {
        return false;
    }
    match lowest_for(target) {
        Some(lowest) => n >= lowest,
        None => true,
    }
}

/// The lowest level number `target`'s logger takes, if known.
pub(crate) fn known(target: &str) -> Option<i32> {
    lowest_for(target)
}

fn lowest_for(target: &str) -> Option<i32> {
    let generation = GENERATION.load(Ordering::Acquire);
    let answer = COPY.try_with(|copy| Some(copy.try_borrow_mut().ok()?.lookup(generation, target)));
    match answer {
        Ok(Some(known)) => known,
        _ => current()?.get(target).copied(),
    }
}

fn current() -> Option<Arc<Targets>> {
    lock(&TARGETS).clone()
}

/// The floor in force.
pub(crate) fn floor() -> i32 {
    FLOOR.load(Ordering::Relaxed)
}

/// Counts Python's configuration changes, as [`forget`] hears of them.
static EPOCH: AtomicU64 = AtomicU64::new(0);
/// Whether the levels must be read again.
static STALE: AtomicBool = AtomicBool::new(true);

/// Python's configuration changed: until the levels are read again, every
/// record passes here and its logger decides at delivery. Called by
/// `logging` itself, with the GIL, whenever it clears its level caches.
pub(crate) fn forget() {
    let mut targets = lock_targets();
    EPOCH.fetch_add(1, Ordering::AcqRel);
    STALE.store(true, Ordering::Release);
    install(&mut targets, 0);
}

/// If the levels must be read again: the epoch to read them in, for
/// [`reset`] and [`learn`].
pub(crate) fn stale() -> Option<u64> {
    STALE.swap(false, Ordering::AcqRel).then(epoch)
}

/// Whether the levels must be read again, leaving [`stale`] to say so.
pub(crate) fn is_stale() -> bool {
    STALE.load(Ordering::Acquire)
}

/// The configuration's epoch now, to give [`learn`] with what was read in it.
pub(crate) fn epoch() -> u64 {
    EPOCH.load(Ordering::Acquire)
}

/// Sets the floor read in `epoch` and forgets every target, unless the
/// configuration changed since. True if it did.
pub(crate) fn reset(floor: i32, epoch: u64) -> bool {
    let mut targets = lock_targets();
    let current = EPOCH.load(Ordering::Acquire) == epoch;
    if current {
        install(&mut targets, floor);
    }
    current
}

/// Forgets every target and sets the floor; the lock is held.
fn install(targets: &mut MutexGuard<'_, Option<Arc<Targets>>>, floor: i32) {
    **targets = None;
    GENERATION.fetch_add(1, Ordering::AcqRel);
    FLOOR.store(floor, Ordering::Relaxed);
}

fn lock_targets() -> MutexGuard<'static, Option<Arc<Targets>>> {
    lock(&TARGETS)
}

/// The known targets' lock, held across a fork.
pub(crate) fn hold_for_fork() -> HeldForFork {
    crate::record::hold_for_fork(&TARGETS)
}

/// Learns the lowest level number `target`'s logger takes, read in
/// `epoch`, unless the configuration changed since. Nothing else caches
/// it: `log::max_level` and tracing's interest follow the floor only.
pub(crate) fn learn(target: &str, lowest: i32, epoch: u64) {
    let mut targets = lock_targets();
    if EPOCH.load(Ordering::Acquire) != epoch
        || targets.as_ref().and_then(|t| t.get(target)) == Some(&lowest)
    {
        return;
    }
    let mut copy: Targets = targets.as_deref().cloned().unwrap_or_default();
    copy.insert(target.into(), lowest);
    *targets = Some(Arc::new(copy));
    GENERATION.fetch_add(1, Ordering::AcqRel);
}

/// The lowest level number a logger takes, from its effective level and
/// `logging.disable`'s level: `isEnabledFor(n)` is `n > disable and n >=
/// effective`.
pub(crate) fn lowest_taken(effective: i32, disable: i32) -> i32 {
    effective.max(disable.saturating_add(1))
}

/// The floor, from the levels set on the loggers (the root's included;
/// `NOTSET` ones left out, as they inherit) and `logging.disable`'s level.
pub(crate) fn floor_of(levels_set: impl IntoIterator<Item = i32>, disable: i32) -> i32 {
    let lowest = levels_set.into_iter().min().unwrap_or(0);
    lowest_taken(lowest, disable)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lowest_taken_follows_is_enabled_for() {
        // isEnabledFor(n): n > disable and n >= effective level.
        for effective in [0, 5, 10, 30] {
            for disable in [0, 10, 30, 50] {
                let lowest = lowest_taken(effective, disable);
                for n in [5, 10, 20, 30, 40, 50] {
                    assert_eq!(
                        n >= lowest,
                        n > disable && n >= effective,
                        "{effective} {disable} {n}"
                    );
                }
            }
        }
    }

    #[test]
    fn the_floor_is_the_lowest_level_set() {
        assert_eq!(floor_of([30, 10, 40], 0), 10);
        assert_eq!(floor_of([30], 30), 31);
        // No level set anywhere: every level but NOTSET's 0 is taken.
        assert_eq!(floor_of([], 0), 1);
    }

    #[test]
    fn targets_and_the_floor_decide() {
        let _serial = crate::record::serial();
        reset(0, epoch());
        assert!(may_take(Level::Trace, "a"));
        learn("a", 20, epoch());
        assert!(!may_take(Level::Debug, "a"));
        assert!(may_take(Level::Info, "a"));
        assert!(may_take(Level::Debug, "b"), "unknown targets pass");
        reset(30, epoch());
        assert!(!may_take(Level::Debug, "a") && may_take(Level::Warn, "b"));
        assert!(!may_take(Level::Info, "b"));
        assert_eq!(floor(), 30);
        reset(0, epoch());
        assert!(may_take(Level::Debug, "a"), "a reset forgets the targets");

        // What was read before a change is not kept after it.
        let before = epoch();
        learn("a", 40, before);
        forget();
        assert!(may_take(Level::Info, "a"), "a change forgets the targets");
        learn("a", 40, before);
        reset(50, before);
        assert!(
            may_take(Level::Info, "a") && floor() == 0,
            "stale reads are not kept"
        );
        let now = stale().expect("a change makes the levels stale");
        assert!(stale().is_none(), "until they are read again");
        reset(30, now);
        assert_eq!(floor(), 30);
        reset(0, epoch());
    }
}
