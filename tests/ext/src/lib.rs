//! The `pylogsink_testext._testext` module: an extension built like a
//! user's, whose log lines come from real crates that log on their own.
//!
//! ureq logs its requests through `log` at DEBUG under several module
//! targets (`ureq::unit`, `ureq::stream`, `ureq::response`, `ureq::pool`),
//! and tracing's events and spans reach pylogsink's tracing layer, which
//! `Builder::init` installs as the global subscriber (pylogsink's `tracing`
//! feature). Neither asks pylogsink anything, so the
//! tests run against this module prove that pylogsink's filter, set from
//! `PYLOGSINK_TESTEXT_LOG` at import or with `set_log_filter` later, decides
//! what reaches the user. `log_at` calls the logger without asking it first
//! whether the record is enabled, as some crates do, so the filter must hold
//! in the logger itself.
//!
//! `pool_get` shares one ureq agent, and so one connection pool, between
//! threads: ureq logs "pulling stream from pool" while it holds the pool's
//! mutex, the lock-while-logging pattern that deadlocks a logger taking the
//! GIL. `PYLOGSINK_TESTEXT_LOGGER=pyo3-log` installs pyo3-log instead of
//! pylogsink as `log`'s logger, so that the same code shows that deadlock.
//! `PYLOGSINK_TESTEXT_DESTINATION=logging` chooses pylogsink's `logging`
//! destination on the builder, for records logged at import, and
//! `PYLOGSINK_TESTEXT_PREFIX` the prefix of its loggers' names.
#![warn(missing_docs)]

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use std::sync::LazyLock;

fn parse_level(name: &str) -> PyResult<log::Level> {
    name.parse().map_err(|_| {
        PyValueError::new_err(format!(
            "unknown level {name:?}: expected trace, debug, info, warn or error"
        ))
    })
}

/// Sends a GET to `url` with ureq and returns the response's status code.
#[pyfunction]
fn http_get(py: Python<'_>, url: &str) -> PyResult<u16> {
    pylogsink::call(py, || {
        py.detach(|| match ureq::get(url).call() {
            Ok(response) => {
                let status = response.status();
                // Reading the body to its end hands the connection back to
                // ureq's pool, which logs it too.
                response
                    .into_string()
                    .map(|_| status)
                    .map_err(|e| e.to_string())
            }
            Err(ureq::Error::Status(status, _)) => Ok(status),
            Err(e) => Err(e.to_string()),
        })
        .map_err(|e| PyRuntimeError::new_err(format!("http_get {url}: {e}")))
    })
}

/// The agent `pool_get` shares between threads.
static AGENT: LazyLock<ureq::Agent> = LazyLock::new(ureq::Agent::new);

/// Sends `count` GETs to `url` through the shared agent and returns the
/// statuses' sum. With `detach`, the GIL is released during the requests;
/// without it, held, as bindings that never release it do.
#[pyfunction]
fn pool_get(py: Python<'_>, url: &str, count: u32, detach: bool) -> PyResult<u32> {
    let requests = || -> Result<u32, String> {
        let mut sum = 0;
        for _ in 0..count {
            let response = AGENT.get(url).call().map_err(|e| e.to_string())?;
            sum += u32::from(response.status());
            response.into_string().map_err(|e| e.to_string())?;
        }
        Ok(sum)
    };
    pylogsink::call(py, || {
        let sum = if detach {
            py.detach(requests)
        } else {
            requests()
        };
        sum.map_err(|e| PyRuntimeError::new_err(format!("pool_get {url}: {e}")))
    })
}

/// Logs `items` Warn records ("item N", target `testext::rayon`) from a
/// rayon pool of four threads, each attached to the call: the call's
/// routing holds for every one. Returns how many items were processed.
#[pyfunction]
fn rayon_fan_out(py: Python<'_>, items: usize) -> PyResult<usize> {
    use rayon::prelude::*;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(4)
        .build()
        .map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
    pylogsink::call(py, || {
        let call = pylogsink::Call::current().expect("inside a call");
        let done = py.detach(|| {
            pool.install(|| {
                (0..items)
                    .into_par_iter()
                    .map(|i| call.attach(|| log::warn!(target: "testext::rayon", "item {i}")))
                    .count()
            })
        });
        Ok(done)
    })
}

