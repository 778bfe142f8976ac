"""Where a C or C++ extension finds pylogsink's build inputs.

C and C++ runtimes cannot use the Rust crate, so the wheel ships the C ABI
(headers and a static library) the way pybind11 and numpy ship theirs: a
``setup.py``, scikit-build-core, meson or CMake build asks the installed
package where they are, and needs nothing from a source checkout.
"""

from __future__ import annotations

from pathlib import Path

_HERE = Path(__file__).resolve().parent


def get_include() -> str:
    """The directory that holds the headers: ``pylogsink.h`` and
    ``pylogsink.hpp`` for bindings, ``pylogsink_emit.h`` (the log function,
    no Python header needed), ``pylogsink_spdlog.hpp`` and
    ``pylogsink_glog.hpp`` (sinks for spdlog and glog)."""
    return str(_HERE / "include")


def get_library() -> str:
    """The path of the static library, ``libpylogsink.a``.

    One library serves extensions for every CPython 3.10 and newer: it uses
    stable-ABI symbols only.
    """
    library = _HERE / "lib" / "libpylogsink.a"
    if not library.is_file():
        raise FileNotFoundError(
            f"{library} is missing: this pylogsink was built without its C library "
            "(scripts/build-c.sh builds it before the wheel)"
        )
    return str(library)


def get_link_args() -> list[str]:
    """The linker arguments an extension needs: the static library, then
    the system libraries it uses (``-lpthread``, ``-ldl``, ...)."""
    libs = (_HERE / "lib" / "link-args.txt").read_text().split()
    return [get_library(), *libs]


def get_cmake_dir() -> str:
    """The directory of ``pylogsinkConfig.cmake``, for CMake's
    ``find_package(pylogsink CONFIG)``; it defines ``pylogsink::pylogsink``."""
    return str(_HERE / "cmake")
