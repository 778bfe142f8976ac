//! Jupyter cells: what native threads log outside any call during a cell
//! reaches that cell.
//!
//! Such lines reach a replaced `sys.stderr` through pylogsink's Python
//! thread, some 10 ms after they were logged. A cell that ends sooner (one
//! that waited for its native threads, say) would have them show in the
//! next cell, or after the kernel said it was idle, where front ends drop
//! them. So in an IPython shell (a Jupyter kernel), the end of each cell
//! hands over what waits: IPython runs `post_run_cell` callbacks before the
//! kernel flushes its streams and reports idle. What native threads log
//! between two cells waits for the next one (`pre_run_cell`), within the
//! budget: nothing is written after idle. Nothing to load: it is set up at
//! init wherever a shell runs, and where the shell started after
//! pylogsink's init (pylogsink imported from a `.pth` file or a
//! `sitecustomize`, before the kernel), at the main thread's first safe
//! point once a shell runs: pylogsink's thread, which finds the shell
//! first, holds what waits until then ([`crate::dest::pending::queue::hold`]).

use super::ipython::shell;
use super::live::write_outside_lines;
use super::{frames, logging};
use crate::dest::pending::queue;
use pyo3::prelude::*;
use pyo3::types::{PyCFunction, PyDict, PyTuple};

/// At init, with the GIL held: where an IPython shell runs, registers
/// [`cell_starts`] and [`cell_ends`] for its `pre_run_cell` and
/// `post_run_cell` events, once per process.
pub(crate) fn register_at_init(py: Python<'_>) {
    if queue::cells_hooked() {
        return;
    }
    match register(py) {
        Ok(true) => queue::set_cells_hooked(),
        Ok(false) => {}
        Err(err) => err.write_unraisable(py, None),
    }
}

/// At a safe point of the main thread (a pending call): registers the
/// hooks if a shell started since init, and then holds what waits unless
/// a cell runs now, since it is the next cell's.
pub(crate) fn register_late(py: Python<'_>) {
    if queue::cells_hooked() {
        return;
    }
    match register(py) {
        Ok(true) => {
            queue::set_cells_hooked();
            queue::hold(!in_a_cell(py));
        }
        Ok(false) => {}
        Err(err) => {
            // No hooks: what waits is not held for them any longer.
            err.write_unraisable(py, None);
            queue::set_cells_hooked();
            queue::hold(false);
        }
    }
}

/// The functions of IPython's shell that run a cell.
const RUNS_A_CELL: [&std::ffi::CStr; 4] =
    [c"run_cell", c"_run_cell", c"run_cell_async", c"run_code"];

/// Whether the main thread is running a cell: one of [`RUNS_A_CELL`] is
/// on its stack.
fn in_a_cell(py: Python<'_>) -> bool {
    let shell_module = frames::module_dicts(py, &["IPython.core.interactiveshell"]);
    frames::any(py, |frame| {
        shell_module.iter().any(|dict| frame.in_module(*dict))
            && RUNS_A_CELL.iter().any(|name| frame.named(name))
    })
    .unwrap_or(true)
}

/// Registers the callback if a shell runs; false if none does.
fn register(py: Python<'_>) -> PyResult<bool> {
    // Only where IPython was imported already: a kernel imports it first.
    let Some(shell) = shell(py)? else {
        return Ok(false);
    };
    let events = shell.getattr("events")?;
    let starts = PyCFunction::new_closure(py, Some(c"pylogsink_cell_starts"), None, cell_starts)?;
    let ends = PyCFunction::new_closure(py, Some(c"pylogsink_cell_ends"), None, cell_ends)?;
    events.call_method1("register", ("pre_run_cell", starts))?;
    events.call_method1("register", ("post_run_cell", ends))?;
    Ok(true)
}

/// The start of a cell (IPython passes its info, unused): what waited
/// since the last cell goes to this one, from pylogsink's thread.
fn cell_starts(_args: &Bound<'_, PyTuple>, _kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<()> {
    queue::hold(false);
    Ok(())
}

/// The end of a cell (IPython passes its result, unused): what native
/// threads logged outside any call (lines for a replaced `sys.stderr`,
/// records for `logging`) is handed over now; what they log from here on
/// waits for the next cell.
fn cell_ends(args: &Bound<'_, PyTuple>, _kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<()> {
    let py = args.py();
    queue::hold(true);
    if let Some(err) = write_outside_lines(py) {
        err.write_unraisable(py, None);
    }
    if let Some(err) = logging::deliver_queue(py) {
        err.write_unraisable(py, None);
    }
    Ok(())
}
