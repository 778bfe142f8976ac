"""Type stubs for the test extension, ``pylogsink_testext._testext``."""

from typing import Any, Literal

_Level = Literal["trace", "debug", "info", "warn", "error"]

def http_get(url: str) -> int:
    """A GET with ureq; returns the status code, raises RuntimeError on failure."""

def pool_get(url: str, count: int, detach: bool) -> int:
    """Sends count GETs to url through one agent shared by all threads;
    the GIL is released during the requests only with detach. Returns the
    statuses' sum."""

def rayon_fan_out(items: int) -> int:
    """Logs items Warn records ("item N") from a rayon pool of four
    threads attached to the call; returns how many were processed."""

def tracing_work(name: str) -> None:
    """Emits tracing events (TRACE to WARN, target testext::work) inside a span."""

def log_at(level: _Level, target: str, message: str) -> None:
    """Hands one record to the logger without asking whether it is enabled."""

def log_enabled(level: _Level, target: str) -> tuple[bool, bool]:
    """The logger's enabled() answer, and whether level is within log::max_level()."""

def log_then_crash(count: int, kind: Literal["segv", "abort"]) -> None:
    """Logs count Warn records ("line N of COUNT", target testext::crash) in
    one call, then crashes inside it: SIGSEGV ("segv") or abort() ("abort")."""

def signal_later(how: Literal["kill", "raise"], after: float) -> None:
    """SIGABRT from a native thread, `after` seconds from now: `kill(getpid())` or `raise`."""

def set_log_filter(spec: str | None) -> None:
    """Sets the filter (env_logger directives); ValueError on a bad directive, filter unchanged;
    None: back to the author's default."""

def log_filter() -> str:
    """The filter in force."""

def set_log_destination(name: Literal["logging", "stderr"]) -> None:
    """Sends records to Python's logging, or to stderr as text."""

def log_destination() -> Literal["logging", "stderr"]:
    """Where records go."""

def set_log_budget(*, lines: int | None = None, records: int | None = None, record_bytes: int | None = None) -> None:
    """Sets how much may wait in one place before the oldest is left out:
    bytes of text lines, records for logging and their bytes. ValueError
    below the least (1024 bytes, one record)."""

def log_budget() -> dict[str, int]:
    """The budget in force: "lines", "records", "record_bytes"."""

def log_stats() -> dict[str, Any]:
    """pylogsink's counts."""

def traced_load(path: str, rows: int) -> int:
    """#[tracing::instrument]ed load(path) and init(rows) (target testext::model):
    a Warn event with a path field in load, an Info event with fields
    (rows, ratio, ok, name) and a Debug one in init."""

def tracing_event(level: _Level, message: str, text: str, raw: bytes) -> None:
    """One tracing event (target testext::fields) in a span req{id=7}, with the
    fields text, raw (bytes), count=3, lineno=1 and msg="clash"."""

def tracing_threads(threads: int, events: int, detach: bool) -> int:
    """Native threads attached to the call emit Warn events (testext::pool)
    under a backend lock the caller also takes, GIL held or released."""

def log_kv(text: str) -> None:
    """A log::warn! (target testext::kv) with key-values rows, ratio, ok, text, shape."""

def log_nested(text: str) -> None:
    """A log::warn! of "outer {text}" whose argument's Display logs "inner {text}" (target testext::nested)."""

def h2_serve() -> None:
    """Serves HTTP/2 (prior knowledge) on 127.0.0.1 until killed; prints the port first."""

def h2_on_global_runtime(port: int, connections: int, requests: int) -> int:
    """HTTP/2 GETs as tasks on a long-lived tokio runtime nobody attaches."""

def h2_fan_out(port: int, workers: int, requests: int) -> int:
    """workers HTTP/2 connections making requests GETs each, on a tokio pool
    attached to the call, the GIL released; how many answered 200."""

def h2_get(port: int, path: str, detach: bool) -> tuple[int, int]:
    """A GET over HTTP/2 with h2 (which logs through tracing); the status and body length."""

def tracing_error(path: str) -> None:
    """Raises RuntimeError("open failed") after an Error event (code=35) in a span open{path=..}."""

def log_levels(tag: str, in_call: bool) -> None:
    """log::info!, log::debug!, tracing::info! and tracing::debug! (target
    testext::control, messages "log info {tag}" ...), in a call or outside any."""
