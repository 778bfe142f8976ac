"""pylogsink benchmark: the figures of SPEC.md ("Figures it must reach"),
measured side by side in one run, as ratios.

    .venv/bin/python bench/run.py [--quick] [--only NAME[,NAME...]]
    .venv/bin/python bench/run.py --quick --gate | --write-baseline

Build first with bench/build.sh. Prints the machine, the figures and the
targets, writes them to bench/results/latest.txt, and writes
bench/results/latest.json and bench/results/latest.png.
--quick is a smoke test (well under a minute); the full run takes minutes.
--only runs the measurements named (the keys of their figures, see
`sections.MEASURED`: "logging", "live", ...) and only prints them; the
files in bench/results/ stay those of the last whole run.
A figure that misses its target is reported, not failed: the exit status
is non-zero only if a line was lost or torn on a pipe, which is a bug, or,
with --gate, if a figure is more than 1.5x worse than its baseline twice
(bench/gate.py; --write-baseline sets bench/baseline.json).

Each measurement runs in a child process whose fd 2 is set up for it (this
same file with --child; bench/children.py), and rivals are timed in the
same child, interleaved, a ratio being the median of per-round ratios
(bench/figures.py). Why each measurement exists, and how it is made, is
the docstring of its section's module in bench/sections/.

Every measurement but (9) runs with the filter "info", so that each of its
Info records is logged; (9) changes the filter and puts "info" back. (10),
(13) and (14) run in children of their own with the `logging` destination;
every other measurement sends records to stderr.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import time
from collections.abc import Callable

import gate
import plot
import report
from children import HERE, RESULTS, child_main
from figures import pick
from sections import MEASURED, TASKS

# The figures of a quick run that --gate compares with (bench/gate.py).
BASELINE = os.path.join(HERE, "baseline.json")
# The names --only takes.
SECTIONS = tuple(key for key, _, _ in MEASURED)


def measure(quick: bool, say: Callable[[str], None], only: set[str] | None = None) -> tuple[dict, list[dict]]:
    """Runs every measurement, or those named in `only` (the keys of the
    figures: "direct", "logging", ...); returns (figures, targets), each
    target with the section that measured it."""
    fig: dict = {}
    targets: list[dict] = []
    for key, title, section in MEASURED:
        if only is not None and key not in only:
            continue
        unmeasured = getattr(section, "unmeasured", None)
        why = unmeasured(quick) if unmeasured else None
        if why is not None:
            if why:
                say(why)
            continue
        say(title)
        fig[key] = section.measure(pick(section.BUDGET, quick))
        targets += [{**t, "section": key} for t in section.targets(fig[key], fig)]
    return fig, targets


def main() -> None:
    if "--child" in sys.argv:
        return child_main(json.loads(sys.argv[sys.argv.index("--child") + 1]), TASKS)
    quick = "--quick" in sys.argv
    only = None
    if "--only" in sys.argv:
        only = set(sys.argv[sys.argv.index("--only") + 1].split(","))
        if unknown := only - set(SECTIONS):
            sys.exit(f"--only: unknown {', '.join(sorted(unknown))}; one or more of {', '.join(SECTIONS)}")

    gate_run, write_baseline = "--gate" in sys.argv, "--write-baseline" in sys.argv
    if (gate_run or write_baseline) and (not quick or only is not None):
        sys.exit("--gate and --write-baseline compare whole quick runs: with --quick, without --only")

    if importlib.util.find_spec("pylogsink_bench") is None:
        sys.exit("pylogsink_bench is not installed: run bench/build.sh, then .venv/bin/python bench/run.py")
    os.makedirs(RESULTS, exist_ok=True)
    started = time.monotonic()
    m = report.machine()

    def say(what: str) -> None:
        print(f"[{time.monotonic() - started:5.1f} s] {what}", file=sys.stderr)

    fig, targets = measure(quick, say, only)
    text = report.text(m, fig, targets, quick)
    print(text)
    if only is not None:
        # Part of the figures: bench/results/ keeps those of a whole run.
        return
    with open(os.path.join(RESULTS, "latest.txt"), "w") as f:
        f.write(text + "\n")
    with open(os.path.join(RESULTS, "latest.json"), "w") as f:
        json.dump({"machine": m, "quick": quick, "targets": targets, "figures": fig}, f, indent=1)
    plot.plot(m, fig, targets, os.path.join(RESULTS, "latest.png"))
    print(f"\nwrote bench/results/latest.txt, latest.json and latest.png in {time.monotonic() - started:.0f} s", file=sys.stderr)
    # Figures that miss a target are reported, not failed; a lost or torn
    # line is a bug, and fails the run.
    if torn := next(t for t in targets if t["name"].startswith("pipe runs"))["value"]:
        sys.exit(f"{torn} pipe run(s) lost or tore lines")
    if write_baseline:
        runs = [targets]
        for i in range(gate.BASELINE_RUNS - 1):
            say(f"baseline: run {i + 2} of {gate.BASELINE_RUNS}")
            runs.append(measure(quick, say)[1])
        previous = None
        if os.path.exists(BASELINE):
            with open(BASELINE) as f:
                previous = json.load(f)
        merged, cpus = gate.with_previous(runs, previous, m["cpu"])
        with open(BASELINE, "w") as f:
            json.dump(gate.baseline_of(merged, m["commit"], m["date"], cpus), f, indent=1)
            f.write("\n")
        print(f"wrote {os.path.relpath(BASELINE)}", file=sys.stderr)
    if gate_run:
        run_gate(quick, say, targets)


def run_gate(quick: bool, say: Callable[[str], None], targets: list[dict]) -> None:
    """Compares the run's figures with the baseline; measures again the
    sections of those more than gate.WORSE times worse, and fails if they
    still are."""
    with open(BASELINE) as f:
        baseline = json.load(f)
    found = gate.regressions(targets, baseline)
    if not found:
        print(f"gate: every figure within {gate.WORSE}x of the baseline ({baseline['commit']})", file=sys.stderr)
        return
    sections = {t["section"] for t in found}
    say(f"gate: {len(found)} figure(s) worse than the baseline; measuring again: {', '.join(sorted(sections))}")
    _, again = measure(quick, say, sections)
    still = {t["name"]: t for t in gate.regressions(again, baseline)}
    lines = [gate.describe(t, still.get(t["name"]), baseline) for t in found]
    if still:
        sys.exit(f"gate: {len(still)} figure(s) more than {gate.WORSE}x worse than the baseline, twice:\n  " + "\n  ".join(
            line for t, line in zip(found, lines) if t["name"] in still
        ))
    print("gate: worse once, within the baseline again:\n  " + "\n  ".join(lines), file=sys.stderr)


if __name__ == "__main__":
    main()
