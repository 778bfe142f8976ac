//! The log function's path: from a record that passed the filter to fd 2,
//! a call's buffer, or the queue.
//!
//! It may run on any thread, with or without the GIL, under any native
//! lock. So it never calls into Python, never takes the GIL and never waits
//! for fd 2 longer than the stall wait. A record takes one thread-local
//! access: its thread's state says which call it joins and holds the
//! formatter; the decision itself is [`route`]'s.

use super::queue::{self, queue_pending, write_direct, write_queue};
use super::shared::Shared;
use super::stats::EMITTED_ELSEWHERE;
use super::thread::{identity, Joined, ThreadState, THREAD};
use crate::control::{of_record, stall_wait, Destination};
use crate::dest::fd;
use crate::dest::pending::{self, PendingRecord};
use crate::dest::route::{first_in_line, route, Route, Sink};
use crate::record::escape::is_plain;
use crate::record::fields::message_text;
use crate::record::format::{now_since_epoch, Formatter, Text, SCRATCH_MAX};
use crate::record::{color, lock, Level, Record};
use crate::sys;
use std::io::IoSlice;
use std::sync::atomic::Ordering;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Routes one record that the filter let through. Not inlined: the
/// `log` front end's [`emit_args`] calls it on its rarer paths, and one copy
/// of the routing there keeps its usual path in one piece.
pub(crate) fn emit_record(record: &Record<'_>) {
    emit_text(record, Text::Bytes(record.message));
}

/// [`emit_record`] made part of its caller: for [`crate::emit`], the entry
/// of every record given as bytes, so that the filter, the routing and the
/// write are one function with no call between them.
#[inline(always)]
pub(crate) fn emit_record_inline(record: &Record<'_>) {
    emit_text(record, Text::Bytes(record.message));
}

/// Routes one record that the filter let through, whose message is
/// `args` (`record.message` is not read): the `log` front end's way in,
/// which formats the message straight into the line.
#[inline]
pub(crate) fn emit_args(record: &Record<'_>, args: std::fmt::Arguments<'_>) {
    // A message with no arguments is its own text: nothing to format.
    if let Some(text) = args.as_str() {
        return emit_record(&Record {
            message: text.as_bytes(),
            ..*record
        });
    }
    if of_record(record.level) == Destination::Logging || record.fields.is_some() {
        // Records for `logging` keep their message apart, and an Error
        // record's fields join the message its exception shows.
        let message = args.to_string();
        return emit_record(&Record {
            message: message.as_bytes(),
            ..*record
        });
    }
    emit_text(record, Text::Args(args));
}

#[inline(always)]
fn emit_text(record: &Record<'_>, text: Text<'_>) {
    let now = now_since_epoch();
    if of_record(record.level) == Destination::Logging {
        return keep_for_logging(record, UNIX_EPOCH + now);
    }
    let level = record.level;
    let routed = THREAD.try_with(|t| {
        t.count(level);
        let joined = t.joined();
        let mut borrowed = t.formatter.try_borrow_mut();
        let mut spare;
        let formatter: &mut Formatter = match &mut borrowed {
            Ok(formatter) => formatter,
            // A record logged while this thread formats another: from a
            // `Display` that logs, or from a signal handler.
            Err(_) => {
                spare = Formatter::new();
                &mut spare
            }
        };
        // Outside any call, a replaced `sys.stderr` gets the line through
        // pylogsink's thread: without colour, as a call's kept lines.
        let replaced = match joined.sink {
            Sink::Replaced => true,
            Sink::Outside => outside_stderr_replaced(now),
            _ => false,
        };
        let color = color::use_color(color::choice(), !replaced, fd::stderr_is_terminal);
        // The usual line, first in line for fd 2, goes out from its parts;
        // the whole line is made only for what did not, or goes elsewhere.
        let queued = queue_pending();
        let for_stream = joined.sink == Sink::Outside && queue::for_stream_pending();
        let first = record.fields.is_none()
            && first_in_line(level, joined.sink, queued, replaced, for_stream);
        let (mut written, mut alone) = (0, false);
        if first {
            match write_at_once(formatter, now, record, text, color) {
                AtOnce::Whole(message) => return collect_error(t, &joined, level, message),
                AtOnce::Part {
                    written: n,
                    alone: a,
                } => (written, alone) = (n, a),
            }
        }
        let (line, message) = if alone {
            // The arguments were formatted, alone, once.
            formatter.whole_line(now, record, color)
        } else {
            formatter.format(now, record, text, color)
        };
        let route = route(level, joined.sink, queued, replaced);
        match (record.fields, level >= Level::Error) {
            // What an exception shows of an Error record: with its span
            // context and fields.
            (Some(fields), true) => {
                let mut with_fields = Vec::new();
                message_text(&mut with_fields, message, Some(fields));
                route_line(t, &joined, level, route, &with_fields, line, written);
            }
            _ => route_line(t, &joined, level, route, message, line, written),
        }
        formatter.shrink(SCRATCH_MAX);
    });
    if routed.is_err() {
        // The thread is being torn down: it is outside any call.
        EMITTED_ELSEWHERE.add(level, 1);
        let color = color::use_color(color::choice(), true, fd::stderr_is_terminal);
        let mut formatter = Formatter::new();
        let (line, _) = formatter.format(now, record, text, color);
        write_direct(Sink::Outside, line, 0, stall_wait(), |_, _| {});
    }
}

