"""The package as it is built and shipped.

Every build route gives a package with the C library, its headers, link
arguments and CMake config, with no command before it: ``maturin build``,
``pip wheel .``, ``python -m build`` (the sdist, then the wheel from it),
and the sdist installed by pip into a fresh virtualenv, where a small C
extension then builds and imports against it. Each builds from a clean
copy of the source (the files git tracks or would, as they are now).
These are slow (each a release build, about a minute on two cores), so they
run on CPython 3.11 only: the routes do not depend on the interpreter that
drives them. They share one cargo target directory, target/build-routes,
and need network access to PyPI (pip's isolated builds fetch maturin).
``-m "not builds"`` leaves them out.

The wheels and sdist of ``make dist`` (dist/, which scripts/test.sh builds
first) are inspected without building anything: auditwheel puts the wheels
at manylinux_2_28 or older, the C library inside links against glibc 2.28,
and the licences go with the crate, the sdist and the wheel.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import textwrap
import zipfile
import zlib
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(
    sys.platform == "win32",
    reason="the build routes and make dist's wheels are Linux's (manylinux, glibc, auditwheel, zig)",
)

ROOT = Path(__file__).resolve().parent.parent
DIST = ROOT / "dist"
# The newest glibc the wheels and the C library may need (manylinux_2_28).
GLIBC = (2, 28)
LICENSES = ["LICENSE-MIT", "LICENSE-APACHE"]
# What every wheel of pylogsink holds for C and C++ extensions.
C_FILES = [
    "pylogsink/lib/libpylogsink.a",
    "pylogsink/lib/link-args.txt",
    "pylogsink/include/pylogsink.h",
    "pylogsink/include/pylogsink.hpp",
    "pylogsink/cmake/pylogsinkConfig.cmake",
]



def builds(test):  # type: ignore[no-untyped-def]
    """A build route's test: slow, on CPython 3.11 only."""
    for mark in (
        pytest.mark.builds,
        pytest.mark.timeout(900),
        pytest.mark.skipif(
            sys.version_info[:2] != (3, 11),
            reason="the build routes run on CPython 3.11 only (slow, and the same on every version)",
        ),
    ):
        test = mark(test)
    return test


def run(cmd: list[str | Path], cwd: Path | None = None, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        [str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=840
    )
    assert done.returncode == 0, f"{cmd} failed:\n{done.stdout[-4000:]}\n{done.stderr[-8000:]}"
    return done.stdout


def tool(name: str) -> str:
    """A command, from .venv (where scripts/test.sh puts maturin) or PATH."""
    found = ROOT / ".venv" / "bin" / name
    if found.is_file():
        return str(found)
    path = shutil.which(name)
    if path is None:
        pytest.skip(f"no {name}: scripts/test.sh installs it into .venv")
    return path


def importable(module: str) -> None:
    done = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"no {module} in this virtualenv (tests/requirements.txt)")


@pytest.fixture(scope="module")
def build_env() -> dict[str, str]:
    for name in ("cargo", "git"):
        if shutil.which(name) is None:
            pytest.skip(f"no {name}")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYO3_", "MATURIN_"))}
    env["CARGO_TARGET_DIR"] = str(ROOT / "target" / "build-routes")
    env.pop("VIRTUAL_ENV", None)
    return env


@pytest.fixture
def source(tmp_path_factory: pytest.TempPathFactory, build_env: dict[str, str]) -> Path:
    """A clean copy of the source, one for each route: what git tracks, or
    would (nothing it ignores: no target/, no built C library, no dist/)."""
    out = tmp_path_factory.mktemp("source") / "pylogsink"
    listed = run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT)
    for name in filter(None, listed.split("\0")):
        src = ROOT / name
        if not os.path.lexists(src):
            continue  # deleted, not yet committed
        dest = out / name
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dest, follow_symlinks=False)
    assert not (out / "python" / "pylogsink" / "lib").exists()
    return out


