//! The record format, and the escaping that makes logged bytes safe.
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

use crate::color;
use crate::fields;
use crate::level::Level;
use crate::record::Record;
use std::cell::RefCell;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// What an embedded newline becomes: the record goes on, indented.
pub const CONTINUATION: &[u8] = b"\n    ";

/// Appends one whole record, newline-terminated, to `out`; with `color`,
/// the level name is colored.
pub fn format_record(out: &mut Vec<u8>, now: SystemTime, record: &Record<'_>, color: bool) {
    let since = now.duration_since(UNIX_EPOCH).unwrap_or_default();
    format_record_at(out, since, record, color);
}

/// The time now, since the Unix epoch: what [`format_record_at`] takes.
/// One `clock_gettime`, without the checked arithmetic of
/// `SystemTime::duration_since`, which costs more than the clock itself.
pub(crate) fn now_since_epoch() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the whole call;
    // CLOCK_REALTIME always exists, so the call cannot fail.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    Duration::new(
        ts.tv_sec.max(0) as u64,
        ts.tv_nsec.clamp(0, 999_999_999) as u32,
    )
}

/// [`format_record`] at a time given as a duration since the Unix epoch.
pub(crate) fn format_record_at(
    out: &mut Vec<u8>,
    since: Duration,
    record: &Record<'_>,
    color: bool,
) {
    out.reserve(record.message.len() + record.target.len() + 64);
    let cached = CACHE.try_with(|cache| match cache.try_borrow_mut() {
        Ok(mut cache) => {
            cache.push_head(out, since, record, color);
            true
        }
        // A signal handler that logs while this thread formats a record.
        Err(_) => false,
    });
    if cached != Ok(true) {
        out.extend_from_slice(&time_text(&second_prefix(since.as_secs()), since));
        push_middle(out, record, color);
    }
    match record.fields {
        None => escape_into(out, record.message),
        Some(fields) => {
            fields::push_prefix(out, fields);
            escape_into(out, record.message);
            fields::push_suffix(out, fields);
        }
    }
    out.push(b'\n');
}

thread_local! {
    static CACHE: RefCell<Head> = const { RefCell::new(Head::new()) };
}

/// What a thread formatted last of a record's head, which changes slowly:
/// the date and time up to the second, and the part between the time and
/// the message (` ERROR rt::db db.rs:42] `), which is the same for every
/// record of one call site. The middle is reused only if the level, the
/// color, the line and the bytes of the target and the file all match.
struct Head {
    second: u64,
    second_text: [u8; 20],
    level: Level,
    color: bool,
    line: u32,
    target: Vec<u8>,
    file: Vec<u8>,
    middle: Vec<u8>,
}

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
            middle: Vec::new(),
        }
    }

    /// Appends the time and the middle, from the cache where it holds.
    fn push_head(&mut self, out: &mut Vec<u8>, since: Duration, record: &Record<'_>, color: bool) {
        let secs = since.as_secs();
        if secs != self.second {
            self.second_text = second_prefix(secs);
            self.second = secs;
        }
        out.extend_from_slice(&time_text(&self.second_text, since));
        let same = !self.middle.is_empty()
            && self.line == record.line
            && self.level == record.level
            && self.color == color
            && self.target == record.target.as_bytes()
            && self.file == record.file.as_bytes();
        if !same {
            self.middle.clear();
            push_middle(&mut self.middle, record, color);
            self.target.clear();
            self.target.extend_from_slice(record.target.as_bytes());
            self.file.clear();
            self.file.extend_from_slice(record.file.as_bytes());
            (self.line, self.level, self.color) = (record.line, record.level, color);
        }
        out.extend_from_slice(&self.middle);
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

/// Appends `bytes` to `out` with invalid UTF-8 and control characters
/// escaped as `\xNN`, and newlines turned into [`CONTINUATION`].
#[inline]
pub fn escape_into(out: &mut Vec<u8>, bytes: &[u8]) {
    // Fast path: printable ASCII needs no work at all.
    if is_plain(bytes) {
        out.extend_from_slice(bytes);
    } else {
        escape_slowly(out, bytes);
    }
}

/// [`escape_into`] for text that is not all printable ASCII.
#[inline(never)]
fn escape_slowly(out: &mut Vec<u8>, bytes: &[u8]) {
    for chunk in bytes.utf8_chunks() {
        let mut chars = chunk.valid().chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '\r' if chars.peek() == Some(&'\n') => {}
                '\n' => out.extend_from_slice(CONTINUATION),
                '\t' => out.push(b'\t'),
                c if is_control(c) => push_hex_escape(out, c as u32 as u8),
                c => {
                    let mut buf = [0u8; 4];
                    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                }
            }
        }
        for &b in chunk.invalid() {
            push_hex_escape(out, b);
        }
    }
}

