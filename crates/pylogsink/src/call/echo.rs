//! Writes through a Python stream while an output capture is on, so that
//! the capture never feeds on its own output.
//!
//! A stream that copies what it is given to the process's own stdout or
//! stderr (pytest's `--capture=tee-sys`, a logging tee) writes the copy to
//! fd 1 or fd 2, which the capture points at its pipe: the copy would be
//! captured and given to the stream again, and again. So a write to a
//! stream not yet known is a probe: up to a line that is its own (no other
//! line near it, written or waiting, is the same: the copy of a line
//! native code writes again and again could not be told from the next
//! one), the text goes whole; from that line, a piece of at most [`PIECE`]
//! bytes, after which the copy that came back into the pipes, if any, is
//! taken out and written to the original descriptor
//! ([`capture::take_echo`]). A stream that copied is written to piece by
//! piece from then on, each copy taken out the same way; one that did not
//! is written to whole, at no cost. Around each piece, Python's own
//! `sys.__stdout__` and `sys.__stderr__` are flushed: the copy goes out
//! while it is looked for, in writes small enough that no other writer's
//! bytes mix with it in the pipe.
//!
//! A stream whose copy changes the text itself (not only adds to each
//! line), keeps back part of it, or writes it later from another thread
//! is not seen to copy: its copies come back. So do the copies of what a
//! stream is given before a line of its own.

use crate::core::capture;
use crate::dest::fd::next_piece_within;
use crate::record::lock;
use pyo3::prelude::*;
use std::sync::Mutex;

/// The most bytes of a piece: its copy, with what a copy adds to each
/// line, still goes into a pipe in one write that no other writer's bytes
/// interleave with (4096 bytes on Linux).
const PIECE: usize = 2048;

/// The streams written to during the capture, and whether each copies.
static SEEN: Mutex<Vec<(Py<PyAny>, bool)>> = Mutex::new(Vec::new());

/// Writes `text` through `stream` with `write`, which writes what it is
/// given, so that what the stream copies to the captured descriptors
/// reaches the originals once (see the module's doc). What `write`
/// returns for the last piece written, or for the first that `whole`
/// says did not go through whole.
pub(crate) fn write<R>(
    py: Python<'_>,
    stream: &Bound<'_, PyAny>,
    text: &[u8],
    mut write: impl FnMut(&[u8]) -> R,
    whole: impl Fn(&R) -> bool,
) -> R {
    if !capture::is_on() || capture::echo_marks().iter().all(Option::is_none) {
        return write(text);
    }
    let mut rest = text;
    let copies = lock(&SEEN).iter().find(|(s, _)| s.is(stream)).map(|s| s.1);
    match copies {
        Some(false) => return write(text),
        Some(true) => {}
        None => {
            let Some(at) = own_line(text) else {
                return write(text);
            };
            if at > 0 {
                let written = write(&text[..at]);
                if !whole(&written) {
                    return written;
                }
            }
            let (piece, after) = text[at..].split_at(piece_len(&text[at..]));
            let (written, copied) = write_piece(py, piece, &mut write);
            lock(&SEEN).push((stream.clone().unbind(), copied));
            if !whole(&written) || after.is_empty() {
                return written;
            }
            if !copied {
                return write(after);
            }
            rest = after;
        }
    }
    loop {
        let (piece, after) = rest.split_at(piece_len(rest));
        let (written, _) = write_piece(py, piece, &mut write);
        if !whole(&written) || after.is_empty() {
            return written;
        }
        rest = after;
    }
}

/// Writes one piece, then takes its copy out of the pipes if one came
/// back; true if one did.
fn write_piece<R>(py: Python<'_>, piece: &[u8], write: &mut impl FnMut(&[u8]) -> R) -> (R, bool) {
    flush_own(py);
    let marks = capture::echo_marks();
    let written = write(piece);
    flush_own(py);
    let copied = py.detach(|| capture::take_echo(marks, piece));
    (written, copied)
}

/// Where the first line of `text` that is its own starts: a line with
/// something in it that no other of its first [`LOOKED_AT`] lines is, nor
/// one of the newest lines waiting for Python.
fn own_line(text: &[u8]) -> Option<usize> {
    let lines: Vec<&[u8]> = text
        .split_inclusive(|&b| b == b'\n')
        .take(LOOKED_AT)
        .collect();
    let mut at = 0;
    for line in &lines {
        let content = line.strip_suffix(b"\n").unwrap_or(line);
        let alone = lines.iter().filter(|l| *l == line).count() == 1;
        if !content.is_empty() && alone && !capture::waiting_holds(line) {
            return Some(at);
        }
        at += line.len();
    }
    None
}

/// How many lines of a write [`own_line`] looks at.
const LOOKED_AT: usize = 64;

/// How long the next piece of `text` is: up to its last line end within
/// [`PIECE`] bytes, or (a longer line) [`PIECE`] bytes at most, never
/// ending inside a UTF-8 character, which the piece's decoding would
/// show as escapes.
fn piece_len(text: &[u8]) -> usize {
    let mut len = next_piece_within(text, PIECE);
    while len < text.len() && len > 1 && text[len] & 0xC0 == 0x80 {
        len -= 1;
    }
    len
}

/// Forgets the streams seen: the capture ended.
pub(crate) fn forget() {
    let before = std::mem::take(&mut *lock(&SEEN));
    drop(before);
}

/// Flushes `sys.__stdout__` and `sys.__stderr__`; errors are ignored (a
/// closed stream has nothing to let out).
fn flush_own(py: Python<'_>) {
    for name in [c"__stdout__", c"__stderr__"] {
        if let Ok(own) = super::capi::sys_attr(py, name) {
            if !own.is_none() {
                let _ = own.call_method0("flush");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_end_at_a_line_end_or_between_characters() {
        let lines = b"a\n".repeat(1500);
        assert_eq!(piece_len(&lines), 2048);
        assert_eq!(piece_len(b"short"), 5);
        // One long line of three-byte characters: 2048 is inside one.
        let long = "\u{20ac}".repeat(1000);
        let len = piece_len(long.as_bytes());
        assert_eq!(len, 2046);
        assert!(std::str::from_utf8(&long.as_bytes()[..len]).is_ok());
    }

    #[test]
    fn a_line_of_its_own_is_one_no_other_line_is() {
        // Outside a capture nothing waits: only the text is looked at.
        assert_eq!(own_line(b"x\nx\ny\nx\n"), Some(4));
        assert_eq!(own_line(b"x\n\nx\n"), None);
        assert_eq!(own_line(b"line 1\nline 2\n"), Some(0));
    }
}
