"""Section 3: kept lines, the same as the direct line of (2) with
`sys.stderr` replaced (an io.StringIO, as under pytest or Jupyter): lines
are kept in memory until the call returns. 600 lines of 100 bytes per
call, which stays under the budget; a second run logs 60,000 lines per
call to measure the budget at work and check that at most `KEPT_CAP` is
kept. Also the write of the kept lines at the return against one
`sys.stderr.write` of the same text, and the same lines through
`log::warn!("{}", message)`, beside the same number of bare write(2)s of
100 B to /dev/null. Target: <= 100 ns per 100-byte line through
`log::warn!`, write at the return included.
"""

from __future__ import annotations

import io
import statistics
import sys
from types import ModuleType

from children import run_child
from figures import median_ratio, target

BUDGET = {"rounds": (300, 2000), "lines": 600, "over_cap_lines": 60_000}
KEPT_CAP = 4 << 20  # the default budget of lines


def child(p: dict, b: ModuleType) -> dict:
    b.install("pylogsink")

    def through_log(lines: int) -> float:
        sys.stderr = io.StringIO()
        emit_ns, return_ns = b.kept_log_lines(lines, 100)
        sys.stderr = sys.__stderr__
        return (emit_ns + return_ns) / lines

    def one(lines: int) -> tuple[float, int, int, str]:
        sys.stderr = io.StringIO()
        emit_ns, return_ns = b.kept_lines(lines, 100)
        text = sys.stderr.getvalue()
        sys.stderr = io.StringIO()
        once_ns = b.python_write_once(text.encode())
        sys.stderr = sys.__stderr__
        return emit_ns / lines, return_ns, once_ns, text

    one(p["lines"])
    through_log(p["lines"])
    per_line, ret, once, with_return, log_warn, bare = [], [], [], [], [], []
    for _ in range(p["rounds"]):
        ns, r, o, under_cap = one(p["lines"])
        per_line.append(ns), ret.append(r), once.append(o)
        with_return.append(ns + r / p["lines"])
        log_warn.append(through_log(p["lines"]))
        # The same number of bare write(2)s of 100 B to fd 2 (/dev/null),
        # side by side.
        bare.append(b.bare_write(p["lines"], 100) / p["lines"])
    left_out_before = b.stats()[1]
    over = [one(p["over_cap_lines"]) for _ in range(max(3, p["rounds"] // 10))]
    text = over[-1][3]
    note = text.split("\n", 1)[0] if text.startswith("[pylogsink]") else ""
    return {
        "lines": p["lines"],
        "over_cap_lines": p["over_cap_lines"],
        "ns_per_line": per_line,
        "ns_per_line_with_return": with_return,
        "log_warn_ns_per_line_with_return": log_warn,
        "bare_write_ns": bare,
        "return_ns": ret,
        "write_once_ns": once,
        "text_bytes": len(under_cap),
        "over_cap_ns_per_line": [o[0] for o in over],
        "over_cap_written_bytes": len(text),
        "over_cap_line_bytes": len(text) - len(note) - (1 if note else 0),
        "over_cap_note": note,
        "over_cap_left_out": (b.stats()[1] - left_out_before) // len(over),
    }


CHILDREN = {"kept": child}


def measure(p: dict) -> dict:
    k = run_child({"task": "kept", **p}, "null")
    k["ratio_bare"] = median_ratio(k["log_warn_ns_per_line_with_return"], k["bare_write_ns"])
    return k


def targets(k: dict, figs: dict) -> list[dict]:
    return [
        target(
            "kept 100 B line, log::warn!, with return",
            statistics.median(k["log_warn_ns_per_line_with_return"]),
            "<=",
            100,
            "ns",
        ),
        target("kept line, log::warn!, with return / bare write", k["ratio_bare"], "<=", 0.6, "x"),
        target("kept per call (line bytes)", k["over_cap_line_bytes"], "<=", KEPT_CAP, "B"),
    ]


def report(k: dict) -> list[str]:
    return [
        "3. kept lines (sys.stderr replaced by io.StringIO), 100 B lines",
        f"  {k['lines']} lines per call (under the cap), emit: {statistics.median(k['ns_per_line']):.0f} ns per line "
        f"(min {min(k['ns_per_line']):.0f}); with the write at return "
        f"{statistics.median(k['ns_per_line_with_return']):.0f} ns",
        f"  through log::warn!(\"{{}}\", message), with the write at return: "
        f"{statistics.median(k['log_warn_ns_per_line_with_return']):.0f} ns per line "
        f"(min {min(k['log_warn_ns_per_line_with_return']):.0f}); a bare write(2) of 100 B to /dev/null, "
        f"side by side: {statistics.median(k['bare_write_ns']):.0f} ns ({k['ratio_bare']:.2f}x)",
        f"  write at return of {k['text_bytes']:,} B: {statistics.median(k['return_ns']) / 1e3:.1f} us; "
        f"one sys.stderr.write of the same text: {statistics.median(k['write_once_ns']) / 1e3:.1f} us "
        f"({median_ratio(k['return_ns'], k['write_once_ns']):.2f}x)",
        f"  {k['over_cap_lines']} lines per call (over the cap): "
        f"{statistics.median(k['over_cap_ns_per_line']):.0f} ns per line; "
        f"written at return {k['over_cap_written_bytes']:,} B, of which lines {k['over_cap_line_bytes']:,} B "
        f"(cap {KEPT_CAP:,}), {k['over_cap_left_out']:,} lines left out per call",
        f"  note: {k['over_cap_note']}",
    ]
