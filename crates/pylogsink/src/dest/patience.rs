//! Patience before loss: a thread that finds its budget full waits for
//! room while Python is taking, instead of leaving lines out.
//!
//! The budget bounds memory, but a flood bigger than the budget into a
//! destination that Python is busy taking from (a stream whose `write` is
//! slow, a `logging` handler, a notebook) would lose lines that plain
//! Python, writing them itself at Python's pace, delivers. So a native
//! thread that does not hold the GIL and finds its buffer full waits for
//! room, for as long as Python keeps taking. A Python that takes nothing
//! (a call that holds the GIL, a handler blocked on a lock the logging
//! thread holds: the deadlock pylogsink exists for) makes it wait at most
//! [`PATIENCE`]; after one such wait, lines leave the budget at once,
//! counted, until Python takes again. No line waits longer than
//! [`MOST`] in all. Nothing of this runs while the budget has room.

use crate::record::lock;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

/// The longest a line waits with Python taking nothing.
pub(crate) const PATIENCE: Duration = Duration::from_millis(100);

/// The longest a line waits in all, Python taking or not.
pub(crate) const MOST: Duration = Duration::from_secs(2);

/// Takes from the buffers that wait for Python, so far.
static TAKES: AtomicU64 = AtomicU64::new(0);

/// [`TAKES`] when a wait last ran out of patience; none yet.
static GAVE_UP_AT: AtomicU64 = AtomicU64::new(u64::MAX);

/// Tells whether the calling thread holds the GIL (`None`: cannot tell).
/// Set by the Python edge at init; before, no thread waits.
static HOLDS_GIL: OnceLock<fn() -> Option<bool>> = OnceLock::new();

/// The Python edge's way to tell whether the calling thread holds the GIL.
pub(crate) fn set_gil_check(check: fn() -> Option<bool>) {
    let _ = HOLDS_GIL.set(check);
}

/// Python took from a buffer that waits for it (room was made), or handed
/// one more record of what it took to `logging`: it is taking.
#[inline]
pub(crate) fn took() {
    TAKES.fetch_add(1, Relaxed);
}

/// What a line that finds its buffer full does next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Answer {
    /// Wait for room a moment more.
    Wait,
    /// Leave the oldest lines out, as the budget does.
    GiveUp,
}

/// [`Answer`] for a line that has waited `waited` in all, `still` of it
/// since Python last took.
pub(crate) fn answer(waited: Duration, still: Duration) -> Answer {
    if still >= PATIENCE || waited >= MOST {
        Answer::GiveUp
    } else {
        Answer::Wait
    }
}

/// `guard` (of `mutex`) once `has_room` says its buffer has room, or once
/// patience ran out: at once if it has room, if this thread holds the GIL
/// (only it could let Python take) or if Python took nothing since the
/// last wait ran out. `wake` asks Python to take; it is called without the
/// lock.
pub(crate) fn wait_for_room<'a, T>(
    mut guard: MutexGuard<'a, T>,
    mutex: &'a Mutex<T>,
    has_room: impl Fn(&T) -> bool,
    wake: impl Fn(),
) -> MutexGuard<'a, T> {
    if has_room(&guard) {
        return guard;
    }
    let Some(holds_gil) = HOLDS_GIL.get() else {
        return guard;
    };
    let mut seen = TAKES.load(Relaxed);
    if holds_gil() != Some(false) || seen == GAVE_UP_AT.load(Relaxed) {
        return guard;
    }
    let start = Instant::now();
    let mut last_take = start;
    loop {
        drop(guard);
        wake();
        std::thread::sleep(Duration::from_micros(200));
        guard = lock(mutex);
        if has_room(&guard) {
            return guard;
        }
        let now = Instant::now();
        let takes = TAKES.load(Relaxed);
        if takes != seen {
            (seen, last_take) = (takes, now);
        }
        if answer(now - start, now - last_take) == Answer::GiveUp {
            GAVE_UP_AT.store(seen, Relaxed);
            return guard;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn a_line_waits_while_python_takes_within_patience() {
        assert_eq!(answer(ms(0), ms(0)), Answer::Wait);
        assert_eq!(answer(ms(1500), ms(99)), Answer::Wait);
    }

    #[test]
    fn python_taking_nothing_for_the_patience_costs_the_line() {
        assert_eq!(answer(ms(100), ms(100)), Answer::GiveUp);
        assert_eq!(answer(ms(500), ms(100)), Answer::GiveUp);
    }

    #[test]
    fn no_line_waits_longer_than_the_most_even_while_python_takes() {
        assert_eq!(answer(MOST, ms(0)), Answer::GiveUp);
    }

    #[test]
    fn a_full_buffer_someone_takes_from_loses_nothing_and_one_nobody_does_waits_bounded() {
        use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
        set_gil_check(|| Some(false));
        static BUFFER: Mutex<Vec<u32>> = Mutex::new(Vec::new());
        let has_room = |b: &Vec<u32>| b.len() < 10;
        let done = AtomicBool::new(false);
        let (mut got, mut lost) = (Vec::new(), 0);
        std::thread::scope(|s| {
            let taker = s.spawn(|| {
                let mut got = Vec::new();
                while !done.load(SeqCst) {
                    got.append(&mut lock(&BUFFER));
                    took();
                    std::thread::sleep(ms(1));
                }
                got
            });
            for i in 0..1000 {
                let mut buffer = wait_for_room(lock(&BUFFER), &BUFFER, has_room, || {});
                if !has_room(&buffer) {
                    buffer.remove(0);
                    lost += 1;
                }
                buffer.push(i);
            }
            done.store(true, SeqCst);
            got = taker.join().unwrap();
        });
        got.append(&mut lock(&BUFFER));
        assert_eq!((got, lost), ((0..1000).collect(), 0));
        // Nobody takes now: the line waits the patience at least (other
        // tests' takes may stretch it), never longer than the most.
        lock(&BUFFER).extend(0..10);
        let start = Instant::now();
        let buffer = wait_for_room(lock(&BUFFER), &BUFFER, has_room, || {});
        assert!(!has_room(&buffer));
        assert!(start.elapsed() >= PATIENCE && start.elapsed() < MOST + ms(500));
    }
}
