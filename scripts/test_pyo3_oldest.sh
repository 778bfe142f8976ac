#!/usr/bin/env bash
# Usage: scripts/test_pyo3_oldest.sh PYTHON [pytest args...]
#
# The oldest PyO3 that pylogsink supports (0.26; Cargo.toml asks for
# ">=0.26, <0.31", and Cargo.lock has the newest): builds pylogsink's abi3
# wheel and the test extension (tests/ext) with PyO3 0.26.0, installs them
# into a virtualenv of their own (.venvs/X.Y-pyo3-0.26), checks that both
# extensions were built with PyO3 0.26.0, and runs the tests of the
# deadlock (test_scenarios.py), of calls and their interrupts
# (test_call.py), of the output capture (test_capture.py) and of the
# `logging` destination (test_logging.py) with PYTHON, a CPython 3.11 to
# 3.13. The repository's Cargo.lock and files are left alone: the tracked
# files are copied into target/pyo3-oldest/src, whose workspace asks for
# pyo3 "0.26" (cargo picks the newest 0.26.x, with no pin) and which
# builds into target/pyo3-oldest/target (kept between runs). maturin comes from .venv, as in scripts/dist.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "usage: $0 PYTHON [pytest args...]" >&2; exit 2; }
py=$1
shift
series=0.26
version=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
echo "== PyO3 $series (the oldest supported): pylogsink and the test extension on Python $version ($py)"

root=$PWD
work=$root/target/pyo3-oldest
src=$work/src
venv=$root/.venvs/$version-pyo3-$series
[ -x .venv/bin/maturin ] || {
  [ -x .venv/bin/python ] || python3 -m venv .venv
  .venv/bin/python -m pip install -q --disable-pip-version-check "maturin>=1.8,<2"
}
maturin=$root/.venv/bin/maturin

# A fresh copy of the tracked files, with their times (cargo sees them
# unchanged, and rebuilds only what changed since the last run).
rm -rf "$src" "$work/dist"
mkdir -p "$src"
git ls-files -z | tar --null -T - -cf - | tar -xf - -C "$src"

# The workspace asks for pyo3 "0.26", as an extension on that series does;
# cargo resolves pyo3 and what comes with it (pyo3-ffi, pyo3-macros,
# pyo3-build-config) anew for that requirement, with no pin.
cd "$src"
sed -i "s/^pyo3 = \">=0.26, <0.31\"\$/pyo3 = \"$series\"/" Cargo.toml
grep -q "^pyo3 = \"$series\"\$" Cargo.toml || { echo "the workspace's pyo3 requirement was not found" >&2; exit 1; }
cargo update -q -p pyo3
oldest=$(sed -n '/^name = "pyo3"$/{n;s/^version = "\(.*\)"$/\1/p}' Cargo.lock)
cargo tree -q -p pyo3 --depth 0

export CARGO_TARGET_DIR=$work/target
"$maturin" build --release -q -i "$py" -o "$work/dist"
(cd tests/ext && "$maturin" build --release -q -i "$py" -o "$work/dist")
cd "$root"

[ -x "$venv/bin/python" ] || "$py" -m venv "$venv"
"$venv/bin/python" -m pip install -q --disable-pip-version-check -r tests/requirements.txt
"$venv/bin/python" -m pip install -q --disable-pip-version-check --force-reinstall --no-deps \
  "$work"/dist/pylogsink-*-abi3-manylinux*.whl "$work"/dist/pylogsink_testext-*.whl

# The installed extensions name the sources of the PyO3 they were built
# with (in panic locations and debug information): 0.26.0's, and no other.
"$venv/bin/python" - "$oldest" <<'EOF'
import re, sys
import pylogsink._pylogsink, pylogsink_testext._testext
oldest = sys.argv[1].encode()
for module in (pylogsink._pylogsink, pylogsink_testext._testext):
    data = open(module.__file__, "rb").read()
    versions = sorted(set(re.findall(rb"/pyo3-(\d+\.\d+\.\d+)/", data)))
    print(f"{module.__name__}: PyO3 {b', '.join(versions).decode() or 'not named'}")
    if versions != [oldest]:
        sys.exit(f"{module.__file__} was not built with PyO3 {oldest} alone")
EOF

# Left out: the demo's exit table (test_demo_prints_the_table). Its
# runtime's daemon threads leave `py.detach` while Python exits, and PyO3
# before 0.29 lets CPython before 3.14 end such a thread with pthread_exit
# across Rust frames, which aborts the process (PyO3 0.29.0 and 0.29.3 make
# the thread hang instead): a crash of PyO3's, whatever the log sink.
"$venv/bin/python" -m pytest -p no:cacheprovider \
  tests/test_scenarios.py tests/test_call.py tests/test_capture.py tests/test_logging.py \
  --deselect tests/test_scenarios.py::test_demo_prints_the_table "$@"
