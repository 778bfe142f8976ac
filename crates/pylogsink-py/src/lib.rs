//! The `pylogsink._pylogsink` module: a small native runtime, built like an
//! ML runtime's bindings, that logs through pylogsink or through a naive
//! sink, so that every scenario pylogsink exists for can be run for real.
#![warn(missing_docs)]

mod naive;
mod runtime;

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

/// The module's initializer: installs pylogsink for the `log` crate, with
/// Info as the default level (the scenarios log Info lines), and adds the
/// filter controls. `PYLOGSINK_DEMO_CRASH_HANDLER=off` leaves the crash
/// handler out, to show what a crash loses without it.
#[pymodule]
fn _pylogsink(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let crash_handler = std::env::var("PYLOGSINK_DEMO_CRASH_HANDLER").as_deref() != Ok("off");
    pylogsink::Builder::new()
        .default_filter("info")
        .crash_handler(crash_handler)
        .init()
        .map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
    pylogsink::python::add_functions(m)?;
    runtime::register(m)
}
