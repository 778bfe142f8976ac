"""For test_pool_queue_handler.py: the worker side of the logging cookbook's
multiprocessing pattern (a ``Pool`` whose initializer puts a
``QueueHandler`` on the root logger, a ``QueueListener`` in the parent), and
the tasks, importable as the forkserver and spawn start methods need.

Each task logs ``records`` records "background line 0" to "background line
{records - 1}", at INFO, by the way ``mode`` names:

- ``native``: a native thread of pylogsink's demo runtime, outside any
  call, joined before the task returns;
- ``native_in_write``: the same, started and joined from inside a stream's
  ``write``: pylogsink's pending call never hands records over inside a
  writer, so they reach the ``QueueHandler`` from pylogsink's own thread,
  some milliseconds after the task returned (the only way before records
  were handed over at the main thread's next safe point);
- ``python``: a Python thread, joined before the task returns (the
  control: plain Python);
- ``python_at_last_finalizer``: plain Python that hands the task's records
  to ``logging`` from the worker's last multiprocessing finalizer, as
  pylogsink did before (its finalizer ran after the queue's own ones): the
  trap the test's harness must catch.
"""

from __future__ import annotations

import logging
import logging.handlers
import threading
from typing import Any

MODES = ("native", "native_in_write", "python", "python_at_last_finalizer")

# Records kept for the worker's last finalizer (python_at_last_finalizer).
_kept: list[str] = []


def init(queue: Any, mode: str) -> None:
    """The pool's initializer, as in the cookbook: the root logger's only
    handler puts records into the parent's queue."""
    root = logging.getLogger()
    root.handlers[:] = [logging.handlers.QueueHandler(queue)]
    root.setLevel(logging.INFO)
    if mode.startswith("native"):
        import pylogsink.runtime

        pylogsink.runtime.set_log_destination("logging")
    elif mode == "python_at_last_finalizer":
        from multiprocessing.util import Finalize

        Finalize(None, _log_kept, exitpriority=-(2**63))


def _log_kept() -> None:
    log = logging.getLogger("rt")
    for message in _kept:
        log.info(message)
    del _kept[:]


class _Writer:
    """A stream whose ``write`` runs native code that logs."""

    def write(self, records: int) -> None:
        import pylogsink.runtime

        pylogsink.runtime.start_background_logger(records).join()


def task(mode: str, records: int, _: int) -> int:
    """One task: logs ``records`` records the way ``mode`` says."""
    if mode == "native":
        import pylogsink.runtime

        pylogsink.runtime.start_background_logger(records).join()
    elif mode == "native_in_write":
        _Writer().write(records)
    elif mode == "python":
        log = logging.getLogger("rt")
        thread = threading.Thread(target=lambda: [log.info("background line %d", i) for i in range(records)])
        thread.start()
        thread.join()
    elif mode == "python_at_last_finalizer":
        _kept.extend(f"background line {i}" for i in range(records))
    else:
        raise ValueError(mode)
    return records
