"""``log_stats()["left_out"]`` (dest/dropped.rs): what a budget leaves out
is counted the moment it leaves, and a note stands in its place where the
buffer is written, so once the notes are out the count equals their total,
in every destination: a call's lines for stderr, a call's records for ``logging``,
the process-wide queue of lines logged outside any call, and the queue of
records logged outside any call.

Each scenario runs in a child process, with a timeout: the counts are the
process's own, and the queue needs the process's own stderr."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time

from conftest import SMALL_BUDGET_ENV, popen, python, records

# "[pylogsink] 12 lines (1200 bytes) left out here: ..." on fd 2, and
# "12 records (1200 bytes) left out here: ..." as a logging Warning.
NOTE = re.compile(r"(?:\[pylogsink\] )?(\d+) (?:line|record)s? \((\d+) bytes\) left out here")


def child_env() -> dict[str, str]:
    """The small budget: these tests overflow it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PYLOGSINK_"))}
    return {**env, **SMALL_BUDGET_ENV}


def noted(notes: list[str]) -> int:
    """The lines and records that the notes among ``notes`` say were left out."""
    return sum(int(m.group(1)) for m in map(NOTE.match, notes) if m)


def last_json(stdout: str) -> dict[str, int]:
    return json.loads(stdout.splitlines()[-1])


COUNTS = (3000, 10, 5000)  # 100-byte lines: the first and last overflow 64 KiB
# Records for logging: the first and last overflow 10,000 records.
RECORD_COUNTS = (12_000, 10, 15_000)


def test_the_stderr_budget_counts_what_its_notes_say() -> None:
    done = python(
        f"""
        import contextlib, io, json, pylogsink
        buf = io.StringIO()
        with contextlib.redirect_stderr(buf):
            for n in {COUNTS}:
                pylogsink.runtime.log_lines(n, size=100)
        print(json.dumps({{"text": buf.getvalue(), **pylogsink.runtime.log_stats()}}))
        """,
        env=child_env(),
    )
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    lines = got["text"].splitlines()
    left_out = noted(lines)
    assert left_out > 0
    assert len(records(got["text"])) + left_out == sum(COUNTS) == got["info"]
    assert got["left_out"] == left_out


# Counts the records a handler gets, and what the notes (Warnings of the
# "pylogsink" logger) say was left out; prints them with log_stats at exit,
# once pylogsink's own exit delivery is done (atexit runs in reverse order
# of registration, and pylogsink registers its own later).
COUNTING_HANDLER = r"""
import atexit, json, logging, re, sys
import pylogsink
NOTE = re.compile(r"(\d+) records \((\d+) bytes\) left out here")
counts = {"records": 0, "noted": 0, "notes": 0}

class Count(logging.Handler):
    def emit(self, record):
        if record.name == "pylogsink":
            counts["notes"] += 1
            counts["noted"] += int(NOTE.match(record.getMessage()).group(1))
        else:
            counts["records"] += 1

def report():
    sys.stdout.write(json.dumps({**counts, **pylogsink.runtime.log_stats()}) + "\n")

atexit.register(report)
logging.getLogger().addHandler(Count())
logging.getLogger().setLevel(logging.INFO)
pylogsink.runtime.set_log_destination("logging")
pylogsink.runtime.noop_in_call()
"""


def test_the_logging_budget_of_a_call_counts_what_its_notes_say() -> None:
    done = python(
        COUNTING_HANDLER
        + f"""
for n in {RECORD_COUNTS}:
    pylogsink.runtime.log_lines(n, size=100)
""",
        env=child_env(),
    )
    assert done.returncode == 0, done.stderr
    got = last_json(done.stdout)
    assert got["notes"] == 2, "the two calls over the budget"
    assert got["noted"] == 2000 + 5000
    assert got["records"] + got["noted"] == sum(RECORD_COUNTS) == got["info"]
    assert got["left_out"] == got["noted"]


def test_the_builder_sets_the_logging_budget() -> None:
    # The demo module hands PYLOGSINK_DEMO_LOGGING_BUDGET to
    # Builder::logging_budget: 100 records within 1,000,000 bytes.
    done = python(
        COUNTING_HANDLER
        + """
pylogsink.runtime.log_lines(500, size=100)
""",
        env={**child_env(), "PYLOGSINK_DEMO_LOGGING_BUDGET": "100,1000000", "PYLOGSINK_BUDGET": ""},
    )
    assert done.returncode == 0, done.stderr
    got = last_json(done.stdout)
    assert (got["records"], got["noted"], got["notes"]) == (100, 400, 1)
    assert got["left_out"] == 400


