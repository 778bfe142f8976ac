"""Section 14: the `logging` destination while another Python thread
keeps the GIL busy: the case pylogsink exists for, a native thread that
logs while Python runs.

A Python thread spins in pure Python (`while not stop: x += 1`) so that
the GIL is always wanted; records are logged by a thread that does not
hold it, 100-byte Info records to the handler of (10), and only the
native loop is timed, in ns per record. After each run the child waits
(up to 10 s) until the handler got every record, so the figure counts
records delivered. pylogsink, twice, as the bench module can drive it
both ways: from a native thread of its own outside any call
(`pylogsink::emit`; each record waits in the process-wide queue, and
pylogsink's delivery thread hands it to `logging` within ~100 ms), and
from the calling thread inside `pylogsink::call` with the GIL released
(`py.detach`; records wait in the call, handed over while it runs by the
same delivery thread, the rest at its return, not timed). Neither takes
the GIL in the loop. pyo3-log: `log::info!` from a native thread of its
own, which takes the GIL for every record and so waits until the
spinning thread lets it go (up to the switch interval, 5 ms by default,
left as it is; a record that comes right after the thread let the GIL go
may win it back at once): it logs far fewer records per run (`BUDGET`),
which is fair as the figure is per record. Target: pylogsink <= 200 ns
per record (median of rounds), each way; pyo3-log's ns per record and the
ratio beside it.
"""

from __future__ import annotations

import sys
import threading
import time
from types import ModuleType

from children import run_child
from figures import interleaved, median_ratio, medians, target
from records import line_message, logging_setup

# pyo3-log waits for the GIL at every record (about the switch interval,
# 5 ms): it logs fewer records per round.
BUDGET = {"rounds": (5, 11), "n": 5_000, "pyo3_log_n": (20, 200)}


def child(p: dict, b: ModuleType) -> dict:
    """Records logged without the GIL while a Python thread spins in pure
    Python, so that the GIL is always wanted. pylogsink (the `logging`
    destination, records kept natively for its delivery thread), from a
    native thread outside any call and inside a call that released the
    GIL, against pyo3-log from a native thread. Only the native loop is
    timed; each run then waits until the handler got every record."""
    b.install("pyo3-log")
    handler, _ = logging_setup(b, "INFO", "NOTSET")
    message = line_message(b, 100)
    # A first call with the `logging` destination starts pylogsink's
    # delivery thread.
    b.logging_calls(1, 1, message)
    counts = {"outside": p["n"], "in_call": p["n"], "pyo3-log": p["pyo3_log_n"]}

    def run(name: str, n: int | None = None) -> float:
        n = n or counts[name]
        handler.count = 0
        ns = b.gil_busy_lines(n, message, name)
        # pyo3-log handles each record before it returns; pylogsink's
        # thread within ~100 ms (longer here: it waits for the GIL too).
        deadline = time.monotonic() + 10
        while handler.count < n and time.monotonic() < deadline:
            time.sleep(0.01)
        if handler.count != n:
            raise AssertionError(f"{name}: the handler got {handler.count} of {n} records")
        return ns / n

    stop, spins = False, [0]

    def busy() -> None:
        x = 0
        while not stop:
            x += 1
        spins[0] = x

    spinner = threading.Thread(target=busy, name="busy")
    spinner.start()
    try:
        for name in counts:
            run(name, 5)
        ns = interleaved(p["rounds"], {name: lambda name=name: run(name) for name in counts})
    finally:
        stop = True
        spinner.join()
    return {"ns_per_record": ns, "n": counts, "switch_interval_s": sys.getswitchinterval(), "spins": spins[0]}


CHILDREN = {"gil_busy": child}


def measure(p: dict) -> dict:
    g = run_child({"task": "gil_busy", **p}, "null")
    ns = g["ns_per_record"]
    g["ns"] = medians(ns)
    g["ratio_outside"] = median_ratio(ns["pyo3-log"], ns["outside"])
    g["ratio_in_call"] = median_ratio(ns["pyo3-log"], ns["in_call"])
    return g


def targets(g: dict, figs: dict) -> list[dict]:
    return [
        target("GIL busy: pylogsink outside a call, ns", g["ns"]["outside"], "<=", 200, "ns"),
        target("GIL busy: pylogsink in a call, ns", g["ns"]["in_call"], "<=", 200, "ns"),
    ]


def report(g: dict) -> list[str]:
    low = {k: min(v) for k, v in g["ns_per_record"].items()}
    return [
        "14. logging without the GIL while another Python thread spins in pure Python (switch interval "
        f"{g['switch_interval_s'] * 1e3:g} ms),",
        "  100 B Info records to the handler of (10), ns per record over the native loop only (median of",
        "  rounds, min in parentheses); every record reached the handler before the next run",
        f"  pylogsink, a native thread outside any call: {g['ns']['outside']:.0f} ({low['outside']:.0f}), "
        f"{g['n']['outside']:,} records per run",
        f"  pylogsink, in a call that released the GIL: {g['ns']['in_call']:.0f} ({low['in_call']:.0f}), "
        f"{g['n']['in_call']:,} records per run",
        f"  pyo3-log, a native thread: {g['ns']['pyo3-log']:,.0f} ({low['pyo3-log']:,.0f}), "
        f"{g['n']['pyo3-log']:,} records per run (each waits for the GIL)",
        f"  pyo3-log / pylogsink: {g['ratio_outside']:,.0f}x outside a call, {g['ratio_in_call']:,.0f}x in a call",
    ]
