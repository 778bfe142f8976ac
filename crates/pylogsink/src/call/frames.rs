//! The main thread's Python stack, as a pending call finds it: whether it
//! is inside a stream's `write`, a `logging` handler, a notebook's cell.
//!
//! A pending call runs wherever the main thread was at a bytecode
//! boundary; what it may do there depends on what that thread was doing,
//! which only its frames tell.

use super::capi::frame_functions;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyString;
use std::sync::OnceLock;

/// One frame: the dict of its module's globals and its function's name.
pub(crate) struct Frame<'py> {
    pub(crate) globals: Option<Bound<'py, PyAny>>,
    pub(crate) name: Option<Bound<'py, PyAny>>,
}

impl Frame<'_> {
    /// Whether its function is named `name`.
    pub(crate) fn named(&self, name: &std::ffi::CStr) -> bool {
        self.name.as_ref().is_some_and(|own| {
            // SAFETY: the GIL is held (the `Bound`) and `own` is a live
            // `str` (a code object's `co_name`); the call does not raise.
            unsafe { ffi::PyUnicode_CompareWithASCIIString(own.as_ptr(), name.as_ptr()) == 0 }
        })
    }

    /// Whether its module is the one whose dict is at `dict`.
    pub(crate) fn in_module(&self, dict: usize) -> bool {
        self.globals
            .as_ref()
            .is_some_and(|g| g.as_ptr() as usize == dict)
    }
}

/// The interned name `co_name`, made at [`prepare`] (not with `intern!`,
/// whose cell is filled with the GIL released: see `logging`'s `State`).
static CO_NAME: OnceLock<Py<PyString>> = OnceLock::new();

/// Finds what [`any`] needs, with the GIL held: at init.
pub(crate) fn prepare(py: Python<'_>) {
    let _ = frame_functions(py);
    let _ = CO_NAME.set(PyString::intern(py, "co_name").unbind());
}

/// Whether `found` holds for a frame of the calling thread's stack, from
/// the innermost out; `None` where the frames cannot be read.
pub(crate) fn any(py: Python<'_>, mut found: impl FnMut(&Frame<'_>) -> bool) -> Option<bool> {
    let (functions, co_name) = (frame_functions(py)?, CO_NAME.get()?);
    // SAFETY: the GIL is held (`py`). `PyEval_GetFrame` returns a borrowed
    // reference to the current frame (or NULL), which the new reference
    // taken here keeps alive; `PyFrame_GetCode` and the frame functions
    // return new references (or NULL), which `from_owned_ptr` takes over.
    unsafe {
        let current = ffi::PyEval_GetFrame().cast::<ffi::PyObject>();
        if current.is_null() {
            return Some(false);
        }
        let mut frame = Bound::from_borrowed_ptr(py, current);
        loop {
            let globals = (functions.globals)(frame.as_ptr());
            let code = ffi::PyFrame_GetCode(frame.as_ptr().cast()).cast::<ffi::PyObject>();
            let code = (!code.is_null()).then(|| Bound::from_owned_ptr(py, code));
            let this = Frame {
                globals: (!globals.is_null()).then(|| Bound::from_owned_ptr(py, globals)),
                name: code.and_then(|code| code.getattr(co_name.bind(py)).ok()),
            };
            if found(&this) {
                return Some(true);
            }
            let back = (functions.back)(frame.as_ptr());
            if back.is_null() {
                return Some(false);
            }
            frame = Bound::from_owned_ptr(py, back);
        }
    }
}

/// The dicts of those of `names` that are imported, for
/// [`Frame::in_module`].
pub(crate) fn module_dicts(py: Python<'_>, names: &[&str]) -> Vec<usize> {
    let Ok(modules) = super::capi::sys_attr(py, c"modules") else {
        return Vec::new();
    };
    names
        .iter()
        .filter_map(|name| modules.get_item(name).ok())
        .filter_map(|module| module.getattr("__dict__").ok())
        .map(|dict| dict.as_ptr() as usize)
        .collect()
}
