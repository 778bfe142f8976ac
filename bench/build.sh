#!/usr/bin/env bash
# Builds what the benchmark needs into a virtualenv (VENV, by default .venv
# at the repo root; made if missing): maturin, matplotlib and wurlitzer
# (the rival of the output capture figure), the pylogsink
# package (a release wheel, built into bench/target/dist), and the
# benchmark's own native module `pylogsink_bench` (bench/Cargo.toml, its own
# Cargo project with its own target dir, bench/target).
# Then, for the call-overhead figure where the stable ABI is not required,
# a second virtualenv (VENV313, by default .venv-3.13) from CPython 3.13
# (~/.pyenv/versions/3.13.* or python3.13 on PATH) with `pylogsink_bench`
# built for that version (no abi3 feature): there pylogsink learns whether
# sys.stderr was replaced from a dict watcher on sys.__dict__.
# Then: $VENV/bin/python bench/run.py [--quick]
set -euo pipefail
cd "$(dirname "$0")/.."

venv=${VENV:-.venv}
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
py=$venv/bin/python
pip() { "$py" -m pip install -q --disable-pip-version-check "$@"; }

pip "maturin>=1.8,<2" matplotlib wurlitzer

echo "== pylogsink (the package, with its C library, which its build makes)"
"$py" -m maturin build --release -q -o bench/target/dist
pip --force-reinstall --no-deps bench/target/dist/pylogsink-*.whl

echo "== pylogsink_bench (the benchmark's module)"
"$py" -m maturin build --release -q -m bench/Cargo.toml -o bench/target/wheels
pip --force-reinstall --no-deps bench/target/wheels/pylogsink_bench-*.whl

echo "== pylogsink_bench for CPython 3.13, a version-specific build (the call overhead with the dict watcher)"
py313=$(ls -d "$HOME"/.pyenv/versions/3.13.*/bin/python3.13 2>/dev/null | sort -V | tail -n 1 || true)
[ -n "$py313" ] || py313=$(command -v python3.13 || true)
if [ -n "$py313" ]; then
  venv313=${VENV313:-.venv-3.13}
  [ -x "$venv313/bin/python" ] || "$py313" -m venv "$venv313"
  rm -rf bench/target/wheels-3.13
  "$py" -m maturin build --release -q -m bench/Cargo.toml --no-default-features -i "$venv313/bin/python" \
    -o bench/target/wheels-3.13
  "$venv313/bin/python" -m pip install -q --disable-pip-version-check --force-reinstall --no-deps \
    bench/target/wheels-3.13/pylogsink_bench-*.whl
  "$venv313/bin/python" -c "import pylogsink_bench as b; print('built for 3.13:', b.pylogsink_bench.__file__.rsplit('/', 1)[1], '-', b.stderr_check())"
else
  echo "no CPython 3.13 found: the call overhead is measured on the abi3 build only"
fi

"$py" -c "import pylogsink, pylogsink_bench; print('built: pylogsink and pylogsink_bench')"
echo "run: $py bench/run.py [--quick]"
