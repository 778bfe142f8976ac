//! The registry of every live thread's shared state.
//!
//! What waits in a thread's call must not be lost when the process ends or
//! crashes while the call is in progress (a daemon thread inside a call at
//! exit, a segfault in another thread). So each thread registers its
//! [`Shared`] state here, weakly, and the exit flush, the crash handler
//! and `stats` walk the registry. Everything that runs at exit only tries
//! the locks, and the crash handler waits for one at most a moment: a
//! thread frozen while it held one is skipped rather than hang the exit.

use super::shared::Shared;
use super::stats::EMITTED_ELSEWHERE;
use super::{capture, queue};
use crate::dest::pending::{self, Batch, Pending};
use crate::dest::Kept;
use crate::record::{lock, lock_at_crash, HeldForFork};
use crate::sys;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, Once, Weak};
use std::time::Duration;

/// Takes the records of every thread that wait for `logging` (threads
/// whose buffer is locked are skipped), then the queue's.
pub(crate) fn take_all_pending() -> Vec<Batch> {
    let mut batches: Vec<Batch> = live_threads()
        .iter()
        .filter_map(|shared| shared.pending.try_lock().ok().map(|mut p| p.take()))
        .filter(|b| !b.is_empty())
        .collect();
    batches.push(pending::queue::take_now());
    batches
}

/// Every live thread's shared state, for the exit flush and `stats`.
static REGISTRY: Mutex<Vec<Weak<Shared>>> = Mutex::new(Vec::new());

/// Records emitted since the process started, by level.
pub(crate) fn emitted() -> [u64; 6] {
    let registry = lock(&REGISTRY);
    let mut total = EMITTED_ELSEWHERE.get();
    for shared in registry.iter().filter_map(Weak::upgrade) {
        for (sum, n) in total.iter_mut().zip(shared.emitted.get()) {
            *sum += n;
        }
    }
    total
}

pub(crate) fn register(shared: &Arc<Shared>) {
    static EXIT_HOOK: Once = Once::new();
    // `write_all_at_exit` never unwinds (it catches panics).
    EXIT_HOOK.call_once(|| sys::at_c_exit(write_all_at_exit));
    let mut registry = lock(&REGISTRY);
    registry.retain(|w| w.strong_count() > 0);
    registry.push(Arc::downgrade(shared));
}

/// Writes what every thread still keeps, then the queue, to fd 2, waiting
/// for room at most `wait`. Runs at exit: first from Python's `atexit`
/// (registered by the first call), while the interpreter is whole, then
/// from the C `atexit` hook for whatever daemon threads logged since.
pub(crate) fn write_everything(wait: Duration) {
    let registry = live_threads();
    // Records for `logging` that Python can no longer take: as text.
    for batch in take_all_pending().into_iter().filter(|b| !b.is_empty()) {
        queue::queue_pending_as_text(&batch);
    }
    // Lines logged outside any call for a replaced `sys.stderr` that
    // pylogsink's Python thread did not write.
    queue::append(queue::for_stream_take());
    for shared in registry {
        // A thread frozen inside `push` holds its lock: skip it rather
        // than hang the exit.
        if let Ok(mut kept) = shared.kept.try_lock() {
            let taken = kept.take();
            drop(kept);
            queue::append(taken);
        }
    }
    queue::write_queue(wait);
}

/// The registry's lock, held across a fork. The child has one thread, the
/// one that forked (`own`), and a registry of it alone.
pub(crate) fn hold_for_fork(own: Option<Arc<Shared>>) -> HeldForFork {
    let mut registry = lock(&REGISTRY);
    Box::new(move |child| {
        if child {
            registry.retain(|w| {
                own.as_ref()
                    .is_some_and(|own| std::ptr::eq(w.as_ptr(), Arc::as_ptr(own)))
            });
        }
    })
}

/// The shared state of every live thread; none if the registry is locked
/// (a thread frozen while it registers must not hang the exit).
pub(crate) fn live_threads() -> Vec<Arc<Shared>> {
    match REGISTRY.try_lock() {
        Ok(r) => r.iter().filter_map(Weak::upgrade).collect(),
        Err(_) => Vec::new(),
    }
}

/// Hands what waits to `text` and `record`, with the descriptor it goes to
/// (-1: fd 2), for the crash handler: the queues first, then every
/// thread's kept lines and records for `logging`. It allocates and frees
/// nothing and never blocks on a lock ([`lock_at_crash`]); returns how
/// many buffers it skipped because their lock stayed held.
pub(crate) fn visit_waiting(
    text: &mut dyn FnMut(i32, &mut Kept),
    records: &mut dyn FnMut(i32, &mut Pending),
) -> usize {
    let mut busy = pending::queue::visit(&mut |p| records(-1, p));
    busy += queue::visit(&mut |lines| text(-1, lines));
    let Some(registry) = lock_at_crash(&REGISTRY) else {
        return busy + 1 + capture::visit(text);
    };
    for weak in registry.iter() {
        let Some(shared) = weak.upgrade() else {
            continue;
        };
        let fd = shared.crash_fd.load(Ordering::Relaxed);
        match lock_at_crash(&shared.kept) {
            Some(mut kept) => text(fd, &mut kept),
            None => busy += 1,
        }
        match lock_at_crash(&shared.pending) {
            Some(mut pending) => records(fd, &mut pending),
            None => busy += 1,
        }
        // Dropping what may be the last reference would free memory.
        std::mem::forget(shared);
    }
    // Output captured from fd 1 and fd 2, to the original descriptors.
    busy + capture::visit(text)
}

/// The C `atexit` hook, after Python has finalized. It does not wait for
/// room: on CPython 3.10, a daemon thread that wakes after finalization may
/// crash the process on its own, so the process must not linger here.
extern "C" fn write_all_at_exit() {
    let _ = std::panic::catch_unwind(|| write_everything(Duration::ZERO));
}
