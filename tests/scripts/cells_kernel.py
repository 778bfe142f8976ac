"""Runs CELLS cells in a row in a real Jupyter kernel (ipykernel, through
jupyter_client): in each, a native thread logs LINES lines outside any
call. Tells, per cell, how many of the lines reached that cell before the
kernel said it was idle, and how many came after its idle.

    python cells_kernel.py CELLS LINES [--logging] [--unjoined] [--before-kernel] [--sqlite]

The cell waits for its thread, unless --unjoined: then the thread logs a
line each millisecond and goes on after the cell ended, and the script
waits 0.3 s between cells. A last cell sleeps a second; its count comes
last. With --logging the records go to Python's logging, whose handler
writes them to the kernel's stderr. With --before-kernel the kernel
imports pylogsink before ipykernel and IPython, from a sitecustomize
module (as a `.pth` line would). With --sqlite (and --before-kernel, as
pylogsink.sqlite needs) the lines are SQLite's: each cell runs LINES
failing queries, whose records Python's logging writes to the kernel's
stderr. Prints JSON: {"in_cell": [...],
"after_idle": [...]}, one count per cell and the last one. Start it
without PYTEST_CURRENT_TEST in the environment: ipykernel turns its fd 2
capture off under pytest.
"""

from __future__ import annotations

import os
import queue
import sys
import tempfile
import time

from jupyter_client.manager import start_new_kernel

from cell_streams import print_result


def main() -> int:
    cells, lines = int(sys.argv[1]), int(sys.argv[2])
    unjoined = "--unjoined" in sys.argv
    sqlite = "--sqlite" in sys.argv
    marker = "no such table" if sqlite else "background line "
    env = dict(os.environ)
    if "--before-kernel" in sys.argv:
        site = tempfile.mkdtemp()
        with open(os.path.join(site, "sitecustomize.py"), "w") as f:
            f.write("import pylogsink.runtime\n")
            if "--sqlite" in sys.argv:
                f.write("import pylogsink.sqlite\npylogsink.sqlite.install()\n")
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [site, env.get("PYTHONPATH")]))
    km, kc = start_new_kernel(kernel_name="python3", env=env)
    in_cell = [0] * (cells + 1)
    after_idle = [0] * (cells + 1)
    ids: dict[str, int] = {}
    idle: set[int] = set()

    def read(msg: dict) -> None:
        cell = ids.get(msg["parent_header"].get("msg_id", ""))
        if cell is None:
            return
        kind, content = msg["msg_type"], msg["content"]
        if kind == "stream":
            n = content["text"].count(marker)
            if cell in idle:
                after_idle[cell] += n
            else:
                in_cell[cell] += n
        if kind == "status" and content["execution_state"] == "idle":
            idle.add(cell)

    def run(k: int, code: str) -> None:
        ids[kc.execute(code)] = k
        while k not in idle:
            read(kc.get_iopub_msg(timeout=60))

    try:
        setup = "import pylogsink\n"
        if sqlite:
            setup += (
                "import logging, sqlite3, sys\n"
                "logging.basicConfig(level=logging.INFO, stream=sys.stderr, format='%(message)s')\n"
                "conn = sqlite3.connect(':memory:')\n"
                "def fail(n):\n"
                "    for _ in range(n):\n"
                "        try:\n"
                "            conn.execute('select * from nope')\n"
                "        except sqlite3.OperationalError:\n"
                "            pass\n"
            )
        elif "--logging" in sys.argv:
            setup += (
                "import logging, sys\n"
                "logging.basicConfig(level=logging.INFO, stream=sys.stderr, format='%(message)s')\n"
                "pylogsink.runtime.set_log_destination('logging')\n"
            )
        kc.execute_interactive(setup, timeout=60)
        for k in range(cells):
            if sqlite:
                run(k, f"fail({lines})\n")
            elif unjoined:
                run(k, f"t = pylogsink.runtime.start_background_logger({lines}, 0.001)\n")
                # Between cells: the thread goes on logging.
                end = time.monotonic() + 0.3
                while time.monotonic() < end:
                    try:
                        read(kc.get_iopub_msg(timeout=max(0.01, end - time.monotonic())))
                    except queue.Empty:
                        pass
            else:
                run(k, f"pylogsink.runtime.start_background_logger({lines}).join()\n")
        run(cells, "import time; time.sleep(1)")
        # What comes after the last cell's idle, within a second.
        end = time.monotonic() + 1
        while time.monotonic() < end:
            try:
                read(kc.get_iopub_msg(timeout=0.2))
            except queue.Empty:
                pass
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    print_result({"in_cell": in_cell, "after_idle": after_idle})
    return 0


if __name__ == "__main__":
    sys.exit(main())
