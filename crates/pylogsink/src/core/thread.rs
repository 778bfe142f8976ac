//! One thread's part in pylogsink: is it in a call, which call does it
//! work for, and where does it format its records.
//!
//! The log function may run on any thread, so each thread has its own
//! state, reached with one thread-local access per record: how many calls
//! deep it is, the call it is attached to as a worker, and its formatter.
//! What other threads must see of it (its call's sink and kept lines) is
//! its [`Shared`] part.

use super::errors::Errors;
use super::queue::write_fd2;
use super::registry::register;
use super::shared::{CallRef, Shared};
use super::stats::EMITTED_ELSEWHERE;
use crate::dest::pending::{self, Batch, Identity};
use crate::dest::route::entry_sink;
use crate::dest::{Sink, Taken};
use crate::record::escape::decode_backslashreplace;
use crate::record::format::Formatter;
use crate::record::{lock, Level};
use crate::sys;
use std::cell::{Cell, RefCell};
use std::sync::atomic::Ordering;
use std::sync::{Arc, MutexGuard, OnceLock};
use std::time::Duration;

thread_local! {
    pub(crate) static THREAD: ThreadState = ThreadState::new();
}

/// One thread's part in pylogsink.
pub(crate) struct ThreadState {
    /// How many calls deep the thread is; 0 outside any call.
    pub(crate) depth: Cell<u32>,
    /// The number of this thread's calls so far, which names each one.
    calls: Cell<u64>,
    /// Whether a handle on the current call was handed out to workers.
    handed: Cell<bool>,
    /// The call of another thread that this one works for, if any.
    attached: RefCell<Option<CallRef>>,
    /// What `attached` was before each attach still in force.
    attached_before: RefCell<Vec<Option<CallRef>>>,
    /// This thread's ids and OS name, once asked for.
    identity: RefCell<Option<Identity>>,
    /// True while this thread writes kept lines through `sys.stderr.write`.
    pub(crate) writing_kept: Cell<bool>,
    /// Whether this thread must avoid Python at a call's return, once known.
    pub(crate) avoid_python: Cell<Option<bool>>,
    /// Whether an interrupt met by a flush waits for the call's return.
    pub(crate) interrupt_kept: Cell<bool>,
    /// What other threads may read or write: the current call's sink and
    /// kept lines (its attached workers add theirs, and the exit flush
    /// writes them if this thread is still in a call when the process
    /// ends), and the count of records emitted (for `stats`).
    pub(crate) shared: Arc<Shared>,
    /// Where the log function formats each record.
    pub(crate) formatter: RefCell<Formatter>,
}

/// The call a line joins, and where its lines go.
pub(crate) struct Joined {
    /// For a worker attached to another thread's call: that call.
    attached: Option<CallRef>,
    /// The call's sink; [`Sink::Outside`] when there is no call.
    pub(crate) sink: Sink,
}

impl Joined {
    /// The call's shared state: the attached call's, or this thread's own.
    pub(crate) fn call<'a>(&'a self, t: &'a ThreadState) -> &'a Shared {
        self.attached.as_ref().map_or(&t.shared, |h| &h.shared)
    }

    /// The number of the call this worker is attached to, if it is one.
    pub(crate) fn attached_to(&self) -> Option<u64> {
        self.attached.as_ref().map(|h| h.call)
    }
}

impl ThreadState {
    fn new() -> ThreadState {
        let shared = Arc::new(Shared::new());
        register(&shared);
        ThreadState {
            depth: Cell::new(0),
            calls: Cell::new(0),
            handed: Cell::new(false),
            attached: RefCell::new(None),
            attached_before: RefCell::new(Vec::new()),
            writing_kept: Cell::new(false),
            identity: RefCell::new(None),
            avoid_python: Cell::new(None),
            interrupt_kept: Cell::new(false),
            shared,
            formatter: RefCell::new(Formatter::new()),
        }
    }

    /// The call a line logged now joins: this thread's own, else the call
    /// it is attached to while that call lasts, else none.
    #[inline]
    pub(crate) fn joined(&self) -> Joined {
        if self.depth.get() > 0 {
            let sink = self.shared.sink();
            return Joined {
                attached: None,
                sink,
            };
        }
        let attached = match self.attached.try_borrow() {
            Ok(attached) => attached.clone().filter(CallRef::is_live),
            Err(_) => None,
        };
        let sink = attached.as_ref().map_or(Sink::Outside, |h| h.shared.sink());
        Joined { attached, sink }
    }

