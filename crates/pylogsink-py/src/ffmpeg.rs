//! `pylogsink.ffmpeg`: FFmpeg's log lines through pylogsink, with no C
//! compiler at the user's.
//!
//! PyAV's log callback takes the GIL on every `av_log`. PyAV frees a codec
//! with the GIL held and waits for its frame threads, and a frame thread
//! that logs waits for the GIL: the process hangs. The callback here
//! (ffmpeg_callback.c) never calls Python. `install` puts it into every
//! libavutil the process has loaded (PyAV's bundled copy, OpenCV's, the
//! system's), found by the symbol `av_log_set_callback` in each loaded
//! library; `uninstall` puts `av_log_default_callback` back. Listing the
//! loaded libraries and asking each for a symbol is per platform
//! ([`libavutils`]); the rest is shared.

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
#[cfg(any(target_os = "linux", target_os = "macos"))]
use std::ffi::CString;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::panic::catch_unwind;

/// Installs the callback into every loaded libavutil; their paths.
#[pyfunction]
fn _ffmpeg_install() -> PyResult<Vec<String>> {
    set_callbacks(true)
}

/// Puts FFmpeg's default callback back into every loaded libavutil; their
/// paths.
#[pyfunction]
fn _ffmpeg_uninstall() -> PyResult<Vec<String>> {
    set_callbacks(false)
}

/// Whether pylogsink's filter logs FFmpeg's lines of `av_level` (FFmpeg's
/// number: 48 DEBUG, 32 INFO...) from a context of no name (target
/// `ffmpeg`).
#[pyfunction]
fn _ffmpeg_logs(av_level: c_int) -> bool {
    // SAFETY: a pure function of ffmpeg_callback.c.
    let level = unsafe { pylogsink_py_ffmpeg_level(av_level) };
    pylogsink::enabled(level_of(level), "ffmpeg")
}

/// A note of `pylogsink.ffmpeg`'s own (target `pylogsink::ffmpeg`), at
/// Info, or Warn with `warn`.
#[pyfunction]
fn _ffmpeg_note(message: &str, warn: bool) {
    let level = if warn {
        pylogsink::Level::Warn
    } else {
        pylogsink::Level::Info
    };
    pylogsink::emit(level, "pylogsink::ffmpeg", "", 0, message.as_bytes());
}

/// Adds the module's functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_ffmpeg_install, m)?)?;
    m.add_function(wrap_pyfunction!(_ffmpeg_logs, m)?)?;
    m.add_function(wrap_pyfunction!(_ffmpeg_note, m)?)?;
    m.add_function(wrap_pyfunction!(_ffmpeg_uninstall, m)?)
}

/// FFmpeg's `void (*)(void *, int, const char *, va_list)`: the va_list is
/// passed on, never read, so a pointer stands for it.
type Callback = unsafe extern "C" fn(*mut c_void, c_int, *const c_char, *mut c_void);
type SetCallback = unsafe extern "C" fn(Callback);

extern "C" {
    /// ffmpeg_callback.c: pylogsink's level (0 trace to 4 error) for
    /// FFmpeg's.
    fn pylogsink_py_ffmpeg_level(av_level: c_int) -> c_int;
    /// ffmpeg_callback.c.
    fn pylogsink_py_ffmpeg_callback(
        avcl: *mut c_void,
        level: c_int,
        fmt: *const c_char,
        args: *mut c_void,
    );
}

/// One loaded copy of libavutil: its `av_log_set_callback` and
/// `av_log_default_callback`, and its path.
struct Libavutil {
    set_callback: *mut c_void,
    default_callback: *mut c_void,
    path: String,
}

/// pylogsink's level from the callback's number (0 trace to 4 error).
fn level_of(level: c_int) -> pylogsink::Level {
    use pylogsink::Level;
    match level {
        ..=0 => Level::Trace,
        1 => Level::Debug,
        2 => Level::Info,
        3 => Level::Warn,
        4.. => Level::Error,
    }
}

/// Whether the callback logs a record of `level` from `target`: 1 or 0.
///
/// # Safety
///
/// `target` is a NUL-terminated string.
#[no_mangle]
unsafe extern "C" fn pylogsink_py_ffmpeg_enabled(level: c_int, target: *const c_char) -> c_int {
    // SAFETY: the callback passes a NUL-terminated buffer of its own.
    let target = String::from_utf8_lossy(unsafe { CStr::from_ptr(target) }.to_bytes());
    catch_unwind(|| c_int::from(pylogsink::enabled(level_of(level), &target))).unwrap_or(0)
}

