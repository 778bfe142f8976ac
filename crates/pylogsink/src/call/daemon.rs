//! The daemon rule: threads that must not re-take the GIL at a return.
//!
//! CPython before 3.13.8 ends a thread that re-takes the GIL after
//! finalization began: on Linux with `pthread_exit`, which crashes the
//! process if it happens in the middle of a write through Python; on Windows
//! with `_endthreadex`, which leaves the locks the thread held taken, so the
//! exit waits for them forever. Python joins its
//! non-daemon threads before it finalizes; every other thread may still run
//! then. Such a thread never writes through Python from inside a call (see
//! [`daemon_avoids_python`]): at its return it hands its lines and records
//! to pylogsink's Python thread ([`hand_over`]), and once the exit closed
//! that, writes them to fd 2 as text.

use crate::core::thread::THREAD;
use crate::dest::route::daemon_avoids_python;
use crate::sys;
use pyo3::prelude::*;
use std::sync::OnceLock;

/// Whether this thread must not write through Python or re-take the GIL
/// (see [`daemon_avoids_python`]). Asks Python only where the rule applies,
/// once per thread.
pub(crate) fn avoid_python(py: Python<'_>) -> bool {
    static OLD_PYTHON_ENDS_THREADS: OnceLock<bool> = OnceLock::new();
    let applies = *OLD_PYTHON_ENDS_THREADS.get_or_init(|| {
        let v = py.version_info();
        daemon_avoids_python(
            sys::OLD_PYTHON_ENDS_DAEMON_THREADS,
            (v.major, v.minor, v.patch),
            true,
        )
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
    if sys::is_main_thread() {
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

/// The hand-over: what a thread that must avoid Python (see
/// [`avoid_python`]) would write through Python at its call's return (the
/// lines it kept for a replaced `sys.stderr`, its records for `logging`),
/// written instead by pylogsink's Python thread, while the returning
/// thread waits with the GIL released, so that a test that joins it and
/// then reads capsys or caplog finds its lines.
///
/// Waiting releases the GIL, and re-taking it is what ends such a thread
/// once finalization began. So the exit closes the hand-over first, in an
/// `atexit` function (which runs before finalization, while daemon threads
/// still run): from then on a returning thread does not enter it (its
/// lines go to fd 2 as text), and the exit waits, with the GIL released,
/// for the threads inside to re-take the GIL and leave, before
/// finalization can begin. A thread enters and leaves with the GIL held,
/// and the exit closes with it held, so the GIL orders the three.
pub(crate) mod hand_over {
    use crate::core::fork;
    use crate::core::live::WAIT_AT_RETURN;
    use crate::dest::pending::{queue, Batch};
    use crate::dest::Taken;
    use crate::record::lock;
    use pyo3::prelude::*;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
    use std::sync::{Arc, Mutex};
    use std::time::{Duration, Instant};

    /// What one returning thread handed over.
    pub(crate) struct Handed {
        /// Its lines for a replaced `sys.stderr`.
        pub(crate) lines: Taken,
        /// Its records for `logging`.
        pub(crate) batch: Batch,
        /// The stream its lines go to.
        pub(crate) stream: Option<Py<PyAny>>,
        /// The `contextvars` context its records are handled in.
        pub(crate) context: Option<Py<PyAny>>,
        /// Set once they were handed over.
        pub(crate) done: Arc<AtomicBool>,
    }

    struct State {
        /// The fork generation these belong to: a forked child has none of
        /// the parent's threads, so it starts afresh.
        generation: u64,
        handed: Vec<Handed>,
    }

    /// Locked with the GIL held only, and never across Python code, so no
    /// thread holds it across a `fork()` from Python.
    static STATE: Mutex<State> = Mutex::new(State {
        generation: 0,
        handed: Vec::new(),
    });
    static CLOSED: AtomicBool = AtomicBool::new(false);
    /// Threads between [`enter`] and [`leave`].
    static INSIDE: AtomicUsize = AtomicUsize::new(0);
    /// Whether something was handed over and not taken yet.
    static WAITING: AtomicBool = AtomicBool::new(false);

    /// The longest the exit waits for threads inside the hand-over to
    /// leave: longer than any of them waits.
    const EXIT_WAIT: Duration = Duration::from_secs(3);

    /// Runs `f` on the state, reset first in a forked child. What the
    /// reset drops is dropped after the lock is let go (dropping a Python
    /// object may run Python code).
    fn with<T>(f: impl FnOnce(&mut State) -> T) -> T {
        let generation = fork::generation();
        let mut state = lock(&STATE);
        let stale = if state.generation != generation {
            state.generation = generation;
            INSIDE.store(0, SeqCst);
            WAITING.store(false, SeqCst);
            std::mem::take(&mut state.handed)
        } else {
            Vec::new()
        };
        let out = f(&mut state);
        drop(state);
        drop(stale);
        out
    }

    /// In a forked child, with the GIL held: starts afresh at once, not
    /// at the first use.
    pub(crate) fn after_fork_in_child() {
        with(|_| ());
    }

    /// Hands `lines` and `batch` over and waits, with the GIL released, at
    /// most [`WAIT_AT_RETURN`] (less once the exit closes), for them to be
    /// handed over, and for `live` (what pylogsink's thread took from the
    /// call while it ran) to clear. Gives them back if the exit closed the
    /// hand-over: they go to fd 2 as text then.
    pub(crate) fn hand_over(
        py: Python<'_>,
        lines: Taken,
        batch: Batch,
        objects: impl FnOnce() -> (Option<Py<PyAny>>, Option<Py<PyAny>>),
        live: &AtomicBool,
    ) -> Result<(), (Taken, Batch)> {
        let done = Arc::new(AtomicBool::new(false));
        let mut given = Some((lines, batch));
        let entered = with(|state| {
            if CLOSED.load(SeqCst) {
                return false;
            }
            INSIDE.fetch_add(1, SeqCst);
            let (lines, batch) = given.take().expect("taken once");
            if lines.text.is_empty() && batch.is_empty() {
                done.store(true, SeqCst);
            } else {
                let (stream, context) = objects();
                state.handed.push(Handed {
                    lines,
                    batch,
                    stream,
                    context,
                    done: Arc::clone(&done),
                });
                WAITING.store(true, SeqCst);
            }
            true
        });
        if !entered {
            return Err(given.take().expect("not handed"));
        }
        queue::wake_for_calls();
        py.detach(|| {
            let deadline = Instant::now() + WAIT_AT_RETURN;
            while (!done.load(SeqCst) || live.load(SeqCst))
                && !CLOSED.load(SeqCst)
                && Instant::now() < deadline
            {
                std::thread::sleep(Duration::from_micros(200));
            }
        });
        // The GIL is held again: leave.
        INSIDE.fetch_sub(1, SeqCst);
        Ok(())
    }

    /// Whether something waits to be taken.
    pub(crate) fn waiting() -> bool {
        WAITING.load(SeqCst)
    }

    /// Takes what was handed over; the caller holds the GIL, hands each
    /// over and then sets its `done`.
    pub(crate) fn take() -> Vec<Handed> {
        with(|state| {
            WAITING.store(false, SeqCst);
            std::mem::take(&mut state.handed)
        })
    }

    /// At exit, with the GIL held: closes the hand-over and waits, with the
    /// GIL released, for the threads inside it to leave (at most
    /// [`EXIT_WAIT`]). Then what they handed over and nobody took is
    /// returned, for the exit to hand over.
    pub(crate) fn close(py: Python<'_>) -> Vec<Handed> {
        with(|_| CLOSED.store(true, SeqCst));
        if INSIDE.load(SeqCst) > 0 {
            py.detach(|| {
                let deadline = Instant::now() + EXIT_WAIT;
                while INSIDE.load(SeqCst) > 0 && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_micros(500));
                }
            });
        }
        take()
    }
}
