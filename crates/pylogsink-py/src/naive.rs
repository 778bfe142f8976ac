//! The naive sinks, which exist only so that the demo and the tests can
//! show what pylogsink avoids: each line through `sys.stderr.write`, taking
//! the GIL to do it (as pybind11's stream redirect and pyo3-log do), or a
//! plain blocking `write(2)` to fd 2 (as a C runtime's `fprintf(stderr)`).

use pylogsink::format::format_record;
use pylogsink::Level;
use pyo3::prelude::*;
use std::time::SystemTime;

fn record(level: Level, file: &str, line: u32, message: &[u8]) -> Vec<u8> {
    let mut record = Vec::new();
    format_record(&mut record, SystemTime::now(), level, file, line, message);
    record
}

/// Writes one record to fd 2 with blocking writes, whatever fd 2 is.
pub fn emit_fd2(level: Level, file: &str, line: u32, message: &[u8]) {
    use std::io::Write;
    let _ = std::io::stderr().write_all(&record(level, file, line, message));
}

/// Writes one record through `sys.stderr.write`, with the GIL.
pub fn emit(level: Level, file: &str, line: u32, message: &[u8]) {
    let text = String::from_utf8_lossy(&record(level, file, line, message)).into_owned();
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
