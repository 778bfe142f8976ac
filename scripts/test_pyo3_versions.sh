#!/usr/bin/env bash
# Usage: scripts/test_pyo3_versions.sh PYTHON [PYTHON...]
#
# pylogsink beside each PyO3 series it supports (0.26 to 0.30), as an
# extension of a user's gets it: tests/pyo3_versions, a crate outside the
# workspace with `pyo3 = "0.2X"` and pylogsink by path, is copied into
# target/pyo3-versions/0.2X with no lock file, so cargo resolves every
# crate afresh (what `cargo update` does to an old lock file), with no
# pin and no --precise. Each copy must build, for the stable ABI
# (abi3-py311); its module is then imported by each PYTHON (CPython 3.11
# or newer; the first one builds), its binding's lines must reach a
# replaced sys.stderr, and it must learn that sys.stderr was replaced from
# a dict watcher on CPython 3.12 and later (sys.__dict__'s version tag
# on 3.11). The builds
# share target/pyo3-versions/target.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "usage: $0 PYTHON [PYTHON...]" >&2; exit 2; }
py=$1
root=$PWD
work=$root/target/pyo3-versions
export CARGO_TARGET_DIR=$work/target PYO3_PYTHON=$py
for series in 0.26 0.27 0.28 0.29 0.30; do
  dir=$work/$series
  rm -rf "$dir"
  mkdir -p "$dir"
  cp -r tests/pyo3_versions/src "$dir/"
  sed -e "s|PYO3_SERIES|$series|" -e "s|PYLOGSINK|$root/crates/pylogsink|" \
    tests/pyo3_versions/Cargo.toml > "$dir/Cargo.toml"
  (cd "$dir" && cargo generate-lockfile -q)
  resolved=$(sed -n '/^name = "pyo3"$/{n;s/^version = "\(.*\)"$/\1/p}' "$dir/Cargo.lock")
  echo "== PyO3 $series: cargo resolved pyo3 $resolved"
  (cd "$dir" && cargo build -q --lib)
  mkdir -p "$dir/module"
  cp "$CARGO_TARGET_DIR/debug/libpyo3_versions.so" "$dir/module/pyo3_versions.so"
  for each in "$@"; do
    "$each" - "$dir/module" "$resolved" <<'PY'
import io, re, sys
sys.path.insert(0, sys.argv[1])
import pyo3_versions
# The module names the sources of the PyO3 it was built with (in panic
# locations and debug information): the resolved one, and no other.
data = open(pyo3_versions.__file__, "rb").read()
versions = sorted(set(re.findall(rb"/pyo3-(\d+\.\d+\.\d+)/", data)))
assert versions == [sys.argv[2].encode()], versions
sys.stderr = buf = io.StringIO()
pyo3_versions.train(6)
sys.stderr = sys.__stderr__
lines = [line.split("] ", 1)[1] for line in buf.getvalue().splitlines()]
assert lines == [f"step {i}" for i in range(6)], lines
check = pyo3_versions.stderr_check()
assert check == ("dict watcher" if sys.version_info >= (3, 12) else "dict version"), check
version = "%d.%d" % sys.version_info[:2]
print(f"   CPython {version}: imported; its 6 lines reached a replaced sys.stderr ({check})")
PY
  done
done
