//! The C runtime's calls that every platform has: its exit hooks and its
//! stdio buffers. Native code writes through C stdio, and a C `exit()`
//! ends the process without Python's exit; pylogsink meets both here.

/// The C runtime's errno for "not supported", as an `OSError` carries it.
pub(crate) const ENOTSUP: i32 = libc::ENOTSUP;

/// Writes out what C stdio's streams hold (`fflush(NULL)`): the output
/// capture's, on Linux and macOS.
#[cfg(unix)]
pub(crate) fn flush_c_stdio() {
    // SAFETY: fflush(NULL) flushes every open C stream; it takes no
    // pointer of ours.
    unsafe { libc::fflush(std::ptr::null_mut()) };
}

/// Runs `hook` at C `exit()` (`atexit`), before the hooks registered
/// earlier.
pub(crate) fn at_c_exit(hook: extern "C" fn()) {
    // SAFETY: `hook` is an `extern "C" fn()` that lives as long as the
    // process; the caller makes it never unwind, as `atexit` requires.
    unsafe { libc::atexit(hook) };
}
