//! The C ABI of pylogsink, declared in `pylogsink.h` (the log functions
//! and levels in `pylogsink_emit.h`, which needs no Python header).
//!
//! The runtimes that meet the deadlock pylogsink exists for are mostly C
//! and C++ behind pybind11 or the Python C API, and they cannot use a Rust
//! crate. This crate gives them the entry points Rust extensions have, as
//! a static library shipped in the Python package with its headers. Each
//! function is a thin shim over the `pylogsink` crate's own API
//! (`emit`, `call_enter`, `call_exit`, `error_message`, `set_filter`, the
//! `Builder`): there is one implementation of the routing rules, not two.
//!
//! No Rust panic crosses into C: each function catches it and reports it
//! as the header says (a Python exception where the GIL is held, nothing
//! for `pylogsink_emit`, which must stay safe under any lock).
#![warn(missing_docs)]

use pylogsink::Level;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::ffi::PyObject;
use pyo3::prelude::*;
use pyo3::types::{PyModule, PyType};
use std::borrow::Cow;
use std::ffi::{c_char, c_int, c_uint, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Sets pylogsink up, as `pylogsink::Builder::new().env(..).default_filter(..).init()`.
///
/// `env_var` names the variable that holds the users' directives (NULL:
/// `PYLOGSINK_LOG`); `default_filter` applies when it is unset (NULL:
/// `"warn"`). Returns 0, or -1 with a Python exception set: ValueError for
/// a bad default filter or an argument that is not UTF-8, RuntimeError
/// when another logger was installed for Rust's `log` crate, ImportError
/// in a subinterpreter (pylogsink runs in the main interpreter only).
///
/// # Safety
///
/// The caller holds the GIL; each argument is NULL or points to a
/// NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn pylogsink_init(
    env_var: *const c_char,
    default_filter: *const c_char,
) -> c_int {
    // SAFETY: the header's contract: the caller holds the GIL.
    let py = unsafe { Python::assume_attached() };
    with_python_errors(py, || {
        // Asked here, with the caller's GIL: in a subinterpreter, the
        // builder's own check would take the GIL through PyGILState_Ensure,
        // which knows only the main interpreter's thread state.
        if !pylogsink::__private_api::in_main_interpreter(py) {
            return Err(pylogsink::InitError::Subinterpreter.into());
        }
        let mut builder = pylogsink::Builder::new();
        // SAFETY: each pointer is NULL or a NUL-terminated string, which
        // the caller guarantees and which outlives this call.
        if let Some(var) = unsafe { utf8_arg(env_var, "env_var") }? {
            builder = builder.env(var);
        }
        // SAFETY: as above.
        if let Some(spec) = unsafe { utf8_arg(default_filter, "default_filter") }? {
            builder = builder.default_filter(spec);
        }
        builder.init().map_err(|err| match err {
            pylogsink::InitError::Filter(err) => PyValueError::new_err(err.to_string()),
            other => other.into(),
        })
    })
}

/// Adds `set_log_filter`, `log_filter`, `set_log_destination`,
/// `log_destination` and `log_stats` to an extension's module, as
/// `pylogsink::python::add_functions`. 0, or -1 with an exception set.
///
/// # Safety
///
/// The caller holds the GIL; `module` is a live module object.
#[no_mangle]
pub unsafe extern "C" fn pylogsink_add_functions(module: *mut PyObject) -> c_int {
    // SAFETY: the header's contract: the caller holds the GIL.
    let py = unsafe { Python::assume_attached() };
    with_python_errors(py, || {
        if module.is_null() {
            return Err(PyValueError::new_err(
                "pylogsink_add_functions: module is NULL",
            ));
        }
        // SAFETY: `module` is a live object (the caller's contract) and the
        // GIL is held; the new reference is dropped before returning.
        let module = unsafe { Bound::from_borrowed_ptr(py, module) };
        pylogsink::python::add_functions(module.cast::<PyModule>()?)
    })
}

