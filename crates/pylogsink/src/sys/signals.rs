//! The fatal signals on Linux and macOS: a handler that runs a function
//! once, then lets the signal do what it would have done.
//!
//! It puts the previous handler back (faulthandler's, when it is on, which
//! prints its traceback) and raises the signal again, so the exit status
//! and the core dump are unchanged. The function runs in a signal
//! handler: it may only make async-signal-safe calls.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

/// The signals that end a process.
const SIGNALS: [libc::c_int; 5] = [
    libc::SIGSEGV,
    libc::SIGBUS,
    libc::SIGILL,
    libc::SIGFPE,
    libc::SIGABRT,
];

/// The handlers that were there before, by the index of their signal.
static PREVIOUS: OnceLock<[libc::sigaction; SIGNALS.len()]> = OnceLock::new();

/// What runs at the first fatal signal.
static ON_CRASH: OnceLock<fn()> = OnceLock::new();

/// Installs the handler for the fatal signals, once per process: at the
/// first one, `on_crash` runs.
pub(crate) fn install_crash_handler(on_crash: fn()) {
    if ON_CRASH.set(on_crash).is_err() {
        return;
    }
    let previous = SIGNALS.map(|signal| {
        // SAFETY: an all-zero `sigaction` is a valid value (SIG_DFL, no
        // flags, an empty mask); `sigaction` with a null new action only
        // writes the current one into it.
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            libc::sigaction(signal, std::ptr::null(), &mut old);
            old
        }
    });
    if PREVIOUS.set(previous).is_err() {
        return;
    }
    for signal in SIGNALS {
        // SAFETY: `action` is fully initialized: zeroed, then the handler
        // (an `extern "C"` function with the three-argument signature that
        // SA_SIGINFO requires), the flags and an empty mask. The previous
        // action was saved above.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_fatal_signal as *const () as usize;
            action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
}

/// The handler: runs the function (once, whichever signal comes first),
/// puts the previous handler back and raises the signal again. The signal
/// is blocked while this runs, so it is delivered, to the previous
/// handler, as this returns.
extern "C" fn on_fatal_signal(
    signal: libc::c_int,
    _info: *mut libc::siginfo_t,
    _context: *mut libc::c_void,
) {
    static RAN: AtomicBool = AtomicBool::new(false);
    if !RAN.swap(true, Ordering::AcqRel) {
        if let Some(on_crash) = ON_CRASH.get() {
            on_crash();
        }
    }
    let index = SIGNALS.iter().position(|&s| s == signal);
    let previous = PREVIOUS.get().zip(index).map(|(p, i)| &p[i]);
    // SAFETY: `previous` is an action that `sigaction` itself returned, and
    // a null one leaves SIG_DFL; sigaction and raise are async-signal-safe.
    unsafe {
        match previous {
            Some(previous) => libc::sigaction(signal, previous, std::ptr::null_mut()),
            None => {
                let mut default: libc::sigaction = std::mem::zeroed();
                default.sa_sigaction = libc::SIG_DFL;
                libc::sigaction(signal, &default, std::ptr::null_mut())
            }
        };
        libc::raise(signal);
    }
}
