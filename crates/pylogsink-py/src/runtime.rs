//! A small native runtime that behaves like an ML runtime's bindings.
//!
//! Its backend holds one mutex across `init` and `execute`, and a failed
//! backend init logs an Error while holding it, as ExecuTorch's XNNPACK
//! backend does when a load fails. With the naive sink that is the
//! two-thread deadlock: the logging thread hands the GIL away inside
//! `sys.stderr.write`, the other thread takes it and waits for the mutex.

use crate::naive;
use pylogsink::Level;
use pyo3::exceptions::{PyIndexError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Mutex;
use std::thread::JoinHandle;
use std::time::Duration;

/// The backend's own lock, held across init and execute.
static BACKEND: Mutex<u64> = Mutex::new(0);

/// The sinks the demo can log through, by name.
const SINKS: [&str; 3] = ["pylogsink", "naive", "fd2"];

/// Index into [`SINKS`] of the sink in use.
static SINK: AtomicU8 = AtomicU8::new(0);

/// The target the runtime's records name.
const TARGET: &str = module_path!();

/// Logs one line through the sink chosen with `set_sink`.
fn rt_log(level: Level, file: &'static str, line: u32, message: &[u8]) {
    let sink = SINKS[usize::from(SINK.load(Ordering::Relaxed))];
    let record = pylogsink::__private_api::Record {
        level,
        target: TARGET,
        file,
        line,
        message,
        fields: None,
    };
    if sink == "naive" {
        naive::emit(&record);
    } else if sink == "fd2" {
        naive::emit_fd2(&record);
    } else if let (Ok(text), false) = (std::str::from_utf8(message), level == Level::Fatal) {
        // Through the `log` crate, as an extension's own code would.
        log::logger().log(
            &log::Record::builder()
                .level(level.to_log())
                .target(TARGET)
                .file(Some(file))
                .line(Some(line))
                .args(format_args!("{text}"))
                .build(),
        );
    } else {
        // Raw bytes and Fatal lines, which `log` cannot carry.
        pylogsink::emit(level, TARGET, file, line, message);
    }
}

macro_rules! rt_log {
    ($level:expr, $($arg:tt)+) => {
        rt_log($level, file!(), line!(), format!($($arg)+).as_bytes())
    };
}

fn parse_level(name: &str) -> PyResult<Level> {
    Level::parse(name).ok_or_else(|| {
        PyValueError::new_err(format!(
            "unknown level {name:?}: expected debug, info, warn, error or fatal"
        ))
    })
}

/// Chooses the sink: "pylogsink" (the default), "naive" (each line through
/// `sys.stderr.write` with the GIL) or "fd2" (a blocking `write(2)` to fd 2).
#[pyfunction]
fn set_sink(name: &str) -> PyResult<()> {
    let index = SINKS.iter().position(|&s| s == name).ok_or_else(|| {
        PyValueError::new_err(format!("unknown sink {name:?}: expected one of {SINKS:?}"))
    })?;
    SINK.store(index as u8, Ordering::Relaxed);
    Ok(())
}

/// The sink in use.
#[pyfunction]
fn sink() -> &'static str {
    SINKS[usize::from(SINK.load(Ordering::Relaxed))]
}

/// The backend's init: fails, and logs why while it holds the lock.
fn backend_init(held: &mut u64) -> Result<(), String> {
    *held += 1;
    rt_log!(Level::Info, "XNNPACK backend: init #{held}");
    // Creating a workspace takes a while; the lock is held all along.
    std::thread::sleep(Duration::from_micros(200));
    rt_log!(
        Level::Error,
        "XNNPACK backend: failed to create workspace (init #{held})"
    );
    Err("backend init failed".to_string())
}

fn load(py: Python<'_>, release_gil: bool) -> PyResult<()> {
    pylogsink::call(py, || {
        let init = || {
            let mut held = BACKEND.lock().unwrap_or_else(|e| e.into_inner());
            backend_init(&mut held)
        };
        let result = if release_gil { py.detach(init) } else { init() };
        result.map_err(|e| PyRuntimeError::new_err(format!("load_method: {e}")))
    })
}

