//! The drain thread: reads the pipes whenever they hold bytes, cuts them
//! into lines and passes them on, without ever taking the GIL, so that a
//! writer never blocks on a pipe whatever the GIL is doing.

use super::streams::{Stream, Waiting, STATE, STREAMS};
use crate::control::stall_wait;
use crate::dest::capture::{hold_reading, CapturedTo, Held, BUDGET, PARTIAL_MAX};
use crate::dest::fd;
use crate::dest::pending::queue::wake_for_calls;
use crate::record::lock;
use crate::sys;
use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::Ordering;
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// How long the drain thread waits before it tries again to write lines
/// that found no room on an original descriptor.
const RETRY: Duration = Duration::from_millis(10);

/// How often the drain thread looks whether Python took the lines of a
/// pipe it leaves unread ([`hold_reading`]).
const PAUSE: Duration = Duration::from_millis(2);

/// The most the drain thread reads from a pipe before it passes the
/// lines on: a quarter of the budget, so that an original descriptor that
/// keeps up never costs a line.
const ROUND: usize = BUDGET / 4;

/// The most the drain thread reads at the end of a capture: a child
/// process that inherited the pipe may go on writing to it.
const LAST_READ_MAX: usize = 16 * 1024 * 1024;

/// The drain thread: reads the pipes whenever they hold bytes, cuts them
/// into lines, and passes them on; ends when the control pipe says so,
/// after reading the pipes empty.
pub(super) fn drain(mut reads: [RawFd; 2], control: RawFd) {
    let mut buffer = vec![0u8; 64 * 1024];
    let mut held = [Held::default(); 2];
    loop {
        let now = Instant::now();
        let (wake, mut paused) = next_wake(&reads, &mut held, now);
        let polled = [
            control,
            if paused[0] { -1 } else { reads[0] },
            if paused[1] { -1 } else { reads[1] },
        ];
        let timeout = wake.map(|at| at.saturating_duration_since(now));
        let [asked_now, _, _] = sys::wait_readable(polled, timeout);
        let (last, sync) = if asked_now {
            asked(control)
        } else {
            (false, false)
        };
        // Read everything written so far: at the end, or for a sync.
        let finish = last || sync;
        read_rounds(&mut reads, &mut buffer, &mut held, &mut paused, finish);
        if finish {
            *lock(&SYNCED) += 1;
            SYNC_DONE.notify_all();
        }
        if last {
            return;
        }
    }
}

/// When the drain thread must look again though no pipe has bytes (a line
/// is due, lines found no room on an original descriptor, a pipe is left
/// unread for a while), and which pipes it leaves unread for now
/// ([`pause`]).
fn next_wake(
    reads: &[RawFd; 2],
    held: &mut [Held; 2],
    now: Instant,
) -> (Option<Instant>, [bool; 2]) {
    let soonest = |a: Option<Instant>, b: Instant| Some(a.map_or(b, |a| a.min(b)));
    let mut wake = None;
    let mut paused = [false; 2];
    for (index, (stream, &read)) in STREAMS.iter().zip(reads).enumerate() {
        if read < 0 && !stream.active.load(Ordering::Relaxed) {
            continue;
        }
        let waiting = lock(&stream.waiting);
        let mut due = waiting.lines.due();
        let to_python = stream.to_python.load(Ordering::Relaxed);
        if !to_python && !waiting.kept.is_empty() {
            due = soonest(due, now + RETRY);
        }
        drop(waiting);
        paused[index] = pause(stream, &mut held[index], now);
        if paused[index] {
            due = soonest(due, now + PAUSE);
        }
        if let Some(due) = due {
            wake = soonest(wake, due);
        }
    }
    (wake, paused)
}

