"""Native output capture (core/capture.rs, call/capture.rs): what C code
writes to fd 1 and fd 2 reaches capsys, redirect_stdout, a Jupyter cell or
the original descriptors, through pipes that a native thread drains, so
that no writer hangs whatever the GIL is doing."""

from __future__ import annotations

import contextlib
import ctypes
import io
import json
import logging
import os
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

import pylogsink
from conftest import child_pytest, kernel_result, python, records

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"),
    reason="capture_output() is not available on Windows (test_capture_windows.py)"
    if sys.platform == "win32"
    else "output capture is built for Linux only",
)

ROOT = Path(__file__).resolve().parent.parent
LINE = b"x" * 99 + b"\n"
BIG_LINES = 30000  # 3 MB: more than any pipe here holds (wurlitzer's 1 MiB included)

# The C library the process already has (none to name on Windows).
libc = ctypes.CDLL(None) if sys.platform != "win32" else None


def test_printf_and_fd_writes_reach_capsys(capsys: pytest.CaptureFixture[str]) -> None:
    with pylogsink.capture_output():
        libc.printf(b"printf %d\n", 42)
        libc.fflush(None)
        os.write(2, b"fd 2 write\n")
        os.write(1, b"a line that never ends")
    out, err = capsys.readouterr()
    assert out == "printf 42\na line that never ends"
    assert err == "fd 2 write\n"
    assert not pylogsink.output_capture_active()


def test_stdout_alone_leaves_fd2_alone(capsys: pytest.CaptureFixture[str]) -> None:
    with pylogsink.capture_output(stderr=False):
        os.write(1, b"out\n")
    assert capsys.readouterr().out == "out\n"


def test_lines_arrive_while_the_capture_runs(capsys: pytest.CaptureFixture[str]) -> None:
    import time

    with pylogsink.capture_output():
        os.write(1, b"early\n")
        deadline = time.monotonic() + 5
        while "early" not in capsys.readouterr().out:
            assert time.monotonic() < deadline, "delivered within the capture"
            time.sleep(0.01)


def test_lines_arrive_in_the_order_written(capsys: pytest.CaptureFixture[str]) -> None:
    # C stdio line-buffered (as on a terminal), interleaved with os.write.
    stdout = ctypes.c_void_p.in_dll(libc, "stdout")
    with pylogsink.capture_output():
        libc.setvbuf(stdout, None, 1, 0)  # _IOLBF
        for i in range(200):
            libc.printf(b"c %d\n", i)
            os.write(1, b"w %d\n" % i)
    expected = [f"{kind} {i}" for i in range(200) for kind in ("c", "w")]
    assert capsys.readouterr().out.splitlines() == expected


ORDER_OWN = """
import ctypes, os, pylogsink
libc = ctypes.CDLL(None)
with pylogsink.capture_output():
    libc.setvbuf(ctypes.c_void_p.in_dll(libc, "stdout"), None, 1, 0)
    for i in range(200):
        libc.printf(b"c %d\\n", i)
        os.write(1, b"w %d\\n" % i)
"""


def test_lines_keep_their_order_on_the_processs_own_stdout() -> None:
    done = python(ORDER_OWN, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [f"{kind} {i}" for i in range(200) for kind in ("c", "w")]


def test_the_demo_runtimes_log_line_and_printf_each_arrive_once(capsys: pytest.CaptureFixture[str]) -> None:
    with pylogsink.capture_output():
        pylogsink.runtime.log_and_printf("both")
    out, err = capsys.readouterr()
    assert out == "printed: both\n"
    assert [r.split("] ", 1)[1] for r in records(err)] == ["logged: both"]
    assert err.count("both") == 1


DEMO_OWN = """
import pylogsink
with pylogsink.capture_output():
    for i in range(3):
        pylogsink.runtime.log_and_printf(f"line {i}")
"""


def test_on_the_processs_own_streams_pylogsinks_lines_go_to_fd2_once() -> None:
    done = python(DEMO_OWN, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "".join(f"printed: line {i}\n" for i in range(3))
    assert [r.split("] ", 1)[1] for r in records(done.stderr)] == [f"logged: line {i}" for i in range(3)]
    assert done.stderr.count("logged:") == 3


NO_LOOP = """
import os, sys, pylogsink
# A sys.stderr that writes to fd 2 itself: its lines must not go round.
sys.stderr = open(2, "w", closefd=False)
with pylogsink.capture_output():
    os.write(2, b"only once\\n")
    pylogsink.runtime.log_raw(b"logged once", "warn")
sys.stderr.flush()
"""


def test_a_stream_on_the_captured_descriptor_itself_does_not_loop() -> None:
    done = python(NO_LOOP, timeout=30)
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("only once") == 1, done.stderr
    assert done.stderr.count("logged once") == 1, done.stderr


BIG = """
import contextlib, ctypes, io, json, sys, time, pylogsink
libc = ctypes.PyDLL(None)  # the GIL stays held during the call
data = (b"x" * 99 + b"\\n") * {lines}
buf = io.StringIO()
start = time.monotonic()
with {outer}:
    with pylogsink.capture_output():
        libc.printf(b"%s", data)
        libc.fflush(None)
took = time.monotonic() - start
print(json.dumps({{"took": took, "text": buf.getvalue(), "left_out": pylogsink.runtime.log_stats()["left_out"]}}), file=sys.stderr)
"""


def test_3mb_printed_with_the_gil_held_completes_into_a_stringio() -> None:
    done = python(BIG.format(lines=BIG_LINES, outer="contextlib.redirect_stdout(buf)"), timeout=30)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stderr.splitlines()[-1])
    assert got["took"] < 10
    note, *kept = got["text"].splitlines(keepends=True)
    m = re.fullmatch(r"\[pylogsink\] (\d+) lines \((\d+) bytes\) left out here: more than 1 MiB waited at once\n", note)
    assert m, note
    assert all(line == LINE.decode() for line in kept)
    assert int(m.group(1)) + len(kept) == BIG_LINES, "every line delivered or counted"
    assert int(m.group(2)) == int(m.group(1)) * len(LINE)
    assert got["left_out"] == int(m.group(1))


def test_3mb_printed_with_the_gil_held_reaches_the_original_stdout_whole() -> None:
    done = python(BIG.format(lines=BIG_LINES, outer="contextlib.nullcontext()"), timeout=30)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stderr.splitlines()[-1])
    assert got["took"] < 10
    assert done.stdout == LINE.decode() * BIG_LINES
    assert got["left_out"] == 0


