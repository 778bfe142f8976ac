//! The naive sinks, which exist only so that the demo and the tests can
//! show what pylogsink avoids: each line through `sys.stderr.write`, taking
//! the GIL to do it (as pybind11's stream redirect and pyo3-log do), or a
//! plain blocking `write(2)` to fd 2 (as a C runtime's `fprintf(stderr)`).

use pylogsink::__private_api::format_record;
use pylogsink::__private_api::Record;
use pyo3::prelude::*;
use std::time::SystemTime;

fn formatted(record: &Record<'_>) -> Vec<u8> {
    let mut out = Vec::new();
    format_record(&mut out, SystemTime::now(), record, false);
    out
}

/// Writes one record to fd 2 with blocking writes, whatever fd 2 is.
pub fn emit_fd2(record: &Record<'_>) {
    use std::io::Write;
    let _ = std::io::stderr().write_all(&formatted(record));
}

/// Writes one record through `sys.stderr.write`, with the GIL.
pub fn emit(record: &Record<'_>) {
    let text = String::from_utf8_lossy(&formatted(record)).into_owned();
    Python::attach(|py| {
        let written = py
            .import("sys")
            .and_then(|sys| sys.getattr("stderr"))
            .and_then(|stderr| stderr.call_method1("write", (text,)));
        if let Err(err) = written {
            err.print(py);
        }
    });
}
