//! The `logging` destination's Python edge: handing records to
//! `logging.getLogger(name).handle` where that is safe.
//!
//! pyo3-log takes the GIL in the log function for every record, and that
//! is the deadlock pylogsink exists to avoid: one thread holds the GIL and
//! waits for a native lock, another holds the lock and waits for the GIL
//! to log. Here the log function only keeps the record
//! ([`crate::dest::pending`]); records are handed to `logging` where the thread
//! holds the GIL and no native lock:
//!
//! - by a daemon Python thread of pylogsink's own, woken when records
//!   wait: records logged outside any call (a native worker thread, module
//!   init) with no call made, and records of a call in progress that
//!   released the GIL ([`crate::core::live`]), both within milliseconds;
//! - at the return of the outermost call, in the order they were logged;
//! - for a thread that must avoid Python at its return (the daemon rule),
//!   by that same Python thread, while the returning thread waits
//!   ([`super::daemon::hand_over`]);
//! - at exit, before `logging.shutdown` runs.
//!
//! Python's logger levels filter on the native side too ([`crate::control::pylevels`]),
//! and `logging` itself tells when they change.

use super::at_fork;
use super::daemon::hand_over;
use super::interrupt::is_interrupt;
use super::ipython;
use super::live;
use super::stderr::{sealed_pending, stderr_is_own};
use crate::control::{self, pylevels};
use crate::core::capture::{
    is_on as capture_on, pending_for_python as capture_pending, pressing as capture_pressing,
};
use crate::core::fork;
use crate::core::live as core_live;
use crate::core::queue::{for_stream_pending, queue_pending_as_text, stderr_seen};
use crate::core::registry::take_all_pending;
use crate::core::stats::count_python_wake;
use crate::core::thread::{current_id, THREAD};
use crate::dest::pending::flight;
use crate::dest::pending::queue::{self, Delivery, Woken};
use crate::dest::pending::{Batch, PendingRecord};
use crate::dest::prompt;
use crate::record::escape::escape_name;
use crate::record::fields::{OwnedFields, OwnedValue};
use crate::record::lock;
use pyo3::prelude::*;
use pyo3::types::{PyCFunction, PyDict, PyString, PyTuple};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Once, OnceLock};
use std::time::{Duration, Instant, UNIX_EPOCH};

/// What delivery needs from Python, made once.
///
/// It lives in a std `OnceLock`, set with the GIL held and no Python code
/// running, and delivery uses names interned here rather than `intern!`:
/// pyo3's once-cells (`PyOnceLock`, behind `intern!`) are filled with the
/// GIL released, so a `fork()` by another thread at that moment would leave
/// the child a cell marked as being filled by a thread it does not have,
/// and the child's first record would wait for it forever.
struct State {
    logging: Py<PyModule>,
    threading: Py<PyModule>,
    /// Loggers by target, as `logging.getLogger` gave them.
    loggers: Py<PyDict>,
    names: Names,
    /// `contextvars.copy_context`.
    copy_context: Py<PyAny>,
}

/// The attribute and method names delivery uses on every record.
struct Names {
    get_effective_level: Py<PyString>,
    manager: Py<PyString>,
    disable: Py<PyString>,
    make_record: Py<PyString>,
    handle: Py<PyString>,
    created: Py<PyString>,
    relative_created: Py<PyString>,
    msecs: Py<PyString>,
    thread: Py<PyString>,
    active: Py<PyString>,
    dangling: Py<PyString>,
    native_id: Py<PyString>,
    name: Py<PyString>,
    thread_name: Py<PyString>,
    start_time: Py<PyString>,
}

impl Names {
    fn new(py: Python<'_>) -> Names {
        let name = |text: &str| PyString::intern(py, text).unbind();
        Names {
            get_effective_level: name("getEffectiveLevel"),
            manager: name("manager"),
            disable: name("disable"),
            make_record: name("makeRecord"),
            handle: name("handle"),
            created: name("created"),
            relative_created: name("relativeCreated"),
            msecs: name("msecs"),
            thread: name("thread"),
            active: name("_active"),
            dangling: name("_dangling"),
            native_id: name("native_id"),
            name: name("name"),
            thread_name: name("threadName"),
            start_time: name("_startTime"),
        }
    }
}

/// The Python objects the delivery needs, made once with the GIL held.
static STATE: OnceLock<State> = OnceLock::new();
/// Set once, at exit: pylogsink's Python thread ends its delivery.
static STOP: AtomicBool = AtomicBool::new(false);
/// The prefix of every logger name: set by [`set_prefix`], read at each
/// logger's first record.
static PREFIX: Mutex<String> = Mutex::new(String::new());

/// The logger a record of `target` goes to: `::` becomes `.`, after the
/// builder's prefix, if any; control characters as `\xNN`, so that
/// `%(name)s` stays on one line. An empty target (and no prefix) is the
/// root logger, `root`.
pub(crate) fn logger_name(prefix: &str, target: &str) -> String {
    let target = escape_name(target).replace("::", ".");
    match (prefix.is_empty(), target.is_empty()) {
        (true, true) => "root".to_owned(),
        (true, false) => target,
        (false, true) => prefix.to_owned(),
        (false, false) => format!("{prefix}.{target}"),
    }
}

