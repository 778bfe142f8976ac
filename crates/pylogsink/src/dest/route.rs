//! Where a line goes: the routing table of pylogsink as pure functions.
//!
//! Everything that decides lives here and nothing here touches Python, a
//! file descriptor or a clock, so the whole table is unit-tested below. The
//! callers (the log function and `call`) do the system calls and
//! the Python calls that these decisions ask for.

use crate::record::Level;

/// What the current thread's outermost call decided about `sys.stderr`,
/// or that the thread is outside any call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Sink {
    /// Outside any call: a native worker thread, module init, a destructor.
    Outside,
    /// In a call, `sys.stderr` is the process's own: lines go to fd 2 now.
    Own,
    /// In a call whose fd 2 had no room for the stall wait: lines are kept,
    /// and each new line checks again, without waiting, for room.
    Stalled,
    /// In a call, `sys.stderr` was replaced: lines are kept and written
    /// through `sys.stderr.write` when the call returns.
    Replaced,
}

impl Sink {
    /// The sink `sink as u8` came from; `Outside` for anything else.
    #[inline]
    pub(crate) fn from_u8(sink: u8) -> Sink {
        match sink {
            1 => Sink::Own,
            2 => Sink::Stalled,
            3 => Sink::Replaced,
            _ => Sink::Outside,
        }
    }
}

/// What to do with one line now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Route {
    /// Write to fd 2, first whatever waits before it; wait for room at most
    /// the stall wait if `wait`, else not at all. What finds no room is
    /// handled by [`on_no_room`].
    Direct {
        /// Whether to wait for room (up to the stall wait).
        wait: bool,
    },
    /// Keep the line in the call's memory until the call returns.
    Keep,
    /// Outside any call while `sys.stderr` is replaced: keep the line for
    /// pylogsink's Python thread, which writes it to that stream.
    ToStream,
    /// An abort follows: write the kept lines, then this one, to fd 2 while
    /// there is room.
    Fatal,
}

/// Where a line goes, given its level, the thread's sink, whether lines
/// logged outside any call already wait in the process-wide queue (fd 2
/// had no room for them, so a line outside a call checks again without
/// waiting, as a stalled call does), and whether `sys.stderr` was last
/// seen replaced (which only a line outside any call asks: a call decided
/// at its entry).
pub(crate) fn route(level: Level, sink: Sink, queue_pending: bool, stderr_replaced: bool) -> Route {
    if level == Level::Fatal {
        return Route::Fatal;
    }
    match sink {
        Sink::Outside if stderr_replaced => Route::ToStream,
        Sink::Outside => Route::Direct {
            wait: !queue_pending,
        },
        Sink::Own => Route::Direct { wait: true },
        Sink::Stalled => Route::Direct { wait: false },
        Sink::Replaced => Route::Keep,
    }
}

/// Whether a line goes to fd 2 first in line: [`route`] sends it
/// [`Route::Direct`] to wait for room (the same arguments), and no line
/// waits before it, neither in the process-wide queue (`queue_pending`)
/// nor, outside any call, for a replaced `sys.stderr` that is the
/// process's own again (`for_stream_pending`). Such a line may be written
/// straight from its parts, before it is made; the route itself is then
/// never needed.
#[inline(always)]
pub(crate) fn first_in_line(
    level: Level,
    sink: Sink,
    queue_pending: bool,
    stderr_replaced: bool,
    for_stream_pending: bool,
) -> bool {
    level != Level::Fatal
        && !queue_pending
        && match sink {
            Sink::Own => true,
            Sink::Outside => !stderr_replaced && !for_stream_pending,
            Sink::Stalled | Sink::Replaced => false,
        }
}

/// What happens to the part of a direct line that found no room.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NoRoom {
    /// The call keeps it, and its sink becomes [`Sink::Stalled`].
    KeepAndStall,
    /// It joins the process-wide queue (its newest lines within the budget).
    Queue,
}

/// The fate of a line that found no room on fd 2.
pub(crate) fn on_no_room(sink: Sink) -> NoRoom {
    match sink {
        Sink::Outside => NoRoom::Queue,
        Sink::Own | Sink::Stalled | Sink::Replaced => NoRoom::KeepAndStall,
    }
}

