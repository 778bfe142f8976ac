"""Runs one cell in a real Jupyter kernel (ipykernel, through
jupyter_client) and tells when its stderr lines reached the client.

    python live_kernel.py DETACH

The cell logs 30 lines in one call, 50 ms apart, with the GIL released
(DETACH=1) or held (DETACH=0), then prints "returned". Prints JSON: the
cell's stderr lines in the order they arrived, and how many came in stream
messages the kernel sent at least half a second before "returned" (the
kernel's own timestamps). Start it without PYTEST_CURRENT_TEST in the
environment: ipykernel turns its fd 2 capture off under pytest.
"""

from __future__ import annotations

import datetime
import json
import sys

from jupyter_client.manager import start_new_kernel


def main() -> int:
    detach = sys.argv[1] == "1"
    km, kc = start_new_kernel(kernel_name="python3")
    try:
        msg_id = kc.execute(
            f"import pylogsink\npylogsink.log_slowly(30, 0.05, detach={detach})\nprint('returned', flush=True)\n"
        )
        stderr: list[tuple[datetime.datetime, list[str]]] = []
        returned = None
        while True:
            msg = kc.get_iopub_msg(timeout=60)
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            kind, content, date = msg["msg_type"], msg["content"], msg["header"]["date"]
            if kind == "stream" and content["name"] == "stderr":
                stderr.append((date, [line.split("] ", 1)[1] for line in content["text"].splitlines()]))
            if kind == "stream" and content["name"] == "stdout" and "returned" in content["text"]:
                returned = date
            if kind == "status" and content["execution_state"] == "idle":
                break
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    assert returned is not None, "the cell printed nothing"
    lines = [line for _, got in stderr for line in got]
    early = sum(len(got) for date, got in stderr if date < returned - datetime.timedelta(seconds=0.5))
    print(json.dumps({"lines": lines, "early": early}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
