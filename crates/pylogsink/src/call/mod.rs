//! [`call`]: the boundary between Python and native code.
//!
//! Everything that touches Python happens here, at the two moments when the
//! thread is known to hold the GIL and no native lock: when the outermost
//! call starts (is `sys.stderr` the process's own?) and when it returns
//! (write the lines it kept). The log function itself never touches Python.

mod at_fork;
mod capi;
pub(crate) mod capture;
mod cells;
mod daemon;
mod echo;
mod errors;
mod exit;
mod frames;
mod interpreter;
mod interrupt;
mod ipython;
mod live;
pub(crate) mod logging;
mod safe_point;
mod stderr;
mod write;

pub use at_fork::leftovers as fork_leftovers;
pub(crate) use capi::python_runs;
pub use errors::error;
pub use interpreter::in_main_interpreter;
pub use stderr::stderr_check;

use crate::control::{stall_wait, to_logging};
use crate::core::live as core_live;
use crate::core::queue::{
    for_stream_pending, queue_pending, queue_pending_as_text, stderr_seen, write_fd2, write_queue,
};
use crate::core::thread::{ThreadState, THREAD};
use crate::dest::pending::queue;
use crate::dest::route::{return_plan, ReturnPlan};
use crate::dest::{Sink, Taken};
use daemon::{avoid_python, hand_over};
use interrupt::is_interrupt;
use pyo3::prelude::*;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use stderr::{stderr_is_own, surviving_fd};
use write::{write_through_python, Written};

/// Runs one binding call from Python into native code.
///
/// Wrap the body of every `#[pyfunction]` and `#[pymethods]` method that
/// may log. Lines logged during `f`, on this thread, follow the routing
/// rules: to fd 2 at once while `sys.stderr` is the process's own, kept and
/// written through `sys.stderr.write` when the outermost call returns once
/// it was replaced. Nested calls join the outermost one, and so does a part
/// of `f` that releases the GIL.
///
/// It is a function and not a guard object so that an exception raised
/// while the call's lines are written (a `KeyboardInterrupt` from Ctrl-C)
/// can reach the caller: it is returned instead of `f`'s result, with `f`'s
/// own error, if any, as its `__context__`.
///
/// It is [`call_enter`], `f`, then [`call_exit`].
///
/// ```no_run
/// use pyo3::prelude::*;
///
/// #[pyfunction]
/// fn load(py: Python<'_>, path: &str) -> PyResult<usize> {
///     pylogsink::call(py, || {
///         log::info!("loading {path}");
///         Ok(path.len())
///     })
/// }
/// ```
#[inline]
pub fn call<T>(py: Python<'_>, f: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    exit::arm(py);
    let mut f = Some(f);
    // One thread-local access for the whole call: enter, run, leave.
    let run = |t: &ThreadState| {
        enter(py, t);
        let result = std::panic::catch_unwind(AssertUnwindSafe(f.take().expect("runs once")));
        match (t.leave(), result) {
            // Most calls: nothing to write, no panic.
            (left, Ok(result)) if !must_write(left) => result,
            (left, result) => return_after_writing(py, left, result),
        }
    };
    match THREAD.try_with(run) {
        Ok(result) => result,
        // The thread is being torn down: there is no call state to keep.
        Err(_) => f.take().expect("not run yet")(),
    }
}

/// The end of a [`call`] that has lines or records to write, or panicked:
/// writes them, then resumes the panic, or returns `result`, or the
/// exception raised while they were written with `result`'s error as its
/// `__context__`.
#[cold]
#[inline(never)]
fn return_after_writing<T>(
    py: Python<'_>,
    left: Option<(Sink, bool)>,
    result: std::thread::Result<PyResult<T>>,
) -> PyResult<T> {
    let written = leave(py, left);
    let result = match result {
        Ok(result) => result,
        // The lines kept so far were written, as at any return; the panic
        // goes on, to become PyO3's PanicException.
        Err(panic) => std::panic::resume_unwind(panic),
    };
    match written {
        Ok(()) => result,
        Err(interrupt) => {
            if let Err(own) = result {
                set_context(py, &interrupt, own);
            }
            Err(interrupt)
        }
    }
}

/// Makes `context` the `__context__` of `err`: what `PyErr::set_context`
/// does, which PyO3 has only from 0.29 on.
#[doc(hidden)]
pub fn set_context(py: Python<'_>, err: &PyErr, context: PyErr) {
    // SAFETY: the GIL is held (`py`); `err.value` is a live exception
    // instance, and PyException_SetContext steals the new reference that
    // `into_ptr` hands over.
    unsafe {
        pyo3::ffi::PyException_SetContext(
            err.value(py).as_ptr(),
            context.into_value(py).into_ptr(),
        );
    }
}