/// Loads a method whose backend init fails: logs an Error while holding the
/// backend lock, with the GIL held for the whole call, then raises
/// RuntimeError.
#[pyfunction]
fn load_method(py: Python<'_>) -> PyResult<()> {
    load(py, false)
}

/// Like `load_method`, but releases the GIL before taking the backend lock.
#[pyfunction]
fn load_method_detached(py: Python<'_>) -> PyResult<()> {
    load(py, true)
}

/// Runs the method: takes the backend lock with the GIL held.
#[pyfunction]
fn execute(py: Python<'_>) -> PyResult<u64> {
    pylogsink::call(py, || {
        let held = BACKEND.lock().unwrap_or_else(|e| e.into_inner());
        Ok(*held)
    })
}

/// Logs `count` lines of `size` bytes (newline included) at `level`
/// within one call; with `detach`, from a part of the call that released
/// the GIL. Returns the number of bytes logged.
#[pyfunction]
#[pyo3(signature = (count, level = "info", size = 100, detach = false))]
fn log_lines(
    py: Python<'_>,
    count: usize,
    level: &str,
    size: usize,
    detach: bool,
) -> PyResult<usize> {
    let level = parse_level(level)?;
    pylogsink::call(py, || {
        let body = || log_numbered(level, count, size);
        Ok(if detach { py.detach(body) } else { body() })
    })
}

fn log_numbered(level: Level, count: usize, size: usize) -> usize {
    let (file, line) = (file!(), line!());
    let mut empty = Vec::new();
    let record = pylogsink::__private_api::Record {
        level,
        target: TARGET,
        file,
        line,
        message: b"",
        fields: None,
    };
    pylogsink::__private_api::format_record(
        &mut empty,
        std::time::SystemTime::now(),
        &record,
        false,
    );
    let mut total = 0;
    for i in 0..count {
        let mut message = format!("line {i:07} of {count}");
        while message.len() + empty.len() < size {
            message.push('.');
        }
        total += message.len() + empty.len();
        rt_log(level, file, line, message.as_bytes());
    }
    total
}

/// Logs one message of raw bytes, which need not be UTF-8.
#[pyfunction]
#[pyo3(signature = (message, level = "info"))]
fn log_raw(py: Python<'_>, message: &[u8], level: &str) -> PyResult<()> {
    let level = parse_level(level)?;
    pylogsink::call(py, || {
        rt_log(level, file!(), line!(), message);
        Ok(())
    })
}

/// Logs `count` lines, then holds the GIL and sleeps `seconds`: a call that
/// hangs after logging.
#[pyfunction]
fn log_then_hang(py: Python<'_>, count: usize, seconds: f64) -> PyResult<()> {
    pylogsink::call(py, || {
        for i in 0..count {
            rt_log!(Level::Warn, "about to hang: line {i}");
        }
        std::thread::sleep(Duration::from_secs_f64(seconds));
        Ok(())
    })
}

/// Logs `count` lines ("slow line N"), `interval` seconds apart, in one
/// call that releases the GIL meanwhile (with `detach`) or holds it: a
/// long call, a training loop or a load. With the GIL held, `flush` picks
/// what follows each line: `"raise"`, `pylogsink::flush` (a Ctrl-C stops
/// the loop there); `"lines"`, `pylogsink::flush_lines` from a helper
/// with no `py` (the loop runs on, a Ctrl-C is raised at the return);
/// `None`, nothing (the lines come at the return). With the GIL released,
/// `"lines"` calls `flush_lines` all the same, which does nothing there.
#[pyfunction]
#[pyo3(signature = (count, interval, detach = true, flush = None))]
fn log_slowly(
    py: Python<'_>,
    count: usize,
    interval: f64,
    detach: bool,
    flush: Option<&str>,
) -> PyResult<()> {
    let step = |i: usize| {
        rt_log!(Level::Info, "slow line {i}");
        std::thread::sleep(Duration::from_secs_f64(interval));
    };
    pylogsink::call(py, || {
        match (detach, flush) {
            (true, Some("lines")) => {
                py.detach(|| (0..count).for_each(|i| step_with_flush_lines(i, &step)))
            }
            (true, _) => py.detach(|| (0..count).for_each(step)),
            (false, Some("raise")) => {
                for i in 0..count {
                    step(i);
                    pylogsink::flush(py)?;
                }
            }
            (false, Some("lines")) => (0..count).for_each(|i| step_with_flush_lines(i, &step)),
            (false, None) => (0..count).for_each(step),
            (false, Some(other)) => {
                return Err(PyValueError::new_err(format!(
                    "flush must be None, \"raise\" or \"lines\", not {other:?}"
                )))
            }
        }
        Ok(())
    })
}

