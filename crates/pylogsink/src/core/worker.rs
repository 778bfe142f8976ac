//! Worker threads that log for a call.
//!
//! Runtimes spread one binding call over a thread pool (rayon, XNNPACK's
//! pthreadpool, OpenMP). A line is routed by the call it belongs to, and a
//! worker thread is in no call of its own: without help, its lines count
//! as logged outside any call, so they skip a replaced `sys.stderr` and,
//! with the `logging` destination, arrive after the call's own. A
//! [`CallHandle`] taken on the calling thread and attached on the worker
//! makes the worker's lines the call's: direct while `sys.stderr` is the
//! process's own, kept in the call's one buffer (in the order they were
//! logged, across threads, under the call's cap) and written or delivered
//! when the call returns otherwise.
//!
//! A worker still attached when the call has returned logs as outside any
//! call: its lines are never lost, and never go into a buffer nobody will
//! write.

use super::shared::CallRef;
use super::thread::THREAD;

/// The current call, for the worker threads it hands work to.
///
/// ```no_run
/// use pyo3::prelude::*;
///
/// #[pyfunction]
/// fn run(py: Python<'_>) -> PyResult<()> {
///     pylogsink::call(py, || {
///         let call = pylogsink::Call::current().expect("inside a call");
///         py.detach(|| {
///             std::thread::scope(|s| {
///                 for part in 0..4 {
///                     let call = call.clone();
///                     s.spawn(move || call.attach(|| log::info!("part {part} done")));
///                 }
///             })
///         });
///         Ok(())
///     })
/// }
/// ```
#[derive(Debug)]
pub struct Call(());

impl Call {
    /// A handle on the call this thread is in: its own outermost call, or
    /// the call it works for (attached). `None` outside any call.
    ///
    /// Shown in the [`Call`] example; outside any call:
    ///
    /// ```
    /// assert!(pylogsink::Call::current().is_none());
    /// ```
    pub fn current() -> Option<CallHandle> {
        THREAD
            .try_with(|t| t.handle())
            .ok()
            .flatten()
            .map(CallHandle)
    }
}

/// A call that worker threads can attach to: cheap to clone, and to send
/// to other threads.
///
/// Shown in the [`Call`] example.
#[derive(Clone)]
pub struct CallHandle(CallRef);

impl CallHandle {
    /// Runs `f` on this thread with the call's routing: what `f` logs goes
    /// where the call's own lines go. Attaching to a call that has returned
    /// changes nothing: the lines go as outside any call. A thread that is
    /// in a call of its own keeps that call's routing.
    ///
    /// Shown in the [`Call`] example.
    pub fn attach<T>(&self, f: impl FnOnce() -> T) -> T {
        struct Detach;
        impl Drop for Detach {
            fn drop(&mut self) {
                detach_thread();
            }
        }
        self.attach_thread();
        let _detach = Detach;
        f()
    }

    /// Attaches this thread to the call until [`detach_thread`], for code
    /// that cannot pass a closure (the C ABI). Pairs nest, and must match
    /// on the same thread.
    ///
    /// ```no_run
    /// // On a worker thread, with a handle taken on the calling thread:
    /// # let call: pylogsink::CallHandle = unimplemented!();
    /// call.attach_thread();
    /// log::info!("logged for the call");
    /// pylogsink::detach_thread();
    /// ```
    pub fn attach_thread(&self) {
        let _ = THREAD.try_with(|t| t.attach(&self.0));
    }

    /// Whether the call is still in progress.
    ///
    /// ```no_run
    /// # let call: pylogsink::CallHandle = unimplemented!();
    /// if !call.is_live() {
    ///     // The call returned: what this thread logs goes as outside any call.
    /// }
    /// ```
    pub fn is_live(&self) -> bool {
        self.0.is_live()
    }
}

/// Ends the latest [`CallHandle::attach_thread`] on this thread: it works
/// for the call it worked for before, if any. An unmatched one does
/// nothing.
///
/// Shown in the [`CallHandle::attach_thread`] example.
pub fn detach_thread() {
    let _ = THREAD.try_with(|t| t.detach());
}

impl std::fmt::Debug for CallHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallHandle")
            .field("call", &self.0.call)
            .field("live", &self.is_live())
            .finish()
    }
}
