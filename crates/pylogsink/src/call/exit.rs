//! The process's end: what still waits is written, or handed to Python,
//! before it.
//!
//! A process ends in three ways that matter here, and each has its own
//! last hook:
//!
//! - Python's exit runs the `atexit` functions while the interpreter is
//!   whole: [`arm`] registers one.
//! - A multiprocessing worker (fork and forkserver start methods) ends
//!   with `os._exit` once its target returned: no `atexit` function runs,
//!   but multiprocessing's own finalizers do (`Process._bootstrap` calls
//!   `multiprocessing.util._exit_function`). [`arm`] registers the same
//!   function as the last of them, in every worker.
//! - C `exit()` (a native library that gives up) runs the C `atexit`
//!   hooks only, without Python: `core::registry` writes to fd 2 there.
//!
//! `os._exit` from user code and SIGKILL run nothing: what waits then is
//! lost, as a Python program's own buffered output is.

use super::at_fork::os_register_at_fork;
use super::{live, logging, safe_point};
use crate::control::stall::exit_wait;
use crate::core::fork;
use crate::core::registry::write_everything;
use crate::dest::{fd, in_flight};
use pyo3::prelude::*;
use pyo3::types::{PyCFunction, PyDict};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Once, OnceLock};

/// The function that writes what waits at the end, once made.
static AT_END: OnceLock<Py<PyAny>> = OnceLock::new();

/// Whether multiprocessing was told to register [`AT_END`] in each worker
/// it starts. A forked child inherits the flag with the registration.
static IN_WORKERS: AtomicBool = AtomicBool::new(false);

/// multiprocessing runs its finalizers by priority, highest first: this
/// one runs after all the others, which may still log.
const LAST: i64 = i64::MIN;

/// Registers, once per process, the function that writes what waits when
/// the process ends: with `atexit`, and with multiprocessing for its
/// workers. A failure is reported as unraisable; the C `atexit` hook still
/// writes what it can. At init ([`arm_at_init`]) or at the first use.
fn register_once(py: Python<'_>) {
    static REGISTERED: Once = Once::new();
    REGISTERED.call_once(|| {
        fork::install();
        if let Err(err) = register(py) {
            err.write_unraisable(py, None);
        }
    });
}

/// At init: registers the function, since pylogsink's thread runs from
/// then on and must be stopped before finalization.
pub(crate) fn arm_at_init(py: Python<'_>) {
    register_once(py);
}

/// At the first use (a call, the `logging` destination): registers the
/// function, or, registered at init, registers it again, last: `atexit`
/// runs the last registered first, so the function still runs before
/// what the program registered between the import and the first use (a
/// handler that reports the records it got, `logging.shutdown` when
/// `logging` was imported after the extension).
#[inline]
pub(crate) fn arm(py: Python<'_>) {
    if !USED.is_completed() {
        arm_first(py);
    }
}

/// Done once by [`arm`].
static USED: Once = Once::new();

#[cold]
#[inline(never)]
fn arm_first(py: Python<'_>) {
    USED.call_once(|| {
        register_once(py);
        if let Some(at_end) = AT_END.get() {
            let again = py.import("atexit").and_then(|atexit| {
                atexit.call_method1("unregister", (at_end.bind(py),))?;
                atexit.call_method1("register", (at_end.bind(py),))
            });
            if let Err(err) = again {
                err.write_unraisable(py, None);
            }
        }
    });
}

fn register(py: Python<'_>) -> PyResult<()> {
    let at_end = PyCFunction::new_closure(py, Some(c"pylogsink_at_end"), None, |args, _| {
        write_what_waits(args.py());
    })?;
    py.import("atexit")?.call_method1("register", (&at_end,))?;
    let _ = AT_END.set(at_end.into_any().unbind());
    in_workers(py)?;
    if in_a_worker(py)? {
        // A worker whose first call came after multiprocessing started it
        // (its `Process._bootstrap` ran the registrations already).
        finalize_at_end(py)?;
    }
    // multiprocessing may be imported only after the first call: look
    // again in each forked child, before its `Process._bootstrap` runs.
    let in_child =
        PyCFunction::new_closure(py, Some(c"pylogsink_end_in_child"), None, |args, _| {
            if let Err(err) = in_workers(args.py()) {
                err.write_unraisable(args.py(), None);
            }
        })?;
    let kwargs = PyDict::new(py);
    kwargs.set_item("after_in_child", in_child)?;
    os_register_at_fork(py, &kwargs)
}