/// One step of a loop that knows nothing of Python: no `py` in scope.
fn step_with_flush_lines(i: usize, step: &impl Fn(usize)) {
    step(i);
    pylogsink::flush_lines();
}

/// Logs `count` lines, then releases the GIL and blocks for good inside
/// the call: a thread that is still in a call when the process exits.
#[pyfunction]
fn log_then_block(py: Python<'_>, count: usize) -> PyResult<()> {
    pylogsink::call(py, || {
        for i in 0..count {
            rt_log!(Level::Warn, "blocked for good after line {i}");
        }
        py.detach(|| loop {
            std::thread::park();
        })
    })
}

/// Fans one call out to `workers` native threads that each log `lines`
/// lines ("worker W line N"), attached to the call unless `attach` is
/// false. With `under_backend`, each worker holds the backend lock while
/// it logs, as a pool of backend threads does. The GIL is released while
/// the workers run; the call then sleeps `hang` seconds before it returns.
#[pyfunction]
#[pyo3(signature = (workers = 4, lines = 100, attach = true, under_backend = false, hang = 0.0))]
fn fan_out(
    py: Python<'_>,
    workers: usize,
    lines: usize,
    attach: bool,
    under_backend: bool,
    hang: f64,
) -> PyResult<()> {
    pylogsink::call(py, || {
        let call = pylogsink::Call::current().filter(|_| attach);
        py.detach(|| {
            std::thread::scope(|scope| {
                for worker in 0..workers {
                    let call = call.clone();
                    scope.spawn(move || {
                        let work = || {
                            for line in 0..lines {
                                let _held = under_backend
                                    .then(|| BACKEND.lock().unwrap_or_else(|e| e.into_inner()));
                                rt_log!(Level::Info, "worker {worker} line {line}");
                            }
                        };
                        match call {
                            Some(call) => call.attach(work),
                            None => work(),
                        }
                    });
                }
            });
            std::thread::sleep(Duration::from_secs_f64(hang));
        });
        Ok(())
    })
}

/// Hands the call to a native thread that, still attached to it, logs
/// `count` lines ("late line N") `delay` seconds after the call returned.
#[pyfunction]
fn outlive_call(py: Python<'_>, count: usize, delay: f64) -> PyResult<BackgroundLogger> {
    pylogsink::call(py, || {
        let call = pylogsink::Call::current().expect("inside a call");
        let handle = std::thread::spawn(move || {
            call.attach(|| {
                std::thread::sleep(Duration::from_secs_f64(delay));
                for i in 0..count {
                    rt_log!(Level::Info, "late line {i}");
                }
            })
        });
        Ok(BackgroundLogger {
            handle: Some(handle),
        })
    })
}

/// Logs three lines in a call, then crashes the process: "segv" raises
/// SIGSEGV (what a null pointer does; on Windows, an access violation),
/// "abort" calls `abort()` (what a vendor library's failed check or
/// `std::terminate` does). No Fatal line is logged: the crash handler alone
/// can save the lines.
#[pyfunction]
fn crash(py: Python<'_>, kind: &str) -> PyResult<()> {
    let signal = match kind {
        "segv" => libc::SIGSEGV,
        "abort" => libc::SIGABRT,
        _ => {
            return Err(PyValueError::new_err(format!(
                "unknown crash {kind:?}: expected \"segv\" or \"abort\""
            )))
        }
    };
    pylogsink::call(py, || {
        for i in 0..3 {
            rt_log!(Level::Error, "before the crash: line {i}");
        }
        if signal == libc::SIGABRT {
            c_abort();
        }
        segfault();
        Ok(())
    })
}

