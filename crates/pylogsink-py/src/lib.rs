//! The `pylogsink._pylogsink` module: a small native runtime, built like an
//! ML runtime's bindings, that logs through pylogsink or through a naive
//! sink, so that every scenario pylogsink exists for can be run for real.
#![warn(missing_docs)]

#[cfg(any(target_os = "linux", target_os = "macos"))]
mod dl;
mod ffmpeg;
mod naive;
mod runtime;
mod sqlite;

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

/// The module's initializer: installs pylogsink for the `log` crate, with
/// Info as the default level (the scenarios log Info lines), and adds the
/// filter controls and the output capture. `PYLOGSINK_DEMO_CRASH_HANDLER=off` leaves the crash
/// handler out, to show what a crash loses without it;
/// `PYLOGSINK_DEMO_LOGGING_BUDGET=RECORDS,BYTES` sets the builder's
/// `logging_budget`.
#[pymodule]
fn _pylogsink(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let crash_handler = std::env::var("PYLOGSINK_DEMO_CRASH_HANDLER").as_deref() != Ok("off");
    let mut builder = pylogsink::Builder::new()
        .default_filter("info")
        .crash_handler(crash_handler);
    if let Ok(budget) = std::env::var("PYLOGSINK_DEMO_LOGGING_BUDGET") {
        let parsed = budget
            .split_once(',')
            .and_then(|(r, b)| Some((r.trim().parse().ok()?, b.trim().parse().ok()?)));
        let Some((records, bytes)) = parsed else {
            return Err(PyRuntimeError::new_err(format!(
                "PYLOGSINK_DEMO_LOGGING_BUDGET={budget:?}: expected RECORDS,BYTES"
            )));
        };
        builder = builder.logging_budget(records, bytes);
    }
    // In a subinterpreter: an ImportError that says why.
    builder.init()?;
    // The package's version, as its metadata has it (maturin writes this
    // crate's version there): read here, it costs the import nothing.
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    pylogsink::python::add_functions(m)?;
    pylogsink::python::add_capture_functions(m)?;
    ffmpeg::register(m)?;
    sqlite::register(m)?;
    runtime::register(m)
}
