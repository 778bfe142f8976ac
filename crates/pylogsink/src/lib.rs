//! pylogsink carries the log lines of native code running inside a Python
//! process to the Python user, and never deadlocks, never hangs a notebook,
//! never loses capture by pytest or Jupyter, and never loses the lines that
//! explain a crash.
//!
//! # Using it in a PyO3 extension
//!
//! Install it as the `log` crate's logger once, when the module loads, and
//! wrap the body of every binding in [`call`]:
//!
//! ```no_run
//! use pyo3::prelude::*;
//!
//! #[pyfunction]
//! fn load(py: Python<'_>, path: &str) -> PyResult<usize> {
//!     pylogsink::call(py, || {
//!         log::info!("loading {path}");
//!         Ok(path.len())
//!     })
//! }
//!
//! #[pymodule]
//! fn my_runtime(m: &Bound<'_, PyModule>) -> PyResult<()> {
//!     pylogsink::Builder::new()
//!         .env("MY_RUNTIME_LOG")
//!         .default_filter("warn")
//!         .init()?;
//!     pylogsink::python::add_functions(m)?;
//!     m.add_function(wrap_pyfunction!(load, m)?)
//! }
//! ```
//!
//! Code that does not use `log` (a C or C++ runtime behind a shim) calls
//! [`emit`] with a [`Level`], a target, a source location and the message
//! bytes, which need not be UTF-8. Code that cannot pass a closure (a C
//! ABI, a scope object) wraps a binding in [`call_enter`] and
//! [`call_exit`], the two halves [`call`] is built on; the C ABI in
//! `crates/pylogsink-c` does.
//!
//! # Choosing what is logged
//!
//! The extension's users choose, with directives in env_logger's syntax in
//! the variable the builder names (`MY_RUNTIME_LOG=warn,my_runtime=debug`),
//! or at run time with `set_log_filter` from Python ([`python`]) or
//! [`set_filter`] from Rust:
//!
//! ```
//! use pylogsink::Level;
//!
//! pylogsink::set_filter("warn,my_runtime=debug").unwrap();
//! assert_eq!(pylogsink::filter(), "warn,my_runtime=debug");
//! // Dropped with a compare: nothing is formatted.
//! pylogsink::emit(Level::Debug, "ureq::pool", file!(), line!(), b"dropped");
//! // A bad directive is an error that names it, and changes nothing.
//! let err = pylogsink::set_filter("warn,my_runtime=loud").unwrap_err();
//! assert_eq!(err.directive(), "my_runtime=loud");
//! ```
//!
//! A record the filter drops costs a level compare: no formatting, no
//! allocation, no lock. [`Level::Fatal`] lines pass every filter.
//!
//! # Where a line goes
//!
//! | situation | where the line goes |
//! |---|---|
//! | in a call, `sys.stderr is sys.__stderr__` | to fd 2 at once, so a crash or hang keeps it |
//! | in a call, `sys.stderr` replaced (pytest, Jupyter, `redirect_stderr`) | kept, then written through `sys.stderr.write`: while the call runs with the GIL released, by a Python thread of pylogsink's own about 10 ms after it was logged; the rest when the outermost call returns |
//! | fd 2 (a pipe, a terminal) has no room for the stall wait (100 ms) | kept from then on; each later line checks again without waiting, and direct writes resume once there is room |
//! | outside any call (worker threads, module init) | to fd 2 when there is room within the stall wait, else into a process-wide queue (newest 4 MiB) written at the next chance |
//! | a [`Level::Fatal`] line | the kept lines first, then the line, straight to fd 2: an abort follows |
//!
//! A call keeps at most its newest 4 MiB of lines ([`Builder::line_budget`],
//! which the users' `PYLOGSINK_BUDGET` overrides); one note, in place,
//! counts what was left out. Lines still kept when Python exits go to fd 2.
//!
//! # tracing
//!
//! With the Cargo feature `tracing`, [`Builder::init`] also sets the global
//! default `tracing` subscriber (tracing-subscriber's registry with
//! `tracing::layer()`). Each event becomes one record: the span context as
//! tracing-subscriber's fmt writes it, the message, then the fields as
//! `key=value`, escaped so that no value forges a record (see the fields of a record):
//!
//! ```text
//! [2026-12-03T08:01:47.351241Z INFO  testext::model lib.rs:140] load{path="model.pte"}:init{rows=42}: model ready rows=42 ratio=0.5 ok=true name="a b"
//! ```
//!
//! The directives filter events and spans by target and level, and tracing
//! disables the callsites they drop. `log`'s key-values render the same
//! way. With the `logging` destination, fields become attributes of the
//! `LogRecord` (`int`, `float`, `bool` or `str`; a name the record already
//! has gets the prefix `field_`), and the span context is the attribute
//! `span`.
//!
//! # Python's `logging` as the destination
//!
//! With [`Destination::Logging`] (on the [`Builder`], or at run time with
//! [`set_destination`] or `set_log_destination("logging")` from Python),
//! each record becomes a `logging.LogRecord` on the logger named after its
//! target (`ureq::stream` is `ureq.stream`), handed to `Logger.handle`, so
//! that handlers, filters, `caplog` and `--log-level` apply:
//!
//! ```no_run
//! # use pyo3::prelude::*;
//! #[pymodule]
//! fn my_runtime(m: &Bound<'_, PyModule>) -> PyResult<()> {
//!     pylogsink::Builder::new()
//!         .env("MY_RUNTIME_LOG")
//!         .destination(pylogsink::Destination::Logging)
//!         .logger_prefix("my_runtime") // loggers "my_runtime.ureq.stream", ...
//!         .init()?;
//!     // Optional: set_log_filter, set_log_destination and log_stats, for
//!     // the users.
//!     pylogsink::python::add_functions(m)
//! }
//! ```
//!
//! The log function still never calls Python: a record waits, as data, and
//! is handed over by a Python thread of pylogsink's own while its call runs
//! with the GIL released (in the `contextvars` context the call was entered
//! in), at the return of the outermost call, or, when it was logged outside
//! any call, at once. A call keeps its newest 50,000 records within
//! 16 MiB ([`Builder::logging_budget`]). Python's logger levels are applied on the native side too, from
//! a cache that `logging` itself invalidates whenever a level changes, so a
//! record no logger would take costs a compare. [`Level::Fatal`] lines
//! still go to fd 2 as text, after the records that wait.
//!
//! # Worker threads and crashes
//!
//! A call's worker threads join it with a [`CallHandle`]: take it with
//! [`Call::current`] on the calling thread, run the work in
//! [`CallHandle::attach`] on the worker, and what the worker logs follows
//! the call's routing (see [`Call`] for an example).
//!
//! [`Builder::init`] installs a handler for SIGSEGV, SIGBUS, SIGILL, SIGFPE
//! and SIGABRT that writes the lines waiting in memory to fd 2 before the
//! signal takes its course ([`Builder::crash_handler`] turns it off).
//!
//! # Errors in exceptions
//!
//! Error-level lines logged during a call are collected (the first
//! [`ERRORS_CAP`] bytes), and [`error`] builds an exception of any type
//! whose message is the extension's text followed by them, decoded with
//! Python's `backslashreplace` rule so that native bytes never raise
//! `UnicodeDecodeError`.
//!
//! # Interaction with the GIL
//!
//! A log function that calls Python (`sys.stderr.write`, `logging`) can
//! deadlock: writing releases the GIL, another thread takes it and waits for
//! a native lock that the logging thread holds, and the logging thread
//! never gets the GIL back. pylogsink needs no rule for its users to follow
//! here, because [`emit`] never calls into Python and never takes the GIL:
//! it is safe under any lock, with or without the GIL. Python is touched
//! only by [`call`], when the call starts and when it returns, where the
//! thread holds the GIL and, by construction, no native lock of the call.
//!
//! ```no_run
//! # use pyo3::prelude::*;
//! # use std::sync::Mutex;
//! static BACKEND: Mutex<()> = Mutex::new(());
//!
//! #[pyfunction]
//! fn load_method(py: Python<'_>) -> PyResult<()> {
//!     pylogsink::call(py, || {
//!         let _held = BACKEND.lock().unwrap();
//!         // Safe: no GIL is released here, so a thread that holds the
//!         // GIL and waits for BACKEND cannot starve this one.
//!         log::error!("backend init failed");
//!         Ok(())
//!     })
//! }
//! ```
#![warn(missing_docs)]
#![warn(unreachable_pub)]
#![cfg_attr(docsrs, feature(doc_cfg))]

