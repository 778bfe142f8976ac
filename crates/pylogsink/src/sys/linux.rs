//! Linux: `pipe2`, `dup3`, a pipe's size, `gettid`, `/proc`, and a write
//! that cannot block (`pwritev2` with `RWF_NOWAIT`).

use super::FileStatus;
use std::io::{self, IoSlice};
use std::os::fd::{FromRawFd, OwnedFd, RawFd};

/// Whether CPython before 3.13.8 ends a daemon thread that re-takes the
/// GIL once finalization began, in the middle of what it does (see
/// `daemon_avoids_python`): on Linux, with `pthread_exit`.
pub(crate) const OLD_PYTHON_ENDS_DAEMON_THREADS: bool = true;

/// A pipe whose two ends close on `exec`.
pub(crate) fn pipe_cloexec() -> io::Result<[RawFd; 2]> {
    let mut fds = [-1; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    check(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) })?;
    Ok(fds)
}

/// Points `onto` at what `from` is, atomically, closing on `exec`.
pub(crate) fn dup_onto_cloexec(from: RawFd, onto: RawFd) -> io::Result<()> {
    // SAFETY: dup3 only changes the descriptor table; invalid descriptors
    // make it fail with EBADF.
    check(unsafe { libc::dup3(from, onto, libc::O_CLOEXEC) }).map(drop)
}

/// Sets the buffer of the pipe behind `fd` to `bytes` where the system
/// allows; the size it has now, or `None` if it could not be set.
pub(crate) fn set_pipe_size(fd: RawFd, bytes: usize) -> Option<usize> {
    let bytes = libc::c_int::try_from(bytes).ok()?;
    // SAFETY: F_SETPIPE_SZ only resizes the pipe's buffer; a descriptor
    // that is no pipe makes it fail.
    let size = unsafe { libc::fcntl(fd, libc::F_SETPIPE_SZ, bytes) };
    usize::try_from(size).ok()
}

/// The kernel's id of the calling thread (what `ps -L` shows).
pub(crate) fn thread_id() -> u64 {
    // The system call, not glibc's gettid(), which only glibc 2.30 and later
    // have: the wheels and the C library promise glibc 2.28.
    // SAFETY: gettid has no preconditions and cannot fail.
    unsafe { libc::syscall(libc::SYS_gettid) as u64 }
}

/// Whether the calling thread is the process's first one.
pub(crate) fn is_main_thread() -> bool {
    // SAFETY: getpid has no preconditions and cannot fail.
    thread_id() == unsafe { libc::getpid() } as u64
}

/// The process's name as the system shows it (`/proc/self/comm`).
pub(crate) fn process_name() -> Option<String> {
    let name = std::fs::read_to_string("/proc/self/comm").ok()?;
    Some(name.trim_end().to_owned())
}

/// Whether [`write_nowait_vectored`] takes several parts in one write.
pub(crate) const WRITES_PARTS_NOWAIT: bool = true;

/// `pwritev2(fd, piece, -1, RWF_NOWAIT)`: writes only if that needs no
/// wait. Files and terminals refuse it (`EOPNOTSUPP`); pipes, sockets and
/// /dev/null take it on current kernels.
#[inline]
pub(crate) fn write_nowait(fd: RawFd, piece: &[u8]) -> io::Result<usize> {
    write_nowait_vectored(fd, &[IoSlice::new(piece)])
}

