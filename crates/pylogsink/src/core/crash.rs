//! Lines that wait when the process crashes.
//!
//! Lines wait in memory: kept by a call while `sys.stderr` is replaced or
//! fd 2 is stalled, queued outside any call, or waiting for the `logging`
//! destination. A segfault or an abort that is not a pylogsink Fatal line
//! (a vendor library's `abort()`, `std::terminate`, a null pointer) would
//! end the process with them, and they are the lines that explain the
//! crash. So a handler for the fatal signals writes them to fd 2 first,
//! then lets the signal do what it would have done
//! ([`sys::install_crash_handler`]).
//!
//! A signal handler may only make async-signal-safe calls: it allocates
//! nothing, frees nothing and never blocks on a lock: it tries each for at
//! most 20 ms ([`lock_at_crash`]), since the other threads run on while it
//! writes and one may hold a buffer for a moment; a buffer whose lock stays
//! held, by the thread that crashed inside a push say, is skipped and
//! reported in a note. Records for `logging` are formatted into a buffer allocated
//! when the handler is installed.
//!
//! A SIGABRT that the process raised itself, with a handler of the
//! program's in place, may be `abort()` (the process ends as the handler
//! returns) or `raise` (it lives on): the lines are written all the same,
//! and forgotten, so that a process that lives on does not write them
//! twice. What they held is leaked, not freed (freeing is not
//! async-signal-safe): a few KiB, once per such signal.

use super::capture::{stop_reading_at_crash, write_rest_at_crash};
use super::registry::visit_waiting;
use crate::control::stall_wait;
use crate::dest::fd::{self, write_from_signal_handler};
use crate::dest::in_flight;
use crate::dest::kept::{write_left_out_note, Limit};
use crate::dest::pending::flight;
use crate::dest::pending::PendingRecord;
use crate::record::{lock, lock_at_crash};
use crate::sys;
use std::sync::{Mutex, Once};
use std::time::Instant;

/// Where records for `logging` are formatted as text in the handler: one
/// record of up to 64 KiB (a longer one is counted as skipped).
static SCRATCH: Mutex<Vec<u8>> = Mutex::new(Vec::new());
const SCRATCH_BYTES: usize = 64 * 1024;

/// Installs the crash handler, once per process: at the first fatal
/// signal (a crash on Windows), what waits is written.
pub(crate) fn install() {
    static INSTALLED: Once = Once::new();
    INSTALLED.call_once(|| {
        *lock(&SCRATCH) = Vec::with_capacity(SCRATCH_BYTES);
        sys::install_crash_handler(write_waiting);
    });
}

/// Writes every line and record that waits, each piece waiting for room
/// at most the stall wait, then a note for the buffers skipped. A call
/// whose `sys.stderr` has a descriptor of its own that outlives fd 2's
/// reader (ipykernel's copy of the kernel's original stderr) gets its
/// lines there; where that fails, fd 2 gets them. With `may_live_on`,
/// what is written is forgotten (see the module's doc).
fn write_waiting(may_live_on: bool) {
    let deadline = Instant::now() + stall_wait();
    // Held until the end: what an output capture's pipes hold stays there
    // until `write_rest_at_crash` reads it.
    let _reading = stop_reading_at_crash();
    let write = |fd: i32, text: &[u8]| {
        if fd < 0 || !write_from_signal_handler(fd, text, deadline) {
            write_from_signal_handler(fd::stderr(), text, deadline);
        }
    };
    let mut scratch = lock_at_crash(&SCRATCH);
    let mut skipped = 0;
    let mut record = |fd: i32, record: &PendingRecord| match scratch.as_deref_mut() {
        // A target's bytes may be escaped, four for one: room for that too,
        // so that the buffer never grows here.
        Some(out) if record.size() + 3 * record.target.len() <= out.capacity() => {
            out.clear();
            record.to_text(out);
            write(fd, out);
        }
        _ => skipped += 1,
    };
    // Where lines or records were left out, their note first, as where
    // they are written by the living process.
    let note = |fd: i32, n: u64, unit: &str, bytes: u64, limit: Limit| {
        if n > 0 {
            let mut note = Note::new();
            note.push(b"[pylogsink] ");
            let _ = write_left_out_note(&mut note, n, unit, bytes, limit);
            note.push(b"\n");
            write(fd, note.as_bytes());
        }
    };
    // The records being handed to `logging` right now came out of the
    // buffers first.
    let mut busy = flight::visit(
        &mut |in_flight| in_flight.iter().for_each(|r| record(-1, r)),
        may_live_on,
    );
    busy += visit_waiting(
        &mut |fd, kept| {
            let (n, bytes) = kept.left_out();
            note(fd, n, "line", bytes, Limit::Bytes(kept.cap()));
            write(fd, kept.lines_bytes());
            if may_live_on {
                kept.forget_at_crash();
            }
        },
        &mut |fd, pending| {
            note(
                fd,
                pending.left_out,
                "record",
                pending.left_out_bytes,
                pending.limit(),
            );
            pending.records().for_each(|r| record(fd, r));
            if may_live_on {
                pending.forget_at_crash();
            }
        },
    );
    // Text on its way through a Python stream, in no buffer meanwhile.
    busy += in_flight::visit(&mut |text| write(-1, text), may_live_on);
    // What an output capture had not yet read into lines.
    write_rest_at_crash(&mut |fd, text| write(fd, text), may_live_on);
    if busy + skipped > 0 {
        let mut note = Note::new();
        note.push(b"[pylogsink] crashed: ");
        note.push_number(busy as u64);
        note.push(b" busy buffers and ");
        note.push_number(skipped as u64);
        note.push(b" records could not be written\n");
        write(-1, note.as_bytes());
    }
}