    /// Steps into a call; true if it is the outermost one.
    /// `stderr_is_own` is looked up only for the outermost call.
    /// `surviving_fd`, only where `sys.stderr` was replaced: the descriptor
    /// the crash handler writes the call's lines to (see
    /// [`crash`](super::crash)), or -1 for fd 2.
    #[inline(always)]
    pub(crate) fn enter(
        &self,
        stderr_is_own: impl FnOnce() -> bool,
        surviving_fd: impl FnOnce() -> i32,
    ) -> bool {
        let depth = self.depth.get();
        self.depth.set(depth + 1);
        if depth == 0 {
            let call = self.calls.get() + 1;
            self.calls.set(call);
            let sink = entry_sink(stderr_is_own(), self.writing_kept.get());
            let crash_fd = if sink == Sink::Replaced {
                surviving_fd()
            } else {
                -1
            };
            self.shared.begin(call, sink, crash_fd);
        }
        depth == 0
    }

    /// Steps out of a call. If that left the outermost call: its sink, and
    /// whether lines or records may wait. Outside any call, nothing.
    #[inline(always)]
    pub(crate) fn leave(&self) -> Option<(Sink, bool)> {
        let depth = self.depth.get().checked_sub(1)?;
        self.depth.set(depth);
        if depth > 0 {
            return None;
        }
        let sink = self.shared.end(self.handed.replace(false));
        let live = self.shared.live.load(Ordering::Relaxed);
        let waiting = self.kept_any() || self.pending_any() || live || self.interrupt_kept.get();
        Some((sink, waiting))
    }

    /// Inside a call of its own, with lines or records that may wait for
    /// Python (its attached workers' included): the call's sink. Else
    /// `None`: two loads and a compare.
    #[inline(always)]
    pub(crate) fn flush_due(&self) -> Option<Sink> {
        if self.depth.get() == 0 || !(self.kept_any() || self.pending_any()) {
            return None;
        }
        Some(self.shared.sink())
    }

    /// A handle on the current call for worker threads: this thread's own
    /// call, or the one it is attached to.
    pub(crate) fn handle(&self) -> Option<CallRef> {
        if self.depth.get() > 0 {
            self.handed.set(true);
            return Some(CallRef {
                shared: Arc::clone(&self.shared),
                call: self.calls.get(),
            });
        }
        self.joined().attached
    }

    /// Attaches this thread to the call of `handle` until the matching
    /// [`detach`](ThreadState::detach); pairs nest.
    pub(crate) fn attach(&self, handle: &CallRef) {
        if let (Ok(mut attached), Ok(mut before)) = (
            self.attached.try_borrow_mut(),
            self.attached_before.try_borrow_mut(),
        ) {
            before.push(attached.replace(handle.clone()));
        }
    }

    /// Ends the latest [`attach`](ThreadState::attach): the thread works
    /// for the call it worked for before, if any. Unmatched, nothing.
    pub(crate) fn detach(&self) {
        if let (Ok(mut attached), Ok(mut before)) = (
            self.attached.try_borrow_mut(),
            self.attached_before.try_borrow_mut(),
        ) {
            if let Some(previous) = before.pop() {
                *attached = previous;
            }
        }
    }

    /// Whether records for `logging` may wait for this thread's call.
    #[inline]
    pub(crate) fn pending_any(&self) -> bool {
        self.shared.pending_any.load(Ordering::Relaxed)
    }

    #[inline]
    fn kept_any(&self) -> bool {
        self.shared.kept_any.load(Ordering::Relaxed)
    }

    /// This thread's ids and OS name.
    pub(crate) fn identity(&self) -> Identity {
        match self.identity.try_borrow_mut() {
            Ok(mut known) => known.get_or_insert_with(identity).clone(),
            Err(_) => identity(),
        }
    }

    /// Takes out the records that wait for `logging`.
    pub(crate) fn take_pending(&self) -> Batch {
        self.shared.pending_any.store(false, Ordering::Relaxed);
        lock(&self.shared.pending).take()
    }

    /// Takes the kept lines out.
    pub(crate) fn take_kept(&self) -> Taken {
        self.shared.kept_any.store(false, Ordering::Relaxed);
        lock(&self.shared.kept).take()
    }

    /// The current call's Error-level messages, its workers' included.
    pub(crate) fn errors(&self) -> MutexGuard<'_, Errors> {
        let mut errors = lock(&self.shared.errors);
        errors.add_left_out(self.shared.errors_over.swap(0, Ordering::Relaxed));
        errors
    }

    /// In a child just forked, on the thread that forked: the call this
    /// thread worked for belongs to a thread the child does not have, and
    /// whether Python joins this thread at exit is asked again (the child
    /// makes it its main thread).
    pub(crate) fn after_fork_in_child(&self) {
        if let (Ok(mut attached), Ok(mut before)) = (
            self.attached.try_borrow_mut(),
            self.attached_before.try_borrow_mut(),
        ) {
            *attached = None;
            before.clear();
        }
        self.avoid_python.set(None);
    }

    /// Counts one record emitted.
    #[inline]
    pub(crate) fn count(&self, level: Level) {
        self.shared.emitted.add_one_unshared(level);
    }
}

