//! Lines that wait: a byte buffer that keeps the newest lines under a cap.
//!
//! A call whose lines cannot go out at once keeps them here, and so does
//! the process-wide queue for lines logged outside any call that found no
//! room on fd 2. Memory must stay bounded whatever native code logs, so
//! the buffer keeps its newest lines within the budget in force
//! ([`budget::lines`]) or a cap of its own; the lines it leaves out are
//! counted, and one note in their place says how many, so every line
//! emitted is either written or accounted for.

use super::budget;
use std::collections::VecDeque;
use std::fmt::Write as _;

/// The most a buffer holds, as its note says it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Limit {
    /// Text lines: this many bytes.
    Bytes(usize),
    /// Records for `logging`: this many records, within this many bytes.
    Records(usize, usize),
}

impl std::fmt::Display for Limit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Limit::Bytes(bytes) => write_size(f, bytes),
            Limit::Records(records, bytes) => {
                write!(f, "{records} records or ")?;
                write_size(f, bytes)
            }
        }
    }
}

/// A size as a note says it: in MiB where whole, else in KiB.
fn write_size(f: &mut std::fmt::Formatter<'_>, bytes: usize) -> std::fmt::Result {
    if bytes >= 1 << 20 && bytes.is_multiple_of(1 << 20) {
        write!(f, "{} MiB", bytes >> 20)
    } else {
        write!(f, "{} KiB", bytes / 1024)
    }
}

/// The note that stands where `n` lines or records (`unit`), `bytes` bytes
/// in all, were left out of a buffer that holds at most `limit`.
pub(crate) fn left_out_note(n: u64, unit: &str, bytes: u64, limit: Limit) -> String {
    let mut note = String::new();
    let _ = write_left_out_note(&mut note, n, unit, bytes, limit);
    note
}

/// [`left_out_note`] into `out`, which may be a buffer on the stack: it
/// allocates nothing, for the crash handler.
pub(crate) fn write_left_out_note(
    out: &mut impl std::fmt::Write,
    n: u64,
    unit: &str,
    bytes: u64,
    limit: Limit,
) -> std::fmt::Result {
    write!(
        out,
        "{n} {unit}{} ({bytes} bytes) left out here: more than {limit} waited at once",
        plural(n),
    )
}

/// Whole lines, oldest first, holding at most the budget's bytes (or a
/// cap of its own).
#[derive(Debug)]
pub(crate) struct Kept {
    /// A cap of its own; the budget in force if none.
    own_cap: Option<usize>,
    /// Line bytes; the kept lines are `data[head..]`.
    data: Vec<u8>,
    head: usize,
    /// Each kept line, oldest first: its length, and whether it is the rest
    /// of a line whose start was already written.
    lines: VecDeque<(usize, bool)>,
    /// The output ends inside a line whose rest was left out: what is
    /// written next starts with a newline.
    newline_first: bool,
    left_out_lines: u64,
    left_out_bytes: u64,
    /// Lines longer than the cap, cut to fit, and the bytes cut off.
    cut_lines: u64,
    cut_bytes: u64,
    /// A writer took the lines out to write them and has not put back
    /// what found no room: a line written meanwhile would come before
    /// them, or inside one of them where fd 2 takes part of a write (a
    /// socket, a terminal). See [`take_to_write`](Self::take_to_write).
    writing: bool,
}

impl Default for Kept {
    fn default() -> Self {
        Kept::budgeted()
    }
}

impl Kept {
    /// An empty buffer that keeps at most the budget in force.
    pub(crate) const fn budgeted() -> Kept {
        Kept::with_own_cap(None)
    }

    /// An empty buffer that keeps at most `cap` bytes (64 at the least),
    /// whatever the budget.
    #[cfg_attr(windows, allow(dead_code))] // the output capture's and tests'
    pub(crate) const fn with_cap(cap: usize) -> Kept {
        Kept::with_own_cap(Some(if cap < 64 { 64 } else { cap }))
    }

    const fn with_own_cap(own_cap: Option<usize>) -> Kept {
        Kept {
            own_cap,
            data: Vec::new(),
            head: 0,
            lines: VecDeque::new(),
            newline_first: false,
            left_out_lines: 0,
            left_out_bytes: 0,
            cut_lines: 0,
            cut_bytes: 0,
            writing: false,
        }
    }

