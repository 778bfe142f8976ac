//! The fatal signals on Linux and macOS: a handler that runs a function
//! once, then lets the signal do what it would have done.
//!
//! It puts the previous handler back (faulthandler's, when it is on, which
//! prints its traceback) and raises the signal again, so the exit status
//! and the core dump are unchanged. The function runs in a signal
//! handler: it may only make async-signal-safe calls.
//!
//! One exception: a signal another process sent (`kill -ABRT`) to a
//! process that handles it (Python's `signal.signal`, as gunicorn's workers
//! do for SIGABRT) need not end the process. There the previous handler is
//! called in place, this one stays, and the function runs only if that
//! handler raised the signal again to end the process (faulthandler does):
//! the waiting lines are not written while the process lives on, so they
//! are neither written twice nor missing at the next real crash.
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

/// What runs at the first fatal signal.
static ON_CRASH: OnceLock<fn()> = OnceLock::new();

/// Installs the handler for the fatal signals, once per process: at the
/// first one, `on_crash` runs.
pub(crate) fn install_crash_handler(on_crash: fn()) {
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
/// handler, as this returns. A signal another process sent, to a process
/// with a handler of its own, goes to that handler in place (see the
/// module's doc).
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
    if let Some(previous) = previous.filter(|p| is_function(p) && sent_by_another_process(info)) {
        // SAFETY: `previous` is a handler function that `sigaction`
        // returned, called as the kernel would call it, with its flags'
        // signature; `sigpending` and `sigismember` are async-signal-safe.
        unsafe {
            call(previous, signal, info, context);
            let mut pending: libc::sigset_t = std::mem::zeroed();
            libc::sigpending(&mut pending);
            if libc::sigismember(&pending, signal) != 1 {
                // Handled: the process lives on, and this handler with it.
                return;
            }
        }
        // It raised the signal again, to end the process as it returns.
        run_once();
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

/// Whether the function ran.
static RAN: AtomicBool = AtomicBool::new(false);

/// Runs the function, the first time only.
fn run_once() {
    if !RAN.swap(true, Ordering::AcqRel) {
        if let Some(on_crash) = ON_CRASH.get() {
            on_crash();
        }
    }
}

/// Whether `action` is a handler function (not the default nor ignore).
fn is_function(action: &libc::sigaction) -> bool {
    action.sa_sigaction != libc::SIG_DFL && action.sa_sigaction != libc::SIG_IGN
}

/// Whether the signal came from `kill` or `sigqueue` in another process,
/// not from this one (`abort()`, `raise`) nor from a fault.
fn sent_by_another_process(info: *const libc::siginfo_t) -> bool {
    if info.is_null() {
        return false;
    }
    // SAFETY: the kernel hands a valid siginfo_t to an SA_SIGINFO handler;
    // its sender's pid is set for SI_USER and SI_QUEUE.
    unsafe {
        let code = (*info).si_code;
        (code == SI_USER || code == SI_QUEUE) && sender(info) != libc::getpid()
    }
}

/// The pid of the process that sent the signal.
///
/// # Safety
/// `info` points to a siginfo_t of SI_USER or SI_QUEUE.
#[cfg(not(target_vendor = "apple"))]
unsafe fn sender(info: *const libc::siginfo_t) -> libc::pid_t {
    // SAFETY: for SI_USER and SI_QUEUE the kill fields are the ones set.
    unsafe { (*info).si_pid() }
}

/// The pid of the process that sent the signal.
///
/// # Safety
/// `info` points to a siginfo_t of SI_USER or SI_QUEUE.
#[cfg(target_vendor = "apple")]
unsafe fn sender(info: *const libc::siginfo_t) -> libc::pid_t {
    // SAFETY: `si_pid` is a plain field of the platform's siginfo_t.
    unsafe { (*info).si_pid }
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
