"""What nbclient's cells printed, for the scripts here that drive a real
Jupyter kernel (notebook.py, capture_kernel.py, live_kernel.py), and how
they hand their result to the test."""

from __future__ import annotations

import json

# A kernel may echo what a cell wrote to its own stdout, which is the
# script's (ipykernel does when a blocked cell is interrupted), with no
# newline at the end: the result goes on a line of its own, marked.
RESULT = "kernel-script-result: "


def print_result(result: dict[str, object]) -> None:
    """Prints the script's result where ``conftest.kernel_result`` finds it."""
    print("\n" + RESULT + json.dumps(result), flush=True)


def streams(outputs: list[dict[str, object]]) -> dict[str, str]:
    """The text of each stream (stdout, stderr) of one cell."""
    found: dict[str, str] = {}
    for out in outputs:
        if out.get("output_type") == "stream":
            name, text = str(out["name"]), str(out["text"])
            found[name] = found.get(name, "") + text
    return found
