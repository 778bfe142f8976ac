"""glog with pylogsink's sink (pylogsink_glog.hpp), through glog_rt: a
pybind11 extension built from tests/glog_rt against the installed
pylogsink and Debian's libgoogle-glog-dev, with glog's own log files and
stderr output turned off."""

from __future__ import annotations

import logging
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from conftest import (
    build_extension,
    compile_without_python,
    import_built,
    logging_destination,
    records,
    require_debian_dev,
)

require_debian_dev("libglog", "libgoogle-glog-dev")

SOURCES = Path(__file__).parent / "glog_rt"
INFO, WARNING, ERROR = range(3)  # glog's severities


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_extension(SOURCES, tmp_path_factory.mktemp("glog_rt"))


@pytest.fixture
def rt(built: Path) -> Iterator[ModuleType]:
    glog_rt = import_built(built, "glog_rt")
    yield glog_rt


def test_lines_reach_capsys_with_their_levels_and_target(rt: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    rt.log(INFO, "loading shard 1")
    rt.log(WARNING, "shard 2 is \x1b[31mslow")
    rt.log(ERROR, "shard 3 failed")
    captured = capsys.readouterr()
    lines = records(captured.err)
    assert len(lines) == 3, captured.err
    for line, level, message in zip(
        lines, ["INFO ", "WARN ", "ERROR"], ["loading shard 1", "shard 2 is \\x1b[31mslow", "shard 3 failed"]
    ):
        # glog's text without its prefix (I1204 06:25:34.69 4049 file:line]).
        assert re.fullmatch(rf"\[\S+Z {level} glog glog_rt\.cpp:\d+\] {re.escape(message)}", line), line


def test_caplog_gets_records_with_the_right_levels(rt: ModuleType, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    with logging_destination(rt):
        rt.log(INFO, "loading shard 1")
        rt.log(WARNING, "shard 2 is slow")
        rt.log(ERROR, "shard 3 failed")
    got = [(r.name, r.levelno, r.filename, r.getMessage()) for r in caplog.records if r.name == "glog"]
    assert got == [
        ("glog", logging.INFO, "glog_rt.cpp", "loading shard 1"),
        ("glog", logging.WARNING, "glog_rt.cpp", "shard 2 is slow"),
        ("glog", logging.ERROR, "glog_rt.cpp", "shard 3 failed"),
    ]


def test_fatal_is_an_error_line_then_glog_aborts(built: Path, clean_env: dict[str, str]) -> None:
    # sys.stderr is replaced, so the call keeps both lines; glog aborts
    # after its sinks, and pylogsink's crash handler writes them to fd 2.
    done = subprocess.run(
        [sys.executable, "-c", "import io, sys, glog_rt; sys.stderr = io.StringIO(); glog_rt.fatal()"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**clean_env, "PYTHONPATH": str(built)},
    )
    assert done.returncode == -signal.SIGABRT
    lines = records(done.stderr)
    assert [(line.split()[1], line.split("] ", 1)[1]) for line in lines] == [
        ("INFO", "context: 3 of 4 shards loaded"),
        ("ERROR", "shard 4 is corrupt"),
    ], done.stderr
    # glog writes its FATAL line to fd 2 itself too.
    assert re.search(r"^F\d{4,8} .*glog_rt\.cpp:\d+\] shard 4 is corrupt$", done.stderr, re.M), done.stderr


def test_the_sink_header_needs_no_python_header(tmp_path: Path) -> None:
    done = compile_without_python(
        tmp_path,
        """
        #include <pylogsink_glog.hpp>
        void runtime_start() {
            static pylogsink::glog_sink sink("my_runtime");
            google::AddLogSink(&sink);
            LOG(WARNING) << "started";
        }
        """,
    )
    assert done.returncode == 0, done.stderr