/// Sets the prefix of every logger name.
pub(crate) fn set_prefix(prefix: &str) {
    *lock(&PREFIX) = prefix.to_owned();
}

/// At the entry of an outermost call with the `logging` destination: sets
/// the Python side up the first time, and reads the levels again if they
/// changed.
#[cold]
#[inline(never)]
pub(crate) fn on_call_entry(py: Python<'_>) {
    if let Err(err) = state(py).and_then(|state| refresh_levels(py, state)) {
        err.write_unraisable(py, None);
    }
}

/// Sets the Python side up, once: the TRACE level's name, the exit
/// delivery (registered after `logging` is imported, so that it runs
/// before `logging.shutdown`), and pylogsink's Python thread.
pub(crate) fn start(py: Python<'_>) -> PyResult<()> {
    state(py).map(|_| ())
}

fn state(py: Python<'_>) -> PyResult<&'static State> {
    if let Some(state) = STATE.get() {
        return Ok(state);
    }
    let made = State {
        logging: py.import("logging")?.unbind(),
        threading: py.import("threading")?.unbind(),
        loggers: PyDict::new(py).unbind(),
        names: Names::new(py),
        copy_context: py.import("contextvars")?.getattr("copy_context")?.unbind(),
    };
    // The imports may have let another thread make and set its own.
    let first = STATE.set(made).is_ok();
    let state = STATE.get_or_init(|| unreachable!("set just above"));
    if first {
        set_up(py, state)?;
    }
    Ok(state)
}

/// Done once, by the thread whose state was set.
fn set_up(py: Python<'_>, state: &State) -> PyResult<()> {
    let logging = state.logging.bind(py);
    if logging
        .call_method1("getLevelName", (5,))?
        .extract::<String>()?
        == "Level 5"
    {
        logging.call_method1("addLevelName", (5, "TRACE"))?;
    }
    watch_levels(py, logging)?;
    ensure_thread(py)
}

/// pylogsink's Python thread, once started in this process: the fork
/// generation it was started in, plus one (0: never).
static STARTED_IN: AtomicU64 = AtomicU64::new(0);

/// pylogsink's Python thread, for the exit to join.
static DELIVERY_THREAD: Mutex<Option<Py<PyAny>>> = Mutex::new(None);

/// Starts pylogsink's Python thread, which delivers what waits outside any
/// call and in calls in progress, unless it runs already in this process
/// (a forked child has no thread but the one that forked).
pub(crate) fn ensure_thread(py: Python<'_>) -> PyResult<()> {
    let generation = fork::generation() + 1;
    if STARTED_IN.load(Ordering::Acquire) == generation
        || STARTED_IN.swap(generation, Ordering::AcqRel) == generation
    {
        return Ok(());
    }
    match start_thread(py) {
        Ok(thread) => {
            let before = lock(&DELIVERY_THREAD).replace(thread);
            drop(before);
            Ok(())
        }
        Err(err) => {
            STARTED_IN.store(0, Ordering::Release);
            Err(err)
        }
    }
}

fn start_thread(py: Python<'_>) -> PyResult<Py<PyAny>> {
    at_fork::register(py);
    restart_in_children(py);
    let run =
        PyCFunction::new_closure(py, Some(c"pylogsink_logging_delivery"), None, |args, _| {
            run_thread(args.py());
        })?;
    let kwargs = PyDict::new(py);
    kwargs.set_item("target", run)?;
    kwargs.set_item("name", "pylogsink-logging")?;
    kwargs.set_item("daemon", true)?;
    let thread = py
        .import("threading")?
        .getattr("Thread")?
        .call((), Some(&kwargs))?;
    thread.call_method0("start")?;
    Ok(thread.unbind())
}

/// A forked child has no thread but the one that forked: it starts a
/// delivery thread of its own, once the parent ran one. Registered once
/// per process (a child keeps its parent's registration).
fn restart_in_children(py: Python<'_>) {
    static REGISTERED: Once = Once::new();
    REGISTERED.call_once(|| {
        let in_child =
            PyCFunction::new_closure(py, Some(c"pylogsink_after_fork"), None, |args, _| {
                if let Err(err) = ensure_thread(args.py()) {
                    err.write_unraisable(args.py(), None);
                }
            });
        let registered = in_child.and_then(|in_child| {
            let kwargs = PyDict::new(py);
            kwargs.set_item("after_in_child", in_child)?;
            at_fork::os_register_at_fork(py, &kwargs)
        });
        if let Err(err) = registered {
            err.write_unraisable(py, None);
        }
    });
}

/// Hears of every change of Python's levels as it happens: `logging`
/// clears the level cache (`_cache`, a dict) of every logger whenever a
/// level changes (`setLevel`, `logging.disable`, and so `basicConfig`,
/// `dictConfig`, `caplog.set_level`), so a logger of pylogsink's own
/// (`pylogsink._levels.<address>`, one per extension that links pylogsink)
/// gets a dict whose `clear` tells [`control::python_levels_changed`].
fn watch_levels(py: Python<'_>, logging: &Bound<'_, PyModule>) -> PyResult<()> {
    // A builtin function in a class is not bound to the instance, so
    // `cache.clear()` calls it with no arguments.
    let clear = PyCFunction::new_closure(py, Some(c"clear"), None, |_, _| {
        control::python_levels_changed();
        // pylogsink's thread reads them, for native threads outside calls.
        queue::wake_for_calls();
    })?;
    let methods = PyDict::new(py);
    methods.set_item("clear", clear)?;
    let bases = PyTuple::new(py, [py.get_type::<PyDict>()])?;
    let watch =
        py.get_type::<pyo3::types::PyType>()
            .call1(("pylogsink_levels_watch", bases, methods))?;
    // Every extension links its own copy of pylogsink, and each needs a
    // logger of its own: the address of this copy's state names it.
    let name = format!("pylogsink._levels.{:x}", &STATE as *const _ as usize);
    let sentinel = logging.call_method1("getLogger", (name,))?;
    sentinel.setattr("_cache", watch.call0()?)
}

/// Reads Python's levels again if they changed since the last time.
fn refresh_levels(py: Python<'_>, state: &State) -> PyResult<()> {
    let Some(epoch) = pylevels::stale() else {
        return Ok(());
    };
    read_levels(py, state, epoch).inspect_err(|_| control::python_levels_changed())
}

fn read_levels(py: Python<'_>, state: &State, epoch: u64) -> PyResult<()> {
    let logging = state.logging.bind(py);
    let root = logging.getattr("root")?;
    let manager = root.getattr("manager")?;
    let disable: i32 = manager.getattr("disable")?.extract()?;
    let logger_type = logging.getattr("Logger")?;
    let mut levels = vec![root.getattr("level")?.extract::<i32>()?];
    let loggers = manager.getattr("loggerDict")?.call_method0("values")?;
    for logger in loggers.try_iter()? {
        let logger = logger?;
        if logger.is_instance(&logger_type)? {
            let level: i32 = logger.getattr("level")?.extract()?;
            if level != 0 {
                levels.push(level);
            }
        }
    }
    control::python_levels_read(pylevels::floor_of(levels, disable), epoch);
    state.loggers.bind(py).clear();
    Ok(())
}

/// At the return of the outermost call: hands the records logged outside
/// any call, then the call's own, to `logging`. Returns the first
/// interrupt (`KeyboardInterrupt`...) that escaped a handler; the rest of
/// the records are still delivered.
pub(crate) fn deliver_at_return(py: Python<'_>) -> Option<PyErr> {
    let first = deliver_queue(py);
    let own = THREAD.with(|t| t.take_pending());
    let second = deliver(py, own, Until::Done);
    first.or(second)
}

/// Hands the records logged outside any call to `logging`, unless a Fatal
/// line is being written (it writes them as text): at a call's return, and
/// at a cell's end (`cells`). For [`QUEUE_SHARE`] at most: the queue may
/// hold the budget's 50,000 records, which a slow handler (a millisecond
/// each) would make the caller wait for long; what is left goes back to
/// the queue, for pylogsink's thread.
pub(crate) fn deliver_queue(py: Python<'_>) -> Option<PyErr> {
    if !queue::waiting() && !live::Turn::taken() {
        return None;
    }
    let turn = live::Turn::take(py)?;
    deliver_queue_in(py, &turn)
}

/// [`deliver_queue`], with the turn.
pub(crate) fn deliver_queue_in(py: Python<'_>, _turn: &live::Turn) -> Option<PyErr> {
    let mut delivery = Delivery::start()?;
    let batch = std::mem::take(&mut delivery.0);
    deliver(py, batch, Until::Before(Instant::now() + QUEUE_SHARE))
}

/// The longest a call's return (or a cell's end) spends handing over the
/// records that other threads logged outside any call.
const QUEUE_SHARE: Duration = Duration::from_secs(1);

/// How far a delivery goes.
#[derive(Clone, Copy)]
enum Until {
    /// Every record of the batch.
    Done,
    /// pylogsink's thread: once exit began, or a fork waits, the record in
    /// hand is the last; the rest goes back to the queue, for the exit or
    /// the thread to deliver.
    Stopped,
    /// The exit: records until the deadline; the rest goes to fd 2 as text.
    Deadline(Instant),
    /// Records until the deadline; the rest goes back to the queue.
    Before(Instant),
}

impl Until {
    /// Whether to stop before the next record, and where the rest goes.
    fn stops(self) -> Option<fn(Batch)> {
        match self {
            Until::Done => None,
            Until::Stopped => (STOP.load(Ordering::Acquire) || at_fork::asked())
                .then_some(queue::put_back as fn(Batch)),
            Until::Deadline(at) => (Instant::now() >= at).then_some(rest_as_text as fn(Batch)),
            Until::Before(at) => (Instant::now() >= at).then_some(queue::put_back as fn(Batch)),
        }
    }
}

/// Records that Python will not take before exit: to fd 2, as text.
fn rest_as_text(batch: Batch) {
    queue_pending_as_text(&batch);
}

/// Whether Python takes no more records: a multiprocessing worker's end
/// began, and what its handlers hand on (a `QueueHandler`'s queue) may be
/// closed.
static AS_TEXT: AtomicBool = AtomicBool::new(false);

/// From now on, records go to fd 2 as text (a worker's end).
pub(crate) fn records_as_text_from_now() {
    AS_TEXT.store(true, Ordering::Release);
}

/// Hands `batch` to `logging`, note first, as far as `until` says. If
/// Python cannot take it (the destination could not be set up), it goes
/// to fd 2 as text.
fn deliver(py: Python<'_>, batch: Batch, until: Until) -> Option<PyErr> {
    if batch.is_empty() {
        return None;
    }
    if AS_TEXT.load(Ordering::Acquire) {
        rest_as_text(batch);
        return None;
    }
    let state = match state(py) {
        Ok(state) => state,
        Err(err) => {
            err.write_unraisable(py, None);
            queue_pending_as_text(&batch);
            return None;
        }
    };
    // Until the last record is handed over, a crash writes the rest.
    let flight = flight::start(batch);
    let batch = flight.batch();
    let prefix = lock(&PREFIX).clone();
    let mut interrupt = None;
    if let Some(note) = batch.note() {
        let logger = logger_name(&prefix, "pylogsink");
        let err = handle_note(py, state, &logger, &note).err();
        interrupt = interrupt.or(err.filter(|e| is_interrupt(py, e)));
    }
    let mut seen = Seen {
        logger: None,
        file: None,
        thread_names: Vec::new(),
        here: current_id(),
        start: None,
    };
    for (n, record) in batch.records.iter().enumerate() {
        if let Some(rest_to) = until.stops() {
            rest_to(Batch {
                records: batch.records[n..].to_vec(),
                ..Batch::default()
            });
            flight.handed(batch.records.len());
            break;
        }
        if flight.written_at_crash(n) {
            // A raised SIGABRT wrote it to fd 2, and the process lived on.
            flight.handed(n + 1);
            continue;
        }
        if let Err(err) = handle(py, state, &prefix, record, &mut seen) {
            if is_interrupt(py, &err) {
                interrupt.get_or_insert(err);
            } else {
                err.write_unraisable(py, None);
            }
        }
        flight.handed(n + 1);
        // Python is taking: a thread that waits for room waits on.
        crate::dest::patience::took();
    }
    interrupt
}

/// What one delivery looked up, for the records after: records in a row
/// tend to share their target, file and thread.
struct Seen<'py> {
    /// The last record's target and its logger's.
    logger: Option<(Box<str>, SeenLogger<'py>)>,
    /// The last record's file, as Python has it.
    file: Option<(Box<str>, Bound<'py, PyString>)>,
    /// Thread names by OS thread id.
    thread_names: Vec<(u64, Bound<'py, PyAny>)>,
    /// The thread that delivers, whose id and name a record it made has.
    here: u64,
    /// `logging`'s start time, looked up at the first record.
    start: Option<Start>,
}

/// A logger and what each record asks of it.
struct SeenLogger<'py> {
    logger: Bound<'py, PyAny>,
    name: Bound<'py, PyString>,
    make_record: Bound<'py, PyAny>,
    handle: Bound<'py, PyAny>,
}

/// What `relativeCreated` counts from: `logging._startTime`, a float of
/// seconds up to CPython 3.12 and an int of nanoseconds from 3.13 (either
/// taken as found), or, if it is neither, unknown: each record's own
/// `created` and `relativeCreated` then give it.
#[derive(Clone, Copy)]
enum Start {
    Seconds(f64),
    Nanos(i128),
    Unknown,
}

impl Start {
    fn find(py: Python<'_>, state: &State) -> Start {
        let Ok(start) = state
            .logging
            .bind(py)
            .getattr(state.names.start_time.bind(py))
        else {
            return Start::Unknown;
        };
        if let Ok(nanos) = start.cast::<pyo3::types::PyInt>() {
            return nanos.extract().map_or(Start::Unknown, Start::Nanos);
        }
        start.extract().map_or(Start::Unknown, Start::Seconds)
    }

    /// `relativeCreated` for a record logged `since` the epoch, in ms.
    fn relative(self, since: Duration) -> Option<f64> {
        match self {
            Start::Seconds(start) => Some((since.as_secs_f64() - start) * 1000.0),
            Start::Nanos(start) => Some((since.as_nanos() as i128 - start) as f64 / 1e6),
            Start::Unknown => None,
        }
    }
}

/// `logging.getLogger(name)`, from the cache.
fn logger<'py>(py: Python<'py>, state: &State, name: &str) -> PyResult<Bound<'py, PyAny>> {
    let loggers = state.loggers.bind(py);
    if let Some(logger) = loggers.get_item(name)? {
        return Ok(logger);
    }
    let logger = state.logging.bind(py).call_method1("getLogger", (name,))?;
    loggers.set_item(name, &logger)?;
    Ok(logger)
}

