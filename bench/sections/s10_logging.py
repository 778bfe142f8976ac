"""Section 10: the `logging` destination against pyo3-log.

Records per second into the same handler, in the same child: a
logging.StreamHandler on /dev/null with the formatter of (5), on the root
logger at INFO, counting what it writes so that each run checks every
record arrived. pylogsink: `pylogsink::emit` of Info records, 400 per
`pylogsink::call` (about 50 KB as the budget counts them), handed over at
the call's return: each made with `Logger.makeRecord`, stamped with the
time and thread it was logged at, and given to `Logger.handle`; timed over
whole calls. pyo3-log: `log::info!`, each record made and handled at
once, with the GIL (held already, so taking it costs little). Beside
them, bare logging: `Logger.handle(Logger.makeRecord(...))` from a Python
loop, the ceiling of any bridge that makes and handles a LogRecord per
record. Targets: >= 2x pyo3-log's records per second, and within 10% of
the ceiling: pylogsink's records per second >= 0.9x bare logging's (the
report gives pyo3-log's share of it beside).

Then a disabled record: Info records, logger `myruntime.backend` at
WARNING, in ns per record, after first records that taught each side
that level. pylogsink: `pylogsink::emit` inside a call; the filter "info"
lets it through and the Python levels, read at the call's entry and
learnt at the first delivery, drop it (`stats` checks that none was
kept). pyo3-log: `log::info!`; `log::max_level` is set by pyo3-log
(Debug), so the macro asks pyo3-log, which drops the record by its cached
level, without the GIL. With the root at INFO only the target's cached
level can drop it (Target: >= 10x cheaper than pyo3-log); with the root
at WARNING no logger takes Info, and pylogsink's floor (the lowest level
set on any logger) drops it.
"""

from __future__ import annotations

import logging
import time
from types import ModuleType

from children import run_child
from figures import interleaved, median_ratio, medians, target
from records import TARGET, line_message, logging_setup

BUDGET = {"rounds": (3, 9), "n": (20_000, 60_000), "per_call": 400, "dropped_n": (1_000_000, 3_000_000)}


