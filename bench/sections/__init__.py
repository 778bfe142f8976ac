"""The benchmark's sections, one module each, named by the number that
latest.txt and docs/performance.md give it (1-2 is one section, live
delivery is 13). Each says in its docstring why it exists and how it
measures, and has:

- `BUDGET`: its work, each (quick, full) pair picked for the run
  (figures.pick);
- `CHILDREN`: the functions its children run (`run.py --child`), by the
  task name their parameters give;
- `measure(p)`: in the parent, with the budget picked: runs the children
  and returns the section's figures (its part of latest.json);
- `targets(f, figs)`: its rows of the Targets table, from its figures `f`
  (and the figures measured before it, `figs`, which section 6 counts);
- `report(f)`: its lines of latest.txt;
- `unmeasured(quick)`, where a run may leave it out: None if it is
  measured, else the line the run prints instead (empty for none).
"""

from __future__ import annotations

from types import ModuleType

from sections import (
    s01_direct,
    s02b_writer,
    s03_kept,
    s04_overhead,
    s05_sinks,
    s06_threads,
    s07_memory,
    s08_instructions,
    s09_filter,
    s10_logging,
    s11_tracing,
    s12_peers,
    s13_live,
    s14_gil_busy,
    s15_capture,
    s16_ffmpeg,
    s17_delivered,
    s18_pyav,
    s19_import,
)

# What a run measures, in order: the key of the section's figures (the
# name --only takes), what the run prints as it starts it, its module.
# This order is that of latest.json's figures and of the Targets table,
# and so of the baseline; (6) counts the pipe runs of (1-2) and (12), and
# the slow callgrind counts come last.
MEASURED: tuple[tuple[str, str, ModuleType], ...] = (
    ("direct", "direct lines against bare write(2)", s01_direct),
    ("writer", "the writer-thread question: a direct line against a hand-off to a writer thread", s02b_writer),
    ("tracing", "tracing events: pylogsink's layer against tracing-subscriber's fmt", s11_tracing),
    ("peers", "log::error! lines: pylogsink against env_logger, tracing fmt and a bare write(2)", s12_peers),
    ("kept", "kept lines", s03_kept),
    ("overhead", "call overhead", s04_overhead),
    ("sinks", "lines per second: pylogsink, naive, pyo3-log", s05_sinks),
    ("threads", "threads into a drained pipe", s06_threads),
    ("memory", "memory over many calls", s07_memory),
    ("filter", "filter: dropped records, the per-target lookup", s09_filter),
    ("logging", "logging destination against pyo3-log", s10_logging),
    ("live", "live delivery latency", s13_live),
    ("gil_busy", "logging without the GIL while a Python thread keeps it busy", s14_gil_busy),
    ("capture", "output capture against wurlitzer", s15_capture),
    ("ffmpeg", "FFmpeg decode at DEBUG: three log callbacks", s16_ffmpeg),
    ("delivered", "lines delivered, against plain Python", s17_delivered),
    ("pyav", "PyAV decode at DEBUG: three log callbacks", s18_pyav),
    ("import", "import time, against a bare interpreter", s19_import),
    ("instructions", "instructions per line (callgrind)", s08_instructions),
)
# latest.txt gives the sections by number, the order of their modules' names.
REPORTED = sorted(MEASURED, key=lambda row: row[2].__name__)
# What a child may run, by task name.
TASKS = {task: run for _, _, module in MEASURED for task, run in module.CHILDREN.items()}