/// One record: checked against its logger's level (and the answer kept for
/// the log function), made with `Logger.makeRecord`, so that a record
/// factory applies, given the time and thread of when it was logged, and
/// handed to `Logger.handle`.
fn handle<'py>(
    py: Python<'py>,
    state: &State,
    prefix: &str,
    record: &PendingRecord,
    seen: &mut Seen<'py>,
) -> PyResult<()> {
    let n = &state.names;
    let same = matches!(&seen.logger, Some((target, _)) if *target == record.target);
    if !same {
        let name = logger_name(prefix, &record.target);
        let logger = logger(py, state, &name)?;
        let seen_logger = SeenLogger {
            name: PyString::new(py, &name),
            make_record: logger.getattr(n.make_record.bind(py))?,
            handle: logger.getattr(n.handle.bind(py))?,
            logger,
        };
        seen.logger = Some((record.target.clone(), seen_logger));
    }
    let Some((_, seen_logger)) = &seen.logger else {
        unreachable!("set just above")
    };
    let same_file = matches!(&seen.file, Some((file, _)) if *file == record.file);
    if !same_file {
        seen.file = Some((record.file.clone(), PyString::new(py, &record.file)));
    }
    let Some((_, file)) = &seen.file else {
        unreachable!("set just above")
    };
    let levelno = record.level.python_levelno();
    // The lowest level the logger takes, learnt once per target and
    // configuration: `isEnabledFor` without the Python call.
    let lowest = match pylevels::known(&record.target) {
        Some(lowest) => lowest,
        None => {
            let epoch = pylevels::epoch();
            let logger = &seen_logger.logger;
            let effective: i32 = logger
                .call_method0(n.get_effective_level.bind(py))?
                .extract()?;
            let disable: i32 = logger
                .getattr(n.manager.bind(py))?
                .getattr(n.disable.bind(py))?
                .extract()?;
            let lowest = pylevels::lowest_taken(effective, disable);
            pylevels::learn(&record.target, lowest, epoch);
            lowest
        }
    };
    if levelno < lowest {
        return Ok(());
    }
    let args = (
        &seen_logger.name,
        levelno,
        file,
        record.line,
        &record.message,
        PyTuple::empty(py),
        py.None(),
    );
    let made = seen_logger.make_record.call1(args)?;
    let handle = seen_logger.handle.clone();
    let start = *seen.start.get_or_insert_with(|| Start::find(py, state));
    stamp(
        py,
        state,
        &made,
        record,
        start,
        seen.here,
        &mut seen.thread_names,
    )?;
    if let Some(fields) = &record.fields {
        attach_fields(py, &made, fields)?;
    }
    // `handle` checks `Logger.disabled` and the logger's filters itself.
    handle.call1((made,))?;
    Ok(())
}