/// Logs one record, as `pylogsink::emit`: any thread, with or without the
/// GIL, under any lock. Never calls into Python.
///
/// # Safety
///
/// `target` and `file` are NULL or NUL-terminated strings; `message` is
/// NULL (then `len` is ignored) or valid for reads of `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn pylogsink_emit(
    level: c_int,
    target: *const c_char,
    file: *const c_char,
    line: c_uint,
    message: *const c_char,
    len: usize,
) {
    // SAFETY: the pointers are what the caller's contract says, and they
    // outlive this call, which keeps no reference to them.
    let (target, file, message) = unsafe { (c_text(target), c_text(file), bytes(message, len)) };
    // A panic must not unwind into C; a log call has nowhere to report one.
    let _ = catch_unwind(|| pylogsink::emit(level_of(level), &target, &file, line, message));
}

/// [`pylogsink_emit`] with the target given by its length: it need not end
/// in NUL (a logger's name held as a string view). Bytes that are not UTF-8
/// become U+FFFD, as in the NUL-terminated target of `pylogsink_emit`.
///
/// # Safety
///
/// `target` is NULL (then `target_len` is ignored) or valid for reads of
/// `target_len` bytes; `file` is NULL or a NUL-terminated string;
/// `message` is NULL or valid for reads of `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn pylogsink_emit_n(
    level: c_int,
    target: *const c_char,
    target_len: usize,
    file: *const c_char,
    line: c_uint,
    message: *const c_char,
    len: usize,
) {
    // SAFETY: the pointers are what the caller's contract says, and they
    // outlive this call, which keeps no reference to them.
    let (target, file, message) = unsafe {
        (
            String::from_utf8_lossy(bytes(target, target_len)),
            c_text(file),
            bytes(message, len),
        )
    };
    // A panic must not unwind into C; a log call has nowhere to report one.
    let _ = catch_unwind(|| pylogsink::emit(level_of(level), &target, &file, line, message));
}

/// Whether a record of `level` from `target` would be logged, as
/// `pylogsink::enabled`: 1 or 0. For code that formats its messages itself
/// (`pylogsink_vemit`), so that it formats only what is logged.
///
/// # Safety
///
/// `target` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn pylogsink_enabled(level: c_int, target: *const c_char) -> c_int {
    // SAFETY: the pointer is what the caller's contract says.
    let target = unsafe { c_text(target) };
    catch_unwind(|| c_int::from(pylogsink::enabled(level_of(level), &target))).unwrap_or(0)
}

/// Steps into a binding call, as `pylogsink::call_enter`.
///
/// # Safety
///
/// The caller holds the GIL, and calls `pylogsink_call_exit` once on the
/// same thread, with the GIL held, before the binding returns.
#[no_mangle]
pub unsafe extern "C" fn pylogsink_call_enter() {
    // SAFETY: the header's contract: the caller holds the GIL.
    let py = unsafe { Python::assume_attached() };
    let _ = catch_unwind(|| pylogsink::call_enter(py));
}

/// Steps out of a binding call, as `pylogsink::call_exit`: 0, or -1 with
/// the exception raised while the call's lines were written (a
/// `KeyboardInterrupt`) set; the binding must then return NULL.
///
/// An exception the binding had already set is put aside while the lines
/// are written (Python cannot run with one pending), then set again; if
/// the write raised, the binding's exception becomes its `__context__`, as
/// with `pylogsink::call`.
///
/// # Safety
///
/// The caller holds the GIL and called `pylogsink_call_enter` on this
/// thread.
#[no_mangle]
pub unsafe extern "C" fn pylogsink_call_exit() -> c_int {
    // SAFETY: the header's contract: the caller holds the GIL.
    let py = unsafe { Python::assume_attached() };
    let own = PyErr::take(py);
    let written = with_python_errors(py, || pylogsink::call_exit(py));
    match (written, own) {
        (0, Some(own)) => own.restore(py),
        (_, Some(own)) => {
            let interrupt = PyErr::fetch(py);
            pylogsink::__private_api::set_context(py, &interrupt, own);
            interrupt.restore(py);
        }
        _ => {}
    }
    written
}

/// Hands what the current call kept to Python now, as `pylogsink::flush`:
/// 0, or -1 with the exception raised set.
///
/// # Safety
///
/// The caller holds the GIL.
#[no_mangle]
pub unsafe extern "C" fn pylogsink_flush() -> c_int {
    // SAFETY: the header's contract: the caller holds the GIL.
    let py = unsafe { Python::assume_attached() };
    with_python_errors(py, || pylogsink::flush(py))
}

