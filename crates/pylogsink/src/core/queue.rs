//! The process-wide queue: lines logged outside any call that found no
//! room on fd 2.
//!
//! A worker thread of a runtime, module init or a destructor logs outside
//! any call: nobody will write its lines at a return. What finds no room on
//! fd 2 within the stall wait waits here (its newest 64 KiB) and is written
//! first at the next chance: before the next direct line, at a call's
//! return, at exit. Writing it costs one atomic load while it is empty.

use super::stats::{count_noted, count_records_noted};
use crate::dest::fd;
use crate::dest::pending::Batch;
use crate::dest::route::{on_no_room, NoRoom, Sink};
use crate::dest::{Kept, Taken, CAP};
use crate::record::{lock, HeldForFork};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

/// Writes a buffer's lines (its note first) to fd 2, each piece waiting for
/// room at most `wait`; puts back what finds no room. True if nothing is
/// left. The lock is not held while writing.
pub(crate) fn write_buffer(buffer: &Mutex<Kept>, wait: Duration) -> bool {
    let taken = lock(buffer).take();
    if taken.text.is_empty() {
        return true;
    }
    let written = fd::write_with_room(fd::stderr(), &taken.text, wait);
    if written >= taken.note_len {
        count_noted(&taken);
    }
    let all = written == taken.text.len();
    lock(buffer).put_back(taken, written);
    all
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
    // A note that went out counts its lines now; one that did not joins
    // the queue's note, which counts them when it goes out.
    if written >= taken.note_len {
        count_noted(&taken);
    }
    if written < taken.text.len() {
        queue().append(taken, written);
        QUEUE_PENDING.store(true, Ordering::Release);
    }
}

/// Writes a record to fd 2 after whatever waits in the queue. What finds
/// no room within `wait` goes where [`on_no_room`] says: the queue, or
/// `keep` (for a call, which then counts as stalled), with whether it is
/// the rest of a line already started.
#[inline(always)]
pub(crate) fn write_direct(
    sink: Sink,
    record: &[u8],
    wait: Duration,
    keep: impl FnOnce(&[u8], bool),
) {
    let written = if write_queue(wait) {
        fd::write_with_room(fd::stderr(), record, wait)
    } else {
        0
    };
    if written < record.len() {
        let rest = &record[written..];
        match on_no_room(sink) {
            NoRoom::KeepAndStall => keep(rest, written > 0),
            NoRoom::Queue => queue_push(rest, written > 0),
        }
    }
}

static QUEUE: Mutex<Kept> = Mutex::new(Kept::with_cap(CAP));
static QUEUE_PENDING: AtomicBool = AtomicBool::new(false);

fn queue() -> MutexGuard<'static, Kept> {
    lock(&QUEUE)
}

/// Adds a record that found no room on fd 2 to the process-wide queue.
pub(crate) fn queue_push(record: &[u8], is_rest: bool) {
    queue().push_record(record, is_rest);
    QUEUE_PENDING.store(true, Ordering::Release);
}

/// Whether lines wait in the process-wide queue.
#[inline]
pub(crate) fn queue_pending() -> bool {
    QUEUE_PENDING.load(Ordering::Acquire)
}

/// Writes the process-wide queue to fd 2, waiting at most `wait`. True if
/// the queue is empty afterwards. Costs one atomic load when it is empty.
pub(crate) fn write_queue(wait: Duration) -> bool {
    if !queue_pending() || !QUEUE_PENDING.swap(false, Ordering::AcqRel) {
        return true;
    }
    if write_buffer(&QUEUE, wait) {
        return true;
    }
    QUEUE_PENDING.store(true, Ordering::Release);
    false
}

/// Queues a batch of records for `logging` as text lines for fd 2.
pub(crate) fn queue_pending_as_text(batch: &Batch) {
    count_records_noted(batch);
    let mut queue = queue();
    batch.each_line(|line| queue.push(line));
    QUEUE_PENDING.store(true, Ordering::Release);
}

/// The queue's lock, held across a fork. The child starts with an empty
/// queue: what waited is the parent's to write.
pub(crate) fn hold_for_fork() -> HeldForFork {
    let mut queue = queue();
    Box::new(move |child| {
        if child {
            drop(queue.take());
            QUEUE_PENDING.store(false, Ordering::Release);
        }
    })
}

/// Adds what a thread kept to the queue (at exit, when its call can no
/// longer write it).
pub(crate) fn append(taken: Taken) {
    if !taken.text.is_empty() {
        queue().append(taken, 0);
        QUEUE_PENDING.store(true, Ordering::Release);
    }
}

/// Hands the queue to `text`, from a signal handler: the lock is only
/// tried. Returns 1 if it was held, else 0.
pub(crate) fn visit(text: &mut dyn FnMut(&Kept)) -> usize {
    match QUEUE.try_lock() {
        Ok(queue) => {
            text(&queue);
            0
        }
        Err(_) => 1,
    }
}