/// Writes what waits, while the interpreter is whole: records for
/// `logging` first (pylogsink's thread is stopped there, given the exit
/// budget to end what it does), the text of a write through a Python
/// stream still under way then (to fd 2: the thread is left behind), then
/// the lines logged outside any call for a replaced `sys.stderr`, then the
/// lines calls still in progress kept, to fd 2 with the GIL released.
/// Runs once per process at most, or once more when a worker's finalizers
/// and then its `atexit` functions both run (spawn): the second time
/// finds nothing.
fn write_what_waits(py: Python<'_>) {
    // No pending call from now on: the interpreter is about to finalize.
    safe_point::close();
    logging::at_exit(py);
    let stuck = in_flight::take_over();
    py.detach(|| {
        for text in stuck {
            fd::write_with_room(fd::stderr(), &text, exit_wait());
        }
    });
    if let Some(err) = live::write_outside_lines(py) {
        err.write_unraisable(py, None);
    }
    py.detach(|| write_everything(exit_wait()));
}

/// Once multiprocessing is imported: asks it to register [`AT_END`] as a
/// finalizer in each worker it starts from now on (`register_after_fork`
/// runs in the worker, after it cleared the finalizers it inherited).
fn in_workers(py: Python<'_>) -> PyResult<()> {
    if IN_WORKERS.load(Ordering::Acquire) {
        return Ok(());
    }
    let modules = py.import("sys")?.getattr("modules")?;
    let Ok(util) = modules.get_item("multiprocessing.util") else {
        return Ok(());
    };
    if IN_WORKERS.swap(true, Ordering::AcqRel) {
        return Ok(());
    }
    let Some(at_end) = AT_END.get() else {
        return Ok(());
    };
    let in_worker = PyCFunction::new_closure(py, Some(c"pylogsink_in_worker"), None, |args, _| {
        finalize_at_end(args.py())
    })?;
    util.call_method1("register_after_fork", (at_end.bind(py), in_worker))?;
    Ok(())
}

/// Whether this process is a multiprocessing worker that runs its target.
fn in_a_worker(py: Python<'_>) -> PyResult<bool> {
    let modules = py.import("sys")?.getattr("modules")?;
    let Ok(mp) = modules.get_item("multiprocessing") else {
        return Ok(false);
    };
    Ok(!mp.call_method0("parent_process")?.is_none())
}

/// Registers, in this worker, [`AT_END`] as multiprocessing's last
/// finalizer, and [`hand_over_first`] as its first.
fn finalize_at_end(py: Python<'_>) -> PyResult<()> {
    let Some(at_end) = AT_END.get() else {
        return Ok(());
    };
    let first = PyCFunction::new_closure(py, Some(c"pylogsink_worker_ends"), None, |args, _| {
        hand_over_first(args.py());
    })?;
    let finalize = py.import("multiprocessing.util")?.getattr("Finalize")?;
    for (callback, priority) in [
        (first.into_any().unbind(), FIRST),
        (at_end.clone_ref(py), LAST),
    ] {
        let kwargs = PyDict::new(py);
        kwargs.set_item("exitpriority", priority)?;
        finalize.call((py.None(), callback), Some(&kwargs))?;
    }
    Ok(())
}

/// multiprocessing's first finalizer in a worker: before a `Queue`'s own
/// (`_finalize_close`, priority 10, then `_finalize_join`).
const FIRST: i64 = i64::MAX;

/// The first of a worker's finalizers: what waits for Python is handed
/// over while everything Python hands it to still works (a `QueueHandler`
/// whose queue's feeder thread is not joined yet), and pylogsink's thread
/// is stopped, so that nothing starts a queue's feeder once the queues'
/// finalizers ran: `os._exit` would end such a thread in the middle of a
/// write, holding the queue's lock that the other processes share, and
/// they would wait for it for good. From here on, what is logged for
/// Python waits for [`AT_END`], which writes records as text.
fn hand_over_first(py: Python<'_>) {
    safe_point::close();
    if let Some(err) = live::write_outside_lines(py) {
        err.write_unraisable(py, None);
    }
    logging::at_exit(py);
    logging::records_as_text_from_now();
}
