"""Type stubs for the demo runtime, ``pylogsink._pylogsink``."""

from typing import Callable, Literal, TypeVar

_T = TypeVar("_T")
_Level = Literal["trace", "debug", "info", "warn", "warning", "error", "fatal", "critical"]

# The workspace's Cargo.toml version, compiled in (maturin writes the same
# into the package's metadata).
__version__: str

def set_sink(name: Literal["pylogsink", "naive", "fd2"]) -> None:
    """Log through pylogsink (the default), through sys.stderr.write with the
    GIL ("naive"), or with a blocking write(2) to fd 2 ("fd2")."""

def sink() -> Literal["pylogsink", "naive", "fd2"]:
    """The sink in use."""

def load_method() -> None:
    """Backend init fails and logs an Error under the backend lock, GIL held; raises RuntimeError."""

def load_method_detached() -> None:
    """Like load_method, but releases the GIL before taking the backend lock."""

def execute() -> int:
    """Takes the backend lock with the GIL held; returns how many inits ran."""

def log_lines(count: int, level: _Level = "info", size: int = 100, detach: bool = False) -> int:
    """Logs count lines of about size bytes in one call; returns the bytes logged."""

def log_raw(message: bytes, level: _Level = "info") -> None:
    """Logs one message of raw bytes, which need not be UTF-8."""

def log_slowly(
    count: int, interval: float, detach: bool = True, flush: Literal["raise", "lines"] | None = None
) -> None:
    """Logs count lines ("slow line N"), interval seconds apart, in one call
    that releases the GIL meanwhile (detach) or holds it. With the GIL held,
    after each line: flush="raise", pylogsink::flush (a Ctrl-C stops the
    loop there); flush="lines", pylogsink::flush_lines from a helper with
    no py (the loop runs on, a Ctrl-C is raised at the return)."""

def log_then_hang(count: int, seconds: float) -> None:
    """Logs count Warn lines, then sleeps holding the GIL."""

def log_then_block(count: int) -> None:
    """Logs count Warn lines, then blocks for good with the GIL released."""

def fan_out(
    workers: int = 4, lines: int = 100, attach: bool = True, under_backend: bool = False, hang: float = 0.0
) -> None:
    """Fans one call out to native worker threads that each log lines
    ("worker W line N"), attached to the call unless attach is False; with
    under_backend, while holding the backend lock. The call then sleeps
    hang seconds (GIL released) before it returns."""

def outlive_call(count: int, delay: float) -> BackgroundLogger:
    """Hands the call to a native thread that, still attached to it, logs
    count lines delay seconds after the call returned."""

def crash(kind: Literal["segv", "abort"]) -> None:
    """Logs three Error lines in a call, then crashes the process with
    SIGSEGV or abort(); no Fatal line is logged."""

def with_callback(callback: Callable[[], _T]) -> _T:
    """Logs around a call of callback, all within one outermost call."""

def abort_with_fatal(on_native_thread: bool = False) -> None:
    """Logs an Error, then a Fatal line, then aborts the process: in a call,
    or with on_native_thread on a native thread outside any call."""

def load_program(data: bytes) -> int:
    """Checks the program's 4-byte identifier; on a mismatch logs the raw
    bytes and raises RuntimeError carrying that line."""

def load_file(path: str) -> int:
    """Reads a program file; on failure raises RuntimeError whose message is
    cut at 128 bytes, maybe inside a character."""

def fail(count: int, kind: Literal["RuntimeError", "IndexError", "ValueError"] = "RuntimeError") -> None:
    """Logs count Error lines, then raises kind carrying them."""

def log_until_interrupted(seconds: float) -> None:
    """Logs a line, then computes with the GIL held, checking for signals."""

def panic_after_logging() -> None:
    """Logs a line, then panics (raises pyo3_runtime.PanicException)."""

def backslashreplace(data: bytes) -> str:
    """pylogsink's decoding, equal to data.decode("utf-8", "backslashreplace")."""

def log_and_printf(text: str) -> None:
    """Logs "logged: TEXT" (Info) through the sink in use and prints
    "printed: TEXT" with C's printf to stdout, flushed, in one call."""

