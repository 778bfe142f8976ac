"""Section 11: `tracing` events with two fields (`rows=42`,
`path="model.pte"`) at Info, inside a call: pylogsink's layer against
tracing-subscriber's fmt layer (no color, stderr), in the same child, on
/dev/null, a regular file and a drained pipe. The size is pylogsink's
record; fmt writes the same message and fields in its own layout.
Target: <= 0.5x.
"""

from __future__ import annotations

from types import ModuleType

from children import each_fd2
from figures import interleaved, medians, target

BUDGET = {"rounds": (5, 11), "n": (40_000, 200_000)}


def child(p: dict, b: ModuleType) -> dict:
    out, lines = {}, 0
    for size in (100, 1000):
        n = p["n"] * 100 // size
        b.tracing_lines(1000, size, "pylogsink"), b.tracing_lines(1000, size, "fmt")
        out[size] = interleaved(
            p["rounds"],
            {
                "pylogsink": lambda: b.tracing_lines(n, size, "pylogsink") / n,
                "fmt": lambda: b.tracing_lines(n, size, "fmt") / n,
            },
        )
        lines += 2000 + 2 * n * p["rounds"]
    return {"ns_per_line": out, "lines": lines}


CHILDREN = {"tracing": child}


def measure(p: dict) -> dict:
    return each_fd2("tracing", p, "pylogsink", "fmt")


def targets(f: dict, figs: dict) -> list[dict]:
    return [
        target(f"tracing event, pylogsink / fmt, {size} B, {fd2}", r[f"ratio_{size}"], "<=", 0.5, "x")
        for fd2, r in f.items()
        for size in r["ns_per_line"]
    ]


def report(f: dict) -> list[str]:
    lines = [
        "11. tracing event with two fields (rows=42, path=\"model.pte\") at Info, in a call, ns per event",
        "  (median of rounds): pylogsink's layer against tracing-subscriber's fmt layer (no color, stderr);",
        "  size is pylogsink's record; fmt writes the same message and fields in its own layout",
        f"  {'fd 2':<10}{'size':>6}{'pylogsink':>11}{'fmt':>8}{'pylogsink/fmt':>15}",
    ]
    for fd2, r in f.items():
        for size, ns in r["ns_per_line"].items():
            med = medians(ns)
            lines.append(
                f"  {fd2:<10}{size + ' B':>6}{med['pylogsink']:>11.0f}{med['fmt']:>8.0f}{r[f'ratio_{size}']:>14.2f}x"
            )
    return lines
