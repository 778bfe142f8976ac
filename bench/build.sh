#!/usr/bin/env bash
# Builds what the benchmark needs into a virtualenv (VENV, by default .venv
# at the repo root; made if missing): maturin and matplotlib, the pylogsink
# package (a release wheel, built into bench/target/dist), and the
# benchmark's own native module `pylogsink_bench` (bench/Cargo.toml, its own
# Cargo project with its own target dir, bench/target).
# Then: $VENV/bin/python bench/run.py [--quick]
set -euo pipefail
cd "$(dirname "$0")/.."

venv=${VENV:-.venv}
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
py=$venv/bin/python
pip() { "$py" -m pip install -q --disable-pip-version-check "$@"; }

pip "maturin>=1.8,<2" matplotlib

echo "== pylogsink (the package, with its C library)"
scripts/build-c.sh
"$py" -m maturin build --release -q -o bench/target/dist
pip --force-reinstall --no-deps bench/target/dist/pylogsink-*.whl

echo "== pylogsink_bench (the benchmark's module)"
"$py" -m maturin build --release -q -m bench/Cargo.toml -o bench/target/wheels
pip --force-reinstall --no-deps bench/target/wheels/pylogsink_bench-*.whl

"$py" -c "import pylogsink, pylogsink_bench; print('built: pylogsink and pylogsink_bench')"
echo "run: $py bench/run.py [--quick]"
