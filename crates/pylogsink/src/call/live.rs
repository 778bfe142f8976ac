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

use super::interrupt::is_interrupt;
use super::stderr::{sealed_pending, stderr_is_own, take_sealed};
use super::write::{write_through_python, Written};
use crate::control::stall_wait;
use crate::core::queue::{for_stream_pending, for_stream_take, for_stream_to_fd2, write_fd2};
use crate::core::shared::Shared;
use crate::core::thread::ThreadState;
use crate::dest::pending::queue;
use crate::dest::Taken;
use crate::record::lock;
use pyo3::prelude::*;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

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
/// would; where that fails or there is no stream, to fd 2 instead. Returns
/// an exception a signal handler raised meanwhile (a `KeyboardInterrupt`),
/// for the caller to raise; other errors are reported as unraisable.
pub(crate) fn write_lines(
    py: Python<'_>,
    stream: Option<Py<PyAny>>,
    lines: Taken,
) -> Option<PyErr> {
    if lines.text.is_empty() {
        return None;
    }
    let Some(stream) = stream else {
        py.detach(|| write_fd2(lines, stall_wait()));
        return None;
    };
    match write_through_python(py, Ok(stream.into_bound(py)), &lines.text) {
        Written::All => None,
        Written::ButFlushFailed(err) => interrupt_or_report(py, err),
        Written::NoStream => {
            py.detach(|| write_fd2(lines, stall_wait()));
            None
        }
        Written::Failed(err) => {
            let interrupt = interrupt_or_report(py, err);
            py.detach(|| write_fd2(lines, stall_wait()));
            interrupt
        }
    }
}

/// `err` if it is an interrupt, for the caller to raise; else reported as
/// unraisable.
fn interrupt_or_report(py: Python<'_>, err: PyErr) -> Option<PyErr> {
    if is_interrupt(py, &err) {
        return Some(err);
    }
    err.write_unraisable(py, None);
    None
}

/// Who hands over what waits outside any call: one thread at a time, so
/// that a stream's lines keep their order and a thread that looks can
/// wait for a delivery under way. 0 for nobody, else the holder's
/// [`thread_token`].
static TURN: AtomicUsize = AtomicUsize::new(0);

/// The longest a thread waits for another's delivery to end.
const TURN_WAIT: Duration = Duration::from_secs(1);

/// An address that names the calling thread while it lives.
fn thread_token() -> usize {
    thread_local! {
        static TOKEN: u8 = const { 0 };
    }
    TOKEN.with(|t| t as *const u8 as usize)
}

/// The turn to hand over what waits outside any call, until dropped.
pub(crate) struct Turn(());

impl Turn {
    /// Takes the turn, waiting with the GIL released while another thread
    /// has it, at most [`TURN_WAIT`]. `None` if this thread has it already
    /// (a delivery that Python code re-entered) or the other kept it.
    pub(crate) fn take(py: Python<'_>) -> Option<Turn> {
        let me = thread_token();
        let try_take = || TURN.compare_exchange(0, me, Ordering::AcqRel, Ordering::Acquire);
        match try_take() {
            Ok(_) => return Some(Turn(())),
            Err(holder) if holder == me => return None,
            Err(_) => {}
        }
        let deadline = Instant::now() + TURN_WAIT;
        py.detach(|| loop {
            std::thread::sleep(Duration::from_micros(100));
            if try_take().is_ok() {
                return Some(Turn(()));
            }
            if Instant::now() >= deadline {
                return None;
            }
        })
    }

    /// The turn to hand over what waits outside any call unasked
    /// (pylogsink's thread, a safe point of the main thread): `None` while
    /// it is held for a Jupyter kernel's next cell ([`queue::held`]) too.
    /// Held is read once the turn is taken, never before: a cell's end
    /// holds first and takes the turn next, so a delivery either ends
    /// before the cell's end hands over (which waits for its turn), or
    /// sees what waits held. Read before, a delivery that waited for the
    /// turn would write after the cell ended, where front ends drop it.
    pub(crate) fn take_unless_held(py: Python<'_>) -> Option<Turn> {
        let turn = Turn::take(py)?;
        (!queue::held()).then_some(turn)
    }

    /// Whether a thread has the turn: a delivery is under way, whose
    /// lines or records are no longer where they waited.
    pub(crate) fn taken() -> bool {
        TURN.load(Ordering::Acquire) != 0
    }

    /// In a forked child: the thread that had the turn is the parent's.
    pub(crate) fn after_fork_in_child() {
        TURN.store(0, Ordering::Release);
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        TURN.store(0, Ordering::Release);
    }
}

/// Writes the lines logged outside any call, with the turn (after a
/// delivery under way): see [`write_outside_lines_in`].
pub(crate) fn write_outside_lines(py: Python<'_>) -> Option<PyErr> {
    if !for_stream_pending() && !sealed_pending() && !Turn::taken() {
        return None;
    }
    let turn = Turn::take(py)?;
    write_outside_lines_in(py, &turn)
}

/// Writes the lines logged outside any call, unless they are held for a
/// Jupyter kernel's next cell: see [`Turn::take_unless_held`].
pub(crate) fn write_outside_lines_unless_held(py: Python<'_>) -> Option<PyErr> {
    if !for_stream_pending() && !sealed_pending() {
        return None;
    }
    let turn = Turn::take_unless_held(py)?;
    write_outside_lines_in(py, &turn)
}

/// Writes the lines logged outside any call: first those kept for a
/// stream replaced since ([`super::stderr::seal`]), to it; then those for
/// the replaced `sys.stderr`, to `sys.stderr` as it is now (to fd 2 if it
/// is the process's own again). Returns an interrupt raised meanwhile.
pub(crate) fn write_outside_lines_in(py: Python<'_>, _turn: &Turn) -> Option<PyErr> {
    let mut interrupt = None;
    for (stream, lines) in take_sealed() {
        let err = write_lines(py, stream, lines);
        interrupt = interrupt.or(err);
    }
    if !for_stream_pending() {
        return interrupt;
    }
    if stderr_is_own(py) {
        py.detach(|| for_stream_to_fd2(stall_wait()));
        return interrupt;
    }
    let lines = for_stream_take();
    let stream = super::capi::sys_attr(py, c"stderr")
        .ok()
        .filter(|s| !s.is_none())
        .map(Bound::unbind);
    interrupt.or(write_lines(py, stream, lines))
}
