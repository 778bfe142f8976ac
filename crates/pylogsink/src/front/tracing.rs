//! The `tracing` front end (the `tracing` feature): a
//! [`tracing_subscriber::Layer`] that turns each event into one
//! [`Record`] and hands it to the same entry as [`emit`](crate::emit).
//!
//! With the feature on, [`Builder::init`](crate::Builder::init) installs a
//! global default subscriber made of tracing-subscriber's registry and
//! this layer; an author who composes their own subscriber adds
//! [`layer()`] to it instead.
//!
//! An event is one record: its level, target, file and line, then the
//! span context as tracing-subscriber's fmt writes it, the message, and
//! the event's fields as `key=value` (see [`Fields`]):
//!
//! ```text
//! [2026-12-03T08:10:00.000000Z INFO  testext::work lib.rs:140] load{path="model.pte"}:init: loaded rows=42
//! ```
//!
//! Entering and leaving a span makes no record.
//!
//! The directives filter events and spans by target and level, as they
//! filter `log` records, and the layer says so truthfully in
//! `register_callsite` and `enabled`: tracing then disables a callsite the
//! filter drops once, and a dropped event costs tracing's own level
//! compare and interest check. When the filter or the destination
//! changes, tracing is told to ask again
//! (`tracing_core::callsite::rebuild_interest_cache`). With the `logging`
//! destination, Python's logger levels, which change as Python runs, are
//! asked per event instead, from pylogsink's cache. A span the filter
//! drops is not in the context of the events inside it, as with
//! tracing-subscriber's `EnvFilter`.

use crate::control::{enabled, max_level, to_logging};
use crate::core::emit::emit_record;
use crate::record::format::SCRATCH_MAX;
use crate::record::{Fields, Level, Record};
use std::cell::RefCell;
use std::fmt::{self, Write as _};
use std::io::Write as _;
use tracing_core::field::{Field, Visit};
use tracing_core::span::{Attributes, Id, Record as Values};
use tracing_core::subscriber::Interest;
use tracing_core::{Event, LevelFilter, Metadata, Subscriber};
use tracing_subscriber::layer::{Context, SubscriberExt as _};
use tracing_subscriber::registry::{LookupSpan, Registry};

/// pylogsink's tracing layer: events become records, filtered by the
/// directives in force. Made by [`layer()`].
///
/// Shown in the [`layer()`] example.
#[derive(Clone, Copy, Debug, Default)]
pub struct Layer {
    _private: (),
}

/// The layer, for a subscriber the author composes:
///
/// ```no_run
/// use tracing_subscriber::layer::SubscriberExt;
///
/// let subscriber = tracing_subscriber::registry().with(pylogsink::tracing::layer());
/// tracing::subscriber::set_global_default(subscriber).unwrap();
/// ```
///
/// (`Builder::init` does this itself; compose your own only to add other
/// layers.)
pub fn layer() -> Layer {
    Layer::default()
}

/// The subscriber `Builder::init` installs.
type Installed = tracing_subscriber::layer::Layered<Layer, Registry>;

/// Whether a global default subscriber is set that is not pylogsink's.
pub(crate) fn other_subscriber() -> bool {
    tracing_core::dispatcher::has_been_set()
        && !tracing_core::dispatcher::get_default(|d| d.is::<Installed>())
}

/// Installs the registry with pylogsink's layer as the global default
/// subscriber. `Ok` if it already is; `Err` if another subscriber is.
pub(crate) fn install() -> Result<(), ()> {
    if tracing_core::dispatcher::has_been_set() {
        return if other_subscriber() { Err(()) } else { Ok(()) };
    }
    let dispatch = tracing_core::Dispatch::new(Registry::default().with(layer()));
    match tracing_core::dispatcher::set_global_default(dispatch) {
        Ok(()) => Ok(()),
        Err(_) if !other_subscriber() => Ok(()),
        Err(_) => Err(()),
    }
}

fn level_of(metadata: &Metadata<'_>) -> Level {
    Level::from(metadata.level())
}

/// The span context fmt-style, as a span's extension: `name{a=1 b="x"}`.
struct SpanText(Vec<u8>);