    /// Forgets the kept lines and the note, which a signal handler wrote
    /// for a process that may live on: nothing is freed (their memory
    /// stays for the lines to come), so it may run in the handler.
    pub(crate) fn forget_at_crash(&mut self) {
        self.data.clear();
        self.head = 0;
        self.lines.clear();
        self.left_out_lines = 0;
        self.left_out_bytes = 0;
        self.cut_lines = 0;
        self.cut_bytes = 0;
    }

    /// Whether nothing waits here: no line and no note.
    pub(crate) fn is_empty(&self) -> bool {
        self.lines.is_empty() && self.left_out_bytes == 0 && self.cut_lines == 0
    }

    /// The lines left out so far, and their bytes: what the note says.
    pub(crate) fn left_out(&self) -> (u64, u64) {
        (self.left_out_lines, self.left_out_bytes)
    }

    /// The most bytes it keeps.
    pub(crate) fn cap(&self) -> usize {
        self.own_cap.unwrap_or_else(budget::lines)
    }

    /// The kept lines as they are, oldest first, without the note: what
    /// can be written without allocating (from a signal handler).
    pub(crate) fn lines_bytes(&self) -> &[u8] {
        &self.data[self.head..]
    }

    /// Bytes of lines kept now (notes not counted).
    pub(crate) fn len_bytes(&self) -> usize {
        self.data.len() - self.head
    }

    /// Whether a line of `len` bytes fits without leaving one out (an
    /// empty buffer takes any line: one too long is cut).
    pub(crate) fn has_room(&self, len: usize) -> bool {
        self.lines.is_empty() || self.len_bytes() + len <= self.cap()
    }

    /// Adds one line (it should end in a newline), leaving out the oldest
    /// lines as needed to stay under the cap.
    pub(crate) fn push(&mut self, line: &[u8]) {
        self.push_piece(line, false);
    }

    /// Adds one record that found no room on fd 2: the whole record (one
    /// line, even if a logged newline continues it), or with `is_rest` the
    /// rest of one whose start was already written.
    pub(crate) fn push_record(&mut self, record: &[u8], is_rest: bool) {
        if is_rest {
            self.push_text_from(record, true);
        } else {
            self.push(record);
        }
    }

    /// Adds text that may hold several lines, each kept (and left out) on
    /// its own; with `first_is_rest`, its first line is the rest of one
    /// whose start was pushed before.
    pub(crate) fn push_text_from(&mut self, text: &[u8], first_is_rest: bool) {
        let mut rest = first_is_rest;
        for line in text.split_inclusive(|&b| b == b'\n') {
            self.push_piece(line, rest);
            rest = false;
        }
    }

    fn push_piece(&mut self, line: &[u8], is_rest: bool) {
        let cap = self.cap();
        if line.len() <= cap {
            return self.push_line(line, is_rest);
        }
        let keep = cut_point(line, cap - 1);
        self.cut_lines += 1;
        self.cut_bytes += (line.len() - keep) as u64;
        let mut cut = Vec::with_capacity(keep + 1);
        cut.extend_from_slice(&line[..keep]);
        cut.push(b'\n');
        self.push_line(&cut, is_rest);
    }

    fn push_line(&mut self, line: &[u8], is_rest: bool) {
        let cap = self.cap();
        while self.len_bytes() + line.len() > cap {
            let Some((old, old_is_rest)) = self.lines.pop_front() else {
                break;
            };
            self.head += old;
            // The rest of a line whose start went out is not a line of its
            // own: its bytes are counted, its line was already.
            self.left_out_lines += u64::from(!old_is_rest);
            self.left_out_bytes += old as u64;
            super::dropped::count(u64::from(!old_is_rest));
            self.newline_first |= old_is_rest;
        }
        if self.head > 0 && self.head >= self.data.len() / 2 {
            self.data.drain(..self.head);
            self.head = 0;
        }
        self.data.extend_from_slice(line);
        self.lines.push_back((line.len(), is_rest));
    }

    /// Whether a writer has the lines out ([`take_to_write`](Self::take_to_write)):
    /// then nothing may be written to fd 2 in their place before them.
    pub(crate) fn being_written(&self) -> bool {
        self.writing
    }

    /// [`take`](Self::take) for a writer, which then owes
    /// [`put_back_written`](Self::put_back_written): until then the buffer
    /// counts as [`being_written`](Self::being_written).
    pub(crate) fn take_to_write(&mut self) -> Taken {
        self.writing = true;
        self.take()
    }

