"""The main demo: the two-thread deadlock under the naive sink and under
pylogsink, each in a subprocess with a timeout; then daemon threads that log
while Python exits.

    python -m pylogsink.demo [--iterations 100] [--timeout 10] [--exit-runs 30] [--cpp DIR]

With ``--cpp DIR``, the directory where the C ABI tests' extensions were
built (scripts/demo.sh builds them), the table gains the C++ runtime: a
pybind11 extension that logs through pylogsink's C ABI.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass


@dataclass
class Outcome:
    """How one scenario run ended."""

    label: str
    sink: str
    hung: bool
    seconds: float
    lines: int | None
    errors: int


def run(
    label: str, sink: str, detached: bool, iterations: int, timeout: float, cpp: str | None = None
) -> Outcome:
    """Runs one two-thread scenario in a subprocess; a run that does not end
    within ``timeout`` seconds is killed and counts as hung. With ``cpp``,
    the runtime is the C++ extension built there."""
    cmd = [sys.executable, "-m", "pylogsink.scenarios", "two-threads", "--sink", sink]
    cmd += ["--iterations", str(iterations)] + (["--detached"] if detached else [])
    env = None
    if cpp is not None:
        cmd += ["--module", "cpp_rt"]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [cpp, os.environ.get("PYTHONPATH")]))}
    start = time.monotonic()
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return Outcome(label, sink, True, timeout, None, 0)
    took = time.monotonic() - start
    if done.returncode != 0 and not done.stdout.strip():
        raise RuntimeError(f"scenario failed (exit {done.returncode}):\n{done.stderr}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return Outcome(label, sink, False, took, int(result["lines_delivered"]), len(result["errors"]))


def daemon_exit(sink: str, replaced: bool, runs: int) -> tuple[int, int]:
    """Runs the daemon-exit scenario ``runs`` times; (crashes, hangs)."""
    cmd = [sys.executable, "-m", "pylogsink.scenarios", "daemon-exit", "--sink", sink]
    cmd += ["--replaced"] if replaced else []
    crashes = hangs = 0
    for _ in range(runs):
        try:
            done = subprocess.run(cmd, capture_output=True, timeout=30)
        except subprocess.TimeoutExpired:
            hangs += 1
            continue
        crashes += done.returncode != 0
    return crashes, hangs


def exit_table(runs: int) -> None:
    v = sys.version_info
    print(f"\nDaemon threads logging inside calls while Python {v.major}.{v.minor}.{v.micro} exits, {runs} runs each:\n")
    print(f"{'sys.stderr':<12} {'sink':<10} {'crashed':>8} {'hung':>6}")
    for replaced in (False, True):
        for sink in ("naive", "pylogsink"):
            crashes, hangs = daemon_exit(sink, replaced, runs)
            print(f"{'replaced' if replaced else 'own':<12} {sink:<10} {crashes:>8} {hangs:>6}")
    if v >= (3, 13, 8):
        print("\nFrom CPython 3.13.8 on, a daemon thread that takes the GIL after finalization began")
        print("hangs quietly and the process exits: neither sink crashes here.")
    elif sys.platform == "linux":
        print("\nCPython before 3.13.8 ends a daemon thread that takes the GIL after finalization began,")
        print("which crashes the process in the middle of a naive write; pylogsink never writes there.")
    else:
        print("\nCPython before 3.13.8 ends a daemon thread that takes the GIL after finalization began;")
        print("the crash of a naive write that this causes is Linux's (pthread_exit): the table shows this one.")


def description(doc: str) -> str:
    """The first paragraph of ``doc``, whole, on one line: what ``--help``
    says the program does."""
    return " ".join(doc.strip().split("\n\n")[0].split())


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    parser = argparse.ArgumentParser(prog=prog, description=description(__doc__))
    parser.add_argument("--iterations", type=int, default=100, help="iterations of each of the two threads per run (default: 100)")
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds before a run counts as hung (default: 10)")
    parser.add_argument("--exit-runs", type=int, default=30, help="daemon-exit runs per row (0: skip)")
    parser.add_argument("--cpp", metavar="DIR", help="where the C++ test extension cpp_rt was built")
    args = parser.parse_args(argv)
    print(f"Two threads, {args.iterations} iterations each: A loads a method whose backend")
    print("init fails and logs under the backend lock; B executes, taking that lock.\n")
    rows = []
    variants = [("GIL held", False, None), ("GIL released", True, None)]
    if args.cpp:
        variants += [("C++ GIL held", False, args.cpp), ("C++ GIL released", True, args.cpp)]
    for label, detached, cpp in variants:
        for sink in ("naive", "pylogsink"):
            rows.append(run(label, sink, detached, args.iterations, args.timeout, cpp))
    print(f"{'variant':<16} {'sink':<10} {'result':<28} {'lines delivered':>15}")
    for r in rows:
        result = f"hung (killed after {r.seconds:g} s)" if r.hung else f"completed in {r.seconds:.2f} s"
        if r.errors:
            result += f", {r.errors} thread errors"
        lines = "-" if r.lines is None else str(r.lines)
        print(f"{r.label:<16} {r.sink:<10} {result:<28} {lines:>15}")
    expected = all(r.hung == (r.sink == "naive") and not r.errors for r in rows)
    print("\npylogsink completed every run; the naive sink hung." if expected else "\nUNEXPECTED outcome, see above.")
    if args.exit_runs:
        exit_table(args.exit_runs)
    return 0 if expected else 1


if __name__ == "__main__":
    sys.exit(main())
