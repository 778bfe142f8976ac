"""Runs one cell in a real Jupyter kernel (ipykernel, driven by nbclient)
and prints the cell's outputs as JSON.

    python notebook.py SINK LINES [CELL_TIMEOUT]

The cell logs LINES lines of 100 bytes in one call through SINK. Start it
without PYTEST_CURRENT_TEST in the environment: ipykernel turns its fd 2
capture off under pytest.
"""

from __future__ import annotations

import json
import sys

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellTimeoutError


def main() -> int:
    sink, lines = sys.argv[1], int(sys.argv[2])
    timeout = float(sys.argv[3]) if len(sys.argv) > 3 else 60
    cell = (
        "import pylogsink\n"
        f"pylogsink.set_sink({sink!r})\n"
        f"n = pylogsink.log_lines({lines}, size=100)\n"
        "print('returned', n, pylogsink.stats())\n"
    )
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(cell)])
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3", allow_errors=True)
    try:
        client.execute()
    except CellTimeoutError:
        print(json.dumps({"timed_out": True}))
        return 0
    outputs = nb.cells[0].outputs
    streams: dict[str, str] = {}
    for out in outputs:
        if out.get("output_type") == "stream":
            streams[out["name"]] = streams.get(out["name"], "") + out["text"]
    errors = [o.get("ename") for o in outputs if o.get("output_type") == "error"]
    print(json.dumps({"timed_out": False, "streams": streams, "errors": errors}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
