"""Routing within a call (call.rs): kept while sys.stderr is replaced,
direct to fd 2 while it is the process's own, nested calls joined."""

from __future__ import annotations

import contextlib
import io
import os
import signal
import sys
import time
from pathlib import Path

import pytest

import pylogsink
from conftest import WINDOWS_ALARM, lines_while_running, popen, python, records, run_unittest_buffered


def numbers(text: str) -> list[int]:
    """The line numbers of log_lines records in ``text``, in order."""
    return [int(r.split("] line ")[1].split()[0]) for r in records(text) if "] line " in r]


def test_capsys_receives_the_lines_in_order(capsys: pytest.CaptureFixture[str]) -> None:
    pylogsink.runtime.log_lines(50, "warn")
    err = capsys.readouterr().err
    assert numbers(err) == list(range(50))
    assert all(" WARN  " in r for r in records(err))


def test_redirect_stderr_gets_lines_when_the_call_returns() -> None:
    buf = io.StringIO()
    with contextlib.redirect_stderr(buf):
        # The callback runs inside the call: nothing is written yet.
        seen_during = pylogsink.runtime.with_callback(lambda: buf.getvalue())
        pylogsink.runtime.log_lines(3)
    assert seen_during == ""
    messages = [r.split("] ", 1)[1] for r in records(buf.getvalue())]
    assert messages[:3] == ["outer 1", "outer 2", "outer 3"]
    assert numbers(buf.getvalue()) == [0, 1, 2]


def test_nested_calls_join_the_outermost() -> None:
    buf = io.StringIO()
    with contextlib.redirect_stderr(buf):
        pylogsink.runtime.with_callback(lambda: pylogsink.runtime.log_lines(2))
    messages = [r.split("] ", 1)[1].rstrip(".") for r in records(buf.getvalue())]
    assert messages == ["outer 1", "line 0000000 of 2", "line 0000001 of 2", "outer 2", "outer 3"]


def test_lines_from_a_gil_released_part_belong_to_the_call() -> None:
    buf = io.StringIO()
    with contextlib.redirect_stderr(buf):
        pylogsink.runtime.log_lines(5, detach=True)
    assert numbers(buf.getvalue()) == list(range(5))


def test_bytes_that_are_not_utf8_arrive_escaped() -> None:
    buf = io.StringIO()
    with contextlib.redirect_stderr(buf):
        pylogsink.runtime.log_raw(b"Program identifier '\xff\xfe\x00\x1b' != expected 'ET12'", "error")
    (record,) = records(buf.getvalue())
    assert record.endswith("] Program identifier '\\xff\\xfe\\x00\\x1b' != expected 'ET12'")


def test_an_embedded_newline_continues_the_record() -> None:
    buf = io.StringIO()
    with contextlib.redirect_stderr(buf):
        pylogsink.runtime.log_raw(b"name: x\n[2026-01-01T00:00:00.000000Z ERROR forged.rs:1] forged")
    assert len(records(buf.getvalue())) == 1
    assert "\n    [2026-01-01T00:00:00.000000Z ERROR forged.rs:1] forged\n" in buf.getvalue()


def test_bad_arguments_raise_clear_errors() -> None:
    with pytest.raises(ValueError, match='unknown level "loud"'):
        pylogsink.runtime.log_lines(1, "loud")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown sink"):
        pylogsink.runtime.set_sink("fast")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="bad stall wait"):
        pylogsink.runtime.set_stall_wait(-1)


def test_unittest_buffer_holds_the_lines(tmp_path: Path) -> None:
    done = run_unittest_buffered(
        tmp_path,
        """
        def test_passes(self):
            pylogsink.runtime.log_raw(b'quiet line from a passing test')
        def test_fails(self):
            pylogsink.runtime.log_raw(b'first line from a failing test')
            pylogsink.runtime.log_raw(b'second line from a failing test')
            self.fail('on purpose')
        """,
    )
    assert done.returncode == 1
    out = done.stderr
    # Buffered: the passing test's line is discarded with its buffer, and the
    # failing test's lines appear in its report, after the traceback.
    assert "quiet line from a passing test" not in out
    report = out.split("AssertionError: on purpose", 1)[1]
    assert report.index("first line from a failing test") < report.index("second line from a failing test")


def test_own_stderr_lines_are_on_fd2_before_the_call_returns() -> None:
    # pytest replaces sys.stderr in this process, so the process's own
    # stderr is tested in a child: it logs, then hangs inside the call.
    got = lines_while_running("import pylogsink; pylogsink.runtime.log_then_hang(3, 60)", 3)
    assert [g.split("] ")[1].strip() for g in got] == [f"about to hang: line {i}" for i in range(3)]


