"""A real Jupyter kernel (ipykernel, driven by nbclient) whose fd 2 is a
pipe drained by a Python thread: one call logs 256 KiB."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from conftest import SMALL_BUDGET_ENV, kernel_result

if sys.platform == "win32":
    pytest.skip("ipykernel does not capture fd 2 on Windows: its fd 2 is no pipe a thread drains", allow_module_level=True)
pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

NOTEBOOK = os.path.join(os.path.dirname(__file__), "scripts", "notebook.py")
LINES = 2622  # 100-byte lines: 256 KiB


def run_cell(sink: str, cell_timeout: float, env: dict[str, str], *extra: str, lines: int = LINES) -> dict[str, object]:
    return kernel_result(run_notebook(sink, cell_timeout, env, *extra, lines=lines).stdout)


def run_notebook(
    sink: str, cell_timeout: float, env: dict[str, str], *extra: str, lines: int = LINES
) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, NOTEBOOK, sink, str(lines), str(cell_timeout), *extra],
        capture_output=True,
        text=True,
        timeout=cell_timeout + 120,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    return done


@pytest.mark.naive
@pytest.mark.timeout(300)
def test_a_blocking_fd2_write_hangs_the_kernel(clean_env: dict[str, str]) -> None:
    # Proves the scenario is real. The kernel must not see
    # PYTEST_CURRENT_TEST, or ipykernel leaves fd 2 alone.
    assert run_cell("fd2", 15, clean_env)["timed_out"] is True


@pytest.mark.timeout(300)
def test_pylogsink_completes_with_every_line(clean_env: dict[str, str]) -> None:
    # 256 KiB in one call that holds the GIL: within the budget, all of it.
    result = run_cell("pylogsink", 60, clean_env)
    assert result["timed_out"] is False and result["errors"] == []
    streams = result["streams"]
    assert isinstance(streams, dict)
    numbers = [int(line.split("] line ")[1].split()[0]) for line in streams["stderr"].splitlines()]
    assert numbers == list(range(LINES))


@pytest.mark.timeout(300)
def test_pylogsink_completes_with_the_newest_lines_and_a_note(clean_env: dict[str, str]) -> None:
    # The same past a small budget.
    result = run_cell("pylogsink", 60, {**clean_env, **SMALL_BUDGET_ENV})
    assert result["timed_out"] is False and result["errors"] == []
    streams = result["streams"]
    assert isinstance(streams, dict)
    assert streams["stdout"].startswith(f"returned {LINES * 100}")
    err = streams["stderr"]
    lines = err.splitlines()
    m = re.match(r"\[pylogsink\] (\d+) lines \((\d+) bytes\) left out here", lines[0])
    assert m, lines[0]
    numbers = [int(line.split("] line ")[1].split()[0]) for line in lines[1:]]
    assert numbers == list(range(LINES - len(numbers), LINES)), "the newest lines, in order"
    assert int(m.group(1)) + len(numbers) == LINES


@pytest.mark.timeout(300)
def test_ipython_capture_magic_receives_the_lines(clean_env: dict[str, str]) -> None:
    # %%capture replaces sys.stderr for the cell: the lines are kept and
    # written there when the call returns, so nothing reaches the cell's
    # own output, and the next cell finds them in the capture.
    result = run_cell("pylogsink", 60, clean_env, "--capture", lines=5)
    assert result["timed_out"] is False and result["errors"] == []
    cells = result["cells"]
    assert isinstance(cells, list)
    assert cells[0] == {}
    numbers = [int(line.split("] line ")[1].split()[0]) for line in cells[1]["stdout"].splitlines()]
    assert numbers == [0, 1, 2, 3, 4]


@pytest.mark.timeout(300)
@pytest.mark.parametrize("handler", ["on", "off"])
def test_a_cell_that_crashes_the_kernel_leaves_its_lines_on_the_kernels_stderr(
    clean_env: dict[str, str], handler: str
) -> None:
    # The call's lines are kept (sys.stderr is the kernel's stream); fd 2 is
    # a pipe that a thread of the dying kernel drains. The crash handler
    # writes them to the kernel's original stderr instead, this process's.
    env = dict(clean_env, PYLOGSINK_DEMO_CRASH_HANDLER=handler)
    done = run_notebook("pylogsink", 60, env, "--crash")
    assert kernel_result(done.stdout)["dead"] is True
    found = [line.split("] ", 1)[1] for line in done.stderr.splitlines() if "] before the crash" in line]
    if handler == "on":
        assert found == [f"before the crash: line {i}" for i in range(3)], done.stderr
    else:
        assert found == [], "without the handler the lines die with the kernel"


LIVE_KERNEL = os.path.join(os.path.dirname(__file__), "scripts", "live_kernel.py")


def live_kernel(mode: str, env: dict[str, str]) -> dict[str, object]:
    done = subprocess.run([sys.executable, LIVE_KERNEL, mode], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    return kernel_result(done.stdout)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("detach", [True, False], ids=["gil_released", "gil_held"])
def test_a_cell_shows_its_native_lines_while_it_runs(detach: bool, clean_env: dict[str, str]) -> None:
    """A call that logs for 1.5 s: with the GIL released the kernel sends
    its lines while it runs, well before the cell goes on; with the GIL
    held they come at its return (nothing can run Python meanwhile). All
    30, in order, once, either way."""
    got = live_kernel("1" if detach else "0", clean_env)
    assert got["lines"] == [f"slow line {i}" for i in range(30)]
    early = got["early"]
    assert isinstance(early, int)
    if detach:
        assert early >= 10, got
    else:
        assert early == 0, got


@pytest.mark.timeout(300)
def test_a_native_thread_outside_any_call_reaches_the_cell_live_without_colour(clean_env: dict[str, str]) -> None:
    """A native thread logs 30 lines outside any call, 50 ms apart, while
    the cell waits for it: they reach the cell as they are logged, in
    order, once, with no escape although ipykernel sets CLICOLOR_FORCE=1."""
    got = live_kernel("outside", clean_env)
    assert got["lines"] == [f"background line {i}" for i in range(30)]
    assert got["escapes"] == 0
    early = got["early"]
    assert isinstance(early, int) and early >= 10, got


CELLS_KERNEL = os.path.join(os.path.dirname(__file__), "scripts", "cells_kernel.py")


@pytest.mark.timeout(300)
@pytest.mark.parametrize("destination", ["stderr", "logging"])
def test_each_cell_gets_the_lines_its_native_thread_logged_outside_any_call(
    destination: str, clean_env: dict[str, str]
) -> None:
    """20 cells in a row, each waiting for a native thread that logs 400
    lines outside any call: each cell gets its 400 before the kernel says
    idle, none comes in a later cell or after idle. No %load_ext: the end
    of each cell hands over what waits (lines, or records for logging)."""
    args = [sys.executable, CELLS_KERNEL, "20", "400", *(["--logging"] if destination == "logging" else [])]
    done = subprocess.run(args, capture_output=True, text=True, timeout=240, env=clean_env)
    assert done.returncode == 0, done.stderr
    got = kernel_result(done.stdout)
    assert got == {"in_cell": [400] * 20 + [0], "after_idle": [0] * 21}


@pytest.mark.timeout(300)
def test_lines_logged_between_cells_wait_for_the_next_cell(clean_env: dict[str, str]) -> None:
    """Each of 5 cells starts a native thread that logs 200 lines, one a
    millisecond, and ends at once; the next cell starts 0.3 s later. No
    line is written after a cell's idle, where front ends drop it: the
    lines logged between cells come in the next one, every line once."""
    args = [sys.executable, CELLS_KERNEL, "5", "200", "--unjoined"]
    done = subprocess.run(args, capture_output=True, text=True, timeout=240, env=clean_env)
    assert done.returncode == 0, done.stderr
    got = kernel_result(done.stdout)
    assert got["after_idle"] == [0] * 6, got
    assert sum(got["in_cell"]) == 1000, got


@pytest.mark.timeout(300)
@pytest.mark.parametrize("shape", ["joined", "logging", "unjoined", "sqlite"])
def test_a_kernel_started_after_pylogsink_gets_each_cells_lines_in_that_cell(
    shape: str, clean_env: dict[str, str]
) -> None:
    """pylogsink imported before the kernel (a sitecustomize, as the `.pth`
    line pylogsink.sqlite recommends): the cells' hooks are set up at the
    main thread's first safe point once the shell runs. Joined threads
    (stderr, logging) and SQLite's records from failed queries: every line
    in its own cell; a thread that goes on after its cell: nothing after
    idle, every line in a cell."""
    args = {
        "joined": ["20", "400"],
        "logging": ["20", "400", "--logging"],
        "unjoined": ["5", "200", "--unjoined"],
        "sqlite": ["20", "6", "--sqlite"],
    }[shape]
    done = subprocess.run(
        [sys.executable, CELLS_KERNEL, *args, "--before-kernel"],
        capture_output=True,
        text=True,
        timeout=240,
        env=clean_env,
    )
    assert done.returncode == 0, done.stderr
    got = kernel_result(done.stdout)
    cells, lines = int(args[0]), int(args[1])
    assert got["after_idle"] == [0] * (cells + 1), got
    if shape == "unjoined":
        assert sum(got["in_cell"]) == cells * lines, got
    else:
        assert got["in_cell"] == [lines] * cells + [0], got


@pytest.mark.timeout(300)
def test_a_cell_holding_the_gil_shows_its_lines_at_each_flush(clean_env: dict[str, str]) -> None:
    """The same call with the GIL held, calling pylogsink::flush after each
    line: the lines reach the notebook while the cell runs."""
    got = live_kernel("flush", clean_env)
    assert got["lines"] == [f"slow line {i}" for i in range(30)]
    early = got["early"]
    assert isinstance(early, int) and early >= 10, got
