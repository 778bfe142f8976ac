//! Windows: standard error is a handle with no write that cannot block and
//! no `poll`.
//!
//! A file (or `NUL`) never waits for a reader: it is written at once. A
//! pipe nobody reads, or a console stopped by a selection, blocks a
//! `WriteFile` until the reader takes the bytes, and a pipe's free room
//! cannot be asked for (what the system reports is not kept up to date on
//! every system, and is always 0 under wine). So pieces for a pipe or a
//! console are written by one writer thread of pylogsink's own, and the
//! caller waits for that write at most its deadline. If the write is not
//! done by then, the caller cancels it (`CancelSynchronousIo`): the piece
//! found no room, and is kept, as on a full pipe elsewhere. If the cancel
//! does not take (a pipe that the system passes on to another one, as
//! wine does for a Linux pipe), the piece stays with the writer, which
//! writes it once the reader reads; until then later pieces find no room
//! at once, so one stalled reader costs one wait, not one per line.
//!
//! A question for room that may not wait (a stalled call's next line) is a
//! hand-over and a cancel: half a millisecond under wine. For
//! [`PROBE_GAP`] after one found no room, such questions are answered "no
//! room" without asking, so a call that logs into a pipe nobody reads runs
//! at the speed of its lines, which are kept, not at that of the cancels.

use super::{next_piece, stderr, CRASH_GRACE, FAILED_BYTES, TERMINAL};
use crate::record::{lock, HeldForFork};
use crate::sys::{self, HandleKind, RawFd, HANDLE};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// Windows has no write of several parts that cannot block: a line is
/// always made first, then written.
#[inline(always)]
pub(crate) fn takes_parts_now(_fd: RawFd) -> bool {
    false
}

