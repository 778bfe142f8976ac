"""Live delivery (core/live.rs, call/logging.rs): the records of a call
that releases the GIL reach ``logging`` while the call runs, in the order
logged, each once, in the caller's ``contextvars`` context; a call that
holds the GIL throughout delivers them at its return, as nothing else can
run Python meanwhile."""

from __future__ import annotations

import contextlib
import contextvars
import datetime
import json
import logging
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import pytest

import pylogsink
from conftest import WINDOWS_ALARM, logging_destination, python, records

DEMO = "_pylogsink.runtime"
REQUEST = contextvars.ContextVar("request", default="none")


class Seen(logging.Handler):
    """Keeps each record's message, how long after it was logged it arrived
    (seconds), and the request id a context variable held where it was
    handled."""

    def __init__(self, delay: float = 0.0) -> None:
        super().__init__()
        self.delay = delay
        self.got: list[tuple[float, str, str]] = []
        self.threads: list[int | None] = []

    def emit(self, record: logging.LogRecord) -> None:
        if self.delay:
            time.sleep(self.delay)  # a file or network handler
        self.got.append((time.time() - record.created, record.getMessage(), REQUEST.get()))
        self.threads.append(record.thread)


@pytest.fixture
def seen() -> Iterator[Seen]:
    handler = Seen()
    logger = logging.getLogger(DEMO)
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        with logging_destination(pylogsink.runtime):
            yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(logging.NOTSET)


def test_a_long_call_with_the_gil_released_delivers_while_it_runs(seen: Seen) -> None:
    pylogsink.runtime.log_slowly(30, 0.05)  # 1.5 s
    messages = [m for _, m, _ in seen.got]
    assert messages == [f"slow line {i}" for i in range(30)], "all, in order, once"
    # Handed over live: well before the return, which comes 1.5 s after
    # the first line.
    before = [m for waited, m, _ in seen.got if waited < 0.3]
    # Each line is handed over within about 10 ms of being logged; the
    # last ones may wait for the return.
    assert len(before) >= 20, before


def test_a_call_that_holds_the_gil_delivers_at_its_return(seen: Seen) -> None:
    pylogsink.runtime.log_slowly(10, 0.02, detach=False)
    assert [m for _, m, _ in seen.got] == [f"slow line {i}" for i in range(10)]
    # The first line waited for the whole call (0.2 s), the last very little.
    assert seen.got[0][0] >= 0.17, "none before the return"


def test_records_delivered_live_see_the_callers_context(seen: Seen) -> None:
    token = REQUEST.set("req-42")
    try:
        pylogsink.runtime.log_slowly(20, 0.02)
    finally:
        REQUEST.reset(token)
    assert [r for _, _, r in seen.got] == ["req-42"] * 20
    assert sum(waited < 0.2 for waited, _, _ in seen.got) >= 10, "most handed over live"


def test_order_holds_with_a_slow_handler_and_a_fast_call(seen: Seen) -> None:
    """A handler that releases the GIL for a millisecond per record, and a
    call that logs faster than that: the thread's live deliveries and the
    return's share the records without reordering or repeating any."""
    seen.delay = 0.001
    pylogsink.runtime.log_slowly(400, 0.0005)
    assert [m for _, m, _ in seen.got] == [f"slow line {i}" for i in range(400)]


