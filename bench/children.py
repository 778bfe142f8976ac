"""Each measurement runs in a child process whose fd 2 is set up for it
(bench/run.py again, with --child), so the destination is real and one
run's state cannot leak into the next. The parent collects each child's
JSON from its stdout; where fd 2 is a pipe, the parent drains it (a native
reader that reads in batches, so that it is never the bottleneck, see
`drain`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from types import ModuleType

from figures import median_ratio

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "results")
# The script every child runs, with --child.
RUN = os.path.join(HERE, "run.py")
# The fd 2 of most sections: /dev/null, a regular file, a pipe drained by
# the parent.
FD2S = ("null", "file", "pipe")


def run_child(
    params: dict, fd2: str, check_len: int | None = None, wrap: Sequence[str] = (), python: str = sys.executable
) -> dict:
    """Runs one measurement in a child whose fd 2 is `fd2`: "null", "file",
    "pipe" (drained, and checked when `check_len` is set, by this process)
    or "pty" (a pseudo-terminal in raw mode, read by this process), in the
    interpreter `python`, under the command `wrap` if any. Returns the
    child's JSON, with "drained" for a pipe."""
    import pylogsink_bench as b

    cmd = [*wrap, python, RUN, "--child", json.dumps(params)]
    drained = {}
    if fd2 == "pty":
        import tty

        master, slave = os.openpty()
        tty.setraw(slave)  # no newline translation: the bytes as written
        # The same bytes as elsewhere: no colour on the terminal.
        env = {**os.environ, "NO_COLOR": "1"}
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=slave, env=env)
        os.close(slave)

        def read_all() -> None:
            total = 0
            while True:
                try:
                    chunk = os.read(master, 1 << 16)
                except OSError:  # EIO: the child closed its end
                    break
                if not chunk:
                    break
                total += len(chunk)
            drained["pty_bytes"] = total

        reader = threading.Thread(target=read_all)
        reader.start()
        out = proc.stdout.read()
        proc.wait()
        reader.join()
        os.close(master)
    elif fd2 == "pipe":
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        reader = threading.Thread(target=lambda: drained.update(d=b.drain(proc.stderr.fileno(), check_len)))
        reader.start()
        out = proc.stdout.read()
        proc.wait()
        reader.join()
        proc.stderr.close()
    if fd2 not in ("pipe", "pty"):
        path = os.devnull if fd2 == "null" else os.path.join(RESULTS, "fd2.tmp")
        with open(path, "wb") as err:
            out = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err, timeout=900).stdout
        if fd2 == "file":
            os.unlink(path)
    result = json.loads(out or b'{"error": "no output"}')
    if "error" in result:
        which = params["task"] if python == sys.executable else f"{params['task']} ({python})"
        raise RuntimeError(f"child {which} failed:\n{result['error']}")
    if "d" in drained:
        d = drained["d"]
        result["drained"] = {k: getattr(d, k) for k in ("bytes", "lines", "bad", "out_of_order", "per_thread")}
    return result


def whole(r: dict) -> bool:
    """Whether the parent read back every line of a pipe run, none torn."""
    return r["drained"]["lines"] == r["lines"] and r["drained"]["bad"] == 0


def each_fd2(task: str, p: dict, ours: str, theirs: str) -> dict:
    """Runs `task` with fd 2 on each of `FD2S`: per fd 2, the child's
    figures, whether the pipe run's lines came back whole, and per line
    size the ratio of `ours` to `theirs` (`ratio_100`, ...)."""
    figures = {}
    for fd2 in FD2S:
        r = run_child({"task": task, "fd2": fd2, **p}, fd2)
        if fd2 == "pipe":
            r["whole"] = whole(r)
        for size, f in r["ns_per_line"].items():
            r[f"ratio_{size}"] = median_ratio(f[ours], f[theirs])
        figures[fd2] = r
    return figures


def child_main(params: dict, tasks: dict[str, Callable[[dict, ModuleType], dict]]) -> None:
    """The child's side: runs the task `params` names, and writes its
    figures, or the error, as JSON to stdout."""
    try:
        import pylogsink_bench as b

        assert sys.stderr is sys.__stderr__
        result = tasks[params["task"]](params, b)
    except BaseException as e:  # the parent shows it
        import traceback

        result = {"error": "".join(traceback.format_exception(e))}
    sys.stdout.write(json.dumps(result))