impl<S> tracing_subscriber::Layer<S> for Layer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn register_callsite(&self, metadata: &'static Metadata<'static>) -> Interest {
        if to_logging() {
            // Python's levels change as Python runs: ask per event.
            Interest::sometimes()
        } else if enabled(level_of(metadata), metadata.target()) {
            Interest::always()
        } else {
            Interest::never()
        }
    }

    fn enabled(&self, metadata: &Metadata<'_>, _: Context<'_, S>) -> bool {
        enabled(level_of(metadata), metadata.target())
    }

    fn max_level_hint(&self) -> Option<LevelFilter> {
        Some(match max_level() {
            log::LevelFilter::Off => LevelFilter::OFF,
            log::LevelFilter::Error => LevelFilter::ERROR,
            log::LevelFilter::Warn => LevelFilter::WARN,
            log::LevelFilter::Info => LevelFilter::INFO,
            log::LevelFilter::Debug => LevelFilter::DEBUG,
            log::LevelFilter::Trace => LevelFilter::TRACE,
        })
    }

    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else {
            return;
        };
        let mut text = Vec::new();
        attrs.record(&mut SpanVisitor(&mut text));
        span.extensions_mut().insert(SpanText(text));
    }

    fn on_record(&self, id: &Id, values: &Values<'_>, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else {
            return;
        };
        let mut extensions = span.extensions_mut();
        if let Some(SpanText(text)) = extensions.get_mut::<SpanText>() {
            values.record(&mut SpanVisitor(text));
        }
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let metadata = event.metadata();
        let level = level_of(metadata);
        if !enabled(level, metadata.target()) {
            return;
        }
        with_scratch(|scratch| {
            take_apart(event, &ctx, scratch);
            let fields = &scratch.fields;
            emit_record(&Record {
                level,
                target: metadata.target(),
                file: metadata.file().unwrap_or(""),
                line: metadata.line().unwrap_or(0),
                message: scratch.message.as_bytes(),
                fields: (!fields.is_empty()).then_some(fields),
            });
        });
    }
}

/// Puts an event's message, fields and span context into `scratch`.
fn take_apart<S>(event: &Event<'_>, ctx: &Context<'_, S>, scratch: &mut Scratch)
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    event.record(&mut EventVisitor(scratch));
    let Some(scope) = ctx.event_scope(event) else {
        return;
    };
    let spans = scratch.fields.spans_mut();
    for span in scope.from_root() {
        if !spans.is_empty() {
            spans.push(b':');
        }
        spans.extend_from_slice(span.name().as_bytes());
        if let Some(SpanText(text)) = span.extensions().get::<SpanText>() {
            if !text.is_empty() {
                spans.push(b'{');
                spans.extend_from_slice(text);
                spans.push(b'}');
            }
        }
    }
}

/// Where an event is taken apart: its message and its other fields.
#[derive(Default)]
struct Scratch {
    message: String,
    fields: Fields,
}

/// Runs `f` with this thread's scratch, emptied (a fresh one when it is in
/// use: a field's `Debug` that logs an event of its own).
fn with_scratch(f: impl FnOnce(&mut Scratch)) {
    thread_local!(static SCRATCH: RefCell<Scratch> = RefCell::default());
    let mut f = Some(f);
    let _ = SCRATCH.try_with(|scratch| {
        if let Ok(mut scratch) = scratch.try_borrow_mut() {
            scratch.message.clear();
            scratch.fields.clear();
            (f.take().expect("once"))(&mut scratch);
            if scratch.message.capacity() > SCRATCH_MAX {
                *scratch = Scratch::default();
            }
        }
    });
    if let Some(f) = f {
        f(&mut Scratch::default());
    }
}

/// An event's fields: `message` is the message, the rest typed fields.
struct EventVisitor<'a>(&'a mut Scratch);

impl Visit for EventVisitor<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.0.message, "{value:?}");
        } else {
            self.0.fields.push_debug(field.name(), value);
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.0.message.push_str(value);
        } else {
            self.0.fields.push_str(field.name(), value.as_bytes());
        }
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.fields.push_int(field.name(), value);
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.fields.push_int(field.name(), value);
    }

    fn record_i128(&mut self, field: &Field, value: i128) {
        self.0.fields.push_int(field.name(), value);
    }

    fn record_u128(&mut self, field: &Field, value: u128) {
        match i128::try_from(value) {
            Ok(n) => self.0.fields.push_int(field.name(), n),
            Err(_) => self.0.fields.push_display(field.name(), &value),
        }
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        self.0.fields.push_float(field.name(), value);
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.0.fields.push_bool(field.name(), value);
    }

    fn record_bytes(&mut self, field: &Field, value: &[u8]) {
        self.0.fields.push_str(field.name(), value);
    }

    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        self.0.fields.push_display(field.name(), value);
    }
}

/// A span's fields as fmt writes them: space-separated `name=value`,
/// strings quoted by their `Debug`, a `message` field as its value alone.
struct SpanVisitor<'a>(&'a mut Vec<u8>);

impl SpanVisitor<'_> {
    fn field(&mut self, field: &Field, value: fmt::Arguments<'_>) {
        if !self.0.is_empty() {
            self.0.push(b' ');
        }
        if field.name() != "message" {
            self.0.extend_from_slice(field.name().as_bytes());
            self.0.push(b'=');
        }
        let _ = self.0.write_fmt(value);
    }
}