def test_each_thread_keeps_its_own_order_when_several_calls_run_at_once(seen: Seen) -> None:
    threads = [threading.Thread(target=pylogsink.runtime.log_slowly, args=(50, 0.002)) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    by_thread: dict[int | None, list[str]] = {}
    for thread, (_, m, _) in zip(seen.threads, seen.got):
        by_thread.setdefault(thread, []).append(m)
    assert sorted(by_thread) == sorted(t.ident for t in threads)
    assert all(ms == [f"slow line {i}" for i in range(50)] for ms in by_thread.values())


def logged_at(line: str) -> float:
    """The time a line was logged, from its own timestamp."""
    stamp = datetime.datetime.strptime(line[1:28], "%Y-%m-%dT%H:%M:%S.%fZ")
    return stamp.replace(tzinfo=datetime.timezone.utc).timestamp()


class Recorder:
    """A replaced ``sys.stderr`` that notes how long after it was logged
    each line came (seconds)."""

    def __init__(self) -> None:
        self.writes: list[tuple[float, str]] = []
        self.waited: list[float] = []

    def write(self, text: str) -> int:
        now = time.time()
        self.writes.append((now, text))
        self.waited += [now - logged_at(line) for line in text.splitlines()]
        return len(text)

    def flush(self) -> None:
        pass

    def lines(self) -> list[str]:
        return [line.split("] ", 1)[1] for _, text in self.writes for line in text.splitlines()]


def test_a_replaced_stderr_gets_a_long_calls_lines_while_it_runs() -> None:
    stream = Recorder()
    with contextlib.redirect_stderr(stream):
        pylogsink.runtime.log_slowly(30, 0.05)  # 1.5 s, the GIL released
    assert stream.lines() == [f"slow line {i}" for i in range(30)], "all, in order, once"
    # Written live: well before the return, which comes 1.5 s after the
    # first line.
    assert sum(waited < 0.3 for waited in stream.waited) >= 20, stream.waited


def test_a_replaced_stderr_gets_the_lines_of_a_call_holding_the_gil_at_its_return() -> None:
    stream = Recorder()
    with contextlib.redirect_stderr(stream):
        pylogsink.runtime.log_slowly(10, 0.02, detach=False)
    assert stream.lines() == [f"slow line {i}" for i in range(10)]
    # The first line waited for the whole call (0.2 s): none before the return.
    assert stream.waited[0] >= 0.17, stream.waited


def test_capsys_gets_every_line_of_a_long_call_once(capsys: pytest.CaptureFixture[str]) -> None:
    pylogsink.runtime.log_slowly(200, 0.001)
    err = capsys.readouterr().err
    assert [line.split("] ", 1)[1] for line in err.splitlines()] == [f"slow line {i}" for i in range(200)]



def test_a_native_thread_outside_any_call_follows_a_stream_replaced_while_no_call_runs() -> None:
    # pylogsink's thread runs (a first call found sys.stderr replaced), the
    # last call saw the process's own stderr; then sys.stderr is replaced
    # and no call is made. A native thread logs 100 lines, 10 ms apart:
    # pylogsink asks again within 100 ms of the first, so the lines after
    # that go to the new stream; none is lost or written twice.
    done = python(
        """
        import contextlib, io, sys, time, pylogsink
        with contextlib.redirect_stderr(io.StringIO()):
            pylogsink.runtime.noop_in_call()
        pylogsink.runtime.noop_in_call()
        buf = io.StringIO()
        sys.stderr = buf
        logger = pylogsink.runtime.start_background_logger(100, 0.01)
        deadline = time.monotonic() + 20
        while "background line 99\\n" not in buf.getvalue() and time.monotonic() < deadline:
            time.sleep(0.01)
        sys.stderr = sys.__stderr__
        logger.join()
        print(repr(buf.getvalue()))
        """
    )
    assert done.returncode == 0, done.stderr
    to_stream = [r.split("] ", 1)[1] for r in records(eval(done.stdout))]
    to_fd2 = [r.split("] ", 1)[1] for r in records(done.stderr)]
    assert sorted(to_fd2 + to_stream, key=lambda m: int(m.split()[-1])) == [f"background line {i}" for i in range(100)]
    assert len(to_stream) >= 80, (len(to_fd2), len(to_stream))
    assert to_fd2 == [f"background line {i}" for i in range(len(to_fd2))], "the first ones, in order"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_pylogsink_thread_does_not_wake_while_idle() -> None:
    # Idle, the delivery thread sleeps until something waits for Python: it
    # is switched in no more than a couple of times in 2 s (a thread that
    # polled every 20 ms would be switched in about 100 times).
    done = python(
        """
        import logging, threading, time, pylogsink
        pylogsink.runtime.set_log_destination("logging")
        logging.getLogger().setLevel(logging.INFO)
        pylogsink.runtime.log_lines(3)
        time.sleep(0.3)
        (thread,) = [t for t in threading.enumerate() if t.name == "pylogsink-logging"]
        def switches():
            with open(f"/proc/self/task/{thread.native_id}/status") as status:
                return sum(int(line.split()[1]) for line in status if "ctxt_switches" in line)
        before = switches()
        time.sleep(2)
        print(switches() - before)
        """
    )
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) <= 3, done.stdout