/// A handle on the current call, for its worker threads, as
/// `pylogsink::Call::current`: NULL outside any call. Free it with
/// `pylogsink_handle_free`.
///
/// # Safety
///
/// None: any thread, with or without the GIL.
#[no_mangle]
pub unsafe extern "C" fn pylogsink_call_handle() -> *mut pylogsink::CallHandle {
    match catch_unwind(pylogsink::Call::current) {
        Ok(Some(handle)) => Box::into_raw(Box::new(handle)),
        _ => std::ptr::null_mut(),
    }
}

/// Frees a handle from `pylogsink_call_handle`; NULL is ignored.
///
/// # Safety
///
/// `handle` is NULL or came from `pylogsink_call_handle` and is not used
/// after this.
#[no_mangle]
pub unsafe extern "C" fn pylogsink_handle_free(handle: *mut pylogsink::CallHandle) {
    if !handle.is_null() {
        // SAFETY: the pointer came from `Box::into_raw` in
        // `pylogsink_call_handle` and is freed once (the caller's contract).
        drop(unsafe { Box::from_raw(handle) });
    }
}

/// Attaches this thread to the call of `handle` until `pylogsink_detach`,
/// as `CallHandle::attach_thread`. NULL is ignored (and then so is the
/// matching detach's effect: it ends the latest attach still in force).
///
/// # Safety
///
/// `handle` is NULL or a live handle from `pylogsink_call_handle`.
#[no_mangle]
pub unsafe extern "C" fn pylogsink_attach(handle: *const pylogsink::CallHandle) {
    // SAFETY: NULL or a live handle, by the caller's contract.
    if let Some(handle) = unsafe { handle.as_ref() } {
        let _ = catch_unwind(AssertUnwindSafe(|| handle.attach_thread()));
    }
}

/// Ends the latest `pylogsink_attach` on this thread.
///
/// # Safety
///
/// None: any thread, with or without the GIL.
#[no_mangle]
pub unsafe extern "C" fn pylogsink_detach() {
    let _ = catch_unwind(pylogsink::detach_thread);
}

/// Sets an exception of `type` (NULL: RuntimeError) whose message is
/// `text` followed by the Error lines of the current call, escaped with
/// Python's `backslashreplace` rule; returns NULL, for `return
/// pylogsink_raise(...)` in a binding.
///
/// # Safety
///
/// The caller holds the GIL; `type` is NULL or a live object; `text` is
/// NULL or valid for reads of `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn pylogsink_raise(
    r#type: *mut PyObject,
    text: *const c_char,
    len: usize,
) -> *mut PyObject {
    // SAFETY: the header's contract: the caller holds the GIL.
    let py = unsafe { Python::assume_attached() };
    // SAFETY: `text` is NULL or valid for `len` bytes (the caller's
    // contract), and it is read before this call returns.
    let text = unsafe { bytes(text, len) };
    let raised = catch_unwind(AssertUnwindSafe(|| {
        let message = pylogsink::error_message(text);
        let ty = if r#type.is_null() {
            py.get_type::<PyRuntimeError>()
        } else {
            // SAFETY: `type` is a live object (the caller's contract) and
            // the GIL is held.
            let ty = unsafe { Bound::from_borrowed_ptr(py, r#type) };
            match ty.cast_into::<PyType>() {
                Ok(ty) => ty,
                Err(_) => {
                    return pyo3::exceptions::PyTypeError::new_err(
                        "pylogsink_raise: type is not an exception class",
                    )
                }
            }
        };
        PyErr::from_type(ty, message)
    }));
    raised.unwrap_or_else(panic_error).restore(py);
    std::ptr::null_mut()
}

/// Sets the directives in force, as `pylogsink::set_filter`: 0, or -1 with
/// ValueError set, naming the bad directive; the filter then stays as it
/// was. NULL goes back to the author's default, as
/// `pylogsink::reset_filter`.
///
/// # Safety
///
/// The caller holds the GIL; `spec` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn pylogsink_set_filter(spec: *const c_char) -> c_int {
    // SAFETY: the header's contract: the caller holds the GIL.
    let py = unsafe { Python::assume_attached() };
    with_python_errors(py, || {
        // SAFETY: `spec` is NULL or a NUL-terminated string (the caller's
        // contract).
        match unsafe { utf8_arg(spec, "spec") }? {
            Some(spec) => {
                pylogsink::set_filter(spec).map_err(|e| PyValueError::new_err(e.to_string()))
            }
            None => {
                pylogsink::reset_filter();
                Ok(())
            }
        }
    })
}

