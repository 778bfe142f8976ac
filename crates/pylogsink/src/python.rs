//! The controls an extension hands to its Python users.
//!
//! What is logged is the users' choice, and most of them never write Rust:
//! [`add_functions`] puts the filter and the counts within their reach, as
//! functions of the extension's own module.

use crate::call::{capture, logging};
use crate::control::{destination, filter, reset_filter, set_destination, set_filter, Destination};
use crate::core::stats;
use crate::dest::budget::{self, Budget};
use crate::record::Level;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Adds `set_log_filter`, `log_filter`, `set_log_destination`,
/// `log_destination`, `set_log_budget`, `log_budget` and `log_stats` to
/// the extension's module:
///
/// ```no_run
/// use pyo3::prelude::*;
///
/// #[pymodule]
/// fn my_runtime(m: &Bound<'_, PyModule>) -> PyResult<()> {
///     pylogsink::init()?;
///     pylogsink::python::add_functions(m)
/// }
/// ```
///
/// Their stubs, for the extension's `.pyi`:
///
/// ```python
/// from typing import Literal
///
/// def set_log_filter(spec: str | None) -> None:
///     """Sets which records are logged, in env_logger's syntax
///     ("warn,my_runtime=debug"); ValueError names a bad directive.
///     None goes back to the extension author's default."""
/// def log_filter() -> str:
///     """The directives in force."""
/// def set_log_destination(name: Literal["logging", "stderr"]) -> None:
///     """Sends records to Python's logging, or to stderr as text."""
/// def log_destination() -> Literal["logging", "stderr"]:
///     """Where records go."""
/// def set_log_budget(*, lines: int | None = None, records: int | None = None,
///                    record_bytes: int | None = None) -> None:
///     """Sets how much may wait in one place before the oldest is left
///     out: bytes of text lines, records for logging and their bytes.
///     ValueError below the least (1024 bytes, one record)."""
/// def log_budget() -> dict[str, int]:
///     """The budget in force: "lines", "records", "record_bytes"."""
/// def log_stats() -> dict[str, int]:
///     """Records emitted (in all and per level: "trace" ... "fatal"),
///     lines left out ("left_out"), bytes fd 2 refused ("failed_bytes")
///     and times pylogsink's Python thread took the GIL ("python_wakes")."""
/// ```
///
/// With the `logging` destination chosen on the builder, it also starts
/// the destination's Python side, so that records logged outside any call
/// are delivered before the first call is made.
pub fn add_functions(m: &Bound<'_, PyModule>) -> PyResult<()> {
    if destination() == Destination::Logging {
        crate::call::start_logging(m.py())?;
    }
    m.add_function(wrap_pyfunction!(set_log_filter, m)?)?;
    m.add_function(wrap_pyfunction!(log_filter, m)?)?;
    m.add_function(wrap_pyfunction!(set_log_destination, m)?)?;
    m.add_function(wrap_pyfunction!(log_destination, m)?)?;
    m.add_function(wrap_pyfunction!(set_log_budget, m)?)?;
    m.add_function(wrap_pyfunction!(log_budget, m)?)?;
    m.add_function(wrap_pyfunction!(log_stats, m)?)
}

/// Sets which records are logged, in env_logger's syntax
/// ("warn,my_runtime=debug"). A bad directive raises ValueError naming it,
/// and the filter in force stays as it was. None goes back to the
/// author's default (`reset_filter`).
#[pyfunction]
fn set_log_filter(spec: Option<&str>) -> PyResult<()> {
    match spec {
        Some(spec) => set_filter(spec).map_err(|e| PyValueError::new_err(e.to_string())),
        None => {
            reset_filter();
            Ok(())
        }
    }
}

/// Sends records to Python's `logging` ("logging") or to stderr as text
/// ("stderr"); ValueError for anything else.
#[pyfunction]
fn set_log_destination(py: Python<'_>, name: &str) -> PyResult<()> {
    let destination = Destination::parse(name).ok_or_else(|| {
        PyValueError::new_err(format!(
            "unknown log destination {name:?}: expected \"logging\" or \"stderr\""
        ))
    })?;
    set_destination(destination);
    if destination == Destination::Logging {
        crate::call::start_logging(py)?;
    }
    Ok(())
}

/// Where records go: "logging" or "stderr".
#[pyfunction]
fn log_destination() -> &'static str {
    destination().name()
}

