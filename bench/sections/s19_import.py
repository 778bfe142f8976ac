"""Section 19: import. The wall time of a fresh interpreter (`python -c`)
that imports pylogsink, against one that runs `pass`, interleaved over
rounds, median; also `pylogsink.ffmpeg` and `pylogsink.sqlite`, and
`import av` with and without `pylogsink.ffmpeg` where PyAV is installed.
A `.pth` line that installs pylogsink.sqlite or pylogsink.ffmpeg pays
this at every start of Python in the environment. Target: `import
pylogsink` <= 10 ms over the bare interpreter. Measured from the parent:
the interpreters it starts are the measurement.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import time

from figures import medians, target

BUDGET = {"rounds": (5, 21)}
BARE = "bare interpreter (pass)"
CHILDREN: dict = {}


def measure(p: dict) -> dict:
    """Milliseconds a fresh interpreter takes to run each statement, the
    statements interleaved (forward, then backward, ...), median of rounds."""
    statements = {
        BARE: "pass",
        "import pylogsink": "import pylogsink",
        "import pylogsink.ffmpeg": "import pylogsink.ffmpeg",
        "import pylogsink.sqlite": "import pylogsink.sqlite",
    }
    if importlib.util.find_spec("av") is not None:
        statements |= {"import av": "import av", "import av, pylogsink.ffmpeg": "import av, pylogsink.ffmpeg"}
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYLOGSINK_")}
    ms: dict[str, list[float]] = {name: [] for name in statements}
    for i in range(p["rounds"]):
        for name in list(statements)[:: 1 if i % 2 == 0 else -1]:
            start = time.perf_counter()
            subprocess.run([sys.executable, "-c", statements[name]], check=True, env=env)
            ms[name].append((time.perf_counter() - start) * 1e3)
    return medians(ms)


def targets(ms: dict, figs: dict) -> list[dict]:
    return [target("import pylogsink, over a bare interpreter", ms["import pylogsink"] - ms[BARE], "<=", 10, "ms")]


def report(ms: dict) -> list[str]:
    lines = [
        "19. a fresh interpreter (python -c) that imports, against one that runs pass, median of rounds",
        f"  {'statement':<40}{'ms':>9}{'over bare':>11}",
    ]
    for name, value in ms.items():
        lines.append(f"  {name:<40}{value:>9.1f}{value - ms[BARE]:>11.1f}")
    return lines
