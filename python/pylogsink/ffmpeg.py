"""FFmpeg's log lines through pylogsink, for PyAV (and any library that
loads FFmpeg), with no C compiler at the user's.

Why: PyAV's log callback takes the GIL on every line FFmpeg logs. PyAV
frees a codec with the GIL held and waits for the codec's frame threads,
and a frame thread that logs waits for the GIL: with logging on
(``av.logging.set_level(av.logging.DEBUG)``) and
frame threads, closing a decoder early hangs the process.

``install()`` puts pylogsink's callback into every libavutil loaded in the
process (PyAV's bundled copy, OpenCV's, the system's). It never calls
Python: each line becomes a pylogsink record, with the target
``ffmpeg::<item>`` (``ffmpeg::mpeg4``; ``logging`` gets the logger
``ffmpeg.mpeg4``), or ``ffmpeg`` for a line with no context. pylogsink's
filter decides what is logged (``set_log_filter("ffmpeg=debug")``), not
FFmpeg's level; where the records go is ``set_log_destination``'s
(``"stderr"``: a replaced ``sys.stderr`` too, such as pytest's capture; or
``"logging"``). Linux, macOS and Windows.

Call ``install()`` after ``import av``: PyAV sets its own callback when it
is imported, and again at each ``av.logging.set_level()``. While installed,
``av.logging.set_level`` is wrapped to install pylogsink's callback again
after PyAV's. PyAV's exceptions then no longer carry FFmpeg's last error
line: PyAV no longer sees the lines.
"""

from __future__ import annotations

import functools
import os
import sys
from typing import Any, Callable

from pylogsink._pylogsink import (
    _ffmpeg_install,
    _ffmpeg_uninstall,
    log_destination,
    log_filter,
    set_log_destination,
    set_log_filter,
)

__all__ = [
    "install",
    "uninstall",
    "log_destination",
    "log_filter",
    "set_log_destination",
    "set_log_filter",
]

_installed = False
_pyav_set_level: Callable[..., Any] | None = None


def install() -> list[str]:
    """Puts pylogsink's log callback into every libavutil loaded in the
    process, and returns their paths.

    Call it after ``import av`` (or the import that loads FFmpeg) and after
    any ``av.logging.set_level()``: each of those puts PyAV's callback
    back. While installed, ``av.logging.set_level`` installs pylogsink's
    again after it. Raises RuntimeError when no libavutil is loaded.
    """
    global _installed
    paths = _ffmpeg_install()
    _installed = True
    _wrap_pyav_set_level()
    return [os.path.normpath(p) for p in paths]


def uninstall() -> list[str]:
    """Puts FFmpeg's default callback (its lines on fd 2, in its own format)
    back into every libavutil loaded in the process, undoes the wrapping
    of ``av.logging.set_level``, and returns the libraries' paths."""
    global _installed, _pyav_set_level
    _installed = False
    logging_module = sys.modules.get("av.logging")
    if _pyav_set_level is not None and logging_module is not None:
        logging_module.set_level = _pyav_set_level  # type: ignore[attr-defined]
    _pyav_set_level = None
    return [os.path.normpath(p) for p in _ffmpeg_uninstall()]


def _wrap_pyav_set_level() -> None:
    """``av.logging.set_level``, if PyAV is imported, made to install
    pylogsink's callback again after it sets PyAV's."""
    global _pyav_set_level
    logging_module = sys.modules.get("av.logging")
    if logging_module is None or _pyav_set_level is not None:
        return
    original = logging_module.set_level

    @functools.wraps(original)
    def set_level(level: int | None) -> None:
        original(level)
        if _installed:
            _ffmpeg_install()

    _pyav_set_level = original
    logging_module.set_level = set_level  # type: ignore[attr-defined]