/// Sets how much may wait in one place before the oldest lines are left
/// out (each part that is given): `lines`, bytes of text lines; `records`
/// and `record_bytes`, records waiting for `logging`. A part below its
/// least (1024 bytes, one record) raises ValueError and nothing changes.
#[pyfunction]
#[pyo3(signature = (*, lines=None, records=None, record_bytes=None))]
fn set_log_budget(
    lines: Option<i64>,
    records: Option<i64>,
    record_bytes: Option<i64>,
) -> PyResult<()> {
    let mut new = budget::get();
    for (name, value) in [
        ("lines", lines),
        ("records", records),
        ("record_bytes", record_bytes),
    ] {
        let Some(value) = value else { continue };
        // A negative value is below every least.
        new = budget::with_part(new, name, usize::try_from(value).unwrap_or(0))
            .map_err(|why| PyValueError::new_err(format!("{name}={value}: {why}")))?;
    }
    budget::set(new);
    Ok(())
}

/// The budget in force.
#[pyfunction]
fn log_budget(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let Budget {
        lines,
        records,
        record_bytes,
    } = budget::get();
    let dict = PyDict::new(py);
    dict.set_item("lines", lines)?;
    dict.set_item("records", records)?;
    dict.set_item("record_bytes", record_bytes)?;
    Ok(dict)
}

/// The directives in force, joined with commas.
#[pyfunction]
fn log_filter() -> String {
    filter()
}

/// Records emitted (in all, and per level), lines left out of full buffers
/// (each counted in a written note), bytes that fd 2 refused, and how many
/// times pylogsink's Python thread took the GIL.
#[pyfunction]
fn log_stats(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let s = stats();
    let dict = PyDict::new(py);
    dict.set_item("emitted", s.emitted)?;
    for level in Level::ALL {
        dict.set_item(level.to_string().to_lowercase(), s.by_level[level as usize])?;
    }
    dict.set_item("left_out", s.left_out)?;
    dict.set_item("failed_bytes", s.failed_bytes)?;
    dict.set_item("python_wakes", s.python_wakes)?;
    Ok(dict)
}

/// Adds `start_output_capture`, `stop_output_capture`,
/// `flush_output_capture` and `output_capture_active` to the module: while
/// a capture is on, what native code writes to fd 1 and fd 2 (C's
/// `printf`, `std::cout`, `fprintf(stderr)`) goes through pipes that a
/// native thread drains, and on to `sys.stdout` / `sys.stderr` where
/// Python replaced them (pytest's capture, a notebook's cell), else to the
/// original descriptors. One
/// capture per process: add these to one module only (the `pylogsink`
/// package has them, with the `capture_output()` context manager, which
/// also uses the private `_output_capture_to_python`,
/// `_before_python_write` and `_start_output_capture_to_logging`).
///
/// Their stubs:
///
/// ```python
/// def start_output_capture(stdout: bool = True, stderr: bool = True) -> bool:
///     """Points fd 1 and/or fd 2 at pipes drained by a native thread;
///     False if a capture was on already (this one joins it)."""
/// def stop_output_capture() -> None:
///     """Ends the capture (or a nested one): C stdio flushed, the
///     descriptors restored, every line written before delivered."""
/// def flush_output_capture() -> None:
///     """Delivers everything written to the captured descriptors so far
///     before it returns."""
/// def output_capture_active() -> bool:
///     """Whether a capture is on."""
/// ```
pub fn add_capture_functions(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(start_output_capture, m)?)?;
    m.add_function(wrap_pyfunction!(stop_output_capture, m)?)?;
    m.add_function(wrap_pyfunction!(flush_output_capture, m)?)?;
    m.add_function(wrap_pyfunction!(output_capture_active, m)?)?;
    m.add_function(wrap_pyfunction!(_output_capture_to_python, m)?)?;
    m.add_function(wrap_pyfunction!(_before_python_write, m)?)?;
    m.add_class::<InOrderWrite>()?;
    m.add_function(wrap_pyfunction!(_start_output_capture_to_logging, m)?)
}

/// Points fd 1 (`stdout`) and/or fd 2 (`stderr`) at pipes that a native
/// thread drains; False if a capture was on already (this one joins it).
#[pyfunction]
#[pyo3(signature = (stdout = true, stderr = true))]
fn start_output_capture(py: Python<'_>, stdout: bool, stderr: bool) -> PyResult<bool> {
    logging::start(py)?;
    capture::start(py, stdout, stderr)
}

