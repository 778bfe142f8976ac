//! With the `tracing` feature, `init` after another global tracing
//! subscriber was set is a clear error, unless the builder is told to
//! leave the subscriber alone.
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
    // Leaving the global subscriber to the author works.
    pylogsink::Builder::new()
        .tracing_subscriber(false)
        .crash_handler(false)
        .init()
        .unwrap();
}
