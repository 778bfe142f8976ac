"""Daemon threads (call/daemon.rs). On Linux, CPython before 3.13.8 ends a
daemon thread that re-takes the GIL once finalization began, so such a
thread never writes through Python from inside a call: at its return it
hands its lines and records to pylogsink's Python thread and waits for
them. capsys, redirect_stderr and caplog still get every line, and the
exit closes the hand-over before finalization (test_exit.py runs it)."""

from __future__ import annotations

import contextlib
import io
import logging
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
    in_daemon_thread(pylogsink.log_lines, 50, "info", 100, detach)
    assert len(records(capsys.readouterr().err)) == 50


def test_redirect_stderr_holds_a_long_daemon_calls_lines_in_order() -> None:
    buf = io.StringIO()
    with contextlib.redirect_stderr(buf):
        in_daemon_thread(pylogsink.log_slowly, 20, 0.02)
    got = [r.split("] ", 1)[1] for r in records(buf.getvalue())]
    assert got == [f"slow line {i}" for i in range(20)]


@pytest.mark.parametrize("count", [50, 5000])
def test_caplog_holds_a_daemon_threads_records_once_it_is_joined(
    caplog: pytest.LogCaptureFixture, count: int
) -> None:
    caplog.set_level(logging.INFO, logger=DEMO)
    with logging_destination(pylogsink):
        in_daemon_thread(pylogsink.log_lines, count, "info", 100)
        got = [r for r in caplog.records if r.name == DEMO]
    assert len(got) == count
    assert {r.threadName for r in got} != {"pylogsink-logging"}, "the daemon thread's name, not the deliverer's"