/// Keeps a record for `logging`: in the buffer of the call it joins,
/// delivered at that call's return, or outside any call in the
/// process-wide queue, which pylogsink's own Python thread delivers.
fn keep_for_logging(record: &Record<'_>, now: SystemTime) {
    let kept = THREAD.try_with(|t| {
        t.count(record.level);
        let pending = PendingRecord::new(record, now, t.identity());
        let joined = t.joined();
        match joined.sink {
            Sink::Outside => Some(pending),
            _ => {
                let call = joined.call(t);
                if record.level >= Level::Error {
                    call.collect_error(pending.message.as_bytes());
                }
                call.keep_pending(pending, joined.attached_to())
            }
        }
    });
    let outside = match kept {
        Ok(outside) => outside,
        Err(_) => {
            EMITTED_ELSEWHERE.add(record.level, 1);
            Some(PendingRecord::new(record, now, identity()))
        }
    };
    if let Some(pending) = outside {
        if pending::queue::push(pending) {
            sys::reinstate_crash_handler();
        }
    }
}

/// What [`write_at_once`] did with a line.
enum AtOnce<'a> {
    /// All of it went out; its message, for an Error record's exception.
    Whole(&'a [u8]),
    /// `written` bytes went out, maybe none: the line is to be made and
    /// its rest written the usual way; by [`Formatter::whole_line`] where
    /// its arguments were formatted `alone` already.
    Part { written: usize, alone: bool },
}

/// Writes a plain line that is first in line for fd 2 straight from its
/// parts: the head from the formatter's cache, the message (as logged, or
/// its arguments formatted alone), the newline; one system call, no wait,
/// and no line made. Nothing is tried where fd 2 takes no such write
/// ([`fd::takes_parts_now`]), for a message that needs escaping, or a line
/// longer than a piece.
#[inline(always)]
fn write_at_once<'f>(
    formatter: &'f mut Formatter,
    now: Duration,
    record: &Record<'_>,
    text: Text<'f>,
    color: bool,
) -> AtOnce<'f> {
    let fd = fd::stderr();
    let not_tried = AtOnce::Part {
        written: 0,
        alone: false,
    };
    if !fd::takes_parts_now(fd) {
        return not_tried;
    }
    let (n, len, message) = match text {
        Text::Bytes(message) => {
            let head = formatter.head(now, record, color);
            let len = head.len() + message.len() + 1;
            if len > fd::PIPE_BUF || !is_plain(message) {
                return not_tried;
            }
            let parts = [
                IoSlice::new(head),
                IoSlice::new(message),
                IoSlice::new(b"\n"),
            ];
            (fd::write_line_now(fd, &parts), len, message)
        }
        Text::Args(args) => {
            let made_alone = AtOnce::Part {
                written: 0,
                alone: true,
            };
            if !formatter.format_alone(args) {
                return made_alone;
            }
            let (head, alone) = formatter.alone(now, record, color);
            let len = head.len() + alone.len();
            if len > fd::PIPE_BUF {
                return made_alone;
            }
            let n = fd::write_line_now(fd, &[IoSlice::new(head), IoSlice::new(alone)]);
            (n, len, &alone[..alone.len() - 1])
        }
    };
    if n == len {
        AtOnce::Whole(message)
    } else {
        AtOnce::Part {
            written: n,
            alone: matches!(text, Text::Args(_)),
        }
    }
}

