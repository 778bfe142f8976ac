//! [`call`]: the boundary between Python and native code.
//!
//! Everything that touches Python happens here, at the two moments when the
//! thread is known to hold the GIL and no native lock: when the outermost
//! call starts (is `sys.stderr` the process's own?) and when it returns
//! (write the lines it kept). The log function itself never touches Python.

use crate::destination::to_logging;
use crate::kept::Taken;
use crate::pending::queue;
use crate::route::{daemon_avoids_python, return_plan, ReturnPlan, Sink};
use crate::sink::{
    count_noted, exit_wait, queue_pending, queue_pending_as_text, stall_wait, write_everything,
    write_fd2, write_queue, ThreadState, THREAD,
};
use pyo3::exceptions::{PyException, PyOverflowError};
use pyo3::prelude::*;
use pyo3::types::{PyCFunction, PyString};
use std::panic::AssertUnwindSafe;
use std::sync::{Mutex, Once, OnceLock};
use std::time::Duration;

/// Runs one binding call from Python into native code.
///
/// Wrap the body of every `#[pyfunction]` and `#[pymethods]` method that
/// may log. Lines logged during `f`, on this thread, follow the routing
/// rules: to fd 2 at once while `sys.stderr` is the process's own, kept and
/// written through `sys.stderr.write` when the outermost call returns once
/// it was replaced. Nested calls join the outermost one, and so does a part
/// of `f` that releases the GIL.
///
/// It is a function and not a guard object so that an exception raised
/// while the call's lines are written (a `KeyboardInterrupt` from Ctrl-C)
/// can reach the caller: it is returned instead of `f`'s result, with `f`'s
/// own error, if any, as its `__context__`.
///
/// It is [`call_enter`], `f`, then [`call_exit`].
///
/// ```no_run
/// use pyo3::prelude::*;
///
/// #[pyfunction]
/// fn load(py: Python<'_>, path: &str) -> PyResult<usize> {
///     pylogsink::call(py, || {
///         log::info!("loading {path}");
///         Ok(path.len())
///     })
/// }
/// ```
#[inline]
pub fn call<T>(py: Python<'_>, f: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    register_exit_flush(py);
    let mut f = Some(f);
    // One thread-local access for the whole call: enter, run, leave.
    let run = |t: &ThreadState| {
        enter(py, t);
        let result = std::panic::catch_unwind(AssertUnwindSafe(f.take().expect("runs once")));
        match (t.leave(), result) {
            // Most calls: nothing to write, no panic.
            (left, Ok(result)) if !must_write(left) => result,
            (left, result) => return_after_writing(py, left, result),
        }
    };
    match THREAD.try_with(run) {
        Ok(result) => result,
        // The thread is being torn down: there is no call state to keep.
        Err(_) => f.take().expect("not run yet")(),
    }
}

/// The end of a [`call`] that has lines or records to write, or panicked:
/// writes them, then resumes the panic, or returns `result`, or the
/// exception raised while they were written with `result`'s error as its
/// `__context__`.
#[cold]
#[inline(never)]
fn return_after_writing<T>(
    py: Python<'_>,
    left: Option<(Sink, bool)>,
    result: std::thread::Result<PyResult<T>>,
) -> PyResult<T> {
    let written = leave(py, left);
    let result = match result {
        Ok(result) => result,
        // The lines kept so far were written, as at any return; the panic
        // goes on, to become PyO3's PanicException.
        Err(panic) => std::panic::resume_unwind(panic),
    };
    match written {
        Ok(()) => result,
        Err(interrupt) => {
            if let Err(own) = result {
                interrupt.set_context(py, Some(own));
            }
            Err(interrupt)
        }
    }
}

/// Steps into a call: the first half of [`call`], for code that cannot
/// pass a closure (a C ABI, a scope object).
///
/// Every `call_enter` must be matched by one [`call_exit`] on the same
/// thread, with the GIL held at both; between them the thread may release
/// the GIL and take native locks, as inside [`call`]. Nested pairs join the
/// outermost one. A thread being torn down has no call state: then both
/// do nothing.
///
/// ```no_run
/// use pyo3::prelude::*;
///
/// // A binding whose entry and exit are two separate places (a scope object,
/// // a C ABI): the two halves of `call`.
/// fn binding(py: Python<'_>) -> PyResult<()> {
///     pylogsink::call_enter(py);
///     log::info!("inside the call");
///     pylogsink::call_exit(py)
/// }
/// ```
pub fn call_enter(py: Python<'_>) {
    register_exit_flush(py);
    let _ = THREAD.try_with(|t| enter(py, t));
}