/// Does some work inside a tracing span, emitting tracing events at TRACE,
/// DEBUG, INFO and WARN with target `testext::work`.
#[pyfunction]
fn tracing_work(py: Python<'_>, name: &str) -> PyResult<()> {
    pylogsink::call(py, || {
        let span = tracing::info_span!("load", path = name);
        let _entered = span.enter();
        tracing::trace!(target: "testext::work", "opening {name}");
        tracing::debug!(target: "testext::work", bytes = name.len(), "read {name}");
        tracing::info!(target: "testext::work", "loaded {name}");
        tracing::warn!(target: "testext::work", "{name} is deprecated");
        Ok(())
    })
}

/// Loads a "model" the way instrumented code does: `load` and `init` are
/// `#[tracing::instrument]`ed (spans `load{path=..}` and `init{rows=..}`,
/// target `testext::model`), and log events with fields inside them.
#[pyfunction]
fn traced_load(py: Python<'_>, path: &str, rows: u64) -> PyResult<usize> {
    pylogsink::call(py, || Ok(load(path, rows)))
}

#[tracing::instrument(target = "testext::model", level = "info", skip(rows))]
fn load(path: &str, rows: u64) -> usize {
    tracing::warn!(target: "testext::model", path, "deprecated format");
    init(rows)
}

#[tracing::instrument(target = "testext::model", level = "info")]
fn init(rows: u64) -> usize {
    tracing::info!(
        target: "testext::model",
        rows,
        ratio = 0.5,
        ok = true,
        name = "a b",
        "model ready"
    );
    tracing::debug!(target: "testext::model", "details");
    rows as usize
}

/// Emits one tracing event (target `testext::fields`) at `level` with
/// `message` and the fields `text` (a string), `raw` (bytes), `count` (an
/// integer), `lineno` and `msg` (names a `LogRecord` has), inside a span
/// `req{id=7}`.
#[pyfunction]
fn tracing_event(
    py: Python<'_>,
    level: &str,
    message: &str,
    text: &str,
    raw: &[u8],
) -> PyResult<()> {
    let level = parse_level(level)?;
    pylogsink::call(py, || {
        let span = tracing::info_span!(target: "testext::fields", "req", id = 7);
        let _entered = span.enter();
        macro_rules! event {
            ($level:expr) => {
                tracing::event!(
                    target: "testext::fields",
                    $level,
                    text,
                    raw,
                    count = 3u64,
                    lineno = 1u64,
                    msg = "clash",
                    "{message}"
                )
            };
        }
        match level {
            log::Level::Trace => event!(tracing::Level::TRACE),
            log::Level::Debug => event!(tracing::Level::DEBUG),
            log::Level::Info => event!(tracing::Level::INFO),
            log::Level::Warn => event!(tracing::Level::WARN),
            log::Level::Error => event!(tracing::Level::ERROR),
        }
        Ok(())
    })
}

/// Fails the way instrumented code does: an Error event with a field
/// inside a span `open{path=..}`, then an exception that carries it.
#[pyfunction]
fn tracing_error(py: Python<'_>, path: &str) -> PyResult<()> {
    pylogsink::call(py, || {
        let span = tracing::error_span!(target: "testext::model", "open", path);
        let _entered = span.enter();
        tracing::error!(target: "testext::model", code = 35, "invalid program");
        Err(pylogsink::error::<PyRuntimeError>("open failed"))
    })
}

