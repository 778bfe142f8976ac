//! By the time Python looks: what native threads logged outside any call
//! is handed over at the main thread's next safe point.
//!
//! A Python thread that writes a line has written it by the time another
//! thread joins it; a C library call that logs and raises has logged by
//! the time the `except` runs. pylogsink's own Python thread takes lines
//! logged outside any call some milliseconds later, too late for the
//! statement after a join: pytest would show them in the next test,
//! `redirect_stderr` would have ended, `os._exit` would have run. So the
//! first line (or record) of a burst asks CPython, with
//! `Py_AddPendingCall`, to run [`at_safe_point`] on the main thread at
//! its next bytecode boundary; that needs no GIL and never blocks for long
//! ([`crate::dest::prompt`] keeps one request in flight). A thread joined
//! with the GIL released, a C call returned: the pending call runs before
//! the statement after it, and hands over what waits into the stream (or
//! the handlers) current then.
//!
//! Three rules keep it safe:
//!
//! - Never into a stream or handler the main thread is itself inside: a
//!   pending call may land in the middle of a Python-level `write` or a
//!   `logging` handler, which may hold a lock that is not re-entrant. Then
//!   it hands over nothing, and pylogsink's Python thread, which was woken
//!   with the first line, delivers as another thread would ([`inside`]).
//! - One delivery at a time ([`live::Turn`]): a pending call that finds
//!   pylogsink's thread delivering waits for it, with the GIL released,
//!   so that nothing taken is still on its way when the main thread looks.
//! - At most a share of the main thread's time while native threads log
//!   without pause ([`prompt`]'s rule).
//! - None after the exit began: a pending call asked for once the
//!   interpreter is finalizing would find it torn down. The exit closes
//!   the way in ([`close`]) and waits for a thread that is asking.
//!
//! Only the main thread runs pending calls: a thread other than the main
//! one that looks gets what waits from pylogsink's thread, as before.

use super::{cells, frames, live, logging};
use crate::core::thread::THREAD;
use crate::dest::pending::queue;
use crate::dest::prompt;
use pyo3::ffi;
use pyo3::prelude::*;
use std::ffi::c_void;
use std::os::raw::c_int;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};

/// Whether no pending call may be asked for: before init, and once the
/// exit began.
static CLOSED: AtomicBool = AtomicBool::new(true);

/// Threads inside [`ask`], which [`close`] waits for.
static ASKING: AtomicUsize = AtomicUsize::new(0);

/// At init, with the GIL held: from now on the first line of a burst asks
/// for a pending call.
pub(crate) fn open(py: Python<'_>) {
    // Found now, with the GIL: the pending call needs them.
    frames::prepare(py);
    prompt::set_asker(ask);
    CLOSED.store(false, SeqCst);
}

/// At the exit (or a worker's end), with the GIL held: no pending call is
/// asked for from now on. Waits for the threads that are asking: none of
/// them waits for the GIL.
pub(crate) fn close() {
    CLOSED.store(true, SeqCst);
    while ASKING.load(SeqCst) > 0 {
        std::thread::yield_now();
    }
}

/// Asks for [`at_safe_point`]: any thread, GIL or not.
fn ask() {
    ASKING.fetch_add(1, SeqCst);
    let asked = !CLOSED.load(SeqCst)
        // SAFETY: `Py_AddPendingCall` may be called from any thread,
        // without the GIL and without a thread state; the interpreter is
        // alive while the way in is open (see `close`). The function has
        // the signature CPython expects and lives as long as the process.
        && unsafe { ffi::Py_AddPendingCall(Some(at_safe_point), std::ptr::null_mut()) } == 0;
    ASKING.fetch_sub(1, SeqCst);
    if !asked {
        // Closed, or CPython's queue of pending calls is full: pylogsink's
        // thread, woken with the same line, delivers.
        prompt::answered();
    }
}

/// The pending call: run by CPython on the main thread, with the GIL held,
/// at a bytecode boundary. Returns -1 with the exception set when a signal
/// handler raised during a write (a `KeyboardInterrupt`), which then
/// reaches the code that was running, as the signal's own would.
extern "C" fn at_safe_point(_: *mut c_void) -> c_int {
    if CLOSED.load(SeqCst) {
        prompt::answered();
        return 0;
    }
    prompt::answering();
    let raised = std::panic::catch_unwind(|| {
        // SAFETY: CPython runs pending calls with the GIL held; `py` lives
        // only until this closure returns.
        let py = unsafe { Python::assume_attached() };
        match deliver_here(py) {
            Some(err) => {
                err.restore(py);
                true
            }
            None => false,
        }
    });
    prompt::answer_ends();
    match raised {
        Ok(true) => -1,
        _ => 0,
    }
}

/// Hands over what waits outside any call, unless the main thread is
/// inside a writer or a handler, or a Jupyter kernel is between cells.
fn deliver_here(py: Python<'_>) -> Option<PyErr> {
    // A kernel started after pylogsink (imported from a `.pth` file, or
    // before IPython): its cells' hooks are set up at the first chance.
    cells::register_late(py);
    if queue::held() || inside(py) {
        return None;
    }
    // After a delivery under way by another thread, whose lines and
    // records are no longer where they waited; unless a cell ended
    // meanwhile.
    let turn = live::Turn::take_unless_held(py)?;
    let lines = live::write_outside_lines_in(py, &turn);
    let records = logging::deliver_queue_in(py, &turn);
    lines.or(records)
}

/// Modules whose code may hold a lock that a delivery takes: `logging`'s
/// handlers and module lock, a `queue.Queue` (which a `QueueHandler` puts
/// into) and multiprocessing's queues.
const GUARDED_MODULES: [&str; 4] = [
    "logging",
    "logging.handlers",
    "queue",
    "multiprocessing.queues",
];

/// Functions whose frame means a stream is being written.
const GUARDED_FUNCTIONS: [&std::ffi::CStr; 3] = [c"write", c"writelines", c"flush"];

/// Whether the main thread is, where the pending call landed, inside a
/// stream's `write` (pylogsink's own, or any Python-level one), or inside
/// code of [`GUARDED_MODULES`]: a frame on its stack says so. Also true
/// where the frames cannot be read.
fn inside(py: Python<'_>) -> bool {
    if THREAD.try_with(|t| t.writing_kept.get()).unwrap_or(true) {
        return true;
    }
    let guarded = frames::module_dicts(py, &GUARDED_MODULES);
    frames::any(py, |frame| {
        guarded.iter().any(|dict| frame.in_module(*dict))
            || GUARDED_FUNCTIONS.iter().any(|name| frame.named(name))
    })
    .unwrap_or(true)
}
