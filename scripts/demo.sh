#!/usr/bin/env bash
# Builds the package into .venv and runs the demo: the two-thread deadlock
# under the naive sink and under pylogsink, in the demo runtime and in a C++
# (pybind11) extension that uses the C ABI.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check "maturin>=1.8,<2"
rm -rf dist dist-debug
# The C library comes with the wheel (crates/pylogsink-py/build.rs).
.venv/bin/python -m maturin build --release -q -o dist
.venv/bin/python -m pip install -q --disable-pip-version-check --force-reinstall --no-deps dist/pylogsink-*.whl
# The C++ rows: the pybind11 extension of the C ABI tests, built against
# the installed package (needs a C and C++ compiler).
cpp=()
if command -v g++ >/dev/null; then
  .venv/bin/python -m pip install -q --disable-pip-version-check setuptools "pybind11>=2.12"
  rm -rf target/c-abi-demo
  mkdir -p target && cp -r tests/c_abi target/c-abi-demo
  (cd target/c-abi-demo && ../../.venv/bin/python setup.py -q build_ext --inplace >/dev/null)
  cpp=(--cpp target/c-abi-demo)
else
  echo "no g++: the demo runs without its C++ rows" >&2
fi
.venv/bin/python -m pylogsink "${cpp[@]}" "$@"