/// The backend lock that `tracing_threads`' threads log under.
static BACKEND: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// `threads` native threads, attached to the call, each emit `events`
/// Warn events (target `testext::pool`, inside a span `worker{t=..}`) while
/// holding a backend lock, which the calling thread also takes for each of
/// its own `events` events: with the GIL held (`detach` false) or released.
/// A subscriber that took the GIL per event would deadlock here. Returns
/// the events emitted.
#[pyfunction]
fn tracing_threads(py: Python<'_>, threads: usize, events: usize, detach: bool) -> PyResult<usize> {
    pylogsink::call(py, || {
        let call = pylogsink::Call::current().expect("inside a call");
        let work = || {
            std::thread::scope(|s| {
                for t in 0..threads {
                    let call = call.clone();
                    s.spawn(move || {
                        call.attach(|| {
                            let span = tracing::info_span!(target: "testext::pool", "worker", t);
                            let _entered = span.enter();
                            for i in 0..events {
                                let _held = BACKEND.lock().unwrap_or_else(|e| e.into_inner());
                                tracing::warn!(target: "testext::pool", i, "worker event");
                            }
                        })
                    });
                }
                for i in 0..events {
                    let _held = BACKEND.lock().unwrap_or_else(|e| e.into_inner());
                    tracing::warn!(target: "testext::pool", i, "caller event");
                }
            });
            (threads + 1) * events
        };
        Ok(if detach { py.detach(work) } else { work() })
    })
}

/// Logs one `log` record with key-values (target `testext::kv`, Warn):
/// `rows`, `ratio`, `ok`, `text` (given), and `shape` (a `Debug` value).
#[pyfunction]
fn log_kv(py: Python<'_>, text: &str) -> PyResult<()> {
    pylogsink::call(py, || {
        log::warn!(
            target: "testext::kv",
            rows = 42u64,
            ratio = 0.25,
            ok = false,
            text,
            shape:? = (2, 3);
            "table loaded"
        );
        Ok(())
    })
}

/// A value whose `Display` logs a record of its own (target
/// `testext::nested`, Warn): "inner {text}", then writes `text`.
struct Nested<'a>(&'a str);

impl std::fmt::Display for Nested<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        log::warn!(target: "testext::nested", "inner {}", self.0);
        f.write_str(self.0)
    }
}

/// Logs "outer {text}" (target `testext::nested`, Warn) through a value
/// whose `Display` logs "inner {text}" while the outer record is formatted.
#[pyfunction]
fn log_nested(py: Python<'_>, text: &str) -> PyResult<()> {
    pylogsink::call(py, || {
        log::warn!(target: "testext::nested", "outer {}", Nested(text));
        Ok(())
    })
}

/// Serves HTTP/2 (prior knowledge, no TLS) on 127.0.0.1 until the process
/// is killed: prints the port on stdout, then answers every request with
/// 200 and the body "ok\n" (404 for any path but "/"). For a child process.
#[pyfunction]
fn h2_serve(py: Python<'_>) -> PyResult<()> {
    py.detach(|| -> std::io::Result<()> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        runtime.block_on(async {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
            {
                use std::io::Write as _;
                let mut out = std::io::stdout();
                writeln!(out, "{}", listener.local_addr()?.port())?;
                out.flush()?;
            }
            loop {
                let (socket, _) = listener.accept().await?;
                tokio::spawn(async move {
                    let _ = h2_connection(socket).await;
                });
            }
        })
    })
    .map_err(|e| PyRuntimeError::new_err(e.to_string()))
}

async fn h2_connection(socket: tokio::net::TcpStream) -> Result<(), h2::Error> {
    let mut connection = h2::server::handshake(socket).await?;
    while let Some(request) = connection.accept().await {
        let (request, mut respond) = request?;
        let status = if request.uri().path() == "/" {
            200
        } else {
            404
        };
        let response = http::Response::builder()
            .status(status)
            .body(())
            .expect("a valid response");
        let mut body = respond.send_response(response, false)?;
        body.send_data(bytes::Bytes::from_static(b"ok\n"), true)?;
    }
    Ok(())
}

/// A GET of `path` over HTTP/2 with h2 (on a current-thread tokio runtime,
/// so h2 logs on the calling thread, in the call) to 127.0.0.1:`port`;
/// the GIL released during it with `detach`, else held. Returns the
/// status and the body's length.
#[pyfunction]
fn h2_get(py: Python<'_>, port: u16, path: &str, detach: bool) -> PyResult<(u16, usize)> {
    let get = || -> Result<(u16, usize), Box<dyn std::error::Error + Send + Sync>> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        runtime.block_on(async {
            let socket = tokio::net::TcpStream::connect(("127.0.0.1", port)).await?;
            let (client, connection) = h2::client::handshake(socket).await?;
            let driver = tokio::spawn(async move {
                let _ = connection.await;
            });
            let mut client = client.ready().await?;
            let request = http::Request::builder()
                .uri(format!("http://127.0.0.1:{port}{path}"))
                .body(())?;
            let (response, _) = client.send_request(request, true)?;
            let response = response.await?;
            let status = response.status().as_u16();
            let mut body = response.into_body();
            let mut length = 0;
            while let Some(chunk) = body.data().await {
                let chunk = chunk?;
                length += chunk.len();
                body.flow_control().release_capacity(chunk.len())?;
            }
            drop(client);
            driver.abort();
            Ok((status, length))
        })
    };
    pylogsink::call(py, || {
        let got = if detach { py.detach(get) } else { get() };
        got.map_err(|e| PyRuntimeError::new_err(format!("h2_get {port}{path}: {e}")))
    })
}

