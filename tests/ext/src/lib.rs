//! The `pylogsink_testext._testext` module: an extension built like a
//! user's, whose log lines come from real crates that log on their own.
//!
//! ureq logs its requests through `log` at DEBUG under several module
//! targets (`ureq::unit`, `ureq::stream`, `ureq::response`, `ureq::pool`),
//! and tracing, with its `log` feature and no subscriber, logs its events
//! and spans through `log` too. Neither asks pylogsink anything, so the
//! tests run against this module prove that pylogsink's filter, set from
//! `PYLOGSINK_TESTEXT_LOG` at import or with `set_log_filter` later, decides
//! what reaches the user. `log_at` calls the logger without asking it first
//! whether the record is enabled, as some crates do, so the filter must hold
//! in the logger itself.
#![warn(missing_docs)]

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;

fn parse_level(name: &str) -> PyResult<log::Level> {
    name.parse().map_err(|_| {
        PyValueError::new_err(format!(
            "unknown level {name:?}: expected trace, debug, info, warn or error"
        ))
    })
}

/// Sends a GET to `url` with ureq and returns the response's status code.
#[pyfunction]
fn http_get(py: Python<'_>, url: &str) -> PyResult<u16> {
    pylogsink::call(py, || {
        py.detach(|| match ureq::get(url).call() {
            Ok(response) => {
                let status = response.status();
                // Reading the body to its end hands the connection back to
                // ureq's pool, which logs it too.
                response
                    .into_string()
                    .map(|_| status)
                    .map_err(|e| e.to_string())
            }
            Err(ureq::Error::Status(status, _)) => Ok(status),
            Err(e) => Err(e.to_string()),
        })
        .map_err(|e| PyRuntimeError::new_err(format!("http_get {url}: {e}")))
    })
}

/// Does some work inside a tracing span, emitting tracing events at TRACE,
/// DEBUG, INFO and WARN with target `testext::work`.
#[pyfunction]
fn tracing_work(py: Python<'_>, name: &str) -> PyResult<()> {
    pylogsink::call(py, || {
        let span = tracing::info_span!("load", path = name);
        let _entered = span.enter();
        tracing::trace!(target: "testext::work", "opening {name}");
        tracing::debug!(target: "testext::work", bytes = name.len(), "read {name}");
        tracing::info!(target: "testext::work", "loaded {name}");
        tracing::warn!(target: "testext::work", "{name} is deprecated");
        Ok(())
    })
}

/// Logs `message` at `level` ("trace" to "error") under `target`, handing
/// the record straight to the logger.
#[pyfunction]
fn log_at(py: Python<'_>, level: &str, target: &str, message: &str) -> PyResult<()> {
    let level = parse_level(level)?;
    pylogsink::call(py, || {
        log::logger().log(
            &log::Record::builder()
                .level(level)
                .target(target)
                .file(Some(file!()))
                .line(Some(line!()))
                .args(format_args!("{message}"))
                .build(),
        );
        Ok(())
    })
}

/// Whether a record at `level` under `target` would be written: the
/// logger's answer, and whether `level` is within `log::max_level()`.
#[pyfunction]
fn log_enabled(level: &str, target: &str) -> PyResult<(bool, bool)> {
    let level = parse_level(level)?;
    let metadata = log::Metadata::builder().level(level).target(target).build();
    Ok((log::logger().enabled(&metadata), level <= log::max_level()))
}

/// The module's initializer: installs pylogsink with its filter read from
/// `PYLOGSINK_TESTEXT_LOG`, and adds pylogsink's filter functions.
#[pymodule]
fn _testext(m: &Bound<'_, PyModule>) -> PyResult<()> {
    pylogsink::Builder::new()
        .env("PYLOGSINK_TESTEXT_LOG")
        .default_filter("warn")
        .init()
        .map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
    pylogsink::python::add_functions(m)?;
    m.add_function(wrap_pyfunction!(http_get, m)?)?;
    m.add_function(wrap_pyfunction!(tracing_work, m)?)?;
    m.add_function(wrap_pyfunction!(log_at, m)?)?;
    m.add_function(wrap_pyfunction!(log_enabled, m)?)?;
    Ok(())
}
