"""SQLite's log through pylogsink, for Python's sqlite3
(docs/c-libraries.md): a failed query's message as a `logging` record."""

import logging
import time

import pylogsink.sqlite

pylogsink.sqlite.install()  # before the first `import sqlite3` (SQLite before 3.42)
import sqlite3

pylogsink.set_log_destination("logging")
records: list[logging.LogRecord] = []
logging.getLogger("sqlite").addHandler(logging.Handler())
logging.getLogger("sqlite").handlers[0].emit = records.append  # type: ignore[method-assign]

try:
    sqlite3.connect(":memory:").execute("select * from nope")
except sqlite3.OperationalError:
    pass

deadline = time.monotonic() + 10
while not records and time.monotonic() < deadline:
    time.sleep(0.01)
assert records[0].getMessage() == 'no such table: nope in "select * from nope" (code 1)', records
