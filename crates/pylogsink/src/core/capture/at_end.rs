//! The capture at a crash, at a C `exit()` and across a `fork()`: what
//! waits reaches the original descriptors, and a child starts with none.

use super::redirect::{end, restore, Ending};
use super::streams::{close_all, is_on, Stream, ON, STATE, STDERR, STDOUT, STREAMS};
use crate::control::stall_wait;
use crate::dest::capture::BUDGET;
use crate::dest::fd;
use crate::dest::Kept;
use crate::record::{lock, lock_at_crash, HeldForFork};
use crate::sys;
use std::os::fd::RawFd;
use std::sync::atomic::Ordering;
use std::sync::MutexGuard;
use std::time::{Duration, Instant};

/// The C `atexit` hook, registered by the first capture. A native library
/// that gives up calls `exit()`, which runs the C `atexit` hooks and no
/// Python, while a capture may be on and its drain thread mid-read: the
/// line that explains the exit is then in a pipe or in the lines that
/// wait. Here they are taken from there ([`take_rest_at_exit`]) and from
/// the pipes ([`write_rest_at_crash`]) to the original descriptors, and
/// fd 1 and fd 2 point at the originals again, so that what C stdio
/// flushes after the hooks (a `printf` to a pipe waits in its buffer until
/// then) lands there too.
pub(super) extern "C" fn write_at_c_exit() {
    let _ = std::panic::catch_unwind(|| {
        if !is_on() {
            return;
        }
        // What C stdio holds goes into the pipes first, to be read below.
        sys::flush_c_stdio();
        let _reading = stop_reading_at_crash();
        let wait = stall_wait();
        // Lines Python took are being written by pylogsink's thread, which
        // can go on if the exiting thread let the GIL go: a moment for it
        // to finish, so that they are not written twice.
        let deadline = Instant::now() + wait;
        while STREAMS.iter().any(|s| !lock(&s.waiting).handed.is_empty())
            && Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(1));
        }
        let mut write = |fd: RawFd, text: &[u8]| {
            fd::write_with_room(fd, text, wait);
        };
        for stream in &STREAMS {
            if let Some((fd, text)) = take_rest_at_exit(stream) {
                write(fd, &text);
            }
        }
        write_rest_at_crash(&mut write, false);
        for stream in &STREAMS {
            restore(stream);
        }
    });
}

/// Hands each stream's waiting lines to `text` with the descriptor they go
/// to, for the crash handler (see [`lock_at_crash`]); returns how many
/// locks stayed held.
pub(crate) fn visit(text: &mut dyn FnMut(i32, &mut Kept)) -> usize {
    STREAMS
        .iter()
        .map(|stream| visit_stream(stream, text))
        .sum()
}

/// [`visit`] for one stream: the lines Python took and has not written
/// yet, then those that wait. 1 if its lock stayed held.
pub(super) fn visit_stream(stream: &Stream, text: &mut dyn FnMut(i32, &mut Kept)) -> usize {
    let saved = stream.saved.load(Ordering::Relaxed);
    if saved < 0 {
        return 0;
    }
    match lock_at_crash(&stream.waiting) {
        Some(mut waiting) => {
            text(saved, &mut waiting.handed);
            text(saved, &mut waiting.kept);
            0
        }
        None => 1,
    }
}

/// For the exit hook, in place of [`visit_stream`]: the lines Python took
/// and has not written yet, those that wait, and the line not yet ended,
/// with the descriptor they go to. Taken where a crash copies them: the
/// drain thread runs on until the process ends, and would write them a
/// second time. None if the stream has no original or its lock stayed held.
pub(super) fn take_rest_at_exit(stream: &Stream) -> Option<(RawFd, Vec<u8>)> {
    let saved = stream.saved.load(Ordering::Relaxed);
    if saved < 0 {
        return None;
    }
    let mut waiting = lock_at_crash(&stream.waiting)?;
    let handed = std::mem::replace(&mut waiting.handed, Kept::with_cap(BUDGET));
    let mut text = handed.lines_bytes().to_vec();
    text.extend_from_slice(&waiting.kept.take().text);
    waiting
        .lines
        .flush(&mut |line, _| text.extend_from_slice(line));
    drop(waiting);
    Some((saved, text))
}

