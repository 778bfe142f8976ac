//! `pylogsink_bench`: the native half of the pylogsink benchmark
//! (`bench/run.py` drives it and explains each measurement).
//!
//! Every timed function runs a tight loop in Rust and returns the elapsed
//! nanoseconds measured with `Instant`, so that Python's own overhead stays
//! out of per-line figures. All loops run with the GIL held, as a binding's
//! body does; for the naive sink and pyo3-log that is their cheapest case
//! (taking the GIL is then only a counter increment), so the ratios
//! against them are conservative. The exceptions log without the GIL on
//! purpose: the threads of [`threads_lines`], and [`gil_busy_lines`], where
//! another Python thread keeps the GIL busy.
//!
//! Loading the module installs no `log` logger: a process has one, set
//! once, and each child of the benchmark picks its own with [`install`]
//! (pylogsink, env_logger or pyo3-log) before it measures anything. Most
//! measurements drive pylogsink through [`pylogsink::emit`] directly, which
//! needs no logger; those of the `log` front end against its peers
//! ([`peer_lines`]) and those through pyo3-log need theirs installed. The
//! filter is "info", so that the Info records of every measurement are
//! logged; the filter's own measurements change it and put it back.
//! Records go to stderr as text, except in the children that measure the
//! `logging` destination, which set it with [`set_destination`].

use pylogsink::__private_api::Record;
use pylogsink::__private_api::{format_record, now_since_epoch, Formatter, Text};
use pylogsink::{emit, Destination, Level};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyString;
use std::sync::{Barrier, LazyLock};
use std::time::{Instant, SystemTime};
use tracing_subscriber::layer::SubscriberExt as _;

/// The target and source location every benchmark record carries.
const TARGET: &str = "myruntime::backend";
const FILE: &str = file!();
const LINE: u32 = line!();

/// The filter every measurement runs with, unless it says otherwise.
const FILTER: &str = "info";

fn nanos(since: Instant) -> u64 {
    since.elapsed().as_nanos() as u64
}

/// The record every direct line of the benchmark logs.
fn info_record(message: &[u8]) -> Record<'_> {
    Record {
        level: Level::Info,
        target: TARGET,
        file: FILE,
        line: LINE,
        message,
        fields: None,
    }
}

fn record(message: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(message.len() + 64);
    // No color: fd 2 is never a terminal here.
    format_record(&mut out, SystemTime::now(), &info_record(message), false);
    out
}

/// A message that makes a record of exactly `size` bytes, newline included.
fn message_for(size: usize) -> PyResult<Vec<u8>> {
    let frame = record(b"").len();
    if size < frame {
        return Err(PyValueError::new_err(format!(
            "a record is at least {frame} bytes"
        )));
    }
    Ok(vec![b'x'; size - frame])
}

/// The bytes of one record of `size` bytes, as pylogsink formats it.
#[pyfunction]
fn record_bytes(size: usize) -> PyResult<Vec<u8>> {
    Ok(record(&message_for(size)?))
}

/// `write(2, line)` of a pre-formatted `size`-byte record, `n` times.
#[pyfunction]
fn bare_write(n: u64, size: usize) -> PyResult<u64> {
    let line = record(&message_for(size)?);
    let start = Instant::now();
    loop_bare(n, &line);
    Ok(nanos(start))
}

#[inline(never)]
fn loop_bare(n: u64, line: &[u8]) {
    for _ in 0..n {
        // SAFETY: `line` is a live slice for the whole call; the kernel
        // only reads `line.len()` bytes from it.
        let written = unsafe { libc::write(2, line.as_ptr().cast(), line.len()) };
        std::hint::black_box(written);
    }
}

/// The system calls that write a line without ever blocking, on the same
/// pre-formatted bytes as [`bare_write`], `n` times: `"nowait"` is one
/// `pwritev2(RWF_NOWAIT)` (taken by pipes, sockets, /dev/null),
/// `"lseek"` is `lseek` then `write(2)` (how a file that refuses
/// `RWF_NOWAIT` is proven not to be a pipe). The floor under a direct line
/// that must check, on every line, that it cannot block.
#[pyfunction]
fn nonblocking_write(n: u64, size: usize, how: &str) -> PyResult<u64> {
    let line = record(&message_for(size)?);
    let start = Instant::now();
    match how {
        "nowait" => loop_nowait(n, &line),
        "lseek" => loop_lseek_write(n, &line),
        _ => return Err(PyValueError::new_err(format!("unknown write {how:?}"))),
    }
    Ok(nanos(start))
}

