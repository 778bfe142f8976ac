//! Fuzzes `pylogsink::__private_api::{decode_backslashreplace, escape_into}`.
//!
//! Both are compared with a naive reference written here: a byte-at-a-time
//! UTF-8 decoder taken straight from Table 3-7 ("Well-Formed UTF-8 Byte
//! Sequences") of the Unicode Standard, with the standard's "maximal subpart"
//! practice for ill-formed input, which is what CPython's
//! `bytes.decode("utf-8", "backslashreplace")` does. It does not use std's
//! UTF-8 validation. On top of that, the output of `escape_into` is checked
//! against the invariants a record relies on.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pylogsink::__private_api::{decode_backslashreplace, escape_into};

/// One step of decoding: a well-formed character, or one byte of an
/// ill-formed subsequence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Piece {
    Char(u32),
    Invalid(u8),
}

/// For a lead byte: the length of the sequence it starts, and the range its
/// second byte must be in (Table 3-7). `None` for a byte that cannot start a
/// well-formed sequence (80..C1, F5..FF).
fn lead(b: u8) -> Option<(usize, u8, u8)> {
    match b {
        0x00..=0x7F => Some((1, 0, 0)),
        0xC2..=0xDF => Some((2, 0x80, 0xBF)),
        0xE0 => Some((3, 0xA0, 0xBF)),
        0xE1..=0xEC => Some((3, 0x80, 0xBF)),
        0xED => Some((3, 0x80, 0x9F)),
        0xEE..=0xEF => Some((3, 0x80, 0xBF)),
        0xF0 => Some((4, 0x90, 0xBF)),
        0xF1..=0xF3 => Some((4, 0x80, 0xBF)),
        0xF4 => Some((4, 0x80, 0x8F)),
        _ => None,
    }
}

/// Decodes `bytes` into pieces. Where a sequence is ill-formed, the maximal
/// subpart (the lead byte and the continuation bytes that still fit Table
/// 3-7, at least one byte) becomes `Invalid` pieces, one per byte, and
/// decoding resumes right after it.
fn reference_decode(bytes: &[u8]) -> Vec<Piece> {
    let mut pieces = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        let Some((len, lo, hi)) = lead(b) else {
            pieces.push(Piece::Invalid(b));
            i += 1;
            continue;
        };
        if len == 1 {
            pieces.push(Piece::Char(u32::from(b)));
            i += 1;
            continue;
        }
        // How many bytes, from the lead byte on, fit the table.
        let mut good = 1;
        while good < len && i + good < bytes.len() {
            let c = bytes[i + good];
            let (min, max) = if good == 1 { (lo, hi) } else { (0x80, 0xBF) };
            if c < min || c > max {
                break;
            }
            good += 1;
        }
        if good == len {
            let mask: u8 = match len {
                2 => 0x1F,
                3 => 0x0F,
                _ => 0x07,
            };
            let mut cp = u32::from(b & mask);
            for &c in &bytes[i + 1..i + len] {
                cp = (cp << 6) | u32::from(c & 0x3F);
            }
            pieces.push(Piece::Char(cp));
        } else {
            for &c in &bytes[i..i + good] {
                pieces.push(Piece::Invalid(c));
            }
        }
        i += good;
    }
    pieces
}

fn hex_escape(b: u8) -> String {
    format!("\\x{b:02x}")
}

/// CPython's `bytes.decode("utf-8", "backslashreplace")`, from the pieces.
fn reference_backslashreplace(pieces: &[Piece]) -> String {
    let mut out = String::new();
    for &p in pieces {
        match p {
            Piece::Char(cp) => {
                out.push(char::from_u32(cp).expect("Table 3-7 yields scalar values"))
            }
            Piece::Invalid(b) => out.push_str(&hex_escape(b)),
        }
    }
    out
}

/// C0 controls, DEL and C1 controls.
fn is_control(cp: u32) -> bool {
    cp <= 0x1F || (0x7F..=0x9F).contains(&cp)
}