/// Never called: see [`takes_parts_now`].
#[inline(always)]
pub(crate) fn write_line_now(_fd: RawFd, _parts: &[std::io::IoSlice<'_>]) -> usize {
    0
}

/// Writes one piece; `None` if there was no room within `wait`.
pub(super) fn write_piece(fd: RawFd, piece: &[u8], wait: Duration) -> Option<usize> {
    // Before asking what the handle is: each question is a system call,
    // which wine makes costly. A handle changed meanwhile (to a file) waits
    // for the gap's end, its lines kept in order.
    if wait.is_zero() && found_no_room_lately() {
        return None;
    }
    let handle = sys::handle_of(fd);
    match sys::handle_kind(handle) {
        HandleKind::File => match sys::write_handle(handle, piece) {
            Ok(n) if n > 0 => Some(n.min(piece.len())),
            _ => Some(failed(piece)),
        },
        HandleKind::Missing => Some(failed(piece)),
        HandleKind::Pipe | HandleKind::Console => {
            if fd == stderr() && sys::handle_kind(handle) == HandleKind::Console {
                TERMINAL.store(true, Ordering::Relaxed);
            }
            match writer().write(handle, piece, Instant::now() + wait) {
                Outcome::Written(0) => None,
                Outcome::Written(n) => Some(n.min(piece.len())),
                Outcome::InFlight => Some(piece.len()),
                Outcome::NoRoom => {
                    NO_ROOM_AT.store(micros_since_start(), Ordering::Relaxed);
                    None
                }
                Outcome::Failed => Some(failed(piece)),
            }
        }
    }
}

/// How long after a piece found no room a question that may not wait is
/// answered "no room" without asking the writer thread.
const PROBE_GAP: Duration = Duration::from_millis(5);

/// When a piece last found no room ([`micros_since_start`]; 0: never).
static NO_ROOM_AT: AtomicU64 = AtomicU64::new(0);

/// Microseconds since the first question, from 1 (0 stands for never).
fn micros_since_start() -> u64 {
    static START: OnceLock<Instant> = OnceLock::new();
    let start = *START.get_or_init(Instant::now);
    u64::try_from(start.elapsed().as_micros() + 1).unwrap_or(u64::MAX)
}

/// Whether a piece found no room less than [`PROBE_GAP`] ago.
fn found_no_room_lately() -> bool {
    let at = NO_ROOM_AT.load(Ordering::Relaxed);
    at != 0 && micros_since_start().saturating_sub(at) < PROBE_GAP.as_micros() as u64
}

/// Counts a piece that a failed handle took.
fn failed(piece: &[u8]) -> usize {
    FAILED_BYTES.fetch_add(piece.len() as u64, Ordering::Relaxed);
    piece.len()
}

/// Writes `text` to `fd` at a crash, each piece waiting for room until
/// `deadline`; true if everything went out.
///
/// Each piece for a pipe or a console is a hand-over to the writer thread,
/// and a crash may write thousands (one per record): their hand-overs
/// alone can outlast the deadline while the reader keeps up. So until a
/// piece finds no room, a piece past the deadline still waits
/// [`CRASH_GRACE`] (a write cancelled at once may be one that had room:
/// under wine the cancel can end a write to a pipe that is being read).
/// Once one found none, the reader counts as stalled: the rest wait only
/// until the deadline, and past it are not tried (each try would cost a
/// hand-over and a cancel).
pub(crate) fn write_from_signal_handler(fd: RawFd, text: &[u8], deadline: Instant) -> bool {
    static STALLED: AtomicBool = AtomicBool::new(false);
    let mut done = 0;
    while done < text.len() {
        let piece = &text[done..done + next_piece(&text[done..])];
        let mut wait = deadline.saturating_duration_since(Instant::now());
        if !STALLED.load(Ordering::Relaxed) {
            wait = wait.max(CRASH_GRACE);
        } else if wait.is_zero() {
            return false;
        }
        match write_piece(fd, piece, wait) {
            Some(n) => done += n,
            None => {
                STALLED.store(true, Ordering::Relaxed);
                return false;
            }
        }
    }
    true
}

/// fd 2 closed at start is a missing handle on Windows, whose pieces fail
/// (counted) without any question: nothing to note.
pub(crate) fn stderr_was_closed() {}

/// See [`stderr_was_closed`].
pub(crate) fn check_stderr() {}

/// Whether `fd` is a console that takes colour: one whose mode enables
/// virtual terminal sequences.
pub(super) fn isatty(fd: RawFd) -> bool {
    sys::console_takes_colour(sys::handle_of(fd))
}

/// No `fork` on Windows: nothing to hold.
pub(crate) fn hold_for_fork() -> HeldForFork {
    Box::new(|_child| {})
}

/// How a write through the writer thread went.
enum Outcome {
    /// Written, this many bytes.
    Written(usize),
    /// Not done by the deadline, and the cancel did not take: the writer
    /// writes it when the reader reads.
    InFlight,
    /// Not done by the deadline and cancelled, or a piece before it is
    /// still in flight: nothing written.
    NoRoom,
    /// The handle failed (a closed pipe).
    Failed,
}

/// The writer thread's one slot.
#[derive(Default)]
struct Slot {
    /// The piece to write and where.
    job: Option<(usize, Vec<u8>)>,
    /// True from a job's hand-over until its write returned.
    busy: bool,
    /// True while the caller that handed the job over waits for its
    /// result: no other job is handed over until that caller has taken it
    /// (or gave up on it), so a result only ever reaches the caller whose
    /// piece it is, and a cancel only ever ends that caller's write.
    owned: bool,
    /// What the last write returned: bytes written, or the error's code.
    result: Option<Result<usize, i32>>,
}

struct Writer {
    slot: Mutex<Slot>,
    changed: Condvar,
    /// The writer thread's handle, to cancel its write.
    thread: usize,
}

/// How long a cancel is retried: it misses while the writer has not yet
/// entered its write.
const CANCEL_TRIES: Duration = Duration::from_millis(10);

fn writer() -> &'static Writer {
    static WRITER: OnceLock<&'static Writer> = OnceLock::new();
    WRITER.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel();
        let spawned = std::thread::Builder::new()
            .name("pylogsink-writer".into())
            .stack_size(64 * 1024)
            .spawn(move || {
                let writer: &'static Writer = Box::leak(Box::new(Writer {
                    slot: Mutex::new(Slot::default()),
                    changed: Condvar::new(),
                    thread: sys::own_thread_handle() as usize,
                }));
                let _ = tx.send(writer);
                writer.run();
            });
        match spawned.ok().and_then(|_| rx.recv().ok()) {
            Some(writer) => writer,
            // No thread: a writer whose jobs nobody takes finds no room.
            None => Box::leak(Box::new(Writer {
                slot: Mutex::new(Slot {
                    busy: true,
                    ..Slot::default()
                }),
                changed: Condvar::new(),
                thread: 0,
            })),
        }
    })
}