/// Reads the pipes a round at a time ([`ROUND`] each at most), cuts what
/// came into lines and passes them on; once, or at the end (`finish`)
/// until everything written before is read.
fn read_rounds(
    reads: &mut [RawFd; 2],
    buffer: &mut [u8],
    held: &mut [Held; 2],
    paused: &mut [bool; 2],
    finish: bool,
) {
    let mut total = 0;
    let mut stalled = [false; 2];
    loop {
        let round = read_round(reads, buffer, held, paused, finish);
        total += round.read;
        cut_lines(round.empty, finish && !round.more);
        // An original descriptor that is slow (a terminal, a pipe read by
        // another process) gets the stall wait per piece, as pylogsink's
        // own lines do; one that stalls for longer costs lines (counted in
        // a note) rather than block the writers, since the pipes are read
        // again in between. At the end, an original descriptor that found
        // no room once is not waited for again: the end comes in bounded
        // time.
        for (stream, stalled) in STREAMS.iter().zip(stalled.iter_mut()) {
            let wait = if *stalled {
                Duration::ZERO
            } else {
                stall_wait()
            };
            *stalled |= !pass_on(stream, wait) && finish;
        }
        // At the end, everything written before the descriptors were
        // restored is read, however many rounds it takes.
        if !(finish && round.more && total < LAST_READ_MAX) {
            return;
        }
        if round.waited {
            std::thread::sleep(PAUSE);
        }
    }
}

/// What one round of [`read_round`] found.
struct Round {
    /// Bytes read, counted by rounds that hit the limit.
    read: usize,
    /// A pipe may hold more (or waits for Python at the end).
    more: bool,
    /// A pipe was left unread, waiting for Python.
    waited: bool,
    /// Which pipes were read empty.
    empty: [bool; 2],
}

/// Reads each pipe once, up to [`ROUND`] bytes, unless it is left unread
/// ([`pause`], looked at again at the end: Python, with the GIL free, is
/// still waited for then). A pipe no writer holds any more is done with.
fn read_round(
    reads: &mut [RawFd; 2],
    buffer: &mut [u8],
    held: &mut [Held; 2],
    paused: &mut [bool; 2],
    finish: bool,
) -> Round {
    let mut round = Round {
        read: 0,
        more: false,
        waited: false,
        empty: [true; 2],
    };
    for (index, (stream, read)) in STREAMS.iter().zip(reads.iter_mut()).enumerate() {
        if *read < 0 {
            continue;
        }
        if finish {
            paused[index] = pause(stream, &mut held[index], Instant::now());
        }
        if paused[index] {
            round.more |= finish;
            round.waited = true;
            round.empty[index] = false;
            continue;
        }
        match read_pipe(stream, *read, buffer, ROUND) {
            Read::Empty => {}
            Read::More => {
                round.more = true;
                round.empty[index] = false;
                round.read += ROUND;
            }
            // Every writer closed it: nothing more will come.
            Read::End => *read = -1,
        }
    }
    round
}

/// Ends the lines that are due in the pipes read empty, or every line
/// (`all`, at the end): a line is due only once its pipe was read empty,
/// since its end may be next in the pipe.
fn cut_lines(empty: [bool; 2], all: bool) {
    let now = Instant::now();
    for (stream, empty) in STREAMS.iter().zip(empty) {
        let mut waiting = lock(&stream.waiting);
        let Waiting { kept, lines, .. } = &mut *waiting;
        let mut out = |text: &[u8], rest: bool| kept.push_text_from(text, rest);
        if all {
            lines.flush(&mut out);
        } else if empty {
            lines.flush_due(now, &mut out);
        }
    }
}

/// What the control pipe asks: (end, sync). An end that comes with a sync
/// answers both.
fn asked(control: RawFd) -> (bool, bool) {
    let mut asks = [0u8; 64];
    // `control` is the non-blocking read end of the control pipe.
    let n = sys::read(control, &mut asks).unwrap_or(0);
    let asks = &asks[..n];
    (asks.contains(&b'q'), asks.contains(&b's'))
}

/// How many times the drain thread read everything written before it was
/// asked (a sync, or the end of a capture).
static SYNCED: Mutex<u64> = Mutex::new(0);

/// Wakes the threads in [`sync`] when [`SYNCED`] moves.
static SYNC_DONE: Condvar = Condvar::new();

