//! The log function: [`emit`] and the state it routes with.
//!
//! `emit` may run on any thread, with or without the GIL, under any native
//! lock. So it never calls into Python, never takes the GIL and never waits
//! for fd 2 longer than the stall wait. Each thread has its own state (is it
//! in a call, where do the call's lines go, the lines it keeps); lines
//! logged outside any call that find no room wait in one process-wide queue.

use crate::color;
use crate::destination::to_logging;
use crate::errors::Errors;
use crate::fd::{self, STDERR};
use crate::filter;
use crate::format::{now_since_epoch, Formatter, Text};
use crate::kept::{Kept, Taken, CAP};
use crate::level::Level;
use crate::pending::{queue, Batch, Pending, PendingRecord};
use crate::pylevels;
use crate::record::Record;
use crate::route::{entry_sink, on_no_room, route, NoRoom, Route, Sink};
use crate::worker::CallHandle;
use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Once, Weak};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

static STALL_WAIT_MICROS: AtomicU64 = AtomicU64::new(100_000);
/// Records emitted, by level, by threads that have ended or that emitted
/// while their thread-local state was gone.
static EMITTED_ELSEWHERE: PerLevel = PerLevel::new();
static LEFT_OUT: AtomicU64 = AtomicU64::new(0);

/// How long a line waits for room on fd 2 before it is kept or queued.
///
/// Shown in the [`set_stall_wait`] example.
pub fn stall_wait() -> Duration {
    Duration::from_micros(STALL_WAIT_MICROS.load(Ordering::Relaxed))
}

/// Sets the stall wait (100 ms unless changed).
///
/// ```
/// use std::time::Duration;
///
/// pylogsink::set_stall_wait(Duration::from_millis(20));
/// assert_eq!(pylogsink::stall_wait(), Duration::from_millis(20));
/// ```
pub fn set_stall_wait(wait: Duration) {
    let micros = u64::try_from(wait.as_micros()).unwrap_or(u64::MAX);
    STALL_WAIT_MICROS.store(micros, Ordering::Relaxed);
}

/// Counts that let a test check that nothing was lost.
///
/// Shown in the [`stats`] example.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Records that passed the filter (records it drops are not counted:
    /// counting them would cost more than dropping them).
    pub emitted: u64,
    /// [`emitted`](Stats::emitted) by level, indexed by `Level as usize`
    /// (Trace first, Fatal last).
    pub by_level: [u64; 6],
    /// Lines left out of a full buffer; each is counted in a written note.
    pub left_out: u64,
    /// Bytes dropped because fd 2 itself failed (closed, no reader).
    pub failed_bytes: u64,
}

/// The counts since the process started.
///
/// ```
/// use pylogsink::Level;
///
/// let before = pylogsink::stats();
/// pylogsink::emit(Level::Error, "my_runtime", file!(), line!(), b"counted");
/// let after = pylogsink::stats();
/// assert_eq!(after.emitted, before.emitted + 1);
/// assert_eq!(after.by_level[Level::Error as usize], before.by_level[Level::Error as usize] + 1);
/// ```
pub fn stats() -> Stats {
    let by_level = emitted();
    Stats {
        emitted: by_level.iter().sum(),
        by_level,
        left_out: LEFT_OUT.load(Ordering::Relaxed),
        failed_bytes: fd::failed_bytes(),
    }
}

/// Logs one record from `target` (a module path such as `ureq::stream`, or
/// a component's name; may be empty), if the filter lets it through.
/// `message` need not be UTF-8.
///
/// This is the entry that every front end goes through. It never calls
/// into Python and never blocks longer than the stall wait, so it is safe
/// under any lock, with or without the GIL. A record the filter drops
/// costs a level compare.
///
/// ```
/// use pylogsink::Level;
/// pylogsink::emit(Level::Warn, "myruntime::loader", file!(), line!(), b"cache miss");
/// ```
pub fn emit(level: Level, target: &str, file: &str, line: u32, message: &[u8]) {
    if enabled(level, target) {
        let record = Record {
            level,
            target,
            file,
            line,
            message,
            fields: None,
        };
        emit_text(&record, Text::Bytes(message));
    }
}

/// Whether a record is logged: the directives let it through and, with the
/// `logging` destination, some Python logger may take it. Fatal lines
/// always are.
#[inline]
pub(crate) fn enabled(level: Level, target: &str) -> bool {
    filter::enabled(level, target)
        && (level == Level::Fatal || !to_logging() || pylevels::may_take(level, target))
}

