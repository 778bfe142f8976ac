//! A call's state that other threads read and write.
//!
//! A thread's call is joined by the workers attached to it, and read by the
//! exit flush and the crash handler: its sink, its kept lines, its records
//! for `logging`, its Error-level messages. So that part of a thread's
//! state lives here, behind an `Arc` and locks, apart from what only the
//! thread itself touches ([`thread`](super::thread)).

use super::errors::Errors;
use super::queue::{queue_push, write_buffer};
use super::stats::PerLevel;
use crate::dest::pending::{self, Pending, PendingRecord};
use crate::dest::{patience, Kept, Sink};
use crate::record::{lock, HeldForFork};
use crate::sys;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The part of a thread's state that other threads read or write: its
/// current call, which attached workers join.
pub(crate) struct Shared {
    /// The number of the outermost call in progress; 0 outside any call.
    pub(crate) call: AtomicU64,
    /// The call's [`Sink`]; `Outside` when there is no call.
    pub(crate) sink: AtomicU8,
    /// Where the crash handler writes the call's lines: a descriptor that
    /// outlives fd 2's reader, or -1 for fd 2.
    pub(crate) crash_fd: AtomicI32,
    pub(crate) kept: Mutex<Kept>,
    /// Whether `kept` may hold lines; spares the lock when it does not.
    pub(crate) kept_any: AtomicBool,
    /// Records for `logging` that wait for the call's return.
    pub(crate) pending: Mutex<Pending>,
    /// Whether `pending` may hold records.
    pub(crate) pending_any: AtomicBool,
    /// Records of the call that pylogsink's delivery thread took while the
    /// call ran ([`live`](super::live)) and has not finished handing to
    /// `logging`: the call's return waits for them, so that its records
    /// arrive in the order they were logged. Set and read with the GIL held.
    pub(crate) live: AtomicBool,
    /// The call's Error-level messages.
    pub(crate) errors: Mutex<Errors>,
    /// Whether `errors` may hold messages.
    pub(crate) errors_any: AtomicBool,
    /// Whether `errors` is full: later messages only add their bytes to
    /// `errors_over`, without the lock.
    pub(crate) errors_full: AtomicBool,
    /// Bytes left out of a full `errors` and not yet counted in it.
    pub(crate) errors_over: AtomicU64,
    /// Records emitted by the thread, by level.
    pub(crate) emitted: PerLevel,
}

impl Shared {
    /// The call's sink.
    #[inline]
    pub(crate) fn sink(&self) -> Sink {
        Sink::from_u8(self.sink.load(Ordering::Relaxed))
    }

    #[inline]
    pub(crate) fn set_sink(&self, sink: Sink) {
        self.sink.store(sink as u8, Ordering::Relaxed);
    }

    /// Starts call number `call`, with `sink`, and where its lines go if
    /// the process crashes.
    #[inline]
    pub(crate) fn begin(&self, call: u64, sink: Sink, crash_fd: i32) {
        // Most calls log no error: they spare the lock.
        if self.errors_any.load(Ordering::Relaxed) {
            self.clear_errors();
        }
        self.crash_fd.store(crash_fd, Ordering::Relaxed);
        self.set_sink(sink);
        self.call.store(call, Ordering::Release);
    }

    /// Forgets the Error-level messages of the call before.
    #[cold]
    #[inline(never)]
    fn clear_errors(&self) {
        self.errors_any.store(false, Ordering::Relaxed);
        if let Ok(mut errors) = self.errors.try_lock() {
            errors.clear();
            self.errors_full.store(false, Ordering::Relaxed);
            self.errors_over.store(0, Ordering::Relaxed);
        }
    }

    /// Collects an Error-level message for the call's exception. Once the
    /// first [`ERRORS_CAP`](crate::ERRORS_CAP) bytes are in, a message
    /// only counts its bytes (and its separator) as left out.
    #[inline]
    pub(crate) fn collect_error(&self, message: &[u8]) {
        if self.errors_full.load(Ordering::Relaxed) {
            let bytes = message.len() as u64 + 1;
            self.errors_over.fetch_add(bytes, Ordering::Relaxed);
            return;
        }
        self.collect_error_locked(message);
    }

    #[cold]
    #[inline(never)]
    fn collect_error_locked(&self, message: &[u8]) {
        if let Ok(mut errors) = self.errors.try_lock() {
            errors.collect(message);
            self.errors_any.store(true, Ordering::Relaxed);
            if errors.is_full() {
                self.errors_full.store(true, Ordering::Relaxed);
            }
        }
    }

    /// Ends the call; returns its sink. With `handed` (workers may be
    /// attached), under the buffers' locks, so that no worker adds a line
    /// once the call's lines are taken: it logs as outside any call.
    #[inline]
    pub(crate) fn end(&self, handed: bool) -> Sink {
        if handed {
            return self.end_handed();
        }
        self.end_now()
    }

