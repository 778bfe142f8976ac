"""The examples in examples/, each a project of its own, built and
installed by scripts/test.sh as a user would build theirs (maturin for the
PyO3 one, pip with setuptools and pybind11 for the C++ one): they import,
log as the docs say, and the docs' snippets are taken from them."""

from __future__ import annotations

import ast
import importlib
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from conftest import records

ROOT = Path(__file__).resolve().parent.parent
# pip builds the pybind11 example with setuptools and the platform's C++
# compiler, which on Windows is MSVC: scripts/test_windows.sh has none.
needs_cpp = pytest.mark.skipif(
    sys.platform == "win32", reason="the pybind11 example needs a C++ compiler for Windows (MSVC)"
)
# The module, the variable its users set, and the source file its records name.
EXAMPLES = [
    ("my_runtime", "MY_RUNTIME_LOG", "lib.rs"),
    ("my_cpp_runtime", "MY_CPP_RUNTIME_LOG", "my_cpp_runtime.cpp"),
]
MARKS = {"my_cpp_runtime": [needs_cpp]}
# As one parameter (the fixture's) and as three (parametrize's).
EXAMPLE_PARAMS = [pytest.param(e, marks=MARKS.get(e[0], []), id=e[0]) for e in EXAMPLES]
EXAMPLE_ARGS = [pytest.param(*e, marks=MARKS.get(e[0], []), id=e[0]) for e in EXAMPLES]


@pytest.fixture(params=EXAMPLE_PARAMS)
def example(request: pytest.FixtureRequest) -> Iterator[tuple[ModuleType, str, str]]:
    name, env_var, source = request.param
    module = importlib.import_module(name)
    before = module.log_filter()
    yield module, env_var, source
    module.set_log_filter(before)


def test_capsys_gets_the_line(example: tuple[ModuleType, str, str], capsys: pytest.CaptureFixture[str]) -> None:
    module, _, source = example
    assert module.log_filter() == "warn"  # the default the example chose
    assert module.load("model.pte") == 9
    assert capsys.readouterr().err == ""  # Info is below the default
    module.set_log_filter("info")
    assert module.load("model.pte") == 9
    [line] = records(capsys.readouterr().err)
    assert re.fullmatch(rf"\[\S+Z INFO  {module.__name__} {re.escape(source)}:\d+\] loading model\.pte", line), line


def test_error_carries_the_lines(example: tuple[ModuleType, str, str], capsys: pytest.CaptureFixture[str]) -> None:
    module, _, _ = example
    with pytest.raises(RuntimeError) as raised:
        module.load("")
    assert str(raised.value) == "load failed\nErrors logged during the call:\n  no path given"
    # The Error line is on stderr too; the Info line before it is filtered.
    [line] = records(capsys.readouterr().err)
    assert line.endswith("] no path given") and " ERROR " in line


class Recorder:
    """A replaced sys.stderr that keeps each write apart."""

    def __init__(self) -> None:
        self.writes: list[str] = []

    def write(self, text: str) -> int:
        self.writes.append(text)
        return len(text)

    def flush(self) -> None:
        pass


def test_a_loop_holding_the_gil_shows_each_step_at_its_flush() -> None:
    # my_runtime.train flushes at each step's end: a replaced sys.stderr
    # gets one write per step, in order, while the call runs.
    import my_runtime

    recorder = Recorder()
    before, sys.stderr = sys.stderr, recorder  # type: ignore[assignment]
    try:
        my_runtime.train(10)
    finally:
        sys.stderr = before
    progress = [records(text) for text in recorder.writes]
    assert [len(lines) for lines in progress] == [1] * 10
    assert [lines[0].rsplit("] ", 1)[1] for lines in progress] == [f"Progress: {10 * n}%" for n in range(1, 11)]