/// Runs `f`; 0 if it succeeds, else -1 with its error (or a panic, as
/// RuntimeError) set as the Python exception.
fn with_python_errors(py: Python<'_>, f: impl FnOnce() -> PyResult<()>) -> c_int {
    match catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|p| Err(panic_error(p))) {
        Ok(()) => 0,
        Err(err) => {
            err.restore(py);
            -1
        }
    }
}

/// A panic caught at the C boundary, as a Python exception.
fn panic_error(panic: Box<dyn std::any::Any + Send>) -> PyErr {
    let what = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_default();
    PyRuntimeError::new_err(format!("pylogsink: internal error: {what}"))
}

/// A C level as a [`Level`]: values below `PYLOGSINK_TRACE` count as Trace,
/// values above `PYLOGSINK_FATAL` as Fatal.
fn level_of(level: c_int) -> Level {
    match level {
        ..=0 => Level::Trace,
        1 => Level::Debug,
        2 => Level::Info,
        3 => Level::Warn,
        4 => Level::Error,
        5.. => Level::Fatal,
    }
}

/// A C string as text: empty for NULL, invalid UTF-8 replaced (targets and
/// file names are expected to be ASCII; a message is passed as bytes).
///
/// # Safety
///
/// `s` is NULL or a NUL-terminated string that outlives the result.
unsafe fn c_text<'a>(s: *const c_char) -> Cow<'a, str> {
    if s.is_null() {
        return Cow::Borrowed("");
    }
    // SAFETY: non-NULL here, and NUL-terminated (the caller's contract).
    String::from_utf8_lossy(unsafe { CStr::from_ptr(s) }.to_bytes())
}

/// A C string argument of an API function: None for NULL, ValueError if it
/// is not UTF-8.
///
/// # Safety
///
/// `s` is NULL or a NUL-terminated string that outlives the result.
unsafe fn utf8_arg<'a>(s: *const c_char, name: &str) -> PyResult<Option<&'a str>> {
    if s.is_null() {
        return Ok(None);
    }
    // SAFETY: non-NULL here, and NUL-terminated (the caller's contract).
    let s = unsafe { CStr::from_ptr(s) };
    s.to_str()
        .map(Some)
        .map_err(|_| PyValueError::new_err(format!("pylogsink: {name} is not UTF-8")))
}

/// `len` bytes at `p`; empty for NULL.
///
/// # Safety
///
/// `p` is NULL or valid for reads of `len` bytes that outlive the result.
unsafe fn bytes<'a>(p: *const c_char, len: usize) -> &'a [u8] {
    if p.is_null() || len == 0 {
        return &[];
    }
    // SAFETY: non-NULL, and valid for `len` bytes (the caller's contract);
    // `len` of a live object never exceeds isize::MAX.
    unsafe { std::slice::from_raw_parts(p.cast::<u8>(), len) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_follow_the_header_and_clamp_outside_it() {
        let all = [-3, 0, 1, 2, 3, 4, 5, 99].map(level_of);
        use Level::*;
        assert_eq!(all, [Trace, Trace, Debug, Info, Warn, Error, Fatal, Fatal]);
    }

    #[test]
    fn null_pointers_are_empty() {
        // SAFETY: NULL is allowed by each function's contract.
        unsafe {
            assert_eq!(c_text(std::ptr::null()), "");
            assert_eq!(bytes(std::ptr::null(), 5), b"");
            assert_eq!(utf8_arg(std::ptr::null(), "x").unwrap(), None);
        }
    }

    #[test]
    fn text_is_read_as_given() {
        let s = c"rt::loader\xff";
        // SAFETY: `s` is NUL-terminated and lives through the test.
        unsafe {
            assert_eq!(c_text(s.as_ptr()), "rt::loader\u{fffd}");
            assert_eq!(bytes(s.as_ptr(), 2), b"rt");
            assert!(utf8_arg(s.as_ptr(), "x").is_err());
        }
    }
}
