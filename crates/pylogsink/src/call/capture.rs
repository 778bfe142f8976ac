//! The Python side of output capture ([`crate::core::capture`]): which
//! stream each captured descriptor's lines go to, and writing them there.
//!
//! When a capture begins, `sys.stdout` and `sys.stderr` are looked at once:
//! a stream that replaced the process's own (pytest's capture, a notebook's
//! cell, `redirect_stdout`) gets the lines, written through its `write` by
//! a thread that holds the GIL and no native lock: pylogsink's Python
//! thread while the capture runs, and the thread that ends it. The streams
//! are kept here until then.

use super::echo;
use super::write::{write_captured_through_python, Written};
use crate::control::stall_wait;
use crate::core::capture::{self, STDERR, STDOUT};
use crate::core::fork;
use crate::dest::capture::{captured_to, CapturedTo};
use crate::record::lock;
use crate::sys;
use pyo3::exceptions::PyOSError;
use pyo3::prelude::*;
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The Python streams that get the lines of fd 1 and fd 2, where
/// [`CapturedTo::Python`]. Locked with the GIL held, never across Python
/// code.
static STREAMS: Mutex<[Option<Py<PyAny>>; 2]> = Mutex::new([None, None]);

/// A lock that a fork leaves free in the child: it holds the generation,
/// plus one, of the process whose thread took it ([`fork::generation`];
/// 0: free), and a child forked while a thread of its parent held it has
/// no such thread. An atomic and not a mutex, so that no fork, Python's or
/// C's, can leave it taken in a child; a thread that waits for it looks
/// again every [`POLL`].
struct ForkFreeLock(AtomicU64);

/// How often a thread that waits for a [`ForkFreeLock`] looks again.
const POLL: Duration = Duration::from_micros(200);

impl ForkFreeLock {
    const fn new() -> ForkFreeLock {
        ForkFreeLock(AtomicU64::new(0))
    }

    /// Whether a thread of this process holds it.
    fn held(&self) -> bool {
        held(self.0.load(Ordering::Acquire))
    }

