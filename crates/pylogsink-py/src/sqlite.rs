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
//! (loaded as Python would, so that its dependencies resolve the same way,
//! but not initialized) and the exported `sqlite3_config`: [`find`] per
//! platform, the rest shared. Before SQLite 3.42 the log can only be set
//! before SQLite initializes, which `import sqlite3` does: `install` then
//! gets `SQLITE_MISUSE` and says so.

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::panic::catch_unwind;
use std::sync::Mutex;

/// `SQLITE_NOTICE`, `SQLITE_WARNING`: the primary result codes of the log's
/// two levels below an error.
const NOTICE: c_int = 27;
const WARNING: c_int = 28;
/// `SQLITE_CONFIG_LOG`, and `SQLITE_MISUSE`: what `sqlite3_config`
/// returns once SQLite is initialized, before 3.42.
const CONFIG_LOG: c_int = 16;
const MISUSE: c_int = 21;

/// SQLite's `void (*)(void *, int, const char *)`.
type LogFn = unsafe extern "C" fn(*mut c_void, c_int, *const c_char);
/// `int sqlite3_config(int, ...)`, given a log function (or none) and its
/// argument.
type Config = unsafe extern "C" fn(c_int, ...) -> c_int;
/// `const char *sqlite3_libversion(void)`.
type Version = unsafe extern "C" fn() -> *const c_char;

/// The SQLite that a `_sqlite3` module loads: its two functions used here,
/// and the library's path.
struct Sqlite {
    config: Config,
    version: Version,
    path: String,
}

/// pylogsink's level for a result code SQLite logs with: notices (a file
/// recovered) are Info, warnings (an automatic index) Warn, the rest
/// Error. The extended code's low byte is its primary code.
fn level_of(code: c_int) -> pylogsink::Level {
    match code & 0xff {
        NOTICE => pylogsink::Level::Info,
        WARNING => pylogsink::Level::Warn,
        _ => pylogsink::Level::Error,
    }
}

/// The log function: one record of target `sqlite`, the message and its
/// result code, as `no such table: nope in "select * from nope" (code 1)`.
unsafe extern "C" fn log(_arg: *mut c_void, code: c_int, message: *const c_char) {
    let level = level_of(code);
    // A panic must not unwind into SQLite.
    let _ = catch_unwind(|| {
        if !pylogsink::enabled(level, "sqlite") {
            return;
        }
        // The message's bytes as SQLite gave them: pylogsink escapes
        // what is not printable UTF-8.
        let mut line = if message.is_null() {
            Vec::new()
        } else {
            // SAFETY: SQLite passes a NUL-terminated message, alive for
            // this call.
            unsafe { CStr::from_ptr(message) }.to_bytes().to_vec()
        };
        line.extend_from_slice(format!(" (code {code})").as_bytes());
        pylogsink::emit(level, "sqlite", "", 0, &line);
    });
}

/// The SQLites whose log is pylogsink's function, by their
/// `sqlite3_config`'s address: setting it again would be refused before
/// 3.42, with a "misuse" message to that very function.
static INSTALLED: Mutex<Vec<usize>> = Mutex::new(Vec::new());

/// Sets pylogsink's log function (`ours`) or none in the SQLite that the
/// extension at `module` (the `_sqlite3` module's file; None: built into
/// the interpreter) loads; the library's path and SQLite's version. Set
/// where it is already set, nothing is asked of SQLite, and a record of
/// target `pylogsink::sqlite` says so.
#[pyfunction]
#[pyo3(signature = (module, ours))]
fn _sqlite_set_log(module: Option<&str>, ours: bool) -> PyResult<(String, String)> {
    let sqlite = find(module)?;
    // SAFETY: a NUL-terminated static string of SQLite's.
    let version = unsafe { CStr::from_ptr((sqlite.version)()) }
        .to_string_lossy()
        .into_owned();
    let key = sqlite.config as usize;
    let mut installed = INSTALLED.lock().unwrap_or_else(|e| e.into_inner());
    if ours && installed.contains(&key) {
        let note = format!(
            "pylogsink.sqlite.install(): the log of SQLite {version} ({}) is pylogsink's \
             already; nothing to do",
            sqlite.path
        );
        pylogsink::emit(
            pylogsink::Level::Info,
            "pylogsink::sqlite",
            "",
            0,
            note.as_bytes(),
        );
        return Ok((sqlite.path, version));
    }
    let function: Option<LogFn> = ours.then_some(log as LogFn);
    // SAFETY: SQLITE_CONFIG_LOG takes a log function pointer (or NULL) and
    // its argument; the function lives as long as the process (this
    // extension is never unloaded).
    let rc = unsafe { (sqlite.config)(CONFIG_LOG, function, std::ptr::null_mut::<c_void>()) };
    match rc {
        0 => {
            installed.retain(|&k| k != key);
            if ours {
                installed.push(key);
            }
            Ok((sqlite.path, version))
        }
        MISUSE => Err(PyRuntimeError::new_err(too_late(&version))),
        rc => Err(PyRuntimeError::new_err(format!(
            "SQLite {version} refused its log function: sqlite3_config returned {rc}"
        ))),
    }
}

/// Why SQLite refused: initialized before 3.42, which takes a log only
/// before, and what to do.
fn too_late(version: &str) -> String {
    format!(
        "SQLite {version} is already initialized (`import sqlite3` does it), and SQLite before \
         3.42 takes a log function only before that. Call pylogsink.sqlite.install() before the \
         first `import sqlite3`: at the top of the program; where something imports sqlite3 \
         before the program's code runs (IPython and Jupyter do, before their startup files), \
         in a .pth file in the environment's site-packages holding the line \
         `import pylogsink.sqlite; pylogsink.sqlite.install()`, which Python runs as it starts"
    )
}