/// Sets a made record's time and thread to when and where it was logged.
/// Through `setattr`: a `LogRecord` keeps its attributes inline (CPython
/// 3.11 on), and asking for its `__dict__` would make one, which costs
/// more than the five stores. A record logged on `here`, the thread that
/// delivers it, has its thread already. `thread_names` keeps the names
/// found, by thread id, for the records after.
fn stamp<'py>(
    py: Python<'py>,
    state: &State,
    made: &Bound<'py, PyAny>,
    record: &PendingRecord,
    start: Start,
    here: u64,
    thread_names: &mut Vec<(u64, Bound<'py, PyAny>)>,
) -> PyResult<()> {
    let n = &state.names;
    let since = record
        .created
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let created = since.as_secs_f64();
    let get = |name: &Py<PyString>| -> PyResult<f64> { made.getattr(name.bind(py))?.extract() };
    let set = |name: &Py<PyString>, value: Bound<'py, PyAny>| made.setattr(name.bind(py), value);
    let relative = match start.relative(since) {
        Some(relative) => relative,
        None => {
            let delivered = get(&n.created)?;
            get(&n.relative_created)? - (delivered - created) * 1000.0
        }
    };
    set(&n.created, created.into_pyobject(py)?.into_any())?;
    set(
        &n.msecs,
        f64::from(since.subsec_millis())
            .into_pyobject(py)?
            .into_any(),
    )?;
    set(&n.relative_created, relative.into_pyobject(py)?.into_any())?;
    if record.thread == here {
        // Logged on this thread: the record says so already.
        return Ok(());
    }
    set(&n.thread, record.thread.into_pyobject(py)?.into_any())?;
    let name = match thread_names.iter().find(|(id, _)| *id == record.native_id) {
        Some((_, name)) => name.clone(),
        None => {
            let thread = if record.python {
                python_thread(py, state, record)?
            } else {
                None
            };
            let name = match thread {
                Some(thread) => thread.getattr(n.name.bind(py))?,
                None => PyString::new(py, &record.thread_name).into_any(),
            };
            thread_names.push((record.native_id, name.clone()));
            name
        }
    };
    set(&n.thread_name, name)
}