/// Logs one of FFmpeg's lines, as the C ABI's `pylogsink_emit`: any
/// thread, any lock, never Python.
///
/// # Safety
///
/// `target` is a NUL-terminated string; `text` is valid for reads of
/// `len` bytes.
#[no_mangle]
unsafe extern "C" fn pylogsink_py_ffmpeg_emit(
    level: c_int,
    target: *const c_char,
    text: *const c_char,
    len: usize,
) {
    // SAFETY: the callback passes its own NUL-terminated target and a
    // buffer of at least `len` bytes, alive for this call.
    let (target, text) = unsafe {
        (
            String::from_utf8_lossy(CStr::from_ptr(target).to_bytes()),
            std::slice::from_raw_parts(text.cast::<u8>(), len),
        )
    };
    // A panic must not unwind into FFmpeg.
    let _ = catch_unwind(|| pylogsink::emit(level_of(level), &target, "", 0, text));
}

/// Sets pylogsink's callback (`ours`) or FFmpeg's default into each loaded
/// copy of libavutil; the copies' paths.
fn set_callbacks(ours: bool) -> PyResult<Vec<String>> {
    let mut done: Vec<Libavutil> = Vec::new();
    for lib in libavutils() {
        // One copy may be found through several libraries (a libavcodec
        // finds its libavutil's symbols): the address tells them apart.
        if done.iter().any(|d| d.set_callback == lib.set_callback) {
            continue;
        }
        // SAFETY: both symbols are FFmpeg's functions of these types, in
        // every FFmpeg since 0.5.
        let (set_callback, callback) = unsafe {
            let set_callback: SetCallback = std::mem::transmute(lib.set_callback);
            let callback: Callback = if ours {
                pylogsink_py_ffmpeg_callback
            } else {
                std::mem::transmute::<*mut c_void, Callback>(lib.default_callback)
            };
            (set_callback, callback)
        };
        // SAFETY: FFmpeg's own API; the callback lives as long as the
        // process (this extension is never unloaded).
        unsafe { set_callback(callback) };
        done.push(lib);
    }
    if done.is_empty() {
        return Err(PyRuntimeError::new_err(
            "no libavutil is loaded in this process: import the library that loads FFmpeg \
             (`import av` for PyAV, `import cv2` for OpenCV) before pylogsink.ffmpeg.install()",
        ));
    }
    Ok(done.into_iter().map(|lib| lib.path).collect())
}

/// Each loaded library that exports FFmpeg's two callback functions (a
/// libavutil, or one that depends on it), the program's own left out (its
/// empty name would open the whole global scope).
#[cfg(any(target_os = "linux", target_os = "macos"))]
fn libavutils() -> Vec<Libavutil> {
    let mut found = Vec::new();
    for path in loaded_libraries() {
        // SAFETY: a NUL-terminated path; RTLD_NOLOAD opens nothing new, it
        // only counts one more reference to a loaded library.
        let handle = unsafe { libc::dlopen(path.as_ptr(), libc::RTLD_NOLOAD | libc::RTLD_LAZY) };
        if handle.is_null() {
            continue;
        }
        // SAFETY: a live handle and NUL-terminated names. dlsym looks in
        // the library and its dependencies.
        let (set_callback, default_callback) = unsafe {
            (
                libc::dlsym(handle, c"av_log_set_callback".as_ptr()),
                libc::dlsym(handle, c"av_log_default_callback".as_ptr()),
            )
        };
        if !set_callback.is_null() && !default_callback.is_null() {
            found.push(Libavutil {
                set_callback,
                default_callback,
                path: crate::dl::defining_library(set_callback)
                    .unwrap_or_else(|| path.to_string_lossy().into_owned()),
            });
        }
        // SAFETY: the reference dlopen counted above; the library stays
        // loaded for whoever loaded it.
        unsafe { libc::dlclose(handle) };
    }
    found
}

