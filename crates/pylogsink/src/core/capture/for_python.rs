//! What the Python edge takes from the capture: the lines for a replaced
//! `sys.stdout` / `sys.stderr`, read at once before a Python write to the
//! same stream so that the order holds, and the copies of Python's own
//! writes that come back through the pipes (a tee).

use super::streams::{Stream, Waiting, STDERR, STDOUT, STREAMS};
use crate::control::stall_wait;
use crate::dest::capture::{BUDGET, PARTIAL_MAX};
use crate::dest::fd;
use crate::dest::{Kept, Taken};
use crate::record::lock;
use crate::sys;
use std::io;
use std::sync::atomic::Ordering;
use std::time::Instant;

// A stream that copies what it is given to the process's own stdout or
// stderr (pytest's `--capture=tee-sys`, a logging tee) writes that copy to
// fd 1 or fd 2, into the capture's pipe: the copy would be captured and
// given to the stream again, for ever. The copy of a write through Python
// is found among the lines that came into the pipes meanwhile
// ([`take_echo`]) and written to the original descriptor instead
// (`call::echo` decides which writes are looked at).

/// How far the lines waiting for Python in one stream went when a write
/// through Python began: what comes after may be that write's copy.
#[derive(Clone, Copy)]
pub(crate) struct Mark {
    pub(super) len: usize,
    pub(super) left_out: (u64, u64),
}

/// The [`Mark`] of each stream whose lines go to Python.
pub(crate) fn echo_marks() -> [Option<Mark>; 2] {
    [STDOUT, STDERR].map(|index| {
        to_python(index).then(|| {
            let waiting = lock(&STREAMS[index].waiting);
            Mark {
                len: waiting.kept.len_bytes(),
                left_out: waiting.kept.left_out(),
            }
        })
    })
}

/// Whether `line` is among the newest lines waiting for Python in either
/// stream: a line that native code writes again and again, whose copy
/// could not be told from the next one.
pub(crate) fn waiting_holds(line: &[u8]) -> bool {
    [STDOUT, STDERR]
        .into_iter()
        .any(|index| to_python(index) && lock(&STREAMS[index].waiting).kept.holds_line(line, 256))
}

/// After a write of `text` through Python began at `marks`: reads the
/// pipes, and takes the first copy of `text` that came back into either
/// (its lines, each perhaps with more around it: [`Kept::remove_copy`])
/// out of the lines for Python, writing it to that descriptor's original
/// instead. True if a copy came back.
pub(crate) fn take_echo(marks: [Option<Mark>; 2], text: &[u8]) -> bool {
    let mut found = false;
    for (index, mark) in [STDOUT, STDERR].into_iter().zip(marks) {
        let Some(mark) = mark else { continue };
        let _ = catch_up(index, &mut None);
        let stream = &STREAMS[index];
        let copy = {
            let mut waiting = lock(&stream.waiting);
            let kept = &mut waiting.kept;
            // Lines left out since the mark: where it was is not known.
            if kept.left_out() == mark.left_out {
                kept.remove_copy(mark.len, text)
            } else {
                None
            }
        };
        if let Some(copy) = copy {
            let saved = stream.saved.load(Ordering::Relaxed);
            fd::write_with_room(saved, &copy, stall_wait());
            found = true;
        }
    }
    found
}

/// Whether captured lines wait for Python.
#[inline]
pub(crate) fn pending_for_python() -> bool {
    STREAMS.iter().any(|s| s.pending.load(Ordering::Acquire))
}

/// Takes the lines of stream `index` that wait for Python. Until
/// [`handed_over`], the crash handler still has a copy.
pub(crate) fn take_for_python(index: usize) -> Taken {
    take(&STREAMS[index])
}

/// [`take_for_python`] for one stream.
pub(super) fn take(stream: &Stream) -> Taken {
    if !stream.pending.swap(false, Ordering::AcqRel) {
        return Taken::default();
    }
    let mut waiting = lock(&stream.waiting);
    let taken = waiting.kept.take();
    waiting.handed = Kept::with_cap(BUDGET);
    waiting.handed.append(taken.clone(), 0);
    drop(waiting);
    stream.takes.fetch_add(1, Ordering::Release);
    taken
}

