//! The record format: one line of text per record.
//!
//! A record is one line:
//!
//! ```text
//! [2026-12-02T09:26:41.114725Z DEBUG ureq::stream stream.rs:395] connecting to 127.0.0.1:8080
//! ```
//!
//! the time (UTC, microseconds), the level padded to five characters, the
//! target (left out when empty), the source file's base name and line (the
//! line left out when 0, both when the file is unknown), then the message.
//! On a terminal the level name may be colored (see `color.rs`).
//!
//! Messages may carry bytes from untrusted input (a corrupt file's
//! identifier, a path). So the formatter guarantees that a record is valid
//! UTF-8, holds no control character but tab (and the color codes it adds
//! itself), and is exactly one record:
//!
//! - bytes that are not valid UTF-8 become `\xNN`, byte by byte, exactly as
//!   Python's `bytes.decode("utf-8", "backslashreplace")` writes them;
//! - ESC and the other C0 and C1 control characters (and DEL), except tab,
//!   become `\xNN` with their code point;
//! - an embedded newline, or CRLF, continues the record on an indented
//!   line, so no logged data can forge the start of another record; a lone
//!   CR stays `\x0d`, since on a terminal it would overwrite the line.

use super::escape::{escape_into, escape_slowly, is_plain, push_decimal};
use super::{color, fields, Fields, Level, Record};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The largest buffer a thread keeps between records (its line, a front
/// end's scratch): one huge record must not hold its memory for good.
pub(crate) const SCRATCH_MAX: usize = 64 * 1024;

/// Appends one whole record, newline-terminated, to `out`; with `color`,
/// the level name is colored. This is the plain way, with no cache: what
/// the per-thread formatter must write, byte for byte.
pub fn format_record(out: &mut Vec<u8>, now: SystemTime, record: &Record<'_>, color: bool) {
    let since = now.duration_since(UNIX_EPOCH).unwrap_or_default();
    out.extend_from_slice(&time_text(&second_prefix(since.as_secs()), since));
    push_middle(out, record, color);
    push_message(out, record.message, record.fields);
}

/// The time now, since the Unix epoch: what [`Formatter::format`] takes.
pub fn now_since_epoch() -> Duration {
    crate::sys::now_since_epoch()
}

/// The message, its fields around it, and the newline.
#[inline(always)]
fn push_message(out: &mut Vec<u8>, message: &[u8], fields: Option<&Fields>) {
    match fields {
        None => escape_into(out, message),
        Some(fields) => {
            fields::push_prefix(out, fields);
            escape_into(out, message);
            fields::push_suffix(out, fields);
        }
    }
    out.push(b'\n');
}

/// A message as a front end holds it.
#[derive(Clone, Copy)]
pub enum Text<'a> {
    /// Bytes, in any encoding: what [`Record::message`] holds.
    Bytes(&'a [u8]),
    /// Format arguments (`log`'s), written straight into the line, so the
    /// message is never copied on its way there.
    Args(std::fmt::Arguments<'a>),
}

/// Where one thread formats its records: the line, and what it formatted
/// last of a record's head, which changes slowly. It belongs to the
/// thread's state, so that a record takes one thread-local access.
pub struct Formatter {
    line: Vec<u8>,
    /// A message given as arguments that needed escaping, as written.
    raw: Vec<u8>,
    head: Head,
    /// What [`format_alone`](Self::format_alone) found last: whether the
    /// message it wrote is plain, and so ends with the newline it added.
    alone_plain: bool,
}

impl Default for Formatter {
    fn default() -> Self {
        Formatter::new()
    }
}

impl Formatter {
    /// An empty formatter, with nothing cached.
    pub const fn new() -> Formatter {
        Formatter {
            line: Vec::new(),
            raw: Vec::new(),
            head: Head::new(),
            alone_plain: false,
        }
    }

    /// Formats one record, whose message is `text` (the record's own
    /// `message` is not read), at `since` the Unix epoch. Returns the
    /// line, and the message as it was logged, unescaped (what an
    /// exception shows of an Error record).
    #[inline(always)]
    pub fn format<'s>(
        &'s mut self,
        since: Duration,
        record: &Record<'s>,
        text: Text<'s>,
        color: bool,
    ) -> (&'s [u8], &'s [u8]) {
        self.line.clear();
        self.line
            .extend_from_slice(self.head.text(since, record, color));
        match text {
            Text::Bytes(message) => {
                push_message(&mut self.line, message, record.fields);
                (&self.line, message)
            }
            Text::Args(args) => {
                let line = &mut self.line;
                if let Some(fields) = record.fields {
                    fields::push_prefix(line, fields);
                }
                let start = line.len();
                // A `Display` that fails leaves what it wrote so far.
                let _ = std::fmt::Write::write_fmt(&mut Append(line), args);
                let end = line.len();
                let plain = is_plain(&line[start..]);
                if !plain {
                    self.raw.clear();
                    self.raw.extend_from_slice(&line[start..]);
                    line.truncate(start);
                    escape_slowly(line, &self.raw);
                }
                if let Some(fields) = record.fields {
                    fields::push_suffix(line, fields);
                }
                line.push(b'\n');
                let message = if plain {
                    &self.line[start..end]
                } else {
                    &self.raw[..]
                };
                (&self.line, message)
            }
        }
    }

    /// The head of a record (its time and the part up to the message,
    /// `[2026-12-02T09:19:22.123456Z ERROR rt::db db.rs:42] `) at `since`,
    /// as [`format`](Self::format) begins its line: for a caller that
    /// writes the head and the message without making the line.
    #[inline(always)]
    pub fn head(&mut self, since: Duration, record: &Record<'_>, color: bool) -> &[u8] {
        self.head.text(since, record, color)
    }

    /// Writes the message `args` alone into the line, with the newline
    /// where it is plain (printable ASCII): what a caller may write after
    /// the [`head`](Self::head) ([`alone`](Self::alone) gives both) without
    /// making the whole line. True if it is plain. The arguments are
    /// formatted once: [`whole_line`](Self::whole_line), not
    /// [`format`](Self::format), then makes the line if it is needed.
    #[inline(always)]
    pub fn format_alone(&mut self, args: std::fmt::Arguments<'_>) -> bool {
        self.line.clear();
        // A `Display` that fails leaves what it wrote so far.
        let _ = std::fmt::Write::write_fmt(&mut Append(&mut self.line), args);
        self.alone_plain = is_plain(&self.line);
        if self.alone_plain {
            self.line.push(b'\n');
        }
        self.alone_plain
    }

    /// The head of `record` at `since`, and the message that
    /// [`format_alone`](Self::format_alone) wrote, with its newline.
    #[inline(always)]
    pub fn alone(&mut self, since: Duration, record: &Record<'_>, color: bool) -> (&[u8], &[u8]) {
        (self.head.text(since, record, color), &self.line)
    }

    /// The whole line, and the message unescaped, as [`format`](Self::format)
    /// returns them, from the message that
    /// [`format_alone`](Self::format_alone) wrote, for a record without
    /// fields (the only kind whose message is written alone).
    pub fn whole_line(
        &mut self,
        since: Duration,
        record: &Record<'_>,
        color: bool,
    ) -> (&[u8], &[u8]) {
        std::mem::swap(&mut self.raw, &mut self.line);
        self.raw
            .truncate(self.raw.len() - usize::from(self.alone_plain));
        self.line.clear();
        self.line
            .extend_from_slice(self.head.text(since, record, color));
        if self.alone_plain {
            self.line.extend_from_slice(&self.raw);
        } else {
            escape_slowly(&mut self.line, &self.raw);
        }
        self.line.push(b'\n');
        (&self.line, &self.raw)
    }

    /// Lets go of a line buffer that one huge record made huge.
    pub fn shrink(&mut self, max: usize) {
        if self.line.capacity() > max {
            self.line = Vec::new();
        }
        if self.raw.capacity() > max {
            self.raw = Vec::new();
        }
    }
}

/// `fmt::Write` for a byte buffer.
struct Append<'a>(&'a mut Vec<u8>);

