"""For the fork scenarios (test_fork.py): the messages of every record that
reaches ``logging`` in this process, the switch to that destination, and a
multiprocessing child's task (importable, as the forkserver and spawn start
methods need)."""

from __future__ import annotations

import logging
from multiprocessing.queues import Queue

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


def fan_out_in_a_child(destination: str, results: Queue[tuple[int, int]]) -> None:
    """A multiprocessing child's task: 4 native threads attached to one call
    log 25 records each. Puts how many of those, and how many of the
    parent's ("background line"), reached ``logging`` in this process."""
    if destination == "logging":
        to_logging()
    del seen[:]  # with fork, the parent's, copied with its memory
    pylogsink.fan_out(4, 25)
    mine = sum(1 for m in seen if m.startswith("worker "))
    results.put((mine, sum(1 for m in seen if m.startswith("background line"))))