/// Steps into a call: the first half of [`call`], for code that cannot
/// pass a closure (a C ABI, a scope object).
///
/// Every `call_enter` must be matched by one [`call_exit`] on the same
/// thread, with the GIL held at both; between them the thread may release
/// the GIL and take native locks, as inside [`call`]. Nested pairs join the
/// outermost one. A thread being torn down has no call state: then both
/// do nothing.
///
/// ```no_run
/// use pyo3::prelude::*;
///
/// // A binding whose entry and exit are two separate places (a scope object,
/// // a C ABI): the two halves of `call`.
/// fn binding(py: Python<'_>) -> PyResult<()> {
///     pylogsink::call_enter(py);
///     log::info!("inside the call");
///     pylogsink::call_exit(py)
/// }
/// ```
pub fn call_enter(py: Python<'_>) {
    exit::arm(py);
    let _ = THREAD.try_with(|t| enter(py, t));
}

/// Steps out of a call: the second half of [`call`]. Leaving the
/// outermost call writes the lines it kept (through `sys.stderr.write`, or
/// to fd 2 with the GIL released) and hands records over to `logging`.
///
/// Returns the exception that reached Python while the lines were written
/// (a `KeyboardInterrupt`, or an exception a signal handler raised), which
/// the binding must raise in place of its own result; an error of the
/// stream itself never comes back here (the lines go to fd 2 then). Must
/// follow a [`call_enter`] on the same thread, with the GIL held; an
/// unmatched `call_exit` does nothing.
///
/// Shown in the [`call_enter`] example.
pub fn call_exit(py: Python<'_>) -> PyResult<()> {
    match THREAD.try_with(ThreadState::leave) {
        Ok(left) => leave(py, left),
        Err(_) => Ok(()),
    }
}

/// Hands what the current call keeps to Python now, in the order logged:
/// lines for a replaced `sys.stderr`, records for `logging`, its attached
/// workers' too, then the lines and records logged outside any call that
/// wait. Then, like [`Python::check_signals`], returns the exception a
/// signal handler raised (a `KeyboardInterrupt` from Ctrl-C), which the
/// binding should return.
///
/// A call that holds the GIL delivers at its return: nothing else can run
/// Python meanwhile. A long loop that holds it on purpose calls `flush`
/// at its step boundaries to keep its progress live. The caller vouches
/// that it holds no native lock that another thread could wait for while
/// it holds the GIL (a handler runs Python code, and another thread may
/// run meanwhile). Outside a call, or with nothing waiting, it does
/// nothing and costs two loads and a compare, so a loop may call it at
/// every step.
///
/// ```no_run
/// use pyo3::prelude::*;
///
/// #[pyfunction]
/// fn train(py: Python<'_>, steps: usize) -> PyResult<()> {
///     pylogsink::call(py, || {
///         for step in 0..steps {
///             // ... one step, the GIL held ...
///             log::info!("Progress: {}%", 100 * (step + 1) / steps);
///             pylogsink::flush(py)?;
///         }
///         Ok(())
///     })
/// }
/// ```
#[inline]
pub fn flush(py: Python<'_>) -> PyResult<()> {
    match THREAD.try_with(ThreadState::flush_due) {
        Ok(Some(sink)) => flush_now(py, sink),
        _ => Ok(()),
    }
}

#[cold]
#[inline(never)]
fn flush_now(py: Python<'_>, sink: Sink) -> PyResult<()> {
    match hand_to_python(py, sink) {
        Some(err) => Err(err),
        None => py.check_signals(),
    }
}

/// What [`flush`] does, for code that has no `py` in scope (a helper
/// called from inside a [`call`] that holds the GIL), and the other choice
/// for Ctrl-C: the lines keep moving, and a `KeyboardInterrupt` (or any
/// exception a signal handler raises) waits for the call's return, which
/// raises it in place of the binding's result, as the original exception
/// object. The loop runs to its end unless the binding checks signals
/// itself.
///
/// Does something only where [`flush`] would, and only on a thread that
/// holds the GIL: inside [`Python::detach`], or outside a call, it does
/// nothing (the call's lines are delivered live there anyway). Costs what
/// `flush` costs when nothing waits. The same promise from the caller: no
/// native lock that another thread could wait for is held here.
///
/// ```no_run
/// use pyo3::prelude::*;
///
/// // A helper that knows nothing of Python, called while the GIL is held.
/// fn merge_step(step: usize) {
///     // ... the work of one step ...
///     log::info!("merge {step} done");
///     pylogsink::flush_lines();
/// }
///
/// #[pyfunction]
/// fn train(py: Python<'_>, steps: usize) -> PyResult<()> {
///     pylogsink::call(py, || {
///         for step in 0..steps {
///             merge_step(step);
///         }
///         Ok(())
///     })
/// }
/// ```
#[inline]
pub fn flush_lines() {
    if let Ok(Some(sink)) = THREAD.try_with(ThreadState::flush_due) {
        flush_lines_now(sink);
    }
}

