"""Runs the cells read from stdin (separated by NUL) in a real Jupyter
kernel (ipykernel, driven by nbclient) and prints each cell's streams as
JSON (cell_streams.print_result).

    python cells_kernel.py [CELL_TIMEOUT] < cells

Start it without PYTEST_CURRENT_TEST in the environment: ipykernel turns
its fd 2 capture off under pytest.
"""

from __future__ import annotations

import sys

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellTimeoutError, DeadKernelError

from cell_streams import print_result, streams


def main() -> int:
    timeout = float(sys.argv[1]) if len(sys.argv) > 1 else 60
    cells = sys.stdin.read().split("\0")
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
