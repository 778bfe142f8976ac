"""pylogsink benchmark: the figures of SPEC.md ("Figures it must reach"),
measured side by side in one run, as ratios.

    .venv/bin/python bench/run.py [--quick] [--only NAME[,NAME...]]
    .venv/bin/python bench/run.py --quick --gate | --write-baseline

Build first with bench/build.sh. Prints the machine, the figures and the
targets, writes them to bench/results/latest.txt, and writes
bench/results/latest.json and bench/results/latest.png.
--quick is a smoke test (well under a minute); the full run takes minutes.
--only runs the measurements named (the keys of their figures, see
`SECTIONS`: "logging", "live", ...) and only prints them; the files
in bench/results/ stay those of the last whole run.
A figure that misses its target is reported, not failed: the exit status
is non-zero only if a line was lost or torn on a pipe, which is a bug, or,
with --gate, if a figure is more than 1.5x worse than its baseline twice
(bench/gate.py; --write-baseline sets bench/baseline.json).

Each measurement runs in a child process whose fd 2 is set up for it (this
same file with --child; bench/children.py), and rivals are timed in the
same child, interleaved, a ratio being the median of per-round ratios
(bench/figures.py).

Why each measurement exists:

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
3. kept line: the same with `sys.stderr` replaced (an io.StringIO, as
   under pytest or Jupyter): lines are kept in memory until the call
   returns. 600 lines of 100 bytes per call, which stays under the 64 KiB
   cap; a second run logs 6000 lines per call to measure the cap at work
   and check that at most 64 KiB is kept. Also the write of the kept lines
   at the return against one `sys.stderr.write` of the same text, and
   the same lines through `log::warn!("{}", message)`.
   Target: <= 100 ns per 100-byte line through `log::warn!`, write at the
   return included.
4. call overhead: a no-op #[pyfunction] against the same wrapped in
   `pylogsink::call`, timed from Python with timeit, interleaved in one
   child. Every binding pays this. Two builds, each row saying which: the
   benchmark's module built for the newest CPython found (no stable ABI;
   pylogsink keeps "is sys.stderr replaced" with a dict watcher on
   sys.__dict__), in the .venv-versioned bench/build.sh makes, and the abi3 build this
   interpreter runs (two dict lookups per call). Target, where the stable
   ABI is not required (the first row): <= 1.25x (minimum of rounds).
   Beside it, `pylogsink::flush` with nothing waiting, timed in Rust over
   a loop inside one call, against an empty loop's turn. Target: <= 20 ns.
5. lines per second: pylogsink (direct to fd 2) against the naive sink
   (each line through `sys.stderr.write`, with the GIL) and against
   pyo3-log with a logging.StreamHandler, all to the same fd (/dev/null,
   then a regular file), in the same child. Target: >= 10x pyo3-log.
6. threads: 1, 2, 4, 8 threads logging at once into a pipe that another
   process drains and checks: every line whole, none missing, in order per
   thread. Beside it, the same with a blocking `write(2)` per line.
7. memory: resident set size over a million calls that log 3 lines each
   with `sys.stderr` replaced by a writer that discards. Target: flat.
8. (full run, if valgrind is installed) user-space instructions per line
   under callgrind, bare write against fmt+write and the direct line, and
   the contenders of (12): pylogsink through `log::error!` with a format
   argument, env_logger and tracing fmt, 100-byte records on /dev/null: a
   count that clock noise cannot move (the kernel's part of a write is not
   counted, so this shows only what runs in user space). Target: <= 400
   for pylogsink's `log::error!` line, formatting included.
9. filter: what the filter costs, on /dev/null, 100-byte records inside a
   call, all with `pylogsink::emit`. A record it drops by level (Debug
   under "info"), and one dropped by a target directive (Info from
   `myruntime::noisy::x` under "info,myruntime::noisy=off"), in ns per
   record; the same dropped record under a filter of 1,000 target
   directives (`BIG_FILTER`: the most a filter may name), in ns per record;
   and an enabled record under that per-target filter against the same
   under plain "info", as a ratio: the cost of the target lookup on every
   record that is logged. The `log` macros are not measured: that
   child installs no `log` logger, and `log`'s macros drop what is below
   `log::max_level()` before any logger is asked. SPEC: "a record the
   filter drops: no formatting, no allocation, a level compare"; the proxy
   used is at most 10 ns per record dropped by level.
10. logging destination against pyo3-log. Records per second into the
   same handler, in the same child: a logging.StreamHandler on /dev/null
   with the formatter of (5), on the root logger at INFO, counting what
   it writes so that each run checks every record arrived. pylogsink:
   `pylogsink::emit` of Info records, 400 per `pylogsink::call` (about
   50 KB as the cap counts them, under its 64 KiB), handed over at the
   call's return: each made with `Logger.makeRecord`, stamped with the
   time and thread it was logged at, and given to `Logger.handle`; timed
   over whole calls. pyo3-log: `log::info!`, each record made and handled
   at once, with the GIL (held already, so taking it costs little).
   Beside them, bare logging: `Logger.handle(Logger.makeRecord(...))`
   from a Python loop, the ceiling of any bridge that makes and handles a
   LogRecord per record. Targets: >= 2x pyo3-log's records per second,
   and within 10% of the ceiling: pylogsink's records per second >= 0.9x
   bare logging's (the report gives pyo3-log's share of it beside).
   Then a disabled record: Info records, logger `myruntime.backend` at
   WARNING, in ns per record, after first records that taught each side
   that level. pylogsink: `pylogsink::emit` inside a call; the filter
   "info" lets it through and the Python levels, read at the call's
   entry and learnt at the first delivery, drop it (`stats` checks that
   none was kept). pyo3-log: `log::info!`; `log::max_level` is set by
   pyo3-log (Debug), so the macro asks pyo3-log, which drops the record
   by its cached level, without the GIL. With the root at INFO only the
   target's cached level can drop it (Target: >= 10x cheaper than
   pyo3-log); with the root at WARNING no logger takes Info, and
   pylogsink's floor (the lowest level set on any logger) drops it.
11. tracing events with two fields: pylogsink's layer against
   tracing-subscriber's fmt layer, in the same child. Target: <= 0.5x.
12. a direct line through the `log` front end against the peers a user
   would pick instead, and the floor: pylogsink through
   `log::error!("{}", message)` (pylogsink the `log` logger, inside
   `pylogsink::call` with `sys.stderr is sys.__stderr__`, so each line
   goes to fd 2 at once), env_logger 0.11 through the same macro (its
   default format: timestamp, level, target; no color), tracing-subscriber
   0.3's fmt layer through `tracing::error!("{}", message)` (no color), and
   a bare `write(2)` of pylogsink's line, formatted beforehand. A `log`
   logger is process-wide and set once, so each contender runs in a child
   of its own (it installs its logger first, see `install`); a round runs
   the four children one after the other, in an order that turns around
   every round, and the figures are medians over rounds, the ratios
   medians of per-round ratios. On /dev/null, a regular file and a pipe
   drained by this process; the message makes pylogsink's line 100 (or
   1000) bytes, and every contender logs that same message in its own
   layout. Targets: pylogsink <= 1.5x the bare write, <= 0.5x the faster
   of env_logger and fmt.
13. live delivery: a call that releases the GIL logs one line every 5 ms
   through the demo runtime; each line is timed from when it was logged
   (`LogRecord.created`; the line's own timestamp) to when a logging
   handler, then a replaced `sys.stderr`, got it. Median, p99 and max in
   ms. Target: p99 <= 50 ms.
14. logging destination while another Python thread holds the GIL busy:
   the case pylogsink exists for, a native thread that logs while Python
   runs. A Python thread spins in pure Python (`while not stop: x += 1`)
   so that the GIL is always wanted; records are logged by a thread that
   does not hold it, 100-byte Info records to the handler of (10), and
   only the native loop is timed, in ns per record. After each run the
   child waits (up to 10 s) until the handler got every record, so the
   figure counts records delivered. pylogsink, twice, as the bench module
   can drive it both ways: from a native thread of its own outside any
   call (`pylogsink::emit`; each record waits in the process-wide queue,
   and pylogsink's delivery thread hands it to `logging` within ~100 ms),
   and from the calling thread inside `pylogsink::call` with the GIL
   released (`py.detach`; records wait in the call, handed over while it
   runs by the same delivery thread, the rest at its return, not timed).
   Neither takes the GIL in the loop. pyo3-log: `log::info!` from a
   native thread of its own, which takes the GIL for every record and so
   waits until the spinning thread lets it go (up to the switch interval,
   5 ms by default, left as it is; a record that comes right after the
   thread let the GIL go may win it back at once): it logs far fewer
   records per run (`BUDGET`), which is fair as the figure is per record.
   Target: pylogsink <= 200 ns per record (median of rounds), each way;
   pyo3-log's ns per record and the ratio beside it.
15. output capture: what C code writes to fd 2 (1 MB `write(2)`s through
   ctypes, which releases the GIL), captured into an `io.StringIO`, and
   into a stream that only counts what it gets, by
   `pylogsink.capture_output()` (under `redirect_stderr`) and by
   `wurlitzer.pipes()`, side by side in one child, interleaved over rounds;
   each run checks that every byte arrived. Bytes per second, median of
   rounds, and the ratios. Then the latency from a 100-byte `os.write(2)`
   (one every 5 ms) to the StringIO's `write` getting it: median, p99.
   Then what a Python `print()` into a StringIO costs inside a capture
   (through the front that keeps Python's writes after the native lines
   written before them) and without one. Targets: at least wurlitzer's
   bytes per second, both ways; p99 <= 50 ms.
16. FFmpeg: a threaded decode at DEBUG (libavcodec's MPEG-4 decoder, 4
   frame threads, `debug` = picture info and macroblock types: about 6
   lines a frame of 64x64, made of about 60 `av_log` calls) in the test
   extension `av_rt` (tests/c_libraries,
   built by bench/build.sh where pkg-config finds libavcodec), with three
   log callbacks in the same child, interleaved, all to the same fd 2, a
   regular file: FFmpeg's default callback, the recipe of
   examples/c-libraries (pylogsink), and the per-line callback many
   wrappers have (take the GIL, call `logging`, with the formatter of (5)).
   Wall time per decode (median of rounds) and the lines each run left in
   the file (the per-line callback logs each part of a macroblock line as
   a record of its own). Then, per callback, a child that decodes 2,000
   frames on one thread while another waits for the frames with the GIL
   held: "completed", or "hung" after 15 s. Targets: pylogsink <= 1.1x the
   default callback's time, >= 5x faster than the per-line GIL callback,
   and no hang.
18. PyAV: a decode of 2,000 frames of 64x64 (MPEG-4, made by PyAV in the
   child, one decoder thread) at DEBUG with picture info and macroblock
   types, fd 2 /dev/null, with three log callbacks in the same child,
   interleaved: FFmpeg's default callback, PyAV's own (the GIL and
   `logging` per `av_log` call, a StreamHandler to stderr with the
   formatter of (5)), and `pylogsink.ffmpeg.install()`. Wall time per
   decode, median of rounds, and the ratios. Then, per callback (PyAV's,
   pylogsink's), a child that closes decoders early (50 rounds, 4 frame
   threads, at DEBUG) while a Python thread spins on the GIL: "completed",
   or "hung" after 20 s. Targets: pylogsink.ffmpeg <= 1.1x the default
   callback's time, PyAV's >= 1.5x pylogsink's, and no hang. Measured
   where `av` is installed (bench/build.sh installs it where PyPI has a
   wheel).
19. import: the wall time of a fresh interpreter (`python -c`) that
   imports pylogsink, against one that runs `pass`, interleaved over
   rounds, median; also `pylogsink.ffmpeg` and `pylogsink.sqlite`, and
   `import av` with and without `pylogsink.ffmpeg` where PyAV is
   installed. A `.pth` line that installs pylogsink.sqlite or
   pylogsink.ffmpeg pays this at every start of Python in the
   environment. Target: `import pylogsink` <= 10 ms over the bare
   interpreter.

Every measurement but (9) runs with the filter "info", so that each of its
Info records is logged; (9) changes the filter and puts "info" back. (10),
(13) and (14) run in children of their own with the `logging` destination;
every other measurement sends records to stderr.
"""