    /// [`put_back`](Self::put_back) by the writer that took the lines
    /// with [`take_to_write`](Self::take_to_write), which ends its write.
    pub(crate) fn put_back_written(&mut self, taken: Taken, written: usize) {
        self.put_back(taken, written);
        self.writing = false;
    }

    /// In a child after `fork()`: what waited is the parent's to write,
    /// and a writer that had it out is in the parent alone.
    pub(crate) fn clear_in_child(&mut self) {
        drop(self.take());
        self.writing = false;
    }

    /// Puts back what was taken and not written: `written` bytes of
    /// `taken.text` went out. The lines put back are older than any pushed
    /// since, so they go in front.
    pub(crate) fn put_back(&mut self, taken: Taken, written: usize) {
        if written >= taken.text.len() {
            return;
        }
        let newer = std::mem::replace(self, Kept::with_own_cap(self.own_cap));
        self.append(taken, written);
        self.newline_first |= newer.newline_first;
        self.left_out_lines += newer.left_out_lines;
        self.left_out_bytes += newer.left_out_bytes;
        self.cut_lines += newer.cut_lines;
        self.cut_bytes += newer.cut_bytes;
        let mut at = newer.head;
        for (len, is_rest) in newer.lines {
            self.push_line(&newer.data[at..at + len], is_rest);
            at += len;
        }
    }

    /// Adds, after what is kept, what was taken (from here or from another
    /// buffer) and not written: `written` bytes of `taken.text` went out.
    /// If its note did not go out in full, the note's counts join this
    /// buffer's rather than its text, so there is still one note.
    pub(crate) fn append(&mut self, taken: Taken, written: usize) {
        if written >= taken.text.len() {
            return;
        }
        let text = &taken.text;
        let mid_line = written > 0 && text[written - 1] != b'\n';
        if written < taken.note_len {
            self.newline_first |= mid_line || taken.newline_first && written == 0;
            self.left_out_lines += taken.left_out_lines;
            self.left_out_bytes += taken.left_out_bytes;
            self.cut_lines += taken.cut_lines;
            self.cut_bytes += taken.cut_bytes;
            self.push_text_from(&text[taken.note_len..], taken.first_is_rest);
        } else {
            let first_is_rest = mid_line || written == taken.note_len && taken.first_is_rest;
            self.push_text_from(&text[written..], first_is_rest);
        }
    }

