//! `init` may be called more than once: every extension module that embeds
//! pylogsink calls it when it loads.

#[test]
fn init_twice_is_harmless() {
    assert_eq!(pylogsink::init(), Ok(()));
    assert_eq!(pylogsink::init(), Ok(()));
    assert_eq!(log::max_level(), log::LevelFilter::Trace);
}
