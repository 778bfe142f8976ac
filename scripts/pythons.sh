#!/usr/bin/env bash
# Prints the path of each CPython 3.11 to 3.15 to test on, one per line:
# found under ~/.pyenv/versions or on PATH, else unpacked from Debian's
# unstable suite by scripts/debian-python.sh into a cache that later runs
# reuse (PYLOGSINK_PYTHON_CACHE, default ~/.cache/pylogsink/cpython). A
# version that cannot be had is reported on stderr ("skipped: ...") and
# left out. PYTHONS="3.11 3.15" limits the list to those versions (a
# quicker run while working).
set -u
cd "$(dirname "$0")/.."
minors="11 12 13 14 15"
if [ -n "${PYTHONS:-}" ]; then
  minors=$(echo "$PYTHONS" | tr ' ' '\n' | sed -n 's/^3\.\(1[1-5]\)$/\1/p' | tr '\n' ' ')
fi
cache=${PYLOGSINK_PYTHON_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pylogsink/cpython}
is_version() { [ -n "$1" ] && [ -x "$1" ] && "$1" -c 'import sys; sys.exit(sys.version_info[:2] != (3, '"$2"'))' 2>/dev/null; }
for minor in $minors; do
  found=""
  for candidate in "$HOME"/.pyenv/versions/3."$minor".*/bin/python3."$minor" \
                   "$(command -v python3."$minor" 2>/dev/null)" "$cache/3.$minor/bin/python3.$minor"; do
    if is_version "$candidate" "$minor"; then
      found="$candidate"
      break
    fi
  done
  if [ -z "$found" ]; then
    echo "CPython 3.$minor not found on this machine: unpacking Debian's into $cache/3.$minor" >&2
    if scripts/debian-python.sh "3.$minor" "$cache/3.$minor" >/dev/null && is_version "$cache/3.$minor/bin/python3.$minor" "$minor"; then
      found="$cache/3.$minor/bin/python3.$minor"
    fi
  fi
  # Debian's packages carry no .pyc of the standard library (they are made
  # when the package is installed), and with PYTHONDONTWRITEBYTECODE set
  # each process would compile what it imports anew: half a second for
  # every child process the tests start. Compiled once, here.
  if [ -n "$found" ] && [ "$found" = "$cache/3.$minor/bin/python3.$minor" ] && [ ! -e "$cache/3.$minor/.compiled" ]; then
    stdlib=$("$found" -c 'import sysconfig; print(sysconfig.get_paths()["stdlib"])')
    "$found" -m compileall -q -j 0 "$stdlib" >/dev/null 2>&1 || true
    touch "$cache/3.$minor/.compiled"
  fi
  if [ -n "$found" ]; then
    echo "$found"
  else
    echo "skipped: no CPython 3.$minor on this machine, and none could be unpacked from Debian" >&2
  fi
done
