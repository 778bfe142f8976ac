"""Runs CELLS cells in a row in a real Jupyter kernel (ipykernel, through
jupyter_client): in each, a native thread logs LINES lines outside any call
and the cell waits for it to end. Tells, per cell, how many of the lines
reached that cell before the kernel said it was idle, and how many came
after (with the cell's header, or in a later cell).

    python cells_kernel.py CELLS LINES [--logging]

With --logging the records go to Python's logging, whose handler writes
them to the kernel's stderr. Prints
JSON: {"in_cell": [...], "after_idle": [...]}, one count per cell. Start
it without PYTEST_CURRENT_TEST in the environment: ipykernel turns its fd 2
capture off under pytest.
"""

from __future__ import annotations

import sys

from jupyter_client.manager import start_new_kernel

from cell_streams import print_result


def main() -> int:
    cells, lines = int(sys.argv[1]), int(sys.argv[2])
    km, kc = start_new_kernel(kernel_name="python3")
    in_cell = [0] * cells
    after_idle = [0] * cells
    ids: dict[str, int] = {}
    try:
        setup = "import pylogsink\n"
        if "--logging" in sys.argv:
            setup += (
                "import logging, sys\n"
                "logging.basicConfig(level=logging.INFO, stream=sys.stderr, format='%(message)s')\n"
                "pylogsink.runtime.set_log_destination('logging')\n"
            )
        kc.execute_interactive(setup, timeout=60)
        for k in range(cells):
            msg_id = kc.execute(f"pylogsink.runtime.start_background_logger({lines}, name='cell-{k}').join()\n")
            ids[msg_id] = k
            idle = False
            while not idle:
                msg = kc.get_iopub_msg(timeout=60)
                cell = ids.get(msg["parent_header"].get("msg_id", ""))
                if cell is None:
                    continue
                kind, content = msg["msg_type"], msg["content"]
                if kind == "stream":
                    n = content["text"].count("background line ")
                    if cell == k:
                        in_cell[k] += n
                    else:
                        after_idle[cell] += n
                idle = cell == k and kind == "status" and content["execution_state"] == "idle"
        # What comes after the last cell's idle, within a second.
        kc.execute_interactive("import time; time.sleep(1)", timeout=60)
        while True:
            try:
                msg = kc.get_iopub_msg(timeout=0.5)
            except Exception:  # queue.Empty: nothing more came
                break
            cell = ids.get(msg["parent_header"].get("msg_id", ""))
            if cell is not None and msg["msg_type"] == "stream":
                after_idle[cell] += msg["content"]["text"].count("background line ")
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    print_result({"in_cell": in_cell, "after_idle": after_idle})
    return 0


if __name__ == "__main__":
    sys.exit(main())
