//! The `log` crate front end: once [`Builder::init`] installed it,
//! `log::error!` and friends, anywhere in the extension and its
//! dependencies, become records that go through the filter and the
//! routing rules.
//!
//! [`Builder::init`]: crate::Builder::init

use crate::control::enabled;
use crate::core::emit::emit_args;
use crate::record::{Fields, Level, Record};
use log::kv::{self, Key, Value, VisitSource, VisitValue};
use std::cell::RefCell;

struct Logger;

static LOGGER: Logger = Logger;

impl log::Log for Logger {
    /// The filter's answer: `log_enabled!`, and tracing's log bridge for
    /// its span records, ask here before they format anything.
    fn enabled(&self, metadata: &log::Metadata<'_>) -> bool {
        enabled(Level::from(metadata.level()), metadata.target())
    }

    /// `log` calls this for every record under `log::max_level()`, without
    /// asking [`enabled`](log::Log::enabled) first, so the filter is
    /// checked again here, before anything is formatted.
    fn log(&self, record: &log::Record<'_>) {
        let level = Level::from(record.level());
        if !enabled(level, record.target()) {
            return;
        }
        let plain = Record {
            level,
            target: record.target(),
            file: record.file().unwrap_or(""),
            line: record.line().unwrap_or(0),
            message: b"",
            fields: None,
        };
        let key_values = record.key_values();
        if key_values.count() == 0 {
            return emit_args(&plain, *record.args());
        }
        with_fields(|fields| {
            let _ = key_values.visit(&mut Pairs(fields));
            emit_args(
                &Record {
                    fields: Some(fields),
                    ..plain
                },
                *record.args(),
            );
        });
    }

    fn flush(&self) {}
}

/// Runs `f` with this thread's field buffer, emptied (a fresh one when it
/// is in use: a key-value's `Display` that logs).
fn with_fields(f: impl FnOnce(&mut Fields)) {
    thread_local!(static FIELDS: RefCell<Fields> = const { RefCell::new(Fields::new()) });
    let mut f = Some(f);
    let _ = FIELDS.try_with(|fields| {
        if let Ok(mut fields) = fields.try_borrow_mut() {
            fields.clear();
            (f.take().expect("once"))(&mut fields);
        }
    });
    if let Some(f) = f {
        f(&mut Fields::new());
    }
}

/// `log`'s key-values, added to [`Fields`] with their types.
struct Pairs<'f>(&'f mut Fields);

impl<'kvs> VisitSource<'kvs> for Pairs<'_> {
    fn visit_pair(&mut self, key: Key<'kvs>, value: Value<'kvs>) -> Result<(), kv::Error> {
        let _ = value.visit(Typed {
            fields: self.0,
            name: key.as_str(),
        });
        Ok(())
    }
}

/// One key-value: its value by type.
struct Typed<'f, 'n> {
    fields: &'f mut Fields,
    name: &'n str,
}

impl<'v> VisitValue<'v> for Typed<'_, '_> {
    fn visit_any(&mut self, value: Value<'_>) -> Result<(), kv::Error> {
        self.fields.push_display(self.name, &value);
        Ok(())
    }

    fn visit_u64(&mut self, value: u64) -> Result<(), kv::Error> {
        self.fields.push_int(self.name, value);
        Ok(())
    }

    fn visit_i64(&mut self, value: i64) -> Result<(), kv::Error> {
        self.fields.push_int(self.name, value);
        Ok(())
    }

    fn visit_u128(&mut self, value: u128) -> Result<(), kv::Error> {
        match i128::try_from(value) {
            Ok(n) => self.fields.push_int(self.name, n),
            Err(_) => self.fields.push_display(self.name, &value),
        }
        Ok(())
    }

    fn visit_i128(&mut self, value: i128) -> Result<(), kv::Error> {
        self.fields.push_int(self.name, value);
        Ok(())
    }

    fn visit_f64(&mut self, value: f64) -> Result<(), kv::Error> {
        self.fields.push_float(self.name, value);
        Ok(())
    }

    fn visit_bool(&mut self, value: bool) -> Result<(), kv::Error> {
        self.fields.push_bool(self.name, value);
        Ok(())
    }

    fn visit_str(&mut self, value: &str) -> Result<(), kv::Error> {
        self.fields.push_str(self.name, value.as_bytes());
        Ok(())
    }

    fn visit_char(&mut self, value: char) -> Result<(), kv::Error> {
        self.fields
            .push_str(self.name, value.encode_utf8(&mut [0; 4]).as_bytes());
        Ok(())
    }
}

/// Installs pylogsink as the `log` crate's logger. `Ok` if it already is;
/// `Err` if another logger is.
pub(crate) fn install() -> Result<(), ()> {
    match log::set_logger(&LOGGER) {
        Ok(()) => Ok(()),
        Err(_) if is_installed() => Ok(()),
        Err(_) => Err(()),
    }
}

/// Whether pylogsink is the `log` crate's logger.
fn is_installed() -> bool {
    let installed = log::logger() as *const dyn log::Log;
    std::ptr::addr_eq(installed, &LOGGER as *const Logger)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::fields::FieldValue;

    #[test]
    fn key_values_become_typed_fields() {
        let pairs: [(&str, Value<'_>); 6] = [
            ("rows", Value::from(42u64)),
            ("delta", Value::from(-1i64)),
            ("ratio", Value::from(0.5f64)),
            ("ok", Value::from(true)),
            ("name", Value::from("a b")),
            ("shape", Value::from_debug(&(2, 3))),
        ];
        let record = log::Record::builder()
            .args(format_args!("loaded"))
            .key_values(&pairs)
            .build();
        let mut fields = Fields::new();
        record.key_values().visit(&mut Pairs(&mut fields)).unwrap();
        let got: Vec<_> = fields.iter().collect();
        assert_eq!(
            got,
            [
                (&b"rows"[..], FieldValue::Int(42)),
                (b"delta", FieldValue::Int(-1)),
                (b"ratio", FieldValue::Float(0.5)),
                (b"ok", FieldValue::Bool(true)),
                (b"name", FieldValue::Str(b"a b")),
                (b"shape", FieldValue::Debug(b"(2, 3)")),
            ]
        );
    }

    #[test]
    fn a_record_without_key_values_has_none() {
        let record = log::Record::builder().args(format_args!("m")).build();
        assert_eq!(record.key_values().count(), 0);
    }
}