#[cold]
#[inline(never)]
fn flush_lines_now(sink: Sink) {
    if capi::attached() != Some(true) {
        return;
    }
    // SAFETY: this thread holds the GIL (its thread state is attached),
    // and `py` lives only until this function returns, within that hold.
    let py = unsafe { Python::assume_attached() };
    if let Some(err) = hand_to_python(py, sink) {
        interrupt::keep_for_return(err);
    }
}

/// Hands what the call keeps to Python, as at its return: an exception
/// raised meanwhile that must reach the caller, if any.
fn hand_to_python(py: Python<'_>, sink: Sink) -> Option<PyErr> {
    if avoid_python(py) {
        return None;
    }
    wait_for_live_delivery(py);
    let written = write_text_at_return(py, sink);
    let delivered = deliver_at_return(py);
    written
        .or(delivered)
        .map(|err| interrupt::raised_here(py, err))
}

/// Starts the `logging` destination's Python side (its thread, its hooks),
/// for a destination chosen from Python before any call; what waits at
/// the end is delivered then ([`exit`]).
pub(crate) fn start_logging(py: Python<'_>) -> PyResult<()> {
    exit::arm(py);
    logging::start(py)
}

/// At [`crate::Builder::init`], with the GIL held: the lines logged
/// outside any call follow a replaced `sys.stderr` whether or not a call
/// was ever made, so pylogsink's Python thread, which writes them, starts
/// now (it waits without the GIL, costing nothing while idle), and learns
/// of every replacement from the watcher on `sys.__dict__` where there is
/// one. What waits at the end is written then, and in an IPython shell at
/// each cell's end.
pub(crate) fn at_init(py: Python<'_>) {
    // Python found fd 2 closed when it started (its `sys.__stderr__` is
    // None): whatever fd 2 is now, the program opened it.
    if stderr::was_closed_at_start(py) {
        crate::dest::fd::stderr_was_closed();
    }
    exit::arm_at_init(py);
    stderr::watch_at_init(py);
    cells::register_at_init(py);
    // Lines logged outside any call are handed over at the main thread's
    // next safe point.
    safe_point::open(py);
    // A native thread that finds a budget full waits for room only if it
    // does not hold the GIL (dest::patience): this is how it tells.
    capi::find_thread_state(py);
    crate::dest::patience::set_gil_check(capi::attached);
    // A record's thread is looked up among Python's only if it had a
    // Python thread state (an OS thread id is soon reused on Windows).
    crate::core::thread::set_python_thread_check(capi::has_thread_state);
    if let Err(err) = logging::ensure_thread(py) {
        err.write_unraisable(py, None);
    }
}

/// Steps `t` into a call; the outermost one looks at `sys.stderr`.
#[inline(always)]
fn enter(py: Python<'_>, t: &ThreadState) {
    let outermost = t.enter(|| stderr_is_own_now(py), || surviving_fd(py));
    if outermost {
        let to_logging = to_logging();
        if to_logging {
            logging::on_call_entry(py);
        }
        if to_logging || t.shared.sink() == Sink::Replaced {
            enter_live(py, t, to_logging);
        }
    }
}

/// `sys.stderr is sys.__stderr__`, asked at an outermost call's entry and
/// kept for the lines logged outside any call until it is asked again.
#[inline(always)]
fn stderr_is_own_now(py: Python<'_>) -> bool {
    let own = stderr_is_own(py);
    stderr_seen(!own, None);
    own
}

/// At the entry of an outermost call whose lines or records may be handed
/// over while it runs (see [`live`]): keeps the stream its lines go to and
/// the context its records are handled in, and makes sure pylogsink's
/// Python thread runs.
#[cold]
#[inline(never)]
fn enter_live(py: Python<'_>, t: &ThreadState, to_logging: bool) {
    let stream = match t.shared.sink() {
        Sink::Replaced => current_stderr(py).ok().map(Bound::unbind),
        _ => None,
    };
    let context = if to_logging {
        logging::copy_context(py)
    } else {
        None
    };
    live::keep(t, stream, context);
    if let Err(err) = logging::ensure_thread(py) {
        err.write_unraisable(py, None);
    }
}

/// After [`ThreadState::leave`]: if that left the outermost call, writes
/// what waits. The exception raised meanwhile, if any.
#[inline]
fn leave(py: Python<'_>, left: Option<(Sink, bool)>) -> PyResult<()> {
    match left {
        Some((sink, _)) if must_write(left) => {
            let written = write_at_return(py, sink);
            // An interrupt kept by `flush_lines` came first.
            interrupt::take_kept().or(written).map_or(Ok(()), Err)
        }
        _ => Ok(()),
    }
}

