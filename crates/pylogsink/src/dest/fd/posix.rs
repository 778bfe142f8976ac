//! Linux and macOS: each piece is written with a write that cannot block:
//!
//! - `pwritev2(.., RWF_NOWAIT)` where the kernel supports it for the file
//!   (pipes, sockets, /dev/null on current Linux): one system call, and the
//!   kernel checks for room and writes in one step, so no other writer can
//!   take the room in between; `send` with `MSG_DONTWAIT` on a socket on
//!   macOS;
//! - a regular file or block device never needs room: a plain `write(2)`;
//! - anything else (a terminal): a second open file description of the
//!   same file, opened through `/proc/self/fd/2` (by its path on macOS)
//!   with `O_NONBLOCK`, so fd 2's own flags stay as they are; a pipe on
//!   macOS, which has no path, once `fstat` says the piece fits.
//!
//! When a piece finds no room, `poll(2)` waits for it until the deadline.
//!
//! fd 2 that was closed (a daemon's `2>&-`, or closed since) is the next
//! descriptor `open()` hands out: the program's data file, a socket.
//! Plain Python writes nothing there (its `sys.stderr` is `None`). Once fd
//! 2 was found closed, each piece for it first asks whether fd 2 is a
//! standard stream again ([`sys::descriptor`]): one that `exec` keeps, as
//! `dup2` leaves it; Python's `open()`, sockets and pipes are closed by
//! `exec`. What finds none is counted as failed.

use super::{next_piece, stderr, CRASH_GRACE, FAILED_BYTES, STDERR, TERMINAL};
use crate::record::{lock, HeldForFork};
use crate::sys::{self, write_nowait, Descriptor, FileStatus};
use std::io::{self, IoSlice};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Writes one piece; `None` if there was no room within `wait`. The clock
/// is read only once the piece has found no room.
#[inline(always)]
pub(super) fn write_piece(fd: RawFd, piece: &[u8], wait: Duration) -> Option<usize> {
    if refuses_lines(fd) {
        FAILED_BYTES.fetch_add(piece.len() as u64, Ordering::Relaxed);
        return Some(piece.len());
    }
    match try_write(fd, piece) {
        Ok(n) => Some(n),
        Err(blocked) => write_piece_blocked(fd, piece, wait, blocked),
    }
}

/// Whether a line may go to `fd` from its parts ([`write_line_now`]): one
/// system call that cannot block takes them together there (Linux's
/// `pwritev2` with `RWF_NOWAIT`: a pipe, a socket, /dev/null). Not for a
/// file found to refuse `RWF_NOWAIT`, a terminal, fd 2 found closed, nor
/// on macOS, which has no such write of several parts. A few loads.
#[inline(always)]
pub(crate) fn takes_parts_now(fd: RawFd) -> bool {
    sys::WRITES_PARTS_NOWAIT
        && !refuses_lines(fd)
        && !KIND.refuses_nowait(fd)
        && !TERMINAL.load(Ordering::Relaxed)
}