impl std::fmt::Write for Append<'_> {
    #[inline]
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0.extend_from_slice(s.as_bytes());
        Ok(())
    }
}

/// What a thread formatted last of a record's head: the date and time up
/// to the second, and the part between the time and the message
/// (` ERROR rt::db db.rs:42] `), which is the same for every record of one
/// call site. They are kept as one piece of text, `[2026-12-02T09:19:22.`,
/// six places for the microseconds, `Z`, then the middle: a record copies
/// it and writes its own microseconds in place.
///
/// The middle is reused only if the level, the color, the line and the
/// bytes of the target and the file all match: by content, never by
/// address, since a target may live in a buffer that is rewritten.
struct Head {
    second: u64,
    /// `2026-12-02T09:19:22.` for `second`.
    second_text: [u8; 20],
    level: Level,
    color: bool,
    line: u32,
    target: Vec<u8>,
    file: Vec<u8>,
    /// The time, up to the second, then the middle.
    text: Vec<u8>,
}

/// Where the microseconds go in a record's head.
const MICROS: std::ops::Range<usize> = 21..27;

impl Head {
    const fn new() -> Head {
        Head {
            second: u64::MAX,
            second_text: [0; 20],
            level: Level::Trace,
            color: false,
            line: 0,
            target: Vec::new(),
            file: Vec::new(),
            text: Vec::new(),
        }
    }