/// Steps out of a call: the second half of [`call`]. Leaving the
/// outermost call writes the lines it kept (through `sys.stderr.write`, or
/// to fd 2 with the GIL released) and hands records over to `logging`.
///
/// Returns the exception that reached Python while the lines were written
/// (a `KeyboardInterrupt`, or an exception a signal handler raised), which
/// the binding must raise in place of its own result; an error of the
/// stream itself never comes back here (the lines go to fd 2 then). Must
/// follow a [`call_enter`] on the same thread, with the GIL held; an
/// unmatched `call_exit` does nothing.
///
/// Shown in the [`call_enter`] example.
pub fn call_exit(py: Python<'_>) -> PyResult<()> {
    match THREAD.try_with(ThreadState::leave) {
        Ok(left) => leave(py, left),
        Err(_) => Ok(()),
    }
}

/// Steps `t` into a call; the outermost one looks at `sys.stderr`.
#[inline(always)]
fn enter(py: Python<'_>, t: &ThreadState) {
    let outermost = t.enter(|| stderr_is_own(py), || surviving_fd(py));
    if outermost && to_logging() {
        crate::logging::on_call_entry(py);
    }
}

/// After [`ThreadState::leave`]: if that left the outermost call, writes
/// what waits. The exception raised meanwhile, if any.
#[inline]
fn leave(py: Python<'_>, left: Option<(Sink, bool)>) -> PyResult<()> {
    match left {
        Some((sink, _)) if must_write(left) => write_at_return(py, sink).map_or(Ok(()), Err),
        _ => Ok(()),
    }
}

/// Whether [`ThreadState::leave`] left the outermost call, with lines or
/// records that may wait: the call's own, or the process-wide queue's.
#[inline(always)]
fn must_write(left: Option<(Sink, bool)>) -> bool {
    match left {
        Some((_, waiting)) => waiting || queue_pending() || queue::waiting(),
        None => false,
    }
}

/// Registers, once per process, a Python `atexit` function that writes
/// every line still kept or queued to fd 2 while the interpreter is whole,
/// with the GIL released while it waits for room.
#[inline]
fn register_exit_flush(py: Python<'_>) {
    static REGISTERED: Once = Once::new();
    REGISTERED.call_once(|| {
        let flush = PyCFunction::new_closure(py, Some(c"pylogsink_exit_flush"), None, |args, _| {
            let py = args.py();
            // Records for `logging` first, while Python can take them.
            crate::logging::at_exit(py);
            py.detach(|| write_everything(exit_wait()));
        });
        let registered = flush.and_then(|f| py.import("atexit")?.call_method1("register", (f,)));
        if let Err(err) = registered {
            // The C atexit hook still writes what it can.
            err.write_unraisable(py, None);
        }
    });
}

/// Writes what the call kept, and what waits in the process-wide queue,
/// then hands the records that wait for `logging` over. Returns an
/// exception raised by a signal handler during the write, or by a handler.
fn write_at_return(py: Python<'_>, sink: Sink) -> Option<PyErr> {
    let written = write_text_at_return(py, sink);
    let delivered = deliver_at_return(py);
    written.or(delivered)
}

/// Hands the records for `logging` over: the call's, and those logged
/// outside any call. Where this thread must avoid Python (the daemon rule)
/// they go to fd 2 as text.
fn deliver_at_return(py: Python<'_>) -> Option<PyErr> {
    let own = THREAD.with(|t| t.pending_any());
    if !own && !queue::waiting() {
        return None;
    }
    if avoid_python(py) {
        let own = THREAD.with(|t| t.take_pending());
        queue_pending_as_text(&own);
        write_fd2(Taken::default(), Duration::ZERO);
        return None;
    }
    crate::logging::deliver_at_return(py)
}

/// Writes what the call kept as text, and the process-wide queue.
fn write_text_at_return(py: Python<'_>, sink: Sink) -> Option<PyErr> {
    let taken = THREAD.with(|t| t.take_kept());
    let avoid_python = avoid_python(py);
    match return_plan(sink, avoid_python) {
        ReturnPlan::ThroughPython => {
            if queue_pending() {
                py.detach(|| write_queue(stall_wait()));
            }
            match write_through_python(py, &taken.text) {
                Written::All => {
                    count_noted(&taken);
                    None
                }
                Written::ButFlushFailed(err) => {
                    count_noted(&taken);
                    is_interrupt(py, &err).then_some(err)
                }
                Written::NoStream => {
                    write_fd2_detached(py, taken);
                    None
                }
                Written::Failed(err) => {
                    // A repeat is better than a loss: the write may have
                    // failed part way, so everything goes to fd 2 too.
                    write_fd2_detached(py, taken);
                    is_interrupt(py, &err).then_some(err)
                }
            }
        }
        ReturnPlan::Fd2Detached => {
            write_fd2_detached(py, taken);
            None
        }
        ReturnPlan::Fd2NoWait => {
            write_fd2(taken, Duration::ZERO);
            None
        }
    }
}