/// A line built on the stack.
struct Note {
    bytes: [u8; 256],
    len: usize,
}

impl Note {
    fn new() -> Note {
        Note {
            bytes: [0; 256],
            len: 0,
        }
    }

    fn push(&mut self, text: &[u8]) {
        let n = text.len().min(self.bytes.len() - self.len);
        self.bytes[self.len..self.len + n].copy_from_slice(&text[..n]);
        self.len += n;
    }

    fn push_number(&mut self, mut n: u64) {
        let mut digits = [0u8; 20];
        let mut at = digits.len();
        loop {
            at -= 1;
            digits[at] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        self.push(&digits[at..]);
    }

    fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

impl std::fmt::Write for Note {
    /// Allocates nothing: what does not fit is cut.
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.push(s.as_bytes());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_hold_numbers() {
        let mut note = Note::new();
        note.push(b"n=");
        note.push_number(0);
        note.push(b",");
        note.push_number(18_446_744_073_709_551_615);
        assert_eq!(note.as_bytes(), b"n=0,18446744073709551615");
    }

    #[test]
    fn a_note_never_overflows() {
        let mut note = Note::new();
        for _ in 0..30 {
            note.push(b"0123456789");
        }
        assert_eq!(note.as_bytes().len(), 256);
    }

    #[test]
    fn the_largest_left_out_note_fits() {
        let mut note = Note::new();
        note.push(b"[pylogsink] ");
        let most = Limit::Records(usize::MAX, usize::MAX);
        write_left_out_note(&mut note, u64::MAX, "record", u64::MAX, most).unwrap();
        note.push(b"\n");
        let text = std::str::from_utf8(note.as_bytes()).unwrap();
        assert!(text.ends_with("waited at once\n"), "{text}");
    }

    #[test]
    #[cfg(unix)] // a POSIX pipe (core/testing.rs)
    fn the_dump_of_an_overflowed_call_starts_with_its_note() {
        use crate::core::testing::Pipe;
        use crate::core::thread::THREAD;
        use crate::record::{Level, Record};
        let pipe = Pipe::new();
        install();
        THREAD.with(|t| t.enter(|| false, || -1));
        let before = crate::core::stats::left_out();
        // More than the budget holds: lines of some 1,050 bytes.
        let n = crate::dest::budget::lines() / 900;
        for i in 0..n {
            crate::core::emit::emit_record(&Record {
                level: Level::Info,
                target: "rt",
                file: "rt.rs",
                line: 1,
                message: format!("line {i:06} {}", "x".repeat(1000)).as_bytes(),
                fields: None,
            });
        }
        // The lines were counted as they left the call's buffer (other
        // tests may count theirs meanwhile: at least these).
        let dropped = crate::core::stats::left_out() - before;
        // The pipe holds one page: read while the handler writes.
        let dump = std::thread::scope(|s| {
            let reader = s.spawn(|| pipe.read_all());
            write_waiting(false);
            reader.join().unwrap()
        });
        THREAD.with(|t| {
            t.leave();
            drop(t.take_kept());
        });
        let first = dump.lines().next().unwrap();
        assert!(
            first.starts_with("[pylogsink] ") && first.contains(" lines ("),
            "{first}"
        );
        let noted: u64 = first["[pylogsink] ".len()..]
            .split(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        let lines = dump.lines().count() as u64 - 1;
        assert_eq!(noted + lines, n as u64);
        assert!(dropped >= noted, "{dropped} counted, {noted} noted");
        assert!(dump.ends_with(&format!("line {:06} {}\n", n - 1, "x".repeat(1000))));
    }
}
