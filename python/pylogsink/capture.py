"""What native code writes to fd 1 and fd 2, in front of the Python user.

C and C++ code writes straight to the process's descriptors (``printf``,
``std::cout``, ``fprintf(stderr, ...)``): past ``sys.stdout`` and
``sys.stderr``, so pytest's ``capsys``, ``contextlib.redirect_stdout`` and a
notebook's cell never see it. ``capture_output()`` points fd 1 and fd 2 at
pipes that a native thread drains without the GIL (a writer never blocks,
whatever Python is doing), and hands each line to ``sys.stdout`` /
``sys.stderr`` where Python replaced them, or to the original descriptors.
Where it hands them to Python, a front is put before that stream for the
capture's time, so that what Python prints comes after what native code
wrote before it.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import threading
from collections.abc import Iterable, Iterator

# `logging` and `typing` take as long to import as the rest of pylogsink:
# `logging` is imported where a capture into it begins.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import logging
    from typing import Any

from pylogsink._pylogsink import (
    _before_python_write,
    _InOrderWrite,
    _output_capture_to_python,
    _start_output_capture_to_logging,
    flush_output_capture,
    output_capture_active,
)
from pylogsink._pylogsink import start_output_capture as _start
from pylogsink._pylogsink import stop_output_capture as _stop

__all__ = [
    "capture_output",
    "flush_output_capture",
    "output_capture_active",
    "start_output_capture",
    "stop_output_capture",
]

_exit_registered = False

# Held while a capture begins or ends, fronts and moved handlers included:
# captures begun and ended by several threads see each other whole.
_control = threading.RLock()


class _InOrder:
    """``sys.stdout`` / ``sys.stderr`` while a capture hands native lines to
    the stream it replaced: a write first lets through what native code
    wrote to the same descriptor before, so that ``print`` and C's
    line-buffered ``printf`` come out in the order written. That is asked
    where a Python line starts (``_InOrderWrite``, native: ``print``'s
    several writes ask once). Everything else is the stream's own."""

    def __init__(self, stream: Any, fd: int) -> None:
        self._stream = stream
        self._fd = fd
        # An instance attribute: print() finds it first, and calls it with
        # no Python frame.
        self.write = _InOrderWrite(stream.write, fd)

    def writelines(self, lines: Iterable[str]) -> None:
        _before_python_write(self._fd)
        self._stream.writelines(lines)

    def flush(self) -> None:
        _before_python_write(self._fd)
        self._stream.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class _ToLogging:
    """Where captured lines go with ``to_logging=True``: each line becomes a
    record of the logger ``name`` ("stdout" or "stderr") at ``level``, with
    ``record.stream`` set to ``name``."""

    def __init__(self, name: str, level: int) -> None:
        import logging

        self._logger = logging.getLogger(name)
        self._level = level
        self._extra = {"stream": name}

    def write(self, text: str) -> int:
        lines = text.split("\n")
        if lines[-1] == "":
            lines.pop()
        for line in lines:
            self._logger.log(self._level, line, extra=self._extra)
        return len(text)

    def flush(self) -> None:
        pass


# Handlers that wrote to fd 1 or fd 2 when a capture into logging began, and
# write to a copy of that descriptor's original until it ends: (handler, its
# stream, the copy's stream). Their records would otherwise be captured, and
# become records again, forever. logging.lastResort's stand-in is here too.
_moved: list[tuple[logging.StreamHandler[Any], Any, Any]] = []
_last_resort: list[tuple[logging.Handler | None, logging.Handler]] = []


def _fileno(stream: Any) -> int | None:
    try:
        return int(stream.fileno())
    except Exception:
        return None


def _to_original(fd: int, like: Any) -> Any:
    """A text stream on a copy of ``fd`` as it is now (before a capture)."""
    encoding = getattr(like, "encoding", None) or "utf-8"
    errors = getattr(like, "errors", None) or "backslashreplace"
    return open(os.dup(fd), "w", buffering=1, encoding=encoding, errors=errors)


def _move_handlers(fds: set[int]) -> None:
    import logging

    handlers = list(logging.root.handlers)
    for logger in list(logging.root.manager.loggerDict.values()):
        if isinstance(logger, logging.Logger):
            handlers += logger.handlers
    for handler in dict.fromkeys(handlers):
        if not isinstance(handler, logging.StreamHandler):
            continue
        fd = _fileno(handler.stream)
        if fd in fds:
            ours = _to_original(fd, handler.stream)  # type: ignore[arg-type]
            _moved.append((handler, handler.setStream(ours), ours))
    last = logging.lastResort
    fd = _fileno(sys.stderr)
    if last is not None and fd in fds:
        stand_in = logging.StreamHandler(_to_original(fd, sys.stderr))
        stand_in.setLevel(last.level)
        logging.lastResort = stand_in
        _last_resort.append((last, stand_in))


