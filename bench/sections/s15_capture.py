"""Section 15: output capture. What C code writes to fd 2 (1 MB `write(2)`s
through ctypes, which releases the GIL), captured into an `io.StringIO`,
and into a stream that only counts what it gets, by
`pylogsink.capture_output()` (under `redirect_stderr`) and by
`wurlitzer.pipes()`, side by side in one child, interleaved over rounds;
each run checks that every byte arrived. Bytes per second, median of
rounds, and the ratios. Then the latency from a 100-byte `os.write(2)`
(one every 5 ms) to the StringIO's `write` getting it: median, p99. Then
what a Python `print()` into a StringIO costs inside a capture (through
the front that keeps Python's writes after the native lines written
before them) and without one. Targets: at least wurlitzer's bytes per
second, both ways; p99 <= 50 ms.
"""

from __future__ import annotations

import os
import statistics
import time
from types import ModuleType

from children import run_child
from figures import interleaved, median_ratio, medians, target

BUDGET = {"rounds": (3, 9), "mb": (8, 32), "lines": (100, 400), "prints": (20_000, 100_000)}


def child(p: dict, b: ModuleType) -> dict:
    """Bytes per second through pylogsink.capture_output() and through
    wurlitzer.pipes() into a StringIO, interleaved; then the latency of a
    captured line."""
    import contextlib
    import ctypes
    import io

    import pylogsink
    import wurlitzer

    libc = ctypes.CDLL(None)  # releases the GIL around each write
    data = (b"c" * 99 + b"\n") * 10_000  # 1 MB per write
    total = len(data) * p["mb"]

    class Discard:
        """A stream that keeps nothing but the count."""

        def __init__(self) -> None:
            self.size = 0

        def write(self, text: str) -> int:
            self.size += len(text)
            return len(text)

        def flush(self) -> None:
            pass

        def getvalue(self) -> str:
            return "x" * self.size

    def through(kind: str, sink: str) -> float:
        out = io.StringIO() if sink == "stringio" else Discard()
        start = time.perf_counter()
        if kind == "pylogsink":
            with contextlib.redirect_stderr(out), pylogsink.capture_output(stdout=False):
                for _ in range(p["mb"]):
                    libc.write(2, data, len(data))
        else:
            with wurlitzer.pipes(stdout=None, stderr=out):
                for _ in range(p["mb"]):
                    libc.write(2, data, len(data))
        took = time.perf_counter() - start
        if len(out.getvalue()) != total:
            raise AssertionError(f"{kind}: {len(out.getvalue())} of {total} bytes")
        return total / took

    rates = interleaved(
        p["rounds"],
        {
            f"{kind} {sink}": lambda kind=kind, sink=sink: through(kind, sink)
            for sink in ("stringio", "discard")
            for kind in ("pylogsink", "wurlitzer")
        },
    )

    # What the capture's front costs a Python write: print() into a
    # StringIO, with and without a capture on.
    def prints(front: bool) -> float:
        out = io.StringIO()
        n = p["prints"]
        with contextlib.redirect_stdout(out):
            with pylogsink.capture_output(stderr=False) if front else contextlib.nullcontext():
                start = time.perf_counter_ns()
                for i in range(n):
                    print("a line of Python output", i)
                took = time.perf_counter_ns() - start
        return took / n

    print_ns = interleaved(p["rounds"], {"capture": lambda: prints(True), "none": lambda: prints(False)})

    class Probe(io.StringIO):
        def __init__(self) -> None:
            super().__init__()
            self.seen: dict[int, float] = {}

        def write(self, text: str) -> int:
            now = time.perf_counter()
            for line in text.splitlines():
                if line.startswith("probe "):
                    self.seen[int(line.split()[1])] = now
            return super().write(text)

    probe = Probe()
    sent = {}
    with contextlib.redirect_stderr(probe), pylogsink.capture_output(stdout=False):
        for i in range(p["lines"]):
            sent[i] = time.perf_counter()
            os.write(2, b"probe %d %s\n" % (i, b"p" * 80))
            time.sleep(0.005)
    if len(probe.seen) != p["lines"]:
        raise AssertionError(f"latency: {len(probe.seen)} of {p['lines']} lines")
    ms = [(probe.seen[i] - sent[i]) * 1e3 for i in range(p["lines"])]
    return {"bytes_per_s": rates, "ms": ms, "bytes": total, "print_ns": print_ns}


CHILDREN = {"capture": child}


def measure(p: dict) -> dict:
    c = run_child({"task": "capture", **p}, "null")
    rates = c["bytes_per_s"]
    c["rate"] = medians(rates)
    c["ratio"] = median_ratio(rates["pylogsink stringio"], rates["wurlitzer stringio"])
    c["ratio_discard"] = median_ratio(rates["pylogsink discard"], rates["wurlitzer discard"])
    c["print"] = medians(c["print_ns"])
    c["print_ratio"] = median_ratio(c["print_ns"]["capture"], c["print_ns"]["none"])
    c["median_ms"] = statistics.median(c["ms"])
    c["p99_ms"] = sorted(c["ms"])[int(len(c["ms"]) * 0.99) - 1]
    return c


def targets(c: dict, figs: dict) -> list[dict]:
    return [
        target("capture: bytes/s, pylogsink / wurlitzer", c["ratio"], ">=", 1, "x"),
        target("capture: bytes/s discarded, pylogsink / wurl.", c["ratio_discard"], ">=", 1, "x"),
        target("capture: write to StringIO p99, ms", c["p99_ms"], "<=", 50, "ms"),
        target("capture: print() inside / outside", c["print_ratio"], "<=", 1.5, "x"),
    ]


def report(c: dict) -> list[str]:
    return [
        f"15. output capture: {c['bytes'] / 1e6:.0f} MB written to fd 2 in 1 MB writes (GIL released)",
        f"  into a StringIO: pylogsink.capture_output() {c['rate']['pylogsink stringio'] / 1e6:,.0f} MB/s; "
        f"wurlitzer.pipes() {c['rate']['wurlitzer stringio'] / 1e6:,.0f} MB/s; ratio {c['ratio']:.2f}x",
        f"  into a stream that discards: pylogsink {c['rate']['pylogsink discard'] / 1e6:,.0f} MB/s; "
        f"wurlitzer {c['rate']['wurlitzer discard'] / 1e6:,.0f} MB/s; ratio {c['ratio_discard']:.2f}x",
        f"  a Python print() into a StringIO: {c['print']['none']:,.0f} ns without a capture, "
        f"{c['print']['capture']:,.0f} ns inside one (through the front that keeps the order): "
        f"{c['print_ratio']:.2f}x",
        f"  a 100-byte write(2) to the StringIO: median {c['median_ms']:.1f} ms, p99 {c['p99_ms']:.1f} ms, "
        f"max {max(c['ms']):.1f} ms ({len(c['ms'])} lines)",
    ]