#[inline(never)]
fn loop_nowait(n: u64, line: &[u8]) {
    let iov = libc::iovec {
        iov_base: line.as_ptr() as *mut libc::c_void,
        iov_len: line.len(),
    };
    for _ in 0..n {
        // SAFETY: `iov` points at `line`, alive for the whole loop; the
        // kernel only reads it.
        let written = unsafe { libc::pwritev2(2, &iov, 1, -1, libc::RWF_NOWAIT) };
        std::hint::black_box(written);
    }
}

#[inline(never)]
fn loop_lseek_write(n: u64, line: &[u8]) {
    for _ in 0..n {
        // SAFETY: lseek only reads fd 2's offset; `line` is a live slice
        // the kernel only reads.
        let written = unsafe {
            libc::lseek(2, 0, libc::SEEK_CUR);
            libc::write(2, line.as_ptr().cast(), line.len())
        };
        std::hint::black_box(written);
    }
}

/// The writer-thread question: what a caller pays when it hands each line
/// to a writer thread of its own, as tracing-appender's `non_blocking`
/// does, instead of writing it. The caller formats the line as pylogsink
/// does and appends it to a shared buffer under a mutex, waking the
/// writer when the buffer was empty; the writer swaps the buffer out and
/// writes it with blocking `write(2)`s. Returns the caller's loop and the
/// whole run until the writer has written the last line, in ns. A
/// prototype for the figure only: nothing in pylogsink works this way.
#[pyfunction]
fn handoff_lines(py: Python<'_>, n: u64, size: usize) -> PyResult<(u64, u64)> {
    let message = message_for(size)?;
    py.detach(|| {
        let shared = std::sync::Arc::new(Handoff::default());
        let writer = {
            let shared = std::sync::Arc::clone(&shared);
            std::thread::spawn(move || shared.write_until_done())
        };
        let start = Instant::now();
        loop_handoff(n, &message, &shared);
        let caller = nanos(start);
        shared.finish();
        writer
            .join()
            .map_err(|_| PyRuntimeError::new_err("the writer panicked"))?;
        Ok((caller, nanos(start)))
    })
}

#[derive(Default)]
struct Handoff {
    buffer: std::sync::Mutex<(Vec<u8>, bool)>,
    ready: std::sync::Condvar,
}

impl Handoff {
    fn push(&self, line: &[u8]) {
        let mut buffer = self.buffer.lock().expect("not poisoned");
        let was_empty = buffer.0.is_empty();
        buffer.0.extend_from_slice(line);
        drop(buffer);
        if was_empty {
            self.ready.notify_one();
        }
    }

    fn finish(&self) {
        self.buffer.lock().expect("not poisoned").1 = true;
        self.ready.notify_one();
    }

    fn write_until_done(&self) {
        let mut out = Vec::new();
        loop {
            let done = {
                let mut buffer = self.buffer.lock().expect("not poisoned");
                while buffer.0.is_empty() && !buffer.1 {
                    buffer = self.ready.wait(buffer).expect("not poisoned");
                }
                std::mem::swap(&mut buffer.0, &mut out);
                buffer.1 && out.is_empty()
            };
            if done {
                return;
            }
            let mut written = 0;
            while written < out.len() {
                // SAFETY: the slice is live for the call; the kernel only
                // reads it.
                let n =
                    unsafe { libc::write(2, out[written..].as_ptr().cast(), out.len() - written) };
                if n <= 0 {
                    break;
                }
                written += n as usize;
            }
            out.clear();
        }
    }
}

#[inline(never)]
fn loop_handoff(n: u64, message: &[u8], shared: &Handoff) {
    let mut formatter = Formatter::new();
    let record = info_record(message);
    for _ in 0..n {
        let (line, _) = formatter.format(now_since_epoch(), &record, Text::Bytes(message), false);
        shared.push(line);
    }
}