/// Whether [`ThreadState::leave`] left the outermost call, with lines or
/// records that may wait: the call's own, or the process-wide queue's.
#[inline(always)]
fn must_write(left: Option<(Sink, bool)>) -> bool {
    match left {
        Some((_, waiting)) => {
            waiting
                || queue_pending()
                || queue::waiting()
                || for_stream_pending()
                || stderr::sealed_pending()
        }
        None => false,
    }
}

/// Writes what the call kept, and what waits in the process-wide queue,
/// then hands the records that wait for `logging` over. Returns an
/// exception raised by a signal handler during the write, or by a handler.
fn write_at_return(py: Python<'_>, sink: Sink) -> Option<PyErr> {
    if avoid_python(py) {
        hand_over_at_return(py, sink);
        return None;
    }
    hand_to_python(py, sink)
}

/// Waits, with the GIL released, for what pylogsink's thread took from
/// this call while it ran to be handed over (see [`live`]), so that what
/// the return writes comes after it.
fn wait_for_live_delivery(py: Python<'_>) {
    let shared = THREAD.with(|t| Arc::clone(&t.shared));
    if shared.live.load(Ordering::Acquire) {
        py.detach(|| core_live::wait_handed_over(&shared));
    }
}

/// Hands the records for `logging` over: the call's, and those logged
/// outside any call.
fn deliver_at_return(py: Python<'_>) -> Option<PyErr> {
    let own = THREAD.with(|t| t.pending_any() || t.shared.live.load(Ordering::Relaxed));
    if !own && !queue::waiting() {
        return None;
    }
    logging::deliver_at_return(py)
}

/// The return of a thread that must avoid Python (the daemon rule, see
/// [`daemon`]): its records, and its lines for a replaced `sys.stderr`,
/// are handed to pylogsink's Python thread, and it waits for them; once
/// the exit closed the hand-over, they go to fd 2 as text. Lines kept
/// because fd 2 had no room go back to fd 2, without waiting.
fn hand_over_at_return(py: Python<'_>, sink: Sink) {
    let (shared, batch) = THREAD.with(|t| (Arc::clone(&t.shared), t.take_pending()));
    let lines = match return_plan(sink, true) {
        ReturnPlan::HandOver => THREAD.with(|t| t.take_kept()),
        _ => Taken::default(),
    };
    let objects = || live::last_objects(py, &shared);
    if let Err((lines, batch)) = hand_over::hand_over(py, lines, batch, objects, &shared.live) {
        queue_pending_as_text(&batch);
        write_fd2(lines, Duration::ZERO);
    }
    let rest = THREAD.with(|t| t.take_kept());
    write_fd2(rest, Duration::ZERO);
}

/// Writes what the call kept as text, and the process-wide queue.
fn write_text_at_return(py: Python<'_>, sink: Sink) -> Option<PyErr> {
    let taken = THREAD.with(|t| t.take_kept());
    // Lines logged outside any call for a replaced `sys.stderr`, which
    // pylogsink's thread has not written yet: before the call's own.
    let outside = live::write_outside_lines(py);
    let own = match return_plan(sink, false) {
        ReturnPlan::ThroughPython => {
            if queue_pending() {
                py.detach(|| write_queue(stall_wait()));
            }
            match write_through_python(py, current_stderr(py), &taken.text) {
                Written::All => None,
                Written::ButFlushFailed(err) => is_interrupt(py, &err).then_some(err),
                Written::NoStream => {
                    write_fd2_detached(py, taken);
                    None
                }
                Written::Failed(err) => {
                    // A repeat is better than a loss: the write may have
                    // failed part way, so everything goes to fd 2 too.
                    write_fd2_detached(py, taken);
                    is_interrupt(py, &err).then_some(err)
                }
            }
        }
        ReturnPlan::Fd2Detached => {
            write_fd2_detached(py, taken);
            None
        }
        ReturnPlan::Fd2NoWait | ReturnPlan::HandOver => {
            unreachable!("a thread that must avoid Python hands over")
        }
    };
    outside.or(own)
}

/// Writes the queue and then `taken` to fd 2 with the GIL released, so a
/// Python thread that drains fd 2 can run; what still finds no room after
/// the stall wait joins the queue.
fn write_fd2_detached(py: Python<'_>, taken: Taken) {
    py.detach(|| write_fd2(taken, stall_wait()));
}

/// `sys.stderr` now: `None` for `sys.stderr = None`.
fn current_stderr(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    capi::sys_attr(py, c"stderr")
}