RELEASED = """
import contextlib, ctypes, io, sys, pylogsink
libc = ctypes.CDLL(None)  # the GIL is released during each write
data = (b"x" * 99 + b"\\n") * 10000
buf = io.StringIO()
with contextlib.redirect_stdout(buf), pylogsink.capture_output():
    for _ in range(20):
        libc.write(1, data, len(data))
print(len(buf.getvalue()), buf.getvalue().count("[pylogsink]"), pylogsink.runtime.log_stats()["left_out"], file=sys.stderr)
"""


def test_20mb_written_with_the_gil_released_arrive_whole() -> None:
    # Python keeps taking the lines: the writer waits for it, nothing is
    # left out.
    done = python(RELEASED, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stderr.split() == [str(20 * 10000 * 100), "0", "0"]


STALLED = """
import contextlib, os, sys, time, pylogsink
os.write(2, b"ready\\n")
start = time.monotonic()
with pylogsink.capture_output(stderr=False) if sys.argv[1] == "capture" else contextlib.nullcontext():
    for _ in range(30):
        os.write(1, (b"s" * 99 + b"\\n") * 1000)
os.write(2, b"took %f\\n" % (time.monotonic() - start))
os._exit(0)
"""


@pytest.mark.timeout(60)
@pytest.mark.parametrize("capture", ["capture", "no capture"])
def test_an_original_stdout_nobody_reads_for_a_while_waits_as_without_a_capture(capture: str) -> None:
    # The child's stdout is a pipe that nobody reads for 2 s: 3 MB cannot
    # go out before, so the writer waits, capture or not, and everything
    # arrives once it is read (the capture used to read on and leave lines
    # out after the stall wait).
    child = subprocess.Popen(
        [sys.executable, "-c", STALLED, capture], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        # The 2 s start once the child has started (its start-up may take
        # a while on a loaded machine).
        assert child.stderr is not None and child.stderr.readline() == b"ready\n"
        time.sleep(2)
        out, err = child.communicate(timeout=40)
        assert child.returncode == 0, err
        took = float(err.split()[1])
        assert took > 1.5
        assert out == (b"s" * 99 + b"\n") * 30_000
    finally:
        child.kill()
        child.wait()


WURLITZER = """
import ctypes, wurlitzer
libc = ctypes.PyDLL(None)
data = (b"x" * 99 + b"\\n") * {lines}
with wurlitzer.pipes() as (out, err):
    libc.printf(b"%s", data)
    libc.fflush(None)
"""


@pytest.mark.naive
def test_the_same_inside_wurlitzer_pipes_hangs() -> None:
    pytest.importorskip("wurlitzer")
    with pytest.raises(subprocess.TimeoutExpired):
        python(WURLITZER.format(lines=BIG_LINES), timeout=20)


CRASH = """
import contextlib, ctypes, io, os, pylogsink

class Appended(io.TextIOBase):
    # A replaced sys.stderr that outlives the crash: pylogsink's Python
    # thread may hand it the captured text before the crash comes.
    def __init__(self, path):
        self.file = open(path, "a", buffering=1)
    def writable(self):
        return True
    def write(self, text):
        self.file.write(text)
        self.file.flush()
        return len(text)

gil_libc = ctypes.PyDLL(None)
with contextlib.redirect_stderr(Appended(os.environ["CRASH_STREAM"])):
    with pylogsink.capture_output():
        text = b"drained before the crash\\nno line end yet"
        gil_libc.write(2, text, len(text))
        pylogsink.runtime.crash({kind!r})
"""


@pytest.mark.parametrize("kind", ["segv", "abort"])
@pytest.mark.parametrize("handler", ["on", "off"])
def test_a_crash_inside_a_capture_leaves_the_captured_text_on_the_original_fd2(
    kind: str, handler: str, tmp_path: Path
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYLOGSINK_")}
    env["PYLOGSINK_DEMO_CRASH_HANDLER"] = handler
    stream = tmp_path / "stream.txt"
    env["CRASH_STREAM"] = str(stream)
    stream.touch()
    done = python(CRASH.format(kind=kind), timeout=60, env=env)
    assert done.returncode == -{"segv": signal.SIGSEGV, "abort": signal.SIGABRT}[kind], done.stderr
    handed = stream.read_text()
    if handler == "on":
        # Each piece on the original fd 2, or in the stream when the Python
        # thread wrote it there before the crash: never lost. Lines that the
        # Python thread took and was writing when the crash came are also
        # written by the crash handler (a repeat is better than a loss), so
        # a piece may be in both, once each.
        for piece in ["drained before the crash\n", "no line end yet"]:
            on_fd2, in_stream = done.stderr.count(piece), handed.count(piece)
            assert on_fd2 <= 1 and in_stream <= 1 and on_fd2 + in_stream >= 1, (piece, done.stderr, handed)
        assert "busy buffers" not in done.stderr
        assert [r.split("] ", 1)[1] for r in records(done.stderr)] == [f"before the crash: line {i}" for i in range(3)]
    else:
        assert "drained before the crash" not in done.stderr, "without the handler it dies with the process"


FORK_DURING_HAND_OVER = """
import io, os, sys, threading, time, pylogsink

class Slow(io.TextIOBase):
    # A replaced sys.stdout whose write takes a while: pylogsink's thread
    # is inside a hand-over most of the time.
    def __init__(self, path):
        self.file = open(path, "a")
    def writable(self):
        return True
    def write(self, text):
        time.sleep(0.002)
        self.file.write(text)
        return len(text)

sys.stdout = Slow(os.devnull)
stop = threading.Event()

def writer():
    while not stop.is_set():
        os.write(1, b"native output\\n" * 20)  # the GIL released

hung = failed = 0
with pylogsink.capture_output():
    thread = threading.Thread(target=writer)
    thread.start()
    for _ in range(20):
        time.sleep(0.01)
        pid = os.fork()
        if pid == 0:
            # The child's own capture, handed to its own sys.stdout.
            sys.stdout = io.StringIO()
            with pylogsink.capture_output():
                os.write(1, b"from the child\\n")
            os._exit(0 if "from the child" in sys.stdout.getvalue() else 3)
        deadline = time.monotonic() + 5
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                failed += os.waitstatus_to_exitcode(status) != 0
                break
            if time.monotonic() > deadline:
                os.kill(pid, 9)
                os.waitpid(pid, 0)
                hung += 1
                break
            time.sleep(0.005)
    stop.set()
    thread.join()
print(f"hung={hung} failed={failed}", file=sys.stderr)
"""

@pytest.mark.timeout(240)
def test_children_forked_during_a_hand_over_never_hang_in_their_own_capture() -> None:
    # pylogsink's thread is inside a slow sys.stdout.write most of the
    # time; each child makes a capture of its own, whose end writes to the
    # child's sys.stdout. 20 of 20 children hung before the child forgot
    # its parent's hand-over.
    done = python(FORK_DURING_HAND_OVER, timeout=200)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stderr.splitlines()[-1] == "hung=0 failed=0"


FORK = """
import contextlib, io, os, sys, pylogsink
buf = io.StringIO()
with contextlib.redirect_stdout(buf):
    with pylogsink.capture_output():
        os.write(1, b"parent before\\n")
        pid = os.fork()
        if pid == 0:
            active = pylogsink.output_capture_active()
            os.write(1, b"child, capture active: %d\\n" % active)
            os.write(1, b"child, stdout is the parent's: %d\\n" % (sys.stdout is buf))
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        os.write(1, b"parent after\\n")
print("captured:", buf.getvalue().splitlines(), "child status", status, file=sys.stderr)
"""


def test_a_forked_child_writes_to_the_original_descriptors() -> None:
    done = python(FORK, timeout=30)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "child, capture active: 0\nchild, stdout is the parent's: 1\n"
    assert "captured: ['parent before', 'parent after'] child status 0" in done.stderr


def test_nested_captures_join_the_outer_one(capsys: pytest.CaptureFixture[str]) -> None:
    with pylogsink.capture_output():
        with pylogsink.capture_output(stdout=False):
            os.write(1, b"inner\n")
        assert pylogsink.output_capture_active()
        os.write(1, b"outer\n")
    assert not pylogsink.output_capture_active()
    assert capsys.readouterr().out == "inner\nouter\n"


def test_flush_puts_native_lines_before_what_python_prints_next(capsys: pytest.CaptureFixture[str]) -> None:
    with pylogsink.capture_output():
        for i in range(20):
            libc.printf(b"native %d\n", i)  # C stdio: a pipe is fully buffered
            pylogsink.flush_output_capture()
            print(f"python {i}")
    expected = [f"{kind} {i}" for i in range(20) for kind in ("native", "python")]
    assert capsys.readouterr().out.splitlines() == expected


def test_print_and_line_buffered_printf_come_out_in_the_order_written(capsys: pytest.CaptureFixture[str]) -> None:
    stdout = ctypes.c_void_p.in_dll(libc, "stdout")
    with pylogsink.capture_output():
        libc.setvbuf(stdout, None, 1, 0)  # _IOLBF, as on a terminal
        for i in range(300):
            libc.printf(b"c %d\n", i)
            print(f"py {i}")
            os.write(2, b"w %d\n" % i)
            print(f"py {i}", file=sys.stderr)
    out, err = capsys.readouterr()
    assert out.splitlines() == [f"{kind} {i}" for i in range(300) for kind in ("c", "py")]
    assert err.splitlines() == [f"{kind} {i}" for i in range(300) for kind in ("w", "py")]


def test_print_and_native_writes_keep_their_order_from_threads_and_a_released_gil() -> None:
    # Native writes made with the GIL released (ctypes.CDLL), on several
    # threads, each followed by a print of its own: each print comes after
    # its thread's native line.
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        with pylogsink.capture_output(stderr=False):

            def work(t: int) -> None:
                for i in range(200):
                    line = b"native %d %d\n" % (t, i)
                    libc.write(1, line, len(line))
                    sys.stdout.write(f"python {t} {i}\n")  # print's two writes would interleave

            threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
    lines = buf.getvalue().splitlines()
    assert sorted(lines) == sorted(f"{kind} {t} {i}" for t in range(4) for i in range(200) for kind in ("native", "python"))
    for t in range(4):
        mine = [line for line in lines if line.split()[1] == str(t)]
        assert mine == [f"{kind} {t} {i}" for i in range(200) for kind in ("native", "python")]


WURLITZER_ORDER = """
import contextlib, ctypes, io, sys, wurlitzer
libc = ctypes.CDLL(None)
libc.setvbuf(ctypes.c_void_p.in_dll(libc, "stdout"), None, 1, 0)
buf = io.StringIO()
with contextlib.redirect_stdout(buf), wurlitzer.pipes(stdout=buf, stderr=None):
    for i in range(300):
        libc.printf(b"c %d\\n", i)
        print(f"py {i}")
sys.stdout.write(buf.getvalue())
"""


def test_the_same_through_wurlitzer_pipes_comes_out_of_order() -> None:
    pytest.importorskip("wurlitzer")
    done = python(WURLITZER_ORDER, timeout=60)
    assert done.returncode == 0, done.stderr
    in_order = "".join(f"{kind} {i}\n" for i in range(300) for kind in ("c", "py"))
    assert sorted(done.stdout) == sorted(in_order), "every byte there"
    assert done.stdout != in_order, "but not in the order written"


def test_the_front_goes_at_the_end_and_a_stream_replaced_inside_stays_its_replacers(
    capsys: pytest.CaptureFixture[str],
) -> None:
    before = sys.stdout
    with pylogsink.capture_output():
        assert sys.stdout is not before, "a front before capsys's stream"
        assert sys.stdout.encoding == before.encoding
        inner = io.StringIO()
        with contextlib.redirect_stdout(inner):
            print("to the inner stream")
    assert sys.stdout is before
    assert inner.getvalue() == "to the inner stream\n"
    with contextlib.redirect_stdout(io.StringIO()):
        pylogsink.start_output_capture()
        swapped = io.StringIO()
        sys.stdout = swapped
        pylogsink.stop_output_capture()
        assert sys.stdout is swapped


LOOPING_STREAM = """
import contextlib, ctypes, sys, pylogsink

class Kept:
    def __init__(self):
        self.text = []
    def write(self, text):
        self.text.append(text)
        return len(text)
    def flush(self):
        pass

class Warns(Kept):
    # A stream whose write prints to sys.stderr, while pylogsink hands it
    # captured lines.
    def write(self, text):
        print("warned", file=sys.stderr)
        return super().write(text)

out, err = Warns(), Kept()
libc = ctypes.CDLL(None)
with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
    with pylogsink.capture_output():
        for i in range(50):
            libc.write(2, b"native err\\n", 11)
            libc.write(1, b"native out\\n", 11)
            print("python out")
out, err = "".join(out.text), "".join(err.text)
print(out.count("native out"), out.count("python out"), err.count("native err"), file=sys.__stderr__)
"""


def test_a_stream_that_prints_to_the_other_stream_does_not_hang() -> None:
    done = python(LOOPING_STREAM, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stderr.split()[-3:] == ["50", "50", "50"]


def test_to_logging_makes_each_line_a_record(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    with pylogsink.capture_output(to_logging=True):
        for i in range(300):
            libc.printf(b"out %d\n", i)
        libc.fflush(None)
        os.write(2, b"err line\nno line end")
    got = [(r.name, r.levelno, r.stream, r.getMessage()) for r in caplog.records]  # type: ignore[attr-defined]
    assert [g for g in got if g[0] == "stdout"] == [("stdout", logging.INFO, "stdout", f"out {i}") for i in range(300)]
    assert [g for g in got if g[0] == "stderr"] == [
        ("stderr", logging.WARNING, "stderr", "err line"),
        ("stderr", logging.WARNING, "stderr", "no line end"),
    ]


def test_a_capture_into_logging_begun_inside_another_joins_it(
    capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    with pylogsink.capture_output():
        assert pylogsink.start_output_capture(to_logging=True) is False
        os.write(1, b"joined\n")
        pylogsink.stop_output_capture()
    assert capsys.readouterr().out == "joined\n"
    assert [r for r in caplog.records if r.name == "stdout"] == []


ECHO = """
import ctypes, logging, os, sys, time, pylogsink
handled = []
def count(record):
    handled.append(record.getMessage())
    return True
if {handler!r} == "stream":
    # A handler that writes every record to fd 2, which the capture reads.
    logging.basicConfig(format="handled: %(message)s")
# Else logging's last resort writes the WARNING records to sys.stderr.
logging.getLogger("stderr").addFilter(count)
libc = ctypes.CDLL(None)
with pylogsink.capture_output(to_logging=True):
    for i in range(3):
        libc.write(2, b"native %d\\n" % i, 9)
    time.sleep(0.5)
print(handled, file=sys.__stdout__)
print("after", file=sys.stderr)
logging.getLogger("app").warning("handler back")
"""


@pytest.mark.parametrize("handler", ["stream", "last_resort"])
def test_to_logging_does_not_capture_a_handlers_own_output_again(handler: str) -> None:
    # A StreamHandler on sys.stderr (and logging's last resort, with no
    # handler) writes each record to fd 2: captured again, it would become
    # a record again, forever.
    done = python(ECHO.format(handler=handler), timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str([f"native {i}" for i in range(3)])
    if handler == "stream":
        assert done.stderr.splitlines() == [f"handled: native {i}" for i in range(3)] + ["after", "handled: handler back"]
    else:
        assert done.stderr.splitlines() == [f"native {i}" for i in range(3)] + ["after", "handler back"]


LOCKED_STREAM = """
import contextlib, ctypes, sys, threading, time, pylogsink

lock = threading.RLock()

class Locked:
    # A stream whose write takes a lock that the code printing holds too.
    def __init__(self):
        self.parts = []
    def write(self, text):
        with lock:
            time.sleep(0.002)
            self.parts.append(text)
        return len(text)
    def flush(self):
        pass

out = Locked()
libc = ctypes.CDLL(None)
stop = False
def native():
    while not stop:
        libc.write(1, b"native\\n", 7)
        time.sleep(0.001)
writer = threading.Thread(target=native)
with contextlib.redirect_stdout(out), pylogsink.capture_output(stderr=False):
    writer.start()
    for i in range(100):
        with lock:
            print("python", i)
        time.sleep(0.002)
    stop = True
    writer.join()
text = "".join(out.parts)
print(text.count("python"), text.count("native") > 0, file=sys.stderr)
"""


def test_a_print_holding_a_lock_the_stream_takes_does_not_hang() -> None:
    # The hand-over under way waits for the lock the printing thread
    # holds; the print waits for that hand-over at most the stall wait,
    # then goes on.
    done = python(LOCKED_STREAM, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stderr.split() == ["100", "True"]


def test_an_inner_capture_delivers_its_lines_before_it_ends(capsys: pytest.CaptureFixture[str]) -> None:
    with pylogsink.capture_output():
        with pylogsink.capture_output():
            libc.printf(b"inner\n")
        print("after the inner capture")
    assert capsys.readouterr().out == "inner\nafter the inner capture\n"


def test_start_and_stop_for_notebooks(capsys: pytest.CaptureFixture[str]) -> None:
    assert pylogsink.start_output_capture() is True
    try:
        os.write(1, b"between\n")
    finally:
        pylogsink.stop_output_capture()
    assert capsys.readouterr().out == "between\n"
    pylogsink.stop_output_capture()  # a stray stop changes nothing


# A real Jupyter kernel. ipykernel captures fd 1 and fd 2 itself only
# without PYTEST_CURRENT_TEST in its environment (see test_jupyter.py).

CAPTURE_KERNEL = ROOT / "tests" / "scripts" / "capture_kernel.py"


def kernel(mode: str, env: dict[str, str], cell_timeout: float = 60) -> dict[str, object]:
    pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    done = subprocess.run(
        [sys.executable, str(CAPTURE_KERNEL), mode, str(cell_timeout)],
        capture_output=True,
        text=True,
        timeout=cell_timeout + 120,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    result = kernel_result(done.stdout)
    result["kernel_stdout"] = done.stdout
    return result


@pytest.mark.timeout(300)
def test_a_cells_printf_inside_capture_shows_in_the_cell() -> None:
    # With ipykernel's own fd capture off, C output goes past the cell
    # unless pylogsink captures it.
    env = dict(os.environ, PYTEST_CURRENT_TEST="capture")
    result = kernel("printf", env)
    assert result["timed_out"] is False and result["errors"] == []
    cells = result["cells"]
    assert isinstance(cells, list)
    assert cells[1] == {"stdout": "from C, captured\n"}
    assert cells[2] == {}, "not captured: not in the cell"
    assert "from C, not captured" in str(result["kernel_stdout"])


@pytest.mark.timeout(300)
@pytest.mark.parametrize("fd_capture", ["on", "off"])
def test_a_cells_native_and_python_lines_come_once_in_order(fd_capture: str, clean_env: dict[str, str]) -> None:
    # ipykernel's own fd capture (on without PYTEST_CURRENT_TEST) is
    # displaced while pylogsink's runs: each line once, either way.
    env = clean_env if fd_capture == "on" else dict(os.environ, PYTEST_CURRENT_TEST="capture")
    result = kernel("mixed", env)
    assert result["timed_out"] is False and result["errors"] == []
    cells = result["cells"]
    assert isinstance(cells, list)
    out = cells[1]["stdout"].splitlines()
    assert out == [line for i in range(20) for line in (f"c {i}", f"py {i}", f"printed: both {i}")]
    err = cells[1]["stderr"].splitlines()
    assert [line if line.startswith("w ") else line.split("] ", 1)[1] for line in err] == [
        line for i in range(20) for line in (f"w {i}", f"logged: both {i}")
    ]


@pytest.mark.timeout(300)
def test_a_cell_that_keeps_running_shows_its_c_output_while_it_runs(clean_env: dict[str, str]) -> None:
    # 30 lines printf'd 50 ms apart: most reach the notebook well before
    # the cell ends (the kernel's own timestamps), all 30, in order, once.
    pytest.importorskip("ipykernel")
    done = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "scripts" / "live_kernel.py"), "capture"],
        capture_output=True,
        text=True,
        timeout=120,
        env=clean_env,
    )
    assert done.returncode == 0, done.stderr
    got = kernel_result(done.stdout)
    assert got["lines"] == [f"slow line {i}" for i in range(30)]
    assert got["early"] >= 10, got


@pytest.mark.timeout(300)
def test_load_ext_captures_every_cell() -> None:
    env = dict(os.environ, PYTEST_CURRENT_TEST="capture")
    result = kernel("ext", env)
    assert result["timed_out"] is False and result["errors"] == []
    cells = result["cells"]
    assert isinstance(cells, list)
    assert cells[1] == {"stdout": "from C, every cell\n"}
    # %unload_ext ends the capture of the cell it runs in: the next capture
    # is a fresh one that does what it is asked (to_logging).
    assert cells[3] == {"stdout": "False\n"}
    assert cells[4] == {"stdout": "['a record']\n"}


@pytest.mark.timeout(300)
def test_load_ext_lets_processes_started_in_a_cell_live_on() -> None:
    # One capture for the kernel's life, as ipykernel's own: a process
    # started in one cell still runs and prints three cells later, and a
    # spawn Pool made in one cell maps in the next (with a capture per cell
    # the loop died of SIGPIPE once its cell ended, and the pool's workers
    # of BrokenPipeError).
    env = dict(os.environ, PYTEST_CURRENT_TEST="capture")
    result = kernel("ext_children", env)
    assert result["timed_out"] is False and result["errors"] == []
    cells = result["cells"]
    assert isinstance(cells, list)
    # The loop's ticks come in whichever cell runs: between the lines.
    assert "tick" in cells[3].get("stdout", "").splitlines()
    assert "alive True" in cells[4]["stdout"].splitlines()
    assert "tick" in cells[4]["stdout"].splitlines()
    assert "[1, 2, 3]" in cells[6]["stdout"].splitlines()
    assert "killed -9" in cells[7]["stdout"].splitlines()


@pytest.mark.naive
@pytest.mark.timeout(300)
def test_a_kernel_hangs_on_3mb_printed_with_the_gil_held(clean_env: dict[str, str]) -> None:
    # Proves the next test's scenario is real: ipykernel's own fd capture.
    assert kernel("raw_big", clean_env, cell_timeout=15)["timed_out"] is True


@pytest.mark.timeout(300)
def test_a_kernel_completes_3mb_printed_with_the_gil_held_inside_capture(clean_env: dict[str, str]) -> None:
    result = kernel("big", clean_env)
    assert result["timed_out"] is False and result["errors"] == []
    cells = result["cells"]
    assert isinstance(cells, list)
    out = cells[1]["stdout"]
    note, *rest = out.splitlines(keepends=True)
    m = re.match(r"\[pylogsink\] (\d+) lines \((\d+) bytes\) left out here", note)
    assert m, note
    kept = [line for line in rest if line == LINE.decode()]
    assert rest[len(kept)] == f"stats {m.group(1)}\n"
    assert int(m.group(1)) + len(kept) == BIG_LINES


# docs/capture.md: each block marked <!-- from FILE --> is FILE, and runs.

DOC = ROOT / "docs" / "capture.md"
BLOCK = re.compile(r"<!-- from (\S+) -->\n```python\n(.*?)```\n", re.S)


def doc_blocks() -> list[tuple[str, str]]:
    return BLOCK.findall(DOC.read_text())


def test_the_docs_blocks_are_the_files_the_tests_run() -> None:
    blocks = doc_blocks()
    assert len(blocks) >= 2
    for name, text in blocks:
        assert (ROOT / name).read_text() == text, name


@pytest.mark.parametrize("name", [name for name, _ in doc_blocks()] if DOC.exists() else [])
def test_the_docs_examples_run(name: str, tmp_path: Path) -> None:
    path = ROOT / name
    if "pytest" in path.name:
        done = child_pytest(path, cwd=tmp_path)
    else:
        done = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, textwrap.indent(done.stdout + done.stderr, "  ")


C_EXIT = """
import ctypes, sys
import pylogsink

if sys.argv[1] == "replaced":
    # Files written line by line: what reaches them before exit() stays.
    sys.stdout = open(sys.argv[2] + "/stdout", "w", buffering=1)
    sys.stderr = open(sys.argv[2] + "/stderr", "w", buffering=1)
libc = ctypes.CDLL(None)
with pylogsink.capture_output():
    # A C library that gives up: its last words, then exit(), which runs
    # the C atexit hooks and no Python.
    libc.dprintf(2, b"fatal: cannot open model file\\n")
    libc.printf(b"stdout: buffered by C stdio until exit\\n")
    libc.exit(1)
"""


@pytest.mark.parametrize("streams", ["own", "replaced"])
def test_c_exit_inside_a_capture_keeps_the_last_words(streams: str, tmp_path: Path) -> None:
    # Without the capture the lines are there 10 times in 10; a capture
    # kept the stderr line about once in 10 runs. A line is in the stream
    # (delivered before the exit) or on the original descriptor (the
    # exit's hook), never neither. With the streams replaced, rarely both:
    # the exit came while Python was writing it and had not finished
    # within the stall wait (a repeat is better than a loss). With the
    # process's own, never both: the hook takes what it writes (it once
    # wrote a copy, and the drain thread, still running, the line again:
    # once in about 70 runs on a loaded machine).
    def once(_: int) -> tuple[int, int, int]:
        for name in ("stdout", "stderr"):
            (tmp_path / name).write_bytes(b"")
        r = subprocess.run([sys.executable, "-c", C_EXIT, streams, str(tmp_path)], capture_output=True, timeout=30)
        out = r.stdout + ((tmp_path / "stdout").read_bytes() if streams == "replaced" else b"")
        err = r.stderr + ((tmp_path / "stderr").read_bytes() if streams == "replaced" else b"")
        return (
            r.returncode,
            err.count(b"fatal: cannot open model file\n"),
            out.count(b"stdout: buffered by C stdio until exit\n"),
        )

    runs = [once(run) for run in range(10)]
    if streams == "own":
        assert runs == [(1, 1, 1)] * 10
    else:
        assert all(code == 1 and err in (1, 2) and out in (1, 2) for code, err, out in runs), runs


@pytest.mark.timeout(120)
def test_captures_from_two_threads_deliver_every_line_to_the_replaced_stream() -> None:
    # Two threads begin and end captures all the time, overlapping: each
    # line goes to the stream current when its capture began, never to the
    # real fd 1 (284 of 400 arrived when an ending capture cleared the
    # streams a fresh one on the other thread had just set).
    done = python(
        """
        import io, os, sys, threading
        import pylogsink

        out = io.StringIO()
        sys.stdout = out

        def loop(tag):
            for i in range(200):
                with pylogsink.capture_output():
                    os.write(1, f"{tag} {i}\\n".encode())

        threads = [threading.Thread(target=loop, args=(tag,)) for tag in "ab"]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        sys.stdout = sys.__stdout__
        print(sorted(out.getvalue().splitlines()) == sorted(f"{t} {i}" for t in "ab" for i in range(200)))
        """,
        timeout=100,
    )
    assert done.stdout == "True\n", done.stdout[-2000:] + done.stderr[-2000:]


OUTLIVES = """
import subprocess, sys
import pylogsink

loop = "for i in $(seq 40); do echo child line $i; sleep 0.05; done"
if sys.argv[1] == "with":
    with pylogsink.capture_output():
        child = subprocess.Popen(["sh", "-c", loop])
else:
    pylogsink.start_output_capture()
    child = subprocess.Popen(["sh", "-c", loop])
    pylogsink.stop_output_capture()
print("child exit", child.wait(), flush=True)
"""


@pytest.mark.timeout(60)
@pytest.mark.parametrize("how", ["with", "start-stop"])
def test_a_child_that_outlives_the_capture_keeps_writing_to_the_original_stdout(how: str) -> None:
    # The child inherited the capture's pipe: once the capture ends, what
    # it writes goes on to the original fd 1 (it died of SIGPIPE, exit -13,
    # with none of its 40 lines, when the capture closed the pipe).
    done = subprocess.run([sys.executable, "-c", OUTLIVES, how], capture_output=True, text=True, timeout=50)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert [line for line in lines if line.startswith("child line")] == [f"child line {i}" for i in range(1, 41)]
    assert "child exit 0" in lines


SLOW_READER = """
import os, sys
import pylogsink

with pylogsink.capture_output():
    for start in range(0, 200_000, 1000):
        os.write(1, b"".join(b"y %d\\n" % i for i in range(start, start + 1000)))
print("left_out", pylogsink.runtime.log_stats()["left_out"], file=sys.stderr)
"""


@pytest.mark.timeout(60)
def test_a_reader_that_pauses_slows_the_writer_and_loses_nothing() -> None:
    # `python x.py | (sleep 1; grep -c y)`: the capture forwards to the
    # process's own stdout, a pipe whose reader sleeps first. The writer
    # waits for room, as it would without the capture (24,713 of 200,000
    # lines were left out when the capture read on and dropped).
    child = subprocess.Popen([sys.executable, "-c", SLOW_READER], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        time.sleep(1)
        out, err = child.communicate(timeout=50)
    finally:
        child.kill()
    assert child.returncode == 0, err
    lines = out.splitlines()
    assert len(lines) == 200_000
    assert lines == [b"y %d" % i for i in range(200_000)]
    assert err.decode().split() == ["left_out", "0"]


SLOW_STREAM = """
import os, sys, time, pylogsink

class Slow:
    # A replaced sys.stdout whose every write takes 150 ms (a busy
    # kernel's stream): Python keeps taking the lines, slowly.
    def __init__(self):
        self.lines = 0
    def write(self, text):
        time.sleep(0.15)
        self.lines += text.count("q" * 99 + "\\n")
        return len(text)
    def flush(self):
        pass

slow = Slow()
sys.stdout = slow
with pylogsink.capture_output(stderr=False):
    for _ in range(60):
        os.write(1, (b"q" * 99 + b"\\n") * 1000)  # the GIL released
sys.stdout = sys.__stdout__
print(slow.lines, pylogsink.runtime.log_stats()["left_out"])
"""


@pytest.mark.timeout(60)
def test_a_slow_python_stream_that_keeps_taking_loses_nothing() -> None:
    # 6 MB into a stream whose writes take longer than the 100 ms a full
    # pipe waits for a Python that takes nothing: once Python took lines,
    # the writer waits for it (up to 2 s at a time) instead of lines being
    # left out (41,651 of 60,000 were). Only a Python slow to take its first
    # lines (a loaded machine) may cost lines, at most the first 1 MiB, and
    # counted; here none, as a rule.
    done = python(SLOW_STREAM, timeout=50)
    assert done.returncode == 0, done.stderr
    delivered, left_out = map(int, done.stdout.split())
    assert delivered + left_out == 60_000
    assert left_out <= (1 << 20) // 100, left_out


# A stream that copies what it is given to the process's own stdout (a tee,
# as pytest's --capture=tee-sys makes; a copy with more around each line,
# as a logging tee's formatter makes). The copy goes to fd 1, which the
# capture points at its pipe: without care it is captured and given to the
# stream again, and again (one line came back 100 times a second).
TEE = """
import os, sys, time, pylogsink

class Tee:
    def __init__(self, prefix):
        self.prefix = prefix
        self.got = []

    def write(self, text):
        self.got.append(text)
        sys.__stdout__.write("".join(self.prefix + line for line in text.splitlines(True)))
        return len(text)

    def flush(self):
        pass

tee = Tee(sys.argv[1])
sys.stdout = tee
with pylogsink.capture_output():
    os.write(1, b"one C line\\n")
    time.sleep(1)
sys.stdout = sys.__stdout__
print("tee got", "".join(tee.got).count("one C line"), file=sys.__stderr__)
"""


@pytest.mark.parametrize("prefix", ["", "copy: "], ids=["same text", "more around it"])
def test_a_stream_that_copies_to_the_captured_stdout_gets_a_line_once(prefix: str) -> None:
    done = subprocess.run([sys.executable, "-c", TEE, prefix], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stderr.split()[-3:] == ["tee", "got", "1"], done.stderr
    assert done.stdout == prefix + "one C line\n"


TEE_SYS_TEST = """
import os, time
import pylogsink

def test_native_line():
    with pylogsink.capture_output():
        os.write(1, b"one C line\\n")
        time.sleep(1)
    assert False, "the report shows what was captured"
"""


def test_pytest_tee_sys_shows_a_captured_line_once_in_the_report_and_once_on_stdout(tmp_path: Path) -> None:
    (tmp_path / "test_tee.py").write_text(TEE_SYS_TEST)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--capture=tee-sys", "-p", "no:cacheprovider", "-q", "test_tee.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "1 failed" in done.stdout, done.stdout
    # One on the terminal (the tee), one in the report's captured stdout.
    assert done.stdout.splitlines().count("one C line") == 2, done.stdout


# A stream that forwards everything to the process's own stdout, and a
# process killed with SIGKILL once it has written 50,000 lines: every line
# reached the real stdout (the forwarding loop kept them all going round
# the pipe before, and the kill lost every one). Plain Python beside it.
FORWARD_THEN_KILLED = """
import contextlib, os, sys, time, pylogsink

class Forward:
    def write(self, text):
        return sys.__stdout__.write(text)

    def flush(self):
        sys.__stdout__.flush()

sys.stdout = Forward()
with pylogsink.capture_output() if sys.argv[1] == "capture" else contextlib.nullcontext():
    for i in range(50_000):
        os.write(1, b"line %d\\n" % i)
    sys.__stderr__.write("WROTE\\n")
    sys.__stderr__.flush()
    time.sleep(60)
"""


@pytest.mark.parametrize("how", ["capture", "plain"])
def test_a_forwarding_stream_killed_after_its_lines_keeps_them_all(how: str) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", FORWARD_THEN_KILLED, how], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    got: list[bytes] = []
    assert child.stdout is not None and child.stderr is not None
    reader = threading.Thread(target=lambda: got.append(child.stdout.read()))  # type: ignore[union-attr]
    reader.start()
    try:
        assert child.stderr.readline() == b"WROTE\n"
        time.sleep(0.5)  # more than the 100 ms that may be in flight
    finally:
        child.kill()
        child.wait()
        reader.join(30)
    lines = b"".join(got).splitlines()
    assert lines == [b"line %d" % i for i in range(50_000)]