/// Logs `count` Warn records ("line N of COUNT", target `testext::crash`)
/// in one call, then crashes the process inside it: "segv" raises SIGSEGV
/// (on Windows, an access violation), "abort" calls the C runtime's
/// `abort()`. No Fatal line: what the call kept is left to the crash
/// handler.
#[pyfunction]
fn log_then_crash(py: Python<'_>, count: usize, kind: &str) -> PyResult<()> {
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
        for i in 0..count {
            log::warn!(target: "testext::crash", "line {i} of {count}");
        }
        if signal == libc::SIGABRT {
            // On Windows, Rust's std::process::abort is a __fastfail, which
            // ends the process before any handler runs; the C runtime's
            // abort() raises SIGABRT first, as a C library's does.
            #[cfg(windows)]
            // SAFETY: abort() ends the process; the crash is what this
            // function is for.
            unsafe {
                libc::abort()
            };
            #[cfg(not(windows))]
            std::process::abort();
        }
        #[cfg(windows)]
        // SAFETY: none: an access violation (a write to the first page,
        // never mapped) is what this function is for.
        unsafe {
            std::ptr::write_volatile(std::hint::black_box(8usize) as *mut u8, 0)
        };
        #[cfg(not(windows))]
        // SAFETY: raise only sends a signal to this thread; the crash is
        // what this function is for.
        unsafe {
            libc::raise(signal)
        };
        Ok(())
    })
}

/// Sends this process SIGABRT from a native thread, `after` seconds from
/// now, while the caller goes on: "kill" with `kill(getpid())` (what
/// another process's `kill -ABRT` looks like to a handler, but for the
/// sender), "raise" with `raise` on that thread (what `abort()` does
/// first). Windows has `raise` only.
#[pyfunction]
fn signal_later(how: &str, after: f64) -> PyResult<()> {
    let kill = match how {
        "kill" if cfg!(unix) => true,
        "raise" => false,
        _ => {
            return Err(PyValueError::new_err(format!(
                "unknown way {how:?}: expected \"kill\" (not on Windows) or \"raise\""
            )))
        }
    };
    std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_secs_f64(after));
        #[cfg(unix)]
        if kill {
            // SAFETY: kill sends a signal; this process handles or dies of it.
            unsafe { libc::kill(libc::getpid(), libc::SIGABRT) };
            return;
        }
        let _ = kill;
        // SAFETY: raise sends a signal to this thread, as above.
        unsafe { libc::raise(libc::SIGABRT) };
    });
    Ok(())
}

/// `workers` HTTP/2 connections to 127.0.0.1:`port`, each making
/// `requests` GETs of "/" one after the other, on a multi-threaded tokio
/// runtime whose worker threads are attached to the call (as docs/threads.md
/// advises for a pool made per call), with the GIL released. Returns how
/// many answered 200.
#[pyfunction]
fn h2_fan_out(py: Python<'_>, port: u16, workers: usize, requests: usize) -> PyResult<usize> {
    type Error = Box<dyn std::error::Error + Send + Sync>;
    pylogsink::call(py, || {
        let call = pylogsink::Call::current()
            .ok_or_else(|| PyRuntimeError::new_err("h2_fan_out: not in a call"))?;
        let run = move || -> Result<usize, Error> {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(workers)
                .enable_all()
                .on_thread_start(move || call.attach_thread())
                .on_thread_stop(pylogsink::detach_thread)
                .build()?;
            let answered = runtime.block_on(async {
                let tasks: Vec<_> = (0..workers)
                    .map(|_| tokio::spawn(h2_requests(port, requests)))
                    .collect();
                let mut ok = 0;
                for task in tasks {
                    ok += task.await??;
                }
                Ok::<usize, Error>(ok)
            });
            runtime.shutdown_timeout(std::time::Duration::from_secs(10));
            answered
        };
        py.detach(run)
            .map_err(|e| PyRuntimeError::new_err(format!("h2_fan_out {port}: {e}")))
    })
}

