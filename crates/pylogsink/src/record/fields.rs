//! Structured fields: the key-values of a record (tracing's event fields,
//! `log`'s key-values) and its span context, and how they are written.
//!
//! On stderr a record with fields reads
//!
//! ```text
//! [2026-12-03T08:10:00.000000Z INFO  testext::work lib.rs:140] load{path="model.pte"}:init: loaded rows=42 ratio=0.5 name="a b"
//! ```
//!
//! the span context first, as tracing-subscriber's fmt writes it, then the
//! message, then each field as `key=value`. A string value is quoted when
//! it is empty or holds a space, a quote, `=`, a backslash or a control
//! character, with `"` and `\` escaped inside the quotes; every part then
//! follows the untrusted-bytes rule of [`escape`](super::escape): control
//! characters and invalid UTF-8 as `\xNN`, a newline continuing the record
//! on an indented line. So no value can forge a record or a field.
//!
//! A record without fields carries none: [`Record::fields`] is `None`, and
//! nothing here runs for it.
//!
//! [`Record::fields`]: super::Record::fields

use super::escape::{escape_into, push_decimal};
use std::fmt;
use std::io::Write as _;

/// The fields of one record, and its span context. Made by a front end,
/// reused from record to record (clear it), read by the formatter.
///
/// A string value is quoted when it is empty or holds a space, a quote, `=`,
/// a backslash or a control character; control characters and invalid
/// UTF-8 become `\xNN`, so no value can forge a record or a field.
///
/// ```
/// use pylogsink::__private_api::{FieldValue, Fields};
///
/// let mut fields = Fields::new();
/// assert!(fields.is_empty());
/// fields.push_int("rows", 42);
/// fields.push_float("ratio", 0.5);
/// fields.push_bool("ok", true);
/// fields.push_str("name", b"a b");
/// fields.push_display("path", &"model.pte");
/// fields.push_debug("shape", &[2, 3]);
/// fields.spans_mut().extend_from_slice(b"load");
/// assert_eq!(fields.spans(), b"load");
/// let got: Vec<_> = fields.iter().collect();
/// assert_eq!(got[0], (&b"rows"[..], FieldValue::Int(42)));
/// assert_eq!(got[3], (&b"name"[..], FieldValue::Str(b"a b")));
/// assert_eq!(got[5], (&b"shape"[..], FieldValue::Debug(b"[2, 3]")));
/// assert!(fields.size() > 0);
/// fields.clear();
/// assert!(fields.is_empty());
/// ```
#[derive(Clone, Debug, Default)]
pub struct Fields {
    /// The span context, fmt-style (`load{path="model.pte"}:init`), not
    /// yet escaped. Empty when the record is in no span.
    spans: Vec<u8>,
    /// Field names and byte values, back to back.
    text: Vec<u8>,
    entries: Vec<Entry>,
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    name: (u32, u32),
    value: Stored,
}

#[derive(Clone, Copy, Debug)]
enum Stored {
    Int(i128),
    Float(f64),
    Bool(bool),
    Str(u32, u32),
    Debug(u32, u32),
}

