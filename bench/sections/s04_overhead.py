"""Section 4: call overhead, what every binding pays. A no-op
#[pyfunction] against the same wrapped in `pylogsink::call`, timed from
Python with timeit, interleaved in one child. Two builds, each row saying
which: the benchmark's module built for the newest CPython found (no
stable ABI; pylogsink keeps "is sys.stderr replaced" with a dict watcher
on sys.__dict__), in the .venv-versioned bench/build.sh makes, and the
abi3 build this interpreter runs (two dict lookups per call). Target,
where the stable ABI is not required (the first row): <= 1.25x (minimum
of rounds). Beside it, `pylogsink::flush` with nothing waiting, timed in
Rust over a loop inside one call, against an empty loop's turn. Target:
<= 20 ns.
"""

from __future__ import annotations

import os
import platform
import timeit
from types import ModuleType

from children import HERE, run_child
from figures import interleaved, median_ratio, target

BUDGET = {"rounds": (9, 31), "number": (100_000, 1_000_000)}
# The call overhead where the stable ABI is not required: the benchmark's
# module built for the newest CPython found, in the venv bench/build.sh
# makes for it.
VERSIONED_PYTHON = os.path.join(HERE, "..", ".venv-versioned", "bin", "python")


def child(p: dict, b: ModuleType) -> dict:
    n = p["number"]
    timers = {
        "noop": timeit.Timer("f()", globals={"f": b.noop}),
        "call": timeit.Timer("f()", globals={"f": b.noop_call}),
        "loop": timeit.Timer("pass"),
    }
    out: dict = interleaved(p["rounds"], {k: lambda t=t: t.timeit(n) / n * 1e9 for k, t in timers.items()})
    costs = [b.flush_cost(n) for _ in range(p["rounds"])]
    out["flush"] = [c[0] for c in costs]
    out["flush_lines"] = [c[1] for c in costs]
    out["flush_loop"] = [c[2] for c in costs]
    native = getattr(b, "pylogsink_bench", b)  # the .so inside the package
    abi3 = ".abi3." in os.path.basename(native.__file__)
    out["build"] = (
        f"CPython {platform.python_version()}, {'abi3 build' if abi3 else 'version-specific build'}, "
        f"{b.stderr_check()}"
    )
    return out


CHILDREN = {"overhead": child}


def measure(p: dict) -> list[dict]:
    """The call overhead of each build: the version-specific one (if
    bench/build.sh made it), then the abi3 one this interpreter runs."""
    rows = []
    if os.access(VERSIONED_PYTHON, os.X_OK):
        rows.append(run_child({"task": "overhead", **p}, "null", python=VERSIONED_PYTHON))
    rows.append(run_child({"task": "overhead", **p}, "null"))
    for o in rows:
        o["ratio_min"] = min(o["call"]) / min(o["noop"])
        o["ratio_median"] = median_ratio(o["call"], o["noop"])
    return rows


def targets(rows: list[dict], figs: dict) -> list[dict]:
    # SPEC: at most 1.25x where the stable ABI is not required; the first
    # row is the version-specific build when there is one.
    return [
        target(f"no-op in call() / bare no-op, {', '.join(o['build'].split(', ')[:2])}", o["ratio_min"], "<=", 1.25, "x")
        for o in rows
    ]


def report(rows: list[dict]) -> list[str]:
    lines = ["4. call overhead, timeit from Python, ns per call (minimum of rounds), per build"]
    for o in rows:
        lines += [
            f"  {o['build']}:",
            f"    no-op binding {min(o['noop']):.1f}, wrapped in pylogsink::call {min(o['call']):.1f}, "
            f"empty loop {min(o['loop']):.1f}: ratio {o['ratio_min']:.3f} "
            f"(median of rounds {o['ratio_median']:.3f}), +{min(o['call']) - min(o['noop']):.1f} ns, "
            f"+{(o['ratio_min'] - 1) * 100:.0f}%",
            f"    pylogsink::flush with nothing waiting, inside a call: {min(o['flush']):.1f} ns "
            f"(empty loop turn {min(o['flush_loop']):.1f} ns; target at most 20 ns: "
            f"{'met' if min(o['flush']) <= 20 else 'missed'})",
            f"    pylogsink::flush_lines with nothing waiting, inside a call: {min(o['flush_lines']):.1f} ns "
            f"(target at most 20 ns: {'met' if min(o['flush_lines']) <= 20 else 'missed'})",
        ]
    return lines
