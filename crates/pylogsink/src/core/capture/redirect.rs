//! Pointing fd 1 and fd 2 at the capture's pipes, and back at the
//! originals; letting a pipe go, drained on while a process that
//! inherited it may still write.

use super::streams::{close_all, Stream};
use crate::dest::capture::{CapturedTo, BUDGET};
use crate::dest::fd;
use crate::record::lock;
use crate::sys;
use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// Points `stream`'s descriptor at a new pipe, after copying what it was;
/// returns the pipe's read end.
pub(super) fn begin(stream: &Stream, route: CapturedTo) -> io::Result<RawFd> {
    let saved = stream.saved.load(Ordering::Relaxed);
    if saved < 0 {
        let copy = sys::dup_cloexec(stream.target)?;
        stream.saved.store(copy, Ordering::Relaxed);
    } else {
        // `saved` is a descriptor of ours (never closed), pointed at what
        // `target` is now.
        sys::dup_onto_cloexec(stream.target, saved)?;
    }
    let saved = stream.saved.load(Ordering::Relaxed);
    // The write end stays blocking, as writers of fd 1 and fd 2 expect.
    let [read, write] = sys::pipe_cloexec()?;
    sys::set_nonblocking(read);
    // Enlarged where the system allows (a larger pipe means fewer
    // wake-ups; failing is harmless).
    sys::set_pipe_size(write, BUDGET);
    {
        let mut waiting = lock(&stream.waiting);
        waiting.lines.clear();
    }
    stream
        .to_python
        .store(route == CapturedTo::Python, Ordering::Relaxed);
    stream.read.store(read, Ordering::Relaxed);
    if stream.target == fd::STDERR {
        fd::set_stderr_target(saved);
    }
    let pointed = sys::dup_onto(write, stream.target);
    close_all(&[write]);
    if let Err(err) = pointed {
        if stream.target == fd::STDERR {
            fd::set_stderr_target(fd::STDERR);
        }
        stream.read.store(-1, Ordering::Relaxed);
        close_all(&[read]);
        return Err(err);
    }
    stream.active.store(true, Ordering::Release);
    Ok(read)
}

/// Points `stream`'s descriptor back at the original.
pub(super) fn restore(stream: &Stream) {
    if stream.active.load(Ordering::Acquire) {
        let saved = stream.saved.load(Ordering::Relaxed);
        // Both are open descriptors of ours: nothing to fail.
        let _ = sys::dup_onto(saved, stream.target);
        if stream.target == fd::STDERR {
            fd::set_stderr_target(fd::STDERR);
        }
    }
}

/// How [`end`] lets a pipe go.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Ending {
    /// Closed: nothing else may have it (a capture that failed to begin,
    /// a forked child, whose parent still reads it).
    Close,
    /// Drained on by a thread of its own while a process that inherited it
    /// may still write to it ([`linger`]).
    Linger,
}

/// Restores `stream` and lets its pipe go (the drain thread is gone).
pub(super) fn end(stream: &Stream, ending: Ending) {
    restore(stream);
    let reading = lock(&stream.reading);
    let read = stream.read.swap(-1, Ordering::Relaxed);
    if read >= 0 {
        match ending {
            Ending::Close => close_all(&[read]),
            Ending::Linger => linger(read, stream.saved.load(Ordering::Relaxed)),
        }
    }
    drop(reading);
    stream.paused.store(false, Ordering::Release);
    stream.active.store(false, Ordering::Release);
}

/// After a capture, its pipe's read end `read`, once fd 1 and fd 2 point
/// at the originals again. A process started during the capture (a
/// server started in a notebook cell, a pool's workers) inherited the
/// write end and may write for long after: closing the read end would
/// kill it with SIGPIPE at its next write. So unless every write end is
/// closed already (the read says so: end of file), a thread goes on
/// draining the pipe into `saved`, the original descriptor, until every
/// writer is gone, and waits for room there as the writer would have: a
/// slow reader slows the writer, as without the capture.
pub(super) fn linger(read: RawFd, saved: RawFd) {
    let mut chunk = vec![0u8; 64 * 1024];
    let first = match sys::read(read, &mut chunk) {
        Ok(n) if n > 0 && saved >= 0 => n,
        Err(err) if err.kind() == io::ErrorKind::WouldBlock && saved >= 0 => 0,
        _ => return close_all(&[read]),
    };
    let spawned = std::thread::Builder::new()
        .name("pylogsink-linger".into())
        .spawn(move || {
            forward(saved, &chunk[..first]);
            loop {
                sys::wait_readable([read], None);
                match sys::read(read, &mut chunk) {
                    Ok(0) => break,
                    Ok(n) => forward(saved, &chunk[..n]),
                    Err(err) => match err.kind() {
                        io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => {}
                        _ => break,
                    },
                }
            }
            close_all(&[read]);
        });
    if spawned.is_err() {
        close_all(&[read]);
    }
}

/// Writes all of `text` to `fd`, waiting for room as long as it takes
/// (what `fd` refuses for good is dropped).
fn forward(fd: RawFd, text: &[u8]) {
    let mut done = 0;
    while done < text.len() {
        done += fd::write_with_room(fd, &text[done..], Duration::from_secs(1));
    }
}
