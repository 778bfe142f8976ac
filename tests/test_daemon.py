"""Daemon threads (call/daemon.rs). On Linux and Windows, CPython before
3.13.8 ends a daemon thread that re-takes the GIL once finalization began, so such a
thread never writes through Python from inside a call: at its return it
hands its lines and records to pylogsink's Python thread and waits for
them. capsys, redirect_stderr and caplog still get every line, and the
exit closes the hand-over before finalization (test_exit.py runs it)."""

from __future__ import annotations

import contextlib
import io
import logging
import sys
import threading

import pytest

import pylogsink
from conftest import logging_destination, records

DEMO = "_pylogsink.runtime"


def in_daemon_thread(target, *args) -> None:  # type: ignore[no-untyped-def]
    thread = threading.Thread(target=target, args=args, daemon=True)
    thread.start()
    thread.join(timeout=60)
    assert not thread.is_alive(), "the daemon thread hung"


@pytest.mark.parametrize("detach", [False, True])
def test_capsys_holds_a_daemon_threads_lines_once_it_is_joined(
    capsys: pytest.CaptureFixture[str], detach: bool
) -> None:
    in_daemon_thread(pylogsink.runtime.log_lines, 50, "info", 100, detach)
    assert len(records(capsys.readouterr().err)) == 50


def test_redirect_stderr_holds_a_long_daemon_calls_lines_in_order() -> None:
    buf = io.StringIO()
    with contextlib.redirect_stderr(buf):
        in_daemon_thread(pylogsink.runtime.log_slowly, 20, 0.02)
    got = [r.split("] ", 1)[1] for r in records(buf.getvalue())]
    assert got == [f"slow line {i}" for i in range(20)]


@pytest.mark.parametrize("count", [50, 5000])
def test_caplog_holds_a_daemon_threads_records_once_it_is_joined(
    caplog: pytest.LogCaptureFixture, count: int
) -> None:
    caplog.set_level(logging.INFO, logger=DEMO)
    with logging_destination(pylogsink.runtime):
        in_daemon_thread(pylogsink.runtime.log_lines, count, "info", 100)
        got = [r for r in caplog.records if r.name == DEMO]
    assert len(got) == count
    assert {r.threadName for r in got} != {"pylogsink-logging"}, "the daemon thread's name, not the deliverer's"


# Linux and Windows: CPython before 3.13.8 ends a daemon thread that
# re-takes the GIL there (pthread_exit, _endthreadex).
HANDS_OVER = sys.platform in ("linux", "win32") and sys.version_info < (3, 13, 8)


@pytest.mark.parametrize("destination", ["stderr", "logging"])
def test_the_daemon_rule_keys_on_the_cpython_version(destination: str, caplog: pytest.LogCaptureFixture) -> None:
    # Before 3.13.8 a daemon thread hands its call's lines and records to
    # pylogsink's thread ("pylogsink-logging"), which writes or handles
    # them; from 3.13.8 (3.14 and 3.15 here) it writes and handles them
    # itself at the call's return, like any other thread. Either way, every
    # line arrives.
    writers: list[str] = []

    class Stream(io.StringIO):
        def write(self, text: str) -> int:
            writers.extend([threading.current_thread().name] * len(records(text)))
            return super().write(text)

    class Handler(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            writers.append(threading.current_thread().name)

    def in_a_named_daemon_thread() -> None:
        thread = threading.Thread(target=pylogsink.runtime.log_lines, args=(5,), name="the-daemon", daemon=True)
        thread.start()
        thread.join(timeout=60)

    if destination == "stderr":
        with contextlib.redirect_stderr(Stream()):
            in_a_named_daemon_thread()
    else:
        handler = Handler()
        logging.getLogger(DEMO).addHandler(handler)
        caplog.set_level(logging.INFO, logger=DEMO)
        try:
            with logging_destination(pylogsink.runtime):
                in_a_named_daemon_thread()
        finally:
            logging.getLogger(DEMO).removeHandler(handler)
    assert len(writers) == 5
    assert set(writers) == ({"pylogsink-logging"} if HANDS_OVER else {"the-daemon"}), sys.version
