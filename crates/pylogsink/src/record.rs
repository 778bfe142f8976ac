//! The one record type: every front end (`log`, `tracing`, [`emit`](crate::emit))
//! turns what it was given into a [`Record`], and everything after that,
//! the routing and the format, sees only this.

use crate::fields::Fields;
use crate::level::Level;

/// One log record, as a front end hands it over.
///
/// No example: no public function takes a `Record`. It is what the `log`,
/// `tracing` and [`emit`](crate::emit) front ends build; it is public for
/// the demo runtime and the benchmark, which format records themselves
/// (with the feature `internals`).
#[derive(Clone, Copy, Debug)]
pub struct Record<'a> {
    /// How severe it is.
    pub level: Level,
    /// Where it comes from, by name: a Rust module path (`ureq::stream`)
    /// or a component of a C or C++ runtime. May be empty.
    pub target: &'a str,
    /// The source file; only its base name is written. May be empty.
    pub file: &'a str,
    /// The line in `file`; 0 if unknown.
    pub line: u32,
    /// The message: any bytes, UTF-8 or not.
    pub message: &'a [u8],
    /// Structured fields and span context (tracing's events, `log`'s
    /// key-values), written after the message; `None` for a plain record,
    /// which then costs nothing more.
    pub fields: Option<&'a Fields>,
}
