"""The budgets of what waits (crates/pylogsink/src/dest/budget.rs): the
bursts real runtimes make arrive whole, as plain Python would deliver them,
memory stays bounded past the budget, and the budget is set by the builder,
the users' PYLOGSINK_BUDGET and set_log_budget. Each scenario runs in a
child process with a timeout."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from pathlib import Path

import pytest

import pylogsink
from conftest import COUNT_RECORDS, child_pytest, python, records


def child_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PYLOGSINK_"))}
    return {**env, **extra}


def numbers(text: str) -> list[int]:
    """The line numbers of log_lines' records ("line N of M")."""
    return [int(r.split("] line ")[1].split()[0]) for r in records(text)]


BURST = """
import contextlib, io, json, sys, time, pylogsink
rt = pylogsink.runtime
buf = io.StringIO()
with contextlib.redirect_stderr(buf):
    {body}
print(json.dumps({{"text": buf.getvalue(), "left_out": rt.log_stats()["left_out"]}}))
"""


def burst(body: str, timeout: float = 60) -> tuple[str, int]:
    done = python(BURST.format(body=body), timeout=timeout, env=child_env())
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout.splitlines()[-1])
    return got["text"], got["left_out"]


def test_a_call_holding_the_gil_delivers_5000_lines_whole() -> None:
    text, left_out = burst("rt.log_lines(5000, size=100)")
    assert "[pylogsink]" not in text and left_out == 0
    assert numbers(text) == list(range(5000))


def test_a_call_that_released_the_gil_delivers_12000_lines_at_once_whole() -> None:
    text, left_out = burst("rt.log_lines(12_000, size=100, detach=True)")
    assert "[pylogsink]" not in text and left_out == 0
    assert numbers(text) == list(range(12_000))


def test_a_native_thread_outside_any_call_delivers_5000_lines_within_5_s() -> None:
    # The lines go through pylogsink's Python thread to the replaced stream.
    text, left_out = burst(
        """rt.start_background_logger(5000, 0.0).join()
    give_up = time.monotonic() + 5
    while buf.getvalue().count("\\n") < 5000 and time.monotonic() < give_up:
        time.sleep(0.01)"""
    )
    assert "[pylogsink]" not in text and left_out == 0
    assert len(records(text)) == 5000


SLOW_STREAM = """
import contextlib, json, sys, time, pylogsink
rt = pylogsink.runtime
class Slow:
    def __init__(self):
        self.parts = []
    def write(self, text):
        time.sleep(0.001)
        self.parts.append(text)
        return len(text)
    def flush(self):
        pass
slow = Slow()
with contextlib.redirect_stderr(slow):
    rt.log_lines(3000, size=100, detach=True)
print(json.dumps({"text": "".join(slow.parts), "left_out": rt.log_stats()["left_out"]}))
"""


def test_a_stream_whose_write_takes_1_ms_gets_3000_of_3000() -> None:
    done = python(SLOW_STREAM, timeout=60, env=child_env())
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout.splitlines()[-1])
    assert got["left_out"] == 0 and "[pylogsink]" not in got["text"]
    assert sorted(numbers(got["text"])) == list(range(3000))


LOGGING_50K = COUNT_RECORDS + """
rt.log_lines(50_000, size=100)
print(json.dumps({"handled": Count.n, "left_out": rt.log_stats()["left_out"]}))
"""


def test_50000_records_of_one_call_are_all_handled_by_logging() -> None:
    done = python(LOGGING_50K, timeout=120, env=child_env())
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout.splitlines()[-1])
    assert got == {"handled": 50_000, "left_out": 0}


# Peak RSS (ru_maxrss, KiB on Linux) before and after 2,000,000 lines of
# 100 B (200 MB) in one call that holds the GIL, into a stream that counts
# them: the budget keeps the newest, the rest are counted.
TWO_MILLION = """
import contextlib, json, resource, pylogsink
rt = pylogsink.runtime
class Counting:
    lines = notes = noted = 0
    def write(self, text):
        for line in text.splitlines():
            if line.startswith("[pylogsink] "):
                Counting.notes += 1
                Counting.noted += int(line.split()[1])
            else:
                Counting.lines += 1
        return len(text)
    def flush(self):
        pass
with contextlib.redirect_stderr(Counting()):
    rt.log_lines(1000, size=100)
Counting.lines = 0
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
with contextlib.redirect_stderr(Counting()):
    rt.log_lines(2_000_000, size=100)
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"lines": Counting.lines, "noted": Counting.noted, "notes": Counting.notes,
                  "left_out": rt.log_stats()["left_out"], "rss_up_kib": after - before}))
"""