/// Formatting each record (as pylogsink does) and then `write(2)`: what a
/// plain blocking sink costs, to tell formatting from routing in (2).
#[pyfunction]
fn format_write(n: u64, size: usize) -> PyResult<u64> {
    let message = message_for(size)?;
    let start = Instant::now();
    loop_format_write(n, &message);
    Ok(nanos(start))
}

#[inline(never)]
fn loop_format_write(n: u64, message: &[u8]) {
    // pylogsink's own formatter, with its cache of the record's head.
    let mut formatter = Formatter::new();
    let record = info_record(message);
    for _ in 0..n {
        let (line, _) = formatter.format(now_since_epoch(), &record, Text::Bytes(message), false);
        loop_bare(1, line);
    }
}

#[inline(never)]
fn loop_emit(n: u64, level: Level, target: &str, message: &[u8]) {
    for _ in 0..n {
        emit(level, target, FILE, LINE, message);
    }
}

/// `n` records of `size` bytes through `pylogsink::emit`, inside one
/// `pylogsink::call`; only the loop is timed, not the call's entry and
/// return. With `sys.stderr is sys.__stderr__` each line goes to fd 2.
#[pyfunction]
fn direct_lines(py: Python<'_>, n: u64, size: usize) -> PyResult<u64> {
    let message = message_for(size)?;
    pylogsink::call(py, || {
        let start = Instant::now();
        loop_emit(n, Level::Info, TARGET, &message);
        Ok(nanos(start))
    })
}

/// The subscribers a tracing event goes through: the registry with
/// pylogsink's layer, or with tracing-subscriber's fmt layer writing to
/// stderr (no color: fd 2 is never a terminal here).
static TRACING: LazyLock<[tracing::Dispatch; 2]> = LazyLock::new(|| {
    let pylogsink = tracing_subscriber::registry().with(pylogsink::tracing::layer());
    let fmt = tracing_subscriber::registry().with(
        tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_ansi(false),
    );
    [
        tracing::Dispatch::new(pylogsink),
        tracing::Dispatch::new(fmt),
    ]
});

/// The two fields every benchmark event carries, as pylogsink writes them.
const TRACING_FIELDS: &str = " rows=42 path=model.pte";

/// `n` tracing events at Info with two fields (`rows=42`,
/// `path="model.pte"`) and a message that makes pylogsink's record `size`
/// bytes, through `which` ("pylogsink": its layer, inside one call; "fmt":
/// tracing-subscriber's fmt layer), each a subscriber of its own, set as
/// the thread's default for the loop.
#[pyfunction]
fn tracing_lines(py: Python<'_>, n: u64, size: usize, which: &str) -> PyResult<u64> {
    let message = message_for(size)?;
    let message = String::from_utf8(message[TRACING_FIELDS.len()..].to_vec()).expect("ASCII");
    let dispatch = match which {
        "pylogsink" => &TRACING[0],
        "fmt" => &TRACING[1],
        _ => return Err(PyValueError::new_err(format!("unknown layer {which:?}"))),
    };
    pylogsink::call(py, || {
        Ok(tracing::dispatcher::with_default(dispatch, || {
            let start = Instant::now();
            loop_tracing(n, &message);
            nanos(start)
        }))
    })
}

#[inline(never)]
fn loop_tracing(n: u64, message: &str) {
    for _ in 0..n {
        tracing::info!(target: "myruntime::backend", rows = 42, path = "model.pte", "{message}");
    }
}

/// The message of a record that `log::error!` makes in this module (target
/// `module_path!()`, this file, a three-digit line: see
/// [`loop_log_pylogsink`]) whose line, as pylogsink writes it, is exactly
/// `size` bytes, newline included; and that line.
fn log_message_for(size: usize) -> PyResult<(String, Vec<u8>)> {
    let line = |message: &[u8]| {
        let mut out = Vec::with_capacity(message.len() + 64);
        let record = Record {
            level: Level::Error,
            target: module_path!(),
            file: FILE,
            line: 100,
            message,
            fields: None,
        };
        format_record(&mut out, SystemTime::now(), &record, false);
        out
    };
    let frame = line(b"").len();
    if size < frame {
        return Err(PyValueError::new_err(format!(
            "a record is at least {frame} bytes"
        )));
    }
    let message = "x".repeat(size - frame);
    let bytes = line(message.as_bytes());
    Ok((message, bytes))
}

