//! What Linux and macOS share: the clock, a short pause, thread ids and
//! names, through POSIX calls.

use std::time::Duration;

/// The time now, since the Unix epoch. One `clock_gettime`, without the
/// checked arithmetic of `SystemTime::duration_since`, which costs more
/// than the clock itself. Async-signal-safe.
pub(crate) fn now_since_epoch() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the whole call;
    // CLOCK_REALTIME always exists, so the call cannot fail.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    // The nanoseconds are below a second, as POSIX has them; a clock set
    // before 1970 reads as 1970.
    Duration::new(ts.tv_sec.max(0) as u64, ts.tv_nsec as u32)
}

/// What a descriptor is, as far as its use as a standard stream goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Descriptor {
    /// Not open.
    Closed,
    /// Open, and closed by `exec`: a standard stream never is (it would
    /// not have reached the program), while Python's `open()`, its
    /// sockets and pipes make every descriptor so.
    CloseOnExec,
    /// Open, and kept across `exec`, as a standard stream is (`dup2`
    /// makes it so).
    Inheritable,
}

/// What `fd` is. One `fcntl`; async-signal-safe.
pub(crate) fn descriptor(fd: i32) -> Descriptor {
    // SAFETY: F_GETFD only reads the descriptor's flags; an invalid `fd`
    // makes it fail with EBADF.
    match unsafe { libc::fcntl(fd, libc::F_GETFD) } {
        flags if flags < 0 => Descriptor::Closed,
        flags if flags & libc::FD_CLOEXEC != 0 => Descriptor::CloseOnExec,
        _ => Descriptor::Inheritable,
    }
}

/// Sleeps 100 µs. Async-signal-safe (`nanosleep`), for a signal handler
/// waiting for a lock to come free.
pub(crate) fn pause_briefly() {
    let pause = libc::timespec {
        tv_sec: 0,
        tv_nsec: 100_000,
    };
    // SAFETY: `pause` is a valid timespec; the remainder pointer may be
    // null.
    unsafe { libc::nanosleep(&pause, std::ptr::null_mut()) };
}

/// This thread's id as Python's `threading.get_ident` gives it:
/// `pthread_self`.
pub(crate) fn python_thread_id() -> u64 {
    // SAFETY: pthread_self has no preconditions.
    unsafe { libc::pthread_self() as u64 }
}

/// The OS's name for the calling thread (what `ps -L` shows), if it can
/// be read.
pub(crate) fn thread_name() -> Option<String> {
    let mut buf = [0u8; 64];
    // SAFETY: `buf` is valid for writes of its length, which is passed;
    // the call writes a NUL-terminated name of at most that length.
    let rc = unsafe {
        libc::pthread_getname_np(libc::pthread_self(), buf.as_mut_ptr().cast(), buf.len())
    };
    if rc != 0 {
        return None;
    }
    let len = buf.iter().position(|&b| b == 0).unwrap_or(0);
    Some(String::from_utf8_lossy(&buf[..len]).into_owned())
}

/// Runs `prepare` in the thread that calls `fork()` just before it, then
/// `parent` and `child` in the two processes just after it.
pub(crate) fn at_fork(prepare: extern "C" fn(), parent: extern "C" fn(), child: extern "C" fn()) {
    // SAFETY: the three handlers are `extern "C" fn()` that live as long as
    // the process; the caller makes them never unwind.
    unsafe { libc::pthread_atfork(Some(prepare), Some(parent), Some(child)) };
}
