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
//! The drained bytes become lines ([`Lines`](crate::dest::capture::Lines))
//! and wait in a [`Kept`](crate::dest::Kept) buffer per stream (at most
//! [`BUDGET`](crate::dest::capture::BUDGET); what is left out is counted
//! in one note). Where they go was decided when the capture began
//! ([`CapturedTo`]): to the descriptor the process had before (a copy made
//! then, written by this thread without ever blocking), or to the Python
//! stream that replaced `sys.stdout` / `sys.stderr`, which only a thread
//! that holds the GIL can write: pylogsink's Python thread, woken through
//! [`wake_for_calls`](crate::dest::pending::queue::wake_for_calls), and the end of the capture.
//!
//! pylogsink's own direct lines go to the copy of fd 2 while a capture is
//! on ([`set_stderr_target`](crate::dest::fd::set_stderr_target)), never into the pipe. The copies are
//! made once and never closed: a thread that looked the descriptor up just
//! before a capture ended may still write to it, and must not find another
//! file under that number. Each capture refreshes them with `dup3`.
//!
//! A crash writes what waits, the line not yet ended and what is still in
//! the pipes to the original descriptors ([`visit`], [`write_rest_at_crash`]),
//! and so does a C `exit()` ([`write_at_c_exit`]).
//! A forked child has no drain thread: it points its fd 1 and fd 2 back at
//! the originals and starts with nothing captured ([`hold_for_fork`]).
//!
//! The room, each part importing only those before it: [`streams`] (the
//! two captured streams and the capture in progress), [`redirect`] (fd 1
//! and fd 2 pointed at the pipes and back), [`drain`](mod@drain) (the drain thread),
//! [`for_python`] (what the Python edge takes), [`at_end`] (a crash, a C
//! `exit()`, a `fork()`); [`start`] and [`stop`] here. Line cutting and
//! the reading rules are pure functions in `dest/capture.rs`, the Python
//! side is `call/capture.rs`, and on Windows `windows.rs` says the
//! capture is not available.

mod at_end;
mod drain;
mod for_python;
mod redirect;
mod streams;

pub(crate) use at_end::{hold_for_fork, stop_reading_at_crash, visit, write_rest_at_crash};
pub(crate) use drain::{pressing, sync};
pub(crate) use for_python::{
    catch_up, echo_marks, handed_over, may_wait, pending_for_python, take_echo, take_for_python,
    to_python, waiting_holds, write_original,
};
pub(crate) use streams::{is_on, STDERR, STDOUT};

use crate::control::stall_wait;
use crate::dest::capture::CapturedTo;
use crate::record::lock;
use crate::sys;
use at_end::write_at_c_exit;
use drain::{drain, pass_on};
use redirect::{begin, end, restore, Ending};
use std::io;
use std::sync::atomic::Ordering;
use std::sync::Once;
use streams::{close_all, pipe, State, ON, STATE, STREAMS};

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

#[cfg(test)]
mod tests {
    use super::*;
    use super::{at_end::*, drain::*, for_python::*, streams::*};
    use crate::dest::capture::BUDGET;
    use crate::record::lock;
    use crate::sys;
    use std::os::fd::RawFd;
    use std::sync::atomic::Ordering;
    use std::time::Duration;

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
