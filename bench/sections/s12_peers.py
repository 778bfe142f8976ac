"""Section 12: a direct line through the `log` front end against the peers
a user would pick instead, and the floor. pylogsink through
`log::error!("{}", message)` (pylogsink the `log` logger, inside
`pylogsink::call` with `sys.stderr is sys.__stderr__`, so each line goes
to fd 2 at once), env_logger 0.11 through the same macro (its default
format: timestamp, level, target; no color), tracing-subscriber 0.3's fmt
layer through `tracing::error!("{}", message)` (no color), and a bare
`write(2)` of pylogsink's line, formatted beforehand.

A `log` logger is process-wide and set once, so each contender runs in a
child of its own (it installs its logger first, see `install`); a round
runs the four children one after the other, in an order that turns around
every round, and the figures are medians over rounds, the ratios medians
of per-round ratios. On /dev/null, a regular file and a pipe drained by
this process; the message makes pylogsink's line 100 (or 1000) bytes, and
every contender logs that same message in its own layout. Targets:
pylogsink <= 1.5x the bare write, <= 0.5x the faster of env_logger and
fmt.
"""

from __future__ import annotations

import os
import stat
from types import ModuleType

from children import FD2S, run_child, whole
from figures import median_ratio, medians, reset_fd2, target

BUDGET = {"rounds": (3, 9), "n": (40_000, 100_000)}
PEERS = ("bare", "pylogsink", "env_logger", "fmt")


def child(p: dict, b: ModuleType) -> dict:
    """One contender, `p["which"]`: a timed run of 100 B lines, then one of
    1000 B lines, each after a warm-up."""
    which = p["which"]
    if which in ("pylogsink", "env_logger"):
        b.install(which)
    regular = stat.S_ISREG(os.fstat(2).st_mode)
    out, lines = {}, 0
    for size in (100, 1000):
        n = p["n"] * 100 // size
        b.peer_lines(1000, size, which)
        reset_fd2()
        ns = b.peer_lines(n, size, which)
        lines += 1000 + n
        per_line = os.fstat(2).st_size / n if regular else None
        # pylogsink's line (and the bare write of it) is `size` bytes: the
        # message is cut to fit it, which this checks.
        if per_line is not None and which in ("pylogsink", "bare") and per_line != size:
            raise AssertionError(f"{which}: {per_line} bytes per line, expected {size}")
        out[size] = {"ns_per_line": ns / n, "bytes_per_line": per_line}
    return {"figures": out, "lines": lines}


CHILDREN = {"peers": child}


def on(fd2: str, p: dict) -> dict:
    """The four contenders' rounds with fd 2 on `fd2`, and their ratios."""
    rounds, all_whole = [], True
    for r in range(p["rounds"]):
        got = {}
        for which in PEERS if r % 2 == 0 else PEERS[::-1]:
            c = run_child({"task": "peers", "which": which, "n": p["n"]}, fd2)
            if fd2 == "pipe":
                all_whole &= whole(c)
            got[which] = c["figures"]
        rounds.append(got)
    figures: dict = {"ns_per_line": {}, "bytes_per_line": {}, "whole": all_whole}
    for size in rounds[0]["bare"]:
        ns = {w: [x[w][size]["ns_per_line"] for x in rounds] for w in PEERS}
        figures["ns_per_line"][size] = ns
        figures["bytes_per_line"][size] = {w: rounds[0][w][size]["bytes_per_line"] for w in PEERS}
        peer = [min(e, f) for e, f in zip(ns["env_logger"], ns["fmt"])]
        figures[f"ratio_bare_{size}"] = median_ratio(ns["pylogsink"], ns["bare"])
        figures[f"ratio_peers_{size}"] = median_ratio(ns["pylogsink"], peer)
    return figures


def measure(p: dict) -> dict:
    return {fd2: on(fd2, p) for fd2 in FD2S}


def targets(f: dict, figs: dict) -> list[dict]:
    rows = []
    for fd2, r in f.items():
        rows += [
            target(f"log::error! / bare write, {size} B, {fd2}", r[f"ratio_bare_{size}"], "<=", 1.5, "x")
            for size in r["ns_per_line"]
        ]
        rows += [
            target(f"log::error! / min(peers), {size} B, {fd2}", r[f"ratio_peers_{size}"], "<=", 0.5, "x")
            for size in r["ns_per_line"]
        ]
    return rows


def report(f: dict) -> list[str]:
    lines = [
        "12. direct line through log::error!(\"{}\", message) against its peers, ns per line (median of rounds,",
        "  one child per contender and round): pylogsink (in a call, to fd 2), env_logger (default format),",
        "  tracing fmt (tracing::error!), bare write(2) of pylogsink's line; size is pylogsink's line",
        f"  {'fd 2':<10}{'size':>6}{'bare':>8}{'pylogsink':>11}{'env_logger':>12}{'fmt':>8}{'pyl/bare':>10}"
        f"{'pyl/min(peers)':>16}",
    ]
    for fd2, r in f.items():
        for size, ns in r["ns_per_line"].items():
            med = medians(ns)
            lines.append(
                f"  {fd2:<10}{size + ' B':>6}{med['bare']:>8.0f}{med['pylogsink']:>11.0f}{med['env_logger']:>12.0f}"
                f"{med['fmt']:>8.0f}{r[f'ratio_bare_{size}']:>9.2f}x{r[f'ratio_peers_{size}']:>15.2f}x"
            )
    if "file" in f:
        per = f["file"]["bytes_per_line"]
        lines.append(
            "  bytes per line (file): "
            + "; ".join(
                f"{size} B: " + ", ".join(f"{w} {v:.0f}" for w, v in b.items() if w != "bare") for size, b in per.items()
            )
        )
    pipe = f["pipe"]
    lines.append(f"  pipe: every line of every contender read back whole: {'yes' if pipe['whole'] else 'NO'}")
    return lines
