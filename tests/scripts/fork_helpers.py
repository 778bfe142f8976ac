"""For the fork scenarios (test_fork.py): the messages of every record that
reaches ``logging`` in this process, and the switch to that destination."""

from __future__ import annotations

import logging

import pylogsink

seen: list[str] = []


class Count(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        seen.append(record.getMessage())


logging.getLogger().addHandler(Count())
logging.getLogger().setLevel(logging.INFO)


def to_logging() -> None:
    """Records go to ``logging``, every level through the directives."""
    pylogsink.set_log_destination("logging")
    pylogsink.set_log_filter("trace")
