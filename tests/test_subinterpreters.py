"""Subinterpreters: pylogsink runs in the main interpreter only.

Its Python thread and the objects it keeps live as long as the process,
so they belong to the main interpreter. Set up from a legacy (shared-GIL)
subinterpreter, the thread started there kept the subinterpreter from
ending: CPython 3.12 aborted at exit ("Py_EndInterpreter: thread still has
a frame"). Now the import there is an ImportError that says why, and the
process ends cleanly; the main interpreter imports and logs as before,
whichever imported first. An isolated subinterpreter (own GIL) refuses the
extension on its own (CPython's ImportError), which these tests leave alone.

Each scenario runs 10 times, each in a child process with a timeout.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import NO_C_COMPILER_ON_WINDOWS, build_extension, records

RUNS = 10
REFUSED = (
    "ImportError: pylogsink runs in the main interpreter only: "
    "a subinterpreter cannot host its Python thread; import this extension in the main interpreter"
)


def legacy_way() -> str | None:
    """The module that makes a legacy subinterpreter in this CPython."""
    if sys.version_info >= (3, 13):
        way = "_interpreters"
    elif sys.version_info >= (3, 12):
        way = "_xxsubinterpreters"
    else:
        way = "_testcapi"
    return way if importlib.util.find_spec(way) else None


LEGACY_WAY = legacy_way()
pytestmark = pytest.mark.skipif(
    LEGACY_WAY is None, reason=f"CPython {sys.version.split()[0]} has no module that makes a legacy subinterpreter"
)

# legacy(code, close): runs code in a new legacy subinterpreter, then ends
# it (close) or leaves it to the exit. _testcapi.run_in_subinterp always
# ends it at once.
LEGACY = """
import sys

def legacy(code, close):
    if sys.version_info >= (3, 13):
        import _interpreters as interpreters
        interp = interpreters.create(interpreters.new_config("legacy"))
        failed = interpreters.exec(interp, code)
        assert failed is None, failed
    elif sys.version_info >= (3, 12):
        import _xxsubinterpreters as interpreters
        interp = interpreters.create(isolated=False)
        interpreters.run_string(interp, code)
    else:
        import _testcapi
        assert _testcapi.run_in_subinterp(code) == 0
        return
    if close:
        interpreters.destroy(interp)

def isolated(code):
    if sys.version_info >= (3, 13):
        import _interpreters as interpreters
        interp = interpreters.create()
        failed = interpreters.exec(interp, code)
        assert failed is None, failed
    else:
        import _xxsubinterpreters as interpreters
        interp = interpreters.create(isolated=True)
        interpreters.run_string(interp, code)
    interpreters.destroy(interp)
