//! Platform rules as pure functions: what a platform reports, turned into
//! a decision, with no system call, so that every rule is unit-tested on
//! the machine that runs the tests, whichever platform the rule is for.

/// A pipe on macOS starts with a 16 KiB buffer and grows (to 64 KiB) only
/// once a large write needs it.
pub(crate) const MACOS_SMALL_PIPE: u64 = 16 * 1024;

/// How full a pipe on macOS that has not grown may be before it counts as
/// full: macOS gives a new pipe as little as 512 bytes when pipe memory
/// runs low, yet reports room in it, and a write that trusts the report
/// blocks.
pub(crate) const MACOS_SMALL_PIPE_FULL_AT: u64 = 512;

/// The bytes a write to a pipe on macOS may take without blocking, from
/// what `fstat` reports of it: `held` bytes waiting to be read
/// (`st_size`) in a buffer of `capacity` bytes (`st_blksize`). A pipe that
/// has not grown past 16 KiB and holds 512 bytes or more counts as full.
#[cfg_attr(not(target_vendor = "apple"), allow(dead_code))]
pub(crate) fn macos_pipe_room(held: u64, capacity: u64) -> u64 {
    if capacity <= MACOS_SMALL_PIPE && held >= MACOS_SMALL_PIPE_FULL_AT {
        return 0;
    }
    capacity.saturating_sub(held)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_pipe_has_its_whole_buffer() {
        assert_eq!(macos_pipe_room(0, 16 * 1024), 16 * 1024);
        assert_eq!(macos_pipe_room(0, 64 * 1024), 64 * 1024);
    }

    #[test]
    fn a_small_pipe_is_full_once_it_holds_512_bytes() {
        assert_eq!(macos_pipe_room(511, 16 * 1024), 16 * 1024 - 511);
        assert_eq!(macos_pipe_room(512, 16 * 1024), 0);
        assert_eq!(macos_pipe_room(4096, 16 * 1024), 0);
        assert_eq!(macos_pipe_room(512, 8 * 1024), 0);
    }

    #[test]
    fn a_grown_pipe_reports_its_real_room() {
        assert_eq!(macos_pipe_room(512, 64 * 1024), 64 * 1024 - 512);
        assert_eq!(macos_pipe_room(60 * 1024, 64 * 1024), 4 * 1024);
        assert_eq!(macos_pipe_room(64 * 1024, 64 * 1024), 0);
        // What a pipe never reports, held beyond capacity, is no room.
        assert_eq!(macos_pipe_room(70 * 1024, 64 * 1024), 0);
    }
}
