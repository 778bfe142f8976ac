"""Section 8: user-space instructions per line under callgrind (full runs,
where valgrind is installed): bare write against fmt+write and the direct
line, and the contenders of (12): pylogsink through `log::error!` with a
format argument, env_logger and tracing fmt, 100-byte records on
/dev/null. A count that clock noise cannot move (the kernel's part of a
write is not counted, so this shows only what runs in user space).
Targets: <= 350 for the direct line, <= 400 for pylogsink's `log::error!`
line, formatting included.
"""

from __future__ import annotations

import os
import shutil
from types import ModuleType

from children import RESULTS, run_child
from figures import target

BUDGET = {"n": 20_000}
# What is counted: the child's `which`, and the loop function that
# callgrind counts (--toggle-collect) in it.
INSTRUCTIONS = {
    "bare": "loop_bare",
    "format_write": "loop_format_write",
    "direct": "loop_emit",
    "log_pylogsink": "loop_log_pylogsink",
    "env_logger": "loop_log_env_logger",
    "fmt": "loop_tracing_fmt",
}


def child(p: dict, b: ModuleType) -> dict:
    which = p["which"]
    if which in ("log_pylogsink", "env_logger"):
        b.install(which.removeprefix("log_"))
    run = {
        "bare": b.bare_write,
        "format_write": b.format_write,
        "direct": b.direct_lines,
        "log_pylogsink": lambda n, size: b.peer_lines(n, size, "pylogsink"),
        "env_logger": lambda n, size: b.peer_lines(n, size, "env_logger"),
        "fmt": lambda n, size: b.peer_lines(n, size, "fmt"),
    }[which]
    return {"ns": run(p["n"], 100)}


CHILDREN = {"instructions": child}


def unmeasured(quick: bool) -> str | None:
    """Full runs only, where valgrind is installed; silently."""
    return "" if quick or not shutil.which("valgrind") else None


def measure(p: dict) -> dict:
    counts = {}
    for which, fn in INSTRUCTIONS.items():
        out = os.path.join(RESULTS, f"callgrind.{which}.tmp")
        wrap = ["valgrind", "--tool=callgrind", f"--toggle-collect=*{fn}*", f"--callgrind-out-file={out}"]
        run_child({"task": "instructions", "which": which, **p}, "null", wrap=wrap)
        with open(out) as f:
            total = next(int(line.split()[1]) for line in f if line.startswith(("summary:", "totals:")))
        os.unlink(out)
        counts[which] = total / p["n"]
    return counts


def targets(i: dict, figs: dict) -> list[dict]:
    return [
        target("direct line 100 B, instructions (callgrind)", i["direct"], "<=", 350),
        target("log::error! 100 B, instructions (callgrind)", i["log_pylogsink"], "<=", 400),
    ]


def report(i: dict) -> list[str]:
    return [
        "8. user-space instructions per 100 B line (callgrind, kernel not counted)",
        f"  bare write {i['bare']:.0f}, fmt+write {i['format_write']:.0f}, direct line {i['direct']:.0f}",
        f"  log::error!(\"{{}}\", message): pylogsink {i['log_pylogsink']:.0f}, env_logger {i['env_logger']:.0f}; "
        f"tracing::error! through fmt {i['fmt']:.0f}",
    ]
