//! The naive sink: each line through `sys.stderr.write`, taking the GIL to
//! do it, as pybind11's stream redirect and pyo3-log do. It exists only so
//! that the demo and the tests can show what pylogsink avoids.

use pylogsink::format::format_record;
use pylogsink::Level;
use pyo3::prelude::*;
use std::time::SystemTime;

/// Writes one record through `sys.stderr.write`, with the GIL.
pub fn emit(level: Level, file: &str, line: u32, message: &[u8]) {
    let mut record = Vec::new();
    format_record(&mut record, SystemTime::now(), level, file, line, message);
    let text = String::from_utf8_lossy(&record).into_owned();
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
