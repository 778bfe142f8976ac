"""Runs one cell in a real Jupyter kernel (ipykernel, through
jupyter_client) and tells when its lines reached the client.

    python live_kernel.py DETACH
    python live_kernel.py capture
    python live_kernel.py outside
    python live_kernel.py flush

The cell logs 30 lines in one call, 50 ms apart, with the GIL released
(DETACH=1) or held (DETACH=0), then prints "returned". With "capture", it
printf's 30 lines from C instead, 50 ms apart, inside
pylogsink.capture_output(), and the lines looked at are the cell's stdout.
With "outside", a native thread logs them outside any call while the cell
waits for it; with "flush", the call holds the GIL and calls
pylogsink::flush after each line. Prints JSON: the cell's lines in the order they arrived, how
many came in stream messages the kernel sent at least half a second before
"returned" (the kernel's own timestamps), and how many escape characters
those messages held (ipykernel sets CLICOLOR_FORCE=1). Start it without PYTEST_CURRENT_TEST in the
environment: ipykernel turns its fd 2 capture off under pytest.
"""

from __future__ import annotations

import datetime
import sys

from jupyter_client.manager import start_new_kernel

from cell_streams import print_result


def main() -> int:
    mode = sys.argv[1]
    watched = "stdout" if mode == "capture" else "stderr"
    if mode == "capture":
        cell = (
            "import ctypes, time, pylogsink\nlibc = ctypes.CDLL(None)\n"
            "with pylogsink.capture_output(stderr=False):\n"
            "    for i in range(30):\n"
            "        libc.printf(b'[C] slow line %d\\n', i); libc.fflush(None); time.sleep(0.05)\n"
        )
    elif mode == "flush":
        cell = "import pylogsink\npylogsink.runtime.log_slowly(30, 0.05, detach=False, flush='raise')\n"
    elif mode == "outside":
        cell = "import pylogsink\npylogsink.runtime.start_background_logger(30, 0.05).join()\n"
    else:
        cell = f"import pylogsink\npylogsink.runtime.log_slowly(30, 0.05, detach={mode == '1'})\n"
    km, kc = start_new_kernel(kernel_name="python3")
    try:
        msg_id = kc.execute(cell + "print('returned', flush=True)\n")
        arrived: list[tuple[datetime.datetime, list[str]]] = []
        escapes = 0
        returned = None
        while True:
            msg = kc.get_iopub_msg(timeout=60)
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            kind, content, date = msg["msg_type"], msg["content"], msg["header"]["date"]
            if kind == "stream" and content["name"] == watched:
                escapes += content["text"].count("\x1b")
                got = [line.split("] ", 1)[1] for line in content["text"].splitlines() if "] " in line]
                if got:
                    arrived.append((date, got))
            if kind == "stream" and content["name"] == "stdout" and "returned" in content["text"]:
                returned = date
            if kind == "status" and content["execution_state"] == "idle":
                break
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    assert returned is not None, "the cell printed nothing"
    lines = [line for _, got in arrived for line in got]
    early = sum(len(got) for date, got in arrived if date < returned - datetime.timedelta(seconds=0.5))
    print_result({"lines": lines, "early": early, "escapes": escapes})
    return 0


if __name__ == "__main__":
    sys.exit(main())