/// The Python `Thread` that logged `record`, if it was one: the live
/// thread of its id (`threading._active`), or, for a thread that has ended
/// since it logged (a short worker, before pylogsink's thread delivered),
/// its `Thread` object while one lives (`threading._dangling`, where
/// `threading` keeps every `Thread` until it is freed). Both are checked
/// against the OS thread id, since a new thread often gets the id
/// (`pthread_t`) of one that ended; asked only for a record whose thread
/// had a Python thread state, since on Windows a native thread soon gets
/// the id of a Python thread that ended.
fn python_thread<'py>(
    py: Python<'py>,
    state: &State,
    record: &PendingRecord,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    let n = &state.names;
    let threading = state.threading.bind(py);
    let same = |thread: &Bound<'py, PyAny>| {
        let native_id = thread.getattr(n.native_id.bind(py));
        native_id.and_then(|id| id.extract::<u64>()).ok() == Some(record.native_id)
    };
    if let Ok(thread) = threading
        .getattr(n.active.bind(py))?
        .get_item(record.thread)
    {
        if same(&thread) {
            return Ok(Some(thread));
        }
    }
    // A private name: where a Python lacks it, the OS name stands.
    let Ok(all) = threading.getattr(n.dangling.bind(py)) else {
        return Ok(None);
    };
    for thread in all.try_iter()? {
        let thread = thread?;
        if same(&thread) {
            return Ok(Some(thread));
        }
    }
    Ok(None)
}

