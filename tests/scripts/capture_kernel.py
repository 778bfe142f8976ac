"""Runs cells that write from C in a real Jupyter kernel (ipykernel, driven
by nbclient) and prints each cell's streams as JSON.

    python capture_kernel.py MODE [CELL_TIMEOUT]

MODE "-": the cells read from stdin, separated by NUL.
MODE "printf": a C printf inside pylogsink.capture_output(), then the same
without it. "big": 3 MB printed by C with the GIL held (ctypes.PyDLL) inside
capture_output(). "raw_big": the same without it. "ext": %load_ext pylogsink,
then a cell that printf's, %unload_ext, and a capture into logging.
"ext_children": %load_ext pylogsink, a shell loop started in one cell and
looked at three cells later, and a spawn Pool made in one cell and used in
the next. "mixed": inside capture_output(), C's
line-buffered printf, Python's print, os.write(2) and an extension that
logs through pylogsink and printf's, 20 rounds. Whether ipykernel captures fd 1 and fd 2 itself
depends on PYTEST_CURRENT_TEST in the environment, which the caller sets.
"""

from __future__ import annotations

import sys

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellTimeoutError, DeadKernelError

from cell_streams import print_result, streams

SETUP = "import ctypes, pylogsink\nlibc = ctypes.CDLL(None)\ngil_libc = ctypes.PyDLL(None)\n"
BIG = "data = (b'x' * 99 + b'\\n') * 30000\n"

CELLS = {
    "printf": [
        SETUP,
        "with pylogsink.capture_output():\n    libc.printf(b'from C, captured\\n')\n",
        "libc.printf(b'from C, not captured\\n'); libc.fflush(None)\n",
    ],
    "big": [
        SETUP + BIG,
        "with pylogsink.capture_output():\n    gil_libc.printf(b'%s', data)\n"
        "print('stats', pylogsink.runtime.log_stats()['left_out'])\n",
    ],
    "raw_big": [SETUP + BIG, "gil_libc.printf(b'%s', data); gil_libc.fflush(None)\n"],
    "mixed": [
        SETUP + "import os\nlibc.setvbuf(ctypes.c_void_p.in_dll(libc, 'stdout'), None, 1, 0)\n",
        "with pylogsink.capture_output():\n"
        "    for i in range(20):\n"
        "        libc.printf(b'c %d\\n', i)\n"
        "        print(f'py {i}')\n"
        "        os.write(2, b'w %d\\n' % i)\n"
        "        pylogsink.runtime.log_and_printf(f'both {i}')\n",
    ],
    "ext": [
        SETUP + "%load_ext pylogsink\n",
        "libc.printf(b'from C, every cell\\n')\n",
        "%unload_ext pylogsink\n",
        "print(pylogsink.output_capture_active())\n",
        "import logging\nrecords = []\n"
        "class Keep(logging.Handler):\n"
        "    def emit(self, record):\n"
        "        records.append(record.getMessage())\n"
        "logging.getLogger('stdout').addHandler(Keep())\nlogging.getLogger('stdout').setLevel(logging.INFO)\n"
        "with pylogsink.capture_output(to_logging=True):\n"
        "    libc.printf(b'a record\\n')\n"
        "print(records)\n",
    ],
    "ext_children": [
        SETUP + "%load_ext pylogsink\n",
        "import subprocess, time\n"
        "server = subprocess.Popen(['sh', '-c', 'while true; do echo tick; sleep 0.1; done'])\n",
        "time.sleep(0.3)\n",
        "time.sleep(0.3)\n",
        # One write per line: the loop's ticks come between writes.
        "import sys\ntime.sleep(0.3)\nsys.stdout.write(f'alive {server.poll() is None}\\n')\n",
        "import multiprocessing\npool = multiprocessing.get_context('spawn').Pool(2)\n",
        "sys.stdout.write(f'{pool.map(abs, [-1, -2, 3])}\\n')\npool.close()\npool.join()\n",
        "server.kill()\nsys.stdout.write(f'killed {server.wait()}\\n')\n",
    ],
}


def main() -> int:
    mode = sys.argv[1]
    timeout = float(sys.argv[2]) if len(sys.argv) > 2 else 60
    cells = sys.stdin.read().split("\0") if mode == "-" else CELLS[mode]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3", allow_errors=True)
    try:
        client.execute()
    except CellTimeoutError:
        print_result({"timed_out": True})
        return 0
    except DeadKernelError:
        print_result({"timed_out": False, "dead": True})
        return 0
    errors = [o.get("ename") for c in nb.cells for o in c.outputs if o.get("output_type") == "error"]
    print_result({"timed_out": False, "cells": [streams(c.outputs) for c in nb.cells], "errors": errors})
    return 0


if __name__ == "__main__":
    sys.exit(main())