    /// What [`take`](Kept::take) would give first: the note, or else the
    /// oldest line. A write of it tells whether there is room, at the cost
    /// of one line rather than of the whole buffer; what it wrote goes
    /// through [`put_back`](Kept::put_back) as a prefix of what `take` gives.
    pub(crate) fn front(&self) -> std::borrow::Cow<'_, [u8]> {
        let note = self.note();
        if !note.is_empty() {
            return std::borrow::Cow::Owned(note.into_bytes());
        }
        let first = self.lines.front().map_or(0, |&(len, _)| len);
        std::borrow::Cow::Borrowed(&self.data[self.head..self.head + first])
    }

    /// Takes everything out: the note about left-out lines first (that is
    /// where they were), then the kept lines, oldest first. The buffer is
    /// empty afterwards.
    pub(crate) fn take(&mut self) -> Taken {
        super::patience::took();
        let note = self.note();
        let mut text = Vec::with_capacity(note.len() + self.len_bytes());
        text.extend_from_slice(note.as_bytes());
        text.extend_from_slice(&self.data[self.head..]);
        let taken = Taken {
            text,
            note_len: note.len(),
            newline_first: self.newline_first,
            first_is_rest: self.lines.front().is_some_and(|&(_, rest)| rest),
            lines: self.lines.len() as u64,
            left_out_lines: self.left_out_lines,
            left_out_bytes: self.left_out_bytes,
            cut_lines: self.cut_lines,
            cut_bytes: self.cut_bytes,
        };
        self.clear();
        taken
    }

    /// Removes the first run of whole lines, starting at or after byte
    /// `from` of the kept lines, that is a copy of `text`'s lines: as many
    /// lines, each holding the line of `text` in its place (a copy may
    /// add to each line, as a formatter does). Returns what it removed.
    /// For a copy of lines that came back (see
    /// [`crate::core::capture::take_echo`]); `text` with no line of
    /// content has no copy.
    #[cfg_attr(windows, allow(dead_code))] // the output capture's
    pub(crate) fn remove_copy(&mut self, from: usize, text: &[u8]) -> Option<Vec<u8>> {
        let wanted: Vec<&[u8]> = text
            .split_inclusive(|&b| b == b'\n')
            .map(|line| line.strip_suffix(b"\n").unwrap_or(line))
            .collect();
        if wanted.iter().all(|line| line.is_empty()) {
            return None;
        }
        let kept = &self.data[self.head..];
        let mut spans = Vec::with_capacity(self.lines.len());
        let mut at = 0;
        for &(len, _) in &self.lines {
            spans.push(at..at + len);
            at += len;
        }
        let holds = |span: &std::ops::Range<usize>, line: &[u8]| {
            let have = &kept[span.clone()];
            line.is_empty() || have.windows(line.len()).any(|w| w == line)
        };
        let first = (0..spans.len()).find(|&first| {
            spans[first].start >= from
                && first + wanted.len() <= spans.len()
                && wanted
                    .iter()
                    .enumerate()
                    .all(|(i, line)| holds(&spans[first + i], line))
        })?;
        let last = first + wanted.len();
        let (start, end) = (spans[first].start, spans[last - 1].end);
        let copy = self
            .data
            .drain(self.head + start..self.head + end)
            .collect();
        self.lines.drain(first..last);
        Some(copy)
    }

    /// Whether one of the newest `newest` lines is `line` (its newline
    /// included or not).
    #[cfg_attr(windows, allow(dead_code))] // the output capture's
    pub(crate) fn holds_line(&self, line: &[u8], newest: usize) -> bool {
        let line = line.strip_suffix(b"\n").unwrap_or(line);
        let mut end = self.data.len();
        self.lines.iter().rev().take(newest).any(|&(len, _)| {
            let have = &self.data[end - len..end];
            end -= len;
            have.strip_suffix(b"\n").unwrap_or(have) == line
        })
    }

    /// Empties the buffer, keeping its allocation for the next lines.
    fn clear(&mut self) {
        self.data.clear();
        self.head = 0;
        self.lines.clear();
        self.newline_first = false;
        self.left_out_lines = 0;
        self.left_out_bytes = 0;
        self.cut_lines = 0;
        self.cut_bytes = 0;
    }

    /// The note that stands for the lines left out, or "" if none were.
    fn note(&self) -> String {
        let mut note = String::new();
        if self.newline_first {
            note.push('\n');
        }
        if self.left_out_bytes > 0 {
            let text = left_out_note(
                self.left_out_lines,
                "line",
                self.left_out_bytes,
                Limit::Bytes(self.cap()),
            );
            let _ = writeln!(note, "[pylogsink] {text}");
        }
        if self.cut_lines > 0 {
            let _ = writeln!(
                note,
                "[pylogsink] {} line{} longer than {} cut: {} bytes left out",
                self.cut_lines,
                plural(self.cut_lines),
                Limit::Bytes(self.cap()),
                self.cut_bytes,
            );
        }
        note
    }
}

/// What [`Kept::take`] hands out.
#[derive(Clone, Debug, Default)]
pub(crate) struct Taken {
    /// The note (if any) and the lines, ready to write.
    pub text: Vec<u8>,
    /// How many bytes at the start of `text` are the note.
    pub note_len: usize,
    /// Whether the note starts with a newline that ends a cut line.
    newline_first: bool,
    /// Whether the first line is the rest of a line already started.
    first_is_rest: bool,
    /// How many kept lines `text` holds (the note not counted).
    #[cfg_attr(not(test), allow(dead_code))] // read by the tests
    pub lines: u64,
    /// How many lines the note says were left out.
    pub left_out_lines: u64,
    /// Bytes of the lines left out.
    pub left_out_bytes: u64,
    /// How many lines the note says were cut.
    pub cut_lines: u64,
    /// Bytes cut off long lines.
    pub cut_bytes: u64,
}