def child_delivered(p: dict, b: ModuleType) -> dict:
    b.install("pyo3-log")
    handler, logger = logging_setup(b, "INFO", "NOTSET")
    message = line_message(b, 100)
    per_call = p["per_call"]

    def bare(n: int) -> int:
        start = time.perf_counter_ns()
        for _ in range(n):
            logger.handle(logger.makeRecord(logger.name, logging.INFO, "src/lib.rs", 1, message, (), None))
        return time.perf_counter_ns() - start

    rivals = {
        "pylogsink": lambda n: b.logging_calls(n // per_call, per_call, message),
        "pyo3-log": lambda n: b.pyo3log_lines(n, message),
        "bare logging": bare,
    }

    def run(name: str, n: int) -> float:
        handler.count = 0
        ns = rivals[name](n)
        # A record left out (over the per-call cap) or lost would make the
        # figure count records that were never handled.
        if handler.count != n:
            raise AssertionError(f"{name}: the handler got {handler.count} of {n} records")
        return n / ns * 1e9

    if p["n"] % per_call:
        raise ValueError("n must be a multiple of per_call")
    for name in rivals:
        run(name, per_call)
    return {"records_per_s": interleaved(p["rounds"], {name: lambda name=name: run(name, p["n"]) for name in rivals})}


def child_disabled(p: dict, b: ModuleType) -> dict:
    b.install("pyo3-log")
    handler, _ = logging_setup(b, p["root_level"], "WARNING")
    message = line_message(b, 100)

    def pylogsink(n: int) -> int:
        ns, logged = b.filtered_lines(n, 100, "info", "info", TARGET)
        # Kept and refused at delivery would be a different (and dearer) path.
        if logged:
            raise AssertionError(f"pylogsink: {logged} of {n} disabled records were kept")
        return ns

    rivals = {"pylogsink": pylogsink, "pyo3-log": lambda n: b.pyo3log_lines(n, message)}

    def run(name: str, n: int) -> float:
        ns = rivals[name](n)
        if handler.count:
            raise AssertionError(f"{name}: the handler got {handler.count} disabled records")
        return ns / n

    # The first records teach each side the logger's level (few: before
    # pylogsink knows it, they are kept, and more than the cap would cost
    # a note that the handler gets).
    b.filtered_lines(100, 100, "info", "info", TARGET), b.pyo3log_lines(100, message)
    n = p["dropped_n"]
    return {"ns_per_record": interleaved(p["rounds"], {name: lambda name=name: run(name, n) for name in rivals})}


CHILDREN = {"logging_delivered": child_delivered, "logging_disabled": child_disabled}


def measure(p: dict) -> dict:
    d = run_child({"task": "logging_delivered", **p}, "null")
    rps = d["records_per_s"]
    d["ratio_pyo3_log"] = median_ratio(rps["pylogsink"], rps["pyo3-log"])
    d["ratio_bare"] = median_ratio(rps["bare logging"], rps["pyo3-log"])
    # Each bridge against the ceiling, bare logging.
    d["ratio_pylogsink_ceiling"] = median_ratio(rps["pylogsink"], rps["bare logging"])
    d["ratio_pyo3_log_ceiling"] = median_ratio(rps["pyo3-log"], rps["bare logging"])
    disabled = {}
    for root_level in ("INFO", "WARNING"):
        r = run_child({"task": "logging_disabled", "root_level": root_level, **p}, "null")
        ns = r["ns_per_record"]
        r["ns"] = medians(ns)
        r["ratio"] = median_ratio(ns["pyo3-log"], ns["pylogsink"])
        disabled[root_level] = r
    return {"delivered": d, "disabled": disabled}


def targets(f: dict, figs: dict) -> list[dict]:
    d = f["delivered"]
    return [
        target("logging: records/s pylogsink / pyo3-log", d["ratio_pyo3_log"], ">=", 2, "x"),
        target("logging: records/s pylogsink / bare logging", d["ratio_pylogsink_ceiling"], ">=", 0.9, "x"),
        target("logging: disabled ns, pyo3-log / pylogsink", f["disabled"]["INFO"]["ratio"], ">=", 10, "x"),
    ]


def report(f: dict) -> list[str]:
    d, off = f["delivered"], f["disabled"]
    rps = medians(d["records_per_s"])
    lines = [
        "10. logging destination against pyo3-log, median of rounds",
        "  records/s into one StreamHandler on /dev/null (the formatter of 5) on the root logger at INFO:",
        f"  pylogsink {rps['pylogsink']:,.0f} ({BUDGET['per_call']} records per call, handed over at "
        f"its return), pyo3-log {rps['pyo3-log']:,.0f}: {d['ratio_pyo3_log']:.2f}x",
        f"  bare logging (makeRecord + Logger.handle from a Python loop) {rps['bare logging']:,.0f}: "
        f"{d['ratio_bare']:.2f}x pyo3-log, the ceiling of a bridge that makes and handles each record",
        f"  against that ceiling: pylogsink {d['ratio_pylogsink_ceiling']:.2f}x, "
        f"pyo3-log {d['ratio_pyo3_log_ceiling']:.2f}x its records/s",
        "  a disabled record (Info, logger myruntime.backend at WARNING), ns (min in parentheses):",
    ]
    why = {"INFO": "its target's cached level drops it", "WARNING": "pylogsink's floor drops it"}
    for root_level, r in off.items():
        ns, low = r["ns"], {k: min(v) for k, v in r["ns_per_record"].items()}
        lines.append(
            f"    root at {root_level:<8} pylogsink {ns['pylogsink']:.1f} ({low['pylogsink']:.1f}), pyo3-log "
            f"{ns['pyo3-log']:.1f} ({low['pyo3-log']:.1f}): {r['ratio']:.1f}x  ({why[root_level]})"
        )
    return lines
