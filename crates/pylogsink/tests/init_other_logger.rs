//! `init` after another logger was installed is a clear error, not a panic.

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
    let err = pylogsink::init().unwrap_err();
    assert_eq!(err, pylogsink::OtherLoggerInstalled);
    assert!(err
        .to_string()
        .contains("another logger is already installed"));
}
