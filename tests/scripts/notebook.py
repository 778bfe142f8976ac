"""Runs cells in a real Jupyter kernel (ipykernel, driven by nbclient) and
prints their outputs as JSON.

    python notebook.py SINK LINES [CELL_TIMEOUT] [--capture | --crash]

The first cell logs LINES lines of 100 bytes in one call through SINK. With
--capture it runs under IPython's %%capture, and a second cell prints what
was captured. With --crash the cell instead logs in a call that crashes the
kernel with SIGSEGV; the kernel's own stderr is this process's. Start it without PYTEST_CURRENT_TEST in the environment:
ipykernel turns its fd 2 capture off under pytest.
"""

from __future__ import annotations

import sys

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellTimeoutError, DeadKernelError

from cell_streams import print_result, streams


def main() -> int:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    capture = "--capture" in sys.argv
    crash = "--crash" in sys.argv
    sink, lines = args[0], int(args[1])
    timeout = float(args[2]) if len(args) > 2 else 60
    cell = (
        "import pylogsink\n"
        f"pylogsink.runtime.set_sink({sink!r})\n"
        f"n = pylogsink.runtime.log_lines({lines}, size=100)\n"
        "print('returned', n, pylogsink.runtime.log_stats())\n"
    )
    if crash:
        cell = f"import pylogsink\npylogsink.runtime.set_sink({sink!r})\npylogsink.runtime.crash('segv')\n"
    cells = [("%%capture captured\n" if capture else "") + cell]
    if capture:
        cells.append("print(captured.stderr, end='')")
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
    per_cell = [streams(c.outputs) for c in nb.cells]
    errors = [o.get("ename") for c in nb.cells for o in c.outputs if o.get("output_type") == "error"]
    print_result({"timed_out": False, "streams": per_cell[0], "cells": per_cell, "errors": errors})
    return 0


if __name__ == "__main__":
    sys.exit(main())
