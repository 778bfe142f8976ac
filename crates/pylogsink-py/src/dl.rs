//! The dynamic loader's answers that `pylogsink.ffmpeg` and
//! `pylogsink.sqlite` share: which library a function they found lives in.

use std::ffi::{c_void, CStr};

/// The path of the library that holds `symbol`.
pub fn defining_library(symbol: *mut c_void) -> Option<String> {
    // SAFETY: Dl_info is plain data that dladdr fills in.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: `info` is writable; dladdr reads no memory at `symbol`.
    if unsafe { libc::dladdr(symbol, &mut info) } == 0 || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: dladdr's file name is a NUL-terminated string of the
    // loader's, alive while the library is loaded.
    Some(
        unsafe { CStr::from_ptr(info.dli_fname) }
            .to_string_lossy()
            .into_owned(),
    )
}
