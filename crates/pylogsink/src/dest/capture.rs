//! Native output captured from fd 1 and fd 2: how drained bytes become
//! lines, and where a captured line goes, as pure functions.
//!
//! C and C++ code writes straight to fd 1 and fd 2 (`printf`, `std::cout`,
//! `fprintf(stderr)`). While a capture is on, those descriptors are pipes
//! that a native thread drains ([`crate::core::capture`]); the bytes it
//! reads are cut into lines here, and each line goes either to the Python
//! stream that replaced `sys.stdout` / `sys.stderr` (pytest's capture, a
//! notebook's cell, `redirect_stdout`) or to the descriptor the process
//! had before the capture began.

// The capture itself runs on Linux and macOS only (core/capture.rs); its
// decisions here are compiled, and unit-tested, everywhere.
#![cfg_attr(windows, allow(dead_code))]

use std::time::{Duration, Instant};

/// The most bytes of captured lines that wait, per stream: 1 MiB. What
/// does not fit is left out, oldest first, and one note says how much.
pub(crate) const BUDGET: usize = 1024 * 1024;

/// A line that has not ended goes out once it is this long...
pub(crate) const PARTIAL_MAX: usize = 64 * 1024;

/// ...or once its first byte has waited this long (a prompt, a progress
/// bar that redraws itself with `\r`).
pub(crate) const PARTIAL_WAIT: Duration = Duration::from_millis(100);

/// Where a captured stream's lines go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CapturedTo {
    /// Through the Python stream that replaced `sys.stdout` / `sys.stderr`,
    /// written by a thread that holds the GIL.
    Python,
    /// To the descriptor the process had before the capture (a copy of it).
    Original,
}

/// Where the lines captured from fd `target` go, given the Python stream
/// found there when the capture began: whether it is the process's own
/// (`sys.stdout is sys.__stdout__`), whether it is `None`, and its
/// `fileno()` if it has one. A stream that writes to `target` itself (a
/// file opened on fd 1, say) would feed its lines back into the pipe they
/// came from, forever: its lines go to the original descriptor too.
pub(crate) fn captured_to(own: bool, none: bool, fileno: Option<i32>, target: i32) -> CapturedTo {
    if own || none || fileno == Some(target) {
        CapturedTo::Original
    } else {
        CapturedTo::Python
    }
}

/// Whether the drain thread leaves a pipe unread for now, so that its
/// writer waits (as on any full pipe) rather than lines be left out, while
/// the lines that wait for the pipe's route are `full`.
///
/// To an original descriptor (no room there: a terminal scrolled back, a
/// pipe whose reader pauses), for as long as that lasts: the writer waits
/// as it would writing there itself, and no Python is in the way, so
/// nothing can hang that would not hang without the capture.
///
/// To Python, only while Python keeps taking them. `takes` counts
/// Python's takes so far; `held` is when the pipe was last seen full with
/// that count. Once Python has taken nothing for `patience` (the GIL held
/// by the writer itself, say), the pipe is read again and the oldest lines
/// are left out: a writer never waits longer.
pub(crate) fn hold_reading(
    route: CapturedTo,
    full: bool,
    takes: u64,
    writing: bool,
    held: &mut Held,
    now: Instant,
    patience: Duration,
) -> bool {
    if takes != held.takes {
        // Python took lines: a full pipe's wait starts again.
        held.takes = takes;
        held.last_take = Some(now);
        held.full_since = None;
    }
    if !full {
        held.full_since = None;
        return false;
    }
    if route == CapturedTo::Original {
        return true;
    }
    let since = *held.full_since.get_or_insert(now);
    // Python that took lines lately, or is writing lines it took, is
    // taking, slowly (a stream whose writes are slow): it gets longer.
    let taking = writing
        || held
            .last_take
            .is_some_and(|at| now.saturating_duration_since(at) < TAKING_PATIENCE);
    let patience = if taking {
        patience.max(TAKING_PATIENCE)
    } else {
        patience
    };
    now.saturating_duration_since(since) < patience
}