    /// The time and the middle of `record` at `since`, from the cache
    /// where it holds: the cached text with these microseconds in place.
    #[inline(always)]
    fn text(&mut self, since: Duration, record: &Record<'_>, color: bool) -> &[u8] {
        let same = self.line == record.line
            && self.level == record.level
            && self.color == color
            && same_bytes(&self.target, record.target.as_bytes())
            && same_bytes(&self.file, record.file.as_bytes());
        let secs = since.as_secs();
        if !same || secs != self.second {
            self.remember(secs, record, color);
        }
        self.text[MICROS].copy_from_slice(&micros_text(since));
        &self.text
    }

    #[cold]
    #[inline(never)]
    fn remember(&mut self, secs: u64, record: &Record<'_>, color: bool) {
        // Records from two call sites in turn change the middle on each
        // record, the second only once a second.
        if secs != self.second {
            self.second_text = second_prefix(secs);
            self.second = secs;
        }
        self.text.clear();
        self.text
            .extend_from_slice(&time_text(&self.second_text, Duration::ZERO));
        push_middle(&mut self.text, record, color);
        self.target.clear();
        self.target.extend_from_slice(record.target.as_bytes());
        self.file.clear();
        self.file.extend_from_slice(record.file.as_bytes());
        (self.line, self.level, self.color) = (record.line, record.level, color);
    }
}

/// `a == b`, without a call to `memcmp` for the short names that targets
/// and file paths usually are: their first and last 8 or 16 bytes, which
/// overlap and so cover every byte.
#[inline]
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    fn ends<const N: usize>(s: &[u8]) -> Option<(&[u8; N], &[u8; N])> {
        Some((s.first_chunk()?, s.last_chunk()?))
    }
    if a.len() != b.len() {
        return false;
    }
    match a.len() {
        8..=16 => ends::<8>(a) == ends::<8>(b),
        17..=32 => ends::<16>(a) == ends::<16>(b),
        _ => a == b,
    }
}

/// Appends the part between the time and the message:
/// ` ERROR rt::db db.rs:42] `.
fn push_middle(out: &mut Vec<u8>, record: &Record<'_>, color: bool) {
    out.push(b' ');
    let name = record.level.name().as_bytes();
    if color {
        let word = name.trim_ascii_end();
        out.extend_from_slice(color::code(record.level));
        out.extend_from_slice(word);
        out.extend_from_slice(color::RESET);
        out.extend_from_slice(&name[word.len()..]);
    } else {
        out.extend_from_slice(name);
    }
    if !record.target.is_empty() {
        out.push(b' ');
        escape_into(out, record.target.as_bytes());
    }
    if !record.file.is_empty() {
        out.push(b' ');
        escape_into(out, base_name(record.file).as_bytes());
        if record.line > 0 {
            out.push(b':');
            push_decimal(out, u64::from(record.line), 1);
        }
    }
    out.extend_from_slice(b"] ");
}

