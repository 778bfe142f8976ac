"""The crash handler (crash.rs): lines that wait in memory when the
process dies of SIGSEGV or SIGABRT are written to fd 2 first, then the
signal takes its course (faulthandler's traceback included). On Windows
the segfault is an access violation, an exception nobody handles."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ABORTED, SEGFAULT, SMALL_BUDGET_ENV, records

# How the child ends: killed by the signal (Linux), or its Windows status.
ENDS = {"segv": SEGFAULT, "abort": ABORTED}

CRASH_UNDER_REDIRECT = """
import contextlib, io, pylogsink
with contextlib.redirect_stderr(io.StringIO()):
    pylogsink.runtime.crash({kind!r})
"""

CRASH_WITH_LOGGING = """
import logging, io, pylogsink
logging.basicConfig(level=logging.INFO, stream=io.StringIO())
pylogsink.runtime.set_log_destination("logging")
pylogsink.runtime.crash({kind!r})
"""


def crash(code: str, faulthandler: bool = False, **env: str) -> subprocess.CompletedProcess[str]:
    flags = ["-X", "faulthandler"] if faulthandler else []
    child_env = {k: v for k, v in os.environ.items() if not k.startswith("PYLOGSINK_")}
    child_env.update(env)
    return subprocess.run(
        [sys.executable, *flags, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        env=child_env,
    )


def messages(stderr: str) -> list[str]:
    return [r.split("] ", 1)[1] for r in records(stderr)]


BEFORE = [f"before the crash: line {i}" for i in range(3)]


@pytest.mark.parametrize("kind", ["segv", "abort"])
@pytest.mark.parametrize("code", [CRASH_UNDER_REDIRECT, CRASH_WITH_LOGGING], ids=["redirect_stderr", "logging"])
def test_the_calls_waiting_lines_reach_fd2_and_the_signal_is_kept(kind: str, code: str) -> None:
    done = crash(code.format(kind=kind))
    assert done.returncode == ENDS[kind], done.stderr
    assert messages(done.stderr) == BEFORE


@pytest.mark.skipif(
    sys.platform == "win32",
    reason="on Windows faulthandler catches an access violation first (a vectored handler): "
    "test_faulthandlers_traceback_and_the_lines_on_windows",
)
@pytest.mark.parametrize("kind", ["segv", "abort"])
def test_faulthandlers_traceback_follows_the_lines(kind: str) -> None:
    done = crash(CRASH_UNDER_REDIRECT.format(kind=kind), faulthandler=True)
    assert done.returncode == ENDS[kind], done.stderr
    assert messages(done.stderr) == BEFORE
    last_line = done.stderr.index(BEFORE[-1])
    traceback = done.stderr.index("Fatal Python error")
    assert last_line < traceback, done.stderr
    assert "in <module>" in done.stderr[traceback:]


def msvcrt_build() -> bool:
    """Whether pylogsink's extension was built with MinGW against
    msvcrt.dll, the C runtime whose abort() and SIGABRT handlers it uses,
    rather than the UCRT, where CPython (and so faulthandler) installs its
    own."""
    import pylogsink._pylogsink

    return b"msvcrt.dll" in Path(pylogsink._pylogsink.__file__).read_bytes().lower()


@pytest.mark.skipif(sys.platform != "win32", reason="Windows' order: test_faulthandlers_traceback_follows_the_lines")
@pytest.mark.parametrize("kind", ["segv", "abort"])
def test_faulthandlers_traceback_and_the_lines_on_windows(kind: str) -> None:
    # faulthandler catches an access violation with a vectored handler,
    # which Windows runs before any filter for unhandled exceptions
    # (pylogsink's): its traceback comes first, then the lines. abort()
    # raises SIGABRT, whose handlers run in turn, pylogsink's first (it was
    # installed last).
    if kind == "abort" and msvcrt_build():
        pytest.skip("a MinGW build's abort() is msvcrt.dll's, and faulthandler's SIGABRT handler is the UCRT's")
    done = crash(CRASH_UNDER_REDIRECT.format(kind=kind), faulthandler=True)
    assert done.returncode == ENDS[kind], done.stderr
    assert messages(done.stderr) == BEFORE
    first_line, last_line = done.stderr.index(BEFORE[0]), done.stderr.index(BEFORE[-1])
    if kind == "segv":
        traceback = done.stderr.index("Windows fatal exception: access violation")
        assert traceback < first_line, done.stderr
        assert "in <module>" in done.stderr[traceback:first_line]
    else:
        traceback = done.stderr.index("Fatal Python error: Aborted")
        assert last_line < traceback, done.stderr
        assert "in <module>" in done.stderr[traceback:]


@pytest.mark.parametrize("code", [CRASH_UNDER_REDIRECT, CRASH_WITH_LOGGING], ids=["redirect_stderr", "logging"])
def test_without_the_crash_handler_the_lines_are_lost(code: str) -> None:
    # What the handler fixes: the same crash with the builder's
    # crash_handler(false) leaves nothing on fd 2.
    done = crash(code.format(kind="segv"), PYLOGSINK_DEMO_CRASH_HANDLER="off")
    assert done.returncode == SEGFAULT
    assert messages(done.stderr) == []


def test_an_unknown_crash_is_refused() -> None:
    import pylogsink

    with pytest.raises(ValueError, match='unknown crash "boom"'):
        pylogsink.runtime.crash("boom")  # type: ignore[arg-type]


# A call that kept more than its budget, then crashed: the note that
# stands for what it left out comes first, as at a return.

OVERFLOW_UNDER_REDIRECT = """
import contextlib, io, pylogsink_testext as t
with contextlib.redirect_stderr(io.StringIO()):
    t.log_then_crash({count}, {kind!r})
