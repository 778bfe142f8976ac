"""pylogsink: native log lines to the Python user, with no deadlock, no hang,
no lost capture and no lost crash lines.

The Rust crate ``pylogsink`` is what native extensions embed. This package
holds the output capture, the C ABI's build inputs, and, apart from the
API, a demo runtime (``pylogsink.runtime``): a small native runtime that
logs through pylogsink or through a naive sink, so that the scenarios
pylogsink exists for can be run for real (``python -m pylogsink``).

The API, also in docs/api.md: ``capture_output()`` (and ``start_output_capture`` /
``stop_output_capture``) carries what any native library writes to fd 1 and
fd 2 (``printf``, ``std::cout``) into ``sys.stdout`` / ``sys.stderr``: pytest's
capture, a notebook's cell, ``redirect_stdout``. ``%load_ext pylogsink``
captures every cell of an IPython session.

The package's own copy of pylogsink, which carries the lines of what it
installs itself into (``pylogsink.ffmpeg``), is set with
``set_log_filter``, ``set_log_destination`` and ``set_log_budget`` (and the
variable ``PYLOGSINK_LOG``), and counts in ``log_stats``.

C and C++ extensions build against the C ABI the package ships:
``get_include()``, ``get_library()``, ``get_link_args()`` and
``get_cmake_dir()``.
"""

# __version__ is the workspace's Cargo.toml version, compiled into the
# native module (maturin writes the same into the package's metadata):
# reading it costs the import nothing, where importlib.metadata took 40 ms.
from pylogsink._build_inputs import get_cmake_dir, get_include, get_library, get_link_args
from pylogsink._pylogsink import (
    __version__,
    log_budget,
    log_destination,
    log_filter,
    log_stats,
    set_log_budget,
    set_log_destination,
    set_log_filter,
)

from pylogsink.capture import (
    capture_output,
    flush_output_capture,
    load_ipython_extension,
    output_capture_active,
    start_output_capture,
    stop_output_capture,
    unload_ipython_extension,
)

__all__ = [
    "capture_output",
    "flush_output_capture",
    "get_cmake_dir",
    "get_include",
    "get_library",
    "get_link_args",
    "log_budget",
    "log_destination",
    "log_filter",
    "log_stats",
    "output_capture_active",
    "set_log_budget",
    "set_log_destination",
    "set_log_filter",
    "start_output_capture",
    "stop_output_capture",
]


def __getattr__(name: str) -> object:
    # ``pylogsink.runtime``, the demo runtime, loaded on first use: it is not
    # part of the API, and stays out of ``dir(pylogsink)`` until then.
    if name == "runtime":
        import importlib

        return importlib.import_module("pylogsink.runtime")
    raise AttributeError(f"module 'pylogsink' has no attribute {name!r}")
