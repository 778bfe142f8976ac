"""Section 7: memory. Resident set size over a million calls that log 3
lines each with `sys.stderr` replaced by a writer that discards. Target:
flat.
"""

from __future__ import annotations

import os
import sys
import time
from types import ModuleType

from children import run_child
from figures import target

BUDGET = {"calls": (200_000, 1_000_000)}


def rss_kib() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024


def child(p: dict, b: ModuleType) -> dict:
    class Discard:
        def write(self, s: str) -> int:
            return len(s)

        def flush(self) -> None:
            pass

    sys.stderr = Discard()
    calls, steps = p["calls"], 10
    f = b.log_call
    rss = [(0, rss_kib())]
    start = time.perf_counter()
    for step in range(1, steps + 1):
        for _ in range(calls // steps):
            f(3, 100)
        rss.append((step * calls // steps, rss_kib()))
    seconds = time.perf_counter() - start
    sys.stderr = sys.__stderr__
    emitted, left_out, _ = b.stats()
    return {"rss_kib": rss, "seconds": seconds, "emitted": emitted, "left_out": left_out}


CHILDREN = {"memory": child}


def measure(p: dict) -> dict:
    m = run_child({"task": "memory", **p}, "null")
    rss = m["rss_kib"]
    m["growth_kib"] = rss[-1][1] - rss[1][1]
    return m


def targets(m: dict, figs: dict) -> list[dict]:
    return [target(f"RSS growth after the first {m['rss_kib'][1][0] // 1000}k calls", m["growth_kib"], "<=", 1024, "KiB")]


def report(m: dict) -> list[str]:
    return [
        f"7. RSS over {m['rss_kib'][-1][0]:,} calls logging 3 kept lines each ({m['seconds']:.1f} s)",
        "  " + ", ".join(f"{c // 1000}k: {r:,} KiB" for c, r in m["rss_kib"]),
    ]
