"""pylogsink: native log lines to the Python user, with no deadlock, no hang,
no lost capture and no lost crash lines.

The Rust crate ``pylogsink`` is what native extensions embed. This package
holds its demo runtime, ``pylogsink._pylogsink``: a small native runtime that
logs through pylogsink or through a naive sink, so that the scenarios
pylogsink exists for can be run for real (``python -m pylogsink``).

``capture_output()`` (and ``start_output_capture`` /
``stop_output_capture``) carries what any native library writes to fd 1 and
fd 2 (``printf``, ``std::cout``) into ``sys.stdout`` / ``sys.stderr``: pytest's
capture, a notebook's cell, ``redirect_stdout``. ``%load_ext pylogsink``
captures every cell of an IPython session.

C and C++ extensions build against the C ABI the package ships:
``get_include()``, ``get_library()``, ``get_link_args()`` and
``get_cmake_dir()``.
"""

from importlib.metadata import version as _version

from pylogsink._build_inputs import get_cmake_dir, get_include, get_library, get_link_args

from pylogsink.capture import (
    capture_output,
    flush_output_capture,
    load_ipython_extension,
    output_capture_active,
    start_output_capture,
    stop_output_capture,
    unload_ipython_extension,
)
from pylogsink._pylogsink import (
    BackgroundLogger,
    abort_with_fatal,
    backslashreplace,
    crash,
    execute,
    fail,
    fan_out,
    load_file,
    load_method,
    load_method_detached,
    load_program,
    log_destination,
    log_and_printf,
    log_filter,
    log_lines,
    log_raw,
    log_stats,
    log_then_block,
    log_slowly,
    log_then_hang,
    log_until_interrupted,
    noop,
    noop_in_call,
    outlive_call,
    panic_after_logging,
    set_log_destination,
    set_log_filter,
    set_sink,
    set_stall_wait,
    sink,
    start_background_logger,
    stderr_check,
    with_callback,
)

# The one version source is the workspace's Cargo.toml: maturin writes it
# into the package's metadata.
__version__: str = _version("pylogsink")

__all__ = [
    "BackgroundLogger",
    "abort_with_fatal",
    "backslashreplace",
    "capture_output",
    "crash",
    "execute",
    "fail",
    "fan_out",
    "flush_output_capture",
    "get_cmake_dir",
    "get_include",
    "get_library",
    "get_link_args",
    "load_file",
    "load_method",
    "load_method_detached",
    "load_program",
    "log_destination",
    "log_and_printf",
    "log_filter",
    "log_lines",
    "log_raw",
    "log_stats",
    "log_then_block",
    "log_slowly",
    "log_then_hang",
    "log_until_interrupted",
    "noop",
    "output_capture_active",
    "noop_in_call",
    "outlive_call",
    "panic_after_logging",
    "set_log_destination",
    "set_log_filter",
    "set_sink",
    "set_stall_wait",
    "sink",
    "start_background_logger",
    "start_output_capture",
    "stderr_check",
    "stop_output_capture",
    "with_callback",
]