/// A native thread started at import, as a runtime's watchdog or metrics
/// thread is: it logs "tick N" at Warn every 20 ms, `count` times, outside
/// any call.
fn start_ticker(count: usize) {
    std::thread::Builder::new()
        .name("ticker".into())
        .spawn(move || {
            for n in 0..count {
                log::warn!(target: "testext::ticker", "tick {n}");
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        })
        .expect("a thread");
}

/// A long-lived tokio runtime, made at the first use and never shut down,
/// whose worker threads nobody attaches to a call: a runtime's global pool.
static GLOBAL_RUNTIME: LazyLock<tokio::runtime::Runtime> = LazyLock::new(|| {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("global-tokio")
        .enable_all()
        .build()
        .expect("a tokio runtime")
});

/// `connections` HTTP/2 connections to 127.0.0.1:`port`, each making
/// `requests` GETs of "/", as tasks on [`GLOBAL_RUNTIME`]: h2 logs from its
/// worker threads, outside any call. The call waits for them with the GIL
/// released. Returns how many answered 200.
#[pyfunction]
fn h2_on_global_runtime(
    py: Python<'_>,
    port: u16,
    connections: usize,
    requests: usize,
) -> PyResult<usize> {
    pylogsink::call(py, || {
        py.detach(|| {
            let tasks: Vec<_> = (0..connections)
                .map(|_| GLOBAL_RUNTIME.spawn(h2_requests(port, requests)))
                .collect();
            GLOBAL_RUNTIME.block_on(async {
                let mut ok = 0;
                for task in tasks {
                    ok += task.await.map_err(|e| e.to_string())??;
                }
                Ok::<usize, String>(ok)
            })
        })
        .map_err(|e| PyRuntimeError::new_err(format!("h2_on_global_runtime {port}: {e}")))
    })
}

/// `requests` GETs of "/" over one HTTP/2 connection to 127.0.0.1:`port`;
/// how many answered 200.
async fn h2_requests(port: u16, requests: usize) -> Result<usize, String> {
    async fn run(port: u16, requests: usize) -> Result<usize, Box<dyn std::error::Error>> {
        let socket = tokio::net::TcpStream::connect(("127.0.0.1", port)).await?;
        let (client, connection) = h2::client::handshake(socket).await?;
        let driver = tokio::spawn(async move {
            let _ = connection.await;
        });
        let mut ok = 0;
        for _ in 0..requests {
            let mut client = client.clone().ready().await?;
            let request = http::Request::builder()
                .uri(format!("http://127.0.0.1:{port}/"))
                .body(())?;
            let (response, _) = client.send_request(request, true)?;
            let response = response.await?;
            ok += usize::from(response.status() == 200);
            let mut body = response.into_body();
            while let Some(chunk) = body.data().await {
                let chunk = chunk?;
                body.flow_control().release_capacity(chunk.len())?;
            }
        }
        driver.abort();
        Ok(ok)
    }
    run(port, requests).await.map_err(|e| e.to_string())
}

/// Logs `message` at `level` ("trace" to "error") under `target`, handing
/// the record straight to the logger.
#[pyfunction]
fn log_at(py: Python<'_>, level: &str, target: &str, message: &str) -> PyResult<()> {
    let level = parse_level(level)?;
    pylogsink::call(py, || {
        log::logger().log(
            &log::Record::builder()
                .level(level)
                .target(target)
                .file(Some(file!()))
                .line(Some(line!()))
                .args(format_args!("{message}"))
                .build(),
        );
        Ok(())
    })
}

/// Whether a record at `level` under `target` would be written: the
/// logger's answer, and whether `level` is within `log::max_level()`.
#[pyfunction]
fn log_enabled(level: &str, target: &str) -> PyResult<(bool, bool)> {
    let level = parse_level(level)?;
    let metadata = log::Metadata::builder().level(level).target(target).build();
    Ok((log::logger().enabled(&metadata), level <= log::max_level()))
}

/// Emits four records with target `testext::control` through the crates'
/// own macros: `log::info!` ("log info {tag}"), `log::debug!` ("log debug
/// {tag}"), `tracing::info!` ("tracing info {tag}") and `tracing::debug!`
/// ("tracing debug {tag}"); inside a call with `in_call`, else outside any
/// (from the calling thread). Unlike `log_at`, the macros drop a record
/// above `log::max_level()`, or at a callsite whose interest tracing holds
/// to be never, before pylogsink sees it: what gets logged here is what
/// `log::max_level` and tracing's interest say.
#[pyfunction]
fn log_levels(py: Python<'_>, tag: &str, in_call: bool) -> PyResult<()> {
    let emit = || {
        log::info!(target: "testext::control", "log info {tag}");
        log::debug!(target: "testext::control", "log debug {tag}");
        tracing::info!(target: "testext::control", "tracing info {tag}");
        tracing::debug!(target: "testext::control", "tracing debug {tag}");
    };
    if in_call {
        pylogsink::call(py, || {
            emit();
            Ok(())
        })
    } else {
        emit();
        Ok(())
    }
}

/// The module's initializer: installs pylogsink with its filter read from
/// `PYLOGSINK_TESTEXT_LOG` (or pyo3-log, see the module doc), and adds
/// pylogsink's functions.
#[pymodule]
fn _testext(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let logger = std::env::var("PYLOGSINK_TESTEXT_LOGGER").unwrap_or_default();
    if logger == "pyo3-log" {
        pyo3_log::try_init().map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
    } else {
        let destination = match std::env::var("PYLOGSINK_TESTEXT_DESTINATION").as_deref() {
            Ok("logging") => pylogsink::Destination::Logging,
            _ => pylogsink::Destination::Stderr,
        };
        pylogsink::Builder::new()
            .env("PYLOGSINK_TESTEXT_LOG")
            .default_filter("warn")
            .destination(destination)
            .logger_prefix(&std::env::var("PYLOGSINK_TESTEXT_PREFIX").unwrap_or_default())
            .init()?;
        if destination == pylogsink::Destination::Logging {
            // A record logged outside any call, before Python has a logger.
            log::info!(target: "testext::init", "imported");
        }
    }
    if let Some(count) = std::env::var("PYLOGSINK_TESTEXT_TICKS")
        .ok()
        .and_then(|n| n.parse::<usize>().ok())
    {
        start_ticker(count);
    }
    pylogsink::python::add_functions(m)?;
    m.add_function(wrap_pyfunction!(pool_get, m)?)?;
    m.add_function(wrap_pyfunction!(signal_later, m)?)?;
    m.add_function(wrap_pyfunction!(rayon_fan_out, m)?)?;
    m.add_function(wrap_pyfunction!(http_get, m)?)?;
    m.add_function(wrap_pyfunction!(tracing_work, m)?)?;
    m.add_function(wrap_pyfunction!(log_at, m)?)?;
    m.add_function(wrap_pyfunction!(traced_load, m)?)?;
    m.add_function(wrap_pyfunction!(tracing_event, m)?)?;
    m.add_function(wrap_pyfunction!(tracing_threads, m)?)?;
    m.add_function(wrap_pyfunction!(tracing_error, m)?)?;
    m.add_function(wrap_pyfunction!(log_kv, m)?)?;
    m.add_function(wrap_pyfunction!(log_nested, m)?)?;
    m.add_function(wrap_pyfunction!(h2_serve, m)?)?;
    m.add_function(wrap_pyfunction!(h2_get, m)?)?;
    m.add_function(wrap_pyfunction!(h2_fan_out, m)?)?;
    m.add_function(wrap_pyfunction!(h2_on_global_runtime, m)?)?;
    m.add_function(wrap_pyfunction!(log_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(log_levels, m)?)?;
    m.add_function(wrap_pyfunction!(log_then_crash, m)?)?;
    Ok(())
}
