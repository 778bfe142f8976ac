//! The process-wide queue: lines logged outside any call that found no
//! room on fd 2.
//!
//! A worker thread of a runtime, module init or a destructor logs outside
//! any call: nobody will write its lines at a return. What finds no room on
//! fd 2 within the stall wait waits here (its newest lines within the
//! budget) and is written first at the next chance: before the next direct
//! line, at a call's return, at exit. Writing it costs one atomic load while it is empty.
//!
//! Beside it waits what such a thread logs while `sys.stderr` is replaced
//! (pytest's capture, a notebook's cell): the line belongs in that stream,
//! which only Python can write, so pylogsink's Python thread writes it.

use crate::dest::fd;
use crate::dest::pending::{self, Batch};
use crate::dest::route::{on_no_room, NoRoom, Sink};
use crate::dest::{budget, patience, prompt, Kept, Taken};
use crate::record::{lock, lock_at_crash, HeldForFork};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

/// Writes a buffer's lines (its note first) to fd 2, each piece waiting for
/// room at most `wait`; puts back what finds no room. True if the buffer
/// is empty afterwards; then `on_empty` runs, under the buffer's lock, so
/// that a line pushed meanwhile keeps the flag that tells of it. The lock
/// is not held while writing; another thread that comes meanwhile finds
/// the buffer being written and gets false, so that its line waits behind
/// these instead of going between them, or inside one that fd 2 took only
/// part of.
pub(crate) fn write_buffer(buffer: &Mutex<Kept>, wait: Duration, on_empty: impl FnOnce()) -> bool {
    let mut kept = lock(buffer);
    if kept.being_written() {
        return false;
    }
    if kept.is_empty() {
        on_empty();
        return true;
    }
    // Is there room? Asked with the oldest line (or the note) alone: a
    // stalled fd 2 is asked at each line, and a buffer of megabytes taken
    // out and put back each time would cost each line its size.
    let probed = fd::write_with_room(fd::stderr(), &kept.front(), Duration::ZERO);
    if probed == 0 && wait.is_zero() {
        return false;
    }
    let taken = kept.take_to_write();
    drop(kept);
    let written = probed + fd::write_with_room(fd::stderr(), &taken.text[probed..], wait);
    let mut kept = lock(buffer);
    kept.put_back_written(taken, written);
    let empty = kept.is_empty();
    if empty {
        on_empty();
    }
    empty
}

/// Writes the queue, then `taken`, to fd 2, each piece waiting for room
/// at most `wait`; what finds no room joins the queue.
pub(crate) fn write_fd2(taken: Taken, wait: Duration) {
    let queue_written = write_queue(wait);
    if taken.text.is_empty() {
        return;
    }
    let written = if queue_written {
        fd::write_with_room(fd::stderr(), &taken.text, wait)
    } else {
        0
    };
    // A note that did not go out joins the queue's note.
    if written < taken.text.len() {
        queue().append(taken, written);
        QUEUE_PENDING.store(true, Ordering::Release);
    }
}

/// Writes a record to fd 2 after whatever waits in the queue, of which
/// the first `written` bytes went out already. What finds no room within
/// `wait` goes where [`on_no_room`] says: the queue, or `keep` (for a call,
/// which then counts as stalled), with whether it is the rest of a line
/// already started.
#[inline(always)]
pub(crate) fn write_direct(
    sink: Sink,
    record: &[u8],
    mut written: usize,
    wait: Duration,
    keep: impl FnOnce(&[u8], bool),
) {
    // A line begun goes on before anything else.
    if written > 0 || write_queue(wait) {
        written += fd::write_with_room(fd::stderr(), &record[written..], wait);
    }
    if written < record.len() {
        let rest = &record[written..];
        match on_no_room(sink) {
            NoRoom::KeepAndStall => keep(rest, written > 0),
            NoRoom::Queue => queue_push(rest, written > 0),
        }
    }
}