/// The paths of the libraries loaded in the process, the program's own
/// left out (its empty name would open the whole global scope).
#[cfg(target_os = "linux")]
fn loaded_libraries() -> Vec<CString> {
    unsafe extern "C" fn each(
        info: *mut libc::dl_phdr_info,
        _size: libc::size_t,
        paths: *mut c_void,
    ) -> c_int {
        // SAFETY: the loader passes a live entry, and `paths` is the
        // Vec given to dl_iterate_phdr below, on this thread.
        let (name, paths) = unsafe { ((*info).dlpi_name, &mut *paths.cast::<Vec<CString>>()) };
        if !name.is_null() {
            // SAFETY: a non-null name is NUL-terminated.
            let name = unsafe { CStr::from_ptr(name) };
            if !name.is_empty() {
                paths.push(name.to_owned());
            }
        }
        0
    }
    let mut paths: Vec<CString> = Vec::new();
    // SAFETY: `each` matches the callback's type and touches only
    // `paths`, which outlives the call.
    unsafe { libc::dl_iterate_phdr(Some(each), (&raw mut paths).cast()) };
    paths
}

/// The paths of the images loaded in the process, the program's own
/// (image 0) left out.
#[cfg(target_os = "macos")]
fn loaded_libraries() -> Vec<CString> {
    // dyld's own functions (libSystem), declared here: libc's are
    // deprecated in favour of another crate.
    extern "C" {
        fn _dyld_image_count() -> u32;
        fn _dyld_get_image_name(image_index: u32) -> *const c_char;
    }
    // SAFETY: dyld's count of the images loaded, no argument.
    let count = unsafe { _dyld_image_count() };
    (1..count)
        .filter_map(|i| {
            // SAFETY: any index may be asked: one that another thread's
            // unload put past the end gives NULL.
            let name = unsafe { _dyld_get_image_name(i) };
            // SAFETY: a non-null name is NUL-terminated.
            (!name.is_null()).then(|| unsafe { CStr::from_ptr(name) }.to_owned())
        })
        .collect()
}

/// Each loaded module that exports FFmpeg's two callback functions: on
/// Windows a module answers for its own exports only, so these are the
/// libavutil DLLs themselves (PyAV's `avutil-*.dll`).
#[cfg(windows)]
fn libavutils() -> Vec<Libavutil> {
    use windows_sys::Win32::Foundation::HMODULE;
    use windows_sys::Win32::System::LibraryLoader::{GetModuleFileNameW, GetProcAddress};
    use windows_sys::Win32::System::ProcessStatus::EnumProcessModules;
    use windows_sys::Win32::System::Threading::GetCurrentProcess;
    let mut modules: Vec<HMODULE> = vec![std::ptr::null_mut(); 1024];
    let mut needed = 0u32;
    loop {
        let size = (modules.len() * std::mem::size_of::<HMODULE>()) as u32;
        // SAFETY: the current process's pseudo handle, and a buffer of
        // `size` bytes that the call fills with module handles.
        if unsafe {
            EnumProcessModules(GetCurrentProcess(), modules.as_mut_ptr(), size, &mut needed)
        } == 0
        {
            return Vec::new();
        }
        if needed <= size {
            break;
        }
        modules.resize(
            needed as usize / std::mem::size_of::<HMODULE>() + 64,
            std::ptr::null_mut(),
        );
    }
    modules.truncate(needed as usize / std::mem::size_of::<HMODULE>());
    let mut found = Vec::new();
    for module in modules {
        // SAFETY: a module handle of this process (a module unloaded since
        // gives NULL) and NUL-terminated names.
        let (set_callback, default_callback) = unsafe {
            (
                GetProcAddress(module, c"av_log_set_callback".as_ptr().cast()),
                GetProcAddress(module, c"av_log_default_callback".as_ptr().cast()),
            )
        };
        let (Some(set_callback), Some(default_callback)) = (set_callback, default_callback) else {
            continue;
        };
        let mut name = vec![0u16; 32_768];
        // SAFETY: a module handle and a buffer of the length given.
        let len = unsafe { GetModuleFileNameW(module, name.as_mut_ptr(), name.len() as u32) };
        found.push(Libavutil {
            set_callback: set_callback as *mut c_void,
            default_callback: default_callback as *mut c_void,
            path: String::from_utf16_lossy(&name[..len as usize]),
        });
    }
    found
}

/// Elsewhere: no loader to ask.
#[cfg(not(any(target_os = "linux", target_os = "macos", windows)))]
fn libavutils() -> Vec<Libavutil> {
    Vec::new()
}