def test_a_million_records_outside_any_call_count_what_the_notes_say() -> None:
    # A native thread logs 1,000,000 records outside any call, as fast as
    # it can: pylogsink's delivery thread hands them to logging, the thread
    # waits for room in the queue (10,000 records here) while they are
    # handed over, and notes stand for any left out when it gave up waiting
    # (some 8,000 here, none under wine). About five seconds here.
    count = 1_000_000
    started = time.monotonic()
    done = python(
        COUNTING_HANDLER
        + f"""
pylogsink.runtime.start_background_logger({count}).join()
""",
        timeout=120,
        env=child_env(),
    )
    took = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    got = last_json(done.stdout)
    assert got["info"] == count
    assert got["records"] + got["noted"] == count, got
    assert got["records"] > count // 2, "the thread waited for room while logging took"
    assert got["left_out"] == got["noted"], got
    assert done.stderr == ""
    print(f"{count} records: {got['records']} handled, {got['noted']} in {got['notes']} notes, {took:.1f} s")


def test_the_process_queue_counts_what_its_notes_say() -> None:
    # A native thread logs outside any call into fd 2, a pipe the parent
    # does not read for a second: once it is full, lines wait in the
    # process-wide queue (its newest 64 KiB), and a note stands for the
    # rest when the queue goes out, at the next call's return.
    count = 5000
    # On Windows each line that finds the pipe full hands its write to
    # pylogsink's writer thread and cancels it (test_sink.py): there the
    # 5000 lines take about a second, so the pipe is left unread longer.
    unread = 3 if sys.platform == "win32" else 1
    child = popen(
        f"""
        import json, sys, time, pylogsink
        pylogsink.runtime.start_background_logger({count}).join()
        time.sleep({unread + 1})
        pylogsink.runtime.log_lines(0)
        print(json.dumps(pylogsink.runtime.log_stats()), flush=True)
        """,
        env=child_env(),
    )
    time.sleep(unread)
    out, err = child.communicate(timeout=60)
    assert child.returncode == 0, err.decode()
    text = err.decode()
    got = last_json(out.decode())
    left_out = noted(text.splitlines())
    assert left_out > 0, "the queue overflowed"
    assert len(records(text)) + left_out == count == got["info"]
    assert got["left_out"] == left_out


def test_lines_are_counted_as_they_leave_while_fd_2_takes_nothing() -> None:
    # fd 2 is a pipe the parent does not read: a call that holds the GIL
    # logs 5,000 lines of 100 B, more than the pipe and the call's budget
    # hold together. The count says lines are gone while nothing was read
    # (no note could be written yet), and at the end the lines read and
    # the notes' counts add up to what was logged.
    count = 5000
    child = popen(
        f"""
        import json, sys, time, pylogsink
        started = time.monotonic()
        pylogsink.runtime.log_lines({count}, size=100)
        left_out = pylogsink.runtime.log_stats()["left_out"]
        print(json.dumps({{"left_out": left_out, "after": time.monotonic() - started}}), flush=True)
        sys.stdin.readline()
        pylogsink.runtime.noop_in_call()
        print(json.dumps(pylogsink.runtime.log_stats()), flush=True)
        """,
        env=child_env(),
        stdin=subprocess.PIPE,
    )
    assert child.stdout is not None and child.stdin is not None
    early = json.loads(child.stdout.readline())
    # Nothing was read yet, so no note could be written: the count alone
    # says lines are gone (a second or so after the drop; more on a loaded
    # machine).
    assert early["left_out"] > 0, early
    assert early["after"] < 10, early
    child.stdin.write(b"go\n")
    child.stdin.flush()
    out, err = child.communicate(timeout=60)
    assert child.returncode == 0, err.decode()
    text = err.decode()
    got = last_json(out.decode())
    left_out = noted(text.splitlines())
    assert got["left_out"] == left_out >= early["left_out"]
    assert len(records(text)) + left_out == count == got["info"]
