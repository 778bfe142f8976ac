"""Section 6: threads. 1, 2, 4, 8 threads logging at once into a pipe
that another process drains and checks: every line whole, none missing,
in order per thread. Beside it, the same with a blocking `write(2)` per
line. Its target counts the pipe runs of 1-2 and 12 too: a lost or torn
line is a bug, and fails the run.
"""

from __future__ import annotations

import statistics
from types import ModuleType

from children import run_child
from figures import target

BUDGET = {"rounds": (1, 3), "lines": (100_000, 400_000)}
THREADS = (1, 2, 4, 8)


def child(p: dict, b: ModuleType) -> dict:
    return {"ns": b.threads_lines(p["threads"], p["n"], p["size"], p["sink"])}


CHILDREN = {"threads": child}


def measure(p: dict) -> dict:
    runs: dict[str, list[dict]] = {}
    for _ in range(p["rounds"]):
        for threads in THREADS:
            for sink in ("pylogsink", "fd2"):
                n = p["lines"] // threads
                params = {"task": "threads", "threads": threads, "n": n, "size": 100, "sink": sink}
                r = run_child(params, "pipe", check_len=100)
                d = r["drained"]
                whole = d["bad"] == 0 and d["lines"] == threads * n and d["per_thread"][:threads] == [n] * threads
                runs.setdefault(f"{sink} {threads}", []).append(
                    {"lines_per_s": threads * n / r["ns"] * 1e9, "whole": whole, "in_order": d["out_of_order"] == 0}
                )
    return {
        key: {
            "lines_per_s": statistics.median(x["lines_per_s"] for x in v),
            "whole": all(x["whole"] for x in v),
            "in_order": all(x["in_order"] for x in v),
        }
        for key, v in runs.items()
    }


def targets(f: dict, figs: dict) -> list[dict]:
    # With the pipe runs of (1-2) and (12), when they ran.
    torn = sum(not v["whole"] for v in f.values()) + sum(
        not figs[k]["pipe"]["whole"] for k in ("direct", "peers") if k in figs
    )
    return [target("pipe runs with a torn or missing line", torn, "<=", 0)]


def report(f: dict) -> list[str]:
    def ok(x: dict) -> str:
        return ("yes" if x["whole"] else "NO") + (", yes" if x["in_order"] else ", NO")

    lines = [
        "6. threads logging at once into a pipe drained by another process (fd2: format + blocking write(2))",
        f"  {'threads':<8}{'pylogsink lines/s':>19}{'fd2 lines/s':>13}  all lines whole / in order per thread",
    ]
    for t in THREADS:
        a, w = f[f"pylogsink {t}"], f[f"fd2 {t}"]
        lines.append(f"  {t:<8}{a['lines_per_s']:>19,.0f}{w['lines_per_s']:>13,.0f}  {ok(a)} (fd2: {ok(w)})")
    return lines
