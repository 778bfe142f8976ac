"""Scenarios that run the demo runtime the way real programs do.

Each scenario runs in the process that calls it and prints one JSON line
with what happened. Run them in a subprocess with a timeout: a scenario that
deadlocks never prints, and that is the point of the naive sink.

    python -m pylogsink.scenarios two-threads --sink naive --iterations 100
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import sys
import threading
import time
import traceback
from typing import Callable

import pylogsink


class SlowStderr:
    """A replaced ``sys.stderr`` whose ``write`` releases the GIL, as a real
    stream does around its ``write(2)``; ``time.sleep`` makes the hand-off
    of the GIL to another thread certain instead of likely."""

    def __init__(self, delay: float = 0.001) -> None:
        self.delay = delay
        self.parts: list[str] = []

    def write(self, text: str) -> int:
        time.sleep(self.delay)
        self.parts.append(text)
        return len(text)

    def flush(self) -> None:
        pass

    def text(self) -> str:
        return "".join(self.parts)


def two_threads(sink: str, iterations: int, detached: bool, module: str = "pylogsink") -> dict[str, object]:
    """Thread A loads a method whose backend init fails and logs under the
    backend lock; thread B executes, which takes that lock with the GIL held,
    for as long as A runs. With ``detached``, A releases the GIL before
    taking the lock. ``module`` is the runtime: the demo's, or another with
    the same functions (set_sink, load_method, load_method_detached,
    execute), such as the C++ one of the C ABI tests."""
    rt = pylogsink.runtime if module == "pylogsink" else importlib.import_module(module)
    rt.set_sink(sink)
    load = rt.load_method_detached if detached else rt.load_method
    loaded = threading.Event()
    errors: list[str] = []

    def guarded(body: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            try:
                body()
            except BaseException:  # reported in the result, not lost
                errors.append(traceback.format_exc())

        return run

    def loader() -> None:
        for _ in range(iterations):
            try:
                load()
            except RuntimeError:
                pass
        loaded.set()

    def executor() -> None:
        while not loaded.is_set():
            rt.execute()

    stderr = SlowStderr()
    sys.stderr = stderr
    start = time.monotonic()
    try:
        threads = [threading.Thread(target=guarded(f)) for f in (loader, executor)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.stderr = sys.__stderr__
    return {
        "scenario": "two-threads",
        "module": module,
        "sink": sink,
        "detached": detached,
        "iterations": iterations,
        "seconds": round(time.monotonic() - start, 3),
        "lines_delivered": stderr.text().count("\n"),
        "errors": errors,
    }


def daemon_exit(sink: str, replaced: bool, destination: str = "stderr", threads: int = 4) -> None:
    """Daemon threads keep logging inside calls while the main thread exits.
    Prints nothing: the exit status says whether the process crashed."""
    pylogsink.runtime.set_sink(sink)
    if destination == "logging":
        # Records start with "[", as on stderr, for the test to tell them apart.
        logging.basicConfig(level=logging.INFO, format="[%(levelname)s %(name)s] %(message)s")
        pylogsink.runtime.set_log_destination("logging")
    if replaced:
        # A writer that hands the GIL away, as a real stream does.
        sys.stderr = SlowStderr(delay=0.0001)  # type: ignore[assignment]

    def worker() -> None:
        # Calls that hold the GIL and calls that release it, in turn: the
        # latter are handed over live, and both at their return.
        detach = False
        while True:
            pylogsink.runtime.log_lines(10, size=100, detach=detach)
            detach = not detach

    for _ in range(threads):
        threading.Thread(target=worker, daemon=True).start()
    time.sleep(0.05)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="scenario", required=True)
    two = sub.add_parser("two-threads", help=two_threads.__doc__)
    two.add_argument("--sink", choices=["pylogsink", "naive"], default="pylogsink")
    two.add_argument("--iterations", type=int, default=100)
    two.add_argument("--detached", action="store_true", help="release the GIL before the lock")
    two.add_argument("--module", default="pylogsink", help="the runtime module (default: the demo's)")
    exit_ = sub.add_parser("daemon-exit", help=daemon_exit.__doc__)
    exit_.add_argument("--sink", choices=["pylogsink", "naive"], default="pylogsink")
    exit_.add_argument("--replaced", action="store_true", help="replace sys.stderr first")
    exit_.add_argument("--destination", choices=["stderr", "logging"], default="stderr")
    args = parser.parse_args(argv)
    if args.scenario == "daemon-exit":
        daemon_exit(args.sink, args.replaced, args.destination)
        return 0
    result = two_threads(args.sink, args.iterations, args.detached, args.module)
    print(json.dumps(result), flush=True)
    return 0 if not result["errors"] else 1


if __name__ == "__main__":
    sys.exit(main())
