//! macOS: no `pipe2`, `dup3`, pipe sizes, `gettid`, `/proc` or
//! `pwritev2`. Pipes and descriptors get their close-on-exec flag in a
//! second call; a write that must not block goes through a second open
//! file description of a terminal (found by its path), `send` with
//! `MSG_DONTWAIT` on a socket, and the room `fstat` reports on a pipe,
//! read with the rule of [`macos_pipe_room`].
//!
//! Compiled and linted for macOS, not run: no macOS machine tests it.

use super::rules::macos_pipe_room;
use super::FileStatus;
use std::io;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};

/// Whether CPython before 3.13.8 ends a daemon thread that re-takes the
/// GIL once finalization began, in the middle of what it does (see
/// `daemon_avoids_python`): not known on macOS, where it is not run here.
pub(crate) const OLD_PYTHON_ENDS_DAEMON_THREADS: bool = false;

/// A pipe whose two ends close on `exec`. Not atomic: a `fork` and `exec`
/// in another thread between the two calls may inherit the ends.
pub(crate) fn pipe_cloexec() -> io::Result<[RawFd; 2]> {
    let mut fds = [-1; 2];
    // SAFETY: `fds` has room for the two descriptors pipe writes.
    check(unsafe { libc::pipe(fds.as_mut_ptr()) })?;
    for fd in fds {
        set_cloexec(fd);
    }
    Ok(fds)
}

/// Points `onto` at what `from` is, closing on `exec` (a second call).
pub(crate) fn dup_onto_cloexec(from: RawFd, onto: RawFd) -> io::Result<()> {
    // SAFETY: dup2 only changes the descriptor table; invalid descriptors
    // make it fail with EBADF.
    check(unsafe { libc::dup2(from, onto) })?;
    set_cloexec(onto);
    Ok(())
}

fn set_cloexec(fd: RawFd) {
    // SAFETY: F_SETFD on a descriptor of ours only sets its flag.
    unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
}

/// macOS has no call to size a pipe: its buffer grows by itself.
pub(crate) fn set_pipe_size(_fd: RawFd, _bytes: usize) -> Option<usize> {
    None
}

/// The system's id of the calling thread.
pub(crate) fn thread_id() -> u64 {
    let mut id = 0u64;
    // SAFETY: a null thread means the calling one; `id` is valid for the
    // write of one u64.
    unsafe { libc::pthread_threadid_np(0, &mut id) };
    id
}

/// Whether the calling thread is the process's first one.
pub(crate) fn is_main_thread() -> bool {
    // SAFETY: pthread_main_np has no preconditions.
    unsafe { libc::pthread_main_np() == 1 }
}

/// The process's name (`getprogname`).
pub(crate) fn process_name() -> Option<String> {
    // SAFETY: getprogname returns the process's name, a NUL-terminated
    // string that lives as long as the process, or NULL.
    let name = unsafe { libc::getprogname() };
    if name.is_null() {
        return None;
    }
    // SAFETY: not NULL, so a NUL-terminated string (see above).
    let name = unsafe { std::ffi::CStr::from_ptr(name) };
    Some(name.to_string_lossy().into_owned())
}

/// A write that cannot block, where macOS has one for the file: `send`
/// with `MSG_DONTWAIT` on a socket. Anything else is refused
/// (`EOPNOTSUPP`), as Linux refuses `RWF_NOWAIT` for files and terminals,
/// and the caller goes on to the other ways.
pub(crate) fn write_nowait(fd: RawFd, piece: &[u8]) -> io::Result<usize> {
    // SAFETY: `piece` is a live slice for the whole call, of which the
    // kernel reads `piece.len()` bytes; a descriptor that is no socket
    // makes the call fail with ENOTSOCK.
    let n = unsafe { libc::send(fd, piece.as_ptr().cast(), piece.len(), libc::MSG_DONTWAIT) };
    if n >= 0 {
        return Ok(n as usize);
    }
    let err = io::Error::last_os_error();
    match err.raw_os_error() {
        Some(libc::ENOTSOCK) => Err(io::Error::from_raw_os_error(libc::EOPNOTSUPP)),
        _ => Err(err),
    }
}

/// Whether [`write_nowait_vectored`] takes several parts in one write: not
/// here.
pub(crate) const WRITES_PARTS_NOWAIT: bool = false;

/// [`write_nowait`] of `parts` in one write: only a single part here, as
/// `send`; more than one is refused (`EOPNOTSUPP`), and the caller makes
/// them one piece first.
pub(crate) fn write_nowait_vectored(fd: RawFd, parts: &[io::IoSlice<'_>]) -> io::Result<usize> {
    match parts {
        [piece] => write_nowait(fd, piece),
        _ => Err(io::Error::from_raw_os_error(libc::EOPNOTSUPP)),
    }
}

/// A second, non-blocking open file description of the file behind `fd`,
/// opened by the path `F_GETPATH` gives (a terminal's `/dev/ttys003`), so
/// that `fd`'s own flags, shared with the rest of the process, stay as
/// they are. A pipe has no path: `None`.
pub(crate) fn reopen_nonblocking(fd: RawFd) -> Option<OwnedFd> {
    let mut path = [0u8; libc::PATH_MAX as usize];
    // SAFETY: F_GETPATH writes a NUL-terminated path of at most PATH_MAX
    // bytes into `path`, which has that room.
    if unsafe { libc::fcntl(fd, libc::F_GETPATH, path.as_mut_ptr()) } < 0 {
        return None;
    }
    let flags = libc::O_WRONLY | libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC;
    // SAFETY: `path` holds a NUL-terminated path and outlives the call.
    let twin = unsafe { libc::open(path.as_ptr().cast(), flags) };
    // SAFETY: a non-negative return is a new descriptor that nothing else
    // owns, so `OwnedFd` may close it.
    (twin >= 0).then(|| unsafe { OwnedFd::from_raw_fd(twin) })
}

/// Whether a pipe's room is read from `fstat` ([`pipe_room`]), and `poll`
/// may report room that rule denies: on macOS.
pub(crate) const PIPE_ROOM_BY_FSTAT: bool = true;

/// The room a pipe or FIFO has, from what `fstat` reports of it: the bytes
/// it holds (`st_size`) and its buffer (`st_blksize`), by
/// [`macos_pipe_room`]. Async-signal-safe.
pub(crate) fn pipe_room(FileStatus(st): &FileStatus) -> Option<u64> {
    if st.st_mode & libc::S_IFMT != libc::S_IFIFO {
        return None;
    }
    let held = u64::try_from(st.st_size).unwrap_or(0);
    let capacity = u64::try_from(st.st_blksize).unwrap_or(0);
    Some(macos_pipe_room(held, capacity))
}

fn check(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}
