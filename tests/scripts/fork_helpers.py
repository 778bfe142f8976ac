"""For the fork scenarios (test_fork.py): the messages of every record that
reaches ``logging`` in this process, the switch to that destination, and a
multiprocessing child's task (importable, as the forkserver and spawn start
methods need)."""

from __future__ import annotations

import logging
import sys
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
    pylogsink.runtime.set_log_destination("logging")
    pylogsink.runtime.set_log_filter("trace")


def fan_out_in_a_child(destination: str, results: Queue[tuple[int, int]]) -> None:
    """A multiprocessing child's task: 4 native threads attached to one call
    log 25 records each. Puts how many of those, and how many of the
    parent's ("background line"), reached ``logging`` in this process."""
    if destination == "logging":
        to_logging()
    del seen[:]  # with fork, the parent's, copied with its memory
    pylogsink.runtime.fan_out(4, 25)
    mine = sum(1 for m in seen if m.startswith("worker "))
    results.put((mine, sum(1 for m in seen if m.startswith("background line"))))


def log_then_return(destination: str, path: str) -> None:
    """A multiprocessing worker's task: a call into native code, then a
    native thread logs 5 records outside any call, and the task returns as
    soon as it has (the worker
    then ends through ``os._exit`` with fork and forkserver). The records go
    to a file: through a ``FileHandler`` or a replaced ``sys.stderr``."""
    if destination == "logging":
        to_logging()
        logging.getLogger().addHandler(logging.FileHandler(path))
    else:
        sys.stderr = open(path, "w")  # noqa: SIM115 (closed by the exit)
    pylogsink.runtime.noop_in_call()
    pylogsink.runtime.start_background_logger(5).join()