/// Lines that found fd 2 without room outside any call: pushed by the
/// threads that logged them, written first at the next chance (the next
/// direct line, a call's return, the exit).
static QUEUE: Mutex<Kept> = Mutex::new(Kept::budgeted());
/// Whether [`QUEUE`] holds lines: one load for a writer that checks.
static QUEUE_PENDING: AtomicBool = AtomicBool::new(false);

fn queue() -> MutexGuard<'static, Kept> {
    lock(&QUEUE)
}

/// The queue, for a test that plays another thread writing it (the
/// routing tests need POSIX pipes).
#[cfg(all(test, unix))]
pub(crate) fn queue_for_test() -> MutexGuard<'static, Kept> {
    queue()
}

/// Adds a record that found no room on fd 2 to the process-wide queue.
pub(crate) fn queue_push(record: &[u8], is_rest: bool) {
    queue().push_record(record, is_rest);
    if !QUEUE_PENDING.swap(true, Ordering::AcqRel) {
        crate::sys::reinstate_crash_handler();
    }
}

/// Whether lines wait in the process-wide queue.
#[inline]
pub(crate) fn queue_pending() -> bool {
    QUEUE_PENDING.load(Ordering::Acquire)
}

/// Writes the process-wide queue to fd 2, waiting at most `wait`. True if
/// the queue is empty afterwards. Costs one atomic load when it is empty.
pub(crate) fn write_queue(wait: Duration) -> bool {
    if !queue_pending() {
        return true;
    }
    // The flag stays up while the queue is written, so that a line logged
    // meanwhile waits behind it.
    write_buffer(&QUEUE, wait, || {
        QUEUE_PENDING.store(false, Ordering::Release)
    })
}

/// Queues a batch of records for `logging` as text lines for fd 2.
pub(crate) fn queue_pending_as_text(batch: &Batch) {
    let mut queue = queue();
    batch.each_line(|line| queue.push(line));
    QUEUE_PENDING.store(true, Ordering::Release);
}

/// The queue's lock, held across a fork. The child starts with an empty
/// queue: what waited is the parent's to write.
pub(crate) fn hold_for_fork() -> HeldForFork {
    // In the order `for_stream_to_fd2` takes them.
    let mut for_stream = lock(&FOR_STREAM);
    let mut queue = queue();
    Box::new(move |child| {
        if child {
            queue.clear_in_child();
            QUEUE_PENDING.store(false, Ordering::Release);
            drop(for_stream.take());
            FOR_STREAM_PENDING.store(false, Ordering::Release);
        }
        drop(queue);
        drop(for_stream);
    })
}

/// Lines logged outside any call while `sys.stderr` is replaced (a
/// test's capture, a notebook's cell), for pylogsink's Python thread to
/// write to it: its newest lines within the budget.
static FOR_STREAM: Mutex<Kept> = Mutex::new(Kept::budgeted());
/// Whether [`FOR_STREAM`] holds lines: one load for whoever checks.
static FOR_STREAM_PENDING: AtomicBool = AtomicBool::new(false);

/// Whether `sys.stderr` was replaced when Python was last asked: at an
/// outermost call's entry, or by pylogsink's Python thread.
static STDERR_REPLACED: AtomicBool = AtomicBool::new(false);

/// How long lines logged outside any call wait for pylogsink's Python
/// thread to look at `sys.stderr` (where no watcher tells each
/// replacement) before the last answer stands.
pub(crate) const STDERR_FRESH_MS: u64 = 100;

/// Keeps what was learnt about `sys.stderr` (the caller holds the GIL);
/// `now_ms` when it was asked, else `None`. An answer ends the wait of
/// the lines held for it.
#[inline]
pub(crate) fn stderr_seen(replaced: bool, now_ms: Option<u64>) {
    if STDERR_REPLACED.load(Ordering::Relaxed) != replaced {
        STDERR_REPLACED.store(replaced, Ordering::Relaxed);
    }
    if now_ms.is_some() {
        STDERR_LOOK_SINCE_MS.store(0, Ordering::Release);
    }
}

