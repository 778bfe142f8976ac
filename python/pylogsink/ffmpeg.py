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
after PyAV's, and so is each name a loaded module bound to it before
(``from av.logging import set_level``). A reference held anywhere else (a
local variable, an attribute, a default argument) is PyAV's own: calling
it puts PyAV's callback back, and with it the hang. Call
``av.logging.set_level`` through the module, or ``install()`` again after.
PyAV's exceptions then no longer carry FFmpeg's last error line: PyAV no
longer sees the lines.

PyAV's level no longer decides what is logged, and the loggers are
``ffmpeg.<item>`` where PyAV's were ``libav.<item>``: pylogsink's filter
logs FFmpeg's INFO and above by default, so a program that had set
``av.logging.set_level(av.logging.DEBUG)`` asks for DEBUG with
``set_log_filter("info,ffmpeg=debug")``, and gets them in ``logging`` with
``set_log_destination("logging")`` (they go to ``sys.stderr`` by
default). ``install()`` says so once, in a WARN record, when it finds
PyAV's level above pylogsink's filter.
"""

from __future__ import annotations

import functools
import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable

from pylogsink._pylogsink import (
    _ffmpeg_install,
    _ffmpeg_logs,
    _ffmpeg_note,
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
_level_noted = False


def install() -> list[str]:
    """Puts pylogsink's log callback into every libavutil loaded in the
    process, and returns their paths.

    Call it after ``import av`` (or the import that loads FFmpeg) and after
    any ``av.logging.set_level()``: each of those puts PyAV's callback
    back. While installed, ``av.logging.set_level`` installs pylogsink's
    again after it, also through a name a module bound to it before; a
    reference held elsewhere is PyAV's own, and brings its hang back (see
    the module's doc). Called again, it sets the callback again, and an
    INFO record says it was installed already. Raises RuntimeError when no
    libavutil is loaded.
    """
    global _installed
    paths = [os.path.normpath(p) for p in _ffmpeg_install()]
    if _installed:
        _ffmpeg_note(
            "pylogsink.ffmpeg.install(): installed already; pylogsink's callback set again in " + ", ".join(paths),
            False,
        )
    _installed = True
    _wrap_pyav_set_level()
    _note_pyav_level()
    return paths


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
    # Names bound to PyAV's own before now (`from av.logging import
    # set_level`): the wrapper too.
    for module in list(sys.modules.values()):
        names = getattr(module, "__dict__", None)
        if isinstance(names, dict):
            for name, value in list(names.items()):
                if value is original:
                    names[name] = set_level


def _note_pyav_level() -> None:
    """Says once, in a WARN record, that PyAV's level asks for lines that
    pylogsink's filter does not log."""
    global _level_noted
    logging_module = sys.modules.get("av.logging")
    get_level = getattr(logging_module, "get_level", None)
    level = get_level() if get_level is not None else None
    if _level_noted or not isinstance(level, int) or _ffmpeg_logs(level):
        return
    _level_noted = True
    names = ("ERROR", "WARNING", "INFO", "VERBOSE", "DEBUG", "TRACE")
    name = next((n for n in names if getattr(logging_module, n, None) == level), str(level))
    ours = "error" if level <= 16 else "warn" if level <= 24 else "info" if level <= 32 else "debug" if level <= 48 else "trace"
    wanted = f"{log_filter()},ffmpeg={ours}" if log_filter() else f"ffmpeg={ours}"
    where = (
        "they go to logging"
        if log_destination() == "logging"
        else 'they go to sys.stderr; pylogsink.ffmpeg.set_log_destination("logging") hands them to logging'
    )
    _ffmpeg_note(
        f"PyAV's level is {name} (av.logging.set_level), but pylogsink's filter "
        f"({log_filter()!r}) does not log FFmpeg's lines of that level: "
        f'pylogsink.ffmpeg.set_log_filter("{wanted}") logs them. '
        f"The lines it logs are records of target ffmpeg::<item>, and {where} "
        "as the loggers ffmpeg.<item> (PyAV's were libav.<item>)",
        True,
    )
