"""The Python package itself: one version (the workspace's Cargo.toml),
stubs for what the native module exports, ``python -m pylogsink``, and
the one error for a package without its C library."""

from __future__ import annotations

import ast
import importlib.resources
import inspect
import os
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest

import pylogsink
import pylogsink._pylogsink as native

ROOT = Path(__file__).resolve().parent.parent


def test_version_comes_from_cargo() -> None:
    cargo = (ROOT / "Cargo.toml").read_text()
    [version] = re.findall(r'^\[workspace\.package\]\n(?:.*\n)*?version = "([^"]+)"', cargo, re.M)
    assert pylogsink.__version__ == version
    project = (ROOT / "pyproject.toml").read_text().split("[project]")[1].split("\n[")[0]
    assert 'dynamic = ["version"]' in project
    assert not re.search(r"^version\s*=", project, re.M)


def test_the_version_is_the_metadatas() -> None:
    from importlib.metadata import version

    assert pylogsink.__version__ == version("pylogsink")


# What `import pylogsink` took most of its time for (`python -X importtime`):
# importlib.metadata (the version), pathlib, logging and typing.
SLOW_IMPORTS = {"importlib.metadata", "pathlib", "logging", "typing"}


@pytest.mark.parametrize("module", ["pylogsink", "pylogsink.ffmpeg", "pylogsink.sqlite"])
def test_import_takes_none_of_the_slow_modules(module: str) -> None:
    # A .pth line imports pylogsink.sqlite or pylogsink.ffmpeg at every
    # start of Python: what the bare interpreter has not imported already
    # (bench/run.py, section 19, times it).
    show = "import sys; print(' '.join(sorted(sys.modules)))"
    bare, imported = (
        set(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split())
        for code in (show, f"import {module}; {show}")
    )
    assert module in imported
    assert not (imported - bare) & SLOW_IMPORTS, sorted((imported - bare) & SLOW_IMPORTS)


def test_the_wheels_smoke_test_passes_here() -> None:
    # What the release workflow runs against each wheel it built, on a
    # runner of the wheel's platform (.github/workflows/release.yml). The
    # Windows lane runs under wine, with no C compiler.
    no_compiler = ["--no-compiler"] if sys.platform == "win32" else []
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "smoke_wheel.py"), *no_compiler],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT / "tests",
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("ok: ") == (6 if no_compiler else 8), done.stdout


def test_the_wheel_ships_its_types() -> None:
    files = importlib.resources.files("pylogsink")
    assert files.joinpath("py.typed").is_file()
    assert files.joinpath("_pylogsink.pyi").is_file()


def stub_functions(tree: ast.Module) -> dict[str, list[str]]:
    """The stub's functions (methods as Class.name) and their parameter names."""
    found: dict[str, list[str]] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            found[node.name] = [a.arg for a in node.args.args + node.args.kwonlyargs]
        elif isinstance(node, ast.ClassDef):
            found[node.name] = []
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    found[f"{node.name}.{item.name}"] = [a.arg for a in item.args.args if a.arg != "self"]
    return found


def test_stub_matches_the_native_module() -> None:
    stub = stub_functions(ast.parse(importlib.resources.files("pylogsink").joinpath("_pylogsink.pyi").read_text()))
    runtime: dict[str, list[str]] = {}
    for name in dir(native):
        # The private functions the package's Python code calls are typed
        # too; dunders are the module's own.
        if name.startswith("__"):
            continue
        obj = getattr(native, name)
        if isinstance(obj, type):
            runtime[name] = []
            for method in (m for m in vars(obj) if not m.startswith("_")):
                params = inspect.signature(getattr(obj, method)).parameters
                runtime[f"{name}.{method}"] = [p for p in params if p != "self"]
            # A class Python code makes: its constructor's parameters.
            if "__new__" in vars(obj) and obj.__text_signature__:
                runtime[f"{name}.__init__"] = list(inspect.signature(obj).parameters)
        else:
            runtime[name] = list(inspect.signature(obj).parameters)
    # A native __call__ shows (*args, **kwargs): the stub's is checked to
    # exist only.
    for called in [name for name in stub if name.endswith(".__call__")]:
        assert "__call__" in vars(getattr(native, called.split(".")[0])), called
        del stub[called]
    assert stub == runtime
    # Everything the package exports is typed: the native functions through
    # the stub, the rest in Python.
    typed_in_python = {"get_cmake_dir", "get_include", "get_library", "get_link_args", "capture_output"}
    assert set(pylogsink.__all__) <= set(stub) | typed_in_python
    assert set(pylogsink.runtime.__all__) <= set(stub)


