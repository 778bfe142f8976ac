//! `fork()`: no pylogsink lock held across it, and a child that starts
//! with nothing waiting.
//!
//! `fork()` copies only the thread that calls it. A lock that another
//! thread held at that moment (a native thread in the middle of a log
//! line) would stay held forever in the child, and its next call, its exit
//! or its next line would hang. Processes fork while native threads log all
//! the time: multiprocessing's default start method on Linux before 3.14,
//! PyTorch's DataLoader workers, gunicorn. So `pthread_atfork` handlers
//! take every pylogsink lock before the fork, in one fixed order, and
//! release them after it in both processes.
//!
//! The child starts with empty queues and, on the thread that forked,
//! empty buffers, and a registry of that thread alone: what waited in the
//! parent is the parent's to write or deliver, so no line or record is
//! written by both. A fork from inside a call (`os.fork()` in a binding's
//! callback) goes on in the child with that call, whose lines kept so far
//! stay the parent's. The Python side (the delivery thread) is started
//! again in the child when it is needed.

use super::shared::hold_for_fork as hold_call;
use super::thread::THREAD;
use super::{capture, queue, registry};
use crate::control::{filter, pylevels};
use crate::dest::{fd, in_flight, pending, prompt};
use crate::record::HeldForFork;
use crate::sys;
use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Once};

thread_local! {
    /// The locks the forking thread took in [`prepare`], in order.
    static HELD: RefCell<Vec<HeldForFork>> = const { RefCell::new(Vec::new()) };
}

/// Installs the handlers, once per process.
pub(crate) fn install() {
    static INSTALLED: Once = Once::new();
    // The three handlers never unwind: they catch panics.
    INSTALLED.call_once(|| sys::at_fork(prepare, in_parent, in_child));
}

/// Before the fork: takes every lock, the output capture's first, then the
/// forking thread's own call (a worker may hold it), then the process-wide
/// ones. No code of pylogsink takes one of these while it holds another,
/// but for the capture's, held while its drain thread ends (and that
/// thread takes only the ones after it), so the order cannot deadlock.
extern "C" fn prepare() {
    let _ = std::panic::catch_unwind(|| {
        let own = THREAD.try_with(|t| Arc::clone(&t.shared)).ok();
        let mut held = Vec::new();
        // The output capture's first: a capture that is ending holds its
        // lock while its drain thread finishes, which may take the others
        // (fd 2's twin descriptor, the delivery thread's wake-up).
        held.push(capture::hold_for_fork());
        if let Some(own) = &own {
            held.push(hold_call(Arc::clone(own)));
        }
        held.push(registry::hold_for_fork(own));
        held.push(queue::hold_for_fork());
        held.extend(pending::queue::hold_for_fork());
        held.push(pending::flight::hold_for_fork());
        held.push(in_flight::hold_for_fork());
        held.extend(filter::hold_for_fork());
        held.push(pylevels::hold_for_fork());
        held.push(fd::hold_for_fork());
        let _ = HELD.try_with(|h| *h.borrow_mut() = held);
    });
}

extern "C" fn in_parent() {
    release(false);
}

extern "C" fn in_child() {
    GENERATION.fetch_add(1, Ordering::Relaxed);
    // Nothing waits in the child: a request the parent had in flight is
    // the parent's.
    prompt::answered();
    release(true);
}

/// How many forks this process descends from since the handlers were
/// installed: what was started in another generation (a thread) does not
/// exist in this one.
static GENERATION: AtomicU64 = AtomicU64::new(0);

/// This process's generation (see [`GENERATION`]).
pub(crate) fn generation() -> u64 {
    GENERATION.load(Ordering::Relaxed)
}

/// After the fork: lets go of the locks, last taken first; in the child,
/// each resets what it guards first.
fn release(child: bool) {
    let _ = std::panic::catch_unwind(|| {
        let held = HELD.try_with(|h| std::mem::take(&mut *h.borrow_mut()));
        for hold in held.unwrap_or_default().into_iter().rev() {
            hold(child);
        }
        if child {
            let _ = THREAD.try_with(|t| t.after_fork_in_child());
        }
    });
}

// They need POSIX pipes (core/testing.rs).
#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use crate::core::emit::emit_record;
    use crate::core::testing::Pipe;
    use crate::record::{Level, Record};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Duration;

    fn log(message: &str) {
        emit_record(&Record {
            level: Level::Info,
            target: "rt",
            file: "rt.rs",
            line: 1,
            message: message.as_bytes(),
            fields: None,
        });
    }

    /// What a child does: it must find nothing waiting, then log, write the
    /// queue and make a call without hanging. Its exit status says how it
    /// went; it never returns.
    fn child() -> ! {
        let clean = !queue::queue_pending() && !pending::queue::waiting();
        log("in the child");
        queue::write_queue(Duration::ZERO);
        drop(registry::take_all_pending());
        THREAD.with(|t| {
            t.enter(|| true, || -1);
            log("in the child's call");
            t.leave();
        });
        // Nothing of the parent's runs (no atexit hook, no destructor).
        sys::exit_now(if clean { 0 } else { 3 })
    }

    #[test]
    fn children_forked_while_threads_log_never_hang_and_start_clean() {
        // fd 2 is a one-page pipe nobody reads: the threads fill it, then
        // the queue, whose lock they take all the time.
        let _pipe = Pipe::new();
        install();
        let stop = Arc::new(AtomicBool::new(false));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let stop = Arc::clone(&stop);
                std::thread::spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        log("busy");
                    }
                })
            })
            .collect();
        let (mut hung, mut failed) = (0, 0);
        for _ in 0..50 {
            std::thread::sleep(Duration::from_millis(1));
            // SAFETY: the child only logs through pylogsink and `_exit`s
            // (see `child`); glibc's own atfork handlers keep malloc usable.
            let Some(pid) = (unsafe { sys::fork() }) else {
                child();
            };
            match sys::wait_child(pid, Duration::from_secs(5)) {
                Some(true) => {}
                Some(false) => failed += 1,
                None => hung += 1,
            }
        }
        stop.store(true, Ordering::Relaxed);
        threads.into_iter().for_each(|t| t.join().unwrap());
        assert_eq!((hung, failed), (0, 0), "children hung, children failed");
    }
}