/// Since when, in milliseconds since the epoch, a line waits for
/// pylogsink's Python thread to look at `sys.stderr` again; 0 when none
/// does.
static STDERR_LOOK_SINCE_MS: AtomicU64 = AtomicU64::new(0);

/// For a line logged outside any call at `now_ms`: whether it goes as if
/// `sys.stderr` were replaced (kept for pylogsink's Python thread, which
/// writes it where `sys.stderr` is when it looks), and whether this line
/// claimed a look. See [`outside_answer`].
#[inline]
pub(crate) fn stderr_replaced(now_ms: u64) -> (bool, bool) {
    let replaced = STDERR_REPLACED.load(Ordering::Relaxed);
    if STDERR_WATCHED.load(Ordering::Relaxed) {
        return (replaced, false);
    }
    let look_since = STDERR_LOOK_SINCE_MS.load(Ordering::Acquire);
    let held = if look_since == 0 {
        0
    } else {
        lock(&FOR_STREAM).len_bytes()
    };
    let answer = outside_answer(replaced, now_ms, look_since, held, hold_max());
    if answer == Outside::Ask
        && STDERR_LOOK_SINCE_MS
            .compare_exchange(0, now_ms.max(1), Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
    {
        STDERR_ASK.store(true, Ordering::Release);
        return (true, true);
    }
    (answer != Outside::LastSeen(false), false)
}

/// Where a line logged outside any call goes, where no watcher tells each
/// replacement of `sys.stderr` (CPython 3.11): an answer, however recent,
/// may already be wrong.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Outside {
    /// The answer last seen stands: replaced or not.
    LastSeen(bool),
    /// No look is awaited: this line asks pylogsink's Python thread to look
    /// at `sys.stderr`, and waits for its answer.
    Ask,
    /// A look was asked for less than [`STDERR_FRESH_MS`] ago: the line
    /// waits for its answer with the others, so that none goes to fd 2
    /// after `sys.stderr` was replaced.
    Wait,
}

/// The most bytes of lines that wait for a look before the last answer
/// stands: half the buffer they wait in (half the budget), so that a burst
/// while Python is busy goes on to fd 2 rather than out of the buffer.
fn hold_max() -> usize {
    budget::lines() / 2
}

/// [`Outside`] for a line at `now_ms`, from the answer last seen
/// (`replaced`), since when a look is awaited (`look_since_ms`, 0 for
/// none) and the bytes of lines waiting for it (`held`). A look that stays
/// unanswered past [`STDERR_FRESH_MS`], or while `hold_max` bytes wait
/// (Python busy: the thread cannot run), lets the last answer stand, so
/// that lines still reach fd 2 while Python is busy.
pub(crate) fn outside_answer(
    replaced: bool,
    now_ms: u64,
    look_since_ms: u64,
    held: usize,
    hold_max: usize,
) -> Outside {
    if look_since_ms == 0 {
        Outside::Ask
    } else if now_ms.saturating_sub(look_since_ms) < STDERR_FRESH_MS && held < hold_max {
        Outside::Wait
    } else {
        Outside::LastSeen(replaced)
    }
}

/// The answer about `sys.stderr` is kept by a watcher on `sys.__dict__`
/// that tells each change as it happens: it never goes stale.
static STDERR_WATCHED: AtomicBool = AtomicBool::new(false);

/// From now on the answer about `sys.stderr` is told at each change.
pub(crate) fn stderr_watched() {
    STDERR_WATCHED.store(true, Ordering::Relaxed);
}

/// A line claimed a stale answer about `sys.stderr` ([`stderr_replaced`]).
static STDERR_ASK: AtomicBool = AtomicBool::new(false);

/// Whether a line claimed a stale answer since the last look; clears it.
pub(crate) fn stderr_ask_claimed() -> bool {
    STDERR_ASK.swap(false, Ordering::AcqRel)
}

