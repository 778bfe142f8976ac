"""The main thread's safe point never re-enters a stream or a handler.

Lines logged outside any call are handed over at the main thread's next
bytecode boundary (a pending call). That boundary may be in the middle of
a Python-level ``write`` or a ``logging`` handler that holds a lock that is
not re-entrant: writing there again from the same thread would wait for
that lock for good. pylogsink hands nothing over there; its own Python
thread does, as another thread would. Checked with a native thread logging
outside any call while the main thread writes (logs) in a loop through the
same stream (handler); a Python thread doing the same is the control.
Without the check the first case hung 3 runs of 3 (CPython 3.12).
"""

from __future__ import annotations

import pytest

from conftest import python

SCRIPT = """
import io, logging, sys, threading
import pylogsink.runtime as rt

N = 3000
mode, logger = sys.argv[1], sys.argv[2]

class LockedStream(io.StringIO):
    def __init__(self):
        super().__init__()
        self.lock = threading.Lock()
    def write(self, s):
        with self.lock:
            for _ in range(20):
                text = "".join([s])
            return super().write(text)

class LockedHandler(logging.Handler):
    def __init__(self):
        super().__init__()
        self.own = threading.Lock()
        self.n = 0
    def emit(self, record):
        with self.own:
            for _ in range(50):
                message = str(record.getMessage())
            if "background line" in message:
                self.n += 1

def python_thread():
    for i in range(N):
        if mode == "stream":
            sys.stderr.write(f"background line {i}\\n")
        else:
            logging.getLogger("bg").info("background line %d", i)

if mode == "stream":
    stream = LockedStream()
    sys.stderr = stream
else:
    handler = LockedHandler()
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    rt.set_log_destination("logging")
if logger == "native":
    thread = rt.start_background_logger(N, 0.0001)
else:
    thread = threading.Thread(target=python_thread)
    thread.start()
for i in range(20000):
    if mode == "stream":
        stream.write("main line\\n")
    else:
        logging.getLogger("main").info("main %d", i)
thread.join()
if mode == "stream":
    sys.stderr = sys.__stderr__
    got = stream.getvalue().count("background line")
else:
    got = handler.n
print("got", got)
"""


@pytest.mark.parametrize("logger", ["native", "python"])
@pytest.mark.parametrize("mode", ["stream", "handler"])
def test_a_stream_or_handler_with_a_lock_that_is_not_reentrant_gets_every_line_without_a_hang(
    mode: str, logger: str
) -> None:
    done = python(f"import sys; sys.argv[1:] = [{mode!r}, {logger!r}]\n" + SCRIPT, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["got", "3000"], done.stdout
