//! Front ends: the ways native code hands a record to pylogsink.
//!
//! [`emit`](emit::emit) takes a level, a target, a location and message
//! bytes (what the C ABI calls); [`log`] is the `log` crate's logger;
//! [`tracing`] is a `tracing` layer (feature `tracing`). Each turns what it
//! was given into a [`Record`](crate::record::Record), asks the filter, and
//! hands it to the core: they differ in what they take, never in where a
//! line goes.

pub(crate) mod emit;
pub(crate) mod log;
#[cfg(feature = "tracing")]
pub mod tracing;
