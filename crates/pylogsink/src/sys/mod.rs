//! The operating system's calls that differ between platforms, each behind
//! one small function, so that the layers above read the same everywhere.
//!
//! Why a layer of its own: writing to fd 2 without blocking, making pipes
//! and naming threads take different calls on Linux and macOS (and
//! Windows has no file descriptors of its own at all). The decisions (how
//! much room a pipe has, when a line is kept) stay above, shared; what
//! changes per platform is only how the system is asked. Pure rules that
//! only one platform needs live in [`rules`], compiled everywhere so that
//! their unit tests run on every platform that builds the crate.

pub(crate) mod rules;

mod c_runtime;
pub(crate) use c_runtime::*;

/// A file descriptor: the kernel's on Linux and macOS, the C runtime's on
/// Windows.
pub(crate) type RawFd = i32;

#[cfg(unix)]
mod posix;
#[cfg(unix)]
pub(crate) use posix::*;
#[cfg(unix)]
mod descriptors;
#[cfg(unix)]
pub(crate) use descriptors::*;
#[cfg(unix)]
mod signals;
#[cfg(unix)]
pub(crate) use signals::{install_crash_handler, reinstate_crash_handler};

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
pub(crate) use linux::*;

#[cfg(target_vendor = "apple")]
mod macos;
#[cfg(target_vendor = "apple")]
pub(crate) use macos::*;

#[cfg(windows)]
mod windows;
#[cfg(windows)]
pub(crate) use windows::*;
