//! With the `tracing` feature, `init` sets pylogsink's subscriber as the
//! global default, twice harmlessly, and tracing's callsites follow the
//! filter as it changes.
#![cfg(feature = "tracing")]

#[test]
fn init_sets_the_subscriber_and_callsites_follow_the_filter() {
    pylogsink::Builder::new()
        .env("PYLOGSINK_INIT_TRACING_UNSET")
        .default_filter("warn")
        .crash_handler(false)
        .init()
        .unwrap();
    pylogsink::init().unwrap();
    assert!(tracing::dispatcher::has_been_set());
    assert!(tracing::enabled!(target: "app", tracing::Level::WARN));
    assert!(!tracing::enabled!(target: "app", tracing::Level::INFO));
    assert_eq!(
        tracing::level_filters::LevelFilter::current(),
        tracing::Level::WARN
    );
    pylogsink::set_filter("warn,app=debug").unwrap();
    assert!(tracing::enabled!(target: "app", tracing::Level::DEBUG));
    assert!(!tracing::enabled!(target: "other", tracing::Level::DEBUG));
    assert_eq!(
        tracing::level_filters::LevelFilter::current(),
        tracing::Level::DEBUG
    );
    pylogsink::set_filter("error").unwrap();
    assert!(!tracing::enabled!(target: "app", tracing::Level::WARN));
}
