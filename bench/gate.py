"""The regression gate: no round of work may lose ground unnoticed.

`bench/run.py --quick --gate` (what `make bench QUICK=1` runs) compares
each figure it measured against the same figure in bench/baseline.json, a
quick run committed with the commit that set it. A figure more than
`WORSE` times worse than its baseline is measured again (its section
alone), and the run fails only if it is that much worse both times: a
noisy moment on a shared machine passes, a real regression does not.

Compared: the ratios (unit "x"), which hold from one machine to the next,
and the nanosecond figures (unit "ns"), which hold on machines like the one
that set the baseline. Latencies in ms (a p99 is its slowest runs), counts
and hang checks are targets of their own, not compared.

`bench/run.py --quick --write-baseline` sets a new baseline, from
`BASELINE_RUNS` quick runs on a quiet machine and the baseline before it
(each figure's least favourable value: a baseline stands for every CPU it
was measured on), with the commit it measured.
"""

from __future__ import annotations

# How much worse than its baseline a figure may be.
WORSE = 1.5
# The quick runs a baseline is made of: each figure's least favourable
# value among them, since one quick run's figure can be its best moment
# (the capture's ratio to wurlitzer was 1.68x in one run, 1.04x in the
# next).
BASELINE_RUNS = 3
# The units compared.
UNITS = ("x", "ns")


def worse_by(target: dict, base: dict) -> float:
    """How many times worse `target` is than `base` (below 1: better). A
    figure whose target is a maximum ("<=") is worse when larger; one whose
    target is a minimum (">="), when smaller."""
    value, was = float(target["value"]), float(base["value"])
    if target["op"] == "<=":
        return value / was if was > 0 else (1.0 if value <= 0 else float("inf"))
    return was / value if value > 0 else (1.0 if was <= 0 else float("inf"))


def regressions(targets: list[dict], baseline: dict) -> list[dict]:
    """The figures of `targets` more than `WORSE` times worse than the same
    figure (by name) in `baseline`; a figure the baseline lacks is new, not
    a regression. Each: the target, its baseline value and how much worse."""
    base = {t["name"]: t for t in baseline["targets"]}
    found = []
    for t in targets:
        b = base.get(t["name"])
        if t["unit"] not in UNITS or b is None or b["op"] != t["op"]:
            continue
        factor = worse_by(t, b)
        if factor > WORSE:
            found.append({**t, "baseline": b["value"], "worse_by": factor})
    return found


def least_favourable(runs: list[list[dict]]) -> list[dict]:
    """The targets of the first run, each with its least favourable value
    among the runs that measured it: the largest for a maximum ("<="), the
    smallest for a minimum (">=")."""
    pick = {"<=": max, ">=": min}
    merged = []
    for t in runs[0]:
        values = [u["value"] for run in runs for u in run if u["name"] == t["name"]]
        merged.append({**t, "value": pick[t["op"]](values)})
    return merged


def baseline_of(targets: list[dict], commit: str, date: str, cpus: list[str]) -> dict:
    """The baseline file's content for a run's targets, measured on `cpus`."""
    kept = [
        {k: t[k] for k in ("name", "value", "op", "unit", "section")} for t in targets if t["unit"] in UNITS
    ]
    return {"commit": commit, "date": date, "quick": True, "cpus": cpus, "targets": kept}


def with_previous(runs: list[list[dict]], previous: dict | None, cpu: str) -> tuple[list[dict], list[str]]:
    """A new baseline's figures, from this machine's `runs` and the
    baseline before it: each figure's least favourable value among them
    all, so that the gate holds on every machine a baseline was measured
    on (a ratio to wurlitzer was 1.27x on one CPU and 0.89x on another,
    at the same commit). Figures the new runs no longer measure go. Also
    the CPUs the baseline now stands for."""
    cpus = [] if previous is None else list(previous.get("cpus", [f"not recorded (baseline {previous.get('commit')})"]))
    if cpu not in cpus:
        cpus.append(cpu)
    if previous is None:
        return least_favourable(runs), cpus
    return least_favourable([*runs, previous["targets"]]), cpus


def describe(found: dict, again: dict | None, baseline: dict) -> str:
    """One line for a figure that is worse than its baseline."""
    unit = found["unit"]
    values = f"{found['value']:.3g}{unit}" + (f", then {again['value']:.3g}{unit}" if again else "")
    return (
        f"{found['name']}: {values} against the baseline's {found['baseline']:.3g}{unit} "
        f"(target {found['op']} {found['limit']}{unit}; baseline set by {baseline['commit']}, {baseline['date']})"
    )