/// Installs the process's `log` logger, once, before anything is measured:
/// `which` is "pylogsink" (its builder, with the filter [`FILTER`], no
/// color, no `tracing` subscriber), "env_logger" (its default format, with
/// the timestamp, level and target, at Info, to stderr, no color) or
/// "pyo3-log" (to Python's `logging`).
#[pyfunction]
fn install(which: &str) -> PyResult<()> {
    let failed = |e: &dyn std::fmt::Display| PyRuntimeError::new_err(format!("{which}: {e}"));
    match which {
        "pylogsink" => {
            pylogsink::Builder::new()
                .default_filter(FILTER)
                .color(pylogsink::ColorChoice::Never)
                .tracing_subscriber(false)
                .init()
                .map_err(|e| failed(&e))?;
            // Whatever the environment says: the benchmark's filter.
            set_filter(FILTER)
        }
        "env_logger" => env_logger::Builder::new()
            .filter_level(log::LevelFilter::Info)
            .write_style(env_logger::WriteStyle::Never)
            .target(env_logger::Target::Stderr)
            .try_init()
            .map_err(|e| failed(&e)),
        "pyo3-log" => pyo3_log::try_init().map(drop).map_err(|e| failed(&e)),
        _ => Err(PyValueError::new_err(format!("unknown logger {which:?}"))),
    }
}

/// `n` lines of a message that makes pylogsink's `log::error!` line `size`
/// bytes, through `which`, each timed over the loop only:
///
/// - "pylogsink": `log::error!("{}", message)` with pylogsink as the `log`
///   logger ([`install`] first), inside one `pylogsink::call` (with
///   `sys.stderr is sys.__stderr__`, each line goes to fd 2 at once);
/// - "env_logger": the same macro, with env_logger as the logger;
/// - "fmt": `tracing::error!("{}", message)` through tracing-subscriber's
///   fmt layer (the dispatcher of [`TRACING`]), set as the thread's default;
/// - "bare": `write(2)` of pylogsink's line, formatted beforehand.
#[pyfunction]
fn peer_lines(py: Python<'_>, n: u64, size: usize, which: &str) -> PyResult<u64> {
    let (message, line) = log_message_for(size)?;
    match which {
        "pylogsink" => {
            let before = pylogsink::stats().emitted;
            let ns = pylogsink::call(py, || {
                let start = Instant::now();
                loop_log_pylogsink(n, &message);
                Ok(nanos(start))
            })?;
            // Another logger, or none, would be measured instead.
            let emitted = pylogsink::stats().emitted - before;
            if emitted != n {
                return Err(PyRuntimeError::new_err(format!(
                    "pylogsink logged {emitted} of {n} records: is it the log logger?"
                )));
            }
            Ok(ns)
        }
        "env_logger" => {
            let start = Instant::now();
            loop_log_env_logger(n, &message);
            Ok(nanos(start))
        }
        "fmt" => Ok(tracing::dispatcher::with_default(&TRACING[1], || {
            let start = Instant::now();
            loop_tracing_fmt(n, &message);
            nanos(start)
        })),
        "bare" => {
            let start = Instant::now();
            loop_bare(n, &line);
            Ok(nanos(start))
        }
        _ => Err(PyValueError::new_err(format!(
            "unknown contender {which:?}"
        ))),
    }
}

#[inline(never)]
fn loop_log_pylogsink(n: u64, message: &str) {
    // `log_message_for` counts a line number of three digits (run.py
    // checks the bytes written on a regular file).
    for _ in 0..n {
        log::error!("{}", message);
    }
}

#[inline(never)]
fn loop_log_env_logger(n: u64, message: &str) {
    for _ in 0..n {
        log::error!("{}", message);
    }
}

#[inline(never)]
fn loop_tracing_fmt(n: u64, message: &str) {
    for _ in 0..n {
        tracing::error!("{}", message);
    }
}