@pytest.mark.skipif(sys.platform == "win32", reason="ru_maxrss (resource) is POSIX's")
def test_2_million_lines_in_one_call_are_delivered_or_counted_within_100_mib() -> None:
    done = python(TWO_MILLION, timeout=120, env=child_env())
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout.splitlines()[-1])
    assert got["lines"] + got["noted"] == 2_000_000 and got["notes"] == 1
    assert got["left_out"] == got["noted"]
    assert got["rss_up_kib"] <= 100 * 1024, got
    # The newest 4 MiB are delivered: some 40,000 lines of 100 B.
    assert 40_000 <= got["lines"] <= 42_000, got


def test_the_users_variable_sets_the_budget_over_the_builders() -> None:
    code = "import json, pylogsink; print(json.dumps(pylogsink.runtime.log_budget()))"
    default = python(code, env=child_env())
    assert json.loads(default.stdout) == {"lines": 4 << 20, "records": 50_000, "record_bytes": 16 << 20}
    set_by_users = python(code, env=child_env(PYLOGSINK_BUDGET="lines=8MiB, records=100000"))
    assert json.loads(set_by_users.stdout) == {"lines": 8 << 20, "records": 100_000, "record_bytes": 16 << 20}
    # A bad value changes nothing, and one Warn record says why.
    bad = python(code, env=child_env(PYLOGSINK_BUDGET="lines=8MiB,lines=lots"))
    assert json.loads(bad.stdout) == json.loads(default.stdout)
    (warning,) = records(bad.stderr)
    assert 'WARN  pylogsink' in warning and 'PYLOGSINK_BUDGET: ignored: "lines=lots": "lots" is not a size' in warning


def test_set_log_budget_changes_the_budget_and_refuses_what_is_below_the_least() -> None:
    rt = pylogsink.runtime
    before = rt.log_budget()
    try:
        rt.set_log_budget(lines=1 << 20)
        assert rt.log_budget() == {**before, "lines": 1 << 20}
        for bad in ({"lines": 100}, {"records": 0}, {"record_bytes": -1}):
            with pytest.raises(ValueError, match="the least is"):
                rt.set_log_budget(**bad)
        assert rt.log_budget() == {**before, "lines": 1 << 20}, "nothing changed"
        with pytest.raises(TypeError):
            rt.set_log_budget(1 << 20)  # type: ignore[misc]
    finally:
        rt.set_log_budget(**before)


def test_a_budget_set_from_python_holds_from_the_next_line() -> None:
    # 3,000 lines of 100 B fit the default; past a budget of 64 KiB, the
    # newest 64 KiB are kept with one note.
    text, left_out = burst("rt.set_log_budget(lines=64 * 1024)\n    rt.log_lines(3000, size=100)")
    note, *_ = text.splitlines()
    assert note.startswith("[pylogsink] ") and "more than 64 KiB waited at once" in note
    assert left_out == int(note.split()[1]) and left_out + len(numbers(text)) == 3000


XDIST_SUITE = '''
import pytest, pylogsink

@pytest.mark.parametrize("n", range(40))
def test_four_native_threads(n, capsys):
    pylogsink.runtime.fan_out(workers=4, lines=300)
    err = capsys.readouterr().err
    for w in range(4):
        got = [l for l in err.splitlines() if f"worker {w} line " in l]
        assert len(got) == 300, (w, len(got), err[:300])
    assert "[pylogsink]" not in err
'''


@pytest.mark.skipif(sys.platform == "win32", reason="pytest-xdist's workers need platform.node(), which wine's WMI lacks")
def test_pytest_xdist_capsys_gets_every_line_of_four_native_threads_in_every_test(tmp_path: Path) -> None:
    # 40 tests on two xdist workers, each a call fanned out to 4 native
    # threads that log 300 lines apiece (some 100 KB per test).
    suite = tmp_path / "test_fan_out.py"
    suite.write_text(XDIST_SUITE)
    done = child_pytest(suite, "-n", "2", timeout=300, env=child_env(), cwd=str(tmp_path))
    assert done.returncode == 0, done.stdout[-3000:]
    assert "40 passed" in done.stdout