/// One field's value, as [`Fields::iter`] gives it.
///
/// Shown in the [`Fields`] example.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum FieldValue<'a> {
    /// An integer (tracing's `i64`, `u64`, `i128`; `log`'s integers).
    Int(i128),
    /// A floating-point number.
    Float(f64),
    /// A boolean.
    Bool(bool),
    /// A string, as bytes that need not be UTF-8 (tracing's `&[u8]` values
    /// are these too).
    Str(&'a [u8]),
    /// A value written by its `Debug` (or `Display`) implementation.
    Debug(&'a [u8]),
}

impl Fields {
    /// No fields, no span context.
    ///
    /// Shown in the [`Fields`] example.
    pub const fn new() -> Fields {
        Fields {
            spans: Vec::new(),
            text: Vec::new(),
            entries: Vec::new(),
        }
    }

    /// Empties it, keeping its memory.
    ///
    /// Shown in the [`Fields`] example.
    pub fn clear(&mut self) {
        self.spans.clear();
        self.text.clear();
        self.entries.clear();
    }

    /// Whether it holds neither a field nor a span context.
    ///
    /// Shown in the [`Fields`] example.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty() && self.spans.is_empty()
    }

    /// The span context, as the front end wrote it (not escaped).
    ///
    /// Shown in the [`Fields`] example.
    pub fn spans(&self) -> &[u8] {
        &self.spans
    }

    /// The span context, to write into.
    ///
    /// Shown in the [`Fields`] example.
    pub fn spans_mut(&mut self) -> &mut Vec<u8> {
        &mut self.spans
    }

    fn push_text(&mut self, bytes: &[u8]) -> (u32, u32) {
        let start = self.text.len();
        self.text.extend_from_slice(bytes);
        (start as u32, self.text.len() as u32)
    }

    fn push(&mut self, name: &str, value: Stored) {
        let name = self.push_text(name.as_bytes());
        self.entries.push(Entry { name, value });
    }

    /// Adds an integer field.
    ///
    /// Shown in the [`Fields`] example.
    pub fn push_int(&mut self, name: &str, value: impl Into<i128>) {
        self.push(name, Stored::Int(value.into()));
    }

    /// Adds a floating-point field.
    ///
    /// Shown in the [`Fields`] example.
    pub fn push_float(&mut self, name: &str, value: f64) {
        self.push(name, Stored::Float(value));
    }

    /// Adds a boolean field.
    ///
    /// Shown in the [`Fields`] example.
    pub fn push_bool(&mut self, name: &str, value: bool) {
        self.push(name, Stored::Bool(value));
    }

    /// Adds a string field; the bytes need not be UTF-8.
    ///
    /// Shown in the [`Fields`] example.
    pub fn push_str(&mut self, name: &str, value: &[u8]) {
        let name = self.push_text(name.as_bytes());
        let (start, end) = self.push_text(value);
        self.entries.push(Entry {
            name,
            value: Stored::Str(start, end),
        });
    }

    /// Adds a field written by its `Debug` implementation.
    ///
    /// Shown in the [`Fields`] example.
    pub fn push_debug(&mut self, name: &str, value: &dyn fmt::Debug) {
        self.push_formatted(name, format_args!("{value:?}"));
    }

    /// Adds a field written by its `Display` implementation (an error, a
    /// value that is neither a number nor a string).
    ///
    /// Shown in the [`Fields`] example.
    pub fn push_display(&mut self, name: &str, value: &dyn fmt::Display) {
        self.push_formatted(name, format_args!("{value}"));
    }

    fn push_formatted(&mut self, name: &str, value: fmt::Arguments<'_>) {
        let name = self.push_text(name.as_bytes());
        let start = self.text.len() as u32;
        let _ = self.text.write_fmt(value);
        let end = self.text.len() as u32;
        self.entries.push(Entry {
            name,
            value: Stored::Debug(start, end),
        });
    }

    /// The fields, in the order they were added: name and value.
    ///
    /// Shown in the [`Fields`] example.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], FieldValue<'_>)> + '_ {
        let text = |(start, end): (u32, u32)| &self.text[start as usize..end as usize];
        self.entries.iter().map(move |e| {
            let value = match e.value {
                Stored::Int(n) => FieldValue::Int(n),
                Stored::Float(x) => FieldValue::Float(x),
                Stored::Bool(b) => FieldValue::Bool(b),
                Stored::Str(s, t) => FieldValue::Str(text((s, t))),
                Stored::Debug(s, t) => FieldValue::Debug(text((s, t))),
            };
            (text(e.name), value)
        })
    }

    /// How many bytes its text takes at most, for buffer caps.
    ///
    /// Shown in the [`Fields`] example.
    pub fn size(&self) -> usize {
        self.spans.len() + self.text.len() + self.entries.len() * 48
    }
}

/// Writes what goes before the message: the span context and `": "`, if
/// the record is in a span.
pub(crate) fn push_prefix(out: &mut Vec<u8>, fields: &Fields) {
    if !fields.spans.is_empty() {
        escape_into(out, &fields.spans);
        out.extend_from_slice(b": ");
    }
}

/// Writes what goes after the message: ` key=value` for each field.
pub(crate) fn push_suffix(out: &mut Vec<u8>, fields: &Fields) {
    for (name, value) in fields.iter() {
        out.push(b' ');
        escape_into(out, name);
        out.push(b'=');
        push_value(out, value);
    }
}