def start_output_capture(stdout: bool = True, stderr: bool = True) -> bool:
    """Points fd 1 and/or fd 2 at pipes drained by a native thread; False if
    a capture was on already (this one joins it)."""

def stop_output_capture() -> None:
    """Ends the capture (or a nested one): C stdio flushed, the descriptors
    restored, every line written before delivered."""

def flush_output_capture() -> None:
    """Delivers everything written to the captured descriptors so far (C
    stdio flushed first) before it returns."""

def output_capture_active() -> bool:
    """Whether an output capture is on."""

def _output_capture_to_python(fd: int) -> bool:
    """Whether captured descriptor ``fd``'s lines go to a Python stream."""

def _start_output_capture_to_logging(stdout: object | None, stderr: object | None) -> bool:
    """Begins a capture whose lines go to ``stdout`` / ``stderr``, objects
    whose ``write`` hands them to ``logging`` (None: not captured)."""

def _before_python_write(fd: int) -> None:
    """What native code wrote to ``fd`` before goes to its Python stream
    first."""

class _InOrderWrite:
    """A stream's ``write`` after what native code wrote to ``fd`` before,
    asked where a Python line starts."""

    def __init__(self, write: Callable[[str], int], fd: int) -> None: ...
    def __call__(self, text: str) -> int: ...

def noop() -> None:
    """Does nothing: the cost of a bare binding call."""

def noop_in_call() -> None:
    """Does nothing inside pylogsink::call: the cost of the wrapper."""

def stderr_check() -> Literal["dict watcher", "lookup"]:
    """How a call's entry learns whether sys.stderr was replaced: a dict
    watcher on sys.__dict__ (CPython 3.12+, a version-specific build) or
    two lookups at each outermost call."""

def fork_leftovers() -> list[tuple[str, bool]]:
    """Each flag and buffer of the output capture and the delivery that a
    forked child must start without, with whether this process has it
    now."""

class BackgroundLogger:
    """A native thread that logs outside any call."""

    def join(self) -> None:
        """Waits for the thread, with the GIL released."""

def start_background_logger(count: int, interval: float = 0.0, name: str | None = None) -> BackgroundLogger:
    """Starts a native thread that logs count lines, interval seconds apart;
    with name, a thread of that name."""

def set_log_filter(spec: str | None) -> None:
    """Sets which records are logged, in env_logger's syntax
    ("warn,_pylogsink::runtime=debug"); ValueError names a bad directive.
    None goes back to the extension author's default."""

def log_filter() -> str:
    """The directives in force."""

def set_log_destination(name: Literal["logging", "stderr"]) -> None:
    """Sends records to Python's logging ("logging") or to stderr as text
    ("stderr"); ValueError for anything else."""

def log_destination() -> Literal["logging", "stderr"]:
    """Where records go: "logging" or "stderr"."""

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

def set_stall_wait(seconds: float) -> None:
    """How long a line waits for room on fd 2 before it is kept or queued."""

def _ffmpeg_install() -> list[str]:
    """pylogsink.ffmpeg.install's native part: pylogsink's callback into
    each loaded libavutil; their paths. RuntimeError when none is loaded."""

def _ffmpeg_logs(av_level: int) -> bool:
    """Whether pylogsink's filter logs FFmpeg's lines of this level (48 DEBUG, 32 INFO...)."""

def _ffmpeg_note(message: str, warn: bool) -> None:
    """A record of target pylogsink::ffmpeg, at INFO (WARN with warn)."""

def _ffmpeg_uninstall() -> list[str]:
    """pylogsink.ffmpeg.uninstall's native part: FFmpeg's default callback
    back into each loaded libavutil; their paths."""

def _sqlite_set_log(module: str | None, ours: bool) -> tuple[str, str]:
    """pylogsink.sqlite's native part: pylogsink's log function (``ours``)
    or none set in the SQLite that the extension file ``module`` (None: the
    interpreter itself) loads; that library's path and SQLite's version."""