fn plural(n: u64) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// The largest `n <= max` such that `line[..n]` does not end inside a
/// UTF-8 character.
fn cut_point(line: &[u8], max: usize) -> usize {
    let mut n = max.min(line.len());
    while n > 0 && n < line.len() && (line[n] & 0xC0) == 0x80 {
        n -= 1;
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(i: usize, width: usize) -> Vec<u8> {
        let mut l = format!("line {i:06} ").into_bytes();
        l.resize(width - 1, b'x');
        l.push(b'\n');
        l
    }

    #[test]
    fn a_copy_is_removed_once_whole_lines_and_after_the_mark_only() {
        let mut k = Kept::with_cap(1000);
        for text in ["a\n", "b\n", "a\n", "b\n", "c\n"] {
            k.push(text.as_bytes());
        }
        // Not there, or with no line of content.
        assert_eq!(k.remove_copy(0, b"d\n"), None);
        assert_eq!(k.remove_copy(0, b"b\na\nc\n"), None);
        assert_eq!(k.remove_copy(0, b"\n\n"), None);
        // The first copy after the mark (byte 2: line "b") goes.
        assert_eq!(k.remove_copy(2, b"a\nb\n"), Some(b"a\nb\n".to_vec()));
        assert_eq!(k.lines_bytes(), b"a\nb\nc\n");
        let t = k.take();
        assert_eq!((t.text.as_slice(), t.lines), (&b"a\nb\nc\n"[..], 3));
    }

    #[test]
    fn holds_line_looks_at_the_newest_lines_only() {
        let mut k = Kept::with_cap(1000);
        for text in ["old\n", "a\n", "b\n"] {
            k.push(text.as_bytes());
        }
        assert!(k.holds_line(b"a\n", 2) && k.holds_line(b"b", 2));
        assert!(!k.holds_line(b"old\n", 2) && k.holds_line(b"old\n", 3));
        assert!(!k.holds_line(b"c\n", 3));
    }

    #[test]
    fn a_copy_may_add_to_each_line() {
        let mut k = Kept::with_cap(1000);
        for text in ["native\n", "copy: one\n", "copy: two\n", "native\n"] {
            k.push(text.as_bytes());
        }
        let copy = k.remove_copy(0, b"one\ntwo\n");
        assert_eq!(copy.as_deref(), Some(&b"copy: one\ncopy: two\n"[..]));
        assert_eq!(k.lines_bytes(), b"native\nnative\n");
        assert_eq!(k.lines.len(), 2);
    }

    #[test]
    fn keeps_everything_under_the_cap() {
        let mut k = Kept::with_cap(1000);
        for i in 0..9 {
            k.push(&line(i, 100));
        }
        let t = k.take();
        assert_eq!(t.lines, 9);
        assert_eq!(t.left_out_lines, 0);
        assert_eq!(t.text.len(), 900);
        assert!(k.is_empty());
    }

    #[test]
    fn keeps_the_newest_and_notes_the_rest_in_place() {
        let mut k = Kept::with_cap(1000);
        for i in 0..25 {
            k.push(&line(i, 100));
        }
        let t = k.take();
        let text = String::from_utf8(t.text).unwrap();
        let first = text.lines().next().unwrap();
        assert_eq!(
            first,
            "[pylogsink] 15 lines (1500 bytes) left out here: more than 0 KiB waited at once"
        );
        assert!(text.lines().nth(1).unwrap().starts_with("line 000015"));
        assert!(text.lines().last().unwrap().starts_with("line 000024"));
        assert_eq!(t.lines + t.left_out_lines, 25);
    }

    #[test]
    fn a_line_larger_than_the_cap_is_cut_and_noted() {
        let mut k = Kept::with_cap(1024);
        k.push(&line(1, 5000));
        let t = k.take();
        let text = String::from_utf8(t.text).unwrap();
        assert!(text.starts_with("[pylogsink] 1 line longer than 1 KiB cut: 3977 bytes left out\n"));
        assert_eq!(t.lines, 1);
        assert!(text.ends_with("x\n"));
    }

    #[test]
    fn cuts_never_split_a_character() {
        let s = "\u{4e2d}".repeat(10);
        assert_eq!(cut_point(s.as_bytes(), 4), 3);
        assert_eq!(cut_point(s.as_bytes(), 6), 6);
        assert_eq!(cut_point(b"abc", 10), 3);
    }

    #[test]
    fn memory_stays_bounded() {
        const CAP: usize = 64 * 1024;
        let mut k = Kept::with_cap(CAP);
        for i in 0..100_000 {
            k.push(&line(i, 100));
            assert!(k.len_bytes() <= CAP);
            assert!(k.data.len() <= 2 * CAP + 100);
            assert!(k.lines.len() <= CAP);
        }
        let t = k.take();
        assert_eq!(t.lines + t.left_out_lines, 100_000);
    }

    #[test]
    fn put_back_puts_older_text_first() {
        let mut k = Kept::with_cap(1000);
        k.push(b"old 1\n");
        k.push(b"old 2\n");
        let taken = k.take();
        k.push(b"new\n");
        k.put_back(taken, 2);
        assert_eq!(k.take().text, b"d 1\nold 2\nnew\n");
    }

    #[test]
    fn a_note_not_written_stays_one_note() {
        let mut k = Kept::with_cap(100);
        for i in 0..5 {
            k.push(&line(i, 40));
        }
        for _ in 0..3 {
            let taken = k.take();
            assert_eq!(taken.left_out_lines, 3);
            k.put_back(taken, 0);
        }
        let text = String::from_utf8(k.take().text).unwrap();
        assert_eq!(text.matches("[pylogsink]").count(), 1);
        assert!(text.starts_with("[pylogsink] 3 lines (120 bytes) left out"));
        assert_eq!(text.lines().count(), 3);
    }

    #[test]
    fn a_left_out_rest_of_a_line_ends_that_line_first() {
        let mut k = Kept::with_cap(100);
        k.push_record(b"end of a started line\n", true);
        for i in 0..3 {
            k.push(&line(i, 40));
        }
        let text = String::from_utf8(k.take().text).unwrap();
        assert!(
            text.starts_with("\n[pylogsink] 1 line (62 bytes)"),
            "{text:?}"
        );
    }

    #[test]
    fn a_rest_that_is_written_needs_no_newline() {
        let mut k = Kept::with_cap(100);
        k.push_record(b"end\n", true);
        k.push(b"next\n");
        assert_eq!(k.take().text, b"end\nnext\n");
    }

    #[test]
    fn appending_an_unwritten_take_keeps_one_note() {
        let mut from = Kept::with_cap(100);
        let mut to = Kept::with_cap(100);
        for i in 0..5 {
            from.push(&line(i, 40));
            to.push(&line(10 + i, 40));
        }
        to.append(from.take(), 0);
        let taken = to.take();
        // 10 lines in, 2 kept: 3 left out of each buffer, then the 2 that
        // `to` still kept.
        assert_eq!(taken.left_out_lines, 8);
        let text = String::from_utf8(taken.text).unwrap();
        assert_eq!(text.matches("[pylogsink]").count(), 1);
        assert!(text.ends_with(std::str::from_utf8(&line(4, 40)).unwrap()));
    }

    #[test]
    fn a_line_cut_by_a_partial_write_and_then_left_out_is_ended() {
        let mut k = Kept::with_cap(100);
        k.push(&line(0, 40));
        let taken = k.take();
        // 10 bytes of the line went out; the rest waits, then is left out.
        k.put_back(taken, 10);
        for i in 1..4 {
            k.push(&line(i, 40));
        }
        let text = String::from_utf8(k.take().text).unwrap();
        assert!(
            text.starts_with("\n[pylogsink] 1 line (70 bytes)"),
            "{text:?}"
        );
    }

    /// Reference model: keep all lines, then drop the oldest until the rest
    /// fit. The buffer must agree with it on any sequence of line widths.
    #[test]
    fn agrees_with_a_naive_model() {
        let mut seed = 12345u64;
        for _ in 0..200 {
            let mut k = Kept::with_cap(700);
            let mut all = Vec::new();
            for i in 0..50 {
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let width = 12 + (seed >> 33) as usize % 200;
                let l = line(i, width);
                k.push(&l);
                all.push(l);
            }
            let mut model: VecDeque<Vec<u8>> = all.into();
            while model.iter().map(Vec::len).sum::<usize>() > 700 {
                model.pop_front();
            }
            let t = k.take();
            let text = String::from_utf8(t.text).unwrap();
            let body: String = text
                .lines()
                .filter(|l| !l.starts_with("[pylogsink]"))
                .map(|l| format!("{l}\n"))
                .collect();
            let expected: Vec<u8> = model.iter().flatten().copied().collect();
            assert_eq!(body.as_bytes(), &expected[..]);
            assert_eq!(t.lines as usize, model.len());
            assert_eq!(t.lines + t.left_out_lines, 50);
        }
    }
}
