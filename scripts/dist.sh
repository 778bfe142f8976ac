#!/usr/bin/env bash
# Builds what a release uploads into dist/: the sdist, the abi3 wheel (every
# CPython 3.11+), a wheel for each CPython 3.12 and later found (no abi3:
# see scripts/test.sh), and the Windows abi3 wheel (scripts/windows_wheel.sh). The wheels are built with zig for glibc 2.28
# (manylinux_2_28), the C library inside them included (crates/pylogsink-py/
# build.rs), so that they install on any Linux x86_64 with glibc 2.28 or
# later, and extensions that link the C library can be manylinux_2_28 too.
# The extension modules are built with line tables, which
# scripts/split_debug.py then moves out of each wheel into dist-debug/ (a
# crash investigation's `gdb` finds them there by the module's
# .gnu_debuglink): the wheels ship without debug information.
# maturin and zig (the ziglang package) come from .venv.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check "maturin>=1.8,<2" "ziglang>=0.13"
# maturin finds zig as `python3 -m ziglang`, with the python3 of .venv.
export PATH="$PWD/.venv/bin:$PATH"
# The unwinder: zig has no libgcc_s, and links its own libunwind into the
# extension in its place (maturin turns -lgcc_s into -lunwind). glibc's
# pthread_exit, which CPython calls on a daemon thread that wants the GIL
# after finalization, unwinds that thread's frames with libgcc_s's
# unwinder; Rust frames then call the other one, and the process crashes
# (tests/test_exit.py). So the extension links libgcc_s.so.1, as a
# gcc-linked one does: the system's, under a name maturin leaves alone,
# named for the extension's crate only (after --: rustc flags of that
# crate, not of the C library's build, whose link arguments users get).
gcc_s=$(gcc -print-file-name=libgcc_s.so.1)
[ -f "$gcc_s" ] || { echo "no libgcc_s.so.1 (gcc -print-file-name): needed for the wheels" >&2; exit 1; }
mkdir -p target/zig-gcc_s
ln -sf "$(realpath "$gcc_s")" target/zig-gcc_s/libgcc_s_system.so
gcc_s_args=(-- -L "native=$PWD/target/zig-gcc_s" -l dylib=gcc_s_system)
export CARGO_PROFILE_RELEASE_DEBUG=line-tables-only CARGO_PROFILE_RELEASE_STRIP=none
maturin=(.venv/bin/maturin build --release -q --zig --compatibility manylinux_2_28 -o dist)
rm -rf dist dist-debug
.venv/bin/maturin sdist -o dist
"${maturin[@]}" "${gcc_s_args[@]}"
for py in $(scripts/pythons.sh 2>/dev/null); do
  if "$py" -c 'import sys; sys.exit(sys.version_info < (3, 12))'; then
    "${maturin[@]}" --no-default-features -i "$py" "${gcc_s_args[@]}"
  fi
done
# The Windows wheel (win_amd64, abi3), built with MinGW: where it cannot
# be built here, a line says why.
windows=0
scripts/windows_wheel.sh dist || windows=$?
if [ "$windows" -eq 2 ]; then
  echo "skipped: the Windows wheel (see the line above)"
elif [ "$windows" -ne 0 ]; then
  exit "$windows"
fi
python3 scripts/split_debug.py dist-debug dist/*.whl
ls -l dist dist-debug
