//! Windows: standard error is a handle (`GetStdHandle`), not a descriptor
//! of ours, and has no write that cannot block and no `poll`; a thread's
//! name is its description; there is no `fork`; a crash is an exception or
//! the C runtime's `SIGABRT`.
//!
//! Built and run under wine here (a MinGW build, `x86_64-win7-windows-gnu`);
//! checked with clippy for `x86_64-pc-windows-msvc`.

use super::RawFd;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use windows_sys::core::PWSTR;
/// A Windows handle: what a descriptor of the C runtime stands for.
pub(crate) use windows_sys::Win32::Foundation::HANDLE;
use windows_sys::Win32::Foundation::{
    DuplicateHandle, LocalFree, DUPLICATE_SAME_ACCESS, ERROR_OPERATION_ABORTED,
    INVALID_HANDLE_VALUE,
};
use windows_sys::Win32::Storage::FileSystem::{
    GetFileType, WriteFile, FILE_TYPE_CHAR, FILE_TYPE_DISK, FILE_TYPE_PIPE,
};
use windows_sys::Win32::System::Console::{GetConsoleMode, GetStdHandle, STD_ERROR_HANDLE};
use windows_sys::Win32::System::Diagnostics::Debug::{
    SetUnhandledExceptionFilter, EXCEPTION_POINTERS, LPTOP_LEVEL_EXCEPTION_FILTER,
};
use windows_sys::Win32::System::Threading::{
    GetCurrentProcess, GetCurrentThread, GetCurrentThreadId, GetThreadDescription,
};
use windows_sys::Win32::System::IO::CancelSynchronousIo;

/// Whether CPython before 3.13.8 ends a daemon thread that re-takes the
/// GIL once finalization began, in the middle of what it does (see
/// `daemon_avoids_python`): on Windows, with `_endthreadex`.
pub(crate) const OLD_PYTHON_ENDS_DAEMON_THREADS: bool = true;

/// The address of the function `name` that the loaded `module` exports
/// (`GetProcAddress`).
///
/// # Safety
///
/// `module` is the handle of a module that stays loaded.
pub(crate) unsafe fn module_symbol(
    module: *mut std::ffi::c_void,
    name: &std::ffi::CStr,
) -> Option<*mut std::ffi::c_void> {
    #[link(name = "kernel32")]
    extern "system" {
        fn GetProcAddress(
            module: *mut std::ffi::c_void,
            name: *const std::ffi::c_char,
        ) -> *mut std::ffi::c_void;
    }
    // SAFETY: the caller keeps `module` loaded; `name` is NUL-terminated.
    let f = unsafe { GetProcAddress(module, name.as_ptr()) };
    (!f.is_null()).then_some(f)
}

/// The time now, since the Unix epoch.
pub(crate) fn now_since_epoch() -> Duration {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
}

/// Sleeps 100 µs (or the system's shortest sleep).
pub(crate) fn pause_briefly() {
    std::thread::sleep(Duration::from_micros(100));
}

/// This thread's id as Python's `threading.get_ident` gives it:
/// `GetCurrentThreadId`.
pub(crate) fn python_thread_id() -> u64 {
    thread_id()
}

/// The system's id of the calling thread.
pub(crate) fn thread_id() -> u64 {
    // SAFETY: GetCurrentThreadId has no preconditions.
    u64::from(unsafe { GetCurrentThreadId() })
}

/// The calling thread's description, which `SetThreadDescription` sets
/// (as Rust's `std::thread::Builder::name` does); empty where nobody named
/// the thread, which is then named for its id (`native-<tid>`).
pub(crate) fn thread_name() -> Option<String> {
    let mut text: PWSTR = std::ptr::null_mut();
    // SAFETY: the pseudo-handle of the calling thread is always valid;
    // `text` receives a string the system allocated, freed below.
    let result = unsafe { GetThreadDescription(GetCurrentThread(), &mut text) };
    if result < 0 || text.is_null() {
        return None;
    }
    // SAFETY: on success `text` is a NUL-terminated UTF-16 string, read up
    // to its NUL.
    let name = unsafe {
        let len = (0..).take_while(|&i| *text.add(i) != 0).count();
        String::from_utf16_lossy(std::slice::from_raw_parts(text, len))
    };
    // SAFETY: GetThreadDescription allocated `text` with LocalAlloc.
    unsafe { LocalFree(text.cast()) };
    Some(name)
}

/// Not known on Windows, where nothing asks it but the thread naming.
pub(crate) fn is_main_thread() -> bool {
    false
}