/// What `escape_into` makes of one decoded character, given the one after
/// it (a CR right before a newline is part of that newline).
fn escape_char(c: char, next: Option<char>, out: &mut String) {
    match c {
        '\r' if next == Some('\n') => {}
        '\n' => out.push_str("\n    "),
        '\t' => out.push('\t'),
        c if is_control(c as u32) => out.push_str(&hex_escape(c as u32 as u8)),
        c => out.push(c),
    }
}

/// What `escape_into` should write, from the pieces.
fn reference_escape(pieces: &[Piece]) -> String {
    let mut out = String::new();
    for (i, &p) in pieces.iter().enumerate() {
        let next = match pieces.get(i + 1) {
            Some(&Piece::Char(cp)) => char::from_u32(cp),
            _ => None,
        };
        match p {
            Piece::Char(cp) => escape_char(char::from_u32(cp).unwrap(), next, &mut out),
            Piece::Invalid(b) => out.push_str(&hex_escape(b)),
        }
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let pieces = reference_decode(data);

    // The oracle itself: it accepts exactly what std accepts. (A check of
    // the reference, not part of it.)
    let all_valid = pieces.iter().all(|p| matches!(p, Piece::Char(_)));
    assert_eq!(
        all_valid,
        std::str::from_utf8(data).is_ok(),
        "reference decoder disagrees with std on {data:x?}"
    );

    // decode_backslashreplace is CPython's decode.
    let decoded = decode_backslashreplace(data);
    assert_eq!(
        decoded,
        reference_backslashreplace(&pieces),
        "decode_backslashreplace({data:x?})"
    );

    // escape_into appends, and leaves what is already in `out` alone.
    const PREFIX: &[u8] = b"[prefix] ";
    let mut out = PREFIX.to_vec();
    escape_into(&mut out, data);
    assert!(
        out.starts_with(PREFIX),
        "escape_into changed the bytes before it"
    );
    let out = &out[PREFIX.len()..];

    // Invariants a record relies on, checked on the raw bytes.
    let text = std::str::from_utf8(out)
        .unwrap_or_else(|e| panic!("escape_into({data:x?}) is not UTF-8: {e}"));
    for (i, &b) in out.iter().enumerate() {
        assert!(
            b >= 0x20 || b == b'\t' || b == b'\n',
            "escape_into({data:x?}) has byte {b:#04x} at {i}: {text:?}"
        );
        if b == b'\n' {
            assert_eq!(
                out.get(i + 1..i + 5),
                Some(&b"    "[..]),
                "escape_into({data:x?}): newline at {i} not followed by four spaces: {text:?}"
            );
        }
    }
    for c in text.chars() {
        assert!(
            !(0x7F..=0x9F).contains(&(c as u32)),
            "escape_into({data:x?}) has {c:?}: {text:?}"
        );
    }

    // Same decoding as decode_backslashreplace, then only the controls and
    // newlines escaped: undoing that step by step on the decoded text must
    // give exactly escape_into's output.
    let mut from_decoded = String::new();
    let mut chars = decoded.chars().peekable();
    while let Some(c) = chars.next() {
        escape_char(c, chars.peek().copied(), &mut from_decoded);
    }
    assert_eq!(
        text, from_decoded,
        "escape_into({data:x?}) vs decode_backslashreplace: {decoded:?}"
    );

    // And against the reference directly.
    assert_eq!(text, reference_escape(&pieces), "escape_into({data:x?})");

    // Where nothing is escaped (well-formed, no control but tab and
    // newline), removing the continuation indent gives the decoded text
    // back, which is the input itself.
    if all_valid
        && !decoded
            .chars()
            .any(|c| c != '\t' && c != '\n' && is_control(c as u32))
    {
        assert_eq!(
            text.replace("\n    ", "\n"),
            decoded,
            "escape_into({data:x?}) is not just the indent"
        );
        assert_eq!(decoded.as_bytes(), data);
    }
});
