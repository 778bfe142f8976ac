//! What Linux and macOS share for descriptors: reads and writes that say
//! what happened instead of blocking, `poll`, `dup2`, what a file is, and
//! the symbols of the process's global scope.
//!
//! Why here: the fd-level destinations and the output capture decide when
//! to write, wait or give up; these functions only ask the system, and
//! answer with `io::Result`s whose [`io::ErrorKind`] the layers above read
//! (`WouldBlock` for no room or nothing to read, `Interrupted` for a
//! signal), so that no errno is spelt above `sys/`.

use super::RawFd;
use std::io;
use std::time::Duration;

/// One `read(2)` into `buffer`: `Ok(0)` at the end of the file.
#[inline]
pub(crate) fn read(fd: RawFd, buffer: &mut [u8]) -> io::Result<usize> {
    // SAFETY: `buffer` is valid for writes of its length for the whole
    // call; an invalid `fd` makes it fail with EBADF.
    let n = unsafe { libc::read(fd, buffer.as_mut_ptr().cast(), buffer.len()) };
    usize::try_from(n).map_err(|_| io::Error::last_os_error())
}

/// One `write(2)` of `bytes`. Async-signal-safe.
#[inline]
pub(crate) fn write(fd: RawFd, bytes: &[u8]) -> io::Result<usize> {
    // SAFETY: `bytes` is a live slice for the whole call and the kernel
    // only reads `bytes.len()` bytes from it.
    let n = unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
    usize::try_from(n).map_err(|_| io::Error::last_os_error())
}

/// Makes `fd`'s open file description non-blocking (where it fails, the
/// descriptor is not one of ours to change).
pub(crate) fn set_nonblocking(fd: RawFd) {
    // SAFETY: F_GETFL and F_SETFL only read and set the description's
    // flags; an invalid `fd` makes them fail with EBADF.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags >= 0 {
            libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK);
        }
    }
}

/// A new descriptor (3 or above), closed by `exec`, for the file `fd` is.
pub(crate) fn dup_cloexec(fd: RawFd) -> io::Result<RawFd> {
    // SAFETY: F_DUPFD_CLOEXEC makes a new descriptor for the same file; an
    // invalid `fd` makes it fail.
    let copy = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 3) };
    if copy < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(copy)
    }
}

/// Points `onto` at the file `from` is (`dup2`), keeping it across
/// `exec`, as a standard stream is.
pub(crate) fn dup_onto(from: RawFd, onto: RawFd) -> io::Result<()> {
    // SAFETY: dup2 only changes the descriptor table; invalid descriptors
    // make it fail.
    if unsafe { libc::dup2(from, onto) } < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Closes `fd`, a descriptor of the caller's that nothing else uses.
pub(crate) fn close(fd: RawFd) {
    // SAFETY: closing a descriptor the caller owns; an invalid one makes
    // it fail with EBADF.
    unsafe { libc::close(fd) };
}

/// How many bytes wait in the pipe `fd` (`FIONREAD`); `None` if the
/// system does not say.
pub(crate) fn unread(fd: RawFd) -> Option<usize> {
    let mut unread: libc::c_int = 0;
    // SAFETY: FIONREAD writes one int through a valid pointer; an invalid
    // `fd` makes it fail.
    if unsafe { libc::ioctl(fd, libc::FIONREAD, &mut unread) } != 0 {
        return None;
    }
    usize::try_from(unread).ok()
}

/// Waits until one of `fds` has something to read (or its writers are
/// gone), at most `timeout` (`None`: no limit). Which ones are ready; a
/// negative descriptor is left out and never ready.
pub(crate) fn wait_readable<const N: usize>(
    fds: [RawFd; N],
    timeout: Option<Duration>,
) -> [bool; N] {
    let mut polled = fds.map(|fd| libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    });
    let ms = timeout.map_or(-1, |t| {
        libc::c_int::try_from(t.as_millis().max(1)).unwrap_or(libc::c_int::MAX)
    });
    let count = libc::nfds_t::try_from(N).unwrap_or(0);
    // SAFETY: `polled` is an array of `count` initialized pollfd; negative
    // descriptors are ignored by poll.
    unsafe { libc::poll(polled.as_mut_ptr(), count, ms) };
    polled.map(|p| p.revents != 0)
}

