#!/usr/bin/env bash
# Usage: scripts/windows_wheel.sh OUTDIR [maturin build args...]
#
# Builds the win_amd64 abi3 wheel of the package (or, run from another
# maturin project's folder, of that one) into OUTDIR with MinGW
# (x86_64-win7-windows-gnu, whose standard library needs no
# bcryptprimitives.dll), the standard library built from source by
# scripts/cross-rust.sh's toolchain, made once into
# ~/.cache/pylogsink/cross (PYLOGSINK_CROSS to put it elsewhere), which
# also keeps what the build compiles. PyO3 makes python3.dll's import
# library itself (its generate-import-lib feature, on for Windows in the
# crates' Cargo.toml). maturin comes from the repository's .venv. Exits 2,
# with a line saying why, where rustup has no nightly toolchain or MinGW
# is missing.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 OUTDIR [maturin build args...]" >&2; exit 64; }
out=$(realpath -m "$1")
shift
root=$(cd "$(dirname "$0")/.." && pwd)
cross=${PYLOGSINK_CROSS:-${XDG_CACHE_HOME:-$HOME/.cache}/pylogsink/cross}
rustup run nightly rustc -V >/dev/null 2>&1 || { echo "no Windows wheel: rustup has no nightly toolchain" >&2; exit 2; }
command -v x86_64-w64-mingw32-gcc >/dev/null || { echo "no Windows wheel: MinGW-w64 is missing (gcc-mingw-w64-x86-64)" >&2; exit 2; }
[ -x "$cross/bin/cargo-cross" ] || "$root/scripts/cross-rust.sh" "$cross" >/dev/null
[ -x "$root/.venv/bin/maturin" ] || {
  [ -x "$root/.venv/bin/python" ] || python3 -m venv "$root/.venv"
  "$root/.venv/bin/python" -m pip install -q --disable-pip-version-check "maturin>=1.8,<2"
}
tc=$cross/toolchain
export PATH="$tc/bin:$PATH" RUSTC="$tc/bin/rustc" RUSTC_BOOTSTRAP=1
unset RUSTUP_TOOLCHAIN RUSTC_WRAPPER
export CARGO_TARGET_X86_64_WIN7_WINDOWS_GNU_LINKER=x86_64-w64-mingw32-gcc
# The C library's own cargo (crates/pylogsink-py/build.rs) builds its
# standard library from source too.
export CARGO_UNSTABLE_BUILD_STD=std,panic_abort
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$cross/target-windows}
"$root/.venv/bin/maturin" build --release -q --target x86_64-win7-windows-gnu -o "$out" "$@"
