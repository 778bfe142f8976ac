//! The one way pylogsink takes a lock.
//!
//! A panic on some thread while it held one of pylogsink's locks (a
//! `Display` that panics inside a record, say) poisons the lock. Logging
//! must go on after that: the data behind every lock here stays valid
//! whatever point a panic left it at (buffers of whole lines, counters), so
//! a poisoned lock is taken as it is.

use std::sync::{Mutex, MutexGuard};

/// Takes `mutex`, poisoned or not.
#[inline]
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
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
    }
}
