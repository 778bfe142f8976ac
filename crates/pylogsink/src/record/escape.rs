//! Escaping: what makes logged bytes safe to show.
//!
//! Messages, targets and field values may carry bytes from untrusted input
//! (a corrupt file's identifier, a path). Written as they are, they could
//! drive a terminal (ESC sequences) or forge a record (a newline followed
//! by something that looks like a record's head). So every part of a
//! record goes through [`escape_into`]:
//!
//! - bytes that are not valid UTF-8 become `\xNN`, byte by byte, exactly as
//!   Python's `bytes.decode("utf-8", "backslashreplace")` writes them;
//! - ESC and the other C0 and C1 control characters (and DEL), except tab,
//!   become `\xNN` with their code point;
//! - an embedded newline, or CRLF, continues the record on an indented
//!   line, so no logged data can forge the start of another record; a lone
//!   CR stays `\x0d`, since on a terminal it would overwrite the line.

/// What an embedded newline becomes: the record goes on, indented.
pub(crate) const CONTINUATION: &[u8] = b"\n    ";

/// Appends `bytes` to `out` with invalid UTF-8 and control characters
/// escaped as `\xNN`, and newlines turned into a newline and four spaces.
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
pub(crate) fn escape_slowly(out: &mut Vec<u8>, bytes: &[u8]) {
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
/// keeps them): whether every byte less 0x20 is at most 0x5e. Sixteen
/// bytes at a time, keeping the highest of each of the sixteen places, so
/// that the compiler makes each block a subtraction and a maximum of
/// vectors; the bytes after the last whole block are looked at as the last
/// sixteen, which overlap the block before, rather than one by one.
#[inline]
pub(crate) fn is_plain(bytes: &[u8]) -> bool {
    const HIGHEST_PLAIN: u8 = 0x7e - 0x20;
    let Some(last) = bytes.last_chunk::<16>() else {
        return bytes.iter().all(|&b| b.wrapping_sub(0x20) <= HIGHEST_PLAIN);
    };
    let (blocks, _) = bytes.as_chunks::<16>();
    let mut highest = [0u8; 16];
    let mut look = |block: &[u8; 16]| {
        for (h, &b) in highest.iter_mut().zip(block) {
            *h = (*h).max(b.wrapping_sub(0x20));
        }
    };
    blocks.iter().for_each(&mut look);
    look(last);
    highest.map(|h| h.saturating_sub(HIGHEST_PLAIN)) == [0; 16]
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

/// `name` with every control character (newline and tab included) as
/// `\xNN`: for a name that must stay on one line, such as the Python
/// logger a record goes to, which formatters write as `%(name)s`.
pub(crate) fn escape_name(name: &str) -> std::borrow::Cow<'_, str> {
    if !name.chars().any(is_control) {
        return std::borrow::Cow::Borrowed(name);
    }
    let mut out = Vec::with_capacity(name.len() + 8);
    for c in name.chars() {
        if is_control(c) {
            push_hex_escape(&mut out, c as u32 as u8);
        } else {
            out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
        }
    }
    std::borrow::Cow::Owned(String::from_utf8(out).expect("valid UTF-8 in, valid UTF-8 out"))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn escaped(bytes: &[u8]) -> String {
        let mut out = Vec::new();
        escape_into(&mut out, bytes);
        String::from_utf8(out).expect("escaped text is UTF-8")
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

    /// [`is_plain`] against the plain rule, byte by byte, at every length
    /// up to three blocks and past, with each byte on either side of the
    /// range at every place: the whole blocks, the overlapping last block
    /// and the short texts take different paths.
    #[test]
    fn plain_agrees_with_the_rule_at_every_length_and_place() {
        let naive = |bytes: &[u8]| bytes.iter().all(|&b| (0x20..=0x7e).contains(&b));
        for len in 0..=50 {
            let plain: Vec<u8> = (0x20..0x7f).cycle().skip(len).take(len).collect();
            assert!(is_plain(&plain), "len {len}");
            for at in 0..len {
                for b in [0x00u8, 0x1f, 0x20, 0x7e, 0x7f, 0x80, 0xff] {
                    let mut text = plain.clone();
                    text[at] = b;
                    assert_eq!(is_plain(&text), naive(&text), "len {len}, {b:#x} at {at}");
                }
            }
        }
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
    fn names_stay_on_one_line() {
        assert_eq!(escape_name("rt::db"), "rt::db");
        assert_eq!(escape_name("rt\nCRITICAL forged"), "rt\\x0aCRITICAL forged");
        assert_eq!(escape_name("\x1b[2J\t\u{85}é"), "\\x1b[2J\\x09\\x85é");
    }

    #[test]
    fn decode_keeps_controls() {
        assert_eq!(
            decode_backslashreplace(b"a\nb\x1b\xed\xa0\x80"),
            "a\nb\x1b\\xed\\xa0\\x80"
        );
    }
}
