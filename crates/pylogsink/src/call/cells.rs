//! Jupyter cells: what native threads log outside any call during a cell
//! reaches that cell.
//!
//! Such lines reach a replaced `sys.stderr` through pylogsink's Python
//! thread, some 10 ms after they were logged. A cell that ends sooner (one
//! that waited for its native threads, say) would have them show in the
//! next cell, or after the kernel said it was idle, where front ends drop
//! them. So in an IPython shell (a Jupyter kernel), the end of each cell
//! hands over what waits: IPython runs `post_run_cell` callbacks before the
//! kernel flushes its streams and reports idle. Nothing to load: it is set
//! up at init wherever a shell runs.

use super::live::write_outside_lines;
use super::logging;
use pyo3::prelude::*;
use pyo3::types::PyCFunction;
use std::sync::atomic::{AtomicBool, Ordering};

/// At init, with the GIL held: where an IPython shell runs, registers
/// [`cell_ends`] for its `post_run_cell` event, once per process.
pub(crate) fn register_at_init(py: Python<'_>) {
    static REGISTERED: AtomicBool = AtomicBool::new(false);
    if REGISTERED.load(Ordering::Acquire) {
        return;
    }
    match register(py) {
        Ok(true) => REGISTERED.store(true, Ordering::Release),
        Ok(false) => {}
        Err(err) => err.write_unraisable(py, None),
    }
}

/// Registers the callback if a shell runs; false if none does.
fn register(py: Python<'_>) -> PyResult<bool> {
    // Only where IPython was imported already: a kernel imports it first.
    let modules = py.import("sys")?.getattr("modules")?;
    let Ok(ipython) = modules.get_item("IPython") else {
        return Ok(false);
    };
    let shell = ipython.call_method0("get_ipython")?;
    if shell.is_none() {
        return Ok(false);
    }
    let callback = PyCFunction::new_closure(py, Some(c"pylogsink_cell_ends"), None, cell_ends)?;
    shell
        .getattr("events")?
        .call_method1("register", ("post_run_cell", callback))?;
    Ok(true)
}

/// The end of a cell (IPython passes its result, unused): the lines logged
/// outside any call for a replaced `sys.stderr`, and the records for
/// `logging`, handed over now.
fn cell_ends(
    args: &Bound<'_, pyo3::types::PyTuple>,
    _kwargs: Option<&Bound<'_, pyo3::types::PyDict>>,
) -> PyResult<()> {
    let py = args.py();
    write_outside_lines(py);
    if let Some(err) = logging::deliver_queue(py) {
        err.write_unraisable(py, None);
    }
    Ok(())
}