/// `pylogsink::set_filter`, its error as Python's.
fn set_filter(spec: &str) -> PyResult<()> {
    pylogsink::set_filter(spec).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// `n` records of `size` bytes at `level` from `target` through
/// `pylogsink::emit`, inside one `pylogsink::call` as [`direct_lines`],
/// with the filter `spec` in force; [`FILTER`] is put back afterwards.
/// Returns the nanoseconds of the loop and how many records were logged,
/// so that the caller can check that the filter did what was meant.
#[pyfunction]
fn filtered_lines(
    py: Python<'_>,
    n: u64,
    size: usize,
    spec: &str,
    level: &str,
    target: &str,
) -> PyResult<(u64, u64)> {
    let level = Level::parse(level)
        .ok_or_else(|| PyValueError::new_err(format!("unknown level {level:?}")))?;
    let message = message_for(size)?;
    set_filter(spec)?;
    let before = pylogsink::stats().emitted;
    let ns = pylogsink::call(py, || {
        let start = Instant::now();
        loop_emit(n, level, target, &message);
        Ok(nanos(start))
    });
    let logged = pylogsink::stats().emitted - before;
    set_filter(FILTER)?;
    Ok((ns?, logged))
}

/// `pylogsink::set_destination` by name: "stderr" or "logging".
#[pyfunction]
fn set_destination(name: &str) -> PyResult<()> {
    let destination = Destination::parse(name)
        .ok_or_else(|| PyValueError::new_err(format!("unknown destination {name:?}")))?;
    pylogsink::set_destination(destination);
    Ok(())
}

/// `calls` calls of `per_call` Info records of `message` each, through
/// `pylogsink::emit` inside `pylogsink::call`: with the `logging`
/// destination, each call hands its records to `logging` at its return.
/// Times the whole calls, entry and return (the delivery) included.
#[pyfunction]
fn logging_calls(py: Python<'_>, calls: u64, per_call: u64, message: &str) -> PyResult<u64> {
    let start = Instant::now();
    for _ in 0..calls {
        pylogsink::call(py, || {
            loop_emit(per_call, Level::Info, TARGET, message.as_bytes());
            Ok(())
        })?;
    }
    Ok(nanos(start))
}

/// `n` records of `size` bytes in one call with `sys.stderr` replaced, so
/// they are kept. Returns the nanoseconds of the emit loop and of the
/// call's return, which writes the kept lines through `sys.stderr.write`.
#[pyfunction]
fn kept_lines(py: Python<'_>, n: u64, size: usize) -> PyResult<(u64, u64)> {
    let message = message_for(size)?;
    let start = Instant::now();
    let mut emitted = 0;
    pylogsink::call(py, || {
        loop_emit(n, Level::Info, TARGET, &message);
        emitted = nanos(start);
        Ok(())
    })?;
    Ok((emitted, nanos(start) - emitted))
}

/// The same as [`kept_lines`] through `log::warn!("{}", message)`: the
/// `log` front end with a format argument. pylogsink must be the `log`
/// logger (`install("pylogsink")`).
#[pyfunction]
fn kept_log_lines(py: Python<'_>, n: u64, size: usize) -> PyResult<(u64, u64)> {
    let (message, _) = log_message_for(size)?;
    let before = pylogsink::stats().emitted;
    let start = Instant::now();
    let mut emitted = 0;
    pylogsink::call(py, || {
        loop_log_kept(n, &message);
        emitted = nanos(start);
        Ok(())
    })?;
    let total = nanos(start);
    if pylogsink::stats().emitted - before != n {
        return Err(PyRuntimeError::new_err("pylogsink is not the log logger"));
    }
    Ok((emitted, total - emitted))
}

#[inline(never)]
fn loop_log_kept(n: u64, message: &str) {
    for _ in 0..n {
        log::warn!("{}", message);
    }
}

/// One `sys.stderr.write` of `text` from native code (making the `str`
/// included): what writing a call's kept lines costs at the least.
#[pyfunction]
fn python_write_once(py: Python<'_>, text: &[u8]) -> PyResult<u64> {
    let start = Instant::now();
    let text = std::str::from_utf8(text).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let text = PyString::new(py, text);
    py.import("sys")?
        .getattr("stderr")?
        .call_method1("write", (text,))?;
    Ok(nanos(start))
}

/// A binding that does nothing.
#[pyfunction]
fn noop() {}

/// The same binding, wrapped in `pylogsink::call`.
#[pyfunction]
fn noop_call(py: Python<'_>) -> PyResult<()> {
    pylogsink::call(py, || Ok(()))
}

/// What `pylogsink::flush` and `pylogsink::flush_lines` cost with nothing
/// waiting, inside a call: nanoseconds per flush, per `flush_lines` and
/// per turn of an empty loop, each over `n` turns, measured in one run.
#[pyfunction]
fn flush_cost(py: Python<'_>, n: u32) -> PyResult<(f64, f64, f64)> {
    pylogsink::call(py, || {
        let started = std::time::Instant::now();
        for _ in 0..n {
            pylogsink::flush(py)?;
        }
        let flushes = started.elapsed();
        let started = std::time::Instant::now();
        for _ in 0..n {
            pylogsink::flush_lines();
        }
        let flush_lines = started.elapsed();
        let started = std::time::Instant::now();
        for i in 0..n {
            std::hint::black_box(i);
        }
        let empty = started.elapsed();
        let per = |d: std::time::Duration| d.as_nanos() as f64 / f64::from(n.max(1));
        Ok((per(flushes), per(flush_lines), per(empty)))
    })
}

/// How pylogsink's call entry learns whether `sys.stderr` was replaced:
/// "dict watcher" or "lookup".
#[pyfunction]
fn stderr_check(py: Python<'_>) -> &'static str {
    pylogsink::__private_api::stderr_check(py)
}

/// One call that logs `lines` records of `size` bytes (for the memory run).
#[pyfunction]
fn log_call(py: Python<'_>, lines: u32, size: usize) -> PyResult<()> {
    let message = message_for(size)?;
    pylogsink::call(py, || {
        loop_emit(u64::from(lines), Level::Info, TARGET, &message);
        Ok(())
    })
}

/// The naive sink: each record through `sys.stderr.write`, with the GIL.
#[pyfunction]
fn naive_lines(n: u64, size: usize) -> PyResult<u64> {
    let message = message_for(size)?;
    let start = Instant::now();
    for _ in 0..n {
        let text = String::from_utf8_lossy(&record(&message)).into_owned();
        Python::attach(|py| -> PyResult<()> {
            py.import("sys")?
                .getattr("stderr")?
                .call_method1("write", (text,))?;
            Ok(())
        })?;
    }
    Ok(nanos(start))
}

/// `n` lines through `log::info!` to pyo3-log (installed by
/// `install("pyo3-log")`; Python's `logging` is set up by the caller); `message` is the text of each line, and the target
/// the same as pylogsink's records (pyo3-log's logger `myruntime.backend`).
#[pyfunction]
fn pyo3log_lines(n: u64, message: &str) -> u64 {
    let start = Instant::now();
    for _ in 0..n {
        log::info!(target: TARGET, "{message}");
    }
    nanos(start)
}

/// `n` Info records of `message` logged without the GIL, for (14), where
/// a Python thread keeps the GIL busy; times the logging loop only.
/// `which` is:
///
/// - "outside": a native thread of its own, outside any call, through
///   `pylogsink::emit` (with the `logging` destination, each record waits
///   in the process-wide queue for pylogsink's delivery thread);
/// - "in_call": the calling thread, inside `pylogsink::call` with the GIL
///   released (`py.detach`), through `pylogsink::emit` (records wait in
///   the call, handed over while it runs by the delivery thread, the rest
///   at its return, which is not timed);
/// - "pyo3-log": a native thread of its own through `log::info!`, which
///   pyo3-log hands to `logging` at once, taking the GIL for each record.
#[pyfunction]
fn gil_busy_lines(py: Python<'_>, n: u64, message: &str, which: &str) -> PyResult<u64> {
    let on_thread = |body: fn(u64, &str)| {
        py.detach(|| {
            std::thread::scope(|s| {
                s.spawn(|| {
                    let start = Instant::now();
                    body(n, message);
                    nanos(start)
                })
                .join()
                .expect("no panic")
            })
        })
    };
    match which {
        "outside" => Ok(on_thread(|n, message| {
            loop_emit(n, Level::Info, TARGET, message.as_bytes())
        })),
        "in_call" => pylogsink::call(py, || {
            Ok(py.detach(|| {
                let start = Instant::now();
                loop_emit(n, Level::Info, TARGET, message.as_bytes());
                nanos(start)
            }))
        }),
        "pyo3-log" => Ok(on_thread(|n, message| {
            for _ in 0..n {
                log::info!(target: TARGET, "{message}");
            }
        })),
        _ => Err(PyValueError::new_err(format!("unknown rival {which:?}"))),
    }
}

/// `threads` native threads log `n` records of `size` bytes each at once.
/// `sink` is `"pylogsink"` (each thread inside its own `pylogsink::call`,
/// the GIL released while it logs) or `"fd2"` (format, then a blocking
/// `write(2)`). Each message is `tNN SSSSSSSSS x..`: thread and sequence
/// number, which [`drain`] checks. Returns the nanoseconds from the common
/// start to the end of the last thread's loop.
#[pyfunction]
fn threads_lines(py: Python<'_>, threads: usize, n: u64, size: usize, sink: &str) -> PyResult<u64> {
    let template = message_for(size)?;
    if template.len() < 14 || threads > 100 {
        return Err(PyValueError::new_err("lines too short or too many threads"));
    }
    let fd2 = match sink {
        "pylogsink" => false,
        "fd2" => true,
        _ => return Err(PyValueError::new_err("sink is pylogsink or fd2")),
    };
    let barrier = Barrier::new(threads + 1);
    let run = |tid: usize| {
        let mut message = template.clone();
        message[..4].copy_from_slice(format!("t{tid:02} ").as_bytes());
        message[13] = b' ';
        let mut body = || {
            barrier.wait();
            for seq in 0..n {
                put_digits(&mut message[4..13], seq);
                if fd2 {
                    loop_bare(1, &record(&message));
                } else {
                    emit(Level::Info, TARGET, FILE, LINE, &message);
                }
            }
            Instant::now()
        };
        if fd2 {
            return body();
        }
        Python::attach(|py| pylogsink::call(py, || Ok(py.detach(body))))
            .expect("a call whose body cannot fail fails only on Ctrl-C")
    };
    py.detach(|| {
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads).map(|tid| s.spawn(move || run(tid))).collect();
            barrier.wait();
            let start = Instant::now();
            let ends = handles.into_iter().map(|h| h.join().expect("no panic"));
            let last = ends.max().unwrap_or(start);
            Ok(last.duration_since(start).as_nanos() as u64)
        })
    })
}