def test_python_m_pylogsink_runs_the_demo() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pylogsink", "--iterations", "20", "--timeout", "5", "--exit-runs", "0"],
        capture_output=True,
        text=True,
        timeout=100,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "naive      hung (killed after 5 s)" in done.stdout
    assert "pylogsink completed every run; the naive sink hung." in done.stdout


def test_python_m_pylogsink_help_says_what_it_does_in_whole_sentences() -> None:
    done = subprocess.run([sys.executable, "-m", "pylogsink", "--help"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: python -m pylogsink ")
    # The description is the module's first paragraph, whole: it ends a
    # sentence, and says both halves of the demo.
    description = " ".join(done.stdout.split("\n\n")[1].split())
    assert description.endswith("."), description
    assert "naive sink and under pylogsink" in description and "daemon threads" in description


def test_a_missing_c_library_raises_one_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A package put together without its build (no lib/) says so, and how
    to get one that has it, from every function that needs the library."""
    from pylogsink import _build_inputs

    monkeypatch.setattr(_build_inputs, "_HERE", tmp_path)
    for function in (pylogsink.get_library, pylogsink.get_link_args, pylogsink.get_cmake_dir):
        with pytest.raises(_build_inputs.CLibraryMissingError, match="C library is missing") as raised:
            function()
        assert isinstance(raised.value, RuntimeError)
        message = str(raised.value)
        assert str(tmp_path / "lib") in message
        assert "pip install ." in message and "maturin build" in message
    # The headers are in every copy of the package, built or not.
    assert pylogsink.get_include() == str(tmp_path / "include")


def test_the_declared_cpythons_are_the_tested_ones() -> None:
    # scripts/pythons.sh lists what make test runs the suite on; the
    # package's metadata and its abi3 floor say the same, and no more.
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = sorted(
        c.rsplit(" :: ", 1)[1]
        for c in project["classifiers"]
        if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)
    )
    minors = re.search(r'^minors="([\d ]+)"$', (ROOT / "scripts" / "pythons.sh").read_text(), re.M)
    assert minors is not None
    tested = [f"3.{m}" for m in minors.group(1).split()]
    assert declared == tested
    assert project["requires-python"] == f">={tested[0]}"
    assert "%d.%d" % sys.version_info[:2] in tested
    floor = "abi3-py" + tested[0].replace(".", "")
    for manifest in ["crates/pylogsink-py/Cargo.toml", "crates/pylogsink-c/Cargo.toml"]:
        assert re.findall(r"abi3-py\d+", (ROOT / manifest).read_text()) == [floor], manifest


def test_dir_shows_the_documented_api_and_nothing_else() -> None:
    # docs/api.md names each function of the package with its parameters;
    # the demo runtime stays apart, in pylogsink.runtime.
    api = (Path(__file__).resolve().parent.parent / "docs" / "api.md").read_text()
    documented = {
        name: [p.strip() for p in params.split(",") if p.strip()]
        for name, params in re.findall(r"^### `(\w+)\(([^)]*)\)`$", api, re.M)
    }
    shown = {
        name: list(inspect.signature(getattr(pylogsink, name)).parameters)
        for name in dir(pylogsink)
        if not name.startswith("_") and not isinstance(getattr(pylogsink, name), types.ModuleType)
    }
    assert shown == documented
    assert "log_lines" not in dir(pylogsink) and pylogsink.runtime.log_lines is not None


def test_the_packages_own_copy_is_set_from_the_package_and_pylogsink_log() -> None:
    # The functions are the package's own copy's, the ones pylogsink.ffmpeg
    # routes through; PYLOGSINK_LOG sets that copy's filter at import.
    assert pylogsink.set_log_filter is pylogsink._pylogsink.set_log_filter
    assert pylogsink.log_stats is pylogsink._pylogsink.log_stats
    code = "import pylogsink; print(pylogsink.log_filter(), pylogsink.log_destination())"
    env = {**os.environ, "PYLOGSINK_LOG": "ffmpeg=debug"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env)
    assert done.stdout.split() == ["ffmpeg=debug", "stderr"], done.stderr
    env.pop("PYLOGSINK_LOG")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env)
    assert done.stdout.split() == ["info", "stderr"], done.stderr
