"""Section 17: lines delivered against plain Python. The bursts a user
meets (a call of 5,000 lines that holds the GIL, 12,000 at once from one
that released it, 3,000 into a stream whose `write` takes 1 ms, 5,000
from a native thread outside any call, 10 MB past the budget, 50,000
records for `logging`), each twice in one process: written by a Python
thread, as plain Python delivers it, and logged through pylogsink. Then
what a thread logged before it was joined, counted at the statement after
the join with no wait. Targets: pylogsink delivers at least what plain
Python does, in both tables (the least ratio of each).
"""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Callable
from types import ModuleType

from children import run_child
from figures import target

BUDGET: dict = {}


class Count(logging.Handler):
    """A handler that counts the records it gets, the root's in the child."""

    n = 0

    def emit(self, record: logging.LogRecord) -> None:
        Count.n += 1


def child(p: dict, b: ModuleType) -> dict:
    """Bursts as plain Python delivers them (a Python thread that writes the
    same number of lines to the same kind of stream; logging.info for
    records) and as pylogsink does, one after the other in this process:
    lines that reached the stream, and pylogsink's count of lines left out."""
    import contextlib
    import io
    import time

    import pylogsink

    rt = pylogsink.runtime

    class Slow(io.StringIO):
        def write(self, s: str) -> int:
            time.sleep(0.001)
            return super().write(s)

    def lines_in(stream: io.StringIO) -> int:
        return sum(1 for line in stream.getvalue().splitlines() if not line.startswith("[pylogsink]"))

    def plain(n: int, stream: io.StringIO) -> int:
        line = "x" * 99 + "\n"
        t = threading.Thread(target=lambda: [stream.write(line) for _ in range(n)])
        t.start()
        t.join()
        return lines_in(stream)

    def with_pylogsink(n: int, stream: io.StringIO, run: Callable[[int], object]) -> tuple[int, int]:
        left_out = rt.log_stats()["left_out"]
        with contextlib.redirect_stderr(stream):
            run(n)
            give_up = time.monotonic() + 10
            while lines_in(stream) < n and time.monotonic() < give_up:
                time.sleep(0.01)
        return lines_in(stream), rt.log_stats()["left_out"] - left_out

    scenarios = [
        ("one call holding the GIL, 5,000 lines", 5_000, io.StringIO, lambda n: rt.log_lines(n, size=100)),
        ("one call, GIL released, 12,000 lines", 12_000, io.StringIO, lambda n: rt.log_lines(n, size=100, detach=True)),
        ("write takes 1 ms, 3,000 lines (GIL released)", 3_000, Slow, lambda n: rt.log_lines(n, size=100, detach=True)),
        ("a native thread outside any call, 5,000", 5_000, io.StringIO, lambda n: rt.start_background_logger(n).join()),
        ("100,000 lines, GIL released (10 MB)", 100_000, io.StringIO, lambda n: rt.log_lines(n, size=100, detach=True)),
    ]
    rows = []
    for name, n, make, run in scenarios:
        got, left_out = with_pylogsink(n, make(), run)
        rows.append({"name": name, "n": n, "plain": plain(n, make()), "pylogsink": got, "left_out": left_out})

    root = logging.getLogger()
    root.addHandler(Count())
    root.setLevel(logging.INFO)
    n = 50_000
    t = threading.Thread(target=lambda: [logging.getLogger("plain").info("x" * 99) for _ in range(n)])
    t.start()
    t.join()
    plain_records, Count.n = Count.n, 0
    left_out = rt.log_stats()["left_out"]
    rt.set_log_destination("logging")
    rt.log_lines(n, size=100)
    rt.set_log_destination("stderr")
    rows.append(
        {
            "name": "50,000 records, logging destination",
            "n": n,
            "plain": plain_records,
            "pylogsink": Count.n,
            "left_out": rt.log_stats()["left_out"] - left_out,
        }
    )
    return {"rows": rows, "next_statement": next_statement(rt)}


def next_statement(rt: ModuleType) -> list[dict]:
    """Lines and records a thread logged before it was joined, counted at
    the statement after the join, with no wait: a Python thread writing
    (logging.info for records), and a native thread outside any call."""
    import contextlib
    import io

    def count(stream: io.StringIO) -> int:
        return sum(1 for line in stream.getvalue().splitlines() if not line.startswith("[pylogsink]"))

    rows = []
    for n in (300, 12_000):
        plain = io.StringIO()
        with contextlib.redirect_stderr(plain):
            t = threading.Thread(target=lambda: [sys.stderr.write("x" * 99 + "\n") for _ in range(n)])
            t.start()
            t.join()
            plain_got = count(plain)
        ours = io.StringIO()
        with contextlib.redirect_stderr(ours):
            rt.start_background_logger(n).join()
            ours_got = count(ours)
        rows.append({"name": f"{n:,} lines into redirect_stderr", "n": n, "plain": plain_got, "pylogsink": ours_got})
    n = 5_000
    Count.n = 0
    t = threading.Thread(target=lambda: [logging.getLogger("plain").info("x" * 99) for _ in range(n)])
    t.start()
    t.join()
    plain_got, Count.n = Count.n, 0
    rt.set_log_destination("logging")
    rt.start_background_logger(n).join()
    ours_got = Count.n
    rt.set_log_destination("stderr")
    rows.append({"name": f"{n:,} records, logging destination", "n": n, "plain": plain_got, "pylogsink": ours_got})
    return rows


CHILDREN = {"delivered": child}


def measure(p: dict) -> dict:
    return run_child({"task": "delivered", **p}, "null")


def least(rows: list[dict]) -> float:
    """The least ratio of lines delivered, pylogsink's to plain Python's."""
    return min(r["pylogsink"] / max(1, r["plain"]) for r in rows)


def targets(d: dict, figs: dict) -> list[dict]:
    return [
        target("lines delivered, pylogsink / plain (least)", least(d["rows"]), ">=", 1, "x"),
        target("joined thread's lines at next statement, / plain", least(d["next_statement"]), ">=", 1, "x"),
    ]


def report(d: dict) -> list[str]:
    lines = [
        "17. lines delivered, against plain Python (a Python thread writing as many lines to the same",
        "  kind of stream; logging.info for records), in one process, one after the other",
        f"  {'burst':<46}{'plain Python':>13}{'pylogsink':>11}{'left out':>10}",
    ]
    for r in d["rows"]:
        lines.append(f"  {r['name']:<46}{r['plain']:>13,}{r['pylogsink']:>11,}{r['left_out']:>10,}")
    lines += [
        "  logged before a join (a Python thread; pylogsink: a native thread outside any call),",
        "  counted at the statement after the join, with no wait",
        f"  {'burst':<46}{'plain Python':>13}{'pylogsink':>11}",
    ]
    for r in d["next_statement"]:
        lines.append(f"  {r['name']:<46}{r['plain']:>13,}{r['pylogsink']:>11,}")
    return lines
