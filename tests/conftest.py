"""Helpers shared by the tests: running Python snippets in a subprocess.

Scenarios that must show a hang, or that need the process's own
``sys.stderr`` (pytest replaces it inside a test), run in a subprocess of
the same interpreter, with a timeout.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import IO, Any, TypeVar

import pytest

T = TypeVar("T")

if sys.platform == "win32":
    # Under wine on a loaded machine, CreateProcess now and then fails with
    # ERROR_INTERNAL_ERROR (1359) before the child exists: one more try, so
    # that wine's failure to start a child is not read as pylogsink's.
    _start_child = subprocess.Popen._execute_child  # type: ignore[attr-defined]

    def _execute_child_again_after_wines_1359(self: subprocess.Popen[Any], *args: Any) -> None:
        try:
            _start_child(self, *args)
        except OSError as err:
            if getattr(err, "winerror", None) != 1359:
                raise
            time.sleep(0.5)
            _start_child(self, *args)

    subprocess.Popen._execute_child = _execute_child_again_after_wines_1359  # type: ignore[attr-defined]

# How a child that crashed ends, as subprocess tells it: killed by the
# signal on Linux; on Windows with the exception's code for an access
# violation (a segfault), with status 3 for abort() (the C runtime raises
# SIGABRT, then exits with 3), and with STATUS_CONTROL_C_EXIT where Python
# ends on a KeyboardInterrupt (Ctrl-C).
if sys.platform == "win32":
    SEGFAULT, ABORTED, INTERRUPTED = 0xC0000005, 3, 0xC000013A
else:
    SEGFAULT, ABORTED, INTERRUPTED = -signal.SIGSEGV, -signal.SIGABRT, -signal.SIGINT

# Child code for Windows, where no signal comes from another process:
# alarm(signum, seconds) raises signum in the child once, from a timer
# thread, through the C runtime whose handlers Python's signal module sets
# (the UCRT), as a console's Ctrl-C handler would; Python's handler then
# runs in the main thread at its next check, as after a signal elsewhere.
WINDOWS_ALARM = """
def alarm(signum, seconds):
    import ctypes
    from ctypes import wintypes
    kernel32 = ctypes.WinDLL("kernel32")
    kernel32.CreateTimerQueueTimer.argtypes = [
        ctypes.POINTER(wintypes.HANDLE), wintypes.HANDLE, ctypes.c_void_p, ctypes.c_void_p,
        wintypes.DWORD, wintypes.DWORD, wintypes.ULONG,
    ]
    timer = wintypes.HANDLE()
    raise_signal = ctypes.cast(ctypes.CDLL("ucrtbase")["raise"], ctypes.c_void_p)
    WT_EXECUTEONLYONCE = 8
    assert kernel32.CreateTimerQueueTimer(
        ctypes.byref(timer), None, raise_signal, signum, round(seconds * 1000), 0, WT_EXECUTEONLYONCE
    )
