"""What native code writes to fd 1 and fd 2, in front of the Python user.

C and C++ code writes straight to the process's descriptors (``printf``,
``std::cout``, ``fprintf(stderr, ...)``): past ``sys.stdout`` and
``sys.stderr``, so pytest's ``capsys``, ``contextlib.redirect_stdout`` and a
notebook's cell never see it. ``capture_output()`` points fd 1 and fd 2 at
pipes that a native thread drains without the GIL (a writer never blocks,
whatever Python is doing), and hands each line to ``sys.stdout`` /
``sys.stderr`` where Python replaced them, or to the original descriptors.
"""

from __future__ import annotations

import atexit
import contextlib
import sys
from collections.abc import Iterator

from pylogsink._pylogsink import flush_output_capture, output_capture_active
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


def _stop_at_exit() -> None:
    while output_capture_active():
        _stop()


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
    return _start(stdout, stderr)


def stop_output_capture() -> None:
    """Ends the capture (or a nested one): C stdio is flushed, fd 1 and fd 2
    point at what they were before, and every line written before that is
    delivered."""
    _stop()


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
