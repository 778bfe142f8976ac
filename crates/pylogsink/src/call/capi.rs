//! CPython functions that an extension cannot count on at build time,
//! found in the running interpreter instead.
//!
//! Why at run time: pylogsink builds beside whatever PyO3 0.26 to 0.30 an
//! extension has, and one wheel may be built for the stable ABI (abi3) and
//! loaded by any CPython from 3.11 on. Which interpreter runs it is known
//! only when it is imported. Asking the interpreter for these symbols,
//! rather than a build script asking PyO3's build configuration, means no
//! build step depends on a crate version the extension's PyO3 does not fix,
//! and an abi3 build on CPython 3.12+ uses the dict watcher too.
//!
//! Found once, at the first call or at init (with the GIL held); kept as
//! addresses that any thread may read.

use crate::sys;
use pyo3::ffi::PyObject;
use pyo3::prelude::*;
use std::ffi::{c_void, CStr};
use std::os::raw::c_int;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::OnceLock;

/// `PyDict_WatchCallback`: the `PyDict_WatchEvent` (an int), the dict, the
/// key and the new value.
pub(crate) type DictWatchCallback = unsafe extern "C" fn(
    event: c_int,
    dict: *mut PyObject,
    key: *mut PyObject,
    new_value: *mut PyObject,
) -> c_int;

/// CPython 3.12+'s dict watcher functions (Include/cpython/dictobject.h).
#[derive(Clone, Copy)]
pub(crate) struct DictWatcher {
    /// `int PyDict_AddWatcher(PyDict_WatchCallback callback)`.
    pub(crate) add: unsafe extern "C" fn(DictWatchCallback) -> c_int,
    /// `int PyDict_Watch(int watcher_id, PyObject *dict)`.
    pub(crate) watch: unsafe extern "C" fn(c_int, *mut PyObject) -> c_int,
    /// `int PyDict_ClearWatcher(int watcher_id)`.
    pub(crate) clear: unsafe extern "C" fn(c_int) -> c_int,
}

/// The dict watcher functions, where the running CPython has them (3.12+)
/// and pylogsink may use them: not on a free-threaded build, where the
/// watcher's answer could race with other threads' changes.
pub(crate) fn dict_watcher(py: Python<'_>) -> Option<DictWatcher> {
    if free_threaded() {
        return None;
    }
    let add = lookup(py, c"PyDict_AddWatcher")?;
    let watch = lookup(py, c"PyDict_Watch")?;
    let clear = lookup(py, c"PyDict_ClearWatcher")?;
    // SAFETY: the symbols of these names in libpython are the functions
    // declared above, with these signatures, in every CPython that has
    // them (3.12 to 3.15).
    unsafe {
        Some(DictWatcher {
            add: std::mem::transmute::<*mut c_void, unsafe extern "C" fn(DictWatchCallback) -> c_int>(
                add,
            ),
            watch: std::mem::transmute::<
                *mut c_void,
                unsafe extern "C" fn(c_int, *mut PyObject) -> c_int,
            >(watch),
            clear: std::mem::transmute::<*mut c_void, unsafe extern "C" fn(c_int) -> c_int>(clear),
        })
    }
}

/// Whether the extension was built for a free-threaded CPython: its
/// `PyObject` header is larger there than the two words (reference count
/// and type) of a build with the GIL. A debug build that traces references
/// also has a larger header and is counted here too, which only costs the
/// dict watcher.
const fn free_threaded() -> bool {
    std::mem::size_of::<PyObject>() > 2 * std::mem::size_of::<usize>()
}

/// `sys.<name>`, without an import: `PyImport_Import` looks `__builtins__`
/// up in the current frame's globals, and a pending call may run where
/// those have none (a Cython module's), which raises `KeyError`.
pub(crate) fn sys_attr<'py>(py: Python<'py>, name: &CStr) -> PyResult<Bound<'py, PyAny>> {
    // SAFETY: the GIL is held (`py`) and `name` is NUL-terminated;
    // `PySys_GetObject` returns a borrowed reference or NULL, without
    // setting an exception, and the new reference taken keeps it alive.
    unsafe {
        let found = pyo3::ffi::PySys_GetObject(name.as_ptr());
        if found.is_null() {
            return Err(pyo3::exceptions::PyAttributeError::new_err(format!(
                "sys has no {}",
                name.to_string_lossy()
            )));
        }
        Ok(Bound::from_borrowed_ptr(py, found))
    }
}

/// `PyFrameObject *PyFrame_GetBack(PyFrameObject *)` and `PyObject
/// *PyFrame_GetGlobals(PyFrameObject *)` (3.11+, not in the stable ABI):
/// the frame below, and a frame's globals, both new references.
#[derive(Clone, Copy)]
pub(crate) struct FrameFunctions {
    pub(crate) back: unsafe extern "C" fn(*mut PyObject) -> *mut PyObject,
    pub(crate) globals: unsafe extern "C" fn(*mut PyObject) -> *mut PyObject,
}

