"""The benchmark's regression gate (bench/gate.py, bench/run.py --gate):
a figure more than 1.5x worse than its committed baseline, twice in a row,
fails the run, naming the figure, the baseline and the commit that set it;
once only, it passes."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"


def load(name: str) -> ModuleType:
    sys.path.insert(0, str(BENCH))
    try:
        spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(BENCH))


gate = load("gate")


def target(name: str, value: float, op: str = "<=", unit: str = "x", section: str = "kept") -> dict:
    return {"name": name, "value": value, "op": op, "limit": 1.0, "unit": unit, "met": True, "section": section}


BASELINE = {
    "commit": "abc1234",
    "date": "2026-12-06 05:00:00 UTC",
    "quick": True,
    "targets": [
        {"name": "kept ns", "value": 100.0, "op": "<=", "unit": "ns", "section": "kept"},
        {"name": "call ratio", "value": 1.2, "op": "<=", "unit": "x", "section": "overhead"},
        {"name": "lines/s ratio", "value": 12.0, "op": ">=", "unit": "x", "section": "sinks"},
    ],
}


def test_worse_is_larger_for_a_maximum_and_smaller_for_a_minimum() -> None:
    assert gate.worse_by(target("a", 3.0), {"value": 2.0}) == 1.5
    assert gate.worse_by(target("a", 1.0), {"value": 2.0}) == 0.5
    assert gate.worse_by(target("a", 4.0, ">="), {"value": 12.0}) == 3.0
    assert gate.worse_by(target("a", 0.0, ">="), {"value": 12.0}) == float("inf")
    assert gate.worse_by(target("a", 0.0), {"value": 0.0}) == 1.0


def test_only_figures_more_than_one_and_a_half_times_worse_are_regressions() -> None:
    found = gate.regressions(
        [
            target("kept ns", 151.0, unit="ns"),  # 1.51x worse
            target("call ratio", 1.8),  # 1.5x: within
            target("lines/s ratio", 7.0, ">="),  # 1.71x worse
            target("new figure", 99.0),  # not in the baseline
            target("import ms", 99.0, unit="ms"),  # not compared
        ],
        BASELINE,
    )
    assert [(f["name"], round(f["worse_by"], 2)) for f in found] == [("kept ns", 1.51), ("lines/s ratio", 1.71)]


def test_the_baseline_is_each_figures_least_favourable_run() -> None:
    runs = [
        [target("kept ns", 90.0, unit="ns"), target("lines/s ratio", 12.0, ">=")],
        [target("kept ns", 120.0, unit="ns"), target("lines/s ratio", 9.0, ">=")],
        [target("kept ns", 100.0, unit="ns"), target("lines/s ratio", 15.0, ">=")],
    ]
    assert [t["value"] for t in gate.least_favourable(runs)] == [120.0, 9.0]


def test_the_baseline_keeps_the_compared_figures_and_the_commit() -> None:
    targets = [target("kept ns", 90.0, unit="ns"), target("import ms", 5.0, unit="ms")]
    base = gate.baseline_of(targets, "def5678", "d", ["cpu A"])
    assert base["commit"] == "def5678" and [t["name"] for t in base["targets"]] == ["kept ns"]
    assert base["cpus"] == ["cpu A"]


def test_a_new_baseline_keeps_the_least_favourable_of_every_cpu_measured() -> None:
    # The baseline before, set on another CPU: a figure this CPU does
    # better keeps the old value, one it does worse takes the new one; a
    # figure no longer measured goes.
    previous = {
        "cpus": ["cpu A"],
        "targets": [target("capture ratio", 1.27, ">="), target("kept ns", 112.0, unit="ns"), target("gone", 1.0)],
    }
    runs = [[target("capture ratio", 0.89, ">="), target("kept ns", 68.0, unit="ns")]]
    merged, cpus = gate.with_previous(runs, previous, "cpu B")
    assert {t["name"]: t["value"] for t in merged} == {"capture ratio": 0.89, "kept ns": 112.0}
    assert cpus == ["cpu A", "cpu B"]
    assert gate.with_previous(runs, None, "cpu B") == (runs[0], ["cpu B"])
    unrecorded = {"commit": "abc1234", "targets": previous["targets"]}
    assert gate.with_previous(runs, unrecorded, "cpu B")[1] == ["not recorded (baseline abc1234)", "cpu B"]


@pytest.fixture
def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    module = load("run")
    baseline = tmp_path / "baseline.json"
    baseline.write_text(json.dumps(BASELINE))
    monkeypatch.setattr(module, "BASELINE", str(baseline))
    return module


def test_worse_twice_fails_naming_the_figure_the_baseline_and_its_commit(
    run: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    measured_again = []

    def measure(quick: bool, say: object, only: set[str]) -> tuple[dict, list[dict]]:
        measured_again.append(only)
        return {}, [target("kept ns", 160.0, unit="ns")]

    monkeypatch.setattr(run, "measure", measure)
    with pytest.raises(SystemExit) as failed:
        run.run_gate(True, lambda what: None, [target("kept ns", 170.0, unit="ns"), target("call ratio", 1.2)])
    assert measured_again == [{"kept"}]
    message = str(failed.value)
    assert "kept ns: 170ns, then 160ns against the baseline's 100ns" in message
    assert "abc1234" in message and "call ratio" not in message


def test_worse_once_passes(run: ModuleType, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(run, "measure", lambda quick, say, only: ({}, [target("kept ns", 110.0, unit="ns")]))
    run.run_gate(True, lambda what: None, [target("kept ns", 170.0, unit="ns")])
    assert "worse once, within the baseline again" in capsys.readouterr().err
