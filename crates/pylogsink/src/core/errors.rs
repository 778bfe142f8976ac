//! Runtime errors in exceptions.
//!
//! When a native call fails, the Python user sees an exception, and the
//! Error-level lines logged during the call usually say why far better
//! than the exception's own short text. So a call collects them (at most
//! [`ERRORS_CAP`] bytes), and [`error`](crate::error) builds an exception of any type
//! whose message is the extension's text followed by those lines.
//!
//! Native text is bytes, often cut short by a fixed-size buffer and
//! sometimes not UTF-8 at all (a corrupt file's identifier, a path cut
//! inside a character). The whole message is decoded exactly as CPython's
//! `bytes.decode("utf-8", "backslashreplace")` decodes it, so building the
//! exception never fails with `UnicodeDecodeError`.

use crate::record::escape::decode_backslashreplace;

/// Error-level text one call collects for its exception, at most: the
/// first 1 KiB, since the first errors usually name the cause.
///
/// ```
/// assert_eq!(pylogsink::ERRORS_CAP, 1024);
/// ```
pub const ERRORS_CAP: usize = 1024;

/// The Error-level messages of one call.
#[derive(Debug, Default)]
pub(crate) struct Errors {
    /// Messages, separated by newlines, at most [`ERRORS_CAP`] bytes.
    text: Vec<u8>,
    /// Bytes of messages that did not fit.
    left_out: usize,
}

impl Errors {
    /// Forgets everything: a new outermost call starts.
    pub(crate) fn clear(&mut self) {
        self.text.clear();
        self.left_out = 0;
    }

    /// Adds one message, keeping the first [`ERRORS_CAP`] bytes in all.
    pub(crate) fn collect(&mut self, message: &[u8]) {
        let separator = usize::from(!self.text.is_empty());
        let room = ERRORS_CAP.saturating_sub(self.text.len() + separator);
        if room == 0 {
            self.left_out += message.len() + separator;
            return;
        }
        if separator == 1 {
            self.text.push(b'\n');
        }
        let take = message.len().min(room);
        self.text.extend_from_slice(&message[..take]);
        self.left_out += message.len() - take;
    }

    /// Whether every later message would be left out whole.
    pub(crate) fn is_full(&self) -> bool {
        self.text.len() + 1 >= ERRORS_CAP
    }

    /// Counts `bytes` more left out (messages a full buffer never saw).
    pub(crate) fn add_left_out(&mut self, bytes: u64) {
        self.left_out += bytes as usize;
    }

    /// `text`, then the collected messages, as one exception message.
    pub(crate) fn message(&self, text: &[u8]) -> String {
        let mut out = text.to_vec();
        if !self.text.is_empty() {
            out.extend_from_slice(b"\nErrors logged during the call:");
            for line in self.text.split(|&b| b == b'\n') {
                out.extend_from_slice(b"\n  ");
                out.extend_from_slice(line);
            }
            if self.left_out > 0 {
                out.extend_from_slice(
                    format!(" [{} more bytes left out]", self.left_out).as_bytes(),
                );
            }
        }
        decode_backslashreplace(&out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_lists_the_errors_under_the_text() {
        let mut e = Errors::default();
        assert_eq!(e.message(b"failed"), "failed");
        e.collect(b"first cause");
        e.collect(b"second");
        assert_eq!(
            e.message(b"failed"),
            "failed\nErrors logged during the call:\n  first cause\n  second"
        );
    }

    #[test]
    fn keeps_the_first_kilobyte_and_says_how_much_is_left_out() {
        let mut e = Errors::default();
        e.collect(b"first");
        e.collect(&[b'x'; 2000]);
        e.collect(b"late");
        assert_eq!(e.text.len(), ERRORS_CAP);
        assert!(e.text.starts_with(b"first\nxx"));
        assert_eq!(e.left_out, 2000 - (ERRORS_CAP - 6) + 5);
        assert!(e
            .message(b"t")
            .ends_with(&format!(" [{} more bytes left out]", e.left_out)));
    }

    /// The lock-free count of a full buffer must match what `collect`
    /// would have done: `is_full` exactly when a message is left out whole.
    #[test]
    fn full_means_each_later_message_is_left_out_whole() {
        for first in [1, 500, 1021, 1022, 1023, 1024, 3000] {
            for second in [0, 1, 2, 10] {
                let mut e = Errors::default();
                e.collect(&vec![b'a'; first]);
                e.collect(&vec![b'b'; second]);
                let (text, left_out, full) = (e.text.clone(), e.left_out, e.is_full());
                e.collect(b"later");
                let whole = e.text == text && e.left_out == left_out + 6;
                assert_eq!(full, whole, "{first} {second}");
            }
        }
    }

    #[test]
    fn the_whole_message_is_escaped() {
        let mut e = Errors::default();
        e.collect(b"Program identifier '\xff\xff\xff\xff' != expected 'ET12'");
        // The text itself is cut inside a three-byte character.
        let m = e.message(b"Failed to open /data/\xe4\xb8\xad\xe4\xb8");
        assert!(m.starts_with("Failed to open /data/\u{4e2d}\\xe4\\xb8\n"));
        assert!(m.ends_with("'\\xff\\xff\\xff\\xff' != expected 'ET12'"));
    }

    #[test]
    fn clear_forgets() {
        let mut e = Errors::default();
        e.collect(&[b'y'; 3000]);
        e.clear();
        assert_eq!(e.message(b"t"), "t");
    }
}