/// An Error record's message, for the exception its call may raise.
#[inline(always)]
fn collect_error(t: &ThreadState, joined: &Joined, level: Level, message: &[u8]) {
    if joined.sink != Sink::Outside && level >= Level::Error {
        joined.call(t).collect_error(message);
    }
}

/// Routes one formatted line (`record`; `message` is what an exception
/// shows of it) by `route`, [`route`]'s answer for it; `written` of its
/// bytes went to fd 2 already ([`write_at_once`]).
#[inline(always)]
fn route_line(
    t: &ThreadState,
    joined: &Joined,
    level: Level,
    route: Route,
    message: &[u8],
    record: &[u8],
    written: usize,
) {
    let (call, sink, worker) = (joined.call(t), joined.sink, joined.attached_to());
    collect_error(t, joined, level, message);
    let keep = |rest: &[u8], is_rest: bool| call.keep(rest, is_rest, worker);
    match route {
        Route::Keep => keep(record, false),
        Route::ToStream => {
            queue::for_stream_push(record, false);
            pending::queue::wake_for_calls();
        }
        Route::Direct { wait } => {
            let wait = if wait { stall_wait() } else { Duration::ZERO };
            if sink == Sink::Outside && written == 0 && queue::for_stream_pending() {
                // Lines logged while `sys.stderr` was last seen replaced,
                // and it is the process's own now: they go first (unless
                // this line has begun).
                queue::for_stream_to_fd2(wait);
            }
            if sink == Sink::Stalled {
                // The queue's lines are older than the call's kept ones,
                // and its first may be the rest of a line begun.
                if !write_queue(Duration::ZERO) || !call.write_kept(Duration::ZERO) {
                    return keep(record, false);
                }
                call.set_sink(Sink::Own);
            }
            write_direct(sink, record, written, wait, |rest, is_rest| {
                call.set_sink(Sink::Stalled);
                keep(rest, is_rest);
            });
        }
        Route::Fatal => fatal(call, sink, record, keep),
    }
}

/// For a line outside any call: whether `sys.stderr` was last seen
/// replaced. An answer older than [`queue::STDERR_FRESH_MS`] wakes
/// pylogsink's Python thread to ask again, so that a stream replaced while
/// no call runs is found while lines flow, and an idle process is not
/// asked at all.
#[inline]
fn outside_stderr_replaced(now: Duration) -> bool {
    let now_ms = u64::try_from(now.as_millis()).unwrap_or(u64::MAX);
    let (replaced, stale) = queue::stderr_replaced(now_ms);
    if stale {
        pending::queue::wake_for_calls();
    }
    replaced
}

/// Writes a fatal line: what waits for `logging` (outside any call first,
/// then the call's) as text, then the call's kept lines, then the line.
#[cold]
#[inline(never)]
fn fatal(call: &Shared, sink: Sink, record: &[u8], keep: impl FnOnce(&[u8], bool)) {
    let fatal = pending::queue::Fatal::begin(stall_wait());
    let queued = fatal.take();
    let mut waiting = queued.to_text();
    // Lines logged outside any call for a replaced `sys.stderr`, which
    // pylogsink's Python thread has not written yet.
    let for_stream = queue::for_stream_take();
    if !for_stream.text.is_empty() {
        waiting.extend_from_slice(&for_stream.text);
    }
    if call.pending_any.load(Ordering::Relaxed) {
        call.pending_any.store(false, Ordering::Relaxed);
        let own = lock(&call.pending).take();
        waiting.extend(own.to_text());
    }
    fd::write_with_room(fd::stderr(), &waiting, stall_wait());
    // The process-wide queue before the call's kept lines, which are newer.
    write_queue(stall_wait());
    call.write_kept(stall_wait());
    write_direct(sink, record, 0, stall_wait(), keep);
}