SHORT_CALLS = """
import logging, time, pylogsink
handled = []
class Keep(logging.Handler):
    def emit(self, record):
        handled.append(record.getMessage())
logging.getLogger().addHandler(Keep())
logging.getLogger().setLevel(logging.INFO)
pylogsink.runtime.set_log_destination("logging")
pylogsink.runtime.log_slowly(1, 0.0, detach=False)
time.sleep(0.3)
before = pylogsink.runtime.log_stats()["python_wakes"]
for _ in range({calls}):
    pylogsink.runtime.log_slowly({lines}, {interval}, detach={detach})
print(pylogsink.runtime.log_stats()["python_wakes"] - before, len(handled))
"""


def test_short_calls_in_a_row_do_not_trade_the_gil_with_pylogsinks_thread() -> None:
    # 150 calls of about 3 ms that hold the GIL and log: each returns
    # before its records waited out the gathering (10 ms) and hands them
    # over itself, so pylogsink's thread has no reason to ask for the GIL,
    # which would take it from the caller at every switch interval.
    done = python(SHORT_CALLS.format(calls=150, lines=3, interval=0.001, detach=False), timeout=120)
    assert done.returncode == 0, done.stderr
    wakes, handled = map(int, done.stdout.split())
    assert handled == 1 + 150 * 3
    assert wakes <= 15, wakes
    # The count is real: a long call that releases the GIL is delivered
    # live, by that thread.
    done = python(SHORT_CALLS.format(calls=1, lines=40, interval=0.005, detach=True), timeout=120)
    assert done.returncode == 0, done.stderr
    wakes, handled = map(int, done.stdout.split())
    assert handled == 41
    assert wakes >= 5, wakes