/// The last path component: records name the file, not the build machine's
/// directory layout.
fn base_name(file: &str) -> &str {
    match file.bytes().rposition(|b| b == b'/' || b == b'\\') {
        Some(slash) => &file[slash + 1..],
        None => file,
    }
}

/// "00" to "99": two digits per division instead of one.
const PAIRS: &[u8; 200] = b"\
    0001020304050607080910111213141516171819\
    2021222324252627282930313233343536373839\
    4041424344454647484950515253545556575859\
    6061626364656667686970717273747576777879\
    8081828384858687888990919293949596979899";

/// `[2026-12-02T09:19:22.123456Z`: a record's opening bracket and time,
/// from the text of its second and the microseconds of `since`.
fn time_text(second: &[u8; 20], since: Duration) -> [u8; 28] {
    let mut text = [b'['; 28];
    text[1..21].copy_from_slice(second);
    text[MICROS].copy_from_slice(&micros_text(since));
    text[27] = b'Z';
    text
}

/// The six digits of the microseconds of `since`, two per division.
#[inline]
fn micros_text(since: Duration) -> [u8; 6] {
    let n = since.subsec_micros() as usize % 1_000_000;
    let (high, low) = (n / 10_000, n % 10_000);
    let (mid, low) = (low / 100, low % 100);
    [
        PAIRS[2 * high],
        PAIRS[2 * high + 1],
        PAIRS[2 * mid],
        PAIRS[2 * mid + 1],
        PAIRS[2 * low],
        PAIRS[2 * low + 1],
    ]
}

/// `2026-12-02T09:19:22.` for `secs` seconds since the Unix epoch.
fn second_prefix(secs: u64) -> [u8; 20] {
    let (year, month, day) = civil_from_days((secs / 86_400) as i64);
    let of_day = secs % 86_400;
    let mut text = Vec::with_capacity(20);
    push_decimal(&mut text, year.clamp(0, 9999) as u64, 4);
    text.push(b'-');
    push_decimal(&mut text, u64::from(month), 2);
    text.push(b'-');
    push_decimal(&mut text, u64::from(day), 2);
    text.push(b'T');
    push_decimal(&mut text, of_day / 3600, 2);
    text.push(b':');
    push_decimal(&mut text, of_day / 60 % 60, 2);
    text.push(b':');
    push_decimal(&mut text, of_day % 60, 2);
    text.push(b'.');
    let mut prefix = [0u8; 20];
    prefix.copy_from_slice(&text);
    prefix
}

