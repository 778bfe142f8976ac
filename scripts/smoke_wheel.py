"""Usage: python scripts/smoke_wheel.py [--no-compiler]

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
- the extension module is at most 4 MB (its debug information left out);
- a C extension builds against the wheel's C ABI with this platform's
  compiler (MSVC on Windows), with setuptools and the wheel's include
  directory, library and link arguments, and its line reaches a replaced
  sys.stderr (--no-compiler leaves this out, with a line saying so, where
  the machine has no C compiler, as under wine).

Prints one line per check; exits non-zero at the first that fails.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import textwrap

MODULE_BYTES = 4_000_000

# A C extension as its authors write one: a binding between
# pylogsink_call_enter and pylogsink_call_exit.
C_SOURCE = r'''
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>
#include "pylogsink.h"

static PyObject *say(PyObject *self, PyObject *arg) {
    (void)self;
    const char *text = PyUnicode_AsUTF8(arg);
    if (text == NULL) return NULL;
    pylogsink_call_enter();
    pylogsink_emit(PYLOGSINK_WARN, "smoke_ext", __FILE__, __LINE__, text, strlen(text));
    if (pylogsink_call_exit() < 0) return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {{"say", say, METH_O, NULL}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "smoke_ext", NULL, -1, methods};

PyMODINIT_FUNC PyInit_smoke_ext(void) {
    if (pylogsink_init(NULL, "info") < 0) return NULL;
    return PyModule_Create(&module);
}
'''

SETUP = '''
import pylogsink
from setuptools import Extension, setup

setup(
    name="smoke-ext",
    ext_modules=[
        Extension(
            "smoke_ext",
            ["smoke_ext.c"],
            include_dirs=[pylogsink.get_include()],
            extra_link_args=pylogsink.get_link_args(),
        )
    ],
)
'''

# The extension's line, in a child process, into a replaced sys.stderr.
USE = '''
import contextlib, io, smoke_ext
err = io.StringIO()
with contextlib.redirect_stderr(err):
    smoke_ext.say("hello from C")
print(err.getvalue(), end="")
'''


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

    module = pylogsink._pylogsink.__file__
    size = os.path.getsize(module)
    check(f"the extension module is at most {MODULE_BYTES:,} bytes", size <= MODULE_BYTES, f"{size:,} bytes")

    if "--no-compiler" in sys.argv:
        print("skipped: the C extension (--no-compiler)")
        return
    with tempfile.TemporaryDirectory() as tmp:
        for name, text in (("smoke_ext.c", C_SOURCE), ("setup.py", SETUP), ("use.py", USE)):
            with open(os.path.join(tmp, name), "w", encoding="utf-8") as f:
                f.write(textwrap.dedent(text))
        build = [sys.executable, "setup.py", "-q", "build_ext", "--inplace"]
        done = subprocess.run(build, cwd=tmp, capture_output=True, text=True, timeout=600)
        check("a C extension builds with this platform's compiler and get_link_args()", done.returncode == 0, (done.stdout + done.stderr)[-2000:])
        done = subprocess.run([sys.executable, "use.py"], cwd=tmp, capture_output=True, text=True, timeout=120)
        said = "WARN" in done.stdout and "smoke_ext" in done.stdout and "hello from C" in done.stdout
        check("its line reaches sys.stderr", said, (done.stdout + done.stderr)[-2000:])


if __name__ == "__main__":
    main()