impl Visit for SpanVisitor<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.field(field, format_args!("{value:?}"));
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.field(field, format_args!("{value}"));
        } else {
            self.field(field, format_args!("{value:?}"));
        }
    }

    fn record_bytes(&mut self, field: &Field, value: &[u8]) {
        self.field(field, format_args!("\"{}\"", value.escape_ascii()));
    }

    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        self.field(field, format_args!("{value}"));
    }
}

// They need POSIX pipes (core/testing.rs).
#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use crate::core::testing::{records, Pipe};
    use tracing_core::field::FieldSet;
    use tracing_core::Kind;

    /// What pylogsink's own layer writes for the events `f` makes: each
    /// record without its head. The directives let everything through
    /// meanwhile.
    fn capture(f: impl FnOnce()) -> Vec<String> {
        let pipe = Pipe::new();
        crate::control::set_filter("trace").unwrap();
        let subscriber = Registry::default().with(layer());
        tracing_core::dispatcher::with_default(&tracing_core::Dispatch::new(subscriber), f);
        crate::control::set_filter("warn").unwrap();
        records(&pipe.read())
    }

    #[test]
    fn an_event_is_its_span_context_message_and_fields() {
        let got = capture(|| {
            let load = tracing::info_span!("load", path = "model.pte");
            let _load = load.enter();
            let init = tracing::info_span!("init");
            let _init = init.enter();
            tracing::info!(
                rows = 42,
                ratio = 0.5,
                ok = true,
                name = "a b",
                "loaded {}",
                3
            );
        });
        assert_eq!(
            got,
            ["load{path=\"model.pte\"}:init: loaded 3 rows=42 ratio=0.5 ok=true name=\"a b\""]
        );
    }

    #[test]
    fn recorded_span_fields_join_the_context_and_no_span_no_prefix() {
        let got = capture(|| {
            let span = tracing::info_span!("req", id = 7, user = tracing::field::Empty);
            span.record("user", "ann");
            span.in_scope(|| tracing::warn!(kind = ?Some(1), "slow"));
            tracing::error!(bytes = &b"\xff\x1b"[..], "plain");
        });
        assert_eq!(
            got,
            [
                "req{id=7 user=\"ann\"}: slow kind=Some(1)",
                "plain bytes=\"\\xff\\x1b\"",
            ]
        );
    }

    #[test]
    fn values_cannot_forge_records() {
        let got = capture(|| {
            let evil = "x\n[2026-01-01T00:00:00.000000Z ERROR a.rs:1] fake";
            let span = tracing::info_span!("s", p = evil);
            span.in_scope(|| tracing::info!(v = evil, "m\nn"));
        });
        assert_eq!(got.len(), 1);
        let text = &got[0];
        assert!(
            text.lines().skip(1).all(|l| l.starts_with("    ")),
            "{text}"
        );
        assert!(text.contains("v=\"x\n    [2026"), "{text}");
        // The span's own field is written by Debug: the newline as `\n`.
        assert!(text.starts_with("s{p=\"x\\n[2026"), "{text}");
    }

    struct Site;

    impl tracing_core::Callsite for Site {
        fn set_interest(&self, _: Interest) {}
        fn metadata(&self) -> &Metadata<'_> {
            &DEBUG
        }
    }

    static SITE: Site = Site;

    static DEBUG: Metadata<'static> = meta(tracing_core::Level::DEBUG);
    static WARN: Metadata<'static> = meta(tracing_core::Level::WARN);

    const fn meta(level: tracing_core::Level) -> Metadata<'static> {
        Metadata::new(
            "event",
            "app::x",
            level,
            None,
            None,
            None,
            FieldSet::new(&[], tracing_core::identify_callsite!(&SITE)),
            Kind::EVENT,
        )
    }

    #[test]
    fn callsite_interest_follows_the_filter() {
        let _serial = crate::record::serial();
        let layer = layer();
        let interest = |m| tracing_subscriber::Layer::<Registry>::register_callsite(&layer, m);
        let hint = || tracing_subscriber::Layer::<Registry>::max_level_hint(&layer);
        crate::control::set_filter("warn").unwrap();
        assert!(interest(&DEBUG).is_never());
        assert!(interest(&WARN).is_always());
        assert_eq!(hint(), Some(LevelFilter::WARN));
        crate::control::set_filter("warn,app=debug").unwrap();
        assert!(interest(&DEBUG).is_always());
        assert_eq!(hint(), Some(LevelFilter::DEBUG));
        crate::control::set_filter("warn,app::x=off").unwrap();
        assert!(interest(&WARN).is_never());
        crate::control::set_filter("warn").unwrap();
    }
}
