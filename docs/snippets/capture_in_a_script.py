import contextlib
import ctypes
import io

import pylogsink

# PyDLL keeps the GIL held while C runs, as many bindings do: a Python
# thread that drains a pipe could not run, and a capture built on one
# would hang here. pylogsink's pipes are drained by a native thread.
libc = ctypes.PyDLL(None)

out = io.StringIO()
with contextlib.redirect_stdout(out), pylogsink.capture_output():
    libc.printf(b"%s", b"step done\n" * 300_000)  # 3 MB, more than a pipe holds

first, *kept = out.getvalue().splitlines()
print(first)  # [pylogsink] 195143 lines (1951430 bytes) left out here: ...
assert first.startswith("[pylogsink] ") and "left out here" in first
assert set(kept) == {"step done"}
assert pylogsink.runtime.log_stats()["left_out"] + len(kept) == 300_000