/// The sink a new outermost call starts with.
///
/// `stderr_is_own` is `sys.stderr is sys.__stderr__`. `writing_kept` says
/// that this thread is inside `sys.stderr.write` for an earlier call's kept
/// lines: a call made from there (a writer that calls back into the
/// extension) writes to fd 2, so it can neither recurse nor lose lines.
#[inline]
pub(crate) fn entry_sink(stderr_is_own: bool, writing_kept: bool) -> Sink {
    if stderr_is_own || writing_kept {
        Sink::Own
    } else {
        Sink::Replaced
    }
}

/// How a call's kept lines leave when it returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ReturnPlan {
    /// Through `sys.stderr.write`, with the GIL held.
    ThroughPython,
    /// To fd 2 with the GIL released, waiting at most the stall wait, so a
    /// Python thread that drains fd 2 can run; the rest joins the queue.
    Fd2Detached,
    /// To fd 2 with the GIL held and no wait: only where releasing and
    /// re-taking the GIL may end the thread (see [`daemon_avoids_python`]).
    Fd2NoWait,
    /// Where this thread must avoid Python and `sys.stderr` was replaced:
    /// handed to pylogsink's Python thread, which writes them through
    /// `sys.stderr.write`, unless the exit closed the hand-over (then to fd
    /// 2 as [`ReturnPlan::Fd2NoWait`]).
    HandOver,
}

/// How the kept lines of a call with sink `sink` leave at its return.
pub(crate) fn return_plan(sink: Sink, avoid_python: bool) -> ReturnPlan {
    match (sink, avoid_python) {
        (Sink::Replaced, true) => ReturnPlan::HandOver,
        (_, true) => ReturnPlan::Fd2NoWait,
        (Sink::Replaced, false) => ReturnPlan::ThroughPython,
        (Sink::Outside | Sink::Own | Sink::Stalled, false) => ReturnPlan::Fd2Detached,
    }
}