/// The error for a module that exports no SQLite function.
fn not_exported(module: Option<&str>) -> PyErr {
    PyRuntimeError::new_err(format!(
        "{} does not export SQLite's functions (SQLite is linked into it privately): \
         pylogsink.sqlite cannot reach its log",
        module.unwrap_or("this Python")
    ))
}

/// Adds the module's functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_sqlite_set_log, m)?)
}

/// The SQLite that the extension at `module` loads (None: the program's
/// own symbols), the extension loaded as Python loads it (RTLD_NOW, local),
/// its initializer not run (only Python calls it).
#[cfg(any(target_os = "linux", target_os = "macos"))]
fn find(module: Option<&str>) -> PyResult<Sqlite> {
    let path = module
        .map(std::ffi::CString::new)
        .transpose()
        .map_err(|_| PyRuntimeError::new_err("a NUL in the _sqlite3 module's path"))?;
    // SAFETY: a NUL-terminated path, or NULL for the program's global
    // scope. The handle is never closed: before `import sqlite3` it is the
    // only reference to SQLite, and closing it would unload SQLite with
    // its log function set (the import would load it afresh). Python's
    // import opens the same file and adds its own reference.
    let handle = unsafe {
        libc::dlopen(
            path.as_ref().map_or(std::ptr::null(), |p| p.as_ptr()),
            libc::RTLD_NOW | libc::RTLD_LOCAL,
        )
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
            "pylogsink.sqlite cannot load Python's _sqlite3 module: {why}"
        )));
    }
    // SAFETY: a live handle and NUL-terminated names; dlsym looks in the
    // module and then in the libraries it depends on.
    let (config, version) = unsafe {
        (
            libc::dlsym(handle, c"sqlite3_config".as_ptr()),
            libc::dlsym(handle, c"sqlite3_libversion".as_ptr()),
        )
    };
    if config.is_null() || version.is_null() {
        return Err(not_exported(module));
    }
    // SAFETY: SQLite's own functions, of these types in every SQLite 3.
    let (config, version) = unsafe {
        (
            std::mem::transmute::<*mut c_void, Config>(config),
            std::mem::transmute::<*mut c_void, Version>(version),
        )
    };
    let path = crate::dl::defining_library(config as *mut c_void).unwrap_or_default();
    Ok(Sqlite {
        config,
        version,
        path,
    })
}

/// The SQLite that the extension at `module` loads: the `.pyd` loaded as
/// Python loads it (its own folder searched for its DLLs), its
/// initializer not run; SQLite is the `sqlite3.dll` it imports.
#[cfg(windows)]
fn find(module: Option<&str>) -> PyResult<Sqlite> {
    use windows_sys::Win32::System::LibraryLoader::{
        GetModuleFileNameW, GetModuleHandleW, GetProcAddress, LoadLibraryExW,
        LOAD_LIBRARY_SEARCH_DEFAULT_DIRS, LOAD_LIBRARY_SEARCH_DLL_LOAD_DIR,
    };
    let wide = |text: &str| text.encode_utf16().chain([0]).collect::<Vec<u16>>();
    let path = module.ok_or_else(|| not_exported(None))?;
    // SAFETY: a NUL-terminated wide path. The module is never freed, as
    // on POSIX: its reference keeps SQLite loaded until Python imports it.
    let pyd = unsafe {
        LoadLibraryExW(
            wide(path).as_ptr(),
            std::ptr::null_mut(),
            LOAD_LIBRARY_SEARCH_DEFAULT_DIRS | LOAD_LIBRARY_SEARCH_DLL_LOAD_DIR,
        )
    };
    if pyd.is_null() {
        return Err(PyRuntimeError::new_err(format!(
            "pylogsink.sqlite cannot load Python's _sqlite3 module: {}",
            std::io::Error::last_os_error()
        )));
    }
    // SAFETY: a NUL-terminated wide name; the DLL is loaded (the module
    // imports it) or the handle is NULL.
    let dll = unsafe { GetModuleHandleW(wide("sqlite3.dll").as_ptr()) };
    // GetProcAddress looks in one module only: SQLite's DLL, or the
    // module itself where SQLite is linked into it.
    let lookup = |name: &CStr| {
        // SAFETY: live module handles and a NUL-terminated name.
        unsafe {
            GetProcAddress(dll, name.as_ptr().cast())
                .or_else(|| GetProcAddress(pyd, name.as_ptr().cast()))
        }
    };
    let (Some(config), Some(version)) = (lookup(c"sqlite3_config"), lookup(c"sqlite3_libversion"))
    else {
        return Err(not_exported(module));
    };
    let holder = if dll.is_null() { pyd } else { dll };
    let mut name = vec![0u16; 32_768];
    // SAFETY: a live module handle and a buffer of the length given.
    let len = unsafe { GetModuleFileNameW(holder, name.as_mut_ptr(), name.len() as u32) };
    // SAFETY: SQLite's own functions, of these types in every SQLite 3.
    let (config, version) = unsafe {
        (
            std::mem::transmute::<unsafe extern "system" fn() -> isize, Config>(config),
            std::mem::transmute::<unsafe extern "system" fn() -> isize, Version>(version),
        )
    };
    Ok(Sqlite {
        config,
        version,
        path: String::from_utf16_lossy(&name[..len as usize]),
    })
}

/// Elsewhere: no loader to ask.
#[cfg(not(any(target_os = "linux", target_os = "macos", windows)))]
fn find(_module: Option<&str>) -> PyResult<Sqlite> {
    Err(pyo3::exceptions::PyNotImplementedError::new_err(
        "pylogsink.sqlite works on Linux, macOS and Windows only",
    ))
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
