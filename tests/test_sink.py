"""The log function (sink.rs): fatal lines, lines outside any call when fd 2
has no room, and the accounting of every line."""

from __future__ import annotations

import contextlib
import io
import signal
import time

import pylogsink
from conftest import popen, python, records


def test_fatal_line_writes_the_kept_lines_first_then_aborts() -> None:
    # sys.stderr is replaced, so the Error line is kept when the Fatal line
    # comes; both must reach fd 2 before the abort.
    done = python("import io, sys, pylogsink; sys.stderr = io.StringIO(); pylogsink.abort_with_fatal()")
    assert done.returncode == -signal.SIGABRT
    got = [(r.split()[1], r.split("] ")[1]) for r in records(done.stderr)]
    assert got == [
        ("ERROR", "ETDump: debug buffer of 64 bytes is too small for event 3"),
        ("FATAL", "In function write_event(), assert failed: buffer has room"),
    ]


def test_outside_a_call_a_stalled_fd2_never_blocks_the_thread_long() -> None:
    # A native worker logs 2000 lines into a pipe nobody reads for a while:
    # it waits at most the stall wait once, the rest is queued (newest
    # 64 KiB) and written at the next chance.
    child = popen(
        """
        import time, pylogsink
        start = time.monotonic()
        pylogsink.start_background_logger(2000).join()
        print("took", time.monotonic() - start, flush=True)
        time.sleep(2)
        pylogsink.log_lines(0)
        """
    )
    time.sleep(1.5)
    out, err = child.communicate(timeout=30)
    assert child.returncode == 0
    assert float(out.split()[-1]) < 1.0
    text = err.decode()
    numbers = [int(r.rsplit(" ", 1)[1]) for r in records(text)]
    noted = sum(int(line.split()[1]) for line in text.splitlines() if line.startswith("[pylogsink]"))
    assert numbers == sorted(numbers) and numbers[-1] == 1999
    assert len(numbers) + noted == 2000


def test_every_line_is_written_or_counted(capsys: object) -> None:
    before = pylogsink.stats()
    buf = io.StringIO()
    counts = [1, 700, 5, 3000, 42]
    with contextlib.redirect_stderr(buf):
        for n in counts:
            pylogsink.log_lines(n, size=100)
    after = pylogsink.stats()
    text = buf.getvalue()
    noted = sum(int(line.split()[1]) for line in text.splitlines() if line.startswith("[pylogsink]"))
    assert after["emitted"] - before["emitted"] == sum(counts)
    assert len(records(text)) + noted == sum(counts)
    assert after["left_out"] - before["left_out"] == noted
