"""The records the sections log, and Python's `logging` as they set it up:
every contender logs the same message, the one that makes pylogsink's
line a given size, and a `logging` handler formats a record with the
fields of pylogsink's line, so that the rivals write alike.
"""

from __future__ import annotations

import logging
import os
import time
from types import ModuleType

# The records' `log` target; their Python logger is the same with dots.
TARGET = "myruntime::backend"


def line_message(b: ModuleType, size: int) -> str:
    """The message of a `size`-byte pylogsink line."""
    return b.record_bytes(size).decode().split("] ", 1)[1].rstrip("\n")


def line_formatter() -> logging.Formatter:
    """A logging.Formatter that gives a record the fields of a pylogsink
    line, in the same order."""
    fmt = logging.Formatter(
        "[%(asctime)s.%(msecs)03d000Z %(levelname)-5s %(name)s %(filename)s:%(lineno)d] %(message)s",
        "%Y-%m-%dT%H:%M:%S",
    )
    fmt.converter = time.gmtime
    return fmt


class CountingHandler(logging.StreamHandler):
    """A StreamHandler that counts the records it writes, so that a run can
    check that every record arrived."""

    count = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.count += 1
        super().emit(record)


def logging_setup(b: ModuleType, root_level: str, target_level: str) -> tuple[CountingHandler, logging.Logger]:
    """Python's `logging` as (10) has it: a CountingHandler on /dev/null
    with the line formatter on the root logger at `root_level`, the logger
    of the benchmark's target at `target_level`, and pylogsink's `logging`
    destination. Returns the handler and the logger."""
    handler = CountingHandler(open(os.devnull, "w"))
    handler.setFormatter(line_formatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(root_level)
    logger = logging.getLogger(TARGET.replace("::", "."))
    logger.setLevel(target_level)
    b.set_destination("logging")
    return handler, logger
