"""The log function (core/emit.rs): fatal lines, lines outside any call when fd 2
has no room, and the accounting of every line."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
import threading
import time

import pylogsink
from conftest import ABORTED, SMALL_BUDGET_ENV, popen, python, records


def test_fatal_line_writes_the_kept_lines_first_then_aborts() -> None:
    # sys.stderr is replaced, so the Error line is kept when the Fatal line
    # comes; both must reach fd 2 before the abort.
    done = python("import io, sys, pylogsink; sys.stderr = io.StringIO(); pylogsink.runtime.abort_with_fatal()")
    assert done.returncode == ABORTED
    got = [(r.split()[1], r.split("] ")[1]) for r in records(done.stderr)]
    assert got == [
        ("ERROR", "ETDump: debug buffer of 64 bytes is too small for event 3"),
        ("FATAL", "In function write_event(), assert failed: buffer has room"),
    ]


def test_outside_a_call_a_stalled_fd2_never_blocks_the_thread_long() -> None:
    # A native worker logs 2000 lines into a pipe nobody reads for a while:
    # it waits at most the stall wait once, the rest is queued (newest
    # 64 KiB: the small budget) and written at the next chance.
    child = popen(
        """
        import time, pylogsink
        start = time.monotonic()
        pylogsink.runtime.start_background_logger(2000).join()
        print("took", time.monotonic() - start, flush=True)
        time.sleep(2)
        pylogsink.runtime.log_lines(0)
        """,
        env={**os.environ, **SMALL_BUDGET_ENV},
    )
    time.sleep(1.5)
    out, err = child.communicate(timeout=30)
    assert child.returncode == 0
    # On Windows a pipe cannot tell its free room: each line outside a call
    # that finds fd 2 stalled hands its write to pylogsink's writer thread
    # and cancels it (about 0.5 ms under wine), where elsewhere a write that
    # cannot block fails at once.
    assert float(out.split()[-1]) < (2.0 if sys.platform == "win32" else 1.0)
    text = err.decode()
    numbers = [int(r.rsplit(" ", 1)[1]) for r in records(text)]
    noted = sum(int(line.split()[1]) for line in text.splitlines() if line.startswith("[pylogsink]"))
    assert numbers == sorted(numbers) and numbers[-1] == 1999
    assert noted > 0, "fd 2 stalled: the queue left lines out"
    assert len(numbers) + noted == 2000


def test_every_line_is_written_or_counted(capsys: object) -> None:
    before = pylogsink.runtime.log_stats()
    buf = io.StringIO()
    counts = [1, 700, 5, 3000, 42]
    with contextlib.redirect_stderr(buf):
        for n in counts:
            pylogsink.runtime.log_lines(n, size=100)
    after = pylogsink.runtime.log_stats()
    text = buf.getvalue()
    noted = sum(int(line.split()[1]) for line in text.splitlines() if line.startswith("[pylogsink]"))
    assert after["emitted"] - before["emitted"] == sum(counts)
    assert len(records(text)) + noted == sum(counts)
    assert after["left_out"] - before["left_out"] == noted


def test_the_queue_goes_out_at_the_next_calls_return() -> None:
    # Lines a native worker queued while nobody read fd 2 go out when the
    # next call returns, not only at exit: the process is still alive, and
    # blocked, when they are read.
    child = popen(
        """
        import sys, time, pylogsink
        pylogsink.runtime.start_background_logger(2000).join()
        sys.stdin.readline()  # the reader is back
        pylogsink.runtime.log_lines(0)
        print("returned", flush=True)
        time.sleep(60)
        """,
        stdin=subprocess.PIPE,
    )
    try:
        assert child.stdin is not None and child.stdout is not None and child.stderr is not None
        time.sleep(1.0)  # nobody reads fd 2 meanwhile
        child.stdin.write(b"go\n")
        child.stdin.flush()
        # A thread reads fd 2 (on Windows select takes sockets only).
        chunks: list[bytes] = []
        stderr = child.stderr

        def read() -> None:
            while chunk := stderr.read1(65536):
                chunks.append(chunk)

        threading.Thread(target=read, daemon=True).start()
        deadline = time.monotonic() + 20
        while b"background line 1999\n" not in b"".join(chunks) and time.monotonic() < deadline:
            time.sleep(0.1)
        text = b"".join(chunks)
        assert child.stdout.readline().rstrip(b"\r\n") == b"returned"
        assert child.poll() is None, "the lines came before exit"
        decoded = text.decode()
        numbers = [int(r.rsplit(" ", 1)[1]) for r in records(decoded)]
        noted = sum(int(line.split()[1]) for line in decoded.splitlines() if line.startswith("[pylogsink]"))
        assert numbers[-1] == 1999 and len(numbers) + noted == 2000
    finally:
        child.kill()
        child.wait()
