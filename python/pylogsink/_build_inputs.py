"""Where a C or C++ extension finds pylogsink's build inputs.

C and C++ runtimes cannot use the Rust crate, so the wheel ships the C ABI
(headers and a static library) the way pybind11 and numpy ship theirs: a
``setup.py``, scikit-build-core, meson or CMake build asks the installed
package where they are, and needs nothing from a source checkout.
"""

from __future__ import annotations

import os

# os.path, not pathlib: pathlib alone took half of `import pylogsink`.
_HERE = os.path.dirname(os.path.realpath(__file__))


class CLibraryMissingError(RuntimeError):
    """This pylogsink has no C library (``lib/libpylogsink.a`` and
    ``lib/link-args.txt``): it was put together without the package's build,
    which makes them."""


def _lib_file(name: str) -> str:
    path = os.path.join(_HERE, "lib", name)
    if not os.path.isfile(path):
        raise CLibraryMissingError(
            f"pylogsink's C library is missing: no {path}. This pylogsink was not built by its "
            "own build, which makes it: install a pylogsink wheel, or build one from the source "
            "with `pip install .`, `pip wheel .`, `python -m build` or `maturin build` "
            "(each builds the C library as well)."
        )
    return path


def get_include() -> str:
    """The directory that holds the headers: ``pylogsink.h`` and
    ``pylogsink.hpp`` for bindings, ``pylogsink_emit.h`` (the log function,
    no Python header needed), ``pylogsink_spdlog.hpp`` and
    ``pylogsink_glog.hpp`` (sinks for spdlog and glog)."""
    return os.path.join(_HERE, "include")


def get_library() -> str:
    """The path of the static library: ``libpylogsink.a`` (``pylogsink.lib``
    in a wheel built with MSVC).

    One library serves extensions for every CPython 3.11 and newer: it uses
    stable-ABI symbols only. Raises ``CLibraryMissingError`` (a
    ``RuntimeError``) if the package has no C library.
    """
    msvc = os.path.join(_HERE, "lib", "pylogsink.lib")
    return msvc if os.path.isfile(msvc) else _lib_file("libpylogsink.a")


def get_link_args() -> list[str]:
    """The linker arguments an extension needs: the static library, then
    the system libraries it uses (``-lpthread``, ``-ldl``, ...). Raises
    ``CLibraryMissingError`` (a ``RuntimeError``) if the package has no C
    library."""
    with open(_lib_file("link-args.txt"), encoding="utf-8") as args:
        libs = args.read().split()
    return [get_library(), *libs]


def get_cmake_dir() -> str:
    """The directory of ``pylogsinkConfig.cmake``, for CMake's
    ``find_package(pylogsink CONFIG)``; it defines ``pylogsink::pylogsink``.
    Raises ``CLibraryMissingError`` (a ``RuntimeError``) if the package has
    no C library, which the config links."""
    _lib_file("link-args.txt")
    get_library()
    return os.path.join(_HERE, "cmake")
