"""fd 2 that cannot take more (fd.rs, sink.rs): a pipe drained by a Python
thread (wurlitzer), a terminal nobody reads, a pipe with no reader for a
while, a closed pipe, and many threads writing at once."""

from __future__ import annotations

import json
import os
import re
import select
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from conftest import SEGFAULT, popen, python, read_line_within, records

if sys.platform != "win32":
    import pty

# wurlitzer points fd 1 and fd 2 at POSIX pipes (fcntl); a pty is POSIX.
needs_wurlitzer = pytest.mark.skipif(sys.platform == "win32", reason="wurlitzer is POSIX only (fcntl, pipes on fd 2)")
needs_pty = pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")
# A process started with fd 2 closed: sh's 2>&-; on Windows a closed fd 2 is
# a missing handle, whose pieces fail (counted) whatever the program opens.
needs_closed_fd2 = pytest.mark.skipif(sys.platform == "win32", reason="2>&- is sh's: a closed fd 2 is POSIX's")

NOTE = re.compile(r"^\[pylogsink\] (\d+) lines? \((\d+) bytes\) left out here")


def account(text: str, count: int) -> tuple[list[int], int]:
    """The line numbers that arrived, in order, and the lines the notes say
    were left out. Fails on a torn or malformed record."""
    numbers: list[int] = []
    left_out = 0
    for line in text.splitlines():
        note = NOTE.match(line)
        if note:
            left_out += int(note.group(1))
            continue
        if line.startswith("[20"):
            m = re.fullmatch(r"\[[0-9T:.Z-]+ \w+ +_pylogsink::runtime runtime\.rs:\d+\] line (\d{7}) of (\d+)\.*", line)
            assert m, f"malformed record: {line!r}"
            assert int(m.group(2)) == count
            numbers.append(int(m.group(1)))
    return numbers, left_out


def assert_whole(text: str, count: int) -> list[int]:
    """Every line logged arrived once, in order, or is counted in a note."""
    numbers, left_out = account(text, count)
    assert numbers == sorted(set(numbers)), "lines out of order or repeated"
    assert len(numbers) + left_out == count, (len(numbers), left_out)
    assert numbers[-1] == count - 1, "the newest line arrived"
    return numbers


WURLITZER = """
import sys, time, wurlitzer, pylogsink
pylogsink.runtime.set_sink(sys.argv[1])
start = time.monotonic()
# 64 KiB: the size of a default Linux pipe, as in Jupyter.
with wurlitzer.pipes(bufsize=65536) as (out, err):
    pylogsink.runtime.log_lines(2622, size=100)  # 256 KiB in one call
took = time.monotonic() - start
sys.stdout.write(err.read())
print("took", took)
"""