/// Writes the queue and then `taken` to fd 2 with the GIL released, so a
/// Python thread that drains fd 2 can run; what still finds no room after
/// the stall wait joins the queue.
fn write_fd2_detached(py: Python<'_>, taken: Taken) {
    py.detach(|| write_fd2(taken, stall_wait()));
}

/// How a write through `sys.stderr` went.
enum Written {
    /// `write` and `flush` returned (whatever they returned).
    All,
    /// `write` returned, `flush` raised: the lines were handed over.
    ButFlushFailed(PyErr),
    /// `sys.stderr` is `None`.
    NoStream,
    /// Looking up or calling `write` raised.
    Failed(PyErr),
}

/// Writes through `sys.stderr.write`, then `flush`, marking the thread as
/// writing so that a writer that calls back into the extension cannot
/// recurse (see [`crate::route::entry_sink`]).
fn write_through_python(py: Python<'_>, text: &[u8]) -> Written {
    if text.is_empty() {
        return Written::All;
    }
    let stderr = match py.import("sys").and_then(|sys| sys.getattr("stderr")) {
        Ok(stderr) if !stderr.is_none() => stderr,
        Ok(_) => return Written::NoStream,
        Err(err) => return Written::Failed(err),
    };
    let text = match decode_to_str(py, text) {
        Ok(text) => text,
        Err(err) => return Written::Failed(err),
    };
    THREAD.with(|t| t.writing_kept.set(true));
    let written = match stderr.call_method1("write", (text,)) {
        Err(err) => Written::Failed(err),
        Ok(_) => match stderr.call_method0("flush") {
            Ok(_) => Written::All,
            Err(err) => Written::ButFlushFailed(err),
        },
    };
    THREAD.with(|t| t.writing_kept.set(false));
    written
}

/// The kept lines as a Python `str`, decoded by CPython itself in one
/// pass: `bytes.decode("utf-8", "backslashreplace")`, which a record's
/// bytes always pass unchanged (the formatter writes valid UTF-8 only).
fn decode_to_str<'py>(py: Python<'py>, text: &[u8]) -> PyResult<Bound<'py, PyString>> {
    let len = isize::try_from(text.len()).map_err(|e| PyOverflowError::new_err(e.to_string()))?;
    // SAFETY: the GIL is held (`py`); `text` is a live slice of `len`
    // bytes that CPython only reads, and the error handler's name is a
    // NUL-terminated string. The call returns a new reference or NULL with
    // an exception set, which `from_owned_ptr_or_err` takes over.
    unsafe {
        let decoded = pyo3::ffi::PyUnicode_DecodeUTF8(
            text.as_ptr().cast(),
            len,
            c"backslashreplace".as_ptr(),
        );
        Ok(Bound::from_owned_ptr_or_err(py, decoded)?.cast_into_unchecked())
    }
}

/// Whether an exception raised while the call's lines were written must
/// reach the caller: a `BaseException` that is not an `Exception`
/// (`KeyboardInterrupt`, `SystemExit`), or any exception raised by a
/// Python signal handler. Other exceptions come from a broken stream, and
/// the call's own result stands.
pub(crate) fn is_interrupt(py: Python<'_>, err: &PyErr) -> bool {
    !err.is_instance_of::<PyException>(py) || raised_in_signal_handler(py, err).unwrap_or(false)
}

/// Whether a frame of the exception's traceback runs a Python signal
/// handler installed with `signal.signal`.
fn raised_in_signal_handler(py: Python<'_>, err: &PyErr) -> PyResult<bool> {
    let signal = py.import("signal")?;
    let mut handlers = Vec::new();
    for signum in signal.call_method0("valid_signals")?.try_iter()? {
        let handler = signal.call_method1("getsignal", (signum?,))?;
        if let Ok(code) = handler.getattr("__code__") {
            handlers.push(code);
        }
    }
    let mut tb = err.traceback(py).map(|tb| tb.into_any());
    while let Some(frame) = tb {
        let code = frame.getattr("tb_frame")?.getattr("f_code")?;
        if handlers.iter().any(|h| h.is(&code)) {
            return Ok(true);
        }
        tb = Some(frame.getattr("tb_next")?).filter(|next| !next.is_none());
    }
    Ok(false)
}

