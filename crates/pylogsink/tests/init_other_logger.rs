//! `init` after another logger was installed is a clear error, not a panic,
//! and leaves that logger's level alone.

struct Other;

impl log::Log for Other {
    fn enabled(&self, _: &log::Metadata<'_>) -> bool {
        true
    }
    fn log(&self, _: &log::Record<'_>) {}
    fn flush(&self) {}
}

#[test]
fn another_logger_is_reported() {
    log::set_logger(&Other).unwrap();
    log::set_max_level(log::LevelFilter::Info);
    let err = pylogsink::init().unwrap_err();
    assert_eq!(err, pylogsink::InitError::OtherLogger);
    assert!(err
        .to_string()
        .contains("another logger is already installed"));
    // Changing pylogsink's filter does not change the other logger's level.
    pylogsink::set_filter("trace").unwrap();
    assert_eq!(log::max_level(), log::LevelFilter::Info);
}
