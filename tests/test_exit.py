"""Exit (sink.rs, call.rs): daemon threads that keep logging while Python
finalizes, and lines still kept when the process ends."""

from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

from conftest import python, records

RUNS = 30


def daemon_exit(replaced: bool) -> str:
    """One run; 'ok', 'hung', or the exit status of a crash."""
    cmd = [sys.executable, "-m", "pylogsink.scenarios", "daemon-exit"]
    if replaced:
        cmd.append("--replaced")
    try:
        done = subprocess.run(cmd, capture_output=True, timeout=30)
    except subprocess.TimeoutExpired:
        return "hung"
    return "ok" if done.returncode == 0 else f"exit {done.returncode}"


@pytest.mark.timeout(600)
@pytest.mark.parametrize("replaced", [False, True], ids=["own-stderr", "replaced-stderr"])
def test_daemon_threads_logging_at_exit_never_crash_or_hang(replaced: bool) -> None:
    with ThreadPoolExecutor(2) as pool:
        outcomes = list(pool.map(daemon_exit, [replaced] * RUNS))
    bad = [o for o in outcomes if o != "ok"]
    assert bad == [], f"{len(bad)} of {RUNS} runs failed: {bad}"


def test_lines_kept_by_a_thread_still_in_a_call_at_exit_go_to_fd2() -> None:
    # The thread logs with sys.stderr replaced, so its lines are kept; it
    # never returns from the call, so only the exit can write them.
    done = python(
        """
        import io, sys, threading, time, pylogsink
        sys.stderr = io.StringIO()
        threading.Thread(target=pylogsink.log_then_block, args=(3,), daemon=True).start()
        time.sleep(0.2)
        """
    )
    assert done.returncode == 0
    assert [r.split("] ")[1] for r in records(done.stderr)] == [f"blocked for good after line {i}" for i in range(3)]


def test_lines_queued_outside_calls_go_out_at_exit() -> None:
    done = python(
        """
        import pylogsink
        pylogsink.start_background_logger(3).join()
        """
    )
    assert [r.split("] ")[1] for r in records(done.stderr)] == [f"background line {i}" for i in range(3)]