// They need POSIX pipes (core/testing.rs).
#[cfg(all(test, unix))]
mod tests {
    //! The routing table, run against a pipe of the test's own in place of
    //! fd 2: no Python, and the test runner's fd 2 untouched.

    use super::*;
    use crate::core::queue::write_queue;
    use crate::core::stats::left_out;
    use crate::core::testing::{messages, Pipe};
    use crate::core::worker::Call;

    fn log(level: Level, message: &str) {
        emit_record(&Record {
            level,
            target: "rt",
            file: "rt.rs",
            line: 1,
            message: message.as_bytes(),
            fields: None,
        });
    }

    fn in_call<T>(stderr_is_own: bool, f: impl FnOnce() -> T) -> (T, Option<(Sink, bool)>) {
        THREAD.with(|t| assert!(t.enter(|| stderr_is_own, || -1)));
        let result = f();
        (result, THREAD.with(ThreadState::leave))
    }

    #[test]
    fn own_stderr_in_a_call_is_direct() {
        let pipe = Pipe::new();
        let (seen, left) = in_call(true, || {
            log(Level::Info, "one");
            pipe.read()
        });
        assert_eq!(messages(&seen), ["one"], "written before the call returned");
        assert_eq!(left, Some((Sink::Own, false)), "nothing kept");
    }

    #[test]
    fn a_replaced_stderr_keeps_until_the_return() {
        let pipe = Pipe::new();
        let (seen, left) = in_call(false, || {
            log(Level::Info, "one");
            log(Level::Warn, "two");
            pipe.read()
        });
        assert_eq!(seen, "");
        assert_eq!(left, Some((Sink::Replaced, true)));
        let kept = THREAD.with(ThreadState::take_kept);
        let kept = String::from_utf8(kept.text).unwrap();
        assert_eq!(messages(&kept), ["one", "two"]);
    }

    #[test]
    fn a_stalled_call_keeps_then_writes_its_lines_first_once_there_is_room() {
        // How long the line after the stall took: under 20 ms (the stall
        // wait) unless the machine's load held the thread up.
        let second_line = || {
            let pipe = Pipe::new();
            let mut second = Duration::ZERO;
            let ((), left) = in_call(true, || {
                pipe.fill();
                let started = std::time::Instant::now();
                log(Level::Info, "stalled");
                assert!(
                    started.elapsed() >= Duration::from_millis(20),
                    "waited the stall wait"
                );
                let sink = THREAD.with(|t| t.shared.sink());
                assert_eq!(sink, Sink::Stalled, "the call stalled");
                let started = std::time::Instant::now();
                log(Level::Info, "kept");
                second = started.elapsed();
                let drained = pipe.read();
                assert_eq!(drained.len(), 4096, "only the filler was in the pipe");
                log(Level::Info, "direct again");
                let after = pipe.read();
                assert_eq!(messages(&after), ["stalled", "kept", "direct again"]);
                assert_eq!(THREAD.with(|t| t.shared.sink()), Sink::Own);
            });
            assert_eq!(left, Some((Sink::Own, false)));
            second
        };
        // No second wait: one of 5 tries is enough (a loaded machine once
        // held one up past 20 ms); a second wait would make each 20 ms.
        let tries: Vec<Duration> = (0..5).map(|_| second_line()).collect();
        assert!(
            tries.iter().any(|t| *t < Duration::from_millis(20)),
            "no second wait: {tries:?}"
        );
    }

    #[test]
    fn a_fatal_line_comes_after_the_kept_lines() {
        let pipe = Pipe::new();
        let (seen, _) = in_call(false, || {
            log(Level::Info, "kept first");
            log(Level::Error, "kept second");
            assert_eq!(pipe.read(), "");
            log(Level::Fatal, "about to abort");
            pipe.read()
        });
        assert_eq!(
            messages(&seen),
            ["kept first", "kept second", "about to abort"]
        );
    }

