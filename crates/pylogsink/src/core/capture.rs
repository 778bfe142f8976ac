//! Native output capture: fd 1 and fd 2 pointed at pipes that a native
//! thread drains.
//!
//! C and C++ code writes straight to fd 1 and fd 2, and nobody can change
//! that code. Jupyter and `wurlitzer.pipes()` point those descriptors at
//! pipes that a *Python* thread drains, which needs the GIL after each
//! read: native code that writes more than the pipe holds while it holds
//! the GIL blocks forever. Here the pipes are drained by a `std::thread`
//! that never takes the GIL, so a writer never blocks on them, whatever
//! the GIL is doing.
//!
//! The drained bytes become lines ([`Lines`]) and wait in a [`Kept`]
//! buffer per stream (at most [`BUDGET`]; what is left out is counted in
//! one note). Where they go was decided when the capture began
//! ([`CapturedTo`]): to the descriptor the process had before (a copy made
//! then, written by this thread without ever blocking), or to the Python
//! stream that replaced `sys.stdout` / `sys.stderr`, which only a thread
//! that holds the GIL can write: pylogsink's Python thread, woken through
//! [`wake_for_calls`], and the end of the capture.
//!
//! pylogsink's own direct lines go to the copy of fd 2 while a capture is
//! on ([`fd::set_stderr_target`]), never into the pipe. The copies are
//! made once and never closed: a thread that looked the descriptor up just
//! before a capture ended may still write to it, and must not find another
//! file under that number. Each capture refreshes them with `dup3`.
//!
//! A crash writes what waits, the line not yet ended and what is still in
//! the pipes to the original descriptors ([`visit`], [`write_rest_at_crash`]),
//! and so does a C `exit()` ([`write_at_c_exit`]).
//! A forked child has no drain thread: it points its fd 1 and fd 2 back at
//! the originals and starts with nothing captured ([`hold_for_fork`]).

use crate::control::stall_wait;
use crate::dest::capture::{hold_reading, CapturedTo, Held, Lines, BUDGET, PARTIAL_MAX};
use crate::dest::fd;
use crate::dest::pending::queue::wake_for_calls;
use crate::dest::{Kept, Taken};
use crate::record::{lock, lock_at_crash, HeldForFork};
use crate::sys;
use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, Once};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The index of fd 1's stream in [`STREAMS`].
pub(crate) const STDOUT: usize = 0;
/// The index of fd 2's stream in [`STREAMS`].
pub(crate) const STDERR: usize = 1;

/// How long the drain thread waits before it tries again to write lines
/// that found no room on an original descriptor.
const RETRY: Duration = Duration::from_millis(10);

/// How often the drain thread looks whether Python took the lines of a
/// pipe it leaves unread ([`hold_reading`]).
const PAUSE: Duration = Duration::from_millis(2);

/// The most the drain thread reads from a pipe before it passes the
/// lines on: a quarter of the budget, so that an original descriptor that
/// keeps up never costs a line.
const ROUND: usize = BUDGET / 4;

/// The most the drain thread reads at the end of a capture: a child
/// process that inherited the pipe may go on writing to it.
const LAST_READ_MAX: usize = 16 * 1024 * 1024;

/// One captured descriptor.
pub(crate) struct Stream {
    /// The descriptor captured: 1 or 2.
    target: RawFd,
    /// A copy of what `target` was before the capture, or -1 (none made
    /// yet). Never closed once made.
    saved: AtomicI32,
    /// The pipe's read end while captured, else -1.
    read: AtomicI32,
    /// Captured now.
    active: AtomicBool,
    /// Its lines go to Python ([`CapturedTo::Python`]).
    to_python: AtomicBool,
    /// Lines wait for Python.
    pending: AtomicBool,
    /// How many times Python took lines ([`take_for_python`]) or finished
    /// writing them ([`handed_over`]).
    takes: AtomicU64,
    /// The drain thread leaves the pipe unread until Python takes lines.
    paused: AtomicBool,
    /// Held by whoever reads the pipe (the drain thread, or a Python
    /// write that catches up first, [`catch_up`]) until what it read is in
    /// `waiting`, and by whoever closes the pipe: the bytes go into lines in
    /// the order written, and a read end is never used after its close.
    reading: Mutex<()>,
    waiting: Mutex<Waiting>,
}

/// What a stream's drained bytes wait in.
struct Waiting {
    kept: Kept,
    lines: Lines,
    /// The lines Python took last ([`take_for_python`]), until they are
    /// written ([`handed_over`]): a crash in between writes them too, since
    /// a repeat is better than a loss.
    handed: Kept,
}