@needs_wurlitzer
def test_wurlitzer_pipe_gets_every_line_or_a_note() -> None:
    done = subprocess.run([sys.executable, "-c", WURLITZER, "pylogsink"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    numbers = assert_whole(done.stdout, 2622)
    # The first lines went straight into the pipe until it was full.
    assert numbers[0] == 0


@pytest.mark.naive
@needs_wurlitzer
def test_wurlitzer_hangs_a_blocking_fd2_write() -> None:
    # Proves the test above is real: a plain write(2) with the GIL held
    # waits for a reader that needs the GIL.
    with pytest.raises(subprocess.TimeoutExpired):
        subprocess.run([sys.executable, "-c", WURLITZER, "fd2"], capture_output=True, timeout=5)


def read_available(fd: int, wait: float) -> bytes:
    out = b""
    while True:
        ready, _, _ = select.select([fd], [], [], wait)
        if not ready:
            return out
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # EIO: the terminal's other side closed
            return out
        if not chunk:
            return out
        out += chunk


@needs_pty
def test_busy_terminal_returns_then_delivers() -> None:
    master, slave = pty.openpty()
    child = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent("""
            import sys, time, pylogsink
            start = time.monotonic()
            pylogsink.runtime.log_lines(3000, size=100)
            print("returned after", time.monotonic() - start, flush=True)
            sys.stdin.readline()  # the reader is back
            pylogsink.runtime.log_lines(0)  # the next call writes what waits
            """)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=slave,
        text=True,
        # Routing, not color, is under test here (test_color.py has color).
        env={**os.environ, "NO_COLOR": "1"},
    )
    os.close(slave)
    try:
        assert child.stdout is not None and child.stdin is not None
        # Nobody reads the terminal, yet the call returns in bounded time.
        ready, _, _ = select.select([child.stdout], [], [], 20)
        assert ready, "the call did not return while the terminal was not read"
        took = float(child.stdout.readline().split()[-1])
        assert took < 5, took
        got = read_available(master, 0.5)
        child.stdin.write("go\n")
        child.stdin.flush()
        got += read_available(master, 2)
        assert child.wait(timeout=20) == 0
    finally:
        child.kill()
        os.close(master)
    text = got.decode().replace("\r\n", "\n")
    assert_whole(text, 3000)


def test_pipe_without_reader_for_a_while() -> None:
    child = popen(
        """
        import time, pylogsink
        start = time.monotonic()
        pylogsink.runtime.log_lines(3000, size=100)
        print("took", time.monotonic() - start, flush=True)
        time.sleep(3)  # the reader is back by now
        pylogsink.runtime.log_lines(0)  # the next call's return writes what waits
        """
    )
    time.sleep(2)  # nobody reads fd 2 for a while
    out, err = child.communicate(timeout=30)
    assert child.returncode == 0, err
    assert float(out.split()[-1]) < 5
    assert_whole(err.decode(), 3000)


def log_into_a_pipe_nobody_reads(lines: int) -> subprocess.Popen[bytes]:
    """A child whose fd 2 is a pipe this process does not read: it logs
    `lines` 100-byte lines in one call that holds the GIL, then prints how
    long the call took ("took SECONDS")."""
    return popen(
        f"""
        import time, pylogsink
        start = time.monotonic()
        pylogsink.runtime.log_lines({lines}, size=100)
        print("took", time.monotonic() - start, flush=True)
        """
    )


def test_a_pipe_nobody_reads_hangs_neither_the_call_nor_the_exit() -> None:
    # fd 2 is a pipe that nobody reads while the child runs: 300 KB, more
    # than a pipe holds, logged in one call that holds the GIL. A line
    # waits for room at most the stall wait (100 ms), and once one found
    # none the call's later lines are kept: the call returns well within
    # 3000 stall waits, and the exit, whose flush gives up too, ends the
    # process. A blocking write would wait for a reader forever.
    child = log_into_a_pipe_nobody_reads(3000)
    try:
        assert child.stdout is not None and child.stderr is not None
        took = read_line_within(child.stdout, 60)
        assert took, "the call did not return within 60 s"
        assert float(took.split()[-1]) < 5
        assert child.wait(timeout=30) == 0
        numbers, _ = account(child.stderr.read().decode(), 3000)
        assert numbers and numbers == sorted(set(numbers)), "lines out of order or repeated"
    finally:
        child.kill()
        child.wait()


def test_a_pipe_nobody_reads_costs_each_line_of_a_long_call_one_line() -> None:
    # 200,000 lines (20 MB) in one call into a pipe nobody reads: once fd 2
    # stalled, each line asks for room with the oldest kept line alone,
    # never by taking out and putting back the megabytes the call keeps
    # (which made each line cost the budget: 20,000 lines took 18 s).
    # On Windows a question for room is a write handed to pylogsink's
    # writer thread and cancelled (half a millisecond under wine): for 5 ms
    # after one found no room, the next lines are kept without asking.
    child = log_into_a_pipe_nobody_reads(200_000)
    try:
        assert child.stdout is not None
        took = read_line_within(child.stdout, 60)
        assert took, "the call did not return within 60 s"
        assert float(took.split()[-1]) < (10 if sys.platform == "win32" else 5), took
    finally:
        child.kill()
        child.wait()


def test_lines_queued_at_exit_go_out_when_the_reader_returns_soon() -> None:
    child = popen("import pylogsink; pylogsink.runtime.log_lines(3000, size=100)")
    time.sleep(0.5)  # the process exits while nobody reads fd 2
    out, err = child.communicate(timeout=30)
    assert child.returncode == 0, err
    assert_whole(err.decode(), 3000)


def test_after_a_stall_direct_writes_resume() -> None:
    # The reader pauses, then reads again while the call still runs: the
    # kept lines go out first and later lines are written at once, so
    # nothing is left out and lines arrive long before the call returns.
    child = popen(
        """
        import sys, time, pylogsink
        def body():
            for _ in range(3000):
                pylogsink.runtime.log_lines(1, size=100)
                time.sleep(0.001)
        pylogsink.runtime.with_callback(body)
        print("RETURNED", file=sys.stderr, flush=True)
        """
    )
    assert child.stderr is not None
    time.sleep(1.0)
    text = b""
    half_at = returned_at = None
    while True:
        chunk = child.stderr.read1(65536)  # type: ignore[attr-defined]
        if not chunk:
            break
        text += chunk
        if half_at is None and text.count(b"] line 0000000 of 1.") >= 1500:
            half_at = time.monotonic()
        if b"RETURNED" in chunk:
            returned_at = time.monotonic()
    assert child.wait(timeout=30) == 0
    decoded = text.decode()
    assert "left out" not in decoded
    assert decoded.count("] line 0000000 of 1.") == 3000
    assert half_at is not None and returned_at is not None
    # Without resumption every line after the stall would wait for the return.
    assert returned_at - half_at > 0.5, (returned_at - half_at)


def test_closed_pipe_neither_hangs_nor_crashes() -> None:
    read, write = os.pipe()
    os.close(read)
    done = subprocess.run(
        [sys.executable, "-c", "import json, pylogsink; pylogsink.runtime.log_lines(1000); print(json.dumps(pylogsink.runtime.log_stats()))"],
        stderr=write,
        stdout=subprocess.PIPE,
        text=True,
        timeout=30,
    )
    os.close(write)
    assert done.returncode == 0
    stats = json.loads(done.stdout.replace("'", '"'))
    assert stats["failed_bytes"] >= 1000 * 100


def test_threads_write_whole_lines() -> None:
    done = python(
        """
        import threading, pylogsink
        sizes = [100, 1000, 4000, 4096, 300, 2000, 4096, 150]
        threads = [threading.Thread(target=pylogsink.runtime.log_lines, args=(500,), kwargs={"size": s, "detach": True}) for s in sizes]
        for t in threads: t.start()
        for t in threads: t.join()
        """
    )
    assert done.returncode == 0
    lines = done.stderr.splitlines()
    assert len(lines) == 8 * 500
    for line in lines:
        assert re.fullmatch(r"\[[0-9T:.Z-]+ INFO  _pylogsink::runtime runtime\.rs:\d+\] line \d{7} of 500\.*", line), line[:120]
    sizes = sorted(len(line) + 1 for line in lines)
    assert sorted(set(sizes)) == [100, 150, 300, 1000, 2000, 4000, 4096]


SOCKET_SIZES = (100, 1500, 4000, 3000)


@pytest.mark.skipif(sys.platform == "win32", reason="a socket as fd 2 is POSIX's (journald's stream, a TCP log collector)")
def test_a_socket_read_slowly_gets_every_line_whole_and_in_order() -> None:
    """fd 2 a TCP socket with a small send buffer, read a little at a time:
    a stream socket takes part of a line where part fits, so lines go out
    in parts and calls stall and keep lines; four calls one after another.
    Every line arrives once, whole and in order (a stalled call's kept
    lines once wrote before the rest of a line the queue held, which tore
    it)."""
    import socket

    server = socket.create_server(("127.0.0.1", 0))
    child_end = socket.create_connection(server.getsockname())
    reader, _ = server.accept()
    server.close()
    child_end.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    reader.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    code = f"import pylogsink\nfor size in {SOCKET_SIZES}:\n    pylogsink.runtime.log_lines(60, size=size)"
    proc = subprocess.Popen([sys.executable, "-c", code], stderr=child_end.fileno(), stdout=subprocess.DEVNULL)
    child_end.close()
    data = bytearray()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        chunk = reader.recv(3000)
        if not chunk:
            break
        data += chunk
        time.sleep(0.0005)
    reader.close()
    assert proc.wait(timeout=10) == 0
    text = data.decode()
    assert len(data) == 60 * sum(SOCKET_SIZES), "every byte arrived"
    calls = re.split(r"(?m)^(?=\[\S+ INFO  _pylogsink::runtime runtime\.rs:\d+\] line 0000000 of)", text)[1:]
    assert len(calls) == len(SOCKET_SIZES)
    for size, lines in zip(SOCKET_SIZES, calls):
        assert assert_whole(lines, 60) == list(range(60)), size
        assert {len(line) + 1 for line in lines.splitlines()} == {size}


# fd 2 closed when the process starts (a daemon's `2>&-`), then taken by
# the program's data file: its next open(), before pylogsink's import or
# after it. Lines from a call and from a native thread outside any call:
# none may reach the data file. A deliberate dup2 onto fd 2 afterwards is
# followed. LOGGED is what it logs while the file holds fd 2.
LOGGED = "pylogsink.runtime.log_lines(200)\npylogsink.runtime.start_background_logger(200).join()"
CLOSED_FD2 = """
import os, sys, time
path, logged_bytes = sys.argv[1], int(sys.argv[2])
{open_before}
import pylogsink
{open_after}
assert data.fileno() == 2, data.fileno()
{logged}
data.write("the program's data\\n")
data.flush()
# The thread's lines outside any call may wait for pylogsink's Python
# thread a moment (CPython 3.11): until they are refused too, at most 10 s.
deadline = time.monotonic() + 10
while pylogsink.runtime.log_stats()["failed_bytes"] < logged_bytes and time.monotonic() < deadline:
    time.sleep(0.01)
failed = pylogsink.runtime.log_stats()["failed_bytes"]
data.close()
# Deliberately onto fd 2 now: a pipe to this process's stdout.
os.dup2(1, 2)
pylogsink.runtime.log_lines(3)
print("failed", failed, flush=True)
"""


@needs_closed_fd2
@pytest.mark.parametrize("when", ["open before import", "open after import"])
def test_fd2_closed_at_start_and_taken_by_a_file_gets_no_lines(when: str, tmp_path: Path) -> None:
    data = tmp_path / "data.txt"
    before = when == "open before import"
    opener = 'data = open(path, "w")'
    code = CLOSED_FD2.format(open_before=opener if before else "", open_after="" if before else opener, logged=LOGGED)
    # The bytes of those 400 lines, from an fd 2 that takes them.
    control = subprocess.run([sys.executable, "-c", "import pylogsink\n" + LOGGED], capture_output=True, timeout=60)
    assert control.stderr.count(b"\n") == 400, control.stderr[-2000:]
    done = run_with_fd2_closed(code, data, str(len(control.stderr)))
    assert done.returncode == 0, done.stdout + done.stderr
    assert data.read_text() == "the program's data\n"
    [failed] = [int(line.split()[1]) for line in done.stdout.splitlines() if line.startswith("failed ")]
    after = records(done.stdout)
    # The three lines after the dup2 reached fd 2, now the stdout pipe, and
    # nothing else: the 400 before were refused, each byte counted. (The
    # wait was for 400 x 80 bytes once, which the 200 call lines of 100 B
    # and a part of the thread's passed: the rest reached the pipe.)
    assert [r.split("] ", 1)[1][:17] for r in after] == ["line 0000000 of 3", "line 0000001 of 3", "line 0000002 of 3"]
    assert failed == len(control.stderr), (failed, len(control.stderr))


@needs_closed_fd2
def test_plain_python_writes_nothing_to_a_file_that_took_the_closed_fd2(tmp_path: Path) -> None:
    # What plain Python does there: sys.stderr is None, and logging's last
    # resort writes nowhere.
    data = tmp_path / "data.txt"
    code = textwrap.dedent(
        """
        import logging, sys
        data = open(sys.argv[1], "w")
        assert data.fileno() == 2 and sys.stderr is None
        for i in range(400):
            logging.warning("line %d", i)
        data.write("the program's data\\n")
        """
    )
    done = run_with_fd2_closed(code, data)
    assert done.returncode == 0, done.stderr
    assert data.read_text() == "the program's data\n"


def run_with_fd2_closed(code: str, data: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Runs `code` in a fresh interpreter started with fd 2 closed, its
    argv[1] the path of the data file, then `args`."""
    return subprocess.run(
        ["sh", "-c", 'exec "$0" -c "$@" 2>&-', sys.executable, textwrap.dedent(code), str(data), *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


@needs_closed_fd2
def test_a_crash_writes_no_kept_line_into_a_file_that_took_the_closed_fd2(tmp_path: Path) -> None:
    data = tmp_path / "data.txt"
    code = """
        import contextlib, io, sys, pylogsink
        data = open(sys.argv[1], "w")
        with contextlib.redirect_stderr(io.StringIO()):
            pylogsink.runtime.crash("segv")
        """
    done = run_with_fd2_closed(code, data)
    assert done.returncode == SEGFAULT, done.stdout
    assert data.read_text() == ""
