//! `init` may be called more than once, and `log`'s own level follows the
//! filter, so `log`'s macros drop what the filter would drop with one
//! compare.

use log::LevelFilter;

#[test]
fn init_twice_is_harmless_and_the_max_level_follows_the_filter() {
    std::env::remove_var(pylogsink::DEFAULT_ENV);
    assert_eq!(pylogsink::init(), Ok(()));
    assert_eq!(pylogsink::init(), Ok(()));
    assert_eq!(pylogsink::filter(), "warn");
    assert_eq!(log::max_level(), LevelFilter::Warn);
    assert!(!log::log_enabled!(log::Level::Info));

    pylogsink::set_filter("warn,myruntime::loader=trace").unwrap();
    assert_eq!(log::max_level(), LevelFilter::Trace);
    assert!(log::log_enabled!(target: "myruntime::loader", log::Level::Trace));
    assert!(!log::log_enabled!(target: "myruntime", log::Level::Info));

    // A bad default filter changes nothing and names the directive.
    let err = pylogsink::Builder::new()
        .default_filter("info,x=loud")
        .init()
        .unwrap_err();
    assert!(err.to_string().contains("\"x=loud\""), "{err}");
    assert_eq!(pylogsink::filter(), "warn,myruntime::loader=trace");

    // The environment's word is read at each init.
    std::env::set_var("PYLOGSINK_INIT_TWICE_LOG", "error");
    pylogsink::Builder::new()
        .env("PYLOGSINK_INIT_TWICE_LOG")
        .init()
        .unwrap();
    assert_eq!(pylogsink::filter(), "error");
    assert_eq!(log::max_level(), LevelFilter::Error);
}