/// `sys.__dict__` and the interned names looked up in it, as addresses.
/// The sys module, its dict and interned strings live as long as the
/// interpreter; PyO3 extensions run in one interpreter, started once.
struct SysNames {
    dict: usize,
    stderr: usize,
    own_stderr: usize,
    /// Whether a dict watcher on `sys.__dict__` keeps the answer.
    watched: bool,
}

/// `sys.__dict__` and the names, found (and the dict watched, where it
/// can be) at the first call.
fn sys_names(py: Python<'_>) -> &'static SysNames {
    static NAMES: OnceLock<SysNames> = OnceLock::new();
    NAMES.get_or_init(|| {
        // SAFETY: the `Python` token proves this thread holds the GIL, which
        // all these functions require. `PyImport_AddModule` and
        // `PyModule_GetDict` return borrowed references to objects that live
        // as long as the interpreter; the interned strings are new
        // references kept for good.
        let (dict, stderr, own_stderr) = unsafe {
            use pyo3::ffi::*;
            (
                PyModule_GetDict(PyImport_AddModule(c"sys".as_ptr())),
                PyUnicode_InternFromString(c"stderr".as_ptr()),
                PyUnicode_InternFromString(c"__stderr__".as_ptr()),
            )
        };
        SysNames {
            dict: dict as usize,
            stderr: stderr as usize,
            own_stderr: own_stderr as usize,
            watched: watch::start(py, dict, stderr, own_stderr),
        }
    })
}

/// `sys.stderr is sys.__stderr__`. Where a dict watcher on `sys.__dict__`
/// keeps the answer (CPython 3.12+, a version-specific build), one load;
/// else two borrowed dict lookups of interned names: a few nanoseconds,
/// and no Python code runs.
#[inline]
fn stderr_is_own(py: Python<'_>) -> bool {
    if let Some(own) = watch::known() {
        return own;
    }
    stderr_is_own_looked_up(py)
}

/// [`stderr_is_own`] by the two lookups; kept for the next calls where the
/// watcher will tell when it changes. Rare there, and every outermost
/// call's path elsewhere.
#[cfg_attr(all(Py_3_12, not(Py_LIMITED_API), not(Py_GIL_DISABLED)), cold)]
fn stderr_is_own_looked_up(py: Python<'_>) -> bool {
    let names = sys_names(py);
    let lookup = |key: usize| {
        // SAFETY: the GIL is held (the `Python` token) and both pointers are
        // live (see `sys_names`); `PyDict_GetItemWithError` returns a
        // borrowed reference or NULL, which is only compared, never
        // dereferenced. With a dict and a str key it cannot raise: no error
        // is left set.
        unsafe { pyo3::ffi::PyDict_GetItemWithError(names.dict as *mut _, key as *mut _) }
    };
    let own = lookup(names.stderr) == lookup(names.own_stderr);
    if names.watched {
        watch::keep(own);
    }
    own
}

/// How a call's entry learns whether `sys.stderr` is the process's own:
/// `"dict watcher"` where a watcher on `sys.__dict__` keeps the answer
/// between changes of `sys.stderr` or `sys.__stderr__` (CPython 3.12 and
/// later, built for that version, not free-threaded, and a watcher slot
/// was free), `"lookup"` where each outermost call looks both up (the
/// stable ABI, older versions). For benchmarks and tests.
pub fn stderr_check(py: Python<'_>) -> &'static str {
    if sys_names(py).watched {
        "dict watcher"
    } else {
        "lookup"
    }
}

/// The dict watcher on `sys.__dict__` (CPython 3.12+, not the limited API,
/// not free-threaded): a process-wide answer to "is `sys.stderr` the
/// process's own", set at a call's entry and cleared by the watcher when
/// `sys.stderr` or `sys.__stderr__` is about to change. Both run with the
/// GIL held, so neither sees the other half done. A watcher is called
/// before the dict changes: it only clears the answer, and the next entry
/// looks the new values up.
#[cfg(all(Py_3_12, not(Py_LIMITED_API), not(Py_GIL_DISABLED)))]
mod watch {
    use pyo3::ffi::{PyObject, PyUnicode_Check, PyUnicode_CompareWithASCIIString};
    use pyo3::prelude::*;
    use std::os::raw::c_int;
    use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering::Relaxed};

    const UNKNOWN: u8 = 0;
    const OWN: u8 = 1;
    const REPLACED: u8 = 2;

    /// The answer while `sys.stderr` and `sys.__stderr__` are unchanged.
    static KNOWN: AtomicU8 = AtomicU8::new(UNKNOWN);
    /// The interned "stderr" and "__stderr__", for the watcher's compare.
    static STDERR: AtomicUsize = AtomicUsize::new(0);
    static OWN_STDERR: AtomicUsize = AtomicUsize::new(0);

    // `PyDict_WatchEvent` (Include/cpython/dictobject.h, 3.12 and 3.13).
    const ADDED: c_int = 0;
    const MODIFIED: c_int = 1;
    const DELETED: c_int = 2;

    type DictWatchCallback = unsafe extern "C" fn(
        event: c_int,
        dict: *mut PyObject,
        key: *mut PyObject,
        new_value: *mut PyObject,
    ) -> c_int;

    // SAFETY: the declaration of CPython's `PyDict_AddWatcher`
    // (Include/cpython/dictobject.h, 3.12+), which pyo3-ffi 0.30 skips:
    // `int PyDict_AddWatcher(PyDict_WatchCallback callback)`, the callback
    // taking the `PyDict_WatchEvent` enum (an int) and three object
    // pointers. Built only for CPython 3.12+ (`Py_3_12`), where libpython
    // has the symbol.
    extern "C" {
        fn PyDict_AddWatcher(callback: DictWatchCallback) -> c_int;
    }

    /// The answer kept, if any.
    #[inline]
    pub(super) fn known() -> Option<bool> {
        match KNOWN.load(Relaxed) {
            OWN => Some(true),
            REPLACED => Some(false),
            _ => None,
        }
    }

    /// Keeps the answer looked up at a call's entry, with the GIL held.
    pub(super) fn keep(own: bool) {
        KNOWN.store(if own { OWN } else { REPLACED }, Relaxed);
    }

    /// Watches `sys.__dict__`; false (the lookup at each call stays) if the
    /// interpreter has no watcher slot left (it has 8) or watching failed.
    pub(super) fn start(
        py: Python<'_>,
        dict: *mut PyObject,
        stderr: *mut PyObject,
        own_stderr: *mut PyObject,
    ) -> bool {
        STDERR.store(stderr as usize, Relaxed);
        OWN_STDERR.store(own_stderr as usize, Relaxed);
        // SAFETY: the GIL is held (the `Python` token). `on_sys_dict_event`
        // has the signature of `PyDict_WatchCallback` and lives as long as
        // the process; `dict` is `sys.__dict__`, a live dict (see
        // `sys_names`); `id` is the watcher just added. On failure these
        // functions set an exception, which `PyErr::take` clears.
        let watched = unsafe {
            let id = PyDict_AddWatcher(on_sys_dict_event);
            if id >= 0 && pyo3::ffi::PyDict_Watch(id, dict) != 0 {
                pyo3::ffi::PyDict_ClearWatcher(id);
                false
            } else {
                id >= 0
            }
        };
        if !watched {
            drop(PyErr::take(py));
        }
        watched
    }

    /// Called by CPython, with the GIL held, before `sys.__dict__` changes.
    unsafe extern "C" fn on_sys_dict_event(
        event: c_int,
        _dict: *mut PyObject,
        key: *mut PyObject,
        _new_value: *mut PyObject,
    ) -> c_int {
        let names_stderr = match event {
            // SAFETY: for these events CPython passes the key, a live
            // object, and holds the GIL.
            ADDED | MODIFIED | DELETED => unsafe { is_stderr_name(key) },
            // Cloned, cleared, deallocated, or an event of a later version.
            _ => true,
        };
        if names_stderr {
            KNOWN.store(UNKNOWN, Relaxed);
        }
        0
    }

    /// Whether `key` is "stderr" or "__stderr__"; true for a key that is
    /// not a str, which could compare equal to one in a way only Python
    /// knows. Must be called with the GIL held and a live `key`.
    unsafe fn is_stderr_name(key: *mut PyObject) -> bool {
        let key_address = key as usize;
        if key_address == STDERR.load(Relaxed) || key_address == OWN_STDERR.load(Relaxed) {
            return true;
        }
        if key.is_null() {
            return true;
        }
        // SAFETY: the caller holds the GIL and `key` is live and not NULL;
        // `PyUnicode_CompareWithASCIIString` does not raise.
        unsafe {
            PyUnicode_Check(key) == 0
                || PyUnicode_CompareWithASCIIString(key, c"stderr".as_ptr()) == 0
                || PyUnicode_CompareWithASCIIString(key, c"__stderr__".as_ptr()) == 0
        }
    }
}

/// Where the dict watcher cannot be used: no answer is kept, each
/// outermost call looks `sys.stderr` up.
#[cfg(not(all(Py_3_12, not(Py_LIMITED_API), not(Py_GIL_DISABLED))))]
mod watch {
    use pyo3::ffi::PyObject;
    use pyo3::prelude::*;

    #[inline]
    pub(super) fn known() -> Option<bool> {
        None
    }

    pub(super) fn keep(_own: bool) {}

    pub(super) fn start(
        _py: Python<'_>,
        _dict: *mut PyObject,
        _stderr: *mut PyObject,
        _own_stderr: *mut PyObject,
    ) -> bool {
        false
    }
}

/// The descriptor of a replaced `sys.stderr` that outlives fd 2's reader,
/// where the crash handler writes the call's lines, or -1 (fd 2). In
/// ipykernel, fd 2 is a pipe that a thread of the kernel drains, a thread
/// that dies with the process; its `sys.stderr.fileno()` is the copy of the
/// kernel's original stderr it made first. A stream on a file gives that
/// file's descriptor; an in-memory one (pytest's, `io.StringIO`) none.
/// Asked of Python once per `sys.stderr` object: the answer is kept with a
/// reference to the object, so that its address cannot name another.
#[cold]
#[inline(never)]
fn surviving_fd(py: Python<'_>) -> i32 {
    static LAST: Mutex<Option<(Py<PyAny>, i32)>> = Mutex::new(None);
    let Ok(stderr) = py.import("sys").and_then(|sys| sys.getattr("stderr")) else {
        return -1;
    };
    let mut last = LAST.lock().unwrap_or_else(|e| e.into_inner());
    match &*last {
        Some((known, fd)) if known.is(&stderr) => *fd,
        _ => {
            let fd = stderr
                .call_method0("fileno")
                .and_then(|fd| fd.extract::<i32>())
                .unwrap_or(-1);
            *last = Some((stderr.unbind(), fd));
            fd
        }
    }
}

/// Whether this thread must not write through Python or re-take the GIL
/// (see [`daemon_avoids_python`]). Asks Python only where the rule applies,
/// once per thread.
fn avoid_python(py: Python<'_>) -> bool {
    static OLD_LINUX_PYTHON: OnceLock<bool> = OnceLock::new();
    let applies = *OLD_LINUX_PYTHON.get_or_init(|| {
        let v = py.version_info();
        daemon_avoids_python(cfg!(target_os = "linux"), (v.major, v.minor, v.patch), true)
    });
    if !applies {
        return false;
    }
    THREAD.with(|t| match t.avoid_python.get() {
        Some(known) => known,
        None => {
            let avoid = !is_joined_at_exit(py).unwrap_or(false);
            t.avoid_python.set(Some(avoid));
            avoid
        }
    })
}

/// Whether Python joins this thread before it finalizes: a `threading`
/// thread that is not a daemon. Every other thread (a daemon, or a native
/// thread that attached itself) may still run when finalization starts.
///
/// Found with lookups that run no Python bytecode, so the GIL cannot be
/// handed away (and this thread ended) while they run:
/// `sys.modules["threading"]._active[_thread.get_ident()]._daemonic`.
fn is_joined_at_exit(py: Python<'_>) -> PyResult<bool> {
    if is_process_main_thread() {
        return Ok(true);
    }
    let modules = py.import("sys")?.getattr("modules")?;
    let Ok(threading) = modules.get_item("threading") else {
        return Ok(false);
    };
    let ident = py.import("_thread")?.call_method0("get_ident")?;
    let Ok(thread) = threading.getattr("_active")?.get_item(ident) else {
        return Ok(false);
    };
    Ok(!thread.getattr("_daemonic")?.extract::<bool>()?)
}

#[cfg(target_os = "linux")]
fn is_process_main_thread() -> bool {
    // SAFETY: gettid and getpid have no preconditions and cannot fail.
    unsafe { libc::gettid() == libc::getpid() }
}

#[cfg(not(target_os = "linux"))]
fn is_process_main_thread() -> bool {
    false
}
