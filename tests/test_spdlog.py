"""spdlog with pylogsink's sink (pylogsink_spdlog.hpp), through spdlog_rt:
a pybind11 extension built from tests/spdlog_rt against the installed
pylogsink and Debian's libspdlog-dev, whose runtime logs through one spdlog
logger from native threads, from a binding that holds the GIL, and through
spdlog's async logger."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from conftest import build_extension, compile_without_python, import_built, records, require_debian_dev

require_debian_dev("spdlog", "libspdlog-dev")

SOURCES = Path(__file__).parent / "spdlog_rt"
TRACE, DEBUG, INFO, WARN, ERR, CRITICAL = range(6)  # spdlog::level


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_extension(SOURCES, tmp_path_factory.mktemp("spdlog_rt"))


@pytest.fixture
def rt(built: Path) -> Iterator[ModuleType]:
    spdlog_rt = import_built(built, "spdlog_rt")
    before = spdlog_rt.log_filter()
    yield spdlog_rt
    spdlog_rt.set_log_filter(before)


def threads_and_the_sink_mutex(
    sink: str, built: Path, env: dict[str, str], timeout: float, holder: bool = True
) -> str:
    """4 native threads attached to a call log through one spdlog logger
    (each line under its sink mutex) while a Python thread calls a binding
    that logs through it with the GIL held, so waits for that mutex with
    the GIL (unless not ``holder``), 20 rounds and on until the holder
    logged once. Returns the child's stdout (whether every worker line of
    every round was delivered, and the holder's line), or "hung"."""
    code = textwrap.dedent(
        f"""
        import sys, threading
        import spdlog_rt as rt
        rt.set_sink("{sink}")
        class Collect:
            def __init__(self):
                self.parts = []
            def write(self, text):
                self.parts.append(text)
                return len(text)
            def flush(self):
                pass
        done, logged = threading.Event(), threading.Event()
        runs = 0
        def fan():
            # 20 rounds, and on until the holder has logged once: on a
            # loaded machine the holder may not get the GIL in 20.
            global runs
            while runs < 20 or ({holder} and not logged.is_set() and runs < 1000):
                rt.fan_out(4, 50)
                runs += 1
            done.set()
        def holder():
            while not done.is_set():
                rt.log_with_gil()
                logged.set()
        stderr = sys.stderr = Collect()
        threads = [threading.Thread(target=f) for f in (fan, holder)][:{2 if holder else 1}]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        sys.stderr = sys.__stderr__
        text = "".join(stderr.parts)
        # Every worker line of every round, and the holder's.
        print(text.count("worker ") == 200 * runs, "from the thread that holds the GIL" in text)
        """
    )
    try:
        done = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**env, "PYTHONPATH": str(built)},
        )
    except subprocess.TimeoutExpired:
        return "hung"
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_attached_threads_under_the_sink_mutex_complete_while_a_thread_waits_with_the_gil(
    built: Path, clean_env: dict[str, str]
) -> None:
    assert threads_and_the_sink_mutex("pylogsink", built, clean_env, timeout=60) == "True True"


@pytest.mark.naive
def test_a_sink_that_takes_the_gil_hangs_there(built: Path, clean_env: dict[str, str]) -> None:
    # Proves the scenario real: the same threads with a sink that writes
    # through sys.stderr.write under gil_scoped_acquire. Alone, they are
    # done in well under a second.
    assert threads_and_the_sink_mutex("naive", built, clean_env, timeout=60, holder=False) == "True False"
    # The hang needs the holder to wait for the mutex while a worker waits
    # for the GIL: the same race once took test_worker.py 31 rounds where
    # this run makes 20. So up to 5 runs (one that misses ends in about a
    # second), stopping at the first that hangs.
    outcomes = []
    while len(outcomes) < 5 and "hung" not in outcomes:
        outcomes.append(threads_and_the_sink_mutex("naive", built, clean_env, timeout=8))
    assert outcomes[-1] == "hung", outcomes


def test_attached_threads_lines_reach_capsys_in_order(rt: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    rt.fan_out(4, 50)
    found: dict[int, list[int]] = {}
    for line in records(capsys.readouterr().err):
        assert re.match(r"\[\S+Z INFO  rt spdlog_rt\.cpp:\d+\] worker ", line), line
        _, worker, _, number = line.split("] ", 1)[1].split()
        found.setdefault(int(worker), []).append(int(number))
    assert found == {worker: list(range(50)) for worker in range(4)}


def test_levels_are_mapped_and_critical_is_an_error(rt: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    rt.set_log_filter("trace")
    for level in (TRACE, DEBUG, INFO, WARN, ERR, CRITICAL):
        rt.log(level, f"spdlog level {level}")
    rt.log(WARN, "no source location", source=False)
    lines = records(capsys.readouterr().err)
    # Critical is Error, not Fatal: no abort follows it, so the process lives.
    expected = ["TRACE", "DEBUG", "INFO ", "WARN ", "ERROR", "ERROR"]
    for line, level, name in zip(lines, range(6), expected):
        assert re.fullmatch(rf"\[\S+Z {name} rt spdlog_rt\.cpp:\d+\] spdlog level {level}", line), line
    # The payload only: spdlog's own pattern (time, [rt] [level]) is not there.
    assert re.fullmatch(r"\[\S+Z WARN  rt\] no source location", lines[6]), lines[6]
    assert len(lines) == 7


def test_the_filter_applies_after_spdlogs_level(rt: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    rt.set_log_filter("warn")
    rt.log(INFO, "dropped by pylogsink's filter")
    rt.log(ERR, "kept")
    assert [r.split("] ", 1)[1] for r in records(capsys.readouterr().err)] == ["kept"]


def test_the_async_loggers_lines_reach_capsys_with_no_call(rt: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    # spdlog's pool thread is attached to no call and logs after the
    # binding returned: pylogsink's own Python thread writes the lines to
    # the replaced sys.stderr.
    rt.log_async(5, 100)
    got: list[str] = []
    deadline = time.monotonic() + 10
    while len(got) < 5 and time.monotonic() < deadline:
        time.sleep(0.02)
        got += records(capsys.readouterr().err)
    assert [line.split("] ", 1)[1] for line in got] == [f"async line {i}" for i in range(5)]
    assert all(" INFO  rt::async] " in line for line in got), got


def test_the_sink_header_needs_no_python_header(tmp_path: Path) -> None:
    # A runtime's own files, which know nothing of Python, include it.
    cflags = subprocess.run(["pkg-config", "--cflags", "spdlog"], capture_output=True, text=True, check=True)
    done = compile_without_python(
        tmp_path,
        """
        #include <pylogsink_spdlog.hpp>
        #include <spdlog/spdlog.h>
        #include <memory>
        void runtime_log() {
            auto logger = std::make_shared<spdlog::logger>("rt", std::make_shared<pylogsink::spdlog_sink_mt>());
            auto other = std::make_shared<spdlog::logger>("rt", std::make_shared<pylogsink::spdlog_sink_st>());
            SPDLOG_LOGGER_WARN(logger, "{} and {}", 1, 2);
            other->critical("done");
        }
        """,
        cflags.stdout.split(),
    )
    assert done.returncode == 0, done.stderr