/// The attribute that holds a record's span context
/// (`load{path="model.pte"}:init`), when it is in a span.
pub(crate) const SPAN_ATTRIBUTE: &str = "span";

/// What a field whose name is taken on the `LogRecord` is prefixed with.
pub(crate) const FIELD_PREFIX: &str = "field_";

/// Attributes `logging` sets on a record later (a `Formatter`), so that no
/// field takes their place.
const LATER: [&str; 2] = ["message", "asctime"];

/// Sets a record's fields as attributes of the made `LogRecord`, as
/// `logging`'s `extra` does: integers as `int`, floats as `float`,
/// booleans as `bool`, the rest as `str`; a name the record already has
/// (`name`, `msg`, `lineno`, a method, the span attribute...) gets
/// [`FIELD_PREFIX`] rather than replacing it. The span context goes in
/// [`SPAN_ATTRIBUTE`].
fn attach_fields(py: Python<'_>, made: &Bound<'_, PyAny>, fields: &OwnedFields) -> PyResult<()> {
    let taken = |name: &str| -> PyResult<bool> {
        Ok(LATER.contains(&name) || name == SPAN_ATTRIBUTE || made.hasattr(name)?)
    };
    for (name, value) in &fields.values {
        let name = escape_name(name);
        let name = if taken(&name)? {
            std::borrow::Cow::Owned(format!("{FIELD_PREFIX}{name}"))
        } else {
            name
        };
        let value = match value {
            OwnedValue::Int(n) => n.into_pyobject(py)?.into_any(),
            OwnedValue::Float(x) => x.into_pyobject(py)?.into_any(),
            OwnedValue::Bool(b) => pyo3::types::PyBool::new(py, *b).to_owned().into_any(),
            OwnedValue::Str(s) => pyo3::types::PyString::new(py, s).into_any(),
        };
        made.setattr(&*name, value)?;
    }
    if !fields.spans.is_empty() {
        made.setattr(SPAN_ATTRIBUTE, &fields.spans)?;
    }
    Ok(())
}

/// The note for records left out, as a Warning of pylogsink's own.
fn handle_note(py: Python<'_>, state: &State, name: &str, note: &str) -> PyResult<()> {
    let logger = logger(py, state, name)?;
    logger.call_method1("warning", (note,))?;
    Ok(())
}

