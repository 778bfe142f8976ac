"""fork(): a child never hangs on a lock another thread held, and never
delivers the parent's records.

``fork()`` copies only the forking thread. With native threads logging
while the process forks (multiprocessing's default start method on Linux
before 3.14, PyTorch's DataLoader, gunicorn), a pylogsink lock one of them
held would stay held forever in the child. Every scenario runs in a
subprocess with a timeout: a child that hangs is killed and counted.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

# The scenarios import fork_helpers from there. From 3.12 on, os.fork() in a
# process with threads warns on sys.stderr; with fd 2 a full pipe that
# warning would block the scenario itself in Python's own write.
ENV = dict(
    os.environ,
    PYTHONPATH=os.path.join(os.path.dirname(__file__), "scripts"),
    PYTHONWARNINGS="ignore::DeprecationWarning",
)

# Windows has no fork(): multiprocessing starts its children with spawn
# only there, and the scenarios that fork are POSIX ones.
needs_fork = pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork() on Windows")
forkserver_forks = pytest.mark.skipif(not hasattr(os, "fork"), reason="no forkserver on Windows: it forks")
METHODS = [pytest.param("fork", marks=needs_fork), pytest.param("forkserver", marks=forkserver_forks), "spawn"]

FORKS = textwrap.dedent(
    """
    import os, sys, time
    import pylogsink
    from children import exit_code_within
    from fork_helpers import seen, to_logging

    destination, runs, child_budget = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    pylogsink.runtime.set_stall_wait(0.005)
    if destination == "logging":
        to_logging()
    busy = [pylogsink.runtime.start_background_logger(10**9) for _ in range(4)]
    hung = 0
    failed = 0
    for _ in range(runs):
        time.sleep(0.002)  # the busy threads run between forks
        pid = os.fork()
        if pid == 0:
            # The child: a call, a native thread of its own, then a normal
            # exit with its atexit handlers.
            try:
                if destination == "logging":
                    del seen[:]  # the parent's, copied with its memory
                pylogsink.runtime.log_lines(3)
                pylogsink.runtime.start_background_logger(3).join()
                pylogsink.runtime.noop_in_call()
                if destination == "logging":
                    # Its own thread's three records, and none that the
                    # parent's threads had waiting at the fork. Records
                    # logged outside a call reach logging through the
                    # child's delivery thread, a moment later.
                    background = lambda: [m for m in seen if m.startswith("background line")]
                    give_up = time.monotonic() + 2
                    while len(background()) < 3 and time.monotonic() < give_up:
                        time.sleep(0.005)
                    pylogsink.runtime.noop_in_call()
                    if len(background()) != 3:
                        os._exit(3)
            except BaseException:
                os._exit(2)
            sys.exit(0)
        code = exit_code_within(pid, child_budget)
        hung += code is None
        failed += code not in (None, 0)
    print(f"hung={hung} failed={failed}", flush=True)
    os._exit(0)
    """
)


def forks(destination: str, runs: int, *, full_pipe: bool) -> tuple[int, int]:
    """Forks ``runs`` children of a process whose 4 native threads log all
    the time; returns how many hung and how many exited with an error. With
    ``full_pipe``, fd 2 is a pipe nobody reads."""
    child = subprocess.Popen(
        [sys.executable, "-c", FORKS, destination, str(runs), "5"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE if full_pipe else subprocess.DEVNULL,
        env=ENV,
    )
    try:
        out, _ = child.communicate(timeout=150) if not full_pipe else (child.stdout.read(), None)  # type: ignore[union-attr]
        child.wait(timeout=150)
    finally:
        child.kill()
    text = out.decode()
    assert text.startswith("hung="), text
    hung, failed = (int(part.split("=")[1]) for part in text.split())
    return hung, failed


@needs_fork
@pytest.mark.timeout(180)
@pytest.mark.parametrize("destination", ["stderr", "logging"])
def test_children_of_a_busy_process_never_hang(destination: str) -> None:
    assert forks(destination, 100, full_pipe=False) == (0, 0)


@needs_fork
@pytest.mark.timeout(180)
@pytest.mark.parametrize("destination", ["stderr", "logging"])
def test_children_never_hang_when_fd2_is_a_full_pipe(destination: str) -> None:
    assert forks(destination, 10, full_pipe=True) == (0, 0)


MULTIPROCESSING = textwrap.dedent(
    """
    import multiprocessing, os, sys
    import pylogsink
    from fork_helpers import fan_out_in_a_child, to_logging

    destination, method = sys.argv[1], sys.argv[2]
    if __name__ == "__main__":
        if destination == "logging":
            to_logging()
        busy = [pylogsink.runtime.start_background_logger(10**9) for _ in range(4)]
        ctx = multiprocessing.get_context(method)
        results = ctx.Queue()
        procs = [ctx.Process(target=fan_out_in_a_child, args=(destination, results)) for _ in range(20)]
        for p in procs:
            p.start()
        codes = []
        for p in procs:
            p.join(60)
            if p.is_alive():
                p.kill()
                p.join()
            codes.append(p.exitcode)
        got = [results.get(timeout=5) for code in codes if code == 0]
        print(codes, got, flush=True)
        if sys.platform == "win32":
            # Under wine, _exit's ExitProcess may hang: it ends the busy
            # threads even inside a heap call, whose lock a DLL's detach
            # then waits for. TerminateProcess runs nothing, as _exit here.
            os.kill(os.getpid(), 9)
        os._exit(0)
    """
)


@pytest.mark.timeout(240)
@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("destination", ["stderr", "logging"])
def test_multiprocessing_children_all_exit_with_their_records(destination: str, method: str) -> None:
    # The parent's four native threads log all the time, and the children
    # log through native threads of their own. From 3.14, forkserver is
    # multiprocessing's default on Linux; fork was before.
    out = subprocess.run(
        [sys.executable, "-c", MULTIPROCESSING, destination, method],
        capture_output=True,
        text=True,
        timeout=200,
        env=ENV,
    )
    codes_text, _, got_text = out.stdout.partition("] ")
    codes = eval(codes_text + "]")  # a list of ints and Nones printed by the child
    got = eval(got_text)
    assert codes == [0] * 20, out.stderr[-2000:]
    assert len(got) == 20
    if destination == "logging":
        # Each child handled its own 100 records, and none of the parent's.
        assert got == [(100, 0)] * 20
    else:
        # Each child's 100 lines on the fd 2 it shares with the parent.
        assert sum(1 for r in out.stderr.splitlines() if re.search(r"\] worker \d line \d+$", r)) == 20 * 100


STREAM_FORKS = textwrap.dedent(
    """
    import logging, os, sys, threading, time
    import pylogsink
    from children import exit_code_within

    # A StreamHandler on a file: pylogsink's thread takes the file's
    # buffer lock in each record's write and flush.
    logging.basicConfig(stream=open(sys.argv[1], "w"), level=logging.INFO)
    if sys.argv[2] == "native":
        pylogsink.runtime.set_log_destination("logging")
        busy = [pylogsink.runtime.start_background_logger(10**9) for _ in range(4)]
    else:
        # Plain Python: threads of the program's own in the same write.
        def chatter():
            while True:
                logging.getLogger("thread").info("background line")

        for _ in range(4):
            threading.Thread(target=chatter, daemon=True).start()
    time.sleep(0.2)
    hung = 0
    for _ in range(int(sys.argv[3])):
        time.sleep(0.005)
        pid = os.fork()
        if pid == 0:
            logging.getLogger("child").warning("the child logs")
            os._exit(0)
        hung += exit_code_within(pid, 5) is None
        if hung and sys.argv[2] == "python":
            break  # shown: one is enough
    print(f"hung={hung}", flush=True)
    os._exit(0)
    """
)


def stream_forks(threads: str, path: Path, forks: int = 20) -> str:
    """Forks ``forks`` children while ``threads`` ("native", through
    pylogsink's thread, or "python", which stops at the first that hangs)
    log to a ``StreamHandler`` on ``path``; each child logs once. Says how
    many hung."""
    out = subprocess.run(
        [sys.executable, "-c", STREAM_FORKS, str(path), threads, str(forks)],
        capture_output=True,
        text=True,
        timeout=150,
        env=ENV,
    )
    assert out.stdout.startswith("hung="), out.stderr[-2000:]
    return out.stdout.strip()


@needs_fork
@pytest.mark.timeout(180)
def test_children_never_hang_on_a_stream_lock_pylogsinks_thread_held(tmp_path: Path) -> None:
    # Before each fork pylogsink's thread finishes the record in hand and
    # holds off, so no child inherits the file's buffer lock taken (16 of
    # 20 children hung before it did).
    assert stream_forks("native", tmp_path / "log") == "hung=0"


@pytest.mark.naive
@needs_fork
@pytest.mark.timeout(180)
def test_children_hang_on_a_stream_lock_a_python_thread_held(tmp_path: Path) -> None:
    # The trap itself, in plain Python: Python does not reset a buffered
    # file's lock in the child. A child hangs when the fork came while a
    # thread was in the file's write(2), holding that lock with the GIL
    # released: on CPython 3.13, 2 cores, 400 of 1,100 children hung (2 to
    # 11 in each run of 20, with two busy processes beside or not), yet a
    # run of 20 once had none on 3.11. So up to 500 forks, until one hangs
    # (10 to 25 ms each when none does): even at 0.02 a fork, 0.98**500 <
    # 1e-4.
    assert stream_forks("python", tmp_path / "log", forks=500) == "hung=1"


LEFTOVERS = textwrap.dedent(
    """
    import io, json, logging, os, sys, threading, time
    import pylogsink
    from pylogsink._pylogsink import fork_leftovers

    class Slow(io.TextIOBase):
        # A replaced stream whose write takes a while: pylogsink's thread
        # is inside a hand-over most of the time.
        def writable(self):
            return True
        def write(self, text):
            time.sleep(0.001)
            return len(text)

    logging.basicConfig(stream=Slow(), level=logging.INFO)
    pylogsink.runtime.set_log_destination("logging")
    busy = [pylogsink.runtime.start_background_logger(10**9) for _ in range(2)]
    stop = threading.Event()

    def writer():
        while not stop.is_set():
            os.write(1, b"native output\\n" * 20)  # the GIL released
            time.sleep(0.001)

    def caller():
        while not stop.is_set():
            pylogsink.runtime.log_lines(20)

    read, write = os.pipe()
    sys.stdout = Slow()
    with pylogsink.capture_output():
        threads = [threading.Thread(target=f) for f in (writer, caller)]
        for thread in threads:
            thread.start()
        for _ in range(20):
            time.sleep(0.01)
            pid = os.fork()
            if pid == 0:
                left = [name for name, here in fork_leftovers() if here]
                os.write(write, (json.dumps(left) + "\\n").encode())
                os._exit(0)
            os.waitpid(pid, 0)
        # The parent had them: the test can fail.
        parent = [name for name, here in fork_leftovers() if here]
        stop.set()
        for thread in threads:
            thread.join()
    os.close(write)
    with os.fdopen(read) as children:
        result = {"children": [json.loads(line) for line in children], "parent": parent}
    print(json.dumps(result), file=sys.__stdout__, flush=True)
    os._exit(0)
    """
)


@needs_fork
@pytest.mark.timeout(120)
def test_a_child_starts_without_the_parents_flags_and_buffers() -> None:
    # Forked while pylogsink's thread hands captured output and records to
    # Python, a call keeps lines and native threads log: each child starts
    # with every one of fork_leftovers() clear.
    out = subprocess.run([sys.executable, "-c", LEFTOVERS], capture_output=True, text=True, timeout=100, env=ENV)
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout.splitlines()[-1])
    assert got["children"] == [[]] * 20
    assert "output capture on" in got["parent"]


WORKER_EXIT = textwrap.dedent(
    """
    import multiprocessing, sys
    import pylogsink
    from fork_helpers import log_then_return

    destination, method, folder = sys.argv[1:]
    if __name__ == "__main__":
        if destination == "logging":
            pylogsink.runtime.set_log_destination("logging")
        ctx = multiprocessing.get_context(method)
        paths = [f"{folder}/worker-{i}.log" for i in range(10)]
        procs = [ctx.Process(target=log_then_return, args=(destination, path)) for path in paths]
        for p in procs:
            p.start()
        for p in procs:
            p.join(60)
        print([p.exitcode for p in procs])
    """
)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("destination", ["stderr", "logging"])
def test_multiprocessing_workers_deliver_what_their_native_threads_logged_last(
    destination: str, method: str, tmp_path: Path
) -> None:
    # multiprocessing ends fork and forkserver workers with os._exit, which
    # runs no atexit function: pylogsink delivers at its finalizers instead.
    out = subprocess.run(
        [sys.executable, "-c", WORKER_EXIT, destination, method, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=100,
        env=ENV,
    )
    assert out.stdout.strip() == str([0] * 10), out.stderr[-2000:]
    got = [sum("background line" in line for line in (tmp_path / f"worker-{i}.log").read_text().splitlines()) for i in range(10)]
    assert got == [5] * 10


@needs_fork
def test_the_child_gets_nothing_the_parent_had_waiting() -> None:
    """A record the parent had queued for ``logging`` is delivered by the
    parent only: the child starts with empty queues."""
    code = textwrap.dedent(
        """
        import os, sys, time
        import pylogsink
        from fork_helpers import seen, to_logging

        to_logging()
        # This thread keeps the GIL (no switch for 100 s, no blocking call),
        # so the five records still wait, undelivered, when it forks.
        sys.setswitchinterval(100)
        # Counted before the logger starts: it needs no GIL, and may be
        # done before the next line runs.
        before = pylogsink.runtime.log_stats()["emitted"]
        pylogsink.runtime.start_background_logger(5)
        while pylogsink.runtime.log_stats()["emitted"] < before + 5:
            pass
        pid = os.fork()
        if pid == 0:
            sys.setswitchinterval(0.005)
            del seen[:]
            pylogsink.runtime.noop_in_call()
            os._exit(10 + len([m for m in seen if m.startswith("background line")]))
        sys.setswitchinterval(0.005)
        _, status = os.waitpid(pid, 0)
        background = lambda: [m for m in seen if m.startswith("background line")]
        give_up = time.monotonic() + 5
        while len(background()) < 5 and time.monotonic() < give_up:
            pylogsink.runtime.noop_in_call()
            time.sleep(0.005)
        print(os.waitstatus_to_exitcode(status), len(background()))
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=ENV)
    child_code, parent_count = out.stdout.split()
    assert int(child_code) == 10, "the child delivered none of the parent's records"
    assert int(parent_count) == 5, "the parent delivered its own five"


@needs_fork
def test_a_child_delivers_its_native_threads_records_with_no_call_made() -> None:
    """The child's own delivery thread starts: records its native threads
    log outside any call reach ``logging`` with no call made."""
    code = textwrap.dedent(
        """
        import os, time
        import pylogsink
        from fork_helpers import seen, to_logging

        to_logging()
        pylogsink.runtime.noop_in_call()
        pid = os.fork()
        if pid == 0:
            del seen[:]
            pylogsink.runtime.start_background_logger(3).join()
            deadline = time.monotonic() + 5
            while len(seen) < 3 and time.monotonic() < deadline:
                time.sleep(0.01)  # no call is made meanwhile
            os._exit(10 + len(seen))
        _, status = os.waitpid(pid, 0)
        print(os.waitstatus_to_exitcode(status))
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=ENV)
    assert out.stdout.split() == ["13"], out.stderr