    /// Takes it if no thread of this process holds it.
    fn try_take(&self) -> bool {
        let holder = self.0.load(Ordering::Acquire);
        !held(holder)
            && self
                .0
                .compare_exchange(holder, mine(), Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
    }

    /// Takes it, waiting at most `wait` (`None`: for ever).
    fn take_within(&self, wait: Option<Duration>) -> bool {
        let deadline = wait.map(|wait| Instant::now() + wait);
        loop {
            if self.try_take() {
                return true;
            }
            if deadline.is_some_and(|at| Instant::now() >= at) {
                return false;
            }
            std::thread::sleep(POLL);
        }
    }

    fn release(&self) {
        self.0.store(0, Ordering::Release);
    }
}

/// A [`ForkFreeLock`]'s value while a thread of this process holds it.
fn mine() -> u64 {
    fork::generation().wrapping_add(1)
}

/// Whether a [`ForkFreeLock`] whose value is `holder` is held by a thread
/// of this process.
fn held(holder: u64) -> bool {
    holder == mine()
}

/// Held by the one thread that writes captured lines to Python, so that
/// the lines go in order: pylogsink's Python thread and the thread that
/// ends a capture both write, and a write may let the GIL go.
static WRITING: ForkFreeLock = ForkFreeLock::new();

/// Held by the thread that begins or ends a capture, for the whole of it:
/// a capture that ends must not clear the streams that a capture begun
/// meanwhile on another thread has just set.
static CONTROL: ForkFreeLock = ForkFreeLock::new();

/// Lets [`CONTROL`] go when dropped.
struct Control;

impl Drop for Control {
    fn drop(&mut self) {
        CONTROL.release();
    }
}

/// Takes [`CONTROL`], waiting with the GIL released (the thread that holds
/// it may need the GIL to finish).
fn control(py: Python<'_>) -> Control {
    py.detach(|| CONTROL.take_within(None));
    Control
}

/// Whether a thread of this process writes captured lines to Python, and
/// whether it is this one.
pub(crate) fn writing_held() -> (bool, bool) {
    (WRITING.held(), HOLDS_WRITING.get())
}

thread_local! {
    /// This thread holds [`WRITING`]: a stream whose `write` prints to
    /// `sys.stdout` must not wait for it ([`before_python_write`]).
    static HOLDS_WRITING: Cell<bool> = const { Cell::new(false) };
}

/// Lets [`WRITING`] go when dropped.
struct Writing;

impl Drop for Writing {
    fn drop(&mut self) {
        HOLDS_WRITING.set(false);
        WRITING.release();
    }
}

/// Waits for [`WRITING`] with the GIL released (the thread that holds it
/// may need the GIL to finish).
fn writing(py: Python<'_>) -> Writing {
    py.detach(|| WRITING.take_within(None));
    HOLDS_WRITING.set(true);
    Writing
}

/// [`writing`], waiting at most `wait`: a Python write that comes after
/// the captured lines does not wait for ever for a hand-over whose stream
/// may need what the writing thread holds (a lock its `write` takes).
fn writing_within(py: Python<'_>, wait: Duration) -> Option<Writing> {
    py.detach(|| WRITING.take_within(Some(wait))).then(|| {
        HOLDS_WRITING.set(true);
        Writing
    })
}

/// Begins capturing fd 1 (`stdout`) and fd 2 (`stderr`), or joins the
/// capture in progress (false). pylogsink's Python thread must be running
/// (`logging::start`).
pub(crate) fn start(py: Python<'_>, stdout: bool, stderr: bool) -> PyResult<bool> {
    let wanted = |yes: bool| if yes { LinesTo::Sys } else { LinesTo::Nothing };
    start_into(py, [wanted(stdout), wanted(stderr)])
}

/// Where a captured descriptor's lines go.
pub(crate) enum LinesTo<'py> {
    /// The descriptor is not captured.
    Nothing,
    /// To `sys.stdout` / `sys.stderr` as they are now, if Python replaced
    /// them, else to the original descriptor.
    Sys,
    /// To a Python object's `write` (the package's, which hands them to
    /// `logging`), whatever `sys.stdout` / `sys.stderr` are.
    Stream(Bound<'py, PyAny>),
}

/// [`start`], with fd 1's and fd 2's lines going where `into` says.
pub(crate) fn start_into(py: Python<'_>, into: [LinesTo<'_>; 2]) -> PyResult<bool> {
    let _control = control(py);
    let sys = py.import("sys")?;
    let mut routes = [None, None];
    let mut streams = [None, None];
    let names = [
        (STDOUT, "stdout", "__stdout__", 1),
        (STDERR, "stderr", "__stderr__", 2),
    ];
    for ((index, name, own_name, target), into) in names.into_iter().zip(into) {
        let stream = match into {
            LinesTo::Nothing => continue,
            LinesTo::Stream(lines) => {
                routes[index] = Some(CapturedTo::Python);
                streams[index] = Some(lines.unbind());
                continue;
            }
            LinesTo::Sys => sys.getattr(name)?,
        };
        let own = stream.is(&sys.getattr(own_name)?);
        let none = stream.is_none();
        if !none {
            // What Python holds goes out before the switch.
            let _ = stream.call_method0("flush");
        }
        let fileno = if own || none {
            None
        } else {
            stream
                .call_method0("fileno")
                .and_then(|fd| fd.extract::<i32>())
                .ok()
        };
        let route = captured_to(own, none, fileno, target);
        routes[index] = Some(route);
        if route == CapturedTo::Python {
            streams[index] = Some(stream.unbind());
        }
    }
    let fresh = !capture::is_on();
    if fresh {
        let before = std::mem::replace(&mut *lock(&STREAMS), streams);
        drop(before);
        echo::forget();
    }
    match py.detach(|| capture::start(routes)) {
        Ok(begun) => Ok(begun),
        Err(err) => {
            if fresh {
                let before = std::mem::take(&mut *lock(&STREAMS));
                drop(before);
            }
            // Not available here (Windows): an OSError with its errno,
            // ENOTSUP, as one from the system would have.
            if err.kind() == std::io::ErrorKind::Unsupported {
                return Err(PyOSError::new_err((sys::ENOTSUP, err.to_string())));
            }
            Err(err.into())
        }
    }
}

