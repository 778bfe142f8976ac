//! The Python side of live delivery ([`crate::core::live`]): what a call in
//! progress needs for its lines and records to be handed over by another
//! thread, as its own return would hand them over.
//!
//! At an outermost call's entry, where it matters, the call's thread keeps
//! here the `sys.stderr` it found replaced (the stream its lines go to)
//! and, with the `logging` destination, a copy of its `contextvars`
//! context (so that filters that read context variables see the caller's
//! values). pylogsink's delivery thread (`logging`) finds them by the
//! thread's shared state and the call's number.

use super::stderr::stderr_is_own;
use super::write::{write_through_python, Written};
use crate::control::stall_wait;
use crate::core::queue::{for_stream_pending, for_stream_take, for_stream_to_fd2, write_fd2};
use crate::core::shared::Shared;
use crate::core::thread::ThreadState;
use crate::dest::Taken;
use crate::record::lock;
use pyo3::prelude::*;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, Weak};

/// One thread's call in progress: its number, the stream its lines go to
/// and the context it was entered in.
struct CallObjects {
    shared: Weak<Shared>,
    call: u64,
    stream: Option<Py<PyAny>>,
    context: Option<Py<PyAny>>,
}

/// One entry per thread that entered a call where it mattered; a thread's
/// next call replaces its entry. Locked with the GIL held only, and never
/// across Python code, so no thread holds it across a `fork()` from Python.
static CALLS: Mutex<Vec<CallObjects>> = Mutex::new(Vec::new());

/// Keeps what `t`'s call in progress needs: `stream`, its replaced
/// `sys.stderr`, and `context`, its `contextvars` context.
pub(crate) fn keep(t: &ThreadState, stream: Option<Py<PyAny>>, context: Option<Py<PyAny>>) {
    let call = t.shared.call.load(Ordering::Relaxed);
    let own = Arc::as_ptr(&t.shared);
    let mut calls = lock(&CALLS);
    // What is replaced is dropped once the lock is let go: dropping a
    // Python object may run Python code, which may make a call.
    let replaced = match calls
        .iter_mut()
        .find(|c| std::ptr::eq(c.shared.as_ptr(), own))
    {
        // The thread's next call: its entry, in place.
        Some(entry) => {
            entry.call = call;
            vec![
                std::mem::replace(&mut entry.stream, stream),
                std::mem::replace(&mut entry.context, context),
            ]
        }
        // A thread's first: the entries of threads that ended go.
        None => {
            let (ended, live): (Vec<_>, Vec<_>) = std::mem::take(&mut *calls)
                .into_iter()
                .partition(|c| c.shared.strong_count() == 0);
            *calls = live;
            calls.push(CallObjects {
                shared: Arc::downgrade(&t.shared),
                call,
                stream,
                context,
            });
            ended
                .into_iter()
                .flat_map(|c| [c.stream, c.context])
                .collect()
        }
    };
    drop(calls);
    drop(replaced);
}

/// The stream and the context kept for `shared`'s call number `call`.
pub(crate) fn objects_of(
    py: Python<'_>,
    shared: &Arc<Shared>,
    call: u64,
) -> (Option<Py<PyAny>>, Option<Py<PyAny>>) {
    let calls = lock(&CALLS);
    let found = calls
        .iter()
        .find(|c| c.call == call && std::ptr::eq(c.shared.as_ptr(), Arc::as_ptr(shared)));
    match found {
        Some(c) => (
            c.stream.as_ref().map(|s| s.clone_ref(py)),
            c.context.as_ref().map(|c| c.clone_ref(py)),
        ),
        None => (None, None),
    }
}

/// The stream and the context kept for `shared`'s last call (which has
/// just ended, and whose return hands them over).
pub(crate) fn last_objects(
    py: Python<'_>,
    shared: &Arc<Shared>,
) -> (Option<Py<PyAny>>, Option<Py<PyAny>>) {
    let calls = lock(&CALLS);
    match calls
        .iter()
        .find(|c| std::ptr::eq(c.shared.as_ptr(), Arc::as_ptr(shared)))
    {
        Some(c) => (
            c.stream.as_ref().map(|s| s.clone_ref(py)),
            c.context.as_ref().map(|c| c.clone_ref(py)),
        ),
        None => (None, None),
    }
}

/// Writes lines taken from a call in progress to its stream, as its return
/// would; where that fails or there is no stream, to fd 2 instead.
pub(crate) fn write_lines(py: Python<'_>, stream: Option<Py<PyAny>>, lines: Taken) {
    if lines.text.is_empty() {
        return;
    }
    let Some(stream) = stream else {
        return py.detach(|| write_fd2(lines, stall_wait()));
    };
    match write_through_python(py, Ok(stream.into_bound(py)), &lines.text) {
        Written::All => {}
        Written::ButFlushFailed(err) => err.write_unraisable(py, None),
        Written::NoStream => py.detach(|| write_fd2(lines, stall_wait())),
        Written::Failed(err) => {
            err.write_unraisable(py, None);
            py.detach(|| write_fd2(lines, stall_wait()));
        }
    }
}

/// Writes the lines logged outside any call while `sys.stderr` was
/// replaced to `sys.stderr` as it is now (to fd 2 if it is the process's
/// own again).
pub(crate) fn write_outside_lines(py: Python<'_>) {
    if !for_stream_pending() {
        return;
    }
    if stderr_is_own(py) {
        return py.detach(|| for_stream_to_fd2(stall_wait()));
    }
    let lines = for_stream_take();
    let stream = py
        .import("sys")
        .and_then(|sys| sys.getattr("stderr"))
        .ok()
        .filter(|s| !s.is_none())
        .map(Bound::unbind);
    write_lines(py, stream, lines);
}