/// Waits until `fd` reports room, an error or a hang-up, at most `wait`;
/// false if the wait ended first. Async-signal-safe.
pub(crate) fn wait_writable(fd: RawFd, wait: Duration) -> bool {
    let mut polled = libc::pollfd {
        fd,
        events: libc::POLLOUT,
        revents: 0,
    };
    let ms = wait.as_micros().div_ceil(1000).min(i32::MAX as u128) as i32;
    // SAFETY: `polled` is one valid pollfd for the duration of the call.
    unsafe { libc::poll(&mut polled, 1, ms) != 0 }
}

/// Whether `fd` is seekable (`lseek`): a regular file, a block device,
/// /dev/null; pipes, sockets and terminals are not. Async-signal-safe.
#[inline]
pub(crate) fn is_seekable(fd: RawFd) -> bool {
    // SAFETY: lseek only reads the descriptor's offset; an invalid `fd`
    // makes it fail with EBADF.
    unsafe { libc::lseek(fd, 0, libc::SEEK_CUR) >= 0 }
}

/// Whether `fd` is a terminal.
pub(crate) fn is_terminal(fd: RawFd) -> bool {
    // SAFETY: isatty only asks the kernel about the descriptor; an invalid
    // one makes it return 0.
    unsafe { libc::isatty(fd) == 1 }
}

/// Whether a write that cannot block was refused because the file does
/// not take one (a regular file, a terminal; an old kernel), rather than
/// for want of room.
#[inline]
pub(crate) fn refuses_nowait(err: &io::Error) -> bool {
    matches!(
        err.raw_os_error(),
        Some(libc::EOPNOTSUPP | libc::EINVAL | libc::ENOSYS)
    )
}

/// What `fstat` says of a file.
pub(crate) struct FileStatus(pub(super) libc::stat);

impl FileStatus {
    /// Whether the file is a character device (a terminal, /dev/null).
    pub(crate) fn is_char_device(&self) -> bool {
        self.0.st_mode & libc::S_IFMT == libc::S_IFCHR
    }

    /// What names the file: its device, inode and the device it is.
    pub(crate) fn identity(&self) -> (u64, u64, u64) {
        // The types of these fields differ between platforms.
        #[allow(clippy::unnecessary_cast)]
        (
            self.0.st_dev as u64,
            self.0.st_ino as u64,
            self.0.st_rdev as u64,
        )
    }
}

/// What `fd` is (`fstat`). Async-signal-safe.
pub(crate) fn file_status(fd: RawFd) -> io::Result<FileStatus> {
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: `st` is valid for writes of one `stat`, which `fstat` fills in
    // full when it returns 0; only then is it read.
    if unsafe { libc::fstat(fd, st.as_mut_ptr()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fstat returned 0, so it initialized `st`.
    Ok(FileStatus(unsafe { st.assume_init() }))
}

/// The address of the function `name` in the process's global scope
/// (`dlsym(RTLD_DEFAULT)`), where an extension module finds libpython's
/// or the python executable's symbols.
pub(crate) fn global_symbol(name: &std::ffi::CStr) -> Option<*mut std::ffi::c_void> {
    // SAFETY: `name` is a NUL-terminated string; RTLD_DEFAULT searches the
    // global scope and only reads.
    let f = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
    (!f.is_null()).then_some(f)
}

#[cfg(test)]
pub(crate) use for_tests::*;

/// Forking children, for the tests of what a child inherits.
#[cfg(test)]
mod for_tests {
    use std::time::{Duration, Instant};

    /// Forks: `None` in the child, the child's pid in the parent.
    ///
    /// # Safety
    ///
    /// The child may only call async-signal-safe functions (and what
    /// pylogsink makes safe in a child) until it ends with [`exit_now`].
    pub(crate) unsafe fn fork() -> Option<i32> {
        // SAFETY: the caller keeps to what a forked child may do.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork failed");
        (pid != 0).then_some(pid)
    }

    /// Ends this process at once with `status`, running nothing else (no
    /// `atexit` hook, no destructor).
    pub(crate) fn exit_now(status: i32) -> ! {
        // SAFETY: _exit has no preconditions.
        unsafe { libc::_exit(status) }
    }

    /// How a child ended within `wait`: `Some(true)` for a status of 0,
    /// `Some(false)` for any other end, `None` if it was still running
    /// (it is killed and reaped then).
    pub(crate) fn wait_child(pid: i32, wait: Duration) -> Option<bool> {
        let deadline = Instant::now() + wait;
        let mut status = 0;
        loop {
            // SAFETY: waits for the caller's own child; `status` is
            // writable.
            if unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) } == pid {
                return Some(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
            }
            if Instant::now() > deadline {
                // SAFETY: kills and reaps the caller's own hung child.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                    libc::waitpid(pid, &mut status, 0);
                }
                return None;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}
