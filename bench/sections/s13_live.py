"""Section 13: live delivery. A call that releases the GIL logs one line
every 5 ms through the demo runtime (pylogsink's own package); each line
is timed from when it was logged (`LogRecord.created`; the line's own
timestamp) to when a logging handler, then a replaced `sys.stderr`, got
it. Median, p99 and max in ms. Target: p99 <= 50 ms.
"""

from __future__ import annotations

import datetime
import logging
import sys
import time
from types import ModuleType

from children import run_child
from figures import medians, target

BUDGET = {"count": (100, 400)}
WHERE = (("logging", "a logging handler"), ("stderr", "a replaced sys.stderr"))


def child(p: dict, b: ModuleType) -> dict:
    import pylogsink

    def logged_at(line: str) -> float:
        stamp = datetime.datetime.strptime(line[1:28], "%Y-%m-%dT%H:%M:%S.%fZ")
        return stamp.replace(tzinfo=datetime.timezone.utc).timestamp()

    latency: dict[str, list[float]] = {"logging": [], "stderr": []}

    class Handler(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            latency["logging"].append((time.time() - record.created) * 1e3)

    class Stream:
        def write(self, text: str) -> int:
            now = time.time()
            latency["stderr"].extend((now - logged_at(line)) * 1e3 for line in text.splitlines())
            return len(text)

        def flush(self) -> None:
            pass

    logger = logging.getLogger("_pylogsink.runtime")
    logger.addHandler(Handler())
    logger.setLevel(logging.INFO)
    pylogsink.runtime.set_log_destination("logging")
    pylogsink.runtime.log_slowly(p["count"], 0.005)
    pylogsink.runtime.set_log_destination("stderr")
    sys.stderr = Stream()
    try:
        pylogsink.runtime.log_slowly(p["count"], 0.005)
    finally:
        sys.stderr = sys.__stderr__
    for name, ms in latency.items():
        if len(ms) != p["count"]:
            raise AssertionError(f"{name}: {len(ms)} of {p['count']} lines")
    return {"ms": latency}


CHILDREN = {"live": child}


def measure(p: dict) -> dict:
    live = run_child({"task": "live", **p}, "null")
    live["median_ms"] = medians(live["ms"])
    live["p99_ms"] = {k: sorted(v)[int(len(v) * 0.99) - 1] for k, v in live["ms"].items()}
    return live


def targets(live: dict, figs: dict) -> list[dict]:
    return [target(f"live delivery p99 ({name}), ms", live["p99_ms"][name], "<=", 50, "ms") for name, _ in WHERE]


def report(live: dict) -> list[str]:
    lines = ["live delivery: a call that releases the GIL logs a line every 5 ms; ms from logged to handed over"]
    for name, what in WHERE:
        lines.append(
            f"  to {what}: median {live['median_ms'][name]:.1f}, p99 {live['p99_ms'][name]:.1f}, "
            f"max {max(live['ms'][name]):.1f} ({len(live['ms'][name])} lines)"
        )
    return lines
