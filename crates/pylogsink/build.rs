//! PyO3's cfgs for the interpreter the crate is built for (`Py_3_12`,
//! `Py_LIMITED_API`, `Py_GIL_DISABLED`, ...): a version-specific build on
//! CPython 3.12+ learns whether `sys.stderr` was replaced from a dict
//! watcher (see `call.rs`), an abi3 build looks it up at each call.
fn main() {
    pyo3_build_config::use_pyo3_cfgs();
}
