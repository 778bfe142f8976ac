//! The daemon rule: threads that must not re-take the GIL at a return.
//!
//! On Linux, CPython before 3.13.8 ends a thread that re-takes the GIL after
//! finalization began with `pthread_exit`, which crashes the process if it
//! happens in the middle of a write through Python. Python joins its
//! non-daemon threads before it finalizes; every other thread may still run
//! then. Such a thread writes its lines to fd 2 instead (see
//! [`daemon_avoids_python`]).

use crate::core::thread::THREAD;
use crate::dest::route::daemon_avoids_python;
use pyo3::prelude::*;
use std::sync::OnceLock;

/// Whether this thread must not write through Python or re-take the GIL
/// (see [`daemon_avoids_python`]). Asks Python only where the rule applies,
/// once per thread.
pub(crate) fn avoid_python(py: Python<'_>) -> bool {
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
