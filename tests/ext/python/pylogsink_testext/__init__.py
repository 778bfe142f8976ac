"""A test extension whose log lines come from real crates: ureq's requests
through the ``log`` crate, and tracing's events and spans through
pylogsink's tracing layer, filtered by pylogsink (``PYLOGSINK_TESTEXT_LOG``
at import, ``set_log_filter`` later), and ``pool_get``: threads sharing one
ureq connection pool, whose mutex ureq logs under."""

from pylogsink_testext._testext import (
    h2_fan_out,
    h2_on_global_runtime,
    h2_get,
    h2_serve,
    http_get,
    log_at,
    log_destination,
    log_enabled,
    log_filter,
    log_kv,
    log_levels,
    log_nested,
    log_stats,
    log_then_crash,
    pool_get,
    rayon_fan_out,
    set_log_destination,
    set_log_filter,
    signal_later,
    traced_load,
    tracing_error,
    tracing_event,
    tracing_threads,
    tracing_work,
)

__all__ = [
    "h2_fan_out",
    "h2_on_global_runtime",
    "h2_get",
    "h2_serve",
    "http_get",
    "log_at",
    "log_destination",
    "log_enabled",
    "log_filter",
    "log_kv",
    "log_levels",
    "log_nested",
    "log_stats",
    "log_then_crash",
    "pool_get",
    "rayon_fan_out",
    "set_log_destination",
    "set_log_filter",
    "signal_later",
    "traced_load",
    "tracing_error",
    "tracing_event",
    "tracing_threads",
    "tracing_work",
]