def _put_handlers_back() -> None:
    import logging

    while _moved:
        handler, stream, ours = _moved.pop()
        if handler.stream is ours:
            handler.setStream(stream)
        ours.close()
    while _last_resort:
        last, stand_in = _last_resort.pop()
        if logging.lastResort is stand_in:
            logging.lastResort = last
        stand_in.stream.close()


# The streams put in front of sys.stdout / sys.stderr: (name, front, stream).
_fronts: list[tuple[str, _InOrder, Any]] = []


def _put_fronts() -> None:
    for name, fd in (("stdout", 1), ("stderr", 2)):
        if _output_capture_to_python(fd):
            stream = getattr(sys, name)
            front = _InOrder(stream, fd)
            setattr(sys, name, front)
            _fronts.append((name, front, stream))


def _take_fronts() -> None:
    while _fronts:
        name, front, stream = _fronts.pop()
        # One that was replaced since stays (its replacer puts it back).
        if getattr(sys, name) is front:
            setattr(sys, name, stream)


def _after_fork_in_child() -> None:
    # A forked child starts with no capture, and with the lock free: the
    # thread that may have held it is not in the child.
    global _control, _ext_capture
    _control = threading.RLock()
    _ext_capture = False
    _take_fronts()
    _put_handlers_back()


if hasattr(os, "register_at_fork"):  # no fork on Windows
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _stop_at_exit() -> None:
    with _control:
        while output_capture_active():
            _stop()
        _take_fronts()
        _put_handlers_back()


def start_output_capture(stdout: bool = True, stderr: bool = True, *, to_logging: bool = False) -> bool:
    """Begins capturing fd 1 (``stdout``) and fd 2 (``stderr``); returns False
    if a capture is on already (this one joins it and keeps its streams).
    Each ``start_output_capture`` needs its ``stop_output_capture``; what is
    still captured at exit is delivered then. ``flush_output_capture()``
    delivers what was written so far, before Python prints what follows.
    With ``to_logging``, each line becomes a record of Python's ``logging``
    instead: logger ``stdout`` at INFO, logger ``stderr`` at WARNING."""
    global _exit_registered
    # On Windows the native side refuses, saying why (an OSError).
    if not sys.platform.startswith(("linux", "win32")):
        raise NotImplementedError("pylogsink's output capture is built and tested on Linux only")
    if not _exit_registered:
        atexit.register(_stop_at_exit)
        _exit_registered = True
    with _control:
        if to_logging:
            import logging

            if output_capture_active():
                return _start_output_capture_to_logging(None, None)
            _move_handlers({fd for fd, wanted in ((1, stdout), (2, stderr)) if wanted})
            try:
                return _start_output_capture_to_logging(
                    _ToLogging("stdout", logging.INFO) if stdout else None,
                    _ToLogging("stderr", logging.WARNING) if stderr else None,
                )
            except BaseException:
                _put_handlers_back()
                raise
        began = _start(stdout, stderr)
        if began:
            _put_fronts()
        return began


def stop_output_capture() -> None:
    """Ends the capture (or a nested one): C stdio is flushed, fd 1 and fd 2
    point at what they were before, and every line written before that is
    delivered."""
    with _control:
        _stop()
        if not output_capture_active():
            _take_fronts()
            _put_handlers_back()


@contextlib.contextmanager
def capture_output(stdout: bool = True, stderr: bool = True, *, to_logging: bool = False) -> Iterator[None]:
    """While the block runs, what native code writes to fd 1 and fd 2 goes
    to ``sys.stdout`` / ``sys.stderr`` as they were when it began (capsys,
    a notebook's cell, ``redirect_stdout``), or to the original descriptors
    where those are the process's own::

        with pylogsink.capture_output():
            my_c_library.run()   # its printf output lands in sys.stdout

    With ``to_logging=True``, each line becomes a record of Python's
    ``logging`` instead: logger ``stdout`` at INFO, logger ``stderr`` at
    WARNING, with ``record.stream`` set to "stdout" or "stderr".
    """
    start_output_capture(stdout, stderr, to_logging=to_logging)
    try:
        yield
    finally:
        stop_output_capture()


def load_ipython_extension(ipython: object) -> None:
    """``%load_ext pylogsink``: one capture for the kernel's life, as
    ipykernel's own: native output goes to ``sys.stdout`` / ``sys.stderr``,
    which send it to the cell that runs, and each cell's output is
    delivered before the cell ends. A process started in one cell (a
    server, a pool's workers) keeps its output going to the kernel's
    streams in later cells."""
    global _ext_capture
    if _ext_capture:
        return
    start_output_capture()
    _ext_capture = True
    ipython.events.register("post_run_cell", _cell_ends)  # type: ignore[attr-defined]


def unload_ipython_extension(ipython: object) -> None:
    """``%unload_ext pylogsink``: the capture ends there."""
    global _ext_capture
    if not _ext_capture:
        return
    ipython.events.unregister("post_run_cell", _cell_ends)  # type: ignore[attr-defined]
    _ext_capture = False
    stop_output_capture()


# Whether %load_ext pylogsink's capture is on.
_ext_capture = False


def _cell_ends(result: object = None) -> None:
    flush_output_capture()
