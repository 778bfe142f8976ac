#!/usr/bin/env bash
# Builds everything and runs every test: formatting, the layers of src/
# (scripts/check_layers.py), clippy, the Rust tests and docs, the crate as
# crates.io would get it (a publish dry run), then the Python tests on each
# CPython 3.11 to 3.15 (scripts/pythons.sh finds them, or unpacks Debian's),
# with the two examples in examples/ built as their users would, and last
# each PyO3 series supported in an extension of its own
# (scripts/test_pyo3_versions.sh) and the oldest under the tests
# (scripts/test_pyo3_oldest.sh), and last the Windows lane: the tests in a
# Windows CPython under wine (scripts/test_windows.sh). The abi3
# wheel on 3.11; on 3.12 and later a
# wheel built for that version (no abi3), where pylogsink keeps "is
# sys.stderr replaced" with a dict watcher. pylogsink's wheels are those
# of make dist (scripts/dist.sh), built with zig for manylinux_2_28.
# Tools come from virtualenvs: maturin from .venv (as in scripts/demo.sh),
# pytest and the rest from .venvs/X.Y, one per CPython.
set -euo pipefail
cd "$(dirname "$0")/.."
pip_q=(-m pip install -q --disable-pip-version-check)
started=$SECONDS
# Each step's heading says how long the run has taken so far.
step() { echo "== $* [$(((SECONDS - started) / 60)) min $(((SECONDS - started) % 60)) s]"; }

step "cargo fmt, the layers of src/, clippy, test, doc"
cargo fmt --all -- --check
python3 scripts/check_layers.py
cargo clippy --all-targets --all-features -- -D warnings
cargo clippy -p pylogsink --all-targets -- -D warnings   # without the tracing feature
cargo test --workspace --all-features
RUSTDOCFLAGS="-D warnings" cargo doc -q --no-deps -p pylogsink --all-features
# The PyO3 example is a project of its own (its own workspace and target/).
(cd examples/pyo3-extension && cargo fmt -- --check && cargo clippy -q --all-targets -- -D warnings)
step "clippy for macOS (aarch64 and x86_64) and Windows (MSVC), the standard library built from source; actionlint"
scripts/lint_platforms.sh
scripts/lint_workflows.sh

step "the crate as crates.io would get it (packaged, built alone; nothing uploaded)"
cargo publish --dry-run --allow-dirty -p pylogsink

step "build the wheels (pylogsink with its C library, the test extension, the PyO3 example)"
# pylogsink's sdist and wheels as a release ships them (make dist: zig,
# manylinux_2_28), which the tests install and inspect (tests/test_dist.py).
scripts/dist.sh
maturin=$PWD/.venv/bin/maturin
(cd tests/ext && "$maturin" build --release -q -o ../../dist)
(cd examples/pyo3-extension && "$maturin" build --release -q -o ../../dist)
wheels=(dist/pylogsink-*-abi3-manylinux*.whl dist/pylogsink_testext-*.whl dist/my_runtime-*.whl)

status=0
ran=0
pythons=($(scripts/pythons.sh || true))
for py in "${pythons[@]}"; do
  version=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  venv=".venvs/$version"
  step "Python $version ($py)"
  [ -x "$venv/bin/python" ] || "$py" -m venv "$venv"
  "$venv/bin/python" "${pip_q[@]}" -r tests/requirements.txt
  wheels_here=("${wheels[@]}")
  if "$py" -c 'import sys; sys.exit(sys.version_info < (3, 12))'; then
    tag=cp${version/./}
    wheels_here[0]=$(ls dist/pylogsink-*-"$tag-$tag"-*.whl)
  fi
  "$venv/bin/python" "${pip_q[@]}" --force-reinstall --no-deps "${wheels_here[@]}"
  "$venv/bin/python" -c 'import pylogsink; print("pylogsink:", pylogsink._pylogsink.__file__.rsplit("/", 1)[1], "-", pylogsink.runtime.stderr_check())'
  # The pybind11 example, built against the pylogsink just installed (not
  # on PyPI yet, hence no build isolation: its build requirements are in
  # tests/requirements.txt).
  rm -rf examples/pybind11-extension/build
  "$venv/bin/python" "${pip_q[@]}" --force-reinstall --no-deps --no-build-isolation ./examples/pybind11-extension
  # Two tests at a time (pytest-xdist), one per core: most of the suite
  # waits on child processes.
  # The tests that show a failure without pylogsink wait out a hang each
  # (marker naive): on the oldest and the newest CPython only, where they
  # show the failure is real; the tests of pylogsink itself run on each.
  only=()
  if [ "$py" != "${pythons[0]}" ] && [ "$py" != "${pythons[-1]}" ]; then
    only=(-m "not naive")
    echo "the tests marked naive (a failure shown without pylogsink) run on the oldest and the newest CPython only"
  fi
  "$venv/bin/python" -m pytest -p no:cacheprovider -n 2 --durations=15 "${only[@]}" tests "$@" || status=1
  ran=$((ran + 1))
  newest_py=$py
  if [ -z "${oldest_pyo3_on:-}" ] && "$py" -c 'import sys; sys.exit(sys.version_info >= (3, 14))'; then
    oldest_pyo3_on=$py
  fi
done
if [ "$ran" -eq 0 ]; then
  echo "no CPython 3.11 to 3.15 found" >&2
  exit 1
fi
# The oldest PyO3 pylogsink supports, on the oldest CPython tested, one
# older than 3.14 (PyO3 0.26 came out before 3.15).
step "PyO3 0.26 to 0.30, each as cargo resolves it in an extension of its own; then 0.26's tests"
if [ -n "${oldest_pyo3_on:-}" ]; then
  scripts/test_pyo3_versions.sh "$oldest_pyo3_on" ${newest_py:+"$newest_py"} || status=1
  # (the failures shown without pylogsink were shown above)
  scripts/test_pyo3_oldest.sh "$oldest_pyo3_on" -n 2 -m "not naive" "$@" || status=1
else
  echo "skipped: the PyO3 versions are tested on a CPython 3.11 to 3.13, and none was found"
fi
step "Windows under wine: the wheels built with MinGW, the tests that apply there (scripts/test_windows.sh)"
scripts/test_windows.sh || status=1
step "done"
exit $status