impl Stream {
    const fn new(target: RawFd) -> Stream {
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

static STREAMS: [Stream; 2] = [Stream::new(1), Stream::new(2)];

/// The capture in progress.
struct State {
    /// Captures begun and not ended: nested ones join the outermost.
    depth: usize,
    /// The drain thread's control pipe (read, write), or -1.
    control: [RawFd; 2],
    thread: Option<JoinHandle<()>>,
}

static STATE: Mutex<State> = Mutex::new(State {
    depth: 0,
    control: [-1, -1],
    thread: None,
});

/// Begins a capture of fd 1 (`routes[STDOUT]`) and fd 2 (`routes[STDERR]`),
/// each one whose route is given, its lines going there. A capture in
/// progress is joined instead (false): it keeps its own routes.
pub(crate) fn start(routes: [Option<CapturedTo>; 2]) -> io::Result<bool> {
    let mut state = lock(&STATE);
    if state.depth > 0 {
        state.depth += 1;
        return Ok(false);
    }
    if routes.iter().all(Option::is_none) {
        return Ok(false);
    }
    static AT_C_EXIT: Once = Once::new();
    // `write_at_c_exit` never unwinds (it catches panics).
    AT_C_EXIT.call_once(|| sys::at_c_exit(write_at_c_exit));
    // What C stdio holds goes where it was written to, before the switch.
    sys::flush_c_stdio();
    let control = pipe(true)?;
    let mut reads = [-1; 2];
    for (index, route) in routes.iter().enumerate() {
        let Some(route) = route else { continue };
        match begin(&STREAMS[index], *route) {
            Ok(read) => reads[index] = read,
            Err(err) => {
                for (stream, read) in STREAMS.iter().zip(reads) {
                    if read >= 0 {
                        end(stream, Ending::Close);
                    }
                }
                close_all(&control);
                return Err(err);
            }
        }
    }
    let spawned = std::thread::Builder::new()
        .name("pylogsink-capture".into())
        .spawn(move || drain(reads, control[0]));
    match spawned {
        Ok(thread) => {
            *state = State {
                depth: 1,
                control,
                thread: Some(thread),
            };
            ON.store(true, Ordering::Relaxed);
            Ok(true)
        }
        Err(err) => {
            for stream in &STREAMS {
                end(stream, Ending::Close);
            }
            close_all(&control);
            Err(err)
        }
    }
}

/// Points `stream`'s descriptor at a new pipe, after copying what it was;
/// returns the pipe's read end.
fn begin(stream: &Stream, route: CapturedTo) -> io::Result<RawFd> {
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
fn restore(stream: &Stream) {
    if stream.active.load(Ordering::Acquire) {
        let saved = stream.saved.load(Ordering::Relaxed);
        // Both are open descriptors of ours: nothing to fail.
        let _ = sys::dup_onto(saved, stream.target);
        if stream.target == fd::STDERR {
            fd::set_stderr_target(fd::STDERR);
        }
    }
}

// A stream that copies what it is given to the process's own stdout or
// stderr (pytest's `--capture=tee-sys`, a logging tee) writes that copy to
// fd 1 or fd 2, into the capture's pipe: the copy would be captured and
// given to the stream again, for ever. The copy of a write through Python
// is found among the lines that came into the pipes meanwhile
// ([`take_echo`]) and written to the original descriptor instead
// (`call::echo` decides which writes are looked at).

/// How far the lines waiting for Python in one stream went when a write
/// through Python began: what comes after may be that write's copy.
#[derive(Clone, Copy)]
pub(crate) struct Mark {
    len: usize,
    left_out: (u64, u64),
}

/// The [`Mark`] of each stream whose lines go to Python.
pub(crate) fn echo_marks() -> [Option<Mark>; 2] {
    [STDOUT, STDERR].map(|index| {
        to_python(index).then(|| {
            let waiting = lock(&STREAMS[index].waiting);
            Mark {
                len: waiting.kept.len_bytes(),
                left_out: waiting.kept.left_out(),
            }
        })
    })
}

/// Whether `line` is among the newest lines waiting for Python in either
/// stream: a line that native code writes again and again, whose copy
/// could not be told from the next one.
pub(crate) fn waiting_holds(line: &[u8]) -> bool {
    [STDOUT, STDERR]
        .into_iter()
        .any(|index| to_python(index) && lock(&STREAMS[index].waiting).kept.holds_line(line, 256))
}

/// After a write of `text` through Python began at `marks`: reads the
/// pipes, and takes the first copy of `text` that came back into either
/// (its lines, each perhaps with more around it: [`Kept::remove_copy`])
/// out of the lines for Python, writing it to that descriptor's original
/// instead. True if a copy came back.
pub(crate) fn take_echo(marks: [Option<Mark>; 2], text: &[u8]) -> bool {
    let mut found = false;
    for (index, mark) in [STDOUT, STDERR].into_iter().zip(marks) {
        let Some(mark) = mark else { continue };
        let _ = catch_up(index, &mut None);
        let stream = &STREAMS[index];
        let copy = {
            let mut waiting = lock(&stream.waiting);
            let kept = &mut waiting.kept;
            // Lines left out since the mark: where it was is not known.
            if kept.left_out() == mark.left_out {
                kept.remove_copy(mark.len, text)
            } else {
                None
            }
        };
        if let Some(copy) = copy {
            let saved = stream.saved.load(Ordering::Relaxed);
            fd::write_with_room(saved, &copy, stall_wait());
            found = true;
        }
    }
    found
}

/// How [`end`] lets a pipe go.
#[derive(Clone, Copy, PartialEq)]
enum Ending {
    /// Closed: nothing else may have it (a capture that failed to begin,
    /// a forked child, whose parent still reads it).
    Close,
    /// Drained on by a thread of its own while a process that inherited it
    /// may still write to it ([`linger`]).
    Linger,
}

/// Restores `stream` and lets its pipe go (the drain thread is gone).
fn end(stream: &Stream, ending: Ending) {
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
fn linger(read: RawFd, saved: RawFd) {
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

/// Ends the capture begun by [`start`]: C stdio flushed, fd 1 and fd 2
/// pointed back at the originals, then everything written before that
/// drained, and what goes to an original descriptor written there (each
/// piece waiting for room at most the stall wait). True if this ended the
/// capture (not a nested one): what waits for Python is the caller's to
/// write ([`take_for_python`]).
pub(crate) fn stop() -> bool {
    // The pipes are drained without the GIL, so this cannot wait for long
    // on them.
    sys::flush_c_stdio();
    let mut state = lock(&STATE);
    match state.depth {
        0 => return false,
        1 => {}
        _ => {
            state.depth -= 1;
            drop(state);
            // The inner capture's lines before its end.
            sync();
            return false;
        }
    }
    for stream in &STREAMS {
        restore(stream);
    }
    // Everything written before the restore is in the pipes now: the
    // thread reads them empty, hands out the lines, and ends.
    // The control pipe is ours and never full: the byte goes in.
    let _ = sys::write(state.control[1], b"q");
    if let Some(thread) = state.thread.take() {
        let _ = thread.join();
    }
    for stream in &STREAMS {
        end(stream, Ending::Linger);
    }
    close_all(&state.control);
    state.control = [-1, -1];
    state.depth = 0;
    ON.store(false, Ordering::Relaxed);
    drop(state);
    for stream in &STREAMS {
        pass_on(stream, stall_wait());
    }
    true
}

/// The C `atexit` hook, registered by the first capture. A native library
/// that gives up calls `exit()`, which runs the C `atexit` hooks and no
/// Python, while a capture may be on and its drain thread mid-read: the
/// line that explains the exit is then in a pipe or in the lines that
/// wait. Here they are taken from there ([`take_rest_at_exit`]) and from
/// the pipes ([`write_rest_at_crash`]) to the original descriptors, and
/// fd 1 and fd 2 point at the originals again, so that what C stdio
/// flushes after the hooks (a `printf` to a pipe waits in its buffer until
/// then) lands there too.
extern "C" fn write_at_c_exit() {
    let _ = std::panic::catch_unwind(|| {
        if !is_on() {
            return;
        }
        // What C stdio holds goes into the pipes first, to be read below.
        sys::flush_c_stdio();
        let _reading = stop_reading_at_crash();
        let wait = stall_wait();
        // Lines Python took are being written by pylogsink's thread, which
        // can go on if the exiting thread let the GIL go: a moment for it
        // to finish, so that they are not written twice.
        let deadline = Instant::now() + wait;
        while STREAMS.iter().any(|s| !lock(&s.waiting).handed.is_empty())
            && Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(1));
        }
        let mut write = |fd: RawFd, text: &[u8]| {
            fd::write_with_room(fd, text, wait);
        };
        for stream in &STREAMS {
            if let Some((fd, text)) = take_rest_at_exit(stream) {
                write(fd, &text);
            }
        }
        write_rest_at_crash(&mut write, false);
        for stream in &STREAMS {
            restore(stream);
        }
    });
}

/// Whether a capture is on: set and cleared under [`STATE`]'s lock, read
/// without it (a thread that holds the GIL must not wait for a capture
/// that is ending).
static ON: AtomicBool = AtomicBool::new(false);

/// Whether a capture is on.
#[inline]
pub(crate) fn is_on() -> bool {
    ON.load(Ordering::Relaxed)
}

/// Whether captured lines wait for Python.
#[inline]
pub(crate) fn pending_for_python() -> bool {
    STREAMS.iter().any(|s| s.pending.load(Ordering::Acquire))
}

/// Takes the lines of stream `index` that wait for Python. Until
/// [`handed_over`], the crash handler still has a copy.
pub(crate) fn take_for_python(index: usize) -> Taken {
    take(&STREAMS[index])
}

/// [`take_for_python`] for one stream.
fn take(stream: &Stream) -> Taken {
    if !stream.pending.swap(false, Ordering::AcqRel) {
        return Taken::default();
    }
    let mut waiting = lock(&stream.waiting);
    let taken = waiting.kept.take();
    waiting.handed = Kept::with_cap(BUDGET);
    waiting.handed.append(taken.clone(), 0);
    drop(waiting);
    stream.takes.fetch_add(1, Ordering::Release);
    taken
}

/// The lines of stream `index` that Python took last are written (or
/// written elsewhere): the crash handler no longer needs its copy.
pub(crate) fn handed_over(index: usize) {
    let stream = &STREAMS[index];
    forget_handed(stream);
    // Python is taking: a finished write counts as a take.
    stream.takes.fetch_add(1, Ordering::Release);
}

/// [`handed_over`] for one stream.
fn forget_handed(stream: &Stream) {
    let old = std::mem::replace(&mut lock(&stream.waiting).handed, Kept::with_cap(BUDGET));
    drop(old); // freed outside the lock
}

/// Writes lines that Python could not take to stream `index`'s original
/// descriptor (fd 2's for pylogsink's lines if there is no copy), each
/// piece waiting for room at most the stall wait.
pub(crate) fn write_original(index: usize, taken: Taken) {
    if taken.text.is_empty() {
        return;
    }
    let saved = STREAMS[index].saved.load(Ordering::Relaxed);
    let to = if saved >= 0 { saved } else { fd::stderr() };
    fd::write_with_room(to, &taken.text, stall_wait());
}

/// The drain thread: reads the pipes whenever they hold bytes, cuts them
/// into lines, and passes them on; ends when the control pipe says so,
/// after reading the pipes empty.
fn drain(mut reads: [RawFd; 2], control: RawFd) {
    let mut buffer = vec![0u8; 64 * 1024];
    let mut held = [Held::default(); 2];
    loop {
        let now = Instant::now();
        let (wake, mut paused) = next_wake(&reads, &mut held, now);
        let polled = [
            control,
            if paused[0] { -1 } else { reads[0] },
            if paused[1] { -1 } else { reads[1] },
        ];
        let timeout = wake.map(|at| at.saturating_duration_since(now));
        let [asked_now, _, _] = sys::wait_readable(polled, timeout);
        let (last, sync) = if asked_now {
            asked(control)
        } else {
            (false, false)
        };
        // Read everything written so far: at the end, or for a sync.
        let finish = last || sync;
        read_rounds(&mut reads, &mut buffer, &mut held, &mut paused, finish);
        if finish {
            *lock(&SYNCED) += 1;
            SYNC_DONE.notify_all();
        }
        if last {
            return;
        }
    }
}

/// When the drain thread must look again though no pipe has bytes (a line
/// is due, lines found no room on an original descriptor, a pipe is left
/// unread for a while), and which pipes it leaves unread for now
/// ([`pause`]).
fn next_wake(
    reads: &[RawFd; 2],
    held: &mut [Held; 2],
    now: Instant,
) -> (Option<Instant>, [bool; 2]) {
    let soonest = |a: Option<Instant>, b: Instant| Some(a.map_or(b, |a| a.min(b)));
    let mut wake = None;
    let mut paused = [false; 2];
    for (index, (stream, &read)) in STREAMS.iter().zip(reads).enumerate() {
        if read < 0 && !stream.active.load(Ordering::Relaxed) {
            continue;
        }
        let waiting = lock(&stream.waiting);
        let mut due = waiting.lines.due();
        let to_python = stream.to_python.load(Ordering::Relaxed);
        if !to_python && !waiting.kept.is_empty() {
            due = soonest(due, now + RETRY);
        }
        drop(waiting);
        paused[index] = pause(stream, &mut held[index], now);
        if paused[index] {
            due = soonest(due, now + PAUSE);
        }
        if let Some(due) = due {
            wake = soonest(wake, due);
        }
    }
    (wake, paused)
}

/// Reads the pipes a round at a time ([`ROUND`] each at most), cuts what
/// came into lines and passes them on; once, or at the end (`finish`)
/// until everything written before is read.
fn read_rounds(
    reads: &mut [RawFd; 2],
    buffer: &mut [u8],
    held: &mut [Held; 2],
    paused: &mut [bool; 2],
    finish: bool,
) {
    let mut total = 0;
    let mut stalled = [false; 2];
    loop {
        let round = read_round(reads, buffer, held, paused, finish);
        total += round.read;
        cut_lines(round.empty, finish && !round.more);
        // An original descriptor that is slow (a terminal, a pipe read by
        // another process) gets the stall wait per piece, as pylogsink's
        // own lines do; one that stalls for longer costs lines (counted in
        // a note) rather than block the writers, since the pipes are read
        // again in between. At the end, an original descriptor that found
        // no room once is not waited for again: the end comes in bounded
        // time.
        for (stream, stalled) in STREAMS.iter().zip(stalled.iter_mut()) {
            let wait = if *stalled {
                Duration::ZERO
            } else {
                stall_wait()
            };
            *stalled |= !pass_on(stream, wait) && finish;
        }
        // At the end, everything written before the descriptors were
        // restored is read, however many rounds it takes.
        if !(finish && round.more && total < LAST_READ_MAX) {
            return;
        }
        if round.waited {
            std::thread::sleep(PAUSE);
        }
    }
}

/// What one round of [`read_round`] found.
struct Round {
    /// Bytes read, counted by rounds that hit the limit.
    read: usize,
    /// A pipe may hold more (or waits for Python at the end).
    more: bool,
    /// A pipe was left unread, waiting for Python.
    waited: bool,
    /// Which pipes were read empty.
    empty: [bool; 2],
}

/// Reads each pipe once, up to [`ROUND`] bytes, unless it is left unread
/// ([`pause`], looked at again at the end: Python, with the GIL free, is
/// still waited for then). A pipe no writer holds any more is done with.
fn read_round(
    reads: &mut [RawFd; 2],
    buffer: &mut [u8],
    held: &mut [Held; 2],
    paused: &mut [bool; 2],
    finish: bool,
) -> Round {
    let mut round = Round {
        read: 0,
        more: false,
        waited: false,
        empty: [true; 2],
    };
    for (index, (stream, read)) in STREAMS.iter().zip(reads.iter_mut()).enumerate() {
        if *read < 0 {
            continue;
        }
        if finish {
            paused[index] = pause(stream, &mut held[index], Instant::now());
        }
        if paused[index] {
            round.more |= finish;
            round.waited = true;
            round.empty[index] = false;
            continue;
        }
        match read_pipe(stream, *read, buffer, ROUND) {
            Read::Empty => {}
            Read::More => {
                round.more = true;
                round.empty[index] = false;
                round.read += ROUND;
            }
            // Every writer closed it: nothing more will come.
            Read::End => *read = -1,
        }
    }
    round
}

/// Ends the lines that are due in the pipes read empty, or every line
/// (`all`, at the end): a line is due only once its pipe was read empty,
/// since its end may be next in the pipe.
fn cut_lines(empty: [bool; 2], all: bool) {
    let now = Instant::now();
    for (stream, empty) in STREAMS.iter().zip(empty) {
        let mut waiting = lock(&stream.waiting);
        let Waiting { kept, lines, .. } = &mut *waiting;
        let mut out = |text: &[u8], rest: bool| kept.push_text_from(text, rest);
        if all {
            lines.flush(&mut out);
        } else if empty {
            lines.flush_due(now, &mut out);
        }
    }
}

/// What the control pipe asks: (end, sync). An end that comes with a sync
/// answers both.
fn asked(control: RawFd) -> (bool, bool) {
    let mut asks = [0u8; 64];
    // `control` is the non-blocking read end of the control pipe.
    let n = sys::read(control, &mut asks).unwrap_or(0);
    let asks = &asks[..n];
    (asks.contains(&b'q'), asks.contains(&b's'))
}

/// How many times the drain thread read everything written before it was
/// asked (a sync, or the end of a capture).
static SYNCED: Mutex<u64> = Mutex::new(0);
static SYNC_DONE: Condvar = Condvar::new();

/// Waits (at most 1 s) until the drain thread has read everything written
/// to the captured descriptors so far (C stdio flushed first) and passed
/// it on; what goes to Python then waits for [`take_for_python`]. Does
/// nothing without a capture.
pub(crate) fn sync() {
    sys::flush_c_stdio();
    let before = *lock(&SYNCED);
    {
        let state = lock(&STATE);
        if state.depth == 0 || state.control[1] < 0 {
            return;
        }
        // The control pipe's write end stays open while the lock is held.
        let _ = sys::write(state.control[1], b"s");
    }
    let deadline = Instant::now() + Duration::from_secs(1);
    let mut synced = lock(&SYNCED);
    while *synced == before {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return;
        }
        synced = SYNC_DONE
            .wait_timeout(synced, left)
            .unwrap_or_else(|e| e.into_inner())
            .0;
    }
}

/// Whether anything written to the captured descriptor `index` before
/// this call may still be on its way to Python: in the pipe, read but not
/// yet cut into lines, or in lines that wait for Python. A false answer is
/// final for what was written before: the bytes only move on, and only a
/// thread that holds the GIL hands them to Python (one under way is
/// [`crate::call::capture`]'s to wait for). A line not yet ended does not
/// count: it waits for its end. Costs an `ioctl` while a capture is on.
pub(crate) fn may_wait(index: usize) -> bool {
    if !to_python(index) {
        return false;
    }
    let stream = &STREAMS[index];
    // Looked at in the order the bytes move: the pipe, a reader's hands,
    // the lines that wait.
    if unread(stream) > 0 {
        return true;
    }
    stream.reading.try_lock().is_err() || !lock(&stream.waiting).kept.is_empty()
}

/// Whether captured descriptor `index`'s lines go to Python now.
pub(crate) fn to_python(index: usize) -> bool {
    let stream = &STREAMS[index];
    stream.active.load(Ordering::Acquire) && stream.to_python.load(Ordering::Relaxed)
}

/// How many bytes wait in `stream`'s pipe (0 without one).
fn unread(stream: &Stream) -> usize {
    let _reading = lock(&stream.reading);
    // `read` is the pipe's open read end, closed only under `reading`.
    let read = stream.read.load(Ordering::Acquire);
    if read < 0 {
        return 0;
    }
    sys::unread(read).unwrap_or(0)
}

/// Reads what waits in the pipe of captured descriptor `index` into its
/// lines for Python, as the drain thread would, but at once: for a Python
/// write to the same stream, which must come after it. `left` is how much
/// is still to read of what was there at the first call (set then); each
/// call reads no more than the budget has room for, so the caller hands
/// the lines to Python and calls again while it returns false.
pub(crate) fn catch_up(index: usize, left: &mut Option<usize>) -> bool {
    let stream = &STREAMS[index];
    let _reading = lock(&stream.reading);
    let read = stream.read.load(Ordering::Acquire);
    if read < 0 || !stream.to_python.load(Ordering::Relaxed) {
        return true;
    }
    // `reading` is held.
    let left = left.get_or_insert_with(|| sys::unread(read).unwrap_or(0));
    let kept = lock(&stream.waiting).kept.len_bytes();
    let mut room = BUDGET.saturating_sub(kept + PARTIAL_MAX).min(*left);
    let mut chunk = [0u8; 4096];
    while room > 0 {
        let size = chunk.len().min(room);
        // Bytes out of the pipe are in the lines before the crash handler
        // can look: it waits for `waiting`.
        let mut waiting = lock(&stream.waiting);
        // `read` is the non-blocking read end, open while `reading` is held.
        let n = match sys::read(read, &mut chunk[..size]) {
            Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
            Ok(n) if n > 0 => n,
            _ => {
                // The pipe failed: nothing to wait for.
                *left = 0;
                break;
            }
        };
        room -= n;
        *left -= n;
        let Waiting { kept, lines, .. } = &mut *waiting;
        lines.feed(&chunk[..n], Instant::now(), &mut |text, rest| {
            kept.push_text_from(text, rest)
        });
    }
    if !lock(&stream.waiting).kept.is_empty() {
        stream.pending.store(true, Ordering::Release);
    }
    *left == 0
}

/// Whether to leave `stream`'s pipe unread for now: its lines fill the
/// budget and their route does not take them ([`hold_reading`]).
fn pause(stream: &Stream, held: &mut Held, now: Instant) -> bool {
    let waiting = lock(&stream.waiting);
    let full = waiting.kept.len_bytes() + ROUND + PARTIAL_MAX > BUDGET;
    // Python writes lines it took (`handed`): it is taking.
    let writing = !waiting.handed.is_empty();
    drop(waiting);
    let route = if stream.to_python.load(Ordering::Relaxed) {
        CapturedTo::Python
    } else {
        CapturedTo::Original
    };
    let takes = stream.takes.load(Ordering::Acquire);
    let paused = hold_reading(route, full, takes, writing, held, now, stall_wait());
    stream.paused.store(paused, Ordering::Release);
    paused
}

/// Whether a writer waits for Python to take captured lines: whoever
/// takes them should not linger.
#[inline]
pub(crate) fn pressing() -> bool {
    STREAMS.iter().any(|s| s.paused.load(Ordering::Acquire))
}

/// What [`read_pipe`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Read {
    /// The pipe is empty now.
    Empty,
    /// The limit came first: more may wait.
    More,
    /// No writer is left (or the pipe failed).
    End,
}

/// Reads `read` until it is empty or `limit` bytes came, and cuts what
/// came into lines.
fn read_pipe(stream: &Stream, read: RawFd, buffer: &mut [u8], limit: usize) -> Read {
    let _reading = lock(&stream.reading);
    let mut total = 0;
    while total < limit {
        let size = buffer.len().min(limit - total);
        // Bytes out of the pipe are in the lines before the crash handler
        // can look: it waits for `waiting`.
        let mut waiting = lock(&stream.waiting);
        match sys::read(read, &mut buffer[..size]) {
            Ok(0) => return Read::End,
            Ok(n) => {
                total += n;
                let Waiting { kept, lines, .. } = &mut *waiting;
                lines.feed(&buffer[..n], Instant::now(), &mut |text, rest| {
                    kept.push_text_from(text, rest)
                });
            }
            Err(err) => match err.kind() {
                io::ErrorKind::Interrupted => {}
                io::ErrorKind::WouldBlock => return Read::Empty,
                _ => return Read::End,
            },
        }
    }
    Read::More
}

/// Passes on what waits in `stream`: tells pylogsink's Python thread, or
/// writes it to the original descriptor, each piece waiting for room at
/// most `wait`; what finds none waits for the next try.
/// False if lines for an original descriptor found no room.
fn pass_on(stream: &Stream, wait: Duration) -> bool {
    if stream.to_python.load(Ordering::Relaxed) {
        if !lock(&stream.waiting).kept.is_empty() {
            stream.pending.store(true, Ordering::Release);
            wake_for_calls();
        }
        return true;
    }
    let saved = stream.saved.load(Ordering::Relaxed);
    if saved < 0 {
        return true;
    }
    let taken = lock(&stream.waiting).kept.take();
    if taken.text.is_empty() {
        return true;
    }
    let written = fd::write_with_room(saved, &taken.text, wait);
    let all = written == taken.text.len();
    lock(&stream.waiting).kept.put_back(taken, written);
    all
}

/// Hands each stream's waiting lines to `text` with the descriptor they go
/// to, for the crash handler (see [`lock_at_crash`]); returns how many
/// locks stayed held.
pub(crate) fn visit(text: &mut dyn FnMut(i32, &mut Kept)) -> usize {
    STREAMS
        .iter()
        .map(|stream| visit_stream(stream, text))
        .sum()
}

/// [`visit`] for one stream: the lines Python took and has not written
/// yet, then those that wait. 1 if its lock stayed held.
fn visit_stream(stream: &Stream, text: &mut dyn FnMut(i32, &mut Kept)) -> usize {
    let saved = stream.saved.load(Ordering::Relaxed);
    if saved < 0 {
        return 0;
    }
    match lock_at_crash(&stream.waiting) {
        Some(mut waiting) => {
            text(saved, &mut waiting.handed);
            text(saved, &mut waiting.kept);
            0
        }
        None => 1,
    }
}

/// For the exit hook, in place of [`visit_stream`]: the lines Python took
/// and has not written yet, those that wait, and the line not yet ended,
/// with the descriptor they go to. Taken where a crash copies them: the
/// drain thread runs on until the process ends, and would write them a
/// second time. None if the stream has no original or its lock stayed held.
fn take_rest_at_exit(stream: &Stream) -> Option<(RawFd, Vec<u8>)> {
    let saved = stream.saved.load(Ordering::Relaxed);
    if saved < 0 {
        return None;
    }
    let mut waiting = lock_at_crash(&stream.waiting)?;
    let handed = std::mem::replace(&mut waiting.handed, Kept::with_cap(BUDGET));
    let mut text = handed.lines_bytes().to_vec();
    text.extend_from_slice(&waiting.kept.take().text);
    waiting
        .lines
        .flush(&mut |line, _| text.extend_from_slice(line));
    drop(waiting);
    Some((saved, text))
}

/// For the crash handler, before [`visit`]: stops the pipes' reading
/// until the guards drop, so that no byte moves from a pipe into the lines
/// between the handler's look at the lines and its read of the pipes
/// (the drain thread runs on while the handler writes). A lock held on
/// (by the thread that crashed) is given up after [`lock_at_crash`]'s wait.
pub(crate) fn stop_reading_at_crash() -> [Option<MutexGuard<'static, ()>>; 2] {
    STREAMS
        .each_ref()
        .map(|stream| lock_at_crash(&stream.reading))
}

/// For the crash handler, after [`visit`]: hands `write` each stream's
/// line not yet ended, then what is still in its pipe, with the
/// descriptor it goes to. Async-signal-safe: a buffer on the stack, `read`
/// on the non-blocking read end, locks as [`lock_at_crash`] takes them.
/// With `forget` (a process that may live on), the line not yet ended is
/// let go of once written; what is read from a pipe is gone anyway.
pub(crate) fn write_rest_at_crash(write: &mut dyn FnMut(i32, &[u8]), forget: bool) {
    for stream in &STREAMS {
        if stream.active.load(Ordering::Acquire) {
            rest_at_crash(stream, write, forget);
        }
    }
}

/// [`write_rest_at_crash`] for one stream.
fn rest_at_crash(stream: &Stream, write: &mut dyn FnMut(i32, &[u8]), forget: bool) {
    let saved = stream.saved.load(Ordering::Relaxed);
    if saved < 0 {
        return;
    }
    if let Some(mut waiting) = lock_at_crash(&stream.waiting) {
        if !waiting.lines.partial().is_empty() {
            write(saved, waiting.lines.partial());
            if forget {
                // Its start written: what follows is the rest of a line.
                waiting.lines.flush(&mut |_, _| {});
            }
        }
    }
    let read = stream.read.load(Ordering::Relaxed);
    let mut chunk = [0u8; 4096];
    for _ in 0..256 {
        if read < 0 {
            break;
        }
        // `read` is the non-blocking read end, or closed (EBADF).
        match sys::read(read, &mut chunk) {
            Ok(n) if n > 0 => write(saved, &chunk[..n]),
            _ => break,
        }
    }
}

/// The capture's locks, held across a fork. The child has no drain
/// thread: if a capture was on, its fd 1 and fd 2 go back to the
/// originals, its pipes are closed, and what waited is the parent's.
pub(crate) fn hold_for_fork() -> HeldForFork {
    let mut state = lock(&STATE);
    let reading = STREAMS.each_ref().map(|s| lock(&s.reading));
    let mut out = lock(&STREAMS[STDOUT].waiting);
    let mut err = lock(&STREAMS[STDERR].waiting);
    Box::new(move |child| {
        // `end` takes them again; the child has one thread.
        drop(reading);
        if child {
            for (stream, waiting) in STREAMS.iter().zip([&mut *out, &mut *err]) {
                end(stream, Ending::Close);
                stream.pending.store(false, Ordering::Relaxed);
                stream.to_python.store(false, Ordering::Relaxed);
                waiting.lines.clear();
                drop(waiting.kept.take());
                drop(std::mem::replace(
                    &mut waiting.handed,
                    Kept::with_cap(BUDGET),
                ));
            }
            close_all(&state.control);
            state.control = [-1, -1];
            state.depth = 0;
            ON.store(false, Ordering::Relaxed);
            // The thread does not exist here: its handle is not joined.
            std::mem::forget(state.thread.take());
        }
        drop(err);
        drop(out);
        drop(state);
    })
}

/// A pipe that closes on `exec`, both ends non-blocking if `nonblocking`.
fn pipe(nonblocking: bool) -> io::Result<[RawFd; 2]> {
    let fds = sys::pipe_cloexec()?;
    if nonblocking {
        fds.into_iter().for_each(sys::set_nonblocking);
    }
    Ok(fds)
}

/// Closes descriptors of ours that nothing else uses (negative ones are
/// none).
fn close_all(fds: &[RawFd]) {
    fds.iter()
        .filter(|&&fd| fd >= 0)
        .for_each(|&fd| sys::close(fd));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stream whose "original" and pipe are a test's own.
    fn stream(to_python: bool) -> (Stream, [RawFd; 2], [RawFd; 2]) {
        let input = pipe(false).unwrap();
        let output = pipe(true).unwrap();
        sys::set_nonblocking(input[0]);
        let stream = Stream::new(-1);
        stream.saved.store(output[1], Ordering::Relaxed);
        stream.read.store(input[0], Ordering::Relaxed);
        stream.to_python.store(to_python, Ordering::Relaxed);
        (stream, input, output)
    }

    fn write(fd: RawFd, text: &[u8]) {
        assert_eq!(sys::write(fd, text).unwrap(), text.len());
    }

    fn read_all(fd: RawFd) -> Vec<u8> {
        let mut out = Vec::new();
        let mut chunk = [0u8; 4096];
        loop {
            match sys::read(fd, &mut chunk) {
                Ok(n) if n > 0 => out.extend_from_slice(&chunk[..n]),
                _ => return out,
            }
        }
    }

    #[test]
    fn drained_lines_go_to_the_original_and_a_partial_one_waits() {
        let (stream, input, output) = stream(false);
        let mut buffer = vec![0u8; 1024];
        write(input[1], b"one\ntwo\nthr");
        assert_eq!(
            read_pipe(&stream, input[0], &mut buffer, BUDGET),
            Read::Empty
        );
        pass_on(&stream, Duration::ZERO);
        assert_eq!(read_all(output[0]), b"one\ntwo\n");
        write(input[1], b"ee\n");
        read_pipe(&stream, input[0], &mut buffer, BUDGET);
        pass_on(&stream, Duration::ZERO);
        assert_eq!(read_all(output[0]), b"three\n");
        close_all(&[input[1]]);
        assert_eq!(read_pipe(&stream, input[0], &mut buffer, BUDGET), Read::End);
        close_all(&[input[0], output[0], output[1]]);
    }

    #[test]
    fn lines_for_python_wait_within_the_budget_with_a_note() {
        let (stream, input, output) = stream(true);
        let mut buffer = vec![0u8; 64 * 1024];
        let line = [b'x'; 99].iter().chain(b"\n").copied().collect::<Vec<u8>>();
        // 2 MiB through a pipe that holds less: read as it comes.
        let writer = std::thread::spawn(move || {
            for _ in 0..(2 * BUDGET / line.len()) {
                write(input[1], &line);
            }
            close_all(&[input[1]]);
        });
        while read_pipe(&stream, input[0], &mut buffer, BUDGET) != Read::End {
            std::thread::sleep(Duration::from_millis(1));
        }
        writer.join().unwrap();
        pass_on(&stream, Duration::ZERO);
        assert!(stream.pending.load(Ordering::Relaxed));
        assert!(read_all(output[0]).is_empty(), "nothing to the original");
        let taken = lock(&stream.waiting).kept.take();
        let text = String::from_utf8(taken.text).unwrap();
        let (note, rest) = text.split_once('\n').unwrap();
        assert!(note.starts_with("[pylogsink] "), "{note}");
        assert!(note.contains("left out here"), "{note}");
        let kept = rest.lines().count() as u64;
        assert_eq!(kept * 100, BUDGET as u64 / 100 * 100);
        assert_eq!(kept + taken.left_out_lines, (2 * BUDGET / 100) as u64);
        close_all(&[input[0], output[0], output[1]]);
    }

    #[test]
    fn the_crash_handler_gets_the_partial_line_and_what_is_in_the_pipe() {
        let (stream, input, output) = stream(true);
        let mut buffer = vec![0u8; 1024];
        write(input[1], b"drained, no end");
        read_pipe(&stream, input[0], &mut buffer, BUDGET);
        write(input[1], b" and still in the pipe\n");
        let mut got = Vec::new();
        rest_at_crash(
            &stream,
            &mut |fd, text| {
                assert_eq!(fd, output[1]);
                got.extend_from_slice(text);
            },
            false,
        );
        assert_eq!(got, b"drained, no end and still in the pipe\n");
        close_all(&[input[0], input[1], output[0], output[1]]);
    }

    #[test]
    fn the_exit_hook_takes_what_waits_so_the_drain_thread_writes_it_no_more() {
        let (stream, input, output) = stream(false);
        let mut buffer = vec![0u8; 1024];
        // Read, not yet passed on, when `exit()` runs the hook.
        write(input[1], b"fatal: the last words\nno end");
        read_pipe(&stream, input[0], &mut buffer, BUDGET);
        let (fd, text) = take_rest_at_exit(&stream).unwrap();
        assert_eq!(
            (fd, text.as_slice()),
            (output[1], &b"fatal: the last words\nno end"[..])
        );
        // The drain thread, still running, finds nothing left to write.
        pass_on(&stream, Duration::ZERO);
        lock(&stream.waiting)
            .lines
            .flush(&mut |_, _| panic!("the partial line again"));
        assert_eq!(read_all(output[0]), b"");
        close_all(&[input[0], input[1], output[0], output[1]]);
    }

    #[test]
    fn lines_taken_for_python_reach_the_crash_handler_until_handed_over() {
        let (stream, input, output) = stream(true);
        let mut buffer = vec![0u8; 1024];
        write(input[1], b"taken, not yet written\n");
        read_pipe(&stream, input[0], &mut buffer, BUDGET);
        pass_on(&stream, Duration::ZERO);
        let at_crash = |stream: &Stream| {
            let mut got = Vec::new();
            let busy = visit_stream(stream, &mut |fd, kept| {
                assert_eq!(fd, output[1]);
                got.extend_from_slice(kept.lines_bytes());
            });
            assert_eq!(busy, 0);
            got
        };
        assert_eq!(at_crash(&stream), b"taken, not yet written\n");
        assert_eq!(take(&stream).text, b"taken, not yet written\n");
        assert_eq!(
            at_crash(&stream),
            b"taken, not yet written\n",
            "in neither place without the copy"
        );
        forget_handed(&stream);
        assert_eq!(at_crash(&stream), b"");
        close_all(&[input[0], input[1], output[0], output[1]]);
    }
}
