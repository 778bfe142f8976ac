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
from collections.abc import Iterable, Iterator
from typing import Any

from pylogsink._pylogsink import (
    _before_python_write,
    _output_capture_to_python,
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


class _InOrder:
    """``sys.stdout`` / ``sys.stderr`` while a capture hands native lines to
    the stream it replaced: each write first lets through what native code
    wrote to the same descriptor before, so that ``print`` and C's
    line-buffered ``printf`` come out in the order written. Everything else
    is the stream's own."""

    def __init__(self, stream: Any, fd: int) -> None:
        self._stream = stream
        self._fd = fd

    def write(self, text: str) -> int:
        _before_python_write(self._fd)
        return self._stream.write(text)  # type: ignore[no-any-return]

    def writelines(self, lines: Iterable[str]) -> None:
        _before_python_write(self._fd)
        self._stream.writelines(lines)

    def flush(self) -> None:
        _before_python_write(self._fd)
        self._stream.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


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


# A forked child starts with no capture.
os.register_at_fork(after_in_child=_take_fronts)


def _stop_at_exit() -> None:
    while output_capture_active():
        _stop()
    _take_fronts()


def start_output_capture(stdout: bool = True, stderr: bool = True) -> bool:
    """Begins capturing fd 1 (``stdout``) and fd 2 (``stderr``); returns False
    if a capture is on already (this one joins it and keeps its streams).
    Each ``start_output_capture`` needs its ``stop_output_capture``; what is
    still captured at exit is delivered then. ``flush_output_capture()``
    delivers what was written so far, before Python prints what follows."""
    global _exit_registered
    if not sys.platform.startswith("linux"):
        raise NotImplementedError("pylogsink's output capture is built and tested on Linux only")
    if not _exit_registered:
        atexit.register(_stop_at_exit)
        _exit_registered = True
    began = _start(stdout, stderr)
    if began:
        _put_fronts()
    return began


def stop_output_capture() -> None:
    """Ends the capture (or a nested one): C stdio is flushed, fd 1 and fd 2
    point at what they were before, and every line written before that is
    delivered."""
    _stop()
    if not output_capture_active():
        _take_fronts()


@contextlib.contextmanager
def capture_output(stdout: bool = True, stderr: bool = True) -> Iterator[None]:
    """While the block runs, what native code writes to fd 1 and fd 2 goes
    to ``sys.stdout`` / ``sys.stderr`` as they were when it began (capsys,
    a notebook's cell, ``redirect_stdout``), or to the original descriptors
    where those are the process's own::

        with pylogsink.capture_output():
            my_c_library.run()   # its printf output lands in sys.stdout
    """
    start_output_capture(stdout, stderr)
    try:
        yield
    finally:
        stop_output_capture()


def load_ipython_extension(ipython: object) -> None:
    """``%load_ext pylogsink``: every cell's native output in the cell."""
    events = ipython.events  # type: ignore[attr-defined]
    events.register("pre_run_cell", _cell_starts)
    events.register("post_run_cell", _cell_ends)


def unload_ipython_extension(ipython: object) -> None:
    """``%unload_ext pylogsink``."""
    events = ipython.events  # type: ignore[attr-defined]
    events.unregister("pre_run_cell", _cell_starts)
    events.unregister("post_run_cell", _cell_ends)


def _cell_starts(info: object = None) -> None:
    start_output_capture()


def _cell_ends(result: object = None) -> None:
    stop_output_capture()
