//! The one way pylogsink takes a lock.
//!
//! A panic on some thread while it held one of pylogsink's locks (a
//! `Display` that panics inside a record, say) poisons the lock. Logging
//! must go on after that: the data behind every lock here stays valid
//! whatever point a panic left it at (buffers of whole lines, counters), so
//! a poisoned lock is taken as it is.

use std::sync::{Mutex, MutexGuard, TryLockError};
use std::time::{Duration, Instant};

/// Takes `mutex`, poisoned or not.
#[inline]
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// How long [`lock_at_crash`] waits for a lock another thread holds.
const CRASH_WAIT: Duration = Duration::from_millis(20);

/// Takes `mutex` from a signal handler, poisoned or not, if it comes free
/// within 20 ms: the other threads go on running while a crashing thread
/// writes what waits, and one of them (the drain thread of an output
/// capture, a thread handing its line over) may hold a buffer's lock for
/// a moment. None if it stays held, as it does when the crashing thread
/// itself holds it. Async-signal-safe: `try_lock` never blocks,
/// `clock_gettime` and `nanosleep` are on POSIX's list.
pub(crate) fn lock_at_crash<T>(mutex: &Mutex<T>) -> Option<MutexGuard<'_, T>> {
    let deadline = Instant::now() + CRASH_WAIT;
    loop {
        match mutex.try_lock() {
            Ok(guard) => return Some(guard),
            Err(TryLockError::Poisoned(e)) => return Some(e.into_inner()),
            Err(TryLockError::WouldBlock) if Instant::now() < deadline => {
                crate::sys::pause_briefly();
            }
            Err(TryLockError::WouldBlock) => return None,
        }
    }
}

/// A lock taken just before `fork()` and released just after it, in both
/// processes: called with `true` in the child, which may first reset what
/// the lock guards, and `false` in the parent. So no pylogsink lock is ever
/// held across a fork by a thread that the child will not have.
pub(crate) type HeldForFork = Box<dyn FnOnce(bool)>;

/// Holds `mutex` across a fork, changing nothing on either side.
pub(crate) fn hold_for_fork<T: 'static>(mutex: &'static Mutex<T>) -> HeldForFork {
    let guard = lock(mutex);
    Box::new(move |_child| drop(guard))
}

/// [`hold_for_fork`] for what belongs to the parent's threads (writes or
/// deliveries under way): the child starts with it empty, and leaks what
/// was there rather than freeing memory a thread it does not have was
/// using.
pub(crate) fn hold_for_fork_leaving_in_child<T: Default + 'static>(
    mutex: &'static Mutex<T>,
) -> HeldForFork {
    let mut guard = lock(mutex);
    Box::new(move |child| {
        if child {
            std::mem::forget(std::mem::take(&mut *guard));
        }
    })
}

/// Held by every unit test that changes process-wide state (the filter,
/// the destination, Python's levels, where fd 2's lines go), so that the
/// tests of one binary, which run on parallel threads, do not see each
/// other's settings.
#[cfg(test)]
pub(crate) fn serial() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    lock(&SERIAL)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_poisoned_lock_is_still_taken() {
        let m = Mutex::new(1);
        let _ = std::panic::catch_unwind(|| {
            let _held = m.lock().unwrap();
            panic!("poisons the lock");
        });
        assert!(m.is_poisoned());
        *lock(&m) += 1;
        assert_eq!(*lock(&m), 2);
        assert_eq!(lock_at_crash(&m).map(|g| *g), Some(2));
    }

    #[test]
    fn a_lock_held_a_moment_is_taken_at_a_crash_and_one_held_on_is_not() {
        let m = Mutex::new(0);
        std::thread::scope(|s| {
            let (tx, rx) = std::sync::mpsc::channel();
            let m = &m;
            s.spawn(move || {
                let _held = lock(m);
                tx.send(()).unwrap();
                std::thread::sleep(Duration::from_millis(2));
            });
            rx.recv().unwrap();
            assert!(lock_at_crash(m).is_some());
        });
        let _held = lock(&m);
        let started = Instant::now();
        assert!(lock_at_crash(&m).is_none());
        assert!(started.elapsed() >= CRASH_WAIT);
    }
}
