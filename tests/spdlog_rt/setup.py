"""Builds spdlog_rt, a pybind11 extension whose runtime logs through spdlog
(Debian's libspdlog-dev) with pylogsink's sink, as its authors would:
pylogsink's headers and library from the installed package, spdlog's flags
from pkg-config."""

import shlex
import subprocess

import pylogsink
from pybind11.setup_helpers import Pybind11Extension
from setuptools import setup


def pkg_config(*args: str) -> list[str]:
    return shlex.split(subprocess.check_output(["pkg-config", *args, "spdlog"], text=True))


setup(
    name="spdlog-rt",
    ext_modules=[
        Pybind11Extension(
            "spdlog_rt",
            ["spdlog_rt.cpp"],
            include_dirs=[pylogsink.get_include()],
            extra_compile_args=pkg_config("--cflags") + ["-Wall", "-Werror"],
            extra_link_args=pylogsink.get_link_args() + pkg_config("--libs"),
        )
    ],
)
