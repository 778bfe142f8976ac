//! The `log` crate integration: [`init`] makes `log::error!` and friends,
//! anywhere in the extension and its dependencies, go through [`emit`].
//!
//! [`emit`]: crate::emit

use crate::level::Level;
use crate::sink::emit;
use std::cell::RefCell;
use std::fmt::{self, Write as _};

struct Logger;

static LOGGER: Logger = Logger;

impl log::Log for Logger {
    fn enabled(&self, _: &log::Metadata<'_>) -> bool {
        true
    }

    fn log(&self, record: &log::Record<'_>) {
        let level = Level::from(record.level());
        let file = record.file().unwrap_or(record.target());
        let line = record.line().unwrap_or(0);
        if let Some(text) = record.args().as_str() {
            return emit(level, file, line, text.as_bytes());
        }
        thread_local!(static SCRATCH: RefCell<String> = const { RefCell::new(String::new()) });
        let formatted = SCRATCH.try_with(|s| {
            let Ok(mut s) = s.try_borrow_mut() else {
                return false;
            };
            s.clear();
            let _ = write!(s, "{}", record.args());
            emit(level, file, line, s.as_bytes());
            true
        });
        if formatted != Ok(true) {
            // Re-entered from a `Display` impl that logs, or thread teardown.
            emit(level, file, line, record.args().to_string().as_bytes());
        }
    }

    fn flush(&self) {}
}

/// Another logger was installed with the `log` crate before [`init`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OtherLoggerInstalled;

impl fmt::Display for OtherLoggerInstalled {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(
            "another logger is already installed for the `log` crate; \
             pylogsink::init() must be the one that installs it",
        )
    }
}

impl std::error::Error for OtherLoggerInstalled {}

/// Installs pylogsink as the logger of the `log` crate and lets every level
/// through (filter with `log::set_max_level` afterwards if you like).
///
/// Calling it again is harmless. If another logger is already installed,
/// it returns [`OtherLoggerInstalled`] and changes nothing.
pub fn init() -> Result<(), OtherLoggerInstalled> {
    match log::set_logger(&LOGGER) {
        Ok(()) => {
            log::set_max_level(log::LevelFilter::Trace);
            Ok(())
        }
        Err(_) if is_ours(log::logger()) => Ok(()),
        Err(_) => Err(OtherLoggerInstalled),
    }
}

fn is_ours(logger: &dyn log::Log) -> bool {
    std::ptr::addr_eq(logger as *const dyn log::Log, &LOGGER as *const Logger)
}