"""


def python(code: str, timeout: float = 60, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    """Runs ``code`` in a fresh interpreter; raises TimeoutExpired on a hang."""
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=timeout,
        **kwargs,
    )


def child_pytest(test: Path, *args: str, timeout: float = 120, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    """Runs pytest on the file ``test``, with ``args``, in a fresh
    interpreter; raises TimeoutExpired on a hang."""
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args, str(test)],
        capture_output=True,
        text=True,
        timeout=timeout,
        **kwargs,
    )


def kernel_result(stdout: str) -> dict[str, Any]:
    """The result a script of tests/scripts that drives a Jupyter kernel
    printed (cell_streams.print_result): the last marked line, whatever the
    kernel echoed around it."""
    sys.path.insert(0, str(Path(__file__).parent / "scripts"))
    try:
        from cell_streams import RESULT
    finally:
        sys.path.pop(0)
    marked = [line[len(RESULT) :] for line in stdout.splitlines() if line.startswith(RESULT)]
    assert marked, f"no result line in the script's stdout: {stdout[-500:]!r}"
    result: dict[str, Any] = json.loads(marked[-1])
    return result


def popen(code: str, **kwargs: Any) -> subprocess.Popen[bytes]:
    """Starts ``code`` in a fresh interpreter with stdout and stderr piped."""
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        **kwargs,
    )


def lines_while_running(code: str, count: int, **kwargs: Any) -> list[str]:
    """Starts ``code`` in a fresh interpreter, reads the first ``count``
    lines of its stderr (within 20 s), checks that it is still running (a
    call that hangs once it has logged), and kills it."""
    child = popen(code, **kwargs)
    try:
        assert child.stderr is not None
        got: list[str] = []
        deadline = time.monotonic() + 20
        while len(got) < count and time.monotonic() < deadline:
            line = child.stderr.readline().decode()
            if not line:
                break
            got.append(line)
        assert child.poll() is None, "the call is still running"
        return got
    finally:
        child.kill()
        child.wait()


def wait_until(predicate: Callable[[], T], timeout: float = 10, what: str = "") -> T:
    """Polls ``predicate`` until it returns something true, and returns it;
    fails the test if that takes more than ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"not within {timeout} s: {what or predicate}")
        time.sleep(0.01)


def records(text: str) -> list[str]:
    """The records in ``text``: lines that start a pylogsink record."""
    return [line for line in text.splitlines() if line.startswith("[") and "Z " in line[:40]]


# The tests' C and C++ extensions are built with setuptools and gcc, against
# the library in the wheel; on Windows that takes MSVC, which the Windows
# lane (scripts/test_windows.sh) has not.
# The start of a child that counts the records Python's logging handles
# (Count.n), with pylogsink.runtime's records sent there (rt).
COUNT_RECORDS = """
import json, logging, time, pylogsink
rt = pylogsink.runtime
class Count(logging.Handler):
    n = 0
    def emit(self, record):
        Count.n += 1
logging.getLogger().addHandler(Count())
logging.getLogger().setLevel(logging.INFO)
rt.set_log_destination("logging")
"""

# A small budget for the tests of what happens past it: a few thousand
# lines overflow it, where the defaults (4 MiB of lines, 50,000 records
# within 16 MiB) hold bursts of tens of thousands. For a child, through the
# users' variable; in this process, through set_log_budget (small_budget).
SMALL_BUDGET = {"lines": 64 * 1024, "records": 10_000, "record_bytes": 4 << 20}
SMALL_BUDGET_ENV = {"PYLOGSINK_BUDGET": "lines=64KiB,records=10000,record_bytes=4MiB"}


@pytest.fixture
def small_budget() -> Iterator[None]:
    """pylogsink.runtime's budget made SMALL_BUDGET for the test."""
    import pylogsink.runtime

    before = pylogsink.runtime.log_budget()
    pylogsink.runtime.set_log_budget(**SMALL_BUDGET)
    try:
        yield
    finally:
        pylogsink.runtime.set_log_budget(**before)


NO_C_COMPILER_ON_WINDOWS = "the test's C and C++ extensions need a C compiler for Windows (MSVC)"


def require_debian_dev(pkg_config_name: str, package: str) -> None:
    """Skips the calling test module when pkg-config does not find
    ``pkg_config_name`` (Debian's ``package``, installed by .ci/run)."""
    if sys.platform == "win32":
        pytest.skip(f"{package} is Debian's, and {NO_C_COMPILER_ON_WINDOWS}", allow_module_level=True)
    if shutil.which("pkg-config") is None:
        pytest.skip(f"pkg-config is not installed, so {package} cannot be found", allow_module_level=True)
    if subprocess.run(["pkg-config", "--exists", pkg_config_name], capture_output=True).returncode != 0:
        pytest.skip(f"{package} is not installed (pkg-config finds no {pkg_config_name})", allow_module_level=True)


