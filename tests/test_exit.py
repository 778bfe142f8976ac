"""Exit (sink.rs, call.rs): daemon threads that keep logging while Python
finalizes, and lines still kept when the process ends."""

from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

from conftest import INTERRUPTED, python, records

# Fewer on Windows, where a process takes about a second to start under
# wine: 15 runs catch an exit that hangs one run in six 94 times in 100.
RUNS = 15 if sys.platform == "win32" else 60


def daemon_exit(replaced: bool, destination: str = "stderr") -> str:
    """One run: 'ok', 'hung', or how it crashed."""
    cmd = [sys.executable, "-m", "pylogsink.scenarios", "daemon-exit", "--destination", destination]
    if replaced:
        cmd.append("--replaced")
    try:
        done = subprocess.run(cmd, capture_output=True, timeout=30)
    except subprocess.TimeoutExpired:
        return "hung"
    if done.returncode == 0:
        return "ok"
    said = [line for line in done.stderr.decode(errors="replace").splitlines() if not line.startswith("[")]
    return f"exit {done.returncode}: {said[-3:]}"


@pytest.mark.timeout(600)
@pytest.mark.parametrize("destination", ["stderr", "logging"])
@pytest.mark.parametrize("replaced", [False, True], ids=["own-stderr", "replaced-stderr"])
def test_daemon_threads_logging_at_exit_never_crash_or_hang(replaced: bool, destination: str) -> None:
    with ThreadPoolExecutor(2) as pool:
        outcomes = list(pool.map(daemon_exit, [replaced] * RUNS, [destination] * RUNS))
    bad = [o for o in outcomes if o != "ok"]
    assert bad == [], f"{len(bad)} of {RUNS} runs failed: {bad}"


@pytest.mark.timeout(300)
def test_the_naive_sink_crashes_at_exit_only_before_3_13_8() -> None:
    # The demo's exit table, both sides: before 3.13.8 CPython ends a
    # daemon thread that re-takes the GIL after finalization began with
    # pthread_exit, mid-write through the naive sink, and the process
    # crashes; from 3.13.8 on (3.14, 3.15 here) such a thread hangs quietly
    # and the process exits.
    cmd = [sys.executable, "-m", "pylogsink.scenarios", "daemon-exit", "--sink", "naive", "--replaced"]
    codes = [subprocess.run(cmd, capture_output=True, timeout=30).returncode for _ in range(10)]
    if sys.platform == "linux" and sys.version_info < (3, 13, 8):
        assert sum(code != 0 for code in codes) >= 5, codes
    else:
        assert codes == [0] * 10


def test_lines_kept_by_a_thread_still_in_a_call_at_exit_are_never_lost() -> None:
    # The thread logs with sys.stderr replaced, so its lines are kept; it
    # never returns from the call. pylogsink's thread may write them to the
    # stream while the call runs (it released the GIL); what it has not
    # written by the exit, the exit writes to fd 2. The stream's text is
    # printed last, after pylogsink's exit (atexit runs the first
    # registered last).
    done = python(
        """
        import atexit, io, sys, threading, time
        buf = io.StringIO()
        atexit.register(lambda: print(repr(buf.getvalue())))
        import pylogsink
        sys.stderr = buf
        threading.Thread(target=pylogsink.runtime.log_then_block, args=(3,), daemon=True).start()
        deadline = time.monotonic() + 10
        while pylogsink.runtime.log_stats()["emitted"] < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        """
    )
    assert done.returncode == 0, done.stderr
    on_fd2 = [r.split("] ")[1] for r in records(done.stderr)]
    in_stream = [r.split("] ")[1] for r in records(eval(done.stdout))]
    assert in_stream + on_fd2 == [f"blocked for good after line {i}" for i in range(3)]


def test_lines_queued_outside_calls_go_out_at_exit() -> None:
    done = python(
        """
        import pylogsink
        pylogsink.runtime.start_background_logger(3).join()
        """
    )
    assert [r.split("] ")[1] for r in records(done.stderr)] == [f"background line {i}" for i in range(3)]


SLOW_HANDLER_EXIT = """
import logging, sys, time
import pylogsink

pylogsink.runtime.set_log_destination("logging")
pylogsink.runtime.set_log_filter("trace")

class Slow(logging.Handler):
    # A network or file handler: 5 ms a record.
    def emit(self, record):
        time.sleep(0.005)
        print("D", record.getMessage(), flush=True)

logging.getLogger().addHandler(Slow())
logging.getLogger().setLevel(logging.INFO)
pylogsink.runtime.noop_in_call()
pylogsink.runtime.start_background_logger(2000).join()
if sys.argv[1] == "interrupt":
    raise KeyboardInterrupt
"""


def slow_handler_exit(how: str) -> tuple[int, int]:
    """Exits while 2000 records wait for a 5 ms handler; returns the exit
    status and how many records were delivered, written as text or counted
    in a note."""
    done = subprocess.run(
        [sys.executable, "-c", SLOW_HANDLER_EXIT, how], capture_output=True, text=True, timeout=60
    )
    delivered = [line for line in done.stdout.splitlines() if line.startswith("D background line")]
    as_text = [r for r in records(done.stderr) if "background line" in r]
    noted = sum(
        int(note.split()[0])
        for note in [line[2:] for line in done.stdout.splitlines()]
        + [line.removeprefix("[pylogsink] ") for line in done.stderr.splitlines()]
        # Records that became text can be left out of the 64 KiB of text
        # that waits for fd 2: their note says lines.
        if (" records (" in note or " lines (" in note) and "left out here" in note
    )
    return done.returncode, len(delivered) + len(as_text) + noted


@pytest.mark.timeout(600)
def test_exit_with_a_slow_handler_never_aborts_and_loses_nothing() -> None:
    outcomes = [slow_handler_exit("normal") for _ in range(20)]
    assert outcomes == [(0, 2000)] * 20


@pytest.mark.timeout(300)
def test_ctrl_c_at_exit_with_a_slow_handler_keeps_its_status() -> None:
    outcomes = [slow_handler_exit("interrupt") for _ in range(5)]
    assert outcomes == [(INTERRUPTED, 2000)] * 5


# A replaced sys.stderr whose write takes 2 s (a stream that sends its text
# over a network, or waits on a lock): pylogsink's thread is inside that
# write, with 50 lines of a native thread, when the program ends. The exit
# gives the thread 1 s; then the lines of the write still under way go to
# fd 2, so they reach the stream (the write ended meanwhile) or fd 2.
SLOW_STREAM_EXIT = """
import os, sys, time, pylogsink

class Slow:
    def write(self, text):
        time.sleep(2)
        os.write(1, text.encode())
        return len(text)

    def flush(self):
        pass

sys.stderr = Slow()
pylogsink.runtime.start_background_logger(50).join()
time.sleep(0.1)  # pylogsink's thread is in the write now
"""


def test_lines_in_a_slow_stream_write_at_exit_reach_the_stream_or_fd2() -> None:
    for _ in range(6):
        done = subprocess.run([sys.executable, "-c", SLOW_STREAM_EXIT], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        arrived = {r.split("] ")[1] for r in records(done.stdout) + records(done.stderr)}
        assert arrived == {f"background line {i}" for i in range(50)}, (done.stdout, done.stderr)