"""

# What the subinterpreter runs: import, then log if the import worked.
IMPORT_AND_LOG = {
    "pylogsink": "import pylogsink\npylogsink.runtime.log_lines(3)\n",
    "pylogsink_testext": "import pylogsink_testext\npylogsink_testext.log_at('warn', 'sub', 'from the subinterpreter')\n",
    "c_rt": "import c_rt\n",
}


def in_subinterpreter(code: str) -> str:
    """``code`` as the subinterpreter runs it: an ImportError is printed."""
    return "try:\n" + textwrap.indent(code, "    ") + "except ImportError as e:\n    print('ImportError:', e, flush=True)\nelse:\n    print('imported', flush=True)\n"


def run(main: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-c", LEGACY + textwrap.dedent(main) + "\nprint('main done', flush=True)\n"],
        capture_output=True,
        text=True,
        timeout=60,
        **kwargs,  # type: ignore[call-overload]
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Fatal Python error" not in done.stderr, done.stderr
    assert done.stdout.endswith("main done\n"), done.stdout + done.stderr
    return done


def ends(close: bool) -> None:
    if not close and LEGACY_WAY == "_testcapi":
        pytest.skip("_testcapi.run_in_subinterp ends the subinterpreter at once")


CLOSE = pytest.mark.parametrize("close", [True, False], ids=["closed", "left_to_the_exit"])


@CLOSE
def test_plain_python_in_a_legacy_subinterpreter_ends_cleanly(close: bool) -> None:
    ends(close)
    code = in_subinterpreter("import json, logging\nlogging.getLogger('sub').warning('from the subinterpreter')\n")
    for _ in range(RUNS):
        done = run(f"legacy({code!r}, {close})")
        assert done.stdout == "imported\nmain done\n"


@CLOSE
@pytest.mark.parametrize("module", ["pylogsink", "pylogsink_testext"])
def test_an_import_in_a_legacy_subinterpreter_is_an_import_error_and_the_process_ends_cleanly(
    module: str, close: bool, clean_env: dict[str, str]
) -> None:
    ends(close)
    code = in_subinterpreter(IMPORT_AND_LOG[module])
    for _ in range(RUNS):
        done = run(f"legacy({code!r}, {close})", env=clean_env)
        assert done.stdout == REFUSED + "\nmain done\n"


@CLOSE
def test_imported_in_main_first_the_subinterpreters_import_is_refused_and_main_logs_on(
    close: bool, clean_env: dict[str, str]
) -> None:
    ends(close)
    code = in_subinterpreter(IMPORT_AND_LOG["pylogsink"])
    main = f"""
    import pylogsink
    pylogsink.runtime.log_lines(2)
    legacy({code!r}, {close})
    pylogsink.runtime.log_lines(2)
    """
    for _ in range(RUNS):
        done = run(main, env=clean_env)
        assert done.stdout == REFUSED + "\nmain done\n"
        assert len(records(done.stderr)) == 4, done.stderr


@CLOSE
def test_main_imports_and_logs_after_the_subinterpreters_import_was_refused(
    close: bool, clean_env: dict[str, str]
) -> None:
    ends(close)
    code = in_subinterpreter(IMPORT_AND_LOG["pylogsink"])
    main = f"""
    legacy({code!r}, {close})
    import pylogsink
    pylogsink.runtime.log_lines(2)
    """
    for _ in range(RUNS):
        done = run(main, env=clean_env)
        assert done.stdout == REFUSED + "\nmain done\n"
        assert len(records(done.stderr)) == 2, done.stderr


@pytest.mark.skipif(LEGACY_WAY == "_testcapi", reason="CPython before 3.12 has no isolated subinterpreter")
@pytest.mark.parametrize("module", ["pylogsink", "pylogsink_testext"])
def test_an_isolated_subinterpreter_refuses_the_extension_with_cpythons_import_error(
    module: str, clean_env: dict[str, str]
) -> None:
    code = in_subinterpreter(IMPORT_AND_LOG[module])
    for _ in range(RUNS):
        done = run(f"isolated({code!r})", env=clean_env)
        assert done.stdout.startswith("ImportError: module ") and "does not support loading in subinterpreters" in done.stdout, done.stdout
        assert "pylogsink runs in the main interpreter only" not in done.stdout


@pytest.fixture(scope="module")
def c_rt(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tests/c_abi's C extension (pylogsink_init in its PyInit_c_rt)."""
    if sys.platform == "win32":
        pytest.skip(NO_C_COMPILER_ON_WINDOWS)
    return build_extension(Path(__file__).parent / "c_abi", tmp_path_factory.mktemp("c_abi"))


def test_the_c_abi_in_a_legacy_subinterpreter_is_refused_or_set_up_in_main_then_main_imports(
    c_rt: Path, clean_env: dict[str, str]
) -> None:
    """pylogsink_init refuses a subinterpreter with an ImportError. From
    CPython 3.13 on, the init function of a single-phase module (c_rt's) runs
    with the main interpreter active, the subinterpreter getting a copy of
    the module: there pylogsink is set up in main and the import works."""
    code = in_subinterpreter(IMPORT_AND_LOG["c_rt"])
    main = f"""
    legacy({code!r}, True)
    import c_rt
    print("main imported", flush=True)
    """
    in_sub = "imported" if sys.version_info >= (3, 13) else REFUSED
    for _ in range(RUNS):
        done = run(main, env={**clean_env, "PYTHONPATH": str(c_rt)})
        assert done.stdout == in_sub + "\nmain imported\nmain done\n"
