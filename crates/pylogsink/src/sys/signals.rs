//! The fatal signals on Linux and macOS: a handler that runs a function
//! once, then lets the signal do what it would have done.
//!
//! It puts the previous handler back (faulthandler's, when it is on, which
//! prints its traceback) and raises the signal again, so the exit status
//! and the core dump are unchanged. The function runs in a signal
//! handler: it may only make async-signal-safe calls.
//!
//! A signal the process may live through is told apart from a fatal one
//! by `siginfo`, when a handler of the program's own (Python's
//! `signal.signal`, as gunicorn's workers do for SIGABRT) was there first:
//! - sent by `kill` or `sigqueue`, from another process or this one: that
//!   handler is called in place and this one stays. The function runs
//!   only if that handler raised the signal again to end the process
//!   (faulthandler does): nothing is written while the process lives on,
//!   so nothing is written twice, and the next real crash still writes.
//! - raised by this process (`raise`, `abort()`): the two look the same
//!   here, and `abort()` ends the process as the handler returns, with the
//!   default action and no handler. So the function runs first, told that
//!   the process may live on (it forgets what it wrote), then that handler
//!   is called in place and this one stays.
//! - a fault (a null pointer, a bad instruction), or no handler of the
//!   program's: the process ends, as above.
//!
//! A handler installed after this one (Python's `signal.signal` in the
//! program, `faulthandler.enable()`) takes its place: the waiting lines
//! would be lost at the next crash. [`reinstate_crash_handler`] puts this
//! one back in front, the newer one becoming the previous handler it
//! calls. If that handler hands the signal back here (faulthandler puts
//! back what it found, this handler, and raises the signal again), this
//! one, entered a second time, lets the signal's default action end the
//! process, so the two never pass it to each other for good.

use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};
use std::sync::{Mutex, OnceLock, TryLockError};

#[cfg(not(target_vendor = "apple"))]
use libc::{SI_QUEUE, SI_USER};
/// `si_code` of a signal from `kill` (macOS's sys/signal.h; not in libc).
#[cfg(target_vendor = "apple")]
const SI_USER: libc::c_int = 0x10001;
/// `si_code` of a signal from `sigqueue` (macOS's sys/signal.h).
#[cfg(target_vendor = "apple")]
const SI_QUEUE: libc::c_int = 0x10002;

/// The signals that end a process.
const SIGNALS: [libc::c_int; 5] = [
    libc::SIGSEGV,
    libc::SIGBUS,
    libc::SIGILL,
    libc::SIGFPE,
    libc::SIGABRT,
];

/// The handlers that were there before, by the index of their signal.
type Actions = [libc::sigaction; SIGNALS.len()];

/// The handlers this one calls, by the index of their signal: null until
/// it is installed. Each change is a new array (the one it replaces is
/// leaked: the handler may be reading it), made under [`CHANGING`].
static PREVIOUS: AtomicPtr<Actions> = AtomicPtr::new(std::ptr::null_mut());

/// Held while the handlers are installed or put back (tried, never
/// waited for: a child forked while another thread held it finds it held).
static CHANGING: Mutex<()> = Mutex::new(());

/// What runs at a fatal signal: told whether the process may live on.
static ON_CRASH: OnceLock<fn(bool)> = OnceLock::new();

/// Installs the handler for the fatal signals, once per process: at the
/// first one, `on_crash(false)` runs; at a signal the process raised
/// itself and may live through, `on_crash(true)` (see the module's doc).
pub(crate) fn install_crash_handler(on_crash: fn(bool)) {
    if ON_CRASH.set(on_crash).is_err() {
        return;
    }
    put_in_front(|_| true);
}

/// Puts the handler back in front of any handler installed since it was
/// (see the module's doc). Called as lines start to wait (the first since
/// the last were taken), which is when it matters: a few system calls
/// then, none while lines go straight out; nothing if it was never
/// installed.
pub(crate) fn reinstate_crash_handler() {
    if ON_CRASH.get().is_some() {
        put_in_front(|current| current.sa_sigaction != on_fatal_signal as *const () as usize);
    }
}

