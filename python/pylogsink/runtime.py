"""The demo runtime: a small native runtime that logs through pylogsink
(or through a naive sink, ``set_sink("naive")``), so that the scenarios
pylogsink exists for can be run for real (``python -m pylogsink``, the
tests, the benchmark). It is an extension like any other that embeds the
Rust crate: ``set_log_filter``, ``set_log_destination`` and ``log_stats``
here are its own copy's, not those of another extension.

Not part of pylogsink's API: ``import pylogsink.runtime``, or
``pylogsink.runtime`` after ``import pylogsink``.
"""

from pylogsink._pylogsink import (
    BackgroundLogger,
    abort_with_fatal,
    backslashreplace,
    crash,
    execute,
    fail,
    fan_out,
    load_file,
    load_method,
    load_method_detached,
    load_program,
    log_destination,
    log_and_printf,
    log_filter,
    log_lines,
    log_raw,
    log_stats,
    log_then_block,
    log_slowly,
    log_then_hang,
    log_until_interrupted,
    noop,
    noop_in_call,
    outlive_call,
    panic_after_logging,
    set_log_destination,
    set_log_filter,
    set_sink,
    set_stall_wait,
    sink,
    start_background_logger,
    stderr_check,
    with_callback,
)

__all__ = [
    "BackgroundLogger",
    "abort_with_fatal",
    "backslashreplace",
    "crash",
    "execute",
    "fail",
    "fan_out",
    "load_file",
    "load_method",
    "load_method_detached",
    "load_program",
    "log_and_printf",
    "log_destination",
    "log_filter",
    "log_lines",
    "log_raw",
    "log_slowly",
    "log_stats",
    "log_then_block",
    "log_then_hang",
    "log_until_interrupted",
    "noop",
    "noop_in_call",
    "outlive_call",
    "panic_after_logging",
    "set_log_destination",
    "set_log_filter",
    "set_sink",
    "set_stall_wait",
    "sink",
    "start_background_logger",
    "stderr_check",
    "with_callback",
]
