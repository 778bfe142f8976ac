"""Sections 1-2: what pylogsink adds to every line it writes at once.

1. bare write: `write(2)` of a pre-formatted 100-byte (and 1000-byte)
   line. The floor: what printing a line costs at the least.
2. direct line: `pylogsink::emit` inside `pylogsink::call` with
   `sys.stderr is sys.__stderr__`, so each line goes to fd 2 at once, on
   /dev/null, a regular file and a pipe drained by another process. It
   includes formatting the record (timestamp, escaping), so against (1)
   it shows what pylogsink adds to every line. Target: <= 1.5x. Beside
   them, "fmt+write": the same formatting, then a plain blocking write(2),
   which tells the cost of formatting from that of routing and of the
   non-blocking write.
"""

from __future__ import annotations

from types import ModuleType

from children import each_fd2
from figures import interleaved, median_ratio, medians, target

BUDGET = {"rounds": (5, 11), "n": (40_000, 200_000)}


def child(p: dict, b: ModuleType) -> dict:
    out, lines = {}, 0
    for size in (100, 1000):
        n = p["n"] * 100 // size
        b.bare_write(1000, size), b.format_write(1000, size), b.direct_lines(1000, size)
        contenders = {
            "bare": lambda: b.bare_write(n, size) / n,
            "format_write": lambda: b.format_write(n, size) / n,
            "direct": lambda: b.direct_lines(n, size) / n,
        }
        # The floor of a write that cannot block: one pwritev2(RWF_NOWAIT)
        # where fd 2 takes it, else lseek + write(2). Not on a pipe, where
        # pwritev2 may find no room and the line count would not add up.
        if p["fd2"] != "pipe":
            how = "lseek" if p["fd2"] == "file" else "nowait"
            contenders["floor"] = lambda: b.nonblocking_write(n, size, how) / n
        out[size] = interleaved(p["rounds"], contenders)
        lines += 3000 + len(contenders) * n * p["rounds"]
    return {"ns_per_line": out, "lines": lines}


CHILDREN = {"direct": child}


def measure(p: dict) -> dict:
    return each_fd2("direct", p, "direct", "bare")


def targets(f: dict, figs: dict) -> list[dict]:
    return [
        target(f"direct / bare write, {size} B, {fd2}", r[f"ratio_{size}"], "<=", 1.5, "x")
        for fd2, r in f.items()
        for size in r["ns_per_line"]
    ]


def report(f: dict) -> list[str]:
    lines = [
        "1-2. direct line (pylogsink::emit, fd 2) vs bare write(2), ns per line (median of rounds)",
        "  (fmt+write: format the record as pylogsink does, then a blocking write(2))",
        "  (floor: the same bytes by the system calls that cannot block, pwritev2(RWF_NOWAIT) on",
        "  /dev/null, lseek + write(2) on a file that refuses RWF_NOWAIT; on a pipe pwritev2 costs what",
        "  write(2) does)",
        f"  {'fd 2':<10}{'size':>6}{'bare':>8}{'floor':>8}{'fmt+write':>11}{'direct':>8}{'direct/bare':>13}"
        f"{'floor/bare':>12}{'direct/fmt+write':>18}",
    ]
    for fd2, r in f.items():
        for size, ns in r["ns_per_line"].items():
            med = medians(ns)
            floor, floor_ratio = "-", "-"
            if "floor" in ns:
                floor, floor_ratio = f"{med['floor']:.0f}", f"{median_ratio(ns['floor'], ns['bare']):.2f}x"
            lines.append(
                f"  {fd2:<10}{size + ' B':>6}{med['bare']:>8.0f}{floor:>8}{med['format_write']:>11.0f}"
                f"{med['direct']:>8.0f}{r[f'ratio_{size}']:>12.2f}x{floor_ratio:>12}"
                f"{median_ratio(ns['direct'], ns['format_write']):>17.2f}x"
            )
    pipe = f["pipe"]
    got = pipe["drained"]
    lines.append(f"  pipe: the reader got {got['lines']:,} of {pipe['lines']:,} lines, {got['bad']} malformed")
    return lines
