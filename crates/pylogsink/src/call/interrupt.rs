//! Interrupts: the exceptions that must reach the caller.
//!
//! Writing a call's lines through `sys.stderr.write`, or handing records to
//! `logging`, runs Python code, and a signal handler may raise there (a
//! `KeyboardInterrupt` from Ctrl-C). That exception is the user's, not a
//! broken stream's: it must reach the caller once the lines are out, as
//! the original exception object.

use crate::core::thread::THREAD;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use std::cell::RefCell;

thread_local! {
    /// The interrupt that a [`flush_lines`](super::flush_lines) met, for
    /// the outermost call's return to raise.
    static KEPT: RefCell<Option<PyErr>> = const { RefCell::new(None) };
}

/// Keeps `err` for the current call's return; the first one kept stands
/// (a second Ctrl-C while the first waits says nothing new).
pub(crate) fn keep_for_return(err: PyErr) {
    let _ = KEPT.try_with(|kept| {
        let mut kept = kept.borrow_mut();
        if kept.is_none() {
            *kept = Some(err);
        }
    });
    let _ = THREAD.try_with(|t| t.interrupt_kept.set(true));
}

/// The interrupt kept for this return, if any; none is kept after it.
pub(crate) fn take_kept() -> Option<PyErr> {
    let kept = THREAD.try_with(|t| t.interrupt_kept.replace(false));
    if kept != Ok(true) {
        return None;
    }
    KEPT.try_with(|kept| kept.borrow_mut().take())
        .ok()
        .flatten()
}

/// The interrupt, to be raised where the caller is: its traceback, which
/// ends in the code it interrupted (a stream's `write`, `logging`'s
/// `makeRecord` or a handler), is dropped, so that Python's shows the line
/// that called the binding. The exception object stays the same.
pub(crate) fn raised_here(py: Python<'_>, err: PyErr) -> PyErr {
    let value = err.into_value(py).into_bound(py);
    // Where setting it fails, the traceback stays as it was.
    let _ = value.setattr("__traceback__", py.None());
    PyErr::from_value(value.into_any())
}

/// Whether an exception raised while the call's lines were written must
/// reach the caller: a `BaseException` that is not an `Exception`
/// (`KeyboardInterrupt`, `SystemExit`), or any exception raised by a
/// Python signal handler. Other exceptions come from a broken stream, and
/// the call's own result stands.
pub(crate) fn is_interrupt(py: Python<'_>, err: &PyErr) -> bool {
    !err.is_instance_of::<PyException>(py) || raised_in_signal_handler(py, err).unwrap_or(false)
}

/// Whether a frame of the exception's traceback runs a Python signal
/// handler installed with `signal.signal`.
fn raised_in_signal_handler(py: Python<'_>, err: &PyErr) -> PyResult<bool> {
    let signal = py.import("signal")?;
    let mut handlers = Vec::new();
    for signum in signal.call_method0("valid_signals")?.try_iter()? {
        let handler = signal.call_method1("getsignal", (signum?,))?;
        if let Ok(code) = handler.getattr("__code__") {
            handlers.push(code);
        }
    }
    let mut tb = err.traceback(py).map(|tb| tb.into_any());
    while let Some(frame) = tb {
        let code = frame.getattr("tb_frame")?.getattr("f_code")?;
        if handlers.iter().any(|h| h.is(&code)) {
            return Ok(true);
        }
        tb = Some(frame.getattr("tb_next")?).filter(|next| !next.is_none());
    }
    Ok(false)
}
