"""Builds the C library test extensions as their authors would: setuptools,
each library's flags from pkg-config, pylogsink's headers and static
library from the installed package, and the recipes of
examples/c-libraries (copied beside this file)."""

from __future__ import annotations

import subprocess

import pylogsink
from setuptools import Extension, setup


def pkg_config(*args: str) -> list[str]:
    return subprocess.run(["pkg-config", *args], check=True, capture_output=True, text=True).stdout.split()


def extension(name: str, sources: list[str], packages: list[str], link: list[str] | None = None, **more) -> Extension:
    """``packages`` by pkg-config; ``link``, when given, links instead of
    their --libs."""
    return Extension(
        name,
        sources,
        include_dirs=[pylogsink.get_include()],
        extra_compile_args=["-std=c11", "-Wall", "-Werror", *pkg_config("--cflags", *packages)],
        extra_link_args=[*(link or pkg_config("--libs", *packages)), *pylogsink.get_link_args()],
        **more,
    )


# SQLite's own copy: the static library, its symbols kept out of the module's.
libdir = pkg_config("--variable=libdir", "sqlite3")[0]
private_sqlite = [f"{libdir}/libsqlite3.a", "-Wl,--exclude-libs,libsqlite3.a", "-lm"]

setup(
    name="c-library-test-extensions",
    ext_modules=[
        extension("av_rt", ["av_rt.c", "ffmpeg_pylogsink.c"], ["libavcodec", "libavutil"]),
        extension("curl_rt", ["curl_rt.c", "curl_pylogsink.c"], ["libcurl"]),
        extension("sqlite_rt", ["sqlite_rt.c", "sqlite_pylogsink.c"], ["sqlite3"], private_sqlite),
        extension(
            "sqlite_rt_shared",
            ["sqlite_rt.c", "sqlite_pylogsink.c"],
            ["sqlite3"],
            define_macros=[("MODULE", "sqlite_rt_shared")],
        ),
    ],
)
