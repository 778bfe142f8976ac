"""The Python controls (python.rs, filter.rs) as the demo runtime exposes
them: set_log_filter, log_filter, log_stats; and records that name their
target, with TRACE a level of its own (format.rs)."""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Iterator

import pytest

import pylogsink
from conftest import python, records

TARGET = "_pylogsink::runtime"


@pytest.fixture(autouse=True)
def restore_filter() -> Iterator[None]:
    before = pylogsink.runtime.log_filter()
    yield
    pylogsink.runtime.set_log_filter(before)


def logged(*calls: tuple[int, str]) -> list[str]:
    buf = io.StringIO()
    with contextlib.redirect_stderr(buf):
        for count, level in calls:
            pylogsink.runtime.log_lines(count, level)  # type: ignore[arg-type]
    return records(buf.getvalue())


def level_of(record: str) -> str:
    return record.split()[1]


def test_the_demo_default_is_info_and_below_it_is_dropped() -> None:
    assert pylogsink.runtime.log_filter() == "info"
    got = logged((2, "trace"), (3, "debug"), (4, "info"), (5, "warn"))
    assert [level_of(r) for r in got] == ["INFO"] * 4 + ["WARN"] * 5


def test_set_log_filter_changes_what_is_logged_at_once() -> None:
    pylogsink.runtime.set_log_filter("trace")
    assert pylogsink.runtime.log_filter() == "trace"
    got = logged((2, "trace"), (1, "debug"))
    assert [level_of(r) for r in got] == ["TRACE", "TRACE", "DEBUG"]
    pylogsink.runtime.set_log_filter("error")
    assert [level_of(r) for r in logged((3, "warn"), (1, "error"))] == ["ERROR"]


def test_a_target_directive_applies_to_the_target_and_below() -> None:
    pylogsink.runtime.set_log_filter(f"warn,{TARGET}=debug")
    assert [level_of(r) for r in logged((1, "debug"), (1, "trace"))] == ["DEBUG"]
    pylogsink.runtime.set_log_filter("debug,_pylogsink=off")
    assert logged((1, "error")) == []
    # The longest matching target wins.
    pylogsink.runtime.set_log_filter(f"debug,_pylogsink=off,{TARGET}=info")
    assert [level_of(r) for r in logged((1, "debug"), (1, "info"))] == ["INFO"]


def test_records_name_their_target() -> None:
    (record,) = logged((1, "warn"))
    header = record.split("] ", 1)[0]
    assert header.split()[1:] == ["WARN", TARGET, header.split()[-1]]
    assert header.split()[-1].startswith("runtime.rs:")


def test_a_bad_directive_raises_and_changes_nothing() -> None:
    pylogsink.runtime.set_log_filter("warn,other=debug")
    with pytest.raises(ValueError, match='"other=loud"'):
        pylogsink.runtime.set_log_filter("info,other=loud")
    assert pylogsink.runtime.log_filter() == "warn,other=debug"
    with pytest.raises(ValueError, match="message patterns"):
        pylogsink.runtime.set_log_filter("info/connect")
    with pytest.raises(ValueError, match="no directive"):
        pylogsink.runtime.set_log_filter("")
    assert logged((1, "info")) == []


def test_log_stats_counts_per_level_and_not_what_the_filter_drops() -> None:
    pylogsink.runtime.set_log_filter("debug")
    before = pylogsink.runtime.log_stats()
    logged((5, "trace"), (4, "debug"), (3, "info"), (2, "warn"), (1, "error"))
    after = pylogsink.runtime.log_stats()
    grew = {k: after[k] - before[k] for k in after}
    assert grew == {
        "emitted": 10, "trace": 0, "debug": 4, "info": 3, "warn": 2, "error": 1, "fatal": 0,
        "left_out": 0, "failed_bytes": 0, "python_wakes": 0,
    }


def test_fatal_lines_pass_any_filter() -> None:
    done = python(
        """
        import pylogsink
        pylogsink.runtime.set_log_filter("off")
        pylogsink.runtime.log_lines(3, "error")
        pylogsink.runtime.abort_with_fatal()
        """,
        env={**os.environ, "PYLOGSINK_LOG": ""},
    )
    assert done.returncode != 0
    levels = [level_of(r) for r in records(done.stderr)]
    assert levels == ["FATAL"], done.stderr


def test_the_environment_sets_the_filter_at_import() -> None:
    code = "import pylogsink; print(pylogsink.runtime.log_filter()); pylogsink.runtime.log_lines(1, 'debug')"
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}
    done = python(code, env={**env, "PYLOGSINK_LOG": "debug"})
    assert done.stdout.split() == ["debug"]
    assert [level_of(r) for r in records(done.stderr)] == ["DEBUG"]
    done = python(code, env={**env, "PYLOGSINK_LOG": "debug,x=loud"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["debug"]
    warnings = [r for r in records(done.stderr) if " WARN  pylogsink " in r]
    assert len(warnings) == 1 and '"x=loud"' in warnings[0], done.stderr
    assert [level_of(r) for r in records(done.stderr)] == ["WARN", "DEBUG"]
