#!/usr/bin/env bash
# Builds the package into .venv and runs the demo: the two-thread deadlock
# under the naive sink and under pylogsink.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check "maturin>=1.8,<2"
scripts/build-c.sh
rm -rf dist
.venv/bin/python -m maturin build --release -q -o dist
.venv/bin/python -m pip install -q --disable-pip-version-check --force-reinstall --no-deps dist/pylogsink-*.whl
.venv/bin/python -m pylogsink.demo "$@"