impl Writer {
    /// The writer thread: one job at a time, written whole unless it fails.
    fn run(&self) {
        loop {
            let (handle, piece) = {
                let mut slot = lock(&self.slot);
                loop {
                    if let Some(job) = slot.job.take() {
                        break job;
                    }
                    slot = self.changed.wait(slot).unwrap_or_else(|e| e.into_inner());
                }
            };
            let mut done = 0;
            let result = loop {
                match sys::write_handle(handle as HANDLE, &piece[done..]) {
                    Ok(n) => {
                        done += n;
                        if done >= piece.len() || n == 0 {
                            break Ok(done);
                        }
                    }
                    Err(err) if done > 0 => {
                        drop(err);
                        break Ok(done);
                    }
                    Err(err) => break Err(err.raw_os_error().unwrap_or(0)),
                }
            };
            let mut slot = lock(&self.slot);
            slot.result = Some(result);
            slot.busy = false;
            self.changed.notify_all();
        }
    }

    /// Hands `piece` to the writer thread and waits for its write until
    /// `deadline`, then cancels it.
    fn write(&self, handle: HANDLE, piece: &[u8], deadline: Instant) -> Outcome {
        let mut slot = lock(&self.slot);
        // A piece before this one may still be in flight, or its caller
        // not have taken its result yet.
        while slot.busy || slot.owned {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Outcome::NoRoom;
            }
            slot = self.wait(slot, left);
        }
        slot.result = None;
        slot.busy = true;
        slot.owned = true;
        slot.job = Some((handle as usize, piece.to_vec()));
        self.changed.notify_all();
        while slot.result.is_none() {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            slot = self.wait(slot, left);
        }
        if slot.result.is_none() {
            // Cancelled, or taken by the writer thread meanwhile: retried
            // while the writer may not yet be in its write.
            let tries_end = Instant::now() + CANCEL_TRIES;
            while slot.result.is_none() && Instant::now() < tries_end {
                drop(slot);
                sys::cancel_write(self.thread as HANDLE);
                slot = lock(&self.slot);
                slot = self.wait(slot, Duration::from_millis(1));
            }
        }
        let outcome = match slot.result.take() {
            Some(Ok(n)) => Outcome::Written(n),
            Some(Err(code)) if sys::was_cancelled(code) => Outcome::NoRoom,
            Some(Err(_)) => Outcome::Failed,
            None => Outcome::InFlight,
        };
        // The next caller may hand its piece over (once the writer is
        // free, if this one stays in flight).
        slot.owned = false;
        self.changed.notify_all();
        outcome
    }

    fn wait<'a>(
        &self,
        slot: std::sync::MutexGuard<'a, Slot>,
        wait: Duration,
    ) -> std::sync::MutexGuard<'a, Slot> {
        match self.changed.wait_timeout(slot, wait) {
            Ok((slot, _)) => slot,
            Err(e) => e.into_inner().0,
        }
    }
}