/// `abort()` as a C or C++ library calls it: the C runtime's, which raises
/// SIGABRT. On Windows, Rust's `std::process::abort` is a `__fastfail`,
/// which ends the process before any handler runs.
fn c_abort() -> ! {
    #[cfg(windows)]
    // SAFETY: abort() ends the process; the crash is what the caller is for.
    unsafe {
        libc::abort()
    }
    #[cfg(not(windows))]
    std::process::abort()
}

/// What a null pointer does: SIGSEGV; on Windows, an access violation (a
/// write to an address in the first page, which is never mapped).
fn segfault() {
    #[cfg(windows)]
    // SAFETY: none: the access violation is what the caller is for.
    unsafe {
        std::ptr::write_volatile(std::hint::black_box(8usize) as *mut u8, 0)
    };
    #[cfg(not(windows))]
    // SAFETY: raise only sends a signal to this thread; what follows is
    // the crash the caller exists to cause.
    unsafe {
        libc::raise(libc::SIGSEGV)
    };
}

/// Logs "outer 1", calls `callback` (which may call back into this
/// module), logs "outer 2" from a GIL-released part, then "outer 3": every
/// line belongs to this one outermost call.
#[pyfunction]
fn with_callback(py: Python<'_>, callback: Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    pylogsink::call(py, || {
        rt_log!(Level::Info, "outer 1");
        let result = pylogsink::call(py, || callback.call0())?;
        py.detach(|| rt_log!(Level::Info, "outer 2"));
        rt_log!(Level::Info, "outer 3");
        Ok(result.unbind())
    })
}

/// Logs an Error, then a Fatal line, then aborts the process, all within
/// one call (or, with `on_native_thread`, on a native thread outside any
/// call): what a runtime does when its debug buffer is too small.
#[pyfunction]
#[pyo3(signature = (on_native_thread = false))]
fn abort_with_fatal(py: Python<'_>, on_native_thread: bool) -> PyResult<()> {
    let abort = || -> ! {
        rt_log!(
            Level::Error,
            "ETDump: debug buffer of 64 bytes is too small for event 3"
        );
        rt_log!(
            Level::Fatal,
            "In function write_event(), assert failed: buffer has room"
        );
        c_abort()
    };
    if on_native_thread {
        let thread = std::thread::spawn(abort);
        let _ = py.detach(|| thread.join());
        return Ok(());
    }
    pylogsink::call(py, || abort())
}

/// The identifier a valid program starts with.
const PROGRAM_ID: &[u8; 4] = b"ET12";

/// Loads a program from bytes: checks its 4-byte identifier, and on a
/// mismatch logs the raw bytes it found (which may be anything) and raises
/// RuntimeError carrying that line.
#[pyfunction]
fn load_program(py: Python<'_>, data: &[u8]) -> PyResult<usize> {
    pylogsink::call(py, || {
        let id = data.get(..4).unwrap_or(data);
        if id != PROGRAM_ID {
            let mut line = b"Program identifier '".to_vec();
            line.extend_from_slice(id);
            line.extend_from_slice(b"' != expected 'ET12'");
            rt_log(Level::Error, file!(), line!(), &line);
            return Err(pylogsink::error::<PyRuntimeError>(
                "load_program: invalid program (error 0x23)",
            ));
        }
        Ok(data.len())
    })
}