def check_wheel(wheel: Path) -> None:
    """The wheel holds the C library, headers, link arguments, CMake config
    and the licences."""
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        missing = [f for f in C_FILES if f not in names]
        assert not missing, f"{wheel.name} lacks {missing}"
        assert zf.read("pylogsink/lib/libpylogsink.a").startswith(b"!<arch>\n")
        args = zf.read("pylogsink/lib/link-args.txt").decode().split()
        assert "-lc" in args and "-lpthread" in args, args
        assert not any(a.startswith("-lpython") for a in args), args
        for license in LICENSES:
            assert any(n.endswith(f".dist-info/licenses/{license}") for n in names), (wheel.name, license)


def check_sdist(sdist: Path) -> None:
    """The sdist holds what the wheel is built from, the C library's crate
    included, and no built library."""
    with tarfile.open(sdist) as tf:
        names = {n.split("/", 1)[1] for n in tf.getnames() if "/" in n}
    needed = [
        "pyproject.toml",
        "Cargo.toml",
        "Cargo.lock",
        "crates/pylogsink/src/lib.rs",
        "crates/pylogsink-c/Cargo.toml",
        "crates/pylogsink-c/src/lib.rs",
        "crates/pylogsink-py/build.rs",
        "python/pylogsink/include/pylogsink.h",
        "python/pylogsink/include/pylogsink.hpp",
        "python/pylogsink/cmake/pylogsinkConfig.cmake",
        *LICENSES,
    ]
    missing = [f for f in needed if f not in names]
    assert not missing, f"{sdist.name} lacks {missing}"
    assert not any(n.startswith("python/pylogsink/lib/") for n in names)


@builds
def test_maturin_build_ships_the_c_library(source: Path, build_env: dict[str, str], tmp_path: Path) -> None:
    run([tool("maturin"), "build", "--release", "-q", "-o", tmp_path], cwd=source, env=build_env)
    [wheel] = tmp_path.glob("pylogsink-*.whl")
    check_wheel(wheel)


@builds
def test_pip_wheel_ships_the_c_library(source: Path, build_env: dict[str, str], tmp_path: Path) -> None:
    pip_wheel = [sys.executable, "-m", "pip", "wheel", "-q", "--no-cache-dir", "--no-deps"]
    run([*pip_wheel, "-w", tmp_path, source], env=build_env)
    [wheel] = tmp_path.glob("pylogsink-*.whl")
    check_wheel(wheel)


@builds
def test_python_m_build_ships_the_c_library(source: Path, build_env: dict[str, str], tmp_path: Path) -> None:
    importable("build")
    # The sdist first, then the wheel from the sdist, as `python -m build` does.
    run([sys.executable, "-m", "build", "-o", tmp_path, source], env=build_env)
    [sdist] = tmp_path.glob("pylogsink-*.tar.gz")
    check_sdist(sdist)
    [wheel] = tmp_path.glob("pylogsink-*.whl")
    check_wheel(wheel)


TINY_C = """
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>
#include <pylogsink.h>

static PyObject *hello(PyObject *self, PyObject *args) {
    static const char msg[] = "hello from C";
    pylogsink_call_enter();
    pylogsink_emit(PYLOGSINK_WARN, "tiny", __FILE__, __LINE__, msg, strlen(msg));
    if (pylogsink_call_exit() < 0) return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {{"hello", hello, METH_NOARGS, NULL}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "tiny", NULL, -1, methods};

PyMODINIT_FUNC PyInit_tiny(void) {
    PyObject *m = PyModule_Create(&module);
    if (m == NULL || pylogsink_init(NULL, NULL) < 0 || pylogsink_add_functions(m) < 0) {
        Py_XDECREF(m);
        return NULL;
    }
    return m;
}
"""

TINY_SETUP = """
import pylogsink
from setuptools import Extension, setup

setup(name="tiny", ext_modules=[Extension(
    "tiny", ["tiny.c"],
    include_dirs=[pylogsink.get_include()],
    extra_link_args=pylogsink.get_link_args(),
)])
"""