/// Keeps a line logged outside any call for the replaced `sys.stderr`.
pub(crate) fn for_stream_push(record: &[u8], is_rest: bool) {
    let len = record.len();
    let mut lines = patience::wait_for_room(
        lock(&FOR_STREAM),
        &FOR_STREAM,
        |k| k.has_room(len),
        pending::queue::wake_for_calls,
    );
    lines.push_record(record, is_rest);
    drop(lines);
    FOR_STREAM_PENDING.store(true, Ordering::Release);
    prompt::ask();
}

/// Whether lines wait for the replaced `sys.stderr`.
#[inline]
pub(crate) fn for_stream_pending() -> bool {
    FOR_STREAM_PENDING.load(Ordering::Acquire)
}

/// Takes the lines that wait for the replaced `sys.stderr`.
pub(crate) fn for_stream_take() -> Taken {
    if !FOR_STREAM_PENDING.swap(false, Ordering::AcqRel) {
        return Taken::default();
    }
    lock(&FOR_STREAM).take()
}

/// Writes the lines that wait for a replaced `sys.stderr` to fd 2 instead,
/// now that it is the process's own again, each piece waiting for room at
/// most `wait` (the rest joins the queue). Their buffer stays locked the
/// while, so that a thread whose earlier lines wait there cannot write a
/// later one first.
pub(crate) fn for_stream_to_fd2(wait: Duration) {
    if !for_stream_pending() {
        return;
    }
    let mut buffer = lock(&FOR_STREAM);
    FOR_STREAM_PENDING.store(false, Ordering::Release);
    let taken = buffer.take();
    write_fd2(taken, wait);
    drop(buffer);
}

/// Adds what a thread kept to the queue (at exit, when its call can no
/// longer write it).
pub(crate) fn append(taken: Taken) {
    if !taken.text.is_empty() {
        queue().append(taken, 0);
        QUEUE_PENDING.store(true, Ordering::Release);
    }
}

/// Hands the queue and the lines for a replaced stream to `text`, from a
/// signal handler (see [`lock_at_crash`]). Returns how many locks stayed
/// held.
pub(crate) fn visit(text: &mut dyn FnMut(&mut Kept)) -> usize {
    let mut busy = 0;
    for buffer in [&QUEUE, &FOR_STREAM] {
        match lock_at_crash(buffer) {
            Some(mut lines) => text(&mut lines),
            None => busy += 1,
        }
    }
    busy
}

#[cfg(test)]
mod outside_tests {
    use super::*;

    const HOLD_MAX: usize = 32 * 1024;

    #[test]
    fn with_no_look_awaited_a_line_asks() {
        assert_eq!(outside_answer(false, 1050, 0, 0, HOLD_MAX), Outside::Ask);
        assert_eq!(outside_answer(true, 1050, 0, 0, HOLD_MAX), Outside::Ask);
    }

    #[test]
    fn the_lines_after_it_wait_for_the_look() {
        assert_eq!(
            outside_answer(false, 1150, 1100, 100, HOLD_MAX),
            Outside::Wait
        );
        assert_eq!(
            outside_answer(true, 1199, 1100, HOLD_MAX - 1, HOLD_MAX),
            Outside::Wait
        );
    }

    #[test]
    fn a_look_nobody_answers_lets_the_last_answer_stand() {
        assert_eq!(
            outside_answer(false, 1200, 1100, 0, HOLD_MAX),
            Outside::LastSeen(false)
        );
        assert_eq!(
            outside_answer(true, 5000, 1100, 0, HOLD_MAX),
            Outside::LastSeen(true)
        );
    }

    #[test]
    fn a_burst_while_python_is_busy_goes_on_before_the_buffer_is_full() {
        assert_eq!(
            outside_answer(false, 1110, 1100, HOLD_MAX, HOLD_MAX),
            Outside::LastSeen(false)
        );
        assert_eq!(
            outside_answer(true, 1110, 1100, HOLD_MAX, HOLD_MAX),
            Outside::LastSeen(true)
        );
    }
}