/// What [`hold_reading`] remembers of a stream between two looks.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Held {
    /// Python's takes when last seen.
    takes: u64,
    /// When they last changed.
    last_take: Option<Instant>,
    /// Since when the pipe is full with that count.
    full_since: Option<Instant>,
}

/// How long a full pipe waits for Python that took lines within as long
/// or is writing lines it took, before lines are left out: a slow stream
/// keeps them all, a stream whose `write` waits for a lock the writer
/// holds costs the writer at most this.
pub(crate) const TAKING_PATIENCE: Duration = Duration::from_secs(2);

/// Cuts drained bytes into lines. Whole lines go out at once; a line that
/// has not ended waits here until it ends, until it is [`PARTIAL_MAX`]
/// long, until its first byte is [`PARTIAL_WAIT`] old, or until the
/// capture ends.
#[derive(Debug, Default)]
pub(crate) struct Lines {
    partial: Vec<u8>,
    /// When the first byte of `partial` came.
    since: Option<Instant>,
    /// What goes out next is the rest of a line already handed out.
    rest: bool,
}

impl Lines {
    /// An empty splitter.
    pub(crate) const fn new() -> Lines {
        Lines {
            partial: Vec::new(),
            since: None,
            rest: false,
        }
    }

    /// Takes `bytes` read at `now`; hands `out` each run of whole lines,
    /// with whether it starts with the rest of a line handed out before.
    pub(crate) fn feed(&mut self, bytes: &[u8], now: Instant, out: &mut dyn FnMut(&[u8], bool)) {
        let tail = match bytes.iter().rposition(|&b| b == b'\n') {
            Some(end) => {
                let rest = std::mem::replace(&mut self.rest, false);
                if self.partial.is_empty() {
                    out(&bytes[..=end], rest);
                } else {
                    self.partial.extend_from_slice(&bytes[..=end]);
                    out(&self.partial, rest);
                    self.partial.clear();
                    self.since = None;
                }
                &bytes[end + 1..]
            }
            None => bytes,
        };
        if !tail.is_empty() {
            if self.partial.is_empty() {
                self.since = Some(now);
            }
            self.partial.extend_from_slice(tail);
        }
        if self.partial.len() >= PARTIAL_MAX {
            self.flush(out);
        }
    }

    /// Hands out the line that has not ended if it is due at `now`: its
    /// first byte waited [`PARTIAL_WAIT`].
    pub(crate) fn flush_due(&mut self, now: Instant, out: &mut dyn FnMut(&[u8], bool)) {
        if self
            .since
            .is_some_and(|since| now.saturating_duration_since(since) >= PARTIAL_WAIT)
        {
            self.flush(out);
        }
    }

    /// Hands out the line that has not ended, whatever its age (the
    /// capture ends).
    pub(crate) fn flush(&mut self, out: &mut dyn FnMut(&[u8], bool)) {
        if self.partial.is_empty() {
            return;
        }
        out(&self.partial, self.rest);
        self.rest = true;
        self.partial.clear();
        self.since = None;
    }

    /// When the line that has not ended is due, if there is one.
    pub(crate) fn due(&self) -> Option<Instant> {
        self.since.map(|since| since + PARTIAL_WAIT)
    }

    /// The line that has not ended, as it is (for the crash handler).
    pub(crate) fn partial(&self) -> &[u8] {
        &self.partial
    }