@builds
def test_the_sdist_installs_into_a_fresh_venv_and_a_c_extension_builds_against_it(
    source: Path, build_env: dict[str, str], tmp_path: Path
) -> None:
    if shutil.which("gcc") is None and shutil.which("cc") is None:
        pytest.skip("no C compiler")
    run([tool("maturin"), "sdist", "-o", tmp_path / "sdist"], cwd=source, env=build_env)
    [sdist] = (tmp_path / "sdist").glob("pylogsink-*.tar.gz")
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", venv])
    python = venv / "bin" / "python"
    pip = [python, "-m", "pip", "install", "-q", "--no-cache-dir", "--disable-pip-version-check"]
    run([*pip, sdist, "setuptools>=70.1"], env=build_env)
    ext = tmp_path / "ext"
    ext.mkdir()
    (ext / "tiny.c").write_text(TINY_C)
    (ext / "setup.py").write_text(TINY_SETUP)
    run([python, "setup.py", "-q", "build_ext", "--inplace"], cwd=ext, env=build_env)
    code = textwrap.dedent(
        """
        import os, pylogsink, tiny
        for f in (pylogsink.get_library(), pylogsink.get_include(), pylogsink.get_cmake_dir()):
            assert os.path.exists(f), f
        tiny.hello()
        print("filter:", tiny.log_filter())
        """
    )
    done = subprocess.run(
        [python, "-c", code], cwd=ext, env=build_env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "hello from C" in done.stderr
    assert "filter: warn" in done.stdout


# -- make dist's output, inspected -----------------------------------------


def dist_wheels() -> list[Path]:
    """The Linux wheels of make dist."""
    wheels = sorted(DIST.glob("pylogsink-*-manylinux_*.whl"))
    if not wheels:
        pytest.skip("no pylogsink wheel in dist/: make dist (scripts/test.sh runs it) builds them")
    return wheels


def test_dist_has_a_windows_wheel_with_its_c_library() -> None:
    # make dist also writes the win_amd64 abi3 wheel, built with MinGW
    # (scripts/windows_wheel.sh); the Windows lane installs and tests it.
    wheels = sorted(DIST.glob("pylogsink-*-cp311-abi3-win_amd64.whl"))
    if not wheels:
        pytest.skip("no Windows wheel in dist/: make dist builds it where rustup has a nightly toolchain and MinGW")
    [wheel] = wheels
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        link_args = z.read("pylogsink/lib/link-args.txt").decode().split()
    assert {"pylogsink/_pylogsink.pyd", "pylogsink/lib/libpylogsink.a", "pylogsink/include/pylogsink.h"} <= names
    assert "-lkernel32" in link_args and not any(a.startswith("-lpython") for a in link_args), link_args


# What a release may weigh: each wheel, and the extension module in it
# unpacked. With its debug information the module was 11 MB (Linux) and
# 17 MB (Windows), the Linux wheel 4.2 MB.
WHEEL_BYTES = 2_500_000
MODULE_BYTES = 4_000_000


def test_every_wheel_of_dist_is_small() -> None:
    wheels = sorted(DIST.glob("pylogsink-*.whl"))
    if not wheels:
        pytest.skip("no pylogsink wheel in dist/: make dist (scripts/test.sh runs it) builds them")
    for wheel in wheels:
        assert wheel.stat().st_size <= WHEEL_BYTES, f"{wheel.name}: {wheel.stat().st_size:,} bytes"
        with zipfile.ZipFile(wheel) as z:
            [module] = [i for i in z.infolist() if re.fullmatch(r"pylogsink/_pylogsink\..*(so|pyd)", i.filename)]
        assert module.file_size <= MODULE_BYTES, f"{wheel.name}: {module.filename} is {module.file_size:,} bytes"


def debuglink(module: bytes) -> tuple[str, int]:
    """The file name and CRC a module's .gnu_debuglink section names."""
    with tempfile.TemporaryDirectory() as tmp:
        path, out = Path(tmp, "module"), Path(tmp, "debuglink")
        path.write_bytes(module)
        subprocess.run(["objcopy", "--dump-section", f".gnu_debuglink={out}", str(path), str(Path(tmp, "copy"))], check=True)
        section = out.read_bytes()
    name = section[: section.index(b"\0")].decode()
    return name, int.from_bytes(section[-4:], "little")


def test_the_debug_information_of_every_wheel_is_in_dist_debug() -> None:
    # make dist builds the modules with line tables and moves them to
    # dist-debug/ (scripts/split_debug.py): each module names its file
    # there, and the file's CRC matches.
    wheels = sorted(DIST.glob("pylogsink-*.whl"))
    if not wheels:
        pytest.skip("no pylogsink wheel in dist/: make dist (scripts/test.sh runs it) builds them")
    for wheel in wheels:
        with zipfile.ZipFile(wheel) as z:
            [name] = [n for n in z.namelist() if re.fullmatch(r"pylogsink/_pylogsink\..*(so|pyd)", n)]
            module = z.read(name)
        file, crc = debuglink(module)
        assert file == Path(name).name + ".debug", (wheel.name, file)
        debug = ROOT / "dist-debug" / file
        assert debug.is_file(), f"{wheel.name}: no {debug}"
        assert zlib.crc32(debug.read_bytes()) == crc, f"{wheel.name}: {debug} is not the one its module names"


@pytest.mark.skipif(shutil.which("gdb") is None, reason="no gdb on this machine (apt-get install gdb)")
def test_gdb_finds_the_source_lines_of_a_wheel_module_beside_its_debug_file(tmp_path: Path) -> None:
    wheels = sorted(DIST.glob("pylogsink-*-cp311-abi3-manylinux*.whl"))
    if not wheels:
        pytest.skip("no abi3 wheel in dist/: make dist (scripts/test.sh runs it) builds it")
    with zipfile.ZipFile(wheels[0]) as z:
        z.extract("pylogsink/_pylogsink.abi3.so", tmp_path)
    module = tmp_path / "pylogsink" / "_pylogsink.abi3.so"

    def info_line() -> str:
        command = ["gdb", "-batch", "-nx", "-ex", "info line pylogsink_py_ffmpeg_emit", str(module)]
        return subprocess.run(command, capture_output=True, text=True, timeout=120).stdout

    # The wheel's module alone has no line tables.
    assert "No line number information" in info_line()
    shutil.copy(ROOT / "dist-debug" / "_pylogsink.abi3.so.debug", module.parent)
    assert re.search(r'Line \d+ of "crates/pylogsink-py/src/ffmpeg\.rs"', info_line()), info_line()


def glibc_versions(objdump: str) -> set[tuple[int, ...]]:
    return {tuple(map(int, v.split("."))) for v in re.findall(r"\(GLIBC_([0-9.]+)\)", objdump)}


def unresolved(objdump: str) -> list[str]:
    """Undefined dynamic symbols with no version (found in neither glibc nor
    libgcc_s at link time), less Python's (the interpreter provides them) and weak ones
    (which may stay unresolved): each would fail the import on a glibc
    that lacks it, and auditwheel does not see them."""
    found = []
    for line in objdump.splitlines():
        fields = line.split()
        if "*UND*" not in fields or re.search(r"\((GLIBC|GCC)_[0-9.]+\)", line) or " w " in line:
            continue
        name = fields[-1]
        if not re.match(r"_?Py|_Py", name):
            found.append(name)
    return found


def test_dist_has_the_wheel_this_cpython_installs() -> None:
    # make dist builds the abi3 wheel (CPython 3.11 and later) and one for
    # each CPython 3.12 and later found, 3.14 and 3.15 included.
    names = [w.name for w in dist_wheels()]
    tag = "cp%d%d" % sys.version_info[:2]
    assert any("-cp311-abi3-" in n for n in names), names
    if sys.version_info >= (3, 12):
        assert any(f"-{tag}-{tag}-manylinux_2_28_" in n for n in names), names


def test_dist_wheels_are_manylinux_2_28(tmp_path: Path) -> None:
    importable("auditwheel")
    if shutil.which("objdump") is None:
        pytest.skip("no objdump (binutils)")
    for wheel in dist_wheels():
        check_wheel(wheel)
        shown = run([sys.executable, "-m", "auditwheel", "show", wheel])
        tags = re.findall(r'platform tag: "manylinux_(\d+)_(\d+)_x86_64"', " ".join(shown.split()))
        assert tags, shown
        assert all((int(a), int(b)) <= GLIBC for a, b in tags), shown
        assert re.search(rf"manylinux_{GLIBC[0]}_{GLIBC[1]}_x86_64\.whl$", wheel.name), wheel.name
        with zipfile.ZipFile(wheel) as zf:
            [so] = [n for n in zf.namelist() if n.endswith(".so")]
            zf.extract(so, tmp_path / wheel.stem)
        dump = run(["objdump", "-T", tmp_path / wheel.stem / so])
        assert max(glibc_versions(dump)) <= GLIBC, wheel.name
        assert unresolved(dump) == [], wheel.name
        # No unwinder of its own (zig would link libunwind): the one glibc's
        # pthread_exit uses, libgcc_s's, or daemon threads crash at exit.
        assert re.search(r"\(GCC_[0-9.]+\)\s+_Unwind_Resume$", dump, re.M), wheel.name


def test_the_c_library_in_the_wheel_links_against_glibc_2_28(tmp_path: Path) -> None:
    """Everything in libpylogsink.a, linked into a shared object against
    zig's glibc 2.28, needs no symbol that glibc 2.28 lacks: an extension
    that links it can be manylinux_2_28. (The archive itself names no glibc
    version: its symbols get theirs when an extension links it.)"""
    if shutil.which("objdump") is None:
        pytest.skip("no objdump (binutils)")
    zig = next(
        (
            [str(py), "-m", "ziglang"]
            for py in (Path(sys.executable), ROOT / ".venv" / "bin" / "python")
            if py.is_file() and subprocess.run([py, "-c", "import ziglang"], capture_output=True).returncode == 0
        ),
        None,
    )
    if zig is None:
        pytest.skip("no ziglang (make dist installs it into .venv)")
    [wheel] = [w for w in dist_wheels() if "-abi3-" in w.name]
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(tmp_path, members=[n for n in zf.namelist() if n.startswith("pylogsink/lib/")])
    lib = tmp_path / "pylogsink" / "lib"
    so = tmp_path / "whole.so"
    target = f"x86_64-linux-gnu.{GLIBC[0]}.{GLIBC[1]}"
    args = (lib / "link-args.txt").read_text().split()
    whole = ["-Wl,--whole-archive", lib / "libpylogsink.a", "-Wl,--no-whole-archive"]
    run([*zig, "cc", "-target", target, "-shared", "-o", so, *whole, *args])
    dump = run(["objdump", "-T", so])
    versions = glibc_versions(dump)
    assert versions and max(versions) <= GLIBC, sorted(versions)
    assert unresolved(dump) == []
    # None of the archive's own symbols carries a version either.
    assert "GLIBC_" not in run(["nm", lib / "libpylogsink.a"])


def test_the_licences_go_with_the_crate_the_sdist_and_the_wheel() -> None:
    mit, apache = ((ROOT / name).read_text() for name in LICENSES)
    assert "Copyright (c) the pylogsink developers" in mit and "MIT License" in mit
    assert "Apache License" in apache and "Version 2.0, January 2004" in apache
    if shutil.which("cargo") is not None:
        listed = run(["cargo", "package", "--list", "--allow-dirty", "-q", "-p", "pylogsink"], cwd=ROOT).split()
        assert set(LICENSES) <= set(listed), listed
    [sdist] = DIST.glob("pylogsink-*.tar.gz") or [None]
    if sdist is None:
        pytest.skip("no sdist in dist/: make dist builds it")
    check_sdist(sdist)
    for wheel in dist_wheels():
        check_wheel(wheel)