/// Writes one line given as its parts, at most [`PIPE_BUF`](super::PIPE_BUF)
/// bytes in all, to `fd` where [`takes_parts_now`] says it may, so that the
/// line need not be made first. Returns how many bytes went out, with no
/// wait, maybe none; the caller then makes the line and writes the rest
/// the usual way.
#[inline(always)]
pub(crate) fn write_line_now(fd: RawFd, parts: &[IoSlice<'_>]) -> usize {
    sys::write_nowait_vectored(fd, parts).unwrap_or(0)
}

/// The rest of [`write_piece`] once a first try found no room, was
/// interrupted or failed.
#[cold]
#[inline(never)]
fn write_piece_blocked(fd: RawFd, piece: &[u8], wait: Duration, first: Blocked) -> Option<usize> {
    let mut deadline = None;
    let mut tried = Err(first);
    loop {
        match tried {
            Ok(n) => return Some(n),
            Err(Blocked::Full(poll_fd)) => {
                let deadline = *deadline.get_or_insert_with(|| Instant::now() + wait);
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() || !wait_for_room(poll_fd, left) {
                    return None;
                }
            }
            Err(Blocked::Interrupted) => {}
            Err(Blocked::Failed) => {
                if fd == STDERR && sys::descriptor(fd) == Descriptor::Closed {
                    stderr_was_closed();
                }
                FAILED_BYTES.fetch_add(piece.len() as u64, Ordering::Relaxed);
                return Some(piece.len());
            }
        }
        tried = try_write(fd, piece);
    }
}

/// fd 2 was found closed, at init or since (see the module's doc).
static STDERR_WAS_CLOSED: AtomicBool = AtomicBool::new(false);

/// Notes that fd 2 was found closed, or is no standard stream: from now
/// on, each piece for it asks what it is.
pub(crate) fn stderr_was_closed() {
    STDERR_WAS_CLOSED.store(true, Ordering::Relaxed);
}

/// Looks at fd 2 at init: closed, or closed by `exec` (a file the program
/// opened where fd 2 was closed) counts as [`stderr_was_closed`].
pub(crate) fn check_stderr() {
    if sys::descriptor(STDERR) != Descriptor::Inheritable {
        stderr_was_closed();
    }
}

/// Whether a piece for `fd` must not be written: fd 2, once found closed,
/// and no standard stream now. One load while fd 2 was never found
/// closed; async-signal-safe.
#[inline(always)]
fn refuses_lines(fd: RawFd) -> bool {
    fd == STDERR
        && STDERR_WAS_CLOSED.load(Ordering::Relaxed)
        && sys::descriptor(fd) != Descriptor::Inheritable
}

enum Blocked {
    /// No room now; this descriptor reports when there is.
    Full(RawFd),
    /// A signal arrived; try again.
    Interrupted,
    /// The descriptor is unusable: closed, no reader, I/O error.
    Failed,
}

fn classify(err: io::Error, fd: RawFd) -> Blocked {
    match err.kind() {
        io::ErrorKind::WouldBlock => Blocked::Full(fd),
        io::ErrorKind::Interrupted => Blocked::Interrupted,
        _ => Blocked::Failed,
    }
}

/// Writes `text` to `fd` from a signal handler, with async-signal-safe
/// calls only (`pwritev2`, `poll`, `write`, `clock_gettime`): no lock, no
/// allocation, no twin descriptor. A piece that finds no room waits for it
/// until `deadline`; true if everything went out.
///
/// What waits at a crash can be megabytes, which a reader that keeps up
/// (a terminal, a pager) may take longer than the deadline to read. So
/// until a piece finds no room, a piece past the deadline still waits
/// [`CRASH_GRACE`]; once one found none, the reader counts as stalled and
/// the rest wait only until the deadline.
pub(crate) fn write_from_signal_handler(fd: RawFd, text: &[u8], deadline: Instant) -> bool {
    static STALLED: AtomicBool = AtomicBool::new(false);
    if refuses_lines(fd) {
        return false;
    }
    let mut done = 0;
    while done < text.len() {
        let piece = &text[done..done + next_piece(&text[done..])];
        let n = match write_nowait(fd, piece) {
            Ok(n) => n,
            Err(e) => match e.kind() {
                io::ErrorKind::Interrupted => 0,
                io::ErrorKind::WouldBlock => {
                    let mut left = deadline.saturating_duration_since(Instant::now());
                    if !STALLED.load(Ordering::Relaxed) {
                        left = left.max(CRASH_GRACE);
                    }
                    if left.is_zero() || !wait_for_room(fd, left) {
                        STALLED.store(true, Ordering::Relaxed);
                        return false;
                    }
                    0
                }
                // Files and terminals do not take RWF_NOWAIT; they do not
                // wait for a reader either. A pipe whose room `fstat`
                // tells (macOS) is written once the piece fits.
                _ if sys::refuses_nowait(&e) => {
                    if !pipe_fits(fd, piece.len()) {
                        if Instant::now() >= deadline {
                            return false;
                        }
                        wait_for_room(fd, Duration::from_millis(1));
                        // poll may report room the rule denies: a pause.
                        std::thread::sleep(Duration::from_millis(1));
                        continue;
                    }
                    match sys::write(fd, piece) {
                        Ok(n) => n,
                        Err(_) => return false,
                    }
                }
                _ => return false,
            },
        };
        done += n;
    }
    true
}

/// Whether `len` bytes fit in `fd` now, where `fstat` tells a pipe's
/// room (macOS); true for anything else. Async-signal-safe.
fn pipe_fits(fd: RawFd, len: usize) -> bool {
    if !sys::PIPE_ROOM_BY_FSTAT {
        return true;
    }
    match sys::file_status(fd) {
        Ok(st) => sys::pipe_room(&st).is_none_or(|room| room >= len as u64),
        Err(_) => true,
    }
}

#[inline]
fn try_write(fd: RawFd, piece: &[u8]) -> Result<usize, Blocked> {
    if KIND.refuses_nowait(fd) {
        return try_write_other(fd, piece, None);
    }
    match write_nowait(fd, piece) {
        Ok(n) => Ok(n),
        Err(e) => try_write_other(fd, piece, Some(e)),
    }
}

/// [`try_write`] where `RWF_NOWAIT` failed (`nowait`), or was not tried
/// because the descriptor was last found to refuse it.
#[cold]
#[inline(never)]
fn try_write_other(fd: RawFd, piece: &[u8], nowait: Option<io::Error>) -> Result<usize, Blocked> {
    let plain = || sys::write(fd, piece).map_err(|e| classify(e, fd));
    let nowait = match nowait {
        Some(err) => err,
        None if sys::is_seekable(fd) => return plain(),
        None => {
            KIND.remember(fd, false);
            match write_nowait(fd, piece) {
                Ok(n) => return Ok(n),
                Err(err) => err,
            }
        }
    };
    // A file system that takes RWF_NOWAIT may still refuse a write that
    // would wait for the disk; a file never waits for a reader.
    if nowait.kind() == io::ErrorKind::WouldBlock && sys::is_seekable(fd) {
        KIND.remember(fd, true);
        return plain();
    }
    if !sys::refuses_nowait(&nowait) {
        return Err(classify(nowait, fd));
    }
    if sys::is_seekable(fd) {
        KIND.remember(fd, true);
        return plain();
    }
    let st = sys::file_status(fd).map_err(|e| classify(e, fd))?;
    write_through_twin(fd, &st, piece)
}

/// Which system call to try first on the descriptor written last.
/// A seekable file ([`sys::is_seekable`]: a regular file, a block device,
/// /dev/null) never waits for a reader, so a plain `write(2)` will do;
/// `lseek` is about the cheapest system call there is, and unlike `fstat`
/// it does not make the next write to the file update its times.
/// `pwritev2(RWF_NOWAIT)` is one call that cannot block, and the kernel
/// takes it for pipes, sockets and /dev/null. A regular file on ext4 (and
/// a terminal) refuses it; once a file was found to refuse it, the next
/// lines go `lseek`, then `write(2)`: two calls instead of three. A wrong
/// guess only costs the other path, since each path checks before it
/// writes: `lseek` fails on anything that may wait for a reader.
struct Kind {
    fd: AtomicI32,
    refuses_nowait: AtomicBool,
}

static KIND: Kind = Kind {
    fd: AtomicI32::new(-1),
    refuses_nowait: AtomicBool::new(false),
};

impl Kind {
    /// Whether `fd` was last found to be a seekable file that refuses
    /// `RWF_NOWAIT`.
    fn refuses_nowait(&self, fd: RawFd) -> bool {
        self.fd.load(Ordering::Acquire) == fd && self.refuses_nowait.load(Ordering::Relaxed)
    }

    fn remember(&self, fd: RawFd, refuses_nowait: bool) {
        self.refuses_nowait.store(refuses_nowait, Ordering::Relaxed);
        self.fd.store(fd, Ordering::Release);
    }
}

pub(super) fn isatty(fd: RawFd) -> bool {
    sys::is_terminal(fd)
}

/// A non-blocking open file description of the file behind a descriptor.
struct Twin {
    key: (u64, u64, u64),
    fd: OwnedFd,
}

/// The twin of the descriptor written last that needed one: made and used
/// by writers under the lock, held across a fork.
static TWIN: Mutex<Option<Twin>> = Mutex::new(None);

fn write_through_twin(fd: RawFd, st: &FileStatus, piece: &[u8]) -> Result<usize, Blocked> {
    if fd == stderr() && st.is_char_device() {
        TERMINAL.store(true, Ordering::Relaxed);
    }
    if let Some(room) = sys::pipe_room(st) {
        // A pipe whose room `fstat` tells (macOS): written only where the
        // piece fits. Another writer may take that room first.
        return if room >= piece.len() as u64 {
            sys::write(fd, piece).map_err(|e| classify(e, fd))
        } else {
            Err(Blocked::Full(fd))
        };
    }
    let key = st.identity();
    let mut twin = lock(&TWIN);
    if twin.as_ref().is_none_or(|t| t.key != key) {
        *twin = sys::reopen_nonblocking(fd).map(|fd| Twin { key, fd });
    }
    match twin.as_ref() {
        Some(t) => sys::write(t.fd.as_raw_fd(), piece).map_err(|e| classify(e, t.fd.as_raw_fd())),
        None => {
            // No twin (no /proc): write only when poll reports room. Another
            // writer may take that room first; this is the best left to do.
            drop(twin);
            if wait_for_room(fd, Duration::ZERO) {
                sys::write(fd, piece).map_err(|e| classify(e, fd))
            } else {
                Err(Blocked::Full(fd))
            }
        }
    }
}

/// The twin descriptor's lock, held across a fork.
pub(crate) fn hold_for_fork() -> HeldForFork {
    crate::record::hold_for_fork(&TWIN)
}

/// Waits until `fd` reports room or `wait` passes; true if there is room.
fn wait_for_room(fd: RawFd, wait: Duration) -> bool {
    // An error or hang-up also ends the wait: the write then reports it.
    let room = sys::wait_writable(fd, wait);
    if sys::PIPE_ROOM_BY_FSTAT {
        // poll may report room the pipe rule denies: a pause instead of a
        // spin.
        std::thread::sleep(Duration::from_millis(1));
    }
    room
}

#[cfg(test)]
mod tests {
    use super::super::{failed_bytes, write_with_room};
    use super::*;

    use std::os::fd::FromRawFd;

    fn pipe() -> (OwnedFd, OwnedFd) {
        let fds = sys::pipe_cloexec().unwrap();
        // SAFETY: both are new descriptors owned by nothing else.
        unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) }
    }

    #[test]
    fn a_full_pipe_stops_the_write_after_the_wait() {
        let (_r, w) = pipe();
        let text = vec![b'x'; 1 << 20];
        let start = Instant::now();
        let n = write_with_room(w.as_raw_fd(), &text, Duration::from_millis(50));
        // One stall of 50 ms ends the write.
        let took = start.elapsed();
        assert!(n < text.len(), "a pipe cannot take 1 MiB");
        assert!(n >= 4096, "an empty pipe takes at least a page");
        assert!(
            took >= Duration::from_millis(40) && took < Duration::from_secs(5),
            "{took:?}"
        );
    }

    #[test]
    fn a_drained_pipe_takes_everything() {
        let (r, w) = pipe();
        let reader = std::thread::spawn(move || {
            let mut f = std::fs::File::from(r);
            let mut all = Vec::new();
            std::io::Read::read_to_end(&mut f, &mut all).unwrap();
            all
        });
        let text: Vec<u8> = (0..20_000)
            .flat_map(|i| format!("line {i}\n").into_bytes())
            .collect();
        assert_eq!(
            write_with_room(w.as_raw_fd(), &text, Duration::from_secs(10)),
            text.len()
        );
        drop(w);
        assert_eq!(reader.join().unwrap(), text);
    }

    #[test]
    fn a_pipe_without_reader_fails_fast_and_counts() {
        let (r, w) = pipe();
        drop(r);
        // Rust's runtime ignores SIGPIPE, so this is EPIPE.
        let before = failed_bytes();
        assert_eq!(
            write_with_room(w.as_raw_fd(), b"gone\n", Duration::from_secs(10)),
            5
        );
        assert!(failed_bytes() >= before + 5);
    }

    #[test]
    fn a_file_that_becomes_a_pipe_is_written_without_blocking() {
        let dir = std::env::temp_dir();
        let paths = ["a", "b"].map(|n| dir.join(format!("pylogsink-{n}-{}", std::process::id())));
        let a = std::fs::File::create(&paths[0]).unwrap();
        let b = std::fs::File::create(&paths[1]).unwrap();
        for path in &paths {
            std::fs::remove_file(path).unwrap();
        }
        let (_r, w) = pipe();
        let fd = a.as_raw_fd();
        assert_eq!(write_with_room(fd, b"one\n", Duration::ZERO), 4);
        // The same descriptor number now names another file, then a pipe.
        sys::dup_onto(b.as_raw_fd(), fd).unwrap();
        assert_eq!(write_with_room(fd, b"two\n", Duration::ZERO), 4);
        sys::dup_onto(w.as_raw_fd(), fd).unwrap();
        let full = write_with_room(fd, &vec![b'z'; 1 << 20], Duration::from_millis(20));
        assert!(full < 1 << 20, "a pipe is written without blocking");
    }

    #[test]
    fn a_pipe_or_null_that_becomes_a_file_is_written_in_full() {
        let path = std::env::temp_dir().join(format!("pylogsink-p-{}", std::process::id()));
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .unwrap();
        std::fs::remove_file(&path).unwrap();
        let null = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/null")
            .unwrap();
        let (r, w) = pipe();
        let fd = w.as_raw_fd();
        assert_eq!(write_with_room(fd, b"pipe\n", Duration::ZERO), 5);
        sys::dup_onto(null.as_raw_fd(), fd).unwrap();
        assert_eq!(write_with_room(fd, b"null\n", Duration::ZERO), 5);
        sys::dup_onto(file.as_raw_fd(), fd).unwrap();
        let text = vec![b'f'; 100_000];
        assert_eq!(write_with_room(fd, &text, Duration::ZERO), text.len());
        let mut read = Vec::new();
        let mut f = std::fs::File::from(r);
        std::io::Read::read_to_end(&mut f, &mut read).unwrap();
        assert_eq!(read, b"pipe\n");
        let mut written = Vec::new();
        let mut file = file;
        std::io::Seek::rewind(&mut file).unwrap();
        std::io::Read::read_to_end(&mut file, &mut written).unwrap();
        assert_eq!(written, text);
    }

    #[test]
    fn seekable_means_it_never_waits_for_a_reader() {
        let (r, w) = pipe();
        assert!(!sys::is_seekable(r.as_raw_fd()) && !sys::is_seekable(w.as_raw_fd()));
        let null = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/null")
            .unwrap();
        assert!(sys::is_seekable(null.as_raw_fd()));
        let path = std::env::temp_dir().join(format!("pylogsink-s-{}", std::process::id()));
        let file = std::fs::File::create(&path).unwrap();
        assert!(sys::is_seekable(file.as_raw_fd()));
        std::fs::remove_file(path).unwrap();
    }

    #[test]
    fn a_regular_file_needs_no_room() {
        let path = std::env::temp_dir().join(format!("pylogsink-fd-{}", std::process::id()));
        let file = std::fs::File::create(&path).unwrap();
        let text = vec![b'y'; 100_000];
        assert_eq!(
            write_with_room(file.as_raw_fd(), &text, Duration::ZERO),
            text.len()
        );
        assert_eq!(std::fs::read(&path).unwrap().len(), text.len());
        std::fs::remove_file(path).unwrap();
    }
}