import datetime
import importlib.util
import json
import logging
import os
import platform
import shutil
import stat
import statistics
import subprocess
import sys
import threading
import time

import gate
from children import FD2S, HERE, RESULTS, child_main, each_fd2, run_child
from children import whole as pipe_whole
from figures import interleaved, median_ratio, pick, reset_fd2
from records import TARGET, line_formatter, line_message, logging_setup

# The figures of a quick run that --gate compares with (bench/gate.py).
BASELINE = os.path.join(HERE, "baseline.json")
KEPT_CAP = 4 << 20  # the default budget of lines

# Work per measurement: (quick, full).
BUDGET = {
    "direct": {"rounds": (5, 11), "n": (40_000, 200_000)},
    "writer": {"rounds": (3, 9), "n": (20_000, 100_000)},
    "tracing": {"rounds": (5, 11), "n": (40_000, 200_000)},
    "peers": {"rounds": (3, 9), "n": (40_000, 100_000)},
    "kept": {"rounds": (300, 2000), "lines": 600, "over_cap_lines": 60_000},
    "overhead": {"rounds": (9, 31), "number": (100_000, 1_000_000)},
    "sinks": {"rounds": (3, 7), "n": (60_000, 300_000)},
    "threads": {"rounds": (1, 3), "lines": (100_000, 400_000)},
    "memory": {"calls": (200_000, 1_000_000)},
    "instructions": {"n": 20_000},
    "filter": {"rounds": (5, 11), "n": (40_000, 200_000), "dropped_n": (1_000_000, 5_000_000)},
    "logging": {"rounds": (3, 9), "n": (20_000, 60_000), "per_call": 400, "dropped_n": (1_000_000, 3_000_000)},
    "live": {"count": (100, 400)},
    "capture": {"rounds": (3, 9), "mb": (8, 32), "lines": (100, 400), "prints": (20_000, 100_000)},
    # pyo3-log waits for the GIL at every record (about the switch
    # interval, 5 ms): it logs fewer records per round.
    "gil_busy": {"rounds": (5, 11), "n": 5_000, "pyo3_log_n": (20, 200)},
    "ffmpeg": {"rounds": (3, 9), "frames": (150, 300)},
    "pyav": {"rounds": (3, 7), "frames": 2_000},
    "delivered": {},
    "import": {"rounds": (5, 21)},
}
# Where bench/build.sh builds the C library test extensions.
C_LIBRARIES = os.path.join(HERE, "target", "c_libraries")
NOISE_VIDEO = os.path.join(HERE, "..", "tests", "scripts", "noise_video.py")
PER_TARGET_FILTER = "info,myruntime::noisy=off"
# 1,000 targets, the most a filter may name: 999 beside the one of PER_TARGET_FILTER.
BIG_FILTER = "info," + ",".join(f"myruntime::part{i}=warn" for i in range(999)) + ",myruntime::noisy=off"

# ---------------------------------------------------------------- child side


def child_direct(p, b):
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


def child_tracing(p, b):
    out, lines = {}, 0
    for size in (100, 1000):
        n = p["n"] * 100 // size
        b.tracing_lines(1000, size, "pylogsink"), b.tracing_lines(1000, size, "fmt")
        out[size] = interleaved(
            p["rounds"],
            {
                "pylogsink": lambda: b.tracing_lines(n, size, "pylogsink") / n,
                "fmt": lambda: b.tracing_lines(n, size, "fmt") / n,
            },
        )
        lines += 2000 + 2 * n * p["rounds"]
    return {"ns_per_line": out, "lines": lines}


PEERS = ("bare", "pylogsink", "env_logger", "fmt")


def child_peers(p, b):
    """One contender of (12), `p["which"]`: a timed run of 100 B lines, then
    one of 1000 B lines, each after a warm-up."""
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


def child_writer(p, b):
    """The writer-thread question, on this child's fd 2: a direct line
    (formatted and written by the caller, never blocking), the same line
    handed to a writer thread (b.handoff_lines: the caller's time, and the
    whole run's until the last line is written), and a bare write(2)."""
    n = p["n"]
    runs = {
        "direct": lambda: b.direct_lines(n, 100) / n,
        "handoff": lambda: b.handoff_lines(n, 100),
        "bare": lambda: b.bare_write(n, 100) / n,
    }
    runs["direct"](), runs["handoff"]()
    got = interleaved(p["rounds"], runs)
    return {
        "direct": got["direct"],
        "bare": got["bare"],
        "handoff_caller": [c / n for c, _ in got["handoff"]],
        "handoff_whole": [w / n for _, w in got["handoff"]],
    }


def child_kept(p, b):
    import io

    b.install("pylogsink")

    def through_log(lines):
        sys.stderr = io.StringIO()
        emit_ns, return_ns = b.kept_log_lines(lines, 100)
        sys.stderr = sys.__stderr__
        return (emit_ns + return_ns) / lines

    def one(lines):
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


def child_overhead(p, b):
    import timeit

    n = p["number"]
    timers = {
        "noop": timeit.Timer("f()", globals={"f": b.noop}),
        "call": timeit.Timer("f()", globals={"f": b.noop_call}),
        "loop": timeit.Timer("pass"),
    }
    out = interleaved(p["rounds"], {k: lambda t=t: t.timeit(n) / n * 1e9 for k, t in timers.items()})
    costs = [b.flush_cost(n) for _ in range(p["rounds"])]
    out["flush"] = [c[0] for c in costs]
    out["flush_lines"] = [c[1] for c in costs]
    out["flush_loop"] = [c[2] for c in costs]
    native = getattr(b, "pylogsink_bench", b)  # the .so inside the package
    abi3 = ".abi3." in os.path.basename(native.__file__)
    out["build"] = (
        f"CPython {platform.python_version()}, {'abi3 build' if abi3 else 'version-specific build'}, "
        f"{b.stderr_check()}"
    )
    return out


# The call overhead where the stable ABI is not required: the benchmark's
# module built for the newest CPython found, in the venv bench/build.sh
# makes for it.
VERSIONED_PYTHON = os.path.join(HERE, "..", ".venv-versioned", "bin", "python")


def overhead_rows(p):
    """The call overhead of each build: the version-specific one (if
    bench/build.sh made it), then the abi3 one this interpreter runs."""
    rows = []
    if os.access(VERSIONED_PYTHON, os.X_OK):
        rows.append(run_child({"task": "overhead", **p}, "null", python=VERSIONED_PYTHON))
    rows.append(run_child({"task": "overhead", **p}, "null"))
    for o in rows:
        o["ratio_min"] = min(o["call"]) / min(o["noop"])
        o["ratio_median"] = median_ratio(o["call"], o["noop"])
    return rows


