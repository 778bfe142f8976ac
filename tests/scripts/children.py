"""For scenarios that fork: waiting for a child that may hang."""

from __future__ import annotations

import os
import time


def exit_code_within(pid: int, seconds: float) -> int | None:
    """The exit code of child `pid` once it ends, or None if it did not end
    within `seconds` (it is killed then: it hung)."""
    deadline = time.monotonic() + seconds
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            return None
        time.sleep(0.001)
