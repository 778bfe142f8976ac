//! Color on a terminal: the level name only, never anything from the
//! message.
//!
//! A person reading a terminal finds errors faster in red. Nothing else
//! should get escape codes: a pipe, a file or a replaced `sys.stderr`
//! (pytest, Jupyter) would store them as text. The users of an extension
//! decide, through the variables every tool knows: `NO_COLOR` (no-color.org)
//! turns color off, `CLICOLOR_FORCE` turns it on wherever fd 2 leads.
//! The extension's author sets the default with
//! [`Builder::color`](crate::Builder::color).

use super::Level;
use std::ffi::OsStr;
use std::sync::atomic::{AtomicU8, Ordering};

/// Whether records on fd 2 color their level name.
///
/// ```
/// // Never color, even on a terminal (NO_COLOR and CLICOLOR_FORCE still
/// // have the last word).
/// let builder = pylogsink::Builder::new().color(pylogsink::ColorChoice::Never);
/// # let _ = builder;
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ColorChoice {
    /// Where fd 2 is a terminal (and `TERM` is not `dumb`).
    #[default]
    Auto,
    /// On fd 2 whatever it is, but never on a replaced `sys.stderr`.
    Always,
    /// Never.
    Never,
}

/// The choice in force: the environment's word over the author's.
///
/// `NO_COLOR` set and not empty means never; else `CLICOLOR_FORCE` set,
/// not empty and not `0` means always; else the author's choice, where
/// `Auto` with `TERM=dumb` means never.
pub(crate) fn resolve(
    author: ColorChoice,
    no_color: Option<&OsStr>,
    clicolor_force: Option<&OsStr>,
    term: Option<&OsStr>,
) -> ColorChoice {
    let set = |v: Option<&OsStr>| v.is_some_and(|v| !v.is_empty());
    if set(no_color) {
        ColorChoice::Never
    } else if set(clicolor_force) && clicolor_force != Some(OsStr::new("0")) {
        ColorChoice::Always
    } else if author == ColorChoice::Auto && term == Some(OsStr::new("dumb")) {
        ColorChoice::Never
    } else {
        author
    }
}

/// Whether a record logged now gets color: `to_fd2` is false where it is
/// kept for a replaced `sys.stderr`, which stores text; `terminal` is
/// asked only when the answer depends on it.
pub(crate) fn use_color(
    choice: ColorChoice,
    to_fd2: bool,
    terminal: impl FnOnce() -> bool,
) -> bool {
    match (choice, to_fd2) {
        (ColorChoice::Never, _) | (_, false) => false,
        (ColorChoice::Always, _) => true,
        (ColorChoice::Auto, _) => terminal(),
    }
}

/// The escape code that starts a level's color.
pub(crate) fn code(level: Level) -> &'static [u8] {
    match level {
        Level::Trace => b"\x1b[35m",
        Level::Debug => b"\x1b[34m",
        Level::Info => b"\x1b[32m",
        Level::Warn => b"\x1b[33m",
        Level::Error => b"\x1b[31m",
        Level::Fatal => b"\x1b[1;31m",
    }
}

/// The escape code that ends it.
pub(crate) const RESET: &[u8] = b"\x1b[0m";

/// The choice in force, as set by the builder (never until then).
static CHOICE: AtomicU8 = AtomicU8::new(ColorChoice::Never as u8);

/// Sets the choice in force.
pub(crate) fn set(choice: ColorChoice) {
    CHOICE.store(choice as u8, Ordering::Relaxed);
}

/// The choice in force.
pub(crate) fn choice() -> ColorChoice {
    match CHOICE.load(Ordering::Relaxed) {
        0 => ColorChoice::Auto,
        1 => ColorChoice::Always,
        _ => ColorChoice::Never,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(s: &str) -> Option<&OsStr> {
        Some(OsStr::new(s))
    }

    #[test]
    fn no_color_wins() {
        for author in [ColorChoice::Auto, ColorChoice::Always] {
            assert_eq!(resolve(author, os("1"), os("1"), None), ColorChoice::Never);
        }
        // An empty NO_COLOR does not count.
        assert_eq!(
            resolve(ColorChoice::Auto, os(""), None, None),
            ColorChoice::Auto
        );
    }

    #[test]
    fn clicolor_force_forces_unless_zero_or_empty() {
        assert_eq!(
            resolve(ColorChoice::Never, None, os("1"), None),
            ColorChoice::Always
        );
        assert_eq!(
            resolve(ColorChoice::Auto, None, os("0"), os("dumb")),
            ColorChoice::Never
        );
        assert_eq!(
            resolve(ColorChoice::Auto, None, os(""), None),
            ColorChoice::Auto
        );
    }

    #[test]
    fn the_author_decides_otherwise() {
        assert_eq!(
            resolve(ColorChoice::Never, None, None, os("xterm")),
            ColorChoice::Never
        );
        assert_eq!(
            resolve(ColorChoice::Always, None, None, os("dumb")),
            ColorChoice::Always
        );
        assert_eq!(
            resolve(ColorChoice::Auto, None, None, os("xterm-256color")),
            ColorChoice::Auto
        );
    }

    #[test]
    fn never_on_a_replaced_stderr() {
        for choice in [ColorChoice::Auto, ColorChoice::Always, ColorChoice::Never] {
            assert!(!use_color(choice, false, || true));
        }
    }

    #[test]
    fn auto_follows_the_terminal_and_asks_only_then() {
        assert!(use_color(ColorChoice::Auto, true, || true));
        assert!(!use_color(ColorChoice::Auto, true, || false));
        assert!(use_color(ColorChoice::Always, true, || panic!("not asked")));
        assert!(!use_color(ColorChoice::Never, true, || panic!("not asked")));
    }

    #[test]
    fn the_choice_round_trips() {
        for choice in [ColorChoice::Auto, ColorChoice::Always, ColorChoice::Never] {
            set(choice);
            assert_eq!(self::choice(), choice);
        }
    }

    #[test]
    fn codes_are_escape_sequences() {
        for level in Level::ALL {
            let c = code(level);
            assert!(c.starts_with(b"\x1b[") && c.ends_with(b"m"));
        }
    }
}
