#!/usr/bin/env bash
# Prints the path of each CPython 3.10 to 3.13 found on this machine, one
# per line: under ~/.pyenv/versions first, then on PATH. A version that is
# not found is reported on stderr and skipped.
set -u
for minor in 10 11 12 13; do
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
