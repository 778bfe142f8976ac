"""Builds the C ABI test extensions against the installed pylogsink only:
its headers, static library and link arguments come from the package."""

import pylogsink
from pybind11.setup_helpers import Pybind11Extension
from setuptools import Extension, setup

common = {
    "include_dirs": [pylogsink.get_include()],
    "extra_link_args": pylogsink.get_link_args(),
}

setup(
    name="c-abi-test-extensions",
    ext_modules=[
        Extension("c_rt", ["c_rt.c"], extra_compile_args=["-std=c99", "-Wall", "-Werror"], **common),
        Pybind11Extension("cpp_rt", ["cpp_rt.cpp"], extra_compile_args=["-Wall", "-Werror"], **common),
    ],
)
