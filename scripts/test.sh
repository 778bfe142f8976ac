#!/usr/bin/env bash
# Builds everything and runs every test: the Rust tests, clippy, then the
# Python tests on each CPython 3.10 to 3.13 found: the abi3 wheel on 3.10
# and 3.11, and on 3.12 and later a wheel built for that version (no abi3),
# where pylogsink keeps "is sys.stderr replaced" with a dict watcher.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== cargo fmt, clippy, test"
cargo fmt --all -- --check
cargo clippy --all-targets --all-features -- -D warnings
cargo clippy -p pylogsink --all-targets -- -D warnings   # without the tracing feature
cargo test --workspace --all-features

echo "== build the wheels (pylogsink with its C library, and the test extension in tests/ext)"
python3 -m pip install -q --disable-pip-version-check "maturin>=1.8,<2"
scripts/build-c.sh
rm -rf dist
python3 -m maturin build --release -q -o dist
(cd tests/ext && python3 -m maturin build --release -q -o ../../dist)
wheel=$(ls dist/pylogsink-*.whl)
testext_wheel=$(ls dist/pylogsink_testext-*.whl)

status=0
ran=0
for py in $(scripts/pythons.sh); do
  version=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  venv=".venvs/$version"
  echo "== Python $version ($py)"
  [ -x "$venv/bin/python" ] || "$py" -m venv "$venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check -r tests/requirements.txt
  wheel_here=$wheel
  if "$py" -c 'import sys; sys.exit(sys.version_info < (3, 12))'; then
    python3 -m maturin build --release -q --no-default-features -i "$py" -o "dist/$version"
    wheel_here=$(ls "dist/$version"/pylogsink-*.whl)
  fi
  "$venv/bin/python" -m pip install -q --disable-pip-version-check --force-reinstall --no-deps "$wheel_here" "$testext_wheel"
  "$venv/bin/python" -c 'import pylogsink; print("pylogsink:", pylogsink._pylogsink.__file__.rsplit("/", 1)[1], "-", pylogsink.stderr_check())'
  "$venv/bin/python" -m pytest -p no:cacheprovider tests "$@" || status=1
  ran=$((ran + 1))
done
if [ "$ran" -eq 0 ]; then
  echo "no CPython 3.10 to 3.13 found" >&2
  exit 1
fi
exit $status
