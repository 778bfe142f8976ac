//! Which interpreter the caller runs in.
//!
//! Why: pylogsink's Python side lives as long as the process (the thread
//! that delivers records to `logging`, the streams and callables it keeps),
//! so it must belong to the interpreter that does too, the main one. A
//! subinterpreter that started that thread cannot end while it runs
//! (CPython 3.12 aborts in `Py_EndInterpreter`: "thread still has a
//! frame"), so pylogsink is not set up from one.

use pyo3::ffi;
use pyo3::prelude::*;

/// Whether the calling thread runs in the main interpreter, the one whose
/// ID is 0 (the limited API has no `PyInterpreterState_Main`).
#[doc(hidden)]
pub fn in_main_interpreter(_py: Python<'_>) -> bool {
    // SAFETY: the GIL is held (`_py`), so the thread has a current thread
    // state and `PyInterpreterState_Get` returns its interpreter, never
    // NULL; `PyInterpreterState_GetID` fails only for NULL. Both are in the
    // limited API since 3.9.
    let id = unsafe { ffi::PyInterpreterState_GetID(ffi::PyInterpreterState_Get()) };
    id == 0
}
