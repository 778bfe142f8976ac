"""Usage: python scripts/smoke_wheel.py

A wheel's smoke test, against the pylogsink installed in this Python (the
release workflow installs each wheel it built on a runner of its platform
and runs this there; tests/test_package.py runs it here). Checks, in a few
seconds:

- the package imports, from the installed wheel, with its version;
- the deadlock pylogsink exists for does not happen: the demo's
  two-threads scenario (a thread logs under a lock that another takes with
  the GIL held), in a child process with a timeout, delivers every line;
- the output capture carries what is written to fd 1 into sys.stdout
  (Linux), or refuses as documented (NotImplementedError on macOS, OSError
  on Windows);
- the C ABI's build inputs are in the wheel.

Prints one line per check; exits non-zero at the first that fails.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys


def check(what: str, ok: bool, detail: object = "") -> None:
    print(f"{'ok' if ok else 'FAILED'}: {what}{f' ({detail})' if detail != '' else ''}", flush=True)
    if not ok:
        sys.exit(1)


def main() -> None:
    import pylogsink

    here = os.path.dirname(pylogsink.__file__)
    check("import pylogsink", "site-packages" in here, f"{pylogsink.__version__}, {here}")

    scenario = [sys.executable, "-m", "pylogsink.scenarios", "two-threads", "--iterations", "100"]
    try:
        done = subprocess.run(scenario, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        check("two threads, a lock and the GIL: no deadlock", False, "hung for 120 s")
    result = json.loads(done.stdout.splitlines()[-1]) if done.returncode == 0 else {}
    delivered = result.get("lines_delivered", 0)
    ok = delivered > 0 and not result.get("errors")
    check("two threads, a lock and the GIL: no deadlock", ok, f"{delivered} lines" if ok else done.stderr[-500:])

    stdout = io.StringIO()
    if sys.platform.startswith("linux"):
        with contextlib.redirect_stdout(stdout), pylogsink.capture_output():
            os.write(1, b"written to fd 1\n")
        check("capture_output() carries fd 1 into sys.stdout", stdout.getvalue() == "written to fd 1\n", repr(stdout.getvalue()))
    else:
        refusal = NotImplementedError if sys.platform == "darwin" else OSError
        try:
            with pylogsink.capture_output():
                pass
        except refusal as e:
            check("capture_output() refuses as documented", True, f"{type(e).__name__}: {e}")
        else:
            check("capture_output() refuses as documented", False, "it ran")

    include = pylogsink.get_include()
    check("the C ABI's headers", os.path.isfile(os.path.join(include, "pylogsink.h")), include)
    check("the C ABI's library", os.path.isfile(pylogsink.get_library()), pylogsink.get_library())


if __name__ == "__main__":
    main()