/// For the crash handler, before [`visit`]: stops the pipes' reading
/// until the guards drop, so that no byte moves from a pipe into the lines
/// between the handler's look at the lines and its read of the pipes
/// (the drain thread runs on while the handler writes). A lock held on
/// (by the thread that crashed) is given up after [`lock_at_crash`]'s wait.
pub(crate) fn stop_reading_at_crash() -> [Option<MutexGuard<'static, ()>>; 2] {
    STREAMS
        .each_ref()
        .map(|stream| lock_at_crash(&stream.reading))
}

/// For the crash handler, after [`visit`]: hands `write` each stream's
/// line not yet ended, then what is still in its pipe, with the
/// descriptor it goes to. Async-signal-safe: a buffer on the stack, `read`
/// on the non-blocking read end, locks as [`lock_at_crash`] takes them.
/// With `forget` (a process that may live on), the line not yet ended is
/// let go of once written; what is read from a pipe is gone anyway.
pub(crate) fn write_rest_at_crash(write: &mut dyn FnMut(i32, &[u8]), forget: bool) {
    for stream in &STREAMS {
        if stream.active.load(Ordering::Acquire) {
            rest_at_crash(stream, write, forget);
        }
    }
}

/// [`write_rest_at_crash`] for one stream.
pub(super) fn rest_at_crash(stream: &Stream, write: &mut dyn FnMut(i32, &[u8]), forget: bool) {
    let saved = stream.saved.load(Ordering::Relaxed);
    if saved < 0 {
        return;
    }
    if let Some(mut waiting) = lock_at_crash(&stream.waiting) {
        if !waiting.lines.partial().is_empty() {
            write(saved, waiting.lines.partial());
            if forget {
                // Its start written: what follows is the rest of a line.
                waiting.lines.flush(&mut |_, _| {});
            }
        }
    }
    let read = stream.read.load(Ordering::Relaxed);
    let mut chunk = [0u8; 4096];
    for _ in 0..256 {
        if read < 0 {
            break;
        }
        // `read` is the non-blocking read end, or closed (EBADF).
        match sys::read(read, &mut chunk) {
            Ok(n) if n > 0 => write(saved, &chunk[..n]),
            _ => break,
        }
    }
}

/// The capture's locks, held across a fork. The child has no drain
/// thread: if a capture was on, its fd 1 and fd 2 go back to the
/// originals, its pipes are closed, and what waited is the parent's.
pub(crate) fn hold_for_fork() -> HeldForFork {
    let mut state = lock(&STATE);
    let reading = STREAMS.each_ref().map(|s| lock(&s.reading));
    let mut out = lock(&STREAMS[STDOUT].waiting);
    let mut err = lock(&STREAMS[STDERR].waiting);
    Box::new(move |child| {
        // `end` takes them again; the child has one thread.
        drop(reading);
        if child {
            for (stream, waiting) in STREAMS.iter().zip([&mut *out, &mut *err]) {
                end(stream, Ending::Close);
                stream.pending.store(false, Ordering::Relaxed);
                stream.to_python.store(false, Ordering::Relaxed);
                waiting.lines.clear();
                drop(waiting.kept.take());
                drop(std::mem::replace(
                    &mut waiting.handed,
                    Kept::with_cap(BUDGET),
                ));
            }
            close_all(&state.control);
            state.control = [-1, -1];
            state.depth = 0;
            ON.store(false, Ordering::Relaxed);
            // The thread does not exist here: its handle is not joined.
            std::mem::forget(state.thread.take());
        }
        drop(err);
        drop(out);
        drop(state);
    })
}
