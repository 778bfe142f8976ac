"""Worker threads (worker.rs): a call's workers, attached with a
``CallHandle``, log as the call does. The demo runtime's ``fan_out`` hands
one call to native threads that log "worker W line N"; the test extension's
``rayon_fan_out`` does the same from a rayon pool."""

from __future__ import annotations

import contextlib
import io
import logging
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

import pylogsink
import pylogsink_testext as testext
from conftest import logging_destination, lines_while_running, python, records, run_unittest_buffered

WORKERS, LINES = 4, 100


def per_worker(text: str, prefix: str = "worker") -> dict[int, list[int]]:
    """Line numbers by worker, in the order they appear in ``text``."""
    found: dict[int, list[int]] = {}
    for line in text.splitlines():
        words = line.split(f"] {prefix} ", 1)
        if len(words) == 2:
            worker, _, number = words[1].split()[:3]
            found.setdefault(int(worker), []).append(int(number))
    return found


def assert_every_line_in_order(found: dict[int, list[int]]) -> None:
    assert sorted(found) == list(range(WORKERS)), sorted(found)
    for worker, numbers in found.items():
        assert numbers == list(range(LINES)), f"worker {worker}: {numbers[:10]}..."


def test_capsys_receives_every_workers_lines_in_order(capsys: pytest.CaptureFixture[str]) -> None:
    pylogsink.runtime.fan_out(WORKERS, LINES)
    assert_every_line_in_order(per_worker(capsys.readouterr().err))


def test_without_attach_the_workers_lines_still_reach_capsys(capsys: pytest.CaptureFixture[str]) -> None:
    # Outside any call while sys.stderr is replaced: pylogsink's thread
    # writes them to it (the call's return writes what it has not yet),
    # each worker's in order, but not among the call's own lines.
    pylogsink.runtime.fan_out(WORKERS, LINES, attach=False)
    assert_every_line_in_order(per_worker(capsys.readouterr().err))


def test_without_attach_the_workers_lines_reach_capsys_before_the_return(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # The workers finish, then the call waits a second with the GIL
    # released: their lines are in capsys while it still runs.
    stream = sys.stderr
    during: list[str] = []
    watcher = threading.Timer(0.6, lambda: during.append(stream.getvalue()))
    watcher.start()
    pylogsink.runtime.fan_out(WORKERS, LINES, attach=False, hang=1.0)
    watcher.join()
    assert_every_line_in_order(per_worker(during[0]))
    assert_every_line_in_order(per_worker(capsys.readouterr().err))


def test_redirect_stderr_receives_every_workers_lines_when_the_call_returns() -> None:
    buf = io.StringIO()
    with contextlib.redirect_stderr(buf):
        pylogsink.runtime.fan_out(WORKERS, LINES)
    assert_every_line_in_order(per_worker(buf.getvalue()))
    assert len(records(buf.getvalue())) == WORKERS * LINES


def test_unittest_buffer_holds_the_workers_lines(tmp_path: Path) -> None:
    done = run_unittest_buffered(
        tmp_path,
        f"""
        def test_fails(self):
            pylogsink.runtime.fan_out({WORKERS}, {LINES})
            self.fail("on purpose")
        """,
    )
    assert done.returncode == 1
    # Buffered: the lines appear only where unittest prints the test's
    # buffer ("Stderr:"), in the failing test's report among others.
    assert per_worker(done.stderr.split("Stderr:", 1)[0]) == {}
    report = done.stderr.split("AssertionError: on purpose", 1)[1]
    assert_every_line_in_order(per_worker(report))


@pytest.fixture
def to_logging() -> Iterator[None]:
    with logging_destination(pylogsink.runtime):
        yield


def test_the_logging_destination_receives_every_workers_records_at_the_return(
    caplog: pytest.LogCaptureFixture, to_logging: None
) -> None:
    caplog.set_level(logging.INFO)
    pylogsink.runtime.fan_out(WORKERS, LINES)
    got = [r for r in caplog.records if r.getMessage().startswith("worker ")]
    text = "".join(f"] {r.getMessage()}\n" for r in got)
    assert_every_line_in_order(per_worker(text))
    # Each record names the worker thread that logged it, not the caller.
    # (A worker that has ended may leave its thread id to the next one.)
    assert threading.get_ident() not in {r.thread for r in got}
    assert "MainThread" not in {r.threadName for r in got}


def test_with_its_own_stderr_the_workers_lines_are_on_fd2_before_the_call_returns() -> None:
    # The call hangs for 60 s once its workers are done; their lines are
    # already on fd 2.
    code = f"import pylogsink; pylogsink.runtime.fan_out({WORKERS}, {LINES}, hang=60)"
    got = lines_while_running(code, WORKERS * LINES)
    assert_every_line_in_order(per_worker("".join(got)))


POOL_DEADLOCK = """
import threading, pylogsink
pylogsink.runtime.set_sink({sink!r})
stop = threading.Event()

def execute_until_stopped():
    while not stop.is_set():
        pylogsink.runtime.execute()  # takes the backend lock with the GIL held

other = threading.Thread(target=execute_until_stopped)
other.start()
for _ in range(200):
    # Workers log while holding the backend lock. The two threads meet
    # within a few rounds, even on a busy machine.
    pylogsink.runtime.fan_out(4, 25, under_backend=True)
stop.set()
other.join()
print("done")
"""


def test_workers_that_log_under_the_backend_lock_complete() -> None:
    done = python(POOL_DEADLOCK.format(sink="pylogsink"), timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "done"


@pytest.mark.naive
def test_the_same_pool_through_the_naive_sink_hangs() -> None:
    # A worker holds the backend lock and waits for the GIL to write; the
    # other thread holds the GIL and waits for the backend lock.
    with pytest.raises(subprocess.TimeoutExpired):
        python(POOL_DEADLOCK.format(sink="naive"), timeout=15)


@pytest.mark.parametrize("joined_inside", [False, True])
def test_a_worker_that_outlives_its_call_logs_as_outside_any_call(joined_inside: bool) -> None:
    # Logged after the call returned: outside any call, so to sys.stderr as
    # it is then. Joined after redirect_stderr ended (1 s is long past
    # that): on fd 2. Joined inside it: in the redirected stream.
    done = python(
        f"""
        import contextlib, io, time, pylogsink
        buf = io.StringIO()
        with contextlib.redirect_stderr(buf):
            late = pylogsink.runtime.outlive_call(3, {0.2 if joined_inside else 1.0})
            if {joined_inside}:
                late.join()
                # pylogsink's thread writes them a moment later.
                deadline = time.monotonic() + 20
                while "late line 2\\n" not in buf.getvalue() and time.monotonic() < deadline:
                    time.sleep(0.01)
        late.join()
        print(repr(buf.getvalue()))
        """,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    late = [f"late line {i}" for i in range(3)]
    on_fd2 = [r.split("] ", 1)[1] for r in records(done.stderr)]
    in_buf = [r.split("] ", 1)[1] for r in records(eval(done.stdout))]
    assert (in_buf, on_fd2) == ((late, []) if joined_inside else ([], late))


def test_a_rayon_pool_attached_to_the_call(capsys: pytest.CaptureFixture[str]) -> None:
    assert testext.rayon_fan_out(WORKERS * LINES) == WORKERS * LINES
    err = capsys.readouterr().err
    items = sorted(int(r.rsplit(" ", 1)[1]) for r in records(err) if "] item " in r)
    assert items == list(range(WORKERS * LINES))