/// Waits (at most 1 s) until the drain thread has read everything written
/// to the captured descriptors so far (C stdio flushed first) and passed
/// it on; what goes to Python then waits for [`take_for_python`](super::take_for_python). Does
/// nothing without a capture.
pub(crate) fn sync() {
    sys::flush_c_stdio();
    let before = *lock(&SYNCED);
    {
        let state = lock(&STATE);
        if state.depth == 0 || state.control[1] < 0 {
            return;
        }
        // The control pipe's write end stays open while the lock is held.
        let _ = sys::write(state.control[1], b"s");
    }
    let deadline = Instant::now() + Duration::from_secs(1);
    let mut synced = lock(&SYNCED);
    while *synced == before {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return;
        }
        synced = SYNC_DONE
            .wait_timeout(synced, left)
            .unwrap_or_else(|e| e.into_inner())
            .0;
    }
}

/// Whether to leave `stream`'s pipe unread for now: its lines fill the
/// budget and their route does not take them ([`hold_reading`]).
fn pause(stream: &Stream, held: &mut Held, now: Instant) -> bool {
    let waiting = lock(&stream.waiting);
    let full = waiting.kept.len_bytes() + ROUND + PARTIAL_MAX > BUDGET;
    // Python writes lines it took (`handed`): it is taking.
    let writing = !waiting.handed.is_empty();
    drop(waiting);
    let route = if stream.to_python.load(Ordering::Relaxed) {
        CapturedTo::Python
    } else {
        CapturedTo::Original
    };
    let takes = stream.takes.load(Ordering::Acquire);
    let paused = hold_reading(route, full, takes, writing, held, now, stall_wait());
    stream.paused.store(paused, Ordering::Release);
    paused
}

/// Whether a writer waits for Python to take captured lines: whoever
/// takes them should not linger.
#[inline]
pub(crate) fn pressing() -> bool {
    STREAMS.iter().any(|s| s.paused.load(Ordering::Acquire))
}

/// What [`read_pipe`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Read {
    /// The pipe is empty now.
    Empty,
    /// The limit came first: more may wait.
    More,
    /// No writer is left (or the pipe failed).
    End,
}

/// Reads `read` until it is empty or `limit` bytes came, and cuts what
/// came into lines.
pub(super) fn read_pipe(stream: &Stream, read: RawFd, buffer: &mut [u8], limit: usize) -> Read {
    let _reading = lock(&stream.reading);
    let mut total = 0;
    while total < limit {
        let size = buffer.len().min(limit - total);
        // Bytes out of the pipe are in the lines before the crash handler
        // can look: it waits for `waiting`.
        let mut waiting = lock(&stream.waiting);
        match sys::read(read, &mut buffer[..size]) {
            Ok(0) => return Read::End,
            Ok(n) => {
                total += n;
                let Waiting { kept, lines, .. } = &mut *waiting;
                lines.feed(&buffer[..n], Instant::now(), &mut |text, rest| {
                    kept.push_text_from(text, rest)
                });
            }
            Err(err) => match err.kind() {
                io::ErrorKind::Interrupted => {}
                io::ErrorKind::WouldBlock => return Read::Empty,
                _ => return Read::End,
            },
        }
    }
    Read::More
}

/// Passes on what waits in `stream`: tells pylogsink's Python thread, or
/// writes it to the original descriptor, each piece waiting for room at
/// most `wait`; what finds none waits for the next try.
/// False if lines for an original descriptor found no room.
pub(super) fn pass_on(stream: &Stream, wait: Duration) -> bool {
    if stream.to_python.load(Ordering::Relaxed) {
        if !lock(&stream.waiting).kept.is_empty() {
            stream.pending.store(true, Ordering::Release);
            wake_for_calls();
        }
        return true;
    }
    let saved = stream.saved.load(Ordering::Relaxed);
    if saved < 0 {
        return true;
    }
    let taken = lock(&stream.waiting).kept.take();
    if taken.text.is_empty() {
        return true;
    }
    let written = fd::write_with_room(saved, &taken.text, wait);
    let all = written == taken.text.len();
    lock(&stream.waiting).kept.put_back(taken, written);
    all
}