/// Routes one record that the filter let through.
pub(crate) fn emit_record(record: &Record<'_>) {
    emit_text(record, Text::Bytes(record.message));
}

/// Routes one record that the filter let through, whose message is
/// `args` (`record.message` is not read): the `log` front end's way in,
/// which formats the message straight into the line.
#[inline]
pub(crate) fn emit_args(record: &Record<'_>, args: std::fmt::Arguments<'_>) {
    // A message with no arguments is its own text: nothing to format.
    if let Some(text) = args.as_str() {
        return emit_record(&Record {
            message: text.as_bytes(),
            ..*record
        });
    }
    if (to_logging() && record.level != Level::Fatal) || record.fields.is_some() {
        // Records for `logging` keep their message apart, and an Error
        // record's fields join the message its exception shows.
        let message = args.to_string();
        return emit_record(&Record {
            message: message.as_bytes(),
            ..*record
        });
    }
    emit_text(record, Text::Args(args));
}

#[inline(always)]
fn emit_text(record: &Record<'_>, text: Text<'_>) {
    let now = now_since_epoch();
    if to_logging() && record.level != Level::Fatal {
        return keep_for_logging(record, UNIX_EPOCH + now);
    }
    let level = record.level;
    let routed = THREAD.try_with(|t| {
        t.count(level);
        let joined = t.joined();
        let mut borrowed = t.formatter.try_borrow_mut();
        let mut spare;
        let formatter: &mut Formatter = match &mut borrowed {
            Ok(formatter) => formatter,
            // A record logged while this thread formats another: from a
            // `Display` that logs, or from a signal handler.
            Err(_) => {
                spare = Formatter::new();
                &mut spare
            }
        };
        let color = color::use_color(color::choice(), joined.sink, fd::stderr_is_terminal);
        let (line, message) = formatter.format(now, record, text, color);
        match (record.fields, level >= Level::Error) {
            // What an exception shows of an Error record: with its span
            // context and fields.
            (Some(fields), true) => {
                let mut with_fields = Vec::new();
                crate::fields::message_text(&mut with_fields, message, Some(fields));
                t.emit(&joined, level, &with_fields, line);
            }
            _ => t.emit(&joined, level, message, line),
        }
        formatter.shrink(SCRATCH_MAX);
    });
    if routed.is_err() {
        // The thread is being torn down: it is outside any call.
        EMITTED_ELSEWHERE.add(level, 1);
        let color = color::use_color(color::choice(), Sink::Outside, fd::stderr_is_terminal);
        let mut formatter = Formatter::new();
        let (line, _) = formatter.format(now, record, text, color);
        write_direct(Sink::Outside, line, stall_wait(), |_, _| {});
    }
}

/// Keeps a record for `logging`: in the buffer of the call it joins,
/// delivered at that call's return, or outside any call in the
/// process-wide queue, which pylogsink's own Python thread delivers.
fn keep_for_logging(record: &Record<'_>, now: SystemTime) {
    let kept = THREAD.try_with(|t| {
        t.count(record.level);
        let pending = PendingRecord::new(record, now, t.identity());
        let joined = t.joined();
        match joined.sink {
            Sink::Outside => Some(pending),
            _ => {
                let call = joined.call(t);
                if record.level >= Level::Error {
                    call.collect_error(pending.message.as_bytes());
                }
                call.keep_pending(pending, joined.attached_to())
            }
        }
    });
    let outside = match kept {
        Ok(outside) => outside,
        Err(_) => {
            EMITTED_ELSEWHERE.add(record.level, 1);
            Some(PendingRecord::new(record, now, identity()))
        }
    };
    if let Some(pending) = outside {
        queue::push(pending);
        crate::logging::wake();
    }
}

