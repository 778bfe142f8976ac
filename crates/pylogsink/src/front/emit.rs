//! [`emit`]: the entry for code that does not use `log` or `tracing`.

use crate::control::enabled;
use crate::core::emit::emit_record_inline;
use crate::record::{Level, Record};

/// Logs one record from `target` (a module path such as `ureq::stream`, or
/// a component's name; may be empty), if the filter lets it through.
/// `message` need not be UTF-8.
///
/// This is the entry that every front end goes through. It never calls
/// into Python and never blocks longer than the stall wait, so it is safe
/// under any lock, with or without the GIL. A record the filter drops
/// costs a level compare.
///
/// ```
/// use pylogsink::Level;
/// pylogsink::emit(Level::Warn, "myruntime::loader", file!(), line!(), b"cache miss");
/// ```
pub fn emit(level: Level, target: &str, file: &str, line: u32, message: &[u8]) {
    if enabled(level, target) {
        emit_record_inline(&Record {
            level,
            target,
            file,
            line,
            message,
            fields: None,
        });
    }
}
