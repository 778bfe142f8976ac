"""How the benchmark makes its figures, on both sides of a measurement.

Rivals are timed in the same child, interleaved (A B, then B A, ... over
several rounds), and a ratio is the median of the per-round ratios, so
drift on a noisy 2-core machine hits both sides alike. Figures in ns are
medians over rounds, with the minimum where noise matters most. Each
figure with a target becomes a row of the Targets table (`target`).
"""

from __future__ import annotations

import os
import stat
import statistics
import sys
from collections.abc import Callable, Iterable


def reset_fd2() -> None:
    """Empties fd 2 if it is a regular file, so files stay small."""
    if stat.S_ISREG(os.fstat(2).st_mode):
        sys.stderr.flush()
        os.ftruncate(2, 0)
        os.lseek(2, 0, os.SEEK_SET)


def interleaved(rounds: int, runs: dict[str, Callable[..., object]]) -> dict[str, list]:
    """Runs each of `runs` (name -> function returning a figure) once per
    round, in an order that turns around every round."""
    figures: dict[str, list] = {name: [] for name in runs}
    names = list(runs)
    for r in range(rounds):
        for name in names if r % 2 == 0 else names[::-1]:
            reset_fd2()
            figures[name].append(runs[name]())
    return figures


def median_ratio(a: Iterable[float], b: Iterable[float]) -> float:
    """The median of the per-round ratios of `a` to `b`."""
    return statistics.median(x / y for x, y in zip(a, b))


def medians(rounds: dict[str, list]) -> dict[str, float]:
    """Each contender's median over its rounds."""
    return {name: statistics.median(v) for name, v in rounds.items()}


def pick(budget: dict, quick: bool) -> dict:
    """A section's work for this run: of each (quick, full) pair, the one
    the run asks for; other values are the same for both."""
    return {k: (v[0] if quick else v[1]) if isinstance(v, tuple) else v for k, v in budget.items()}


def target(name: str, value: float, op: str, limit: float, unit: str = "") -> dict:
    """A row of the Targets table: `value` against `limit`, a maximum
    ("<=") or a minimum (">="), and whether it is met."""
    met = value <= limit if op == "<=" else value >= limit
    return {"name": name, "value": value, "op": op, "limit": limit, "unit": unit, "met": met}