/// Whether every byte is printable ASCII (tabs take the slow path, which
/// keeps them). No early exit, so the compiler vectorizes the loop.
fn is_plain(bytes: &[u8]) -> bool {
    !bytes
        .iter()
        .fold(false, |bad, &b| bad | (b.wrapping_sub(0x20) > 0x5e))
}

/// Decodes `bytes` as UTF-8 the way CPython's
/// `bytes.decode("utf-8", "backslashreplace")` does: every byte that is not
/// part of a valid sequence becomes `\xNN`. Nothing else changes.
pub fn decode_backslashreplace(bytes: &[u8]) -> String {
    if let Ok(text) = std::str::from_utf8(bytes) {
        return text.to_owned();
    }
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        out.push_str(chunk.valid());
        for &b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out
}

/// C0 controls, DEL and C1 controls: the characters a terminal may act on.
fn is_control(c: char) -> bool {
    matches!(c as u32, 0x00..=0x1f | 0x7f..=0x9f)
}

fn push_hex_escape(out: &mut Vec<u8>, b: u8) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.extend_from_slice(&[
        b'\\',
        b'x',
        HEX[usize::from(b >> 4)],
        HEX[usize::from(b & 15)],
    ]);
}

/// Appends `n` in decimal, zero-padded to at least `width` digits.
pub(crate) fn push_decimal(out: &mut Vec<u8>, mut n: u64, width: usize) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    while n > 0 || digits.len() - i < width {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
    }
    out.extend_from_slice(&digits[i..]);
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
    let n = since.subsec_micros() as usize % 1_000_000;
    let (high, low) = (n / 10_000, n % 10_000);
    let (mid, low) = (low / 100, low % 100);
    let mut text = [b'['; 28];
    text[1..21].copy_from_slice(second);
    text[21..27].copy_from_slice(&[
        PAIRS[2 * high],
        PAIRS[2 * high + 1],
        PAIRS[2 * mid],
        PAIRS[2 * mid + 1],
        PAIRS[2 * low],
        PAIRS[2 * low + 1],
    ]);
    text[27] = b'Z';
    text
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
    use crate::level::Level;
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

    fn escaped(bytes: &[u8]) -> String {
        let mut out = Vec::new();
        escape_into(&mut out, bytes);
        String::from_utf8(out).expect("escaped text is UTF-8")
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

    #[test]
    fn the_cached_second_follows_the_clock() {
        let r = record("rt", "f.rs", 1, b"m");
        let t = UNIX_EPOCH + Duration::new(1_796_117_962, 5_000);
        let mut a = Vec::new();
        for t in [
            t,
            t + Duration::from_secs(1),
            t + Duration::from_secs(86_400),
            t,
        ] {
            format_record(&mut a, t, &r, false);
        }
        assert_eq!(
            String::from_utf8(a).unwrap(),
            "[2026-12-01T09:39:22.000005Z ERROR rt f.rs:1] m\n\
             [2026-12-01T09:39:23.000005Z ERROR rt f.rs:1] m\n\
             [2026-12-02T09:39:22.000005Z ERROR rt f.rs:1] m\n\
             [2026-12-01T09:39:22.000005Z ERROR rt f.rs:1] m\n"
        );
    }

    /// The record as formatted without the per-thread cache.
    fn uncached(t: SystemTime, record: &Record<'_>, color: bool) -> Vec<u8> {
        let since = t.duration_since(UNIX_EPOCH).unwrap();
        let mut out = b"[".to_vec();
        out.extend_from_slice(&second_prefix(since.as_secs()));
        out.extend_from_slice(format!("{:06}Z", since.subsec_micros()).as_bytes());
        push_middle(&mut out, record, color);
        escape_into(&mut out, record.message);
        out.push(b'\n');
        out
    }

    #[test]
    fn the_cached_head_matches_the_uncached_one() {
        // Targets and files rewritten in place: the same address and
        // length with other bytes must not reuse the cached middle.
        let mut target = String::from("rt::a");
        let mut file = String::from("src/a.rs");
        let t = UNIX_EPOCH + Duration::new(1_796_117_962, 999_999_000);
        let mut seed = 7u32;
        for i in 0..2000u32 {
            seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            let pick = seed >> 16;
            if pick.is_multiple_of(5) {
                let c = char::from(b'a' + (pick % 26) as u8);
                target.replace_range(4..5, c.encode_utf8(&mut [0; 4]));
            }
            if pick.is_multiple_of(7) {
                let c = char::from(b'a' + (pick % 23) as u8);
                file.replace_range(4..5, c.encode_utf8(&mut [0; 4]));
            }
            let mut r = record(&target, &file, pick % 3, b"message");
            r.level = Level::ALL[(pick % 6) as usize];
            let color = pick.is_multiple_of(11);
            let when = t + Duration::from_micros(u64::from(i) * 997 + u64::from(pick));
            let mut out = Vec::new();
            format_record(&mut out, when, &r, color);
            assert_eq!(out, uncached(when, &r, color), "record {i}");
        }
    }

    #[test]
    fn plain_means_printable_ascii() {
        let plain: Vec<u8> = (0x20..0x7f).cycle().take(1000).collect();
        assert!(is_plain(&plain));
        for bad in [0x00u8, b'\t', 0x0a, 0x1b, 0x1f, 0x7f, 0x80, 0xff] {
            let mut text = plain.clone();
            text[777] = bad;
            assert!(!is_plain(&text), "{bad:#x}");
        }
    }

    #[test]
    fn civil_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
    }

    #[test]
    fn plain_text_is_untouched() {
        assert_eq!(escaped(b"load ok\tx=1"), "load ok\tx=1");
        assert_eq!(
            escaped("caf\u{e9} \u{4e2d}".as_bytes()),
            "caf\u{e9} \u{4e2d}"
        );
    }

    #[test]
    fn terminal_controls_are_escaped() {
        assert_eq!(escaped(b"\x1b[31mred"), "\\x1b[31mred");
        assert_eq!(escaped(b"a\rb\x00c\x7f"), "a\\x0db\\x00c\\x7f");
        // U+009B, the one-character CSI, encoded as UTF-8.
        assert_eq!(escaped(b"\xc2\x9b2J"), "\\x9b2J");
    }

    #[test]
    fn crlf_continues_the_record_and_a_lone_cr_is_escaped() {
        assert_eq!(escaped(b"a\r\nb"), "a\n    b");
        assert_eq!(escaped(b"a\rb\r"), "a\\x0db\\x0d");
        assert_eq!(escaped(b"a\r\r\nb"), "a\\x0d\n    b");
        // A CR before invalid bytes is not part of a CRLF.
        assert_eq!(escaped(b"a\r\xff\n"), "a\\x0d\\xff\n    ");
    }

    #[test]
    fn newlines_cannot_forge_a_record() {
        let forged = escaped(b"x\n[2026-01-01T00:00:00.000000Z ERROR a.rs:1] fake");
        assert!(forged.starts_with("x\n    ["));
        assert_eq!(forged.lines().filter(|l| l.starts_with('[')).count(), 0);
    }

    #[test]
    fn invalid_utf8_is_escaped_byte_by_byte() {
        assert_eq!(escaped(b"id '\xff\xfe\x00A'"), "id '\\xff\\xfe\\x00A'");
        // A CJK character cut after two of its three bytes.
        assert_eq!(escaped(b"\xe4\xb8\xad\xe4\xb8"), "\u{4e2d}\\xe4\\xb8");
        assert_eq!(
            decode_backslashreplace(b"\xe4\xb8\xad\xe4\xb8"),
            "\u{4e2d}\\xe4\\xb8"
        );
    }

    #[test]
    fn decode_keeps_controls() {
        assert_eq!(
            decode_backslashreplace(b"a\nb\x1b\xed\xa0\x80"),
            "a\nb\x1b\\xed\\xa0\\x80"
        );
    }

    #[test]
    fn base_name_strips_directories() {
        assert_eq!(base_name("a/b/c.rs"), "c.rs");
        assert_eq!(base_name("a\\b.cpp"), "b.cpp");
        assert_eq!(base_name("c.rs"), "c.rs");
    }
}