/// Not read on Windows (see [`thread_name`]).
pub(crate) fn process_name() -> Option<String> {
    None
}

/// Windows has no `fork`: nothing to run around it.
pub(crate) fn at_fork(
    _prepare: extern "C" fn(),
    _parent: extern "C" fn(),
    _child: extern "C" fn(),
) {
}

/// What a handle behind standard error is, for how to write to it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum HandleKind {
    /// A file on disk, or `NUL`: a write never waits for a reader.
    File,
    /// A console, which a paused window or a selection can stop.
    Console,
    /// A pipe, which a reader that does not read stops.
    Pipe,
    /// Closed, or none (a program without a console).
    Missing,
}

/// The handle that writes to `fd` reach: standard error's std handle for
/// fd 2 (the C runtime's `dup2` onto fd 2 in a console program updates it,
/// as Python's `os.dup2` does), the C runtime's for another descriptor.
pub(crate) fn handle_of(fd: RawFd) -> HANDLE {
    if fd == 2 {
        // SAFETY: GetStdHandle has no preconditions.
        return unsafe { GetStdHandle(STD_ERROR_HANDLE) };
    }
    // SAFETY: `_get_osfhandle` only reads the C runtime's table; a
    // descriptor that is not open gives INVALID_HANDLE_VALUE.
    unsafe { libc::get_osfhandle(fd) as HANDLE }
}

/// What `handle` is.
pub(crate) fn handle_kind(handle: HANDLE) -> HandleKind {
    if handle.is_null() || handle == INVALID_HANDLE_VALUE {
        return HandleKind::Missing;
    }
    // SAFETY: GetFileType only asks about the handle; a bad one gives
    // FILE_TYPE_UNKNOWN.
    match unsafe { GetFileType(handle) } {
        FILE_TYPE_DISK => HandleKind::File,
        FILE_TYPE_CHAR if is_console(handle) => HandleKind::Console,
        // `NUL` is a character device that is no console.
        FILE_TYPE_CHAR => HandleKind::File,
        FILE_TYPE_PIPE => HandleKind::Pipe,
        _ => HandleKind::Pipe,
    }
}

/// Whether `handle` is a console (a `NUL` device is not).
pub(crate) fn is_console(handle: HANDLE) -> bool {
    let mut mode = 0;
    // SAFETY: `mode` is valid for the write of one u32; a handle that is
    // no console makes the call fail.
    unsafe { GetConsoleMode(handle, &mut mode) != 0 }
}

/// One `WriteFile`, which may block (the caller chooses where it runs).
pub(crate) fn write_handle(handle: HANDLE, bytes: &[u8]) -> io::Result<usize> {
    let len = u32::try_from(bytes.len()).unwrap_or(u32::MAX);
    let mut written = 0u32;
    // SAFETY: `bytes` is live for the whole call and the system reads at
    // most `len` bytes of it; `written` is valid for one u32; no
    // OVERLAPPED: a synchronous write.
    let ok = unsafe {
        WriteFile(
            handle,
            bytes.as_ptr(),
            len,
            &mut written,
            std::ptr::null_mut(),
        )
    };
    if ok == 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(written as usize)
    }
}

/// A handle on the calling thread that other threads may use (to cancel
/// its blocking write): closed never, as the thread it names lives as
/// long as the process.
pub(crate) fn own_thread_handle() -> HANDLE {
    let mut handle: HANDLE = std::ptr::null_mut();
    // SAFETY: the pseudo-handles of the current process and thread are
    // always valid; DuplicateHandle writes one real handle into `handle`.
    unsafe {
        DuplicateHandle(
            GetCurrentProcess(),
            GetCurrentThread(),
            GetCurrentProcess(),
            &mut handle,
            0,
            0,
            DUPLICATE_SAME_ACCESS,
        )
    };
    handle
}

/// Whether a write's error `code` says [`cancel_write`] ended it.
pub(crate) fn was_cancelled(code: i32) -> bool {
    code == ERROR_OPERATION_ABORTED as i32
}

/// Asks the system to end the blocking write the thread of `thread` is in;
/// false if it was not in one (yet).
pub(crate) fn cancel_write(thread: HANDLE) -> bool {
    // SAFETY: `thread` is a real handle on a live thread
    // ([`own_thread_handle`]).
    unsafe { CancelSynchronousIo(thread) != 0 }
}