def build_extension(sources: Path, out: Path) -> Path:
    """Copies the files of ``sources`` (a setup.py and its sources) into
    ``out`` and builds the extension there, as its authors would, against
    the installed pylogsink; fails the test with the compiler's output."""
    for source in sources.iterdir():
        if source.is_file():
            shutil.copy(source, out)
    done = subprocess.run(
        [sys.executable, "setup.py", "-q", "build_ext", "--inplace"],
        cwd=out,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return out


def compile_without_python(tmp_path: Path, source: str, flags: Sequence[str] = ()) -> subprocess.CompletedProcess[str]:
    """Compiles ``source``, a runtime's own C++ file, as ``runtime.cpp`` in
    ``tmp_path`` with g++, pylogsink's include directory and ``flags``, and
    no Python include directory (none from CPATH either)."""
    import pylogsink

    (tmp_path / "runtime.cpp").write_text(textwrap.dedent(source))
    env = {k: v for k, v in os.environ.items() if k not in ("CPATH", "CPLUS_INCLUDE_PATH")}
    return subprocess.run(
        ["g++", "-std=c++11", "-Wall", "-Wextra", "-Werror", *flags, f"-I{pylogsink.get_include()}"]
        + ["-c", "runtime.cpp"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def import_built(built: Path, name: str) -> ModuleType:
    """The module ``name`` that :func:`build_extension` built in ``built``."""
    sys.path.insert(0, str(built))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(built))


@pytest.fixture
def clean_env() -> dict[str, str]:
    """The environment without pytest's markers, for child processes."""
    env = dict(os.environ)
    env.pop("PYTEST_CURRENT_TEST", None)
    return env


# One write per response, so that no small segment waits for a delayed ACK.
HTTP_SERVER = """
import http.server

class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        status = b"200 OK" if self.path == "/" else b"404 Not Found"
        self.wfile.write(b"HTTP/1.1 " + status + b"\\r\\nContent-Length: 3\\r\\n\\r\\nok\\n")

    def log_message(self, *args):
        pass

server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
"""


def read_line_within(stream: IO[Any], timeout: float) -> Any:
    """The next line of ``stream`` (a child's pipe), or None if none came
    within ``timeout`` seconds. A thread reads it: on Windows ``select``
    takes sockets only."""
    got: list[Any] = []
    reader = threading.Thread(target=lambda: got.append(stream.readline()), daemon=True)
    reader.start()
    reader.join(timeout)
    return got[0] if got else None


@pytest.fixture(scope="session")
def url() -> Iterator[str]:
    """The URL of an HTTP server running in a child process (a server in
    this process would need the GIL that a binding holds while it waits)."""
    child = subprocess.Popen([sys.executable, "-c", HTTP_SERVER], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        port = read_line_within(child.stdout, 30)
        assert port, "the HTTP server printed no port within 30 s"
        yield f"http://127.0.0.1:{int(port)}/"
    finally:
        child.terminate()
        child.wait(timeout=10)


def run_unittest_buffered(tmp_path: Path, test_methods: str) -> subprocess.CompletedProcess[str]:
    """Runs ``python -m unittest --buffer`` on a module whose test case
    holds ``test_methods`` (indented by 4) and imports pylogsink."""
    (tmp_path / "test_buffered.py").write_text(
        "import unittest, pylogsink\nclass T(unittest.TestCase):\n" + textwrap.indent(textwrap.dedent(test_methods), "    ")
    )
    return subprocess.run(
        [sys.executable, "-m", "unittest", "--buffer", "test_buffered"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )


@contextlib.contextmanager
def logging_destination(module: ModuleType) -> Iterator[None]:
    """``module`` (an extension that has pylogsink's functions) sends its
    records to ``logging``, with directives that let everything through so
    that Python's levels decide; stderr and its directives come back after."""
    directives = module.log_filter()
    module.set_log_destination("logging")
    module.set_log_filter("trace")
    try:
        yield
    finally:
        module.set_log_destination("stderr")
        module.set_log_filter(directives)