/// Writes one value: numbers and booleans as Rust writes them, strings
/// quoted where needed, `Debug` text as it is unless it needs quotes and
/// is not a quoted string already.
pub(crate) fn push_value(out: &mut Vec<u8>, value: FieldValue<'_>) {
    match value {
        FieldValue::Int(n) => {
            if n < 0 {
                out.push(b'-');
            }
            match u64::try_from(n.unsigned_abs()) {
                Ok(n) => push_decimal(out, n, 1),
                Err(_) => {
                    let _ = write!(out, "{}", n.unsigned_abs());
                }
            }
        }
        FieldValue::Float(x) => {
            let _ = write!(out, "{x:?}");
        }
        FieldValue::Bool(b) => out.extend_from_slice(if b { b"true" } else { b"false" }),
        FieldValue::Str(s) => push_string(out, s),
        FieldValue::Debug(s) if is_quoted(s) || !needs_quotes(s) => escape_into(out, s),
        FieldValue::Debug(s) => push_string(out, s),
    }
}

/// A string value: as it is, or quoted with `"` and `\` escaped, then
/// escaped by the untrusted-bytes rule either way.
fn push_string(out: &mut Vec<u8>, s: &[u8]) {
    if !needs_quotes(s) {
        return escape_into(out, s);
    }
    out.push(b'"');
    let mut rest = s;
    while let Some(at) = rest.iter().position(|&b| b == b'"' || b == b'\\') {
        escape_into(out, &rest[..at]);
        out.extend_from_slice(&[b'\\', rest[at]]);
        rest = &rest[at + 1..];
    }
    escape_into(out, rest);
    out.push(b'"');
}

/// Whether a value must be quoted to stay one field: it is empty, or holds
/// a space, a quote, `=`, a backslash, or a control character.
fn needs_quotes(s: &[u8]) -> bool {
    s.is_empty()
        || s.iter()
            .any(|&b| matches!(b, b' ' | b'"' | b'=' | b'\\' | 0x00..=0x1f | 0x7f))
}

/// Whether `Debug` text is a string that `Debug` quoted (and escaped)
/// itself: `"model.pte"`.
fn is_quoted(s: &[u8]) -> bool {
    s.len() >= 2 && s[0] == b'"' && s[s.len() - 1] == b'"'
}

/// A field's value as `logging` gets it: an `int`, a `float`, a `bool`,
/// or a `str` (escaped by the untrusted-bytes rule).
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum OwnedValue {
    Int(i128),
    Float(f64),
    Bool(bool),
    Str(String),
}

/// The fields of a record that waits for `logging`: owned, escaped.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct OwnedFields {
    /// The span context, escaped; empty when the record is in no span.
    pub spans: String,
    pub values: Vec<(String, OwnedValue)>,
}

impl OwnedFields {
    pub(crate) fn new(fields: &Fields) -> OwnedFields {
        let text = |bytes: &[u8]| {
            let mut out = Vec::with_capacity(bytes.len());
            escape_into(&mut out, bytes);
            // escape_into writes valid UTF-8 only.
            String::from_utf8(out).unwrap_or_default()
        };
        let values = fields
            .iter()
            .map(|(name, value)| {
                let value = match value {
                    FieldValue::Int(n) => OwnedValue::Int(n),
                    FieldValue::Float(x) => OwnedValue::Float(x),
                    FieldValue::Bool(b) => OwnedValue::Bool(b),
                    FieldValue::Str(s) | FieldValue::Debug(s) => OwnedValue::Str(text(s)),
                };
                (text(name), value)
            })
            .collect();
        OwnedFields {
            spans: text(&fields.spans),
            values,
        }
    }

    /// Bytes counted against a buffer's cap.
    pub(crate) fn size(&self) -> usize {
        self.spans.len()
            + self
                .values
                .iter()
                .map(|(name, value)| {
                    name.len()
                        + match value {
                            OwnedValue::Str(s) => s.len(),
                            _ => 16,
                        }
                })
                .sum::<usize>()
    }
}