/// [`write_nowait`] of `parts` one after the other, in one system call: as
/// one write for a pipe (all of it or none, up to `PIPE_BUF` bytes).
///
/// The system call itself, not libc's wrapper: that one makes the call a
/// cancellation point, which costs more user-space instructions than the
/// rest of the write. On x86-64 and AArch64 it is the instruction itself,
/// in place ([`raw_pwritev2_nowait`]): libc's `syscall()` is a variadic
/// function that moves all seven arguments once more. Offset -1 (the
/// file's own) is passed as its low half, 0 as its high half, as the
/// kernel takes it on 64 bits.
#[inline]
pub(crate) fn write_nowait_vectored(fd: RawFd, parts: &[IoSlice<'_>]) -> io::Result<usize> {
    // `IoSlice` is an `iovec` on Linux, as std guarantees.
    let (iov, count) = (parts.as_ptr().cast::<libc::iovec>(), parts.len());
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    {
        let n = raw_pwritev2_nowait(fd, iov, count);
        if n < 0 {
            return Err(io::Error::from_raw_os_error(-n as i32));
        }
        Ok(n as usize)
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        let count = count as libc::c_int;
        // SAFETY: `iov` points at `count` iovecs, which stay borrowed and
        // alive for the whole call with the bytes they point at; the
        // kernel only reads them. An invalid `fd` makes the call fail with
        // EBADF, nothing worse.
        #[cfg(target_pointer_width = "64")]
        let n = unsafe {
            libc::syscall(
                libc::SYS_pwritev2,
                fd,
                iov,
                count,
                -1 as libc::c_long,
                0 as libc::c_long,
                libc::RWF_NOWAIT,
            )
        };
        // SAFETY: as above.
        #[cfg(not(target_pointer_width = "64"))]
        let n = unsafe { libc::pwritev2(fd, iov, count, -1, libc::RWF_NOWAIT) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(n as usize)
    }
}

/// `pwritev2(fd, iov, count, -1, RWF_NOWAIT)` by the `syscall`
/// instruction: the byte count, or minus the error number. `iov` points at
/// `count` iovecs that the caller keeps borrowed for the call.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn raw_pwritev2_nowait(fd: RawFd, iov: *const libc::iovec, count: usize) -> isize {
    let n: isize;
    // SAFETY: the system call reads the `count` iovecs at `iov`, which the
    // caller keeps borrowed for the call, and the bytes they point at; it
    // writes no user memory (the kernel checks every address it is given).
    // The kernel's calling convention: the number in rax, the arguments in
    // rdi, rsi, rdx, r10, r8, r9, the result in rax; rcx and r11 are
    // overwritten, nothing else, and no stack is used.
    unsafe {
        std::arch::asm!(
            "syscall",
            inlateout("rax") libc::SYS_pwritev2 as isize => n,
            in("rdi") fd as isize,
            in("rsi") iov,
            in("rdx") count,
            in("r10") -1_isize,
            in("r8") 0_isize,
            in("r9") libc::RWF_NOWAIT as isize,
            lateout("rcx") _,
            lateout("r11") _,
            options(nostack, preserves_flags, readonly),
        );
    }
    n
}

/// As above, by `svc 0` on AArch64: the number in x8, the arguments in x0
/// to x5, the result in x0.
#[cfg(target_arch = "aarch64")]
#[inline(always)]
fn raw_pwritev2_nowait(fd: RawFd, iov: *const libc::iovec, count: usize) -> isize {
    let n: isize;
    // SAFETY: as for x86-64: the kernel reads the iovecs and the bytes
    // they point at, writes no user memory, and changes only x0.
    unsafe {
        std::arch::asm!(
            "svc 0",
            in("x8") libc::SYS_pwritev2 as isize,
            inlateout("x0") fd as isize => n,
            in("x1") iov,
            in("x2") count,
            in("x3") -1_isize,
            in("x4") 0_isize,
            in("x5") libc::RWF_NOWAIT as isize,
            options(nostack, preserves_flags, readonly),
        );
    }
    n
}

/// A second, non-blocking open file description of the file behind `fd`
/// (a terminal, a pipe), opened through `/proc/self/fd`, so that `fd`'s
/// own flags, shared with the rest of the process, stay as they are.
pub(crate) fn reopen_nonblocking(fd: RawFd) -> Option<OwnedFd> {
    let path = format!("/proc/self/fd/{fd}\0");
    let flags = libc::O_WRONLY | libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC;
    // SAFETY: `path` is NUL-terminated and outlives the call.
    let twin = unsafe { libc::open(path.as_ptr().cast(), flags) };
    // SAFETY: a non-negative return is a new descriptor that nothing else
    // owns, so `OwnedFd` may close it.
    (twin >= 0).then(|| unsafe { OwnedFd::from_raw_fd(twin) })
}

/// Whether a pipe's room is read from `fstat` ([`pipe_room`]), and `poll`
/// may report room that rule denies: not on Linux.
pub(crate) const PIPE_ROOM_BY_FSTAT: bool = false;

/// The room a pipe has by what `fstat` reports: Linux reports none, and
/// needs none (`pwritev2` checks for room and writes in one step).
pub(crate) fn pipe_room(_st: &FileStatus) -> Option<u64> {
    None
}

fn check(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}