impl Drop for ThreadState {
    /// A thread that ends inside a call (killed by `pthread_exit`, say)
    /// leaves its kept lines to fd 2, or to the queue that exit writes.
    fn drop(&mut self) {
        for (level, n) in Level::ALL.into_iter().zip(self.shared.emitted.take()) {
            EMITTED_ELSEWHERE.add(level, n);
        }
        // Workers still attached to its call log as outside any call.
        self.shared.end(true);
        let taken = self.take_kept();
        write_fd2(taken, Duration::ZERO);
        // Records for `logging` go to the queue that pylogsink's own
        // Python thread delivers.
        if self.pending_any() {
            pending::queue::put_back(self.take_pending());
        }
    }
}

/// This thread's ids and name, for a thread whose state is gone.
pub(crate) fn identity() -> Identity {
    Identity {
        thread: current_id(),
        name: os_thread_name().into(),
        native_id: sys::thread_id(),
        python: PYTHON_THREAD.get().is_some_and(|has_state| has_state()),
    }
}

/// Tells whether the calling thread has a Python thread state, GIL or not.
/// Set by the Python edge at init; before, no thread counts as Python's.
static PYTHON_THREAD: OnceLock<fn() -> bool> = OnceLock::new();

/// The Python edge's way to tell whether the calling thread is Python's.
pub(crate) fn set_python_thread_check(check: fn() -> bool) {
    let _ = PYTHON_THREAD.set(check);
}

/// This thread's id as Python's `threading.get_ident` gives it.
pub(crate) fn current_id() -> u64 {
    sys::python_thread_id()
}

/// The OS's name for this thread (what `ps -L` shows). A thread nobody
/// named carries the process's name (`python3.12`), which in a `LogRecord`
/// would pass for the interpreter's: it is `native-<tid>` instead.
fn os_thread_name() -> String {
    let name = sys::thread_name();
    let process = sys::process_name();
    thread_name(
        name.as_deref().unwrap_or(""),
        name.is_some(),
        sys::thread_id(),
        sys::is_main_thread(),
        process.as_deref(),
    )
}

/// The name a thread gets: its OS name (`known` if that was read), unless
/// it is empty or, on a thread other than the process's first (`main`),
/// the same as the process's (`process`).
fn thread_name(name: &str, known: bool, tid: u64, main: bool, process: Option<&str>) -> String {
    let inherited = !main && process.map(str::trim_end) == Some(name);
    if !known || name.is_empty() || inherited {
        format!("native-{tid}")
    } else {
        name.to_owned()
    }
}

/// The message [`error`](crate::error) gives its exception: `text`
/// followed by the Error-level lines of the current call, decoded with
/// Python's `backslashreplace` rule. For code that builds the exception
/// itself (the C ABI, whose caller names the exception type at run time).
///
/// Outside any call nothing was collected: the message is the text, decoded.
///
/// ```
/// assert_eq!(pylogsink::error_message(b"load failed: \xff"), "load failed: \\xff");
/// ```
pub fn error_message(text: impl AsRef<[u8]>) -> String {
    THREAD
        .try_with(|t| t.errors().message(text.as_ref()))
        .unwrap_or_else(|_| decode_backslashreplace(text.as_ref()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unnamed_thread_is_named_for_its_id() {
        let process = Some("python3.12\n");
        assert_eq!(
            thread_name("python3.12", true, 7, false, process),
            "native-7"
        );
        assert_eq!(thread_name("", true, 7, false, process), "native-7");
        assert_eq!(thread_name("x", false, 7, false, process), "native-7");
        assert_eq!(thread_name("loader-3", true, 7, false, process), "loader-3");
        // The main thread keeps the process's name.
        assert_eq!(
            thread_name("python3.12", true, 5, true, process),
            "python3.12"
        );
        assert_eq!(
            thread_name("python3.12", true, 7, false, None),
            "python3.12"
        );
    }

    #[test]
    fn enter_and_leave_pair_up_and_an_unmatched_leave_is_nothing() {
        THREAD.with(|t| {
            assert_eq!(t.leave(), None);
            assert!(t.enter(|| true, || -1));
            assert!(!t.enter(
                || unreachable!("only the outermost call asks"),
                || unreachable!("nor this")
            ));
            assert_eq!(t.leave(), None);
            assert_eq!(t.leave(), Some((Sink::Own, false)));
            assert_eq!(t.leave(), None);
            assert_eq!(t.depth.get(), 0);
        });
    }
}