/// Writes `n` in decimal into `digits`, zero-padded (and cut) to its length.
fn put_digits(digits: &mut [u8], mut n: u64) {
    for d in digits.iter_mut().rev() {
        *d = b'0' + (n % 10) as u8;
        n /= 10;
    }
}

/// What [`drain`] found in a pipe.
#[pyclass(get_all, frozen)]
struct Drained {
    bytes: u64,
    lines: u64,
    /// Lines not of the expected length or shape (a torn or mixed line).
    bad: u64,
    /// Lines whose sequence number was not the next of their thread.
    out_of_order: u64,
    /// Well-formed lines seen per thread.
    per_thread: Vec<u64>,
}

/// Reads the pipe `fd` to its end with the GIL released. With `line_len`
/// set, checks that every line is a record of exactly that many bytes whose
/// message starts `tNN SSSSSSSSS ` (see [`threads_lines`]), in order per
/// thread.
///
/// It reads in batches: the pipe grows to 1 MiB and the reader pauses
/// `pause_us` after each read, so that it is never the bottleneck and a
/// writer does not pay for waking it at every line (a reader that waits in
/// `read` is woken by each write and then drains one line per system call,
/// slower than the writer: the figures would then measure the reader).
#[pyfunction]
#[pyo3(signature = (fd, line_len=None, pause_us=100))]
fn drain(py: Python<'_>, fd: i32, line_len: Option<usize>, pause_us: u64) -> PyResult<Drained> {
    // SAFETY: F_SETPIPE_SZ takes an int and changes only the pipe's
    // capacity; on anything but a pipe it fails, which is fine.
    unsafe { libc::fcntl(fd, libc::F_SETPIPE_SZ, 1 << 20) };
    let pause = std::time::Duration::from_micros(pause_us);
    py.detach(|| {
        let mut out = Drained {
            bytes: 0,
            lines: 0,
            bad: 0,
            out_of_order: 0,
            per_thread: vec![0; 100],
        };
        let mut next = vec![0u64; 100];
        let mut buf = vec![0u8; 1 << 20];
        let mut held = 0;
        loop {
            // SAFETY: `buf[held..]` is valid for writes of its length.
            let n = unsafe { libc::read(fd, buf[held..].as_mut_ptr().cast(), buf.len() - held) };
            if n < 0 {
                let err = std::io::Error::last_os_error();
                if err.kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(err.into());
            }
            if n == 0 {
                break;
            }
            out.bytes += n as u64;
            std::thread::sleep(pause);
            let end = held + n as usize;
            let mut at = 0;
            while let Some(nl) = buf[at..end].iter().position(|&b| b == b'\n') {
                let line = &buf[at..at + nl + 1];
                out.lines += 1;
                if let Some(len) = line_len {
                    check_line(line, len, &mut out, &mut next);
                }
                at += nl + 1;
            }
            buf.copy_within(at..end, 0);
            held = end - at;
            if held == buf.len() {
                // A "line" of 1 MiB: count it as bad and go on.
                out.bad += 1;
                held = 0;
            }
        }
        if held > 0 {
            out.bad += 1;
        }
        Ok(out)
    })
}

