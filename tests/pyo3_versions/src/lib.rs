//! A small extension that uses pylogsink as an extension does: a builder
//! at init, `call` around a binding, `flush` in a loop that has `py`, and
//! `flush_lines` in a helper that has none.

use pyo3::prelude::*;

/// Logs `steps` progress lines with the GIL held; even steps flush with
/// `flush(py)`, odd ones in a helper with `flush_lines()`.
#[pyfunction]
fn train(py: Python<'_>, steps: u32) -> PyResult<()> {
    pylogsink::call(py, || {
        for step in 0..steps {
            if step % 2 == 0 {
                log::warn!("step {step}");
                pylogsink::flush(py)?;
            } else {
                helper(step);
            }
        }
        Ok(())
    })
}

fn helper(step: u32) {
    log::warn!("step {step}");
    pylogsink::flush_lines();
}

/// How a call learns whether `sys.stderr` was replaced: "dict watcher" on
/// CPython 3.12+, this abi3 build included; "dict version" on 3.11.
#[pyfunction]
fn stderr_check(py: Python<'_>) -> &'static str {
    pylogsink::__private_api::stderr_check(py)
}

#[pymodule]
fn pyo3_versions(m: &Bound<'_, PyModule>) -> PyResult<()> {
    pylogsink::Builder::new()
        .default_filter("warn")
        .init()
        .map_err(|e| pyo3::exceptions::PyRuntimeError::new_err(e.to_string()))?;
    m.add_function(wrap_pyfunction!(train, m)?)?;
    m.add_function(wrap_pyfunction!(stderr_check, m)?)
}