"""

OVERFLOW_WITH_LOGGING = """
import logging, io, pylogsink_testext as t
logging.basicConfig(level=logging.INFO, stream=io.StringIO())
t.set_log_destination("logging")
t.log_then_crash({count}, {kind!r})
"""

NOTE = re.compile(
    r"\[pylogsink\] (\d+) (line|record)s? \((\d+) bytes\) left out here: more than "
    r"(?:64 KiB|10000 records or 4 MiB) waited at once"
)


@pytest.mark.parametrize("kind", ["segv", "abort"])
@pytest.mark.parametrize(
    ("code", "unit"), [(OVERFLOW_UNDER_REDIRECT, "line"), (OVERFLOW_WITH_LOGGING, "record")], ids=["redirect_stderr", "logging"]
)
def test_a_crash_after_an_overflowed_call_writes_the_note_first(kind: str, code: str, unit: str) -> None:
    # About 200 KiB of lines, most left out; more than 10,000 records
    # (the small budget).
    count = 3000 if unit == "line" else 12_000
    done = crash(code.format(count=count, kind=kind), **SMALL_BUDGET_ENV)
    assert done.returncode == ENDS[kind], done.stderr
    lines = done.stderr.splitlines(keepends=True)
    m = NOTE.match(lines[0])
    assert m and m.group(2) == unit, done.stderr[:500]
    written = records(done.stderr)
    assert len(written) == len(lines) - 1, "the note, then the records, and nothing else"
    numbers = [int(r.split("] line ")[1].split()[0]) for r in written]
    left_out = int(m.group(1))
    assert left_out + len(written) == count
    assert numbers == list(range(left_out, count)), "the newest, in order"
    if unit == "line":
        # The bytes too: what was logged minus what was written.
        head = len(written[0]) - len(f"line {numbers[0]} of {count}")
        logged = sum(head + len(f"line {i} of {count}") + 1 for i in range(count))
        assert int(m.group(3)) == logged - sum(len(line) for line in lines[1:])


CRASH_WHILE_DELIVERING = """
import logging, threading, time, pylogsink
pylogsink.runtime.set_log_destination("logging")

class Slow(logging.Handler):
    # A network handler: 20 ms a record.
    handled = 0
    def emit(self, record):
        time.sleep(0.02)
        print("D", record.getMessage(), flush=True)
        Slow.handled += 1

logging.getLogger().addHandler(Slow())
logging.getLogger().setLevel(logging.INFO)

