//! How much may wait: the budgets of the buffers where lines and records
//! wait for a destination that cannot take them yet.
//!
//! Native code can log faster than Python takes its lines, and for as long
//! as it likes, so what waits must be bounded. But a bound that cuts into
//! the bursts real runtimes make (thousands of lines in one call) shows the
//! user a note where plain Python would have shown every line. The defaults
//! hold such bursts whole: 4 MiB of text lines per buffer (some 25,000 lines
//! of 100 bytes), and 50,000 records within 16 MiB for Python's `logging`.
//! A buffer that would exceed its budget leaves out its oldest lines, counts
//! them, and says so in one note.
//!
//! The budget is set in one place, here: by the builder at start-up, by the
//! users through `PYLOGSINK_BUDGET` ([`parse`]), and from Python at run
//! time. Buffers read it each time they trim, so a change holds from the
//! next line on, everywhere.

use std::sync::atomic::{AtomicUsize, Ordering};

/// The environment variable through which users set the budget:
/// `lines=8MiB,records=100000,record_bytes=32MiB`, any of the three.
pub(crate) const ENV: &str = "PYLOGSINK_BUDGET";

/// How much one buffer may hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Budget {
    /// Bytes of text lines: a call's kept lines, the process-wide queue,
    /// the lines waiting for a replaced `sys.stderr`.
    pub lines: usize,
    /// Records waiting for `logging`, and the bytes they count for.
    pub records: usize,
    pub record_bytes: usize,
}

/// The budget unless the builder, the users or Python set another.
pub(crate) const DEFAULT: Budget = Budget {
    lines: 4 << 20,
    records: 50_000,
    record_bytes: 16 << 20,
};

/// The least each part may be: a budget smaller than one line would leave
/// out every line.
pub(crate) const MIN_BYTES: usize = 1024;

/// The budget in force, part by part: set by the builder, read wherever
/// lines or records are kept.
static LINES: AtomicUsize = AtomicUsize::new(DEFAULT.lines);
static RECORDS: AtomicUsize = AtomicUsize::new(DEFAULT.records);
static RECORD_BYTES: AtomicUsize = AtomicUsize::new(DEFAULT.record_bytes);

/// Puts `budget` in force, each part raised to its least.
pub(crate) fn set(budget: Budget) {
    LINES.store(budget.lines.max(MIN_BYTES), Ordering::Relaxed);
    RECORDS.store(budget.records.max(1), Ordering::Relaxed);
    RECORD_BYTES.store(budget.record_bytes.max(MIN_BYTES), Ordering::Relaxed);
}

/// The budget in force.
pub(crate) fn get() -> Budget {
    Budget {
        lines: lines(),
        records: RECORDS.load(Ordering::Relaxed),
        record_bytes: RECORD_BYTES.load(Ordering::Relaxed),
    }
}

/// The bytes of text lines one buffer keeps.
pub(crate) fn lines() -> usize {
    LINES.load(Ordering::Relaxed)
}

/// `base` with the parts that `spec` names changed: comma-separated
/// `name=value` pairs, names `lines`, `records` and `record_bytes`, sizes
/// in bytes with an optional `K`, `KiB`, `M`, `MiB`, `G` or `GiB`. Every
/// part must be valid, or nothing changes and the error says which is not.
pub(crate) fn parse(spec: &str, base: Budget) -> Result<Budget, String> {
    let mut budget = base;
    for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (name, value) = part
            .split_once('=')
            .ok_or_else(|| format!("{part:?} is not name=value"))?;
        let value = value.trim();
        let n = size(value).ok_or_else(|| format!("{part:?}: {value:?} is not a size"))?;
        budget = with_part(budget, name.trim(), n).map_err(|why| format!("{part:?}: {why}"))?;
    }
    Ok(budget)
}

/// `budget` with its part `name` (`lines`, `records` or `record_bytes`)
/// set to `value`, or why not: an unknown name, a value below the least.
pub(crate) fn with_part(mut budget: Budget, name: &str, value: usize) -> Result<Budget, String> {
    let (slot, least) = match name {
        "lines" => (&mut budget.lines, MIN_BYTES),
        "records" => (&mut budget.records, 1),
        "record_bytes" => (&mut budget.record_bytes, MIN_BYTES),
        other => {
            return Err(format!(
                "{other:?} is no budget (lines, records or record_bytes)"
            ))
        }
    };
    if value < least {
        return Err(format!("the least is {least}"));
    }
    *slot = value;
    Ok(budget)
}

/// A count or a size: digits, then an optional binary unit.
fn size(text: &str) -> Option<usize> {
    let digits = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let n: usize = text[..digits].parse().ok()?;
    let shift = match text[digits..].trim() {
        "" => 0,
        "K" | "KiB" | "k" | "kib" => 10,
        "M" | "MiB" | "m" | "mib" => 20,
        "G" | "GiB" | "g" | "gib" => 30,
        _ => return None,
    };
    n.checked_mul(1 << shift)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_take_binary_units() {
        assert_eq!(size("4096"), Some(4096));
        assert_eq!(size("64K"), Some(64 << 10));
        assert_eq!(size("8MiB"), Some(8 << 20));
        assert_eq!(size("1 GiB"), Some(1 << 30));
        for bad in [
            "",
            "MiB",
            "4 MB",
            "-1",
            "1.5M",
            "4MiBs",
            "99999999999999999999",
        ] {
            assert_eq!(size(bad), None, "{bad}");
        }
        assert_eq!(size(&format!("{}G", usize::MAX)), None);
    }

    #[test]
    fn a_spec_changes_the_parts_it_names() {
        let b = parse("lines=8MiB, records=100000", DEFAULT).unwrap();
        assert_eq!(
            b,
            Budget {
                lines: 8 << 20,
                records: 100_000,
                record_bytes: DEFAULT.record_bytes
            }
        );
        assert_eq!(parse("", DEFAULT).unwrap(), DEFAULT);
        assert_eq!(parse("record_bytes=2K", b).unwrap().record_bytes, 2048);
    }

    #[test]
    fn a_bad_part_changes_nothing_and_is_named() {
        for (spec, said) in [
            ("lines=8MiB,linez=1", "\"linez\" is no budget"),
            ("lines", "\"lines\" is not name=value"),
            ("records=many", "\"many\" is not a size"),
            ("records=0", "the least is 1"),
            ("lines=100", "the least is 1024"),
        ] {
            let err = parse(spec, DEFAULT).unwrap_err();
            assert!(err.contains(said), "{spec}: {err}");
        }
    }
}