    /// [`Shared::end`] where workers may be attached: under the locks.
    #[cold]
    #[inline(never)]
    fn end_handed(&self) -> Sink {
        let _kept = lock(&self.kept);
        let _pending = lock(&self.pending);
        self.end_now()
    }

    #[inline]
    fn end_now(&self) -> Sink {
        self.call.store(0, Ordering::Release);
        let sink = self.sink();
        self.set_sink(Sink::Outside);
        sink
    }

    /// Keeps one record (`is_rest`: the rest of one whose start went out).
    /// `worker`: the call a worker is attached to; if it has ended, the
    /// record joins the process-wide queue instead.
    pub(crate) fn keep(&self, record: &[u8], is_rest: bool, worker: Option<u64>) {
        let mut kept = lock(&self.kept);
        if self.sink() == Sink::Replaced {
            // Python takes these while the call runs with the GIL released.
            let len = record.len();
            kept = patience::wait_for_room(
                kept,
                &self.kept,
                |k| k.has_room(len),
                pending::queue::wake_for_calls,
            );
        }
        if worker.is_some_and(|call| call != self.call.load(Ordering::Acquire)) {
            drop(kept);
            return queue_push(record, is_rest);
        }
        kept.push_record(record, is_rest);
        if !self.kept_any.load(Ordering::Relaxed) {
            self.kept_any.store(true, Ordering::Relaxed);
            sys::reinstate_crash_handler();
            if self.sink() == Sink::Replaced {
                // The first line since the last take, for a replaced
                // `sys.stderr`: a live delivery may write it before the
                // call returns.
                pending::queue::wake_for_calls();
            }
        }
    }

    /// Keeps a record for `logging`; gives it back if the call a worker is
    /// attached to has ended.
    pub(crate) fn keep_pending(
        &self,
        record: PendingRecord,
        worker: Option<u64>,
    ) -> Option<PendingRecord> {
        let size = record.size();
        let pending = lock(&self.pending);
        let mut pending = patience::wait_for_room(
            pending,
            &self.pending,
            |p| p.has_room(size),
            pending::queue::wake_for_calls,
        );
        if worker.is_some_and(|call| call != self.call.load(Ordering::Acquire)) {
            return Some(record);
        }
        pending.push(record);
        if !self.pending_any.load(Ordering::Relaxed) {
            self.pending_any.store(true, Ordering::Relaxed);
            sys::reinstate_crash_handler();
            // The first record since the last take: a live delivery may
            // hand it over before the call returns.
            pending::queue::wake_for_calls();
        }
        None
    }

    /// Writes the kept lines to fd 2, waiting at most `wait`; puts back what
    /// finds no room. True if nothing is left.
    pub(crate) fn write_kept(&self, wait: Duration) -> bool {
        write_buffer(&self.kept, wait, || {
            self.kept_any.store(false, Ordering::Relaxed)
        })
    }
}

impl Shared {
    /// The state of a thread that is in no call yet.
    pub(crate) fn new() -> Shared {
        Shared {
            call: AtomicU64::new(0),
            sink: AtomicU8::new(Sink::Outside as u8),
            crash_fd: AtomicI32::new(-1),
            kept: Mutex::new(Kept::default()),
            kept_any: AtomicBool::new(false),
            pending: Mutex::new(Pending::new()),
            pending_any: AtomicBool::new(false),
            live: AtomicBool::new(false),
            errors: Mutex::new(Errors::default()),
            errors_any: AtomicBool::new(false),
            errors_full: AtomicBool::new(false),
            errors_over: AtomicU64::new(0),
            emitted: PerLevel::new(),
        }
    }
}

/// The call's buffers' locks, held across a fork: a worker attached to
/// the call may hold one. In the child the buffers start empty: what the
/// call kept before the fork is the parent's to write or deliver.
pub(crate) fn hold_for_fork(shared: Arc<Shared>) -> HeldForFork {
    // SAFETY: the closure below owns `shared`, the `Arc` that keeps this
    // `Shared` alive, and drops it only after the guards that borrow
    // through `this`; nothing else frees it meanwhile.
    let this: &'static Shared = unsafe { &*Arc::as_ptr(&shared) };
    let mut kept = lock(&this.kept);
    let mut pending = lock(&this.pending);
    let errors = lock(&this.errors);
    Box::new(move |child| {
        if child {
            kept.clear_in_child();
            this.kept_any.store(false, Ordering::Relaxed);
            drop(pending.take());
            this.pending_any.store(false, Ordering::Relaxed);
            this.live.store(false, Ordering::Relaxed);
        }
        drop(errors);
        drop(pending);
        drop(kept);
        drop(shared);
    })
}

/// One call of one thread: what a worker attaches to.
#[derive(Clone)]
pub(crate) struct CallRef {
    /// The state of the thread whose call it is.
    pub(crate) shared: Arc<Shared>,
    /// Which of that thread's calls it is.
    pub(crate) call: u64,
}

impl CallRef {
    /// Whether the call is still in progress.
    #[inline]
    pub(crate) fn is_live(&self) -> bool {
        self.shared.call.load(Ordering::Acquire) == self.call
    }
}