    /// Forgets everything (a forked child: the parent's bytes are the
    /// parent's).
    pub(crate) fn clear(&mut self) {
        *self = Lines::new();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(lines: &mut Lines, bytes: &[u8], now: Instant) -> Vec<(String, bool)> {
        let mut got = Vec::new();
        lines.feed(bytes, now, &mut |text, rest| {
            got.push((String::from_utf8_lossy(text).into_owned(), rest))
        });
        got
    }

    #[test]
    fn a_streams_lines_go_to_python_only_where_python_replaced_it() {
        use CapturedTo::*;
        assert_eq!(captured_to(true, false, Some(1), 1), Original);
        assert_eq!(captured_to(false, true, None, 2), Original);
        assert_eq!(
            captured_to(false, false, None, 1),
            Python,
            "capsys, StringIO"
        );
        assert_eq!(captured_to(false, false, Some(7), 2), Python, "ipykernel");
        assert_eq!(
            captured_to(false, false, Some(2), 2),
            Original,
            "would loop"
        );
        assert_eq!(captured_to(false, false, Some(2), 1), Python);
    }

    #[test]
    fn a_full_pipe_waits_for_python_while_it_takes_and_no_longer() {
        use CapturedTo::{Original, Python};
        let now = Instant::now();
        let ms = Duration::from_millis;
        let patience = ms(100);
        let mut held = Held::default();
        let mut hold = |route, full, takes, writing, at| {
            hold_reading(route, full, takes, writing, &mut held, at, patience)
        };
        assert!(!hold(Python, false, 0, false, now));
        assert!(hold(Python, true, 0, false, now));
        assert!(hold(Python, true, 0, false, now + ms(60)));
        // Nothing taken for the whole patience: read, and leave lines out
        // (the GIL held by the writer itself).
        assert!(!hold(Python, true, 0, false, now + patience));
        // Python writes lines it took: it is taking.
        assert!(hold(Python, true, 0, true, now + patience));
        // Python took some: the wait starts again, and lasts up to
        // TAKING_PATIENCE while takes are recent, across fills.
        let t = now + ms(150);
        assert!(hold(Python, true, 1, false, t));
        assert!(hold(Python, true, 1, false, t + patience));
        assert!(!hold(Python, false, 1, false, t + ms(300)));
        assert!(hold(Python, true, 1, false, t + ms(300) + patience));
        assert!(hold(Python, true, 1, false, t + TAKING_PATIENCE - ms(1)));
        assert!(!hold(Python, true, 1, false, t + TAKING_PATIENCE));
        // To an original descriptor: held while full, however long.
        let much_later = now + 1000 * TAKING_PATIENCE;
        assert!(hold(Original, true, 1, false, much_later));
        assert!(!hold(Original, false, 1, false, much_later));
    }

    #[test]
    fn whole_lines_go_at_once_and_a_partial_one_waits_for_its_end() {
        let now = Instant::now();
        let mut lines = Lines::new();
        assert_eq!(
            run(&mut lines, b"a\nb\nc", now),
            [("a\nb\n".to_string(), false)]
        );
        assert_eq!(lines.partial(), b"c");
        assert_eq!(lines.due(), Some(now + PARTIAL_WAIT));
        assert_eq!(run(&mut lines, b"d", now), []);
        assert_eq!(
            run(&mut lines, b"e\nf\n", now),
            [("cde\nf\n".to_string(), false)]
        );
        assert_eq!(lines.due(), None);
    }

    #[test]
    fn a_partial_line_goes_when_it_is_old_long_or_the_capture_ends() {
        let now = Instant::now();
        let mut lines = Lines::new();
        let mut got = Vec::new();
        run(&mut lines, b"progress 1%", now);
        lines.flush_due(now + PARTIAL_WAIT / 2, &mut |t, r| {
            got.push((t.to_vec(), r))
        });
        assert!(got.is_empty());
        lines.flush_due(now + PARTIAL_WAIT, &mut |t, r| got.push((t.to_vec(), r)));
        assert_eq!(got, [(b"progress 1%".to_vec(), false)]);
        // What follows is the rest of that line.
        assert_eq!(
            run(&mut lines, b" done\n", now),
            [(" done\n".to_string(), true)]
        );
        let long = vec![b'x'; PARTIAL_MAX];
        let out = run(&mut lines, &long, now);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].0.len(), PARTIAL_MAX);
        assert!(!out[0].1);
        run(&mut lines, b"tail", now);
        got.clear();
        lines.flush(&mut |t, r| got.push((t.to_vec(), r)));
        assert_eq!(got, [(b"tail".to_vec(), true)]);
        lines.flush(&mut |_, _| panic!("nothing left"));
    }
}