// The layers, bottom up: each imports only those listed before it, never
// one of its own rank (`make lint` checks it; docs/architecture.md maps
// them). A comment between ranks keeps rustfmt from sorting them.
//
// 0: the operating system's calls, one file per platform.
mod sys;
// 1: the record, its level, fields and text.
mod record;
// 2: the settings; where lines wait and the fd-level writes.
mod control;
mod dest;
// 3: each thread's state, the log function's path, the queue, the capture.
mod core;
// 4: the front ends (`log`, `tracing`, `emit`) and the Python edge.
mod call;
mod front;
// 5: on top.
mod builder;
pub mod python;

pub use builder::{init, Builder, InitError, DEFAULT_ENV};
pub use call::{call, call_enter, call_exit, error, flush, flush_lines};
pub use control::{
    destination, enabled, filter, reset_filter, set_destination, set_filter, set_stall_wait,
    stall_wait, Destination, FilterError, DEFAULT_FILTER,
};
pub use core::{detach_thread, error_message, stats, Call, CallHandle, Stats, ERRORS_CAP};
pub use front::emit::emit;
#[cfg(feature = "tracing")]
#[cfg_attr(docsrs, doc(cfg(feature = "tracing")))]
pub use front::tracing;
pub use record::color::ColorChoice;
pub use record::level::Level;

/// Not part of the API: what the benchmark, the fuzz target and the demo
/// runtime use to format records themselves and to see how `call` looks
/// at `sys.stderr`. It may change in any release.
#[doc(hidden)]
pub mod __private_api {
    pub use crate::call::{fork_leftovers, in_main_interpreter, set_context, stderr_check};
    pub use crate::record::escape::{decode_backslashreplace, escape_into};
    pub use crate::record::fields::{FieldValue, Fields};
    pub use crate::record::format::{format_record, now_since_epoch, Formatter, Text};
    pub use crate::record::Record;
}
