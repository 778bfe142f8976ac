import pylogsink
from pybind11.setup_helpers import Pybind11Extension
from setuptools import setup

setup(ext_modules=[Pybind11Extension(
    "my_cpp_runtime", ["src/my_cpp_runtime.cpp"],
    include_dirs=[pylogsink.get_include()],
    extra_link_args=pylogsink.get_link_args(),
)])