/// The frame functions, where the running CPython exports them.
pub(crate) fn frame_functions(py: Python<'_>) -> Option<FrameFunctions> {
    static FOUND: OnceLock<Option<FrameFunctions>> = OnceLock::new();
    *FOUND.get_or_init(|| {
        let back = lookup(py, c"PyFrame_GetBack")?;
        let globals = lookup(py, c"PyFrame_GetGlobals")?;
        type Get = unsafe extern "C" fn(*mut PyObject) -> *mut PyObject;
        // SAFETY: the symbols of these names in libpython are the functions
        // declared above, with these signatures (a frame is a PyObject), in
        // every CPython from 3.11 on.
        unsafe {
            Some(FrameFunctions {
                back: std::mem::transmute::<*mut c_void, Get>(back),
                globals: std::mem::transmute::<*mut c_void, Get>(globals),
            })
        }
    })
}

/// `PyThreadState_GetUnchecked` (3.13+) or `_PyThreadState_UncheckedGet`
/// (before): the calling thread's attached thread state, or NULL.
static CURRENT_THREAD_STATE: AtomicUsize = AtomicUsize::new(0);

/// Finds, with the GIL held, what [`attached`] needs. Cheap after the
/// first time.
pub(crate) fn find_thread_state(py: Python<'_>) {
    static FOUND: OnceLock<()> = OnceLock::new();
    FOUND.get_or_init(|| {
        let found = lookup(py, c"PyThreadState_GetUnchecked")
            .or_else(|| lookup(py, c"_PyThreadState_UncheckedGet"));
        CURRENT_THREAD_STATE.store(found.map_or(0, |f| f as usize), Relaxed);
    });
}

/// Whether the calling thread holds the GIL (is attached to the
/// interpreter), without taking it, on any CPython 3.11 and later; `None` before [`find_thread_state`]
/// ran, or where the interpreter has neither function.
pub(crate) fn attached() -> Option<bool> {
    let f = CURRENT_THREAD_STATE.load(Relaxed);
    if f == 0 {
        return None;
    }
    // SAFETY: `f` is the address of `PyThreadState_GetUnchecked` or
    // `_PyThreadState_UncheckedGet`, both `PyThreadState *(void)`, which
    // read the current thread state and may be called on any thread, GIL
    // or not.
    let get = unsafe { std::mem::transmute::<usize, unsafe extern "C" fn() -> *mut c_void>(f) };
    // SAFETY: see above.
    let current = unsafe { get() };
    if current.is_null() {
        return Some(false);
    }
    // Before CPython 3.12 the current thread state is the one of whichever
    // thread holds the GIL, not a thread-local: it is this thread's only if
    // it is the one that this thread's state (kept in a thread-local by
    // CPython) says.
    // SAFETY: `PyGILState_GetThisThreadState` reads a thread-local and may
    // be called on any thread, GIL or not.
    let own = unsafe { pyo3::ffi::PyGILState_GetThisThreadState() };
    Some(std::ptr::eq(current, own.cast()))
}

/// Whether the calling thread has a Python thread state (a `threading`
/// thread, the main thread, or a thread attached to the interpreter), GIL
/// or not.
pub(crate) fn has_thread_state() -> bool {
    // SAFETY: `PyGILState_GetThisThreadState` reads a thread-local and may
    // be called on any thread, GIL or not.
    !unsafe { pyo3::ffi::PyGILState_GetThisThreadState() }.is_null()
}

/// Whether Python runs and this thread holds its GIL: `Py_IsInitialized`,
/// or, while CPython 3.15 still initializes (it imports `site`, and so
/// runs `.pth` lines and `sitecustomize`, before `Py_IsInitialized` says
/// it is initialized), a thread state attached to this thread.
/// `PyThreadState_GetUnchecked` (3.13+) reads a thread-local, NULL where
/// no interpreter runs; on Windows the symbol is looked up in Python's DLL
/// only once Python says it runs, so there `Py_IsInitialized` alone tells.
pub(crate) fn python_runs() -> bool {
    // SAFETY: `Py_IsInitialized` may be called at any time, with or
    // without the GIL.
    if unsafe { pyo3::ffi::Py_IsInitialized() } != 0 {
        return true;
    }
    #[cfg(unix)]
    if let Some(f) = sys::global_symbol(c"PyThreadState_GetUnchecked") {
        // SAFETY: the symbol, where the process has it, is
        // `PyThreadState *PyThreadState_GetUnchecked(void)`, which reads a
        // thread-local and may be called on any thread at any time.
        unsafe {
            let get = std::mem::transmute::<*mut c_void, unsafe extern "C" fn() -> *mut c_void>(f);
            return !get().is_null();
        }
    }
    false
}

/// The address of CPython's function `name`, if the running interpreter
/// exports it.
#[cfg(unix)]
fn lookup(_py: Python<'_>, name: &CStr) -> Option<*mut c_void> {
    sys::global_symbol(name)
}

/// The address of CPython's function `name`, if the running interpreter's
/// DLL (`pythonXY.dll`, whose handle is `sys.dllhandle`) exports it.
#[cfg(windows)]
fn lookup(py: Python<'_>, name: &CStr) -> Option<*mut c_void> {
    let handle: usize = py
        .import("sys")
        .ok()?
        .getattr("dllhandle")
        .ok()?
        .extract()
        .ok()?;
    // SAFETY: `handle` is the module handle of the loaded python DLL,
    // which stays loaded for the life of the process.
    unsafe { sys::module_symbol(handle as *mut c_void, name) }
}
