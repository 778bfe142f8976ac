#!/usr/bin/env bash
# Builds what the benchmark needs into a virtualenv (VENV, by default .venv
# at the repo root; made if missing): maturin, matplotlib and wurlitzer
# (the rival of the output capture figure), the pylogsink
# package (a release wheel, built into bench/target/dist), and the
# benchmark's own native module `pylogsink_bench` (bench/Cargo.toml, its own
# Cargo project with its own target dir, bench/target).
# Then, for the call-overhead figure where the stable ABI is not required,
# a second virtualenv (VENV_VERSIONED, by default .venv-versioned) from the
# newest CPython that scripts/pythons.sh finds, with `pylogsink_bench` built
# for that version (no abi3 feature): there pylogsink learns whether
# sys.stderr was replaced from a dict watcher on sys.__dict__.
# Then: $VENV/bin/python bench/run.py [--quick]
set -euo pipefail
cd "$(dirname "$0")/.."

venv=${VENV:-.venv}
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
py=$venv/bin/python
pip() { "$py" -m pip install -q --disable-pip-version-check "$@"; }

pip "maturin>=1.8,<2" matplotlib wurlitzer
# PyAV, for the PyAV figure, where PyPI has a wheel for this CPython.
pip --only-binary=:all: av || echo "no PyAV wheel for this CPython: the PyAV figure is left out"

echo "== pylogsink (the package, with its C library, which its build makes)"
"$py" -m maturin build --release -q -o bench/target/dist
pip --force-reinstall --no-deps bench/target/dist/pylogsink-*.whl

# The FFmpeg figure's extension (tests/c_libraries), where pkg-config finds
# Debian's development packages, built as the tests build it.
if pkg-config --exists libavcodec libavutil libcurl sqlite3 2>/dev/null; then
  echo "== the C library test extensions (FFmpeg's figure)"
  pip setuptools
  rm -rf bench/target/c_libraries && mkdir -p bench/target/c_libraries
  cp tests/c_libraries/* examples/c-libraries/* bench/target/c_libraries/
  py_path="$(cd "$(dirname "$py")" && pwd)/$(basename "$py")"
  (cd bench/target/c_libraries && "$py_path" setup.py -q build_ext --inplace)
else
  echo "no libavcodec, libcurl or sqlite3 development package: the FFmpeg figure is left out"
fi

echo "== pylogsink_bench (the benchmark's module)"
"$py" -m maturin build --release -q -m bench/Cargo.toml -o bench/target/wheels
pip --force-reinstall --no-deps bench/target/wheels/pylogsink_bench-*.whl

newest=$(scripts/pythons.sh 2>/dev/null | tail -n 1)
if [ -n "$newest" ] && "$newest" -c 'import sys; sys.exit(sys.version_info < (3, 12))'; then
  version=$("$newest" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  echo "== pylogsink_bench for CPython $version, a version-specific build (the call overhead with the dict watcher)"
  venv_versioned=${VENV_VERSIONED:-.venv-versioned}
  # A venv left by an older run may be of another version: made anew then.
  if [ "$("$venv_versioned/bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)" != "$version" ]; then
    rm -rf "$venv_versioned"
    "$newest" -m venv "$venv_versioned"
  fi
  rm -rf bench/target/wheels-versioned
  "$py" -m maturin build --release -q -m bench/Cargo.toml --no-default-features -i "$venv_versioned/bin/python" \
    -o bench/target/wheels-versioned
  "$venv_versioned/bin/python" -m pip install -q --disable-pip-version-check --force-reinstall --no-deps \
    bench/target/wheels-versioned/pylogsink_bench-*.whl
  "$venv_versioned/bin/python" -c "import pylogsink_bench as b; print('built for $version:', b.pylogsink_bench.__file__.rsplit('/', 1)[1], '-', b.stderr_check())"
else
  echo "no CPython 3.12 or later found: the call overhead is measured on the abi3 build only"
fi

"$py" -c "import pylogsink, pylogsink_bench; print('built: pylogsink and pylogsink_bench')"
echo "run: $py bench/run.py [--quick]"
