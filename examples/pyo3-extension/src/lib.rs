//! my_runtime: a PyO3 extension whose native code logs through pylogsink.

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

#[pyfunction]
fn load(py: Python<'_>, path: &str) -> PyResult<usize> {
    // Wrap the body of every binding that may log.
    pylogsink::call(py, || {
        log::info!("loading {path}");
        if path.is_empty() {
            log::error!("no path given");
            // The exception's message ends with the call's Error lines.
            return Err(pylogsink::error::<PyRuntimeError>("load failed"));
        }
        Ok(path.len())
    })
}

/// A loop that holds the GIL on purpose, as a training loop that uses
/// Python objects at each step does: `pylogsink::flush` at each step's end
/// hands the step's lines to a replaced `sys.stderr` (or `logging`) then,
/// not at the return, and raises Ctrl-C's `KeyboardInterrupt` there.
#[pyfunction]
fn train(py: Python<'_>, steps: u32) -> PyResult<()> {
    pylogsink::call(py, || {
        for step in 1..=steps {
            // ... one step, the GIL held, no lock of ours held here ...
            log::warn!("Progress: {}%", 100 * step / steps);
            pylogsink::flush(py)?;
        }
        Ok(())
    })
}

/// The shape of a tokenizer's trainer: long phases that hold the GIL, in
/// helpers that have no `py` in scope. `pylogsink::flush_lines` at the end
/// of each phase hands its lines over there; a Ctrl-C meanwhile waits for
/// the call's return, so each phase runs to its end.
#[pyfunction]
fn prepare(py: Python<'_>, words: Vec<String>) -> PyResult<usize> {
    pylogsink::call(py, || {
        let pairs = count_pairs(&words);
        Ok(build_queue(pairs))
    })
}

fn count_pairs(words: &[String]) -> usize {
    let pairs = words.iter().map(|w| w.len().saturating_sub(1)).sum();
    log::warn!("counted {pairs} pairs");
    pylogsink::flush_lines();
    pairs
}

fn build_queue(pairs: usize) -> usize {
    // ... a long phase, the GIL held ...
    log::warn!("queued {pairs} pairs");
    pylogsink::flush_lines();
    pairs
}

// The function's name is the module's (the `[lib] name` in Cargo.toml):
// Python calls `PyInit_my_runtime`. A function named otherwise needs
// `#[pyo3(name = "my_runtime")]`.
#[pymodule]
fn my_runtime(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // Install pylogsink as the `log` crate's logger, with the filter the
    // users set in MY_RUNTIME_LOG (else "warn"); calling it twice is
    // harmless, another logger already installed is an error.
    pylogsink::Builder::new()
        .env("MY_RUNTIME_LOG")
        .default_filter("warn")
        .init()
        .map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
    // set_log_filter, log_filter, set_log_destination, log_destination and
    // log_stats, for the users.
    pylogsink::python::add_functions(m)?;
    m.add_function(wrap_pyfunction!(load, m)?)?;
    m.add_function(wrap_pyfunction!(train, m)?)?;
    m.add_function(wrap_pyfunction!(prepare, m)?)
}