    #[test]
    fn outside_a_call_lines_kept_for_a_replaced_stream_go_first_once_it_is_own_again() {
        let pipe = Pipe::new();
        let now_ms = || u64::try_from(now_since_epoch().as_millis()).unwrap();
        queue::stderr_seen(true, Some(now_ms()));
        log(Level::Info, "for the stream");
        assert_eq!(pipe.read(), "", "kept for pylogsink's Python thread");
        assert!(queue::for_stream_pending());
        // `sys.stderr` is the process's own again before that thread wrote
        // them: the next line outside a call writes them first.
        queue::stderr_seen(false, Some(now_ms()));
        log(Level::Info, "direct");
        assert_eq!(messages(&pipe.read()), ["for the stream", "direct"]);
        assert!(!queue::for_stream_pending());
    }

    #[test]
    fn outside_a_call_no_room_queues_and_the_queue_goes_first() {
        // How long the line behind the queue took (see the test above).
        let second_line = || {
            let pipe = Pipe::new();
            pipe.fill();
            log(Level::Info, "queued");
            assert!(queue_pending(), "the line waits in the queue");
            let started = std::time::Instant::now();
            log(Level::Info, "queued too");
            let second = started.elapsed();
            assert_eq!(pipe.read().len(), 4096);
            log(Level::Info, "after");
            assert_eq!(messages(&pipe.read()), ["queued", "queued too", "after"]);
            assert!(!queue_pending());
            second
        };
        let tries: Vec<Duration> = (0..5).map(|_| second_line()).collect();
        assert!(
            tries.iter().any(|t| *t < Duration::from_millis(20)),
            "behind a queue, no wait: {tries:?}"
        );
    }