/// What runs at a crash: told whether the process may live on.
static ON_CRASH: OnceLock<fn(bool)> = OnceLock::new();
/// The filter for unhandled exceptions that was there before.
static PREVIOUS_FILTER: OnceLock<LPTOP_LEVEL_EXCEPTION_FILTER> = OnceLock::new();
/// The C runtime's handler for `SIGABRT` that was there before.
static PREVIOUS_ABORT: AtomicUsize = AtomicUsize::new(libc::SIG_DFL);

/// Installs what runs `on_crash` once, at the first crash: an exception
/// nobody handles (an access violation; faulthandler's handler, which
/// Python adds first, still runs before it), or `abort()` (the C
/// runtime's `SIGABRT`). Then the crash goes on as it would have. A
/// `SIGABRT` that a handler of the program's (Python's `signal.signal`)
/// takes may be `raise`'s, which the process lives through, or `abort()`'s,
/// which ends it as the handler returns: `on_crash(true)` runs first, and
/// that handler is called in place.
pub(crate) fn install_crash_handler(on_crash: fn(bool)) {
    if ON_CRASH.set(on_crash).is_err() {
        return;
    }
    // SAFETY: `on_exception` has the filter's signature and lives as long
    // as the process; the previous filter is kept to be called in turn.
    let previous = unsafe { SetUnhandledExceptionFilter(Some(on_exception)) };
    let _ = PREVIOUS_FILTER.set(previous);
    abort_handler_in_front();
}

/// Puts the handler for `abort()` back in front of one installed after it
/// (Python's `signal.signal(SIGABRT, ...)`), which becomes the previous
/// handler it calls. The C runtime can only be asked by setting one.
pub(crate) fn reinstate_crash_handler() {
    if ON_CRASH.get().is_some() {
        abort_handler_in_front();
    }
}

fn abort_handler_in_front() {
    let ours = on_abort as *const () as libc::sighandler_t;
    // SAFETY: `on_abort` is an `extern "C" fn(c_int)`, what the C runtime's
    // `signal` takes, and lives as long as the process.
    let previous = unsafe { libc::signal(libc::SIGABRT, ours) };
    if previous != ours && previous != libc::SIG_ERR as libc::sighandler_t {
        PREVIOUS_ABORT.store(previous, Ordering::Release);
    }
}

fn run_once() {
    static RAN: AtomicBool = AtomicBool::new(false);
    if !RAN.swap(true, Ordering::AcqRel) {
        if let Some(on_crash) = ON_CRASH.get() {
            on_crash(false);
        }
    }
}

unsafe extern "system" fn on_exception(info: *const EXCEPTION_POINTERS) -> i32 {
    run_once();
    match PREVIOUS_FILTER.get().copied().flatten() {
        // SAFETY: the filter that was installed before, called with what
        // the system gave this one.
        Some(previous) => unsafe { previous(info) },
        // EXCEPTION_CONTINUE_SEARCH: the system's own handling goes on.
        None => 0,
    }
}

extern "C" fn on_abort(signal: libc::c_int) {
    let previous = PREVIOUS_ABORT.load(Ordering::Acquire);
    if previous != libc::SIG_DFL && previous != libc::SIG_IGN {
        if let Some(on_crash) = ON_CRASH.get() {
            on_crash(true);
        }
        // SAFETY: the handler that was there before, a C runtime signal
        // handler (`extern "C" fn(c_int)`), called as the C runtime would.
        // The C runtime reset SIGABRT to its default before calling this
        // one: it is put back for the next, if the process lives on.
        unsafe {
            let handler =
                std::mem::transmute::<libc::sighandler_t, extern "C" fn(libc::c_int)>(previous);
            handler(signal);
            libc::signal(signal, on_abort as *const () as libc::sighandler_t);
        }
        return;
    }
    run_once();
    // SAFETY: the handler that was there before, put back, and the signal
    // raised again for it (abort() then ends the process as it would have).
    unsafe {
        libc::signal(signal, previous);
        libc::raise(signal);
    }
}

/// Whether `handle` is a console that takes virtual terminal sequences
/// (colour): Windows Terminal, or a console a program switched to them.
pub(crate) fn console_takes_colour(handle: HANDLE) -> bool {
    use windows_sys::Win32::System::Console::ENABLE_VIRTUAL_TERMINAL_PROCESSING;
    let mut mode = 0;
    // SAFETY: `mode` is valid for the write of one u32; a handle that is
    // no console makes the call fail.
    let console = unsafe { GetConsoleMode(handle, &mut mode) != 0 };
    console && mode & ENABLE_VIRTUAL_TERMINAL_PROCESSING != 0
}
