#!/usr/bin/env bash
# Builds what a release uploads into dist/: the sdist, the abi3 wheel (every
# CPython 3.10+), and a wheel for each CPython 3.12 and later found (no
# abi3: see scripts/test.sh). The wheels are built with zig for glibc 2.28
# (manylinux_2_28), the C library inside them included (crates/pylogsink-py/
# build.rs), so that they install on any Linux x86_64 with glibc 2.28 or
# later, and extensions that link the C library can be manylinux_2_28 too.
# maturin and zig (the ziglang package) come from .venv.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check "maturin>=1.8,<2" "ziglang>=0.13"
# maturin finds zig as `python3 -m ziglang`, with the python3 of .venv.
export PATH="$PWD/.venv/bin:$PATH"
maturin=(.venv/bin/maturin build --release -q --zig --compatibility manylinux_2_28 -o dist)
rm -rf dist
.venv/bin/maturin sdist -o dist
"${maturin[@]}"
for py in $(scripts/pythons.sh 2>/dev/null); do
  if "$py" -c 'import sys; sys.exit(sys.version_info < (3, 12))'; then
    "${maturin[@]}" --no-default-features -i "$py"
  fi
done
ls -l dist
