"""SQLite's error log through pylogsink, from the SQLite that Python's
``sqlite3`` module uses, with no C compiler at the user's.

Why: SQLite says why a statement failed, why it built an automatic index,
why it recovered a file, in a log of its own that ``sqlite3`` never reads.
``install()`` sets pylogsink's log function in that SQLite: each message
becomes a record of target ``sqlite`` (``logging`` gets the logger
``sqlite``), with the message and its result code, as
``no such table: nope in "select * from nope" (code 1)``; notices are
INFO, warnings WARN, the rest ERROR. The function never calls Python: SQLite calls it under its own
mutexes, most often with the GIL released. Where the records go is
``pylogsink.set_log_destination``'s, what is logged
``pylogsink.set_log_filter``'s. Linux, macOS and Windows.

SQLite before 3.42 takes a log function only before it initializes, and
``import sqlite3`` initializes it: there, call ``install()`` before the
first ``import sqlite3`` (IPython and Jupyter import it before their
startup files: use a ``.pth`` file, which Python runs as it starts), or
``install()`` raises RuntimeError saying so. SQLite 3.42 and later take
it at any time. A second ``install()`` (the ``.pth`` line's, then the
program's) changes nothing, and says so in an INFO record of the logger
``pylogsink.sqlite``.
"""

from __future__ import annotations

import importlib.util
import os

from pylogsink._pylogsink import _sqlite_set_log

__all__ = ["install", "uninstall"]


def install() -> str:
    """Sets pylogsink's log function in the SQLite of Python's ``sqlite3``
    module, and returns that library's path.

    Raises RuntimeError when SQLite refuses it (SQLite before 3.42, already
    initialized by ``import sqlite3``: the message says what to do), when
    this Python has no ``sqlite3``, or when its SQLite is linked into
    ``_sqlite3`` privately.
    """
    path, _version = _sqlite_set_log(_module_file(), True)
    return os.path.normpath(path) if path else path


def uninstall() -> str:
    """Takes pylogsink's log function out of that SQLite (SQLite logs
    nothing then), and returns the library's path. Before SQLite 3.42, as
    ``install()``, only before ``import sqlite3``."""
    path, _version = _sqlite_set_log(_module_file(), False)
    return os.path.normpath(path) if path else path


def _module_file() -> str | None:
    """The file of Python's ``_sqlite3`` extension module, without
    importing it (importing it initializes SQLite); None when it is built
    into the interpreter."""
    spec = importlib.util.find_spec("_sqlite3")
    if spec is None:
        raise RuntimeError("this Python has no sqlite3 module (_sqlite3 was not built)")
    return spec.origin if spec.has_location else None
