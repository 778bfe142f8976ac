//! Records, and how they become text: the bottom layer.
//!
//! Every front end (`log`, `tracing`, [`emit`](crate::emit), the C ABI)
//! turns what it was given into a [`Record`]; everything after that, the
//! routing and the destinations, sees only this. Nothing here knows where a
//! line goes, which settings are in force or that Python exists: this layer
//! imports nothing else of the crate.

pub(crate) mod color;
pub(crate) mod escape;
pub(crate) mod fields;
pub(crate) mod format;
pub(crate) mod level;
pub(crate) mod lock;

pub(crate) use fields::Fields;
pub(crate) use level::Level;
#[cfg(test)]
pub(crate) use lock::serial;
pub(crate) use lock::{hold_for_fork, lock, lock_at_crash, HeldForFork};

/// One log record, as a front end hands it over.
///
/// No example: no public function takes a `Record`. It is what the `log`,
/// `tracing` and [`emit`](crate::emit) front ends build; the demo runtime
/// and the benchmark, which format records themselves, reach it through
/// the hidden `__private_api` module.
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