/// Ends the capture (or a nested one): C stdio flushed, fd 1 and fd 2
/// pointed back at what they were, every line written before delivered.
#[pyfunction]
fn stop_output_capture(py: Python<'_>) -> PyResult<()> {
    capture::stop(py)
}

/// Delivers everything written to the captured descriptors so far (C
/// stdio flushed first) before it returns, so that what Python prints next
/// comes after it. Does nothing without a capture.
#[pyfunction]
fn flush_output_capture(py: Python<'_>) {
    capture::flush(py)
}

/// Whether an output capture is on.
#[pyfunction]
fn output_capture_active() -> bool {
    capture::active()
}

/// Begins a capture whose lines go to `stdout` and `stderr` (objects whose
/// `write` hands them to Python's `logging`; None: that descriptor is not
/// captured), or joins the capture in progress (False).
#[pyfunction]
#[pyo3(signature = (stdout, stderr))]
fn _start_output_capture_to_logging<'py>(
    py: Python<'py>,
    stdout: Option<Bound<'py, PyAny>>,
    stderr: Option<Bound<'py, PyAny>>,
) -> PyResult<bool> {
    logging::start(py)?;
    let to = |lines: Option<Bound<'py, PyAny>>| match lines {
        Some(lines) => capture::LinesTo::Stream(lines),
        None => capture::LinesTo::Nothing,
    };
    capture::start_into(py, [to(stdout), to(stderr)])
}

/// Whether captured descriptor `fd`'s lines go to a Python stream (the
/// one `sys.stdout` / `sys.stderr` was when the capture began).
#[pyfunction]
fn _output_capture_to_python(fd: i32) -> bool {
    capture::to_python(fd)
}

/// To call before Python writes to the stream that gets captured
/// descriptor `fd`'s lines: what native code wrote to `fd` before goes
/// there first.
#[pyfunction]
fn _before_python_write(py: Python<'_>, fd: i32) {
    capture::before_python_write(py, fd)
}

/// The `write` of the stream a capture puts in front of `sys.stdout` or
/// `sys.stderr` (capture.py's `_InOrder`): the stream's own `write`, after
/// what native code wrote to `fd` before. That costs a system call, so it
/// is asked where a Python line starts: at each write but one that goes
/// on with the line the same thread's write before left open.
/// `print(a, b)` makes four writes and asks once.
#[pyclass(name = "_InOrderWrite", module = "pylogsink._pylogsink", frozen)]
struct InOrderWrite {
    write: Py<PyAny>,
    fd: i32,
    /// The thread whose last write left a line open ([`thread_mark`]), or
    /// 0: the next write starts a line.
    open_line: AtomicUsize,
}

#[pymethods]
impl InOrderWrite {
    #[new]
    fn new(write: Py<PyAny>, fd: i32) -> InOrderWrite {
        InOrderWrite {
            write,
            fd,
            open_line: AtomicUsize::new(0),
        }
    }

    fn __call__(&self, py: Python<'_>, text: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let me = thread_mark();
        if self.open_line.load(Ordering::Relaxed) != me {
            capture::before_python_write(py, self.fd);
        }
        let written = self.write.call1(py, (text,))?;
        if let Some(ends_line) = ends_line(text) {
            let open = if ends_line { 0 } else { me };
            self.open_line.store(open, Ordering::Relaxed);
        }
        Ok(written)
    }
}

/// This thread's mark: the address of one of its thread-locals, never 0,
/// and unique among the threads alive.
fn thread_mark() -> usize {
    thread_local!(static MARK: u8 = const { 0 });
    MARK.with(|mark| std::ptr::from_ref(mark) as usize)
}

/// Whether `text`, a `str`, ends with a newline; None for an empty or
/// other object (the line goes on as it was).
fn ends_line(text: &Bound<'_, PyAny>) -> Option<bool> {
    let text = text.as_ptr();
    // SAFETY: the GIL is held and `text` is a live object; the functions
    // are in the stable ABI and only read it. The str ones are called on
    // a str only, and ReadChar with an index inside it: neither can fail.
    unsafe {
        if pyo3::ffi::PyUnicode_Check(text) == 0 {
            return None;
        }
        let len = pyo3::ffi::PyUnicode_GetLength(text);
        (len > 0).then(|| pyo3::ffi::PyUnicode_ReadChar(text, len - 1) == u32::from('\n'))
    }
}