/// Ends the capture (or a nested one): Python's own buffers and C stdio
/// flushed, fd 1 and fd 2 back to what they were, and every line written
/// before that delivered.
pub(crate) fn stop(py: Python<'_>) -> PyResult<()> {
    let _control = control(py);
    if let Ok(sys) = py.import("sys") {
        for name in ["stdout", "stderr"] {
            if let Ok(stream) = sys.getattr(name) {
                if !stream.is_none() {
                    let _ = stream.call_method0("flush");
                }
            }
        }
    }
    let ended = py.detach(capture::stop);
    deliver(py);
    if ended {
        let before = std::mem::take(&mut *lock(&STREAMS));
        drop(before);
        echo::forget();
    }
    Ok(())
}

/// Delivers everything written to the captured descriptors so far, C
/// stdio's buffers included, before it returns: what Python writes next
/// comes after it.
pub(crate) fn flush(py: Python<'_>) {
    py.detach(capture::sync);
    deliver(py);
}

/// Called before Python writes to the stream that gets captured
/// descriptor `fd`'s lines: what native code wrote to `fd` before goes to
/// the stream first, so that Python's `print` and C's line-buffered
/// `printf` come out in the order written. Costs an `ioctl` when nothing
/// waits; never waits for the drain thread, and waits for a hand-over
/// under way on another thread at most the stall wait (its stream may
/// need a lock this thread holds): then the write goes on, out of order.
pub(crate) fn before_python_write(py: Python<'_>, fd: i32) {
    let index = match fd {
        1 => STDOUT,
        2 => STDERR,
        _ => return,
    };
    if HOLDS_WRITING.get() || (!capture::may_wait(index) && !WRITING.held()) {
        return;
    }
    // A hand-over under way on another thread finishes first.
    let Some(writing) = writing_within(py, stall_wait()) else {
        return;
    };
    let mut left = None;
    loop {
        let done = py.detach(|| capture::catch_up(index, &mut left));
        deliver_held(py, &writing);
        if done {
            break;
        }
    }
}

/// Whether the lines of captured descriptor `fd` go to a Python stream.
pub(crate) fn to_python(fd: i32) -> bool {
    match fd {
        1 => capture::to_python(STDOUT),
        2 => capture::to_python(STDERR),
        _ => false,
    }
}

/// Whether a capture is on.
pub(crate) fn active() -> bool {
    capture::is_on()
}

/// Writes the captured lines that wait for Python to their streams; where
/// that fails, or there is no stream, to the original descriptor.
pub(crate) fn deliver(py: Python<'_>) {
    if !capture::pending_for_python() {
        return;
    }
    let writing = writing(py);
    deliver_held(py, &writing);
}

/// [`deliver`], by the thread that holds [`WRITING`].
fn deliver_held(py: Python<'_>, _writing: &Writing) {
    if !capture::pending_for_python() {
        return;
    }
    for index in [STDOUT, STDERR] {
        let taken = capture::take_for_python(index);
        if taken.text.is_empty() {
            continue;
        }
        let stream = lock(&STREAMS)[index].as_ref().map(|s| s.clone_ref(py));
        let Some(stream) = stream else {
            py.detach(|| capture::write_original(index, taken));
            capture::handed_over(index);
            continue;
        };
        match write_captured_through_python(py, Ok(stream.into_bound(py)), &taken.text) {
            Written::All => {}
            Written::ButFlushFailed(err) => err.write_unraisable(py, None),
            Written::NoStream => py.detach(|| capture::write_original(index, taken)),
            Written::Failed(err) => {
                err.write_unraisable(py, None);
                py.detach(|| capture::write_original(index, taken));
            }
        }
        capture::handed_over(index);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writing_is_held_only_by_a_thread_of_this_process() {
        assert!(!held(0));
        assert!(held(mine()));
        // What a parent's thread held, as a child forked then sees it.
        assert!(!held(fork::generation()));
    }

    #[test]
    fn one_thread_holds_a_fork_free_lock_at_a_time() {
        let lock = ForkFreeLock::new();
        assert!(lock.try_take());
        assert!(lock.held());
        assert!(!lock.try_take());
        assert!(!lock.take_within(Some(Duration::from_millis(5))));
        lock.release();
        assert!(lock.take_within(Some(Duration::ZERO)));
        lock.release();
        // Held by a thread of the parent before a fork: free here.
        lock.0.store(fork::generation(), Ordering::Release);
        assert!(!lock.held());
        assert!(lock.try_take());
    }
}
