//! With the `tracing` feature, `init` after another global tracing
//! subscriber was set is a clear error, and installs no `log` logger.
#![cfg(feature = "tracing")]

#[test]
fn another_subscriber_is_reported_and_nothing_changes() {
    let other = tracing_subscriber::registry();
    tracing::subscriber::set_global_default(other).unwrap();
    let err = pylogsink::init().unwrap_err();
    assert_eq!(err, pylogsink::InitError::OtherSubscriber);
    assert!(err
        .to_string()
        .contains("another global default subscriber is already set"));
    // pylogsink did not become the `log` crate's logger either.
    assert!(log::set_logger(Box::leak(Box::new(Nop))).is_ok());
}

struct Nop;

impl log::Log for Nop {
    fn enabled(&self, _: &log::Metadata<'_>) -> bool {
        false
    }
    fn log(&self, _: &log::Record<'_>) {}
    fn flush(&self) {}
}
