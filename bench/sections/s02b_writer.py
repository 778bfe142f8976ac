"""Section 2b: the writer-thread question, whether a caller should hand
its line to a writer thread of pylogsink's own (as tracing-appender's
`non_blocking` does) instead of writing it. On each fd 2 (/dev/null, a
file, a pipe, a pseudo-terminal): a direct line (formatted and written by
the caller, never blocking), the same line handed to a writer thread (a
prototype in the benchmark, `handoff_lines`: the caller's time, and the
whole run's until the last line is written), and a bare write(2). Full
runs only.
"""

from __future__ import annotations

from types import ModuleType

from children import run_child
from figures import interleaved, median_ratio, medians

BUDGET = {"rounds": (3, 9), "n": (20_000, 100_000)}


def child(p: dict, b: ModuleType) -> dict:
    """The writer-thread question, on this child's fd 2."""
    n = p["n"]
    runs = {
        "direct": lambda: b.direct_lines(n, 100) / n,
        "handoff": lambda: b.handoff_lines(n, 100),
        "bare": lambda: b.bare_write(n, 100) / n,
    }
    runs["direct"](), runs["handoff"]()
    got = interleaved(p["rounds"], runs)
    return {
        "direct": got["direct"],
        "bare": got["bare"],
        "handoff_caller": [c / n for c, _ in got["handoff"]],
        "handoff_whole": [w / n for _, w in got["handoff"]],
    }


CHILDREN = {"writer": child}


def unmeasured(quick: bool) -> str | None:
    """Left out of quick runs, silently."""
    return "" if quick else None


def measure(p: dict) -> dict:
    return {fd2: run_child({"task": "writer", **p}, fd2) for fd2 in ("null", "file", "pipe", "pty")}


def targets(f: dict, figs: dict) -> list[dict]:
    return []


def report(f: dict) -> list[str]:
    lines = [
        "2b. the writer-thread question: 100 B lines, ns per line (median of rounds), on each fd 2",
        "  (direct: pylogsink's line, formatted and written by the caller, which never blocks;",
        "  hand-off: the same line formatted by the caller and handed to a writer thread that",
        "  writes batches with write(2), as tracing-appender's non_blocking does; a prototype)",
        "  fd 2      bare  direct  hand-off caller  hand-off to the last write  caller/direct",
    ]
    for fd2, r in f.items():
        med = medians({k: r[k] for k in ("bare", "direct", "handoff_caller", "handoff_whole")})
        lines.append(
            f"  {fd2:<6} {med['bare']:>7.0f} {med['direct']:>7.0f} {med['handoff_caller']:>16.0f} "
            f"{med['handoff_whole']:>27.0f} {median_ratio(r['handoff_caller'], r['direct']):>13.2f}x"
        )
    return lines
