//! `pylogsink.sqlite`: SQLite's error log, from the library Python's
//! `sqlite3` module uses, through pylogsink.
//!
//! Why: SQLite says why a statement failed, why it chose an automatic
//! index, why a file was recovered, in a log of its own
//! (`SQLITE_CONFIG_LOG`) that Python's `sqlite3` never reads. SQLite calls
//! the log function from the thread that uses it, under SQLite's own
//! mutexes and most often with the GIL released: the function here never
//! calls Python, it hands the message to pylogsink.
//!
//! The library is found through the `_sqlite3` extension module's file
//! (opened as Python would, so its dependencies resolve the same way) and
//! the exported `sqlite3_config`. Before SQLite 3.42 the log can only be
//! set before SQLite initializes, which `import sqlite3` does: `install`
//! then gets `SQLITE_MISUSE` and says so.

use pyo3::prelude::*;

/// `SQLITE_NOTICE`, `SQLITE_WARNING`: the primary result codes of the log's
/// two levels below an error.
#[cfg(any(target_os = "linux", target_os = "macos", test))]
const NOTICE: i32 = 27;
#[cfg(any(target_os = "linux", target_os = "macos", test))]
const WARNING: i32 = 28;

/// pylogsink's level for a result code SQLite logs with: notices (a file
/// recovered) are Info, warnings (an automatic index) Warn, the rest
/// Error. The extended code's low byte is its primary code.
#[cfg(any(target_os = "linux", target_os = "macos", test))]
fn level_of(code: i32) -> pylogsink::Level {
    match code & 0xff {
        NOTICE => pylogsink::Level::Info,
        WARNING => pylogsink::Level::Warn,
        _ => pylogsink::Level::Error,
    }
}

/// Sets pylogsink's log function (`ours`) or none in the SQLite that the
/// extension at `module` (the `_sqlite3` module's file; None: the
/// program's own symbols) loads; the library's path and SQLite's version.
#[pyfunction]
#[pyo3(signature = (module, ours))]
fn _sqlite_set_log(module: Option<&str>, ours: bool) -> PyResult<(String, String)> {
    imp::set_log(module, ours)
}

/// Adds the module's functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_sqlite_set_log, m)?)
}

#[cfg(any(target_os = "linux", target_os = "macos"))]
mod imp {
    use super::level_of;
    use pyo3::exceptions::PyRuntimeError;
    use pyo3::PyResult;
    use std::ffi::{c_char, c_int, c_void, CStr, CString};
    use std::panic::catch_unwind;

    /// `SQLITE_CONFIG_LOG`, and `SQLITE_MISUSE`: what `sqlite3_config`
    /// returns once SQLite is initialized, before 3.42.
    const CONFIG_LOG: c_int = 16;
    const MISUSE: c_int = 21;

    /// SQLite's `void (*)(void *, int, const char *)`.
    type LogFn = unsafe extern "C" fn(*mut c_void, c_int, *const c_char);
    /// `int sqlite3_config(int, ...)`, given a log function (or none) and
    /// its argument.
    type Config = unsafe extern "C" fn(c_int, ...) -> c_int;
    type Version = unsafe extern "C" fn() -> *const c_char;

    /// The log function: one record of target `sqlite`, the message and
    /// its result code, as `no such table: nope (code 1)`.
    unsafe extern "C" fn log(_arg: *mut c_void, code: c_int, message: *const c_char) {
        let level = level_of(code);
        // A panic must not unwind into SQLite.
        let _ = catch_unwind(|| {
            if !pylogsink::enabled(level, "sqlite") {
                return;
            }
            let text = if message.is_null() {
                String::new()
            } else {
                // SAFETY: SQLite passes a NUL-terminated message, alive for
                // this call.
                String::from_utf8_lossy(unsafe { CStr::from_ptr(message) }.to_bytes()).into_owned()
            };
            let line = format!("{text} (code {code})");
            pylogsink::emit(level, "sqlite", "", 0, line.as_bytes());
        });
    }

