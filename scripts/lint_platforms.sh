#!/usr/bin/env bash
# Usage: scripts/lint_platforms.sh
#
# clippy (warnings are errors) on every crate of the workspace, with the
# tracing feature, for the platforms this Linux machine does not run
# natively: aarch64-apple-darwin, x86_64-apple-darwin and
# x86_64-pc-windows-msvc. The standard library of
# each is built from source by scripts/cross-rust.sh's cargo-cross, made
# once into ~/.cache/pylogsink/cross (PYLOGSINK_CROSS to put it
# elsewhere), which also keeps what the checks build. The C library is not built (PYLOGSINK_CHECK_ONLY): checking
# needs no linker. Prints "skipped: ..." and exits 0 where no nightly
# toolchain is installed (cargo-cross needs one).
set -euo pipefail
cd "$(dirname "$0")/.."
cross=${PYLOGSINK_CROSS:-${XDG_CACHE_HOME:-$HOME/.cache}/pylogsink/cross}
if ! rustup run nightly rustc -V >/dev/null 2>&1; then
  echo "skipped: the macOS and Windows lint lanes need rustup's nightly toolchain, which is not installed"
  exit 0
fi
[ -x "$cross/bin/cargo-cross" ] || scripts/cross-rust.sh "$cross" >/dev/null
# The standard libraries built from source are kept beside the toolchain,
# for the next run and the next clone.
export CARGO_TARGET_DIR=$cross/target PYLOGSINK_CHECK_ONLY=1
# pyo3's build script needs to be told the interpreter's version when it
# cannot run one of the target's; the abi3 crates need no more.
export PYO3_CROSS_PYTHON_VERSION=3.12
for target in aarch64-apple-darwin x86_64-apple-darwin x86_64-pc-windows-msvc; do
  echo "clippy for $target"
  "$cross/bin/cargo-cross" clippy -q --target "$target" --workspace --all-targets --all-features -- -D warnings
done