def child_sinks(p, b):
    b.install("pyo3-log")
    handler = logging.StreamHandler(sys.stderr)
    fmt = line_formatter()
    handler.setFormatter(fmt)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO)
    size = 100
    message = line_message(b, size)
    sample = logging.LogRecord(TARGET.replace("::", "."), logging.INFO, "src/lib.rs", 170, message, (), None)
    n = p["n"]
    counts = {"pylogsink": n, "naive": n // 5, "pyo3-log": n // 20}
    sinks = {
        "pylogsink": lambda k: b.direct_lines(k, size),
        "naive": lambda k: b.naive_lines(k, size),
        "pyo3-log": lambda k: b.pyo3log_lines(k, message),
    }
    for name, run in sinks.items():
        run(200)
    lines_per_s = interleaved(
        p["rounds"], {name: lambda n=counts[name], run=run: n / run(n) * 1e9 for name, run in sinks.items()}
    )
    return {"lines_per_s": lines_per_s, "bytes_per_line": {"pyo3-log": len(fmt.format(sample)) + 1, "other": size}}


def child_filter(p, b):
    cases = {  # name: (records, filter, level, target)
        "plain": (p["n"], "info", "info", TARGET),
        "per_target": (p["n"], PER_TARGET_FILTER, "info", TARGET),
        "dropped_level": (p["dropped_n"], "info", "debug", TARGET),
        "dropped_target": (p["dropped_n"], PER_TARGET_FILTER, "info", "myruntime::noisy::x"),
        "dropped_target_1000": (p["dropped_n"], BIG_FILTER, "info", "myruntime::noisy::x"),
    }

    def run(name, n=None):
        records, spec, level, target = cases[name]
        n = n or records
        ns, logged = b.filtered_lines(n, 100, spec, level, target)
        # A dropped record that was logged, or the reverse, would make the
        # figure measure the other case.
        expected = 0 if name.startswith("dropped") else n
        if logged != expected:
            raise AssertionError(f"{name}: {logged} of {n} records logged, expected {expected}")
        return ns / n

    for name in cases:
        run(name, 1000)
    figures = interleaved(p["rounds"], {name: lambda name=name: run(name) for name in cases})
    return {"ns_per_record": figures, "n": p["n"], "dropped_n": p["dropped_n"]}


def child_logging_delivered(p, b):
    b.install("pyo3-log")
    handler, logger = logging_setup(b, "INFO", "NOTSET")
    message = line_message(b, 100)
    per_call = p["per_call"]

    def bare(n):
        start = time.perf_counter_ns()
        for _ in range(n):
            logger.handle(logger.makeRecord(logger.name, logging.INFO, "src/lib.rs", 1, message, (), None))
        return time.perf_counter_ns() - start

    rivals = {
        "pylogsink": lambda n: b.logging_calls(n // per_call, per_call, message),
        "pyo3-log": lambda n: b.pyo3log_lines(n, message),
        "bare logging": bare,
    }

    def run(name, n):
        handler.count = 0
        ns = rivals[name](n)
        # A record left out (over the per-call cap) or lost would make the
        # figure count records that were never handled.
        if handler.count != n:
            raise AssertionError(f"{name}: the handler got {handler.count} of {n} records")
        return n / ns * 1e9

    if p["n"] % per_call:
        raise ValueError("n must be a multiple of per_call")
    for name in rivals:
        run(name, per_call)
    return {"records_per_s": interleaved(p["rounds"], {name: lambda name=name: run(name, p["n"]) for name in rivals})}


def child_logging_disabled(p, b):
    b.install("pyo3-log")
    handler, _ = logging_setup(b, p["root_level"], "WARNING")
    message = line_message(b, 100)

    def pylogsink(n):
        ns, logged = b.filtered_lines(n, 100, "info", "info", TARGET)
        # Kept and refused at delivery would be a different (and dearer) path.
        if logged:
            raise AssertionError(f"pylogsink: {logged} of {n} disabled records were kept")
        return ns

    rivals = {"pylogsink": pylogsink, "pyo3-log": lambda n: b.pyo3log_lines(n, message)}

    def run(name, n):
        ns = rivals[name](n)
        if handler.count:
            raise AssertionError(f"{name}: the handler got {handler.count} disabled records")
        return ns / n

    # The first records teach each side the logger's level (few: before
    # pylogsink knows it, they are kept, and more than the cap would cost
    # a note that the handler gets).
    b.filtered_lines(100, 100, "info", "info", TARGET), b.pyo3log_lines(100, message)
    n = p["dropped_n"]
    return {"ns_per_record": interleaved(p["rounds"], {name: lambda name=name: run(name, n) for name in rivals})}


def child_gil_busy(p, b):
    """(14): records logged without the GIL while a Python thread spins in
    pure Python, so that the GIL is always wanted. pylogsink (the `logging`
    destination, records kept natively for its delivery thread), from a
    native thread outside any call and inside a call that released the
    GIL, against pyo3-log from a native thread. Only the native loop is
    timed; each run then waits until the handler got every record."""
    b.install("pyo3-log")
    handler, _ = logging_setup(b, "INFO", "NOTSET")
    message = line_message(b, 100)
    # A first call with the `logging` destination starts pylogsink's
    # delivery thread.
    b.logging_calls(1, 1, message)
    counts = {"outside": p["n"], "in_call": p["n"], "pyo3-log": p["pyo3_log_n"]}

    def run(name, n=None):
        n = n or counts[name]
        handler.count = 0
        ns = b.gil_busy_lines(n, message, name)
        # pyo3-log handles each record before it returns; pylogsink's
        # thread within ~100 ms (longer here: it waits for the GIL too).
        deadline = time.monotonic() + 10
        while handler.count < n and time.monotonic() < deadline:
            time.sleep(0.01)
        if handler.count != n:
            raise AssertionError(f"{name}: the handler got {handler.count} of {n} records")
        return ns / n

    stop, spins = False, [0]

    def busy():
        x = 0
        while not stop:
            x += 1
        spins[0] = x

    spinner = threading.Thread(target=busy, name="busy")
    spinner.start()
    try:
        for name in counts:
            run(name, 5)
        ns = interleaved(p["rounds"], {name: lambda name=name: run(name) for name in counts})
    finally:
        stop = True
        spinner.join()
    return {"ns_per_record": ns, "n": counts, "switch_interval_s": sys.getswitchinterval(), "spins": spins[0]}


def child_live(p, b):
    """Live delivery: a call that releases the GIL logs one line every 5 ms
    through the demo runtime (pylogsink's own package); each is timed from
    when it was logged (LogRecord.created; a line's own timestamp) to when a
    logging handler got it, and to when a replaced sys.stderr got it."""

    import pylogsink

    def logged_at(line):
        stamp = datetime.datetime.strptime(line[1:28], "%Y-%m-%dT%H:%M:%S.%fZ")
        return stamp.replace(tzinfo=datetime.timezone.utc).timestamp()

    latency = {"logging": [], "stderr": []}

    class Handler(logging.Handler):
        def emit(self, record):
            latency["logging"].append((time.time() - record.created) * 1e3)

    class Stream:
        def write(self, text):
            now = time.time()
            latency["stderr"].extend((now - logged_at(line)) * 1e3 for line in text.splitlines())
            return len(text)

        def flush(self):
            pass

    logger = logging.getLogger("_pylogsink.runtime")
    logger.addHandler(Handler())
    logger.setLevel(logging.INFO)
    pylogsink.runtime.set_log_destination("logging")
    pylogsink.runtime.log_slowly(p["count"], 0.005)
    pylogsink.runtime.set_log_destination("stderr")
    sys.stderr = Stream()
    try:
        pylogsink.runtime.log_slowly(p["count"], 0.005)
    finally:
        sys.stderr = sys.__stderr__
    for name, ms in latency.items():
        if len(ms) != p["count"]:
            raise AssertionError(f"{name}: {len(ms)} of {p['count']} lines")
    return {"ms": latency}


def child_capture(p, b):
    """(15): bytes per second through pylogsink.capture_output() and through
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

        def __init__(self):
            self.size = 0

        def write(self, text):
            self.size += len(text)
            return len(text)

        def flush(self):
            pass

        def getvalue(self):
            return "x" * self.size

    def through(kind, sink):
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
    def prints(front):
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
        def __init__(self):
            super().__init__()
            self.seen = {}

        def write(self, text):
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


def child_threads(p, b):
    return {"ns": b.threads_lines(p["threads"], p["n"], p["size"], p["sink"])}


def rss_kib():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024


def child_memory(p, b):
    class Discard:
        def write(self, s):
            return len(s)

        def flush(self):
            pass

    sys.stderr = Discard()
    calls, steps = p["calls"], 10
    f = b.log_call
    rss = [(0, rss_kib())]
    start = time.perf_counter()
    for step in range(1, steps + 1):
        for _ in range(calls // steps):
            f(3, 100)
        rss.append((step * calls // steps, rss_kib()))
    seconds = time.perf_counter() - start
    sys.stderr = sys.__stderr__
    emitted, left_out, _ = b.stats()
    return {"rss_kib": rss, "seconds": seconds, "emitted": emitted, "left_out": left_out}


# What (8) counts: child_instructions's `which`, and the loop function that
# callgrind counts (--toggle-collect) in it.
INSTRUCTIONS = {
    "bare": "loop_bare",
    "format_write": "loop_format_write",
    "direct": "loop_emit",
    "log_pylogsink": "loop_log_pylogsink",
    "env_logger": "loop_log_env_logger",
    "fmt": "loop_tracing_fmt",
}


def child_instructions(p, b):
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


FFMPEG_WAITER = """
import sys, threading
sys.path.insert(0, sys.argv[1])
import av_rt
av_rt.set_log_filter("ffmpeg=debug")
av_rt.set_level(48)
av_rt.use(sys.argv[2])
packets = av_rt.encode(2000, 64)
decoder = threading.Thread(target=av_rt.decode, args=(packets,), kwargs=dict(debug=1))
decoder.start()
av_rt.wait_frames(1500)  # the GIL held
decoder.join()
"""


def child_ffmpeg(p, b):
    """(16): FFmpeg's threaded decode at DEBUG through three log callbacks."""
    sys.path.insert(0, C_LIBRARIES)
    import av_rt

    av_rt.set_log_filter("ffmpeg=debug")
    av_rt.set_level(48)  # AV_LOG_DEBUG, for the default and the per-line callbacks
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(line_formatter())
    logging.getLogger("libav").addHandler(handler)
    logging.getLogger("libav").setLevel(logging.DEBUG)
    packets = av_rt.encode(p["frames"], 64)
    lines = {}

    def decode(callback):
        av_rt.use(callback)
        t = time.perf_counter()
        assert av_rt.decode(packets, threads=4, debug=9) == p["frames"]
        elapsed = time.perf_counter() - t
        sys.stderr.flush()
        with open("/proc/self/fd/2", "rb") as written:  # fd 2 itself is write-only
            lines.setdefault(callback, []).append(written.read().count(b"\n"))
        return elapsed * 1e3

    ms = interleaved(p["rounds"], {c: lambda c=c: decode(c) for c in ("default", "pylogsink", "python")})
    av_rt.use("pylogsink")
    waiter = {}
    for callback in ("default", "pylogsink", "python"):
        try:
            done = subprocess.run(
                [sys.executable, "-c", FFMPEG_WAITER, C_LIBRARIES, callback],
                capture_output=True, timeout=15, env={**os.environ, "AV_RT_LOG": "ffmpeg=debug"},
            )  # fmt: skip
            waiter[callback] = "completed" if done.returncode == 0 else f"failed ({done.returncode})"
        except subprocess.TimeoutExpired:
            waiter[callback] = "hung"
    med = {c: statistics.median(v) for c, v in ms.items()}
    return {
        "frames": p["frames"],
        "ms": med,
        "lines": {c: statistics.median(v) for c, v in lines.items()},
        "vs_default": median_ratio(ms["pylogsink"], ms["default"]),
        "python_vs": median_ratio(ms["python"], ms["pylogsink"]),
        "waiter": waiter,
    }


# (18)'s hang check: PyAV's early close (50 rounds: open, 4 frame threads,
# 5 frames, close with the GIL held) at DEBUG, while a Python thread spins
# on the GIL, through the callback named by argv[1], on the video argv[2].
PYAV_SPINNER = """
import sys, threading, av, pylogsink.ffmpeg
video = sys.argv[2]
sys.setswitchinterval(0.005)
stop = False
def spin():
    n = 0
    while not stop:
        n += 1
threading.Thread(target=spin, daemon=True).start()
av.logging.set_level(av.logging.DEBUG)
if sys.argv[1] == "pylogsink":
    pylogsink.ffmpeg.set_log_filter("ffmpeg=debug")
    pylogsink.ffmpeg.install()
for _ in range(50):
    container = av.open(video)
    stream = container.streams.video[0]
    stream.thread_type = "FRAME"
    stream.thread_count = 4
    stream.codec_context.options = {"debug": "pict"}
    for i, frame in enumerate(container.decode(stream)):
        if i == 4:
            break
    container.close()
stop = True
"""


def child_pyav(p, b):
    """(18): PyAV's decode at DEBUG through three log callbacks."""
    import tempfile

    import av
    import pylogsink.ffmpeg

    video = os.path.join(tempfile.mkdtemp(), "grey.mp4")
    with av.open(video, "w") as out:
        stream = out.add_stream("mpeg4", rate=30)
        stream.width, stream.height, stream.pix_fmt = 64, 64, "yuv420p"
        for i in range(p["frames"]):
            frame = av.VideoFrame(64, 64, "yuv420p")
            for plane in frame.planes:
                plane.update(bytes((i + j) % 256 for j in range(plane.buffer_size)))
            out.mux(stream.encode(frame))
        out.mux(stream.encode())
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(line_formatter())
    logging.getLogger("libav").addHandler(handler)
    logging.getLogger("libav").setLevel(logging.DEBUG)
    av.logging.set_libav_level(av.logging.DEBUG)  # the default callback's own level
    pylogsink.ffmpeg.set_log_filter("ffmpeg=debug")

    def use(callback):
        pylogsink.ffmpeg.uninstall()  # FFmpeg's default, and av.logging.set_level unwrapped
        if callback == "pyav":
            av.logging.set_level(av.logging.DEBUG)
        elif callback == "pylogsink":
            pylogsink.ffmpeg.install()

    def decode(callback):
        use(callback)
        t = time.perf_counter()
        with av.open(video) as container:
            stream = container.streams.video[0]
            stream.codec_context.options = {"debug": "pict+mb_type"}
            assert sum(1 for _ in container.decode(stream)) == p["frames"]
        elapsed = time.perf_counter() - t
        use("default")
        return elapsed * 1e3

    ms = interleaved(p["rounds"], {c: lambda c=c: decode(c) for c in ("default", "pyav", "pylogsink")})
    spinner = {}
    noise = os.path.join(os.path.dirname(video), "noise.mp4")
    subprocess.run([sys.executable, NOISE_VIDEO, noise], check=True, timeout=60)
    for callback in ("pyav", "pylogsink"):
        try:
            done = subprocess.run([sys.executable, "-c", PYAV_SPINNER, callback, noise], capture_output=True, timeout=20)
            spinner[callback] = "completed" if done.returncode == 0 else f"failed ({done.returncode})"
        except subprocess.TimeoutExpired:
            spinner[callback] = "hung"
    shutil.rmtree(os.path.dirname(video), ignore_errors=True)
    return {
        "frames": p["frames"],
        "av": av.__version__,
        "ms": {c: statistics.median(v) for c, v in ms.items()},
        "vs_default": median_ratio(ms["pylogsink"], ms["default"]),
        "pyav_vs": median_ratio(ms["pyav"], ms["pylogsink"]),
        "spinner": spinner,
    }


def child_delivered(p, b):
    """Bursts as plain Python delivers them (a Python thread that writes the
    same number of lines to the same kind of stream; logging.info for
    records) and as pylogsink does, one after the other in this process:
    lines that reached the stream, and pylogsink's count of lines left out."""
    import contextlib
    import io
    import time

    import pylogsink

    rt = pylogsink.runtime

    class Slow(io.StringIO):
        def write(self, s):
            time.sleep(0.001)
            return super().write(s)

    def lines_in(stream):
        return sum(1 for line in stream.getvalue().splitlines() if not line.startswith("[pylogsink]"))

    def plain(n, stream):
        line = "x" * 99 + "\n"
        t = threading.Thread(target=lambda: [stream.write(line) for _ in range(n)])
        t.start()
        t.join()
        return lines_in(stream)

    def with_pylogsink(n, stream, run):
        left_out = rt.log_stats()["left_out"]
        with contextlib.redirect_stderr(stream):
            run(n)
            give_up = time.monotonic() + 10
            while lines_in(stream) < n and time.monotonic() < give_up:
                time.sleep(0.01)
        return lines_in(stream), rt.log_stats()["left_out"] - left_out

    scenarios = [
        ("one call holding the GIL, 5,000 lines", 5_000, io.StringIO, lambda n: rt.log_lines(n, size=100)),
        ("one call, GIL released, 12,000 lines", 12_000, io.StringIO, lambda n: rt.log_lines(n, size=100, detach=True)),
        ("write takes 1 ms, 3,000 lines (GIL released)", 3_000, Slow, lambda n: rt.log_lines(n, size=100, detach=True)),
        ("a native thread outside any call, 5,000", 5_000, io.StringIO, lambda n: rt.start_background_logger(n).join()),
        ("100,000 lines, GIL released (10 MB)", 100_000, io.StringIO, lambda n: rt.log_lines(n, size=100, detach=True)),
    ]
    rows = []
    for name, n, make, run in scenarios:
        got, left_out = with_pylogsink(n, make(), run)
        rows.append({"name": name, "n": n, "plain": plain(n, make()), "pylogsink": got, "left_out": left_out})

    class Count(logging.Handler):
        n = 0

        def emit(self, record):
            Count.n += 1

    root = logging.getLogger()
    root.addHandler(Count())
    root.setLevel(logging.INFO)
    n = 50_000
    t = threading.Thread(target=lambda: [logging.getLogger("plain").info("x" * 99) for _ in range(n)])
    t.start()
    t.join()
    plain_records, Count.n = Count.n, 0
    left_out = rt.log_stats()["left_out"]
    rt.set_log_destination("logging")
    rt.log_lines(n, size=100)
    rt.set_log_destination("stderr")
    rows.append(
        {
            "name": "50,000 records, logging destination",
            "n": n,
            "plain": plain_records,
            "pylogsink": Count.n,
            "left_out": rt.log_stats()["left_out"] - left_out,
        }
    )
    return {"rows": rows, "next_statement": child_next_statement(rt, Count)}


def child_next_statement(rt, Count):
    """Lines and records a thread logged before it was joined, counted at
    the statement after the join, with no wait: a Python thread writing
    (logging.info for records), and a native thread outside any call."""
    import contextlib
    import io

    def count(stream):
        return sum(1 for line in stream.getvalue().splitlines() if not line.startswith("[pylogsink]"))

    rows = []
    for n in (300, 12_000):
        plain = io.StringIO()
        with contextlib.redirect_stderr(plain):
            t = threading.Thread(target=lambda: [sys.stderr.write("x" * 99 + "\n") for _ in range(n)])
            t.start()
            t.join()
            plain_got = count(plain)
        ours = io.StringIO()
        with contextlib.redirect_stderr(ours):
            rt.start_background_logger(n).join()
            ours_got = count(ours)
        rows.append({"name": f"{n:,} lines into redirect_stderr", "n": n, "plain": plain_got, "pylogsink": ours_got})
    n = 5_000
    Count.n = 0
    t = threading.Thread(target=lambda: [logging.getLogger("plain").info("x" * 99) for _ in range(n)])
    t.start()
    t.join()
    plain_got, Count.n = Count.n, 0
    rt.set_log_destination("logging")
    rt.start_background_logger(n).join()
    ours_got = Count.n
    rt.set_log_destination("stderr")
    rows.append({"name": f"{n:,} records, logging destination", "n": n, "plain": plain_got, "pylogsink": ours_got})
    return rows


# --------------------------------------------------------------- parent side


def machine():
    cpu = "unknown"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    git = lambda *a: subprocess.run(["git", *a], cwd=HERE, capture_output=True, text=True).stdout.strip()
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


# What a child may run, by the task its parameters name.
TASKS = {
    "direct": child_direct,
    "writer": child_writer,
    "tracing": child_tracing,
    "peers": child_peers,
    "kept": child_kept,
    "overhead": child_overhead,
    "sinks": child_sinks,
    "threads": child_threads,
    "memory": child_memory,
    "filter": child_filter,
    "logging_delivered": child_logging_delivered,
    "logging_disabled": child_logging_disabled,
    "live": child_live,
    "gil_busy": child_gil_busy,
    "capture": child_capture,
    "ffmpeg": child_ffmpeg,
    "delivered": child_delivered,
    "pyav": child_pyav,
    "instructions": child_instructions,
}
# The measurements, by the key of their figures, for --only.
SECTIONS = (
    "direct", "writer", "tracing", "peers", "kept", "overhead", "sinks", "threads", "memory", "filter", "logging", "live",
    "gil_busy", "capture", "ffmpeg", "delivered", "pyav", "instructions", "import",
)


def import_ms(rounds):
    """Milliseconds a fresh interpreter takes to run each statement, the
    statements interleaved (forward, then backward, ...), median of rounds."""
    statements = {
        "bare interpreter (pass)": "pass",
        "import pylogsink": "import pylogsink",
        "import pylogsink.ffmpeg": "import pylogsink.ffmpeg",
        "import pylogsink.sqlite": "import pylogsink.sqlite",
    }
    if importlib.util.find_spec("av") is not None:
        statements |= {"import av": "import av", "import av, pylogsink.ffmpeg": "import av, pylogsink.ffmpeg"}
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYLOGSINK_")}
    ms = {name: [] for name in statements}
    for i in range(rounds):
        for name in list(statements)[:: 1 if i % 2 == 0 else -1]:
            start = time.perf_counter()
            subprocess.run([sys.executable, "-c", statements[name]], check=True, env=env)
            ms[name].append((time.perf_counter() - start) * 1e3)
    return {name: statistics.median(v) for name, v in ms.items()}


def measure(quick, say, only=None):
    """Runs every measurement, or those named in `only` (the keys of the
    figures: "direct", "logging", ...); returns (figures, targets)."""
    fig, targets = {}, []
    # The section being measured, which each of its targets records.
    section = [None]

    def want(name):
        section[0] = name
        return only is None or name in only

    def target(name, value, op, limit, unit=""):
        met = value <= limit if op == "<=" else value >= limit
        targets.append(
            {"name": name, "value": value, "op": op, "limit": limit, "unit": unit, "met": met, "section": section[0]}
        )

    if want("direct"):
        say("direct lines against bare write(2)")
        fig["direct"] = each_fd2("direct", pick(BUDGET["direct"], quick), "direct", "bare")
        for fd2, r in fig["direct"].items():
            for size in r["ns_per_line"]:
                target(f"direct / bare write, {size} B, {fd2}", r[f"ratio_{size}"], "<=", 1.5, "x")

    if want("writer") and not quick:
        say("the writer-thread question: a direct line against a hand-off to a writer thread")
        p = pick(BUDGET["writer"], quick)
        fig["writer"] = {fd2: run_child({"task": "writer", **p}, fd2) for fd2 in ("null", "file", "pipe", "pty")}

    if want("tracing"):
        say("tracing events: pylogsink's layer against tracing-subscriber's fmt")
        fig["tracing"] = each_fd2("tracing", pick(BUDGET["tracing"], quick), "pylogsink", "fmt")
        for fd2, r in fig["tracing"].items():
            for size in r["ns_per_line"]:
                target(f"tracing event, pylogsink / fmt, {size} B, {fd2}", r[f"ratio_{size}"], "<=", 0.5, "x")

    if want("peers"):
        say("log::error! lines: pylogsink against env_logger, tracing fmt and a bare write(2)")
        p = pick(BUDGET["peers"], quick)
        fig["peers"] = {}
        for fd2 in FD2S:
            rounds, all_whole = [], True
            for r in range(p["rounds"]):
                got = {}
                for which in PEERS if r % 2 == 0 else PEERS[::-1]:
                    c = run_child({"task": "peers", "which": which, "n": p["n"]}, fd2)
                    if fd2 == "pipe":
                        all_whole &= pipe_whole(c)
                    got[which] = c["figures"]
                rounds.append(got)
            r = {"ns_per_line": {}, "bytes_per_line": {}, "whole": all_whole}
            for size in rounds[0]["bare"]:
                ns = {w: [x[w][size]["ns_per_line"] for x in rounds] for w in PEERS}
                r["ns_per_line"][size] = ns
                r["bytes_per_line"][size] = {w: rounds[0][w][size]["bytes_per_line"] for w in PEERS}
                peer = [min(e, f) for e, f in zip(ns["env_logger"], ns["fmt"])]
                r[f"ratio_bare_{size}"] = median_ratio(ns["pylogsink"], ns["bare"])
                r[f"ratio_peers_{size}"] = median_ratio(ns["pylogsink"], peer)
            for size in r["ns_per_line"]:
                target(f"log::error! / bare write, {size} B, {fd2}", r[f"ratio_bare_{size}"], "<=", 1.5, "x")
            for size in r["ns_per_line"]:
                target(
                    f"log::error! / min(peers), {size} B, {fd2}", r[f"ratio_peers_{size}"], "<=", 0.5, "x"
                )
            fig["peers"][fd2] = r

    if want("kept"):
        say("kept lines")
        p = pick(BUDGET["kept"], quick)
        k = run_child({"task": "kept", **p}, "null")
        fig["kept"] = k
        target(
            "kept 100 B line, log::warn!, with return",
            statistics.median(k["log_warn_ns_per_line_with_return"]),
            "<=",
            100,
            "ns",
        )
        k["ratio_bare"] = median_ratio(k["log_warn_ns_per_line_with_return"], k["bare_write_ns"])
        target("kept line, log::warn!, with return / bare write", k["ratio_bare"], "<=", 0.6, "x")
        target("kept per call (line bytes)", k["over_cap_line_bytes"], "<=", KEPT_CAP, "B")

    if want("overhead"):
        say("call overhead")
        p = pick(BUDGET["overhead"], quick)
        fig["overhead"] = overhead_rows(p)
        # SPEC: at most 1.25x where the stable ABI is not required; the first
        # row is the version-specific build when there is one.
        for o in fig["overhead"]:
            build = ", ".join(o["build"].split(", ")[:2])
            target(f"no-op in call() / bare no-op, {build}", o["ratio_min"], "<=", 1.25, "x")

    if want("sinks"):
        say("lines per second: pylogsink, naive, pyo3-log")
        p = pick(BUDGET["sinks"], quick)
        fig["sinks"] = {}
        for fd2 in ("null", "file"):
            s = run_child({"task": "sinks", **p}, fd2)
            lps = s["lines_per_s"]
            s["ratio_pyo3_log"] = median_ratio(lps["pylogsink"], lps["pyo3-log"])
            s["ratio_naive"] = median_ratio(lps["pylogsink"], lps["naive"])
            target(f"lines/s pylogsink / pyo3-log, {fd2}", s["ratio_pyo3_log"], ">=", 10, "x")
            fig["sinks"][fd2] = s

    if want("threads"):
        say("threads into a drained pipe")
        p = pick(BUDGET["threads"], quick)
        runs = {}
        for _ in range(p["rounds"]):
            for threads in (1, 2, 4, 8):
                for sink in ("pylogsink", "fd2"):
                    n = p["lines"] // threads
                    params = {"task": "threads", "threads": threads, "n": n, "size": 100, "sink": sink}
                    r = run_child(params, "pipe", check_len=100)
                    d = r["drained"]
                    whole = d["bad"] == 0 and d["lines"] == threads * n and d["per_thread"][:threads] == [n] * threads
                    runs.setdefault(f"{sink} {threads}", []).append(
                        {"lines_per_s": threads * n / r["ns"] * 1e9, "whole": whole, "in_order": d["out_of_order"] == 0}
                    )
        fig["threads"] = {
            key: {
                "lines_per_s": statistics.median(x["lines_per_s"] for x in v),
                "whole": all(x["whole"] for x in v),
                "in_order": all(x["in_order"] for x in v),
            }
            for key, v in runs.items()
        }
        # With the pipe runs of (1-2) and (12), when they ran.
        torn = sum(not v["whole"] for v in fig["threads"].values()) + sum(
            not fig[k]["pipe"]["whole"] for k in ("direct", "peers") if k in fig
        )
        target("pipe runs with a torn or missing line", torn, "<=", 0)

    if want("memory"):
        say("memory over many calls")
        p = pick(BUDGET["memory"], quick)
        m = run_child({"task": "memory", **p}, "null")
        rss = m["rss_kib"]
        m["growth_kib"] = rss[-1][1] - rss[1][1]
        fig["memory"] = m
        target(f"RSS growth after the first {rss[1][0] // 1000}k calls", m["growth_kib"], "<=", 1024, "KiB")

    if want("filter"):
        say("filter: dropped records, the per-target lookup")
        p = pick(BUDGET["filter"], quick)
        f = run_child({"task": "filter", **p}, "null")
        ns = f["ns_per_record"]
        f["dropped_level_ns"] = statistics.median(ns["dropped_level"])
        f["dropped_target_ns"] = statistics.median(ns["dropped_target"])
        f["dropped_target_1000_ns"] = statistics.median(ns["dropped_target_1000"])
        f["ratio_per_target"] = median_ratio(ns["per_target"], ns["plain"])
        fig["filter"] = f
        target("dropped by level (proxy: a level compare)", f["dropped_level_ns"], "<=", 10, "ns")

    if want("logging"):
        say("logging destination against pyo3-log")
        p = pick(BUDGET["logging"], quick)
        d = run_child({"task": "logging_delivered", **p}, "null")
        rps = d["records_per_s"]
        d["ratio_pyo3_log"] = median_ratio(rps["pylogsink"], rps["pyo3-log"])
        d["ratio_bare"] = median_ratio(rps["bare logging"], rps["pyo3-log"])
        # Each bridge against the ceiling, bare logging.
        d["ratio_pylogsink_ceiling"] = median_ratio(rps["pylogsink"], rps["bare logging"])
        d["ratio_pyo3_log_ceiling"] = median_ratio(rps["pyo3-log"], rps["bare logging"])
        target("logging: records/s pylogsink / pyo3-log", d["ratio_pyo3_log"], ">=", 2, "x")
        target("logging: records/s pylogsink / bare logging", d["ratio_pylogsink_ceiling"], ">=", 0.9, "x")
        fig["logging"] = {"delivered": d, "disabled": {}}
        for root_level in ("INFO", "WARNING"):
            r = run_child({"task": "logging_disabled", "root_level": root_level, **p}, "null")
            ns = r["ns_per_record"]
            r["ns"] = {name: statistics.median(v) for name, v in ns.items()}
            r["ratio"] = median_ratio(ns["pyo3-log"], ns["pylogsink"])
            fig["logging"]["disabled"][root_level] = r
        ratio = fig["logging"]["disabled"]["INFO"]["ratio"]
        target("logging: disabled ns, pyo3-log / pylogsink", ratio, ">=", 10, "x")

    if want("live"):
        say("live delivery latency")
        p = pick(BUDGET["live"], quick)
        live = run_child({"task": "live", **p}, "null")
        live["median_ms"] = {k: statistics.median(v) for k, v in live["ms"].items()}
        live["p99_ms"] = {k: sorted(v)[int(len(v) * 0.99) - 1] for k, v in live["ms"].items()}
        fig["live"] = live
        for name in ("logging", "stderr"):
            target(f"live delivery p99 ({name}), ms", live["p99_ms"][name], "<=", 50, "ms")

    if want("gil_busy"):
        say("logging without the GIL while a Python thread keeps it busy")
        p = pick(BUDGET["gil_busy"], quick)
        g = run_child({"task": "gil_busy", **p}, "null")
        ns = g["ns_per_record"]
        g["ns"] = {name: statistics.median(v) for name, v in ns.items()}
        g["ratio_outside"] = median_ratio(ns["pyo3-log"], ns["outside"])
        g["ratio_in_call"] = median_ratio(ns["pyo3-log"], ns["in_call"])
        fig["gil_busy"] = g
        target("GIL busy: pylogsink outside a call, ns", g["ns"]["outside"], "<=", 200, "ns")
        target("GIL busy: pylogsink in a call, ns", g["ns"]["in_call"], "<=", 200, "ns")

    if want("capture"):
        say("output capture against wurlitzer")
        p = pick(BUDGET["capture"], quick)
        c = run_child({"task": "capture", **p}, "null")
        rates = c["bytes_per_s"]
        c["rate"] = {name: statistics.median(v) for name, v in rates.items()}
        c["ratio"] = median_ratio(rates["pylogsink stringio"], rates["wurlitzer stringio"])
        c["ratio_discard"] = median_ratio(rates["pylogsink discard"], rates["wurlitzer discard"])
        c["print"] = {name: statistics.median(v) for name, v in c["print_ns"].items()}
        c["print_ratio"] = median_ratio(c["print_ns"]["capture"], c["print_ns"]["none"])
        c["median_ms"] = statistics.median(c["ms"])
        c["p99_ms"] = sorted(c["ms"])[int(len(c["ms"]) * 0.99) - 1]
        fig["capture"] = c
        target("capture: bytes/s, pylogsink / wurlitzer", c["ratio"], ">=", 1, "x")
        target("capture: bytes/s discarded, pylogsink / wurl.", c["ratio_discard"], ">=", 1, "x")
        target("capture: write to StringIO p99, ms", c["p99_ms"], "<=", 50, "ms")
        target("capture: print() inside / outside", c["print_ratio"], "<=", 1.5, "x")

    if want("ffmpeg") and os.path.isdir(C_LIBRARIES):
        say("FFmpeg decode at DEBUG: three log callbacks")
        f = fig["ffmpeg"] = run_child({"task": "ffmpeg", **pick(BUDGET["ffmpeg"], quick)}, "file")
        target("FFmpeg decode, pylogsink / default callback", f["vs_default"], "<=", 1.1, "x")
        target("FFmpeg decode, GIL callback / pylogsink", f["python_vs"], ">=", 5, "x")
        target("FFmpeg decode, GIL-held waiter hangs", int(f["waiter"]["pylogsink"] != "completed"), "<=", 0)
    elif want("ffmpeg"):
        say("FFmpeg: not measured (bench/build.sh found no libavcodec)")

    if want("delivered"):
        say("lines delivered, against plain Python")
        d = fig["delivered"] = run_child({"task": "delivered"}, "null")
        target(
            "lines delivered, pylogsink / plain (least)",
            min(r["pylogsink"] / max(1, r["plain"]) for r in d["rows"]),
            ">=",
            1,
            "x",
        )
        target(
            "joined thread's lines at next statement, / plain",
            min(r["pylogsink"] / max(1, r["plain"]) for r in d["next_statement"]),
            ">=",
            1,
            "x",
        )

    if want("pyav") and importlib.util.find_spec("av") is not None:
        say("PyAV decode at DEBUG: three log callbacks")
        f = fig["pyav"] = run_child({"task": "pyav", **pick(BUDGET["pyav"], quick)}, "null")
        target("PyAV decode, pylogsink.ffmpeg / default", f["vs_default"], "<=", 1.1, "x")
        target("PyAV decode, PyAV's callback / pylogsink", f["pyav_vs"], ">=", 1.5, "x")
        target("PyAV early close, GIL spinning, hangs", int(f["spinner"]["pylogsink"] != "completed"), "<=", 0)
    elif want("pyav"):
        say("PyAV: not measured (av is not installed)")

    if want("import"):
        say("import time, against a bare interpreter")
        ms = fig["import"] = import_ms(pick(BUDGET["import"], quick)["rounds"])
        bare = ms["bare interpreter (pass)"]
        target("import pylogsink, over a bare interpreter", ms["import pylogsink"] - bare, "<=", 10, "ms")

    if want("instructions") and not quick and shutil.which("valgrind"):
        say("instructions per line (callgrind)")
        p = BUDGET["instructions"]
        fig["instructions"] = {}
        for which, fn in INSTRUCTIONS.items():
            out = os.path.join(RESULTS, f"callgrind.{which}.tmp")
            wrap = ["valgrind", "--tool=callgrind", f"--toggle-collect=*{fn}*", f"--callgrind-out-file={out}"]
            run_child({"task": "instructions", "which": which, **p}, "null", wrap=wrap)
            with open(out) as f:
                total = next(int(line.split()[1]) for line in f if line.startswith(("summary:", "totals:")))
            os.unlink(out)
            fig["instructions"][which] = total / p["n"]
        target("log::error! 100 B, instructions (callgrind)", fig["instructions"]["log_pylogsink"], "<=", 400)
    return fig, targets


def fmt_num(x, unit=""):
    if unit == "x":
        return f"{x:.2f}x"
    if isinstance(x, float) and x < 100:
        return f"{x:.1f}{' ' + unit if unit else ''}"
    return f"{x:,.0f}{' ' + unit if unit else ''}"


def report(m, fig, targets, quick):
    lines = [
        f"pylogsink benchmark{' (quick)' if quick else ''}: {m['date']}, commit {m['commit']}",
        f"machine: {m['cpu']}, {m['cores']} cores, Linux {m['kernel']}, Python {m['python']}, "
        f"load average at start {m['load']}",
    ]
    if "direct" in fig:
        lines += [
            "",
            "1-2. direct line (pylogsink::emit, fd 2) vs bare write(2), ns per line (median of rounds)",
            "  (fmt+write: format the record as pylogsink does, then a blocking write(2))",
            "  (floor: the same bytes by the system calls that cannot block, pwritev2(RWF_NOWAIT) on",
            "  /dev/null, lseek + write(2) on a file that refuses RWF_NOWAIT; on a pipe pwritev2 costs what",
            "  write(2) does)",
            f"  {'fd 2':<10}{'size':>6}{'bare':>8}{'floor':>8}{'fmt+write':>11}{'direct':>8}{'direct/bare':>13}"
            f"{'floor/bare':>12}{'direct/fmt+write':>18}",
        ]
        for fd2, r in fig["direct"].items():
            for size, f in r["ns_per_line"].items():
                med = {k: statistics.median(v) for k, v in f.items()}
                floor, floor_ratio = "-", "-"
                if "floor" in f:
                    floor, floor_ratio = f"{med['floor']:.0f}", f"{median_ratio(f['floor'], f['bare']):.2f}x"
                lines.append(
                    f"  {fd2:<10}{size + ' B':>6}{med['bare']:>8.0f}{floor:>8}{med['format_write']:>11.0f}"
                    f"{med['direct']:>8.0f}{r[f'ratio_{size}']:>12.2f}x{floor_ratio:>12}"
                    f"{median_ratio(f['direct'], f['format_write']):>17.2f}x"
                )
        pipe = fig["direct"]["pipe"]
        got = pipe["drained"]
        lines.append(f"  pipe: the reader got {got['lines']:,} of {pipe['lines']:,} lines, {got['bad']} malformed")
    if "writer" in fig:
        w = fig["writer"]
        lines += [
            "",
            "2b. the writer-thread question: 100 B lines, ns per line (median of rounds), on each fd 2",
            "  (direct: pylogsink's line, formatted and written by the caller, which never blocks;",
            "  hand-off: the same line formatted by the caller and handed to a writer thread that",
            "  writes batches with write(2), as tracing-appender's non_blocking does; a prototype)",
            "  fd 2      bare  direct  hand-off caller  hand-off to the last write  caller/direct",
        ]
        for fd2, r in w.items():
            med = {k: statistics.median(r[k]) for k in ("bare", "direct", "handoff_caller", "handoff_whole")}
            lines.append(
                f"  {fd2:<6} {med['bare']:>7.0f} {med['direct']:>7.0f} {med['handoff_caller']:>16.0f} "
                f"{med['handoff_whole']:>27.0f} {median_ratio(r['handoff_caller'], r['direct']):>13.2f}x"
            )
    if "kept" in fig:
        k = fig["kept"]
        lines += [
            "",
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
    if "overhead" in fig:
        lines += ["", "4. call overhead, timeit from Python, ns per call (minimum of rounds), per build"]
        for o in fig["overhead"]:
            lines += [
                f"  {o['build']}:",
                f"    no-op binding {min(o['noop']):.1f}, wrapped in pylogsink::call {min(o['call']):.1f}, "
                f"empty loop {min(o['loop']):.1f}: ratio {o['ratio_min']:.3f} "
                f"(median of rounds {o['ratio_median']:.3f}), +{min(o['call']) - min(o['noop']):.1f} ns, "
                f"+{(o['ratio_min'] - 1) * 100:.0f}%",
                f"    pylogsink::flush with nothing waiting, inside a call: {min(o['flush']):.1f} ns "
                f"(empty loop turn {min(o['flush_loop']):.1f} ns; target at most 20 ns: "
                f"{'met' if min(o['flush']) <= 20 else 'missed'})",
                f"    pylogsink::flush_lines with nothing waiting, inside a call: {min(o['flush_lines']):.1f} ns "
                f"(target at most 20 ns: {'met' if min(o['flush_lines']) <= 20 else 'missed'})",
            ]
    if "sinks" in fig:
        lines += [
            "",
            "5. lines per second, 100 B lines, same fd 2 (median of rounds)",
            f"  {'fd 2':<8}{'pylogsink':>12}{'naive':>12}{'pyo3-log':>12}{'vs naive':>10}{'vs pyo3-log':>13}",
        ]
        for fd2, s in fig["sinks"].items():
            lps = {k: statistics.median(v) for k, v in s["lines_per_s"].items()}
            lines.append(
                f"  {fd2:<8}{lps['pylogsink']:>12,.0f}{lps['naive']:>12,.0f}{lps['pyo3-log']:>12,.0f}"
                f"{s['ratio_naive']:>9.1f}x{s['ratio_pyo3_log']:>12.1f}x"
            )
        lines.append(f"  (pyo3-log lines are {s['bytes_per_line']['pyo3-log']} B with the same fields)")
    if "threads" in fig:
        lines += [
            "",
            "6. threads logging at once into a pipe drained by another process (fd2: format + blocking write(2))",
            f"  {'threads':<8}{'pylogsink lines/s':>19}{'fd2 lines/s':>13}  all lines whole / in order per thread",
        ]

        def ok(x):
            return ("yes" if x["whole"] else "NO") + (", yes" if x["in_order"] else ", NO")

        for t in (1, 2, 4, 8):
            a, w = fig["threads"][f"pylogsink {t}"], fig["threads"][f"fd2 {t}"]
            lines.append(f"  {t:<8}{a['lines_per_s']:>19,.0f}{w['lines_per_s']:>13,.0f}  {ok(a)} (fd2: {ok(w)})")
    if "memory" in fig:
        mem = fig["memory"]
        lines += [
            "",
            f"7. RSS over {mem['rss_kib'][-1][0]:,} calls logging 3 kept lines each ({mem['seconds']:.1f} s)",
            "  " + ", ".join(f"{c // 1000}k: {r:,} KiB" for c, r in mem["rss_kib"]),
        ]
    if "instructions" in fig:
        i = fig["instructions"]
        lines += [
            "",
            "8. user-space instructions per 100 B line (callgrind, kernel not counted)",
            f"  bare write {i['bare']:.0f}, fmt+write {i['format_write']:.0f}, direct line {i['direct']:.0f}",
            f"  log::error!(\"{{}}\", message): pylogsink {i['log_pylogsink']:.0f}, env_logger {i['env_logger']:.0f}; "
            f"tracing::error! through fmt {i['fmt']:.0f}",
        ]
    if "filter" in fig:
        f = fig["filter"]
        ns = f["ns_per_record"]

        def row(name, x, fmt, note):
            return f"  {name:<48}{fmt.format(x):>8}  {note}"

        lines += [
            "",
            "9. Filter: 100 B records on /dev/null inside a call, median of rounds (min in parentheses)",
            row(
                "dropped record (level), ns",
                f["dropped_level_ns"],
                "{:.1f}",
                f"({min(ns['dropped_level']):.1f})  emit(Debug) under \"info\"",
            ),
            row(
                "dropped record (target directive), ns",
                f["dropped_target_ns"],
                "{:.1f}",
                f"({min(ns['dropped_target']):.1f})  emit(Info, \"myruntime::noisy::x\") under \"{PER_TARGET_FILTER}\"",
            ),
            row(
                "dropped record (target, 1,000 directives), ns",
                f["dropped_target_1000_ns"],
                "{:.1f}",
                f"({min(ns['dropped_target_1000']):.1f})  the same, under \"info\", 999 others and \"myruntime::noisy=off\"",
            ),
            row(
                "enabled direct, per-target filter / plain",
                f["ratio_per_target"],
                "{:.2f}x",
                f"{statistics.median(ns['per_target']):.0f} ns under \"{PER_TARGET_FILTER}\", "
                f"{statistics.median(ns['plain']):.0f} ns under \"info\"",
            ),
            "  log macros: not measured (no log logger in this process); log's macros drop",
            "  records below log::max_level() before any logger is asked",
            '  SPEC "a record the filter drops: no formatting, no allocation, a level compare":',
            "  proxy used, dropped by level <= 10 ns (in Targets)",
        ]
    if "logging" in fig:
        d, off = fig["logging"]["delivered"], fig["logging"]["disabled"]
        rps = {k: statistics.median(v) for k, v in d["records_per_s"].items()}
        lines += [
            "",
            "10. logging destination against pyo3-log, median of rounds",
            "  records/s into one StreamHandler on /dev/null (the formatter of 5) on the root logger at INFO:",
            f"  pylogsink {rps['pylogsink']:,.0f} ({BUDGET['logging']['per_call']} records per call, handed over at "
            f"its return), pyo3-log {rps['pyo3-log']:,.0f}: {d['ratio_pyo3_log']:.2f}x",
            f"  bare logging (makeRecord + Logger.handle from a Python loop) {rps['bare logging']:,.0f}: "
            f"{d['ratio_bare']:.2f}x pyo3-log, the ceiling of a bridge that makes and handles each record",
            f"  against that ceiling: pylogsink {d['ratio_pylogsink_ceiling']:.2f}x, "
            f"pyo3-log {d['ratio_pyo3_log_ceiling']:.2f}x its records/s",
            "  a disabled record (Info, logger myruntime.backend at WARNING), ns (min in parentheses):",
        ]
        why = {"INFO": "its target's cached level drops it", "WARNING": "pylogsink's floor drops it"}
        for root_level, r in off.items():
            ns, low = r["ns"], {k: min(v) for k, v in r["ns_per_record"].items()}
            lines.append(
                f"    root at {root_level:<8} pylogsink {ns['pylogsink']:.1f} ({low['pylogsink']:.1f}), pyo3-log "
                f"{ns['pyo3-log']:.1f} ({low['pyo3-log']:.1f}): {r['ratio']:.1f}x  ({why[root_level]})"
            )
    if "tracing" in fig:
        lines += [
            "",
            "11. tracing event with two fields (rows=42, path=\"model.pte\") at Info, in a call, ns per event",
            "  (median of rounds): pylogsink's layer against tracing-subscriber's fmt layer (no color, stderr);",
            "  size is pylogsink's record; fmt writes the same message and fields in its own layout",
            f"  {'fd 2':<10}{'size':>6}{'pylogsink':>11}{'fmt':>8}{'pylogsink/fmt':>15}",
        ]
        for fd2, r in fig["tracing"].items():
            for size, f in r["ns_per_line"].items():
                med = {k: statistics.median(v) for k, v in f.items()}
                lines.append(
                    f"  {fd2:<10}{size + ' B':>6}{med['pylogsink']:>11.0f}{med['fmt']:>8.0f}{r[f'ratio_{size}']:>14.2f}x"
                )
    if "peers" in fig:
        lines += [
            "",
            "12. direct line through log::error!(\"{}\", message) against its peers, ns per line (median of rounds,",
            "  one child per contender and round): pylogsink (in a call, to fd 2), env_logger (default format),",
            "  tracing fmt (tracing::error!), bare write(2) of pylogsink's line; size is pylogsink's line",
            f"  {'fd 2':<10}{'size':>6}{'bare':>8}{'pylogsink':>11}{'env_logger':>12}{'fmt':>8}{'pyl/bare':>10}"
            f"{'pyl/min(peers)':>16}",
        ]
        for fd2, r in fig["peers"].items():
            for size, f in r["ns_per_line"].items():
                med = {k: statistics.median(v) for k, v in f.items()}
                lines.append(
                    f"  {fd2:<10}{size + ' B':>6}{med['bare']:>8.0f}{med['pylogsink']:>11.0f}{med['env_logger']:>12.0f}"
                    f"{med['fmt']:>8.0f}{r[f'ratio_bare_{size}']:>9.2f}x{r[f'ratio_peers_{size}']:>15.2f}x"
                )
        if "file" in fig["peers"]:
            per = fig["peers"]["file"]["bytes_per_line"]
            lines.append(
                "  bytes per line (file): "
                + "; ".join(
                    f"{size} B: " + ", ".join(f"{w} {v:.0f}" for w, v in b.items() if w != "bare") for size, b in per.items()
                )
            )
        pipe = fig["peers"]["pipe"]
        lines.append(f"  pipe: every line of every contender read back whole: {'yes' if pipe['whole'] else 'NO'}")
    if "live" in fig:
        live = fig["live"]
        lines += [
            "",
            "live delivery: a call that releases the GIL logs a line every 5 ms; ms from logged to handed over",
        ]
        for name, what in (("logging", "a logging handler"), ("stderr", "a replaced sys.stderr")):
            lines.append(
                f"  to {what}: median {live['median_ms'][name]:.1f}, p99 {live['p99_ms'][name]:.1f}, "
                f"max {max(live['ms'][name]):.1f} ({len(live['ms'][name])} lines)"
            )
    if "gil_busy" in fig:
        g = fig["gil_busy"]
        low = {k: min(v) for k, v in g["ns_per_record"].items()}
        lines += [
            "",
            "14. logging without the GIL while another Python thread spins in pure Python (switch interval "
            f"{g['switch_interval_s'] * 1e3:g} ms),",
            "  100 B Info records to the handler of (10), ns per record over the native loop only (median of",
            "  rounds, min in parentheses); every record reached the handler before the next run",
            f"  pylogsink, a native thread outside any call: {g['ns']['outside']:.0f} ({low['outside']:.0f}), "
            f"{g['n']['outside']:,} records per run",
            f"  pylogsink, in a call that released the GIL: {g['ns']['in_call']:.0f} ({low['in_call']:.0f}), "
            f"{g['n']['in_call']:,} records per run",
            f"  pyo3-log, a native thread: {g['ns']['pyo3-log']:,.0f} ({low['pyo3-log']:,.0f}), "
            f"{g['n']['pyo3-log']:,} records per run (each waits for the GIL)",
            f"  pyo3-log / pylogsink: {g['ratio_outside']:,.0f}x outside a call, {g['ratio_in_call']:,.0f}x in a call",
        ]
    if "capture" in fig:
        c = fig["capture"]
        lines += [
            "",
            f"15. output capture: {c['bytes'] / 1e6:.0f} MB written to fd 2 in 1 MB writes (GIL released)",
            f"  into a StringIO: pylogsink.capture_output() {c['rate']['pylogsink stringio'] / 1e6:,.0f} MB/s; "
            f"wurlitzer.pipes() {c['rate']['wurlitzer stringio'] / 1e6:,.0f} MB/s; ratio {c['ratio']:.2f}x",
            f"  into a stream that discards: pylogsink {c['rate']['pylogsink discard'] / 1e6:,.0f} MB/s; "
            f"wurlitzer {c['rate']['wurlitzer discard'] / 1e6:,.0f} MB/s; ratio {c['ratio_discard']:.2f}x",
            f"  a Python print() into a StringIO: {c['print']['none']:,.0f} ns without a capture, "
            f"{c['print']['capture']:,.0f} ns inside one (through the front that keeps the order): "
            f"{c.get('print_ratio', c['print']['capture'] / c['print']['none']):.2f}x",
            f"  a 100-byte write(2) to the StringIO: median {c['median_ms']:.1f} ms, p99 {c['p99_ms']:.1f} ms, "
            f"max {max(c['ms']):.1f} ms ({len(c['ms'])} lines)",
        ]
    if "ffmpeg" in fig:
        f = fig["ffmpeg"]
        names = {"default": "FFmpeg's default callback", "pylogsink": "pylogsink (the recipe)", "python": "per-line GIL callback"}
        lines += [
            "",
            f"16. FFmpeg: MPEG-4 decode of {f['frames']} frames of 64x64, 4 frame threads, at DEBUG with picture",
            "  info and macroblock types, to fd 2 (a regular file), median of rounds; waiter: another thread",
            "  waits for the frames with the GIL held",
            f"  {'callback':<28}{'ms':>9}{'lines':>9}  waiter",
        ]
        for c in ("default", "pylogsink", "python"):
            lines.append(f"  {names[c]:<28}{f['ms'][c]:>9.1f}{f['lines'][c]:>9,.0f}  {f['waiter'][c]}")
        lines.append(
            f"  pylogsink / default {f['vs_default']:.2f}x; per-line GIL callback / pylogsink {f['python_vs']:.1f}x "
            "(it logs each part of a macroblock line as a line)"
        )
    if "delivered" in fig:
        lines += [
            "",
            "17. lines delivered, against plain Python (a Python thread writing as many lines to the same",
            "  kind of stream; logging.info for records), in one process, one after the other",
            f"  {'burst':<46}{'plain Python':>13}{'pylogsink':>11}{'left out':>10}",
        ]
        for r in fig["delivered"]["rows"]:
            lines.append(f"  {r['name']:<46}{r['plain']:>13,}{r['pylogsink']:>11,}{r['left_out']:>10,}")
        lines += [
            "  logged before a join (a Python thread; pylogsink: a native thread outside any call),",
            "  counted at the statement after the join, with no wait",
            f"  {'burst':<46}{'plain Python':>13}{'pylogsink':>11}",
        ]
        for r in fig["delivered"].get("next_statement", []):
            lines.append(f"  {r['name']:<46}{r['plain']:>13,}{r['pylogsink']:>11,}")
    if "pyav" in fig:
        f = fig["pyav"]
        names = {"default": "FFmpeg's default callback", "pyav": "PyAV's callback", "pylogsink": "pylogsink.ffmpeg"}
        lines += [
            "",
            f"18. PyAV {f['av']}: MPEG-4 decode of {f['frames']} frames of 64x64, one decoder thread, at DEBUG with",
            "  picture info and macroblock types, fd 2 /dev/null, median of rounds",
            f"  {'callback':<28}{'ms':>9}",
        ]
        for c in ("default", "pyav", "pylogsink"):
            lines.append(f"  {names[c]:<28}{f['ms'][c]:>9.1f}")
        lines.append(f"  pylogsink.ffmpeg / default {f['vs_default']:.2f}x; PyAV's callback / pylogsink.ffmpeg {f['pyav_vs']:.1f}x")
        lines.append(
            "  early close (50 x open, 4 frame threads, 5 frames, close) at DEBUG while a Python thread spins"
        )
        lines.append(
            f"  on the GIL: PyAV's callback {f['spinner']['pyav']}, pylogsink.ffmpeg {f['spinner']['pylogsink']} (20 s each)"
        )
    if "import" in fig:
        ms = fig["import"]
        bare = ms["bare interpreter (pass)"]
        lines += [
            "",
            "19. a fresh interpreter (python -c) that imports, against one that runs pass, median of rounds",
            f"  {'statement':<40}{'ms':>9}{'over bare':>11}",
        ]
        for name, value in ms.items():
            lines.append(f"  {name:<40}{value:>9.1f}{value - bare:>11.1f}")
    lines += ["", "Targets (SPEC)", f"  {'figure':<44}{'measured':>12}  {'target':<13} met"]
    for t in targets:
        limit = t["op"] + " " + fmt_num(t["limit"], t["unit"])
        met = "yes" if t["met"] else "NO"
        lines.append(f"  {t['name']:<44}{fmt_num(t['value'], t['unit']):>12}  {limit:<13} {met}")
    return "\n".join(lines)


def plot(m, fig, targets, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # Left: the targets (a long list), over two rows; right: direct line
    # against bare write, then against the peers; below, threads, memory.
    f = plt.figure(figsize=(14, 14))
    grid = f.add_gridspec(3, 2)
    ax = [
        [f.add_subplot(grid[0:2, 0]), f.add_subplot(grid[0, 1])],
        [f.add_subplot(grid[2, 0]), f.add_subplot(grid[2, 1])],
    ]
    peers_ax = f.add_subplot(grid[1, 1])
    # Each figure against its limit, so that <= 1 means met.
    names = [t["name"] for t in targets if t["limit"]]
    share = [
        max(0.02, t["value"] / t["limit"] if t["op"] == "<=" else t["limit"] / max(t["value"], 1e-9))
        for t in targets
        if t["limit"]
    ]
    a = ax[0][0]
    a.barh(names, share, color=["tab:green" if s <= 1 else "tab:red" for s in share])
    for y, t in enumerate(t for t in targets if t["limit"]):
        a.annotate(fmt_num(t["value"], t["unit"]), (share[y], y), xytext=(3, 0), textcoords="offset points",
                   va="center", fontsize=7)
    a.axvline(1, color="black", lw=1)
    a.set_xscale("log")
    a.set_xlim(0.015, max(share) * 3)
    a.invert_yaxis()
    a.set_xlabel("measured / target, log scale (<= 1 is met)")
    a.set_title("Targets")
    a.tick_params(axis="y", labelsize=7)

    a = ax[0][1]
    labels, bars = [], {"bare": [], "format_write": [], "direct": []}
    for fd2, r in fig["direct"].items():
        for size, v in r["ns_per_line"].items():
            labels.append(f"{fd2}\n{size} B")
            for k in bars:
                bars[k].append(statistics.median(v[k]))
    x = range(len(labels))
    names = {"bare": "bare write(2)", "format_write": "format + write(2)", "direct": "pylogsink direct"}
    for j, (k, v) in enumerate(bars.items()):
        a.bar([i + (j - 1) * 0.27 for i in x], v, 0.27, label=names[k])
    a.set_xticks(list(x), labels, fontsize=8)
    a.set_ylabel("ns per line")
    a.set_title("Direct line vs bare write(2)")
    a.legend()

    a = peers_ax
    labels, bars = [], {k: [] for k in PEERS}
    for fd2, r in fig["peers"].items():
        for size, v in r["ns_per_line"].items():
            labels.append(f"{fd2}\n{size} B")
            for k in bars:
                bars[k].append(statistics.median(v[k]))
    x = range(len(labels))
    names = {
        "bare": "bare write(2)",
        "pylogsink": "pylogsink log::error!",
        "env_logger": "env_logger",
        "fmt": "tracing fmt",
    }
    for j, (k, v) in enumerate(bars.items()):
        a.bar([i + (j - 1.5) * 0.2 for i in x], v, 0.2, label=names[k])
    a.set_xticks(list(x), labels, fontsize=8)
    a.set_ylabel("ns per line")
    a.set_title("log::error! line: pylogsink against its peers")
    a.legend(fontsize=8)

    a = ax[1][0]
    threads = [1, 2, 4, 8]
    for sink in ("pylogsink", "fd2"):
        a.plot(threads, [fig["threads"][f"{sink} {t}"]["lines_per_s"] for t in threads], "o-", label=sink)
    a.set_xscale("log", base=2)
    a.set_xticks(threads, [str(t) for t in threads])
    a.set_xlabel("threads")
    a.set_ylabel("lines per second (pipe)")
    a.set_ylim(bottom=0)
    a.set_title("Threads into a drained pipe")
    a.legend()

    a = ax[1][1]
    rss = fig["memory"]["rss_kib"]
    a.plot([c for c, _ in rss], [r / 1024 for _, r in rss], "o-")
    a.set_ylim(bottom=0)
    a.set_xlabel("calls")
    a.set_ylabel("RSS (MiB)")
    a.set_title("Memory over calls that keep lines")

    f.suptitle(f"pylogsink benchmark, {m['date']}: {m['cpu']}, {m['cores']} cores, Linux {m['kernel']}")
    f.tight_layout(rect=(0.01, 0, 1, 0.98))
    f.savefig(path, dpi=90)


def main():
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
    m = machine()
    say = lambda what: print(f"[{time.monotonic() - started:5.1f} s] {what}", file=sys.stderr)
    fig, targets = measure(quick, say, only)
    text = report(m, fig, targets, quick)
    print(text)
    if only is not None:
        # Part of the figures: bench/results/ keeps those of a whole run.
        return
    with open(os.path.join(RESULTS, "latest.txt"), "w") as f:
        f.write(text + "\n")
    with open(os.path.join(RESULTS, "latest.json"), "w") as f:
        json.dump({"machine": m, "quick": quick, "targets": targets, "figures": fig}, f, indent=1)
    plot(m, fig, targets, os.path.join(RESULTS, "latest.png"))
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


def run_gate(quick, say, targets):
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