/// Whether this thread must never write through Python nor release and
/// re-take the GIL.
///
/// CPython before 3.13.8 ends a daemon thread when it re-takes the GIL after
/// finalization began; if that happens in the middle of a write through
/// Python, the process crashes (Linux: `pthread_exit`) or hangs at exit on
/// a lock the thread held (Windows: `_endthreadex`). `ends_threads` says
/// whether this platform's CPython is one of those.
pub(crate) fn daemon_avoids_python(
    ends_threads: bool,
    version: (u8, u8, u8),
    daemon: bool,
) -> bool {
    ends_threads && daemon && version < (3, 13, 8)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LEVELS: [Level; 4] = [Level::Debug, Level::Info, Level::Warn, Level::Error];

    #[test]
    fn own_stderr_in_a_call_is_direct_with_wait() {
        for level in LEVELS {
            assert_eq!(
                route(level, Sink::Own, false, false),
                Route::Direct { wait: true }
            );
        }
    }

    #[test]
    fn only_a_direct_line_with_nothing_before_it_is_first_in_line() {
        for level in LEVELS {
            let first = |sink, queue_pending, replaced, for_stream| {
                first_in_line(level, sink, queue_pending, replaced, for_stream)
            };
            assert!(first(Sink::Own, false, false, false));
            assert!(first(Sink::Own, false, false, true), "a call's line");
            assert!(first(Sink::Outside, false, false, false));
            // Lines wait in the queue, or for a stream that is fd 2 again.
            assert!(!first(Sink::Own, true, false, false));
            assert!(!first(Sink::Outside, true, false, false));
            assert!(!first(Sink::Outside, false, false, true));
            // Not to fd 2 now, or its kept lines first.
            assert!(!first(Sink::Outside, false, true, false));
            assert!(!first(Sink::Replaced, false, false, false));
            assert!(!first(Sink::Stalled, false, false, false));
        }
        // A fatal line writes what waits for `logging` first.
        assert!(!first_in_line(Level::Fatal, Sink::Own, false, false, false));
        // Whatever the case, first in line is routed to fd 2 with a wait.
        let sinks = [Sink::Own, Sink::Outside, Sink::Stalled, Sink::Replaced];
        for (level, sink) in [Level::Fatal]
            .into_iter()
            .chain(LEVELS)
            .flat_map(|l| sinks.map(|s| (l, s)))
        {
            for bits in 0..8 {
                let (queue, replaced, for_stream) = (bits & 1 != 0, bits & 2 != 0, bits & 4 != 0);
                if first_in_line(level, sink, queue, replaced, for_stream) {
                    assert_eq!(
                        route(level, sink, queue, replaced),
                        Route::Direct { wait: true }
                    );
                }
            }
        }
    }

    #[test]
    fn replaced_stderr_keeps() {
        for level in LEVELS {
            assert_eq!(route(level, Sink::Replaced, false, false), Route::Keep);
        }
    }

    #[test]
    fn stalled_checks_again_without_waiting() {
        assert_eq!(
            route(Level::Info, Sink::Stalled, false, false),
            Route::Direct { wait: false }
        );
    }

    #[test]
    fn outside_a_call_is_direct_and_queues_on_no_room() {
        assert_eq!(
            route(Level::Info, Sink::Outside, false, false),
            Route::Direct { wait: true }
        );
        assert_eq!(on_no_room(Sink::Outside), NoRoom::Queue);
    }

    #[test]
    fn outside_a_call_behind_a_queue_checks_without_waiting() {
        assert_eq!(
            route(Level::Info, Sink::Outside, true, false),
            Route::Direct { wait: false }
        );
        // A call's own lines still wait once: the call keeps them after that.
        assert_eq!(
            route(Level::Info, Sink::Own, true, false),
            Route::Direct { wait: true }
        );
    }

    #[test]
    fn outside_a_call_with_a_replaced_stderr_goes_to_that_stream() {
        for level in LEVELS {
            for queue_pending in [false, true] {
                assert_eq!(
                    route(level, Sink::Outside, queue_pending, true),
                    Route::ToStream
                );
            }
        }
        // A call decided at its entry; the answer does not change it.
        assert_eq!(
            route(Level::Info, Sink::Own, false, true),
            Route::Direct { wait: true }
        );
        assert_eq!(route(Level::Info, Sink::Replaced, false, true), Route::Keep);
        assert_eq!(
            route(Level::Fatal, Sink::Outside, false, true),
            Route::Fatal
        );
    }

    #[test]
    fn a_call_that_finds_no_room_keeps_and_stalls() {
        assert_eq!(on_no_room(Sink::Own), NoRoom::KeepAndStall);
        assert_eq!(on_no_room(Sink::Stalled), NoRoom::KeepAndStall);
    }

    #[test]
    fn fatal_always_goes_straight_out() {
        for sink in [Sink::Outside, Sink::Own, Sink::Stalled, Sink::Replaced] {
            for replaced in [false, true] {
                assert_eq!(route(Level::Fatal, sink, false, replaced), Route::Fatal);
                assert_eq!(route(Level::Fatal, sink, true, replaced), Route::Fatal);
            }
        }
    }

    #[test]
    fn sinks_round_trip_through_u8() {
        for sink in [Sink::Outside, Sink::Own, Sink::Stalled, Sink::Replaced] {
            assert_eq!(Sink::from_u8(sink as u8), sink);
        }
        assert_eq!(Sink::from_u8(200), Sink::Outside);
    }

    #[test]
    fn entry_sink_follows_sys_stderr() {
        assert_eq!(entry_sink(true, false), Sink::Own);
        assert_eq!(entry_sink(false, false), Sink::Replaced);
        // A writer that calls back into the extension must not recurse.
        assert_eq!(entry_sink(false, true), Sink::Own);
    }

    #[test]
    fn return_plans() {
        assert_eq!(
            return_plan(Sink::Replaced, false),
            ReturnPlan::ThroughPython
        );
        assert_eq!(return_plan(Sink::Stalled, false), ReturnPlan::Fd2Detached);
        assert_eq!(return_plan(Sink::Own, false), ReturnPlan::Fd2Detached);
        assert_eq!(return_plan(Sink::Replaced, true), ReturnPlan::HandOver);
        assert_eq!(return_plan(Sink::Stalled, true), ReturnPlan::Fd2NoWait);
    }

    #[test]
    fn daemon_rule_only_on_linux_before_3_13_8() {
        assert!(daemon_avoids_python(true, (3, 10, 13), true));
        assert!(daemon_avoids_python(true, (3, 13, 7), true));
        assert!(!daemon_avoids_python(true, (3, 13, 8), true));
        assert!(!daemon_avoids_python(true, (3, 14, 0), true));
        assert!(!daemon_avoids_python(false, (3, 11, 0), true));
        assert!(!daemon_avoids_python(true, (3, 11, 0), false));
    }
}
