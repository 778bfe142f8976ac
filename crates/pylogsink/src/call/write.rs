//! Writing kept lines through a Python stream (`sys.stderr` replaced by
//! capsys, `redirect_stderr`, Jupyter): at a call's return, and while a
//! call runs ([`live`](super::live)).

use super::echo;
use crate::core::thread::THREAD;
use crate::dest::in_flight;
use pyo3::exceptions::PyOverflowError;
use pyo3::prelude::*;
use pyo3::types::PyString;

/// How a write through `sys.stderr` went.
pub(crate) enum Written {
    /// `write` and `flush` returned (whatever they returned).
    All,
    /// `write` returned, `flush` raised: the lines were handed over.
    ButFlushFailed(PyErr),
    /// `sys.stderr` is `None`.
    NoStream,
    /// Looking up or calling `write` raised.
    Failed(PyErr),
}

/// Writes through `stream.write`, then `flush`, marking the thread as
/// writing so that a writer that calls back into the extension cannot
/// recurse (see [`entry_sink`](crate::dest::route::entry_sink)). `stream`
/// is `sys.stderr` as looked up (`None` there: nothing is written). Until
/// the write returns, a copy of `text` is in flight ([`in_flight`]) for
/// the exit and the crash handler.
pub(crate) fn write_through_python(
    py: Python<'_>,
    stream: PyResult<Bound<'_, PyAny>>,
    text: &[u8],
) -> Written {
    write_through(py, stream, text, true)
}

/// [`write_through_python`] for captured lines, of which the capture keeps
/// its own copy until they are handed over: none in flight, which the
/// crash handler would write a second time.
pub(crate) fn write_captured_through_python(
    py: Python<'_>,
    stream: PyResult<Bound<'_, PyAny>>,
    text: &[u8],
) -> Written {
    write_through(py, stream, text, false)
}

fn write_through(
    py: Python<'_>,
    stream: PyResult<Bound<'_, PyAny>>,
    text: &[u8],
    in_flight: bool,
) -> Written {
    if text.is_empty() {
        return Written::All;
    }
    let stderr = match stream {
        Ok(stderr) if !stderr.is_none() => stderr,
        Ok(_) => return Written::NoStream,
        Err(err) => return Written::Failed(err),
    };
    THREAD.with(|t| t.writing_kept.set(true));
    let flight = in_flight.then(|| in_flight::start(text));
    let write = |piece: &[u8]| {
        let piece = match decode_to_str(py, piece) {
            Ok(piece) => piece,
            Err(err) => return Written::Failed(err),
        };
        match stderr.call_method1("write", (piece,)) {
            Err(err) => Written::Failed(err),
            Ok(_) => match stderr.call_method0("flush") {
                Ok(_) => Written::All,
                Err(err) => Written::ButFlushFailed(err),
            },
        }
    };
    let written = echo::write(py, &stderr, text, write, |w| matches!(w, Written::All));
    if let Some(flight) = flight {
        flight.landed();
    }
    THREAD.with(|t| t.writing_kept.set(false));
    written
}

/// The kept lines as a Python `str`, decoded by CPython itself in one
/// pass: `bytes.decode("utf-8", "backslashreplace")`, which a record's
/// bytes always pass unchanged (the formatter writes valid UTF-8 only).
fn decode_to_str<'py>(py: Python<'py>, text: &[u8]) -> PyResult<Bound<'py, PyString>> {
    let len = isize::try_from(text.len()).map_err(|e| PyOverflowError::new_err(e.to_string()))?;
    // SAFETY: the GIL is held (`py`); `text` is a live slice of `len`
    // bytes that CPython only reads, and the error handler's name is a
    // NUL-terminated string. The call returns a new reference or NULL with
    // an exception set, which `from_owned_ptr_or_err` takes over.
    unsafe {
        let decoded = pyo3::ffi::PyUnicode_DecodeUTF8(
            text.as_ptr().cast(),
            len,
            c"backslashreplace".as_ptr(),
        );
        Ok(Bound::from_owned_ptr_or_err(py, decoded)?.cast_into_unchecked())
    }
}
