//! [`error`]: an exception that carries the call's Error-level lines.

use crate::core::error_message;
use pyo3::{PyErr, PyTypeInfo};

/// An exception of type `E` whose message is `text` followed by the
/// Error-level lines logged on this thread during the current call (or,
/// outside any call, the last one).
///
/// ```no_run
/// use pyo3::exceptions::PyRuntimeError;
/// use pyo3::prelude::*;
///
/// #[pyfunction]
/// fn load_method(py: Python<'_>) -> PyResult<()> {
///     pylogsink::call(py, || {
///         log::error!("XNNPACK backend: failed to create workspace");
///         Err(pylogsink::error::<PyRuntimeError>("load_method failed (error 0x23)"))
///     })
/// }
/// ```
///
/// raises
///
/// ```text
/// RuntimeError: load_method failed (error 0x23)
/// Errors logged during the call:
///   XNNPACK backend: failed to create workspace
/// ```
///
/// `text` may be any bytes: the whole message is decoded with Python's
/// `backslashreplace` rule, so invalid UTF-8 becomes `\xNN`.
pub fn error<E: PyTypeInfo>(text: impl AsRef<[u8]>) -> PyErr {
    PyErr::new::<E, _>(error_message(text))
}