/// Days since 1970-01-01 to a proleptic Gregorian (year, month, day);
/// Howard Hinnant's `civil_from_days` algorithm.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn record<'a>(target: &'a str, file: &'a str, line: u32, message: &'a [u8]) -> Record<'a> {
        Record {
            level: Level::Error,
            target,
            file,
            line,
            message,
            fields: None,
        }
    }

    fn formatted(record: &Record<'_>, color: bool) -> String {
        let t = UNIX_EPOCH + Duration::new(1_796_117_962, 123_456_000);
        let mut out = Vec::new();
        format_record(&mut out, t, record, color);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn record_layout() {
        assert_eq!(
            formatted(
                &record("myruntime::backend", "src/backend.rs", 42, b"init failed"),
                false
            ),
            "[2026-12-01T09:39:22.123456Z ERROR myruntime::backend backend.rs:42] init failed\n"
        );
    }

    #[test]
    fn unknown_parts_are_left_out() {
        let cases = [
            (record("", "backend.rs", 42, b"m"), "ERROR backend.rs:42] m"),
            (
                record("rt", "backend.rs", 0, b"m"),
                "ERROR rt backend.rs] m",
            ),
            (record("rt", "", 7, b"m"), "ERROR rt] m"),
            (record("", "", 0, b"m"), "ERROR] m"),
        ];
        for (record, tail) in cases {
            let text = formatted(&record, false);
            assert_eq!(&text[29..], format!("{tail}\n"), "{text}");
        }
    }

    #[test]
    fn a_target_cannot_inject_controls() {
        let text = formatted(&record("a\x1b[2Jb\nc", "f.c", 1, b"m"), false);
        assert!(text.contains(" a\\x1b[2Jb\n    c f.c:1] m"), "{text:?}");
    }

    #[test]
    fn color_wraps_the_level_name_only() {
        let mut r = record("rt", "f.rs", 1, b"\x1b[31m");
        r.level = Level::Warn;
        let text = formatted(&r, true);
        assert!(
            text.contains(" \x1b[33mWARN\x1b[0m  rt f.rs:1] \\x1b[31m\n"),
            "{text:?}"
        );
        assert_eq!(text.matches('\x1b').count(), 2);
        assert!(!formatted(&r, false).contains('\x1b'));
    }

    /// `record` through a [`Formatter`], its message given as bytes or
    /// as format arguments; checks that both write the same line and
    /// give back the message as logged.
    fn through(f: &mut Formatter, t: SystemTime, record: &Record<'_>, color: bool) -> Vec<u8> {
        let since = t.duration_since(UNIX_EPOCH).unwrap();
        let (line, message) = f.format(since, record, Text::Bytes(record.message), color);
        assert_eq!(message, record.message);
        let line = line.to_vec();
        let text = std::str::from_utf8(record.message).expect("a str message");
        // The arguments live until the end of the `match`; a `let` would
        // drop them at its end, before the slices are read.
        #[allow(clippy::match_single_binding)]
        match f.format(since, record, Text::Args(format_args!("{text}")), color) {
            (by_args, message) => {
                assert_eq!(by_args, line);
                assert_eq!(message, record.message);
            }
        }
        if record.fields.is_none() {
            assert_eq!(alone_then_whole(f, since, record, color, text), line);
        }
        line
    }

    /// `text` formatted alone: the head and the message with its newline
    /// are the line where it is plain, and the whole line made from it is
    /// what [`Formatter::format`] makes, with the message as logged.
    fn alone_then_whole(
        f: &mut Formatter,
        since: Duration,
        record: &Record<'_>,
        color: bool,
        text: &str,
    ) -> Vec<u8> {
        let plain = f.format_alone(format_args!("{text}"));
        assert_eq!(plain, is_plain(text.as_bytes()), "{text:?}");
        let (head, alone) = f.alone(since, record, color);
        let parts = [head, alone].concat();
        let (line, message) = f.whole_line(since, record, color);
        assert_eq!(message, text.as_bytes());
        if plain {
            assert_eq!(parts, line, "the parts are the line");
        }
        line.to_vec()
    }

    #[test]
    fn a_message_formatted_alone_makes_the_line_format_makes() {
        let r = record("rt", "f.rs", 1, b"");
        let since = Duration::new(1_796_117_962, 5_000);
        for text in [
            "m",
            "",
            "caf\u{e9}",
            "a\x1b[2Jb",
            "two\nlines",
            "tab\there",
            &"x".repeat(5000),
        ] {
            for color in [false, true] {
                let mut f = Formatter::new();
                let made = alone_then_whole(&mut f, since, &r, color, text);
                let by_bytes = f
                    .format(since, &r, Text::Bytes(text.as_bytes()), color)
                    .0
                    .to_vec();
                assert_eq!(made, by_bytes, "{text:?}");
            }
        }
    }

    #[test]
    fn the_cached_second_follows_the_clock() {
        let r = record("rt", "f.rs", 1, b"m");
        let t = UNIX_EPOCH + Duration::new(1_796_117_962, 5_000);
        let mut f = Formatter::new();
        let mut a = Vec::new();
        for t in [
            t,
            t + Duration::from_secs(1),
            t + Duration::from_secs(86_400),
            t,
        ] {
            a.extend(through(&mut f, t, &r, false));
        }
        assert_eq!(
            String::from_utf8(a).unwrap(),
            "[2026-12-01T09:39:22.000005Z ERROR rt f.rs:1] m\n\
             [2026-12-01T09:39:23.000005Z ERROR rt f.rs:1] m\n\
             [2026-12-02T09:39:22.000005Z ERROR rt f.rs:1] m\n\
             [2026-12-01T09:39:22.000005Z ERROR rt f.rs:1] m\n"
        );
    }

    /// The record as formatted without the per-thread cache, the time
    /// by `format!`.
    fn uncached(t: SystemTime, record: &Record<'_>, color: bool) -> Vec<u8> {
        let since = t.duration_since(UNIX_EPOCH).unwrap();
        let mut out = b"[".to_vec();
        out.extend_from_slice(&second_prefix(since.as_secs()));
        out.extend_from_slice(format!("{:06}Z", since.subsec_micros()).as_bytes());
        push_middle(&mut out, record, color);
        push_message(&mut out, record.message, record.fields);
        out
    }

    #[test]
    fn the_cached_head_matches_the_uncached_one() {
        // Targets and files rewritten in place: the same address and
        // length with other bytes must not reuse the cached middle. Their
        // lengths cross the word sizes that `same_bytes` compares by.
        let mut target = String::from("rt::a");
        let mut file = String::from("src/a.rs");
        let t = UNIX_EPOCH + Duration::new(1_796_117_962, 999_999_000);
        let mut f = Formatter::new();
        let mut seed = 7u32;
        for i in 0..4000u32 {
            seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            let pick = seed >> 16;
            if pick.is_multiple_of(5) {
                let c = char::from(b'a' + (pick % 26) as u8);
                let at = (pick as usize / 7) % target.len();
                target.replace_range(at..at + 1, c.encode_utf8(&mut [0; 4]));
            }
            if pick.is_multiple_of(7) {
                let c = char::from(b'a' + (pick % 23) as u8);
                let at = (pick as usize / 5) % file.len();
                file.replace_range(at..at + 1, c.encode_utf8(&mut [0; 4]));
            }
            if pick.is_multiple_of(97) && target.len() < 40 {
                target.push('x');
                file.push('y');
            }
            let messages: [&[u8]; 3] = [b"message", b"two\nlines", "caf\u{e9} \x1b[2J".as_bytes()];
            let mut fields = Fields::new();
            fields.push_int("n", i);
            fields.spans_mut().extend_from_slice(b"span");
            let mut r = record(&target, &file, pick % 3, messages[(pick % 3) as usize]);
            r.level = Level::ALL[(pick % 6) as usize];
            r.fields = pick.is_multiple_of(13).then_some(&fields);
            let color = pick.is_multiple_of(11);
            let when = t + Duration::from_micros(u64::from(i) * 997 + u64::from(pick));
            let mut out = Vec::new();
            format_record(&mut out, when, &r, color);
            assert_eq!(out, uncached(when, &r, color), "record {i}");
            assert_eq!(through(&mut f, when, &r, color), out, "record {i}");
        }
    }

    #[test]
    fn same_bytes_is_equality() {
        let base: Vec<u8> = (b'a'..=b'z').cycle().take(40).collect();
        for n in 0..=40 {
            let a = &base[..n];
            // Equal bytes at another address.
            let copy = a.to_vec();
            assert!(same_bytes(a, &copy));
            for at in 0..n {
                let mut b = a.to_vec();
                b[at] ^= 1;
                assert!(!same_bytes(a, &b), "{n} {at}");
            }
            assert!(!same_bytes(a, &base[..n.saturating_sub(1)]) || n == 0);
        }
    }

    #[test]
    fn civil_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
    }

    #[test]
    fn base_name_strips_directories() {
        assert_eq!(base_name("a/b/c.rs"), "c.rs");
        assert_eq!(base_name("a\\b.cpp"), "b.cpp");
        assert_eq!(base_name("c.rs"), "c.rs");
    }
}
