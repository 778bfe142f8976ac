from typing import Literal

def load(path: str) -> int:
    """Loads `path` (logs "loading <path>" at Info); RuntimeError for an
    empty path, with the Error lines of the call."""

def train(steps: int) -> None:
    """Runs `steps` steps holding the GIL, logging "Progress: N%" (Warn) at
    each, shown at each step's end (pylogsink::flush)."""

def prepare(words: list[str]) -> int:
    """Counts the letter pairs of `words` and queues them, holding the GIL,
    logging "counted N pairs" and "queued N pairs" (Warn), each shown at
    its phase's end (pylogsink::flush_lines); returns N."""

def set_log_filter(spec: str | None) -> None:
    """Sets which records are logged, in env_logger's syntax
    ("warn,my_runtime=debug"); ValueError names a bad directive.
    None goes back to the extension author's default."""
def log_filter() -> str:
    """The directives in force."""
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
def log_stats() -> dict[str, int]:
    """Records emitted (in all and per level: "trace" ... "fatal"),
    lines left out ("left_out"), bytes fd 2 refused ("failed_bytes") and
    times pylogsink's Python thread took the GIL ("python_wakes")."""
