#!/usr/bin/env bash
# The long escaping checks: pylogsink's decoding against CPython's
# bytes.decode("utf-8", "backslashreplace") on 100 million generated inputs,
# then the cargo-fuzz target (needs a nightly toolchain and cargo-fuzz).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check "maturin>=1.8,<2" pytest pytest-timeout
.venv/bin/python -m maturin develop --release -q
PYLOGSINK_DIFF_CASES="${PYLOGSINK_DIFF_CASES:-100000000}" \
  .venv/bin/python -m pytest -p no:cacheprovider --timeout 0 tests/test_format.py
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz
cargo +nightly fuzz run escape -- -max_total_time="${FUZZ_SECONDS:-600}"