    pub fn set_log(module: Option<&str>, ours: bool) -> PyResult<(String, String)> {
        let handle = match module {
            // SAFETY: a NUL-terminated path. The flags are Python's own
            // for extensions (RTLD_NOW, local): the file and its
            // dependencies load as `import` would load them, and the
            // module's initializer is not run (only Python calls it).
            Some(path) => unsafe {
                let c_path = CString::new(path)
                    .map_err(|_| PyRuntimeError::new_err("a NUL in the _sqlite3 module's path"))?;
                libc::dlopen(c_path.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL)
            },
            // SAFETY: NULL opens the program's global scope.
            None => unsafe { libc::dlopen(std::ptr::null(), libc::RTLD_NOW) },
        };
        if handle.is_null() {
            // SAFETY: dlerror's message of this thread's failed dlopen, a
            // NUL-terminated string (or NULL).
            let why = unsafe {
                let why = libc::dlerror();
                if why.is_null() {
                    String::new()
                } else {
                    CStr::from_ptr(why).to_string_lossy().into_owned()
                }
            };
            return Err(PyRuntimeError::new_err(format!(
                "pylogsink.sqlite cannot open Python's _sqlite3 module: {why}"
            )));
        }
        // SAFETY: a live handle and NUL-terminated names; dlsym looks in
        // the module and then in the libraries it depends on.
        let (config, version) = unsafe {
            (
                libc::dlsym(handle, c"sqlite3_config".as_ptr()),
                libc::dlsym(handle, c"sqlite3_libversion".as_ptr()),
            )
        };
        let result = if config.is_null() || version.is_null() {
            Err(PyRuntimeError::new_err(format!(
                "{} does not export SQLite's functions (SQLite is linked into it privately): \
                 pylogsink.sqlite cannot reach its log",
                module.unwrap_or("this Python")
            )))
        } else {
            // SAFETY: SQLite's own functions, of these types in every
            // SQLite 3.
            let (config, version) = unsafe {
                (
                    std::mem::transmute::<*mut c_void, Config>(config),
                    std::mem::transmute::<*mut c_void, Version>(version),
                )
            };
            // SAFETY: a NUL-terminated static string of SQLite's.
            let version = unsafe { CStr::from_ptr(version()) }
                .to_string_lossy()
                .into_owned();
            let function: Option<LogFn> = ours.then_some(log as LogFn);
            // SAFETY: SQLITE_CONFIG_LOG takes a log function pointer (or
            // NULL) and its argument; the function lives as long as the
            // process (this extension is never unloaded).
            let rc = unsafe { config(CONFIG_LOG, function, std::ptr::null_mut::<c_void>()) };
            match rc {
                0 => Ok((
                    crate::dl::defining_library(config as *mut c_void).unwrap_or_default(),
                    version,
                )),
                MISUSE => Err(PyRuntimeError::new_err(too_late(&version))),
                rc => Err(PyRuntimeError::new_err(format!(
                    "SQLite {version} refused its log function: sqlite3_config returned {rc}"
                ))),
            }
        };
        // The handle is never closed: before `import sqlite3`, it is the
        // only reference to SQLite, and closing it would unload SQLite
        // with its log function set (the import would load it afresh).
        // Python's import opens the same file and adds its own reference.
        result
    }

    /// Why SQLite refused: initialized before 3.42, which takes a log
    /// only before, and what to do.
    fn too_late(version: &str) -> String {
        format!(
            "SQLite {version} is already initialized (`import sqlite3` does it), and SQLite \
             before 3.42 takes a log function only before that. Call \
             pylogsink.sqlite.install() before the first `import sqlite3`: at the top of the \
             program; in Jupyter and IPython, which import sqlite3 at start, in a startup file \
             (~/.ipython/profile_default/startup/00-pylogsink.py); or for every program of an \
             environment, in a .pth file in site-packages holding the line \
             `import pylogsink.sqlite; pylogsink.sqlite.install()`"
        )
    }
}

#[cfg(not(any(target_os = "linux", target_os = "macos")))]
mod imp {
    use pyo3::exceptions::PyNotImplementedError;
    use pyo3::PyResult;

    /// Windows and the rest: not done yet.
    pub fn set_log(_module: Option<&str>, _ours: bool) -> PyResult<(String, String)> {
        Err(PyNotImplementedError::new_err(
            "pylogsink.sqlite works on Linux and macOS only",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::level_of;
    use pylogsink::Level;

    #[test]
    fn notices_and_warnings_keep_their_level_and_the_rest_are_errors() {
        // SQLITE_NOTICE_RECOVER_WAL (27 | 1<<8), SQLITE_WARNING_AUTOINDEX
        // (28 | 1<<8), SQLITE_ERROR, SQLITE_CANTOPEN, SQLITE_SCHEMA.
        assert_eq!(level_of(27 | (1 << 8)), Level::Info);
        assert_eq!(level_of(28 | (1 << 8)), Level::Warn);
        assert_eq!(level_of(27), Level::Info);
        assert_eq!(level_of(1), Level::Error);
        assert_eq!(level_of(14), Level::Error);
        assert_eq!(level_of(17), Level::Error);
    }
}