def crash_soon():
    # Once the records are being handed over, one by one.
    deadline = time.monotonic() + 20
    while Slow.handled < 10 and time.monotonic() < deadline:
        time.sleep(0.005)
    pylogsink.runtime.crash({kind!r})

threading.Thread(target=crash_soon).start()
pylogsink.runtime.start_background_logger(50).join()
time.sleep(5)
"""


@pytest.mark.parametrize("kind", ["segv", "abort"])
def test_records_being_handed_to_logging_when_it_crashes_reach_fd2(kind: str) -> None:
    # The 50 records were taken out of the queue (at the main thread's safe
    # point after the join) and are being handed to a slow handler when
    # another thread crashes the process: those not handed yet are on fd
    # 2, so each is either handled or written.
    done = crash(CRASH_WHILE_DELIVERING.format(kind=kind))
    assert done.returncode == ENDS[kind], done.stderr
    handled = [line[2:] for line in done.stdout.splitlines() if line.startswith("D background line")]
    written = [m for m in messages(done.stderr) if m.startswith("background line")]
    assert handled, "the crash came while the records were being handed over"
    assert written, "and before the last"
    assert sorted(handled + written, key=lambda m: int(m.split()[-1])) == [f"background line {i}" for i in range(50)]
    assert messages(done.stderr)[-3:] == BEFORE


# A process that handles SIGABRT in Python (gunicorn's workers do), set up
# before pylogsink or after it: another process sends it SIGABRT while a
# call keeps 50 lines, then a call logs 3 lines and abort()s.
HANDLED_THEN_ABORT = """
import contextlib, io, os, signal, subprocess, sys
handled = []
def handle():
    signal.signal(signal.SIGABRT, lambda signum, frame: handled.append(signum))
{handle_before}
import pylogsink
rt = pylogsink.runtime
{handle_after}
sender = subprocess.Popen(["sh", "-c", f"sleep 0.3; kill -ABRT {{os.getpid()}}"])
buf = io.StringIO()
with contextlib.redirect_stderr(buf):
    rt.log_then_hang(50, 1.5)
sender.wait()
print(buf.getvalue().count("about to hang"), handled, flush=True)
with contextlib.redirect_stderr(io.StringIO()):
    rt.crash("abort")
"""


@pytest.mark.skipif(sys.platform == "win32", reason="no kill(2) from another process on Windows")
@pytest.mark.parametrize("order", ["handler before pylogsink", "handler after pylogsink"])
def test_an_external_sigabrt_a_python_handler_takes_writes_nothing_and_the_next_abort_keeps_its_lines(
    order: str,
) -> None:
    # Set after pylogsink, the Python handler takes the place of its crash
    # handler, which is put back in front as lines start to wait: without
    # that, the abort() kept none of its lines.
    before = order == "handler before pylogsink"
    done = crash(
        HANDLED_THEN_ABORT.format(
            handle_before="handle()" if before else "", handle_after="" if before else "handle()"
        )
    )
    assert done.returncode == ABORTED, done.stderr
    # The kept lines reached their stream once, and the handler ran.
    assert done.stdout.split() == ["50", "[6]"], done.stdout
    # Nothing was written at the external signal; the real abort() wrote
    # the 3 lines its call kept.
    assert "about to hang" not in done.stderr, done.stderr[:500]
    assert messages(done.stderr) == BEFORE, done.stderr


# faulthandler enabled after pylogsink: pylogsink's handler is put back in
# front, calls faulthandler's, which hands the signal back to the handler
# it found (pylogsink's): the process still ends by the signal, once, with
# the lines and the traceback.
FAULTHANDLER_AFTER = """
import contextlib, faulthandler, io, pylogsink
faulthandler.enable()
with contextlib.redirect_stderr(io.StringIO()):
    pylogsink.runtime.crash({kind!r})