/// The lines of stream `index` that Python took last are written (or
/// written elsewhere): the crash handler no longer needs its copy.
pub(crate) fn handed_over(index: usize) {
    let stream = &STREAMS[index];
    forget_handed(stream);
    // Python is taking: a finished write counts as a take.
    stream.takes.fetch_add(1, Ordering::Release);
}

/// [`handed_over`] for one stream.
pub(super) fn forget_handed(stream: &Stream) {
    let old = std::mem::replace(&mut lock(&stream.waiting).handed, Kept::with_cap(BUDGET));
    drop(old); // freed outside the lock
}

/// Writes lines that Python could not take to stream `index`'s original
/// descriptor (fd 2's for pylogsink's lines if there is no copy), each
/// piece waiting for room at most the stall wait.
pub(crate) fn write_original(index: usize, taken: Taken) {
    if taken.text.is_empty() {
        return;
    }
    let saved = STREAMS[index].saved.load(Ordering::Relaxed);
    let to = if saved >= 0 { saved } else { fd::stderr() };
    fd::write_with_room(to, &taken.text, stall_wait());
}

/// Whether anything written to the captured descriptor `index` before
/// this call may still be on its way to Python: in the pipe, read but not
/// yet cut into lines, or in lines that wait for Python. A false answer is
/// final for what was written before: the bytes only move on, and only a
/// thread that holds the GIL hands them to Python (one under way is
/// [`crate::call::capture`]'s to wait for). A line not yet ended does not
/// count: it waits for its end. Costs an `ioctl` while a capture is on.
pub(crate) fn may_wait(index: usize) -> bool {
    if !to_python(index) {
        return false;
    }
    let stream = &STREAMS[index];
    // Looked at in the order the bytes move: the pipe, a reader's hands,
    // the lines that wait.
    if unread(stream) > 0 {
        return true;
    }
    stream.reading.try_lock().is_err() || !lock(&stream.waiting).kept.is_empty()
}

/// Whether captured descriptor `index`'s lines go to Python now.
pub(crate) fn to_python(index: usize) -> bool {
    let stream = &STREAMS[index];
    stream.active.load(Ordering::Acquire) && stream.to_python.load(Ordering::Relaxed)
}

/// How many bytes wait in `stream`'s pipe (0 without one).
pub(super) fn unread(stream: &Stream) -> usize {
    let _reading = lock(&stream.reading);
    // `read` is the pipe's open read end, closed only under `reading`.
    let read = stream.read.load(Ordering::Acquire);
    if read < 0 {
        return 0;
    }
    sys::unread(read).unwrap_or(0)
}

/// Reads what waits in the pipe of captured descriptor `index` into its
/// lines for Python, as the drain thread would, but at once: for a Python
/// write to the same stream, which must come after it. `left` is how much
/// is still to read of what was there at the first call (set then); each
/// call reads no more than the budget has room for, so the caller hands
/// the lines to Python and calls again while it returns false.
pub(crate) fn catch_up(index: usize, left: &mut Option<usize>) -> bool {
    let stream = &STREAMS[index];
    let _reading = lock(&stream.reading);
    let read = stream.read.load(Ordering::Acquire);
    if read < 0 || !stream.to_python.load(Ordering::Relaxed) {
        return true;
    }
    // `reading` is held.
    let left = left.get_or_insert_with(|| sys::unread(read).unwrap_or(0));
    let kept = lock(&stream.waiting).kept.len_bytes();
    let mut room = BUDGET.saturating_sub(kept + PARTIAL_MAX).min(*left);
    let mut chunk = [0u8; 4096];
    while room > 0 {
        let size = chunk.len().min(room);
        // Bytes out of the pipe are in the lines before the crash handler
        // can look: it waits for `waiting`.
        let mut waiting = lock(&stream.waiting);
        // `read` is the non-blocking read end, open while `reading` is held.
        let n = match sys::read(read, &mut chunk[..size]) {
            Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
            Ok(n) if n > 0 => n,
            _ => {
                // The pipe failed: nothing to wait for.
                *left = 0;
                break;
            }
        };
        room -= n;
        *left -= n;
        let Waiting { kept, lines, .. } = &mut *waiting;
        lines.feed(&chunk[..n], Instant::now(), &mut |text, rest| {
            kept.push_text_from(text, rest)
        });
    }
    if !lock(&stream.waiting).kept.is_empty() {
        stream.pending.store(true, Ordering::Release);
    }
    *left == 0
}