/// Installs the handler for each signal whose current action `replace`
/// says to replace; the current one becomes the previous one it calls.
fn put_in_front(replace: impl Fn(&libc::sigaction) -> bool) {
    let _changing = match CHANGING.try_lock() {
        Ok(changing) => changing,
        Err(TryLockError::Poisoned(e)) => e.into_inner(),
        Err(TryLockError::WouldBlock) => return,
    };
    let current = SIGNALS.map(|signal| {
        // SAFETY: an all-zero `sigaction` is a valid value (SIG_DFL, no
        // flags, an empty mask); `sigaction` with a null new action only
        // writes the current one into it.
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            libc::sigaction(signal, std::ptr::null(), &mut old);
            old
        }
    });
    if !current.iter().any(&replace) {
        return;
    }
    let old = PREVIOUS.load(Ordering::Acquire);
    // SAFETY: a non-null PREVIOUS points to a leaked array, never freed.
    let mut previous = match unsafe { old.as_ref() } {
        Some(old) => *old,
        None => current,
    };
    for (i, action) in current.iter().enumerate() {
        if replace(action) {
            previous[i] = *action;
        }
    }
    PREVIOUS.store(Box::leak(Box::new(previous)), Ordering::Release);
    for (i, signal) in SIGNALS.into_iter().enumerate() {
        if !replace(&current[i]) {
            continue;
        }
        // SAFETY: `action` is fully initialized: zeroed, then the handler
        // (an `extern "C"` function with the three-argument signature that
        // SA_SIGINFO requires), the flags and an empty mask. The action it
        // replaces was stored in PREVIOUS above.
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
/// handler, as this returns. A signal a handler of the program's may take
/// goes to that handler in place (see the module's doc).
extern "C" fn on_fatal_signal(
    signal: libc::c_int,
    info: *mut libc::siginfo_t,
    context: *mut libc::c_void,
) {
    let index = SIGNALS.iter().position(|&s| s == signal);
    // SAFETY: a non-null PREVIOUS points to a leaked array, never freed.
    let previous = unsafe { PREVIOUS.load(Ordering::Acquire).as_ref() };
    let previous = previous.zip(index).map(|(p, i)| &p[i]);
    if RAN.load(Ordering::Acquire) && previous.is_some_and(is_function) {
        // Handed back by a handler this one called: the default ends it.
        // SAFETY: an all-zero `sigaction` is SIG_DFL with an empty mask;
        // sigaction and raise are async-signal-safe.
        unsafe {
            let default: libc::sigaction = std::mem::zeroed();
            libc::sigaction(signal, &default, std::ptr::null_mut());
            libc::raise(signal);
        }
        return;
    }
    let origin = origin(info);
    if let Some(previous) = previous.filter(|p| is_function(p) && origin != Origin::Fault) {
        if origin == Origin::Raised {
            // Perhaps abort(), which ends the process as this returns.
            if let Some(on_crash) = ON_CRASH.get() {
                on_crash(true);
            }
        }
        // SAFETY: `previous` is a handler function that `sigaction`
        // returned, called as the kernel would call it, with its flags'
        // signature; `sigpending` and `sigismember` are async-signal-safe.
        let raised_again = unsafe {
            call(previous, signal, info, context);
            let mut pending: libc::sigset_t = std::mem::zeroed();
            libc::sigpending(&mut pending);
            libc::sigismember(&pending, signal) == 1
        };
        if raised_again {
            // To end the process as it returns: the function runs now,
            // and the signal, handed back here, takes its default action.
            run_once();
        }
        return;
    }
    run_once();
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

/// Whether the function ran for a signal that ends the process.
static RAN: AtomicBool = AtomicBool::new(false);

/// Runs the function for a signal that ends the process, the first time
/// only.
fn run_once() {
    if !RAN.swap(true, Ordering::AcqRel) {
        if let Some(on_crash) = ON_CRASH.get() {
            on_crash(false);
        }
    }
}

/// Whether `action` is a handler function (not the default nor ignore).
fn is_function(action: &libc::sigaction) -> bool {
    action.sa_sigaction != libc::SIG_DFL && action.sa_sigaction != libc::SIG_IGN
}

/// Where a signal came from, as `siginfo` says.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Origin {
    /// `kill` or `sigqueue`, from this process or another.
    Sent,
    /// Raised by this process: `raise`, `abort()`, `pthread_kill`.
    Raised,
    /// The kernel's, for a fault; or unknown (no siginfo).
    Fault,
}

fn origin(info: *const libc::siginfo_t) -> Origin {
    if info.is_null() {
        return Origin::Fault;
    }
    // SAFETY: the kernel hands a valid siginfo_t to an SA_SIGINFO handler.
    origin_of(unsafe { (*info).si_code })
}

/// [`origin`] by `si_code`: a positive code is the kernel's (a fault),
/// but for macOS's `SI_USER` and `SI_QUEUE`; the others are a process's.
fn origin_of(code: libc::c_int) -> Origin {
    match code {
        SI_USER | SI_QUEUE => Origin::Sent,
        code if code > 0 => Origin::Fault,
        _ => Origin::Raised,
    }
}

/// Calls the handler of `action` as the kernel would.
///
/// # Safety
/// `action` is a handler function returned by `sigaction`; `info` and
/// `context` are the ones this handler was given.
unsafe fn call(
    action: &libc::sigaction,
    signal: libc::c_int,
    info: *mut libc::siginfo_t,
    context: *mut libc::c_void,
) {
    if action.sa_flags & libc::SA_SIGINFO != 0 {
        // SAFETY: with SA_SIGINFO, `sa_sigaction` is a three-argument handler.
        let handler = unsafe {
            std::mem::transmute::<
                libc::sighandler_t,
                extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void),
            >(action.sa_sigaction)
        };
        handler(signal, info, context);
    } else {
        // SAFETY: without SA_SIGINFO, it is a one-argument handler.
        let handler = unsafe {
            std::mem::transmute::<libc::sighandler_t, extern "C" fn(libc::c_int)>(
                action.sa_sigaction,
            )
        };
        handler(signal);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn siginfo_tells_where_a_signal_came_from() {
        assert_eq!(origin_of(SI_USER), Origin::Sent);
        assert_eq!(origin_of(SI_QUEUE), Origin::Sent);
        // SEGV_MAPERR, ILL_ILLOPC: the kernel's codes for faults.
        assert_eq!(origin_of(1), Origin::Fault);
        assert_eq!(origin_of(2), Origin::Fault);
        #[cfg(target_os = "linux")]
        assert_eq!(origin_of(libc::SI_TKILL), Origin::Raised);
        assert_eq!(origin_of(-100), Origin::Raised);
        assert_eq!(origin(std::ptr::null()), Origin::Fault);
    }
}