@pytest.mark.parametrize("destination", ["stderr", "logging"])
def test_a_native_thread_started_at_import_reaches_a_replaced_stderr_and_logging(destination: str) -> None:
    # The test extension starts a thread at import that logs "tick N" every
    # 20 ms, outside any call, 100 times. With the stderr destination the
    # ticks logged while redirect_stderr is on land in its stream, the
    # others on fd 2, each once; with `logging`, a handler added after the
    # import gets all 100, or all but the first where that was handed over
    # before the handler was there.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PYLOGSINK_"))}
    env.update(PYLOGSINK_TESTEXT_TICKS="100", PYLOGSINK_TESTEXT_DESTINATION=destination)
    done = python(
        """
        import contextlib, io, json, logging, os, time
        import pylogsink_testext as t
        handled = []
        class Keep(logging.Handler):
            def emit(self, record):
                handled.append(record.getMessage())
        logging.getLogger("testext.ticker").addHandler(Keep())
        logging.getLogger("testext.ticker").setLevel(logging.WARNING)
        buf = io.StringIO()
        with contextlib.redirect_stderr(buf):
            t.log_at("warn", "app", "a call that finds sys.stderr replaced")
            time.sleep(1.0)
        # The ticker is done (its 100 ticks and the call's line counted),
        # and with `logging` its last tick handled.
        to_logging = os.environ["PYLOGSINK_TESTEXT_DESTINATION"] == "logging"
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and (
            t.log_stats()["warn"] < 101 or to_logging and "tick 99" not in handled
        ):
            time.sleep(0.01)
        t.log_at("warn", "app", "a last call")
        print(json.dumps([buf.getvalue(), handled]))
        """,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    text, handled = json.loads(done.stdout)
    ticks = [f"tick {n}" for n in range(100)]

    def tick_messages(stream: str) -> list[str]:
        return [r.split("] ", 1)[1] for r in records(stream) if " testext::ticker " in r]

    if destination == "logging":
        # A tick handed over before the handler was added (at the main
        # thread's first safe point, still inside the import) went where
        # logging sent it then, as a Python thread's record would: to its
        # last resort, on fd 2, as the bare message.
        early = [] if handled[:1] == ["tick 0"] else ["tick 0"]
        assert handled == ticks[len(early) :]
        assert [line for line in done.stderr.splitlines() if line.startswith("tick ")] == early
        assert tick_messages(done.stderr) == [] and tick_messages(text) == []
    else:
        in_stream, on_fd2 = tick_messages(text), tick_messages(done.stderr)
        assert len(in_stream) >= 30, (len(in_stream), len(on_fd2))
        assert sorted(in_stream + on_fd2, key=lambda m: int(m.split()[1])) == ticks


@pytest.mark.parametrize("force_color", ["", "1"], ids=["plain", "CLICOLOR_FORCE"])
def test_a_native_thread_follows_redirect_stderr_with_no_call_made(force_color: str) -> None:
    # No call ever ran: pylogsink's thread started at init. A watcher on
    # sys.__dict__ tells each replacement (CPython 3.12+); on 3.11 a line
    # whose answer is older than 100 ms waits, with the lines after it,
    # for pylogsink's thread to look. Either way every line goes to the
    # new stream.
    # None ever has colour, whatever CLICOLOR_FORCE says (ipykernel sets it).
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PYLOGSINK_", "NO_COLOR", "CLICOLOR"))}
    if force_color:
        env["CLICOLOR_FORCE"] = force_color
    done = python(
        """
        import contextlib, io, json, time, pylogsink
        buf = io.StringIO()
        with contextlib.redirect_stderr(buf):
            pylogsink.runtime.start_background_logger(10, 0.02).join()
            deadline = time.monotonic() + 20
            while "background line 9\\n" not in buf.getvalue() and time.monotonic() < deadline:
                time.sleep(0.01)
        print(json.dumps([buf.getvalue(), pylogsink.runtime.stderr_check()]))
        """,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    text, check = json.loads(done.stdout)
    in_stream = [r.split("] ", 1)[1] for r in records(text)]
    on_fd2 = [r.split("] ", 1)[1] for r in records(done.stderr)]
    lines = [f"background line {i}" for i in range(10)]
    assert "\x1b" not in text
    assert (in_stream, on_fd2) == (lines, []), check


def test_a_burst_outside_any_call_follows_a_stream_replaced_with_no_call() -> None:
    # sys.stderr replaced with no call made, long after the last answer
    # about it (more than 100 ms: stale on CPython 3.11, which has no dict
    # watcher), then a native thread logs 10 lines at once: all 10 reach
    # the new stream, none fd 2, on every CPython.
    done = python(
        """
        import io, json, sys, time, pylogsink
        time.sleep(0.3)
        buf = io.StringIO()
        sys.stderr = buf
        pylogsink.runtime.start_background_logger(10, 0).join()
        deadline = time.monotonic() + 20
        while "background line 9\\n" not in buf.getvalue() and time.monotonic() < deadline:
            time.sleep(0.01)
        sys.stderr = sys.__stderr__
        print(json.dumps([buf.getvalue(), pylogsink.runtime.stderr_check()]))
        """,
        env={k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PYLOGSINK_"))},
    )
    assert done.returncode == 0, done.stderr
    text, check = json.loads(done.stdout)
    in_stream = [r.split("] ", 1)[1] for r in records(text)]
    on_fd2 = [r.split("] ", 1)[1] for r in records(done.stderr)]
    assert (in_stream, on_fd2) == ([f"background line {i}" for i in range(10)], []), check


FLUSHED = """
import json, logging, sys, time, pylogsink

arrived = []

class Timed:
    def write(self, text):
        arrived.extend((time.monotonic(), line) for line in text.splitlines())
    def flush(self):
        pass

class Keep(logging.Handler):
    def emit(self, record):
        arrived.append((time.monotonic(), record.getMessage()))

if sys.argv[1] == "logging":
    pylogsink.runtime.set_log_destination("logging")
    logging.getLogger().addHandler(Keep())
    logging.getLogger().setLevel(logging.INFO)
else:
    sys.stderr = Timed()
pylogsink.runtime.log_slowly(60, 0.02, detach=False, flush=None if sys.argv[2] == "none" else sys.argv[2])
returned = time.monotonic()
sys.stderr = sys.__stderr__
lines = [line.split("] ", 1)[-1] for _, line in arrived]
print(json.dumps({"lines": lines, "first_before_return": returned - arrived[0][0]}))
"""


@pytest.mark.parametrize("destination", ["stderr", "logging"])
@pytest.mark.parametrize("flush", ["raise", "lines", "none"])
def test_a_call_holding_the_gil_shows_its_progress_at_each_flush(destination: str, flush: str) -> None:
    # 60 steps of 20 ms with the GIL held. With pylogsink::flush(py) after
    # each step ("raise"), or pylogsink::flush_lines() from a helper that
    # has no `py` ("lines"), the first line is in the replaced stream or the
    # handler about 1.2 s before the call returns; without, all come at the
    # return.
    done = subprocess.run(
        [sys.executable, "-c", FLUSHED, destination, flush], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    assert got["lines"] == [f"slow line {i}" for i in range(60)]
    if flush != "none":
        assert got["first_before_return"] >= 0.5, got["first_before_return"]
    else:
        assert got["first_before_return"] < 0.1, got["first_before_return"]


# Windows has no SIGALRM: there the child raises SIGINT in itself 0.3 s
# into the call (conftest.WINDOWS_ALARM).
if sys.platform == "win32":
    ALARM = WINDOWS_ALARM + "signal.signal(signal.SIGINT, interrupt)\n"
    START_ALARM = "alarm(signal.SIGINT, 0.3)"
else:
    ALARM = "signal.signal(signal.SIGALRM, interrupt)\n"
    START_ALARM = "signal.setitimer(signal.ITIMER_REAL, 0.3)"

INTERRUPTED = """
import io, json, signal, sys, time, traceback, pylogsink
def interrupt(signum, frame):
    raise KeyboardInterrupt("from the alarm")
{alarm}arrived = []
class Timed(io.StringIO):
    def write(self, text):
        arrived.extend((time.monotonic(), line) for line in text.splitlines())
        return len(text)
sys.stderr = Timed()
{start_alarm}
try:
    pylogsink.runtime.log_slowly(40, 0.02, detach=False, flush=sys.argv[1])
    outcome, frames = "returned", []
except KeyboardInterrupt as e:
    outcome, frames = repr(e), [f.name for f in traceback.extract_tb(e.__traceback__)]
returned = time.monotonic()
sys.stderr = sys.__stderr__
lines = [line.split("] ", 1)[-1] for _, line in arrived]
live = sum(1 for t, _ in arrived if t < returned - 0.1)
print(json.dumps({"outcome": outcome, "frames": frames, "lines": lines, "live": live}))
"""


@pytest.mark.parametrize("flush", ["raise", "lines"])
def test_a_pending_keyboard_interrupt_at_a_flush_is_the_extensions_choice(flush: str) -> None:
    # A SIGALRM handler raises KeyboardInterrupt 0.3 s into a 0.8 s call
    # that holds the GIL. pylogsink::flush(py) raises it at the next step
    # and the loop stops there; pylogsink::flush_lines() keeps the lines
    # moving, the loop runs to its end, and the call's return raises the
    # same exception. Either way every line logged is in the stream, in
    # order, but for the one whose write the handler interrupted, which
    # went to fd 2 (a repeat is better than a loss); with flush_lines most
    # arrived before the return.
    code = INTERRUPTED.replace("{alarm}", ALARM).replace("{start_alarm}", START_ALARM)
    done = subprocess.run([sys.executable, "-c", code, flush], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    assert got["outcome"] == "KeyboardInterrupt('from the alarm')"
    # Its traceback is the caller's: not the stream's write it interrupted
    # (flush_lines meets it only there; flush may meet it in the handler).
    assert "write" not in got["frames"] and got["frames"][0] == "<module>", got["frames"]
    if flush == "lines":
        assert got["frames"] == ["<module>"], got["frames"]
    in_stream = [int(line.rsplit(" ", 1)[1]) for line in got["lines"]]
    on_fd2 = [int(r.rsplit(" ", 1)[1]) for r in records(done.stderr)]
    assert in_stream == sorted(in_stream)
    logged = sorted(set(in_stream + on_fd2))
    assert logged == list(range(len(logged)))
    if flush == "raise":
        assert 5 <= len(logged) < 40, logged
    else:
        assert len(logged) == 40, logged
        assert got["live"] >= 20, got["live"]



FLUSH_LINES_DETACHED = """
import contextlib, sys, threading, pylogsink
stop = False
def spin():
    n = 0
    while not stop:
        n += 1
class Stream:
    parts, by_main = [], 0
    def write(self, text):
        if threading.current_thread() is threading.main_thread():
            Stream.by_main += 1
        Stream.parts.append(text)
        return len(text)
    def flush(self):
        pass
spinner = threading.Thread(target=spin)
spinner.start()
with contextlib.redirect_stderr(Stream()):
    pylogsink.runtime.log_slowly(200, 0.001, detach=True, flush="lines")
stop = True
spinner.join()
print("".join(Stream.parts).count("slow line"), Stream.by_main)
"""


def test_flush_lines_with_the_gil_released_does_nothing_while_another_thread_holds_it() -> None:
    # On CPython 3.11 the current thread state is that of whichever thread
    # holds the GIL (here a Python thread that spins): flush_lines in the
    # part of a call that released the GIL must not take it for its own and
    # write from there. The call's thread writes at its return only (one
    # write); the rest comes from pylogsink's thread.
    done = python(FLUSH_LINES_DETACHED, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    lines, by_main = map(int, done.stdout.split())
    assert lines == 200 and by_main <= 1, done.stdout
