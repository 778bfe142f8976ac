"""latest.txt: the machine and commit of the run, each section's figures
in the order of their numbers, then the Targets table in the order they
were measured. It is printed by every run, and written by a whole one.
"""

from __future__ import annotations

import datetime
import os
import platform
import subprocess

from children import HERE
from sections import REPORTED


def machine() -> dict:
    """What the run measured on, and which commit."""
    cpu = "unknown"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=HERE, capture_output=True, text=True).stdout.strip()

    changed = git("status", "--porcelain", "--", "../crates")
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"),
        "commit": git("rev-parse", "--short", "HEAD") + (" (crates/ modified)" if changed else ""),
        "load": " ".join(f"{x:.2f}" for x in os.getloadavg()),
    }


def fmt_num(x: float, unit: str = "") -> str:
    if unit == "x":
        return f"{x:.2f}x"
    if isinstance(x, float) and x < 100:
        return f"{x:.1f}{' ' + unit if unit else ''}"
    return f"{x:,.0f}{' ' + unit if unit else ''}"


def text(m: dict, fig: dict, targets: list[dict], quick: bool) -> str:
    lines = [
        f"pylogsink benchmark{' (quick)' if quick else ''}: {m['date']}, commit {m['commit']}",
        f"machine: {m['cpu']}, {m['cores']} cores, Linux {m['kernel']}, Python {m['python']}, "
        f"load average at start {m['load']}",
    ]
    for key, _, section in REPORTED:
        if key in fig:
            lines += ["", *section.report(fig[key])]
    lines += ["", "Targets (SPEC)", f"  {'figure':<44}{'measured':>12}  {'target':<13} met"]
    for t in targets:
        limit = t["op"] + " " + fmt_num(t["limit"], t["unit"])
        met = "yes" if t["met"] else "NO"
        lines.append(f"  {t['name']:<44}{fmt_num(t['value'], t['unit']):>12}  {limit:<13} {met}")
    return "\n".join(lines)