def test_own_stderr_is_direct_and_ordered_with_python_output() -> None:
    done = python(
        """
        import sys, pylogsink
        print("before", file=sys.stderr, flush=True)
        pylogsink.runtime.log_lines(2)
        print("after", file=sys.stderr, flush=True)
        """
    )
    lines = done.stderr.splitlines()
    assert lines[0] == "before" and lines[-1] == "after"
    assert numbers(done.stderr) == [0, 1]


# Failed writes: the lines go to fd 2 instead, and the call's result stands.

BROKEN_STREAMS = {
    "write-raises": "class S:\n    def write(self, s): raise ValueError('broken')\n    def flush(self): pass\nsys.stderr = S()",
    "none": "sys.stderr = None",
    "no-write": "sys.stderr = object()",
}


@pytest.mark.parametrize("setup", BROKEN_STREAMS.values(), ids=BROKEN_STREAMS.keys())
def test_a_broken_stderr_sends_the_lines_to_fd2(setup: str) -> None:
    code = f"import sys, pylogsink\n{setup}\nprint('result', pylogsink.runtime.log_lines(3, 'warn'))\nsys.stderr = sys.__stderr__"
    done = python(code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "result 300"
    assert numbers(done.stderr) == [0, 1, 2]


def test_a_write_that_returns_nonsense_still_counts_as_written() -> None:
    class Odd:
        def __init__(self) -> None:
            self.parts: list[str] = []

        def write(self, text: str) -> str:
            self.parts.append(text)
            return "banana"

    odd = Odd()
    with contextlib.redirect_stderr(odd):  # type: ignore[type-var]
        assert pylogsink.runtime.log_lines(2) == 200
    assert numbers("".join(odd.parts)) == [0, 1]


def test_a_writer_that_calls_back_and_logs_neither_hangs_nor_loses_lines() -> None:
    done = python(
        """
        import sys, pylogsink
        class Echo:
            parts = []
            def write(self, text):
                self.parts.append(text)
                pylogsink.runtime.log_raw(b"logged by the writer")  # calls back in
                return len(text)
            def flush(self):
                pass
        sys.stderr = Echo()
        for _ in range(3):
            pylogsink.runtime.log_lines(2)
        sys.stderr = sys.__stderr__
        print(sum(p.count("] line ") for p in Echo.parts))
        """,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "6"
    # What the writer logged could not go through itself: it is on fd 2.
    assert [r.split("] ")[1] for r in records(done.stderr)] == ["logged by the writer"] * 3


# Interrupts: the original exception reaches the caller once the lines are out.

INTERRUPT_CHILD = """
import io, os, signal, sys, time, pylogsink
{alarm}
def trigger():
    print("trigger", flush=True)
    if sys.platform == "win32":
        alarm({signum}, 0.3)  # no signal comes from another process there

class Slow(io.StringIO):
    def write(self, text):
        if os.environ["SIGNAL_AT"] == "write":
            trigger()
            time.sleep(2)  # the signal lands here
        return super().write(text)

RAISED = {raised}
def handler(signum, frame):
    raise RAISED
signal.signal({signum}, handler)
sys.stderr = stream = Slow()
if os.environ["SIGNAL_AT"] == "call":
    trigger()
try:
    {body}
except BaseException as e:
    sys.stderr = sys.__stderr__
    print("same object:", e is RAISED)
    print("context:", type(e.__context__).__name__)
    print("kept:", stream.getvalue().count("] "))
"""


def run_interrupt(raised: str, signum: signal.Signals, body: str, at: str) -> tuple[list[str], str]:
    """Runs ``body`` in a child whose Python handler for ``signum`` raises
    ``raised``; the signal comes from this process, as Ctrl-C comes from a
    terminal, while the child is in the call (``at="call"``) or in the
    write of the call's lines (``at="write"``). On Windows the child raises
    it itself, as a moment later (``WINDOWS_ALARM``)."""
    alarm = WINDOWS_ALARM if sys.platform == "win32" else ""
    code = INTERRUPT_CHILD.format(raised=raised, signum=int(signum), body=body, alarm=alarm)
    child = popen(code, env=dict(os.environ, SIGNAL_AT=at))
    assert child.stdout is not None
    assert child.stdout.readline().rstrip() == b"trigger"
    # The child prints "trigger" just before it enters the call (or the
    # write); nothing it can tell from there: the signal comes a moment
    # later, while it is inside, by design of the scenario.
    if sys.platform != "win32":
        time.sleep(0.3)
        child.send_signal(signum)
    out, err = child.communicate(timeout=30)
    assert child.returncode == 0, err
    return out.decode().splitlines(), err.decode()


def test_ctrl_c_during_the_call_reaches_the_caller_after_the_lines() -> None:
    out, _ = run_interrupt("KeyboardInterrupt('ctrl-c')", signal.SIGINT, "pylogsink.runtime.log_until_interrupted(20)", "call")
    assert out == ["same object: True", "context: NoneType", "kept: 1"]


def test_sigterm_exit_during_the_write_is_raised_once_the_lines_are_out() -> None:
    # The call has returned; its kept line is being written when SIGTERM's
    # handler raises SystemExit. The line is not lost: it goes to fd 2 too.
    out, err = run_interrupt("SystemExit(7)", signal.SIGTERM, "pylogsink.runtime.log_lines(1)", "write")
    assert out[:2] == ["same object: True", "context: NoneType"]
    assert numbers(err) == [0]


# Any signal but SIGINT and SIGTERM: Windows has no SIGALRM, and Ctrl-Break's
# SIGBREAK stands for it there.
OTHER_SIGNAL = signal.SIGBREAK if sys.platform == "win32" else signal.SIGALRM


def test_any_exception_a_signal_handler_raises_during_the_write_is_raised() -> None:
    out, err = run_interrupt("TimeoutError('alarm')", OTHER_SIGNAL, "pylogsink.runtime.log_lines(1)", "write")
    assert out[0] == "same object: True"
    assert numbers(err) == [0]


def test_an_interrupt_during_the_write_chains_the_calls_own_error() -> None:
    out, _ = run_interrupt("KeyboardInterrupt('ctrl-c')", signal.SIGINT, "pylogsink.runtime.fail(1)", "write")
    assert out[:2] == ["same object: True", "context: RuntimeError"]


def test_a_panic_writes_the_kept_lines_then_raises_panic_exception() -> None:
    buf = io.StringIO()
    with contextlib.redirect_stderr(buf), pytest.raises(BaseException) as info:
        pylogsink.runtime.panic_after_logging()
    assert type(info.value).__name__ == "PanicException"
    assert "the runtime panicked" in str(info.value)
    assert [r.split("] ")[1] for r in records(buf.getvalue())] == ["about to panic"]


# How a call learns that sys.stderr was replaced. On CPython 3.12+ (abi3
# builds included) a call keeps the answer and a dict watcher on
# sys.__dict__ clears it; on 3.11 each call looks it up. Either way, every way of replacing or restoring sys.stderr (or sys.__stderr__)
# between two calls must be seen by the second. Each step below first
# makes a call that caches the answer, then changes sys, then logs.

STDERR_STEPS = """
import contextlib, io, json, sys, pylogsink
real = sys.stderr
bufs = {}

def buf(name):
    bufs[name] = io.StringIO()
    return bufs[name]

def log(tag):
    pylogsink.runtime.log_raw(("tag=" + tag).encode(), "warn")

log("own-0")
sys.stderr = buf("setattr")
log("setattr")
sys.stderr = real
log("own-1")
sys.__dict__["stderr"] = buf("dict-item")
log("dict-item")
sys.__dict__["stderr"] = real
log("own-2")
with contextlib.redirect_stderr(buf("redirect")):
    log("redirect")
log("own-3")
vars(sys).update(stderr=buf("update"))
log("update")
setattr(sys, "stderr", real)
log("own-4")
# A key equal to "stderr" that is not the interned string.
sys.__dict__["".join(["std", "err"])] = buf("equal-key")
log("equal-key")
sys.__dict__.pop("stderr")
sys.__dict__.setdefault("stderr", buf("pop-setdefault"))
log("pop-setdefault")
# sys.__stderr__ changes too: replaced by the same object, stderr is "own".
sys.__stderr__ = bufs["pop-setdefault"]
log("dunder-own")
sys.__stderr__ = real
log("dunder-back")
sys.stderr = real
sys.unrelated_name = 1
log("own-5")
print(json.dumps({"check": pylogsink.runtime.stderr_check(), "bufs": {k: v.getvalue() for k, v in bufs.items()}}))
"""


def test_each_way_of_replacing_sys_stderr_is_seen_at_the_next_call() -> None:
    import json

    done = python(STDERR_STEPS)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    where: dict[str, list[str]] = {}
    for place, text in [("fd2", done.stderr), *out["bufs"].items()]:
        for r in records(text):
            where.setdefault(r.split("tag=", 1)[1], []).append(place)
    expected = {f"own-{i}": ["fd2"] for i in range(6)}
    expected.update({name: [name] for name in out["bufs"]})
    # stderr is sys.__stderr__ (the same StringIO): lines go to fd 2.
    expected["dunder-own"] = ["fd2"]
    # sys.__stderr__ is back, sys.stderr still the StringIO: kept, written there.
    expected["dunder-back"] = ["pop-setdefault"]
    assert where == expected, out["check"]


def test_the_answer_is_kept_until_sys_dict_changes() -> None:
    # CPython 3.12+ keep it with a dict watcher, found in the running
    # interpreter, so an abi3 build uses it too (scripts/
    # test_pyo3_versions.sh imports abi3 builds on 3.12+); 3.11 with the
    # dict's version tag. Each way of changing sys.stderr is seen at the
    # next call with either (the test above).
    expected = "dict watcher" if sys.version_info >= (3, 12) else "dict version"
    assert pylogsink.runtime.stderr_check() == expected
