//! The two captured streams, fd 1's and fd 2's, and the capture in
//! progress: what every part of the capture reads and writes.

use crate::dest::capture::{Lines, BUDGET};
use crate::dest::Kept;
use crate::sys;
use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::Mutex;
use std::thread::JoinHandle;

/// The index of fd 1's stream in [`STREAMS`].
pub(crate) const STDOUT: usize = 0;

/// The index of fd 2's stream in [`STREAMS`].
pub(crate) const STDERR: usize = 1;

/// One captured descriptor.
pub(crate) struct Stream {
    /// The descriptor captured: 1 or 2.
    pub(super) target: RawFd,
    /// A copy of what `target` was before the capture, or -1 (none made
    /// yet). Never closed once made.
    pub(super) saved: AtomicI32,
    /// The pipe's read end while captured, else -1.
    pub(super) read: AtomicI32,
    /// Captured now.
    pub(super) active: AtomicBool,
    /// Its lines go to Python ([`CapturedTo::Python`](crate::dest::capture::CapturedTo::Python)).
    pub(super) to_python: AtomicBool,
    /// Lines wait for Python.
    pub(super) pending: AtomicBool,
    /// How many times Python took lines ([`take_for_python`](super::take_for_python)) or finished
    /// writing them ([`handed_over`](super::handed_over)).
    pub(super) takes: AtomicU64,
    /// The drain thread leaves the pipe unread until Python takes lines.
    pub(super) paused: AtomicBool,
    /// Held by whoever reads the pipe (the drain thread, or a Python
    /// write that catches up first, [`catch_up`](super::catch_up)) until what it read is in
    /// `waiting`, and by whoever closes the pipe: the bytes go into lines in
    /// the order written, and a read end is never used after its close.
    pub(super) reading: Mutex<()>,
    pub(super) waiting: Mutex<Waiting>,
}

/// What a stream's drained bytes wait in.
pub(super) struct Waiting {
    pub(super) kept: Kept,
    pub(super) lines: Lines,
    /// The lines Python took last ([`take_for_python`](super::take_for_python)), until they are
    /// written ([`handed_over`](super::handed_over)): a crash in between writes them too, since
    /// a repeat is better than a loss.
    pub(super) handed: Kept,
}

impl Stream {
    pub(super) const fn new(target: RawFd) -> Stream {
        Stream {
            target,
            saved: AtomicI32::new(-1),
            read: AtomicI32::new(-1),
            active: AtomicBool::new(false),
            to_python: AtomicBool::new(false),
            pending: AtomicBool::new(false),
            takes: AtomicU64::new(0),
            paused: AtomicBool::new(false),
            reading: Mutex::new(()),
            waiting: Mutex::new(Waiting {
                kept: Kept::with_cap(BUDGET),
                lines: Lines::new(),
                handed: Kept::with_cap(BUDGET),
            }),
        }
    }
}

pub(super) static STREAMS: [Stream; 2] = [Stream::new(1), Stream::new(2)];

/// The capture in progress.
pub(super) struct State {
    /// Captures begun and not ended: nested ones join the outermost.
    pub(super) depth: usize,
    /// The drain thread's control pipe (read, write), or -1.
    pub(super) control: [RawFd; 2],
    pub(super) thread: Option<JoinHandle<()>>,
}

pub(super) static STATE: Mutex<State> = Mutex::new(State {
    depth: 0,
    control: [-1, -1],
    thread: None,
});

/// Whether a capture is on: set and cleared under [`STATE`]'s lock, read
/// without it (a thread that holds the GIL must not wait for a capture
/// that is ending).
pub(super) static ON: AtomicBool = AtomicBool::new(false);

/// Whether a capture is on.
#[inline]
pub(crate) fn is_on() -> bool {
    ON.load(Ordering::Relaxed)
}

/// A pipe that closes on `exec`, both ends non-blocking if `nonblocking`.
pub(super) fn pipe(nonblocking: bool) -> io::Result<[RawFd; 2]> {
    let fds = sys::pipe_cloexec()?;
    if nonblocking {
        fds.into_iter().for_each(sys::set_nonblocking);
    }
    Ok(fds)
}

/// Closes descriptors of ours that nothing else uses (negative ones are
/// none).
pub(super) fn close_all(fds: &[RawFd]) {
    fds.iter()
        .filter(|&&fd| fd >= 0)
        .for_each(|&fd| sys::close(fd));
}
