//! For unit tests: fd 2 replaced by a pipe of the test's own, so that the
//! routing can be checked without Python and without touching the test
//! runner's own fd 2. The pipe is a POSIX one: on Windows only the
//! helpers that need none are built.
#![cfg_attr(windows, allow(dead_code, unused_imports))]

use super::queue::write_queue;
use crate::control::{set_stall_wait, stall_wait};
use crate::dest::fd;
use crate::sys;
#[cfg(unix)]
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::MutexGuard;
use std::time::Duration;

/// fd 2 replaced by a one-page pipe, the stall wait made short, the
/// process-wide queue emptied, `sys.stderr` taken as the process's own;
/// all put back on drop.
#[cfg(unix)]
pub(crate) struct Pipe {
    read: OwnedFd,
    write: OwnedFd,
    stall_wait: Duration,
    _serial: MutexGuard<'static, ()>,
}

#[cfg(unix)]
impl Pipe {
    pub(crate) fn new() -> Pipe {
        let serial = crate::record::serial();
        let fds = sys::pipe_cloexec().unwrap();
        // SAFETY: two new descriptors that nothing else owns.
        let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        sys::set_nonblocking(read.as_raw_fd());
        // The smallest pipe the kernel makes: one page, where a pipe's
        // size can be set (Linux).
        let size = sys::set_pipe_size(write.as_raw_fd(), 4096);
        assert!(size.is_none_or(|size| size == 4096), "{size:?}");
        // What earlier tests left in the queue goes to /dev/null.
        let null = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/null")
            .unwrap();
        fd::redirect_for_test(null.as_raw_fd());
        assert!(write_queue(Duration::from_secs(1)));
        fd::redirect_for_test(write.as_raw_fd());
        let pipe = Pipe {
            read,
            write,
            stall_wait: stall_wait(),
            _serial: serial,
        };
        set_stall_wait(Duration::from_millis(20));
        // `sys.stderr` is the process's own, and told at each change as a
        // watcher on `sys.__dict__` tells it (the tests tell it
        // themselves): no Python thread is there to look.
        super::queue::stderr_watched();
        super::queue::stderr_seen(false, None);
        pipe
    }

    /// Everything in the pipe now.
    pub(crate) fn read(&self) -> String {
        let mut out = Vec::new();
        let mut buf = [0u8; 8192];
        loop {
            match sys::read(self.read.as_raw_fd(), &mut buf) {
                Ok(n) if n > 0 => out.extend_from_slice(&buf[..n]),
                _ => break,
            }
        }
        String::from_utf8(out).expect("records are UTF-8")
    }

    /// Everything written to the pipe until the writer stops for 200 ms,
    /// read while it is written (more than the pipe holds).
    pub(crate) fn read_all(&self) -> String {
        let mut out = String::new();
        let mut quiet = std::time::Instant::now();
        while quiet.elapsed() < Duration::from_millis(200) {
            let got = self.read();
            if !got.is_empty() {
                quiet = std::time::Instant::now();
                out.push_str(&got);
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        out
    }

    /// Fills the pipe: the next write finds no room.
    pub(crate) fn fill(&self) {
        let page = [b'.'; 4096];
        assert_eq!(sys::write(self.write.as_raw_fd(), &page).unwrap(), 4096);
    }
}

#[cfg(unix)]
impl Drop for Pipe {
    fn drop(&mut self) {
        fd::redirect_for_test(fd::STDERR);
        set_stall_wait(self.stall_wait);
    }
}

/// The messages of the records in `text`, in order.
pub(crate) fn messages(text: &str) -> Vec<&str> {
    text.lines()
        .filter_map(|l| l.split_once("] ").map(|(_, m)| m))
        .collect()
}

/// The records in `text`, each without its head; a record's continuation
/// lines stay with it.
#[cfg_attr(not(feature = "tracing"), allow(dead_code))]
pub(crate) fn records(text: &str) -> Vec<String> {
    let mut records: Vec<String> = Vec::new();
    for line in text.lines() {
        match (
            line.starts_with('['),
            line.split_once("] "),
            records.last_mut(),
        ) {
            (true, Some((_, message)), _) => records.push(message.to_owned()),
            (_, _, Some(last)) => {
                last.push('\n');
                last.push_str(line);
            }
            _ => panic!("text before the first record: {line:?}"),
        }
    }
    records
}

/// `n` Info records for `logging`, messages "000000", "000001"...
pub(crate) fn pending_records(n: usize) -> Vec<crate::dest::pending::PendingRecord> {
    (0..n)
        .map(|i| {
            let message = format!("{i:06}");
            let record = crate::record::Record {
                level: crate::record::Level::Info,
                target: "rt",
                file: "rt.rs",
                line: 1,
                message: message.as_bytes(),
                fields: None,
            };
            let when = std::time::SystemTime::now();
            crate::dest::pending::PendingRecord::new(
                &record,
                when,
                crate::dest::pending::Identity {
                    thread: 1,
                    name: "t".into(),
                    native_id: 1,
                    python: false,
                },
            )
        })
        .collect()
}