"""


@pytest.mark.skipif(sys.platform == "win32", reason="Windows' order: test_faulthandlers_traceback_and_the_lines_on_windows")
@pytest.mark.parametrize("kind", ["segv", "abort"])
def test_faulthandler_enabled_after_pylogsink_ends_the_process_once_with_lines_and_traceback(kind: str) -> None:
    done = crash(FAULTHANDLER_AFTER.format(kind=kind))
    assert done.returncode == ENDS[kind], done.stderr
    assert messages(done.stderr) == BEFORE
    assert done.stderr.count("Fatal Python error") == 1, done.stderr
    assert done.stderr.index(BEFORE[-1]) < done.stderr.index("Fatal Python error"), done.stderr


# The crash matrix: a Python handler for SIGABRT set before pylogsink is
# imported, after it, or none; SIGABRT by kill(getpid()) or raise() from a
# native thread while a call keeps 50 lines, or by abort() inside a call;
# sys.stderr the process's own or replaced. A process that lives on (a
# handler took the signal) reports what its stream got, then abort()s in
# a call that logged 3 lines. Plain Python writes each line once: so must
# pylogsink, whatever the order, and the last words must be there.
MATRIX = """
import contextlib, io, json, os, signal, sys
import pylogsink_testext as ext
handled = []
def handle():
    signal.signal(signal.SIGABRT, lambda signum, frame: handled.append(signum))
{before}
import pylogsink
rt = pylogsink.runtime
{after}
def stream():
    return contextlib.redirect_stderr(buf) if {replaced} else contextlib.nullcontext()
buf = io.StringIO()
with stream():
    if {how!r} == "abort":
        rt.crash("abort")
    ext.signal_later({how!r}, 0.3)
    rt.log_then_hang(50, 1.0)
# A signal caught on another thread waits for the main thread to look:
# pthread_sigmask looks (Windows has none).
if hasattr(signal, "pthread_sigmask"):
    signal.pthread_sigmask(signal.SIG_BLOCK, [])
print(json.dumps({{"stream": buf.getvalue(), "handled": handled}}), flush=True)
buf = io.StringIO()
with stream():
    rt.crash("abort")
"""

HANG = [f"about to hang: line {i}" for i in range(50)]


@pytest.mark.parametrize("replaced", [False, True], ids=["own-stderr", "replaced-stderr"])
@pytest.mark.parametrize("how", ["kill", "raise", "abort"])
@pytest.mark.parametrize("handler", ["before", "after", "none"])
def test_a_sigabrt_writes_each_line_once_and_the_last_words_in_every_order(
    handler: str, how: str, replaced: bool
) -> None:
    if how == "kill" and sys.platform == "win32":
        pytest.skip("no kill(2) on Windows")
    if how == "raise" and handler != "none" and sys.platform == "win32":
        pytest.skip("a MinGW build's raise() is msvcrt.dll's, and Python's SIGABRT handler is the UCRT's")
    code = MATRIX.format(
        before="handle()" if handler == "before" else "",
        after="handle()" if handler == "after" else "",
        replaced=replaced,
        how=how,
    )
    done = crash(code)
    assert done.returncode == ABORTED, done.stderr[-2000:]
    on_fd2 = messages(done.stderr)
    if how == "abort":
        # abort() ends the process, handler or not, with its call's lines.
        assert on_fd2 == BEFORE, done.stderr[-2000:]
        assert not done.stdout
        return
    if handler == "none":
        # The signal ended the process: the call's 50 lines, once.
        assert on_fd2 == HANG, done.stderr[-2000:]
        assert not done.stdout
        return
    # The handler took the signal and the process lived on: each of the 50
    # lines once, on fd 2 or in the stream (a raised SIGABRT may be
    # abort()'s: what waits is written to fd 2 at once); then the last
    # words of the abort().
    lived = json.loads(done.stdout)
    assert lived["handled"] == [signal.SIGABRT] or sys.platform == "win32", lived["handled"]
    in_stream = messages(lived["stream"])
    assert sorted(on_fd2[:-3] + in_stream) == sorted(HANG), done.stderr[-2000:]
    assert on_fd2[-3:] == BEFORE, done.stderr[-2000:]
    if how == "kill" or not replaced:
        # Sent by kill, the signal wrote nothing: the lines went where
        # they would have gone.
        assert (in_stream if replaced else on_fd2[:-3]) == HANG
