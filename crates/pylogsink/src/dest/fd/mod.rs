//! Writing to fd 2 without ever blocking longer than the caller allows.
//!
//! fd 2 may be a terminal nobody reads, or a pipe that a *Python* thread
//! drains (Jupyter, `wurlitzer.pipes()`) and that cannot drain while we
//! hold the GIL. A plain blocking write there can hang forever, and fd 2
//! is shared with the rest of the process, so making it non-blocking is
//! not ours to do. Each platform has its own way to write a piece only if
//! it finds room, and to wait for room until a deadline ([`posix`] on
//! Linux and macOS, [`windows`]); what is shared is here: the pieces, the
//! deadline, the count of what a failed descriptor took.
//!
//! A piece is at most [`PIPE_BUF`] bytes and ends at a line end where it
//! can, so lines of up to 4096 bytes go out in one write and lines from
//! several threads never mix on a pipe.

#[cfg(unix)]
mod posix;
#[cfg(unix)]
pub(crate) use posix::{
    check_stderr, hold_for_fork, stderr_was_closed, takes_parts_now, write_from_signal_handler,
    write_line_now,
};
#[cfg(unix)]
use posix::{isatty, write_piece};

#[cfg(windows)]
mod windows;
#[cfg(windows)]
pub(crate) use windows::{
    check_stderr, hold_for_fork, stderr_was_closed, takes_parts_now, write_from_signal_handler,
    write_line_now,
};
#[cfg(windows)]
use windows::{isatty, write_piece};

use crate::sys::RawFd;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::time::Duration;

/// The process's standard error.
pub(crate) const STDERR: RawFd = 2;

/// The least a piece waits at a crash while the reader keeps up (see
/// [`write_from_signal_handler`]): long enough for a hand-over to
/// pylogsink's writer thread on a loaded machine (Windows under wine).
const CRASH_GRACE: Duration = Duration::from_millis(50);

/// Where pylogsink's lines go: fd 2, or, while an output capture has
/// pointed fd 2 at its pipe ([`crate::core::capture`]), the copy it made
/// of what fd 2 was before, so that pylogsink's own lines never go round
/// through the capture; in unit tests, a pipe or file of the test's own
/// ([`redirect_for_test`]), so that routing can be checked without Python
/// and without touching the test runner's own fd 2.
#[inline(always)]
pub(crate) fn stderr() -> RawFd {
    #[cfg(test)]
    return TEST_TARGET.load(Ordering::Relaxed);
    #[cfg(not(test))]
    TARGET.load(Ordering::Relaxed)
}

/// See [`stderr`]: fd 2, or the capture's copy of the original.
#[cfg_attr(test, allow(dead_code))]
static TARGET: AtomicI32 = AtomicI32::new(STDERR);

/// Points pylogsink's lines at `fd`, a descriptor that stays open for
/// the rest of the process (a late writer may still use it), or back at
/// fd 2 ([`STDERR`]).
#[cfg_attr(windows, allow(dead_code))] // the output capture's alone
pub(crate) fn set_stderr_target(fd: RawFd) {
    TARGET.store(fd, Ordering::Relaxed);
}

#[cfg(test)]
static TEST_TARGET: AtomicI32 = AtomicI32::new(STDERR);

/// Points [`stderr`] at `fd`; returns what it pointed at before. The
/// caller holds [`serial`](crate::record::serial).
#[cfg(all(test, unix))]
pub(crate) fn redirect_for_test(fd: RawFd) -> RawFd {
    TEST_TARGET.swap(fd, Ordering::Relaxed)
}

/// The most bytes one `write(2)` to a pipe carries without mixing with
/// other writers (POSIX `PIPE_BUF` on Linux).
pub(crate) const PIPE_BUF: usize = 4096;

/// Bytes that could not be written because fd 2 failed (closed, `EPIPE`,
/// `EBADF`). Nothing else could be done with them; they are counted so
/// that the accounting stays whole.
pub(super) static FAILED_BYTES: AtomicU64 = AtomicU64::new(0);

/// Bytes dropped because fd 2 failed, since the process started.
pub(crate) fn failed_bytes() -> u64 {
    FAILED_BYTES.load(Ordering::Relaxed)
}

/// How long the next piece of `text` is: all of it if it fits in
/// [`PIPE_BUF`], else up to the last line end within [`PIPE_BUF`] bytes,
/// else (a line longer than that) [`PIPE_BUF`] bytes.
pub(crate) fn next_piece(text: &[u8]) -> usize {
    next_piece_within(text, PIPE_BUF)
}

/// [`next_piece`] of at most `most` bytes.
pub(crate) fn next_piece_within(text: &[u8], most: usize) -> usize {
    if text.len() <= most {
        return text.len();
    }
    match text[..most].iter().rposition(|&b| b == b'\n') {
        Some(end) => end + 1,
        None => most,
    }
}

/// Writes as much of `text` to `fd` as finds room, each piece waiting for
/// room at most `wait`. Returns how many bytes went out (or were dropped
/// because `fd` failed); the rest found no room.
#[inline(always)]
pub(crate) fn write_with_room(fd: RawFd, text: &[u8], wait: Duration) -> usize {
    // The usual text, one line, is one piece: no loop to go round unless
    // fd 2 took part of it (a terminal, a socket).
    let mut done = 0;
    if text.len() <= PIPE_BUF {
        match write_piece(fd, text, wait) {
            Some(n) if n >= text.len() => return n,
            Some(n) => done = n,
            None => return 0,
        }
    }
    write_pieces(fd, text, done, wait)
}

/// [`write_with_room`] for text longer than a piece, or of which `done`
/// bytes went out.
#[inline(never)]
fn write_pieces(fd: RawFd, text: &[u8], mut done: usize, wait: Duration) -> usize {
    while done < text.len() {
        let piece = &text[done..done + next_piece(&text[done..])];
        match write_piece(fd, piece, wait) {
            Some(n) => done += n,
            None => break,
        }
    }
    done
}

/// Whether fd 2 may be a terminal: set where a write found a character
/// device there, cleared where [`stderr_is_terminal`] found it is not.
pub(super) static TERMINAL: AtomicBool = AtomicBool::new(false);

/// Looks at fd 2 now: is it a terminal? Done once at init.
pub(crate) fn check_terminal() {
    TERMINAL.store(isatty(stderr()), Ordering::Relaxed);
}

/// Whether fd 2 is a terminal. Costs one load where it was not one when
/// last seen (a pipe or a file, where the answer matters most and a
/// system call per line would cost most), and an `isatty` where it was:
/// a terminal is slow to write to anyway, and this way a terminal that
/// was swapped for a pipe (`dup2`, as `wurlitzer` does) never gets color.
pub(crate) fn stderr_is_terminal() -> bool {
    if !TERMINAL.load(Ordering::Relaxed) {
        return false;
    }
    let now = isatty(stderr());
    if !now {
        TERMINAL.store(false, Ordering::Relaxed);
    }
    now
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_end_at_line_ends() {
        assert_eq!(next_piece(b"short\n"), 6);
        let mut text = vec![b'a'; 3000];
        text.push(b'\n');
        text.extend(vec![b'b'; 3000]);
        text.push(b'\n');
        assert_eq!(next_piece(&text), 3001);
        assert_eq!(next_piece(&vec![b'c'; 10_000]), PIPE_BUF);
    }
}
