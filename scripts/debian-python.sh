#!/usr/bin/env bash
# Usage: scripts/debian-python.sh X.Y DIR
#
# Unpacks Debian unstable's CPython X.Y (interpreter, standard library,
# headers, venv and pip) into DIR, so that a Debian or Ubuntu machine whose
# own C library is older can run it: the interpreter is pointed at the ELF
# loader and libraries unpacked beside it (patchelf), nothing is installed
# system-wide, and no root is needed. Prints DIR/bin/pythonX.Y on success.
#
# scripts/pythons.sh calls it for a CPython that the machine lacks. It exits
# 2, with one line on stderr saying why, when it cannot: no apt-get,
# dpkg-deb or patchelf, no Debian mirror in the apt sources, or a mirror
# that does not answer or has no such version.
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 X.Y DIR" >&2; exit 64; }
version=$1
dir=$(realpath -m "$2")
cannot() { echo "cannot unpack Debian's CPython $version: $*" >&2; exit 2; }

for tool in apt-get dpkg-deb patchelf; do
  command -v "$tool" >/dev/null || cannot "no $tool on this machine (apt-get install $tool)"
done
mirror=$(grep -hoE '^(deb|URIs:)[^#]*https?://[^ ]+/debian/?' /etc/apt/sources.list /etc/apt/sources.list.d/* 2>/dev/null \
         | grep -oE 'https?://[^ ]+/debian/?' | head -n 1 || true)
[ -n "$mirror" ] || cannot "no Debian mirror in the apt sources"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$work/debs"
echo "deb [trusted=yes] $mirror sid main" >"$work/sources.list"
# apt with a source list, package lists and cache of its own: the
# machine's apt state is neither read nor changed.
apt=(apt-get -qq -o Dir::Etc::sourcelist="$work/sources.list" -o Dir::Etc::sourceparts=-
     -o Dir::State::Lists="$work/lists" -o Dir::Cache="$work/cache")
timeout 300 "${apt[@]}" update 2>"$work/err" || cannot "Debian's unstable suite did not answer ($(head -c 200 "$work/err"))"

# The interpreter's packages, and the libraries it and its standard
# library's extension modules load, at unstable's versions.
packages=(python$version-minimal libpython$version-minimal libpython$version-stdlib
          python$version libpython$version libpython$version-dev python$version-dev
          python$version-venv python3-pip-whl python3-setuptools-whl
          libc6 libgcc-s1 libstdc++6 libcrypt1 libexpat1 zlib1g libffi8 libssl3t64
          libzstd1 liblzma5 libbz2-1.0 libsqlite3-0 libncursesw6 libtinfo6
          libreadline8t64 libmpdec4 libuuid1)
(cd "$work/debs" && timeout 600 "${apt[@]}" download "${packages[@]}") 2>"$work/err" \
  || cannot "download failed ($(head -c 200 "$work/err"))"

rm -rf "$dir"
mkdir -p "$dir/bin"
for deb in "$work"/debs/*.deb; do dpkg-deb -x "$deb" "$dir/root"; done
root=$dir/root
multiarch=$(cd "$root/usr/lib" && ls -d ./*-linux-gnu | head -n 1 | cut -c3-)
libs=$root/usr/lib/$multiarch:$root/lib/$multiarch
python=$root/usr/bin/python$version
loader=$(ls "$root/usr/lib/$multiarch"/ld-linux*.so.* | head -n 1)
# Only the interpreter needs patching: every library it loads is then
# found through its RPATH (which, unlike RUNPATH, applies to the
# libraries' own dependencies too).
patchelf --set-interpreter "$loader" --force-rpath --set-rpath "$libs" "$python"
ln -sf "$python" "$dir/bin/python$version"
# A virtualenv made from DIR/bin/pythonX.Y records home = DIR/bin; 3.13
# looks for its standard library under DIR/lib without resolving the link.
ln -sfn root/usr/lib "$dir/lib"
ln -sfn root/usr/include "$dir/include"

# sysconfig names /usr: point its include and wheel paths into DIR, where
# maturin, setuptools and ensurepip look them up.
"$python" - "$root" <<'EOF'
import pathlib, sys
root = sys.argv[1]
minor = "python%d.%d" % sys.version_info[:2]
for data in {p.resolve() for p in pathlib.Path(root, "usr/lib", minor).glob("_sysconfigdata_*.py")}:
    text = data.read_text()
    text = text.replace("'/usr/include", "'" + root + "/usr/include")
    text = text.replace("/usr/share/python-wheels", root + "/usr/share/python-wheels")
    data.write_text(text)
EOF
# Debian's pyconfig.h includes the multiarch one as <ARCH/pythonX.Y/pyconfig.h>,
# found only under /usr/include: name the unpacked copy instead.
sed -i "s|#\([[:space:]]*\)include <\($multiarch\)/python\([0-9.]*\)/pyconfig.h>|#\1include \"$root/usr/include/\2/python\3/pyconfig.h\"|" \
  "$root/usr/include/python$version/pyconfig.h"

# It must run, with the modules a test suite needs, and make a venv with pip.
"$python" -c 'import ctypes, sqlite3, ssl, venv' || cannot "the unpacked interpreter does not run here"
"$dir/bin/python$version" -m venv "$work/venv" && "$work/venv/bin/python" -m pip --version >/dev/null \
  || cannot "a virtualenv made with it has no working pip"
echo "$dir/bin/python$version"