/// Takes the records of every thread that wait for `logging` (threads
/// whose buffer is locked are skipped), then the queue's.
pub(crate) fn take_all_pending() -> Vec<Batch> {
    let mut batches: Vec<Batch> = live_threads()
        .iter()
        .filter_map(|shared| shared.pending.try_lock().ok().map(|mut p| p.take()))
        .filter(|b| !b.is_empty())
        .collect();
    batches.push(queue::take_now());
    batches
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// This thread's id and name, for a thread whose state is gone.
fn identity() -> (u64, Arc<str>) {
    // SAFETY: pthread_self has no preconditions.
    let id = unsafe { libc::pthread_self() } as u64;
    (id, os_thread_name().into())
}

/// The OS's name for this thread (what `ps -L` shows).
fn os_thread_name() -> String {
    let mut buf = [0u8; 64];
    // SAFETY: `buf` is valid for writes of its length, which is passed;
    // the call writes a NUL-terminated name of at most that length.
    let rc = unsafe {
        libc::pthread_getname_np(libc::pthread_self(), buf.as_mut_ptr().cast(), buf.len())
    };
    let len = buf.iter().position(|&b| b == 0).unwrap_or(0);
    match (rc, len) {
        (0, 1..) => String::from_utf8_lossy(&buf[..len]).into_owned(),
        _ => "native thread".to_owned(),
    }
}

/// A count per level.
struct PerLevel([AtomicU64; 6]);

impl PerLevel {
    const fn new() -> PerLevel {
        PerLevel([const { AtomicU64::new(0) }; 6])
    }

    fn add(&self, level: Level, n: u64) {
        self.0[level as usize].fetch_add(n, Ordering::Relaxed);
    }

    fn get(&self) -> [u64; 6] {
        self.0.each_ref().map(|n| n.load(Ordering::Relaxed))
    }
}

/// The largest record buffer a thread keeps between lines.
const SCRATCH_MAX: usize = 64 * 1024;

thread_local! {
    pub(crate) static THREAD: ThreadState = ThreadState::new();
}

/// One thread's part in pylogsink.
pub(crate) struct ThreadState {
    /// How many calls deep the thread is; 0 outside any call.
    pub depth: Cell<u32>,
    /// The number of this thread's calls so far, which names each one.
    calls: Cell<u64>,
    /// Whether a [`CallHandle`] was handed out for the current call.
    handed: Cell<bool>,
    /// The call of another thread that this one works for, if any.
    attached: RefCell<Option<CallHandle>>,
    /// What `attached` was before each attach still in force.
    attached_before: RefCell<Vec<Option<CallHandle>>>,
    /// This thread's id and OS name, once asked for.
    identity: RefCell<Option<(u64, Arc<str>)>>,
    /// True while this thread writes kept lines through `sys.stderr.write`.
    pub writing_kept: Cell<bool>,
    /// Whether this thread must avoid Python at a call's return, once known.
    pub avoid_python: Cell<Option<bool>>,
    /// What other threads may read or write: the current call's sink and
    /// kept lines (its attached workers add theirs, and the exit flush
    /// writes them if this thread is still in a call when the process
    /// ends), and the count of records emitted (for `stats`).
    shared: Arc<Shared>,
    /// Where the log function formats each record.
    formatter: RefCell<Formatter>,
}

/// The call a line joins, and where its lines go.
pub(crate) struct Joined {
    /// For a worker attached to another thread's call: that call.
    attached: Option<CallHandle>,
    /// The call's sink; [`Sink::Outside`] when there is no call.
    pub sink: Sink,
}

impl Joined {
    /// The call's shared state: the attached call's, or this thread's own.
    fn call<'a>(&'a self, t: &'a ThreadState) -> &'a Shared {
        self.attached.as_ref().map_or(&t.shared, |h| &h.shared)
    }

    /// The number of the call this worker is attached to, if it is one.
    fn attached_to(&self) -> Option<u64> {
        self.attached.as_ref().map(|h| h.call)
    }
}

impl ThreadState {
    fn new() -> ThreadState {
        let shared = Arc::new(Shared {
            call: AtomicU64::new(0),
            sink: AtomicU8::new(Sink::Outside as u8),
            crash_fd: AtomicI32::new(-1),
            kept: Mutex::new(Kept::default()),
            kept_any: AtomicBool::new(false),
            pending: Mutex::new(Pending::with_cap(CAP)),
            pending_any: AtomicBool::new(false),
            errors: Mutex::new(Errors::default()),
            errors_any: AtomicBool::new(false),
            errors_full: AtomicBool::new(false),
            errors_over: AtomicU64::new(0),
            emitted: PerLevel::new(),
        });
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
            shared,
            formatter: RefCell::new(Formatter::new()),
        }
    }

    /// The call a line logged now joins: this thread's own, else the call
    /// it is attached to while that call lasts, else none.
    #[inline]
    pub fn joined(&self) -> Joined {
        if self.depth.get() > 0 {
            let sink = self.shared.sink();
            return Joined {
                attached: None,
                sink,
            };
        }
        let attached = match self.attached.try_borrow() {
            Ok(attached) => attached.clone().filter(CallHandle::is_live),
            Err(_) => None,
        };
        let sink = attached.as_ref().map_or(Sink::Outside, |h| h.shared.sink());
        Joined { attached, sink }
    }

    /// Steps into a call; true if it is the outermost one.
    /// `stderr_is_own` is looked up only for the outermost call.
    /// `surviving_fd`, only where `sys.stderr` was replaced: the descriptor
    /// the crash handler writes the call's lines to (see
    /// [`crate::crash`]), or -1 for fd 2.
    #[inline(always)]
    pub fn enter(
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
    pub fn leave(&self) -> Option<(Sink, bool)> {
        let depth = self.depth.get().checked_sub(1)?;
        self.depth.set(depth);
        if depth > 0 {
            return None;
        }
        let sink = self.shared.end(self.handed.replace(false));
        Some((sink, self.kept_any() || self.pending_any()))
    }

    /// A handle on the current call for worker threads: this thread's own
    /// call, or the one it is attached to.
    pub fn handle(&self) -> Option<CallHandle> {
        if self.depth.get() > 0 {
            self.handed.set(true);
            return Some(CallHandle {
                shared: Arc::clone(&self.shared),
                call: self.calls.get(),
            });
        }
        self.joined().attached
    }

    /// Attaches this thread to the call of `handle` until the matching
    /// [`detach`](ThreadState::detach); pairs nest.
    pub fn attach(&self, handle: &CallHandle) {
        if let (Ok(mut attached), Ok(mut before)) = (
            self.attached.try_borrow_mut(),
            self.attached_before.try_borrow_mut(),
        ) {
            before.push(attached.replace(handle.clone()));
        }
    }

    /// Ends the latest [`attach`](ThreadState::attach): the thread works
    /// for the call it worked for before, if any. Unmatched, nothing.
    pub fn detach(&self) {
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
    pub fn pending_any(&self) -> bool {
        self.shared.pending_any.load(Ordering::Relaxed)
    }

    #[inline]
    fn kept_any(&self) -> bool {
        self.shared.kept_any.load(Ordering::Relaxed)
    }

    /// This thread's id and OS name.
    fn identity(&self) -> (u64, Arc<str>) {
        match self.identity.try_borrow_mut() {
            Ok(mut known) => known.get_or_insert_with(identity).clone(),
            Err(_) => identity(),
        }
    }

    /// Takes out the records that wait for `logging`.
    pub fn take_pending(&self) -> Batch {
        self.shared.pending_any.store(false, Ordering::Relaxed);
        lock(&self.shared.pending).take()
    }

    /// Takes the kept lines out.
    pub fn take_kept(&self) -> Taken {
        self.shared.kept_any.store(false, Ordering::Relaxed);
        lock(&self.shared.kept).take()
    }

    /// The current call's Error-level messages, its workers' included.
    pub fn errors(&self) -> MutexGuard<'_, Errors> {
        let mut errors = lock(&self.shared.errors);
        errors.add_left_out(self.shared.errors_over.swap(0, Ordering::Relaxed));
        errors
    }

    /// Counts one record emitted. Only this thread writes its counts, so
    /// a load and a store will do.
    fn count(&self, level: Level) {
        let emitted = &self.shared.emitted.0[level as usize];
        emitted.store(emitted.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    }

    #[inline(always)]
    fn emit(&self, joined: &Joined, level: Level, message: &[u8], record: &[u8]) {
        let (call, sink, worker) = (joined.call(self), joined.sink, joined.attached_to());
        if sink != Sink::Outside && level >= Level::Error {
            call.collect_error(message);
        }
        let keep = |rest: &[u8], is_rest: bool| call.keep(rest, is_rest, worker);
        match route(level, sink, QUEUE_PENDING.load(Ordering::Relaxed)) {
            Route::Keep => keep(record, false),
            Route::Direct { wait } => {
                let wait = if wait { stall_wait() } else { Duration::ZERO };
                if sink == Sink::Stalled {
                    if !call.write_kept(Duration::ZERO) {
                        return keep(record, false);
                    }
                    call.set_sink(Sink::Own);
                }
                write_direct(sink, record, wait, |rest, is_rest| {
                    call.set_sink(Sink::Stalled);
                    keep(rest, is_rest);
                });
            }
            Route::Fatal => fatal(call, sink, record, keep),
        }
    }
}

/// Writes a fatal line: what waits for `logging` (outside any call first,
/// then the call's) as text, then the call's kept lines, then the line.
#[cold]
#[inline(never)]
fn fatal(call: &Shared, sink: Sink, record: &[u8], keep: impl FnOnce(&[u8], bool)) {
    let fatal = queue::Fatal::begin(stall_wait());
    let mut waiting = fatal.take().to_text();
    if call.pending_any.load(Ordering::Relaxed) {
        call.pending_any.store(false, Ordering::Relaxed);
        waiting.extend(lock(&call.pending).take().to_text());
    }
    fd::write_with_room(STDERR, &waiting, stall_wait());
    call.write_kept(stall_wait());
    write_direct(sink, record, stall_wait(), keep);
}

/// Writes a buffer's lines (its note first) to fd 2, each piece waiting for
/// room at most `wait`; puts back what finds no room. True if nothing is
/// left. The lock is not held while writing.
fn write_buffer(buffer: &Mutex<Kept>, wait: Duration) -> bool {
    let taken = lock(buffer).take();
    if taken.text.is_empty() {
        return true;
    }
    let written = fd::write_with_room(STDERR, &taken.text, wait);
    if written >= taken.note_len {
        count_noted(&taken);
    }
    let all = written == taken.text.len();
    lock(buffer).put_back(taken, written);
    all
}

impl Drop for ThreadState {
    /// A thread that ends inside a call (killed by `pthread_exit`, say)
    /// leaves its kept lines to fd 2, or to the queue that exit writes.
    fn drop(&mut self) {
        for level in Level::ALL {
            let emitted = self.shared.emitted.0[level as usize].swap(0, Ordering::Relaxed);
            EMITTED_ELSEWHERE.add(level, emitted);
        }
        // Workers still attached to its call log as outside any call.
        self.shared.end(true);
        let taken = self.take_kept();
        write_fd2(taken, Duration::ZERO);
        // Records for `logging` go to the queue that pylogsink's own
        // Python thread delivers.
        if self.pending_any() {
            queue::put_back(self.take_pending());
            crate::logging::wake();
        }
    }
}

/// The part of a thread's state that other threads read or write: its
/// current call, which attached workers join.
pub(crate) struct Shared {
    /// The number of the outermost call in progress; 0 outside any call.
    pub(crate) call: AtomicU64,
    /// The call's [`Sink`]; `Outside` when there is no call.
    sink: AtomicU8,
    /// Where the crash handler writes the call's lines: a descriptor that
    /// outlives fd 2's reader, or -1 for fd 2.
    crash_fd: AtomicI32,
    kept: Mutex<Kept>,
    /// Whether `kept` may hold lines; spares the lock when it does not.
    kept_any: AtomicBool,
    /// Records for `logging` that wait for the call's return.
    pending: Mutex<Pending>,
    /// Whether `pending` may hold records.
    pending_any: AtomicBool,
    /// The call's Error-level messages.
    errors: Mutex<Errors>,
    /// Whether `errors` may hold messages.
    errors_any: AtomicBool,
    /// Whether `errors` is full: later messages only add their bytes to
    /// `errors_over`, without the lock.
    errors_full: AtomicBool,
    /// Bytes left out of a full `errors` and not yet counted in it.
    errors_over: AtomicU64,
    emitted: PerLevel,
}

impl Shared {
    /// The call's sink.
    #[inline]
    fn sink(&self) -> Sink {
        Sink::from_u8(self.sink.load(Ordering::Relaxed))
    }

    #[inline]
    fn set_sink(&self, sink: Sink) {
        self.sink.store(sink as u8, Ordering::Relaxed);
    }

    /// Starts call number `call`, with `sink`, and where its lines go if
    /// the process crashes.
    #[inline]
    fn begin(&self, call: u64, sink: Sink, crash_fd: i32) {
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
    fn collect_error(&self, message: &[u8]) {
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
    fn end(&self, handed: bool) -> Sink {
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
    fn keep(&self, record: &[u8], is_rest: bool, worker: Option<u64>) {
        let mut kept = lock(&self.kept);
        if worker.is_some_and(|call| call != self.call.load(Ordering::Acquire)) {
            drop(kept);
            return queue_push(record, is_rest);
        }
        kept.push_record(record, is_rest);
        self.kept_any.store(true, Ordering::Relaxed);
    }

    /// Keeps a record for `logging`; gives it back if the call a worker is
    /// attached to has ended.
    fn keep_pending(&self, record: PendingRecord, worker: Option<u64>) -> Option<PendingRecord> {
        let mut pending = lock(&self.pending);
        if worker.is_some_and(|call| call != self.call.load(Ordering::Acquire)) {
            return Some(record);
        }
        pending.push(record);
        self.pending_any.store(true, Ordering::Relaxed);
        None
    }

    /// Writes the kept lines to fd 2, waiting at most `wait`; puts back what
    /// finds no room. True if nothing is left.
    fn write_kept(&self, wait: Duration) -> bool {
        let all = write_buffer(&self.kept, wait);
        if all {
            self.kept_any.store(false, Ordering::Relaxed);
        }
        all
    }
}

/// Every live thread's shared state, for the exit flush and `stats`.
static REGISTRY: Mutex<Vec<Weak<Shared>>> = Mutex::new(Vec::new());

/// Records emitted since the process started, by level.
fn emitted() -> [u64; 6] {
    let registry = REGISTRY.lock().unwrap_or_else(|e| e.into_inner());
    let mut total = EMITTED_ELSEWHERE.get();
    for shared in registry.iter().filter_map(Weak::upgrade) {
        for (sum, n) in total.iter_mut().zip(shared.emitted.get()) {
            *sum += n;
        }
    }
    total
}

fn register(shared: &Arc<Shared>) {
    static EXIT_HOOK: Once = Once::new();
    EXIT_HOOK.call_once(|| {
        // SAFETY: `write_all_at_exit` is an `extern "C" fn()` that never
        // unwinds (it catches panics), as `atexit` requires.
        unsafe { libc::atexit(write_all_at_exit) };
    });
    let mut registry = REGISTRY.lock().unwrap_or_else(|e| e.into_inner());
    registry.retain(|w| w.strong_count() > 0);
    registry.push(Arc::downgrade(shared));
}

/// How long the exit flush waits for room on fd 2: ten stall waits, at
/// least one second. The process is ending, so nothing else waits on it,
/// but a reader that never comes back must not hold the exit for good.
pub(crate) fn exit_wait() -> Duration {
    (stall_wait() * 10).max(Duration::from_secs(1))
}

/// Writes what every thread still keeps, then the queue, to fd 2, waiting
/// for room at most `wait`. Runs at exit: first from Python's `atexit`
/// (registered by the first call), while the interpreter is whole, then
/// from the C `atexit` hook for whatever daemon threads logged since.
pub(crate) fn write_everything(wait: Duration) {
    let registry = live_threads();
    // Records for `logging` that Python can no longer take: as text.
    for batch in take_all_pending().into_iter().filter(|b| !b.is_empty()) {
        queue_pending_as_text(&batch);
    }
    for shared in registry {
        // A thread frozen inside `push` holds its lock: skip it rather
        // than hang the exit.
        if let Ok(mut kept) = shared.kept.try_lock() {
            let taken = kept.take();
            drop(kept);
            if !taken.text.is_empty() {
                queue().append(taken, 0);
                QUEUE_PENDING.store(true, Ordering::Release);
            }
        }
    }
    write_queue(wait);
}

/// Queues a batch of records for `logging` as text lines for fd 2.
pub(crate) fn queue_pending_as_text(batch: &Batch) {
    let mut queue = queue();
    if let Some(note) = batch.note() {
        queue.push(format!("[pylogsink] {note}\n").as_bytes());
    }
    let mut line = Vec::new();
    for record in &batch.records {
        line.clear();
        record.to_text(&mut line);
        queue.push(&line);
    }
    QUEUE_PENDING.store(true, Ordering::Release);
}

/// The shared state of every live thread; none if the registry is locked
/// (a thread frozen while it registers must not hang the exit).
fn live_threads() -> Vec<Arc<Shared>> {
    match REGISTRY.try_lock() {
        Ok(r) => r.iter().filter_map(Weak::upgrade).collect(),
        Err(_) => Vec::new(),
    }
}

/// Hands what waits to `text` and `record`, with the descriptor it goes to
/// (-1: fd 2), for the crash handler: the queues first, then every
/// thread's kept lines and records for `logging`. It allocates and frees
/// nothing and only tries locks; returns how many buffers it skipped
/// because their lock was held.
pub(crate) fn visit_waiting(
    text: &mut dyn FnMut(i32, &[u8]),
    record: &mut dyn FnMut(i32, &PendingRecord),
) -> usize {
    let mut busy = queue::visit(&mut |r| record(-1, r));
    match QUEUE.try_lock() {
        Ok(queue) => text(-1, queue.lines_bytes()),
        Err(_) => busy += 1,
    }
    let Ok(registry) = REGISTRY.try_lock() else {
        return busy + 1;
    };
    for weak in registry.iter() {
        let Some(shared) = weak.upgrade() else {
            continue;
        };
        let fd = shared.crash_fd.load(Ordering::Relaxed);
        match shared.kept.try_lock() {
            Ok(kept) => text(fd, kept.lines_bytes()),
            Err(_) => busy += 1,
        }
        match shared.pending.try_lock() {
            Ok(pending) => pending.records().for_each(|r| record(fd, r)),
            Err(_) => busy += 1,
        }
        // Dropping what may be the last reference would free memory.
        std::mem::forget(shared);
    }
    busy
}

/// The C `atexit` hook, after Python has finalized. It does not wait for
/// room: on CPython 3.10, a daemon thread that wakes after finalization may
/// crash the process on its own, so the process must not linger here.
extern "C" fn write_all_at_exit() {
    let _ = std::panic::catch_unwind(|| write_everything(Duration::ZERO));
}

/// Writes the queue, then `taken`, to fd 2, each piece waiting for room
/// at most `wait`; what finds no room joins the queue.
pub(crate) fn write_fd2(taken: Taken, wait: Duration) {
    let queue_written = write_queue(wait);
    if taken.text.is_empty() {
        return;
    }
    let written = if queue_written {
        fd::write_with_room(STDERR, &taken.text, wait)
    } else {
        0
    };
    if written < taken.text.len() {
        queue().append(taken, written);
        QUEUE_PENDING.store(true, Ordering::Release);
    } else {
        count_noted(&taken);
    }
}

/// Adds the lines that a written note reports to the count.
pub(crate) fn count_noted(taken: &Taken) {
    LEFT_OUT.fetch_add(taken.left_out_lines, Ordering::Relaxed);
}

/// Writes a record to fd 2 after whatever waits in the queue. What finds
/// no room within `wait` goes where [`on_no_room`] says: the queue, or
/// `keep` (for a call, which then counts as stalled), with whether it is
/// the rest of a line already started.
#[inline(always)]
fn write_direct(sink: Sink, record: &[u8], wait: Duration, keep: impl FnOnce(&[u8], bool)) {
    let written = if write_queue(wait) {
        fd::write_with_room(STDERR, record, wait)
    } else {
        0
    };
    if written < record.len() {
        let rest = &record[written..];
        match on_no_room(sink) {
            NoRoom::KeepAndStall => keep(rest, written > 0),
            NoRoom::Queue => queue_push(rest, written > 0),
        }
    }
}

static QUEUE: Mutex<Kept> = Mutex::new(Kept::with_cap(CAP));
static QUEUE_PENDING: AtomicBool = AtomicBool::new(false);

fn queue() -> MutexGuard<'static, Kept> {
    QUEUE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Adds a record that found no room on fd 2 to the process-wide queue.
fn queue_push(record: &[u8], is_rest: bool) {
    queue().push_record(record, is_rest);
    QUEUE_PENDING.store(true, Ordering::Release);
}

/// Whether lines wait in the process-wide queue.
#[inline]
pub(crate) fn queue_pending() -> bool {
    QUEUE_PENDING.load(Ordering::Acquire)
}

/// Writes the process-wide queue to fd 2, waiting at most `wait`. True if
/// the queue is empty afterwards. Costs one atomic load when it is empty.
pub fn write_queue(wait: Duration) -> bool {
    if !queue_pending() || !QUEUE_PENDING.swap(false, Ordering::AcqRel) {
        return true;
    }
    if write_buffer(&QUEUE, wait) {
        return true;
    }
    QUEUE_PENDING.store(true, Ordering::Release);
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stall_wait_round_trips() {
        let before = stall_wait();
        set_stall_wait(Duration::from_millis(7));
        assert_eq!(stall_wait(), Duration::from_millis(7));
        set_stall_wait(before);
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