    /// A message of format arguments, at once or (no room) kept, is
    /// formatted once and written once, whole.
    #[test]
    fn arguments_are_formatted_once_whether_the_line_goes_at_once_or_is_kept() {
        struct Counted<'a>(&'a std::cell::Cell<u32>, &'a str);
        impl std::fmt::Display for Counted<'_> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                self.0.set(self.0.get() + 1);
                f.write_str(self.1)
            }
        }
        let log_args = |message: &Counted<'_>| {
            let record = Record {
                level: Level::Warn,
                target: "rt",
                file: "rt.rs",
                line: 1,
                message: b"",
                fields: None,
            };
            emit_args(&record, format_args!("{message}"));
        };
        let pipe = Pipe::new();
        let (formatted, plain) = (std::cell::Cell::new(0), std::cell::Cell::new(0));
        let ((), _) = in_call(true, || {
            log_args(&Counted(&formatted, "at once"));
            assert_eq!(messages(&pipe.read()), ["at once"]);
            pipe.fill();
            log_args(&Counted(&formatted, "no room"));
            log_args(&Counted(&plain, "caf\u{e9} \x1b"));
            assert_eq!(pipe.read().len(), 4096, "only the filler");
            log_args(&Counted(&formatted, "room again"));
            let text = pipe.read();
            assert_eq!(
                messages(&text),
                ["no room", "caf\u{e9} \\x1b", "room again"]
            );
        });
        assert_eq!((formatted.get(), plain.get()), (3, 1));
    }

    /// A stalled call writes the process-wide queue before its own kept
    /// lines, which are newer (and the queue's first may be the rest of a
    /// line fd 2 took part of).
    #[test]
    fn a_stalled_call_writes_the_queue_before_its_kept_lines() {
        let pipe = Pipe::new();
        pipe.fill();
        log(Level::Info, "queued");
        let ((), _) = in_call(true, || {
            log(Level::Info, "kept");
            assert_eq!(THREAD.with(|t| t.shared.sink()), Sink::Stalled);
            assert_eq!(pipe.read().len(), 4096, "only the filler");
            log(Level::Info, "after");
            assert_eq!(messages(&pipe.read()), ["queued", "kept", "after"]);
        });
    }

    /// Another thread has the queue out to write it (its write found room
    /// for part of it only, or has not begun): a line logged meanwhile,
    /// outside a call or in one, waits behind it instead of going first
    /// (on a socket, inside the queue's first line).
    #[test]
    fn a_line_logged_while_the_queue_is_being_written_waits_behind_it() {
        let pipe = Pipe::new();
        pipe.fill();
        log(Level::Info, "queued");
        pipe.read();
        let taken = queue::queue_for_test().take_to_write();
        log(Level::Info, "outside a call");
        let ((), _) = in_call(true, || log(Level::Info, "in a call"));
        assert_eq!(pipe.read(), "", "nothing went before the queue");
        queue::queue_for_test().put_back_written(taken, 0);
        assert!(write_queue(Duration::from_secs(1)));
        let kept = THREAD.with(ThreadState::take_kept);
        crate::core::queue::write_fd2(kept, Duration::from_secs(1));
        assert_eq!(
            messages(&pipe.read()),
            ["queued", "outside a call", "in a call"]
        );
        assert!(!queue_pending());
    }

    #[test]
    fn a_line_begun_goes_on_before_the_queue_and_what_finds_no_room_is_its_rest() {
        let pipe = Pipe::new();
        pipe.fill();
        log(Level::Info, "queued");
        assert!(queue_pending());
        pipe.read();
        // Its first 6 bytes went out at once (a socket takes part of a
        // line): the rest follows them before the queue is written.
        write_direct(Sink::Outside, b"begun line\n", 6, stall_wait(), |_, _| {});
        assert_eq!(pipe.read(), "line\n");
        assert!(queue_pending(), "the queue waits for the next line");
        // No room for the rest: it joins the queue as the rest of a line.
        pipe.fill();
        write_direct(
            Sink::Outside,
            b"begun again\n",
            6,
            Duration::ZERO,
            |_, _| {},
        );
        pipe.read();
        assert!(write_queue(Duration::from_secs(1)));
        let written = pipe.read();
        assert_eq!(messages(&written), ["queued"]);
        assert!(written.ends_with("] queued\nagain\n"), "{written:?}");
    }

    #[test]
    fn a_worker_of_a_call_that_ended_logs_as_outside_any_call() {
        let pipe = Pipe::new();
        let (handle, _) = in_call(false, || {
            let handle = Call::current().expect("in a call");
            let h = handle.clone();
            std::thread::spawn(move || h.attach(|| log(Level::Info, "for the call")))
                .join()
                .unwrap();
            assert_eq!(pipe.read(), "", "kept with the call's lines");
            handle
        });
        let kept = String::from_utf8(THREAD.with(ThreadState::take_kept).text).unwrap();
        assert_eq!(messages(&kept), ["for the call"]);
        assert!(!handle.is_live());
        std::thread::spawn(move || handle.attach(|| log(Level::Info, "after the return")))
            .join()
            .unwrap();
        assert_eq!(messages(&pipe.read()), ["after the return"]);
    }

    #[test]
    fn counts_match_what_was_logged_and_left_out() {
        let pipe = Pipe::new();
        let before = crate::core::stats();
        let left_out_before = left_out();
        // More than the budget holds: lines of some 1,050 bytes.
        let n = crate::dest::budget::lines() / 900;
        let (_, _) = in_call(false, || {
            for i in 0..n {
                log(Level::Debug, &format!("line {i:06} {}", "x".repeat(1000)));
            }
        });
        let taken = THREAD.with(ThreadState::take_kept);
        assert!(taken.left_out_lines > 0, "more than the budget waited");
        let kept = taken.lines;
        assert_eq!(kept + taken.left_out_lines, n as u64);
        // The pipe holds one page: read while the queue writes the rest.
        let written = std::thread::scope(|s| {
            let reader = s.spawn(|| pipe.read_all());
            crate::core::queue::write_fd2(taken, Duration::from_millis(20));
            while queue_pending() {
                write_queue(Duration::from_millis(20));
            }
            reader.join().unwrap()
        });
        assert!(written.starts_with("[pylogsink] "), "the note first");
        let after = crate::core::stats();
        assert_eq!(
            after.by_level[Level::Debug as usize],
            before.by_level[Level::Debug as usize] + n as u64
        );
        assert_eq!(left_out() - left_out_before, n as u64 - kept);
        assert!(written.ends_with(&format!("line {:06} {}\n", n - 1, "x".repeat(1000))));
    }
}
