#!/usr/bin/env bash
# Builds the C ABI's static library (crates/pylogsink-c) and puts it into
# the Python package, next to the headers, so that the wheel maturin builds
# ships it: python/pylogsink/lib/libpylogsink.a, and link-args.txt with the
# system libraries it needs (what rustc prints as native-static-libs, less
# libpython, which the interpreter that loads the extension provides).
set -euo pipefail
cd "$(dirname "$0")/.."
out=python/pylogsink/lib
mkdir -p "$out"
# Touch the shim so that rustc runs and prints the libraries again.
touch crates/pylogsink-c/src/lib.rs
notes=$(cargo rustc --profile c-abi -q -p pylogsink-c --crate-type staticlib -- --print native-static-libs 2>&1)
libs=$(printf '%s\n' "$notes" | sed -n 's/.*native-static-libs: //p' | tr ' ' '\n' | grep -v '^-lpython' | grep -v '^$' | tr '\n' ' ')
if [ -z "$libs" ]; then
  printf '%s\n' "$notes" >&2
  echo "no native-static-libs note from rustc" >&2
  exit 1
fi
# Debug information is most of the size (and of no use to extensions).
strip --strip-debug -o "$out/libpylogsink.a" target/c-abi/libpylogsink_c.a
printf '%s\n' $libs > "$out/link-args.txt"
echo "built $out/libpylogsink.a ($(du -h "$out/libpylogsink.a" | cut -f1)), links with: $libs"
