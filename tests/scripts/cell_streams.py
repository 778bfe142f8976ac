"""What nbclient's cells printed, for the scripts here that drive a real
Jupyter kernel (notebook.py, capture_kernel.py)."""

from __future__ import annotations


def streams(outputs: list[dict[str, object]]) -> dict[str, str]:
    """The text of each stream (stdout, stderr) of one cell."""
    found: dict[str, str] = {}
    for out in outputs:
        if out.get("output_type") == "stream":
            name, text = str(out["name"]), str(out["text"])
            found[name] = found.get(name, "") + text
    return found