/// pylogsink's Python thread: waits, with the GIL released, until
/// something waits for Python (records logged outside any call or waiting
/// in a call in progress, lines for a replaced `sys.stderr`, levels that
/// changed, an answer about `sys.stderr` gone stale) and hands it over.
/// Idle, it does not wake.
fn run_thread(py: Python<'_>) {
    loop {
        let woken = py.detach(|| {
            let woken = wait_for_python();
            at_fork::begin_work();
            woken
        });
        if woken == Woken::Stop {
            at_fork::end_work();
            return;
        }
        count_python_wake();
        ask_stderr(py);
        if shell_without_hooks(py) {
            // A kernel started after pylogsink's init: what waits outside
            // any call may belong to its next cell. The main thread sets
            // the cells' hooks up at its next safe point, and decides.
            queue::hold(true);
            prompt::ask();
            at_fork::end_work();
            continue;
        }
        if let Some(state) = STATE.get() {
            if let Err(err) = refresh_levels(py, state) {
                err.write_unraisable(py, None);
            }
        }
        match woken {
            Woken::Queue => match gathered(py) {
                Some((_turn, mut delivery)) => {
                    let batch = std::mem::take(&mut delivery.0);
                    if let Some(err) = deliver(py, batch, Until::Stopped) {
                        err.write_unraisable(py, None);
                    }
                }
                // A Fatal line is being written, and writes them; the
                // main thread is delivering them; or a cell ended.
                None => py.detach(|| std::thread::sleep(Duration::from_millis(1))),
            },
            Woken::Calls => deliver_live(py),
            Woken::Stop => {}
        }
        at_fork::end_work();
    }
}

/// Whether an IPython shell runs whose cells' hooks are not set up.
fn shell_without_hooks(py: Python<'_>) -> bool {
    !queue::cells_hooked() && ipython::shell(py).is_ok_and(|shell| shell.is_some())
}

/// Waits, without the GIL, until something needs it. What a call in
/// progress keeps needs it only once it has waited out [`GATHER`] in the
/// same call: a call that returns sooner hands over its own, and asking for
/// the GIL while a call holds it would only make the two threads trade it
/// ([`live_due`]).
fn wait_for_python() -> Woken {
    let stop = || STOP.load(Ordering::Acquire);
    loop {
        let woken = queue::wait(stop);
        if woken != Woken::Calls
            || pylevels::is_stale()
            || crate::core::queue::stderr_ask_claimed()
            || live_due()
        {
            return woken;
        }
    }
}

/// Gathers for [`GATHER`] (less while a writer waits for captured output
/// to be taken), then tells whether something waits for a live delivery:
/// what a call in progress since before the gathering keeps, lines logged
/// outside any call for a replaced `sys.stderr`, a daemon thread's hand-over,
/// captured output for Python. Without the GIL.
fn live_due() -> bool {
    queue::take_in_calls();
    let before = core_live::calls_in_progress();
    let gathered = Instant::now() + GATHER;
    if !capture_on() {
        std::thread::sleep(GATHER);
    }
    while !capture_pressing() {
        let left = gathered.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        std::thread::sleep(left.min(Duration::from_millis(1)));
    }
    core_live::still_waiting(&before)
        || ((for_stream_pending() || sealed_pending()) && !queue::held())
        || hand_over::waiting()
        || capture_pending()
}

/// The records logged outside any call, taken once they had [`GATHER`] to
/// gather: a thread that logs a burst wakes this thread once, not once a
/// record. `None` while a Fatal line is being written (it writes them),
/// while another thread kept the turn to deliver them, or once a Jupyter
/// cell ended during the gathering (they wait for the next one).
fn gathered(py: Python<'_>) -> Option<(live::Turn, Delivery)> {
    py.detach(|| std::thread::sleep(GATHER));
    let turn = live::Turn::take_unless_held(py)?;
    Some((turn, Delivery::start()?))
}

/// Asks whether `sys.stderr` is replaced, for the lines logged outside any
/// call (see [`crate::core::queue::stderr_replaced`]).
fn ask_stderr(py: Python<'_>) {
    let now_ms = UNIX_EPOCH.elapsed().map_or(0, |d| d.as_millis());
    stderr_seen(
        !stderr_is_own(py),
        Some(u64::try_from(now_ms).unwrap_or(u64::MAX)),
    );
}

/// How long pylogsink's Python thread lets records gather in calls before
/// it takes them: a call shorter than that delivers its own at its return,
/// and the thread does not take the GIL for it.
const GATHER: Duration = Duration::from_millis(10);

/// Hands what waits for Python in calls in progress (see
/// [`crate::core::live`]), the lines logged outside any call for a
/// replaced `sys.stderr`, and the lines an output capture drained for a
/// replaced `sys.stdout` / `sys.stderr`, as long as some wait.
fn deliver_live(py: Python<'_>) {
    // The first round was gathered by `wait_for_python`.
    loop {
        if let Some(err) = live::write_outside_lines_unless_held(py) {
            err.write_unraisable(py, None);
        }
        super::capture::deliver(py);
        for handed in hand_over::take() {
            deliver_handed(py, handed, Until::Stopped);
        }
        for taken in core_live::take_from_calls() {
            let (stream, context) = live::objects_of(py, &taken.shared, taken.call);
            if let Some(err) = live::write_lines(py, stream, taken.lines) {
                err.write_unraisable(py, None);
            }
            if let Some(err) = deliver_in(py, context.as_ref(), taken.batch) {
                err.write_unraisable(py, None);
            }
            core_live::handed_over(&taken.shared);
        }
        let due = py.detach(live_due);
        count_python_wake();
        if !due || STOP.load(Ordering::Acquire) || at_fork::asked() {
            return;
        }
    }
}

