#!/usr/bin/env bash
# Prints the path of each CPython 3.10 to 3.13 found on this machine, one
# per line: under ~/.pyenv/versions first, then on PATH. A version that is
# not found is reported on stderr and skipped. PYTHONS="3.11 3.13" limits
# the search to those versions (a quicker run while working).
set -u
minors="10 11 12 13"
if [ -n "${PYTHONS:-}" ]; then
  minors=$(echo "$PYTHONS" | tr ' ' '\n' | sed -n 's/^3\.\(1[0-3]\)$/\1/p' | tr '\n' ' ')
fi
for minor in $minors; do
  found=""
  for candidate in "$HOME"/.pyenv/versions/3."$minor".*/bin/python3."$minor" "$(command -v python3."$minor" 2>/dev/null)"; do
    if [ -n "$candidate" ] && [ -x "$candidate" ] && "$candidate" -c 'import sys; sys.exit(sys.version_info[:2] != (3, '"$minor"'))' 2>/dev/null; then
      found="$candidate"
      break
    fi
  done
  if [ -n "$found" ]; then
    echo "$found"
  else
    echo "skipped: no CPython 3.$minor on this machine" >&2
  fi
done