/// Loads a program from a file. The error message is built in a 128-byte
/// buffer, as C runtimes do with snprintf, so a long path is cut, maybe
/// inside a character.
#[pyfunction]
fn load_file(py: Python<'_>, path: &str) -> PyResult<usize> {
    pylogsink::call(py, || match std::fs::read(path) {
        Ok(data) => Ok(data.len()),
        Err(e) => {
            let mut message = format!("Failed to open {path}: {e}").into_bytes();
            message.truncate(128);
            rt_log(Level::Error, file!(), line!(), &message);
            Err(pylogsink::error::<PyRuntimeError>(&message))
        }
    })
}

/// Logs `count` Error lines, then raises `kind` ("RuntimeError",
/// "IndexError" or "ValueError") carrying them.
#[pyfunction]
#[pyo3(signature = (count, kind = "RuntimeError"))]
fn fail(py: Python<'_>, count: usize, kind: &str) -> PyResult<()> {
    pylogsink::call(py, || {
        for i in 0..count {
            rt_log!(Level::Error, "cause {i}");
        }
        let text = format!("fail: {count} errors");
        Err(match kind {
            "RuntimeError" => pylogsink::error::<PyRuntimeError>(text),
            "IndexError" => pylogsink::error::<PyIndexError>(text),
            "ValueError" => pylogsink::error::<PyValueError>(text),
            _ => PyValueError::new_err(format!("unknown exception kind {kind:?}")),
        })
    })
}

/// Logs one line, then computes for up to `seconds` with the GIL held,
/// checking for signals as long native loops should; a signal handler's
/// exception (KeyboardInterrupt from Ctrl-C) ends it.
#[pyfunction]
fn log_until_interrupted(py: Python<'_>, seconds: f64) -> PyResult<()> {
    pylogsink::call(py, || {
        rt_log!(Level::Warn, "computing until interrupted");
        let end = std::time::Instant::now() + Duration::from_secs_f64(seconds);
        while std::time::Instant::now() < end {
            std::thread::sleep(Duration::from_millis(5));
            py.check_signals()?;
        }
        Ok(())
    })
}

/// Logs one line, then panics inside the call.
#[pyfunction]
fn panic_after_logging(py: Python<'_>) -> PyResult<()> {
    pylogsink::call(py, || {
        rt_log!(Level::Error, "about to panic");
        panic!("the runtime panicked")
    })
}

/// Decodes bytes as UTF-8 with pylogsink's escaping of invalid bytes,
/// which must equal `data.decode("utf-8", "backslashreplace")`.
#[pyfunction]
fn backslashreplace(data: &[u8]) -> String {
    pylogsink::__private_api::decode_backslashreplace(data)
}

/// Does nothing: the cost of a bare binding call.
#[pyfunction]
fn noop() {}

/// Does nothing inside `pylogsink::call`: the cost of the wrapper.
#[pyfunction]
fn noop_in_call(py: Python<'_>) -> PyResult<()> {
    pylogsink::call(py, || Ok(()))
}