/// Writes and delivers what a returning thread handed over (see
/// [`hand_over`]), then tells it so.
fn deliver_handed(py: Python<'_>, handed: hand_over::Handed, until: Until) {
    if let Some(err) = live::write_lines(py, handed.stream, handed.lines) {
        err.write_unraisable(py, None);
    }
    let interrupt = match until {
        Until::Stopped => deliver_in(py, handed.context.as_ref(), handed.batch),
        _ => deliver(py, handed.batch, until),
    };
    if let Some(err) = interrupt {
        err.write_unraisable(py, None);
    }
    handed.done.store(true, Ordering::SeqCst);
    drop(handed.context);
}

/// Hands `batch` to `logging` inside `context`, the `contextvars` context of
/// the call the records belong to, so that filters and adapters that read
/// context variables see the caller's values.
fn deliver_in(py: Python<'_>, context: Option<&Py<PyAny>>, batch: Batch) -> Option<PyErr> {
    let Some(context) = context else {
        return deliver(py, batch, Until::Stopped);
    };
    let slot = Arc::new(Mutex::new(Some(batch)));
    let interrupt: Arc<Mutex<Option<PyErr>>> = Arc::default();
    let (taken, out) = (Arc::clone(&slot), Arc::clone(&interrupt));
    let run = PyCFunction::new_closure(
        py,
        Some(c"pylogsink_live_delivery"),
        None,
        move |args, _| {
            let batch = lock(&taken).take();
            if let Some(batch) = batch {
                *lock(&out) = deliver(args.py(), batch, Until::Stopped);
            }
        },
    );
    let ran = run.and_then(|run| context.bind(py).call_method1("run", (run,)));
    // Where the context could not run it, the records go all the same.
    let left = lock(&slot).take();
    if let Some(batch) = left {
        let err = deliver(py, batch, Until::Stopped);
        return ran.err().or(err);
    }
    if let Err(err) = ran {
        return Some(err);
    }
    let taken = lock(&interrupt).take();
    taken
}

/// At an outermost call's entry with the `logging` destination: a copy of
/// the caller's `contextvars` context, for the records delivered live.
pub(crate) fn copy_context(py: Python<'_>) -> Option<Py<PyAny>> {
    let state = STATE.get()?;
    match state.copy_context.bind(py).call0() {
        Ok(context) => Some(context.unbind()),
        Err(err) => {
            err.write_unraisable(py, None);
            None
        }
    }
}

/// How long the exit may spend handing records to `logging`, in
/// microseconds (1 s unless the builder sets it).
static EXIT_BUDGET_MICROS: AtomicU64 = AtomicU64::new(1_000_000);

/// Sets how long the exit may spend handing records to `logging`.
pub(crate) fn set_exit_budget(budget: Duration) {
    let micros = u64::try_from(budget.as_micros()).unwrap_or(u64::MAX);
    EXIT_BUDGET_MICROS.store(micros, Ordering::Relaxed);
}

/// At exit, while the interpreter is whole and before `logging.shutdown`
/// (daemon threads still run): stops pylogsink's thread after the record
/// in hand and joins it, so that it never re-takes the GIL once
/// finalization began, then delivers what still waits, for at most the
/// exit budget in all; what is left then goes to fd 2 as text, counted.
/// A handler that spends longer than the budget on one record is the one
/// way the thread outlives the exit: then it is left to Python.
pub(crate) fn at_exit(py: Python<'_>) {
    // First, while pylogsink's thread still runs: no thread that must
    // avoid Python may wait for it from now on (see [`hand_over`]).
    let handed = hand_over::close(py);
    let budget = Duration::from_micros(EXIT_BUDGET_MICROS.load(Ordering::Relaxed));
    let deadline = Instant::now() + budget;
    if !STOP.swap(true, Ordering::AcqRel) {
        queue::wake();
        let thread = lock(&DELIVERY_THREAD).as_ref().map(|t| t.clone_ref(py));
        if let Some(thread) = thread {
            if let Err(err) = thread
                .bind(py)
                .call_method1("join", (budget.as_secs_f64(),))
            {
                err.write_unraisable(py, None);
            }
        }
    }
    for handed in handed {
        deliver_handed(py, handed, Until::Deadline(deadline));
    }
    if STATE.get().is_none() {
        return;
    }
    for batch in take_all_pending() {
        if let Some(err) = deliver(py, batch, Until::Deadline(deadline)) {
            err.write_unraisable(py, None);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logger_names_follow_the_target() {
        assert_eq!(logger_name("", "ureq::stream"), "ureq.stream");
        assert_eq!(logger_name("native", "ureq::stream"), "native.ureq.stream");
        assert_eq!(logger_name("", ""), "root");
        assert_eq!(logger_name("native", ""), "native");
        assert_eq!(logger_name("", "rt\nCRITICAL x"), "rt\\x0aCRITICAL x");
        assert_eq!(logger_name("", "\x1b[2J"), "\\x1b[2J");
    }
}
