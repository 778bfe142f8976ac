//! The output capture on Windows: not available, and it says so.
//!
//! On Linux and macOS ([`capture`](self) there) fd 1 and fd 2 are pointed
//! at pipes that a native thread drains. On Windows each C runtime in a
//! process (the UCRT that CPython and MSVC builds use, the msvcrt.dll of
//! MinGW builds, a static copy in a library) keeps its own table of
//! descriptors, so pointing one runtime's fd 1 at a pipe leaves a library
//! that writes through another runtime, or through its own handle,
//! uncaptured; and a pipe has no `poll` to drain it without a thread per
//! end. Until that is done right, [`start`] fails with
//! [`UNSUPPORTED`], and everything else reports that no capture is on.

use crate::dest::capture::CapturedTo;
use crate::dest::{Kept, Taken};
use crate::record::HeldForFork;
use std::io;
use std::sync::MutexGuard;

/// The index of fd 1's stream.
pub(crate) const STDOUT: usize = 0;
/// The index of fd 2's stream.
pub(crate) const STDERR: usize = 1;

/// Why [`start`] fails on Windows.
pub(crate) const UNSUPPORTED: &str = "capturing fd 1 and fd 2 is not available on Windows: \
each C runtime in the process keeps its own descriptors, so a capture of one runtime's would \
miss a library that writes through another's; pylogsink's output capture runs on Linux";

/// Fails: see [`UNSUPPORTED`].
pub(crate) fn start(_routes: [Option<CapturedTo>; 2]) -> io::Result<bool> {
    Err(io::Error::new(io::ErrorKind::Unsupported, UNSUPPORTED))
}

/// No capture was on: false.
pub(crate) fn stop() -> bool {
    false
}

/// Never on.
pub(crate) fn is_on() -> bool {
    false
}

/// Nothing is captured, so nothing waits.
pub(crate) fn pending_for_python() -> bool {
    false
}

/// Nothing waits.
pub(crate) fn take_for_python(_index: usize) -> Taken {
    Taken::default()
}

/// Nothing was taken.
pub(crate) fn handed_over(_index: usize) {}

/// Nothing was taken.
pub(crate) fn write_original(_index: usize, _taken: Taken) {}

/// Nothing to wait for.
pub(crate) fn sync() {}

/// No capture: a writer never waits for one.
pub(crate) fn may_wait(_index: usize) -> bool {
    false
}

/// No capture: nothing goes to Python.
pub(crate) fn to_python(_index: usize) -> bool {
    false
}

/// Where the lines for Python stood when a write began: no capture, none.
#[derive(Clone, Copy)]
pub(crate) struct Mark;

/// No capture: no lines go to Python.
pub(crate) fn echo_marks() -> [Option<Mark>; 2] {
    [None, None]
}

/// No capture: nothing waits.
pub(crate) fn waiting_holds(_line: &[u8]) -> bool {
    false
}

/// No capture: nothing comes back.
pub(crate) fn take_echo(_marks: [Option<Mark>; 2], _text: &[u8]) -> bool {
    false
}

/// Nothing to catch up on.
pub(crate) fn catch_up(_index: usize, _left: &mut Option<usize>) -> bool {
    true
}

/// Never pressing.
pub(crate) fn pressing() -> bool {
    false
}

/// Nothing waits: no buffer visited.
pub(crate) fn visit(_text: &mut dyn FnMut(i32, &mut Kept)) -> usize {
    0
}

/// Nothing is being read.
pub(crate) fn stop_reading_at_crash() -> [Option<MutexGuard<'static, ()>>; 2] {
    [None, None]
}

/// Nothing was left unread.
pub(crate) fn write_rest_at_crash(_write: &mut dyn FnMut(i32, &[u8]), _forget: bool) {}

/// No `fork` on Windows: nothing to hold.
pub(crate) fn hold_for_fork() -> HeldForFork {
    Box::new(|_child| {})
}
