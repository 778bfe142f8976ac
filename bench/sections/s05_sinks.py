"""Section 5: lines per second. pylogsink (direct to fd 2) against the
naive sink (each line through `sys.stderr.write`, with the GIL) and
against pyo3-log with a logging.StreamHandler, all to the same fd
(/dev/null, then a regular file), in the same child. Target: >= 10x
pyo3-log.
"""

from __future__ import annotations

import logging
import sys
from types import ModuleType

from children import run_child
from figures import interleaved, median_ratio, medians, target
from records import TARGET, line_formatter, line_message

BUDGET = {"rounds": (3, 7), "n": (60_000, 300_000)}


def child(p: dict, b: ModuleType) -> dict:
    b.install("pyo3-log")
    handler = logging.StreamHandler(sys.stderr)
    fmt = line_formatter()
    handler.setFormatter(fmt)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO)
    size = 100
    message = line_message(b, size)
    sample = logging.LogRecord(TARGET.replace("::", "."), logging.INFO, "src/lib.rs", 170, message, (), None)
    n = p["n"]
    counts = {"pylogsink": n, "naive": n // 5, "pyo3-log": n // 20}
    sinks = {
        "pylogsink": lambda k: b.direct_lines(k, size),
        "naive": lambda k: b.naive_lines(k, size),
        "pyo3-log": lambda k: b.pyo3log_lines(k, message),
    }
    for name, run in sinks.items():
        run(200)
    lines_per_s = interleaved(
        p["rounds"], {name: lambda n=counts[name], run=run: n / run(n) * 1e9 for name, run in sinks.items()}
    )
    return {"lines_per_s": lines_per_s, "bytes_per_line": {"pyo3-log": len(fmt.format(sample)) + 1, "other": size}}


CHILDREN = {"sinks": child}


def measure(p: dict) -> dict:
    figures = {}
    for fd2 in ("null", "file"):
        s = run_child({"task": "sinks", **p}, fd2)
        lps = s["lines_per_s"]
        s["ratio_pyo3_log"] = median_ratio(lps["pylogsink"], lps["pyo3-log"])
        s["ratio_naive"] = median_ratio(lps["pylogsink"], lps["naive"])
        figures[fd2] = s
    return figures


def targets(f: dict, figs: dict) -> list[dict]:
    return [target(f"lines/s pylogsink / pyo3-log, {fd2}", s["ratio_pyo3_log"], ">=", 10, "x") for fd2, s in f.items()]


def report(f: dict) -> list[str]:
    lines = [
        "5. lines per second, 100 B lines, same fd 2 (median of rounds)",
        f"  {'fd 2':<8}{'pylogsink':>12}{'naive':>12}{'pyo3-log':>12}{'vs naive':>10}{'vs pyo3-log':>13}",
    ]
    for fd2, s in f.items():
        lps = medians(s["lines_per_s"])
        lines.append(
            f"  {fd2:<8}{lps['pylogsink']:>12,.0f}{lps['naive']:>12,.0f}{lps['pyo3-log']:>12,.0f}"
            f"{s['ratio_naive']:>9.1f}x{s['ratio_pyo3_log']:>12.1f}x"
        )
    # The same for every fd 2: the last one's.
    lines.append(f"  (pyo3-log lines are {s['bytes_per_line']['pyo3-log']} B with the same fields)")
    return lines
