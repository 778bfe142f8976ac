"""Section 9: what the filter costs, on /dev/null, 100-byte records inside
a call, all with `pylogsink::emit`. A record it drops by level (Debug
under "info"), and one dropped by a target directive (Info from
`myruntime::noisy::x` under "info,myruntime::noisy=off"), in ns per
record; the same dropped record under a filter of 1,000 target directives
(`BIG_FILTER`: the most a filter may name), in ns per record; and an
enabled record under that per-target filter against the same under plain
"info", as a ratio: the cost of the target lookup on every record that is
logged. The `log` macros are not measured: that child installs no `log`
logger, and `log`'s macros drop what is below `log::max_level()` before
any logger is asked. SPEC: "a record the filter drops: no formatting, no
allocation, a level compare"; the proxy used is at most 10 ns per record
dropped by level.

The only section that changes the filter; it puts "info" back.
"""

from __future__ import annotations

import statistics
from types import ModuleType

from children import run_child
from figures import interleaved, median_ratio, target
from records import TARGET

BUDGET = {"rounds": (5, 11), "n": (40_000, 200_000), "dropped_n": (1_000_000, 5_000_000)}
PER_TARGET_FILTER = "info,myruntime::noisy=off"
# 1,000 targets, the most a filter may name: 999 beside the one of PER_TARGET_FILTER.
BIG_FILTER = "info," + ",".join(f"myruntime::part{i}=warn" for i in range(999)) + ",myruntime::noisy=off"


def child(p: dict, b: ModuleType) -> dict:
    cases = {  # name: (records, filter, level, target)
        "plain": (p["n"], "info", "info", TARGET),
        "per_target": (p["n"], PER_TARGET_FILTER, "info", TARGET),
        "dropped_level": (p["dropped_n"], "info", "debug", TARGET),
        "dropped_target": (p["dropped_n"], PER_TARGET_FILTER, "info", "myruntime::noisy::x"),
        "dropped_target_1000": (p["dropped_n"], BIG_FILTER, "info", "myruntime::noisy::x"),
    }

    def run(name: str, n: int | None = None) -> float:
        records, spec, level, log_target = cases[name]
        n = n or records
        ns, logged = b.filtered_lines(n, 100, spec, level, log_target)
        # A dropped record that was logged, or the reverse, would make the
        # figure measure the other case.
        expected = 0 if name.startswith("dropped") else n
        if logged != expected:
            raise AssertionError(f"{name}: {logged} of {n} records logged, expected {expected}")
        return ns / n

    for name in cases:
        run(name, 1000)
    figures = interleaved(p["rounds"], {name: lambda name=name: run(name) for name in cases})
    return {"ns_per_record": figures, "n": p["n"], "dropped_n": p["dropped_n"]}


CHILDREN = {"filter": child}


def measure(p: dict) -> dict:
    f = run_child({"task": "filter", **p}, "null")
    ns = f["ns_per_record"]
    f["dropped_level_ns"] = statistics.median(ns["dropped_level"])
    f["dropped_target_ns"] = statistics.median(ns["dropped_target"])
    f["dropped_target_1000_ns"] = statistics.median(ns["dropped_target_1000"])
    f["ratio_per_target"] = median_ratio(ns["per_target"], ns["plain"])
    return f


def targets(f: dict, figs: dict) -> list[dict]:
    return [target("dropped by level (proxy: a level compare)", f["dropped_level_ns"], "<=", 10, "ns")]


def report(f: dict) -> list[str]:
    ns = f["ns_per_record"]

    def row(name: str, x: float, fmt: str, note: str) -> str:
        return f"  {name:<48}{fmt.format(x):>8}  {note}"

    return [
        "9. Filter: 100 B records on /dev/null inside a call, median of rounds (min in parentheses)",
        row(
            "dropped record (level), ns",
            f["dropped_level_ns"],
            "{:.1f}",
            f"({min(ns['dropped_level']):.1f})  emit(Debug) under \"info\"",
        ),
        row(
            "dropped record (target directive), ns",
            f["dropped_target_ns"],
            "{:.1f}",
            f"({min(ns['dropped_target']):.1f})  emit(Info, \"myruntime::noisy::x\") under \"{PER_TARGET_FILTER}\"",
        ),
        row(
            "dropped record (target, 1,000 directives), ns",
            f["dropped_target_1000_ns"],
            "{:.1f}",
            f"({min(ns['dropped_target_1000']):.1f})  the same, under \"info\", 999 others and \"myruntime::noisy=off\"",
        ),
        row(
            "enabled direct, per-target filter / plain",
            f["ratio_per_target"],
            "{:.2f}x",
            f"{statistics.median(ns['per_target']):.0f} ns under \"{PER_TARGET_FILTER}\", "
            f"{statistics.median(ns['plain']):.0f} ns under \"info\"",
        ),
        "  log macros: not measured (no log logger in this process); log's macros drop",
        "  records below log::max_level() before any logger is asked",
        '  SPEC "a record the filter drops: no formatting, no allocation, a level compare":',
        "  proxy used, dropped by level <= 10 ns (in Targets)",
    ]
