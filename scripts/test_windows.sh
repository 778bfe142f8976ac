#!/usr/bin/env bash
# Usage: scripts/test_windows.sh [PYTEST_ARGS...]
#   scripts/test_windows.sh                          the whole suite
#   scripts/test_windows.sh tests/test_crash.py -x   some of it
# The Windows test lane, on this Linux machine. Builds pylogsink, the test
# extension (tests/ext) and the PyO3 example (examples/pyo3-extension) for
# Windows (x86_64-win7-windows-gnu: MinGW, with the standard library built
# from source), installs them into a Windows CPython 3.13 that runs under
# wine, and runs the tests there: every test that applies to Windows runs,
# and each that cannot skips, saying why (-rs lists them). The last line
# says how many tests ran and how many were skipped; the exit status is
# pytest's, non-zero if any test failed.
#
# The tools are made once, into ~/.cache/pylogsink (PYLOGSINK_CACHE):
# cross/ by scripts/cross-rust.sh (the nightly toolchain rustup has, with
# Debian's rust-src) and winpython/ by scripts/windows-python.sh (which
# installs wine64 and MinGW-w64 with apt-get). pylogsink and the test
# extension build in cross/'s target directory (scripts/windows_wheel.sh,
# which make dist's Windows wheel shares); the example's target directory,
# the wheels, ctypes_rt.dll and pytest's output go to target/windows/.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
cache=${PYLOGSINK_CACHE:-$HOME/.cache/pylogsink}
cross=$cache/cross
win=$cache/winpython
out=$root/target/windows
started=$SECONDS
# Each step's heading says how long the run has taken so far.
step() { echo "== $* [$(((SECONDS - started) / 60)) min $(((SECONDS - started) % 60)) s]"; }

# The cross toolchain is rustup's nightly with the standard library built
# from source; without it there is no Windows build here.
if ! rustup run nightly rustc -V >/dev/null 2>&1; then
  echo "skipped: the Windows lane (rustup has no nightly toolchain to build the standard library for Windows with)"
  exit 0
fi

step "tools: the cross toolchain, the Windows CPython"
export PYLOGSINK_CROSS=$cross   # for scripts/windows_wheel.sh, which makes it
[ -x "$win/bin/winpython" ] || scripts/windows-python.sh "$win"
# What an older windows-python.sh made: a python313._pth, which keeps the
# current directory off sys.path (python -m unittest) and PYTHONPATH out.
rm -f "$win/python/python313._pth"
# A crash ends the process with its exception's code, as on Windows, rather
# than starting wine's debugger (which takes seconds, and exits with its own).
WINEPREFIX=$win/wine WINEDEBUG=-all /usr/lib/wine/wine64 reg add \
  'HKLM\Software\Microsoft\Windows NT\CurrentVersion\AeDebug' /v Debugger /t REG_SZ /d false /f >/dev/null 2>&1

step "build: pylogsink, the test extension, the PyO3 example"
# scripts/windows_wheel.sh builds each, in the cross toolchain's target
# directory that make dist's Windows wheel also uses (what is built once is
# not built again).
rm -rf "$out/wheels"
scripts/windows_wheel.sh "$out/wheels" --locked
(cd tests/ext && ../../scripts/windows_wheel.sh "$out/wheels" --locked)
# The example is a project of its own (its own lock and target directory),
# without PyO3's generate-import-lib: MinGW's linker takes the Windows
# CPython's python3.dll itself.
(cd examples/pyo3-extension && CARGO_TARGET_DIR=$out/cargo-example PYO3_CROSS_LIB_DIR="$win/python" \
  ../../scripts/windows_wheel.sh "$out/wheels" --locked)

step "install them, and pytest, into the Windows CPython"
export PIP_ROOT_USER_ACTION=ignore
"$win/bin/winpip" --force-reinstall --no-deps "$out"/wheels/*.whl
# pytest and pytest-timeout are all that the tests which run here import
# (wurlitzer, ipykernel and the build tools serve tests that skip on Windows).
"$win/bin/winpython" -c "import pytest, pytest_timeout" 2>/dev/null \
  || "$win/bin/winpip" "pytest>=8" "pytest-timeout>=2.3"
# PyAV, for tests/test_ffmpeg.py (its win_amd64 wheel is abi3 for 3.12+;
# pip would check that against the CPython running pip, not this one).
"$win/bin/winpython" -c "import av" 2>/dev/null || "$win/bin/winpip" --ignore-requires-python av

step "a C runtime driven by ctypes (tests/c_abi/ctypes_rt.c), built with MinGW against the installed package"
# The C ABI from the wheel just installed: its header and static library,
# and the system libraries link-args.txt names; python3.dll for the Python
# calls the library makes; libgcc linked in (a DLL of it is not on the
# Windows CPython's path). tests/test_c_abi.py loads it.
package=$win/python/Lib/site-packages/pylogsink
mapfile -t link_args < "$package/lib/link-args.txt"
x86_64-w64-mingw32-gcc -std=c99 -Wall -Werror -O2 -shared -static-libgcc -o "$out/ctypes_rt.dll" tests/c_abi/ctypes_rt.c \
  -I"$package/include" "$package/lib/libpylogsink.a" "${link_args[@]}" -L"$win/python" -lpython3
export PYLOGSINK_TEST_CTYPES_RT="Z:$out/ctypes_rt.dll"

step "tests"
status=0
set -o pipefail
# The whole suite unless paths are given (pyproject.toml's testpaths is
# tests/ too, for options alone).
[ $# -gt 0 ] || set -- tests
"$win/bin/winpython" -m pytest -p no:cacheprovider --timeout 120 -rs --durations=15 "$@" 2>&1 | tee "$out/pytest.log" || status=$?
step "done"
# pytest's last line ("== 340 passed, 190 skipped in 400.00s =="), counted.
python3 - "$out/pytest.log" <<'EOF'
import re
import sys

lines = [line for line in open(sys.argv[1], errors="replace") if re.match(r"=+ .* in [\d.]+s", line)]
counts = {word: int(n) for n, word in re.findall(r"(\d+) (\w+)", lines[-1])} if lines else {}
ran = sum(counts.get(k, 0) for k in ("passed", "failed", "error", "errors", "xfailed", "xpassed"))
print(f"Windows: {ran} tests ran ({counts.get('passed', 0)} passed, {counts.get('failed', 0)} failed, "
      f"{counts.get('errors', counts.get('error', 0))} errors); {counts.get('skipped', 0)} skipped on Windows")
EOF
exit $status