/// How a call's entry learns whether `sys.stderr` was replaced: "dict
/// watcher", "dict version" or "lookup" (see `pylogsink::__private_api::stderr_check`).
#[pyfunction]
fn stderr_check(py: Python<'_>) -> &'static str {
    pylogsink::__private_api::stderr_check(py)
}

/// Each flag and buffer a forked child must start without, with whether
/// this process has it (see `pylogsink::__private_api::fork_leftovers`).
#[pyfunction]
fn fork_leftovers() -> Vec<(&'static str, bool)> {
    pylogsink::__private_api::fork_leftovers()
}

/// A native thread that logs outside any call.
#[pyclass(module = "pylogsink._pylogsink")]
struct BackgroundLogger {
    handle: Option<JoinHandle<()>>,
}

#[pymethods]
impl BackgroundLogger {
    /// Waits for the thread to finish, with the GIL released.
    fn join(&mut self, py: Python<'_>) {
        if let Some(handle) = self.handle.take() {
            let _ = py.detach(|| handle.join());
        }
    }
}

/// Starts a native thread that logs `count` lines, `interval` seconds
/// apart, outside any call; with `name`, a thread of that name.
#[pyfunction]
#[pyo3(signature = (count, interval = 0.0, name = None))]
fn start_background_logger(
    count: usize,
    interval: f64,
    name: Option<String>,
) -> PyResult<BackgroundLogger> {
    let mut thread = std::thread::Builder::new();
    if let Some(name) = name {
        thread = thread.name(name);
    }
    let handle = thread
        .spawn(move || {
            for i in 0..count {
                rt_log!(Level::Info, "background line {i}");
                if interval > 0.0 {
                    std::thread::sleep(Duration::from_secs_f64(interval));
                }
            }
        })
        .map_err(|e| PyRuntimeError::new_err(format!("cannot start a thread: {e}")))?;
    Ok(BackgroundLogger {
        handle: Some(handle),
    })
}

/// Sets how long a line waits for room on fd 2, in seconds.
#[pyfunction]
fn set_stall_wait(seconds: f64) -> PyResult<()> {
    let wait = Duration::try_from_secs_f64(seconds)
        .map_err(|e| PyValueError::new_err(format!("bad stall wait {seconds}: {e}")))?;
    pylogsink::set_stall_wait(wait);
    Ok(())
}

/// Logs "logged: TEXT" (Info) through the sink in use and prints
/// "printed: TEXT" with C's `printf` to stdout, flushed, in one call: a
/// runtime's log lines and its plain output side by side.
#[pyfunction]
fn log_and_printf(py: Python<'_>, text: &str) -> PyResult<()> {
    let printed = std::ffi::CString::new(format!("printed: {text}\n"))
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    pylogsink::call(py, || {
        rt_log!(Level::Info, "logged: {text}");
        // SAFETY: a "%s" format with one NUL-terminated string that lives
        // across the call; fflush(NULL) takes no pointer of ours.
        unsafe {
            libc::printf(c"%s".as_ptr(), printed.as_ptr());
            libc::fflush(std::ptr::null_mut());
        }
        Ok(())
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(log_and_printf, m)?)?;
    m.add_function(wrap_pyfunction!(set_sink, m)?)?;
    m.add_function(wrap_pyfunction!(stderr_check, m)?)?;
    m.add_function(wrap_pyfunction!(fork_leftovers, m)?)?;
    m.add_function(wrap_pyfunction!(sink, m)?)?;
    m.add_function(wrap_pyfunction!(load_method, m)?)?;
    m.add_function(wrap_pyfunction!(load_method_detached, m)?)?;
    m.add_function(wrap_pyfunction!(execute, m)?)?;
    m.add_function(wrap_pyfunction!(log_lines, m)?)?;
    m.add_function(wrap_pyfunction!(log_raw, m)?)?;
    m.add_function(wrap_pyfunction!(log_then_hang, m)?)?;
    m.add_function(wrap_pyfunction!(log_slowly, m)?)?;
    m.add_function(wrap_pyfunction!(with_callback, m)?)?;
    m.add_function(wrap_pyfunction!(log_then_block, m)?)?;
    m.add_function(wrap_pyfunction!(fan_out, m)?)?;
    m.add_function(wrap_pyfunction!(outlive_call, m)?)?;
    m.add_function(wrap_pyfunction!(crash, m)?)?;
    m.add_function(wrap_pyfunction!(start_background_logger, m)?)?;
    m.add_function(wrap_pyfunction!(abort_with_fatal, m)?)?;
    m.add_function(wrap_pyfunction!(load_program, m)?)?;
    m.add_function(wrap_pyfunction!(load_file, m)?)?;
    m.add_function(wrap_pyfunction!(fail, m)?)?;
    m.add_function(wrap_pyfunction!(log_until_interrupted, m)?)?;
    m.add_function(wrap_pyfunction!(panic_after_logging, m)?)?;
    m.add_function(wrap_pyfunction!(backslashreplace, m)?)?;
    m.add_function(wrap_pyfunction!(noop, m)?)?;
    m.add_function(wrap_pyfunction!(noop_in_call, m)?)?;
    m.add_function(wrap_pyfunction!(set_stall_wait, m)?)?;
    m.add_class::<BackgroundLogger>()?;
    Ok(())
}
