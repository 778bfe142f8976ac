//! Python-level `fork()`: pylogsink's thread is not inside Python code
//! when the process forks.
//!
//! `fork()` copies only the thread that calls it. pylogsink's thread runs
//! Python code: `logging` handlers, a replaced `sys.stdout`'s `write`. A
//! lock it holds in there at the fork (a `BufferedWriter`'s, which Python
//! does not reset in the child) stays held forever in the child, whose
//! first record or print then hangs. Before a Python-level fork
//! (`os.fork`, multiprocessing's fork and forkserver) the forking thread
//! asks pylogsink's thread to hold off and waits, with the GIL released,
//! until it has finished the record in hand; after the fork the parent's
//! thread goes on and the child starts its own when it needs one.
//!
//! The wait is bounded by [`FORK_WAIT`]: a handler that blocks (a network
//! handler that waits for its server) does not block `fork()` for longer;
//! the fork then goes on, as it would without pylogsink, and a child may
//! inherit a lock that thread held.
//!
//! Two atomics, no lock: nothing here can be held across the fork.

use super::capture;
use super::daemon::hand_over;
use super::live;
use crate::core::capture as core_capture;
use crate::core::live::calls_in_progress;
use crate::core::queue::{for_stream_pending, queue_pending};
use crate::dest::pending::queue;
use pyo3::prelude::*;
use pyo3::types::{PyCFunction, PyDict};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::Once;
use std::time::{Duration, Instant};

/// How long a fork waits for pylogsink's thread to finish what it holds.
pub(crate) const FORK_WAIT: Duration = Duration::from_secs(1);

/// Forks under way in this process that asked the thread to hold off.
static ASKED: AtomicUsize = AtomicUsize::new(0);

/// Whether pylogsink's thread is doing a piece of work (it may hold a lock
/// inside Python code).
static BUSY: AtomicBool = AtomicBool::new(false);

/// Registers the fork hooks with `os.register_at_fork`, once per process
/// (a forked child keeps its parent's).
pub(crate) fn register(py: Python<'_>) {
    static REGISTERED: Once = Once::new();
    REGISTERED.call_once(|| {
        if let Err(err) = hooks(py) {
            err.write_unraisable(py, None);
        }
    });
}

fn hooks(py: Python<'_>) -> PyResult<()> {
    let before = PyCFunction::new_closure(py, Some(c"pylogsink_before_fork"), None, |args, _| {
        args.py().detach(hold_off);
    })?;
    let in_parent = PyCFunction::new_closure(py, Some(c"pylogsink_fork_parent"), None, |_, _| {
        ASKED.fetch_sub(1, SeqCst);
    })?;
    let in_child = PyCFunction::new_closure(py, Some(c"pylogsink_fork_child"), None, |_, _| {
        // The child has no thread of pylogsink's (it starts its own:
        // `logging::start_thread`).
        ASKED.store(0, SeqCst);
        BUSY.store(false, SeqCst);
        hand_over::after_fork_in_child();
        live::Turn::after_fork_in_child();
    })?;
    let kwargs = PyDict::new(py);
    kwargs.set_item("before", before)?;
    kwargs.set_item("after_in_parent", in_parent)?;
    kwargs.set_item("after_in_child", in_child)?;
    os_register_at_fork(py, &kwargs)
}

/// `os.register_at_fork(**kwargs)`, where Python has it: nothing where
/// processes cannot fork (Windows).
pub(crate) fn os_register_at_fork(py: Python<'_>, kwargs: &Bound<'_, PyDict>) -> PyResult<()> {
    let os = py.import("os")?;
    if os.hasattr("register_at_fork")? {
        os.getattr("register_at_fork")?.call((), Some(kwargs))?;
    }
    Ok(())
}

/// Before a fork, without the GIL: asks pylogsink's thread to hold off and
/// waits until it is not busy, for at most [`FORK_WAIT`].
fn hold_off() {
    ASKED.fetch_add(1, SeqCst);
    let deadline = Instant::now() + FORK_WAIT;
    while BUSY.load(SeqCst) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_micros(200));
    }
}

/// pylogsink's thread, without the GIL, before a piece of work: waits while
/// a fork is under way, then marks itself busy.
pub(crate) fn begin_work() {
    loop {
        BUSY.store(true, SeqCst);
        // With `hold_off`'s order (ask, then look) reversed here (busy, then
        // look), one of the two sees the other: the fork never goes on
        // while this thread starts a piece of work.
        if ASKED.load(SeqCst) == 0 {
            return;
        }
        BUSY.store(false, SeqCst);
        while ASKED.load(SeqCst) > 0 {
            std::thread::sleep(Duration::from_micros(200));
        }
    }
}

/// pylogsink's thread, after a piece of work.
pub(crate) fn end_work() {
    BUSY.store(false, SeqCst);
}

/// Whether a fork waits for pylogsink's thread: a long delivery stops
/// after the record in hand and leaves the rest for later.
pub(crate) fn asked() -> bool {
    ASKED.load(SeqCst) > 0
}

/// What a forked child must start without, each named, with whether this
/// process has it now: every flag and buffer of the output capture and of
/// the delivery that a thread of the parent may have set or filled. The
/// forking thread is in no call and no capture.
pub fn leftovers() -> Vec<(&'static str, bool)> {
    let (writing, this_thread_writing) = capture::writing_held();
    vec![
        ("output capture on", core_capture::is_on()),
        (
            "captured lines wait for Python",
            core_capture::pending_for_python(),
        ),
        ("captured lines being handed to Python", writing),
        ("this thread hands captured lines", this_thread_writing),
        ("a fork waits", asked()),
        ("pylogsink's thread busy", BUSY.load(SeqCst)),
        ("records wait for logging", queue::waiting()),
        ("lines wait for fd 2", queue_pending()),
        ("lines wait for a replaced sys.stderr", for_stream_pending()),
        ("a daemon thread's hand-over waits", hand_over::waiting()),
        ("calls in progress", !calls_in_progress().is_empty()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fork_waits_for_the_work_in_hand_and_the_thread_for_the_fork() {
        begin_work();
        let fork = std::thread::spawn(|| {
            let started = Instant::now();
            hold_off();
            started.elapsed()
        });
        while !asked() {
            std::thread::yield_now();
        }
        std::thread::sleep(Duration::from_millis(50));
        end_work();
        let waited = fork.join().unwrap();
        assert!(waited >= Duration::from_millis(50), "{waited:?}");
        assert!(waited < FORK_WAIT, "{waited:?}");
        // The fork is under way: the next piece of work waits for it.
        let thread = std::thread::spawn(|| {
            begin_work();
            end_work();
        });
        std::thread::sleep(Duration::from_millis(20));
        assert!(!thread.is_finished());
        ASKED.fetch_sub(1, SeqCst);
        thread.join().unwrap();
        // A piece of work that does not end: the fork goes on after the
        // bounded wait.
        begin_work();
        let started = Instant::now();
        hold_off();
        assert!(started.elapsed() >= FORK_WAIT);
        ASKED.fetch_sub(1, SeqCst);
        end_work();
    }
}
