"""The two-thread deadlock (scenarios.py, demo.py): the naive sink hangs,
pylogsink completes. Each run is a subprocess with a timeout."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HANG_TIMEOUT = 5.0


def scenario(sink: str, detached: bool, timeout: float) -> dict[str, object]:
    cmd = [sys.executable, "-m", "pylogsink.scenarios", "two-threads", "--sink", sink, "--iterations", "100"]
    if detached:
        cmd.append("--detached")
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.naive
@pytest.mark.parametrize("detached", [False, True], ids=["gil-held", "gil-released"])
def test_naive_sink_hangs(detached: bool) -> None:
    # Proves the scenario is real: logging through Python under the backend
    # lock deadlocks with a thread that waits for that lock holding the GIL.
    with pytest.raises(subprocess.TimeoutExpired):
        scenario("naive", detached, HANG_TIMEOUT)


@pytest.mark.parametrize("detached", [False, True], ids=["gil-held", "gil-released"])
def test_pylogsink_completes(detached: bool) -> None:
    result = scenario("pylogsink", detached, 60)
    assert result["errors"] == []
    # Each of the 100 loads logs an Info and an Error line, all delivered to
    # the replaced sys.stderr.
    assert result["lines_delivered"] == 200


def test_demo_prints_the_table() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pylogsink.demo", "--iterations", "100", "--timeout", str(HANG_TIMEOUT), "--exit-runs", "2"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    rows = [line.split() for line in done.stdout.splitlines() if line.startswith("GIL")]
    assert len(rows) == 4
    for row in rows:
        sink = row[2]
        assert ("hung" in row) == (sink == "naive"), row
    assert "pylogsink completed every run; the naive sink hung." in done.stdout
    exit_rows = [line.split() for line in done.stdout.splitlines() if line.startswith(("own ", "replaced "))]
    assert [row[:2] for row in exit_rows] == [
        ["own", "naive"], ["own", "pylogsink"], ["replaced", "naive"], ["replaced", "pylogsink"]
    ]
    assert all(row[2:] == ["0", "0"] for row in exit_rows if row[1] == "pylogsink")