/// The text a record's message becomes, with its fields: span context,
/// message, fields, escaped. For the `logging` destination's `msg`.
pub(crate) fn message_text(out: &mut Vec<u8>, message: &[u8], fields: Option<&Fields>) {
    match fields {
        None => escape_into(out, message),
        Some(fields) => {
            push_prefix(out, fields);
            escape_into(out, message);
            push_suffix(out, fields);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rendered(fields: &Fields, message: &[u8]) -> String {
        let mut out = Vec::new();
        message_text(&mut out, message, Some(fields));
        String::from_utf8(out).expect("escaped text is UTF-8")
    }

    #[test]
    fn fields_follow_the_message_and_spans_come_first() {
        let mut f = Fields::new();
        f.spans_mut()
            .extend_from_slice(b"load{path=\"model.pte\"}:init");
        f.push_int("rows", 42u64);
        f.push_int("delta", -3i64);
        f.push_int("zero", 0u8);
        f.push_float("ratio", 0.5);
        f.push_float("whole", 2.0);
        f.push_bool("ok", true);
        f.push_str("name", b"plain");
        assert_eq!(
            rendered(&f, b"loaded"),
            "load{path=\"model.pte\"}:init: loaded rows=42 delta=-3 zero=0 ratio=0.5 whole=2.0 ok=true name=plain"
        );
    }

    #[test]
    fn strings_are_quoted_when_they_would_break_the_field() {
        let mut f = Fields::new();
        for (i, value) in [&b"a b"[..], b"a=b", b"say \"hi\"", b"", b"c:\\dir", b"x\ty"]
            .into_iter()
            .enumerate()
        {
            f.push_str(&format!("v{i}"), value);
        }
        assert_eq!(
            rendered(&f, b"m"),
            "m v0=\"a b\" v1=\"a=b\" v2=\"say \\\"hi\\\"\" v3=\"\" v4=\"c:\\\\dir\" v5=\"x\ty\""
        );
    }

    #[test]
    fn values_cannot_forge_a_record_or_drive_a_terminal() {
        let mut f = Fields::new();
        f.push_str(
            "v",
            b"x\n[2026-01-01T00:00:00.000000Z ERROR a.rs:1] fake \x1b[2J\xff",
        );
        f.push_str("k\nX", b"1");
        f.spans_mut().extend_from_slice(b"s{a=\x1b}");
        let text = rendered(&f, b"m");
        assert_eq!(
            text,
            "s{a=\\x1b}: m v=\"x\n    [2026-01-01T00:00:00.000000Z ERROR a.rs:1] fake \\x1b[2J\\xff\" k\n    X=1"
        );
        assert!(text.lines().skip(1).all(|l| l.starts_with("    ")));
    }

    #[test]
    fn debug_values_stay_as_debug_wrote_them_unless_ambiguous() {
        #[derive(Debug)]
        #[allow(dead_code)]
        struct Shape {
            w: u32,
        }
        let mut f = Fields::new();
        f.push_debug("path", &"model.pte");
        f.push_debug("shape", &Shape { w: 3 });
        f.push_debug("id", &7u8);
        f.push_display("err", &"no such file");
        assert_eq!(
            rendered(&f, b"m"),
            "m path=\"model.pte\" shape=\"Shape { w: 3 }\" id=7 err=\"no such file\""
        );
    }

    #[test]
    fn integers_of_every_width() {
        let mut f = Fields::new();
        f.push_int("a", i128::MIN);
        f.push_int("b", u64::MAX);
        f.push_int("c", i64::MIN);
        assert_eq!(
            rendered(&f, b"m"),
            format!("m a={} b={} c={}", i128::MIN, u64::MAX, i64::MIN)
        );
    }

    #[test]
    fn iteration_gives_typed_values_in_order() {
        let mut f = Fields::new();
        f.push_int("n", u64::MAX);
        f.push_bool("b", false);
        f.push_str("s", b"\xff");
        let got: Vec<_> = f.iter().collect();
        assert_eq!(
            got,
            [
                (&b"n"[..], FieldValue::Int(u64::MAX.into())),
                (&b"b"[..], FieldValue::Bool(false)),
                (&b"s"[..], FieldValue::Str(b"\xff")),
            ]
        );
        f.clear();
        assert!(f.is_empty());
        assert_eq!(f.iter().count(), 0);
    }

    #[test]
    fn owned_fields_keep_types_and_escape_text() {
        let mut f = Fields::new();
        f.spans_mut().extend_from_slice(b"load{p=\x1b}");
        f.push_int("rows", 42u8);
        f.push_float("r", 0.25);
        f.push_bool("ok", true);
        f.push_str("s", b"a\nb\xff");
        f.push_debug("d", &"q");
        let owned = OwnedFields::new(&f);
        assert_eq!(owned.spans, "load{p=\\x1b}");
        assert_eq!(
            owned.values,
            [
                ("rows".into(), OwnedValue::Int(42)),
                ("r".into(), OwnedValue::Float(0.25)),
                ("ok".into(), OwnedValue::Bool(true)),
                ("s".into(), OwnedValue::Str("a\n    b\\xff".into())),
                ("d".into(), OwnedValue::Str("\"q\"".into())),
            ]
        );
    }

    #[test]
    fn no_fields_is_the_message_alone() {
        let mut out = Vec::new();
        message_text(&mut out, b"a\nb", None);
        assert_eq!(out, b"a\n    b");
        assert_eq!(rendered(&Fields::new(), b"m"), "m");
    }
}