fn check_line(line: &[u8], len: usize, out: &mut Drained, next: &mut [u64]) {
    let parsed = (line.len() == len && line[0] == b'[')
        .then(|| line.windows(3).position(|w| w == b"] t"))
        .flatten()
        .and_then(|at| std::str::from_utf8(line.get(at + 3..at + 15)?).ok())
        .and_then(|ids| {
            Some((
                ids[..2].parse::<usize>().ok()?,
                ids[3..].parse::<u64>().ok()?,
            ))
        });
    match parsed {
        Some((tid, seq)) if tid < next.len() => {
            out.per_thread[tid] += 1;
            if seq != next[tid] {
                out.out_of_order += 1;
            }
            next[tid] = seq + 1;
        }
        _ => out.bad += 1,
    }
}

/// `pylogsink::stats()` as `(emitted, left_out, failed_bytes)`.
#[pyfunction]
fn stats() -> (u64, u64, u64) {
    let s = pylogsink::stats();
    (s.emitted, s.left_out, s.failed_bytes)
}

/// The module: sets pylogsink's filter to [`FILTER`] (the default, "warn",
/// would drop the benchmark's Info records). It installs no `log` logger:
/// each child calls [`install`] with the one it measures.
#[pymodule]
fn pylogsink_bench(m: &Bound<'_, PyModule>) -> PyResult<()> {
    set_filter(FILTER)?;
    m.add_function(wrap_pyfunction!(install, m)?)?;
    m.add_function(wrap_pyfunction!(flush_cost, m)?)?;
    m.add_function(wrap_pyfunction!(peer_lines, m)?)?;
    m.add_function(wrap_pyfunction!(record_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(bare_write, m)?)?;
    m.add_function(wrap_pyfunction!(nonblocking_write, m)?)?;
    m.add_function(wrap_pyfunction!(format_write, m)?)?;
    m.add_function(wrap_pyfunction!(direct_lines, m)?)?;
    m.add_function(wrap_pyfunction!(tracing_lines, m)?)?;
    m.add_function(wrap_pyfunction!(filtered_lines, m)?)?;
    m.add_function(wrap_pyfunction!(set_destination, m)?)?;
    m.add_function(wrap_pyfunction!(logging_calls, m)?)?;
    m.add_function(wrap_pyfunction!(handoff_lines, m)?)?;
    m.add_function(wrap_pyfunction!(kept_lines, m)?)?;
    m.add_function(wrap_pyfunction!(kept_log_lines, m)?)?;
    m.add_function(wrap_pyfunction!(python_write_once, m)?)?;
    m.add_function(wrap_pyfunction!(noop, m)?)?;
    m.add_function(wrap_pyfunction!(noop_call, m)?)?;
    m.add_function(wrap_pyfunction!(stderr_check, m)?)?;
    m.add_function(wrap_pyfunction!(log_call, m)?)?;
    m.add_function(wrap_pyfunction!(naive_lines, m)?)?;
    m.add_function(wrap_pyfunction!(pyo3log_lines, m)?)?;
    m.add_function(wrap_pyfunction!(gil_busy_lines, m)?)?;
    m.add_function(wrap_pyfunction!(threads_lines, m)?)?;
    m.add_function(wrap_pyfunction!(drain, m)?)?;
    m.add_function(wrap_pyfunction!(stats, m)?)?;
    m.add_class::<Drained>()
}