def test_phases_in_helpers_without_py_show_their_lines_at_each_flush_lines() -> None:
    # my_runtime.prepare runs two phases in helpers that have no `py`; each
    # ends with pylogsink::flush_lines: one write per phase, not one at the
    # return.
    import my_runtime

    recorder = Recorder()
    before, sys.stderr = sys.stderr, recorder  # type: ignore[assignment]
    try:
        assert my_runtime.prepare(["low", "lower"]) == 6
    finally:
        sys.stderr = before
    phases = [[line.rsplit("] ", 1)[1] for line in records(text)] for text in recorder.writes]
    assert phases == [["counted 6 pairs"], ["queued 6 pairs"]]


@needs_cpp
def test_cpp_call_guard(capsys: pytest.CaptureFixture[str]) -> None:
    import my_cpp_runtime

    my_cpp_runtime.set_log_filter("info")
    try:
        assert my_cpp_runtime.load_released("model.pte") == 9
    finally:
        my_cpp_runtime.set_log_filter("warn")
    [line] = records(capsys.readouterr().err)
    assert line.endswith("] loading model.pte")


@pytest.mark.parametrize(("name", "env_var", "source"), EXAMPLE_ARGS)
@pytest.mark.parametrize(
    ("value", "shown"),
    [(None, False), ("info", True), ("warn,{name}=debug", True), ("info,{name}=error", False)],
    ids=["unset", "info", "target-debug", "target-error"],
)
def test_filter_variable(name: str, env_var: str, source: str, value: str | None, shown: bool) -> None:
    env = {k: v for k, v in os.environ.items() if k != env_var}
    if value is not None:
        env[env_var] = value.format(name=name)
    code = f"import {name}; print({name}.log_filter()); {name}.load('model.pte')"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == (value or "warn").format(name=name)
    assert ("] loading model.pte" in done.stderr) == shown, done.stderr


def test_pyo3_stub_matches_the_module() -> None:
    import my_runtime

    text = (ROOT / "examples/pyo3-extension/my_runtime.pyi").read_text()
    stub = ast.parse(text)
    # It runs as Python: every name its annotations use is imported.
    exec(compile(stub, "my_runtime.pyi", "exec"), {})
    in_stub = {node.name for node in stub.body if isinstance(node, ast.FunctionDef)}
    exported = {n for n in dir(my_runtime) if not n.startswith("_") and not isinstance(getattr(my_runtime, n), ModuleType)}
    assert in_stub == exported


def snippets(doc: Path) -> list[tuple[str, str]]:
    """The code blocks of ``doc`` marked ``<!-- from FILE -->``: (FILE, code)."""
    pattern = re.compile(r"<!-- from (\S+) -->\n```[a-z]*\n(.*?)^```$", re.S | re.M)
    return pattern.findall(doc.read_text())


# The examples' files each page shows: the READMEs show one PyO3 snippet
# (and the main one a C++ one), the chapters the rest. tests/test_docs.py
# checks every block of every page; this, that the examples stay shown.
SHOWN = {
    "README.md": {
        "examples/pyo3-extension/Cargo.toml",
        "examples/pyo3-extension/src/lib.rs",
        "examples/pybind11-extension/src/my_cpp_runtime.cpp",
    },
    "crates/pylogsink/README.md": {"examples/pyo3-extension/src/lib.rs"},
    "docs/pyo3.md": {"examples/pyo3-extension/Cargo.toml", "examples/pyo3-extension/src/lib.rs"},
    "docs/filters.md": {"examples/pyo3-extension/my_runtime.pyi"},
    "docs/from-pyo3-log.md": {"examples/pyo3-extension/Cargo.toml", "examples/pyo3-extension/src/lib.rs"},
    "docs/c-cpp.md": {"examples/pybind11-extension/setup.py", "examples/pybind11-extension/src/my_cpp_runtime.cpp"},
}


@pytest.mark.parametrize("doc", sorted(SHOWN))
def test_readme_snippets_are_the_examples(doc: str) -> None:
    found = [(path, code) for path, code in snippets(ROOT / doc) if path.startswith("examples/")]
    assert {path for path, _ in found} == SHOWN[doc]
    for path, code in found:
        assert code in (ROOT / path).read_text(), f"{doc}: a block differs from {path}"
